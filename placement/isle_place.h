/*
 * isle_place.h - the isle placement engine.
 *
 * Given the cluster model (isle_topo.h), the GPUs that are free right now and
 * a request (GPU or node count, TP and PP sizes, mode, span limit, workload),
 * the engine picks the GPUs and a rank order that keeps every tensor-parallel
 * (TP) group inside one NVLink island, pipeline stages next to each other and
 * data-parallel (DP) replicas under few switches, then breaks ties by leaving
 * whole islands, nodes and leaf groups free. Cost model: docs/placement.md.
 *
 * Rank layout of a placement (Megatron-like, TP fastest):
 *   rank r -> tp index r % tp, stage (r / tp) % pp, replica r / (tp * pp).
 * So each TP group is the tp consecutive ranks [k*tp, (k+1)*tp), one pipeline
 * replica is tp*pp consecutive ranks, and stage s+1 follows stage s.
 *
 * Error contract (every int-returning function):
 *   0          success;
 *   -EINVAL    malformed request (zero sizes, TP not dividing the GPU count,
 *              bad mode/tier, mask outside the node's GPUs, ...);
 *   -E2BIG     well-formed but can never be placed on this cluster, even when
 *              it is empty (TP larger than every island in required mode,
 *              more GPUs than the cluster has, span limit too tight);
 *   -ENOSPC    no placement with the GPUs free now: the job waits;
 *   -ENOMEM    out of memory.
 * -EINVAL, -E2BIG and -ENOSPC also fill result->reason with one line
 * ("tp=16 exceeds the largest NVLink island (8 GPUs) in required mode").
 *
 * GPU masks: bit g of a uint64_t is GPU g of a node (at most 64 GPUs per
 * node). A "free" array has one mask per node of the model, indexed like
 * isle_topo.nodes. A node eligibility map is a bitmap of uint64_t words, node
 * i is bit (i % 64) of word i / 64; NULL means every node is eligible. The
 * engine never selects a GPU whose bit is clear in free[] or a node whose
 * eligibility bit is clear, and never writes to either array.
 *
 * Determinism: the same model, options, free masks and request always give
 * the same result (no randomness, no dependence on addresses or time).
 *
 * Threads: a context is used by one thread at a time; several contexts may
 * share one finalized model.
 */
#ifndef ISLE_PLACE_H
#define ISLE_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "isle_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum isle_place_mode {
	ISLE_PLACE_REQUIRED = 0,  /* every TP group in one island, or wait */
	ISLE_PLACE_PREFERRED = 1, /* best effort: TP groups may straddle */
} isle_place_mode;

typedef enum isle_workload {
	ISLE_WORKLOAD_TRAIN = 0, /* TP + PP + DP traffic per training step */
	ISLE_WORKLOAD_INFER = 1, /* small-message TP allreduce latency */
} isle_workload;

/*
 * What a job's traffic across the fabric mostly is (contention.c): the
 * load it puts on the shared links it crosses, per GPU, is 1 for
 * data-parallel training (gradient allreduce), 0.5 for a pipeline
 * (stage-boundary sends) and 0.1 for inference (small allreduces).
 */
typedef enum isle_traffic {
	ISLE_TRAFFIC_AUTO = 0, /* from the request's shape (isle_traffic_of) */
	ISLE_TRAFFIC_DP = 1,
	ISLE_TRAFFIC_PP = 2,
	ISLE_TRAFFIC_INFER = 3,
} isle_traffic;

/* Engine options; start from isle_place_opts_default(). Units: bytes. */
struct isle_place_opts {
	/* Training step traffic per GPU (defaults: a ~70B dense model). */
	double tp_msg_bytes; /* one TP allreduce (activations) */
	double tp_calls;     /* TP allreduces per step (whole model) */
	double pp_msg_bytes; /* one stage-boundary activation send */
	double pp_calls;     /* sends per boundary per step (micro-batches*2) */
	double dp_bytes;     /* gradients of the whole model, split by tp*pp */
	/* Inference: one small TP allreduce per layer half, per token. */
	double infer_msg_bytes;
	double infer_calls;
	/* Weights of the cost terms (TP heaviest; DP overlaps with compute). */
	double w_tp, w_pp, w_dp;
	/* Candidates whose cost is within (1 + cost_tolerance) of the best are
	 * equal on cost and compared on fragmentation. 0 = strict. */
	double cost_tolerance;
	/* Fragmentation weights per level (leftover fraction of each touched
	 * island, node and leaf group) and the overall weight of fragmentation
	 * against cost in the score; frag_weight 0 = pure tie-break. */
	double w_frag_island, w_frag_node, w_frag_leaf;
	double frag_weight;
	/* isle_place_later: a reservation on nodes busy now may cost this much
	 * more (relative) than the plain placement (default 0.1). */
	double later_cost_slack;
	/* Scopes (nodes, domains, leaf and spine groups) evaluated per level,
	 * best fit first; every scope is evaluated on clusters of at most 64
	 * nodes. */
	int max_scopes;
	/* Record up to this many candidates for isle_place_candidates(); 0 off.
	 */
	int explain_max;
	/* Weight of the contention term (contention.c): a candidate whose
	 * traffic crosses shared uplinks that running jobs load (see
	 * isle_place_load_add) costs its inter-node part (w_pp*pp + w_dp*dp)
	 * times this weight times the mean load share of those links. 0 (the
	 * default): the engine does not look at other jobs' traffic. */
	double contention_weight;
};

