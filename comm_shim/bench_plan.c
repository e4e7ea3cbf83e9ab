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

static int write_plan(const char *path, int n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "{\"isle_plan\":1,\"job_id\":\"bench\",\"ranks\":[\n");
	for (int i = 0; i < n; i++)
		fprintf(f,
			"{\"rank\":%d,\"node\":\"n%05d\",\"gpu\":%d,"
			"\"island\":\"nvl%d\",\"leaf\":\"leaf%d\","
			"\"nic\":\"mlx5_%d\"}%s\n",
			i, i / 8, i % 8, i / 72, i / 256, i % 8,
			i + 1 < n ? "," : "");
	fprintf(f, "],\"levels\":["
		   "{\"name\":\"nvlink\",\"scope\":\"island\",\"bw_gbps\":450,"
		   "\"lat_us\":2},"
		   "{\"name\":\"leaf\",\"scope\":\"leaf\",\"bw_gbps\":50,"
		   "\"lat_us\":5,\"codec\":\"bf16\"},"
		   "{\"name\":\"spine\",\"scope\":\"job\",\"bw_gbps\":25,"
		   "\"lat_us\":10,\"codec\":\"int8\"}]}\n");
	return fclose(f) ? -errno : 0;
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
