/*
 * test_place_contention.c - the engine's link loads (contention.c): the
 * traffic class parser and its inference from the shape, the loads kept
 * per leaf and spine group as jobs start and end, and the contention term
 * steering a job off uplinks that running jobs use, with weight 0 leaving
 * the engine as it was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_place_util.h"

/* 16 nodes of 8 GPUs, leaf groups of 4 nodes, spine groups of 2 leafs,
 * 2:1 into the spines and 4:1 into the core (tp_cluster). */
static isle_topo *cluster16(void)
{
	isle_topo *t = tp_cluster(TP_NVSWITCH, 16, 8, 4);

	assert_non_null(t);
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 4);
	assert_int_equal(t->ngroups[ISLE_TIER_SPINE], 2);
	return t;
}

static void all_free(const isle_topo *t, uint64_t *fm)
{
	for (int i = 0; i < t->nnodes; i++)
		fm[i] = (1ULL << t->nodes[i].ngpus) - 1;
}

static double load_of(isle_place_ctx *c, isle_tier k, int g)
{
	double l = -1, cap = -1;

	assert_int_equal(isle_place_link_load(c, k, g, &l, &cap), 0);
	return l;
}

static void test_traffic_names(void **state)
{
	struct isle_place_req r;

	(void)state;
	assert_int_equal(isle_traffic_parse("dp"), ISLE_TRAFFIC_DP);
	assert_int_equal(isle_traffic_parse("train"), ISLE_TRAFFIC_DP);
	assert_int_equal(isle_traffic_parse("pp"), ISLE_TRAFFIC_PP);
	assert_int_equal(isle_traffic_parse("pipeline"), ISLE_TRAFFIC_PP);
	assert_int_equal(isle_traffic_parse("infer"), ISLE_TRAFFIC_INFER);
	assert_int_equal(isle_traffic_parse("inference"), ISLE_TRAFFIC_INFER);
	assert_int_equal(isle_traffic_parse("auto"), ISLE_TRAFFIC_AUTO);
	assert_int_equal(isle_traffic_parse("DP"), -1);
	assert_int_equal(isle_traffic_parse(""), -1);
	assert_int_equal(isle_traffic_parse(NULL), -1);
	for (int k = ISLE_TRAFFIC_AUTO; k <= ISLE_TRAFFIC_INFER; k++)
		assert_int_equal(
		    isle_traffic_parse(isle_traffic_name((isle_traffic)k)), k);
	assert_null(isle_traffic_name((isle_traffic)7));

	/* from the shape when absent */
	isle_place_req_init(&r);
	assert_int_equal(r.traffic, ISLE_TRAFFIC_AUTO);
	r.gpus = 64;
	r.tp = 8;
	r.pp = 4;
	assert_int_equal(isle_traffic_of(&r), ISLE_TRAFFIC_DP);
	r.gpus = 32; /* one replica: the pipeline is all there is */
	assert_int_equal(isle_traffic_of(&r), ISLE_TRAFFIC_PP);
	r.gpus = 0;
	r.nodes = 4;
	r.gpus_per_node = 8;
	assert_int_equal(isle_traffic_of(&r), ISLE_TRAFFIC_PP);
	r.workload = ISLE_WORKLOAD_INFER;
	assert_int_equal(isle_traffic_of(&r), ISLE_TRAFFIC_INFER);
	r.traffic = ISLE_TRAFFIC_DP; /* given: kept */
	assert_int_equal(isle_traffic_of(&r), ISLE_TRAFFIC_DP);
}

/* Loads follow the jobs that cross group uplinks, by class, and go back
 * to zero when they end. */
