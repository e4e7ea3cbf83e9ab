/*
 * test_comm_codec - codec specs, wire sizes, error bounds, top-k selection
 * and error feedback, and bit-identical output of the scalar and AVX2
 * backends.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#ifdef HAVE_MPI
#include <mpi.h> /* before comm_priv.h: the channel internals */
#endif

#include "comm_priv.h"

static uint64_t rng = 12345;

static double unit(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) * 0x1p-53;
}

static void fill(float *x, size_t n, double scale)
{
	for (size_t i = 0; i < n; i++) /* mixed magnitudes and signs */
		x[i] = (float)((unit() * 2 - 1) * scale *
			       pow(10, (double)(i % 5) - 2));
}

static struct isle_codec codec(const char *spec)
{
	struct isle_codec c;
	char err[128];

	assert_int_equal(isle_codec_parse(spec, &c, err, sizeof(err)), 0);
	return c;
}

static void test_parse(void **state)
{
	static const char *const good[][2] = {
	    {"none", "none"},
	    {"fp16", "fp16"},
	    {"bf16", "bf16"},
	    {"int8", "int8:256"},
	    {"int8:64", "int8:64"},
	    {"topk:0.01", "topk:0.01"},
	    {"topk:0.5,noef", "topk:0.5,noef"},
	    {"int8:128,ef", "int8:128,ef"},
	    {"bf16,noef", "bf16"},
	    {"topk:0.01,mom=0.9", "topk:0.01,mom=0.9"},
	    {"topk:0.01,ef,mom=0", "topk:0.01"},
	};
	static const char *const bad[] = {
	    "",
	    "zstd",
	    "int8:7",
	    "int8:0",
	    "int8:70000",
	    "topk",
	    "topk:0",
	    "topk:1.5",
	    "topk:x",
	    "fp16:3",
	    "int8,q",
	    "topk:0.1,",
	    "none:",
	    /* momentum correction: topk only, [0, 1), needs the residual */
	    "topk:0.1,mom=1",
	    "topk:0.1,mom=-0.5",
	    "topk:0.1,mom=",
	    "topk:0.1,noef,mom=0.9",
	    "int8,mom=0.9",
	};
	struct isle_codec c;
	char buf[64], err[160];

	for (size_t i = 0; i < ISLE_ARRAY_SIZE(good); i++) {
		c = codec(good[i][0]);
		isle_codec_format(&c, buf, sizeof(buf));
		assert_string_equal(buf, good[i][1]);
	}
	for (size_t i = 0; i < ISLE_ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_int_equal(isle_codec_parse(bad[i], &c, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, bad[i]));
	}
	assert_int_equal(
	    isle_codec_parse("topk:0.01,mom=1.0", &c, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "mom must be in [0, 1)"));
	c = codec("topk:0.01");
	assert_true(c.error_feedback);
	assert_true(c.momentum == 0);
	assert_false(isle_codec_summable(&c));
	c = codec("topk:0.01,mom=0.9");
	assert_true(c.momentum == 0.9);
	assert_true(c.error_feedback);
	c = codec("int8");
	assert_false(c.error_feedback);
	assert_false(isle_codec_summable(&c));
	c = codec("bf16");
	assert_true(isle_codec_summable(&c));
}

static void test_sizes(void **state)
{
	struct isle_codec c;

	c = codec("none");
	assert_int_equal(isle_codec_encoded_size(&c, 5), 20);
	c = codec("fp16");
	assert_int_equal(isle_codec_encoded_size(&c, 5), 12);
	c = codec("int8:8");
	/* 3 scales + 17 bytes padded to 20 */
	assert_int_equal(isle_codec_encoded_size(&c, 17), 12 + 20);
	c = codec("topk:0.01");
	assert_int_equal(isle_codec_encoded_size(&c, 1000), 8 + 8 * 10);
	assert_int_equal(isle_codec_encoded_size(&c, 1001), 8 + 8 * 11);
	assert_int_equal(isle_codec_encoded_size(&c, 3), 8 + 8);
	for (size_t n = 0; n < 100; n++)
		for (int k = 0; k < ISLE_CODEC_COUNT; k++) {
			c = codec(k == ISLE_CODEC_TOPK
				      ? "topk:0.3"
				      : isle_codec_kind_name(k));
			assert_int_equal(isle_codec_encoded_size(&c, n) % 4, 0);
		}
}

