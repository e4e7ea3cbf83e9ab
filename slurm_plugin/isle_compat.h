/*
 * isle_compat.h - the seam between topology/isle and the Slurm release it is
 * built against.
 *
 * The plugin interface changed between 24.11 and 25.11 (entry points gained a
 * topology context, topology_p_topology_* became topology_p_topoinfo_*,
 * add_rm_node, get_topology_str and per-job topology info appeared) and
 * again in 26.05 (eval_node, allow_one_node, get_rank; docs/slurm-releases.md).
 * isle_compat.c is the only file that tests SLURM_VERSION_NUMBER: it
 * exports the entry points of the release at hand and calls the
 * release-neutral bodies of topology_isle.h. What the rest of the plugin
 * needs from the release is declared here.
 */
#ifndef ISLE_COMPAT_H
#define ISLE_COMPAT_H

#include <stdbool.h>

#include "src/common/slurm_xlator.h"

#include "src/slurmctld/slurmctld.h"

#include "isle_jobinfo.h"

/* True when the release keeps per-job topology info in its job state. */
extern const bool isle__compat_has_jobinfo;

/* Attaches ji to the job's topology info (consumes ji; 24.11: frees it). */
void isle__compat_set_jobinfo(job_record_t *job_ptr, struct isle__jobinfo *ji);

#endif /* ISLE_COMPAT_H */
