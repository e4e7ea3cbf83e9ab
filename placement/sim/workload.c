/*
 * workload.c - job streams for islesim: a seeded generator that follows the
 * published job-size mixes, and a CSV reader.
 *
 * Sizes are powers of two: 55% of jobs take 1 GPU (every published median is
 * 1), the rest follow a geometric tail over 2..max whose ratio is solved so
 * that the mean matches the published mean. Durations are log-normal
 * (median 30 min, sigma 1.6: heavy-tailed), arrivals Poisson at the rate
 * that offers the requested load.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

/* shared/data/README.md (InternLM/AcmeTrace cluster_summary.csv) */
const struct sim_mix sim_mixes[] = {
    {"seren", 5.68, 1024},  {"kalos", 26.77, 1024}, {"philly", 1.93, 128},
    {"helios", 3.72, 2048}, {NULL, 0, 0},
};

#define P_ONE 0.55

const struct sim_mix *sim_mix_find(const char *name)
{
	for (int i = 0; sim_mixes[i].name; i++)
		if (!strcmp(sim_mixes[i].name, name))
			return &sim_mixes[i];
	return NULL;
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	/* splitmix64 to spread the seed */
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		r->s[i] = z ^ (z >> 31);
	}
}

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double sim_rng_unif(struct sim_rng *r)
{
	return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

static double normal(struct sim_rng *r)
{
	double u = sim_rng_unif(r), v = sim_rng_unif(r);

	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* Mean of the size distribution with tail ratio q over 2^1..2^kmax. */
static double mix_mean(double q, int kmax)
{
	double w = 0, s = 0;

	for (int k = 1; k <= kmax; k++) {
		w += pow(q, k);
		s += pow(q, k) * ldexp(1.0, k);
	}
	return P_ONE + (1.0 - P_ONE) * s / w;
}

struct sim_job *sim_workload_gen(const struct sim_mix *mix, int njobs,
				 long total_gpus, double load, uint64_t seed)
{
	struct sim_job *jobs;
	struct sim_rng r;
	double lo = 1e-3, hi = 4.0, q, work = 0, t = 0, span;
	double cdf[16];
	int kmax = 0, i, k;
	long cap = total_gpus / 2 > 0 ? total_gpus / 2 : 1;

	if (!mix || njobs <= 0 || total_gpus <= 0 || load <= 0)
		return NULL;
	/* the largest job is the published maximum, at most half the cluster */
	while (kmax < 15 && ldexp(1.0, kmax + 1) <= mix->max_gpus &&
	       ldexp(1.0, kmax + 1) <= cap)
		kmax++;
	for (i = 0; i < 100; i++) {
		q = (lo + hi) / 2;
		if (mix_mean(q, kmax) < mix->mean_gpus)
			lo = q;
		else
			hi = q;
	}
	q = (lo + hi) / 2;
	cdf[0] = P_ONE;
	{
		double w = 0;

		for (k = 1; k <= kmax; k++)
			w += pow(q, k);
		for (k = 1; k <= kmax; k++)
			cdf[k] = cdf[k - 1] + (1.0 - P_ONE) * pow(q, k) / w;
	}
	jobs = calloc((size_t)njobs, sizeof(*jobs));
	if (!jobs)
		return NULL;
	sim_rng_seed(&r, seed);
	for (i = 0; i < njobs; i++) {
		struct sim_job *j = &jobs[i];
		double u = sim_rng_unif(&r);

		for (k = 0; k < kmax && u > cdf[k]; k++)
			;
		j->id = i + 1;
		j->gpus = 1 << k;
		j->duration = 1800.0 * exp(1.6 * normal(&r));
		if (j->duration < 60)
			j->duration = 60;
		if (j->duration > 7 * 86400.0)
			j->duration = 7 * 86400.0;
		j->tp = 1;
		j->pp = 1;
		if (j->gpus >= 8) {
			u = sim_rng_unif(&r);
			j->tp = u < 0.6 ? 8 : u < 0.9 ? 4 : 2;
		} else if (j->gpus == 4) {
			j->tp = sim_rng_unif(&r) < 0.6 ? 4 : 2;
		} else if (j->gpus == 2) {
			j->tp = 2;
		}
		if (j->gpus >= 64) {
			int pp = 2 << (int)(sim_rng_unif(&r) * 3); /* 2,4,8 */

			while (pp > 1 && j->gpus % (j->tp * pp))
				pp /= 2;
			j->pp = pp;
		}
		j->workload =
		    j->gpus >= 2 && j->gpus <= 16 && sim_rng_unif(&r) < 0.2
			? ISLE_WORKLOAD_INFER
			: ISLE_WORKLOAD_TRAIN;
		work += j->gpus * j->duration;
	}
	/* Poisson arrivals over the span that offers `load` */
	span = work / (load * (double)total_gpus);
	for (i = 0; i < njobs; i++) {
		jobs[i].submit = t;
		t += -log(1.0 - sim_rng_unif(&r)) * span / njobs;
	}
	return jobs;
}

int sim_workload_read(const char *path, struct sim_job **out, int *nout,
		      char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct sim_job *jobs = NULL;
	char line[512];
	int n = 0, cap = 0, lineno = 0, rc = 0;
	double last = -1e300;

	*out = NULL;
	*nout = 0;
	if (!f) {
		snprintf(err, errlen, "%s: cannot open (%s)", path,
			 strerror(errno));
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		struct sim_job j = {0};
		char wl[32] = "";
		int got;

		lineno++;
		line[strcspn(line, "\r\n#")] = '\0';
		if (!line[strspn(line, " \t")])
			continue;
		if (strstr(line, "submit"))
			continue; /* header */
		got = sscanf(line, "%lf , %lf , %d , %d , %d , %31[a-z] , %lf",
			     &j.submit, &j.duration, &j.gpus, &j.tp, &j.pp, wl,
			     &j.limit);
		if (got < 5 || j.gpus < 1 || j.tp < 1 || j.pp < 1 ||
		    j.duration <= 0 || j.submit < 0) {
			snprintf(err, errlen,
				 "%s:%d: expected submit,duration,"
				 "gpus,tp,pp[,train|infer[,limit]] with "
				 "positive sizes",
				 path, lineno);
			rc = -EINVAL;
			goto out;
		}
		/* Slurm ends a job at its time limit: a longer run is not a
		 * job Slurm could have run */
		if (got == 7 && j.limit < j.duration) {
			snprintf(err, errlen,
				 "%s:%d: time limit %g s is below the "
				 "duration %g s",
				 path, lineno, j.limit, j.duration);
			rc = -EINVAL;
			goto out;
		}
		if (got >= 6 && isle_workload_parse(wl) < 0) {
			snprintf(err, errlen,
				 "%s:%d: workload '%s' is not "
				 "train or infer",
				 path, lineno, wl);
			rc = -EINVAL;
			goto out;
		}
		if (j.submit < last) {
			snprintf(err, errlen,
				 "%s:%d: submit times must not "
				 "decrease",
				 path, lineno);
			rc = -EINVAL;
			goto out;
		}
		last = j.submit;
		j.workload =
		    got >= 6 ? isle_workload_parse(wl) : ISLE_WORKLOAD_TRAIN;
		if (n == cap) {
			struct sim_job *p;

			cap = cap ? cap * 2 : 64;
			p = realloc(jobs, (size_t)cap * sizeof(*p));
			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			jobs = p;
		}
		j.id = n + 1;
		jobs[n++] = j;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: no jobs", path);
		rc = -EINVAL;
		goto out;
	}
	*out = jobs;
	*nout = n;
	jobs = NULL;
out:
	free(jobs);
	fclose(f);
	return rc;
}
