/*
 * islectl_dot.c - `islectl dot`: the cluster drawn with Graphviz, jobs
 * coloured from a "jobid nodelist" file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isle_topo.h"
#include "islectl.h"

/*
 * Reads "jobid nodelist" lines into job_of_node (index into *names).
 * Unknown nodes are warnings: the job file may be older than the cluster.
 */
static int read_jobs(const isle_topo *t, const char *path, int *job_of_node,
		     char ***names, int *njobs)
{
	FILE *f = fopen(path, "r");
	char line[8192], err[256];
	int lineno = 0, rc = 0;

	*names = NULL;
	*njobs = 0;
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", isle__ctl_prog, path,
			strerror(errno));
		return 1;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char id[256], list[8000], **hosts = NULL, **p;
		int nhosts = 0;

		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0' ||
		    line[strspn(line, " \t")] == '#')
			continue;
		if (sscanf(line, "%255s %7999s", id, list) != 2) {
			fprintf(stderr,
				"%s: %s:%d: expected \"jobid nodelist\"\n",
				isle__ctl_prog, path, lineno);
			rc = 1;
			break;
		}
		if (isle_hostlist_expand(list, &hosts, &nhosts, err,
					 sizeof(err))) {
			fprintf(stderr, "%s: %s:%d: %s\n", isle__ctl_prog, path,
				lineno, err);
			rc = 1;
			break;
		}
		p = realloc(*names, (size_t)(*njobs + 1) * sizeof(char *));
		if (!p || !(p[*njobs] = strdup(id))) {
			if (p)
				*names = p;
			isle_hostlist_free(hosts, nhosts);
			rc = 1;
			break;
		}
		*names = p;
		for (int h = 0; h < nhosts; h++) {
			int ni = isle_topo_find_node(t, hosts[h]);

			if (ni < 0)
				fprintf(stderr,
					"%s: warning: %s:%d: no node "
					"'%s' in the cluster\n",
					isle__ctl_prog, path, lineno, hosts[h]);
			else
				job_of_node[ni] = *njobs;
		}
		(*njobs)++;
		isle_hostlist_free(hosts, nhosts);
	}
	fclose(f);
	return rc;
}

/* Pipes DOT text into `dot -T<fmt> -o <path>`. */
static int run_dot(const isle_topo *t, const int *job_of_node,
		   const char *const *names, int njobs, const char *fmt,
		   const char *path)
{
	int fds[2], status, rc;
	pid_t pid;
	FILE *w;

	if (pipe(fds)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		char tflag[32];

		snprintf(tflag, sizeof(tflag), "-T%s", fmt);
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		execlp("dot", "dot", tflag, "-o", path, (char *)NULL);
		fprintf(stderr, "%s: cannot run dot (Graphviz): %s\n",
			isle__ctl_prog, strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	w = fdopen(fds[1], "w");
	if (!w) {
		close(fds[1]);
		waitpid(pid, &status, 0);
		return 1;
	}
	rc = isle_emit_dot(t, job_of_node, names, njobs, w);
	fclose(w);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s: dot failed for %s\n", isle__ctl_prog,
			path);
		return 1;
	}
	return rc ? 1 : 0;
}

int isle__cmd_dot(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"jobs", required_argument, NULL, 'j'},
	    {NULL, 0, NULL, 0},
	};
	const char *outp = NULL, *jobs = NULL, *ext;
	int *job_of_node = NULL, njobs = 0, c, rc = 1;
	char **names = NULL;
	isle_topo *t;

	while ((c = getopt_long(argc, argv, "o:j:", opts, NULL)) != -1) {
		if (c == 'o')
			outp = optarg;
		else if (c == 'j')
			jobs = optarg;
		else
			goto usage;
	}
	if (argc - optind != 1)
		goto usage;
	ext = outp ? strrchr(outp, '.') : NULL;
	if (outp && (!ext || (strcmp(ext, ".png") && strcmp(ext, ".svg") &&
			      strcmp(ext, ".pdf") && strcmp(ext, ".dot")))) {
		fprintf(stderr,
			"%s: dot: -o wants a .png, .svg, .pdf or .dot "
			"file\n",
			isle__ctl_prog);
		return ISLECTL_EXIT_USAGE;
	}
	t = isle__ctl_load(argv[optind]);
	if (!t)
		return 1;
	if (jobs) {
		job_of_node = malloc(((size_t)t->nnodes + 1) * sizeof(int));
		if (!job_of_node)
			goto out;
		for (int i = 0; i < t->nnodes; i++)
			job_of_node[i] = -1;
		if (read_jobs(t, jobs, job_of_node, &names, &njobs))
			goto out;
	}
	if (!outp || !strcmp(ext, ".dot")) {
		FILE *out = isle__ctl_open_out(outp);

		if (!out)
			goto out;
		rc = isle_emit_dot(t, job_of_node, (const char *const *)names,
				   njobs, out) != 0;
		rc = isle__ctl_close_out(out, outp) || rc;
	} else {
		rc = run_dot(t, job_of_node, (const char *const *)names, njobs,
			     ext + 1, outp);
	}
out:
	for (int j = 0; j < njobs; j++)
		free(names[j]);
	free(names);
	free(job_of_node);
	isle_topo_destroy(t);
	return rc;
usage:
	fprintf(stderr,
		"usage: %s dot [-o OUT.png|.svg|.pdf|.dot] "
		"[--jobs JOBSFILE] FILE\n",
		isle__ctl_prog);
	return ISLECTL_EXIT_USAGE;
}
