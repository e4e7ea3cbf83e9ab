/*
 * isle_plugin.h - internals of the topology/isle Slurm plugin.
 *
 * Layout follows topology/tree:
 *   isle_compat.c    entry points that src/interfaces/topology.c dlsyms,
 *                    per Slurm release (API in isle_compat.h)
 *   topology_isle.c  the entry points' bodies, written once
 *   isle_nodes.c     dynamic nodes, node topology strings, task ranks
 *   isle_jobinfo.c   the decision as per-job topology info (26.05)
 *   isle_version.c   built-for vs running Slurm
 *   isle_model.c     the cluster model in slurmctld: cluster file,
 *                    Slurm <-> model node maps, topoinfo entries
 *   isle_eval.c      eval_nodes: placement engine inside cons_tres's maps
 *   isle_decision.c  the "isle:" AdminComment line and decision records
 *   isle_store.c     decision records in memory + their writer thread
 *                    (API in isle_store.h, free of Slurm calls)
 *   isle_policy.c    cluster file path, plugstack.conf policy, job options
 *                    and their GPU checks (shared with job_submit/isle)
 *
 * Words: the "model" is the cluster file loaded (isle_topo) and its maps
 * onto Slurm's nodes; "records" are decision records only (one per placed
 * job, StateSaveLocation/isle/); what `scontrol show topology` prints are
 * topoinfo "entries".
 *
 * All state lives in one plugin context (isle__ctx). slurmctld calls the
 * entry points with its own locks held (config write lock for build_config,
 * job/node locks for eval); ctx.lock only protects the engine context
 * against concurrent readers such as backfill. Nothing reached from eval
 * touches files: decision records go through isle_store.h.
 *
 * The plugin is also loaded by scontrol and slurmd (to unpack and print the
 * topology, and for message routing): code reached there never touches
 * slurmctld-only symbols.
 */
#ifndef ISLE_PLUGIN_H
#define ISLE_PLUGIN_H

#include <pthread.h>
#include <stdint.h>

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/interfaces/topology.h"

#include "isle_place.h"
#include "isle_store.h"
#include "isle_topo.h"
#include "spank_isle.h"

#define ISLE_TOPO_PLUGIN_ID 190 /* unused by Slurm's topology plugins */
#define ISLE_EXPLAIN_MAX 16	/* candidates kept per decision */

/* One group of nodes that names can refer to (get_bitmap, whole_topo). */
struct isle__group {
	char *name;
	bitstr_t *nodes; /* Slurm node indexes */
};

