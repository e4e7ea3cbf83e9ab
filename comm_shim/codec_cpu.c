/*
 * codec_cpu.c - CPU codec kernels: a portable scalar backend and an AVX2+F16C
 * backend, picked at run time. Both produce bit-identical wire data (same
 * rounding: round to nearest even everywhere), which the unit tests check.
 *
 * One file of about 1,000 lines on purpose: the two backends share the
 * inline conversions, the int8 block rules and the top-k selection, and
 * must round alike; side by side they stay static and inlined, and a
 * change to one kernel is read next to its twin.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cpuid.h>
#include <immintrin.h>

#include "comm_priv.h"

#define FP16_MAX 65504.0f

/* ------------------------------------------------------ scalar helpers */

static inline uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/*
 * fp32 -> fp16, round to nearest even; finite overflow saturates, but an
 * infinity stays infinite: mixed precision's overflow check must see it.
 */
static uint16_t f32_to_f16(float f)
{
	uint32_t x = f2u(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
	uint32_t r, rem;

	if (ax > 0x7f800000) /* NaN stays NaN (quiet) */
		return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
	if (ax == 0x7f800000)
		return (uint16_t)(sign | 0x7c00);
	if (ax > 0x477fe000) /* finite > 65504: saturate */
		return (uint16_t)(sign | 0x7bff);
	if (ax < 0x38800000) { /* below 2^-14: subnormal half or zero */
		uint32_t m, half;
		int shift;

		if (ax <= 0x33000000) /* <= 2^-25 rounds to zero */
			return (uint16_t)sign;
		m = (ax & 0x7fffff) | 0x800000;
		shift = 126 - (int)(ax >> 23);
		r = m >> shift;
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	r = (ax - 0x38000000) >> 13;
	rem = ax & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
		r++;
	return (uint16_t)(sign | r);
}

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f;
	uint32_t m = h & 0x3ff;

	if (e == 0) {
		float v = (float)m * 0x1p-24f;

		return sign ? -v : v;
	}
	if (e == 31)
		return u2f(sign | 0x7f800000 | (m << 13));
	return u2f(sign | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t f32_to_bf16(float f)
{
	uint32_t x = f2u(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static inline float bf16_to_f32(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

static void add_f32_scalar(float *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

void isle__cpu_add_f64(double *dst, const double *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

/* ------------------------------------------------------------ int8 */

static inline size_t nblocks(const struct isle_codec *c, size_t n)
{
	return (n + c->block - 1) / c->block;
}

/*
 * A block holding NaN or an infinity: its finite values use 126 steps of
 * m / 126 (m = max finite |x|), the stored scale is negated to mark the
 * block, and the three free codes carry the non-finite values exactly.
 */
static void int8_block_special(const float *x, size_t n, float *scale,
			       int8_t *q)
{
	float m = 0, inv;

	for (size_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);

		if (a <= FLT_MAX && a > m)
			m = a;
	}
	inv = m == 0 ? 0.0f : ISLE_INT8_SPECIAL_STEPS / m;
	/* Finite values too small for a float step (see int8_tiny) are 0. */
	if (!(inv <= FLT_MAX))
		inv = 0.0f;
	*scale = -(m / ISLE_INT8_SPECIAL_STEPS);
	for (size_t i = 0; i < n; i++) {
		float v;

		if (isnan(x[i])) {
			q[i] = ISLE_INT8_Q_NAN;
			continue;
		}
		if (isinf(x[i])) {
			q[i] = x[i] > 0 ? ISLE_INT8_Q_PINF : ISLE_INT8_Q_NINF;
			continue;
		}
		v = nearbyintf(x[i] * inv);
		v = v > ISLE_INT8_SPECIAL_STEPS	   ? ISLE_INT8_SPECIAL_STEPS
		    : v < -ISLE_INT8_SPECIAL_STEPS ? -ISLE_INT8_SPECIAL_STEPS
						   : v;
		q[i] = (int8_t)v;
	}
}

/* One value of a block marked by a negative scale (int8_block_special). */
static inline float int8_special_value(int8_t q, float scale)
{
	switch (q) {
	case ISLE_INT8_Q_NAN:
		return NAN;
	case ISLE_INT8_Q_PINF:
		return INFINITY;
	case ISLE_INT8_Q_NINF:
		return -INFINITY;
	default:
		return (float)q * -scale;
	}
}

/*
 * A block whose largest |x| is below 127 / FLT_MAX (~3.7e-37, far below any
 * gradient) has no float step (127 / max overflows, and x * inf would be
 * NaN): it encodes as zeros, in every backend alike.
 */
static inline int int8_tiny(float m)
{
	return !(127.0f / m <= FLT_MAX);
}

/* q = rne(x * 127 / max), clamped; scale = max / 127. */
static void int8_block_scalar(const float *x, size_t n, float *scale, int8_t *q)
{
	float m = 0, inv;
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);

		bad |= !(a <= FLT_MAX);
		m = a > m ? a : m;
	}
	if (bad) {
		int8_block_special(x, n, scale, q);
		return;
	}
	if (int8_tiny(m)) {
		*scale = 0.0f;
		memset(q, 0, n);
		return;
	}
	inv = 127.0f / m;
	*scale = m / 127.0f;
	for (size_t i = 0; i < n; i++) {
		float v = nearbyintf(x[i] * inv);

		v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
		q[i] = (int8_t)v;
	}
}

/* ------------------------------------------------------------ top-k */

/*
 * Selection key of a value: |x|, with NaN ranked like an infinity so that
 * non-finite values are always selected (and NaN never meets a comparison).
 */
static inline float mag(float x)
{
	float a = fabsf(x);

	return a != a ? INFINITY : a;
}

/* k-th largest (0-based) of a[0..n), reordering a; k < n, no NaN. */
static float kth_largest(float *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		float pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (a[i] > pivot)
				i++;
			while (a[j] < pivot)
				j--;
			if (i <= j) {
				float t = a[i];

				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return a[k];
	}
	return a[k];
}

/*
 * Per-thread scratch for top-k, grown on demand and kept: fresh mallocs of
 * this size are mmaps, whose page faults cost more than the selection.
 */
static __thread struct {
	void *p;
	size_t len;
} tls_scratch[3];

static void *scratch(int slot, size_t bytes)
{
	if (tls_scratch[slot].len < bytes) {
		void *p = realloc(tls_scratch[slot].p, bytes);

		if (!p)
			return NULL;
		tls_scratch[slot].p = p;
		tls_scratch[slot].len = bytes;
	}
	return tls_scratch[slot].p;
}

/*
 * Indices (ascending) of mag(v) >= t and their values, at most cap (returns
 * the full count). With add, first v[i] += add[i]: error feedback folded
 * into the same pass. The values come along so that the selection after
 * never gathers from v again (scattered reads over the whole buffer).
 */
typedef size_t (*scan_fn)(float *v, const float *add, size_t n, float t,
			  uint32_t *idx, float *val, size_t cap);

static size_t scan_ge_scalar(float *v, const float *add, size_t n, float t,
			     uint32_t *idx, float *val, size_t cap)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++) {
		if (add)
			v[i] += add[i];
		if (!(fabsf(v[i]) < t)) { /* NaN passes */
			if (c < cap) {
				idx[c] = (uint32_t)i;
				val[c] = v[i];
			}
			c++;
		}
	}
	return c;
}

/*
 * At least k non-finite values: the chunk is marked (ISLE_TOPK_NONFINITE)
 * and decodes as NaN outside the k listed entries, which are the
 * infinities first, then NaNs, each in index order. Sums stay non-finite
 * wherever plain MPI would give a non-finite value; NaN stays exact.
 */
static void topk_encode_nonfinite(const float *v, size_t n, size_t k,
				  uint32_t *hdr)
{
	uint32_t *idx = hdr + 2;
	float *vals;
	size_t ninf = 0, inf_q, nan_q, out = 0;

	for (size_t i = 0; i < n; i++)
		ninf += isinf(v[i]) != 0;
	inf_q = ninf < k ? ninf : k;
	nan_q = k - inf_q;
	for (size_t i = 0; i < n && out < k; i++) {
		if (isinf(v[i]) && inf_q) {
			inf_q--;
		} else if (isnan(v[i]) && nan_q) {
			nan_q--;
		} else {
			continue;
		}
		idx[out++] = (uint32_t)i;
	}
	vals = (float *)(idx + out);
	for (size_t i = 0; i < out; i++)
		vals[i] = v[idx[i]];
	hdr[0] = (uint32_t)out | ISLE_TOPK_NONFINITE;
}

/*
 * The wire format of the k largest |v| given t, the k-th largest (finite):
 * every element above t and ties at t in index order up to k, in index
 * order. One pass over v, for when the candidates do not fit.
 */
static void topk_select_all(const float *v, size_t n, size_t k, float t,
			    uint32_t *hdr)
{
	uint32_t *idx = hdr + 2;
	size_t above = 0, ties, out = 0;
	float *vals;

	for (size_t i = 0; i < n; i++)
		above += mag(v[i]) > t;
	ties = k - above;
	for (size_t i = 0; i < n && out < k; i++) {
		float a = mag(v[i]);

		if (a > t || (a == t && ties && ties--))
			idx[out++] = (uint32_t)i;
	}
	vals = (float *)(idx + out);
	for (size_t i = 0; i < out; i++)
		vals[i] = v[idx[i]];
	hdr[0] = (uint32_t)out;
}

/*
 * Top-k of |v| into the wire format. Threshold from a sample, then
 * the exact k-th value among the candidates; ties at the threshold are
 * taken in index order. Falls back to an exact selection over all of v if
 * the sample's guess admits too few or too many candidates.
 */
static int topk_encode(const struct isle_codec *c, float *v, const float *add,
		       size_t n, void *dst, scan_fn scan)
{
	uint32_t *hdr = dst, *idx = hdr + 2, *cand;
	size_t k = isle_codec_topk_k(c, n), ns, cap, nc = 0, out = 0, ties;
	float *abs, *cval, *vals, t = 0;

	hdr[0] = 0;
	hdr[1] = (uint32_t)n;
	if (n == 0)
		return 0;
	if (n > UINT32_MAX)
		return -EINVAL;
	cap = 2 * k + 1024 < n ? 2 * k + 1024 : n;
	cand = scratch(0, cap * sizeof(*cand));
	abs = scratch(1, (cap > 16384 ? cap : 16384) * sizeof(*abs));
	cval = scratch(2, cap * sizeof(*cval));
	if (!cand || !abs || !cval)
		return -ENOMEM;

	ns = n < 16384 ? n : 16384;
	if (ns < n) {
		/*
		 * 256 evenly spaced runs of 64 contiguous values: whole cache
		 * lines and 256 pages touched, not one miss per sample.
		 */
		size_t stride = n / 256, r = (size_t)((double)k * 1.3 * ns / n);

		for (size_t b = 0; b < 256; b++)
			for (size_t j = 0; j < 64; j++) {
				size_t i = b * stride + j;

				abs[b * 64 + j] =
				    mag(v[i] + (add ? add[i] : 0.0f));
			}
		if (r < ns) {
			t = kth_largest(abs, ns, r);
			nc = scan(v, add, n, t, cand, cval, cap);
			add = NULL; /* v holds the values from here on */
		}
	}
	if (add)
		isle__cpu_add_f32(v, add, n);
	if (nc < k || nc > cap) {
		/* Exact: threshold over all elements. */
		float *all = malloc(n * sizeof(*all));

		if (!all)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			all[i] = mag(v[i]);
		t = kth_largest(all, n, k - 1);
		free(all);
		nc = scan(v, NULL, n, t, cand, cval, cap);
		if (nc > cap) {
			/* More ties at t than cand holds (sparse data: t is
			 * 0): a candidate list cut at cap could miss larger
			 * values after it, so select over all of v. */
			if (isinf(t))
				topk_encode_nonfinite(v, n, k, hdr);
			else
				topk_select_all(v, n, k, t, hdr);
			return 0;
		}
	}
	if (nc < k) /* cannot happen: mag() orders every value */
		return -EIO;
	for (size_t i = 0; i < nc; i++)
		abs[i] = mag(cval[i]);
	t = kth_largest(abs, nc, k - 1);
	if (isinf(t)) {
		topk_encode_nonfinite(v, n, k, hdr);
		return 0;
	}

	/*
	 * Strictly above t, plus ties at t in index order up to k, compacted
	 * in place (cand/cval keep their order), then written out.
	 */
	ties = k;
	for (size_t i = 0; i < nc; i++)
		ties -= mag(cval[i]) > t;
	for (size_t i = 0; i < nc && out < k; i++) {
		float a = mag(cval[i]);

		if (a > t || (a == t && ties && ties--)) {
			cand[out] = cand[i];
			cval[out++] = cval[i];
		}
	}
	memcpy(idx, cand, out * sizeof(*idx));
	/* Values follow the indices actually written. */
	vals = (float *)(idx + out);
	memcpy(vals, cval, out * sizeof(*vals));
	hdr[0] = (uint32_t)out;
	return 0;
}

static int topk_check(const void *src, size_t n, const struct isle_codec *c,
		      const uint32_t **idx, const float **vals, size_t *cnt)
{
	const uint32_t *hdr = src;

	*cnt = hdr[0] & ~ISLE_TOPK_NONFINITE;
	if (hdr[1] != n || *cnt > (n ? isle_codec_topk_k(c, n) : 0))
		return -EPROTO;
	*idx = hdr + 2;
	*vals = (const float *)(hdr + 2 + *cnt);
	for (size_t i = 0; i < *cnt; i++)
		if ((*idx)[i] >= n || (i && (*idx)[i] <= (*idx)[i - 1]))
			return -EPROTO;
	return 0;
}

static int topk_decode(const struct isle_codec *c, const void *src, size_t n,
		       float *dst, int acc)
{
	const uint32_t *idx;
	const float *vals;
	size_t cnt;
	int rc = topk_check(src, n, c, &idx, &vals, &cnt);

	if (rc)
		return rc;
	if (((const uint32_t *)src)[0] & ISLE_TOPK_NONFINITE) {
		/* Unlisted entries are NaN (topk_encode_nonfinite). */
		for (size_t i = 0, j = 0; i < n; i++) {
			float v = NAN;

			if (j < cnt && idx[j] == i)
				v = vals[j++];
			dst[i] = acc ? dst[i] + v : v;
		}
		return 0;
	}
	if (!acc)
		memset(dst, 0, n * sizeof(*dst));
	for (size_t i = 0; i < cnt; i++)
		dst[idx[i]] += vals[i];
	return 0;
}

/* -------------------------------------------------- error feedback */

typedef int (*enc_fn)(const struct isle_codec *c, const float *src, size_t n,
		      void *dst, float *residual, void *stream);
typedef int (*dec_fn)(const struct isle_codec *c, const void *src, size_t n,
		      float *dst, void *stream);

/*
 * residual := src + residual; encode it; residual -= decode(encoded).
 * For top-k the last step is "zero the kept entries" (exact, cheaper).
 * Non-finite values went out as they are: their residual is 0, so one bad
 * step does not poison the residual of every later step.
 */
static int encode_ef(const struct isle_codec *c, const float *src, size_t n,
		     void *dst, float *res, enc_fn enc, dec_fn acc,
		     scan_fn scan)
{
	int rc;

	if (c->kind == ISLE_CODEC_TOPK) {
		const uint32_t *hdr = dst, *idx = hdr + 2;

		rc = topk_encode(c, res, src, n, dst, scan);
		if (!rc && (hdr[0] & ISLE_TOPK_NONFINITE))
			memset(res, 0, n * sizeof(*res));
		for (size_t i = 0; !rc && i < (hdr[0] & ~ISLE_TOPK_NONFINITE);
		     i++)
			res[idx[i]] = 0;
		return rc;
	}
	isle__cpu_add_f32(res, src, n);
	rc = enc(c, res, n, dst, NULL, NULL);
	if (rc)
		return rc;
	/* res - dec == -(-res + dec), exactly, without a temporary. */
	for (size_t i = 0; i < n; i++)
		res[i] = -res[i];
	rc = acc(c, dst, n, res, NULL);
	/* A zero residual is +0.0 whatever the signs (-(-v + v) is -0.0),
	 * as on the GPU: the backends agree bit for bit. */
	for (size_t i = 0; i < n; i++) {
		float r = -res[i];

		res[i] = isfinite(r) && r != 0.0f ? r : 0.0f;
	}
	return rc;
}

/* ----------------------------------------------------- scalar kernels */

static void fp16_enc_scalar(const float *src, size_t n, uint16_t *h)
{
	for (size_t i = 0; i < n; i++)
		h[i] = f32_to_f16(src[i]);
}

static void bf16_enc_scalar(const float *src, size_t n, uint16_t *h)
{
	for (size_t i = 0; i < n; i++)
		h[i] = f32_to_bf16(src[i]);
}

static void fp16_dec_scalar(const uint16_t *h, size_t n, float *dst, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float v = f16_to_f32(h[i]);

		dst[i] = acc ? dst[i] + v : v;
	}
}

static void bf16_dec_scalar(const uint16_t *h, size_t n, float *dst, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float v = bf16_to_f32(h[i]);

		dst[i] = acc ? dst[i] + v : v;
	}
}

static void int8_dec_scalar(const struct isle_codec *c, const void *src,
			    size_t n, float *dst, int acc)
{
	size_t nb = nblocks(c, n);
	const float *scales = src;
	const int8_t *q = (const int8_t *)(scales + nb);

	for (size_t i = 0; i < n; i++) {
		float s = scales[i / c->block];
		float v =
		    signbit(s) ? int8_special_value(q[i], s) : (float)q[i] * s;

		dst[i] = acc ? dst[i] + v : v;
	}
}

/* ------------------------------------------------------- AVX2 backend */

#define AVX2 __attribute__((target("avx2,f16c")))

AVX2 static inline __m256 avx_abs(__m256 x)
{
	return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

AVX2 static void fp16_enc_avx2(const float *src, size_t n, uint16_t *h)
{
	const __m256 lo = _mm256_set1_ps(-FP16_MAX),
		     hi = _mm256_set1_ps(FP16_MAX);

	const __m256 inf = _mm256_set1_ps(INFINITY);
	size_t i = 0;

	/*
	 * max/min return the second operand on NaN: NaN passes through.
	 * Infinities are put back after the clamp.
	 */
	for (; i + 8 <= n; i += 8) {
		__m256 x0 = _mm256_loadu_ps(src + i), x;

		x = _mm256_min_ps(hi, _mm256_max_ps(lo, x0));
		x = _mm256_blendv_ps(
		    x, x0, _mm256_cmp_ps(avx_abs(x0), inf, _CMP_EQ_OQ));
		_mm_storeu_si128((__m128i *)(h + i),
				 _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
	}
	for (; i < n; i++)
		h[i] = f32_to_f16(src[i]);
}

AVX2 static void fp16_dec_avx2(const uint16_t *h, size_t n, float *dst, int acc)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v =
		    _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i)));

		if (acc)
			v = _mm256_add_ps(_mm256_loadu_ps(dst + i), v);
		_mm256_storeu_ps(dst + i, v);
	}
	for (; i < n; i++)
		dst[i] = acc ? dst[i] + f16_to_f32(h[i]) : f16_to_f32(h[i]);
}