/* Both backends, every codec, awkward lengths: same wire bytes. */
static void test_backends_identical(void **state)
{
	const struct isle_codec_ops *s = isle_codec_scalar_ops();
	const struct isle_codec_ops *v = isle_codec_cpu_ops();
	static const char *const specs[] = {"fp16",   "bf16",	   "int8",
					    "int8:8", "topk:0.05", "none"};
	static const size_t lens[] = {1, 7, 8, 9, 255, 256, 1000, 4097};
	float x[4097], ya[4097], yb[4097];

	if (v == s) {
		printf("SKIP: no AVX2 here: nothing to compare\n");
		skip();
	}
	/* Edge values: fp16 overflow, subnormals, ties, zeros, NaN-free. */
	fill(x, 4097, 100);
	x[0] = 65504.0f;
	x[1] = 70000.0f;
	x[2] = -1e-7f;
	x[3] = 0x1p-25f;
	x[4] = 1.0f + 0x1p-11f;
	x[5] = 0;
	x[6] = -0.0f;
	x[7] = INFINITY;
	x[8] = 3.0f * 0x1p-26f;
	x[9] = NAN;
	x[300] = -INFINITY;
	for (size_t si = 0; si < ISLE_ARRAY_SIZE(specs); si++) {
		struct isle_codec c = codec(specs[si]);

		for (size_t li = 0; li < ISLE_ARRAY_SIZE(lens); li++) {
			size_t n = lens[li],
			       sz = isle_codec_encoded_size(&c, n);
			unsigned char *a = calloc(1, sz), *b = calloc(1, sz);
			size_t from = 0;

			if (from >= n) {
				free(a);
				free(b);
				continue;
			}
			assert_int_equal(
			    s->encode(&c, x + from, n - from, a, NULL, NULL),
			    0);
			assert_int_equal(
			    v->encode(&c, x + from, n - from, b, NULL, NULL),
			    0);
			assert_memory_equal(
			    a, b, isle_codec_encoded_size(&c, n - from));
			assert_int_equal(s->decode(&c, a, n - from, ya, NULL),
					 0);
			assert_int_equal(v->decode(&c, a, n - from, yb, NULL),
					 0);
			assert_memory_equal(ya, yb, (n - from) * sizeof(float));
			free(a);
			free(b);
		}
	}
}

/* All 65536 halves decode like F16C does, and re-encode to themselves. */
static void test_fp16_all_halves(void **state)
{
	const struct isle_codec_ops *s = isle_codec_scalar_ops();
	const struct isle_codec_ops *v = isle_codec_cpu_ops();
	struct isle_codec c = codec("fp16");
	uint16_t *h = malloc(65536 * 2), *h2 = malloc(65536 * 2);
	float *ya = malloc(65536 * 4), *yb = malloc(65536 * 4);

	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	s->decode(&c, h, 65536, ya, NULL);
	v->decode(&c, h, 65536, yb, NULL);
	for (uint32_t i = 0; i < 65536; i++) {
		if (isnan(ya[i])) {
			assert_true(isnan(yb[i]));
			ya[i] = yb[i] = 0;
		}
	}
	assert_memory_equal(ya, yb, 65536 * 4);
	/* Infinities included: they re-encode to themselves. */
	assert_true(isinf(ya[0x7c00]) && ya[0x7c00] > 0);
	for (int b = 0; b < 2; b++) {
		(b ? v : s)->encode(&c, ya, 65536, h2, NULL, NULL);
		for (uint32_t i = 0; i < 65536; i++)
			if ((i & 0x7fff) <= 0x7c00 && i != 0x8000)
				assert_int_equal(h2[i], h[i]);
	}
	free(h);
	free(h2);
	free(ya);
	free(yb);
}

