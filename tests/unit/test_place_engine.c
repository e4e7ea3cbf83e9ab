/*
 * test_place_engine.c - invariants of the placement engine: no GPU handed
 * out twice, free masks and node eligibility respected, TP groups
 * consecutive and inside islands, determinism, "no placement" and bad
 * requests answered with a reason.
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

#define MAXN 64

/* Checks one successful result against the free masks it was placed on. */
static void check_result(const isle_topo *t, const uint64_t *fm,
			 const uint64_t *elig, const struct isle_place_req *rq,
			 const struct isle_place_result *r)
{
	uint64_t seen[MAXN] = {0};
	int i, g;

	assert_true(r->nranks > 0);
	assert_int_equal(r->nranks, rq->gpus);
	for (i = 0; i < r->nranks; i++) {
		const struct isle_place_rank *k = &r->ranks[i];

		assert_true(k->node >= 0 && k->node < t->nnodes);
		assert_true(k->gpu >= 0 && k->gpu < t->nodes[k->node].ngpus);
		/* free, eligible, and used once */
		assert_true(fm[k->node] >> k->gpu & 1);
		if (elig)
			assert_true(elig[k->node / 64] >> (k->node % 64) & 1);
		assert_false(seen[k->node] >> k->gpu & 1);
		seen[k->node] |= 1ULL << k->gpu;
	}
	/* nodes ascending, masks equal to the ranks' GPUs */
	for (i = 0; i < r->nnodes; i++) {
		if (i)
			assert_true(r->nodes[i - 1] < r->nodes[i]);
		assert_int_equal(r->masks[i], seen[r->nodes[i]]);
		seen[r->nodes[i]] = 0;
	}
	for (i = 0; i < t->nnodes; i++)
		assert_int_equal(seen[i], 0);
	if (rq->gpus_per_node > 0)
		for (i = 0; i < r->nnodes; i++)
			assert_int_equal(__builtin_popcountll(r->masks[i]),
					 rq->gpus_per_node);
	/* TP groups: consecutive ranks inside one island (required mode) */
	assert_int_equal(r->ntp_groups, rq->gpus / rq->tp);
	if (rq->mode == ISLE_PLACE_REQUIRED) {
		assert_int_equal(r->tp_in_island, r->ntp_groups);
		for (i = 0; i < r->nranks; i += rq->tp)
			for (g = 1; g < rq->tp; g++)
				assert_int_equal(tp_island(t, &r->ranks[i + g]),
						 tp_island(t, &r->ranks[i]));
	}
	assert_true(r->span <= rq->max_span);
	assert_true(r->cost.total >= 0);
}

static void random_req(const isle_topo *t, struct isle_place_req *rq)
{
	static const int sizes[] = {1, 2, 4, 6, 8, 12, 16, 24, 32};
	int gpn = t->nodes[0].ngpus;

	isle_place_req_init(rq);
	rq->gpus = sizes[tp_randint(9)];
	do
		rq->tp = 1 << tp_randint(4);
	while (rq->gpus % rq->tp);
	rq->pp = rq->gpus % (rq->tp * 2) == 0 && tp_randint(2) ? 2 : 1;
	rq->workload =
	    tp_randint(4) ? ISLE_WORKLOAD_TRAIN : ISLE_WORKLOAD_INFER;
	rq->mode = tp_randint(3) ? ISLE_PLACE_REQUIRED : ISLE_PLACE_PREFERRED;
	if (tp_randint(4) == 0 && rq->gpus % gpn == 0) {
		rq->nodes = rq->gpus / gpn;
		rq->gpus_per_node = gpn;
		rq->gpus = 0;
	}
}

/* Many placements committed one after another on random clusters: every
 * GPU is handed out at most once and only if free and eligible. */