AVX2 static void bf16_enc_avx2(const float *src, size_t n, uint16_t *h)
{
	const __m256i one = _mm256_set1_epi32(1),
		      bias = _mm256_set1_epi32(0x7fff);
	const __m256i absm = _mm256_set1_epi32(0x7fffffff);
	const __m256i inf = _mm256_set1_epi32(0x7f800000);
	const __m256i qbit = _mm256_set1_epi32(0x400000);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(src + i));
		__m256i r = _mm256_add_epi32(
		    x,
		    _mm256_add_epi32(
			bias, _mm256_and_si256(_mm256_srli_epi32(x, 16), one)));
		__m256i nan =
		    _mm256_cmpgt_epi32(_mm256_and_si256(x, absm), inf);

		r = _mm256_blendv_epi8(r, _mm256_or_si256(x, qbit), nan);
		r = _mm256_srli_epi32(r, 16);
		/* pack 8 x u32 (< 65536) to u16, fixing packus' lane order */
		r = _mm256_packus_epi32(r, r);
		r = _mm256_permute4x64_epi64(r, 0x08);
		_mm_storeu_si128((__m128i *)(h + i), _mm256_castsi256_si128(r));
	}
	for (; i < n; i++)
		h[i] = f32_to_bf16(src[i]);
}

