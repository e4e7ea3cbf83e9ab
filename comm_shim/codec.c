/*
 * codec.c - codec descriptors: error bounds, top-k warm-up and momentum.
 * Spec strings and wire sizes are proto/'s (isle_codec_parse/format,
 * isle_codec_encoded_size); the kernels are in codec_cpu.c (and
 * codec_cuda.cu for the GPU path).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_priv.h"

/*
 * DGC's warm-up: early gradients change fast, and a residual that holds
 * back 99% of each one then lags the model by many steps. The kept share
 * starts at a quarter and falls 4-fold every warm/4 calls.
 */
double isle__topk_ratio_at(const struct isle_codec *c, uint64_t call)
{
	double r = 0.25;

	if (c->kind != ISLE_CODEC_TOPK || !c->warm || call >= c->warm)
		return c->ratio;
	for (uint64_t j = 4 * call / c->warm; j > 0; j--)
		r /= 4;
	return r > c->ratio ? r : c->ratio;
}

/*
 * Momentum correction with factor masking (Deep Gradient Compression, Lin
 * et al., ICLR 2018): the residual accumulates the locally kept momentum
 * u = m*u + x rather than x, and both forget the coordinates sent. With
 * the momentum in the optimizer instead, every burst the residual hands
 * back late is amplified again by the momentum of the steps after it.
 */
int isle__topk_mom_encode(const struct isle_codec_ops *ops,
			  const struct isle_codec *c, const float *x, size_t n,
			  void *dst, float *res, float *mom)
{
	const uint32_t *hdr = dst, *idx = hdr + 2;
	const float *val;
	float m = (float)c->momentum;
	int rc;

	if (c->kind != ISLE_CODEC_TOPK || !res || !mom)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		mom[i] = m * mom[i] + x[i];
	rc = ops->encode(c, mom, n, dst, res, NULL);
	if (rc || !n)
		return rc;
	/* Non-finite: the residual was dropped, so is the momentum. */
	if (hdr[0] & ISLE_TOPK_NONFINITE) {
		memset(mom, 0, n * sizeof(*mom));
		return 0;
	}
	/*
	 * mask=stale: a value equal to this call's momentum had no residual
	 * behind it (0 + u is u exactly), so it is not late and its momentum
	 * is not stale: it goes on as in plain momentum SGD (at ratio 1
	 * exactly so). DGC's masking clears it too, which at high ratios
	 * leaves little momentum at all.
	 */
	val = (const float *)(idx + hdr[0]);
	for (size_t i = 0; i < hdr[0]; i++)
		if (!c->mask_stale || val[i] != mom[idx[i]])
			mom[idx[i]] = 0;
	return 0;
}

int isle_codec_summable(const struct isle_codec *c)
{
	return c->kind == ISLE_CODEC_NONE || c->kind == ISLE_CODEC_FP16 ||
	       c->kind == ISLE_CODEC_BF16;
}

double isle_codec_error_bound(const struct isle_codec *c)
{
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		return 0;
	case ISLE_CODEC_FP16:
		return 0x1p-11; /* half the spacing of an 11-bit significand */
	case ISLE_CODEC_BF16:
		return 0x1p-8; /* 8-bit significand */
	case ISLE_CODEC_INT8:
		/*
		 * Half a step of 126 steps (blocks with a non-finite value;
		 * others use 127), plus fp32 rounding of x * steps/max.
		 */
		return 0.5 / 126.0 * (1.0 + 1e-5);
	default:
		return -1;
	}
}
