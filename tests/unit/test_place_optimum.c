/*
 * test_place_optimum.c - on randomized clusters of at most 16 nodes, the
 * engine's cost equals the optimum found by exhaustive search.
 *
 * The brute force enumerates every rank order over the free GPUs (GPUs of
 * one node inside one island are interchangeable for the cost model, so it
 * enumerates sequences of such units, each used at most as often as it has
 * free GPUs), keeps those that satisfy the request (TP groups inside one
 * island, GPUs per node), evaluates each with isle_place_eval() and keeps
 * the minimum. Whole pipeline replicas are interchangeable, so only orders
 * whose replicas are sorted are visited.
 *
 * Costs must be equal up to float rounding (REL_TOL): the engine's exact
 * search for small jobs (docs/placement.md) makes it optimal here, and the
 * test runs with cost_tolerance 0 so fragmentation never trades cost.
 * Each kind runs SEEDS seeds of 40 instances; ISLE_TEST_SEED=N shifts
 * them to explore other instances.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_place_util.h"

#define MAXU 128
#define MAXG 16
#define BUDGET 400000L
#define REL_TOL 1e-6
#define SEEDS 2
#define MAXN 256 /* nodes of the mid-size clusters */

struct unit {
	int node, island, n;
	int gpu[64];
};

struct bf {
	isle_place_ctx *c;
	const struct isle_place_req *rq;
	int G, tp, pp, gpn;
	int nu;
	struct unit u[MAXU];
	int used[MAXU];
	int seq[MAXG];
	int per_node[MAXN];
	long evals;
	double best;
	struct isle_place_rank best_ranks[MAXG];
};

static void bf_eval(struct bf *b)
{
	struct isle_place_rank r[MAXG];
	struct isle_place_cost cost;
	int k[MAXU] = {0}, i;

	if (b->gpn)
		for (i = 0; i < b->G; i++) {
			int n = b->per_node[b->u[b->seq[i]].node];

			if (n != 0 && n != b->gpn)
				return;
		}
	for (i = 0; i < b->G; i++) {
		struct unit *u = &b->u[b->seq[i]];

		r[i].node = u->node;
		r[i].gpu = u->gpu[k[b->seq[i]]++];
	}
	assert_int_equal(isle_place_eval(b->c, b->rq, r, b->G, &cost), 0);
	b->evals++;
	if (cost.total < b->best) {
		b->best = cost.total;
		memcpy(b->best_ranks, r, sizeof(r));
	}
}

/* Position pos of the order; returns -1 when over budget. */
static int bf_rec(struct bf *b, int pos)
{
	int blk = b->tp * b->pp, u;

	if (b->evals > BUDGET)
		return -1;
	if (pos == b->G) {
		bf_eval(b);
		return 0;
	}
	for (u = 0; u < b->nu; u++) {
		if (b->used[u] >= b->u[u].n)
			continue;
		/* required mode: a TP group stays in its first rank's island */
		if (b->rq->mode == ISLE_PLACE_REQUIRED && pos % b->tp &&
		    b->u[u].island != b->u[b->seq[pos - pos % b->tp]].island)
			continue;
		/* replicas in non-decreasing order of their unit sequences */
		if (pos >= blk) {
			int start = pos - pos % blk, j, cmp = 0;

			for (j = 0; j < pos - start && !cmp; j++)
				cmp =
				    b->seq[start - blk + j] - b->seq[start + j];
			if (!cmp)
				cmp = b->seq[start - blk + (pos - start)] - u;
			if (cmp > 0)
				continue;
		}
		b->seq[pos] = u;
		b->used[u]++;
		b->per_node[b->u[u].node]++;
		if (bf_rec(b, pos + 1) < 0)
			return -1;
		b->used[u]--;
		b->per_node[b->u[u].node]--;
	}
	return 0;
}

/* Exhaustive optimum, or -1 if the search is too large (or INFINITY if
 * there is no placement). */
static struct bf b;

static void print_ranks(const char *what, const struct isle_place_rank *r,
			int n)
{
	print_message("%s:", what);
	for (int i = 0; i < n; i++)
		print_message(" %d:%d", r[i].node, r[i].gpu);
	print_message("\n");
}

