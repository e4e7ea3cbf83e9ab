/*
 * place_priv.h - internals shared by the files of the placement engine.
 * Nothing outside placement/ includes it (islesim uses only isle_place.h).
 */
#ifndef ISLE_PLACE_PRIV_H
#define ISLE_PLACE_PRIV_H

#include "isle_place.h"

/*
 * The engine views the cluster as a tree of vertices, built once per
 * context: root -> spine groups -> leaf groups -> [multi-node NVLink
 * domain] -> nodes -> units, where a unit is the GPUs of one node inside
 * one island. Children are stored in locality order, so a depth-first walk
 * lists GPUs island by island, node by node, leaf by leaf.
 */
enum pv_level {
	PV_UNIT = 0,
	PV_NODE,
	PV_DOMAIN,
	PV_LEAF,
	PV_SPINE,
	PV_ROOT,
	PV_LEVELS
};

struct pv {
	unsigned char level;
	unsigned char multi; /* unit or domain of a multi-node island */
	int parent;
	int first, nchild; /* children: ctx->child[first .. first+nchild) */
	int id;		   /* node, island or group index (level-dependent) */
	int node;	   /* units: owning node */
	int island;	   /* units and domains: island index */
	uint64_t mask;	   /* units: the GPUs of the unit */
	int size;	   /* GPUs in the subtree */
};

#define FIT_LEVELS 4 /* PV_UNIT .. PV_LEAF */
#define FIN_MEMO 8   /* candidate scores kept by finish() */
#define DP_STAGES 5  /* DP allreduce stages: unit, domain, leaf, spine, root */

/* Per-call request, normalised by normalize() (engine.c). */
struct pnorm {
	int gpus, gpn, tp, pp, dp;
	int required; /* TP groups must sit in islands (this pass) */
	int gran;     /* this pass: GPUs per vertex of level gran_level come
			 in multiples of gran (a multiple of tp) */
	int gran_level;
	isle_tier max_span;
	isle_workload workload;
	isle_traffic traffic; /* resolved: never AUTO */
};

/* Sort entry of the fill (children of one vertex). */
struct pkid {
	int v, cap, freec, ord;
};

struct isle_place_ctx {
	const isle_topo *t;
	struct isle_place_opts o;
	int nnodes;
	int max_island; /* GPUs of the largest island */
	int max_node_gpus;
	long total_gpus;

	/* Tree. */
	int nv, root;
	struct pv *v;
	int *child;
	int *node_v; /* node -> its PV_NODE vertex */
	int nlevel[PV_LEVELS];
	int *by_level[PV_LEVELS]; /* vertices of each level, in tree order */

	/* Per-node cost lookups. */
	int *leafg, *spineg; /* group ids per node */
	int *gpu_island;     /* node * 64 + gpu -> island */
	int *gpu_unit;	     /* node * 64 + gpu -> PV_UNIT vertex */
	double *island_bw;   /* per island: GB/s per GPU (0 = tier default) */
	double tier_bw[ISLE_TIER_COUNT], tier_lat[ISLE_TIER_COUNT];

	/* Per-call scratch (one per vertex). */
	int *cap, *freec, *take;
	int *maxcap;	   /* FIT_LEVELS per vertex: largest capacity of one
			      unit / node / domain / leaf below it */
	uint64_t *avail;   /* units: free and eligible GPUs */
	struct pkid *kids; /* sort scratch, nv entries, used as a stack */
	int kid_top;
	int fill_largest; /* fill mode: largest children first */
	int *touched;	  /* vertices the current fill took GPUs from */
	int ntouched;
	uint64_t *nmask; /* per node: GPUs of the current candidate */
	int *scopes;	 /* scope vertices of one level */
	const struct pnorm *rq;

	/* Evaluation scratch: generation stamps per vertex, DP_STAGES sets
	 * (cost.c's DP stages use one each, the others the first). */
	unsigned *stamp;
	unsigned gen;
	int *subparts; /* DP stages: sub-parts per vertex and stage (valid when
			stamped) */
	int *dp_anc;   /* DP_STAGES per unit vertex: its vertex at the level of
			  each DP allreduce stage (cost.c), -1 elsewhere */

	/* Exact search (exact.c): per vertex a signature of the
	 * free GPUs below it (isomorphic subtrees are equal), the previous
	 * sibling with the same signature (-1) and the ranks placed below it.
	 */
	uint64_t *sig;
	int *iso_prev;
	int *xcnt;

	/* Scores of the last candidates (fill.c's finish()): a fill that
	 * repeats one of them, in the same scoring epoch (one isle_place()
	 * call or one ideal search) and for the same shape, reuses its
	 * score; only the fragmentation, which follows the fill's path, is
	 * computed again. */
	struct fin_memo {
		unsigned epoch;
		int n, cap, tp, pp, dp, workload, traffic;
		struct isle_place_rank *in, *out; /* ranks given, ranks kept */
		struct isle_place_cost cost;
		isle_tier span;
		int tp_in_island, islands, leafs;
		double contention;
	} fin[FIN_MEMO];
	int fin_next;
	unsigned fin_epoch;

	/* Rank order with the other layout (see finish()). */
	struct isle_place_rank *alt;
	int alt_cap;