static void test_no_double_allocation(void **state)
{
	int trial, placed = 0, waited = 0;

	tp_seed(11);
	for (trial = 0; trial < 40; trial++) {
		enum tp_kind kind = (enum tp_kind)(trial % TP_KINDS);
		isle_topo *t = tp_cluster(kind, 8 + tp_randint(40), 4, 4);
		isle_place_ctx *c;
		struct isle_place_result r;
		uint64_t fm[MAXN], elig[1];
		int step;

		assert_non_null(t);
		c = isle_place_create(t, NULL);
		assert_non_null(c);
		isle_place_result_init(&r);
		tp_random_free(t, fm, 80);
		elig[0] = tp_rand() | tp_rand(); /* ~75% of nodes eligible */
		for (step = 0; step < 30; step++) {
			struct isle_place_req rq;
			int rc, gpus;

			random_req(t, &rq);
			gpus = rq.gpus ? rq.gpus : rq.nodes * rq.gpus_per_node;
			rc = isle_place(c, fm, step % 2 ? elig : NULL, &rq, &r);
			if (rc == -ENOSPC || rc == -E2BIG) {
				assert_true(r.reason[0] != '\0');
				assert_int_equal(r.nranks, 0);
				waited++;
				continue;
			}
			assert_int_equal(rc, 0);
			rq.gpus = gpus;
			check_result(t, fm, step % 2 ? elig : NULL, &rq, &r);
			assert_int_equal(isle_place_commit(&r, fm), 0);
			/* committing twice must fail: the GPUs are gone */
			assert_int_equal(isle_place_commit(&r, fm), -EINVAL);
			placed++;
		}
		isle_place_result_fini(&r);
		isle_place_destroy(c);
		isle_topo_destroy(t);
	}
	assert_true(placed > 100);
	assert_true(waited > 10);
}

/* Release gives exactly the GPUs back; the cost the engine reports is the
 * cost model's value for its rank order. */
static void test_release_and_eval(void **state)
{
	isle_topo *t;
	isle_place_ctx *c;
	struct isle_place_result r;
	struct isle_place_req rq;
	struct isle_place_cost cost;
	uint64_t fm[MAXN], before[MAXN];

	tp_seed(5);
	t = tp_cluster(TP_PAIRS, 16, 8, 4);
	assert_non_null(t);
	c = isle_place_create(t, NULL);
	isle_place_result_init(&r);
	tp_random_free(t, fm, 70);
	memcpy(before, fm, sizeof(fm));
	isle_place_req_init(&rq);
	rq.gpus = 16;
	rq.tp = 2;
	rq.pp = 2;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), 0);
	check_result(t, fm, NULL, &rq, &r);
	assert_int_equal(isle_place_eval(c, &rq, r.ranks, r.nranks, &cost), 0);
	assert_true(cost.total == r.cost.total);
	assert_true(r.ideal.total > 0);
	assert_true(r.ideal.total <= r.cost.total * (1 + 1e-6));
	assert_int_equal(isle_place_commit(&r, fm), 0);
	assert_memory_not_equal(fm, before, sizeof(fm));
	assert_int_equal(isle_place_release(&r, fm), 0);
	assert_memory_equal(fm, before, sizeof(fm));
	assert_int_equal(isle_place_release(&r, fm), -EINVAL);
	isle_place_result_fini(&r);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* A 2-node TP=8 job on GB200-like domains goes inside one domain when
 * one is free, even though the nodes of another domain come first. */
static void test_tp_stays_in_domain(void **state)
{
	isle_topo *t = tp_cluster(TP_DOMAIN, 8, 4, 4);
	isle_place_ctx *c;
	struct isle_place_result r;
	struct isle_place_req rq;
	uint64_t fm[8];
	int i;

	assert_non_null(t);
	c = isle_place_create(t, NULL);
	isle_place_result_init(&r);
	for (i = 0; i < 8; i++)
		fm[i] = 0xf;
	fm[1] = 0x7; /* domain n00+n01 is one GPU short */
	isle_place_req_init(&rq);
	rq.nodes = 2;
	rq.gpus_per_node = 4;
	rq.tp = 8;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), 0);
	rq.gpus = 8;
	check_result(t, fm, NULL, &rq, &r);
	assert_int_equal(r.islands, 1);
	assert_int_equal(r.span, ISLE_TIER_ISLAND);
	assert_true(r.nodes[0] >= 2);
	isle_place_result_fini(&r);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* A reservation (isle_place_later) takes the nodes busy now when they
 * hold it at the start time, and is a plain placement when they do not. */
