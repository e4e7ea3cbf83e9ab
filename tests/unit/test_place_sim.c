/*
 * test_place_sim.c - islesim's parts: the workload generator follows the
 * published mix and is deterministic for a seed, the CSV reader names the
 * bad line, the cluster generators build the documented shapes, and a
 * simulation run places every job under every policy with sane metrics.
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

/* The test cluster of test 35 and a job trace (CSV text) on it. */
static void crosscheck_trace(const char *csv, isle_topo **t,
			     struct sim_job **jobs, int *n)
{
	char path[] = "/tmp/isle-test-trace-XXXXXX", err[256];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_file(path, csv);
	assert_int_equal(sim_workload_read(path, jobs, n, err, sizeof(err)), 0);
	unlink(path);
	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   t, err, sizeof(err)),
			 0);
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
	/* the 7th column: the time limit, never below the run time */
	write_file(path, "0,60,8,8,1,train,120\n1,30,1,1,1\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 0);
	assert_true(jobs[0].limit == 120);
	assert_true(jobs[1].limit == 0);
	free(jobs);
	write_file(path, "0,60,8,8,1,train,59\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":1:"));
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
	/* the RoCE clusters are built on the Lingjun map: without it, an
	 * error naming the file */
	{
		isle_topo *t = NULL;

		assert_int_equal(sim_cluster_build("roce2", "/nonexistent", &t,
						   err, sizeof(err)),
				 -ENOENT);
		assert_null(t);
		assert_non_null(strstr(err, "lingjun-2023-topo.csv"));
	}
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
		/* sharing the fabric never makes a step shorter */
		assert_true(m[p].step_alone_mean > 0);
		assert_true(m[p].step_alone_mean <=
			    m[p].step_time_mean * (1 + 1e-9));
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
	/* linear (_eval_nodes_consec): free runs n[02-04], n[06-12], n16;
	 * the smallest run that holds the rest, else the largest: 8 nodes
	 * take n[06-12], then n16 holds the last one */
	{
		struct sim_policy_ctx *lin =
		    sim_policy_create(SIM_LINEAR, t, NULL, 1);

		assert_non_null(lin);
		check_place(lin, t, fm, 1, "n16");
		check_place(lin, t, fm, 2, "n02,n03");
		check_place(lin, t, fm, 4, "n06,n07,n08,n09");
		check_place(lin, t, fm, 8, "n06,n07,n08,n09,n10,n11,n12,n16");
		sim_policy_destroy(lin);
	}
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

/* Shaped requests and the careful-user variants on the cross-check
 * cluster (leafs n[01-04], n[05-08], ...; 2-node NVLink domains). */
static void test_shaped(void **state)
{
	struct sim_policy_ctx *tree, *treesw, *blockseg;
	struct isle_place_result res;
	struct isle_place_req req;
	uint64_t fm[16];
	isle_topo *t = NULL;
	char err[256];
	int i;

	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   &t, err, sizeof(err)),
			 0);
	tree = sim_policy_create(SIM_TREE, t, NULL, 1);
	treesw = sim_policy_create(SIM_TREE_SW, t, NULL, 1);
	blockseg = sim_policy_create(SIM_BLOCK_SEG, t, NULL, 1);
	assert_non_null(tree);
	assert_non_null(treesw);
	assert_non_null(blockseg);
	isle_place_result_init(&res);
	for (i = 0; i < 16; i++)
		fm[i] = 0xf;
	/* -N 1 --gpus-per-node=2: n01 has one GPU free, n02 three: two of
	 * n02's, the lowest */
	fm[0] = 0x8;
	fm[1] = 0xe;
	isle_place_req_init(&req);
	req.gpus = 2;
	req.nodes = 1;
	req.gpus_per_node = 2;
	assert_int_equal(sim_policy_place(tree, fm, &req, &res), 0);
	assert_int_equal(res.nnodes, 1);
	assert_string_equal(t->nodes[res.nodes[0]].name, "n02");
	assert_true(res.masks[0] == 0x6);
	/* 4 nodes: every leaf has a busy node; tree spans two leafs,
	 * tree-sw (--switches=1) waits for a whole leaf */
	for (i = 0; i < 16; i++)
		fm[i] = i % 4 == 0 ? 0 : 0xf;
	req.gpus = 16;
	req.nodes = 4;
	req.gpus_per_node = 4;
	assert_int_equal(sim_policy_place(tree, fm, &req, &res), 0);
	assert_int_equal(res.nnodes, 4);
	assert_int_equal(sim_policy_place(treesw, fm, &req, &res), -ENOSPC);
	fm[4] = 0xf;
	assert_int_equal(sim_policy_place(treesw, fm, &req, &res), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(t->nodes[res.nodes[i]].group[ISLE_TIER_LEAF],
				 t->nodes[4].group[ISLE_TIER_LEAF]);
	/* block-seg, 2 nodes (segment 2 = one NVLink domain): the free
	 * nodes n03 and n05 sit in different domains, so it waits; a
	 * whole free domain is taken */
	for (i = 0; i < 16; i++)
		fm[i] = 0;
	fm[2] = fm[4] = 0xf;
	req.gpus = 8;
	req.nodes = 2;
	assert_int_equal(sim_policy_place(blockseg, fm, &req, &res), -ENOSPC);
	fm[5] = 0xf;
	assert_int_equal(sim_policy_place(blockseg, fm, &req, &res), 0);
	assert_string_equal(t->nodes[res.nodes[0]].name, "n05");
	assert_string_equal(t->nodes[res.nodes[1]].name, "n06");
	isle_place_result_fini(&res);
	sim_policy_destroy(tree);
	sim_policy_destroy(treesw);
	sim_policy_destroy(blockseg);
	isle_topo_destroy(t);
}

/* Slurm 26.05 takes a one-node job before eval_nodes, first fit in node
 * order; 24.11's and 25.11's tree and block pick the best-fitting leaf or
 * block. The
 * holders of the cross-check's jobs.txt leave n16 alone in its leaf. */
static void test_release(void **state)
{
	static const enum sim_policy pols[] = {SIM_TREE, SIM_BLOCK};
	struct isle_place_result res;
	struct isle_place_req req;
	uint64_t fm[16];
	isle_topo *t = NULL;
	char err[256];

	(void)state;
	assert_int_equal(sim_release_parse("24.11"), 2411);
	assert_int_equal(sim_release_parse("26.05.3"), 2605);
	assert_int_equal(sim_release_parse("26.5x"), -EINVAL);
	assert_int_equal(sim_release_parse("25.11.7"), 2511);
	assert_int_equal(sim_release_parse("25.05"), -EINVAL);
	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   &t, err, sizeof(err)),
			 0);
	isle_place_result_init(&res);
	for (size_t k = 0; k < sizeof(pols) / sizeof(pols[0]); k++) {
		struct sim_policy_ctx *pc =
		    sim_policy_create(pols[k], t, NULL, 1);

		assert_non_null(pc);
		for (int i = 0; i < 16; i++)
			fm[i] = 0xf;
		fm[0] = fm[4] = fm[12] = fm[13] = fm[14] =
		    0; /* n01 n05 n13-15 */
		isle_place_req_init(&req);
		req.gpus = 4;
		req.nodes = 1;
		req.gpus_per_node = 4;
		assert_int_equal(sim_policy_place(pc, fm, &req, &res), 0);
		assert_string_equal(t->nodes[res.nodes[0]].name, "n16");
		/* 25.11 has no one-node path: the plugin's choice, as 24.11 */
		sim_policy_set_release(pc, 2511);
		assert_int_equal(sim_policy_place(pc, fm, &req, &res), 0);
		assert_string_equal(t->nodes[res.nodes[0]].name, "n16");
		sim_policy_set_release(pc, 2605);
		assert_int_equal(sim_policy_place(pc, fm, &req, &res), 0);
		assert_int_equal(res.nnodes, 1);
		assert_string_equal(t->nodes[res.nodes[0]].name, "n02");
		assert_true(res.masks[0] == 0xf);
		/* a job of two nodes still goes through the plugin's choice */
		req.gpus = 8;
		req.nodes = 2;
		sim_policy_set_release(pc, 2411);
		assert_int_equal(sim_policy_place(pc, fm, &req, &res), 0);
		int n0 = res.nodes[0], n1 = res.nodes[1];
		sim_policy_set_release(pc, 2605);
		assert_int_equal(sim_policy_place(pc, fm, &req, &res), 0);
		assert_int_equal(res.nodes[0], n0);
		assert_int_equal(res.nodes[1], n1);
		sim_policy_destroy(pc);
	}
	isle_place_result_fini(&res);
	isle_topo_destroy(t);
}

