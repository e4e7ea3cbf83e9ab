/*
 * test_topo_model.c - builders, finalize (islands, levels, groups), queries.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "isle_topo.h"

static void finalize_ok(isle_topo *t)
{
	char err[256] = "";
	int rc = isle_topo_finalize(t, err, sizeof(err));

	if (rc)
		fail_msg("finalize: %d %s", rc, err);
}

/* A node whose GPUs are all connected pairwise by n links. */
static int add_nvswitch_node(isle_topo *t, const char *name, int ngpus, int n)
{
	int idx = isle_topo_add_node(t, name, ngpus);

	assert_true(idx >= 0);
	for (int a = 0; a < ngpus; a++)
		for (int b = a + 1; b < ngpus; b++)
			assert_int_equal(isle_topo_set_nvlink(t, idx, a, b, n),
					 0);
	return idx;
}

static void test_defaults(void **state)
{
	isle_topo *t = isle_topo_create();

	assert_non_null(t);
	assert_true(t->tier[ISLE_TIER_ISLAND].bw_gbps == 450.0);
	assert_true(t->tier[ISLE_TIER_NODE].bw_gbps == 32.0);
	assert_true(t->tier[ISLE_TIER_CORE].lat_us == 7.0);
	t->tier[ISLE_TIER_SPINE].oversub = 4.0;
	assert_true(isle_topo_tier_bw(t, ISLE_TIER_SPINE) == 12.5);
	assert_true(isle_topo_tier_bw(t, ISLE_TIER_LEAF) == 50.0);
	assert_true(isle_topo_tier_lat(t, ISLE_TIER_SPINE) == 5.0);
	assert_true(isle_topo_tier_bw(t, ISLE_TIER_COUNT) == 0.0);
	for (int k = 0; k < ISLE_TIER_COUNT; k++)
		assert_int_equal(isle_tier_parse(isle_tier_name(k)), k);
	assert_null(isle_tier_name(ISLE_TIER_COUNT));
	assert_int_equal(isle_tier_parse("rack"), -1);
	assert_string_equal(isle_sw_level_name(ISLE_SW_SPINE), "spine");
	finalize_ok(t); /* an empty model is valid */
	assert_int_equal(t->total_gpus, 0);
	isle_topo_destroy(t);
	isle_topo_destroy(NULL);
}

static void test_builder_errors(void **state)
{
	isle_topo *t = isle_topo_create();
	int n, s0, s1;

	assert_int_equal(isle_topo_add_node(t, "", 1), -EINVAL);
	assert_int_equal(isle_topo_add_node(t, "a", 65), -EINVAL);
	assert_int_equal(isle_topo_add_node(t, "a", -1), -EINVAL);
	n = isle_topo_add_node(t, "a", 2);
	assert_int_equal(n, 0);
	assert_int_equal(isle_topo_add_node(t, "a", 2), -EEXIST);
	assert_int_equal(isle_topo_set_nvlink(t, n, 0, 0, 1), -EINVAL);
	assert_int_equal(isle_topo_set_nvlink(t, n, 0, 2, 1), -EINVAL);
	assert_int_equal(isle_topo_set_nvlink(t, n, 0, 1, 70000), -ERANGE);
	assert_int_equal(isle_topo_set_gpu(t, n, 2, NULL, NULL, 0), -EINVAL);
	assert_int_equal(isle_topo_add_nic(t, n, "mlx5_0", 1, 0, 400, 0), 0);
	assert_int_equal(isle_topo_add_nic(t, n, "mlx5_0", 2, 1, 400, 0),
			 -EEXIST);
	assert_int_equal(isle_topo_set_gpu_nic(t, n, 0, 1), -EINVAL);
	s0 = isle_topo_add_switch(t, "s0", 0, ISLE_SW_UNKNOWN);
	s1 = isle_topo_add_switch(t, "s1", 0, ISLE_SW_UNKNOWN);
	assert_int_equal(isle_topo_add_switch(t, "s0", 0, ISLE_SW_LEAF),
			 -EEXIST);
	assert_int_equal(isle_topo_add_switch(t, "s9", 0, 7), -EINVAL);
	assert_int_equal(isle_topo_link_switches(t, s0, s0), -EINVAL);
	assert_int_equal(isle_topo_link_switches(t, s1, s0), 0);
	assert_int_equal(isle_topo_link_switches(t, s1, s0), 0); /* dup */
	assert_int_equal(t->switches[s1].ndown, 1);
	assert_int_equal(isle_topo_attach_node(t, s0, n, 0), 0);
	assert_int_equal(isle_topo_attach_node(t, s0, n, 0), 0);
	assert_int_equal(isle_topo_attach_node(t, s1, n, 0), -EEXIST);
	assert_int_equal(isle_topo_attach_node(t, s0, n, 1), -EINVAL);
	assert_int_equal(isle_topo_add_domain(t, "d", &n, 1, 900), 0);
	assert_int_equal(isle_topo_add_domain(t, "e", &n, 1, 900), -EEXIST);
	assert_int_equal(isle_topo_add_rack(t, "r", &n, 1), 0);
	assert_int_equal(isle_topo_add_rack(t, "r", NULL, 0), -EEXIST);
	assert_int_equal(isle_topo_add_rack(t, "r2", &n, 1), -EEXIST);
	finalize_ok(t);
	assert_int_equal(t->switches[s0].nnodes, 1); /* deduplicated */
	isle_topo_destroy(t);
}

