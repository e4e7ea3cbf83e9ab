/*
 * spank_local.c - srun / sbatch / salloc: check the options against the site
 * policy and hand them to slurmctld in the job's SPANK environment, where
 * topology/isle reads them (as SPANK_ISLE_TP, ...).
 */
#include <string.h>

#include <slurm/spank.h>

#include "spank_isle.h"

int isle__spank_local_post_opt(spank_t sp, struct isle__spank_state *st)
{
	char err[256], buf[64];

	if (isle__spank_resolve(&st->policy, &st->user, &st->job, err,
				sizeof(err))) {
		slurm_error("isle: %s", err);
		return -1;
	}
	st->resolved = 1;
	/* Jobs that use no isle option stay plain Slurm jobs. */
	if (!st->user.set)
		return 0;
	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		const char *name = isle_job_opt_desc(opt)->env;
		const char *val =
		    isle_job_opt_format(&st->job, opt, buf, sizeof(buf));

		if (spank_job_control_setenv(sp, name, val, 1) !=
		    ESPANK_SUCCESS) {
			slurm_error("isle: cannot pass %s=%s to the controller",
				    name, val);
			return -1;
		}
	}
	return 0;
}