struct isle__ctx {
	pthread_mutex_t lock;
	isle_topo *topo;       /* NULL: fall back to default selection */
	isle_place_ctx *place; /* engine over topo */
	char *path;	       /* cluster file in use or last tried */
	char *load_error;      /* why the last load failed, or NULL */
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

/* --- isle_policy.c ----------------------------------------------------- */

/* Cluster file path from TopologyParam=IsleFile=PATH, else proto's
 * default beside slurm.conf (isle_cluster_file_path). Caller xfree()s. */
char *isle__cluster_path(void);

/* Reads the isle SPANK plugin's arguments from plugstack.conf
 * (PlugStackConfig, else plugstack.conf beside slurm.conf; include lines
 * followed) into p. Without the plugin line, or on a bad argument (logged
 * with file and line), the built-in defaults apply. */
void isle__policy_read(struct isle__spank_policy *p);

/* Job options carried in the job's SPANK environment. */
struct isle__job_opts {
	int tp, pp;
	isle_place_mode mode;
	isle_tier span;
	int set; /* 1 if any SPANK_ISLE_* variable was present */
};

/*
 * The options in a job's SPANK environment (env[nenv]), checked as sbatch
 * checks them (spank_opts.c) and against the policy pol. Returns 0, or
 * -EINVAL with err naming the variable and the limit (o then holds the
 * defaults and must not be used for placement).
 */
int isle__job_env_opts(const struct isle__spank_policy *pol, char **env,
		       uint32_t nenv, struct isle__job_opts *o, char *err,
		       size_t errlen);

/*
 * What a request can be checked for before placement: tp x pp divides the
 * job's GPU count (gpus <= 0: unknown, not checked) and, in required mode,
 * tp fits the largest NVLink island (max_island GPUs; <= 0: unknown).
 * 0, or -EINVAL / -E2BIG with a message for the user in err.
 */
int isle__job_gpu_check(const struct isle__job_opts *o, long gpus,
			int max_island, char *err, size_t errlen);

/* --- isle_model.c ------------------------------------------------------ */

/* (Re)loads the cluster file and rebuilds the node maps. On failure logs
 * an error naming file and field, keeps no model (default selection) and
 * returns SLURM_ERROR; slurmctld keeps running either way. */
int isle__model_load(void);

/* Drops the model and every map. */
void isle__model_free(void);

/* The topology library's warning callback (isle_topo_set_warn): each
 * warning goes to the log as "isle: MSG". */
void isle__model_warn(void *arg, const char *msg);

/* Free GPUs of a Slurm node as a mask (out of service: 0). slurmctld
 * only. */
uint64_t isle__node_free_gpus(int slurm_inx, int *total);

/* The node takes no job now: down, drained, failed, not responding or not
 * yet in service (FUTURE). The one test for the topoinfo counts and for
 * eval_nodes. */
bool isle__node_out_of_service(const node_record_t *node_ptr);

/* topoinfo for scontrol show topology (see topology_isle.c for packing). */
enum isle__entry_kind {
	ISLE_ENTRY_SUMMARY = 0,
	ISLE_ENTRY_RACK,
	ISLE_ENTRY_ISLAND,
	ISLE_ENTRY_SWITCH,
	ISLE_ENTRY_EVAL, /* children: isle__eval_stats_str() */
};

struct isle__topo_entry {
	uint16_t kind;
	uint16_t level; /* switch level (isle_sw_level) */
	char *name;
	char *nodes;	/* hostlist string */
	char *children; /* switches below, or the error text for SUMMARY */
	uint32_t gpus;
	uint32_t free_gpus;
};

struct isle__topoinfo {
	uint32_t count;
	struct isle__topo_entry *recs;
};

/* Builds a snapshot of the entries with current free GPU counts. */
struct isle__topoinfo *isle__topoinfo_build(void);
/* Eval call count and latency, "Calls=N MeanUs=.. P50Us=.. P99Us=..
 * MaxUs=.." (topology_isle.c); the caller xfrees it. */
char *isle__eval_stats_str(void);
void isle__topoinfo_free(struct isle__topoinfo *ti);

/* --- isle_eval.c ------------------------------------------------------- */

/* The eval_nodes callback cons_tres runs through common_topo_choose_nodes. */
int isle__eval_nodes(topology_eval_t *topo_eval);

/* The callback while the cluster file cannot be loaded (fallback):
 * required-mode isle jobs wait, the rest get Slurm's default selection;
 * either way the AdminComment names the fallback. */
int isle__eval_fallback(topology_eval_t *topo_eval);

/* --- isle_decision.c --------------------------------------------------- */

/* Records a placement decision: merges the "isle:" line into the job's
 * AdminComment and, when it changed, writes the record under
 * StateSaveLocation/isle/. Candidates may be NULL. planned: the GPUs are
 * not free now (a backfill or submit-time test), the line says so. */
void isle__decision_record(job_record_t *job_ptr,
			   const struct isle_place_req *req,
			   const struct isle_place_result *res,
			   const struct isle_place_cand *cands, int ncands,
			   bitstr_t *node_map, bool planned);

/* Why topology/isle did not place a job; the AdminComment's word for it
 * follows "isle: " (isle__decision_none). */
enum isle__outcome {
	ISLE_OUT_DEFAULT,  /* "default selection": Slurm's algorithm places */
	ISLE_OUT_WAITING,  /* "waiting": required mode, no placement now */
	ISLE_OUT_REFUSED,  /* "refused": required mode, never a placement */
	ISLE_OUT_FALLBACK, /* "fallback (cannot load the cluster file: E)":
			      no model, Slurm's default selection */
	ISLE_OUT_FALLBACK_WAITING, /* "waiting", no model: required mode */
};

/* Records that isle did not place the job: "isle: WORD: REASON" in the
 * AdminComment (WORD from out) and a record without placement, so
 * `islectl explain` tells why. req may be NULL (the job's options were
 * refused). Refusals, fallbacks and refused options are logged at info
 * once per job and reason, the rest at debug. */
void isle__decision_none(job_record_t *job_ptr,
			 const struct isle_place_req *req,
			 enum isle__outcome out, const char *reason,
			 const struct isle_place_cand *cands, int ncands);

/* Starts the record store (slurmctld only; reloads the records an earlier
 * slurmctld persisted) / stops it. */
void isle__decision_init(void);
void isle__decision_fini(void);

#endif /* ISLE_PLUGIN_H */
