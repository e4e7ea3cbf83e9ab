/*
 * isle_proto.h - the formats that cross a process boundary, each with its
 * one reader and one writer:
 *
 *   plan.json       struct isle_plan: isle_plan_write (isle-agent plan),
 *                   isle_plan_read / isle_plan_parse (comm_shim);
 *                   docs/plan.md
 *   codec specs     "int8:256", "topk:0.01,mom=0.9": isle_codec_format,
 *                   isle_codec_parse (plan files, --isle-compress,
 *                   ISLE_COMM_CODEC, the agent's codec policy); their
 *                   wire size, isle_codec_encoded_size (the shim, islesim)
 *   job options     --isle-* on sbatch/srun/salloc, carried to slurmctld and
 *                   the tasks as ISLE_* variables: the table below, parsed
 *                   by isle_job_opt_parse / isle_job_env_parse, written by
 *                   isle_job_opt_format (SPANK plugin, controller, agent)
 *   run directory   <rundir>/<jobid>/ file names, and the trusted walk to
 *                   them (agent writes, SPANK reads)
 *   names           the one check of every identifier that reaches an env
 *                   line, XML, a path or a log (isle_name_check)
 *   cluster file    where isle.json is looked up by default
 *   node JSON       the version isle-agent writes and topology reads
 *   decision        StateSaveLocation/isle/job_<id>.json: named by
 *   records         isle_record_path, written by topology/isle's store,
 *                   read by isle_record_read (`islectl explain`, the
 *                   store's reload after a restart)
 *   shim report     ISLE_REPORT_FILE: struct isle_report, written by the
 *                   shim's MPI and NCCL backends (isle_report_write),
 *                   read by isle_report_read; docs/comm-shim.md;
 *                   collected by the SPANK epilog from the job's run dir
 *                   (isle_report_collect) into root's reports directory
 *                   (isle_report_store), read there by isle-exporter and
 *                   `islectl explain`
 *
 * The library (libisle_proto.a) needs libc and json-c only: no Slurm, no
 * MPI, no other isle module, so the shim, the agent, the Slurm plugins and
 * islectl all link it. The header itself includes no json-c.
 *
 * Error contract: int functions return 0 or a negative errno (-EINVAL bad
 * input, -ENOMEM, -ENOENT missing file, -EIO, -ENAMETOOLONG). Those taking
 * (err, errlen) write one NUL-terminated line naming the input at fault
 * (plans: file and JSON path, "plan.json: $.ranks[3].island: expected a
 * string"); err may be NULL.
 *
 * Ownership: readers return objects owned by the caller (isle_plan_destroy,
 * json_object_put for records). Strings reachable from a plan belong to it.
 *
 * Threading: no global state; every function is safe to call from several
 * threads on distinct objects, and a plan is read-only once read.
 */
#ifndef ISLE_PROTO_H
#define ISLE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one export macro: this API and the Slurm plugins' entry points. */
#define ISLE_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------- codecs */

/* Codec kinds. Numbering is ABI (CUDA backend, plan dumps, policy masks). */
typedef enum isle_codec_kind {
	ISLE_CODEC_NONE = 0, /* fp32 (or fp64) as is: exact */
	ISLE_CODEC_FP16,     /* IEEE half, nearest even; finite values
				saturate at 65504, inf and NaN stay */
	ISLE_CODEC_BF16,     /* bfloat16, round to nearest even */
	ISLE_CODEC_INT8,     /* int8 with one fp32 scale per block */
	ISLE_CODEC_TOPK,     /* k largest |x| as (index, value) pairs */
	ISLE_CODEC_COUNT
} isle_codec_kind;

#define ISLE_CODEC_INT8_DEFAULT_BLOCK 256
/* Longest spec isle_codec_parse accepts, NUL excluded. */
#define ISLE_CODEC_SPEC_MAX 63
/* Largest warm=S. */
#define ISLE_CODEC_WARM_MAX 1000000u