/* Backfill reservations (sched/backfill): the head job (16 GPUs under one
 * leaf, tree-sw) fits by GPU count after 4 completions but only once a
 * whole leaf is free, at 1300 s; its reservation holds that leaf's nodes,
 * so a long 1-GPU job cannot take the node freed at 100 s (leaf 1) and
 * starts on the one freed at 200 s at the next backfill pass (210 s; the
 * main pass stops at the blocked head job). With Slurm's max_switch_wait
 * (300 s) the head job stops waiting for one leaf: its reservation is
 * then n01, n05, n09, n13 (free by 400 s, where it starts), so the 1-GPU
 * job waits for n02 (500 s). */
static void test_reservation(void **state)
{
	char path[] = "/tmp/isle-test-resv-XXXXXX";
	struct sim_opts o = {
	    .policy = SIM_TREE_SW, .seed = 1, .max_switch_wait = 1e9};
	struct sim_metrics m;
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	char err[256], text[2048] = "submit,duration,gpus,tp,pp\n";
	int i, n = 0;

	/* job i holds node i (leaf (i-1)/4, position (i-1)%4); a leaf's
	 * nodes end 400 s apart, the leafs interleaved */
	for (i = 1; i <= 16; i++) {
		char line[64];

		snprintf(line, sizeof(line), "0,%d,4,1,1\n",
			 100 * (((i - 1) % 4) * 4 + (i - 1) / 4 + 1));
		strcat(text, line);
	}
	strcat(text, "1,5000,16,4,1\n2,100000,1,1,1\n");
	i = mkstemp(path);
	assert_true(i >= 0);
	close(i);
	write_file(path, text);
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 0);
	unlink(path);
	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   &t, err, sizeof(err)),
			 0);
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 18);
	assert_true(jobs[16].start == 1300); /* leaf 0 free */
	assert_true(jobs[17].start == 210);  /* n05, outside the reservation */
	o.max_switch_wait = 0;		     /* Slurm's default, 300 s */
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 18);
	assert_true(jobs[16].start == 400); /* any 4 whole nodes */
	assert_true(jobs[17].start == 500);
	free(jobs);
	isle_topo_destroy(t);
}

/* Backfill plans with time limits, and backfill_agent's pass timing. A
 * 60-GPU job runs 7..107 s; a 64-GPU job queued at 8 s gets the
 * reservation at 107 s. A 4-GPU job of 50 s queued at 9 s fits on the free
 * node before that reservation when its limit is its run time: the pass
 * at 30 s starts it (on the grid; with --bf-agent the first job's arrival
 * brought a pass at 7 s, so the next comes 30 s later, at 37 s). With a
 * 200 s limit it would delay the reservation: it starts after the 64-GPU
 * job, at 117 s. */
static void test_limit_agent(void **state)
{
	char path[] = "/tmp/isle-test-limit-XXXXXX";
	struct sim_opts o = {
	    .policy = SIM_LINEAR, .seed = 1, .bf_resolution = 5};
	struct sim_metrics m;
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	char err[256];
	int fd = mkstemp(path), n = 0;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sim_cluster_build("tests/crosscheck/cluster.json", "",
					   &t, err, sizeof(err)),
			 0);
	write_file(path, "7,100,60,1,1\n8,10,64,1,1\n9,50,4,1,1\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 0);
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 3);
	assert_true(jobs[1].start == 107);
	assert_true(jobs[2].start == 30);
	o.bf_agent = 1;
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_true(jobs[2].start == 37);
	/* on slurmctld's ticks: backfill polls at .25 s and starts the first
	 * job before the main scheduler's tick at .5 s; the next pass is
	 * 30 s later; the 64-GPU job starts on the main tick after the
	 * first job ends */
	o.ticks = 1;
	o.main_phase = 0.5;
	o.bf_phase = 0.25;
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_true(jobs[0].start == 7.25);
	assert_true(jobs[1].start == 107.5);
	assert_true(jobs[2].start == 37.25);
	o.ticks = 0;
	free(jobs);
	write_file(path, "7,100,60,1,1\n8,10,64,1,1\n9,50,4,1,1,train,200\n");
	assert_int_equal(sim_workload_read(path, &jobs, &n, err, sizeof(err)),
			 0);
	unlink(path);
	o.bf_agent = 0;
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 3);
	assert_true(jobs[1].start == 107);
	assert_true(jobs[2].start == 117);
	free(jobs);
	isle_topo_destroy(t);
}

/* cons_tres's will-run frees running jobs in groups: the 60-GPU job fits
 * when the 56-GPU job ends (100 s), but the first group also holds the
 * 4-GPU job ending at 120 s (up to 30 s past the 30 s barrier after
 * 100 s), so its start estimate is 120 s and its reservation n01-n15.
 * The last node then stays out of it, and a 4-GPU job of 110 s starts
 * there at the pass at 30 s; planned at 100 s on n01-n14 and n16, the
 * reservation would have kept it waiting. */
static void test_will_run_groups(void **state)
{
	struct sim_opts o = {
	    .policy = SIM_LINEAR, .seed = 1, .bf_resolution = 5};
	struct sim_metrics m;
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	int n = 0;

	crosscheck_trace("0,100,56,1,1\n0,120,4,1,1\n1,50,60,1,1\n"
			 "2,110,4,1,1\n",
			 &t, &jobs, &n);
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 4);
	assert_true(jobs[3].start == 30);  /* outside the reservation */
	assert_true(jobs[2].start == 120); /* the 4-GPU job holds n16 */
	free(jobs);
	isle_topo_destroy(t);
}

/* Completing nodes (--epilog): the one free node completes 0.5 s after
 * its job ends at 10 s, so the queued 4-GPU job starts when its epilog
 * ends, not at the job's end. */
