/*
 * engine.c - the placement search.
 *
 * A placement is searched per scope: a node, a multi-node NVLink domain, a
 * leaf group, a spine group or the whole cluster. Only "minimal" scopes are
 * tried (the job does not fit into any one child of the scope, otherwise the
 * child is the tighter candidate), best fit first, at most max_scopes per
 * level on large clusters. Inside a scope the fill is a hierarchical best
 * fit over the tree (place_priv.h): the fewest children that hold the job,
 * preferring the fullest ones, recursively. Each candidate is scored with
 * the cost model (cost.c), then by fragmentation. Per-vertex free counts
 * and capacities are computed once per call in O(vertices). On small
 * clusters, small jobs then get an exact branch and bound over rank orders
 * seeded with the best fill (exact_search()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

#define SMALL_CLUSTER 64 /* nodes: search every scope exhaustively */
#define MEMO_SIZE 1024

static int popc(uint64_t m)
{
	return __builtin_popcountll(m);
}

static int gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* --- Results ------------------------------------------------------------ */

void isle_place_result_init(struct isle_place_result *r)
{
	memset(r, 0, sizeof(*r));
}

void isle_place_result_fini(struct isle_place_result *r)
{
	if (!r)
		return;
	free(r->nodes);
	free(r->masks);
	free(r->ranks);
	isle_place_result_init(r);
}

int isle_place_result_reserve(struct isle_place_result *r, int nnodes,
			      int nranks)
{
	if (nnodes > r->cap_nodes) {
		int *n = realloc(r->nodes, (size_t)nnodes * sizeof(*n));
		uint64_t *m;

		if (!n)
			return -ENOMEM;
		r->nodes = n;
		m = realloc(r->masks, (size_t)nnodes * sizeof(*m));
		if (!m)
			return -ENOMEM;
		r->masks = m;
		r->cap_nodes = nnodes;
	}
	if (nranks > r->cap_ranks) {
		struct isle_place_rank *k =
		    realloc(r->ranks, (size_t)nranks * sizeof(*k));

		if (!k)
			return -ENOMEM;
		r->ranks = k;
		r->cap_ranks = nranks;
	}
	return 0;
}

/* Empties r but keeps its arrays. */
static void result_clear(struct isle_place_result *r)
{
	r->nnodes = r->nranks = 0;
	r->tp = r->pp = r->dp = 0;
	memset(&r->cost, 0, sizeof(r->cost));
	memset(&r->ideal, 0, sizeof(r->ideal));
	r->ntp_groups = r->tp_in_island = r->islands = r->leafs = 0;
	r->span = ISLE_TIER_ISLAND;
	r->frag = 0.0;
	r->reason[0] = '\0';
}

static int result_copy(struct isle_place_result *dst,
		       const struct isle_place_result *src)
{
	int rc = isle_place_result_reserve(dst, src->nnodes, src->nranks);
	int cn = dst->cap_nodes, cr = dst->cap_ranks;
	int *nodes = dst->nodes;
	uint64_t *masks = dst->masks;
	struct isle_place_rank *ranks = dst->ranks;

	if (rc)
		return rc;
	*dst = *src;
	dst->nodes = nodes;
	dst->masks = masks;
	dst->ranks = ranks;
	dst->cap_nodes = cn;
	dst->cap_ranks = cr;
	memcpy(dst->nodes, src->nodes, (size_t)src->nnodes * sizeof(int));
	memcpy(dst->masks, src->masks, (size_t)src->nnodes * sizeof(uint64_t));
	memcpy(dst->ranks, src->ranks,
	       (size_t)src->nranks * sizeof(struct isle_place_rank));
	return 0;
}

/* --- Context: the locality tree ------------------------------------------- */

