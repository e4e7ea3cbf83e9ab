/*
 * bench_preload - start-up cost of LD_PRELOAD=libisle_preload.so.
 *
 *   bench_preload --preload LIB [--runs N] [--warmup W] [-o OUT.json]
 *                 -- CMD [ARGS...] [-- CMD2 ...]
 *
 * Each command runs W + N times without and W + N times with the preload,
 * in pairs (which goes first alternates) so that load drift on a shared
 * host hits both alike; the first W of each are dropped. Wall time from
 * fork to reaped exit, and CPU time (user + system, from wait4), which a
 * loaded host disturbs less. Writes, per command, the median, the 10th and
 * 90th percentiles, min and max of both, and the median differences in ms.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

/* Seconds to run argv to completion, or -1; *cpu: its CPU seconds. */
static double run_once(char **argv, const char *preload, double *cpu)
{
	double t0 = isle__bench_now_s();
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	return isle__bench_now_s() - t0;
}

static void stats(FILE *f, const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), isle__bench_cmp_dbl);
	fprintf(f,
		"\"%s\": {\"median_ms\": %.3f, \"p10_ms\": %.3f, "
		"\"p90_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f}",
		name, isle__bench_quantile(v, n, 0.5) * 1e3,
		isle__bench_quantile(v, n, 0.1) * 1e3,
		isle__bench_quantile(v, n, 0.9) * 1e3, v[0] * 1e3,
		v[n - 1] * 1e3);
}

static void report(FILE *f, char **cmd, double *off, double *on, double *offc,
		   double *onc, int runs, int first)
{
	double d, dc;

	fprintf(f, "%s {\"command\": \"", first ? "" : ",\n");
	for (char **c = cmd; *c; c++) {
		fputs(c == cmd ? "" : " ", f);
		for (const char *p = *c; *p; p++)
			fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
	}
	fprintf(f, "\", ");
	stats(f, "without", off, runs);
	fprintf(f, ", ");
	stats(f, "with", on, runs);
	fprintf(f, ", ");
	stats(f, "without_cpu", offc, runs);
	fprintf(f, ", ");
	stats(f, "with_cpu", onc, runs);
	d = (isle__bench_quantile(on, runs, 0.5) -
	     isle__bench_quantile(off, runs, 0.5)) *
	    1e3;
	dc = (isle__bench_quantile(onc, runs, 0.5) -
	      isle__bench_quantile(offc, runs, 0.5)) *
	     1e3;
	fprintf(f,
		", \"median_extra_ms\": %.3f, \"median_extra_cpu_ms\": %.3f}",
		d, dc);
	fprintf(stderr,
		"bench_preload: %-10s median wall %.2f -> %.2f ms (%+.2f), "
		"CPU %.2f -> %.2f ms (%+.2f)\n",
		cmd[0], isle__bench_quantile(off, runs, 0.5) * 1e3,
		isle__bench_quantile(on, runs, 0.5) * 1e3, d,
		isle__bench_quantile(offc, runs, 0.5) * 1e3,
		isle__bench_quantile(onc, runs, 0.5) * 1e3, dc);
}

int main(int argc, char **argv)
{
	const char *preload = NULL, *out = NULL;
	int runs = 30, warmup = 5, i, first = 1, rc = 1;
	FILE *f = stdout;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--preload") && i + 1 < argc)
			preload = argv[++i];
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else
			break;
	}
	if (!preload || runs < 1 || warmup < 0 || i >= argc ||
	    strcmp(argv[i], "--")) {
		fprintf(stderr,
			"usage: bench_preload --preload LIB [--runs N] "
			"[--warmup W] [-o OUT] -- CMD... [-- CMD...]\n");
		return 2;
	}
	if (out && !(f = fopen(out, "w"))) {
		fprintf(stderr, "bench_preload: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	fprintf(f,
		"{\"preload\": \"%s\", \"runs\": %d, \"warmup\": %d, "
		"\"commands\": [\n",
		preload, runs, warmup);
	while (i < argc) {
		char **cmd = &argv[i + 1];
		/* wall without, wall with, CPU without, CPU with */
		double *v = calloc(4 * (size_t)runs, sizeof(double));
		int end = i + 1, r = 0;

		while (end < argc && strcmp(argv[end], "--"))
			end++;
		argv[end] = NULL; /* argv[argc] is NULL already */
		for (; v && end > i + 1 && r < warmup + runs; r++) {
			double ca = 0, cb = 0, a, b;

			/* Either order half the time: no bias from going first.
			 */
			if (r % 2) {
				b = run_once(cmd, preload, &cb);
				a = run_once(cmd, NULL, &ca);
			} else {
				a = run_once(cmd, NULL, &ca);
				b = run_once(cmd, preload, &cb);
			}

			if (a < 0 || b < 0) {
				fprintf(stderr, "bench_preload: %s failed\n",
					cmd[0]);
				break;
			}
			if (r >= warmup) {
				v[r - warmup] = a;
				v[runs + r - warmup] = b;
				v[2 * runs + r - warmup] = ca;
				v[3 * runs + r - warmup] = cb;
			}
		}
		if (r == warmup + runs)
			report(f, cmd, v, v + runs, v + 2 * runs, v + 3 * runs,
			       runs, first);
		free(v);
		if (r != warmup + runs)
			goto done;
		first = 0;
		i = end;
	}
	fprintf(f, "\n]}\n");
	rc = 0;
done:
	if (f != stdout)
		fclose(f);
	return rc;
}