/* The bounds isle_codec_error_bound() documents, on both backends. */
static void test_error_bounds(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	static const char *const specs[] = {"fp16",   "bf16",	   "int8",
					    "int8:8", "int8:1024", "none"};
	enum { N = 10007 };
	float *x = malloc(N * 4), *y = malloc(N * 4);
	void *enc = malloc(2 * N * 4 + 4096);

	for (size_t b = 0; b < 2; b++)
		for (size_t si = 0; si < ISLE_ARRAY_SIZE(specs); si++) {
			struct isle_codec c = codec(specs[si]);
			double bound = isle_codec_error_bound(&c);

			fill(x, N, c.kind == ISLE_CODEC_FP16 ? 600 : 1e6);
			assert_int_equal(
			    be[b]->encode(&c, x, N, enc, NULL, NULL), 0);
			assert_int_equal(be[b]->decode(&c, enc, N, y, NULL), 0);
			for (size_t i = 0; i < N; i++) {
				double err = fabs((double)y[i] - x[i]), ref;

				if (c.kind == ISLE_CODEC_INT8) {
					size_t b0 = i / c.block * c.block;
					size_t b1 =
					    b0 + c.block < N ? b0 + c.block : N;

					ref = 0;
					for (size_t k = b0; k < b1; k++)
						ref = fmax(ref, fabs(x[k]));
				} else {
					ref = fabs(x[i]);
					/* relative bound: normal range only */
					if (c.kind == ISLE_CODEC_FP16 &&
					    ref < 0x1p-14)
						continue;
				}
				if (err > bound * ref)
					fail_msg("%s %s: x %g y %g err %g > %g",
						 be[b]->name, specs[si], x[i],
						 y[i], err, bound * ref);
			}
		}
	free(x);
	free(y);
	free(enc);
}

static void test_decode_acc(void **state)
{
	const struct isle_codec_ops *ops = isle_codec_cpu_ops();
	static const char *const specs[] = {"none", "fp16", "bf16", "int8",
					    "topk:0.1"};
	enum { N = 999 };
	float x[N], base[N], a[N], b[N];
	unsigned char enc[N * 4 + 64];

	fill(x, N, 10);
	fill(base, N, 10);
	for (size_t si = 0; si < ISLE_ARRAY_SIZE(specs); si++) {
		struct isle_codec c = codec(specs[si]);

		ops->encode(&c, x, N, enc, NULL, NULL);
		ops->decode(&c, enc, N, a, NULL);
		for (size_t i = 0; i < N; i++)
			a[i] += base[i];
		memcpy(b, base, sizeof(b));
		ops->decode_acc(&c, enc, N, b, NULL);
		assert_memory_equal(a, b, sizeof(a));
	}
}

static int cmp_desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Top-k keeps exactly the k largest |x|, indices ascending. */
static void test_topk_select(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	static const size_t lens[] = {1, 10, 1000, 20000, 100003};

	for (size_t b = 0; b < 2; b++)
		for (size_t li = 0; li < ISLE_ARRAY_SIZE(lens); li++) {
			size_t n = lens[li];
			struct isle_codec c = codec("topk:0.01");
			size_t k = isle_codec_topk_k(&c, n);
			float *x = malloc(n * 4), *srt = malloc(n * 4);
			uint32_t *enc = malloc(isle_codec_encoded_size(&c, n));
			const float *vals;
			float kth;

			fill(x, n, 1);
			for (size_t i = 0; i < n; i++)
				srt[i] = fabsf(x[i]);
			qsort(srt, n, 4, cmp_desc);
			kth = srt[k - 1];
			assert_int_equal(
			    be[b]->encode(&c, x, n, enc, NULL, NULL), 0);
			assert_int_equal(enc[0], k);
			assert_int_equal(enc[1], n);
			vals = (const float *)(enc + 2 + k);
			for (size_t i = 0; i < k; i++) {
				assert_true(enc[2 + i] < n);
				if (i)
					assert_true(enc[2 + i] > enc[1 + i]);
				assert_true(fabsf(vals[i]) >= kth);
				assert_true(vals[i] == x[enc[2 + i]]);
			}
			free(x);
			free(srt);
			free(enc);
		}
}

/*
 * Sparse data, as gradients of embeddings are: mostly zeros, so the k-th
 * largest |x| is 0 and ties outnumber the candidate list; the large values
 * all sit after it. Every one of them must be kept, then zeros in index
 * order (both CPU backends, with and without a residual).
 */