static double brute_force(const isle_topo *t, isle_place_ctx *c,
			  const uint64_t *fm, const struct isle_place_req *rq,
			  int G)
{
	int i, g;

	memset(&b, 0, sizeof(b));
	b.c = c;
	b.rq = rq;
	b.G = G;
	b.tp = rq->tp;
	b.pp = rq->pp;
	b.gpn = rq->gpus_per_node;
	b.best = INFINITY;
	for (i = 0; i < t->nnodes; i++)
		for (g = 0; g < t->nodes[i].ngpus; g++) {
			int isl = t->nodes[i].gpus[g].island, u;

			if (!(fm[i] >> g & 1))
				continue;
			for (u = 0; u < b.nu; u++)
				if (b.u[u].node == i && b.u[u].island == isl)
					break;
			if (u == b.nu) {
				if (b.nu == MAXU)
					return -1;
				b.u[b.nu].node = i;
				b.u[b.nu].island = isl;
				b.nu++;
			}
			b.u[u].gpu[b.u[u].n++] = g;
		}
	if (bf_rec(&b, 0) < 0)
		return -1;
	return b.best;
}

/*
 * Runs `want` instances of a cluster kind. Every placement the engine makes
 * must be valid and cost exactly the optimum (cheaper would be a bug in one
 * of the two); the engine must place exactly when a placement exists.
 */
static void run_instances(enum tp_kind kind, uint64_t seed, int want)
{
	static const int sizes[] = {2, 4, 4, 6, 8};
	struct isle_place_opts o;
	int checked = 0, exact = 0, tries, infeasible = 0, zero = 0;
	double worst = 1.0;

	isle_place_opts_default(&o);
	o.cost_tolerance = 0.0;
	/* ISLE_TEST_SEED explores other instances (the default is fixed) */
	if (getenv("ISLE_TEST_SEED"))
		seed += 1000 * strtoull(getenv("ISLE_TEST_SEED"), NULL, 10);
	tp_seed(seed);
	for (tries = 0; checked < want && tries < 40 * want; tries++) {
		int nn = 2 + tp_randint(15), gpn = 2 << tp_randint(2);
		isle_topo *t = tp_cluster(kind, nn, gpn, 2 + tp_randint(3));
		struct isle_place_result r;
		struct isle_place_req rq;
		isle_place_ctx *c;
		uint64_t fm[16];
		double opt;
		int G, rc;

		assert_non_null(t);
		c = isle_place_create(t, &o);
		assert_non_null(c);
		isle_place_result_init(&r);
		tp_random_free(t, fm, 25 + tp_randint(40));
		isle_place_req_init(&rq);
		G = sizes[tp_randint(5)];
		do
			rq.tp = 1 << tp_randint(3);
		while (G % rq.tp || rq.tp > gpn);
		rq.pp = G % (2 * rq.tp) == 0 && tp_randint(2) ? 2 : 1;
		rq.workload =
		    tp_randint(4) ? ISLE_WORKLOAD_TRAIN : ISLE_WORKLOAD_INFER;
		rq.gpus = G;
		if (tp_randint(4) == 0 && G % 2 == 0 && G / 2 <= gpn)
			rq.gpus_per_node = G / 2;
		rc = isle_place(c, fm, NULL, &rq, &r);
		opt = brute_force(t, c, fm, &rq, G);
		if (opt >= 0 && isinf(opt)) {
			if (rc != -ENOSPC && rc != -E2BIG)
				fail_msg(
				    "seed %llu try %d: engine placed (rc %d), "
				    "brute force found nothing",
				    (unsigned long long)seed, tries, rc);
			checked++;
			exact++;
			infeasible++;
		} else if (opt >= 0) {
			zero += opt == 0;
			double ratio = opt > 0		  ? r.cost.total / opt
				       : r.cost.total > 0 ? INFINITY
							  : 1.0;

			if (rc != 0)
				fail_msg("seed %llu try %d: engine rc %d (%s), "
					 "optimum %.3f",
					 (unsigned long long)seed, tries, rc,
					 r.reason, opt);
			if (ratio < 1.0 - REL_TOL)
				fail_msg(
				    "seed %llu try %d: engine %.3f below the "
				    "optimum %.3f",
				    (unsigned long long)seed, tries,
				    r.cost.total, opt);
			if (ratio <= 1.0 + REL_TOL) {
				exact++;
			} else {
				print_message("seed %llu try %d: nodes %d G=%d "
					      "tp=%d pp=%d gpn=%d %s: engine "
					      "%.3f optimum %.3f\n",
					      (unsigned long long)seed, tries,
					      nn, G, rq.tp, rq.pp,
					      rq.gpus_per_node,
					      isle_workload_name(rq.workload),
					      r.cost.total, opt);
				print_ranks("engine ", r.ranks, G);
				print_ranks("optimum", b.best_ranks, G);
				fail_msg("seed %llu try %d: engine %.6f is "
					 "%.4fx the optimum %.6f",
					 (unsigned long long)seed, tries,
					 r.cost.total, ratio, opt);
			}
			if (ratio > worst)
				worst = ratio;
			checked++;
		}
		isle_place_result_fini(&r);
		isle_place_destroy(c);
		isle_topo_destroy(t);
	}
	/* Infeasible and zero-cost instances pass trivially: reported apart,
	 * and most instances must be neither, or the test checks nothing. */
	print_message("kind %d: %d instances: %d infeasible, %d zero-cost, %d "
		      "feasible non-trivial; %d optimal, worst ratio %.3f\n",
		      (int)kind, checked, infeasible, zero,
		      checked - infeasible - zero, exact, worst);
	assert_int_equal(checked, want);
	assert_int_equal(exact, checked);
	assert_true(checked - infeasible - zero >= want / 4);
}

