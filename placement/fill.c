/*
 * fill.c - the scope search of the placement engine (engine.c has the
 * overview): per-vertex capacities for one request, the hierarchical best
 * fit inside a scope, and scoring and keeping the candidates.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

/* --- Capacities ----------------------------------------------------------- */

static int gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static int is_eligible(const uint64_t *elig, int node)
{
	return !elig || (elig[node / 64] >> (node % 64) & 1);
}

/*
 * Free GPUs (freec) and usable capacity (cap) of every vertex for request
 * q: the most GPUs the subtree can give while taking a multiple of q->gran
 * GPUs from each island (q->required; gran is a multiple of tp, so every
 * TP group stays in one island) and exactly gpn GPUs per node (gpn > 0).
 * Capacities are multiples of gran (and of lcm(gpn, gran) above nodes),
 * so every split the fill makes stays aligned.
 */
void isle__place_prepare(isle_place_ctx *c, const uint64_t *free_gpus,
			 const uint64_t *elig, const struct pnorm *q)
{
	int tp = q->gran_level == PV_UNIT ? q->gran : q->tp;
	int i, gpn = q->gpn;
	int lcm = gpn > 0 ? gpn / gcd(gpn, tp) * tp : tp;

	for (i = 0; i < c->nv; i++)
		c->cap[i] = c->freec[i] = 0;
	memset(c->maxcap, 0, (size_t)c->nv * FIT_LEVELS * sizeof(int));
	for (i = 0; i < c->nlevel[PV_UNIT]; i++) {
		int u = c->by_level[PV_UNIT][i];
		const struct pv *p = &c->v[u];
		uint64_t a = is_eligible(elig, p->node)
				 ? free_gpus[p->node] & p->mask
				 : 0;

		c->avail[u] = a;
		c->freec[u] = isle__place_popc(a);
		if (q->required && !p->multi)
			c->cap[u] = c->freec[u] / tp * tp;
		else
			c->cap[u] = c->freec[u];
	}
	for (i = c->nv - 1; i >= 0; i--) {
		const struct pv *p = &c->v[i];
		int s = c->cap[i];

		switch (p->level) {
		case PV_NODE:
			if (gpn > 0) {
				int in_dom = c->v[p->parent].level == PV_DOMAIN;

				if (q->required && !in_dom && gpn % tp)
					s = 0;
				s = s >= gpn ? gpn : 0;
			}
			break;
		case PV_DOMAIN:
			if (q->required)
				s = s / lcm * lcm;
			break;
		default:
			break;
		}
		if (q->required && p->level == q->gran_level &&
		    p->level != PV_UNIT)
			s = s / q->gran * q->gran;
		c->cap[i] = s;
		if (p->level < FIT_LEVELS)
			c->maxcap[i * FIT_LEVELS + p->level] = s;
		if (i > 0) {
			int *up = &c->maxcap[p->parent * FIT_LEVELS];
			const int *mine = &c->maxcap[i * FIT_LEVELS];

			c->cap[p->parent] += s;
			c->freec[p->parent] += c->freec[i];
			for (int l = 0; l < FIT_LEVELS; l++)
				if (mine[l] > up[l])
					up[l] = mine[l];
		}
	}
}

/* --- Fill ----------------------------------------------------------------- */

static int kid_desc(const void *a, const void *b)
{
	const struct pkid *x = a, *y = b;

	if (x->cap != y->cap)
		return x->cap > y->cap ? -1 : 1;
	if (x->freec != y->freec)
		return x->freec < y->freec ? -1 : 1;
	return x->ord - y->ord;
}

static void fill(isle_place_ctx *c, int v, int need,
		 struct isle_place_result *r);
static void fill_least_loaded(isle_place_ctx *c, struct pkid *k, int n,
			      int need, struct isle_place_result *r);

/* Tightest level (unit, node, domain, leaf; 4 = none) at which one vertex
 * below v can hold need GPUs. */
