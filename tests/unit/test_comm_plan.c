/*
 * test_comm_plan - the shim's use of plans: dense ids, the plan hash, the
 * level groups and plans derived from host names. The plan file's reader
 * and writer themselves are proto's (test_proto, tests/golden/plan).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#ifdef HAVE_MPI
#include <mpi.h> /* before comm_priv.h: the grouping internals */
#endif

#include "comm_priv.h"
#include "test_plan_text.h"

#ifndef ISLE_SRCDIR
#define ISLE_SRCDIR "."
#endif

static void test_dense_ids(void **state)
{
	static const char json[] =
	    "{\"isle_plan\":1,\"ranks\":["
	    "{\"rank\":0,\"node\":\"x\",\"island\":\"A\",\"leaf\":\"L2\"},"
	    "{\"rank\":1,\"node\":\"y\",\"island\":\"A\",\"leaf\":\"L1\"},"
	    "{\"rank\":2,\"node\":\"x\",\"island\":\"B\",\"leaf\":\"L2\"},"
	    "{\"rank\":3,\"node\":\"z\"}],"
	    "\"levels\":[{\"name\":\"a\",\"bw_gbps\":1,\"lat_us\":0},"
	    "{\"name\":\"b\",\"bw_gbps\":1,\"lat_us\":0}]}";
	struct isle_plan *p;
	char err[256];

	assert_int_equal(
	    isle_plan_parse(json, sizeof(json) - 1, "t", &p, err, sizeof(err)),
	    0);
	assert_int_equal(p->ranks[0].node_id, 0);
	assert_int_equal(p->ranks[1].node_id, 1);
	assert_int_equal(p->ranks[2].node_id, 0);
	assert_int_equal(p->ranks[3].node_id, 2);
	assert_int_equal(p->ranks[1].island_id, 0);
	assert_int_equal(p->ranks[2].island_id, 1);
	assert_int_equal(p->ranks[3].island_id, 2); /* defaults to node "z" */
	assert_string_equal(p->ranks[3].island, "z");
	assert_int_equal(p->ranks[1].leaf_id, 1);
	assert_int_equal(p->ranks[2].leaf_id, 0);
	assert_int_equal(p->ranks[3].leaf_id, 2);
	assert_int_equal(p->levels[0].scope, ISLE_SCOPE_ISLAND);
	assert_int_equal(p->levels[1].scope, ISLE_SCOPE_JOB);
	assert_int_equal(p->levels[0].codec.kind, ISLE_CODEC_NONE);
	isle_plan_destroy(p);
}

static void test_from_hosts(void **state)
{
	const char *mixed[] = {"a", "a", "b", "a"};
	const char *one[] = {"a", "a", "a"};
	const char *spread[] = {"a", "b", "c"};
	struct isle_plan *p;

	unsetenv("ISLE_COMM_NET_GBPS");
	assert_int_equal(isle_plan_from_hosts(mixed, 4, &p, NULL, 0), 0);
	assert_int_equal(p->nlevels, 2);
	assert_int_equal(p->levels[0].scope, ISLE_SCOPE_ISLAND);
	assert_int_equal(p->levels[1].scope, ISLE_SCOPE_JOB);
	assert_int_equal(p->ranks[3].island_id, 0);
	assert_int_equal(p->ranks[2].island_id, 1);
	assert_string_equal(p->source, "hostnames");
	isle_plan_destroy(p);

	assert_int_equal(isle_plan_from_hosts(one, 3, &p, NULL, 0), 0);
	assert_int_equal(p->nlevels, 1);
	assert_int_equal(p->levels[0].scope, ISLE_SCOPE_JOB);
	isle_plan_destroy(p);

	setenv("ISLE_COMM_NET_GBPS", "3.5", 1);
	assert_int_equal(isle_plan_from_hosts(spread, 3, &p, NULL, 0), 0);
	assert_int_equal(p->nlevels, 1);
	assert_string_equal(p->levels[0].name, "network");
	assert_true(p->levels[0].bw_gbps == 3.5);
	isle_plan_destroy(p);

	setenv("ISLE_COMM_NET_GBPS", "fast", 1);
	{
		char err[128] = "";

		assert_int_equal(
		    isle_plan_from_hosts(spread, 3, &p, err, sizeof(err)),
		    -EINVAL);
		assert_non_null(strstr(err, "ISLE_COMM_NET_GBPS"));
	}
	unsetenv("ISLE_COMM_NET_GBPS");
}

