/*
 * test_comm_algo - the alpha-beta model and algorithm choice, and the shard
 * split every algorithm relies on.
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

#include "comm_priv.h"

static struct isle_algo_level lvl(int g, double bw, double lat,
				  const char *codec)
{
	struct isle_algo_level l = {
	    .group_size = g, .bw_gbps = bw, .lat_us = lat};

	assert_int_equal(isle_codec_parse(codec, &l.codec, NULL, 0), 0);
	return l;
}

static void test_names(void **state)
{
	for (int a = 0; a < ISLE_ALGO_COUNT; a++) {
		isle_algo back;

		assert_int_equal(isle_algo_parse(isle_algo_name(a), &back), 0);
		assert_int_equal(back, a);
	}
	assert_int_equal(isle_algo_parse("fast", &(isle_algo){0}), -EINVAL);
}

/* Closed forms for one level: ring 2(p-1)(a + b/(p w)), rd log2(p)(a+b/w). */
static void test_closed_forms(void **state)
{
	struct isle_algo_level l = lvl(4, 10, 5, "none"); /* 10 GB/s, 5 us */
	size_t b = 4000000;				  /* 4 MB */

	assert_true(fabs(isle_algo_cost_us(ISLE_ALGO_RING, &l, 1, b) -
			 6 * (5 + 100.0)) < 1e-9);
	assert_true(fabs(isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &l, 1, b) -
			 2 * (5 + 400.0)) < 1e-9);
	l.group_size = 6; /* not a power of two: 2 + 2 steps */
	assert_true(fabs(isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &l, 1, b) -
			 4 * (5 + 400.0)) < 1e-9);
	l.group_size = 0;
	assert_true(isle_algo_cost_us(ISLE_ALGO_RING, &l, 1, b) < 0);
	assert_true(isle_algo_cost_us(ISLE_ALGO_RING, &l, 0, b) < 0);
}

static void test_choice(void **state)
{
	struct isle_algo_level two[2] = {lvl(8, 200, 2, "none"),
					 lvl(4, 1, 20, "none")};
	struct isle_algo_level one = lvl(16, 10, 10, "none");
	double t_small, t_big, flat, hier;

	/*
	 * One level: the library's own is the best of what the shim could
	 * run flat, so it is chosen (ties go to it): recursive doubling's
	 * cost when latency-bound, below the ring's (Rabenseifner: same
	 * bytes, fewer latencies) when bandwidth-bound.
	 */
	assert_int_equal(isle_algo_choose(&one, 1, 64, &t_small),
			 ISLE_ALGO_PASSTHROUGH);
	assert_true(t_small ==
		    isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &one, 1, 64));
	assert_true(t_small < isle_algo_cost_us(ISLE_ALGO_RING, &one, 1, 64));
	assert_int_equal(isle_algo_choose(&one, 1, 64 << 20, &t_big),
			 ISLE_ALGO_PASSTHROUGH);
	assert_true(t_big <
		    isle_algo_cost_us(ISLE_ALGO_RING, &one, 1, 64 << 20));
	assert_true(t_big <
		    isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &one, 1, 64 << 20));
	/* Rabenseifner, 16 ranks: 2 * 4 latencies, 2 * 15/16 of the bytes. */
	assert_true(fabs(t_big - (8 * 10 + 2 * (15.0 / 16) * (64 << 20) /
					       (10 * 1e3))) < 1e-6);

	/*
	 * Two levels, small messages: the library's recursive doubling keeps
	 * its first steps on the fast level, one step crosses the thin one;
	 * hier's ring inside the island costs more latencies.
	 */
	assert_int_equal(isle_algo_choose(two, 2, 4096, &t_small),
			 ISLE_ALGO_PASSTHROUGH);
	assert_true(t_small <= isle_algo_cost_us(ISLE_ALGO_HIER, two, 2, 4096));
	assert_true(fabs(t_small - (3 * (2 + 4096 / 200e3) +
				    2 * (20 + 4096 / 1e3))) < 1e-6);

	/*
	 * Thin network under fat islands: hierarchical is far below a flat
	 * ring; uncompressed, it moves the same bytes as Rabenseifner, so
	 * the library keeps big messages; compressed, hier wins.
	 */
	hier = isle_algo_cost_us(ISLE_ALGO_HIER, two, 2, 64 << 20);
	flat = isle_algo_cost_us(ISLE_ALGO_RING, two, 2, 64 << 20);
	assert_true(hier < flat / 4);
	assert_true(isle_algo_cost_us(ISLE_ALGO_PASSTHROUGH, two, 2, 64 << 20) <
		    hier * 1.05);
	{
		struct isle_algo_level bf[2] = {two[0], lvl(4, 1, 20, "bf16")};

		assert_int_equal(isle_algo_choose(bf, 2, 64 << 20, NULL),
				 ISLE_ALGO_HIER);
		assert_int_equal(isle_algo_choose(bf, 2, 64, NULL),
				 ISLE_ALGO_PASSTHROUGH);
	}

	/* Compression on the thin level cuts its cost by the wire ratio. */
	{
		struct isle_algo_level c8[2] = {two[0], lvl(4, 1, 20, "int8")};
		struct isle_algo_level tk[2] = {two[0],
						lvl(4, 1, 20, "topk:0.01")};
		double t_none =
		    isle_algo_cost_us(ISLE_ALGO_HIER, two, 2, 64 << 20);
		double t_int8 =
		    isle_algo_cost_us(ISLE_ALGO_HIER, c8, 2, 64 << 20);
		double t_topk =
		    isle_algo_cost_us(ISLE_ALGO_HIER, tk, 2, 64 << 20);
		/* The thin level alone: int8 is ~1/4 of fp32, top-k 1% ~2%. */
		double n1 =
		    isle_algo_cost_us(ISLE_ALGO_HIER, &two[1], 1, 64 << 20);
		double i1 =
		    isle_algo_cost_us(ISLE_ALGO_HIER, &c8[1], 1, 64 << 20);
		double k1 =
		    isle_algo_cost_us(ISLE_ALGO_HIER, &tk[1], 1, 64 << 20);

		assert_true(t_int8 < t_none / 2.5 && t_topk < t_int8);
		assert_true(i1 < n1 / 3.5 && i1 > n1 / 4.5);
		assert_true(k1 < n1 / 30);
	}
	/* Costs grow with size, for every algorithm. */
	for (int a = ISLE_ALGO_RING; a <= ISLE_ALGO_PASSTHROUGH; a++)
		for (size_t b = 4; b < (1u << 28); b *= 4)
			assert_true(isle_algo_cost_us(a, two, 2, b) <
				    isle_algo_cost_us(a, two, 2, b * 4));
}