static int fit_level(const isle_place_ctx *c, int v, int need)
{
	int l;

	for (l = 0; l < FIT_LEVELS; l++)
		if (c->maxcap[v * FIT_LEVELS + l] >= need)
			break;
	return l;
}

/* 1 if child a is a better home than b for `need` GPUs: it holds them at a
 * tighter level, then with less capacity to spare (best fit). */
static int home_better(const isle_place_ctx *c, const struct pkid *a,
		       const struct pkid *b, int need)
{
	int la = fit_level(c, a->v, need), lb = fit_level(c, b->v, need);

	if (la != lb)
		return la < lb;
	if (a->cap != b->cap)
		return a->cap < b->cap;
	return a->freec < b->freec;
}

static int kid_by_load(const void *a, const void *b, void *arg)
{
	const struct pkid *x = a, *y = b;
	double sx = isle__place_cc_share(arg, x->v);
	double sy = isle__place_cc_share(arg, y->v);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return kid_desc(a, b);
}

/* Contention fill of leaf or spine groups k[0..n): the groups whose
 * uplinks running jobs load least first, whole but the last. */
static void fill_least_loaded(isle_place_ctx *c, struct pkid *k, int n,
			      int need, struct isle_place_result *r)
{
	c->kid_top += n;
	qsort_r(k, (size_t)n, sizeof(*k), kid_by_load, c);
	for (int i = 0; i < n && need > 0; i++) {
		int take = k[i].cap < need ? k[i].cap : need;

		fill(c, k[i].v, take, r);
		need -= take;
	}
	c->kid_top -= n;
}

/*
 * Takes need GPUs (need <= cap[v]) from v's children: the child that holds
 * them at the tightest level with the least to spare; else the fewest
 * children that hold them. Those are taken whole except the last, which
 * gets the remainder and is chosen among all children left like a single
 * home. The whole ones are the best-fit window (the cnt-1 children that
 * leave the least capacity unused) or, with c->fill_largest, the largest.
 */
static void fill_children(isle_place_ctx *c, int v, int need,
			  struct isle_place_result *r)
{
	const struct pv *p = &c->v[v];
	struct pkid *k = &c->kids[c->kid_top];
	int n = 0, i, best = -1, w, cnt, sum, start, rest;

	for (i = 0; i < p->nchild; i++) {
		int ch = c->child[p->first + i];

		if (c->cap[ch] <= 0)
			continue;
		k[n].v = ch;
		k[n].cap = c->cap[ch];
		k[n].freec = c->freec[ch];
		k[n].ord = i;
		if (k[n].cap >= need &&
		    (best < 0 || home_better(c, &k[n], &k[best], need)))
			best = n;
		n++;
	}
	if (best >= 0) {
		fill(c, k[best].v, need, r);
		return;
	}
	if (c->fill_cc && n > 0 && c->v[k[0].v].level >= PV_LEAF) {
		fill_least_loaded(c, k, n, need, r);
		return;
	}
	c->kid_top += n;
	qsort(k, (size_t)n, sizeof(*k), kid_desc);
	/* cnt = fewest children that hold need (largest first) */
	for (cnt = 0, sum = 0; cnt < n && sum < need; cnt++)
		sum += k[cnt].cap;
	start = 0;
	for (w = 1; !c->fill_largest && w + cnt <= n; w++) {
		sum += k[w + cnt - 1].cap - k[w - 1].cap;
		if (sum < need)
			break;
		start = w;
	}
	/* whole children: the window but its last */
	for (i = start; i < start + cnt - 1; i++) {
		fill(c, k[i].v, k[i].cap, r);
		need -= k[i].cap;
		k[i].cap = 0; /* used */
	}
	/* the remainder's home, among every child left */
	rest = -1;
	for (i = 0; i < n; i++)
		if (k[i].cap >= need &&
		    (rest < 0 || home_better(c, &k[i], &k[rest], need)))
			rest = i;
	if (rest >= 0 && need > 0)
		fill(c, k[rest].v, need, r);
	c->kid_top -= n;
}