struct isle_place_req {
	int gpus;	   /* total GPUs; 0 = nodes * gpus_per_node */
	int nodes;	   /* exact node count; 0 = any */
	int gpus_per_node; /* exact GPUs on each chosen node; 0 = any */
	int tp;		   /* tensor-parallel group size, >= 1 */
	int pp;		   /* pipeline stages, >= 1; dp = gpus / (tp * pp) */
	isle_place_mode mode;
	isle_tier max_span; /* loosest tier the whole job may span */
	isle_workload workload;
	isle_traffic traffic; /* AUTO: inferred from the shape */
};

/* One rank of the placement: GPU gpu of node node (model indices). */
struct isle_place_rank {
	int node;
	int gpu;
};

/* Modelled communication time per step (train) or per token (infer), in
 * microseconds; total = w_tp*tp + w_pp*pp + w_dp*dp. */
struct isle_place_cost {
	double tp, pp, dp, total;
};

/* Result of isle_place(). Initialise with isle_place_result_init(); the
 * arrays are owned by the result, grown on demand and reused by later calls
 * (so a loop of placements does not allocate); free with _fini(). */
struct isle_place_result {
	int nnodes;		       /* chosen nodes */
	int *nodes;		       /* ascending node indices */
	uint64_t *masks;	       /* GPUs chosen on nodes[i] */
	int nranks;		       /* = GPUs of the job */
	struct isle_place_rank *ranks; /* rank order, see the layout above */
	int tp, pp, dp;
	struct isle_place_cost cost;  /* this placement */
	struct isle_place_cost ideal; /* same request on the empty cluster */
	int ntp_groups;
	int tp_in_island;	  /* TP groups inside one island */
	int islands;		  /* distinct islands spanned */
	int leafs;		  /* distinct leaf groups spanned */
	isle_tier span;		  /* loosest tier between any two ranks */
	double frag;		  /* fragmentation penalty of the choice */
	double contention;	  /* contention term of the choice (0: none) */
	char reason[256];	  /* why not, on -EINVAL/-E2BIG/-ENOSPC */
	int cap_nodes, cap_ranks; /* private */
};

/* One candidate considered by the last isle_place() call (explain). */
struct isle_place_cand {
	isle_tier scope_tier; /* scope searched: NODE, ISLAND (domain), LEAF,
				 SPINE or CORE (whole cluster) */
	int scope;	      /* node / island / group index within the tier */
	int feasible;	      /* 1 if a placement was built in the scope */
	double cost;	      /* total modelled cost (if feasible) */
	double frag;	      /* fragmentation penalty (if feasible) */
	int chosen;	      /* 1 for the winner */
	char note[64];	      /* short why ("free 12 < 16", "tp straddles") */
};

typedef struct isle_place_ctx isle_place_ctx;

/* Fills o with the documented defaults. */
void isle_place_opts_default(struct isle_place_opts *o);

/* Fills r with defaults: tp = pp = 1, required mode, span CORE, train. */
void isle_place_req_init(struct isle_place_req *r);

/* Creates an engine for a finalized model; opts NULL = defaults. The model
 * is borrowed and must outlive the context. Returns NULL on bad input or
 * out of memory. Caller destroys. */
isle_place_ctx *isle_place_create(const isle_topo *t,
				  const struct isle_place_opts *opts);

/* Frees the context. NULL is a no-op. */
void isle_place_destroy(isle_place_ctx *c);

void isle_place_result_init(struct isle_place_result *r);
/* Frees the result's arrays (not r itself) and re-initialises it. */
void isle_place_result_fini(struct isle_place_result *r);
/* Grows the result's arrays to hold nnodes nodes and nranks ranks, for a
 * caller that fills a result itself (islesim's baseline policies); the
 * counts and contents are left as they are. Returns 0 or -ENOMEM. */
int isle_place_result_reserve(struct isle_place_result *r, int nnodes,
			      int nranks);

/*
 * Checks a request against the cluster alone (no free masks): 0, -EINVAL or
 * -E2BIG, with a reason in reason[reasonlen] (may be NULL). The Slurm
 * plugin can reject jobs at submit time with it.
 */
int isle_place_check(isle_place_ctx *c, const struct isle_place_req *req,
		     char *reason, size_t reasonlen);

/*
 * Places a request. free[] has one mask per node; eligible is the optional
 * node bitmap (NULL = all). On 0, res holds the placement. On error res
 * holds no placement (nnodes = nranks = 0) and res->reason says why.
 */