static void test_epilog(void **state)
{
	struct sim_opts o = {.policy = SIM_TREE, .seed = 1};
	struct sim_metrics m;
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	int n = 0;

	crosscheck_trace("0,1000,60,1,1\n0,10,4,1,1\n1,50,4,1,1\n", &t, &jobs,
			 &n);
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_true(jobs[2].start == 10);
	o.epilog_s = 0.5;
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_true(jobs[2].start == 10.5);
	free(jobs);
	isle_topo_destroy(t);
}

/* --main-stamp-prev: the main scheduler stamps the 60-GPU job's start
 * (tick 0.5 s) with second -1 instead of 0, so its planned end (stamp +
 * 60 s limit) is 59 s and the 64-GPU job's reservation starts on the
 * 5 s step at 55 s, not 60 s. The 4-GPU job (limit 50 s) fits in front
 * of a reservation from 60 s and starts at the pass at 5.75 s; from 55 s
 * it meets it and waits for the 64-GPU job to end. */
static void test_main_stamp_prev(void **state)
{
	struct sim_opts o = {.policy = SIM_LINEAR,
			     .seed = 1,
			     .bf_resolution = 5,
			     .bf_interval = 5,
			     .bf_agent = 1,
			     .ticks = 1,
			     .main_phase = 0.5,
			     .bf_phase = 0.75};
	struct sim_metrics m;
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	int n = 0;

	crosscheck_trace("0.1,59,60,1,1,train,60\n1,10,64,1,1,train,60\n"
			 "2,10,4,1,1,train,50\n",
			 &t, &jobs, &n);
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 3);
	assert_true(jobs[0].start == 0.5);
	assert_true(jobs[2].start == 5.75);
	o.main_stamp_prev = 1;
	assert_int_equal(sim_run(t, jobs, n, &o, &m), 0);
	assert_int_equal(m.placed, 3);
	assert_true(jobs[0].start == 0.5);
	assert_true(jobs[1].start == 60.5);
	assert_true(jobs[2].start == 70.75);
	free(jobs);
	isle_topo_destroy(t);
}

/* --- flow model ---------------------------------------------------------- */

static void test_maxmin_share(void **state)
{
	/* two flows on one link of 10 get 5 each */
	double cap[1] = {10}, rate[2];
	int off[3] = {0, 1, 2};
	struct sim_use use[2] = {{0, 1.0}, {0, 1.0}};

	assert_int_equal(sim_maxmin(1, cap, 2, off, use, rate), 0);
	assert_true(fabs(rate[0] - 5) < 1e-9 && fabs(rate[1] - 5) < 1e-9);
}

static void test_maxmin_bottleneck(void **state)
{
	/* A crosses link 0 (10) and link 1 (2); B only link 0; C only link 1.
	 * Link 1 holds A and C at 1 each; B takes the 9 left on link 0. */
	double cap[2] = {10, 2}, rate[3];
	int off[4] = {0, 2, 3, 4};
	struct sim_use use[4] = {{0, 1.0}, {1, 1.0}, {0, 1.0}, {1, 1.0}};

	assert_int_equal(sim_maxmin(2, cap, 3, off, use, rate), 0);
	assert_true(fabs(rate[0] - 1) < 1e-9);
	assert_true(fabs(rate[1] - 9) < 1e-9);
	assert_true(fabs(rate[2] - 1) < 1e-9);
	/* a flow spread over two links at half weight each is held by the
	 * fuller one: links 4 and 1, halves -> rate 2 */
	{
		double c2[2] = {4, 1}, r2[1];
		int o2[2] = {0, 2};
		struct sim_use u2[2] = {{0, 0.5}, {1, 0.5}};

		assert_int_equal(sim_maxmin(2, c2, 1, o2, u2, r2), 0);
		assert_true(fabs(r2[0] - 2) < 1e-9);
	}
	/* bad link index */
	use[0].link = 5;
	assert_int_equal(sim_maxmin(2, cap, 3, off, use, rate), -EINVAL);
}

/* nodes of 2 GPUs, one 400 Gb/s NIC each */
static int net_node(isle_topo *t, const char *name, int sw)
{
	int n = isle_topo_add_node(t, name, 2);

	assert_true(n >= 0);
	assert_true(isle_topo_add_nic(t, n, "mlx5_0", 0, 0, 400.0, -1) >= 0);
	assert_int_equal(isle_topo_attach_node(t, sw, n, 0), 0);
	return n;
}

/* Switch links of a route as "lo>hi:w" (up) or "hi>lo:w" (down), sorted
 * by link index. */
static void route_str(struct sim_net *net, const isle_topo *t, int a, int b,
		      char *out, size_t len)
{
	struct sim_use use[32];
	int n = sim_net_route(net, a, 0, b, 0, use, 32), i;

	assert_true(n >= 2);
	out[0] = '\0';
	for (i = 2; i < n; i++) {
		int lo, hi, down;
		double cap;
		char buf[96];

		down = sim_net_link_info(net, use[i].link, &lo, &hi, &cap);
		assert_true(down >= 0 && lo >= 0);
		snprintf(buf, sizeof(buf), "%s%s>%s:%.2f", i > 2 ? " " : "",
			 t->switches[down ? hi : lo].name,
			 t->switches[down ? lo : hi].name, use[i].w);
		strncat(out, buf, len - strlen(out) - 1);
	}
}

static void test_net_route(void **state)
{
	isle_topo *t = isle_topo_create();
	char err[256], got[512];
	struct sim_net *net;
	int core, s0, s1, s2, l0, l1, l2, n0, n1, n2, n3;

	/* pod 0: leafs l0, l1 under spines s0 and s1; pod 1: leaf l2 under
	 * s2; all spines under one core */
	core = isle_topo_add_switch(t, "core", 0, ISLE_SW_CORE);
	s0 = isle_topo_add_switch(t, "s0", 0, ISLE_SW_SPINE);
	s1 = isle_topo_add_switch(t, "s1", 0, ISLE_SW_SPINE);
	s2 = isle_topo_add_switch(t, "s2", 0, ISLE_SW_SPINE);
	l0 = isle_topo_add_switch(t, "l0", 0, ISLE_SW_LEAF);
	l1 = isle_topo_add_switch(t, "l1", 0, ISLE_SW_LEAF);
	l2 = isle_topo_add_switch(t, "l2", 0, ISLE_SW_LEAF);
	assert_int_equal(isle_topo_link_switches(t, core, s0), 0);
	assert_int_equal(isle_topo_link_switches(t, core, s1), 0);
	assert_int_equal(isle_topo_link_switches(t, core, s2), 0);
	assert_int_equal(isle_topo_link_switches(t, s0, l0), 0);
	assert_int_equal(isle_topo_link_switches(t, s1, l0), 0);
	assert_int_equal(isle_topo_link_switches(t, s0, l1), 0);
	assert_int_equal(isle_topo_link_switches(t, s1, l1), 0);
	assert_int_equal(isle_topo_link_switches(t, s2, l2), 0);
	n0 = net_node(t, "n0", l0);
	n1 = net_node(t, "n1", l0);
	n2 = net_node(t, "n2", l1);
	n3 = net_node(t, "n3", l2);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	net = sim_net_create(t);
	assert_non_null(net);
	/* same leaf: the two NIC links only */
	route_str(net, t, n0, n1, got, sizeof(got));
	assert_string_equal(got, "");
	/* leafs of one pod: up to both spines (equal uplinks split), never
	 * to the core */
	route_str(net, t, n0, n2, got, sizeof(got));
	assert_non_null(strstr(got, "l0>s0:0.50"));
	assert_non_null(strstr(got, "l0>s1:0.50"));
	assert_non_null(strstr(got, "s0>l1:0.50"));
	assert_non_null(strstr(got, "s1>l1:0.50"));
	assert_null(strstr(got, "core"));
	/* across pods: through the core, both spines of pod 0 on the way */
	route_str(net, t, n0, n3, got, sizeof(got));
	assert_non_null(strstr(got, "s0>core:0.50"));
	assert_non_null(strstr(got, "s1>core:0.50"));
	assert_non_null(strstr(got, "core>s2:1.00"));
	assert_non_null(strstr(got, "s2>l2:1.00"));
	sim_net_destroy(net);
	isle_topo_destroy(t);
}