static void test_topk_sparse_ties(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	static const size_t lens[] = {4097, 100003};

	for (size_t b = 0; b < 2; b++)
		for (size_t li = 0; li < ISLE_ARRAY_SIZE(lens); li++)
			for (int ef = 0; ef <= 1; ef++) {
				size_t n = lens[li], big = 0, zeros = 0;
				struct isle_codec c = codec("topk:0.3");
				size_t k = isle_codec_topk_k(&c, n);
				float *x = calloc(n, 4), *res = calloc(n, 4);
				uint32_t *enc =
				    malloc(isle_codec_encoded_size(&c, n));
				const float *vals;

				for (size_t i = n - 200; i < n; i += 2)
					x[i] = (float)(i % 13) + 1.0f;
				assert_int_equal(be[b]->encode(&c, x, n, enc,
							       ef ? res : NULL,
							       NULL),
						 0);
				assert_int_equal(enc[0], k);
				vals = (const float *)(enc + 2 + k);
				for (size_t i = 0; i < k; i++) {
					if (vals[i] != 0.0f)
						big++;
					else
						assert_int_equal(enc[2 + i],
								 zeros++);
				}
				assert_int_equal(big, 100);
				free(x);
				free(res);
				free(enc);
			}
}

/*
 * Top-k with a residual on a long vector (the sampled-threshold path): it
 * selects from x + residual, and decoded + new residual == x + old residual.
 */
static void test_topk_ef_large(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	enum { N = 200003 };
	struct isle_codec c = codec("topk:0.01");
	size_t k = isle_codec_topk_k(&c, N);
	float *x = malloc(N * 4), *r = malloc(N * 4), *v = malloc(N * 4);
	float *y = malloc(N * 4), *srt = malloc(N * 4);
	uint32_t *enc = malloc(isle_codec_encoded_size(&c, N));

	for (size_t b = 0; b < 2; b++) {
		float kth;

		fill(x, N, 1);
		fill(r, N, 3);
		for (size_t i = 0; i < N; i++) {
			v[i] = x[i] + r[i];
			srt[i] = fabsf(v[i]);
		}
		qsort(srt, N, 4, cmp_desc);
		kth = srt[k - 1];
		assert_int_equal(be[b]->encode(&c, x, N, enc, r, NULL), 0);
		assert_int_equal(enc[0], k);
		assert_int_equal(be[b]->decode(&c, enc, N, y, NULL), 0);
		for (size_t i = 0; i < N; i++) {
			assert_true(y[i] + r[i] == v[i]);
			assert_true(y[i] == 0 || fabsf(y[i]) >= kth);
		}
	}
	free(x);
	free(r);
	free(v);
	free(y);
	free(srt);
	free(enc);
}

/*
 * Error feedback: what is sent plus the new residual is exactly the input
 * plus the old residual, so nothing is lost, only delayed; without it the
 * dropped mass is gone.
 */
static void test_error_feedback(void **state)
{
	const struct isle_codec_ops *ops = isle_codec_cpu_ops();
	enum { N = 5000, STEPS = 200 };
	static const char *const specs[] = {"topk:0.01", "int8:64,ef"};
	float *x = malloc(N * 4), *res = calloc(N, 4), *y = malloc(N * 4);
	double *sent = calloc(N, sizeof(double)), *truth = calloc(N, 8);
	void *enc = malloc(N * 8 + 64);

	for (size_t si = 0; si < ISLE_ARRAY_SIZE(specs); si++) {
		struct isle_codec c = codec(specs[si]);

		memset(res, 0, N * 4);
		memset(sent, 0, N * 8);
		memset(truth, 0, N * 8);
		for (int t = 0; t < STEPS; t++) {
			float before[8];

			fill(x, N, 1);
			for (int i = 0; i < 8; i++)
				before[i] = x[i] + res[i];
			assert_int_equal(ops->encode(&c, x, N, enc, res, NULL),
					 0);
			assert_int_equal(ops->decode(&c, enc, N, y, NULL), 0);
			for (int i = 0; i < 8; i++) /* conservation per step */
				assert_true(fabsf(y[i] + res[i] - before[i]) <=
					    1e-6f * (1 + fabsf(before[i])));
			for (size_t i = 0; i < N; i++) {
				sent[i] += y[i];
				truth[i] += x[i];
			}
		}
		/* Sum of what was sent trails the truth by the residual only.
		 */
		for (size_t i = 0; i < N; i++)
			assert_true(fabs(sent[i] + res[i] - truth[i]) <
				    1e-3 * (1 + fabs(truth[i])));
	}
	free(x);
	free(res);
	free(y);
	free(sent);
	free(truth);
	free(enc);
}