static void fill(isle_place_ctx *c, int v, int need,
		 struct isle_place_result *r)
{
	const struct pv *p = &c->v[v];

	c->take[v] = need;
	c->touched[c->ntouched++] = v;
	if (p->level == PV_UNIT) {
		uint64_t a = c->avail[v];

		while (need-- > 0 && a) {
			int g = __builtin_ctzll(a);

			a &= a - 1;
			r->ranks[r->nranks].node = p->node;
			r->ranks[r->nranks].gpu = g;
			r->nranks++;
		}
		return;
	}
	fill_children(c, v, need, r);
}

/* --- Candidates ----------------------------------------------------------- */

static double frag_penalty(const isle_place_ctx *c)
{
	double pen = 0.0;
	int i;

	for (i = 0; i < c->ntouched; i++) {
		int v = c->touched[i];
		const struct pv *p = &c->v[v];
		double left, w;

		switch (p->level) {
		case PV_UNIT:
			w = p->multi ? 0.0 : c->o.w_frag_island;
			break;
		case PV_DOMAIN:
			w = c->o.w_frag_island;
			break;
		case PV_NODE:
			w = c->o.w_frag_node;
			break;
		case PV_LEAF:
			w = c->o.w_frag_leaf;
			break;
		default:
			w = 0.0;
		}
		if (w == 0.0 || p->size == 0)
			continue;
		left = (double)(c->freec[v] - c->take[v]) / p->size;
		pen += w * left;
	}
	return pen;
}

void isle__place_fin_forget(isle_place_ctx *c)
{
	if (++c->fin_epoch == 0) {
		for (int i = 0; i < FIN_MEMO; i++)
			c->fin[i].epoch = 0;
		c->fin_epoch = 1;
	}
}

/* The kept score of ranks r (complete) for shape q, or NULL. */
static struct fin_memo *fin_find(isle_place_ctx *c, const struct pnorm *q,
				 const struct isle_place_result *r)
{
	for (int i = 0; i < FIN_MEMO; i++) {
		struct fin_memo *m = &c->fin[i];

		if (m->epoch == c->fin_epoch && m->n == r->nranks &&
		    m->tp == q->tp && m->pp == q->pp && m->dp == q->dp &&
		    m->workload == (int)q->workload &&
		    m->traffic == (int)q->traffic &&
		    !memcmp(m->in, r->ranks, (size_t)m->n * sizeof(*m->in)))
			return m;
	}
	return NULL;
}

/* A slot for the score of ranks r, holding them as given; NULL if out of
 * memory (the score is then not kept). */
static struct fin_memo *fin_slot(isle_place_ctx *c,
				 const struct isle_place_result *r)
{
	struct fin_memo *m = &c->fin[c->fin_next];
	size_t sz = (size_t)r->nranks * sizeof(*m->in);

	if (r->nranks > m->cap) {
		struct isle_place_rank *in = realloc(m->in, sz);
		struct isle_place_rank *out = in ? realloc(m->out, sz) : NULL;

		if (in)
			m->in = in;
		if (!out) {
			m->epoch = 0;
			m->cap = 0; /* in may be larger, out is not */
			return NULL;
		}
		m->out = out;
		m->cap = r->nranks;
	}
	c->fin_next = (c->fin_next + 1) % FIN_MEMO;
	m->epoch = 0; /* valid once scored */
	memcpy(m->in, r->ranks, sz);
	return m;
}

/* Fills r->nodes/masks from r->ranks and the span statistics. */
void isle__place_finish(isle_place_ctx *c, const struct pnorm *q,
			struct isle_place_result *r)
{
	struct fin_memo *m = NULL;
	int i, n = 0, isl = 0, leafs = 0;

