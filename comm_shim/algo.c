/*
 * algo.c - the alpha-beta cost model that picks the allreduce algorithm.
 *
 * A message of b bytes over a link of latency a (us) and bandwidth w (GB/s)
 * costs a + b / (w * 1e3) us. Costs assume fp32 payloads; a codec scales
 * the bytes on the wire by encoded_size / raw_size. Encode/decode time is
 * not modelled: the CPU codecs run near memory bandwidth, far above the
 * network levels they are used on.
 *
 * The library's own allreduce (passthrough) is a candidate too, costed as
 * the best of what a tuned MPI runs (recursive doubling, Rabenseifner's
 * reduce-scatter + allgather, ring) with ranks numbered level by level, so
 * that its short-distance steps stay on the fast levels. It wins ties: the
 * shim only takes over where the model says it is strictly faster.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "comm_priv.h"

static const char *const algo_names[ISLE_ALGO_COUNT] = {
    [ISLE_ALGO_AUTO] = "auto",
    [ISLE_ALGO_RING] = "ring",
    [ISLE_ALGO_RDOUBLING] = "rdoubling",
    [ISLE_ALGO_HIER] = "hier",
    [ISLE_ALGO_PASSTHROUGH] = "passthrough",
    [ISLE_ALGO_LEADER] = "leader",
};

const char *isle_algo_name(isle_algo a)
{
	return (unsigned)a < ISLE_ALGO_COUNT ? algo_names[a] : "?";
}

int isle_algo_parse(const char *s, isle_algo *a)
{
	for (int i = 0; i < ISLE_ALGO_COUNT; i++)
		if (s && !strcmp(s, algo_names[i])) {
			*a = (isle_algo)i;
			return 0;
		}
	return -EINVAL;
}

static double xfer_us(double lat_us, double bw_gbps, double bytes)
{
	return lat_us + bytes / (bw_gbps * 1e3);
}

static double wire_ratio(const struct isle_codec *c, double bytes)
{
	size_t n = (size_t)(bytes / 4);

	return n ? (double)isle_codec_encoded_size(c, n) / (4.0 * (double)n)
		 : 1.0;
}

/* Ring reduce-scatter + allgather (or the all-to-all pair for codecs that
 * cannot be summed: same volume, same message count). */
static double ring_us(int p, double lat, double bw, double bytes, double r)
{
	if (p <= 1)
		return 0;
	return 2.0 * (p - 1) * xfer_us(lat, bw, bytes * r / p);
}

static int ceil_log2(int p)
{
	int k = 0;

	while ((1L << k) < p)
		k++;
	return k;
}

static double rd_us(int p, double lat, double bw, double bytes)
{
	int steps = 0, pof2 = 1;

	if (p <= 1)
		return 0;
	while (pof2 * 2 <= p) {
		pof2 *= 2;
		steps++;
	}
	/* Non-powers of two fold the extra ranks in and out: two more steps. */
	return (steps + (pof2 != p ? 2 : 0)) * xfer_us(lat, bw, bytes);
}

/* Level crossed between ranks d apart (ranks numbered level by level). */
static int level_of(const struct isle_algo_level *lv, int nlevels, long d)
{
	long span = 1;

	for (int j = 0; j < nlevels; j++) {
		span *= lv[j].group_size;
		if (d < span)
			return j;
	}
	return nlevels - 1;
}

/*
 * The library's recursive doubling (rab = 0) or Rabenseifner (rab = 1):
 * log2 steps at distance 1, 2, 4...; Rabenseifner halves the message each
 * step and runs twice (reduce-scatter, allgather). Ranks beyond the power
 * of two fold in and out over the slowest level (two full messages).
 */
static double lib_us(const struct isle_algo_level *lv, int nlevels, long p,
		     double bytes, int rab, double flat_lat, double flat_bw)
{
	double t = 0, b = bytes;
	long pof2 = 1;

	if (p <= 1)
		return 0;
	while (pof2 * 2 <= p)
		pof2 *= 2;
	for (long d = 1; d < pof2; d *= 2) {
		const struct isle_algo_level *l = &lv[level_of(lv, nlevels, d)];

		if (rab) {
			b /= 2;
			t += 2 * xfer_us(l->lat_us, l->bw_gbps, b);
		} else {
			t += xfer_us(l->lat_us, l->bw_gbps, b);
		}
	}
	if (pof2 != p)
		t += 2 * xfer_us(flat_lat, flat_bw, bytes);
	return t;
}

