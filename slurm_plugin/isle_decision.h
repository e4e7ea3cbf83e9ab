/*
 * isle_decision.h - what topology/isle tells people about a decision
 * (isle_decision.c): the "isle:" line in the job's AdminComment, the
 * decision record `islectl explain` prints (kept by isle_store.c, written
 * once the job started) and, where the release keeps one, the job's
 * topology info (isle_jobinfo.c).
 */
#ifndef ISLE_DECISION_H
#define ISLE_DECISION_H

#include <stdint.h>

#include "isle_eval.h"

/*
 * Records the decision of an evaluation (r->outcome other than
 * ISLE_OUTCOME_OTHER): merges its line into the job's AdminComment and,
 * when the decision changed, keeps its record. Refusals, fallbacks and
 * refused options are logged at info once per job and reason, the rest at
 * debug.
 */
void isle__decision_record(const struct isle__eval_result *r);

/*
 * A decision came back with a job's saved state (slurmctld restart): makes
 * it the job's current decision again, so the explain path has it.
 */
void isle__decision_restore(uint64_t key, const char *line, const char *record);

/* Starts the record store and the thread that tells it which jobs started
 * or are gone (slurmctld only; reloads the records an earlier slurmctld
 * saved) / stops them. */
void isle__decision_init(void);
void isle__decision_fini(void);

#endif /* ISLE_DECISION_H */