AVX2 static void bf16_dec_avx2(const uint16_t *h, size_t n, float *dst, int acc)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i w = _mm256_cvtepu16_epi32(
		    _mm_loadu_si128((const __m128i *)(h + i)));
		__m256 v = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));

		if (acc)
			v = _mm256_add_ps(_mm256_loadu_ps(dst + i), v);
		_mm256_storeu_ps(dst + i, v);
	}
	for (; i < n; i++)
		dst[i] = acc ? dst[i] + bf16_to_f32(h[i]) : bf16_to_f32(h[i]);
}

AVX2 static void int8_block_avx2(const float *x, size_t n, float *scale,
				 int8_t *q)
{
	__m256 m8 = _mm256_setzero_ps(), bad8 = _mm256_setzero_ps();
	const __m256 big = _mm256_set1_ps(FLT_MAX);
	float m = 0, inv;
	int bad = 0;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 a = avx_abs(_mm256_loadu_ps(x + i));

		/* !(a <= max): NaN and inf */
		bad8 = _mm256_or_ps(bad8, _mm256_cmp_ps(a, big, _CMP_NLE_UQ));
		m8 = _mm256_max_ps(m8, a);
	}
	{
		float t[8];

		_mm256_storeu_ps(t, m8);
		for (int j = 0; j < 8; j++)
			m = t[j] > m ? t[j] : m;
		bad = _mm256_movemask_ps(bad8) != 0;
	}
	for (; i < n; i++) {
		float a = fabsf(x[i]);

		bad |= !(a <= FLT_MAX);
		m = a > m ? a : m;
	}
	if (bad) {
		int8_block_special(x, n, scale, q);
		return;
	}
	if (int8_tiny(m)) {
		*scale = 0.0f;
		memset(q, 0, n);
		return;
	}
	inv = 127.0f / m;
	*scale = m / 127.0f;
	{
		const __m256 vinv = _mm256_set1_ps(inv);
		const __m256 hi = _mm256_set1_ps(127.0f),
			     lo = _mm256_set1_ps(-127.0f);

		for (i = 0; i + 8 <= n; i += 8) {
			__m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
			__m256i w;
			__m128i p;

			v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
			w = _mm256_cvtps_epi32(v); /* MXCSR: nearest even */
			p = _mm_packs_epi32(_mm256_castsi256_si128(w),
					    _mm256_extracti128_si256(w, 1));
			p = _mm_packs_epi16(p, p);
			_mm_storel_epi64((__m128i *)(q + i), p);
		}
		for (; i < n; i++) {
			float v = nearbyintf(x[i] * inv);

			v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
			q[i] = (int8_t)v;
		}
	}
}