static void test_net_sharing(void **state)
{
	isle_topo *t = isle_topo_create();
	struct sim_xfer a = {0, 0, 2, 0, SIM_PH_DP, 50e9};
	struct sim_xfer b = {1, 0, 3, 0, SIM_PH_DP, 50e9};
	struct sim_xfer c = {1, 1, 0, 1, SIM_PH_TP, 50e9};
	char err[256];
	struct sim_net *net;
	double alone, shared, ph[SIM_NPHASES];
	int sp, l0, l1, lo, hi, link;
	double cap;
	struct sim_use use[8];

	/* two leafs of two nodes under one spine, 2:1 oversubscribed: the
	 * leaf uplink carries 50 GB/s, a NIC 50 GB/s */
	t->tier[ISLE_TIER_SPINE].oversub = 2.0;
	sp = isle_topo_add_switch(t, "sp", 0, ISLE_SW_SPINE);
	l0 = isle_topo_add_switch(t, "l0", 0, ISLE_SW_LEAF);
	l1 = isle_topo_add_switch(t, "l1", 0, ISLE_SW_LEAF);
	assert_int_equal(isle_topo_link_switches(t, sp, l0), 0);
	assert_int_equal(isle_topo_link_switches(t, sp, l1), 0);
	net_node(t, "n0", l0);
	net_node(t, "n1", l0);
	net_node(t, "n2", l1);
	net_node(t, "n3", l1);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	net = sim_net_create(t);
	assert_non_null(net);
	assert_int_equal(sim_net_route(net, 0, 0, 2, 0, use, 8), 4);
	link = use[2].link;
	assert_int_equal(sim_net_link_info(net, link, &lo, &hi, &cap), 0);
	assert_true(fabs(cap - 50.0) < 1e-9);
	/* job 0 alone: 50 GB over a 50 GB/s path, 1 s */
	assert_int_equal(sim_net_job_add(net, 0, &a, 1), 1);
	assert_int_equal(sim_net_solve(net), 0);
	alone = sim_net_comm_time(net, 0, NULL);
	assert_true(fabs(alone - 1.0) < 1e-6);
	/* job 1 crosses the same uplink: both take twice as long */
	assert_int_equal(sim_net_job_add(net, 1, &b, 1), 1);
	assert_int_equal(sim_net_job_add(net, 1, &b, 1), -EEXIST);
	assert_int_equal(sim_net_solve(net), 0);
	shared = sim_net_comm_time(net, 0, ph);
	assert_true(fabs(shared - 2.0) < 1e-6);
	/* alone it would still take 1 s: the sharing is the other second */
	assert_int_equal(sim_net_comm_alone(net, 0, &alone), 0);
	assert_true(fabs(alone - 1.0) < 1e-6);
	assert_int_equal(sim_net_comm_alone(net, 7, &alone), -EINVAL);
	assert_true(fabs(ph[SIM_PH_DP] - 2.0) < 1e-6 && ph[SIM_PH_TP] == 0);
	/* it leaves: job 0 is alone again */
	sim_net_job_remove(net, 1);
	assert_int_equal(sim_net_solve(net), 0);
	assert_true(fabs(sim_net_comm_time(net, 0, NULL) - 1.0) < 1e-6);
	/* traffic inside a leaf does not touch the uplink, and links are
	 * full duplex: job 2 from n1 into n0 leaves job 0's time alone */
	assert_int_equal(sim_net_job_add(net, 2, &c, 1), 1);
	assert_int_equal(sim_net_solve(net), 0);
	assert_true(fabs(sim_net_comm_time(net, 0, NULL) - 1.0) < 1e-6);
	assert_true(fabs(sim_net_comm_time(net, 2, NULL) - 1.0) < 1e-6);
	/* job 0's flow climbs to the spine, job 2's stays on its leaf */
	{
		double all, above;

		assert_int_equal(sim_net_comm_alone_split(net, 0, &all, &above),
				 0);
		assert_true(fabs(all - 1.0) < 1e-6 && fabs(above - 1.0) < 1e-6);
		assert_int_equal(sim_net_comm_alone_split(net, 2, &all, &above),
				 0);
		assert_true(fabs(all - 1.0) < 1e-6 && above == 0);
	}
	sim_net_destroy(net);
	isle_topo_destroy(t);
}

static void test_traffic_scaling(void **state)
{
	struct sim_traffic a, b, c, small, big;

	/* one class (34B): 64 and 128 GPUs */
	assert_int_equal(sim_traffic_of(64, 2, 1, &a), 0);
	assert_int_equal(sim_traffic_of(64, 4, 1, &b), 0);
	assert_int_equal(sim_traffic_of(128, 4, 1, &c), 0);
	assert_ptr_equal(a.model, b.model);
	assert_ptr_equal(b.model, c.model);
	/* parameters per GPU: gradients and compute halve when TP doubles */
	assert_true(fabs(a.dp_bytes - 2 * b.dp_bytes) < 1);
	assert_true(fabs(a.compute_s - 2 * b.compute_s) < 1e-9);
	/* activations per TP layer do not depend on DP */
	assert_true(b.tp_msg == c.tp_msg && b.tp_calls == c.tp_calls);
	assert_true(b.dp_bytes == c.dp_bytes);
	/* pipeline: layers per stage halve, the boundary message is split
	 * over the TP ranks */
	assert_int_equal(sim_traffic_of(128, 4, 2, &c), 0);
	assert_true(fabs(c.tp_calls - b.tp_calls) <
		    1e-9); /* 2x mb, /2 layers */
	assert_true(c.pp_msg == c.tp_msg / 4 && c.pp_calls > 0);
	assert_true(b.pp_calls == 0);
	/* a 2-GPU job trains a far smaller model than a 512-GPU one */
	assert_int_equal(sim_traffic_of(2, 2, 1, &small), 0);
	assert_int_equal(sim_traffic_of(512, 8, 4, &big), 0);
	assert_true(small.model->params * 10 < big.model->params);
	assert_true(small.tp_msg * small.tp_calls * 10 <
		    big.tp_msg * big.tp_calls);
	assert_true(small.dp_bytes == 0); /* one replica */
	assert_int_equal(sim_traffic_of(6, 4, 1, &a), -EINVAL);
}

