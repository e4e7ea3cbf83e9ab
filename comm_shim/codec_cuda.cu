/*
 * codec_cuda.cu - CUDA backend of the isle codecs (struct isle_codec_ops).
 *
 * Same wire formats as the CPU backend (isle_comm.h), so an encoded buffer
 * can be produced on one side and decoded on the other. Every function only
 * enqueues work on the given stream (cudaStream_t, NULL = legacy default
 * stream) and never synchronises, so it can sit between NCCL calls.
 *
 * top-k is an exact, deterministic selection: a 4-pass radix select over the
 * bits of |x| finds the k-th largest magnitude T, then an ordered compaction
 * keeps every |x| > T and the lowest-index elements with |x| == T, which
 * yields ascending indices as the format requires. Its small scratch
 * (histogram, per-tile counters) is stream-ordered (cudaMallocAsync).
 */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include <errno.h>
#include <float.h>
#include <stdint.h>

extern "C" {
#include "comm_priv.h" /* C declarations: isle_codec_topk_k() and more */
}

namespace {

constexpr int kThreads = 256;      /* threads per block, every kernel */
constexpr int kTileItems = 16;     /* top-k compaction: items per thread */
constexpr int kTile = kThreads * kTileItems;
constexpr int kMaxGrid = 65535 * 4; /* grid-stride kernels cap their grid */

int to_errno(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* Launch status of the kernels just enqueued (not their completion). */
int launch_rc()
{
	return to_errno(cudaGetLastError());
}

unsigned grid_for(size_t n)
{
	size_t g = (n + kThreads - 1) / kThreads;

	if (g == 0)
		g = 1;
	return g > kMaxGrid ? kMaxGrid : (unsigned)g;
}

/* -------------------------------------------------- elementwise codecs */

/* |v| as an order-preserving integer (NaN sorts above infinity). */
__device__ __forceinline__ uint32_t mag_key(float v)
{
	return __float_as_uint(v) & 0x7fffffffu;
}

/*
 * Top-k selection key: |v|, then NaN, then infinities above every finite
 * value (the CPU backend's order: infinities first, then NaN).
 */
__device__ __forceinline__ uint32_t topk_key(float v)
{
	uint32_t ax = __float_as_uint(v) & 0x7fffffffu;

	return ax > 0x7f800000u ? 0x7f800000u
	       : ax == 0x7f800000u ? 0x7f800001u
				   : ax;
}

/* What error feedback keeps of v - decoded: nothing for non-finite values. */
__device__ __forceinline__ float resid(float v, float dec)
{
	float r = __fsub_rn(v, dec);

	/* +0.0 for any zero, as the CPU reference. */
	return isfinite(r) && r != 0.0f ? r : 0.0f;
}

/*
 * a + b as the CPU reference computes it: x86 returns the NaN operand,
 * quieted, payload kept, where the GPU's add returns its canonical NaN;
 * the wire data must match bit for bit.
 */
__device__ __forceinline__ float add_cpu(float a, float b)
{
	if (isnan(a))
		return __uint_as_float(__float_as_uint(a) | 0x00400000u);
	if (isnan(b))
		return __uint_as_float(__float_as_uint(b) | 0x00400000u);
	return __fadd_rn(a, b);
}

/* x + residual, the value error feedback encodes. */
__device__ __forceinline__ float fed(const float *src, const float *res,
				     size_t i)
{
	return res ? add_cpu(src[i], res[i]) : src[i];
}

__global__ void copy_enc(const float *src, float *res, float *dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		dst[i] = fed(src, res, i);
		if (res)
			res[i] = 0.0f;
	}
}

/*
 * fp32 -> fp16 as the CPU backend does it: round to nearest even, finite
 * overflow saturates to +-65504, infinities stay, NaN keeps its top payload.
 */
__device__ __forceinline__ __half to_f16(float v)
{
	uint32_t x = __float_as_uint(v), ax = x & 0x7fffffffu;

	if (ax > 0x7f800000u)
		return __ushort_as_half((unsigned short)(((x >> 16) & 0x8000u) |
							 0x7e00u |
							 ((ax >> 13) & 0x3ffu)));
	if (ax == 0x7f800000u)
		return __ushort_as_half(
			(unsigned short)(((x >> 16) & 0x8000u) | 0x7c00u));
	return __float2half_rn(fminf(fmaxf(v, -65504.0f), 65504.0f));
}

/* fp32 -> bf16, round to nearest even, NaN made quiet (CPU bit pattern). */
__device__ __forceinline__ __nv_bfloat16 to_bf16(float v)
{
	uint32_t x = __float_as_uint(v);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return __ushort_as_bfloat16((unsigned short)((x >> 16) | 0x40u));
	return __ushort_as_bfloat16(
		(unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16));
}

/* 16-bit formats; the odd trailing half-word of the 4-byte pad is zeroed. */
template <typename H, H (*Conv)(float), float (*Back)(H)>
__global__ void half_enc(const float *src, float *res, H *dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = fed(src, res, i);
		H h = Conv(v);

		dst[i] = h;
		if (res)
			res[i] = resid(v, Back(h));
	}
	if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0)
		((uint16_t *)dst)[n] = 0;
}

