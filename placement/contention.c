/*
 * contention.c - the load of running jobs on the shared links, and what a
 * candidate placement is charged for crossing links already in use.
 *
 * The shared links the engine knows are the uplinks of a leaf group (ToR
 * uplinks) and of a spine group (aggregation uplinks): a job whose GPUs
 * sit under one leaf group never crosses them. The loads are kept per
 * group, in GPUs of traffic, added when a job starts and removed when it
 * ends, so a decision reads them in O(1) per group it touches instead of
 * walking every running job.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

enum { CC_LEAF = 0, CC_SPINE = 1 };

/* Load per GPU on the links a job crosses, by traffic class. */
static double traffic_weight(isle_traffic tr)
{
	switch (tr) {
	case ISLE_TRAFFIC_PP:
		return 0.5;
	case ISLE_TRAFFIC_INFER:
		return 0.1;
	default:
		return 1.0;
	}
}

static double oversub(const isle_topo *t, isle_tier k)
{
	return t->tier[k].oversub >= 1 ? t->tier[k].oversub : 1;
}

int isle__place_cc_init(isle_place_ctx *c)
{
	const isle_topo *t = c->t;
	static const isle_tier tier[2] = {ISLE_TIER_LEAF, ISLE_TIER_SPINE};
	int k, i;

	for (k = 0; k < 2; k++) {
		size_t n = (size_t)t->ngroups[tier[k]] + 1;

		c->cc_ngroups[k] = t->ngroups[tier[k]];
		c->cc_load[k] = calloc(n, sizeof(double));
		c->cc_cap[k] = calloc(n, sizeof(double));
		c->cc_cnt[k] = calloc(n, sizeof(int));
		c->cc_list[k] = malloc(n * sizeof(int));
		if (!c->cc_load[k] || !c->cc_cap[k] || !c->cc_cnt[k] ||
		    !c->cc_list[k])
			return -ENOMEM;
	}
	/* a leaf group's uplinks carry its GPUs over the oversubscription
	 * into the spines; a spine group's what arrives there over the one
	 * into the cores */
	for (i = 0; i < t->nnodes; i++) {
		int lg = c->leafg[i], sg = c->spineg[i];
		double os = oversub(t, ISLE_TIER_SPINE);

		if (lg >= 0 && lg < c->cc_ngroups[CC_LEAF])
			c->cc_cap[CC_LEAF][lg] += t->nodes[i].ngpus / os;
		if (sg >= 0 && sg < c->cc_ngroups[CC_SPINE])
			c->cc_cap[CC_SPINE][sg] +=
			    t->nodes[i].ngpus / os / oversub(t, ISLE_TIER_CORE);
	}
	return 0;
}

void isle__place_cc_fini(isle_place_ctx *c)
{
	for (int k = 0; k < 2; k++) {
		free(c->cc_load[k]);
		free(c->cc_cap[k]);
		free(c->cc_cnt[k]);
		free(c->cc_list[k]);
	}
}

/* GPUs per group of kind k: cc_cnt[k] of the groups in cc_list[k]; returns
 * how many groups. The caller clears the counts (count_clear). */
static int count_add(isle_place_ctx *c, int k, int node, int gpus, int nlist)
{
	int g = k == CC_LEAF ? c->leafg[node] : c->spineg[node];

	if (g < 0 || g >= c->cc_ngroups[k])
		return nlist;
	if (!c->cc_cnt[k][g])
		c->cc_list[k][nlist++] = g;
	c->cc_cnt[k][g] += gpus;
	return nlist;
}

static void count_clear(isle_place_ctx *c, int k, int nlist)
{
	for (int i = 0; i < nlist; i++)
		c->cc_cnt[k][c->cc_list[k][i]] = 0;
}

/* What a job with cnt GPUs in a group it crosses loads there. */
static double crossing_load(const isle_place_ctx *c, int cnt, double w)
{
	return w * (cnt < c->max_node_gpus ? cnt : c->max_node_gpus);
}

static int load_apply(isle_place_ctx *c, const int *nodes,
		      const uint64_t *masks, int nnodes, isle_traffic tr,
		      double sign)
{
	double w;
	int i, k;

	if (!c || (nnodes > 0 && (!nodes || !masks)) || nnodes < 0 ||
	    (int)tr < ISLE_TRAFFIC_AUTO || tr > ISLE_TRAFFIC_INFER)
		return -EINVAL;
	for (i = 0; i < nnodes; i++)
		if (nodes[i] < 0 || nodes[i] >= c->nnodes)
			return -EINVAL;
	w = traffic_weight(tr);
	for (k = 0; k < 2; k++) {
		int n = 0;

		for (i = 0; i < nnodes; i++)
			n = count_add(c, k, nodes[i],
				      isle__place_popc(masks[i]), n);
		for (i = 0; n > 1 && i < n; i++) {
			int g = c->cc_list[k][i];
			double *l = &c->cc_load[k][g];

			*l += sign * crossing_load(c, c->cc_cnt[k][g], w);
			if (*l < 1e-9)
				*l = 0; /* rounding after the last job left */
		}
		count_clear(c, k, n);
	}
	return 0;
}