AVX2 static void int8_dec_avx2(const struct isle_codec *c, const void *src,
			       size_t n, float *dst, int acc)
{
	size_t nb = nblocks(c, n);
	const float *scales = src;
	const int8_t *q = (const int8_t *)(scales + nb);

	for (size_t b = 0; b < nb; b++) {
		size_t off = b * c->block, i = off;
		size_t end = n - off < c->block ? n : off + c->block;
		__m256 s = _mm256_set1_ps(scales[b]);

		if (signbit(scales[b])) { /* non-finite values: rare */
			for (; i < end; i++) {
				float v = int8_special_value(q[i], scales[b]);

				dst[i] = acc ? dst[i] + v : v;
			}
			continue;
		}
		for (; i + 8 <= end; i += 8) {
			__m256i w = _mm256_cvtepi8_epi32(
			    _mm_loadl_epi64((const __m128i *)(q + i)));
			__m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(w), s);

			if (acc)
				v = _mm256_add_ps(_mm256_loadu_ps(dst + i), v);
			_mm256_storeu_ps(dst + i, v);
		}
		for (; i < end; i++) {
			float v = (float)q[i] * scales[b];

			dst[i] = acc ? dst[i] + v : v;
		}
	}
}

AVX2 static size_t scan_ge_avx2(float *v, const float *add, size_t n, float t,
				uint32_t *idx, float *val, size_t cap)
{
	const __m256 vt = _mm256_set1_ps(t);
	size_t c = 0, i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(v + i);
		unsigned m;

		if (add) {
			x = _mm256_add_ps(x, _mm256_loadu_ps(add + i));
			_mm256_storeu_ps(v + i, x);
		}
		/* not less than: NaN passes, as in the scalar scan */
		m = (unsigned)_mm256_movemask_ps(
		    _mm256_cmp_ps(avx_abs(x), vt, _CMP_NLT_UQ));
		while (m) {
			unsigned j = (unsigned)__builtin_ctz(m);

			if (c < cap) {
				idx[c] = (uint32_t)(i + j);
				val[c] = v[i + j];
			}
			c++;
			m &= m - 1;
		}
	}
	for (; i < n; i++) {
		if (add)
			v[i] += add[i];
		if (!(fabsf(v[i]) < t)) { /* NaN passes */
			if (c < cap) {
				idx[c] = (uint32_t)i;
				val[c] = v[i];
			}
			c++;
		}
	}
	return c;
}