	for (i = 0; i < r->nranks; i++) {
		int node = r->ranks[i].node;

		if (!c->nmask[node])
			r->nodes[n++] = node;
		c->nmask[node] |= 1ULL << r->ranks[i].gpu;
	}
	/* ascending node order; n is small next to the cluster */
	for (i = 1; i < n; i++) {
		int x = r->nodes[i], j = i - 1;

		while (j >= 0 && r->nodes[j] > x) {
			r->nodes[j + 1] = r->nodes[j];
			j--;
		}
		r->nodes[j + 1] = x;
	}
	for (i = 0; i < n; i++) {
		r->masks[i] = c->nmask[r->nodes[i]];
		c->nmask[r->nodes[i]] = 0;
	}
	r->nnodes = n;
	r->tp = q->tp;
	r->pp = q->pp;
	r->dp = q->dp;
	r->ntp_groups = q->gpus / q->tp;
	if (r->nranks == q->gpus) {
		m = fin_find(c, q, r);
		if (m) {
			memcpy(r->ranks, m->out,
			       (size_t)r->nranks * sizeof(*r->ranks));
			r->cost = m->cost;
			r->span = m->span;
			r->tp_in_island = m->tp_in_island;
			r->islands = m->islands;
			r->leafs = m->leafs;
			r->frag = frag_penalty(c);
			r->contention = m->contention;
			return;
		}
		m = fin_slot(c, r);
	}
	isle__place_cost(c, q, r->ranks, r->nranks, &r->cost, &r->span,
			 &r->tp_in_island);
	/*
	 * The fill lists GPUs in locality order and the layout puts whole
	 * pipeline replicas next to each other. When DP traffic outweighs PP
	 * traffic it is cheaper the other way round: DP groups next to each
	 * other and stages further apart. Keep the cheaper of the two.
	 */
	if (q->pp > 1 && q->dp > 1) {
		struct isle_place_cost alt;
		isle_tier span;
		int inside;

		for (i = 0; i < r->nranks; i++) {
			int t = i % q->tp, d = i / q->tp % q->dp;
			int s = i / (q->tp * q->dp);

			c->alt[t + q->tp * (s + q->pp * d)] = r->ranks[i];
		}
		isle__place_cost(c, q, c->alt, r->nranks, &alt, &span, &inside);
		if (alt.total < r->cost.total) {
			memcpy(r->ranks, c->alt,
			       (size_t)r->nranks * sizeof(*r->ranks));
			r->cost = alt;
			r->span = span;
			r->tp_in_island = inside;
		}
	}
	/* distinct islands and leaf groups */
	isle__place_next_gen(c);
	for (i = 0; i < r->nranks; i++) {
		int u = c->gpu_unit[r->ranks[i].node * ISLE_MAX_GPUS_PER_NODE +
				    r->ranks[i].gpu];
		int iv = c->v[u].multi ? c->v[c->v[u].parent].parent : u;
		int lv = iv;

		while (c->v[lv].level < PV_LEAF)
			lv = c->v[lv].parent;
		if (c->stamp[iv] != c->gen) {
			c->stamp[iv] = c->gen;
			isl++;
		}
		if (c->stamp[lv] != c->gen) {
			c->stamp[lv] = c->gen;
			leafs++;
		}
	}
	r->islands = isl;
	r->leafs = leafs;
	r->frag = frag_penalty(c);
	r->contention =
	    isle__place_cc_term(c, q, r->ranks, r->nranks, &r->cost);
	if (m) {
		memcpy(m->out, r->ranks, (size_t)r->nranks * sizeof(*m->out));
		*m = (struct fin_memo){.epoch = c->fin_epoch,
				       .n = r->nranks,
				       .cap = m->cap,
				       .tp = q->tp,
				       .pp = q->pp,
				       .dp = q->dp,
				       .workload = (int)q->workload,
				       .traffic = (int)q->traffic,
				       .in = m->in,
				       .out = m->out,
				       .cost = r->cost,
				       .span = r->span,
				       .tp_in_island = r->tp_in_island,
				       .islands = r->islands,
				       .leafs = r->leafs,
				       .contention = r->contention};
	}
}

