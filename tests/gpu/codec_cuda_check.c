/*
 * codec_cuda_check.c - the CUDA codec backend against the CPU reference.
 *
 * For every codec, size and error-feedback setting: encode the same input on
 * the GPU and with isle_codec_scalar_ops(), and require bit-identical wire
 * data, decoded values, accumulated values and residuals (two rounds, so the
 * residual is fed back once). Inputs include ties and zeros, which exercise
 * top-k's index-order tie rule, and NaN/inf (a few, or everywhere: top-k's
 * marked chunk), and int8 blocks too small for a float step. Decoded values
 * compare NaN as equal to any NaN (the GPU returns its canonical NaN from
 * arithmetic). Prints one line per case and a summary; exits 1 on any mismatch,
 * 77 without a GPU. Needs a GPU.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "isle_comm.h"

#define CK(expr)                                                               \
	do {                                                                   \
		cudaError_t e_ = (expr);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#expr, cudaGetErrorString(e_));                \
			exit(1);                                               \
		}                                                              \
	} while (0)

enum input { IN_SMOOTH, IN_TIES, IN_SPARSE, IN_NONFINITE, IN_TINY, IN_ALL_NAN };

static const char *input_name[] = {"smooth", "ties", "sparse",
				   "nonfin", "tiny", "allnan"};

/*
 * int8's tiny-block rule: each run of 256 values (whole int8 blocks) is tiny
 * normals, denormals, tiny values led by one within an ulp of 127 / FLT_MAX
 * (either side of the rule), or tiny values with inf and NaN (126 steps).
 */
static float tiny_value(size_t i, float u)
{
	const float bound = 127.0f / FLT_MAX;
	size_t run = i / 256, j = i % 256;

	switch (run % 4) {
	case 0:
		return u * 1e-37f;
	case 1:
		return u * 1e-42f;
	case 2:
		if (j == 0)
			return run % 3 == 0   ? bound
			       : run % 3 == 1 ? nextafterf(bound, 0.0f)
					      : -nextafterf(bound, 1.0f);
		return u * 1e-37f;
	default:
		return j == 3 ? INFINITY : j == 5 ? NAN : u * 1e-37f;
	}
}

static void fill(float *x, size_t n, enum input kind, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		float u = (float)rand() / (float)RAND_MAX - 0.5f;

		switch (kind) {
		case IN_TIES: /* few distinct magnitudes */
			x[i] = (float)((rand() % 9) - 4) * 0.25f;
			break;
		case IN_SPARSE: /* mostly zeros, some huge (fp16 saturates) */
			x[i] = rand() % 50 ? 0.0f : u * 2e5f;
			break;
		case IN_NONFINITE: { /* some NaN, +inf, -inf among values */
			int r = rand() % 300;

			x[i] = r == 0	? NAN
			       : r == 1 ? INFINITY
			       : r == 2 ? -INFINITY
					: u * 8.0f;
			break;
		}
		case IN_TINY:
			x[i] = tiny_value(i, u);
			break;
		case IN_ALL_NAN:
			x[i] = i % 5 ? NAN : INFINITY;
			break;
		default:
			x[i] = u * u * u * 8.0f;
			break;
		}
	}
}

/* Count of differing 32-bit words (bit patterns). */
static size_t diff_words(const void *a, const void *b, size_t bytes)
{
	const uint32_t *x = a, *y = b;
	size_t d = 0;

	for (size_t i = 0; i < bytes / 4; i++)
		d += x[i] != y[i];
	return d;
}

/* Differing floats; any NaN equals any NaN. */
static size_t diff_floats(const float *x, const float *y, size_t n)
{
	size_t d = 0;

	for (size_t i = 0; i < n; i++)
		if (!(isnan(x[i]) && isnan(y[i])))
			d += memcmp(&x[i], &y[i], sizeof(float)) != 0;
	return d;
}

struct bufs {
	float *x, *res_c, *dec_c, *acc_c, *tmp;
	void *enc_c, *enc_g_host;
	float *dx, *dres, *ddec, *dacc;
	void *denc;
};

/* One case; returns the number of mismatching words (0 = pass). */
static size_t check(const struct isle_codec *c, size_t n, enum input in, int ef,
		    struct bufs *b)
{
	const struct isle_codec_ops *cpu = isle_codec_scalar_ops();
	const struct isle_codec_ops *gpu = isle_codec_cuda_ops();
	size_t enc = isle_codec_encoded_size(c, n), bad = 0;
	size_t fb = n * sizeof(float);

	memset(b->res_c, 0, fb);
	CK(cudaMemset(b->dres, 0, fb));
	for (int round = 0; round < (ef ? 2 : 1); round++) {
		fill(b->x, n, in, 1000u + (unsigned)round);
		CK(cudaMemcpy(b->dx, b->x, fb, cudaMemcpyHostToDevice));
		/* Same encoded-buffer garbage on both sides: pads must be set.
		 */
		memset(b->enc_c, 0xa5, enc);
		CK(cudaMemset(b->denc, 0xa5, enc));

		if (cpu->encode(c, b->x, n, b->enc_c, ef ? b->res_c : NULL,
				NULL) ||
		    gpu->encode(c, b->dx, n, b->denc, ef ? b->dres : NULL,
				NULL)) {
			fprintf(stderr, "encode failed\n");
			return 1;
		}
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(b->enc_g_host, b->denc, enc,
			      cudaMemcpyDeviceToHost));
		bad += diff_words(b->enc_c, b->enc_g_host, enc);

