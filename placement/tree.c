/*
 * tree.c - results, options and the placement context: the locality tree
 * the engine searches (place_priv.h), built once per context.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

/* --- Results -------------------------------------------------------------- */

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
void isle__place_result_clear(struct isle_place_result *r)
{
	r->nnodes = r->nranks = 0;
	r->tp = r->pp = r->dp = 0;
	memset(&r->cost, 0, sizeof(r->cost));
	memset(&r->ideal, 0, sizeof(r->ideal));
	r->ntp_groups = r->tp_in_island = r->islands = r->leafs = 0;
	r->span = ISLE_TIER_ISLAND;
	r->frag = 0.0;
	r->contention = 0.0;
	r->reason[0] = '\0';
}

int isle__place_result_copy(struct isle_place_result *dst,
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
	/* islesim: cost-blind reservations on busy nodes lengthened the
	 * waits of large jobs on NVL72-like (GPU-weighted wait +8%) */
	o->later_cost_slack = 0.1;
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
			c->v[i].size = isle__place_popc(c->v[i].mask);
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
	if (build_tree(c) || isle__place_cost_init(c) || isle__place_cc_init(c))
		goto fail;
	c->cap = calloc((size_t)c->nv, sizeof(int));
	c->freec = calloc((size_t)c->nv, sizeof(int));
	c->take = calloc((size_t)c->nv, sizeof(int));
	c->maxcap = calloc((size_t)c->nv * FIT_LEVELS, sizeof(int));
	c->avail = calloc((size_t)c->nv, sizeof(uint64_t));
	c->kids = malloc((size_t)c->nv * sizeof(*c->kids));
	c->touched = malloc((size_t)c->nv * sizeof(int));
	c->scopes = malloc((size_t)c->nv * sizeof(int));
	c->stamp = calloc((size_t)c->nv * DP_STAGES, sizeof(unsigned));
	c->subparts = calloc((size_t)c->nv * DP_STAGES, sizeof(int));
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
	free(c->dp_anc);
	free(c->sig);
	free(c->iso_prev);
	free(c->xcnt);
	free(c->alt);
	for (int i = 0; i < FIN_MEMO; i++) {
		free(c->fin[i].in);
		free(c->fin[i].out);
	}
	isle_place_result_fini(&c->cand);
	isle_place_result_fini(&c->best);
	free(c->cands);
	free(c->memo);
	free(c->all_free);
	isle__place_cc_fini(c);
	free(c);
}