/* Regression: byte counts that overflow (strtoull ERANGE, or the K/M/G
 * shift) wrapped silently, e.g. 17179869184G to 0; now they are errors. */
static void test_env_size_overflow(void **state)
{
	static const char *const bad[] = {"99999999999999999999",
					  "17179869184G",
					  "18446744073709551615K",
					  "-1",
					  "4X",
					  "M"};
	struct isle_comm_config cfg;
	char err[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		isle_comm_config_default(&cfg);
		setenv("ISLE_COMM_FUSION_BYTES", bad[i], 1);
		err[0] = '\0';
		assert_int_equal(
		    isle_comm_config_from_env(&cfg, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "ISLE_COMM_FUSION_BYTES"));
	}
	setenv("ISLE_COMM_FUSION_BYTES", "4M", 1);
	isle_comm_config_default(&cfg);
	assert_int_equal(isle_comm_config_from_env(&cfg, err, sizeof(err)), 0);
	assert_true(cfg.fusion_bytes == (size_t)4 << 20);
	setenv("ISLE_COMM_FUSION_BYTES", "16G", 1);
	assert_int_equal(isle_comm_config_from_env(&cfg, err, sizeof(err)), 0);
	assert_true(cfg.fusion_bytes == (size_t)16 << 30);
	unsetenv("ISLE_COMM_FUSION_BYTES");
}

/* A plan text: rank i on node i/per, island i/isl, leaf i/lf, gpu i%per. */
static char *gen_plan(int n, int per, int isl, int lf, int gpu_shift)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fprintf(f, "{\"isle_plan\":1,\"ranks\":[");
	for (int i = 0; i < n; i++)
		fprintf(f,
			"%s{\"rank\":%d,\"node\":\"n%d\",\"gpu\":%d,"
			"\"island\":\"i%d\",\"leaf\":\"l%d\"}",
			i ? "," : "", i, i / per, i % per + gpu_shift, i / isl,
			i / lf);
	fprintf(f, "],\"levels\":[{\"name\":\"nvl\",\"bw_gbps\":9,"
		   "\"lat_us\":1},{\"name\":\"leaf\",\"scope\":\"leaf\","
		   "\"bw_gbps\":3,\"lat_us\":2},{\"name\":\"top\","
		   "\"bw_gbps\":1,\"lat_us\":3,\"codec\":\"int8\"}]}");
	fclose(f);
	return buf;
}

static struct isle_plan *parse(const char *text)
{
	struct isle_plan *p;
	char err[256];

	assert_int_equal(
	    isle_plan_parse(text, strlen(text), "t", &p, err, sizeof(err)), 0);
	return p;
}

/*
 * Interned ids on a large plan, against a direct reference: the first
 * rank with the same name gives the id, ids count in order of appearance.
 */
static void test_dense_ids_large(void **state)
{
	enum { N = 3000 };
	char *text = gen_plan(N, 6, 18, 100, 0);
	struct isle_plan *p = parse(text);

	for (int i = 0; i < N; i++) {
		assert_int_equal(p->ranks[i].node_id, i / 6);
		assert_int_equal(p->ranks[i].island_id, i / 18);
		assert_int_equal(p->ranks[i].leaf_id, i / 100);
	}
	isle_plan_destroy(p);
	free(text);
}

/*
 * The plan hash: equal for the same plan however it was written, different
 * when one node's GPU indices differ (plans made from a node's own
 * SLURM_JOB_GPUS), and different for a level's codec.
 */
static void test_plan_hash(void **state)
{
	char *a = gen_plan(16, 4, 2, 8, 0), *b = gen_plan(16, 4, 2, 8, 1);
	struct isle_plan *pa = parse(a), *pa2, *pb = parse(b);
	char *round = test_plan_text(pa);

	pa2 = parse(round);
	assert_true(isle_plan_hash(pa) == isle_plan_hash(pa2));
	assert_true(isle_plan_hash(pa) != isle_plan_hash(pb));
	pa2->ranks[5].gpu = 1 - pa2->ranks[5].gpu;
	assert_true(isle_plan_hash(pa) != isle_plan_hash(pa2));
	pa2->ranks[5].gpu = pa->ranks[5].gpu;
	pa2->levels[2].codec.kind = ISLE_CODEC_BF16;
	assert_true(isle_plan_hash(pa) != isle_plan_hash(pa2));
	isle_plan_destroy(pa);
	isle_plan_destroy(pa2);
	isle_plan_destroy(pb);
	free(a);
	free(b);
	free(round);
}

