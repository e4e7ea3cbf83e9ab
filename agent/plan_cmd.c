/*
 * plan_cmd.c - `isle-agent plan write|show|remove`.
 *
 * write runs as root from the SPANK job_prolog (or a Prolog script) on each
 * node of a job. When the plan cannot be made (no cluster file on this
 * node, a node the file does not know, GPUs the node does not have) it
 * still creates the job directory, holding only an "error" file with the
 * reason, and exits 1: the job runs without the shim and the SPANK plugin
 * prints the reason to the job's stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isle_agent.h"
#include "plan.h"

/* Exit statuses of `plan write`. */
#define EXIT_PLAN_OK 0
#define EXIT_PLAN_FAILED 1 /* no plan; the reason is in the error file */
#define EXIT_PLAN_USAGE 2  /* bad arguments or no usable run dir */

#define MAX_OVERRIDES 4096

static const char usage_text[] =
    "usage: isle-agent plan write --job ID --nodes HOSTLIST\n"
    "                  --gpus-per-node IDX --cluster FILE --rundir DIR\n"
    "                  [--node-gpus NODE=IDX]... [--node NAME] [--uid UID]\n"
    "                  [--compress CODEC] [--policy TIER=CODEC,...]\n"
    "                  [--rank-order hostlist|topology]\n"
    "       isle-agent plan show  (same options but --rundir, --uid):\n"
    "                  print plan.json, nccl.env and the NCCL XML\n"
    "       isle-agent plan remove --job ID --rundir DIR\n"
    "\n"
    "  --job ID            Slurm job id (names the directory DIR/ID)\n"
    "  --nodes HOSTLIST    granted nodes, e.g. n[01-04]\n"
    "  --gpus-per-node IDX GPU indices granted on each node, e.g. 0-3\n"
    "  --node-gpus N=IDX   indices on node N where they differ\n"
    "  --node NAME         node the NCCL files are for (default\n"
    "                      $SLURMD_NODENAME, else the first node)\n"
    "  --cluster FILE      cluster file (islectl build)\n"
    "  --rundir DIR        root of the run directories, e.g. /run/isle\n"
    "  --uid UID           the job's user, the one reader of the files\n"
    "                      besides root (they stay root:root, with an\n"
    "                      ACL entry for UID)\n"
    "  --compress CODEC    the user's --isle-compress (network levels)\n"
    "  --policy P          admin codec per tier, e.g.\n"
    "                      island=none,leaf=bf16,spine=int8,core=int8\n"
    "  --rank-order O      how Slurm gives nodes their task ids: hostlist\n"
    "                      (default: in the order of --nodes) or topology\n"
    "                      (topology/isle's get_rank, Slurm 26.05)\n";

struct plan_args {
	const char *cmd;
	const char *job, *nodes, *gpus, *node, *cluster, *rundir;
	const char *compress, *policy;
	int topo_order; /* --rank-order topology */
	uid_t uid;
	int noverride;
	const char *override_node[MAX_OVERRIDES];
	uint64_t override_gpus[MAX_OVERRIDES];
	char *override_buf[MAX_OVERRIDES];
};

static int usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "isle-agent plan: %s\n", msg);
	fputs(usage_text, stderr);
	return EXIT_PLAN_USAGE;
}