static void test_job_rings(void **state)
{
	/* tp 2, dp 2 on two nodes: TP groups inside a node, each DP ring
	 * crosses between the nodes both ways on one channel */
	struct isle_place_rank r[4] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
	struct sim_traffic tr;
	struct sim_xfer *x;
	int n, i, tp = 0, dp = 0, cross = 0;

	assert_int_equal(sim_traffic_of(4, 2, 1, &tr), 0);
	assert_int_equal(sim_job_xfers(&tr, r, 4, 2, 1, &x, &n), 0);
	for (i = 0; i < n; i++) {
		tp += x[i].phase == SIM_PH_TP;
		dp += x[i].phase == SIM_PH_DP;
		cross += x[i].node_a != x[i].node_b;
		if (x[i].phase == SIM_PH_TP)
			assert_int_equal(x[i].node_a, x[i].node_b);
		else
			assert_int_equal(x[i].gpu_a, x[i].gpu_b);
	}
	assert_int_equal(tp, 4);
	assert_int_equal(dp, 4);
	assert_int_equal(cross, 4);
	free(x);
	/* one DP ring of 4 GPUs, 2 per node: the node's GPUs in a chain and
	 * two channels between the nodes, each with half the bytes */
	assert_int_equal(sim_traffic_of(4, 1, 1, &tr), 0);
	assert_int_equal(sim_job_xfers(&tr, r, 4, 1, 1, &x, &n), 0);
	cross = 0;
	for (i = 0; i < n; i++)
		if (x[i].node_a != x[i].node_b) {
			cross++;
			assert_true(fabs(x[i].bytes - tr.dp_bytes * 1.5 / 2) <
				    1);
		}
	assert_int_equal(cross, 4);
	assert_int_equal(n, 6);
	free(x);
}

/*
 * --replay-fabric on a hand-made result file of blocking MPI calls
 * (poll_us 0: rings; leafspine-16 at scale 1e-3:
 * node cables 800 Gbit/s -> 100 MB/s, leaf uplinks 1600 -> 200 MB/s). A
 * 7b job on 2 nodes as tp 2 x dp 4 runs 2 DP rings (one per TP index),
 * each crossing between the nodes once each way with 2(n-1)/n of the
 * 7 MB gradient shard: 10.5 MB per hop, two hops per node cable, so
 * 10.5 MB / 50 MB/s. Three such jobs across leaf0 and leaf1 at the same
 * time put 6 flows on leaf0's uplink: 10.5 MB / (200/6) MB/s; at
 * different times each is alone again.
 * With fabric_job's probe (phase_ms rows), each of the 2(n-1) ring steps
 * of TP and DP costs the probed latency per hop: the fastest rank's
 * 4-byte allreduce over 8 ranks (3 hops), median over the steps.
 */
/* Replays the fabric.json text @json; @out gets the replay's table, rewound. */
static int replay_json(const char *json, FILE **out)
{
	char path[] = "/tmp/test_place_sim_fabric.XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f = fdopen(fd, "w");

	assert_non_null(f);
	*out = tmpfile();
	assert_non_null(*out);
	fputs(json, f);
	fclose(f);
	rc = sim_fabric_replay(path, "bench/fabric", 0, *out);
	unlink(path);
	rewind(*out);
	return rc;
}

static void replay_case(const char *jobs, double want_fab_ms,
			double want_lat_ms)
{
	char json[8192], line[512];
	int found = 0;
	FILE *out;

	assert_true(snprintf(json, sizeof(json),
			     "{\"scale\": 0.001, \"poll_us\": 0, \"shapes\": "
			     "[{\"shape\": \"leafspine-16\", \"results\": "
			     "[{\"config\": \"tree\", \"seed\": 1, "
			     "\"cpu_idle_pct\": 50, \"job_list\": [%s]}]}]}",
			     jobs) < (int)sizeof(json));
	assert_int_equal(replay_json(json, &out), 0);
	while (fgets(line, sizeof(line), out)) {
		char shape[64], cfg[64];
		int runs;
		double meas, pred, err, fab, host, lat, idle;

		if (sscanf(line, "%63s %63s %d %lf %lf %lf %lf %lf %lf %lf",
			   shape, cfg, &runs, &meas, &pred, &err, &fab, &host,
			   &lat, &idle) != 10)
			continue;
		found++;
		assert_string_equal(shape, "leafspine-16");
		assert_string_equal(cfg, "tree");
		/* TCP payload efficiency of 9000-byte frames: ~0.9911 */
		assert_true(fabs(fab - want_fab_ms / (8934.0 / 9014.0)) < 0.5);
		/* compute 6 x 3.5e9 x 4096 / 4e14 = 215 ms, plus the rest */
		assert_true(pred >= 215.0 + fab + lat - 0.5);
		assert_true(fabs(lat - want_lat_ms) < 0.01);
		assert_true(fabs(meas - 500.0) < 1e-9);
		assert_true(fabs(err - 100.0 * (pred - meas) / meas) < 0.1);
	}
	fclose(out);
	assert_int_equal(found, 1);
}

#define RJOB(h1, h2, t0, t1)                                                   \
	"{\"kind\": \"train\", \"model\": \"7b\", \"nodes\": 2, "              \
	"\"gpus\": 4, \"tp\": 2, \"pp\": 1, \"start\": " #t0 ", \"end\": " #t1 \
	", \"hosts\": [\"" h1 "\", \"" h2 "\"], "                              \
	"\"ms\": [500, 500]}"