#ifdef HAVE_MPI
static int ref_scope(const struct isle_plan_rank *r, isle_scope s)
{
	return s == ISLE_SCOPE_ISLAND ? r->island_id
	       : s == ISLE_SCOPE_NODE ? r->node_id
	       : s == ISLE_SCOPE_LEAF ? r->leaf_id
				      : 0;
}

/*
 * isle__build_groups (hashed) against the direct quadratic definition on
 * uneven plans and a permuted communicator: same colors, positions, group
 * sizes at every level.
 */
static void test_groups(void **state)
{
	static const int shapes[][4] = {{1, 1, 1, 1},
					{7, 3, 3, 5},
					{100, 4, 8, 24},
					{1001, 8, 72, 256},
					{333, 5, 7, 50}};

	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		int n = shapes[si][0], nl;
		char *text =
		    gen_plan(n, shapes[si][1], shapes[si][2], shapes[si][3], 0);
		struct isle_comm c;
		struct isle__groups g = {0};
		int *color, *idx, *sz, *active;

		memset(&c, 0, sizeof(c));
		c.plan = parse(text);
		nl = c.plan->nlevels;
		c.plan_rank = malloc(sizeof(int) * (size_t)n);
		for (int i = 0; i < n; i++) /* a communicator in odd order */
			c.plan_rank[i] = (int)(((long)i * 7 + 3) % n);
		if (n % 7 == 0)
			for (int i = 0; i < n; i++)
				c.plan_rank[i] = n - 1 - i;
		assert_int_equal(isle__build_groups(&c, n, &g), 0);

		color = malloc(sizeof(int) * (size_t)n * nl);
		idx = malloc(sizeof(int) * (size_t)n * nl);
		sz = malloc(sizeof(int) * (size_t)n);
		active = malloc(sizeof(int) * (size_t)n);
		for (int i = 0; i < n; i++)
			active[i] = 1;
		for (int l = 0; l < nl; l++) {
			isle_scope s = c.plan->levels[l].scope;
			int mn = n + 1, mx = 0;

			for (int i = 0; i < n; i++) {
				const struct isle_plan_rank *ri =
				    &c.plan->ranks[c.plan_rank[i]];

				sz[i] = 0;
				color[l * n + i] = -1;
				if (!active[i])
					continue;
				color[l * n + i] = i;
				for (int j = 0; j < i; j++) {
					const struct isle_plan_rank *rj =
					    &c.plan->ranks[c.plan_rank[j]];
					int same =
					    active[j] && ref_scope(ri, s) ==
							     ref_scope(rj, s);

					for (int m = 0; same && m < l; m++)
						same = idx[m * n + i] ==
						       idx[m * n + j];
					if (same) {
						color[l * n + i] =
						    color[l * n + j];
						break;
					}
				}
				idx[l * n + i] = sz[color[l * n + i]]++;
			}
			for (int i = 0; i < n; i++)
				if (sz[i]) {
					mn = sz[i] < mn ? sz[i] : mn;
					mx = sz[i] > mx ? sz[i] : mx;
				}
			assert_int_equal(g.nshards[l], mn);
			assert_int_equal(g.max_size[l], mx);
			for (int i = 0; i < n; i++) {
				assert_int_equal(g.color[l * n + i],
						 color[l * n + i]);
				if (color[l * n + i] >= 0)
					assert_int_equal(g.idx[l * n + i],
							 idx[l * n + i]);
				active[i] = active[i] &&
					    color[l * n + i] >= 0 &&
					    idx[l * n + i] < mn;
			}
		}
		free(color);
		free(idx);
		free(sz);
		free(active);
		free(g.color);
		free(g.idx);
		free(c.plan_rank);
		isle_plan_destroy(c.plan);
		free(text);
	}
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dense_ids),
	    cmocka_unit_test(test_dense_ids_large),
	    cmocka_unit_test(test_plan_hash),
#ifdef HAVE_MPI
	    cmocka_unit_test(test_groups),
#endif
	    cmocka_unit_test(test_from_hosts),
	    cmocka_unit_test(test_env_size_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