static void test_intra_node_islands(void **state)
{
	isle_topo *t = isle_topo_create();
	int a = add_nvswitch_node(t, "dgx", 8, 18);
	int b = isle_topo_add_node(t, "pairs", 5);
	int c = isle_topo_add_node(t, "cpu", 0);

	/* 0-1 and 2-3 bridged, 4 alone. */
	assert_int_equal(isle_topo_set_nvlink(t, b, 0, 1, 4), 0);
	assert_int_equal(isle_topo_set_nvlink(t, b, 3, 2, 4), 0);
	finalize_ok(t);

	assert_int_equal(t->nislands, 4);
	assert_int_equal(t->total_gpus, 13);
	assert_int_equal(t->nodes[a].nislands, 1);
	assert_int_equal(t->nodes[b].nislands, 3);
	assert_int_equal(t->nodes[c].nislands, 0);
	assert_int_equal(t->nodes[c].first_island, -1);
	assert_int_equal(t->islands[t->nodes[a].first_island].ngpus, 8);
	assert_int_equal(isle_topo_find_island(t, "pairs:nvl1"),
			 t->nodes[b].first_island + 1);
	assert_int_equal(isle_topo_find_island(t, "pairs:nvl2"),
			 t->nodes[b].gpus[4].island);
	assert_int_equal(t->islands[t->nodes[b].gpus[4].island].ngpus, 1);
	assert_int_equal(t->islands[t->nodes[b].gpus[2].island].members[1].gpu,
			 3);
	assert_int_equal(isle_topo_gpu_tier(t, b, 2, b, 3), ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_gpu_tier(t, b, 1, b, 2), ISLE_TIER_NODE);
	assert_int_equal(isle_topo_gpu_tier(t, a, 0, a, 7), ISLE_TIER_ISLAND);
	/* No switches: every node is its own leaf group, one core group. */
	assert_int_equal(isle_topo_gpu_tier(t, a, 0, b, 0), ISLE_TIER_CORE);
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 3);
	assert_int_equal(t->ngroups[ISLE_TIER_CORE], 1);
	assert_int_equal(t->nodes[c].group[ISLE_TIER_CORE], 0);
	/* Out-of-range queries answer the loosest tier. */
	assert_int_equal(isle_topo_gpu_tier(t, a, 8, a, 0), ISLE_TIER_CORE);
	assert_int_equal(isle_topo_node_tier(t, -1, 0), ISLE_TIER_CORE);

	/* Finalize again after a change: islands are rederived. */
	assert_int_equal(isle_topo_set_nvlink(t, b, 1, 4, 2), 0);
	finalize_ok(t);
	assert_int_equal(t->nodes[b].nislands, 2);
	assert_int_equal(t->nislands, 3);
	assert_int_equal(isle_topo_find_island(t, "pairs:nvl2"), -1);
	isle_topo_destroy(t);
}