/* Shards cover [0, n) in order, sizes differ by at most one. */
static void test_shards(void **state)
{
	for (size_t n = 0; n < 200; n++)
		for (int s = 1; s <= 17; s++) {
			size_t next = 0, mn = SIZE_MAX, mx = 0;

			for (int q = 0; q < s; q++) {
				size_t off, len;

				isle__shard(n, s, q, &off, &len);
				assert_int_equal(off, next);
				next = off + len;
				mn = len < mn ? len : mn;
				mx = len > mx ? len : mx;
			}
			assert_int_equal(next, n);
			assert_true(mx - mn <= 1);
		}
}

/*
 * The crossover probe's bound: its payload (both libraries, warm-up
 * included) against what the communicator carried before it. A job of
 * gradient-sized calls pays the probe only once it has moved 100 times as
 * much, and then at most 1%.
 */
/* Size classes: each size goes to the nearest probe size (x4 apart, so
 * boundaries at twice each probe size); none above twice the largest. */
static void test_cal_class(void **state)
{
	assert_int_equal(isle__cal_class(1), 0);
	assert_int_equal(isle__cal_class(16), 0);
	assert_int_equal(isle__cal_class(17), 1);
	assert_int_equal(isle__cal_class(64), 1);
	assert_int_equal(isle__cal_class(65), 2);
	for (int k = 0; k < ISLE__CAL_N; k++)
		assert_int_equal(
		    isle__cal_class((size_t)ISLE__CAL_MIN << (2 * k)), k);
	assert_int_equal(isle__cal_class(4u << 20), ISLE__CAL_N - 1);
	assert_int_equal(isle__cal_class((4u << 20) + 1), -1);
	/* halves: up to the probe size, above it */
	assert_int_equal(isle__cal_half(8), 0);
	assert_int_equal(isle__cal_half(9), 1);
	assert_int_equal(isle__cal_half(32), 2);
	assert_int_equal(isle__cal_half(64), 3);
	assert_int_equal(isle__cal_half(256u << 10), 2 * 7 + 1);
	assert_int_equal(isle__cal_half(4u << 20), 2 * ISLE__CAL_N - 1);
	assert_int_equal(isle__cal_half((4u << 20) + 1), -1);
}

static void test_probe_bound(void **state)
{
	/* The shim at every size and four library algorithms. */
	uint64_t all = isle__probe_cost((1u << ISLE__CAL_N) - 1, 4);
	uint64_t job = 0, probed_at = 0;

	/* 8 B .. 32 KiB, x4: 43688 B, 12 runs; 128 KiB .. 2 MiB: 2752512 B,
	 * 4 runs; 5 candidates */
	const uint64_t one = 12 * 43688ull + 4 * 2752512ull;

	assert_int_equal(all, 5 * one);
	assert_int_equal(isle__probe_cost(0, 1), one);
	assert_int_equal(isle__probe_cost(1, 1), one + 12 * 8);
	assert_int_equal(isle__probe_cost(1u << 9, 1), one + (8u << 20));
	assert_int_equal(isle__probe_cost(0, 0), 0);

	/* The least carried payload it is due at, exactly. */
	assert_true(isle__probe_due(isle__probe_due_at(all, 0.01), all, 0.01));
	assert_false(
	    isle__probe_due(isle__probe_due_at(all, 0.01) - 1, all, 0.01));
	assert_int_equal(isle__probe_due_at(all, 0), 0);
	assert_int_equal(isle__probe_due_at(all, 1e-300), UINT64_MAX);

	assert_false(isle__probe_due(0, all, 0.01));
	assert_false(isle__probe_due(100 * all - 1, all, 0.01));
	assert_true(isle__probe_due(100 * all, all, 0.01));
	assert_true(isle__probe_due(0, all, 0));  /* no bound */
	assert_true(isle__probe_due(0, 0, 0.01)); /* nothing to probe */

	/* 814120-byte gradients (train_mnist): the first call it may run at,
	 * and its share of that job, and of any longer one. */
	for (int call = 1; call <= 100000 && !probed_at; call++) {
		job += 814120;
		if (isle__probe_due(job, all, 0.01))
			probed_at = (uint64_t)call;
	}
	assert_int_equal(probed_at, (100 * all + 814119) / 814120);
	assert_true((double)all <= 0.01 * (double)job);
	assert_true((double)all > 0.01 * (double)(job - 814120));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_closed_forms),
	    cmocka_unit_test(test_choice),
	    cmocka_unit_test(test_shards),
	    cmocka_unit_test(test_cal_class),
	    cmocka_unit_test(test_probe_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