	/* Candidate results. */
	struct isle_place_result cand, best;

	/* Explain. */
	struct isle_place_cand *cands;
	int ncands;
	int chosen; /* index of the winner in cands, -1 */

	/* Ideal-cost memo, keyed by request shape. */
	struct ideal_memo {
		int used;
		int gpus, gpn, tp, pp, mode, span, workload;
		int rc;
		struct isle_place_cost cost;
	} * memo;
	int nmemo;
	uint64_t *all_free;

	/* Contention (contention.c): load on the uplinks of each leaf and
	 * spine group from running jobs, their capacities, and per-call
	 * scratch (GPUs of the candidate per group, groups touched). */
	double *cc_load[2], *cc_cap[2];
	int *cc_cnt[2], *cc_list[2];
	int cc_ngroups[2];
	int fill_cc; /* fill mode: least loaded leaf and spine groups first */
};

/* Starts a new stamp generation (clears the stamps when it wraps). */
static inline void isle__place_next_gen(isle_place_ctx *c)
{
	if (++c->gen == 0) {
		for (long i = 0; i < (long)c->nv * DP_STAGES; i++)
			c->stamp[i] = 0;
		c->gen = 1;
	}
}

/* cost.c: the lookups of the cost model (c->dp_anc), once the tree is
 * built; 0 or -ENOMEM. */
int isle__place_cost_init(isle_place_ctx *c);

/* cost.c: cost of ranks[0..n) for normalised request q; returns the loosest
 * tier between any two ranks in *span and the TP groups inside one island
 * in *in_island (either may be NULL). */
void isle__place_cost(isle_place_ctx *c, const struct pnorm *q,
		      const struct isle_place_rank *ranks, int n,
		      struct isle_place_cost *out, isle_tier *span,
		      int *in_island);

/* Cost of one TP group (loosest tier worst, first GPU in island) and of
 * one stage-boundary send (tier, sender in island): the terms of
 * isle__place_cost(), for the exact search's bounds. */
double isle__place_tp_group_cost(const isle_place_ctx *c, const struct pnorm *q,
				 isle_tier worst, int island);
double isle__place_pp_pair_cost(const isle_place_ctx *c, const struct pnorm *q,
				isle_tier tier, int island);

/* Hierarchical allreduce of DP group (stage s, TP index t) of ranks (the
 * group's ranks must be set; the others are not read). */
double isle__place_dp_group_cost(isle_place_ctx *c, const struct pnorm *q,
				 const struct isle_place_rank *ranks, int s,
				 int t);

/* Nodes: on clusters up to this size every scope is searched and small
 * jobs get the exact search. */
#define SMALL_CLUSTER 64
#define MEMO_SIZE 1024 /* entries of the ideal-cost memo */

static inline int isle__place_popc(uint64_t m)
{
	return __builtin_popcountll(m);
}

/* tree.c: empties r but keeps its arrays; copies src into dst's arrays. */
void isle__place_result_clear(struct isle_place_result *r);
int isle__place_result_copy(struct isle_place_result *dst,
			    const struct isle_place_result *src);

/* fill.c: capacities of every vertex for one pass of q (free_gpus and elig
 * as in isle_place()); the scope search of that pass, keeping the best
 * candidate in c->best (*have_best set once there is one). */
void isle__place_prepare(isle_place_ctx *c, const uint64_t *free_gpus,
			 const uint64_t *elig, const struct pnorm *q);
int isle__place_search(isle_place_ctx *c, const struct pnorm *q,
		       int *have_best);

/* fill.c: a new scoring epoch: finish() forgets the scores it kept (the
 * running jobs' load or the contention weight may have changed). */
void isle__place_fin_forget(isle_place_ctx *c);

/* fill.c: fills r->nodes/masks from r->ranks and the span statistics; 1 if
 * a beats b (both feasible); logs a candidate for explain. */
void isle__place_finish(isle_place_ctx *c, const struct pnorm *q,
			struct isle_place_result *r);
int isle__place_better(const isle_place_ctx *c,
		       const struct isle_place_result *a,
		       const struct isle_place_result *b);
void isle__place_record(isle_place_ctx *c, int scope_v, int feasible, int best,
			const struct isle_place_result *r, const char *note);

/* contention.c: allocates the link loads (at context creation; 0 or
 * -ENOMEM) and frees them; the contention term of ranks[0..n) for q, 0
 * when the weight is 0 or the job crosses no shared uplink; the load
 * share of vertex v's uplinks (leaf and spine vertices, else 0). */
int isle__place_cc_init(isle_place_ctx *c);
void isle__place_cc_fini(isle_place_ctx *c);
double isle__place_cc_term(isle_place_ctx *c, const struct pnorm *q,
			   const struct isle_place_rank *ranks, int n,
			   const struct isle_place_cost *cost);
double isle__place_cc_share(const isle_place_ctx *c, int v);

/* exact.c: the branch and bound for small jobs over the units prepared
 * last, seeded with c->best. */
void isle__place_exact_search(isle_place_ctx *c, const struct pnorm *q,
			      int *have_best);

#endif /* ISLE_PLACE_PRIV_H */