static void test_multi_node_domain(void **state)
{
	isle_topo *t = isle_topo_create();
	int n[4], d, d2;

	for (int i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "gb%d", i);
		n[i] = isle_topo_add_node(t, name, 4);
	}
	finalize_ok(t);
	assert_int_equal(t->nislands, 16);
	/* A domain added after finalize keeps its returned index. */
	int pair[2] = {n[2], n[1]};

	d = isle_topo_add_domain(t, "nvl72-a", pair, 2, 900.0);
	assert_int_equal(d, 0);
	assert_int_equal(t->finalized, 0); /* queries wait for finalize */
	d2 = isle_topo_add_domain(t, "nvl72-b", &n[3], 1, 0);
	assert_int_equal(d2, 1);
	finalize_ok(t);
	finalize_ok(t); /* idempotent */
	assert_int_equal(t->nislands, 2 + 4);
	assert_int_equal(isle_topo_find_island(t, "nvl72-a"), d);
	assert_true(t->islands[d].multi_node);
	assert_int_equal(t->islands[d].ngpus, 8);
	assert_int_equal(t->islands[d].nnodes, 2);
	assert_int_equal(t->islands[d].nodes[0], n[1]); /* sorted */
	assert_int_equal(t->islands[d].members[4].node, n[2]);
	assert_true(t->islands[d].bw_gbps == 900.0);
	assert_int_equal(t->nodes[n[1]].domain, d);
	assert_int_equal(t->nodes[n[2]].first_island, d);
	assert_int_equal(t->nodes[n[2]].nislands, 1);
	assert_int_equal(isle_topo_node_tier(t, n[1], n[2]), ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_node_tier(t, n[1], n[1]), ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_node_tier(t, n[0], n[0]), ISLE_TIER_NODE);
	assert_int_equal(isle_topo_gpu_tier(t, n[1], 3, n[2], 0),
			 ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_gpu_tier(t, n[0], 0, n[0], 1),
			 ISLE_TIER_NODE);
	assert_int_equal(isle_topo_gpu_tier(t, n[0], 0, n[1], 0),
			 ISLE_TIER_CORE);
	/* Derived names must not clash with domain names. */
	isle_topo_destroy(t);

	t = isle_topo_create();
	n[0] = isle_topo_add_node(t, "x", 1);
	n[1] = isle_topo_add_node(t, "y", 1);
	assert_int_equal(isle_topo_add_domain(t, "x:nvl0", &n[1], 1, 0), 0);
	char err[256] = "";

	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "x:nvl0"));
	isle_topo_destroy(t);
}

/*
 * Two rail-optimized scalable units of 4 nodes x 4 rails: rail r of every
 * node of SU s lands on leaf s.r; spine plane r joins leaf r of both SUs.
 * A fifth node hangs off a second fabric with its own leaf and spine.
 */