AVX2 static void add_f32_avx2(float *dst, const float *src, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i,
				 _mm256_add_ps(_mm256_loadu_ps(dst + i),
					       _mm256_loadu_ps(src + i)));
	for (; i < n; i++)
		dst[i] += src[i];
}

/* ------------------------------------------------------------ dispatch */

/*
 * The kernels of one backend. cpu_encode() and cpu_dec() are the one
 * dispatch over codec kinds; each backend's entry points inline them with
 * its own constant table, so the kernel calls stay direct.
 */
struct kernels {
	void (*fp16_enc)(const float *src, size_t n, uint16_t *h);
	void (*bf16_enc)(const float *src, size_t n, uint16_t *h);
	void (*fp16_dec)(const uint16_t *h, size_t n, float *dst, int acc);
	void (*bf16_dec)(const uint16_t *h, size_t n, float *dst, int acc);
	void (*int8_block)(const float *x, size_t n, float *scale, int8_t *q);
	void (*int8_dec)(const struct isle_codec *c, const void *src, size_t n,
			 float *dst, int acc);
	void (*add_f32)(float *dst, const float *src, size_t n);
	scan_fn scan;
	/* the backend's own entry points, for error feedback */
	enc_fn encode;
	dec_fn decode_acc;
};

#define INLINE static inline __attribute__((always_inline))

