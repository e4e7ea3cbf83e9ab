/*
 * bench_plan - time of loading a large plan: writes an N-rank plan (8 GPUs
 * per node, NVLink islands of 72 GPUs, leafs of 32 nodes), then times
 * isle_plan_read() and the per-level grouping every rank computes in
 * isle_comm_create() (isle__build_groups). Prints the times; asserts none.
 *
 *   build/tests/bench_plan [NRANKS]      (default 65536)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "comm_priv.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *fmt(const char *f, int v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), f, v);
	return strdup(buf);
}

/* A GB200-like plan of n ranks, written by proto's writer. */
static int write_plan(const char *path, int n)
{
	static const struct {
		const char *name, *codec;
		isle_scope scope;
		double bw, lat;
	} lv[] = {{"nvlink", "none", ISLE_SCOPE_ISLAND, 450, 2},
		  {"leaf", "bf16", ISLE_SCOPE_LEAF, 50, 5},
		  {"spine", "int8", ISLE_SCOPE_JOB, 25, 10}};
	struct isle_plan *p = calloc(1, sizeof(*p));
	FILE *f = NULL;
	int rc = -ENOMEM;

	if (!p || !(p->ranks = calloc((size_t)n, sizeof(*p->ranks))) ||
	    !(p->job_id = strdup("bench")))
		goto out;
	p->version = ISLE_PLAN_VERSION;
	p->nranks = n;
	for (int i = 0; i < n; i++) {
		struct isle_plan_rank *r = &p->ranks[i];

		r->gpu = i % 8;
		if (!(r->node = fmt("n%05d", i / 8)) ||
		    !(r->island = fmt("nvl%d", i / 72)) ||
		    !(r->leaf = fmt("leaf%d", i / 256)) ||
		    !(r->nic = fmt("mlx5_%d", i % 8)))
			goto out;
	}
	for (int j = 0; j < 3; j++) {
		struct isle_plan_level *l = &p->levels[p->nlevels++];

		if (!(l->name = strdup(lv[j].name)))
			goto out;
		l->scope = lv[j].scope;
		l->bw_gbps = lv[j].bw;
		l->lat_us = lv[j].lat;
		isle_codec_parse(lv[j].codec, &l->codec, NULL, 0);
	}
	if (!(f = fopen(path, "w"))) {
		rc = -errno;
		goto out;
	}
	rc = isle_plan_write(p, f);
	if (fclose(f) && !rc)
		rc = -errno;
out:
	isle_plan_destroy(p);
	return rc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 65536, rc = 1;
	char dir[] = "/tmp/bench_plan.XXXXXX", path[64], err[512] = "";
	struct isle_comm c;
	struct isle__groups g = {0};
	double t0, t1, t2;

	memset(&c, 0, sizeof(c));
	if (n < 1 || !mkdtemp(dir))
		return 2;
	snprintf(path, sizeof(path), "%s/plan.json", dir);
	if (write_plan(path, n))
		goto out;
	t0 = now();
	if (isle_plan_read(path, &c.plan, err, sizeof(err))) {
		fprintf(stderr, "bench_plan: %s\n", err);
		goto out;
	}
	t1 = now();
	c.plan_rank = malloc(sizeof(int) * (size_t)n);
	if (!c.plan_rank)
		goto out;
	for (int i = 0; i < n; i++)
		c.plan_rank[i] = i;
	if (isle__build_groups(&c, n, &g))
		goto out;
	t2 = now();
	printf("bench_plan: %d ranks, %d nodes, %d levels: load %.3f s, "
	       "groups %.3f s, total %.3f s (level 0: groups of %d..%d)\n",
	       n, c.plan->ranks[n - 1].node_id + 1, c.plan->nlevels, t1 - t0,
	       t2 - t1, t2 - t0, g.nshards[0], g.max_size[0]);
	rc = 0;
out:
	free(g.color);
	free(g.idx);
	free(c.plan_rank);
	isle_plan_destroy(c.plan);
	unlink(path);
	rmdir(dir);
	return rc;
}