__device__ __forceinline__ float from_f16(__half h)
{
	return __half2float(h);
}

__device__ __forceinline__ float from_bf16(__nv_bfloat16 h)
{
	return __bfloat162float(h);
}

/* dst = dec(src) or dst += dec(src) for fp32 and the 16-bit formats. */
template <bool Acc>
__global__ void f32_dec(const float *src, float *dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = Acc ? dst[i] + src[i] : src[i];
}

template <typename H, float (*Back)(H), bool Acc>
__global__ void half_dec(const H *src, float *dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = Back(src[i]);

		dst[i] = Acc ? dst[i] + v : v;
	}
}

/* ------------------------------------------------------------------ int8 */

/*
 * One thread block per codec block, as the CPU reference computes it:
 * m = max|v|, scale = m / 127, q = rne(v * (127 / m)) clamped to +-127; a
 * block with m below 127 / FLT_MAX (0 included) is zeros with scale 0. A
 * block holding inf or NaN uses m = max finite |v|, 126 steps, stores -scale
 * and the codes 127 / -127 / -128 for +inf / -inf / NaN (isle_comm.h). The
 * maxima are taken over the magnitude bits (an order-preserving integer), so
 * NaN is not lost as fmaxf would lose it.
 */
__global__ void int8_enc(const float *src, float *res, float *scales,
			 int8_t *q, size_t n, uint32_t block)
{
	typedef cub::BlockReduce<uint32_t, kThreads> Reduce;
	__shared__ typename Reduce::TempStorage tmp;
	__shared__ uint32_t s_max, s_fin;
	size_t b = blockIdx.x, lo = b * block;
	size_t hi = lo + block < n ? lo + block : n;
	uint32_t m = 0, mf = 0;

	for (size_t i = lo + threadIdx.x; i < hi; i += kThreads) {
		uint32_t k = mag_key(fed(src, res, i));

		m = max(m, k);
		if (k < 0x7f800000u)
			mf = max(mf, k);
	}
	m = Reduce(tmp).Reduce(m, cuda::maximum<uint32_t>());
	__syncthreads();
	mf = Reduce(tmp).Reduce(mf, cuda::maximum<uint32_t>());
	if (threadIdx.x == 0) {
		s_max = m;
		s_fin = mf;
	}
	__syncthreads();

	bool bad = s_max >= 0x7f800000u;
	float steps = bad ? 126.0f : 127.0f;
	float mx = __uint_as_float(bad ? s_fin : s_max);
	float inv = __fdiv_rn(steps, mx);
	/*
	 * The CPU's tiny-block rule (int8_tiny): a max below steps / FLT_MAX,
	 * 0 included, has no float step (inv overflows, and 0 * inf is NaN).
	 * Its finite values encode as 0; the block's scale is 0, or the
	 * negated m / 126 of a block with inf/NaN.
	 */
	bool tiny = !(inv <= FLT_MAX);
	float scale = tiny && !bad ? 0.0f : __fdiv_rn(mx, steps);

	if (tiny)
		inv = 0.0f;

	if (threadIdx.x == 0)
		scales[b] = bad ? -scale : scale;
	for (size_t i = lo + threadIdx.x; i < hi; i += kThreads) {
		float v = fed(src, res, i);
		float r = fminf(fmaxf(rintf(__fmul_rn(v, inv)), -steps), steps);
		float d = __fmul_rn(r, scale);

		if (isnan(v)) {
			r = -128.0f;
			d = v;
		} else if (isinf(v)) {
			r = v > 0 ? 127.0f : -127.0f;
			d = v;
		}
		q[i] = (int8_t)r;
		if (res)
			res[i] = resid(v, d);
	}
}

