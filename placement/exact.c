/*
 * exact.c - the exact branch and bound over rank orders that the engine
 * runs for small jobs on small clusters, seeded with the best fill.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

/* --- Exact search for small jobs ---------------------------------------------
 *
 * The fills above build a few GPU sets per scope and take the rank order
 * from them in two layouts; for jobs that mix TP, PP and DP the cheapest
 * placement can use a GPU set no fill builds (e.g. stage pairs on one node
 * and replicas on the next, or three nodes of one leaf instead of two
 * nodes across the core) or an order neither layout gives. For small jobs
 * on small clusters the engine then runs a branch and bound over rank
 * orders, seeded with the best fill: rank r goes to a unit (GPUs of one
 * node inside one island are interchangeable for the cost model), and
 *  - symmetric orders are visited once: replicas (and TP indices) in
 *    non-decreasing order of their units, and among untouched sibling
 *    subtrees with the same free-GPU structure (signature) only the first
 *    (each is a necessary condition of the lexicographically smallest
 *    order of a symmetry class, so together they keep one per class);
 *  - partial orders are cut when a lower bound of their cost (finished TP
 *    groups, stage pairs placed, the bandwidth part of each DP group's
 *    hierarchical allreduce so far plus a merge it cannot avoid) is not
 *    below the best cost found.
 * It runs when at most EXACT_MAX_UNITS units have free GPUs. A search-node
 * budget bounds the time; with it spent the best order found so far is
 * kept (never worse than the fills). docs/placement.md has the details.
 */
#define EXACT_MAX_GPUS 16
#define EXACT_BUDGET 10000L
#define EXACT_MAX_UNITS 64
#define EXACT_EPS 1e-9

struct xsearch {
	const struct pnorm *q;
	int G, blk;
	int seq[EXACT_MAX_GPUS]; /* unit vertex of each rank */
	/* per rank: unit, domain or node, leaf, spine, root */
	int anc[EXACT_MAX_GPUS][5];
	unsigned char eqd[EXACT_MAX_GPUS], eqt[EXACT_MAX_GPUS];
	struct isle_place_rank r[EXACT_MAX_GPUS], best[EXACT_MAX_GPUS];
	double ppw[EXACT_MAX_GPUS]; /* worst send per stage boundary */
	double dpl[EXACT_MAX_GPUS]; /* DP bound per (stage, tp index) */
	double dp_unit[5];	    /* bound added by a merge at level k */
	double dp_need[5];	    /* least a merge at level k or above adds */
	double tpmax, ppsum, dpmax, ub;
	int owed; /* GPUs still needed on touched nodes (gpus_per_node) */
	long nodes;
	int found;
};

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Signatures bottom-up (children have larger ids than their parent) and
 * per vertex the previous sibling that is equal. */
static void exact_prepare(isle_place_ctx *c, int G)
{
	int i, k;

	for (i = 0; i < c->nv; i++) {
		c->sig[i] = 0;
		c->xcnt[i] = 0;
	}
	for (i = c->nv - 1; i >= 0; i--) {
		const struct pv *p = &c->v[i];

		if (p->level == PV_UNIT) {
			int f = c->freec[i] < G ? c->freec[i] : G;
			double bw =
			    p->island >= 0 && c->island_bw[p->island] > 0
				? c->island_bw[p->island]
				: c->tier_bw[ISLE_TIER_ISLAND];
			uint64_t b;

			memcpy(&b, &bw, sizeof(b));
			c->sig[i] = mix64(mix64(b) ^ (uint64_t)f << 8 ^
					  (uint64_t)p->multi << 1 ^
					  (uint64_t)(p->island >= 0));
		} else {
			c->sig[i] = mix64(c->sig[i] ^ (uint64_t)p->level << 56);
		}
		if (i > 0)
			c->sig[p->parent] += mix64(c->sig[i]);
	}
	c->iso_prev[c->root] = -1;
	for (i = 0; i < c->nv; i++) {
		const struct pv *p = &c->v[i];

		for (k = 0; k < p->nchild; k++) {
			int ch = c->child[p->first + k], j;

			c->iso_prev[ch] = -1;
			for (j = k - 1; j >= 0; j--)
				if (c->sig[c->child[p->first + j]] ==
				    c->sig[ch]) {
					c->iso_prev[ch] =
					    c->child[p->first + j];
					break;
				}
		}
	}
}

static isle_tier unit_tier(const isle_place_ctx *c, int a, int b)
{
	const struct pv *x = &c->v[a], *y = &c->v[b];

	if (x->island >= 0 && x->island == y->island)
		return ISLE_TIER_ISLAND;
	if (x->node == y->node)
		return ISLE_TIER_NODE;
	if (c->leafg[x->node] == c->leafg[y->node])
		return ISLE_TIER_LEAF;
	if (c->spineg[x->node] == c->spineg[y->node])
		return ISLE_TIER_SPINE;
	return ISLE_TIER_CORE;
}

