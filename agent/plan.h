/*
 * plan.h - internals of `isle-agent plan`: the per-job plan writer.
 *
 * At job start, on every node of the job, the SPANK job_prolog runs
 *   isle-agent plan write --job ID --nodes HOSTLIST --gpus-per-node IDX ...
 * which loads the cluster file, maps the job's ranks (one per GPU, nodes in
 * Slurm's task order: the hostlist's, or isle_topo_rank_order's with
 * --rank-order topology; block distribution as srun uses by default) onto
 * islands, leaf groups and NICs, picks a codec per communication level from the
 * admin policy and the user's --isle-compress, and writes into a fresh
 * directory <rundir>/<jobid>/ (file names: ISLE_RUNDIR_* in isle_proto.h):
 *   the plan       read by comm_shim (docs/plan.md), written by proto's
 *                  isle_plan_write
 *   NCCL topology  for this node (NCCL_TOPO_FILE, topology's
 *                  isle_emit_nccl_xml)
 *   NCCL env       NAME=VALUE lines for NCCL suited to this node's rails
 * or, when the plan cannot be made, only
 *   the error      one line saying why (the SPANK plugin prints it to the
 *                  job's stderr and leaves the shim off).
 * `plan remove` deletes the directory at job end.
 *
 * Files: plan_util.c (GPU index lists, messages), plan_build.c
 * (model -> plan), plan_emit.c (plan.json, nccl.env, NCCL XML),
 * plan_rundir.c (safe run directory), plan_cmd.c (the subcommand,
 * isle_agent_cmd_plan in isle_agent.h).
 *
 * Error contract: functions return 0 or a negative errno; those taking
 * (err, errlen) write one line naming the input at fault.
 */
#ifndef ISLE_AGENT_PLAN_H
#define ISLE_AGENT_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "agent_priv.h"
#include "isle_proto.h"
#include "isle_topo.h"

/* A codec policy entry: one codec spec (proto's isle_codec_parse). */
#define ISLE_PLAN_CODEC_LEN (ISLE_CODEC_SPEC_MAX + 1)

/* --- plan_util.c -------------------------------------------------------- */

/*
 * Parses a list of GPU indices ("0-3,6", "0,1,2,3") into a bit mask.
 * Indices must be below ISLE_MAX_GPUS_PER_NODE and not repeat.
 */
int isle__index_list_parse(const char *s, uint64_t *mask, char *err,
			   size_t errlen);

/* --- plan_build.c ------------------------------------------------------- */

/*
 * Codec policy: the codec for each tier that a level can end on. An admin
 * writes "island=none,node=none,leaf=bf16,spine=int8,core=int8"; tiers left
 * out keep the defaults below. "spine" and "core" apply only when that tier
 * is oversubscribed: a non-blocking spine gets the leaf codec.
 */
struct isle__codec_policy {
	char codec[ISLE_TIER_COUNT][ISLE_PLAN_CODEC_LEN];
};

void isle__codec_policy_default(struct isle__codec_policy *p);

/* Applies "tier=codec,..." over *p. Unknown tiers and malformed codecs are
 * -EINVAL with err naming the item. */
int isle__codec_policy_parse(struct isle__codec_policy *p, const char *s,
			     char *err, size_t errlen);

/* 0 if spec is a codec the shim understands (isle_codec_parse), else
 * -EINVAL with err naming spec. */
int isle__codec_check(const char *spec, char *err, size_t errlen);

/* What the plan is made from. Strings are borrowed. */
struct isle__plan_req {
	const char *job_id;
	const char *nodes; /* granted nodes, Slurm hostlist */
	/* 0: ranks follow the hostlist (Slurm 24.11, or no topology ranks);
	 * 1: nodes in isle_topo_rank_order, as topology/isle's get_rank
	 * makes Slurm 26.05 lay out tasks. */
	int topo_order;
	uint64_t gpus; /* GPU indices on every node (--gpus-per-node) */
	/* Per-node overrides (--node-gpus NODE=IDX), parallel arrays. */
	int noverride;
	const char **override_node;
	uint64_t *override_gpus;
	const char *local_node; /* node the NCCL files are for; NULL: first */
	const char *compress;	/* user's --isle-compress, NULL: policy */
	struct isle__codec_policy policy;
};

struct isle__plan_rank {
	int node;	  /* model node index */
	int gpu;	  /* GPU index on the node */
	const char *leaf; /* leaf group name (from the model), "" unknown */
};

struct isle__plan_level {
	const char *name; /* "nvlink", "pcie", "leaf", "spine", "core" */
	isle_scope scope;
	isle_tier tier; /* tier whose links carry this level */
	double bw_gbps; /* GB/s per rank */
	double lat_us;
	struct isle_codec codec;
};

/* A job's plan over a loaded model; owned by the caller (isle__plan_free).
 * topo is borrowed and must outlive the plan. */
struct isle__plan {
	const isle_topo *topo;
	char *job_id;
	int nranks;
	struct isle__plan_rank *ranks;
	int nlevels;
	struct isle__plan_level levels[ISLE_PLAN_MAX_LEVELS];
	int nnodes;	/* distinct nodes of the job */
	int local_node; /* model index of the node the NCCL files are for */
	uint64_t local_gpus;
};

/*
 * Builds the plan of req over t (finalized). Errors: -ENOENT for a granted
 * node missing from the cluster file, -EINVAL for GPUs the node does not
 * have or bad codecs, with err naming the node or option.
 */
int isle__plan_build(const isle_topo *t, const struct isle__plan_req *req,
		     struct isle__plan **out, char *err, size_t errlen);

void isle__plan_free(struct isle__plan *p);

/* --- plan_emit.c -------------------------------------------------------- */

/* Writes the plan (docs/plan.md) to f through proto's isle_plan_write. */
int isle__plan_emit_json(const struct isle__plan *p, FILE *f);

/* Writes the NCCL environment for the local node: NAME=VALUE lines. */
int isle__plan_emit_nccl_env(const struct isle__plan *p, const char *topo_file,
			     FILE *f);

/* --- plan_rundir.c ------------------------------------------------------ */

/* One file to write into the job directory: name and contents. */
struct isle__rundir_file {
	const char *name;
	const char *data;
	size_t len;
};

/*
 * Opens the run root by proto's trusted walk (isle_rundir_open), creating
 * it and its parents 0755 if missing: every component from "/" must be a
 * real directory owned by root and not writable by group or others. Returns
 * an O_DIRECTORY fd or a negative errno with err naming the component.
 */
int isle__rundir_open_root(const char *root, char *err, size_t errlen);

/*
 * Creates <root>/<id>/ afresh (an old one is removed first) holding the
 * given files, each created with O_EXCL|O_NOFOLLOW. All of it is owned by
 * the caller (root) and group root, 0600 files in a 0700 directory, and
 * reader (the job's user; (uid_t)-1 or the caller: none) gets read access
 * through a POSIX ACL entry, on the directory only once complete: the
 * job's user, and no other, reads the plan. The one thing it can write
 * is ISLE_RUNDIR_REPORT_DIR, a 0700 directory of its own for the shim's
 * report, removed with the rest at job end. -EOPNOTSUPP on a file system
 * without ACLs.
 * On failure nothing is left behind.
 */
int isle__rundir_write(int rootfd, const char *id, uid_t reader,
		       const struct isle__rundir_file *files, int nfiles,
		       char *err, size_t errlen);

/* The job id check and removal are proto's (isle_rundir_check_id,
 * isle_rundir_remove): the SPANK prolog clears a leftover directory too. */

#endif /* ISLE_AGENT_PLAN_H */
