/*
 * test_place_shim.c - islesim's model of the shim (shim_model.c) on cases
 * computed by hand: the codecs' wire ratios, the groups of the hierarchy,
 * the transfers of a two-node job and the decision to pass through.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "islesim.h"

#define CLUSTER "tests/crosscheck/cluster.json"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void test_codec_ratio(void **state)
{
	(void)state;
	assert_true(near(sim_codec_ratio("none"), 1.0));
	assert_true(near(sim_codec_ratio("bf16"), 0.5));
	assert_true(near(sim_codec_ratio("fp16"), 0.5));
	/* a byte per value and a float per block of 256: 0.25 + 1/256 */
	assert_true(near(sim_codec_ratio("int8"), 0.25390625));
	assert_true(near(sim_codec_ratio("int8:128"), 0.2578125));
	/* index and value per kept element */
	assert_true(near(sim_codec_ratio("topk:0.01"), 0.02));
	assert_true(near(sim_codec_ratio("topk:0.01,mom=0.9"), 0.02));
	/* as the shim sends it: past ratio 0.5 more than none */
	assert_true(near(sim_codec_ratio("topk:1"), 2.0));
	assert_true(near(sim_codec_ratio("bogus"), 1.0));
}

struct call {
	int g, first, last;
	double bytes, ratio;
};

struct calls {
	struct call c[32];
	int n;
};

static void record(void *ctx, const int *grp, int g, double bytes, double ratio)
{
	struct calls *cs = ctx;

	assert_true(cs->n < 32);
	cs->c[cs->n++] = (struct call){g, grp[0], grp[g - 1], bytes, ratio};
}

static void test_hier_groups(void **state)
{
	int isl[16], job[16] = {0};
	struct sim_shim_level lv[2] = {{isl, 1.0}, {job, 0.5}};
	struct calls cs = {0};

	(void)state;
	for (int i = 0; i < 16; i++)
		isl[i] = i / 8;
	assert_int_equal(sim_shim_hier(16, lv, 2, 64.0, record, &cs), 0);
	/* two islands of 8 on the whole buffer, then 8 groups of the
	 * members at one position (s and 8 + s) on an eighth, in bf16 */
	assert_int_equal(cs.n, 10);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(cs.c[k].g, 8);
		assert_int_equal(cs.c[k].first, 8 * k);
		assert_int_equal(cs.c[k].last, 8 * k + 7);
		assert_true(near(cs.c[k].bytes, 64.0));
		assert_true(near(cs.c[k].ratio, 1.0));
	}
	for (int s = 0; s < 8; s++) {
		const struct call *c = &cs.c[2 + s];

		assert_int_equal(c->g, 2);
		assert_int_equal(c->first, s);
		assert_int_equal(c->last, 8 + s);
		assert_true(near(c->bytes, 8.0));
		assert_true(near(c->ratio, 0.5));
	}
}

/* ranks: 4 GPUs of node a, then 4 of node b */
static void two_nodes(const isle_topo *t, const char *a, const char *b,
		      struct isle_place_rank *r)
{
	int na = isle_topo_find_node(t, a), nb = isle_topo_find_node(t, b);

	assert_true(na >= 0 && nb >= 0);
	for (int g = 0; g < 4; g++) {
		r[g] = (struct isle_place_rank){na, g};
		r[4 + g] = (struct isle_place_rank){nb, g};
	}
}