void isle_place_opts_default(struct isle_place_opts *o)
{
	memset(o, 0, sizeof(*o));
	/* A ~70B dense model, bf16, 4k tokens per micro-batch, 80 layers,
	 * 8 micro-batches: see docs/placement.md. */
	o->tp_msg_bytes = 64.0 * 1024 * 1024;
	o->tp_calls = 4.0 * 80 * 8;
	o->pp_msg_bytes = 64.0 * 1024 * 1024;
	o->pp_calls = 2.0 * 8;
	o->dp_bytes = 140e9;
	o->infer_msg_bytes = 16.0 * 1024;
	o->infer_calls = 2.0 * 80;
	o->w_tp = 1.0;
	o->w_pp = 0.5;
	o->w_dp = 0.25;
	o->cost_tolerance = 1e-3;
	o->w_frag_island = 1.0;
	/* A whole free node serves -N k --gpus-per-node jobs; a whole free
	 * NVLink pair only smaller ones: keeping nodes whole weighs more
	 * (islesim, PCIe pairs: 10-15% shorter mean wait, same step time). */
	o->w_frag_node = 2.0;
	o->w_frag_leaf = 0.5;
	o->frag_weight = 0.0;
	o->max_scopes = 32;
	o->explain_max = 0;
}

void isle_place_req_init(struct isle_place_req *r)
{
	memset(r, 0, sizeof(*r));
	r->tp = 1;
	r->pp = 1;
	r->mode = ISLE_PLACE_REQUIRED;
	r->max_span = ISLE_TIER_CORE;
	r->workload = ISLE_WORKLOAD_TRAIN;
}