INLINE int cpu_encode(const struct kernels *k, const struct isle_codec *c,
		      const float *src, size_t n, void *dst, float *residual)
{
	if (residual)
		return encode_ef(c, src, n, dst, residual, k->encode,
				 k->decode_acc, k->scan);
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		memcpy(dst, src, n * sizeof(float));
		return 0;
	case ISLE_CODEC_FP16:
	case ISLE_CODEC_BF16:
		if (c->kind == ISLE_CODEC_FP16)
			k->fp16_enc(src, n, dst);
		else
			k->bf16_enc(src, n, dst);
		if (n & 1)
			((uint16_t *)dst)[n] = 0;
		return 0;
	case ISLE_CODEC_INT8: {
		size_t nb = nblocks(c, n);
		float *scales = dst;
		int8_t *q = (int8_t *)(scales + nb);

		for (size_t b = 0; b < nb; b++) {
			size_t off = b * c->block;
			size_t len = n - off < c->block ? n - off : c->block;

			k->int8_block(src + off, len, &scales[b], q + off);
		}
		memset(q + n, 0, ((n + 3) & ~(size_t)3) - n);
		return 0;
	}
	case ISLE_CODEC_TOPK:
		/* No add: topk_encode only reads v. */
		return topk_encode(c, (float *)src, NULL, n, dst, k->scan);
	default:
		return -EINVAL;
	}
}