static int parse_args(int argc, char **argv, struct plan_args *a)
{
	static const struct option opts[] = {
	    {"job", required_argument, NULL, 'j'},
	    {"nodes", required_argument, NULL, 'N'},
	    {"gpus-per-node", required_argument, NULL, 'g'},
	    {"node-gpus", required_argument, NULL, 'G'},
	    {"node", required_argument, NULL, 'n'},
	    {"cluster", required_argument, NULL, 'c'},
	    {"rundir", required_argument, NULL, 'r'},
	    {"uid", required_argument, NULL, 'u'},
	    {"compress", required_argument, NULL, 'C'},
	    {"policy", required_argument, NULL, 'p'},
	    {"rank-order", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char err[256], *end;
	int c;

	if (argc < 2)
		return usage("missing subcommand");
	a->cmd = argv[1];
	if (!strcmp(a->cmd, "--help") || !strcmp(a->cmd, "-h") ||
	    !strcmp(a->cmd, "help")) {
		fputs(usage_text, stdout);
		return -1;
	}
	a->uid = getuid();
	a->node = getenv("SLURMD_NODENAME");
	optind = 2;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			a->job = optarg;
			break;
		case 'N':
			a->nodes = optarg;
			break;
		case 'g':
			a->gpus = optarg;
			break;
		case 'G': {
			char *eq = strchr(optarg, '=');
			char *name;

			if (!eq || eq == optarg)
				return usage("--node-gpus wants NODE=IDX");
			if (a->noverride == MAX_OVERRIDES)
				return usage("too many --node-gpus");
			name = strndup(optarg, eq - optarg);
			if (!name)
				return EXIT_PLAN_USAGE;
			a->override_buf[a->noverride] = name;
			a->override_node[a->noverride] = name;
			if (isle__index_list_parse(
				eq + 1, &a->override_gpus[a->noverride], err,
				sizeof(err))) {
				a->noverride++;
				return usage(err);
			}
			a->noverride++;
			break;
		}
		case 'n':
			a->node = optarg;
			break;
		case 'c':
			a->cluster = optarg;
			break;
		case 'r':
			a->rundir = optarg;
			break;
		case 'u': {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || v > 0x7fffffffUL)
				return usage("--uid wants a numeric uid");
			a->uid = (uid_t)v;
			break;
		}
		case 'C':
			a->compress = optarg;
			break;
		case 'p':
			a->policy = optarg;
			break;
		case 'R':
			if (!strcmp(optarg, "topology"))
				a->topo_order = 1;
			else if (!strcmp(optarg, "hostlist"))
				a->topo_order = 0;
			else
				return usage("--rank-order wants hostlist or "
					     "topology");
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return usage(NULL);
		}
	}
	if (optind != argc)
		return usage("unexpected argument");
	return 0;
}

/* Builds the plan and renders the three files into buffers. */
struct rendered {
	char *buf[3];
	size_t len[3];
};

static void rendered_free(struct rendered *r)
{
	for (int i = 0; i < 3; i++)
		free(r->buf[i]);
}

static int render(const struct plan_args *a, const char *xml_path,
		  struct rendered *out, char *err, size_t errlen)
{
	struct isle__plan_req req = {
	    .job_id = a->job,
	    .nodes = a->nodes,
	    .noverride = a->noverride,
	    .override_node = (const char **)a->override_node,
	    .override_gpus = (uint64_t *)a->override_gpus,
	    .local_node = a->node,
	    .compress = a->compress,
	    .topo_order = a->topo_order,
	};
	struct isle__plan *plan = NULL;
	isle_topo *t = NULL;
	char lerr[512];
	int rc;

	memset(out, 0, sizeof(*out));
	isle__codec_policy_default(&req.policy);
	rc = isle__codec_policy_parse(&req.policy, a->policy, err, errlen);
	if (rc)
		return rc;
	rc = isle__index_list_parse(a->gpus, &req.gpus, err, errlen);
	if (rc)
		return rc;
	rc = isle_topo_load(a->cluster, &t, lerr, sizeof(lerr));
	if (rc) {
		return isle__errf(rc, err, errlen, "cluster file: %s", lerr);
	}
	rc = isle__plan_build(t, &req, &plan, lerr, sizeof(lerr));
	if (rc) {
		(void)isle__errf(0, err, errlen, "%s: %s", a->cluster, lerr);
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		FILE *f = open_memstream(&out->buf[i], &out->len[i]);

		if (!f) {
			rc = -ENOMEM;
			break;
		}
		if (i == 0)
			rc = isle__plan_emit_json(plan, f);
		else if (i == 1)
			rc = isle__plan_emit_nccl_env(plan, xml_path, f);
		else
			rc = isle_emit_nccl_xml(t, plan->local_node, f);
		if (fclose(f) && !rc)
			rc = -EIO;
		if (rc)
			break;
	}
	if (rc)
		(void)isle__errf(0, err, errlen, "writing the plan: %s",
				 strerror(-rc));
out:
	if (rc)
		rendered_free(out);
	isle__plan_free(plan);
	isle_topo_destroy(t);
	return rc;
}

static int need(const char *v, const char *opt)
{
	if (v && *v)
		return 0;
	fprintf(stderr, "isle-agent plan: %s is required\n", opt);
	return -1;
}

static int cmd_show(const struct plan_args *a)
{
	struct rendered r;
	char err[768];

	if (need(a->job, "--job") || need(a->nodes, "--nodes") ||
	    need(a->gpus, "--gpus-per-node") || need(a->cluster, "--cluster"))
		return usage(NULL);
	if (render(a, NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "isle-agent plan: %s\n", err);
		return EXIT_PLAN_FAILED;
	}
	printf("==> %s <==\n%.*s\n==> %s <==\n%.*s\n==> %s <==\n%.*s",
	       ISLE_RUNDIR_PLAN, (int)r.len[0], r.buf[0], ISLE_RUNDIR_NCCL_ENV,
	       (int)r.len[1], r.buf[1], ISLE_RUNDIR_NCCL_XML, (int)r.len[2],
	       r.buf[2]);
	rendered_free(&r);
	return EXIT_PLAN_OK;
}