static void test_fabric_replay(void **state)
{
	double hop = 7e6 * 2.0 * 3 / 4; /* bytes per ring hop */

	/* alone: two flows on each node cable */
	replay_case(RJOB("ls01", "ls02", 0, 10), hop / 50e6 * 1e3, 0);
	/* three jobs over leaf0's uplink at once: six flows */
	replay_case(RJOB("ls01", "ls05", 0, 10) "," RJOB(
			"ls02", "ls06", 0, 10) "," RJOB("ls03", "ls07", 0, 10),
		    hop / (200e6 / 6) * 1e3, 0);
	/* the same, one after the other: each alone */
	replay_case(RJOB("ls01", "ls05", 0,
			 10) "," RJOB("ls02", "ls06", 10,
				      20) "," RJOB("ls03", "ls07", 20, 30),
		    hop / 50e6 * 1e3, 0);
	/* probed: median of 300, 600 and 450 us over 3 hops is 150 us per
	 * hop; TP 2 and DP 4 rings wait 2 + 6 hops: 1.2 ms */
	replay_case("{\"kind\": \"train\", \"model\": \"7b\", \"nodes\": 2, "
		    "\"gpus\": 4, \"tp\": 2, \"pp\": 1, \"start\": 0, "
		    "\"end\": 10, \"hosts\": [\"ls01\", \"ls02\"], "
		    "\"ms\": [500, 500], \"phase_ms\": [[215, 5, 0, 90, 300, "
		    "900], [215, 5, 0, 90, 600, 700], [215, 5, 0, 90, 450, "
		    "800]]}",
		    hop / 50e6 * 1e3, 1.2);
	/* with the shim: the node level stays in the node; the leaf level
	 * pairs ranks of the same position across the two nodes and sends
	 * its half of the 7 MB in bf16: 4 flows of 7 MB / 4 share each node
	 * cable (100 MB/s), 70 ms, where MPI's rings take 210 */
	replay_case(
	    "{\"kind\": \"train\", \"model\": \"7b\", \"nodes\": 2, "
	    "\"gpus\": 4, \"tp\": 2, \"pp\": 1, \"start\": 0, "
	    "\"end\": 10, \"hosts\": [\"ls01\", \"ls02\"], "
	    "\"ms\": [500, 500], \"shim\": [\"isle_comm: 4 ranks, plan "
	    "/p.json, codecs cpu: node[node groups 2..2, 32 GB/s, 2 us, "
	    "none] leaf[leaf groups 2..2, 25 GB/s, 3 us, bf16], async "
	    "helper, Open MPI backend\", \"isle_comm: 2 ranks, plan "
	    "/p.json, codecs cpu: island[island groups 2..2, 100 GB/s, "
	    "1 us, none]\"]}",
	    7e6 / 100e6 * 1e3, 0);
	/* the same sizes left to MPI by the probed crossover: MPI's rings */
	replay_case(
	    "{\"kind\": \"train\", \"model\": \"7b\", \"nodes\": 2, "
	    "\"gpus\": 4, \"tp\": 2, \"pp\": 1, \"start\": 0, "
	    "\"end\": 10, \"hosts\": [\"ls01\", \"ls02\"], "
	    "\"ms\": [500, 500], \"shim\": [\"isle_comm: 4 ranks, plan "
	    "/p.json, codecs cpu: node[node groups 2..2, 32 GB/s, 2 us, "
	    "none] leaf[leaf groups 2..2, 25 GB/s, 3 us, bf16]\", "
	    "\"isle_comm: 4 ranks: crossover probed at the first "
	    "allreduce of 16384 bytes: MPI's own up to 8388608 bytes\"]}",
	    hop / 50e6 * 1e3, 0);
	/* a file without placements: nothing to replay */
	{
		FILE *out;

		assert_int_not_equal(
		    replay_json("{\"scale\": 0.001, \"shapes\": [{\"shape\": "
				"\"leafspine-16\", \"results\": [{\"config\": "
				"\"tree\"}]}]}",
				&out),
		    0);
		fclose(out);
	}
}

/*
 * The collision scenario of bench-fabric (collide-8 at scale 0.0005,
 * docs/results/collide.json at 25a6569): job B's step beside job A when
 * both cross leaf0's uplink (isle's placement: A cl01,cl03, B cl02,cl05)
 * and when B keeps off A's uplinks (avoid: B cl05,cl07). Measured, median
 * over 5 seeds: 1259.5 ms and 775.5 ms, 1.624x. The model's ratio must
 * be within 15% of it, issue 26's bound for the flow model. The absolute
 * steps are not judged here: collide.json carries no latency probe, so
 * the model leaves out the per-hop latency.
 */
#define CJOB(h1, h2, t0, t1, ms)                                               \
	"{\"kind\": \"train\", \"model\": \"7b\", \"gpus\": 2, \"tp\": 2, "    \
	"\"pp\": 1, \"start\": " #t0 ", \"end\": " #t1 ", \"hosts\": [\"" h1   \
	"\", \"" h2 "\"], \"ms\": [" ms "]}"

static void test_collide_sharing(void **state)
{
	char json[4096], line[512];
	int found = 0;
	FILE *out;
	double isle = 0, avoid = 0, want = 1259.494 / 775.464;

	/* A's records are left out (ms []): only B's step is judged */
	snprintf(
	    json, sizeof(json),
	    "{\"scale\": 0.0005, \"shapes\": [{\"shape\": \"collide-8\", "
	    "\"results\": [{\"config\": \"isle\", \"seed\": 1, "
	    "\"job_list\": [%s, %s]}, {\"config\": \"avoid\", \"seed\": 1, "
	    "\"job_list\": [%s, %s]}]}]}",
	    CJOB("cl01", "cl03", 0, 20, ""),
	    CJOB("cl02", "cl05", 3, 13, "1259.494"),
	    CJOB("cl01", "cl03", 0, 20, ""),
	    CJOB("cl05", "cl07", 3, 13, "775.464"));
	assert_int_equal(replay_json(json, &out), 0);
	while (fgets(line, sizeof(line), out)) {
		char shape[64], cfg[64];
		int runs;
		double meas, pred;

		if (sscanf(line, "%63s %63s %d %lf %lf", shape, cfg, &runs,
			   &meas, &pred) != 5)
			continue;
		if (!strcmp(cfg, "isle"))
			isle = pred, found++;
		else if (!strcmp(cfg, "avoid"))
			avoid = pred, found++;
	}
	fclose(out);
	assert_int_equal(found, 2);
	assert_true(avoid > 0);
	print_message("collide: model isle/avoid %.3f, measured %.3f\n",
		      isle / avoid, want);
	assert_true(fabs(isle / avoid / want - 1) <= 0.15);
}

/*
 * Open MPI 4.1's libnbc runs an in-place MPI_Iallreduce (fabric_job
 * --poll-us) as its binomial schedule whatever the size
 * (nbc_iallreduce.c): whole-buffer messages, a reduce to rank 0 in
 * ceil(log2 n) rounds, then a broadcast. A 7b job as tp 1 x dp 6 on
 * ls01..ls03 (2 ranks each, one leaf; node cables 100 MB/s at scale
 * 1e-3), gradient 14 MB. Reduce: 1->0, 3->2, 5->4 in their nodes, then
 * 2->0 (ls02 -> ls01), then 4->0 (ls03 -> ls01): 140 ms each. Broadcast:
 * rank 0 sends to 2 and 4, then rank 1 to 3 and 5, all from ls01: two
 * flows on its cable each time, 280 ms each: 840 ms in all, where rings
 * take 2 x 5/6 x 14 MB / 100 MB/s = 233 ms. On the cables the schedule
 * puts 6 messages of 14 MB between nodes per step (the ring 3 hops of
 * 23.3 MB), each over 2 node cables: 168 MB per step, 3 steps. The
 * probe's 4-byte allreduce over 6 ranks: its fastest rank, the root,
 * waits for the 3 reduce hops (its broadcast sends are eager; rings'
 * recursive doubling 3 for every rank); the DP phase waits 2 x 3 (a
 * ring 10).
 */
