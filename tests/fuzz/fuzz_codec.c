/*
 * fuzz_codec.c - the codec decoders fed arbitrary (malformed) frames, and
 * the encoders fed arbitrary floats (NaN, inf, denormals), on the portable
 * backend and the best one of this CPU (AVX2+F16C), which must agree.
 *
 * Input: byte 0 the codec kind, byte 1 its parameter (int8 block, topk
 * ratio), bytes 2-3 the element count n (little endian, at most 4096),
 * then the frame (zero-padded or cut to the codec's encoded size of n),
 * also read as the n floats given to the encoders.
 */
#include <math.h>

#include "fuzz.h"
#include "isle_comm.h"

#define MAX_N 4096

/* Equal as values: bit-identical, or both NaN. */
static int same(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0 &&
		    !(isnan(a[i]) && isnan(b[i])))
			return 0;
	return 1;
}

static void check(int ok, const char *what, const char *spec)
{
	if (ok)
		return;
	fprintf(stderr, "%s: %s differs between backends\n", spec, what);
	abort();
}

/*
 * The documented worst case of one encode + decode (isle_codec_error_bound)
 * where it is promised: fp16 and bf16 relative to |x| in their normal
 * range, int8 relative to the block's largest finite |x| (blocks far from
 * the float limits).
 */
static void check_bound(const struct isle_codec *c, const float *x,
			const float *y, size_t n, const char *spec)
{
	double b = isle_codec_error_bound(c), lo = 1e-30, hi = 1e30;
	size_t i, k, blk = c->kind == ISLE_CODEC_INT8 ? c->block : 1;

	if (c->kind == ISLE_CODEC_TOPK || c->kind == ISLE_CODEC_NONE)
		return;
	if (c->kind == ISLE_CODEC_FP16) {
		lo = 1e-4;
		hi = 6e4;
	}
	for (i = 0; i < n; i += blk) {
		size_t e = i + blk < n ? i + blk : n;
		double m = 0;

		for (k = i; k < e; k++)
			if (isfinite(x[k]) && fabs(x[k]) > m)
				m = fabs(x[k]);
		for (k = i; k < e; k++) {
			double ref =
			    c->kind == ISLE_CODEC_INT8 ? m : fabs(x[k]);

			if (!isfinite(x[k]) || ref < lo || ref > hi)
				continue;
			if (fabs((double)y[k] - x[k]) > b * ref) {
				fprintf(stderr,
					"%s: element %zu: %.9g -> %.9g "
					"beyond the bound %g\n",
					spec, k, (double)x[k], (double)y[k], b);
				abort();
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct isle_codec_ops *s = isle_codec_scalar_ops();
	const struct isle_codec_ops *v = isle_codec_cpu_ops();
	float *da = NULL, *db = NULL, *in = NULL, *ra = NULL, *rb = NULL;
	uint8_t *frame = NULL, *ea = NULL, *eb = NULL;
	struct isle_codec c;
	char spec[64], err[128];
	size_t n, len, i;
	int rs, rv;

	if (size < 4)
		return 0;
	n = ((size_t)data[2] | (size_t)data[3] << 8) % (MAX_N + 1);
	switch (data[0] % ISLE_CODEC_COUNT) {
	case ISLE_CODEC_NONE:
		snprintf(spec, sizeof(spec), "none");
		break;
	case ISLE_CODEC_FP16:
		snprintf(spec, sizeof(spec), "fp16");
		break;
	case ISLE_CODEC_BF16:
		snprintf(spec, sizeof(spec), "bf16");
		break;
	case ISLE_CODEC_INT8:
		snprintf(spec, sizeof(spec), "int8:%d", 8 * (1 + data[1] % 64));
		break;
	default:
		snprintf(spec, sizeof(spec), "topk:%g%s",
			 (double)(data[1] % 128 + 1) / 128.0,
			 data[1] & 128 ? ",noef" : "");
		break;
	}
	if (isle_codec_parse(spec, &c, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", spec, err);
		abort();
	}
	data += 4;
	size -= 4;
	len = isle_codec_encoded_size(&c, n);
	frame = calloc(1, len + 4);
	da = calloc(n + 1, sizeof(float));
	db = calloc(n + 1, sizeof(float));
	in = calloc(n + 1, sizeof(float));
	ra = calloc(n + 1, sizeof(float));
	rb = calloc(n + 1, sizeof(float));
	ea = calloc(1, len + 4);
	eb = calloc(1, len + 4);
	if (!frame || !da || !db || !in || !ra || !rb || !ea || !eb)
		abort();
	memcpy(frame, data, size < len ? size : len);
	memcpy(in, data, size < n * sizeof(float) ? size : n * sizeof(float));

	/* Decode the frame as it came: both backends accept or refuse it
	 * alike, and decode it to the same values. */
	rs = s->decode(&c, frame, n, da, NULL);
	rv = v->decode(&c, frame, n, db, NULL);
	check(rs == rv, "decode status", spec);
	if (rs == 0)
		check(same(da, db, n), "decode", spec);
	memcpy(da, in, n * sizeof(float));
	memcpy(db, in, n * sizeof(float));
	rs = s->decode_acc(&c, frame, n, da, NULL);
	rv = v->decode_acc(&c, frame, n, db, NULL);
	check(rs == rv, "decode_acc status", spec);
	if (rs == 0)
		check(same(da, db, n), "decode_acc", spec);

	/* Encode the input as floats, with error feedback, then decode. */
	rs = s->encode(&c, in, n, ea, ra, NULL);
	rv = v->encode(&c, in, n, eb, rb, NULL);
	check(rs == rv, "encode status", spec);
	if (rs == 0) {
		check(same(ra, rb, n), "residual", spec);
		if (s->decode(&c, ea, n, da, NULL) != 0 ||
		    v->decode(&c, eb, n, db, NULL) != 0) {
			fprintf(stderr, "%s: own frame refused\n", spec);
			abort();
		}
		check(same(da, db, n), "encode+decode", spec);
		check_bound(&c, in, da, n, spec);
		/* Every codec returns NaN and inf as they went in. */
		for (i = 0; i < n; i++)
			if (!isfinite(in[i]) && !(c.kind == ISLE_CODEC_TOPK) &&
			    !(isnan(in[i]) ? isnan(da[i]) : da[i] == in[i])) {
				fprintf(stderr, "%s: element %zu: %g -> %g\n",
					spec, i, (double)in[i], (double)da[i]);
				abort();
			}
	}
	free(frame);
	free(da);
	free(db);
	free(in);
	free(ra);
	free(rb);
	free(ea);
	free(eb);
	return 0;
}