static double hier_us(const struct isle_algo_level *lv, int nlevels,
		      double bytes)
{
	const struct isle_algo_level *l = lv;
	double r = wire_ratio(&l->codec, bytes);
	int g = l->group_size;

	if (nlevels == 1) {
		double ring = ring_us(g, l->lat_us, l->bw_gbps, bytes, r);

		if (l->codec.kind == ISLE_CODEC_NONE) {
			double rd = rd_us(g, l->lat_us, l->bw_gbps, bytes);

			return rd < ring ? rd : ring;
		}
		return ring;
	}
	return ring_us(g, l->lat_us, l->bw_gbps, bytes, r) +
	       hier_us(lv + 1, nlevels - 1, g > 1 ? bytes / g : bytes);
}

/* Binomial reduce and broadcast per level below the top, whole messages;
 * recursive doubling among the top level's leaders. */
static double leader_us(const struct isle_algo_level *lv, int nlevels, double b)
{
	double t = rd_us(lv[nlevels - 1].group_size, lv[nlevels - 1].lat_us,
			 lv[nlevels - 1].bw_gbps, b);

	for (int i = 0; i < nlevels - 1; i++)
		t += 2.0 * ceil_log2(lv[i].group_size) *
		     xfer_us(lv[i].lat_us, lv[i].bw_gbps, b);
	return t;
}

double isle_algo_cost_us(isle_algo algo, const struct isle_algo_level *lv,
			 int nlevels, size_t bytes)
{
	double bw = INFINITY, lat = 0, b = (double)bytes;
	long p = 1;

	if (nlevels < 1 || nlevels > ISLE_PLAN_MAX_LEVELS)
		return -1;
	for (int i = 0; i < nlevels; i++) {
		if (lv[i].group_size < 1 || !(lv[i].bw_gbps > 0))
			return -1;
		p *= lv[i].group_size;
		/* A flat algorithm crosses the slowest level that is in use. */
		if (lv[i].group_size > 1 || i == 0) {
			bw = lv[i].bw_gbps < bw ? lv[i].bw_gbps : bw;
			lat = lv[i].lat_us > lat ? lv[i].lat_us : lat;
		}
	}
	switch (algo) {
	case ISLE_ALGO_RING:
		return ring_us((int)p, lat, bw, b, 1.0);
	case ISLE_ALGO_RDOUBLING:
		return rd_us((int)p, lat, bw, b);
	case ISLE_ALGO_HIER:
		return hier_us(lv, nlevels, b);
	case ISLE_ALGO_LEADER:
		return leader_us(lv, nlevels, b);
	case ISLE_ALGO_PASSTHROUGH:
		return fmin(ring_us((int)p, lat, bw, b, 1.0),
			    fmin(lib_us(lv, nlevels, p, b, 0, lat, bw),
				 lib_us(lv, nlevels, p, b, 1, lat, bw)));
	default:
		return -1;
	}
}

isle_algo isle_algo_choose(const struct isle_algo_level *lv, int nlevels,
			   size_t bytes, double *cost_us)
{
	static const isle_algo cand[] = {ISLE_ALGO_PASSTHROUGH, ISLE_ALGO_HIER,
					 ISLE_ALGO_RING, ISLE_ALGO_RDOUBLING};
	isle_algo best = ISLE_ALGO_PASSTHROUGH;
	double best_us = INFINITY;

	/*
	 * In order of preference on ties: the library (never slower than
	 * what the job would get without the shim), then hier.
	 */
	for (size_t i = 0; i < ISLE_ARRAY_SIZE(cand); i++) {
		double t = isle_algo_cost_us(cand[i], lv, nlevels, bytes);

		if (t >= 0 && t < best_us) {
			best_us = t;
			best = cand[i];
		}
	}
	if (cost_us)
		*cost_us = best_us;
	return best;
}

uint64_t isle__probe_cost(unsigned shim_mask, int nlib)
{
	uint64_t cost = 0;

	for (int k = 0; k < ISLE__CAL_N; k++)
		cost += (uint64_t)(nlib + !!(shim_mask & (1u << k))) *
			(uint64_t)(isle__cal_reps(k) + 1) *
			((uint64_t)ISLE__CAL_MIN << (2 * k));
	return cost;
}

int isle__probe_due(uint64_t carried, uint64_t cost, double share)
{
	return share <= 0 || (double)cost <= share * (double)carried;
}

uint64_t isle__probe_due_at(uint64_t cost, double share)
{
	uint64_t at;

	if (share <= 0 || !cost)
		return 0;
	if ((double)cost / share >= 1.8e19)
		return UINT64_MAX; /* never */
	at = (uint64_t)((double)cost / share);
	while (at && isle__probe_due(at - 1, cost, share))
		at--;
	while (!isle__probe_due(at, cost, share))
		at++;
	return at;
}