/*
 * A codec with its parameters. Spec strings:
 *   "none" | "fp16" | "bf16" | "int8[:BLOCK]" | "topk:RATIO"
 * optionally followed by comma-separated flags: "ef" or "noef" to force
 * error feedback on/off (default: on for topk, off otherwise), and for topk
 * "mom=M", momentum correction with factor M in [0, 1) (Deep Gradient
 * Compression, Lin et al., ICLR 2018; needs error feedback; 0: off) and
 * "warm=S", DGC's warm-up: over the first S calls of a buffer the ratio
 * starts at 0.25 and falls 4-fold every S/4 calls, never below RATIO
 * (S in 0..ISLE_CODEC_WARM_MAX; 0: off). With mom, "mask=sent" (DGC's
 * momentum factor masking, the default) clears the momentum of every
 * element sent; "mask=stale" only of those the residual held back since an
 * earlier call, so an element sent at every call keeps plain momentum. BLOCK
 * is 8..65536 (a multiple of 8), RATIO is in (0, 1]. Names and flags are
 * case-insensitive. The canonical form: "topk:0.01,mom=0.9,warm=100",
 * "int8:256,ef".
 */
struct isle_codec {
	isle_codec_kind kind;
	uint32_t block;	    /* int8: elements per scale block */
	double ratio;	    /* topk: fraction of elements kept */
	int error_feedback; /* keep a residual per buffer key */
	double momentum;    /* topk: DGC momentum factor, 0 = none */
	uint32_t warm;	    /* topk: warm-up calls, 0 = none */
	int mask_stale;	    /* topk with mom: mask=stale, not mask=sent */
};

ISLE_EXPORT int isle_codec_parse(const char *spec, struct isle_codec *c,
				 char *err, size_t errlen);

/* Canonical spec ("int8:256", "topk:0.01,mom=0.9") into buf; returns the
 * length snprintf would have written. Parsing it gives c back. */
ISLE_EXPORT int isle_codec_format(const struct isle_codec *c, char *buf,
				  size_t len);

ISLE_EXPORT const char *isle_codec_kind_name(isle_codec_kind k);

/* 1 if item is one of the flags that follow a codec after a comma ("ef",
 * "noef", "mom=...", "warm=...", "mask=..."), for lists that split specs at
 * commas; its value is left to isle_codec_parse. */
ISLE_EXPORT int isle_codec_is_flag(const char *item);

/* The admin's default codec for a tier (the values of isle_tier,
 * topology/isle_topo.h: island, node, leaf, spine, core) where the cluster
 * file names none: exact on NVLink and PCIe, int8 across the network
 * (leaf, spine and core). The agent's plans and islesim's shim model
 * both read it. NULL for a tier out of range. */
ISLE_EXPORT const char *isle_codec_tier_default(int tier);

/*
 * Bytes of the encoded form of n fp32 values (an upper bound for topk, whose
 * output says how many pairs it holds). Always a multiple of 4. The wire
 * formats themselves are comm_shim's (isle_comm.h).
 */
ISLE_EXPORT size_t isle_codec_encoded_size(const struct isle_codec *c,
					   size_t n);

/* Elements top-k codec c keeps of n: ceil(ratio * n), at least 1, at most
 * n. */
ISLE_EXPORT size_t isle_codec_topk_k(const struct isle_codec *c, size_t n);

/* Shortest "%.*g" of v that reads back as v exactly; length as snprintf. */
ISLE_EXPORT int isle_fmt_double(char *buf, size_t len, double v);

/* --------------------------------------------------------------- plan */

/* Version in "isle_plan"; the reader takes this one only. */
#define ISLE_PLAN_VERSION 1
/* At most this many levels (island, leaf, spine). */
#define ISLE_PLAN_MAX_LEVELS 3

/* Which rank attribute groups ranks at a level. */
typedef enum isle_scope {
	ISLE_SCOPE_ISLAND = 0, /* same NVLink island */
	ISLE_SCOPE_NODE,       /* same node (host) */
	ISLE_SCOPE_LEAF,       /* same leaf switch / rail group */
	ISLE_SCOPE_JOB,	       /* every rank of the job */
	ISLE_SCOPE_COUNT
} isle_scope;