/* Indices of the k largest |v|, ties in index order (topk's rule). */
static float *mom_key;

static int by_mag(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	float x = fabsf(mom_key[i]), y = fabsf(mom_key[j]);

	return x > y ? -1 : x < y ? 1 : (i > j) - (i < j);
}

/*
 * Momentum correction against a plain transcription of DGC's update
 * (u = m*u + x; v += u; send the k largest |v|; zero u and v there), step
 * by step, bit for bit, on both backends; small n (exact selection) and
 * large n (the sampled threshold).
 */
static void test_topk_momentum(void **state)
{
	const struct isle_codec_ops *be[2] = {isle_codec_scalar_ops(),
					      isle_codec_cpu_ops()};
	static const size_t ns[] = {1000, 70000};
	enum { STEPS = 30 };

	for (size_t b = 0; b < 2; b++)
		for (size_t ni = 0; ni < ISLE_ARRAY_SIZE(ns); ni++) {
			size_t n = ns[ni];
			struct isle_codec c = codec("topk:0.01,mom=0.9");
			size_t k = isle_codec_topk_k(&c, n);
			float *x = malloc(n * 4), *u = calloc(n, 4),
			      *v = calloc(n, 4), *ru = calloc(n, 4),
			      *rv = calloc(n, 4), *y = malloc(n * 4);
			uint32_t *ord = malloc(n * 4),
				 *hdr = malloc(n * 8 + 64);
			float m = 0.9f;

			assert_non_null(x && u && v && ru && rv && y && ord &&
					hdr);
			for (int t = 0; t < STEPS; t++) {
				fill(x, n, 1);
				for (size_t i = 0; i < n; i++) {
					ru[i] = m * ru[i] + x[i];
					rv[i] = rv[i] + ru[i];
					ord[i] = (uint32_t)i;
				}
				mom_key = rv;
				qsort(ord, n, sizeof(*ord), by_mag);
				assert_int_equal(
				    isle__topk_mom_encode(be[b], &c, x, n, hdr,
							  v, u),
				    0);
				assert_int_equal(hdr[0], k);
				assert_int_equal(
				    be[b]->decode(&c, hdr, n, y, NULL), 0);
				memset(x, 0, n * 4); /* x: the sent mask now */
				for (size_t j = 0; j < k; j++) {
					assert_true(y[ord[j]] == rv[ord[j]]);
					x[ord[j]] = 1;
					ru[ord[j]] = rv[ord[j]] = 0;
				}
				for (size_t i = 0; i < n; i++) {
					assert_true(u[i] == ru[i]);
					assert_true(v[i] == rv[i]);
					if (!x[i])
						assert_true(y[i] == 0);
				}
			}
			free(x);
			free(u);
			free(v);
			free(ru);
			free(rv);
			free(y);
			free(ord);
			free(hdr);
		}
}

/* Momentum correction refuses what it cannot do; non-finite input (at
 * least k NaN) drops momentum and residual together. */
static void test_topk_momentum_edges(void **state)
{
	const struct isle_codec_ops *ops = isle_codec_cpu_ops();
	struct isle_codec c = codec("topk:0.25,mom=0.5"), i8 = codec("int8");
	float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[8] = {0}, v[8] = {0};
	uint32_t enc[2 + 2 * 8];

	assert_int_equal(isle__topk_mom_encode(ops, &i8, x, 8, enc, v, u),
			 -EINVAL);
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, NULL, u),
			 -EINVAL);
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, NULL),
			 -EINVAL);
	/* k = 2: 8 and 7 go, the rest stays in u and v. */
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, u), 0);
	assert_int_equal(enc[0], 2);
	assert_true(u[7] == 0 && v[7] == 0 && u[6] == 0 && v[6] == 0);
	assert_true(u[5] == 6 && v[5] == 6);
	/* Next step: v = 15 at 5 (u 9) and 12.5 at 4 go; 3 keeps u = 6,
	 * v = 10 and 7, sent before, starts again at u = v = 8. */
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, u), 0);
	assert_true(enc[0] == 2 && enc[2] == 4 && enc[3] == 5);
	assert_true(u[5] == 0 && v[5] == 0 && u[4] == 0 && v[4] == 0);
	assert_true(u[3] == 6 && v[3] == 10 && u[7] == 8 && v[7] == 8);
	for (int i = 0; i < 8; i++)
		x[i] = i < 3 ? NAN : 1;
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, u), 0);
	assert_true(enc[0] & ISLE_TOPK_NONFINITE);
	for (int i = 0; i < 8; i++)
		assert_true(u[i] == 0 && v[i] == 0);
}

