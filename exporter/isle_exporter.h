/*
 * isle_exporter.h - isle-exporter: isle's placement quality as OpenMetrics.
 *
 * A separate process; it never takes slurmctld's locks. Its sources, read
 * by one refresher thread at most once per period (--ttl), never per scrape:
 *   - `scontrol show topology`: topology/isle's own view (status, the free
 *     GPUs of every island, the eval latency line);
 *   - `scontrol show node --json`: node states and GPUs in use;
 *   - the cluster file (topology/'s isle_topo_load), reloaded when it
 *     changes, for the fragmentation score (placement/'s
 *     isle_place_fragmentation, the function topology/isle gives backfill);
 *   - the decision records StateSaveLocation/isle/job_<id>.json, through
 *     proto's isle_record_read and isle_record_info; a scan parses only
 *     files that are new since the last one (a rename gives a new inode);
 *   - the shim's per-job reports in root's reports directory
 *     (--reports-dir), the same way, through proto's isle_report_read.
 * Each refresh renders the metrics once; a scrape copies that text.
 * docs/exporter.md lists the metrics.
 *
 * Error contract: int functions return 0 or a negative errno (-EINVAL bad
 * input, -ENOMEM, -ENOENT, -EIO, -ETIMEDOUT); those taking (err, errlen)
 * write one line naming the input at fault (err may be NULL).
 *
 * Ownership: parse functions fill caller-owned structs whose contents the
 * matching _free releases; isle_exp_render returns malloc'ed text.
 *
 * Threading: no global state. A store is used by one thread at a time;
 * everything else works on the caller's objects only.
 */
#ifndef ISLE_EXPORTER_H
#define ISLE_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "isle_place.h"
#include "isle_proto.h"
#include "isle_topo.h"

/* ------------------------------------------------ scontrol show node --json */

struct isle_exp_node {
	char *name;
	int gpus;   /* GPUs Slurm has on the node ("gres") */
	int used;   /* GPUs allocated to jobs ("gres_used") */
	int usable; /* 0 when DOWN, DRAIN, FAIL, NOT_RESPONDING or FUTURE, as
		       topology/isle counts free GPUs */
};

struct isle_exp_nodes {
	int n;
	struct isle_exp_node *v;
};

/* Parses scontrol's JSON (its "nodes" array). name is used in messages. */
int isle_exp_nodes_parse(const char *json, size_t len, const char *name,
			 struct isle_exp_nodes *out, char *err, size_t errlen);
void isle_exp_nodes_free(struct isle_exp_nodes *n);

/* GPUs in a Slurm GRES string: "gpu:4", "gpu:a100:2(IDX:0-1),shard:8",
 * "gpu:0"; "N/A", "(null)" and "" are 0. -EINVAL for anything else. */
int isle_exp_gres_gpus(const char *gres, int *count);

/* ------------------------------------------------- scontrol show topology */

/* The most bounds an IsleEval line's BucketsUs= may have. */
#define ISLE_EXP_EVAL_MAX_BOUNDS 32

struct isle_exp_island {
	char *name;
	int multi; /* nvlink-domain (several nodes) */
	int gpus, free_gpus;
};

struct isle_exp_topo {
	int fallback; /* Status=fallback: no usable cluster file */
	char *cluster, *file, *error;
	long gpus, free_gpus;
	int nislands;
	struct isle_exp_island *islands;
	int have_eval; /* the IsleEval line */
	uint64_t eval_calls, eval_mean_us, eval_p50_us, eval_p99_us,
	    eval_max_us, eval_sum_us;
	/* Its histogram (BucketsUs=): cumulative counts at upper bounds in
	 * us, ascending, +Inf (the call count) not included. neval_le 0:
	 * a plugin without buckets; eval_sum_us is then mean x calls. */
	int neval_le;
	uint64_t eval_le_us[ISLE_EXP_EVAL_MAX_BOUNDS],
	    eval_le_count[ISLE_EXP_EVAL_MAX_BOUNDS];
};

/* Parses topology/isle's `scontrol show topology` text. -EINVAL (err says
 * so) when it is not topology/isle's (another TopologyPlugin). */
int isle_exp_topo_parse(const char *text, struct isle_exp_topo *out, char *err,
			size_t errlen);
void isle_exp_topo_free(struct isle_exp_topo *t);

/* ------------------------------------------------------ decision records */

/* Upper bounds of the cost-ratio histogram (+Inf is implied). */
#define ISLE_EXP_COST_NBOUNDS 7
extern const double isle_exp_cost_bounds[ISLE_EXP_COST_NBOUNDS];