struct isle_plan_rank {
	char *node;   /* host name as the agent saw it */
	int gpu;      /* GPU index on the node, -1 if none */
	char *island; /* island name; the node name if not given */
	char *leaf;   /* leaf switch / group name; "" if unknown */
	char *nic;    /* NIC name ("mlx5_0"), may be NULL */
	/* Dense ids of node/island/leaf (isle_plan_index; the reader sets
	 * them). */
	int node_id, island_id, leaf_id;
};

struct isle_plan_level {
	char *name;	  /* "nvlink", "leaf", "spine", ... */
	isle_scope scope; /* grouping; the last level is always JOB */
	double bw_gbps;	  /* GB/s (bytes) per rank through this level */
	double lat_us;	  /* one message, microseconds */
	struct isle_codec codec;
};

struct isle_plan {
	int version;  /* ISLE_PLAN_VERSION */
	char *job_id; /* may be NULL */
	char *source; /* file it was read from, or what made it; may be NULL */
	int nranks;
	struct isle_plan_rank *ranks; /* indexed by rank (MPI_COMM_WORLD) */
	int nlevels;		      /* 1..ISLE_PLAN_MAX_LEVELS */
	struct isle_plan_level
	    levels[ISLE_PLAN_MAX_LEVELS]; /* tightest first */
};

/*
 * Reads and validates a plan file. On success *out is a new plan owned by
 * the caller (isle_plan_destroy). On failure *out is NULL and err names
 * the file and the JSON path of the first bad field.
 */
ISLE_EXPORT int isle_plan_read(const char *path, struct isle_plan **out,
			       char *err, size_t errlen);

/* Same from a buffer; name is used in messages and as plan->source. */
ISLE_EXPORT int isle_plan_parse(const char *json, size_t len, const char *name,
				struct isle_plan **out, char *err,
				size_t errlen);

/*
 * Writes plan in the documented form (docs/plan.md): one rank or level per
 * line, readable at 10,000 ranks. What it writes reads back equal.
 * 0, or -EIO if f reports an error.
 */
ISLE_EXPORT int isle_plan_write(const struct isle_plan *plan, FILE *f);

/* Sets node_id, island_id, leaf_id: dense, in order of first appearance.
 * For plans built in memory (the reader calls it). 0 or -ENOMEM. */
ISLE_EXPORT int isle_plan_index(struct isle_plan *plan);

/*
 * 64-bit hash of everything a plan says (ranks and levels, not its file
 * name): ranks holding different plans would pick different algorithms.
 * Depends on the plan only, so every rank computes the same.
 */
ISLE_EXPORT uint64_t isle_plan_hash(const struct isle_plan *plan);

/* FNV-1a over data, continuing from h (start: ISLE_FNV1A_INIT). */
#define ISLE_FNV1A_INIT 1469598103934665603ull
ISLE_EXPORT uint64_t isle_fnv1a(uint64_t h, const void *data, size_t len);

/*
 * libc only (proto/plan_scan.c, linked into libisle_preload.so as an
 * object): 1 if a codec spec asks for compression (not "none"), and 1 if
 * plan text names a codec other than "none" on some level. A text scan,
 * no validation: callers that act on the plan use isle_plan_read.
 */
ISLE_EXPORT int isle_codec_spec_compresses(const char *spec);
ISLE_EXPORT int isle_plan_text_compresses(const char *text);

/* Environment variable that hands a task its plan file (set by the SPANK
 * plugin, read by the shim). */
#define ISLE_PLAN_ENV "ISLE_PLAN"

/* Frees plan and everything it owns; NULL is a no-op. */
ISLE_EXPORT void isle_plan_destroy(struct isle_plan *plan);

ISLE_EXPORT const char *isle_scope_name(isle_scope s);
/* 0 and *out, or -EINVAL for a name that is not a scope. */
ISLE_EXPORT int isle_scope_parse(const char *s, isle_scope *out);

/* -------------------------------------------------------- job options */

