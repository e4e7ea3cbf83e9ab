/*
 * bench_util.h - what the comm benchmark drivers share (bench_comm,
 * bench_paired, bench_preload): their clock, order statistics, byte counts
 * and the data whose exact sum every rank knows. Benchmark tools only, no
 * library links it; no MPI, so one object serves the Open MPI and MPICH builds.
 */
#ifndef ISLE_BENCH_UTIL_H
#define ISLE_BENCH_UTIL_H

#include <stddef.h>

/* Monotonic wall time, seconds. */
double isle__bench_now_s(void);

/* qsort comparator of doubles, ascending. */
int isle__bench_cmp_dbl(const void *a, const void *b);

/* Quantile q of sorted v[0..n), n >= 1 (linear between closest ranks). */
double isle__bench_quantile(const double *v, int n, double q);

/* "4096", "64K", "256M", "1G" -> *out; -EINVAL on anything else. */
int isle__bench_parse_size(const char *s, size_t *out);

/*
 * The benchmarks' data: integer-valued floats in [-64, 64], most near zero
 * (a cube, like gradients), a pure function of (rank, index), so every rank
 * can compute the exact sum of all ranks' data itself: an allreduce result
 * independent of any MPI (integer sums below 2^24 are exact in fp32).
 * Fills in[0..n) with this rank's data and ref[k] with the exact sum of
 * element rank + k * size, the elements this rank checks.
 */
void isle__bench_fill(int rank, int size, size_t n, float *in, float *ref);

/* Checks out[0..n) where this rank owns the elements (i = rank mod size)
 * against ref: returns how many differ (+0 and -0 alike: sum order) and
 * adds the squared error and the squared reference to err2[0], err2[1]. */
long isle__bench_check(const float *out, const float *ref, size_t n, int rank,
		       int size, double err2[2]);

#endif /* ISLE_BENCH_UTIL_H */