static void run_seeds(enum tp_kind kind, uint64_t seed)
{
	for (int k = 0; k < SEEDS; k++)
		run_instances(kind, seed + 10 * (uint64_t)k, 40);
}

static void test_optimum_nvswitch(void **state)
{
	run_seeds(TP_NVSWITCH, 1);
}

static void test_optimum_pairs(void **state)
{
	run_seeds(TP_PAIRS, 2);
}

static void test_optimum_domains(void **state)
{
	run_seeds(TP_DOMAIN, 3);
}

static void test_optimum_mixed(void **state)
{
	run_seeds(TP_MIXED, 4);
}

/*
 * Mid-size clusters (64-256 nodes): above 64 nodes the engine runs its
 * heuristic (best-fit scopes, at most max_scopes per level, no exact
 * search), with the default options islesim uses. The exhaustive search
 * stays bounded because the cluster is busy: only a few nodes (2-5, half
 * the time inside one spine group) have free GPUs. Instances whose search
 * exceeds BUDGET are left out and counted. Over the feasible non-trivial
 * instances the gap (engine cost / optimum) is collected; checks:
 *  - never below the optimum (either side would be wrong);
 *  - placed whenever a placement exists, and never when none does;
 *  - median gap 1 (within the cost tolerance): the best-fit fill is the
 *    optimum on typical instances;
 *  - p90 of the gap at most MID_P90_GAP: the heuristic exists to find
 *    the optimum's locality (tightest scope, TP groups in islands) in
 *    O(vertices); a tenth of instances more than 10% off would mean the
 *    scope choice or the fill is wrong, not a corner of the rank order.
 * Gaps above 2 are printed with both placements (the known one: tp 1 with
 * pp > 1, where the optimum puts each stage on one node so that the
 * heavy DP rings stay inside nodes, and the fill keeps replicas whole).
 * ISLE_GAP_OUT=FILE appends the distribution as one JSON line (the bench).
 */
