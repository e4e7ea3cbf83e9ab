/*
 * test_topo_emit.c - emitters against golden files (tests/golden/topology/
 * emit-*), plus properties that hold for any cluster: every node appears
 * exactly once in tree and block output, Links rows are symmetric.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isle_topo.h"

#ifndef TOPO_GOLDEN_DIR
#define TOPO_GOLDEN_DIR "tests/golden/topology"
#endif

#include "topo_golden.h"

static isle_topo *topo;

static int setup(void **state)
{
	char err[512];

	return isle_topo_load(TOPO_GOLDEN_DIR "/cluster-small.json", &topo, err,
			      sizeof(err));
}

static int teardown(void **state)
{
	isle_topo_destroy(topo);
	return 0;
}

/* Runs an emitter into a string. */
#define EMIT(call, text)                                                       \
	do {                                                                   \
		size_t _len;                                                   \
		FILE *out = open_memstream(&(text), &_len);                    \
		assert_non_null(out);                                          \
		assert_int_equal((call), 0);                                   \
		fclose(out);                                                   \
	} while (0)

/* Counts how often each node name is listed in "Nodes=" values. */
static void count_nodes(const char *text, int *count)
{
	const char *p = text;

	while ((p = strstr(p, "Nodes=")) != NULL) {
		char list[4096], **v, err[128];
		int n;

		p += 6;
		sscanf(p, "%4095[^ \n]", list);
		/* Comment lines ("# not on any switch") count as well. */
		assert_int_equal(
		    isle_hostlist_expand(list, &v, &n, err, sizeof(err)), 0);
		for (int i = 0; i < n; i++) {
			int ni = isle_topo_find_node(topo, v[i]);

			assert_true(ni >= 0);
			count[ni]++;
		}
		isle_hostlist_free(v, n);
	}
}

static void test_slurm_tree(void **state)
{
	char *text = NULL;
	int count[64] = {0};

	EMIT(isle_emit_slurm_tree(topo, out), text);
	expect_golden(text, "emit-slurm-tree.conf");
	count_nodes(text, count);
	for (int i = 0; i < topo->nnodes; i++)
		assert_int_equal(count[i], 1);
	free(text);
}

static void test_slurm_block(void **state)
{
	char *text = NULL;
	int count[64] = {0};

	EMIT(isle_emit_slurm_block(topo, out), text);
	expect_golden(text, "emit-slurm-block.conf");
	count_nodes(text, count);
	for (int i = 0; i < topo->nnodes; i++)
		assert_int_equal(count[i], 1);
	free(text);
}

static void test_gres(void **state)
{
	int dgx = isle_topo_find_node(topo, "dgx01");
	char *text = NULL;

	EMIT(isle_emit_gres(topo, -1, "/tmp/devs", NULL, NULL, out), text);
	expect_golden(text, "emit-gres.conf");
	free(text);
	EMIT(isle_emit_gres(topo, dgx, NULL, NULL, NULL, out), text);
	assert_non_null(strstr(text, "NodeName=dgx01 Name=gpu "
				     "File=/dev/nvidia7 "
				     "Links=18,18,18,18,18,18,18,-1\n"));
	assert_null(strstr(text, "gb01"));
	free(text);
	assert_int_equal(
	    isle_emit_gres(topo, topo->nnodes, NULL, NULL, NULL, stdout),
	    -EINVAL);

	/* Cores=: per NUMA node (dgx01 GPUs 4-7 are on NUMA 1), or one list
	 * for all; pcie01's GPU 0 has no NUMA node and gets every core. */
	EMIT(isle_emit_gres(topo, -1, NULL, "0:0-15;1:16-31", NULL, out), text);
	assert_non_null(strstr(text,
			       "NodeName=dgx01 Name=gpu File=/dev/nvidia5 "
			       "Cores=16-31 Links="));
	assert_non_null(strstr(text,
			       "NodeName=pcie01 Name=gpu File=/dev/nvidia0 "
			       "Cores=0-15,16-31 Links="));
	assert_non_null(strstr(text,
			       "NodeName=pcie01 Name=gpu File=/dev/nvidia1 "
			       "Cores=16-31 Links="));
	free(text);
	EMIT(isle_emit_gres(topo, dgx, NULL, "0-7", NULL, out), text);
	assert_non_null(strstr(text, "File=/dev/nvidia6 Cores=0-7 Links="));
	free(text);
	assert_int_equal(
	    isle_emit_gres(topo, dgx, NULL, "0:1;0:2", NULL, stdout), -EINVAL);
	assert_int_equal(isle_emit_gres(topo, dgx, NULL, "x", NULL, stdout),
			 -EINVAL);
	assert_int_equal(isle_emit_gres(topo, dgx, NULL, "0:", NULL, stdout),
			 -EINVAL);
	/* Regression: only characters were checked, so these were written
	 * into gres.conf for slurmd to reject. */
	static const char *const bad_cores[] = {
	    "-",	 "0-",		"-3",	    "3-1",   "0,,1",
	    "0,",	 ",0",		"0--3",	    "0-3-5", "99999999999",
	    "0-1048576", "0:0-3;1:7-2", "0:0-3;1:,"};
	for (size_t i = 0; i < sizeof(bad_cores) / sizeof(bad_cores[0]); i++)
		assert_int_equal(
		    isle_emit_gres(topo, dgx, NULL, bad_cores[i], NULL, stdout),
		    -EINVAL);
	EMIT(isle_emit_gres(topo, dgx, NULL, "0,2-3,8-1048575", NULL, out),
	     text);
	assert_non_null(strstr(text, "Cores=0,2-3,8-1048575 Links="));
	free(text);

	/* Type=: slurm.conf's Gres=gpu:h100:8 needs it in gres.conf. */
	EMIT(isle_emit_gres(topo, -1, "/tmp/devs", "0:0-15;1:16-31", "h100",
			    out),
	     text);
	expect_golden(text, "emit-gres-type.conf");
	free(text);
	static const char *const bad_types[] = {"",    "h100:8",    "a b",
						"x=y", "h100,a100", "gpu\n"};
	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++)
		assert_int_equal(
		    isle_emit_gres(topo, dgx, NULL, NULL, bad_types[i], stdout),
		    -EINVAL);
	assert_true(isle_gres_type_valid("a100-sxm4_80gb.v2"));
}