/* mask=stale: an element sent at every call keeps its momentum (at ratio 1
 * the codec is plain momentum SGD); one held back loses it when sent. */
static void test_topk_mask_stale(void **state)
{
	const struct isle_codec_ops *ops = isle_codec_cpu_ops();
	struct isle_codec all = codec("topk:1,mom=0.5,mask=stale");
	struct isle_codec c = codec("topk:0.25,mom=0.5,mask=stale");
	float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[8] = {0}, v[8] = {0};
	float out[8], want[8] = {0};
	uint32_t enc[2 + 2 * 8];

	(void)state;
	for (int t = 0; t < 3; t++) {
		assert_int_equal(
		    isle__topk_mom_encode(ops, &all, x, 8, enc, v, u), 0);
		assert_int_equal(ops->decode(&all, enc, 8, out, NULL), 0);
		for (int i = 0; i < 8; i++) {
			want[i] = 0.5f * want[i] + x[i];
			assert_true(out[i] == want[i] && u[i] == want[i]);
			assert_true(v[i] == 0);
		}
	}
	memset(u, 0, sizeof(u));
	/* k = 2: 8 and 7 go fresh and keep u; the rest stays in u and v. */
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, u), 0);
	assert_true(enc[0] == 2 && u[7] == 8 && u[6] == 7);
	assert_true(v[7] == 0 && v[6] == 0 && u[5] == 6 && v[5] == 6);
	/* v = 15 at 5 and 12.5 at 4 go late: their u is cleared; 7 (v = u =
	 * 12) waits with its momentum. */
	assert_int_equal(isle__topk_mom_encode(ops, &c, x, 8, enc, v, u), 0);
	assert_true(enc[0] == 2 && enc[2] == 4 && enc[3] == 5);
	assert_true(u[5] == 0 && v[5] == 0 && u[4] == 0 && v[4] == 0);
	assert_true(u[7] == 12 && v[7] == 12 && u[6] == 10.5f);
}

/* Warm-up: a quarter at first, 4-fold less every warm/4 calls, never below
 * the ratio; the ratio itself once warm calls are done. */
static void test_topk_warm(void **state)
{
	struct isle_codec c = codec("topk:0.01,mom=0.9,warm=100");
	struct isle_codec w3 = codec("topk:0.001,warm=3");
	struct isle_codec big = codec("topk:0.5,warm=8");
	struct isle_codec off = codec("topk:0.01");

	(void)state;
	for (uint64_t t = 0; t < 200; t++) {
		double want = t < 25   ? 0.25
			      : t < 50 ? 0.0625
			      : t < 75 ? 0.015625
				       : 0.01;

		assert_true(isle__topk_ratio_at(&c, t) == want);
		assert_true(isle__topk_ratio_at(&off, t) == 0.01);
		assert_true(isle__topk_ratio_at(&big, t) == 0.5);
	}
	assert_true(isle__topk_ratio_at(&w3, 0) == 0.25);
	assert_true(isle__topk_ratio_at(&w3, 1) == 0.0625);
	assert_true(isle__topk_ratio_at(&w3, 2) == 0.015625);
	assert_true(isle__topk_ratio_at(&w3, 3) == 0.001);
	assert_true(isle__topk_ratio_at(&w3, UINT64_MAX) == 0.001);
}

/* NaN, +inf, -inf or finite: the class plain IEEE addition gives. */
static int fclass(float v)
{
	return isnan(v) ? 3 : isinf(v) ? (v > 0 ? 1 : 2) : 0;
}

static const char *const nonfinite_specs[] = {
    "none", "fp16", "bf16", "int8", "int8:8", "topk:0.05", "topk:0.3"};