static void test_rail_optimized(void **state)
{
	isle_topo *t = isle_topo_create();
	int leaf[2][4], spine[4], core, lone_leaf, lone_spine, nodes[8], lone;
	char name[32];

	for (int p = 0; p < 4; p++) {
		snprintf(name, sizeof(name), "spine%d", p);
		spine[p] =
		    isle_topo_add_switch(t, name, 0x100 + p, ISLE_SW_UNKNOWN);
	}
	core = isle_topo_add_switch(t, "core", 0x200, ISLE_SW_UNKNOWN);
	for (int s = 0; s < 2; s++)
		for (int r = 0; r < 4; r++) {
			snprintf(name, sizeof(name), "su%d-leaf%d", s, r);
			leaf[s][r] =
			    isle_topo_add_switch(t, name, 0, ISLE_SW_UNKNOWN);
			assert_int_equal(
			    isle_topo_link_switches(t, spine[r], leaf[s][r]),
			    0);
		}
	for (int p = 0; p < 4; p++)
		assert_int_equal(isle_topo_link_switches(t, core, spine[p]), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "n%02d", i + 1);
		nodes[i] = add_nvswitch_node(t, name, 8, 18);
		for (int r = 0; r < 4; r++) {
			char nic[16];
			int k;

			snprintf(nic, sizeof(nic), "mlx5_%d", r);
			/* Rail order differs from NIC order on odd nodes. */
			k = isle_topo_add_nic(t, nodes[i], nic, 0,
					      i % 2 ? 3 - r : r, 400, r / 2);
			assert_true(k >= 0);
			assert_int_equal(
			    isle_topo_attach_node(
				t, leaf[i / 4][i % 2 ? 3 - r : r], nodes[i], k),
			    0);
		}
	}
	lone = add_nvswitch_node(t, "lone", 8, 18);
	lone_leaf = isle_topo_add_switch(t, "lone-leaf", 0, ISLE_SW_UNKNOWN);
	lone_spine = isle_topo_add_switch(t, "lone-spine", 0, ISLE_SW_UNKNOWN);
	assert_int_equal(isle_topo_link_switches(t, lone_spine, lone_leaf), 0);
	assert_int_equal(isle_topo_attach_node(t, lone_leaf, lone, -1), 0);
	finalize_ok(t);

	assert_int_equal(t->switches[leaf[1][2]].level, ISLE_SW_LEAF);
	assert_int_equal(t->switches[spine[0]].level, ISLE_SW_SPINE);
	assert_int_equal(t->switches[core].level, ISLE_SW_CORE);
	assert_int_equal(t->switches[lone_spine].level, ISLE_SW_SPINE);
	assert_int_equal(t->switches[leaf[0][0]].nnodes, 4);

	/* Each SU is one leaf group; both SUs share the spine planes. */
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 3);
	assert_int_equal(t->ngroups[ISLE_TIER_SPINE], 2);
	assert_int_equal(t->ngroups[ISLE_TIER_CORE], 2);
	assert_int_equal(isle_topo_node_tier(t, nodes[0], nodes[3]),
			 ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, nodes[0], nodes[4]),
			 ISLE_TIER_SPINE);
	assert_int_equal(isle_topo_node_tier(t, nodes[7], lone),
			 ISLE_TIER_CORE);
	assert_int_equal(isle_topo_gpu_tier(t, nodes[5], 1, nodes[6], 7),
			 ISLE_TIER_LEAF);
	assert_int_equal(t->nodes[nodes[0]].group[ISLE_TIER_LEAF], 0);
	assert_int_equal(t->nodes[nodes[4]].group[ISLE_TIER_LEAF], 1);
	assert_int_equal(t->nodes[lone].group[ISLE_TIER_CORE], 1);
	/* The primary leaf is the rail-0 port, not the first NIC. */
	assert_int_equal(t->nodes[nodes[1]].leaf, leaf[0][0]);
	assert_int_equal(t->nodes[nodes[1]].nics[3].sw, leaf[0][0]);
	assert_int_equal(t->nodes[lone].leaf, lone_leaf);
	assert_int_equal(isle_topo_find_switch(t, "su1-leaf3"), leaf[1][3]);
	assert_int_equal(isle_topo_find_switch(t, "su2-leaf3"), -1);
	assert_int_equal(isle_topo_find_node(t, "n08"), nodes[7]);
	isle_topo_destroy(t);
}

/* Two pods of two leafs under their own spine, joined by a core; levels
 * given explicitly where known. */
static void test_pods(void **state)
{
	isle_topo *t = isle_topo_create();
	int sp[2], lf[4], n[8], core;
	char name[32];

	core = isle_topo_add_switch(t, "core", 0, ISLE_SW_CORE);
	for (int p = 0; p < 2; p++) {
		snprintf(name, sizeof(name), "spine%d", p);
		sp[p] = isle_topo_add_switch(t, name, 0, ISLE_SW_UNKNOWN);
		assert_int_equal(isle_topo_link_switches(t, core, sp[p]), 0);
	}
	for (int l = 0; l < 4; l++) {
		snprintf(name, sizeof(name), "leaf%d", l);
		lf[l] = isle_topo_add_switch(t, name, 0, ISLE_SW_LEAF);
		assert_int_equal(isle_topo_link_switches(t, sp[l / 2], lf[l]),
				 0);
	}
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		n[i] = isle_topo_add_node(t, name, 2);
		assert_int_equal(isle_topo_attach_node(t, lf[i / 2], n[i], -1),
				 0);
	}
	finalize_ok(t);
	assert_int_equal(t->switches[sp[1]].level, ISLE_SW_SPINE);
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 4);
	assert_int_equal(t->ngroups[ISLE_TIER_SPINE], 2);
	assert_int_equal(t->ngroups[ISLE_TIER_CORE], 1);
	assert_int_equal(isle_topo_node_tier(t, n[0], n[1]), ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, n[0], n[3]), ISLE_TIER_SPINE);
	assert_int_equal(isle_topo_node_tier(t, n[0], n[4]), ISLE_TIER_CORE);
	assert_int_equal(isle_topo_gpu_tier(t, n[0], 0, n[0], 1),
			 ISLE_TIER_NODE);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t->nodes[n[i]].group[ISLE_TIER_SPINE], i / 4);
	isle_topo_destroy(t);
}