/* Option ids (the SPANK option table's `val`); 0 is no option. */
enum isle_job_opt {
	ISLE_OPT_TP = 1,
	ISLE_OPT_PP,
	ISLE_OPT_MODE,
	ISLE_OPT_SPAN,
	ISLE_OPT_COMPRESS,
	ISLE_OPT_SHIM,
	ISLE_OPT_TRAFFIC,
	ISLE_OPT_COUNT
};

/* Limits, the same for sbatch, the controller and the admin's max_tp. */
#define ISLE_JOB_MAX_TP 1024
#define ISLE_JOB_MAX_PP 1024

/* --isle-mode: the values of isle_place_mode (placement/isle_place.h). */
enum isle_job_mode { ISLE_JOB_REQUIRED = 0, ISLE_JOB_PREFERRED = 1 };
/* --isle-span: the values of isle_tier (topology/isle_topo.h); CORE is the
 * unrestricted default, written as "core" into the job environment. */
enum isle_job_span {
	ISLE_JOB_SPAN_ISLAND = 0,
	ISLE_JOB_SPAN_NODE,
	ISLE_JOB_SPAN_LEAF,
	ISLE_JOB_SPAN_SPINE,
	ISLE_JOB_SPAN_CORE
};
enum isle_job_shim { ISLE_SHIM_AUTO = 0, ISLE_SHIM_OFF };
/* --isle-traffic: the values of isle_traffic (placement/isle_place.h);
 * AUTO, the default, lets the engine infer the class from the job's
 * shape. */
enum isle_job_traffic {
	ISLE_JOB_TRAFFIC_AUTO = 0,
	ISLE_JOB_TRAFFIC_DP,
	ISLE_JOB_TRAFFIC_PP,
	ISLE_JOB_TRAFFIC_INFER
};

/* One row of the option table. */
struct isle_job_opt_desc {
	const char *name;    /* command line, without "--": "isle-tp" */
	const char *env;     /* job / task environment: "ISLE_TP" (slurmctld
				keeps it as SPANK_ISLE_TP) */
	const char *arginfo; /* SPANK's argument summary: "N" */
	const char *usage;   /* SPANK's help line */
	const char *expect;  /* "an integer from 1 to 1024", for messages */
};

/* What a job asked for; `set` has bit (1 << id) per option given. */
struct isle_job_opts {
	int tp, pp;
	int mode; /* enum isle_job_mode */
	int span; /* enum isle_job_span */
	struct isle_codec codec;
	int shim;    /* enum isle_job_shim */
	int traffic; /* enum isle_job_traffic */
	unsigned set;
};

/* The row of option id, NULL for ids out of range. */
ISLE_EXPORT const struct isle_job_opt_desc *isle_job_opt_desc(int opt);

/* A count as options and plugstack settings write it: a whole decimal
 * number from 1 to max, nothing after it. 0 or -EINVAL (out untouched). */
ISLE_EXPORT int isle_count_parse(const char *val, int max, int *out);

/* Validates one value as the user wrote it and stores it in o. Case is
 * ignored. -EINVAL with err "invalid --isle-tp '0': expected ...". */
ISLE_EXPORT int isle_job_opt_parse(struct isle_job_opts *o, int opt,
				   const char *val, char *err, size_t errlen);

/* Validates one value of the job environment: what isle_job_opt_format
 * wrote, i.e. the user forms plus "core" for the unrestricted span. */
ISLE_EXPORT int isle_job_env_parse(struct isle_job_opts *o, int opt,
				   const char *val, char *err, size_t errlen);

/* Canonical text of option opt of o ("8", "required", "topk:0.01") for
 * the environment; writes into buf and returns it. */
ISLE_EXPORT const char *isle_job_opt_format(const struct isle_job_opts *o,
					    int opt, char *buf, size_t len);

/* -------------------------------------------------------- run directory */

