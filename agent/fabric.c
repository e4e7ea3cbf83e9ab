/*
 * fabric.c - `isle-agent fabric`: the InfiniBand fabric as isle reads it.
 *
 * Reads an ibnetdiscover dump (or runs ibnetdiscover on this node) and
 * prints the canonical fabric summary (docs/ibnd-summary.md): switches with
 * levels and rails, hosts with their HCAs, rails and cables. Admins use it
 * to check what isle makes of their fabric; tests use it to compare a
 * simulated fabric with the model it came from.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_priv.h"
#include "isle_topo.h"

static void fabric_usage(FILE *o)
{
	fprintf(
	    o,
	    "usage: isle-agent fabric [--dump FILE] [--guid-map FILE]\n"
	    "                         [--spine-map FILE] [--keep-anonymous]\n"
	    "Prints the fabric summary of an ibnetdiscover dump, or of a "
	    "fresh\n`ibnetdiscover` run on this node when --dump is not "
	    "given.\n");
}

static void print_warning(void *arg, const char *msg)
{
	fprintf(stderr, "isle-agent fabric: warning: %s\n", msg);
}

/* Runs ibnetdiscover into a private temp file; returns its path. */
static char *run_ibnetdiscover(void)
{
	char tmpl[] = "/tmp/isle-ibnd-XXXXXX";
	char *cmd = NULL;
	int fd, st;

	fd = mkstemp(tmpl);
	if (fd < 0)
		return NULL;
	close(fd);
	if (asprintf(&cmd, "ibnetdiscover > '%s'", tmpl) < 0) {
		unlink(tmpl);
		return NULL;
	}
	st = system(cmd);
	free(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "isle-agent fabric: ibnetdiscover failed\n");
		unlink(tmpl);
		return NULL;
	}
	return strdup(tmpl);
}

static int cmd_fabric(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"dump", required_argument, NULL, 'd'},
	    {"guid-map", required_argument, NULL, 'm'},
	    {"spine-map", required_argument, NULL, 's'},
	    {"keep-anonymous", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct isle_ibnd_opts o = {0};
	isle_ibnd_fabric *f = NULL;
	char *dump = NULL, *tmp = NULL, *sum;
	char err[512];
	int c, status = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:m:s:kh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dump = optarg;
			break;
		case 'm':
			o.guid_map = optarg;
			break;
		case 's':
			o.spine_map = optarg;
			break;
		case 'k':
			o.flags |= ISLE_IBND_KEEP_ANONYMOUS;
			break;
		case 'h':
			fabric_usage(stdout);
			return 0;
		default:
			fabric_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fabric_usage(stderr);
		return 2;
	}
	if (!dump) {
		tmp = run_ibnetdiscover();
		if (!tmp)
			return 1;
		dump = tmp;
	}
	isle_topo_set_warn(print_warning, NULL);
	if (isle_ibnd_parse(dump, &o, &f, err, sizeof(err)) < 0) {
		fprintf(stderr, "isle-agent fabric: %s\n", err);
		goto out;
	}
	sum = isle_ibnd_summary(f);
	if (!sum) {
		fprintf(stderr, "isle-agent fabric: out of memory\n");
		goto out;
	}
	fputs(sum, stdout);
	free(sum);
	status = fflush(stdout) == 0 ? 0 : 1;
out:
	isle_ibnd_fabric_destroy(f);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	return status;
}

const struct isle_agent_cmd isle_agent_cmd_fabric = {
    .name = "fabric",
    .summary = "summarize an InfiniBand fabric (ibnetdiscover dump)",
    .run = cmd_fabric,
};