static int nth_bit(uint64_t m, int n)
{
	while (n-- > 0)
		m &= m - 1;
	return __builtin_ctzll(m);
}

static void exact_leaf(isle_place_ctx *c, struct xsearch *x)
{
	struct isle_place_cost cost;

	if (x->owed)
		return;
	isle__place_cost(c, x->q, x->r, x->G, &cost, NULL, NULL);
	if (cost.total < x->ub * (1.0 - EXACT_EPS)) {
		x->ub = cost.total;
		memcpy(x->best, x->r, (size_t)x->G * sizeof(*x->r));
		x->found = 1;
	}
}

static int exact_rec(isle_place_ctx *c, struct xsearch *x, int pos);

/*
 * What the DP group of rank rk (replicas 0..d placed) must still add to
 * the bound beyond x->dpmax: its remaining ranks need a new vertex at
 * level L when the level-L vertices it touches have fewer GPUs left, and
 * the first rank there merges at level L+1 or above.
 */
static double exact_dp_ahead(const isle_place_ctx *c, const struct xsearch *x,
			     int rk, int d)
{
	int left = x->q->dp - 1 - d, gi = rk % x->blk, L, e, f;
	double need = 0.0;

	for (L = 3; L >= 1; L--) {
		long cap = 0;

		for (e = 0; e <= d && cap < left; e++) {
			int v = x->anc[gi + e * x->blk][L];

			for (f = 0; f < e; f++)
				if (x->anc[gi + f * x->blk][L] == v)
					break;
			if (f == e)
				cap += c->freec[v] - c->xcnt[v];
		}
		if (cap < left) {
			need = x->dp_need[L + 1];
			break;
		}
	}
	if (x->dpl[gi] + need > x->dpmax)
		return x->dpl[gi] + need - x->dpmax;
	return 0.0;
}

/* Rank of (TP index t, stage s, replica d), -1 if out of range. */
static int xrank(const struct pnorm *q, int t, int s, int d)
{
	if (t < 0 || s < 0 || d < 0)
		return -1;
	return t + q->tp * (s + q->pp * d);
}

/*
 * Places the rank at position pos on unit u if the constraints and the
 * bound allow, recurses, undoes. Positions go stage by stage, replica by
 * replica, TP index fastest: TP groups are finished one after the other,
 * a stage's DP groups are finished before the next stage starts and every
 * stage pair is known as soon as its second rank is placed.
 */