/* The one reader of the run dir besides root: the job's user (--uid). */
static uid_t reader_uid(const struct plan_args *a)
{
	return a->uid;
}

static int cmd_write(const struct plan_args *a)
{
	struct isle__rundir_file files[3];
	struct rendered r;
	char err[768], werr[768], *xml_path = NULL;
	int rootfd, rc;

	if (need(a->job, "--job") || need(a->nodes, "--nodes") ||
	    need(a->gpus, "--gpus-per-node") || need(a->cluster, "--cluster") ||
	    need(a->rundir, "--rundir"))
		return usage(NULL);
	if (isle_rundir_check_id(a->job, err, sizeof(err)))
		return usage(err);
	rootfd = isle__rundir_open_root(a->rundir, err, sizeof(err));
	if (rootfd < 0) {
		fprintf(stderr, "isle-agent plan: %s\n", err);
		return EXIT_PLAN_USAGE;
	}
	if (asprintf(&xml_path, "%s/%s/%s", a->rundir, a->job,
		     ISLE_RUNDIR_NCCL_XML) < 0) {
		close(rootfd);
		return EXIT_PLAN_USAGE;
	}
	rc = render(a, xml_path, &r, err, sizeof(err));
	if (!rc) {
		const char *names[3] = {ISLE_RUNDIR_PLAN, ISLE_RUNDIR_NCCL_ENV,
					ISLE_RUNDIR_NCCL_XML};

		for (int i = 0; i < 3; i++)
			files[i] = (struct isle__rundir_file){
			    names[i], r.buf[i], r.len[i]};
		rc = isle__rundir_write(rootfd, a->job, reader_uid(a), files, 3,
					err, sizeof(err));
		rendered_free(&r);
	}
	if (rc) {
		/* Leave the reason where the job's tasks will look. */
		char line[800];
		int n = snprintf(line, sizeof(line), "%s\n", err);

		fprintf(stderr, "isle-agent plan: job %s: %s\n", a->job, err);
		files[0] = (struct isle__rundir_file){
		    ISLE_RUNDIR_ERROR, line,
		    n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1};
		if (isle__rundir_write(rootfd, a->job, reader_uid(a), files, 1,
				       werr, sizeof(werr)))
			fprintf(stderr, "isle-agent plan: %s\n", werr);
	}
	free(xml_path);
	close(rootfd);
	return rc ? EXIT_PLAN_FAILED : EXIT_PLAN_OK;
}

static int cmd_remove(const struct plan_args *a)
{
	char err[512];
	int rootfd, rc;

	if (need(a->job, "--job") || need(a->rundir, "--rundir"))
		return usage(NULL);
	rootfd = isle_rundir_open(a->rundir, 0, err, sizeof(err));
	if (rootfd == -ENOENT)
		return EXIT_PLAN_OK; /* nothing was ever written here */
	if (rootfd < 0) {
		fprintf(stderr, "isle-agent plan: %s\n", err);
		return EXIT_PLAN_USAGE;
	}
	rc = isle_rundir_remove(rootfd, a->job, err, sizeof(err));
	close(rootfd);
	if (rc) {
		fprintf(stderr, "isle-agent plan: %s\n", err);
		return EXIT_PLAN_FAILED;
	}
	return EXIT_PLAN_OK;
}

static int plan_main(int argc, char **argv)
{
	struct plan_args a = {0};
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		goto out;
	if (!strcmp(a.cmd, "write"))
		rc = cmd_write(&a);
	else if (!strcmp(a.cmd, "show"))
		rc = cmd_show(&a);
	else if (!strcmp(a.cmd, "remove"))
		rc = cmd_remove(&a);
	else
		rc = usage("unknown subcommand (write, show, remove)");
out:
	for (int i = 0; i < a.noverride; i++)
		free(a.override_buf[i]);
	return rc < 0 ? EXIT_PLAN_OK : rc;
}

const struct isle_agent_cmd isle_agent_cmd_plan = {
    .name = "plan",
    .summary = "write, show or remove a job's plan (SPANK job prolog)",
    .run = plan_main,
};