/* Files of <rundir>/<jobid>/, written by `isle-agent plan write`. */
#define ISLE_RUNDIR_PLAN "plan.json"	     /* the plan (ISLE_PLAN) */
#define ISLE_RUNDIR_NCCL_XML "nccl-topo.xml" /* NCCL_TOPO_FILE */
#define ISLE_RUNDIR_NCCL_ENV "nccl.env"	     /* NAME=VALUE lines */
#define ISLE_RUNDIR_ERROR "error" /* one line: why there is no plan */

/*
 * The trusted walk (proto/rundir.c), for the writer (isle-agent, root) and
 * the reader (the SPANK task side, the job's user) alike: every component
 * of an absolute path, from "/" down, is opened relative to the one above
 * with O_NOFOLLOW and must be a directory owned by root (or by the caller)
 * and not writable by group or others; on the way (not as the last
 * component) a root-owned sticky directory such as /tmp is allowed. err
 * names the component at fault ("run dir /x/run/isle: /x is owned by uid
 * 65534, not root"). Returns an O_DIRECTORY descriptor or a negative
 * errno (-EPERM untrusted, -ENOENT missing, -EINVAL not absolute or with
 * "." or ".." components). With create, missing components are made 0755.
 */
ISLE_EXPORT int isle_rundir_open(const char *path, int create, char *err,
				 size_t errlen);

/* <root>/<id>/ by the walk above, itself checked the same way. */
ISLE_EXPORT int isle_rundir_open_job(const char *root, const char *id,
				     char *err, size_t errlen);

/*
 * Reads file name of directory dfd into a new NUL-terminated string
 * (*out, caller frees): opened with O_NOFOLLOW, it must be a regular file
 * owned by root (or the caller), not writable by group or others, and at
 * most max bytes (-EFBIG). -ENOENT when missing.
 */
ISLE_EXPORT int isle_rundir_read(int dfd, const char *name, size_t max,
				 char **out, char *err, size_t errlen);

/* 0 if id is usable as a directory name: 1-64 of [A-Za-z0-9_.-], not "."
 * or "..". */
ISLE_EXPORT int isle_rundir_check_id(const char *id, char *err, size_t errlen);

/*
 * Removes <root>/<id>/ (rootfd from isle_rundir_open) and everything below
 * it, however deep, without following symlinks or crossing mounts; what
 * is there instead of a directory (a file, a link) goes too. A missing
 * directory is not an error. One descriptor at a time, no recursion.
 */
ISLE_EXPORT int isle_rundir_remove(int rootfd, const char *id, char *err,
				   size_t errlen);

/* -------------------------------------------------------------- errors */

/*
 * The one error-message helper of isle's modules (not a format): writes
 * the message into err when err is not NULL and errlen > 0, and returns
 * rc, so `return isle__errf(-EINVAL, err, errlen, "x: %s", why);` reports
 * and fails in one line. libc only (proto/errf.c).
 */
