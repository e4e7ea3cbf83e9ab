/*
 * stats.c - islesim's one clock and its order statistics, shared by the
 * simulation (sim.c), the decision-time runs (main.c) and the fabric
 * replay (fabric_replay.c).
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "islesim.h"

double sim_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double sim_pct(double *v, int n, double p)
{
	int k;

	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	k = (int)ceil(p * n) - 1;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return v[k];
}

double sim_median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double sim_mean(const double *v, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	return n > 0 ? s / n : 0.0;
}