#define MID_P90_GAP 1.10
#define MID_WANT 60

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void mid_instances(enum tp_kind kind, uint64_t seed)
{
	static const int sizes[] = {2, 4, 4, 6, 8};
	static uint64_t fm[MAXN];
	struct isle_place_opts o;
	double gaps[MID_WANT];
	int ngap = 0, infeasible = 0, zero = 0, over_budget = 0, tries;
	int exact = 0;

	isle_place_opts_default(&o);
	if (getenv("ISLE_TEST_SEED"))
		seed += 1000 * strtoull(getenv("ISLE_TEST_SEED"), NULL, 10);
	tp_seed(seed);
	for (tries = 0; ngap < MID_WANT && tries < 40 * MID_WANT; tries++) {
		int nn = 64 + 1 + tp_randint(MAXN - 64),
		    gpn = 4 << tp_randint(2);
		int per_leaf = 4 + tp_randint(5);
		isle_topo *t = tp_cluster(kind, nn, gpn, per_leaf);
		int nfree = 2 + tp_randint(4), window = tp_randint(2), i;
		int base = tp_randint(nn);
		struct isle_place_result r;
		struct isle_place_req rq;
		isle_place_ctx *c;
		double opt;
		int G, rc;

		assert_non_null(t);
		c = isle_place_create(t, &o);
		assert_non_null(c);
		isle_place_result_init(&r);
		memset(fm, 0, sizeof(fm));
		for (i = 0; i < nfree; i++) {
			/* inside one spine group (2 leafs) or anywhere */
			int n = window ? (base + tp_randint(2 * per_leaf)) % nn
				       : tp_randint(nn);

			for (int g = 0; g < gpn; g++)
				if (tp_randint(100) < 70)
					fm[n] |= 1ULL << g;
		}
		isle_place_req_init(&rq);
		G = sizes[tp_randint(5)];
		do
			rq.tp = 1 << tp_randint(3);
		while (G % rq.tp || rq.tp > gpn);
		rq.pp = G % (2 * rq.tp) == 0 && tp_randint(2) ? 2 : 1;
		rq.workload =
		    tp_randint(4) ? ISLE_WORKLOAD_TRAIN : ISLE_WORKLOAD_INFER;
		rq.gpus = G;
		if (tp_randint(4) == 0 && G % 2 == 0 && G / 2 <= gpn)
			rq.gpus_per_node = G / 2;
		rc = isle_place(c, fm, NULL, &rq, &r);
		opt = brute_force(t, c, fm, &rq, G);
		if (opt < 0) {
			over_budget++;
		} else if (isinf(opt)) {
			if (rc != -ENOSPC && rc != -E2BIG)
				fail_msg("mid seed %llu try %d: engine placed "
					 "(rc %d), brute force found nothing",
					 (unsigned long long)seed, tries, rc);
			infeasible++;
		} else {
			if (rc != 0)
				fail_msg("mid seed %llu try %d: %d nodes G=%d "
					 "tp=%d pp=%d: engine rc %d (%s), "
					 "optimum %.3f",
					 (unsigned long long)seed, tries, nn, G,
					 rq.tp, rq.pp, rc, r.reason, opt);
			if (opt == 0) {
				if (r.cost.total > 0)
					fail_msg("mid seed %llu try %d: engine "
						 "%.3f, optimum 0",
						 (unsigned long long)seed,
						 tries, r.cost.total);
				zero++;
			} else {
				double gap = r.cost.total / opt;

				if (gap < 1.0 - REL_TOL)
					fail_msg("mid seed %llu try %d: engine "
						 "%.6f below the optimum %.6f",
						 (unsigned long long)seed,
						 tries, r.cost.total, opt);
				if (gap > 2.0) {
					print_message(
					    "mid seed %llu try %d: %d nodes "
					    "G=%d tp=%d pp=%d gpn=%d %s: gap "
					    "%.3f\n",
					    (unsigned long long)seed, tries, nn,
					    G, rq.tp, rq.pp, rq.gpus_per_node,
					    isle_workload_name(rq.workload),
					    gap);
					print_ranks("engine ", r.ranks, G);
					print_ranks("optimum", b.best_ranks, G);
				}
				exact +=
				    gap <= 1.0 + o.cost_tolerance + REL_TOL;
				gaps[ngap++] = gap;
			}
		}
		isle_place_result_fini(&r);
		isle_place_destroy(c);
		isle_topo_destroy(t);
	}
	assert_int_equal(ngap, MID_WANT);
	qsort(gaps, (size_t)ngap, sizeof(gaps[0]), cmp_dbl);
	{
		double med = gaps[ngap / 2],
		       p90 = gaps[(ngap * 9 + 9) / 10 - 1];
		double mx = gaps[ngap - 1];
		const char *path = getenv("ISLE_GAP_OUT");

		print_message("mid kind %d: %d feasible non-trivial (gap "
			      "median %.4f p90 %.4f max %.4f, %d at the "
			      "optimum), %d zero-cost, %d infeasible, %d over "
			      "the search budget\n",
			      (int)kind, ngap, med, p90, mx, exact, zero,
			      infeasible, over_budget);
		if (path && *path) {
			FILE *f = fopen(path, "a");

			assert_non_null(f);
			fprintf(f,
				"{\"kind\":%d,\"seed\":%llu,\"instances\":%d,"
				"\"at_optimum\":%d,\"gap_median\":%.6f,"
				"\"gap_p90\":%.6f,\"gap_max\":%.6f,"
				"\"zero_cost\":%d,\"infeasible\":%d,"
				"\"over_budget\":%d}\n",
				(int)kind, (unsigned long long)seed, ngap,
				exact, med, p90, mx, zero, infeasible,
				over_budget);
			fclose(f);
		}
		assert_true(med <= 1.0 + o.cost_tolerance + REL_TOL);
		assert_true(p90 <= MID_P90_GAP);
	}
}

static void test_heuristic_mid(void **state)
{
	for (int k = 0; k < TP_KINDS; k++)
		mid_instances((enum tp_kind)k, 100 + (uint64_t)k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_optimum_nvswitch),
	    cmocka_unit_test(test_optimum_pairs),
	    cmocka_unit_test(test_optimum_domains),
	    cmocka_unit_test(test_optimum_mixed),
	    cmocka_unit_test(test_heuristic_mid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