static int exact_try(isle_place_ctx *c, struct xsearch *x, int pos, int u)
{
	const struct pnorm *q = x->q;
	int tp = q->tp, t = pos % tp, d = pos / tp % q->dp;
	int s = pos / (tp * q->dp), rk = xrank(q, t, s, d);
	int first = rk - t, node_v = c->v[u].parent, rc = 0, k, lv, prev;
	int eqd = 0, eqt = 0, owed = x->owed, owed_saved = x->owed;
	int train_dp = q->dp > 1 && q->workload == ISLE_WORKLOAD_TRAIN;
	double tpmax = x->tpmax, ppsum = x->ppsum, dpmax = x->dpmax;
	double ppw_old = 0.0, dpl_old = 0.0, lb;

	if (c->xcnt[u] >= c->freec[u])
		return 0;
	if (q->required && tp > 1) {
		if (t == 0 &&
		    (c->v[u].island < 0 ||
		     (!c->v[u].multi && c->freec[u] - c->xcnt[u] < tp)))
			return 0;
		if (t > 0 && c->v[u].island != c->v[x->seq[first]].island)
			return 0;
	}
	if (q->gpn > 0) {
		if (c->xcnt[node_v] >= q->gpn)
			return 0;
		owed += c->xcnt[node_v] ? -1 : q->gpn - 1;
		if (owed > x->G - pos - 1)
			return 0;
	}
	if (pos > 0 && unit_tier(c, x->seq[0], u) > q->max_span)
		return 0;
	/*
	 * Symmetry (see above): replicas d-1 and d, and TP indices t-1 and
	 * t, in non-decreasing order of their units (position order); a
	 * pipeline read backwards costs the same: last stage's first unit
	 * not below the first's.
	 */
	if (d > 0) {
		prev = t > 0 ? rk - 1 : xrank(q, tp - 1, s - 1, d);
		prev = prev < 0 ? 1 : x->eqd[prev];
		if (prev && u < x->seq[rk - x->blk])
			return 0;
		eqd = prev && u == x->seq[rk - x->blk];
	}
	if (t > 0) {
		prev = d > 0 ? rk - x->blk : xrank(q, t, s - 1, q->dp - 1);
		prev = prev < 0 ? 1 : x->eqt[prev];
		if (prev && u < x->seq[rk - 1])
			return 0;
		eqt = prev && u == x->seq[rk - 1];
	}
	if (q->pp > 1 && s == q->pp - 1 && d == 0 && t == 0 && u < x->seq[0])
		return 0;
	/* place */
	x->seq[rk] = u;
	x->eqd[rk] = (unsigned char)eqd;
	x->eqt[rk] = (unsigned char)eqt;
	x->r[rk].node = c->v[u].node;
	x->r[rk].gpu = nth_bit(c->avail[u], c->xcnt[u]);
	for (k = 0, lv = u; lv >= 0; lv = c->v[lv].parent) {
		const struct pv *p = &c->v[lv];

		c->xcnt[lv]++;
		if (p->level != PV_NODE || c->v[p->parent].level != PV_DOMAIN)
			x->anc[rk][k++] = lv;
	}
	x->owed = owed;
	/* bounds: finished TP groups, stage pairs, DP groups */
	if (t == tp - 1 && tp > 1) {
		isle_tier w = ISLE_TIER_ISLAND;

		for (k = first + 1; k <= rk; k++) {
			isle_tier tt = unit_tier(c, x->seq[first], x->seq[k]);

			if (tt > w)
				w = tt;
		}
		lb = isle__place_tp_group_cost(c, q, w,
					       c->v[x->seq[first]].island);
		if (lb > x->tpmax)
			x->tpmax = lb;
	}
	if (s > 0) {
		int a = x->seq[rk - tp];
		double pc = isle__place_pp_pair_cost(c, q, unit_tier(c, a, u),
						     c->v[a].island);

		ppw_old = x->ppw[s - 1];
		if (pc > ppw_old) {
			x->ppw[s - 1] = pc;
			x->ppsum += pc - ppw_old;
		}
	}
	if (d > 0 && train_dp) {
		int gi = s * tp + t, j = 5, e, l;

		dpl_old = x->dpl[gi];
		if (d == q->dp - 1) {
			x->dpl[gi] =
			    isle__place_dp_group_cost(c, q, x->r, s, t);
		} else {
			/* a new part at the levels below j */
			for (e = d - 1; e >= 0 && j > 0; e--) {
				int o = rk - (d - e) * x->blk;

				for (l = 0;
				     l < 5 && x->anc[o][l] != x->anc[rk][l];
				     l++)
					;
				if (l < j)
					j = l;
			}
			if (j >= 1 && j < 5)
				x->dpl[gi] += x->dp_unit[j];
		}
		if (x->dpl[gi] > x->dpmax)
			x->dpmax = x->dpl[gi];
	}
	lb = c->o.w_tp * x->tpmax + c->o.w_pp * x->ppsum + c->o.w_dp * x->dpmax;
	if (train_dp && d < q->dp - 1)
		lb += c->o.w_dp * exact_dp_ahead(c, x, rk, d);
	if (lb < x->ub * (1.0 - EXACT_EPS))
		rc = exact_rec(c, x, pos + 1);

	/* undo */
	x->owed = owed_saved;
	if (d > 0 && train_dp)
		x->dpl[s * tp + t] = dpl_old;
	if (s > 0)
		x->ppw[s - 1] = ppw_old;
	x->tpmax = tpmax;
	x->ppsum = ppsum;
	x->dpmax = dpmax;
	for (lv = u; lv >= 0; lv = c->v[lv].parent)
		c->xcnt[lv]--;
	return rc;
}

/*
 * Tries every unit below v for position pos, walking down the tree: a
 * subtree with nothing left to give is skipped, and so is an untouched one
 * after an untouched sibling with the same signature (the order with that
 * sibling instead is smaller, see above).
 */
static int exact_descend(isle_place_ctx *c, struct xsearch *x, int pos, int v)
{
	const struct pv *p = &c->v[v];
	int k, pass;

	if (c->freec[v] <= c->xcnt[v])
		return 0;
	if (c->xcnt[v] == 0)
		for (int y = c->iso_prev[v]; y >= 0; y = c->iso_prev[y])
			if (c->xcnt[y] == 0)
				return 0;
	if (p->level == PV_UNIT)
		return exact_try(c, x, pos, v);
	if (p->level == PV_NODE && x->q->gpn > 0 && c->xcnt[v] >= x->q->gpn)
		return 0;
	if (++x->nodes > EXACT_BUDGET)
		return -1;
	/* children that already hold ranks first: compact orders early
	 * give a low bound to cut the rest */
	for (pass = 0; pass < 2; pass++)
		for (k = 0; k < p->nchild; k++) {
			int ch = c->child[p->first + k];

			if ((c->xcnt[ch] > 0) != (pass == 0))
				continue;
			if (exact_descend(c, x, pos, ch) < 0)
				return -1;
		}
	return 0;
}

