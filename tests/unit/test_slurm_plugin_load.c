/*
 * test_slurm_plugin_load.c - topology/isle's table of running jobs whose
 * traffic the engine's contention term charges (slurm_plugin/isle_load.c):
 * each job's load is added once, removed once when a reconcile no longer
 * sees it running, replaced when the job started again (requeue), and the
 * engine's link loads always equal those of the jobs still running.
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

#include "isle_load.h"
#include "test_place_util.h"

/* 16 nodes of 8 GPUs, leaf groups of 4 nodes, spine groups of 2 leafs. */
static isle_topo *cluster16(void)
{
	isle_topo *t = tp_cluster(TP_NVSWITCH, 16, 8, 4);

	assert_non_null(t);
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 4);
	assert_int_equal(t->ngroups[ISLE_TIER_SPINE], 2);
	return t;
}

static isle_place_ctx *engine(const isle_topo *t)
{
	struct isle_place_opts o;
	isle_place_ctx *c;

	isle_place_opts_default(&o);
	o.contention_weight = 1.0;
	c = isle_place_create(t, &o);
	assert_non_null(c);
	return c;
}

/* The loads of a and b agree on every leaf and spine group. */
static void loads_equal(const isle_topo *t, isle_place_ctx *a,
			isle_place_ctx *b)
{
	static const isle_tier k[2] = {ISLE_TIER_LEAF, ISLE_TIER_SPINE};

	for (int i = 0; i < 2; i++)
		for (int g = 0; g < t->ngroups[k[i]]; g++) {
			double la = -1, lb = -2;

			assert_int_equal(
			    isle_place_link_load(a, k[i], g, &la, NULL), 0);
			assert_int_equal(
			    isle_place_link_load(b, k[i], g, &lb, NULL), 0);
			assert_true(fabs(la - lb) < 1e-9);
		}
}

static double total_load(const isle_topo *t, isle_place_ctx *c)
{
	double sum = 0, l;

	for (int g = 0; g < t->ngroups[ISLE_TIER_LEAF]; g++) {
		assert_int_equal(
		    isle_place_link_load(c, ISLE_TIER_LEAF, g, &l, NULL), 0);
		sum += l;
	}
	for (int g = 0; g < t->ngroups[ISLE_TIER_SPINE]; g++) {
		assert_int_equal(
		    isle_place_link_load(c, ISLE_TIER_SPINE, g, &l, NULL), 0);
		sum += l;
	}
	return sum;
}

/* Job A: nodes 3 and 4 (leafs 0 and 1), all GPUs, DP. Job B: nodes 7
 * and 8 (leafs 1 and 2, spines 0 and 1), 4 GPUs each, PP. */
static const int a_nodes[] = {3, 4}, b_nodes[] = {7, 8};
static const uint64_t a_masks[] = {0xff, 0xff}, b_masks[] = {0x0f, 0xf0};

static void test_reconcile(void **state)
{
	isle_topo *t = cluster16();
	isle_place_ctx *c = engine(t), *ref = engine(t);
	struct isle__load l;

	(void)state;
	isle__load_init(&l, c);
	isle__load_begin(&l);
	assert_false(isle__load_seen(&l, 10, 100));
	assert_int_equal(
	    isle__load_add(&l, 10, 100, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP),
	    0);
	assert_false(isle__load_seen(&l, 11, 100));
	assert_int_equal(
	    isle__load_add(&l, 11, 100, b_nodes, b_masks, 2, ISLE_TRAFFIC_PP),
	    0);
	assert_int_equal(isle__load_end(&l), 0);
	assert_int_equal(isle__load_count(&l), 2);
	assert_int_equal(
	    isle_place_load_add(ref, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP), 0);
	assert_int_equal(
	    isle_place_load_add(ref, b_nodes, b_masks, 2, ISLE_TRAFFIC_PP), 0);
	loads_equal(t, c, ref);
	assert_true(total_load(t, c) > 0);

	/* a reconcile that sees both changes nothing */
	isle__load_begin(&l);
	assert_true(isle__load_seen(&l, 10, 100));
	assert_true(isle__load_seen(&l, 11, 100));
	assert_int_equal(isle__load_end(&l), 0);
	loads_equal(t, c, ref);

	/* job 10 ended: its load leaves, job 11's stays */
	isle__load_begin(&l);
	assert_true(isle__load_seen(&l, 11, 100));
	assert_int_equal(isle__load_end(&l), 1);
	assert_int_equal(isle__load_count(&l), 1);
	assert_int_equal(
	    isle_place_load_remove(ref, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP),
	    0);
	loads_equal(t, c, ref);

	/* job 11 requeued and started again elsewhere: old load replaced */
	isle__load_begin(&l);
	assert_false(isle__load_seen(&l, 11, 200));
	assert_int_equal(
	    isle__load_add(&l, 11, 200, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP),
	    0);
	assert_int_equal(isle__load_end(&l), 0);
	assert_int_equal(isle__load_count(&l), 1);
	assert_int_equal(
	    isle_place_load_remove(ref, b_nodes, b_masks, 2, ISLE_TRAFFIC_PP),
	    0);
	assert_int_equal(
	    isle_place_load_add(ref, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP), 0);
	loads_equal(t, c, ref);

	/* nothing runs any more */
	isle__load_begin(&l);
	assert_int_equal(isle__load_end(&l), 1);
	assert_int_equal(isle__load_count(&l), 0);
	assert_true(total_load(t, c) == 0);

	isle__load_fini(&l);
	isle_place_destroy(c);
	isle_place_destroy(ref);
	isle_topo_destroy(t);
}