/* A node first seen in a fabric dump gets its GPUs later; racks move. */
static void test_resize_and_racks(void **state)
{
	isle_topo *t = isle_topo_create();
	int n = isle_topo_add_node(t, "a", 0), r0, r1;

	assert_int_equal(isle_topo_set_ngpus(t, n, 4), 0);
	assert_int_equal(isle_topo_set_gpu(t, n, 1, "0000:01:00.0", "H100", 0),
			 0);
	assert_int_equal(isle_topo_set_nvlink(t, n, 1, 3, 6), 0);
	assert_int_equal(isle_topo_set_ngpus(t, n, 8), 0);
	assert_string_equal(t->nodes[n].gpus[1].bus_id, "0000:01:00.0");
	assert_int_equal(t->nodes[n].nvlinks[1 * 8 + 3], 6);
	assert_int_equal(t->nodes[n].nvlinks[3 * 8 + 1], 6);
	assert_int_equal(t->nodes[n].gpus[7].numa, -1);
	assert_int_equal(isle_topo_set_ngpus(t, n, 2), 0);
	assert_int_equal(t->nodes[n].nvlinks[1 * 2 + 0], 0);
	assert_int_equal(isle_topo_set_ngpus(t, n, 65), -EINVAL);

	r0 = isle_topo_add_rack(t, "r0", NULL, 0);
	r1 = isle_topo_add_rack(t, "r1", &n, 1);
	assert_int_equal(isle_topo_find_rack(t, "r1"), r1);
	assert_int_equal(isle_topo_find_rack(t, "r2"), -1);
	assert_int_equal(isle_topo_set_node_rack(t, n, r0), 0);
	assert_int_equal(t->racks[r1].nnodes, 0);
	assert_int_equal(t->racks[r0].nnodes, 1);
	assert_int_equal(t->nodes[n].rack, r0);
	assert_int_equal(isle_topo_set_node_rack(t, n, -1), 0);
	assert_int_equal(t->racks[r0].nnodes, 0);
	assert_int_equal(isle_topo_set_node_rack(t, n, 5), -EINVAL);
	finalize_ok(t);
	assert_int_equal(t->nodes[n].nislands, 2);
	isle_topo_destroy(t);
}

/* Lookups stay exact at the size of a large cluster. */
static void test_many_names(void **state)
{
	isle_topo *t = isle_topo_create();
	char name[32];

	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "node%05d", i);
		assert_int_equal(isle_topo_add_node(t, name, 1), i);
	}
	finalize_ok(t);
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "node%05d", i);
		assert_int_equal(isle_topo_find_node(t, name), i);
		snprintf(name, sizeof(name), "node%05d:nvl0", i);
		assert_int_equal(isle_topo_find_island(t, name), i);
	}
	assert_int_equal(isle_topo_find_node(t, "node10000"), -1);
	assert_int_equal(isle_topo_find_node(t, NULL), -1);
	isle_topo_destroy(t);
}

/*
 * Switch links must not form cycles: finalize refuses them and names the
 * switches on the cycle. A 24-switch mesh (leafs under spines and spines
 * under leafs) once hung slurmctld at load; a DAG with many paths between
 * two switches (fat-tree layers) still finalizes.
 */
static void test_switch_cycles(void **state)
{
	isle_topo *t = isle_topo_create();
	int sw[24], n, a, b;
	char err[512] = "", name[32];

	for (int i = 0; i < 24; i++) {
		snprintf(name, sizeof(name), "%s%d", i < 12 ? "leaf" : "spine",
			 i % 12);
		sw[i] =
		    isle_topo_add_switch(t, name, 0x100 + i, ISLE_SW_UNKNOWN);
		assert_true(sw[i] >= 0);
	}
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		n = isle_topo_add_node(t, name, 4);
		assert_int_equal(isle_topo_attach_node(t, sw[i], n, -1), 0);
	}
	for (a = 12; a < 24; a++)
		for (b = 0; b < 12; b++)
			assert_int_equal(
			    isle_topo_link_switches(t, sw[a], sw[b]), 0);
	finalize_ok(t); /* 12 x 12 two-layer DAG */
	/* and one more layer of the same mesh above: many paths, no cycle */
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "core%d", i);
		a = isle_topo_add_switch(t, name, 0x200 + i, ISLE_SW_UNKNOWN);
		for (b = 12; b < 24; b++)
			assert_int_equal(isle_topo_link_switches(t, a, sw[b]),
					 0);
	}
	finalize_ok(t);

	/* leafs listing the spines below them: every pair is a cycle */
	for (a = 0; a < 12; a++)
		for (b = 12; b < 24; b++)
			assert_int_equal(
			    isle_topo_link_switches(t, sw[a], sw[b]), 0);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cycle"));
	assert_non_null(strstr(err, "leaf0 -> spine0 -> leaf0"));
	assert_int_equal(t->finalized, 0);
	isle_topo_destroy(t);

	/* a longer cycle a -> b -> c -> a is named in order */
	t = isle_topo_create();
	a = isle_topo_add_switch(t, "a", 1, ISLE_SW_UNKNOWN);
	b = isle_topo_add_switch(t, "b", 2, ISLE_SW_UNKNOWN);
	n = isle_topo_add_switch(t, "c", 3, ISLE_SW_UNKNOWN);
	assert_int_equal(isle_topo_link_switches(t, a, b), 0);
	assert_int_equal(isle_topo_link_switches(t, b, n), 0);
	finalize_ok(t);
	assert_int_equal(isle_topo_link_switches(t, n, a), 0);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ": a -> b -> c -> a"));
	isle_topo_destroy(t);
}

