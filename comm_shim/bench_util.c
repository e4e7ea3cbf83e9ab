/*
 * bench_util.c - the allreduce benchmark drivers' shared helpers
 * (bench_util.h).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

double isle__bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int isle__bench_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double isle__bench_quantile(const double *v, int n, double q)
{
	double x = q * (n - 1);
	int i = (int)x;

	return i + 1 < n ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[n - 1];
}

int isle__bench_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

/* The data (bench_util.h): a mix of (rank, index) into a cube. */
static float datum(int rank, size_t i)
{
	uint64_t z = ((uint64_t)rank << 40) ^ (uint64_t)i;
	double u;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	u = (double)(z >> 11) / 9007199254740992.0 - 0.5;
	return (float)rint(u * u * u * 512.0);
}

void isle__bench_fill(int rank, int size, size_t n, float *in, float *ref)
{
	for (size_t i = 0; i < n; i++)
		in[i] = datum(rank, i);
	for (size_t i = (size_t)rank; i < n; i += (size_t)size) {
		float sum = 0;

		for (int r = 0; r < size; r++)
			sum += datum(r, i);
		ref[i / (size_t)size] = sum;
	}
}

long isle__bench_check(const float *out, const float *ref, size_t n, int rank,
		       int size, double err2[2])
{
	long bad = 0;

	for (size_t i = (size_t)rank; i < n; i += (size_t)size) {
		float r = ref[i / (size_t)size];
		double d = (double)out[i] - (double)r;

		bad += out[i] != r;
		err2[0] += d * d;
		err2[1] += (double)r * r;
	}
	return bad;
}