static int exact_rec(isle_place_ctx *c, struct xsearch *x, int pos)
{
	const struct pnorm *q = x->q;
	int t = pos % q->tp;

	if (++x->nodes > EXACT_BUDGET)
		return -1;
	if (pos == x->G) {
		exact_leaf(c, x);
		return 0;
	}
	/* the rest of a TP group (consecutive positions) stays in the
	 * island of its first unit: that unit, or that domain */
	if (q->required && t > 0) {
		int first = x->seq[xrank(q, 0, pos / (q->tp * q->dp),
					 pos / q->tp % q->dp)];

		int v = first;

		if (!c->v[first].multi)
			return exact_try(c, x, pos, first);
		while (c->v[v].level < PV_DOMAIN && c->v[v].parent >= 0)
			v = c->v[v].parent;
		return exact_descend(c, x, pos, v);
	}
	return exact_descend(c, x, pos, c->root);
}

/*
 * Runs the exact search for q over the units prepared last (c->avail,
 * c->freec), seeded with the best candidate so far, and scores what it
 * finds like any other candidate.
 */
void isle__place_exact_search(isle_place_ctx *c, const struct pnorm *q,
			      int *have_best)
{
	struct isle_place_result *r = &c->cand;
	struct xsearch xs, *x = &xs;
	double m0, b1;
	int i, k;

	if (!*have_best || q->gpus > EXACT_MAX_GPUS || q->gpus < 2 ||
	    c->nnodes > SMALL_CLUSTER || c->o.w_tp < 0 || c->o.w_pp < 0 ||
	    c->o.w_dp < 0)
		return;
	/* nothing beats the empty cluster's optimum */
	if (c->best.ideal.total > 0 &&
	    c->best.cost.total <= c->best.ideal.total * (1.0 + EXACT_EPS))
		return;
	/* small sub-problems only: few units with free GPUs */
	for (i = 0, k = 0; i < c->nlevel[PV_UNIT] && k <= EXACT_MAX_UNITS; i++)
		k += c->freec[c->by_level[PV_UNIT][i]] > 0;
	if (k > EXACT_MAX_UNITS)
		return;
	memset(x, 0, sizeof(*x));
	x->q = q;
	x->G = q->gpus;
	x->blk = q->tp * q->pp;
	x->ub = c->best.cost.total;
	m0 = c->o.dp_bytes / ((double)q->tp * q->pp);
	b1 = c->tier_bw[ISLE_TIER_NODE];
	if (c->tier_bw[ISLE_TIER_ISLAND] > b1)
		b1 = c->tier_bw[ISLE_TIER_ISLAND];
	for (i = 0; i < c->t->nislands; i++)
		if (c->island_bw[i] > b1)
			b1 = c->island_bw[i];
	for (k = 1; k < 5; k++) {
		double bw = k == 1 ? b1 : c->tier_bw[k];

		x->dp_unit[k] = bw > 0 ? 2.0 * m0 / (q->dp * bw * 1e3) : 0.0;
	}
	/* a merge at level k or above adds at least the cheapest of them */
	x->dp_need[4] = x->dp_unit[4];
	for (k = 3; k >= 1; k--)
		x->dp_need[k] = x->dp_unit[k] < x->dp_need[k + 1]
				    ? x->dp_unit[k]
				    : x->dp_need[k + 1];
	exact_prepare(c, q->gpus);
	exact_rec(c, x, 0);
	for (i = 0; i < c->nv; i++)
		c->xcnt[i] = 0;
	if (!x->found)
		return;
	/* score it like a fill: the touched vertices and what they give */
	isle__place_result_clear(r);
	c->ntouched = 0;
	for (i = 0; i < q->gpus; i++) {
		int u = c->gpu_unit[x->best[i].node * ISLE_MAX_GPUS_PER_NODE +
				    x->best[i].gpu];

		r->ranks[i] = x->best[i];
		for (; u >= 0; u = c->v[u].parent)
			if (c->xcnt[u]++ == 0)
				c->touched[c->ntouched++] = u;
	}
	r->nranks = q->gpus;
	for (i = 0; i < c->ntouched; i++) {
		c->take[c->touched[i]] = c->xcnt[c->touched[i]];
		c->xcnt[c->touched[i]] = 0;
	}
	isle__place_finish(c, q, r);
	r->ideal = c->best.ideal;
	if (isle__place_better(c, r, &c->best)) {
		struct isle_place_result tmp = c->best;

		c->best = c->cand;
		c->cand = tmp;
		isle__place_record(c, c->root, 1, 1, &c->best, "exact search");
	} else {
		isle__place_record(c, c->root, 1, 0, r, "exact search");
	}
}