int isle__errf(int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------- names */

/*
 * Identifiers that reach an environment line, XML, a path, a host list or
 * a log (node, switch, rack and NIC names, GPU bus ids) are 1 to
 * ISLE_NAME_MAX of [A-Za-z0-9_.:-], not starting with '-', '.' or ':'.
 * isle_name_check returns 0 for such a name, else the first byte at fault
 * (or -1 for an empty or too long name). isle_name_error fills err with
 * "WHAT 'NAME': character ';' not allowed ..." (the name escaped) and
 * returns -EINVAL, or 0 for a good name.
 */
#define ISLE_NAME_MAX 255
ISLE_EXPORT int isle_name_check(const char *name);
ISLE_EXPORT int isle_name_error(const char *what, const char *name, char *err,
				size_t errlen);

/* --------------------------------------------------------- cluster file */

#define ISLE_CLUSTER_FILE "isle.json"

/*
 * The default cluster file: ISLE_CLUSTER_FILE in conf_dir, the directory of
 * slurm.conf. conf_dir NULL or "": the directory of $SLURM_CONF, else
 * /etc/slurm. 0, or -ENAMETOOLONG.
 */
ISLE_EXPORT int isle_cluster_file_path(const char *conf_dir, char *buf,
				       size_t len);

/* ------------------------------------------------------------ node JSON */

/* Version in "isle_node" of the files isle-agent discover writes. */
#define ISLE_NODE_JSON_VERSION 1
#define ISLE_NODE_JSON_KEY "isle_node"

/* ------------------------------------------------------ decision records */

/* Subdirectory of StateSaveLocation holding one record per placed job. */
#define ISLE_RECORD_SUBDIR "isle"

/* The records directory: <state_dir>/isle. 0 or -ENAMETOOLONG. */
ISLE_EXPORT int isle_record_dir(const char *state_dir, char *buf, size_t len);

/* <records_dir>/job_<id>.json<suffix>; suffix "" or ISLE_RECORD_PARTIAL
 * (a record being written). 0 or -ENAMETOOLONG. */
#define ISLE_RECORD_PARTIAL ".new"
ISLE_EXPORT int isle_record_path(const char *records_dir, uint32_t job_id,
				 const char *suffix, char *buf, size_t len);

/* Job id of a record file name: 0 for "job_<id>.json", -EAGAIN for a
 * partial one ("job_<id>.json.new", left by a crash), -EINVAL otherwise. */
ISLE_EXPORT int isle_record_name_parse(const char *name, uint32_t *job_id);

/*
 * Reads a decision record: *out is its JSON root (a json_object *, owned
 * by the caller: json_object_put). Checks that it is an object with the
 * fields every record has (job_id, line). -ENOENT, -EINVAL, -ENOMEM
 * with err naming the file.
 */
ISLE_EXPORT int isle_record_read(const char *path, void **out, char *err,
				 size_t errlen);

/* ------------------------------------------------------- shim report */

/*
 * What the comm shim did in one job (docs/comm-shim.md, "Per-job
 * report"): written by rank 0 at MPI_Finalize / ncclCommDestroy when
 * ISLE_REPORT_FILE is set (one line on stderr when ISLE_REPORT=1).
 */
#define ISLE_REPORT_VERSION 1
#define ISLE_REPORT_ENV "ISLE_REPORT"
#define ISLE_REPORT_FILE_ENV "ISLE_REPORT_FILE"
/* Size classes of a call's payload: [0, 256), [256, 4Ki), [4Ki, 64Ki),
 * [64Ki, 1Mi), [1Mi, 16Mi), [16Mi, inf) bytes. */
#define ISLE_REPORT_CLASSES 6
/* Tiers are the plan's scopes (island, node, leaf, job). */
#define ISLE_REPORT_TIERS ISLE_SCOPE_COUNT

/*
 * What ran a call ("ran", per size class): the shim's own path, the
 * library's default, or a library algorithm the crossover probe picked,
 * named as mpi_algo.h names it (and ISLE_COMM_VERBOSE=2 logs the pick),
 * after the library: "ompi:rdoubling", "mpich:smp".
 */
enum isle_report_path {
	ISLE_REPORT_SHIM,
	ISLE_REPORT_LIBRARY,
	ISLE_REPORT_OMPI_RING,
	ISLE_REPORT_OMPI_RDOUBLING,
	ISLE_REPORT_OMPI_RABENSEIFNER,
	ISLE_REPORT_OMPI_SEGRING,
	ISLE_REPORT_MPICH_NB,
	ISLE_REPORT_MPICH_SMP,
	ISLE_REPORT_MPICH_RDOUBLING,
	ISLE_REPORT_MPICH_RSAG,
	ISLE_REPORT_PATHS
};

struct isle_report {
	char api[8]; /* "mpi" or "nccl" */
	int ranks;   /* ranks whose figures are summed (1: rank 0's own) */
	/* Calls (allreduce) the shim ran itself and passed to the library,
	 * by size class: the most any rank made. */
	uint64_t taken[ISLE_REPORT_CLASSES], passed[ISLE_REPORT_CLASSES];
	/* What ran them, on any rank: bit (1 << enum isle_report_path). */
	unsigned ran[ISLE_REPORT_CLASSES];
	/* Bytes sent through each tier by the shim's own path (taken calls,
	 * all ranks), and what a ring in rank order, the fewest bytes any
	 * allreduce sends, would have sent through it for the same calls. */
	uint64_t sent[ISLE_REPORT_TIERS], library[ISLE_REPORT_TIERS];
	/* Codecs used per tier: bit (1 << isle_codec_kind). */
	unsigned codecs[ISLE_REPORT_TIERS];
	uint64_t probe_bytes; /* the crossover probe's traffic, all ranks */
	double probe_s;	      /* its wall time, slowest rank */
};

/* The size class of a call of `bytes` bytes. */
ISLE_EXPORT int isle_report_class(uint64_t bytes);
/* Lower bound of class k in bytes. */
ISLE_EXPORT uint64_t isle_report_class_min(int k);
/* The name of path p (enum isle_report_path), "?" if none; the path of a
 * name, or -EINVAL. */
ISLE_EXPORT const char *isle_report_path_name(int p);
ISLE_EXPORT int isle_report_path_parse(const char *name);

/* Writes r as one JSON object (plain stdio, no JSON library). 0 or -EIO. */
ISLE_EXPORT int isle_report_write(const struct isle_report *r, FILE *f);
/* Writes r to path whole or not at all (path.new, then renamed): a reader
 * never sees half a report. 0, or -errno with err naming the file. */
ISLE_EXPORT int isle_report_save(const struct isle_report *r, const char *path,
				 char *err, size_t errlen);
/* The ISLE_REPORT=1 line (no newline) into buf; length as snprintf. */
ISLE_EXPORT int isle_report_line(const struct isle_report *r, char *buf,
				 size_t len);
/* The most bytes a report file may have; a real one is under 2 KiB. */
#define ISLE_REPORT_MAX (64 * 1024)
/* Reads what isle_report_write wrote: a regular file (no link followed,
 * no FIFO waited on) of at most ISLE_REPORT_MAX bytes (-EFBIG). -ENOENT,
 * -EINVAL (err names the file and the JSON path), -ENOMEM. */
ISLE_EXPORT int isle_report_read(const char *path, struct isle_report *out,
				 char *err, size_t errlen);
ISLE_EXPORT int isle_report_parse(const char *json, size_t len,
				  const char *name, struct isle_report *out,
				  char *err, size_t errlen);

/*
 * The job's reports in its run directory: <rundir>/<jobid>/report/ is the
 * one place there the job's user can write (the agent makes it, owned by
 * the job's uid, 0700; the job directory above stays root's), and
 * task_init points ISLE_REPORT_FILE at step_<stepid>.json in it when the
 * site collects reports (plugstack.conf reports=) and the job did not set
 * it: each step of a job writes its own.
 */
#define ISLE_RUNDIR_REPORT_DIR "report"
/* "step_<step_id>.json". 0 or -ENAMETOOLONG. */
ISLE_EXPORT int isle_report_step_name(uint32_t step_id, char *buf, size_t len);
/* The most entries collect reads in a report directory. */
#define ISLE_REPORT_STEPS_MAX 1024

/* Adds r to sum, as the steps of one job add up: calls, bytes and probe
 * figures summed, codecs merged, ranks the most of either; sum keeps its
 * api unless it had none. */
ISLE_EXPORT void isle_report_add(struct isle_report *sum,
				 const struct isle_report *r);

/*
 * Reads the reports a job of uid left in its job directory (jobdfd, from
 * isle_rundir_open_job) and adds them up (isle_report_add), as root must
 * read what a job wrote: the report directory and each step_<id>.json are
 * opened without following links, the files without blocking (a FIFO is
 * refused, not waited on), and each must be owned by uid, a regular file
 * with one link and at most ISLE_REPORT_MAX bytes; then it is parsed
 * (isle_report_parse). Other names are left alone (a shim's "*.new" being
 * written); a directory of more than ISLE_REPORT_STEPS_MAX entries is
 * refused (-E2BIG) rather than read on. name (the job directory's path)
 * is used in messages. -ENOENT: the job left no report (not an error);
 * -EPERM, -EFBIG, -EINVAL, -E2BIG with err naming the file and the fault:
 * one bad file and the job's reports are not collected.
 */
ISLE_EXPORT int isle_report_collect(int jobdfd, uid_t uid, const char *name,
				    struct isle_report *out, char *err,
				    size_t errlen);

/*
 * The reports directory (root's; plugstack.conf reports=, isle-exporter
 * --reports-dir, islectl explain --reports): one report per finished job,
 * job_<id>.json, as isle_report_write writes it.
 */
/* <dir>/job_<id>.json. 0 or -ENAMETOOLONG. */
ISLE_EXPORT int isle_report_path(const char *dir, uint32_t job_id, char *buf,
				 size_t len);
/* Job id of a report file name: 0 for "job_<id>.json", -EINVAL for any
 * other name (files being written start with '.'). */
ISLE_EXPORT int isle_report_name_parse(const char *name, uint32_t *job_id);
/*
 * Stores r as job <job_id>'s report in dir, whole or not at all: dir is
 * reached by proto's trusted walk (root's, not writable by others;
 * created 0755 if missing), the report written to a new file (O_EXCL,
 * O_NOFOLLOW, 0644) and renamed over job_<id>.json. Then, when dir holds
 * more than keep reports (keep > 0), the oldest by modification time go,
 * and files being written left for over an hour (a crash) with them.
 * 0 or -errno with err naming the directory or file.
 */
ISLE_EXPORT int isle_report_store(const char *dir, uint32_t job_id,
				  const struct isle_report *r, long keep,
				  char *err, size_t errlen);

/* What a decision says, from its line (topology/isle writes "isle: tp=...",
 * "isle: planned tp=...", "isle: default selection: ...", "isle: fallback
 * (...): ...", "isle: waiting: ...", "isle: refused: ..."). */
enum isle_record_outcome {
	ISLE_OUTCOME_PLACED = 0, /* the engine's placement */
	ISLE_OUTCOME_PLANNED,	 /* backfill's plan, not started on it */
	ISLE_OUTCOME_DEFAULT,	 /* Slurm's default selection */
	ISLE_OUTCOME_FALLBACK,	 /* no usable cluster file: default selection */
	ISLE_OUTCOME_WAITING,	 /* no placement now (required mode) */
	ISLE_OUTCOME_REFUSED,	 /* can never be placed (required mode) */
	ISLE_OUTCOME_OTHER,	 /* a line of none of these forms */
	ISLE_OUTCOME_COUNT
};

/* The figures of a record that operators count (isle-exporter). */
struct isle_record_info {
	uint32_t job_id;
	int64_t time;	   /* when decided (Unix s), 0 if absent */
	int outcome;	   /* enum isle_record_outcome */
	int tp_groups;	   /* placement.tp_groups, -1 without a placement */
	int tp_in_island;  /* placement.tp_in_island, -1 without one */
	double cost_ratio; /* placement.cost_ratio, -1 without one */
	int granted_nodes; /* entries of "granted", 0 if absent */
};

/* The outcome of a decision line (never fails: ISLE_OUTCOME_OTHER). */
ISLE_EXPORT int isle_record_outcome_of(const char *line);
/* "placed", "planned", "default_selection", "fallback", "waiting",
 * "refused", "other"; NULL out of range. */
ISLE_EXPORT const char *isle_record_outcome_name(int outcome);
/* The head of a decision line of that outcome, the text
 * isle_record_outcome_of matches: "isle: tp=", "isle: planned ", "isle:
 * default selection", "isle: fallback", "isle: waiting", "isle: refused";
 * NULL for ISLE_OUTCOME_OTHER and out of range. topology/isle writes its
 * lines from it. */
ISLE_EXPORT const char *isle_record_outcome_prefix(int outcome);

/* Fills info from a record isle_record_read returned. A placement whose
 * figures are missing or of the wrong type reads as no placement (-1). */
ISLE_EXPORT void isle_record_info(const void *rec,
				  struct isle_record_info *info);

#ifdef __cplusplus
}
#endif
#endif /* ISLE_PROTO_H */
