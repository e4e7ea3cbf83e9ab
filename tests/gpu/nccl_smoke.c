/*
 * nccl_smoke.c - one-GPU ncclAllReduce, meant to run with libisle_nccl.so
 * LD_PRELOADed and ISLE_COMM_ALGO=hier, so the shim's hierarchical path
 * (split, codec, exchange, decode) runs on a single rank.
 *
 *   nccl_smoke CODEC    CODEC as in ISLE_COMM_CODEC (none fp16 bf16 int8
 *                       topk:R); the result is checked against what that
 *                       codec may do to the data
 *
 * With one rank an allreduce returns its input, so: none must be exact,
 * fp16/bf16 within their relative rounding, int8 within half a step of its
 * block maximum, and top-k must keep the largest |x| of input + residual
 * (the second round sees the residual of the first). An int32 allreduce,
 * which the shim passes through, must be exact. Exit 0 pass, 1 fail, 77 no
 * GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N ((1u << 20) + 3) /* not a multiple of anything convenient */

#define CK(expr)                                                               \
	do {                                                                   \
		if ((expr) != 0) {                                             \
			fprintf(stderr, "nccl_smoke: %s:%d: %s failed\n",      \
				__FILE__, __LINE__, #expr);                    \
			return 1;                                              \
		}                                                              \
	} while (0)

static int cmp_abs_desc(const void *a, const void *b)
{
	float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);

	return (x < y) - (x > y);
}

/* top-k: y keeps exactly the k largest |v| of v (ties aside), as is. */
static int check_topk(const float *v, const float *y, size_t n, double ratio)
{
	size_t k = (size_t)ceil(ratio * (double)n), kept = 0;
	float *s = malloc(n * sizeof(*s)), thr;

	if (!s)
		return 1;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_abs_desc);
	thr = fabsf(s[k - 1]);
	free(s);
	for (size_t i = 0; i < n; i++) {
		if (y[i] != 0.0f) {
			kept++;
			if (y[i] != v[i] || fabsf(v[i]) < thr) {
				fprintf(stderr, "topk: y[%zu]=%g v=%g thr=%g\n",
					i, y[i], v[i], thr);
				return 1;
			}
		} else if (fabsf(v[i]) > thr) {
			fprintf(stderr, "topk: dropped v[%zu]=%g > thr %g\n", i,
				v[i], thr);
			return 1;
		}
	}
	if (kept > k) {
		fprintf(stderr, "topk: kept %zu > k %zu\n", kept, k);
		return 1;
	}
	return 0;
}

static int check_dense(const char *codec, const float *x, const float *y,
		       size_t n)
{
	double worst = 0;

	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)y[i] - x[i]), tol;

		if (!strcmp(codec, "none"))
			tol = 0;
		else if (!strcmp(codec, "fp16"))
			tol = fabs(x[i]) * 0x1p-11 + 0x1p-25;
		else if (!strcmp(codec, "bf16"))
			tol = fabs(x[i]) * 0x1p-8;
		else { /* int8, default block 256: half a step of the max */
			size_t lo = i / 256 * 256,
			       hi = lo + 256 < n ? lo + 256 : n;
			double m = 0;

			for (size_t j = lo; j < hi; j++)
				m = fmax(m, fabs(x[j]));
			/* Two quantisations: encode, then the regather. */
			tol = m / 127.0 * 1.01;
		}
		if (e > tol) {
			fprintf(stderr,
				"%s: y[%zu]=%.9g x=%.9g err %.3g > %.3g\n",
				codec, i, y[i], x[i], e, tol);
			return 1;
		}
		worst = fmax(worst, e);
	}
	printf("nccl_smoke: %s: max abs error %.3g\n", codec, worst);
	return 0;
}

int main(int argc, char **argv)
{
	const char *codec = argc > 1 ? argv[1] : "none";
	size_t bytes = N * sizeof(float);
	float *x = malloc(bytes), *y = malloc(bytes), *v = malloc(bytes);
	float *dx, *dy;
	int *ix = malloc(N * sizeof(int)), *iy = malloc(N * sizeof(int));
	int *dix, ndev = 0, rc = 0;
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t st;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "nccl_smoke: no GPU\n");
		return 77;
	}
	if (!x || !y || !v || !ix || !iy)
		return 1;
	srand(7);
	for (size_t i = 0; i < N; i++) {
		float u = (float)rand() / (float)RAND_MAX - 0.5f;

		x[i] = u * u * u * 8.0f;
		ix[i] = rand() % 1000 - 500;
	}
	CK(cudaSetDevice(0));
	CK(cudaStreamCreate(&st));
	CK(cudaMalloc((void **)&dx, bytes));
	CK(cudaMalloc((void **)&dy, bytes));
	CK(cudaMalloc((void **)&dix, N * sizeof(int)));
	CK(ncclGetUniqueId(&id));
	CK(ncclCommInitRank(&comm, 1, id, 0));

	/* Passed through untouched. */
	CK(cudaMemcpy(dix, ix, N * sizeof(int), cudaMemcpyHostToDevice));
	CK(ncclAllReduce(dix, dix, N, ncclInt32, ncclSum, comm, st));
	CK(cudaStreamSynchronize(st));
	CK(cudaMemcpy(iy, dix, N * sizeof(int), cudaMemcpyDeviceToHost));
	if (memcmp(ix, iy, N * sizeof(int))) {
		fprintf(stderr, "nccl_smoke: int32 pass-through differs\n");
		rc = 1;
	}

	/* Two rounds on the same buffer key (dx): residuals carry over. */
	memset(v, 0, bytes);
	for (int round = 0; round < 2 && !rc; round++) {
		CK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
		CK(ncclAllReduce(dx, dy, N, ncclFloat32, ncclSum, comm, st));
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
		if (!strncmp(codec, "topk:", 5)) {
			/* v = x + residual of the last round = x + (v - y) */
			for (size_t i = 0; i < N; i++)
				v[i] += x[i];
			rc = check_topk(v, y, N, atof(codec + 5));
			for (size_t i = 0; i < N; i++)
				v[i] -= y[i];
		} else if (round == 0) {
			rc = check_dense(codec, x, y, N);
		}
	}
	/* In place as well. */
	if (!rc && !strcmp(codec, "none")) {
		CK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
		CK(ncclAllReduce(dx, dx, N, ncclFloat32, ncclSum, comm, st));
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(y, dx, bytes, cudaMemcpyDeviceToHost));
		rc = check_dense(codec, x, y, N);
	}
	CK(ncclCommDestroy(comm));
	printf("nccl_smoke: %s: %s\n", codec, rc ? "FAIL" : "ok");
	return rc;
}
