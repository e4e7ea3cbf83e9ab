/*
 * test_place_sim.c - islesim's parts: the workload generator follows the
 * published mix and is deterministic for a seed, the CSV reader names the
 * bad line, the cluster generators build the documented shapes, and a
 * simulation run places every job under every policy with sane metrics.
 */
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

#include "islesim.h"

static void test_generator(void **state)
{
	const struct sim_mix *mix = sim_mix_find("kalos");
	struct sim_job *a, *b;
	double sum = 0;
	int i, ones = 0, n = 20000;

	assert_non_null(mix);
	assert_null(sim_mix_find("nope"));
	a = sim_workload_gen(mix, n, 100000, 0.9, 7);
	b = sim_workload_gen(mix, n, 100000, 0.9, 7);
	assert_non_null(a);
	assert_non_null(b);
	assert_memory_equal(a, b, n * sizeof(*a));
	for (i = 0; i < n; i++) {
		assert_true(a[i].gpus >= 1 && a[i].gpus <= mix->max_gpus);
		assert_int_equal(a[i].gpus % (a[i].tp * a[i].pp), 0);
		assert_true(a[i].duration > 0);
		if (i)
			assert_true(a[i].submit >= a[i - 1].submit);
		if (a[i].gpus >= 64)
			assert_true(a[i].pp > 1);
		ones += a[i].gpus == 1;
		sum += a[i].gpus;
	}
	/* median 1 GPU; the mean within 25% of the published one */
	assert_true(ones > n / 2);
	assert_true(sum / n > 0.75 * mix->mean_gpus &&
		    sum / n < 1.25 * mix->mean_gpus);
	free(b);
	b = sim_workload_gen(mix, n, 100000, 0.9, 8);
	assert_memory_not_equal(a, b, n * sizeof(*a));
	free(a);
	free(b);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_csv(void **state)
{
	char path[] = "/tmp/isle-test-sim-XXXXXX", err[256];
	struct sim_job *jobs;
	int fd = mkstemp(path), n;

	assert_true(fd >= 0);
	close(fd);
	write_file(path, "# comment\nsubmit,duration,gpus,tp,pp,workload\n"
			 "0,60,8,8,1,train\n5,30,2,2,1,infer\n10,10,1,1,1\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 3);
	assert_int_equal(jobs[0].gpus, 8);
	assert_int_equal(jobs[1].workload, ISLE_WORKLOAD_INFER);
	assert_int_equal(jobs[2].workload, ISLE_WORKLOAD_TRAIN);
	free(jobs);
	write_file(path, "0,60,8,8,1\n5,30,x,2,1\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2:"));
	assert_null(jobs);
	write_file(path, "5,60,8,8,1\n0,30,2,2,1\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "decrease"));
	write_file(path, "0,60,8,8,1,maybe\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "maybe"));
	unlink(path);
}

static void test_clusters(void **state)
{
	static const struct {
		const char *name;
		int nodes, islands_min, domains;
	} want[] = {
	    {"superpod", 128, 128, 0},
	    {"nvl72", 16 * 18 - 2 - 4 - 9, 16, 16},
	    {"pcie", 64, 256, 0},
	    {"scale:100", 100, 100, 0},
	};
	char err[256];
	size_t k;

	for (k = 0; k < sizeof(want) / sizeof(*want); k++) {
		isle_topo *t = NULL;
		int i, dom = 0;

		assert_int_equal(sim_cluster_build(want[k].name, "/nonexistent",
						   &t, err, sizeof(err)),
				 0);
		assert_int_equal(t->nnodes, want[k].nodes);
		assert_true(t->nislands >= want[k].islands_min);
		for (i = 0; i < t->nislands; i++)
			dom += t->islands[i].multi_node;
		assert_int_equal(dom, want[k].domains);
		isle_topo_destroy(t);
	}
	{
		isle_topo *t = NULL;

		assert_int_equal(sim_cluster_build("nope", "/nonexistent", &t,
						   err, sizeof(err)),
				 -EINVAL);
		assert_null(t);
	}
	assert_non_null(strstr(err, "unknown cluster"));
}

/* Every policy places every job of a small stream; the metrics are in
 * range, isle keeps required-mode TP groups in islands, and a run is
 * repeatable (decision times aside). */
static void test_run(void **state)
{
	struct sim_metrics m[SIM_NPOLICIES], again;
	struct sim_job *jobs;
	isle_topo *t;
	char err[256];
	int p, n = 400;

	assert_int_equal(sim_cluster_build("nvl72", "", &t, err, sizeof(err)),
			 0);
	jobs =
	    sim_workload_gen(sim_mix_find("seren"), n, t->total_gpus, 0.9, 3);
	assert_non_null(jobs);
	for (p = 0; p < SIM_NPOLICIES; p++) {
		struct sim_opts o = {
		    .policy = (enum sim_policy)p, .seed = 1, .queue_depth = 32};

		assert_int_equal(sim_run(t, jobs, n, &o, &m[p]), 0);
		assert_int_equal(m[p].placed, m[p].jobs);
		assert_true(m[p].jobs > 0.95 * n);
		assert_true(m[p].occupancy_mean > 0 &&
			    m[p].occupancy_mean <= 1.0 + 1e-9);
		assert_true(m[p].fragmentation_mean >= 0 &&
			    m[p].fragmentation_mean <= 1.0);
		assert_true(m[p].comm_cost_ratio_mean >= 0.99);
	}
	assert_true(m[SIM_ISLE].tp_in_island_req_pct == 100.0);
	{
		struct sim_opts o = {
		    .policy = SIM_ISLE, .seed = 1, .queue_depth = 32};

		assert_int_equal(sim_run(t, jobs, n, &o, &again), 0);
		assert_true(again.comm_cost_ratio_mean ==
			    m[SIM_ISLE].comm_cost_ratio_mean);
		assert_true(again.wait_mean_s == m[SIM_ISLE].wait_mean_s);
		assert_true(again.occupancy_mean == m[SIM_ISLE].occupancy_mean);
	}
	free(jobs);
	isle_topo_destroy(t);
}

/* Places `nodes` whole nodes with policy p on free[] and compares the node
 * names with want (comma-separated, "-": the job waits). */
static void check_place(struct sim_policy_ctx *pc, const isle_topo *t,
			const uint64_t *fm, int nodes, const char *want)
{
	struct isle_place_result res;
	struct isle_place_req req;
	char got[256] = "";
	int rc, i;

	isle_place_result_init(&res);
	isle_place_req_init(&req);
	req.gpus = nodes * 4;
	req.nodes = nodes;
	req.gpus_per_node = 4;
	rc = sim_policy_place(pc, fm, &req, &res);
	if (rc == -ENOSPC) {
		strcpy(got, "-");
	} else {
		assert_int_equal(rc, 0);
		for (i = 0; i < res.nnodes; i++) {
			if (i)
				strcat(got, ",");
			strcat(got, t->nodes[res.nodes[i]].name);
		}
	}
	assert_string_equal(got, want);
	isle_place_result_fini(&res);
}

static void set_busy(const isle_topo *t, uint64_t *fm, const char *list)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int n = isle_topo_find_node(t, tok);

		assert_true(n >= 0);
		fm[n] = 0;
	}
}

/* The tree and block baselines follow the rules of Slurm 24.11's
 * eval_nodes_tree.c / eval_nodes_block.c (docs/baseline-crosscheck.md) on
 * the cross-check cluster: 16 nodes x 4 GPUs, 2-node NVLink domains, leafs
 * of 4 nodes, 2 spines. */
static void test_baselines(void **state)
{
	struct sim_policy_ctx *tree, *block;
	uint64_t fm[16];
	isle_topo *t = NULL;
	char err[256];
	int i;

	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   &t, err, sizeof(err)),
			 0);
	assert_int_equal(t->nnodes, 16);
	tree = sim_policy_create(SIM_TREE, t, NULL, 1);
	block = sim_policy_create(SIM_BLOCK, t, NULL, 1);
	assert_non_null(tree);
	assert_non_null(block);
	for (i = 0; i < 16; i++)
		fm[i] = 0xf;
	set_busy(t, fm, "n01,n05,n13,n14,n15");
	/* block: among equally good base blocks (nvl1, nvl3, nvl8 have one
	 * free node each) the last wins; tree: among equal leafs the first */
	check_place(block, t, fm, 1, "n16");
	check_place(tree, t, fm, 2, "n02,n03");
	/* block: the last of the fully free domains nvl2, nvl4, nvl5, nvl6 */
	check_place(block, t, fm, 2, "n11,n12");
	/* block: 7 nodes -> level of 4 base blocks (8 nodes); both such
	 * blocks have fewer than 7 free nodes, so the job waits even though
	 * 11 nodes are free */
	check_place(block, t, fm, 7, "-");
	/* tree, no leaf and no spine holds 7 nodes: the largest leaf of the
	 * first of the equal spines (leaf2), then the closer leaf1 although it
	 * cannot hold the rest, then leaf3 */
	set_busy(t, fm, "n16,n02,n03");
	check_place(tree, t, fm, 7, "n04,n06,n07,n08,n09,n10,n11");
	/* tests/crosscheck/jobs-seq2.txt: free leaf1 n[03-04], leaf3
	 * n[09-12], leaf4 n[13-15]; tree takes leaf3, then leaf1 (first in
	 * index order; the closer leaf4 cannot hold the rest), then 2 nodes
	 * of leaf4; block waits (level of 8 nodes, no block has 8 free) */
	for (i = 0; i < 16; i++)
		fm[i] = 0xf;
	set_busy(t, fm, "n01,n02,n05,n06,n07,n08,n16");
	check_place(tree, t, fm, 8, "n03,n04,n09,n10,n11,n12,n13,n14");
	check_place(block, t, fm, 8, "-");
	/* block, 3 nodes: level of 4 nodes, n[09-12]; no domain holds 3: the
	 * last of the largest (nvl6), then nvl5 */
	set_busy(t, fm, "n13,n14");
	check_place(block, t, fm, 3, "n09,n11,n12");
	sim_policy_destroy(tree);
	sim_policy_destroy(block);
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generator), cmocka_unit_test(test_csv),
	    cmocka_unit_test(test_clusters),  cmocka_unit_test(test_run),
	    cmocka_unit_test(test_baselines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