/* Zero the bytes after the n int8 up to the 4-byte boundary. */
__global__ void int8_pad(int8_t *q, size_t n)
{
	size_t i = n + threadIdx.x, end = (n + 3) & ~(size_t)3;

	if (i < end)
		q[i] = 0;
}

template <bool Acc>
__global__ void int8_dec(const float *scales, const int8_t *q, float *dst,
			 size_t n, uint32_t block)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float s = scales[i / block], v;

		if (!signbit(s))
			v = __fmul_rn((float)q[i], s);
		else if (q[i] == -128) /* block with inf/NaN: see int8_enc */
			v = __uint_as_float(0x7fc00000u);
		else if (q[i] == 127 || q[i] == -127)
			v = q[i] > 0 ? INFINITY : -INFINITY;
		else
			v = __fmul_rn((float)q[i], -s);
		dst[i] = Acc ? __fadd_rn(dst[i], v) : v;
	}
}

/* ------------------------------------------------------------------ top-k */

/* Selection state, in device scratch. */
struct topk_state {
	uint32_t hist[256];
	uint32_t prefix;   /* bits of T decided so far */
	uint32_t mask;     /* which bits of prefix are decided */
	uint32_t need;     /* elements still to take at or below prefix */
	uint32_t take_eq;  /* final: elements with key == T to keep */
};

/* Residual buffer becomes v = x + residual (or a copy of x). */
__global__ void topk_fold(const float *src, float *v, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		v[i] = add_cpu(v[i], src[i]);
}

__global__ void topk_init(topk_state *st, uint32_t k)
{
	if (threadIdx.x == 0) {
		st->prefix = 0;
		st->mask = 0;
		st->need = k;
		st->take_eq = 0;
	}
	st->hist[threadIdx.x] = 0;
}

/* Histogram of digit `shift` over the keys matching the decided prefix. */
__global__ void topk_hist(const float *v, size_t n, topk_state *st, int shift)
{
	__shared__ uint32_t h[256];
	uint32_t prefix = st->prefix, mask = st->mask;

	h[threadIdx.x] = 0;
	__syncthreads();
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t key = topk_key(v[i]);

		if ((key & mask) == prefix)
			atomicAdd(&h[(key >> shift) & 0xffu], 1u);
	}
	__syncthreads();
	if (h[threadIdx.x])
		atomicAdd(&st->hist[threadIdx.x], h[threadIdx.x]);
}

/* Pick the digit holding the need-th largest key; one block of 256. */
__global__ void topk_pick(topk_state *st, int shift)
{
	typedef cub::BlockScan<uint32_t, kThreads> Scan;
	__shared__ typename Scan::TempStorage tmp;
	/* Thread t looks at digit 255 - t: inclusive sums count from the top. */
	uint32_t d = 255 - threadIdx.x, c = st->hist[d], need = st->need, incl;

	Scan(tmp).InclusiveSum(c, incl);
	__syncthreads(); /* every thread has read need before it changes */

	uint32_t above = incl - c;

	if (above < need && incl >= need) {
		st->prefix |= d << shift;
		st->mask |= 0xffu << shift;
		st->need = need - above;
		if (shift == 0)
			st->take_eq = need - above;
	}
	__syncthreads();
	st->hist[d] = 0;
}

/*
 * Ordered compaction in three kernels over tiles of kTile elements:
 * count (> T, == T) per tile, scan the tile counts, then write.
 */
__device__ __forceinline__ void tile_flags(const float *v, size_t n,
					   size_t base, uint32_t t,
					   uint32_t *gt, uint32_t *eq)
{
	for (int j = 0; j < kTileItems; j++) {
		size_t i = base + (size_t)threadIdx.x * kTileItems + j;
		uint32_t key = i < n ? topk_key(v[i]) : 0;

		gt[j] = i < n && key > t;
		eq[j] = i < n && key == t;
	}
}