int isle_place_load_add(isle_place_ctx *c, const int *nodes,
			const uint64_t *masks, int nnodes, isle_traffic tr)
{
	return load_apply(c, nodes, masks, nnodes, tr, 1.0);
}

int isle_place_load_remove(isle_place_ctx *c, const int *nodes,
			   const uint64_t *masks, int nnodes, isle_traffic tr)
{
	return load_apply(c, nodes, masks, nnodes, tr, -1.0);
}

int isle_place_link_load(const isle_place_ctx *c, isle_tier tier, int group,
			 double *load, double *cap)
{
	int k = tier == ISLE_TIER_LEAF ? CC_LEAF : CC_SPINE;

	if (!c || (tier != ISLE_TIER_LEAF && tier != ISLE_TIER_SPINE) ||
	    group < 0 || group >= c->cc_ngroups[k])
		return -EINVAL;
	if (load)
		*load = c->cc_load[k][group];
	if (cap)
		*cap = c->cc_cap[k][group];
	return 0;
}

static double share(const isle_place_ctx *c, int k, int g)
{
	double cap = c->cc_cap[k][g];

	return cap > 0 ? c->cc_load[k][g] / cap : 0;
}

double isle__place_cc_share(const isle_place_ctx *c, int v)
{
	const struct pv *p = &c->v[v];

	if (p->level == PV_LEAF && p->id >= 0 && p->id < c->cc_ngroups[CC_LEAF])
		return share(c, CC_LEAF, p->id);
	if (p->level == PV_SPINE && p->id >= 0 &&
	    p->id < c->cc_ngroups[CC_SPINE])
		return share(c, CC_SPINE, p->id);
	return 0;
}

/*
 * The load share of the links the candidate crosses, weighted by what it
 * would add to each, times the inter-node part of its cost: crossing idle
 * links is free, crossing links running jobs fill costs up to their
 * share again (and more where they are oversubscribed).
 */
double isle__place_cc_term(isle_place_ctx *c, const struct pnorm *q,
			   const struct isle_place_rank *ranks, int n,
			   const struct isle_place_cost *cost)
{
	double w, num = 0, den = 0;
	int i, k;

	if (c->o.contention_weight <= 0)
		return 0;
	w = traffic_weight(q->traffic);
	for (k = 0; k < 2; k++) {
		int m = 0;

		for (i = 0; i < n; i++)
			m = count_add(c, k, ranks[i].node, 1, m);
		for (i = 0; m > 1 && i < m; i++) {
			int g = c->cc_list[k][i];
			double add = crossing_load(c, c->cc_cnt[k][g], w);

			num += add * share(c, k, g);
			den += add;
		}
		count_clear(c, k, m);
	}
	if (den <= 0)
		return 0;
	return c->o.contention_weight *
	       (c->o.w_pp * cost->pp + c->o.w_dp * cost->dp) * (num / den);
}

isle_traffic isle_traffic_of(const struct isle_place_req *req)
{
	int gpus;

	if (req->traffic != ISLE_TRAFFIC_AUTO)
		return req->traffic;
	if (req->workload == ISLE_WORKLOAD_INFER)
		return ISLE_TRAFFIC_INFER;
	gpus = req->gpus ? req->gpus : req->nodes * req->gpus_per_node;
	if (req->pp > 1 && req->tp > 0 && gpus <= req->tp * req->pp)
		return ISLE_TRAFFIC_PP;
	return ISLE_TRAFFIC_DP;
}

static const char *const traffic_names[] = {"auto", "dp", "pp", "infer"};

const char *isle_traffic_name(isle_traffic tr)
{
	if ((int)tr < ISLE_TRAFFIC_AUTO || tr > ISLE_TRAFFIC_INFER)
		return NULL;
	return traffic_names[tr];
}

int isle_traffic_parse(const char *s)
{
	static const struct {
		const char *name;
		isle_traffic tr;
	} alias[] = {{"train", ISLE_TRAFFIC_DP},
		     {"pipeline", ISLE_TRAFFIC_PP},
		     {"inference", ISLE_TRAFFIC_INFER}};
	size_t i;

	if (!s)
		return -1;
	for (i = 0; i < sizeof(traffic_names) / sizeof(*traffic_names); i++)
		if (!strcmp(s, traffic_names[i]))
			return (int)i;
	for (i = 0; i < sizeof(alias) / sizeof(*alias); i++)
		if (!strcmp(s, alias[i].name))
			return alias[i].tr;
	return -1;
}