/* Locality order of nodes: spine group, leaf group, domain, index. */
static int cmp_node(const void *a, const void *b, void *arg)
{
	const isle_topo *t = arg;
	const struct isle_node *na = &t->nodes[*(const int *)a];
	const struct isle_node *nb = &t->nodes[*(const int *)b];
	int ka[4] = {na->group[ISLE_TIER_SPINE], na->group[ISLE_TIER_LEAF],
		     na->domain, *(const int *)a};
	int kb[4] = {nb->group[ISLE_TIER_SPINE], nb->group[ISLE_TIER_LEAF],
		     nb->domain, *(const int *)b};

	for (int i = 0; i < 4; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

static int new_vertex(isle_place_ctx *c, int level, int parent, int id)
{
	struct pv *p = &c->v[c->nv];

	memset(p, 0, sizeof(*p));
	p->level = (unsigned char)level;
	p->parent = parent;
	p->id = id;
	p->node = -1;
	p->island = -1;
	return c->nv++;
}

static int build_tree(isle_place_ctx *c)
{
	const isle_topo *t = c->t;
	int *order = NULL, *count = NULL, maxv, i, g, rc = -ENOMEM;
	int spine = -1, leaf = -1, dom = -1;
	int last_s = -2, last_l = -2, last_d = -2;

	maxv = 1 + 4 * t->nnodes;
	for (i = 0; i < t->nnodes; i++)
		maxv += t->nodes[i].ngpus ? t->nodes[i].ngpus : 1;
	c->v = calloc((size_t)maxv, sizeof(*c->v));
	order = malloc((size_t)(t->nnodes + 1) * sizeof(int));
	if (!c->v || !order)
		goto out;
	for (i = 0; i < t->nnodes; i++)
		order[i] = i;
	qsort_r(order, (size_t)t->nnodes, sizeof(int), cmp_node, (void *)t);

	c->root = new_vertex(c, PV_ROOT, -1, 0);
	for (i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[order[i]];
		int nv, parent;
		uint64_t seen = 0;

		if (n->group[ISLE_TIER_SPINE] != last_s) {
			last_s = n->group[ISLE_TIER_SPINE];
			spine = new_vertex(c, PV_SPINE, c->root, last_s);
			last_l = -2;
		}
		if (n->group[ISLE_TIER_LEAF] != last_l) {
			last_l = n->group[ISLE_TIER_LEAF];
			leaf = new_vertex(c, PV_LEAF, spine, last_l);
			last_d = -2;
		}
		parent = leaf;
		if (n->domain >= 0) {
			if (n->domain != last_d) {
				last_d = n->domain;
				dom = new_vertex(c, PV_DOMAIN, leaf, n->domain);
				c->v[dom].multi = 1;
				c->v[dom].island = n->domain;
			}
			parent = dom;
		} else {
			last_d = -2;
		}
		nv = new_vertex(c, PV_NODE, parent, order[i]);
		c->v[nv].node = order[i];
		c->node_v[order[i]] = nv;
		for (g = 0; g < n->ngpus; g++) {
			int isl = n->gpus[g].island, u, h;

			if (seen & (1ULL << g))
				continue;
			u = new_vertex(c, PV_UNIT, nv, isl);
			c->v[u].node = order[i];
			c->v[u].island = isl;
			c->v[u].multi = isl >= 0 && t->islands[isl].multi_node;
			for (h = g; h < n->ngpus; h++)
				if (n->gpus[h].island == isl &&
				    (isl >= 0 || h == g)) {
					c->v[u].mask |= 1ULL << h;
					c->gpu_unit[order[i] *
							ISLE_MAX_GPUS_PER_NODE +
						    h] = u;
				}
			seen |= c->v[u].mask;
		}
	}

	/* Children in creation (locality) order, as CSR. */
	count = calloc((size_t)c->nv + 1, sizeof(int));
	c->child = malloc((size_t)c->nv * sizeof(int));
	if (!count || !c->child)
		goto out;
	for (i = 1; i < c->nv; i++)
		c->v[c->v[i].parent].nchild++;
	for (i = 0, g = 0; i < c->nv; i++) {
		c->v[i].first = g;
		g += c->v[i].nchild;
		c->v[i].nchild = 0;
	}
	for (i = 1; i < c->nv; i++) {
		struct pv *p = &c->v[c->v[i].parent];

		c->child[p->first + p->nchild++] = i;
	}
	for (i = c->nv - 1; i >= 0; i--) {
		if (c->v[i].level == PV_UNIT)
			c->v[i].size = popc(c->v[i].mask);
		if (i > 0)
			c->v[c->v[i].parent].size += c->v[i].size;
		c->nlevel[c->v[i].level]++;
	}
	for (i = 0; i < PV_LEVELS; i++) {
		c->by_level[i] =
		    malloc(((size_t)c->nlevel[i] + 1) * sizeof(int));
		if (!c->by_level[i])
			goto out;
		c->nlevel[i] = 0;
	}
	for (i = 0; i < c->nv; i++)
		c->by_level[c->v[i].level][c->nlevel[c->v[i].level]++] = i;
	rc = 0;
out:
	free(order);
	free(count);
	return rc;
}

isle_place_ctx *isle_place_create(const isle_topo *t,
				  const struct isle_place_opts *opts)
{
	isle_place_ctx *c;
	size_t ng;
	int i, g;

	if (!t || !t->finalized || t->nnodes <= 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->t = t;
	if (opts)
		c->o = *opts;
	else
		isle_place_opts_default(&c->o);
	c->nnodes = t->nnodes;
	ng = (size_t)t->nnodes * ISLE_MAX_GPUS_PER_NODE;
	c->node_v = malloc((size_t)t->nnodes * sizeof(int));
	c->leafg = malloc((size_t)t->nnodes * sizeof(int));
	c->spineg = malloc((size_t)t->nnodes * sizeof(int));
	c->gpu_island = malloc(ng * sizeof(int));
	c->gpu_unit = malloc(ng * sizeof(int));
	c->island_bw = calloc((size_t)t->nislands + 1, sizeof(double));
	c->nmask = calloc((size_t)t->nnodes, sizeof(uint64_t));
	c->all_free = malloc((size_t)t->nnodes * sizeof(uint64_t));
	c->memo = calloc(MEMO_SIZE, sizeof(*c->memo));
	if (c->o.explain_max > 0)
		c->cands = calloc((size_t)c->o.explain_max, sizeof(*c->cands));
	if (!c->node_v || !c->leafg || !c->spineg || !c->gpu_island ||
	    !c->gpu_unit || !c->island_bw || !c->nmask || !c->all_free ||
	    !c->memo || (c->o.explain_max > 0 && !c->cands))
		goto fail;
	for (i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];

		c->leafg[i] = n->group[ISLE_TIER_LEAF];
		c->spineg[i] = n->group[ISLE_TIER_SPINE];
		c->all_free[i] =
		    n->ngpus >= 64 ? ~0ULL : (1ULL << n->ngpus) - 1;
		if (n->ngpus > c->max_node_gpus)
			c->max_node_gpus = n->ngpus;
		c->total_gpus += n->ngpus;
		for (g = 0; g < ISLE_MAX_GPUS_PER_NODE; g++) {
			size_t k = (size_t)i * ISLE_MAX_GPUS_PER_NODE + g;

			c->gpu_island[k] =
			    g < n->ngpus ? n->gpus[g].island : -1;
			c->gpu_unit[k] = -1;
		}
	}
	for (i = 0; i < t->nislands; i++) {
		c->island_bw[i] = t->islands[i].bw_gbps;
		if (t->islands[i].ngpus > c->max_island)
			c->max_island = t->islands[i].ngpus;
	}
	/* Traffic that leaves a node also crosses the node's own links, and
	 * traffic through a spine also crosses the leafs: a looser tier is
	 * never faster than a tighter one (islands excepted: NVLink is a
	 * separate fabric). */
	for (i = 0; i < ISLE_TIER_COUNT; i++) {
		c->tier_bw[i] = isle_topo_tier_bw(t, (isle_tier)i);
		c->tier_lat[i] = isle_topo_tier_lat(t, (isle_tier)i);
		if (i > ISLE_TIER_NODE) {
			if (c->tier_bw[i] > c->tier_bw[i - 1])
				c->tier_bw[i] = c->tier_bw[i - 1];
			if (c->tier_lat[i] < c->tier_lat[i - 1])
				c->tier_lat[i] = c->tier_lat[i - 1];
		}
	}
	if (build_tree(c))
		goto fail;
	c->cap = calloc((size_t)c->nv, sizeof(int));
	c->freec = calloc((size_t)c->nv, sizeof(int));
	c->take = calloc((size_t)c->nv, sizeof(int));
	c->maxcap = calloc((size_t)c->nv * FIT_LEVELS, sizeof(int));
	c->avail = calloc((size_t)c->nv, sizeof(uint64_t));
	c->kids = malloc((size_t)c->nv * sizeof(*c->kids));
	c->touched = malloc((size_t)c->nv * sizeof(int));
	c->scopes = malloc((size_t)c->nv * sizeof(int));
	c->stamp = calloc((size_t)c->nv, sizeof(unsigned));
	c->subparts = calloc((size_t)c->nv, sizeof(int));
	c->sig = calloc((size_t)c->nv, sizeof(uint64_t));
	c->iso_prev = calloc((size_t)c->nv, sizeof(int));
	c->xcnt = calloc((size_t)c->nv, sizeof(int));
	if (!c->cap || !c->freec || !c->take || !c->maxcap || !c->avail ||
	    !c->kids || !c->touched || !c->scopes || !c->stamp ||
	    !c->subparts || !c->sig || !c->iso_prev || !c->xcnt)
		goto fail;
	return c;
fail:
	isle_place_destroy(c);
	return NULL;
}

void isle_place_destroy(isle_place_ctx *c)
{
	if (!c)
		return;
	free(c->v);
	free(c->child);
	free(c->node_v);
	for (int i = 0; i < PV_LEVELS; i++)
		free(c->by_level[i]);
	free(c->leafg);
	free(c->spineg);
	free(c->gpu_island);
	free(c->gpu_unit);
	free(c->island_bw);
	free(c->cap);
	free(c->freec);
	free(c->take);
	free(c->maxcap);
	free(c->avail);
	free(c->kids);
	free(c->touched);
	free(c->nmask);
	free(c->scopes);
	free(c->stamp);
	free(c->subparts);
	free(c->sig);
	free(c->iso_prev);
	free(c->xcnt);
	free(c->alt);
	isle_place_result_fini(&c->cand);
	isle_place_result_fini(&c->best);
	free(c->cands);
	free(c->memo);
	free(c->all_free);
	free(c);
}

/* --- Requests ----------------------------------------------------------- */

static int fail(struct isle_place_result *res, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct isle_place_result *res, int rc, const char *fmt, ...)
{
	va_list ap;

	if (res) {
		va_start(ap, fmt);
		vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* Validates req and fills q; -EINVAL or -E2BIG with the reason in res. */
static int normalize(const isle_place_ctx *c, const struct isle_place_req *r,
		     struct pnorm *q, struct isle_place_result *res)
{
	int gpus = r->gpus, gpn = r->gpus_per_node, prod;

	if (r->tp < 1 || r->pp < 1)
		return fail(res, -EINVAL, "tp (%d) and pp (%d) must be >= 1",
			    r->tp, r->pp);
	if (gpus < 0 || r->nodes < 0 || gpn < 0)
		return fail(res, -EINVAL,
			    "negative size (gpus=%d nodes=%d "
			    "gpus_per_node=%d)",
			    gpus, r->nodes, gpn);
	if (r->mode != ISLE_PLACE_REQUIRED && r->mode != ISLE_PLACE_PREFERRED)
		return fail(res, -EINVAL, "bad mode %d", (int)r->mode);
	if (r->workload != ISLE_WORKLOAD_TRAIN &&
	    r->workload != ISLE_WORKLOAD_INFER)
		return fail(res, -EINVAL, "bad workload %d", (int)r->workload);
	if ((int)r->max_span < 0 || r->max_span >= ISLE_TIER_COUNT)
		return fail(res, -EINVAL, "bad max_span %d", (int)r->max_span);
	if (r->nodes > 0 && gpn == 0) {
		if (gpus == 0)
			return fail(res, -EINVAL,
				    "zero size: nodes=%d needs "
				    "gpus or gpus_per_node",
				    r->nodes);
		if (gpus % r->nodes)
			return fail(res, -EINVAL,
				    "gpus (%d) not divisible by "
				    "nodes (%d)",
				    gpus, r->nodes);
		gpn = gpus / r->nodes;
	}
	/* Sizes come from users (through Slurm): any product that does not
	 * fit an int is refused before it is used as a divisor or a count. */
	if (gpus == 0 && __builtin_mul_overflow(r->nodes, gpn, &gpus))
		return fail(res, -EINVAL,
			    "nodes x gpus_per_node (%d x %d) overflows",
			    r->nodes, gpn);
	if (gpus == 0)
		return fail(res, -EINVAL,
			    "zero size: give gpus, or nodes and "
			    "gpus_per_node");
	if (r->nodes > 0 && __builtin_mul_overflow(r->nodes, gpn, &prod))
		return fail(res, -EINVAL,
			    "nodes x gpus_per_node (%d x %d) overflows",
			    r->nodes, gpn);
	if (r->nodes > 0 && gpus != prod)
		return fail(res, -EINVAL,
			    "gpus (%d) != nodes (%d) x "
			    "gpus_per_node (%d)",
			    gpus, r->nodes, gpn);
	if (gpn > 0 && gpus % gpn)
		return fail(res, -EINVAL,
			    "gpus_per_node (%d) does not divide "
			    "gpus (%d)",
			    gpn, gpus);
	if (gpus % r->tp)
		return fail(res, -EINVAL,
			    "tp (%d) does not divide the GPU "
			    "count (%d)",
			    r->tp, gpus);
	if (__builtin_mul_overflow(r->tp, r->pp, &prod) || prod > gpus)
		return fail(res, -EINVAL,
			    "tp x pp (%d x %d) exceeds the GPU count (%d)",
			    r->tp, r->pp, gpus);
	if (gpus % prod)
		return fail(res, -EINVAL,
			    "tp x pp (%d x %d) does not divide "
			    "the GPU count (%d)",
			    r->tp, r->pp, gpus);
	q->gpus = gpus;
	q->gpn = gpn;
	q->tp = r->tp;
	q->pp = r->pp;
	q->dp = gpus / prod;
	q->required = r->mode == ISLE_PLACE_REQUIRED;
	q->max_span = r->max_span;
	q->workload = r->workload;

	if (gpus > c->total_gpus)
		return fail(res, -E2BIG,
			    "%d GPUs requested, the cluster has "
			    "%ld",
			    gpus, c->total_gpus);
	if (gpn > c->max_node_gpus)
		return fail(res, -E2BIG,
			    "gpus_per_node %d exceeds the largest "
			    "node (%d GPUs)",
			    gpn, c->max_node_gpus);
	if (q->required && r->tp > c->max_island)
		return fail(res, -E2BIG,
			    "tp=%d exceeds the largest NVLink "
			    "island (%d GPUs) in required mode",
			    r->tp, c->max_island);
	return 0;
}

/* --- Capacities --------------------------------------------------------- */

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
static void prepare(isle_place_ctx *c, const uint64_t *free_gpus,
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
		c->freec[u] = popc(a);
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

/* --- Fill --------------------------------------------------------------- */

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

/* --- Candidates --------------------------------------------------------- */

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

/* Fills r->nodes/masks from r->ranks and the span statistics. */
static void finish(isle_place_ctx *c, const struct pnorm *q,
		   struct isle_place_result *r)
{
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
}

/* 1 if a beats b (both feasible). */
static int better(const isle_place_ctx *c, const struct isle_place_result *a,
		  const struct isle_place_result *b)
{
	double ca = a->cost.total, cb = b->cost.total,
	       tol = c->o.cost_tolerance;

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
static void record(isle_place_ctx *c, int scope_v, int feasible, int best,
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

	result_clear(r);
	c->ntouched = 0;
	c->kid_top = 0;
	fill(c, v, q->gpus, r);
	finish(c, q, r);
	if (r->nranks != q->gpus || r->span > q->max_span) {
		snprintf(note, sizeof(note), "span %s > %s",
			 isle_tier_name(r->span), isle_tier_name(q->max_span));
		record(c, v, 0, 0, r, note);
		return 0;
	}
	r->ideal = c->best.ideal;
	if (*have_best && !better(c, r, &c->best)) {
		if (r->cost.total > c->best.cost.total)
			snprintf(
			    note, sizeof(note), "cost +%.1f%%",
			    100.0 * (r->cost.total / c->best.cost.total - 1.0));
		else
			snprintf(note, sizeof(note), "fragmentation %.3f",
				 r->frag);
		record(c, v, 1, 0, r, note);
		return 0;
	}
	{
		struct isle_place_result tmp = c->best;

		c->best = c->cand;
		c->cand = tmp;
	}
	*have_best = 1;
	record(c, v, 1, 1, &c->best, "best so far");
	return 1;
}

/* Both fills of scope v: best fit, then largest first. */
static void try_scope(isle_place_ctx *c, const struct pnorm *q, int v,
		      int *have_best)
{
	c->fill_largest = 0;
	try_fill(c, q, v, have_best);
	c->fill_largest = 1;
	try_fill(c, q, v, have_best);
	c->fill_largest = 0;
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
static int search(isle_place_ctx *c, const struct pnorm *q, int *have_best)
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
static void exact_search(isle_place_ctx *c, const struct pnorm *q,
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
	result_clear(r);
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
	finish(c, q, r);
	r->ideal = c->best.ideal;
	if (better(c, r, &c->best)) {
		struct isle_place_result tmp = c->best;

		c->best = c->cand;
		c->cand = tmp;
		record(c, c->root, 1, 1, &c->best, "exact search");
	} else {
		record(c, c->root, 1, 0, r, "exact search");
	}
}

/* --- Public entry points ------------------------------------------------ */

/*
 * One pass per alignment: GPUs per island in multiples of tp (any TP
 * group), of a pipeline replica, of a DP slab (one stage of every
 * replica) or of the whole job. On small clusters every multiple of tp
 * that divides the job, applied per island, per node or per leaf group.
 * Aligned fills let the layout keep whole replicas or DP groups close;
 * the best of all passes wins. Without the required constraint there is
 * one unaligned pass.
 */
static int run(isle_place_ctx *c, const uint64_t *free_gpus,
	       const uint64_t *elig, const struct pnorm *q0)
{
	static const int small_levels[] = {PV_UNIT, PV_NODE, PV_LEAF};
	struct pnorm q = *q0;
	int gran[32], n = 0, nlev = 1, have = 0, k, j, l, rc;

	gran[n++] = q0->tp;
	if (q0->required && c->nnodes <= SMALL_CLUSTER) {
		for (k = 2 * q0->tp; k <= q0->gpus && n < 32; k += q0->tp)
			if (q0->gpus % k == 0)
				gran[n++] = k;
		nlev = 3;
	} else if (q0->required) {
		gran[n++] = q0->tp * q0->pp;
		gran[n++] = q0->tp * q0->dp;
		gran[n++] = q0->gpus;
	}
	for (k = 0; k < n; k++) {
		for (j = 0; j < k && gran[j] != gran[k]; j++)
			;
		if (j < k)
			continue;
		if (q0->gpn > 0 && q0->gpn % gran[k] && gran[k] % q0->gpn)
			continue;
		for (l = 0; l < (k ? nlev : 1); l++) {
			if (small_levels[l] == PV_UNIT && k > 0 &&
			    gran[k] > c->max_island)
				continue;
			q.gran = q0->required ? gran[k] : 1;
			q.gran_level = small_levels[l];
			prepare(c, free_gpus, elig, &q);
			rc = search(c, &q, &have);
			if (rc)
				return rc;
		}
	}
	exact_search(c, q0, &have);
	return have ? 0 : -ENOSPC;
}

/* Places q: in preferred mode, first as if required, then relaxed. */
static int place_norm(isle_place_ctx *c, const uint64_t *free_gpus,
		      const uint64_t *elig, const struct pnorm *q0)
{
	struct pnorm q = *q0;
	int rc;

	if (!q0->required && q0->tp <= c->max_island) {
		q.required = 1;
		rc = run(c, free_gpus, elig, &q);
		if (rc != -ENOSPC)
			return rc;
		q.required = 0;
	}
	return run(c, free_gpus, elig, &q);
}

static struct ideal_memo *memo_slot(isle_place_ctx *c, const struct pnorm *q,
				    int mode)
{
	unsigned h = (unsigned)q->gpus * 2654435761u ^
		     (unsigned)q->gpn * 40503u ^ (unsigned)q->tp * 97u ^
		     (unsigned)q->pp * 31u ^ (unsigned)mode * 7u ^
		     (unsigned)q->max_span * 3u ^ (unsigned)q->workload;

	for (int i = 0; i < MEMO_SIZE; i++) {
		struct ideal_memo *m = &c->memo[(h + i) % MEMO_SIZE];

		if (!m->used)
			return m;
		if (m->gpus == q->gpus && m->gpn == q->gpn && m->tp == q->tp &&
		    m->pp == q->pp && m->mode == mode &&
		    m->span == (int)q->max_span &&
		    m->workload == (int)q->workload)
			return m;
	}
	/* full: start over (shapes repeat; this is rare) */
	memset(c->memo, 0, MEMO_SIZE * sizeof(*c->memo));
	return &c->memo[h % MEMO_SIZE];
}

/* Ideal cost of q (empty cluster), memoised. Clobbers c->best. */
static int ideal_norm(isle_place_ctx *c, const struct pnorm *q,
		      struct isle_place_cost *out, char *why, size_t whylen)
{
	struct ideal_memo *m = memo_slot(c, q, q->required);
	struct isle_place_cand *saved = c->cands;
	int rc;

	if (!m->used) {
		c->cands = NULL;
		c->best.ideal = (struct isle_place_cost){0};
		rc = place_norm(c, c->all_free, NULL, q);
		c->cands = saved;
		if (rc == -ENOMEM)
			return rc;
		*m = (struct ideal_memo){
		    .used = 1,
		    .gpus = q->gpus,
		    .gpn = q->gpn,
		    .tp = q->tp,
		    .pp = q->pp,
		    .mode = q->required,
		    .span = (int)q->max_span,
		    .workload = (int)q->workload,
		    .rc = rc,
		    .cost = rc ? (struct isle_place_cost){0} : c->best.cost};
	}
	*out = m->cost;
	if (m->rc && why)
		snprintf(why, whylen,
			 "%d GPUs (tp=%d, pp=%d%s%s, span <= %s) "
			 "do not fit even on the empty cluster",
			 q->gpus, q->tp, q->pp, q->gpn ? ", per node " : "",
			 q->gpn ? "fixed" : "", isle_tier_name(q->max_span));
	return m->rc == -ENOSPC ? -E2BIG : m->rc;
}

int isle_place_check(isle_place_ctx *c, const struct isle_place_req *req,
		     char *reason, size_t reasonlen)
{
	struct isle_place_result tmp;
	struct isle_place_cost cost;
	struct pnorm q;
	int rc;

	if (!c || !req)
		return -EINVAL;
	result_clear(&tmp);
	rc = normalize(c, req, &q, &tmp);
	if (!rc)
		rc = ideal_norm(c, &q, &cost, tmp.reason, sizeof(tmp.reason));
	if (rc && reason)
		snprintf(reason, reasonlen, "%s", tmp.reason);
	return rc;
}

int isle_place_ideal(isle_place_ctx *c, const struct isle_place_req *req,
		     struct isle_place_cost *out)
{
	struct isle_place_result tmp;
	struct pnorm q;
	int rc;

	if (!c || !req || !out)
		return -EINVAL;
	result_clear(&tmp);
	rc = normalize(c, req, &q, &tmp);
	if (rc)
		return rc;
	return ideal_norm(c, &q, out, NULL, 0);
}

int isle_place(isle_place_ctx *c, const uint64_t *free_gpus,
	       const uint64_t *eligible, const struct isle_place_req *req,
	       struct isle_place_result *res)
{
	struct isle_place_cost ideal;
	struct pnorm q;
	int rc;

	if (!res)
		return -EINVAL;
	result_clear(res);
	if (!c || !free_gpus || !req)
		return fail(res, -EINVAL,
			    "missing context, free_gpus masks or "
			    "request");
	c->ncands = 0;
	c->chosen = -1;
	rc = normalize(c, req, &q, res);
	if (rc)
		return rc;
	rc = ideal_norm(c, &q, &ideal, res->reason, sizeof(res->reason));
	if (rc)
		return rc;
	c->best.ideal = ideal;
	rc = place_norm(c, free_gpus, eligible, &q);
	if (rc == -ENOSPC) {
		q.gran = q.tp;
		q.gran_level = PV_UNIT;
		prepare(c, free_gpus, eligible, &q);
		return fail(
		    res, rc,
		    "no placement now: %d GPUs needed%s, %d "
		    "usable in TP groups of %d inside islands, %d free_gpus "
		    "on eligible nodes",
		    q.gpus, q.gpn ? " (fixed per node)" : "", c->cap[c->root],
		    q.tp, c->freec[c->root]);
	}
	if (rc)
		return fail(res, rc, "%s",
			    rc == -ENOMEM ? "out of memory"
					  : "placement failed");
	c->best.ideal = ideal;
	rc = result_copy(res, &c->best);
	if (rc)
		return fail(res, rc, "out of memory");
	return 0;
}

int isle_place_eval(isle_place_ctx *c, const struct isle_place_req *req,
		    const struct isle_place_rank *ranks, int nranks,
		    struct isle_place_cost *out)
{
	struct isle_place_result tmp;
	struct pnorm q;
	int rc, i;

	if (!c || !req || !ranks || !out)
		return -EINVAL;
	result_clear(&tmp);
	rc = normalize(c, req, &q, &tmp);
	if (rc == -E2BIG)
		rc = 0; /* any placement can be evaluated */
	if (rc)
		return rc;
	if (nranks != q.gpus)
		return -EINVAL;
	for (i = 0; i < nranks; i++)
		if (ranks[i].node < 0 || ranks[i].node >= c->nnodes ||
		    ranks[i].gpu < 0 ||
		    ranks[i].gpu >= c->t->nodes[ranks[i].node].ngpus)
			return -EINVAL;
	isle__place_cost(c, &q, ranks, nranks, out, NULL, NULL);
	return 0;
}

const struct isle_place_cand *isle_place_candidates(const isle_place_ctx *c,
						    int *n)
{
	*n = c ? c->ncands : 0;
	return c ? c->cands : NULL;
}