static void test_place_later(void **state)
{
	isle_topo *t = tp_cluster(TP_NVSWITCH, 8, 4, 4);
	isle_place_ctx *c;
	struct isle_place_result r;
	struct isle_place_req rq;
	uint64_t later[8], now[8];
	int i;

	assert_non_null(t);
	c = isle_place_create(t, NULL);
	isle_place_result_init(&r);
	/* all free at the start; now n04, n05 busy and n06 half busy */
	for (i = 0; i < 8; i++) {
		later[i] = 0xf;
		now[i] = 0xf;
	}
	now[4] = now[5] = 0;
	now[6] = 0x3;
	isle_place_req_init(&rq);
	rq.nodes = 2;
	rq.gpus_per_node = 4;
	assert_int_equal(isle_place_later(c, later, now, NULL, &rq, &r), 0);
	rq.gpus = 8;
	check_result(t, later, NULL, &rq, &r);
	assert_int_equal(r.nodes[0], 4);
	assert_int_equal(r.nodes[1], 5);
	/* three nodes: the two busy ones, then the half-busy one */
	rq.nodes = 3;
	rq.gpus = 0;
	assert_int_equal(isle_place_later(c, later, now, NULL, &rq, &r), 0);
	assert_int_equal(r.nnodes, 3);
	assert_int_equal(r.nodes[0], 4);
	assert_int_equal(r.nodes[1], 5);
	assert_int_equal(r.nodes[2], 6);
	/* nothing busy now: the same answer as isle_place */
	{
		struct isle_place_result p;

		isle_place_result_init(&p);
		rq.nodes = 2;
		assert_int_equal(
		    isle_place_later(c, later, later, NULL, &rq, &r), 0);
		assert_int_equal(isle_place(c, later, NULL, &rq, &p), 0);
		assert_int_equal(r.nnodes, p.nnodes);
		for (i = 0; i < r.nnodes; i++)
			assert_int_equal(r.nodes[i], p.nodes[i]);
		isle_place_result_fini(&p);
	}
	/* no room at the start: -ENOSPC with a reason */
	for (i = 0; i < 8; i++)
		later[i] = 0x1;
	assert_int_equal(isle_place_later(c, later, now, NULL, &rq, &r),
			 -ENOSPC);
	assert_true(r.reason[0] != '\0');
	isle_place_result_fini(&r);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* Same model, masks and request: the same answer, on the same context
 * and on a fresh one. */
static void test_deterministic(void **state)
{
	int trial;

	for (trial = 0; trial < 10; trial++) {
		isle_topo *t;
		isle_place_ctx *a, *b;
		struct isle_place_result ra, rb;
		struct isle_place_req rq;
		uint64_t fm[MAXN];
		int rc1, rc2, rc3;

		tp_seed(100 + trial);
		t = tp_cluster((enum tp_kind)(trial % TP_KINDS), 32, 8, 8);
		assert_non_null(t);
		a = isle_place_create(t, NULL);
		b = isle_place_create(t, NULL);
		isle_place_result_init(&ra);
		isle_place_result_init(&rb);
		tp_random_free(t, fm, 60);
		random_req(t, &rq);
		rc1 = isle_place(a, fm, NULL, &rq, &ra);
		rc2 = isle_place(b, fm, NULL, &rq, &rb);
		assert_int_equal(rc1, rc2);
		if (rc1 == 0) {
			assert_int_equal(ra.nranks, rb.nranks);
			assert_memory_equal(ra.ranks, rb.ranks,
					    ra.nranks * sizeof(*ra.ranks));
			assert_true(ra.cost.total == rb.cost.total);
		}
		rc3 = isle_place(a, fm, NULL, &rq, &rb);
		assert_int_equal(rc1, rc3);
		if (rc1 == 0)
			assert_memory_equal(ra.ranks, rb.ranks,
					    ra.nranks * sizeof(*ra.ranks));
		isle_place_result_fini(&ra);
		isle_place_result_fini(&rb);
		isle_place_destroy(a);
		isle_place_destroy(b);
		isle_topo_destroy(t);
	}
}

/* A full cluster, an empty eligibility map, islands too broken up: -ENOSPC
 * and a reason; the explain log records the candidates. */
static void test_no_placement(void **state)
{
	struct isle_place_opts o;
	isle_topo *t;
	isle_place_ctx *c;
	struct isle_place_result r;
	struct isle_place_req rq;
	uint64_t fm[16], none[1] = {0};
	int i, n;

	tp_seed(3);
	t = tp_cluster(TP_NVSWITCH, 16, 8, 4);
	assert_non_null(t);
	isle_place_opts_default(&o);
	o.explain_max = 64;
	c = isle_place_create(t, &o);
	isle_place_result_init(&r);
	isle_place_req_init(&rq);
	rq.gpus = 8;
	rq.tp = 8;
	for (i = 0; i < 16; i++)
		fm[i] = 0;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), -ENOSPC);
	assert_non_null(strstr(r.reason, "no placement"));
	/* every node half free: 64 free GPUs, no island with 8 */
	for (i = 0; i < 16; i++)
		fm[i] = 0x0f;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), -ENOSPC);
	assert_true(r.reason[0] != '\0');
	/* preferred mode places it anyway, straddling */
	rq.mode = ISLE_PLACE_PREFERRED;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), 0);
	assert_int_equal(r.tp_in_island, 0);
	assert_int_equal(r.nnodes, 2);
	/* no eligible node */
	for (i = 0; i < 16; i++)
		fm[i] = 0xff;
	assert_int_equal(isle_place(c, fm, none, &rq, &r), -ENOSPC);
	/* explain: candidates were recorded, one chosen */
	rq.gpus = 24;
	rq.tp = 4;
	assert_int_equal(isle_place(c, fm, NULL, &rq, &r), 0);
	{
		const struct isle_place_cand *k = isle_place_candidates(c, &n);
		int chosen = 0;

		assert_non_null(k);
		assert_true(n >= 1);
		for (i = 0; i < n; i++)
			if (k[i].chosen) {
				chosen++;
				assert_true(k[i].feasible);
				assert_true(k[i].cost == r.cost.total);
			}
		assert_int_equal(chosen, 1);
		/* each scope once, although several fills try it (a leaf
		 * group was listed twice) */
		for (i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				assert_false(k[i].scope_tier ==
						 k[j].scope_tier &&
					     k[i].scope == k[j].scope);
		assert_true(n >= 2);
	}
	isle_place_result_fini(&r);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* Bad requests get -EINVAL or -E2BIG and a reason naming the problem. */
static void test_bad_requests(void **state)
{
	static const struct {
		int gpus, nodes, gpn, tp, pp, mode, rc;
		const char *why;
	} cases[] = {
	    {16, 0, 0, 16, 1, ISLE_PLACE_REQUIRED, -E2BIG, "largest"},
	    {0, 0, 0, 1, 1, ISLE_PLACE_REQUIRED, -EINVAL, "zero"},
	    {0, 2, 0, 1, 1, ISLE_PLACE_REQUIRED, -EINVAL, "zero"},
	    {12, 0, 0, 8, 1, ISLE_PLACE_REQUIRED, -EINVAL, "divide"},
	    {16, 0, 0, 4, 3, ISLE_PLACE_REQUIRED, -EINVAL, "divide"},
	    {8, 0, 0, 0, 1, ISLE_PLACE_REQUIRED, -EINVAL, ">= 1"},
	    {10, 0, 4, 2, 1, ISLE_PLACE_REQUIRED, -EINVAL, "divide"},
	    {16, 3, 0, 1, 1, ISLE_PLACE_REQUIRED, -EINVAL, "divisible"},
	    {4096, 0, 0, 8, 1, ISLE_PLACE_REQUIRED, -E2BIG, "cluster has"},
	    {16, 0, 16, 8, 1, ISLE_PLACE_REQUIRED, -E2BIG, "largest node"},
	    {8, 0, 0, 2, 1, 7, -EINVAL, "mode"},
	    /* Products that overflow an int: 65536 x 65536 wrapped to 0 and
	     * gpus % (tp * pp) raised SIGFPE. */
	    {65536, 0, 0, 65536, 65536, ISLE_PLACE_REQUIRED, -EINVAL,
	     "tp x pp"},
	    {0, 65536, 65536, 1, 1, ISLE_PLACE_REQUIRED, -EINVAL, "overflows"},
	    {1 << 30, 0, 0, 1 << 15, 1 << 16, ISLE_PLACE_REQUIRED, -EINVAL,
	     "tp x pp"},
	    {0x7ffffffe, 0, 0, 2, 0x40000000, ISLE_PLACE_PREFERRED, -EINVAL,
	     "tp x pp"},
	};
	isle_topo *t;
	isle_place_ctx *c;
	struct isle_place_result r;
	uint64_t fm[16];
	size_t k;

	tp_seed(9);
	t = tp_cluster(TP_NVSWITCH, 16, 8, 4);
	assert_non_null(t);
	c = isle_place_create(t, NULL);
	isle_place_result_init(&r);
	for (k = 0; k < 16; k++)
		fm[k] = 0xff;
	for (k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		struct isle_place_req rq;
		char why[256];
		int rc;

		isle_place_req_init(&rq);
		rq.gpus = cases[k].gpus;
		rq.nodes = cases[k].nodes;
		rq.gpus_per_node = cases[k].gpn;
		rq.tp = cases[k].tp;
		rq.pp = cases[k].pp;
		rq.mode = (isle_place_mode)cases[k].mode;
		rc = isle_place(c, fm, NULL, &rq, &r);
		if (rc != cases[k].rc || !strstr(r.reason, cases[k].why))
			fail_msg("case %zu: rc %d reason '%s'", k, rc,
				 r.reason);
		assert_int_equal(r.nranks, 0);
		/* the static check agrees */
		assert_int_equal(isle_place_check(c, &rq, why, sizeof(why)),
				 cases[k].rc);
		assert_non_null(strstr(why, cases[k].why));
	}
	/* the largest island bounds required mode only */
	{
		struct isle_place_req rq;

		isle_place_req_init(&rq);
		rq.gpus = 16;
		rq.tp = 16;
		rq.mode = ISLE_PLACE_PREFERRED;
		assert_int_equal(isle_place(c, fm, NULL, &rq, &r), 0);
		/* a span limit that the job can never meet */
		rq.max_span = ISLE_TIER_NODE;
		assert_int_equal(isle_place(c, fm, NULL, &rq, &r), -E2BIG);
		assert_true(r.reason[0] != '\0');
	}
	isle_place_result_fini(&r);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* Names and parsers round-trip. */
static void test_names(void **state)
{
	assert_int_equal(isle_place_mode_parse("required"),
			 ISLE_PLACE_REQUIRED);
	assert_int_equal(isle_place_mode_parse("preferred"),
			 ISLE_PLACE_PREFERRED);
	assert_int_equal(isle_place_mode_parse("maybe"), -1);
	assert_string_equal(isle_place_mode_name(ISLE_PLACE_PREFERRED),
			    "preferred");
	assert_int_equal(isle_workload_parse("infer"), ISLE_WORKLOAD_INFER);
	assert_int_equal(isle_workload_parse(""), -1);
	assert_string_equal(isle_place_strerror(-ENOSPC), "no placement now");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_double_allocation),
	    cmocka_unit_test(test_release_and_eval),
	    cmocka_unit_test(test_tp_stays_in_domain),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_place_later),
	    cmocka_unit_test(test_no_placement),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