static void test_loads(void **state)
{
	isle_topo *t = cluster16();
	isle_place_ctx *c = isle_place_create(t, NULL);
	const uint64_t whole = 0xff, half = 0x0f;
	int one_leaf[2] = {0, 1}, two_leafs[3] = {0, 1, 4},
	    two_spines[2] = {2, 8};
	uint64_t m3[3] = {whole, whole, half}, m2[2] = {whole, whole};
	int l0 = t->nodes[0].group[ISLE_TIER_LEAF];
	int l1 = t->nodes[4].group[ISLE_TIER_LEAF];
	int l2 = t->nodes[8].group[ISLE_TIER_LEAF];
	int s0 = t->nodes[0].group[ISLE_TIER_SPINE];
	int s1 = t->nodes[8].group[ISLE_TIER_SPINE];
	double cap;

	(void)state;
	assert_non_null(c);
	assert_true(l0 != l1 && l1 != l2 && s0 != s1);
	assert_int_equal(
	    isle_place_link_load(c, ISLE_TIER_LEAF, l0, NULL, &cap), 0);
	assert_true(cap == 32 / 2.0); /* 4 nodes x 8 GPUs at 2:1 */
	assert_int_equal(
	    isle_place_link_load(c, ISLE_TIER_SPINE, s0, NULL, &cap), 0);
	assert_true(cap == 64 / 2.0 / 4.0);

	/* inside one leaf group: no shared uplink */
	assert_int_equal(
	    isle_place_load_add(c, one_leaf, m2, 2, ISLE_TRAFFIC_DP), 0);
	for (int g = 0; g < 4; g++)
		assert_true(load_of(c, ISLE_TIER_LEAF, g) == 0);
	/* two leafs of one spine group: 8 GPUs (one node's worth) on leaf
	 * 0's uplinks, 4 on leaf 1's; no spine uplink */
	assert_int_equal(
	    isle_place_load_add(c, two_leafs, m3, 3, ISLE_TRAFFIC_DP), 0);
	assert_true(load_of(c, ISLE_TIER_LEAF, l0) == 8);
	assert_true(load_of(c, ISLE_TIER_LEAF, l1) == 4);
	assert_true(load_of(c, ISLE_TIER_SPINE, s0) == 0);
	/* a pipeline across the spines: half weight, on both levels */
	assert_int_equal(
	    isle_place_load_add(c, two_spines, m2, 2, ISLE_TRAFFIC_PP), 0);
	assert_true(load_of(c, ISLE_TIER_LEAF, l0) == 8 + 4);
	assert_true(load_of(c, ISLE_TIER_LEAF, l2) == 4);
	assert_true(load_of(c, ISLE_TIER_SPINE, s0) == 4);
	assert_true(load_of(c, ISLE_TIER_SPINE, s1) == 4);

	/* bad input changes nothing */
	{
		int bad[1] = {16};

		assert_int_equal(
		    isle_place_load_add(c, bad, m2, 1, ISLE_TRAFFIC_DP),
		    -EINVAL);
		assert_int_equal(
		    isle_place_load_add(c, two_leafs, m3, 3, (isle_traffic)9),
		    -EINVAL);
		assert_int_equal(
		    isle_place_link_load(c, ISLE_TIER_CORE, 0, NULL, NULL),
		    -EINVAL);
		assert_int_equal(
		    isle_place_link_load(c, ISLE_TIER_LEAF, 4, NULL, NULL),
		    -EINVAL);
		assert_true(load_of(c, ISLE_TIER_LEAF, l0) == 12);
	}

	assert_int_equal(
	    isle_place_load_remove(c, two_spines, m2, 2, ISLE_TRAFFIC_PP), 0);
	assert_int_equal(
	    isle_place_load_remove(c, two_leafs, m3, 3, ISLE_TRAFFIC_DP), 0);
	assert_int_equal(
	    isle_place_load_remove(c, one_leaf, m2, 2, ISLE_TRAFFIC_DP), 0);
	for (int g = 0; g < 4; g++)
		assert_true(load_of(c, ISLE_TIER_LEAF, g) == 0);
	for (int g = 0; g < 2; g++)
		assert_true(load_of(c, ISLE_TIER_SPINE, g) == 0);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* in[] of the nodes of r. */
static int nodes_within(const struct isle_place_result *r, const int *in,
			int nin)
{
	for (int i = 0; i < r->nnodes; i++) {
		int k;

		for (k = 0; k < nin && in[k] != r->nodes[i]; k++)
			;
		if (k == nin)
			return 0;
	}
	return 1;
}

/*
 * A running job X crosses from leaf 0 to leaf 1 (nodes 0, 1, 4, 5). Two
 * free nodes are left in every leaf group (leafs 2 and 3 hold jobs of
 * their own, crossing nothing). A 4-node DP job must span two leafs: on
 * spine group 0 it shares X's uplinks, on spine group 1 it shares none.
 */
static void test_steers_off_loaded_links(void **state)
{
	isle_topo *t = cluster16();
	struct isle_place_opts o;
	struct isle_place_req req;
	struct isle_place_result r0, r1, rf;
	isle_place_ctx *blind, *cc, *fresh;
	uint64_t fm[16], busy = 0xff;
	int x_nodes[4] = {0, 1, 4, 5}, y_nodes[2] = {10, 11},
	    z_nodes[2] = {14, 15};
	uint64_t x_masks[4] = {busy, busy, busy, busy}, yz[2] = {busy, busy};
	int spine0_free[4] = {2, 3, 6, 7}, spine1_free[4] = {8, 9, 12, 13};

	(void)state;
	isle_place_opts_default(&o);
	assert_true(o.contention_weight == 0);
	blind = isle_place_create(t, &o);
	fresh = isle_place_create(t, &o);
	o.contention_weight = 1.0;
	cc = isle_place_create(t, &o);
	assert_non_null(blind);
	assert_non_null(cc);
	assert_non_null(fresh);
	all_free(t, fm);
	for (int i = 0; i < 4; i++)
		fm[x_nodes[i]] = 0;
	for (int i = 0; i < 2; i++)
		fm[y_nodes[i]] = fm[z_nodes[i]] = 0;
	for (isle_place_ctx *c = blind; c; c = c == blind ? cc : NULL) {
		assert_int_equal(isle_place_load_add(c, x_nodes, x_masks, 4,
						     ISLE_TRAFFIC_DP),
				 0);
		assert_int_equal(
		    isle_place_load_add(c, y_nodes, yz, 2, ISLE_TRAFFIC_DP), 0);
		assert_int_equal(
		    isle_place_load_add(c, z_nodes, yz, 2, ISLE_TRAFFIC_DP), 0);
	}
	isle_place_result_init(&r0);
	isle_place_result_init(&r1);
	isle_place_result_init(&rf);
	isle_place_req_init(&req);
	req.nodes = 4;
	req.gpus_per_node = 8;
	req.tp = 8;

	/* weight 0: the loads change nothing */
	assert_int_equal(isle_place(blind, fm, NULL, &req, &r0), 0);
	assert_int_equal(isle_place(fresh, fm, NULL, &req, &rf), 0);
	assert_int_equal(r0.nnodes, rf.nnodes);
	assert_memory_equal(r0.nodes, rf.nodes, sizeof(int) * 4);
	assert_true(r0.contention == 0);
	assert_true(r0.cost.total == rf.cost.total);

	/* weight 1: off X's uplinks, onto spine group 1 */
	assert_int_equal(isle_place(cc, fm, NULL, &req, &r1), 0);
	assert_int_equal(r1.nnodes, 4);
	assert_true(nodes_within(&r1, spine1_free, 4));
	assert_true(r1.contention == 0);
	assert_true(r1.leafs == 2);

	/* only spine group 0 left: the job goes there and is charged */
	for (int i = 0; i < 4; i++)
		fm[spine1_free[i]] = 0;
	assert_int_equal(isle_place(cc, fm, NULL, &req, &r1), 0);
	assert_true(nodes_within(&r1, spine0_free, 4));
	assert_true(r1.contention > 0);
	assert_int_equal(isle_place(blind, fm, NULL, &req, &r0), 0);
	assert_memory_equal(r0.nodes, r1.nodes, sizeof(int) * 4);
	assert_true(r0.cost.total == r1.cost.total);
	assert_true(r0.contention == 0);

	/* X ends: nothing to avoid any more */
	assert_int_equal(
	    isle_place_load_remove(cc, x_nodes, x_masks, 4, ISLE_TRAFFIC_DP),
	    0);
	assert_int_equal(isle_place(cc, fm, NULL, &req, &r1), 0);
	assert_true(r1.contention == 0);

	/* a bad class is refused with a reason */
	req.traffic = (isle_traffic)5;
	assert_int_equal(isle_place(cc, fm, NULL, &req, &r1), -EINVAL);
	assert_non_null(strstr(r1.reason, "traffic"));

	isle_place_result_fini(&r0);
	isle_place_result_fini(&r1);
	isle_place_result_fini(&rf);
	isle_place_destroy(blind);
	isle_place_destroy(cc);
	isle_place_destroy(fresh);
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_traffic_names),
	    cmocka_unit_test(test_loads),
	    cmocka_unit_test(test_steers_off_loaded_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
