/*
 * isle_store.h - topology/isle's decision records (isle_store.c).
 *
 * The latest decision of each job lives in memory, keyed by job id: the
 * "isle: ..." line and the JSON record `islectl explain` prints. Only the
 * decision that started a job is written to disk (DIR/job_<id>.json), by a
 * writer thread, never by the caller; records of jobs the scheduler has
 * purged are dropped with their files. No Slurm calls: what is Slurm's to
 * say (has the job started, is it gone) comes from the probe callback, so
 * the records can travel elsewhere (e.g. a per-job jobinfo) unchanged.
 *
 * Every function is thread-safe and never blocks on file I/O or on the
 * probe, so it may be called under the scheduler's locks.
 */
#ifndef ISLE_STORE_H
#define ISLE_STORE_H

#include <stdbool.h>
#include <stdint.h>

enum {
	ISLE_STORE_JOB_GONE = 0,
	ISLE_STORE_JOB_PENDING,
	ISLE_STORE_JOB_STARTED
};
enum { ISLE_STORE_LOG_ERROR = 0, ISLE_STORE_LOG_INFO, ISLE_STORE_LOG_DEBUG };

/*
 * Records are keyed by a 64-bit key: the job id, or (for a decision made
 * before the job has its final id, e.g. a task of a pending array) any key
 * above UINT32_MAX that the probe can map to the job. The probe fills
 * state[i] (ISLE_STORE_JOB_*) for keys[i] and, for a started job, ids[i]
 * with its job id (the record moves there). It runs in the writer thread
 * with no store lock held.
 */
typedef void (*isle__store_probe_fn)(const uint64_t *keys, int n,
				     uint8_t *state, uint32_t *ids, void *arg);
typedef void (*isle__store_log_fn)(int level, const char *msg);

struct isle__store_stats {
	uint64_t puts;	  /* decisions that changed a job's record */
	uint64_t writes;  /* record files written */
	uint64_t unlinks; /* record files removed */
	uint64_t sweeps;  /* probe passes */
	uint64_t entries; /* records in memory now */
};

/*
 * Loads the records an earlier run left in dir (they count as persisted)
 * and starts the writer, which probes every period_ms (0: 1000) and when
 * kicked. A second call while running is a no-op. 0 or -errno.
 */
int isle__store_init(const char *dir, isle__store_probe_fn probe, void *arg,
		     isle__store_log_fn log, unsigned period_ms);

/* Stops the writer after it finished the queued file operations, and
 * frees every record. */
void isle__store_fini(void);

/* True if line is the job's current decision (the caller can skip building
 * a record). */
bool isle__store_same(uint64_t key, const char *line);

/* Makes (line, record) the job's current decision: 1 if it replaced a
 * different one, 0 if line was already current (record ignored), -errno. */
int isle__store_put(uint64_t key, const char *line, const char *record);

/* Copy of the job's current record (free()), or NULL. */
char *isle__store_get(uint64_t key);

/* The current decision started the job: queue it for writing (once per
 * decision). 0, -ENOENT (no record) or -ENOMEM. */
int isle__store_started(uint64_t key);

/* Drops the job's record and queues the removal of its file. */
int isle__store_purge(uint64_t key);

/* Asks the writer to probe now (e.g. after a decision that may start a
 * job), instead of at the next period. */
void isle__store_kick(void);

void isle__store_get_stats(struct isle__store_stats *out);

#endif /* ISLE_STORE_H */