int isle_place(isle_place_ctx *c, const uint64_t *free_gpus,
	       const uint64_t *eligible, const struct isle_place_req *req,
	       struct isle_place_result *res);

/*
 * Places a request that starts later: a backfill reservation (Slurm's
 * will-run test). free_later[] has the GPUs free at the start time,
 * free_now[] those free now. The reservation holds its nodes until the
 * start, so it leaves the GPUs free now to jobs that can start now: the
 * request is placed on the nodes with at most k GPUs free now, k = 0, 1,
 * ..., and the first placement that costs at most later_cost_slack more
 * than isle_place on free_later wins; else isle_place's. Same contract
 * and result as isle_place.
 */
int isle_place_later(isle_place_ctx *c, const uint64_t *free_later,
		     const uint64_t *free_now, const uint64_t *eligible,
		     const struct isle_place_req *req,
		     struct isle_place_result *res);
/*
 * Modelled cost of an arbitrary rank order (any policy's placement) under
 * req's tp/pp/workload: ranks[0..nranks) with nranks = req GPU count.
 * Returns 0 or -EINVAL.
 */
int isle_place_eval(isle_place_ctx *c, const struct isle_place_req *req,
		    const struct isle_place_rank *ranks, int nranks,
		    struct isle_place_cost *out);

/*
 * Cost of the request on the empty cluster (memoised per request shape).
 * Returns 0, -EINVAL or -E2BIG.
 */
int isle_place_ideal(isle_place_ctx *c, const struct isle_place_req *req,
		     struct isle_place_cost *out);

/*
 * Candidates recorded by the last isle_place() call (explain_max > 0).
 * Returns a pointer into the context valid until the next call; *n is set.
 */
const struct isle_place_cand *isle_place_candidates(const isle_place_ctx *c,
						    int *n);

/* Clears the result's GPUs from free[] (allocate) or sets them (release).
 * Returns -EINVAL if allocating a GPU that is not free or releasing one
 * that is, leaving free[] unchanged. */
int isle_place_commit(const struct isle_place_result *res, uint64_t *free_gpus);
int isle_place_release(const struct isle_place_result *res,
		       uint64_t *free_gpus);

/*
 * Cluster fragmentation in [0, 1]: the share of free GPUs that sit in
 * partly used islands, nodes and leaf groups (mean of the three levels).
 * 0 = every free GPU is in a wholly free unit. Uses the context's scratch
 * space (one thread per context, like isle_place).
 */
double isle_place_fragmentation(isle_place_ctx *c, const uint64_t *free_gpus);

/*
 * Load of running jobs on shared links (contention.c), kept incrementally:
 * add a job when it starts, remove it with the same arguments when it
 * ends. A job whose GPUs sit under more than one leaf group loads the
 * uplinks of each leaf group it touches (ToR uplinks), and under more than
 * one spine group those of each spine group (aggregation uplinks), by its
 * traffic class's weight times its GPUs there, at most one node's GPUs
 * (a ring crosses a group's uplinks on one node's NICs). nodes[i] and
 * masks[i] are the job's GPUs (a result's nodes and masks). 0, or -EINVAL
 * on a bad node or traffic class. tr AUTO counts as DP.
 */
int isle_place_load_add(isle_place_ctx *c, const int *nodes,
			const uint64_t *masks, int nnodes, isle_traffic tr);
int isle_place_load_remove(isle_place_ctx *c, const int *nodes,
			   const uint64_t *masks, int nnodes, isle_traffic tr);

/* Load and capacity (in GPUs of traffic: the group's GPUs divided by the
 * oversubscription above it) of the uplinks of leaf or spine group
 * `group` (tier ISLE_TIER_LEAF or ISLE_TIER_SPINE). 0 or -EINVAL. */
int isle_place_link_load(const isle_place_ctx *c, isle_tier tier, int group,
			 double *load, double *cap);

/* The request's traffic class: req->traffic, or from the shape when AUTO
 * (inference workload: INFER; pp > 1 and one replica: PP; else DP). */
isle_traffic isle_traffic_of(const struct isle_place_req *req);
/* "auto", "dp", "pp", "infer"; NULL for bad values. */
const char *isle_traffic_name(isle_traffic tr);
/* The one parser of a traffic class (job option, islesim):
 * "auto", "dp" (also "train"), "pp" (also "pipeline"), "infer" (also
 * "inference"); returns the class or -1. */
int isle_traffic_parse(const char *s);

/* "ok", "invalid request", "never fits", "no placement now", ... */
const char *isle_place_strerror(int rc);
const char *isle_place_mode_name(isle_place_mode m);
/* Parses "required"/"preferred"; returns the mode or -1. */
int isle_place_mode_parse(const char *s);
const char *isle_workload_name(isle_workload w);
/* Parses "train"/"infer"; returns the workload or -1. */
int isle_workload_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* ISLE_PLACE_H */