static void test_levels_and_xfers(void **state)
{
	struct isle_place_rank r[8];
	struct sim_shim_level lv[ISLE_TIER_COUNT + 1];
	int keys[8 * (ISLE_TIER_COUNT + 1)], mem[8], nx = 0, nlev;
	struct sim_traffic tr;
	struct sim_xfer *x = NULL;
	isle_topo *t = NULL;
	char err[256];
	double p, in = 0, out = 0, i8 = 0.25 + 1.0 / 256;
	int nin = 0, nout = 0;

	(void)state;
	assert_int_equal(sim_cluster_build(CLUSTER, "", &t, err, sizeof(err)),
			 0);
	/* n01 and n03: NVLink domains nvl1 and nvl2, both under leaf1 */
	two_nodes(t, "n01", "n03", r);
	for (int i = 0; i < 8; i++)
		mem[i] = i;
	nlev = sim_shim_levels(t, r, mem, 8, keys, lv);
	/* island (2 groups); node has no fewer; leaf spans the group: the
	 * job level, carried by the leaf, int8:256 (a byte each, a float per
	 * 256) */
	assert_int_equal(nlev, 2);
	assert_true(near(lv[0].ratio, 1.0));
	assert_true(near(lv[1].ratio, i8));
	assert_int_equal(lv[0].key[0], lv[0].key[3]);
	assert_int_not_equal(lv[0].key[0], lv[0].key[4]);
	assert_string_equal(sim_shim_codec(t, ISLE_TIER_LEAF), "int8");

	/* a DP-only job of 8 (dp_bytes D, bf16): the shim gets fp32, P = 2D.
	 * The probe's 1% on every level. Islands: a closed ring of 4 per
	 * node, hops of 2(3)/4 P * 1.01. Across: 4 rings of 2 (GPU c of
	 * each node) on P/4 in int8: each way P/4 * i8 * 1.01. */
	assert_int_equal(sim_traffic_of(8, 1, 1, &tr), 0);
	p = tr.dp_bytes * 2;
	assert_int_equal(sim_shim_xfers(t, &tr, r, 8, 1, 1, 0.01, &x, &nx), 0);
	assert_int_equal(nx, 16);
	for (int i = 0; i < nx; i++) {
		assert_int_equal(x[i].phase, SIM_PH_DP);
		if (x[i].node_a == x[i].node_b) {
			assert_true(near(x[i].bytes, 1.5 * p * 1.01));
			in += x[i].bytes;
			nin++;
		} else {
			assert_int_equal(x[i].gpu_a, x[i].gpu_b);
			assert_true(near(x[i].bytes, p / 4 * i8 * 1.01));
			out += x[i].bytes;
			nout++;
		}
	}
	assert_int_equal(nin, 8);
	assert_int_equal(nout, 8);
	assert_true(near(in, 12 * p * 1.01));
	assert_true(near(out, 2 * i8 * 1.01 * p));
	free(x);
	isle_topo_destroy(t);
}

/* The job's communication alone: the library's and what isle+shim takes. */
static void alone_both(const isle_topo *t, const struct isle_place_rank *r,
		       int n, int tp, double *lib, double *shim, int *used)
{
	struct sim_net *net = sim_net_create(t);
	struct sim_traffic tr;
	struct sim_xfer *x = NULL;
	int nx = 0, rc;

	assert_non_null(net);
	assert_int_equal(sim_traffic_of(n, tp, 1, &tr), 0);
	assert_int_equal(sim_job_xfers(&tr, r, n, tp, 1, &x, &nx), 0);
	rc = sim_net_job_add(net, 0, x, nx);
	assert_true(rc >= 0);
	if (rc > 0)
		assert_int_equal(sim_net_comm_alone(net, 0, lib), 0);
	else
		*lib = sim_net_comm_time(net, 0, NULL);
	rc = sim_shim_job_add(net, t, 1, &tr, r, n, tp, 1, SIM_SHIM_PROBE_SHARE,
			      used);
	assert_true(rc >= 0);
	if (rc > 0)
		assert_int_equal(sim_net_comm_alone(net, 1, shim), 0);
	else
		*shim = sim_net_comm_time(net, 1, NULL);
	free(x);
	sim_net_destroy(net);
}

static void test_pass_through(void **state)
{
	struct isle_place_rank r[8];
	isle_topo *t = NULL;
	char err[256];
	double lib, shim;
	int used;

	(void)state;
	assert_int_equal(sim_cluster_build(CLUSTER, "", &t, err, sizeof(err)),
			 0);
	two_nodes(t, "n01", "n03", r);
	/* one island (4 GPUs of n01): the shim's path is the library's
	 * ring on twice the bytes; it passes through */
	alone_both(t, r, 4, 1, &lib, &shim, &used);
	assert_int_equal(used, 0);
	assert_true(near(shim, lib));
	/* two nodes: whatever it picks is never slower than the library,
	 * and it takes the allreduce only when strictly faster */
	alone_both(t, r, 8, 1, &lib, &shim, &used);
	assert_true(shim <= lib * (1 + 1e-12));
	if (used)
		assert_true(shim < lib);
	else
		assert_true(near(shim, lib));
	/* TP 4 inside each node, DP 2 across: the same rule */
	alone_both(t, r, 8, 4, &lib, &shim, &used);
	assert_true(shim <= lib * (1 + 1e-12));
	if (!used)
		assert_true(near(shim, lib));
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec_ratio),
	    cmocka_unit_test(test_hier_groups),
	    cmocka_unit_test(test_levels_and_xfers),
	    cmocka_unit_test(test_pass_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