static void test_nccl_xml(void **state)
{
	char *text = NULL;

	EMIT(isle_emit_nccl_xml(topo, isle_topo_find_node(topo, "dgx01"), out),
	     text);
	expect_golden(text, "emit-nccl-dgx01.xml");
	free(text);
	EMIT(isle_emit_nccl_xml(topo, isle_topo_find_node(topo, "pcie01"), out),
	     text);
	expect_golden(text, "emit-nccl-pcie01.xml");
	free(text);
	assert_int_equal(isle_emit_nccl_xml(topo, -1, stdout), -EINVAL);
}

static void test_dot(void **state)
{
	const char *jobs[] = {"1234", "1235"};
	int job_of_node[64];
	char *text = NULL;

	for (int i = 0; i < topo->nnodes; i++)
		job_of_node[i] = -1;
	job_of_node[isle_topo_find_node(topo, "dgx02")] = 0;
	job_of_node[isle_topo_find_node(topo, "gb01")] = 1;
	EMIT(isle_emit_dot(topo, job_of_node, jobs, 2, out), text);
	expect_golden(text, "emit-cluster.dot");
	free(text);
}

/* A rail-optimized fabric built in code: tree output lists each node
 * under its rail-0 leaf only, and a switch holding both nodes and child
 * switches gets a separate "-nodes" leaf (Slurm rejects mixing). */
static void test_tree_rails_and_mixed(void **state)
{
	isle_topo *t = isle_topo_create();
	int l0 = isle_topo_add_switch(t, "l0", 0, ISLE_SW_UNKNOWN);
	int l1 = isle_topo_add_switch(t, "l1", 0, ISLE_SW_UNKNOWN);
	int top = isle_topo_add_switch(t, "top", 0, ISLE_SW_UNKNOWN);
	char *text = NULL, err[256];

	for (int i = 0; i < 4; i++) {
		char name[16];
		int n;

		snprintf(name, sizeof(name), "r%d", i);
		n = isle_topo_add_node(t, name, 2);
		/* NIC order differs from rail order. */
		assert_int_equal(isle_topo_add_nic(t, n, "ib0", 0, 1, 200, 0),
				 0);
		assert_int_equal(isle_topo_add_nic(t, n, "ib1", 0, 0, 200, 0),
				 1);
		assert_int_equal(isle_topo_attach_node(t, l1, n, 0), 0);
		assert_int_equal(isle_topo_attach_node(t, l0, n, 1), 0);
	}
	assert_int_equal(isle_topo_link_switches(t, top, l0), 0);
	assert_int_equal(isle_topo_link_switches(t, top, l1), 0);
	assert_int_equal(
	    isle_topo_attach_node(t, top, isle_topo_add_node(t, "m", 0), -1),
	    0);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	EMIT(isle_emit_slurm_tree(t, out), text);
	assert_non_null(strstr(text, "SwitchName=l0 Nodes=r[0-3]\n"));
	assert_null(strstr(text, "SwitchName=l1"));
	assert_non_null(strstr(text, "SwitchName=top-nodes Nodes=m\n"));
	assert_non_null(strstr(text, "SwitchName=top Switches=l0,top-nodes\n"));
	free(text);
	isle_topo_destroy(t);
}

/*
 * The fabric: one bridge per switch and multi-node domain (plus a root for
 * nodes off the fabric), one cable per node, and cables that join all
 * bridges and nodes into one tree (n + b - 1 cables, every end known).
 */
static void test_fabric(void **state)
{
	char *text = NULL, *save = NULL, *line;
	char names[64][64];
	int nnames = 0, nodes = 0, bridges = 0, cables = 0;

	EMIT(isle_emit_fabric(topo, out), text);
	expect_golden(text, "emit-fabric.txt");
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char a[64], b[64];

		if (sscanf(line, "switch %63s", a) == 1) {
			bridges++;
			assert_true(nnames < 64);
			strcpy(names[nnames++], a);
		} else if (sscanf(line, "node %63s", a) == 1) {
			nodes++;
			assert_true(isle_topo_find_node(topo, a) >= 0);
			assert_true(nnames < 64);
			strcpy(names[nnames++], a);
		} else if (sscanf(line, "cable %63s %63s", a, b) == 2) {
			int fa = 0, fb = 0;

			cables++;
			for (int i = 0; i < nnames; i++) {
				fa |= !strcmp(names[i], a);
				fb |= !strcmp(names[i], b);
			}
			assert_true(fa || isle_topo_find_node(topo, a) >= 0);
			assert_true(fb);
		}
	}
	assert_int_equal(nodes, topo->nnodes);
	assert_int_equal(cables, nodes + bridges - 1);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_tree),
	    cmocka_unit_test(test_slurm_block),
	    cmocka_unit_test(test_gres),
	    cmocka_unit_test(test_nccl_xml),
	    cmocka_unit_test(test_dot),
	    cmocka_unit_test(test_tree_rails_and_mixed),
	    cmocka_unit_test(test_fabric),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