INLINE int cpu_dec(const struct kernels *k, const struct isle_codec *c,
		   const void *src, size_t n, float *dst, int acc)
{
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		if (acc)
			k->add_f32(dst, src, n);
		else
			memcpy(dst, src, n * sizeof(float));
		return 0;
	case ISLE_CODEC_FP16:
		k->fp16_dec(src, n, dst, acc);
		return 0;
	case ISLE_CODEC_BF16:
		k->bf16_dec(src, n, dst, acc);
		return 0;
	case ISLE_CODEC_INT8:
		k->int8_dec(c, src, n, dst, acc);
		return 0;
	case ISLE_CODEC_TOPK:
		return topk_decode(c, src, n, dst, acc);
	default:
		return -EINVAL;
	}
}

/* The two backends: a kernel table and the isle_codec_ops entry points. */

static int scalar_encode(const struct isle_codec *c, const float *src, size_t n,
			 void *dst, float *residual, void *stream);
static int scalar_decode_acc(const struct isle_codec *c, const void *src,
			     size_t n, float *dst, void *stream);

static const struct kernels scalar_kernels = {
    .fp16_enc = fp16_enc_scalar,
    .bf16_enc = bf16_enc_scalar,
    .fp16_dec = fp16_dec_scalar,
    .bf16_dec = bf16_dec_scalar,
    .int8_block = int8_block_scalar,
    .int8_dec = int8_dec_scalar,
    .add_f32 = add_f32_scalar,
    .scan = scan_ge_scalar,
    .encode = scalar_encode,
    .decode_acc = scalar_decode_acc,
};