/* 1 if a beats b (both feasible). */
int isle__place_better(const isle_place_ctx *c,
		       const struct isle_place_result *a,
		       const struct isle_place_result *b)
{
	double ca = a->cost.total + a->contention,
	       cb = b->cost.total + b->contention, tol = c->o.cost_tolerance;

	if (c->o.frag_weight > 0) {
		double base = a->ideal.total > 0 ? a->ideal.total : 1.0;
		double sa = ca / base + c->o.frag_weight * a->frag;
		double sb = cb / base + c->o.frag_weight * b->frag;

		return sa < sb;
	}
	if (ca < cb && cb > ca * (1.0 + tol))
		return 1;
	if (cb < ca && ca > cb * (1.0 + tol))
		return 0;
	return a->frag < b->frag - 1e-12;
}

/*
 * Logs a candidate for explain; chosen moves to the latest best. A scope is
 * filled more than once (two fill orders, several TP granularities, the
 * relaxed pass of preferred mode); its tries share one entry, which keeps
 * the best of them, so explain lists each scope once.
 */
void isle__place_record(isle_place_ctx *c, int scope_v, int feasible, int best,
			const struct isle_place_result *r, const char *note)
{
	struct isle_place_cand *k;
	static const isle_tier tier_of[PV_LEVELS] = {
	    ISLE_TIER_ISLAND, ISLE_TIER_NODE,  ISLE_TIER_ISLAND,
	    ISLE_TIER_LEAF,   ISLE_TIER_SPINE, ISLE_TIER_CORE};

	isle_tier tier = tier_of[c->v[scope_v].level];
	int id = c->v[scope_v].id, i;

	if (!c->cands)
		return;
	for (i = 0; i < c->ncands; i++)
		if (c->cands[i].scope_tier == tier && c->cands[i].scope == id)
			break;
	k = &c->cands[i];
	if (i < c->ncands) {
		if (!best &&
		    (!feasible ||
		     (k->feasible && (k->chosen || k->cost <= r->cost.total))))
			return;
	} else if (c->ncands < c->o.explain_max) {
		c->ncands++;
	} else {
		return;
	}
	memset(k, 0, sizeof(*k));
	k->scope_tier = tier;
	k->scope = id;
	k->feasible = feasible;
	if (feasible) {
		k->cost = r->cost.total;
		k->frag = r->frag;
	}
	if (best) {
		if (c->chosen >= 0)
			c->cands[c->chosen].chosen = 0;
		k->chosen = 1;
		c->chosen = (int)(k - c->cands);
	}
	snprintf(k->note, sizeof(k->note), "%s", note);
}

/* Builds and scores one candidate of scope v; keeps it if it is the best.
 * Returns 1 if it became the best. */
static int try_fill(isle_place_ctx *c, const struct pnorm *q, int v,
		    int *have_best)
{
	struct isle_place_result *r = &c->cand;
	char note[64];

	isle__place_result_clear(r);
	c->ntouched = 0;
	c->kid_top = 0;
	fill(c, v, q->gpus, r);
	isle__place_finish(c, q, r);
	if (r->nranks != q->gpus || r->span > q->max_span) {
		snprintf(note, sizeof(note), "span %s > %s",
			 isle_tier_name(r->span), isle_tier_name(q->max_span));
		isle__place_record(c, v, 0, 0, r, note);
		return 0;
	}
	r->ideal = c->best.ideal;
	if (*have_best && !isle__place_better(c, r, &c->best)) {
		if (r->cost.total > c->best.cost.total)
			snprintf(
			    note, sizeof(note), "cost +%.1f%%",
			    100.0 * (r->cost.total / c->best.cost.total - 1.0));
		else
			snprintf(note, sizeof(note), "fragmentation %.3f",
				 r->frag);
		isle__place_record(c, v, 1, 0, r, note);
		return 0;
	}
	{
		struct isle_place_result tmp = c->best;

		c->best = c->cand;
		c->cand = tmp;
	}
	*have_best = 1;
	isle__place_record(c, v, 1, 1, &c->best, "best so far");
	return 1;
}