		/* Decode the CPU's bytes on the GPU too: one format. */
		CK(cudaMemcpy(b->denc, b->enc_c, enc, cudaMemcpyHostToDevice));
		for (size_t i = 0; i < n; i++)
			b->acc_c[i] = (float)(i % 7);
		CK(cudaMemcpy(b->dacc, b->acc_c, fb, cudaMemcpyHostToDevice));
		if (cpu->decode(c, b->enc_c, n, b->dec_c, NULL) ||
		    cpu->decode_acc(c, b->enc_c, n, b->acc_c, NULL) ||
		    gpu->decode(c, b->denc, n, b->ddec, NULL) ||
		    gpu->decode_acc(c, b->denc, n, b->dacc, NULL)) {
			fprintf(stderr, "decode failed\n");
			return 1;
		}
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(b->tmp, b->ddec, fb, cudaMemcpyDeviceToHost));
		bad += diff_floats(b->dec_c, b->tmp, n);
		CK(cudaMemcpy(b->tmp, b->dacc, fb, cudaMemcpyDeviceToHost));
		bad += diff_floats(b->acc_c, b->tmp, n);
		if (ef) {
			CK(cudaMemcpy(b->tmp, b->dres, fb,
				      cudaMemcpyDeviceToHost));
			bad += diff_floats(b->res_c, b->tmp, n);
		}
	}
	return bad;
}

/* GPU encode + decode throughput (GB/s of fp32) at n elements. */
static void throughput(const struct isle_codec *c, size_t n, struct bufs *b,
		       const char *spec)
{
	const struct isle_codec_ops *gpu = isle_codec_cuda_ops();
	cudaEvent_t t0, t1;
	float ms_enc = 0, ms_dec = 0;
	const int reps = 10;

	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	gpu->encode(c, b->dx, n, b->denc, NULL, NULL); /* warm-up */
	CK(cudaEventRecord(t0, NULL));
	for (int i = 0; i < reps; i++)
		gpu->encode(c, b->dx, n, b->denc, NULL, NULL);
	CK(cudaEventRecord(t1, NULL));
	CK(cudaEventSynchronize(t1));
	CK(cudaEventElapsedTime(&ms_enc, t0, t1));
	CK(cudaEventRecord(t0, NULL));
	for (int i = 0; i < reps; i++)
		gpu->decode(c, b->denc, n, b->ddec, NULL);
	CK(cudaEventRecord(t1, NULL));
	CK(cudaEventSynchronize(t1));
	CK(cudaEventElapsedTime(&ms_dec, t0, t1));
	printf("perf  %-10s n=%zu encode %.1f GB/s decode %.1f GB/s\n", spec, n,
	       (double)n * 4 * reps / (ms_enc * 1e6),
	       (double)n * 4 * reps / (ms_dec * 1e6));
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
}

int main(void)
{
	static const char *specs[] = {"none",	  "fp16",    "bf16",
				      "int8:256", "int8:64", "topk:0.01",
				      "topk:0.3"};
	static const size_t sizes[] = {1,	7, 1000, 4097, (1u << 20) + 3,
				       1u << 24};
	const size_t maxn = 1u << 24, fb = maxn * sizeof(float);
	struct bufs b;
	int ndev = 0, fails = 0, cases = 0;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "codec_cuda_check: no GPU\n");
		return 77;
	}
	b.x = malloc(fb);
	b.res_c = malloc(fb);
	b.dec_c = malloc(fb);
	b.acc_c = malloc(fb);
	b.tmp = malloc(fb);
	b.enc_c = malloc(fb + 4096);
	b.enc_g_host = malloc(fb + 4096);
	if (!b.x || !b.res_c || !b.dec_c || !b.acc_c || !b.tmp || !b.enc_c ||
	    !b.enc_g_host) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	CK(cudaMalloc((void **)&b.dx, fb));
	CK(cudaMalloc((void **)&b.dres, fb));
	CK(cudaMalloc((void **)&b.ddec, fb));
	CK(cudaMalloc((void **)&b.dacc, fb));
	CK(cudaMalloc(&b.denc, fb + 4096));

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct isle_codec c;
		char err[128];

		if (isle_codec_parse(specs[s], &c, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
			for (int in = IN_SMOOTH; in <= IN_ALL_NAN; in++)
				for (int ef = 0; ef <= 1; ef++) {
					size_t bad =
					    check(&c, sizes[z], in, ef, &b);

					cases++;
					fails += bad != 0;
					if (bad || sizes[z] == maxn)
						printf("%s  %-10s n=%-9zu %-6s "
						       "ef=%d mismatched words "
						       "%zu\n",
						       bad ? "FAIL" : "ok  ",
						       specs[s], sizes[z],
						       input_name[in], ef, bad);
				}
		throughput(&c, maxn, &b, specs[s]);
	}
	printf("codec_cuda_check: %d cases, %d failed\n", cases, fails);
	return fails ? 1 : 0;
}