static void binom_case(int poll_us, double want_fab_ms, double want_lat_ms,
		       double want_wire_mb)
{
	char json[4096], line[512];
	int found = 0, wired = 0;
	FILE *out;

	assert_true(
	    snprintf(json, sizeof(json),
		     "{\"scale\": 0.001, \"poll_us\": %d, \"shapes\": "
		     "[{\"shape\": \"leafspine-16\", \"results\": "
		     "[{\"config\": \"tree\", \"seed\": 1, "
		     "\"link_bytes_by_tier\": {\"leaf\": 5e8}, "
		     "\"job_list\": [{\"kind\": \"train\", \"model\": "
		     "\"7b\", \"gpus\": 2, \"tp\": 1, \"pp\": 1, "
		     "\"start\": 0, \"end\": 10, \"hosts\": [\"ls01\", "
		     "\"ls02\", \"ls03\"], \"ms\": [500, 500], "
		     "\"phase_ms\": [[215, 0, 0, 900, 300, 900], [215, 0, 0, "
		     "900, 600, 900], [215, 0, 0, 900, 450, 900]]}]}]}]}",
		     poll_us) < (int)sizeof(json));
	assert_int_equal(replay_json(json, &out), 0);
	while (fgets(line, sizeof(line), out)) {
		char shape[64], cfg[64];
		int runs;
		double meas, pred, err, fab, host, lat, idle, wm, wp;

		if (strstr(line, " leaf ") &&
		    sscanf(strstr(line, " leaf "), " leaf %lf/%lf", &wm, &wp) ==
			2) {
			wired++;
			assert_true(fabs(wm - 500.0) < 1e-6);
			assert_true(
			    fabs(wp - want_wire_mb / (8934.0 / 9014.0)) < 0.1);
			continue;
		}
		if (sscanf(line, "%63s %63s %d %lf %lf %lf %lf %lf %lf %lf",
			   shape, cfg, &runs, &meas, &pred, &err, &fab, &host,
			   &lat, &idle) != 10)
			continue;
		found++;
		assert_true(fabs(fab - want_fab_ms / (8934.0 / 9014.0)) < 0.5);
		/* the table prints 0.1 ms */
		assert_true(fabs(lat - want_lat_ms) <= 0.051);
	}
	fclose(out);
	assert_int_equal(found, 1);
	assert_int_equal(wired, 1);
}

static void test_fabric_binomial(void **state)
{
	/* median probe 450 us over the root's 3 reduce hops: 150 us per
	 * hop, 6 in the DP phase */
	binom_case(1000, 840.0, 0.9, 3 * 6 * 14.0 * 2);
	/* blocking calls: rings; 150 us per hop, 10 ring steps */
	binom_case(0, 2 * 5.0 / 6 * 14e6 / 100e6 * 1e3, 1.5,
		   3 * 3 * (2 * 5.0 / 6 * 14.0) * 2);
}

/* The model's bytes on @tier from a wire-bytes line ("tier meas/pred"). */
static int wire_pred(const char *line, const char *tier, double *pred)
{
	char pat[32];
	const char *at;
	double meas;

	snprintf(pat, sizeof(pat), " %s ", tier);
	at = strstr(line, pat);
	return at && sscanf(at + strlen(pat), "%lf/%lf", &meas, pred) == 2 ? 0
									   : -1;
}

/*
 * The shim's groups of unequal size (comm.c isle__build_groups, coll.c
 * hier): a 7b job as tp 1 x dp 4 on ls02..ls04 (leaf0) and ls05 (leaf1),
 * one rank each, levels leaf (groups 1..3) then job, no codec; gradient
 * 14 MB at scale 1e-3. The leaf level has nshards = 1 (its smallest
 * group): {ls02, ls03, ls04} rings the whole 14 MB as one shard, hops
 * 02->03 14 MB (allgather only), 03->04 28 MB, 04->02 14 MB (reduce-
 * scatter only); only position 0 goes up, so the job level pairs ls02
 * with ls05 on the whole 14 MB in 2 shards: 14 MB each way, over both
 * leaf uplinks (spine tier) and both node cables. Per step: spine 2 x 14
 * x 2 = 56 MB; leaf (node cables) 56 x 2 + 56 = 168 MB; 3 steps.
 */
static void test_fabric_shim_uneven(void **state)
{
	FILE *out;
	char line[512];
	int wired = 0;

	assert_int_equal(
	    replay_json(
		"{\"scale\": 0.001, \"shapes\": [{\"shape\": "
		"\"leafspine-16\", \"results\": [{\"config\": \"isle-shim\", "
		"\"seed\": 1, \"link_bytes_by_tier\": {\"leaf\": 5e8, "
		"\"spine\": 2e8}, \"job_list\": [{\"kind\": \"train\", "
		"\"model\": \"7b\", \"gpus\": 1, \"tp\": 1, \"pp\": 1, "
		"\"start\": 0, \"end\": 10, \"hosts\": [\"ls02\", "
		"\"ls03\", \"ls04\", \"ls05\"], \"ms\": [500, 500], "
		"\"shim\": [\"isle_comm: 4 ranks, plan /p.json, codecs cpu: "
		"leaf[leaf groups 1..3, 25 GB/s, 3 us, none] spine[job groups "
		"2..2, 12.5 GB/s, 5 us, none], async helper, Open MPI "
		"backend\"]}]}]}]}",
		&out),
	    0);
	while (fgets(line, sizeof(line), out)) {
		double sp, lp;

		if (wire_pred(line, "spine", &sp) ||
		    wire_pred(line, "leaf", &lp))
			continue;
		wired++;
		assert_true(fabs(sp - 3 * 56.0 / (8934.0 / 9014.0)) < 0.1);
		assert_true(fabs(lp - 3 * 168.0 / (8934.0 / 9014.0)) < 0.1);
	}
	fclose(out);
	assert_int_equal(wired, 1);
}

/*
 * The shim's island level inside a node of several NVLink islands: a 7b
 * job as tp 2 x dp 4 on ls01 and ls02 (4 GPUs each, two NVLink pairs),
 * gradient 7 MB at scale 1e-3. DP ranks 0 and 2 of a node sit on GPUs 0
 * and 2, in different pairs: island groups of 1, so the leaf level is a
 * ring of 4 (ls01, ls01, ls02, ls02) on the whole 7 MB: hops of 2 x 3/4
 * x 7 = 10.5 MB, two of them between the nodes, over 2 node cables, for
 * each of the 2 DP groups: 84 MB per step, 3 steps (a node-wide island
 * level would pair them in the node and send 56).
 */
static void test_fabric_shim_islands(void **state)
{
	FILE *out;
	char line[512];
	int wired = 0;

	assert_int_equal(
	    replay_json(
		"{\"scale\": 0.001, \"shapes\": [{\"shape\": "
		"\"leafspine-16\", \"results\": [{\"config\": \"isle-shim\", "
		"\"seed\": 1, \"link_bytes_by_tier\": {\"leaf\": 5e8}, "
		"\"job_list\": [{\"kind\": \"train\", \"model\": \"7b\", "
		"\"gpus\": 4, \"tp\": 2, \"pp\": 1, \"start\": 0, "
		"\"end\": 10, \"hosts\": [\"ls01\", \"ls02\"], \"ms\": "
		"[500, 500], \"shim\": [\"isle_comm: 4 ranks, plan /p.json, "
		"codecs cpu: nvlink[island groups 1..1, 100 GB/s, 1 us, none] "
		"leaf[leaf groups 4..4, 25 GB/s, 3 us, none], async helper, "
		"Open MPI backend\"]}]}]}]}",
		&out),
	    0);
	while (fgets(line, sizeof(line), out)) {
		double lp;

		if (wire_pred(line, "leaf", &lp))
			continue;
		wired++;
		assert_true(fabs(lp - 3 * 84.0 / (8934.0 / 9014.0)) < 0.1);
	}
	fclose(out);
	assert_int_equal(wired, 1);
}

