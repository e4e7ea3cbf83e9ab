/*
 * isle_load.h - the running jobs whose traffic the placement engine's
 * contention term charges (isle_load.c).
 *
 * The engine keeps the load on each shared link incrementally
 * (isle_place_load_add / _remove); this table remembers which jobs it
 * added and with what, so that each is removed exactly once, with the
 * same arguments. The topology plugin interface says when a job is
 * placed but not when it ends, is requeued or cancelled, so isle_eval.c
 * reconciles the table against Slurm's running jobs: isle__load_begin,
 * then isle__load_seen for each running job and isle__load_add for those
 * it does not know (or that started again), then isle__load_end, which
 * removes the loads of the jobs no longer running. A job counts as the
 * same while its id and start time are.
 *
 * Nothing here calls Slurm (tests/unit/test_slurm_plugin_load.c). Not
 * thread-safe: the caller holds the engine's lock (isle__ctx.lock).
 * Memory grows with the number of running jobs, not with evaluations.
 */
#ifndef ISLE_LOAD_H
#define ISLE_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "isle_place.h"

struct isle__load_job {
	uint32_t job_id;
	int64_t start;
	isle_traffic traffic;
	unsigned gen; /* the last reconcile that saw the job running */
	int nnodes;   /* 0: the job loads no link the engine knows */
	int *nodes;   /* model node indices */
	uint64_t *masks;
};

struct isle__load {
	isle_place_ctx *place; /* the engine whose loads these are */
	struct isle__load_job *jobs;
	int njobs, cap;
	int *slot; /* open addressing by job id: index into jobs, -1 empty */
	int nslots;
	unsigned gen;
};

/* An empty table for engine place (borrowed; NULL: nothing is loaded). */
void isle__load_init(struct isle__load *l, isle_place_ctx *place);

/* Frees the table; the engine's loads stay (the caller destroys the
 * engine with it, or calls isle__load_clear first). */
void isle__load_fini(struct isle__load *l);

/* Removes every job's load from the engine and empties the table. */
void isle__load_clear(struct isle__load *l);

/* Starts a reconcile. */
void isle__load_begin(struct isle__load *l);

/* A running job: true if the table has it with this start time (it is
 * marked seen); false if the caller should isle__load_add it. */
bool isle__load_seen(struct isle__load *l, uint32_t job_id, int64_t start);

/*
 * Adds the load of a running job (its GPUs: nodes[i], masks[i], model
 * indices) as seen, replacing (and removing the load of) an entry of the
 * same id with another start time. nnodes 0 records a job that loads no
 * link, so it is not looked at again. 0, -EINVAL (bad job id, node or
 * traffic class: the job is recorded without load) or -ENOMEM (nothing
 * recorded, no load added).
 */
int isle__load_add(struct isle__load *l, uint32_t job_id, int64_t start,
		   const int *nodes, const uint64_t *masks, int nnodes,
		   isle_traffic tr);

/* Ends a reconcile: removes the load of every job not seen since
 * isle__load_begin. Returns how many jobs left. */
int isle__load_end(struct isle__load *l);

/* Jobs in the table. */
int isle__load_count(const struct isle__load *l);

#endif /* ISLE_LOAD_H */
