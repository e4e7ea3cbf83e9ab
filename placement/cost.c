/*
 * cost.c - the alpha-beta communication cost model (docs/placement.md).
 *
 * Every term is the time of one collective pattern on the slowest tier it
 * crosses, with bandwidth and latency per tier from the cluster model
 * (oversubscription applied) and the island's own NVLink bandwidth where
 * the cluster file gives one. Groups that run concurrently are charged by
 * their slowest member (synchronous training waits for it).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "place_priv.h"

#define BYTES_PER_US(gbps) ((gbps)*1e3) /* GB/s -> bytes per microsecond */

/* Tier between two GPUs, from the context's lookup tables. */
static isle_tier place_tier(const isle_place_ctx *c, int na, int ga, int nb,
			    int gb)
{
	int ia = c->gpu_island[na * ISLE_MAX_GPUS_PER_NODE + ga];
	int ib = c->gpu_island[nb * ISLE_MAX_GPUS_PER_NODE + gb];

	if (ia >= 0 && ia == ib)
		return ISLE_TIER_ISLAND;
	if (na == nb)
		return ISLE_TIER_NODE;
	if (c->leafg[na] == c->leafg[nb])
		return ISLE_TIER_LEAF;
	if (c->spineg[na] == c->spineg[nb])
		return ISLE_TIER_SPINE;
	return ISLE_TIER_CORE;
}

static double tier_bw(const isle_place_ctx *c, isle_tier tier, int island)
{
	if (tier == ISLE_TIER_ISLAND && island >= 0 && c->island_bw[island] > 0)
		return c->island_bw[island];
	return c->tier_bw[tier];
}

/* Ring allreduce of m bytes over n ranks: 2(n-1) steps of m/n bytes. */
static double ring(int n, double m, double lat, double bw)
{
	if (n <= 1 || bw <= 0)
		return 0.0;
	return 2.0 * (n - 1) * lat + 2.0 * (n - 1) / n * m / BYTES_PER_US(bw);
}

static double p2p(double m, double lat, double bw)
{
	return bw > 0 ? lat + m / BYTES_PER_US(bw) : 0.0;
}

static const struct isle_place_rank *at(const struct isle_place_rank *ranks,
					const struct pnorm *q, int t, int s,
					int d)
{
	return &ranks[t + q->tp * (s + q->pp * d)];
}

static int gpu_island(const isle_place_ctx *c, const struct isle_place_rank *r)
{
	return c->gpu_island[r->node * ISLE_MAX_GPUS_PER_NODE + r->gpu];
}

/* One TP group whose loosest tier is worst and first GPU in island. */
double isle__place_tp_group_cost(const isle_place_ctx *c, const struct pnorm *q,
				 isle_tier worst, int island)
{
	double m, calls;

	if (q->workload == ISLE_WORKLOAD_INFER) {
		m = c->o.infer_msg_bytes;
		calls = c->o.infer_calls / q->pp;
	} else {
		m = c->o.tp_msg_bytes;
		calls = c->o.tp_calls / q->pp;
	}
	return calls *
	       ring(q->tp, m, c->tier_lat[worst], tier_bw(c, worst, island));
}

/* One stage-boundary send over tier, from a GPU in island. */
double isle__place_pp_pair_cost(const isle_place_ctx *c, const struct pnorm *q,
				isle_tier tier, int island)
{
	double m, calls;

	if (q->workload == ISLE_WORKLOAD_INFER) {
		m = c->o.infer_msg_bytes;
		calls = 1.0;
	} else {
		m = c->o.pp_msg_bytes;
		calls = c->o.pp_calls;
	}
	return calls * p2p(m, c->tier_lat[tier], tier_bw(c, tier, island));
}

/* TP: each group is a ring on the loosest tier inside it. */
static double tp_cost(isle_place_ctx *c, const struct pnorm *q,
		      const struct isle_place_rank *ranks, int n,
		      int *in_island)
{
	double worst = 0.0;
	int g, i, inside = 0;

	for (g = 0; g + q->tp <= n; g += q->tp) {
		const struct isle_place_rank *a = &ranks[g];
		isle_tier worst_t = ISLE_TIER_ISLAND;
		double cost;

		for (i = 1; i < q->tp; i++) {
			isle_tier t =
			    place_tier(c, a->node, a->gpu, ranks[g + i].node,
				       ranks[g + i].gpu);
			if (t > worst_t)
				worst_t = t;
		}
		if (worst_t == ISLE_TIER_ISLAND)
			inside++;
		cost =
		    isle__place_tp_group_cost(c, q, worst_t, gpu_island(c, a));
		if (cost > worst)
			worst = cost;
	}
	if (in_island)
		*in_island = inside;
	return worst;
}

/* PP: per stage boundary, the slowest of the concurrent sends. */
static double pp_cost(isle_place_ctx *c, const struct pnorm *q,
		      const struct isle_place_rank *ranks)
{
	double sum = 0.0;
	int s, t, d;

	for (s = 0; s + 1 < q->pp; s++) {
		double worst = 0.0;

		for (d = 0; d < q->dp; d++)
			for (t = 0; t < q->tp; t++) {
				const struct isle_place_rank *a, *b;
				isle_tier tier;
				double cost;

				a = at(ranks, q, t, s, d);
				b = at(ranks, q, t, s + 1, d);
				tier = place_tier(c, a->node, a->gpu, b->node,
						  b->gpu);
				cost = isle__place_pp_pair_cost(
				    c, q, tier, gpu_island(c, a));
				if (cost > worst)
					worst = cost;
			}
		sum += worst;
	}
	return sum;
}