/* The island tier's bandwidth from NVLink link counts and GPU models. */
static void test_nvlink_bw(void **state)
{
	isle_topo *t = isle_topo_create();
	int a, b, c;

	/* DGX-1 V100 hybrid cube mesh row: 1+1+2+2 links = 6 x 25 GB/s. */
	a = isle_topo_add_node(t, "dgx1", 5);
	for (int g = 0; g < 5; g++)
		assert_int_equal(
		    isle_topo_set_gpu(t, a, g, NULL, "Tesla V100-SXM2-16GB", 0),
		    0);
	isle_topo_set_nvlink(t, a, 0, 1, 1);
	isle_topo_set_nvlink(t, a, 0, 2, 1);
	isle_topo_set_nvlink(t, a, 0, 3, 2);
	isle_topo_set_nvlink(t, a, 0, 4, 2);
	/* H100 behind NVSwitch: 18 per pair, capped at 18 per GPU. */
	b = isle_topo_add_node(t, "hgx", 4);
	for (int g = 0; g < 4; g++) {
		isle_topo_set_gpu(t, b, g, NULL, "NVIDIA H100 80GB HBM3", 0);
		for (int h = g + 1; h < 4; h++)
			isle_topo_set_nvlink(t, b, g, h, 18);
	}
	/* GPU 1-4 of dgx1 have 1-2 links: 25-50 GB/s, the lowest wins. */
	assert_true(isle_topo_derive_nvlink_bw(t) == 25.0);
	assert_true(t->tier[ISLE_TIER_ISLAND].bw_gbps == 25.0);
	/* Only once: a value already set stays. */
	assert_true(isle_topo_derive_nvlink_bw(t) == 0.0);
	isle_topo_destroy(t);

	t = isle_topo_create();
	b = isle_topo_add_node(t, "hgx", 4);
	for (int g = 0; g < 4; g++) {
		isle_topo_set_gpu(t, b, g, NULL, "NVIDIA H100 80GB HBM3", 0);
		for (int h = g + 1; h < 4; h++)
			isle_topo_set_nvlink(t, b, g, h, 18);
	}
	assert_true(isle_topo_derive_nvlink_bw(t) == 450.0);
	isle_topo_destroy(t);

	/* An unknown model, or no NVLink at all, leaves the default. */
	t = isle_topo_create();
	c = isle_topo_add_node(t, "x", 2);
	isle_topo_set_gpu(t, c, 0, NULL, "Mystery GPU", 0);
	isle_topo_set_gpu(t, c, 1, NULL, "Mystery GPU", 0);
	assert_true(isle_topo_derive_nvlink_bw(t) == 0.0);
	isle_topo_set_nvlink(t, c, 0, 1, 4);
	assert_true(isle_topo_derive_nvlink_bw(t) == 0.0);
	assert_true(t->tier[ISLE_TIER_ISLAND].bw_gbps == 450.0);
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_builder_errors),
	    cmocka_unit_test(test_intra_node_islands),
	    cmocka_unit_test(test_multi_node_domain),
	    cmocka_unit_test(test_rail_optimized),
	    cmocka_unit_test(test_pods),
	    cmocka_unit_test(test_resize_and_racks),
	    cmocka_unit_test(test_many_names),
	    cmocka_unit_test(test_switch_cycles),
	    cmocka_unit_test(test_nvlink_bw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