static int scalar_encode(const struct isle_codec *c, const float *src, size_t n,
			 void *dst, float *residual, void *stream)
{
	return cpu_encode(&scalar_kernels, c, src, n, dst, residual);
}

static int scalar_decode(const struct isle_codec *c, const void *src, size_t n,
			 float *dst, void *stream)
{
	return cpu_dec(&scalar_kernels, c, src, n, dst, 0);
}

static int scalar_decode_acc(const struct isle_codec *c, const void *src,
			     size_t n, float *dst, void *stream)
{
	return cpu_dec(&scalar_kernels, c, src, n, dst, 1);
}

static const struct isle_codec_ops scalar_ops = {
    .name = "scalar",
    .encode = scalar_encode,
    .decode = scalar_decode,
    .decode_acc = scalar_decode_acc,
};

static int avx2_encode(const struct isle_codec *c, const float *src, size_t n,
		       void *dst, float *residual, void *stream);
static int avx2_decode_acc(const struct isle_codec *c, const void *src,
			   size_t n, float *dst, void *stream);

static const struct kernels avx2_kernels = {
    .fp16_enc = fp16_enc_avx2,
    .bf16_enc = bf16_enc_avx2,
    .fp16_dec = fp16_dec_avx2,
    .bf16_dec = bf16_dec_avx2,
    .int8_block = int8_block_avx2,
    .int8_dec = int8_dec_avx2,
    .add_f32 = add_f32_avx2,
    .scan = scan_ge_avx2,
    .encode = avx2_encode,
    .decode_acc = avx2_decode_acc,
};

static int avx2_encode(const struct isle_codec *c, const float *src, size_t n,
		       void *dst, float *residual, void *stream)
{
	return cpu_encode(&avx2_kernels, c, src, n, dst, residual);
}

static int avx2_decode(const struct isle_codec *c, const void *src, size_t n,
		       float *dst, void *stream)
{
	return cpu_dec(&avx2_kernels, c, src, n, dst, 0);
}

static int avx2_decode_acc(const struct isle_codec *c, const void *src,
			   size_t n, float *dst, void *stream)
{
	return cpu_dec(&avx2_kernels, c, src, n, dst, 1);
}

static const struct isle_codec_ops avx2_ops = {
    .name = "avx2",
    .encode = avx2_encode,
    .decode = avx2_decode,
    .decode_acc = avx2_decode_acc,
};

const struct isle_codec_ops *isle_codec_scalar_ops(void)
{
	return &scalar_ops;
}

/* F16C from CPUID: clang's __builtin_cpu_supports does not know it. */
static int has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

const struct isle_codec_ops *isle_codec_cpu_ops(void)
{
	static const struct isle_codec_ops *best;
	const struct isle_codec_ops *b =
	    __atomic_load_n(&best, __ATOMIC_ACQUIRE);
	const char *e;

	if (b)
		return b;
	e = getenv("ISLE_COMM_NO_SIMD");
	__builtin_cpu_init();
	if ((!e || !*e || !strcmp(e, "0")) && __builtin_cpu_supports("avx2") &&
	    has_f16c())
		b = &avx2_ops;
	else
		b = &scalar_ops;
	__atomic_store_n(&best, b, __ATOMIC_RELEASE);
	return b;
}

void isle__cpu_add_f32(float *dst, const float *src, size_t n)
{
	if (isle_codec_cpu_ops() == &avx2_ops)
		add_f32_avx2(dst, src, n);
	else
		add_f32_scalar(dst, src, n);
}