__global__ void topk_count(const float *v, size_t n, const topk_state *st,
			   uint2 *tiles)
{
	typedef cub::BlockReduce<uint32_t, kThreads> Reduce;
	__shared__ typename Reduce::TempStorage tmp;
	uint32_t gt[kTileItems], eq[kTileItems], ng = 0, ne = 0;

	tile_flags(v, n, (size_t)blockIdx.x * kTile, st->prefix, gt, eq);
	for (int j = 0; j < kTileItems; j++) {
		ng += gt[j];
		ne += eq[j];
	}
	ng = Reduce(tmp).Sum(ng);
	__syncthreads();
	ne = Reduce(tmp).Sum(ne);
	if (threadIdx.x == 0)
		tiles[blockIdx.x] = make_uint2(ng, ne);
}

/*
 * tiles[t] = (ties seen before tile t, output offset of tile t); one block
 * walks all tiles. Also writes the header: count and n.
 */
__global__ void topk_scan(uint2 *tiles, uint32_t ntiles,
			  const topk_state *st, uint32_t *hdr, uint32_t n)
{
	typedef cub::BlockScan<uint32_t, kThreads> Scan;
	__shared__ typename Scan::TempStorage tmp;
	__shared__ uint32_t carry_eq, carry_out;
	uint32_t take = st->take_eq;

	if (threadIdx.x == 0)
		carry_eq = carry_out = 0;
	__syncthreads();
	for (uint32_t base = 0; base < ntiles; base += kThreads) {
		uint32_t t = base + threadIdx.x;
		uint2 c = t < ntiles ? tiles[t] : make_uint2(0, 0);
		uint32_t eq_before, eq_total, out_before, out_total;

		Scan(tmp).ExclusiveSum(c.y, eq_before, eq_total);
		__syncthreads();
		eq_before += carry_eq;
		/* Ties kept in this tile: the ones still under the quota. */
		uint32_t left = take > eq_before ? take - eq_before : 0;
		uint32_t kept = c.x + (c.y < left ? c.y : left);

		Scan(tmp).ExclusiveSum(kept, out_before, out_total);
		if (t < ntiles)
			tiles[t] = make_uint2(eq_before, carry_out + out_before);
		__syncthreads();
		if (threadIdx.x == 0) {
			carry_eq += eq_total;
			carry_out += out_total;
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		/* k-th largest non-finite: at least k of them (isle_comm.h) */
		hdr[0] = carry_out | (st->prefix >= 0x7f800000u
					  ? ISLE_TOPK_NONFINITE
					  : 0u);
		hdr[1] = n;
	}
}

/* A chunk marked non-finite decodes as NaN everywhere: no residual kept. */
__global__ void topk_clear(float *v, size_t n, const uint32_t *hdr)
{
	if (!(hdr[0] & ISLE_TOPK_NONFINITE))
		return;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		v[i] = 0.0f;
}

/*
 * Write (index, value) of the kept elements in index order; their residual
 * (when v is the residual buffer) becomes 0, the others keep v.
 */
__global__ void topk_write(float *v, size_t n, const topk_state *st,
			   const uint2 *tiles, uint32_t *idx, float *val,
			   bool residual)
{
	typedef cub::BlockScan<uint32_t, kThreads> Scan;
	__shared__ typename Scan::TempStorage tmp;
	uint32_t gt[kTileItems], eq[kTileItems], neq = 0, nkeep = 0;
	size_t base = (size_t)blockIdx.x * kTile;
	uint32_t take = st->take_eq;
	uint2 tile = tiles[blockIdx.x];

	tile_flags(v, n, base, st->prefix, gt, eq);
	for (int j = 0; j < kTileItems; j++)
		neq += eq[j];
	Scan(tmp).ExclusiveSum(neq, neq);
	__syncthreads();

	/* Global rank of each tie decides whether it is under the quota. */
	uint32_t rank = tile.x + neq;

	for (int j = 0; j < kTileItems; j++) {
		if (eq[j])
			gt[j] = rank++ < take;
		nkeep += gt[j];
	}
	Scan(tmp).ExclusiveSum(nkeep, nkeep);

	uint32_t pos = tile.y + nkeep;

	for (int j = 0; j < kTileItems; j++) {
		size_t i = base + (size_t)threadIdx.x * kTileItems + j;

		if (!gt[j])
			continue;
		idx[pos] = (uint32_t)i;
		val[pos] = v[i];
		if (residual)
			v[i] = 0.0f;
		pos++;
	}
}

/*
 * A chunk marked non-finite: every unlisted element decodes as NaN (dst =
 * NaN or dst += NaN); the listed ones are left to topk_dec.
 */
template <bool Acc>
__global__ void topk_fill(const uint32_t *hdr, float *dst, size_t n)
{
	uint32_t count = hdr[0] & ~ISLE_TOPK_NONFINITE;
	const uint32_t *idx = hdr + 2;
	float nan = __uint_as_float(0x7fc00000u);

	if (!(hdr[0] & ISLE_TOPK_NONFINITE))
		return;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t lo = 0, hi = count; /* indices are ascending */

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (idx[mid] < i)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < count && idx[lo] == i)
			continue;
		dst[i] = Acc ? dst[i] + nan : nan;
	}
}