/*
 * Non-finite values through every codec, both backends: one rank's data
 * decodes to the same NaN/+inf/-inf, and two ranks' encodings summed with
 * decode_acc are non-finite exactly where the plain fp32 sum is, with the
 * same class (NaN, +inf or -inf); all finite elements stay finite.
 */
static void test_nonfinite(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	enum { N = 3001 };
	float *x = malloc(N * 4), *z = malloc(N * 4), *y = malloc(N * 4);
	float *sum = malloc(N * 4);
	unsigned char *ex = malloc(N * 8 + 64), *ez = malloc(N * 8 + 64);

	fill(x, N, 1e3);
	fill(z, N, 1e3);
	/* A few of each class, some colliding between the two ranks. */
	for (size_t i = 5; i < N; i += 97) {
		x[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
		if (i % 2)
			z[i] = i % 5 < 2 ? -INFINITY : INFINITY;
	}
	x[1] = -NAN;
	z[2] = NAN;
	for (size_t b = 0; b < 2; b++)
		for (size_t si = 0; si < ISLE_ARRAY_SIZE(nonfinite_specs);
		     si++) {
			struct isle_codec c = codec(nonfinite_specs[si]);

			assert_int_equal(
			    be[b]->encode(&c, x, N, ex, NULL, NULL), 0);
			assert_int_equal(
			    be[b]->encode(&c, z, N, ez, NULL, NULL), 0);
			assert_int_equal(be[b]->decode(&c, ex, N, y, NULL), 0);
			for (size_t i = 0; i < N; i++)
				if (fclass(y[i]) != fclass(x[i]))
					fail_msg("%s %s: x[%zu] = %g decodes "
						 "as %g",
						 be[b]->name,
						 nonfinite_specs[si], i, x[i],
						 y[i]);
			assert_int_equal(be[b]->decode(&c, ex, N, sum, NULL),
					 0);
			assert_int_equal(
			    be[b]->decode_acc(&c, ez, N, sum, NULL), 0);
			for (size_t i = 0; i < N; i++)
				if (fclass(sum[i]) != fclass(x[i] + z[i]))
					fail_msg("%s %s: %g + %g sums to %g",
						 be[b]->name,
						 nonfinite_specs[si], x[i],
						 z[i], sum[i]);
		}
	free(x);
	free(z);
	free(y);
	free(sum);
	free(ex);
	free(ez);
}

/*
 * Top-k on data that is all NaN or all infinite: more non-finite values
 * than k, and no read past the chunk. The chunk decodes non-finite
 * everywhere (NaN exactly), and the residual does not keep them.
 */
static void test_topk_all_nonfinite(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	static const size_t lens[] = {1, 100, 20000, 100003};

	for (size_t b = 0; b < 2; b++)
		for (size_t li = 0; li < ISLE_ARRAY_SIZE(lens); li++)
			for (int kind = 0; kind < 3; kind++) {
				size_t n = lens[li];
				struct isle_codec c = codec("topk:0.01");
				size_t k = isle_codec_topk_k(&c, n);
				float *x = malloc(n * 4), *y = malloc(n * 4);
				float *res = calloc(n, 4);
				uint32_t *enc =
				    malloc(isle_codec_encoded_size(&c, n));

				for (size_t i = 0; i < n; i++)
					x[i] = kind == 0   ? NAN
					       : kind == 1 ? -INFINITY
					       : i % 7	   ? NAN
							   : INFINITY;
				assert_int_equal(
				    be[b]->encode(&c, x, n, enc, NULL, NULL),
				    0);
				assert_int_equal(enc[0],
						 k | ISLE_TOPK_NONFINITE);
				assert_int_equal(
				    be[b]->decode(&c, enc, n, y, NULL), 0);
				for (size_t i = 0; i < n; i++) {
					assert_false(isfinite(y[i]));
					if (isnan(x[i]))
						assert_true(isnan(y[i]));
				}
				/* the first k infinities are exact */
				for (size_t i = 0, seen = 0; i < n; i++)
					if (isinf(x[i]) && seen++ < k)
						assert_true(y[i] == x[i]);
				assert_int_equal(
				    be[b]->encode(&c, x, n, enc, res, NULL), 0);
				for (size_t i = 0; i < n; i++)
					assert_true(res[i] == 0.0f);
				free(x);
				free(y);
				free(res);
				free(enc);
			}
}

/*
 * Error feedback with a non-finite step: the value goes out as it is and
 * the residual stays finite, so the following steps are not poisoned.
 */
static void test_nonfinite_residual(void **state)
{
	const struct isle_codec_ops *be[] = {isle_codec_scalar_ops(),
					     isle_codec_cpu_ops()};
	enum { N = 1000 };
	float *x = malloc(N * 4), *y = malloc(N * 4), *res = malloc(N * 4);
	unsigned char *enc = malloc(N * 8 + 64);

	for (size_t b = 0; b < 2; b++)
		for (size_t si = 0; si < ISLE_ARRAY_SIZE(nonfinite_specs);
		     si++) {
			char spec[32];
			struct isle_codec c;

			snprintf(spec, sizeof(spec), "%s%s",
				 nonfinite_specs[si],
				 strncmp(nonfinite_specs[si], "topk", 4) ? ",ef"
									 : "");
			c = codec(spec);
			memset(res, 0, N * 4);
			fill(x, N, 1);
			x[3] = NAN;
			x[500] = INFINITY;
			x[999] = -INFINITY;
			assert_int_equal(
			    be[b]->encode(&c, x, N, enc, res, NULL), 0);
			assert_int_equal(be[b]->decode(&c, enc, N, y, NULL), 0);
			assert_true(isnan(y[3]));
			assert_true(y[500] == INFINITY && y[999] == -INFINITY);
			for (size_t i = 0; i < N; i++)
				if (!isfinite(res[i]))
					fail_msg("%s %s: residual[%zu] = %g",
						 be[b]->name, spec, i, res[i]);
			fill(x, N, 1); /* a finite step decodes finite */
			assert_int_equal(
			    be[b]->encode(&c, x, N, enc, res, NULL), 0);
			assert_int_equal(be[b]->decode(&c, enc, N, y, NULL), 0);
			for (size_t i = 0; i < N; i++)
				assert_true(isfinite(y[i]) && isfinite(res[i]));
		}
	free(x);
	free(y);
	free(res);
	free(enc);
}

#ifdef HAVE_MPI
/* Residuals are kept per key and reset when the size changes. */
static void test_residual_store(void **state)
{
	struct isle__chan ch;
	float *r1, *r2;

	memset(&ch, 0, sizeof(ch));
	r1 = isle__residual(&ch, 42, 0, 100);
	assert_non_null(r1);
	r1[5] = 3.0f;
	assert_ptr_equal(isle__residual(&ch, 42, 0, 100), r1);
	assert_true(r1[5] == 3.0f);
	r2 = isle__residual(&ch, 42, 1, 100); /* other stage: other buffer */
	assert_true(r2 != r1 && r2[5] == 0.0f);
	r1 = isle__residual(&ch, 42, 0, 101); /* size changed: zeroed */
	for (int i = 0; i < 101; i++)
		assert_true(r1[i] == 0.0f);
	for (uint64_t k = 0; k < 1000; k++) /* bounded (LRU) */
		assert_non_null(isle__residual(&ch, 1000 + k, 0, 4));
	for (struct isle__resid *e = ch.resid, *n; e; e = n) {
		n = e->next;
		free(e->r);
		free(e);
	}
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_backends_identical),
	    cmocka_unit_test(test_fp16_all_halves),
	    cmocka_unit_test(test_error_bounds),
	    cmocka_unit_test(test_decode_acc),
	    cmocka_unit_test(test_topk_select),
	    cmocka_unit_test(test_topk_sparse_ties),
	    cmocka_unit_test(test_topk_ef_large),
	    cmocka_unit_test(test_error_feedback),
	    cmocka_unit_test(test_topk_momentum),
	    cmocka_unit_test(test_topk_momentum_edges),
	    cmocka_unit_test(test_topk_warm),
	    cmocka_unit_test(test_topk_mask_stale),
	    cmocka_unit_test(test_nonfinite),
	    cmocka_unit_test(test_topk_all_nonfinite),
	    cmocka_unit_test(test_nonfinite_residual),
#ifdef HAVE_MPI
	    cmocka_unit_test(test_residual_store),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
