/*
 * isle_jobinfo.h - a job's placement decision as per-job topology info
 * (isle_jobinfo.c), packed into the job's saved state where the release
 * keeps one (25.11+, isle__compat_has_jobinfo).
 */
#ifndef ISLE_JOBINFO_H
#define ISLE_JOBINFO_H

#include <stdint.h>

#include "src/common/slurm_xlator.h"

#include "src/common/pack.h"
#include "src/slurmctld/slurmctld.h"

#include "isle_place.h"

/* What isle decided for a job, as packed into the job's saved state. */
struct isle__jobinfo {
	uint64_t key;  /* the decision store's key (job id, or array task) */
	char *line;    /* the "isle:" AdminComment line */
	char *islands; /* island names, comma separated */
	uint32_t tp, pp, dp, leafs, tp_in_island, ntp_groups;
	uint32_t nnodes;
	char **nodes;	/* [nnodes] node names in rank order */
	uint64_t *gpus; /* [nnodes] GPU masks */
	char *record;	/* the explain record (JSON text), or NULL */
};

/* res and islands may be NULL (no placement). */
struct isle__jobinfo *isle__jobinfo_create(job_record_t *job_ptr, uint64_t key,
					   const char *line,
					   const struct isle_place_result *res,
					   const char *islands,
					   const char *record);
void isle__jobinfo_free(void *ji);
void isle__jobinfo_pack(void *ji, buf_t *buffer, uint16_t protocol_version);
/* In slurmctld it also hands the decision back to the decision store
 * (isle__decision_restore). */
int isle__jobinfo_unpack(void **ji, buf_t *buffer, uint16_t protocol_version);

#endif /* ISLE_JOBINFO_H */
