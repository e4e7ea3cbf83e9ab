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
 * Options reach slurmctld as SPANK job environment variables ISLE_TP,
 * ISLE_PP, ISLE_MODE, ISLE_SPAN, ISLE_COMPRESS, ISLE_SHIM (slurmctld prefixes
 * them with SPANK_); topology/isle reads them in isle_eval.c.
 *
 * Error contract: int functions return 0 or a negative errno and write a
 * one-line message into err[errlen] naming the option or plugstack argument.
 */
#ifndef SPANK_ISLE_H
#define SPANK_ISLE_H

#include <limits.h>
#include <stddef.h>

#define ISLE_SPANK_MAX_TP 1024
#define ISLE_SPANK_MAX_PP 1024

/* Option ids: the `val` of each entry of the option table. */
enum isle__spank_opt {
	ISLE_OPT_TP = 1,
	ISLE_OPT_PP,
	ISLE_OPT_MODE,
	ISLE_OPT_SPAN,
	ISLE_OPT_COMPRESS,
	ISLE_OPT_SHIM,
	ISLE_OPT_COUNT
};

enum isle__codec {
	ISLE_CODEC_NONE = 0,
	ISLE_CODEC_FP16,
	ISLE_CODEC_BF16,
	ISLE_CODEC_INT8,
	ISLE_CODEC_TOPK,
	ISLE_CODEC_COUNT
};

enum isle__shim { ISLE_SHIM_AUTO = 0, ISLE_SHIM_OFF };

/* What a user asked for; *_set flags say which options were given. */
struct isle__spank_opts {
	int tp, pp;
	int mode; /* isle_place_mode: 0 required, 1 preferred */
	int span; /* isle_tier: island, node, leaf, spine */
	enum isle__codec codec;
	double topk_ratio; /* (0, 1] for ISLE_CODEC_TOPK */
	enum isle__shim shim;
	unsigned set; /* bit (1 << opt id) per option given */
};

/* The admin's policy from plugstack.conf arguments:
 *   default_tp=N default_pp=N default_mode=required|preferred
 *   default_span=island|node|leaf|spine default_compress=CODEC
 *   allowed_codecs=none,fp16,bf16,int8,topk   (comma list)
 *   shim=/path/libisle_shim.so  default_shim=auto|off  max_tp=N */
struct isle__spank_policy {
	struct isle__spank_opts defaults;
	unsigned allowed_codecs; /* bit (1 << codec) */
	int max_tp;
	char shim_path[PATH_MAX]; /* "" = no shim installed */
	/* Per-job plan (spank_job.c, spank_remote.c); "" = default:
	 *   agent=PATH         isle-agent (/usr/local/bin/isle-agent)
	 *   cluster=PATH       cluster file (isle.json beside slurm.conf)
	 *   rundir=PATH        run dir root, %n = node name (/run/isle)
	 *   codec_policy=T=C,. codec per tier (isle-agent plan --policy)
	 *   agent_timeout=S    seconds the prolog waits for the agent before
	 *                      killing it (0 = 60); keep it below Slurm's
	 *                      PrologTimeout (24.11: PrologEpilogTimeout) */
	int agent_timeout_s;
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

/* Validates one user option value and stores it in o. */
int isle__spank_opt_parse(struct isle__spank_opts *o, int opt, const char *val,
			  char *err, size_t errlen);

/* Validates one value of the job environment (ISLE_TP=...), which holds
 * what isle__spank_opt_value wrote: the user forms plus "core" for the
 * unrestricted span. The controller reads jobs with it. */
int isle__spank_env_parse(struct isle__spank_opts *o, int opt, const char *val,
			  char *err, size_t errlen);

/* Applies the policy to what the user gave: fills unset fields from the
 * defaults, checks the codec is allowed and tp within max_tp. */
int isle__spank_resolve(const struct isle__spank_policy *p,
			const struct isle__spank_opts *user,
			struct isle__spank_opts *out, char *err, size_t errlen);

/* Canonical text of one option of o ("8", "required", "topk:0.01"), for the
 * job environment. Writes into buf and returns it. */
const char *isle__spank_opt_value(const struct isle__spank_opts *o, int opt,
				  char *buf, size_t len);

/* Environment name of an option ("ISLE_TP"), NULL for bad ids. */
const char *isle__spank_opt_env(int opt);

/* Command-line name of an option ("isle-tp"), NULL for bad ids. */
const char *isle__spank_opt_name(int opt);

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
	struct isle__spank_opts user;
	struct isle__spank_opts job; /* resolved, valid after init_post_opt */
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
