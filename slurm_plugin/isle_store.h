/*
 * isle_store.h - topology/isle's decision records (isle_store.c).
 *
 * The latest decision of each job lives in memory, keyed by job id: the
 * "isle: ..." line and the JSON record `islectl explain` prints. Only the
 * decision that started a job is written to disk (DIR/job_<id>.json), by a
 * writer thread, never by the caller; records of purged jobs are dropped
 * with their files. The writer only writes what it is given: which jobs
 * started or are gone is the caller's to say (isle__store_started,
 * isle__store_purge; isle_decision.c asks Slurm), so nothing here calls
 * Slurm and the records can travel elsewhere (e.g. a per-job jobinfo)
 * unchanged.
 *
 * Every function is thread-safe and never blocks on file I/O, so it may be
 * called under the scheduler's locks.
 */
#ifndef ISLE_STORE_H
#define ISLE_STORE_H

#include <stdbool.h>
#include <stdint.h>

enum { ISLE_STORE_LOG_ERROR = 0, ISLE_STORE_LOG_INFO, ISLE_STORE_LOG_DEBUG };
typedef void (*isle__store_log_fn)(int level, const char *msg);

/*
 * Records are keyed by a 64-bit key: the job id, or (for a decision made
 * before the job has its final id, e.g. a task of a pending array) any key
 * above UINT32_MAX that the caller can map to the job.
 *
 * Loads the records an earlier run left in dir (they count as saved) and
 * starts the writer. A second call while running is a no-op. 0 or -errno.
 */
int isle__store_init(const char *dir, isle__store_log_fn log);

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

/*
 * The keys of every record, and for each whether its current decision is
 * not saved yet (unsaved[i]: the caller may pass the job's grant to
 * isle__store_started). *keys and *unsaved are malloc()ed; returns their
 * count, or -ENOMEM.
 */
int isle__store_keys(uint64_t **keys, uint8_t **unsaved);

/*
 * The current decision of key started job job_id (a key of an array task
 * moves to the job id it started as): the record is queued for writing,
 * once per decision. granted, if not NULL, is a malloc()ed JSON array of
 * what the scheduler granted, [{"node": "n01", "gpus": [0, 1]}, ...]; an
 * unsaved record carries it as "granted" (the store takes it). 0, -ENOENT
 * (no record) or -ENOMEM.
 */
int isle__store_started(uint64_t key, uint32_t job_id, char *granted);

/* Drops the job's record and queues the removal of its file. 0 or
 * -ENOENT. */
int isle__store_purge(uint64_t key);

#endif /* ISLE_STORE_H */