/* dst[idx] = val or dst[idx] += val; the count comes from the header. */
template <bool Acc>
__global__ void topk_dec(const uint32_t *hdr, float *dst, size_t n)
{
	uint32_t count = hdr[0] & ~ISLE_TOPK_NONFINITE;
	const uint32_t *idx = hdr + 2;
	const float *val = (const float *)(idx + count);

	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	     j < count; j += (size_t)gridDim.x * blockDim.x) {
		uint32_t i = idx[j];

		if (i < n)
			dst[i] = Acc ? dst[i] + val[j] : val[j];
	}
}

/* ------------------------------------------------------------ operations */

int enc_topk(const struct isle_codec *c, const float *src, size_t n,
	     void *dst, float *residual, cudaStream_t st)
{
	uint32_t *hdr = (uint32_t *)dst;
	size_t k = isle_codec_topk_k(c, n);
	size_t ntiles = (n + kTile - 1) / kTile;
	const float *v = src;
	topk_state *state;
	uint2 *tiles;
	cudaError_t e;
	void *mem;
	int rc;

	if (n > UINT32_MAX)
		return -EINVAL;
	if (n == 0 || k == 0) {
		uint32_t h[2] = {0, (uint32_t)n};

		return to_errno(cudaMemcpyAsync(dst, h, sizeof(h),
						cudaMemcpyHostToDevice, st));
	}
	/* Stream-ordered scratch: no state shared between calls or streams. */
	e = cudaMallocAsync(&mem, sizeof(*state) + ntiles * sizeof(uint2), st);
	if (e != cudaSuccess)
		return to_errno(e);
	state = (topk_state *)mem;
	tiles = (uint2 *)(state + 1);

	if (residual) {
		topk_fold<<<grid_for(n), kThreads, 0, st>>>(src, residual, n);
		v = residual;
	}
	topk_init<<<1, 256, 0, st>>>(state, (uint32_t)k);
	for (int shift = 24; shift >= 0; shift -= 8) {
		topk_hist<<<grid_for(n), kThreads, 0, st>>>(v, n, state, shift);
		topk_pick<<<1, kThreads, 0, st>>>(state, shift);
	}
	topk_count<<<(unsigned)ntiles, kThreads, 0, st>>>(v, n, state, tiles);
	topk_scan<<<1, kThreads, 0, st>>>(tiles, (uint32_t)ntiles, state,
					  hdr, (uint32_t)n);
	/* Exactly k elements are kept, so the value array starts at k. */
	topk_write<<<(unsigned)ntiles, kThreads, 0, st>>>(
		(float *)v, n, state, tiles, hdr + 2, (float *)(hdr + 2 + k),
		residual != nullptr);
	if (residual)
		topk_clear<<<grid_for(n), kThreads, 0, st>>>(residual, n, hdr);
	rc = launch_rc();
	e = cudaFreeAsync(mem, st);
	return rc ? rc : to_errno(e);
}

