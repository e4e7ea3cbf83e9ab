/*
 * spank_isle.h - internals of the isle SPANK plugin (spank_isle.so).
 *
 * Shape (as pyxis): spank_isle.c dispatches each SPANK callback on
 * spank_context() to one file per context:
 *   spank_local.c   srun / sbatch / salloc: validate, apply the admin policy,
 *                   export the job's options to slurmctld (SPANK job env);
 *   spank_remote.c  slurmstepd: per-task environment (extension point);
 *   spank_job.c     prolog / epilog (extension point: plan files).
 * spank_opts.c holds the parsing and validation, free of Slurm calls, so it is
 * unit-tested on its own.
 *
 * The options themselves (names, environment keys, limits, parsers) are
 * proto/'s table (isle_proto.h: isle_job_opt_*). They reach slurmctld as
 * SPANK job environment variables (slurmctld prefixes them with SPANK_);
 * topology/isle and job_submit/isle re-check them (isle_policy.c).
 *
 * Error contract: int functions return 0 or a negative errno and write a
 * one-line message into err[errlen] naming the option or plugstack argument.
 */
#ifndef SPANK_ISLE_H
#define SPANK_ISLE_H

#include <limits.h>
#include <stddef.h>

#include "isle_proto.h"

/* The admin's policy from plugstack.conf arguments:
 *   default_tp=N default_pp=N default_mode=required|preferred
 *   default_span=island|node|leaf|spine default_compress=CODEC
 *   allowed_codecs=none,fp16,bf16,int8,topk   (comma list)
 *   shim=/path/libisle_shim.so  default_shim=auto|off  max_tp=N */
struct isle__spank_policy {
	struct isle_job_opts defaults;
	unsigned allowed_codecs; /* bit (1 << isle_codec_kind) */
	int max_tp;
	char shim_path[PATH_MAX]; /* "" = no shim installed */
	/* Per-job plan (spank_job.c, spank_remote.c); "" = default:
	 *   agent=PATH         isle-agent (/usr/local/bin/isle-agent)
	 *   cluster=PATH       cluster file (isle.json beside slurm.conf)
	 *   rundir=PATH        run dir root, %n = node name (/run/isle)
	 *   codec_policy=T=C,. codec per tier (isle-agent plan --policy)
	 *   agent_timeout=S    seconds the prolog waits for the agent before
	 *                      killing it (0 = 60); keep it below Slurm's
	 *                      PrologTimeout (24.11: PrologEpilogTimeout)
	 *   reports=PATH       root's reports directory: the epilog stores
	 *                      each job's shim report there (none if unset)
	 *   reports_keep=N     the newest N reports are kept (10000) */
	int agent_timeout_s;
	long reports_keep;
	char reports_dir[PATH_MAX];
	char agent_path[PATH_MAX];
	char cluster_path[PATH_MAX];
	char rundir[PATH_MAX];
	char codec_policy[256];
};

/* Policy defaults: tp=pp=1, required, span unrestricted (core), codec none,
 * every codec allowed, shim auto (if a path is configured), max_tp 1024. */
void isle__spank_policy_init(struct isle__spank_policy *p);

/* Parses plugstack.conf arguments into p. */
int isle__spank_policy_parse(struct isle__spank_policy *p, int ac, char **av,
			     char *err, size_t errlen);

/* Applies the policy to what the user gave: fills unset fields from the
 * defaults, checks the codec is allowed and tp within max_tp. */
int isle__spank_resolve(const struct isle__spank_policy *p,
			const struct isle_job_opts *user,
			struct isle_job_opts *out, char *err, size_t errlen);

/*
 * spank_gres.c: the GPU indices in one node's GRES detail from the
 * controller ("gpu:4(IDX:0-3)", several gpu types joined by commas) into
 * out as an index list ("0-3"; "" when the node has no GPU entry). 0, or
 * -EINVAL (malformed) / -ENAMETOOLONG.
 */
int isle__gres_gpu_idx(const char *detail, char *out, size_t len);

/* --- shared state and the per-context entry points (spank_isle.c) ------ */

#ifdef SPANK_H /* after <slurm/spank.h> */

/* The plugin's view of the current job: policy, the user's options as
 * given, and the resolved options. Valid from init until exit. */
struct isle__spank_state {
	struct isle__spank_policy policy;
	struct isle_job_opts user;
	struct isle_job_opts job; /* resolved, valid after init_post_opt */
	int resolved;
};

const struct isle__spank_state *isle__spank_state(void);

/* spank_local.c: srun / sbatch / salloc after option parsing. */
int isle__spank_local_post_opt(spank_t sp, struct isle__spank_state *st);

/* spank_remote.c: slurmstepd. */
int isle__spank_remote_post_opt(spank_t sp, struct isle__spank_state *st);
int isle__spank_remote_task_init(spank_t sp,
				 const struct isle__spank_state *st);

/* spank_job.c: prolog / epilog (job script context); they load st from
 * the job's SPANK environment first. */
int isle__spank_job_prolog(spank_t sp, struct isle__spank_state *st);
int isle__spank_job_epilog(spank_t sp, struct isle__spank_state *st);

/* 1 if jobs get plans here: agent= is set, or the default agent
 * (/usr/local/bin/isle-agent) is installed. */
int isle__spank_plans_enabled(const struct isle__spank_policy *p);

/* The job run dir root on this node: policy rundir with %n = node. */
int isle__spank_rundir(const struct isle__spank_policy *p, const char *node,
		       char *buf, size_t len);

#endif /* SPANK_H */

#endif /* SPANK_ISLE_H */
