/*
 * isle_eval.h - node selection for topology/isle (isle_eval.c): the
 * eval_nodes callback cons_tres runs through common_topo_choose_nodes.
 *
 * An evaluation computes a struct isle__eval_result and hands it to
 * isle__decision_record once; the result says what eval_nodes returns.
 */
#ifndef ISLE_EVAL_H
#define ISLE_EVAL_H

#include <stdbool.h>

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/interfaces/topology.h"

#include "isle_place.h"
#include "isle_proto.h"

/* A shared link (the uplinks of a leaf or spine group) that running jobs
 * load and that the placement, or the same engine without the contention
 * term, crosses. */
struct isle__eval_link {
	isle_tier tier; /* ISLE_TIER_LEAF or ISLE_TIER_SPINE */
	int group;	/* the tier's group index (isle_node.group) */
	double load;	/* running jobs' load, GPUs of traffic */
	double cap;	/* what the uplinks carry, same unit */
	bool avoided;	/* crossed without the term, not by the placement */
};

struct isle__eval_result {
	job_record_t *job_ptr;
	int rc; /* what eval_nodes returns */
	/* enum isle_record_outcome: proto's words for a decision, the ones
	 * islectl and isle-exporter read back. ISLE_OUTCOME_OTHER: isle has
	 * nothing to say about this job (no GPUs, nodes outside the model),
	 * no decision is recorded. */
	int outcome;
	bool fallback; /* no model: the cluster file does not load */
	bool have_req; /* req holds the job's request (its options were
			  accepted) */
	struct isle_place_req req;
	struct isle_place_result res; /* PLACED, PLANNED: the placement */
	bitstr_t *node_map; /* PLACED, PLANNED: the nodes Slurm took */
	struct isle_place_cand *cands; /* what the engine weighed */
	int ncands;
	char *reason; /* why isle did not place the job */
	/* With the contention term on (PLACED, PLANNED): the loaded links
	 * the placement and the term-blind one cross, and the term-blind
	 * placement's nodes (blind_nnodes 0: it is the same placement). */
	struct isle__eval_link *links;
	int nlinks;
	int *blind_nodes; /* model indices */
	int blind_nnodes;
};

/*
 * The eval_nodes callback. With a model it places the job with the engine
 * inside cons_tres's maps; while the cluster file cannot be loaded
 * (fallback) required-mode isle jobs wait and the rest get Slurm's default
 * selection. Either way the decision is recorded.
 */
int isle__eval_nodes(topology_eval_t *topo_eval);

#endif /* ISLE_EVAL_H */