struct isle_exp_store_stats {
	/* Counters since the store was created: one per job, when its
	 * record is first read. */
	uint64_t decisions[ISLE_OUTCOME_COUNT];
	uint64_t tp_groups_placed, tp_groups_split;
	uint64_t cost_count, cost_le[ISLE_EXP_COST_NBOUNDS]; /* cumulative */
	double cost_sum;
	/* A reports store (isle_exp_reports_create): the shim's reports,
	 * one per job, counted when first read. */
	uint64_t jobs_reported;
	uint64_t shim_taken[ISLE_REPORT_CLASSES],
	    shim_passed[ISLE_REPORT_CLASSES];
	uint64_t shim_sent[ISLE_REPORT_TIERS], shim_library[ISLE_REPORT_TIERS];
	/* Files that did not read (not a record or report, too big, a link),
	 * each version once. */
	uint64_t bad_files;
	/* The last scan. */
	long records, partial, unreadable;
	long deferred; /* new files left for the next scan (the limit) */
};

typedef struct isle_exp_store isle_exp_store;

/* A store over root's reports directory (plugstack.conf reports=): the
 * shim's reports, job_<id>.json, read with isle_report_read (bounded,
 * no link followed). At most max_reads new files are read a scan (0: no
 * limit), so a directory flooded with files costs each refresh a bounded
 * time; the rest wait for the next scans. Scanned with
 * isle_exp_store_scan. */
isle_exp_store *isle_exp_reports_create(const char *reports_dir,
					long max_reads);

/* A store over records_dir (StateSaveLocation/isle). NULL: no memory. */
isle_exp_store *isle_exp_store_create(const char *records_dir);
void isle_exp_store_destroy(isle_exp_store *s);
/* One scan: new and replaced files are read, vanished ones forgotten. A
 * file that does not read (not JSON, a bad field) counts as unreadable and
 * is read again once it is replaced. -ENOENT when the directory is missing
 * (no job has started yet), -EIO when it cannot be read. */
int isle_exp_store_scan(isle_exp_store *s, char *err, size_t errlen);
const struct isle_exp_store_stats *
isle_exp_store_stats(const isle_exp_store *s);

/* ------------------------------------------------------------ snapshot */

enum isle_exp_source_id {
	ISLE_EXP_SRC_TOPOLOGY = 0, /* scontrol show topology */
	ISLE_EXP_SRC_NODES,	   /* scontrol show node --json */
	ISLE_EXP_SRC_CLUSTER_FILE,
	ISLE_EXP_SRC_STORE,
	ISLE_EXP_SRC_REPORTS, /* the shim's reports (--reports-dir) */
	ISLE_EXP_SRC_COUNT
};

const char *isle_exp_source_name(int src);

struct isle_exp_source {
	int up;		     /* the last read succeeded */
	double last_success; /* Unix time, 0 = never */
	double seconds;	     /* the last read took */
	uint64_t errors;     /* failed reads */
	int off;	     /* not configured: left out of the rendering */
};

/* What one rendering shows; NULL / negative members are left out. */
struct isle_exp_snapshot {
	const struct isle_exp_topo *slurm_topo;
	const struct isle_exp_nodes *nodes;
	const struct isle_exp_store_stats *store;
	const struct isle_exp_store_stats *reports; /* shim reports */
	double fragmentation;			    /* 0..1, < 0 unknown */
	struct isle_exp_source src[ISLE_EXP_SRC_COUNT];
};

/*
 * Fragmentation of the free GPUs as isle_place_fragmentation scores it:
 * per island the free count of topology/isle's view (slurm_topo), per node
 * of a multi-node NVLink domain its free count from the node states. The
 * score depends on free counts per node and island only, so it is exact.
 * Returns 0..1, or -1 when the sources do not describe t (islands or nodes
 * missing).
 */
double isle_exp_fragmentation(isle_place_ctx *ctx, const isle_topo *t,
			      const struct isle_exp_topo *slurm_topo,
			      const struct isle_exp_nodes *nodes);

enum isle_exp_format {
	ISLE_EXP_OPENMETRICS = 0, /* application/openmetrics-text 1.0.0 */
	ISLE_EXP_TEXT		  /* text/plain; version=0.0.4 */
};

#define ISLE_EXP_CT_OPENMETRICS                                                \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"
#define ISLE_EXP_CT_TEXT "text/plain; version=0.0.4; charset=utf-8"

/* The exposition of s (malloc'ed, *len its length), or NULL (no memory). */
char *isle_exp_render(const struct isle_exp_snapshot *s, enum isle_exp_format f,
		      size_t *len);

/* The format an Accept header asks for: OpenMetrics when it names
 * application/openmetrics-text (Prometheus does), else text 0.0.4. */
enum isle_exp_format isle_exp_negotiate(const char *accept);

#endif /* ISLE_EXPORTER_H */
