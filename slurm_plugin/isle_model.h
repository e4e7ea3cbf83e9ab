/*
 * isle_model.h - the cluster model in slurmctld (isle_model.c): the
 * cluster file loaded (isle_topo), the placement engine over it, its maps
 * onto Slurm's nodes, and the one test of which GPUs of a node are free.
 *
 * Words: the "model" is the cluster file loaded and its maps onto Slurm's
 * nodes; "decisions" are what isle_decision.c records per job; what
 * `scontrol show topology` prints is "topoinfo" (isle_topoinfo.h).
 *
 * All state lives in one plugin context (isle__ctx). slurmctld calls the
 * entry points with its own locks held (config write lock for build_config,
 * job/node locks for eval); ctx.lock only protects the engine context
 * against concurrent readers such as backfill.
 */
#ifndef ISLE_MODEL_H
#define ISLE_MODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/common/node_conf.h"
#include "src/interfaces/gres.h"
#include "src/slurmctld/slurmctld.h"

#include "isle_load.h"
#include "isle_place.h"
#include "isle_topo.h"
#include "spank_isle.h"

/* One group of nodes that names can refer to (get_bitmap, whole_topo). */
struct isle__group {
	char *name;
	bitstr_t *nodes; /* Slurm node indexes */
};

struct isle__ctx {
	pthread_mutex_t lock;
	isle_topo *topo;       /* NULL: fall back to default selection */
	isle_place_ctx *place; /* engine over topo */
	/* The contention term (TopologyParam=IsleContentionWeight): its
	 * weight (0: off), the running jobs whose load place charges
	 * (reconciled by isle_eval.c when Slurm's job table changed since
	 * load_synced) and the same engine without the term, which says
	 * which loaded links a decision avoided (explain). */
	double cc_weight;
	struct isle__load load;
	time_t load_synced;
	isle_place_ctx *place_blind; /* NULL while cc_weight is 0 */
	char *path;		     /* cluster file in use or last tried */
	char *load_error;	     /* why the last load failed, or NULL */
	int nslurm;	       /* node_record_count when maps were built */
	int *slurm2model;      /* [nslurm], -1: node not in the model */
	int *model2slurm;      /* [topo->nnodes], -1: not a Slurm node */
	bitstr_t *model_nodes; /* Slurm nodes known to the model */
	struct isle__group *islands;  /* [topo->nislands] */
	struct isle__group *racks;    /* [topo->nracks] */
	struct isle__group *switches; /* [topo->nswitches], nodes below */
	bitstr_t **domains;	      /* multi-node islands only, ndomains */
	int ndomains;
	/* The admin's policy for the isle job options: spank_isle.so's
	 * arguments in plugstack.conf, parsed by the same code (spank_opts.c)
	 * so sbatch and the controller apply one set of limits. */
	struct isle__spank_policy policy;
};

extern struct isle__ctx isle__ctx;

/* (Re)loads the cluster file and rebuilds the node maps. On failure logs
 * an error naming file and field, keeps no model (default selection) and
 * returns SLURM_ERROR; slurmctld keeps running either way. */
int isle__model_load(void);

/* Drops the model and every map. ctx.lock held. */
void isle__model_free(void);

/* The topology library's warning callback (isle_topo_set_warn): each
 * warning goes to the log as "isle: MSG". */
void isle__model_warn(void *arg, const char *msg);

/*
 * The one test of which GPUs of a node are free: of mask (GPU i: bit i,
 * the first ngpus GPUs looked at), none on a node that takes no job now
 * (down, drained, failed, not responding or not yet in service: FUTURE),
 * and none that ns (the node's GPU state, may be NULL) has allocated.
 */
uint64_t isle__model_gpus_free(const node_record_t *node_ptr,
			       const gres_node_state_t *ns, uint64_t mask,
			       int ngpus);

/* Free GPUs of Slurm node slurm_inx now, as a mask, and in *total how many
 * it has (isle__model_gpus_free on the node's live GPU state). slurmctld
 * only. */
uint64_t isle__model_node_gpus(int slurm_inx, int *total);

/* The GPUs Slurm granted a job on its j-th node (from 0, in node_bitmap
 * order): the union of its GPU allocation bitmaps there, a new bitmap
 * (FREE_NULL_BITMAP), or NULL if it has none there. Job read lock. */
bitstr_t *isle__model_job_gpus(job_record_t *job_ptr, int j);

/* Re-maps Slurm nodes onto the model by name when the node table changed
 * since the last look (dynamic nodes; cheap otherwise). */
void isle__model_sync(bool force);

/* A node was created, deleted or given a new topology string: see
 * isle__topo_add_rm_node. */
int isle__model_add_rm_node(node_record_t *node_ptr, const char *unit);

/* "rack:island:leaf" of a node as the model sees it, or NULL. xfree(). */
char *isle__model_node_unit(int slurm_inx);

/* Slurm ranks for the nodes of node_bitmap: see isle__topo_get_rank. */
int isle__model_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
		     uint32_t *size);

#endif /* ISLE_MODEL_H */