/* Odd input never loads anything and is not retried each reconcile. */
static void test_bad_input(void **state)
{
	isle_topo *t = cluster16();
	isle_place_ctx *c = engine(t);
	struct isle__load l;
	int bad_nodes[] = {3, 99};

	(void)state;
	isle__load_init(&l, c);
	isle__load_begin(&l);
	assert_int_equal(
	    isle__load_add(&l, 0, 1, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP),
	    -EINVAL);
	assert_int_equal(
	    isle__load_add(&l, 5, 1, NULL, NULL, 2, ISLE_TRAFFIC_DP), -EINVAL);
	assert_int_equal(
	    isle__load_add(&l, 5, 1, bad_nodes, a_masks, 2, ISLE_TRAFFIC_DP),
	    -EINVAL);
	assert_int_equal(
	    isle__load_add(&l, 6, 1, a_nodes, a_masks, 2, (isle_traffic)9),
	    -EINVAL);
	/* a job without GPUs in the model: recorded, no load */
	assert_int_equal(
	    isle__load_add(&l, 7, 1, NULL, NULL, 0, ISLE_TRAFFIC_DP), 0);
	assert_int_equal(isle__load_end(&l), 0);
	assert_int_equal(isle__load_count(&l), 3);
	assert_true(total_load(t, c) == 0);
	isle__load_begin(&l);
	assert_true(isle__load_seen(&l, 5, 1));
	assert_true(isle__load_seen(&l, 6, 1));
	assert_true(isle__load_seen(&l, 7, 1));
	assert_int_equal(isle__load_end(&l), 0);
	isle__load_begin(&l);
	assert_int_equal(isle__load_end(&l), 3);
	assert_true(total_load(t, c) == 0);
	isle__load_fini(&l);

	/* without an engine the table still tracks jobs */
	isle__load_init(&l, NULL);
	isle__load_begin(&l);
	assert_int_equal(
	    isle__load_add(&l, 1, 1, a_nodes, a_masks, 2, ISLE_TRAFFIC_DP), 0);
	assert_true(isle__load_seen(&l, 1, 1));
	isle__load_fini(&l);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

/* Many jobs, ids that collide in a small index, half ending per round:
 * the engine's loads stay those of the survivors, and end at zero. */
static void test_many(void **state)
{
	enum { N = 5000 };
	isle_topo *t = cluster16();
	isle_place_ctx *c = engine(t), *ref = engine(t);
	struct isle__load l;
	int round;

	(void)state;
	isle__load_init(&l, c);
	isle__load_begin(&l);
	for (uint32_t id = 1; id <= N; id++) {
		int k = (int)(id % 8);
		const int nodes[] = {k, k + 8};
		const uint64_t masks[] = {1ULL << (id % 8), 3};
		isle_traffic tr = (isle_traffic)(1 + id % 3);

		assert_int_equal(
		    isle__load_add(&l, id * 1024, 0, nodes, masks, 2, tr), 0);
		assert_int_equal(isle_place_load_add(ref, nodes, masks, 2, tr),
				 0);
	}
	assert_int_equal(isle__load_end(&l), 0);
	loads_equal(t, c, ref);
	for (round = 1; round <= 3; round++) {
		isle__load_begin(&l);
		for (uint32_t id = 1; id <= N; id++) {
			int k = (int)(id % 8);
			const int nodes[] = {k, k + 8};
			const uint64_t masks[] = {1ULL << (id % 8), 3};
			isle_traffic tr = (isle_traffic)(1 + id % 3);
			bool alive = (id % (1u << round)) == 0;
			bool was = (id % (1u << (round - 1))) == 0;

			if (alive)
				assert_true(isle__load_seen(&l, id * 1024, 0));
			else if (was)
				assert_int_equal(isle_place_load_remove(
						     ref, nodes, masks, 2, tr),
						 0);
		}
		assert_int_equal(isle__load_end(&l),
				 N / (1 << (round - 1)) - N / (1 << round));
		assert_int_equal(isle__load_count(&l), N / (1 << round));
		loads_equal(t, c, ref);
	}
	isle__load_clear(&l);
	assert_int_equal(isle__load_count(&l), 0);
	assert_true(total_load(t, c) == 0);
	isle__load_fini(&l);
	isle_place_destroy(c);
	isle_place_destroy(ref);
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reconcile),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