/* The fab_ms and host_ms columns of the one configuration of the
 * collide-8 replay of @jobs (scale 1e-3: every cable 400 Gbit/s -> 50
 * MB/s; poll_us 0: blocking calls, rings). */
static void collide_case(int poll_us, const char *jobs, double *fab,
			 double *host)
{
	char json[4096], line[512];
	int found = 0;
	FILE *out;

	assert_true(snprintf(json, sizeof(json),
			     "{\"scale\": 0.001, \"poll_us\": %d, \"shapes\": "
			     "[{\"shape\": \"collide-8\", \"results\": "
			     "[{\"config\": \"x\", \"seed\": 1, "
			     "\"job_list\": [%s]}]}]}",
			     poll_us, jobs) < (int)sizeof(json));
	assert_int_equal(replay_json(json, &out), 0);
	while (fgets(line, sizeof(line), out)) {
		char shape[64], cfg[64];
		int runs;
		double meas, pred, err, lat, idle;

		if (sscanf(line, "%63s %63s %d %lf %lf %lf %lf %lf %lf %lf",
			   shape, cfg, &runs, &meas, &pred, &err, fab, host,
			   &lat, &idle) == 10)
			found++;
	}
	fclose(out);
	assert_int_equal(found, 1);
}

#define XJOB(model, gpus, tp, pp, hosts, ms)                                   \
	"{\"kind\": \"train\", \"model\": \"" model "\", \"gpus\": " #gpus     \
	", \"tp\": " #tp ", \"pp\": " #pp ", \"start\": 0, \"end\": 10, "      \
	"\"hosts\": [" hosts "], \"ms\": [" ms "]}"

/*
 * Other jobs on the cables, collide-8 at scale 1e-3 (50 MB/s a cable,
 * a leaf's uplink one cable). B (judged): 7b as tp 2 x dp 2 on cl01 and
 * cl03, two DP rings of 2 (7 MB each way), both over leaf0's uplink: 280
 * ms alone. A beside it, 7b as tp 2 on cl02 and cl05 (one rank each):
 * its TP round sends 2.147 MB over the same uplink. Three flows share it
 * until A's is through at 128.8 ms, then B's two have it: (14 + 2.147) /
 * 50 = 323 ms (a static share, A's flow there for good: 7 / (50/3) = 420).
 * A on cl02, cl05, cl06 and cl04 adds a DP ring cl02 -> cl06 of 7 MB over
 * leaf0's uplink, one phase after its TP round: only one of A's rounds is
 * beside B's at a time, the worse one: three 7 MB flows, 21 / 50 = 420 ms
 * (both rounds at once: four flows, 560).
 */
static void test_fabric_rounds(void **state)
{
	double fab, host, tp_b = 2.0 * 32 * 4096 * 4096 * 2 * 1e-3;
	const char *b = XJOB("7b", 2, 2, 1, "\"cl01\", \"cl03\"", "500");

	collide_case(0, b, &fab, &host);
	assert_true(fabs(fab - 14e6 / 50e6 * 1e3 / (8934.0 / 9014.0)) < 0.5);
	{
		char jobs[1024];

		snprintf(jobs, sizeof(jobs), "%s, %s", b,
			 XJOB("7b", 1, 2, 1, "\"cl02\", \"cl05\"", ""));
		collide_case(0, jobs, &fab, &host);
		assert_true(fabs(fab - (14e6 + tp_b) / 50e6 * 1e3 /
					   (8934.0 / 9014.0)) < 0.5);
		snprintf(jobs, sizeof(jobs), "%s, %s", b,
			 XJOB("7b", 1, 2, 1,
			      "\"cl02\", \"cl05\", \"cl06\", \"cl04\"", ""));
		collide_case(0, jobs, &fab, &host);
		assert_true(fabs(fab - 21e6 / 50e6 * 1e3 / (8934.0 / 9014.0)) <
			    0.5);
	}
}

/*
 * The host term: the judged job's 4 ranks (7b, tp 2, on cl07 and cl08,
 * no cable shared) do a phase's CPU work at once. A 70b job of 12 ranks
 * beside it (tp 2 x pp 2 on cl01..06) waiting with --poll-us sleeps in
 * compute and between polls and is runnable only for its CPU work per
 * step, a few percent of it: it barely moves the judged job's host time,
 * where counting all 16 ranks runnable made it (4 + 12) / 4 = 4 times as
 * long on a host of 4 cores or fewer. With blocking calls its ranks spin
 * while they wait (Open MPI's TCP path) and do take the cores. The check
 * needs a host with fewer cores than the 16 ranks: elsewhere every rank
 * has a core.
 */
static void test_fabric_host_share(void **state)
{
	double fab, alone, beside, spin_alone, spin_beside;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	const char *x = XJOB("7b", 2, 2, 1, "\"cl07\", \"cl08\"", "500");
	char jobs[1024];

	snprintf(jobs, sizeof(jobs), "%s, %s", x,
		 XJOB("70b", 2, 2, 2,
		      "\"cl01\", \"cl02\", \"cl03\", \"cl04\", \"cl05\", "
		      "\"cl06\"",
		      ""));
	collide_case(1000, x, &fab, &alone);
	collide_case(1000, jobs, &fab, &beside);
	collide_case(0, x, &fab, &spin_alone);
	collide_case(0, jobs, &fab, &spin_beside);
	print_message("host share: %ld cores, polling: alone %.1f ms, beside "
		      "%.1f; spinning: %.1f, %.1f\n",
		      cores, alone, beside, spin_alone, spin_beside);
	assert_true(beside >= alone);
	assert_true(spin_beside >= beside);
	if (cores >= 16) {
		print_message("host share: %ld cores, no contention to check\n",
			      cores);
		return;
	}
	assert_true(alone > 0);
	assert_true(beside < 1.5 * alone);
	if (cores <= 4)
		assert_true(spin_beside > 1.5 * spin_alone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generator),
	    cmocka_unit_test(test_csv),
	    cmocka_unit_test(test_clusters),
	    cmocka_unit_test(test_run),
	    cmocka_unit_test(test_baselines),
	    cmocka_unit_test(test_shaped),
	    cmocka_unit_test(test_release),
	    cmocka_unit_test(test_reservation),
	    cmocka_unit_test(test_limit_agent),
	    cmocka_unit_test(test_will_run_groups),
	    cmocka_unit_test(test_epilog),
	    cmocka_unit_test(test_main_stamp_prev),
	    cmocka_unit_test(test_maxmin_share),
	    cmocka_unit_test(test_maxmin_bottleneck),
	    cmocka_unit_test(test_net_route),
	    cmocka_unit_test(test_net_sharing),
	    cmocka_unit_test(test_traffic_scaling),
	    cmocka_unit_test(test_job_rings),
	    cmocka_unit_test(test_fabric_replay),
	    cmocka_unit_test(test_collide_sharing),
	    cmocka_unit_test(test_fabric_binomial),
	    cmocka_unit_test(test_fabric_shim_uneven),
	    cmocka_unit_test(test_fabric_shim_islands),
	    cmocka_unit_test(test_fabric_rounds),
	    cmocka_unit_test(test_fabric_host_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