/* Tree level of each stage of a DP group's hierarchical allreduce. */
static const int dp_levels[DP_STAGES] = {PV_UNIT, PV_DOMAIN, PV_LEAF, PV_SPINE,
					 PV_ROOT};

/* Vertex above unit v at a tree level (the domain level falls back to the
 * node for nodes outside multi-node domains). */
static int anc_walk(const isle_place_ctx *c, int v, int level)
{
	while (c->v[v].level < level) {
		int p = c->v[v].parent;

		if (level == PV_DOMAIN && c->v[p].level > PV_DOMAIN)
			break;
		v = p;
	}
	return v;
}

int isle__place_cost_init(isle_place_ctx *c)
{
	int i, k;

	c->dp_anc = malloc((size_t)c->nv * DP_STAGES * sizeof(int));
	if (!c->dp_anc)
		return -ENOMEM;
	for (i = 0; i < c->nv; i++)
		for (k = 0; k < DP_STAGES; k++)
			c->dp_anc[i * DP_STAGES + k] =
			    c->v[i].level == PV_UNIT
				? anc_walk(c, i, dp_levels[k])
				: -1;
	return 0;
}

/*
 * DP: a hierarchical allreduce per DP group. Stage k merges the parts of
 * the group that share a level-k vertex: fan-in f = parts below / parts at
 * this level, a ring of f over the stage's tier on the message left after
 * the reduce-scatters below it. Oversubscribed tiers are slower through
 * their bandwidth, so spreading over them costs more.
 *
 * All stages are counted in one pass over the group, each with its own
 * stamps (c->stamp + k * nv): per stage the parts of the group below level
 * k merge into their level-k vertices; a stage's tier and island
 * bandwidth come from the merges that actually happen (a part with one
 * sub-part sends nothing).
 */
double isle__place_dp_group_cost(isle_place_ctx *c, const struct pnorm *q,
				 const struct isle_place_rank *ranks, int s,
				 int t)
{
	double m = c->o.dp_bytes / ((double)q->tp * q->pp), cost = 0.0;
	double below = q->dp, isl_bw[DP_STAGES];
	isle_tier tier[DP_STAGES];
	int parts[DP_STAGES];
	int d, k;

	for (k = 0; k < DP_STAGES; k++) {
		tier[k] = k <= 1 ? ISLE_TIER_ISLAND : (isle_tier)k;
		isl_bw[k] = 0.0;
		parts[k] = 0;
	}
	isle__place_next_gen(c);
	for (d = 0; d < q->dp; d++) {
		const struct isle_place_rank *r = at(ranks, q, t, s, d);
		const int *a =
		    &c->dp_anc[c->gpu_unit[r->node * ISLE_MAX_GPUS_PER_NODE +
					   r->gpu] *
			       DP_STAGES];

		for (k = 0; k < DP_STAGES; k++) {
			unsigned *st = c->stamp + (size_t)k * c->nv;
			int *sub = c->subparts + (size_t)k * c->nv;
			int up = a[k];

			if (k > 0) {
				int low = a[k - 1];

				if (st[low] == c->gen)
					continue; /* sub-part already counted */
				st[low] = c->gen;
			}
			if (st[up] != c->gen) {
				st[up] = c->gen;
				sub[up] = 0;
				parts[k]++;
			}
			if (++sub[up] != 2)
				continue;
			/* a real merge: nodes merge over NVLink only inside
			 * a multi-node domain; islands by their own
			 * bandwidth */
			if (k == 1 && !c->v[up].multi)
				tier[k] = ISLE_TIER_NODE;
			if (k <= 1) {
				double b = tier_bw(c, ISLE_TIER_ISLAND,
						   gpu_island(c, r));

				if (isl_bw[k] == 0.0 || b < isl_bw[k])
					isl_bw[k] = b;
			}
		}
	}
	for (k = 0; k < DP_STAGES; k++) {
		double f, bw;

		f = below / parts[k];
		below = parts[k];
		if (f <= 1.0)
			continue;
		bw = tier[k] == ISLE_TIER_ISLAND ? isl_bw[k]
						 : c->tier_bw[tier[k]];
		cost += 2.0 * (f - 1.0) * c->tier_lat[tier[k]] +
			2.0 * (f - 1.0) / f * m / BYTES_PER_US(bw);
		m /= f;
	}
	return cost;
}

static double dp_cost(isle_place_ctx *c, const struct pnorm *q,
		      const struct isle_place_rank *ranks)
{
	double worst = 0.0;
	int s, t;

	if (q->dp <= 1 || q->workload == ISLE_WORKLOAD_INFER)
		return 0.0;
	for (s = 0; s < q->pp; s++)
		for (t = 0; t < q->tp; t++) {
			double cost =
			    isle__place_dp_group_cost(c, q, ranks, s, t);

			if (cost > worst)
				worst = cost;
		}
	return worst;
}

void isle__place_cost(isle_place_ctx *c, const struct pnorm *q,
		      const struct isle_place_rank *ranks, int n,
		      struct isle_place_cost *out, isle_tier *span,
		      int *in_island)
{
	int i;

	out->tp = tp_cost(c, q, ranks, n, in_island);
	out->pp = pp_cost(c, q, ranks);
	out->dp = dp_cost(c, q, ranks);
	out->total =
	    c->o.w_tp * out->tp + c->o.w_pp * out->pp + c->o.w_dp * out->dp;
	if (span) {
		isle_tier worst = ISLE_TIER_ISLAND;

		for (i = 1; i < n; i++) {
			isle_tier t = place_tier(c, ranks[0].node, ranks[0].gpu,
						 ranks[i].node, ranks[i].gpu);
			if (t > worst)
				worst = t;
		}
		*span = worst;
	}
}
