/*
 * engine.c - the placement search: requests and the public entry points.
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
 * seeded with the best fill (exact.c).
 *
 * tree.c builds the locality tree, fill.c searches the scopes, exact.c
 * holds the branch and bound.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_priv.h"

/* --- Requests ------------------------------------------------------------- */

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
	if ((int)r->traffic < ISLE_TRAFFIC_AUTO ||
	    r->traffic > ISLE_TRAFFIC_INFER)
		return fail(res, -EINVAL, "bad traffic class %d",
			    (int)r->traffic);
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
	q->traffic = isle_traffic_of(r);

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

/* --- Public entry points -------------------------------------------------- */

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
			isle__place_prepare(c, free_gpus, elig, &q);
			rc = isle__place_search(c, &q, &have);
			if (rc)
				return rc;
		}
	}
	isle__place_exact_search(c, q0, &have);
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
	double ccw = c->o.contention_weight;
	int rc;

	if (!m->used) {
		/* the ideal is the job alone on the empty cluster: no running
		 * job's traffic to avoid */
		c->cands = NULL;
		c->o.contention_weight = 0;
		c->best.ideal = (struct isle_place_cost){0};
		isle__place_fin_forget(c);
		rc = place_norm(c, c->all_free, NULL, q);
		isle__place_fin_forget(c);
		c->cands = saved;
		c->o.contention_weight = ccw;
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
	isle__place_result_clear(&tmp);
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
	isle__place_result_clear(&tmp);
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
	isle__place_result_clear(res);
	if (!c || !free_gpus || !req)
		return fail(res, -EINVAL,
			    "missing context, free_gpus masks or "
			    "request");
	c->ncands = 0;
	c->chosen = -1;
	isle__place_fin_forget(c);
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
		isle__place_prepare(c, free_gpus, eligible, &q);
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
	rc = isle__place_result_copy(res, &c->best);
	if (rc)
		return fail(res, rc, "out of memory");
	return 0;
}

int isle_place_later(isle_place_ctx *c, const uint64_t *free_later,
		     const uint64_t *free_now, const uint64_t *eligible,
		     const struct isle_place_req *req,
		     struct isle_place_result *res)
{
	struct isle_place_result alt;
	uint64_t *el = NULL;
	double lim;
	int words, k, i, rc;

	rc = isle_place(c, free_later, eligible, req, res);
	if (rc || !free_now)
		return rc;
	lim = res->cost.total * (1.0 + c->o.later_cost_slack);
	words = c->nnodes / 64 + 1;
	el = calloc((size_t)words, sizeof(*el));
	if (!el)
		return 0; /* the plain placement stands */
	isle_place_result_init(&alt);
	for (k = 0; k < c->max_node_gpus; k++) {
		int added = 0;

		for (i = 0; i < c->nnodes; i++) {
			uint64_t bit = 1ULL << (i % 64);

			if (__builtin_popcountll(free_now[i]) != k ||
			    (eligible && !(eligible[i / 64] & bit)))
				continue;
			el[i / 64] |= bit;
			added = 1;
		}
		if (!added || isle_place(c, free_later, el, req, &alt) ||
		    alt.cost.total > lim)
			continue;
		if (isle__place_result_copy(res, &alt) == 0)
			break;
	}
	isle_place_result_fini(&alt);
	free(el);
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
	isle__place_result_clear(&tmp);
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