int cuda_encode(const struct isle_codec *c, const float *src, size_t n,
		void *dst, float *residual, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	unsigned g = grid_for(n);

	if (!c || (n && (!src || !dst)))
		return -EINVAL;
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		if (!residual)
			return n ? to_errno(cudaMemcpyAsync(
					   dst, src, n * sizeof(float),
					   cudaMemcpyDeviceToDevice, st))
				 : 0;
		copy_enc<<<g, kThreads, 0, st>>>(src, residual, (float *)dst,
						 n);
		break;
	case ISLE_CODEC_FP16:
		half_enc<__half, to_f16, from_f16><<<g, kThreads, 0, st>>>(
			src, residual, (__half *)dst, n);
		break;
	case ISLE_CODEC_BF16:
		half_enc<__nv_bfloat16, to_bf16, from_bf16>
			<<<g, kThreads, 0, st>>>(src, residual,
						 (__nv_bfloat16 *)dst, n);
		break;
	case ISLE_CODEC_INT8: {
		size_t nb;
		float *scales = (float *)dst;
		int8_t *q;

		if (c->block == 0)
			return -EINVAL;
		nb = (n + c->block - 1) / c->block;
		q = (int8_t *)(scales + nb);
		if (nb)
			int8_enc<<<(unsigned)nb, kThreads, 0, st>>>(
				src, residual, scales, q, n, c->block);
		int8_pad<<<1, 4, 0, st>>>(q, n);
		break;
	}
	case ISLE_CODEC_TOPK:
		return enc_topk(c, src, n, dst, residual, st);
	default:
		return -EINVAL;
	}
	return launch_rc();
}

template <bool Acc>
int cuda_decode_t(const struct isle_codec *c, const void *src, size_t n,
		  float *dst, cudaStream_t st)
{
	unsigned g = grid_for(n);

	if (!c || (n && (!src || !dst)))
		return -EINVAL;
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		if (!Acc)
			return n ? to_errno(cudaMemcpyAsync(
					   dst, src, n * sizeof(float),
					   cudaMemcpyDeviceToDevice, st))
				 : 0;
		f32_dec<Acc><<<g, kThreads, 0, st>>>((const float *)src, dst,
						     n);
		break;
	case ISLE_CODEC_FP16:
		half_dec<__half, from_f16, Acc><<<g, kThreads, 0, st>>>(
			(const __half *)src, dst, n);
		break;
	case ISLE_CODEC_BF16:
		half_dec<__nv_bfloat16, from_bf16, Acc>
			<<<g, kThreads, 0, st>>>((const __nv_bfloat16 *)src,
						 dst, n);
		break;
	case ISLE_CODEC_INT8: {
		size_t nb;

		if (c->block == 0)
			return -EINVAL;
		nb = (n + c->block - 1) / c->block;
		int8_dec<Acc><<<g, kThreads, 0, st>>>(
			(const float *)src, (const int8_t *)src + nb * 4, dst,
			n, c->block);
		break;
	}
	case ISLE_CODEC_TOPK:
		if (!Acc && n) {
			cudaError_t e = cudaMemsetAsync(dst, 0,
							n * sizeof(float), st);
			if (e != cudaSuccess)
				return to_errno(e);
		}
		if (n)
			topk_fill<Acc><<<g, kThreads, 0, st>>>(
				(const uint32_t *)src, dst, n);
		topk_dec<Acc><<<grid_for(isle_codec_topk_k(c, n)), kThreads, 0,
				st>>>((const uint32_t *)src, dst, n);
		break;
	default:
		return -EINVAL;
	}
	return launch_rc();
}

int cuda_decode(const struct isle_codec *c, const void *src, size_t n,
		float *dst, void *stream)
{
	return cuda_decode_t<false>(c, src, n, dst, (cudaStream_t)stream);
}

int cuda_decode_acc(const struct isle_codec *c, const void *src, size_t n,
		    float *dst, void *stream)
{
	return cuda_decode_t<true>(c, src, n, dst, (cudaStream_t)stream);
}

const struct isle_codec_ops cuda_ops = {
	"cuda",
	cuda_encode,
	cuda_decode,
	cuda_decode_acc,
};

} /* namespace */

extern "C" __attribute__((visibility("default"))) const struct isle_codec_ops *
isle_codec_cuda_ops(void)
{
	return &cuda_ops;
}