/* The fills of scope v: best fit, then largest first. */
static void try_scope(isle_place_ctx *c, const struct pnorm *q, int v,
		      int *have_best)
{
	c->fill_largest = 0;
	try_fill(c, q, v, have_best);
	c->fill_largest = 1;
	try_fill(c, q, v, have_best);
	c->fill_largest = 0;
	/* with contention weighed, also the groups least loaded by running
	 * jobs, where a scope spans groups */
	if (c->o.contention_weight > 0 && c->v[v].level >= PV_SPINE) {
		c->fill_cc = 1;
		try_fill(c, q, v, have_best);
		c->fill_cc = 0;
	}
}

static int scope_less(const isle_place_ctx *c, int a, int b)
{
	if (c->cap[a] != c->cap[b])
		return c->cap[a] < c->cap[b];
	if (c->freec[a] != c->freec[b])
		return c->freec[a] < c->freec[b];
	return a < b;
}

/*
 * Searches every level of scopes, tightest first. On large clusters only
 * the max_scopes best-fitting scopes of a level are built, and the search
 * stops one level after the first level that kept every TP group in an
 * island: looser scopes only add span.
 */
int isle__place_search(isle_place_ctx *c, const struct pnorm *q, int *have_best)
{
	static const int levels[] = {PV_NODE, PV_DOMAIN, PV_LEAF, PV_SPINE,
				     PV_ROOT};
	static const isle_tier scope_tier[] = {ISLE_TIER_ISLAND,
					       ISLE_TIER_ISLAND, ISLE_TIER_LEAF,
					       ISLE_TIER_SPINE, ISLE_TIER_CORE};
	int small = c->nnodes <= SMALL_CLUSTER;
	int limit = small ? c->nv : c->o.max_scopes > 0 ? c->o.max_scopes : 32;
	int have = *have_best, extra = -1, li, i, j;

	if (isle_place_result_reserve(&c->cand, c->nnodes, q->gpus) ||
	    isle_place_result_reserve(&c->best, c->nnodes, q->gpus))
		return -ENOMEM;
	if (q->gpus > c->alt_cap) {
		struct isle_place_rank *a =
		    realloc(c->alt, (size_t)q->gpus * sizeof(*a));

		if (!a)
			return -ENOMEM;
		c->alt = a;
		c->alt_cap = q->gpus;
	}
	if (c->cap[c->root] < q->gpus)
		return 0;
	for (li = 0; li < 5; li++) {
		int lev = levels[li], n = 0;

		if (scope_tier[li] > q->max_span)
			break;
		if (extra >= 0 && li > extra && !small)
			break;
		/* minimal scopes: fit the job, no child of theirs does */
		for (i = 0; i < c->nlevel[lev]; i++) {
			int v = c->by_level[lev][i], k, fits = 0;
			const struct pv *p = &c->v[v];

			if (c->cap[v] < q->gpus)
				continue;
			if (lev != PV_NODE)
				for (k = 0; k < p->nchild && !fits; k++)
					fits = c->cap[c->child[p->first + k]] >=
					       q->gpus;
			if (fits)
				continue;
			/* keep the best `limit` by best fit (insertion) */
			if (n < limit)
				j = n++;
			else if (scope_less(c, v, c->scopes[limit - 1]))
				j = limit - 1;
			else
				continue;
			for (; j > 0 && scope_less(c, v, c->scopes[j - 1]); j--)
				c->scopes[j] = c->scopes[j - 1];
			c->scopes[j] = v;
		}
		for (i = 0; i < n; i++)
			try_scope(c, q, c->scopes[i], &have);
		if (have && extra < 0 &&
		    c->best.tp_in_island == c->best.ntp_groups)
			extra = li + 1;
	}
	*have_best = have;
	return 0;
}
