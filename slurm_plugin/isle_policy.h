/*
 * isle_policy.h - what topology/isle and job_submit/isle share in
 * slurmctld (isle_policy.c): the cluster file path, the admin's job option
 * policy (the spank_isle.so line of plugstack.conf), a job's options from
 * its SPANK environment and the checks its GPU request must pass before
 * any placement is tried.
 */
#ifndef ISLE_POLICY_H
#define ISLE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "isle_place.h"
#include "spank_isle.h"

/* Cluster file path from TopologyParam=IsleFile=PATH, else proto's
 * default beside slurm.conf (isle_cluster_file_path). Caller xfree()s. */
char *isle__policy_cluster_path(void);

/*
 * The contention term's weight from TopologyParam=IsleContentionWeight=W
 * (0 to ISLE_POLICY_MAX_CC_WEIGHT; absent: 0, the term is off and
 * placement is what it was without it). A bad value leaves *w 0 and
 * returns -EINVAL with err naming slurm.conf, the parameter and the
 * value.
 */
#define ISLE_POLICY_MAX_CC_WEIGHT 100.0
int isle__policy_contention_weight(double *w, char *err, size_t errlen);

/* Reads the isle SPANK plugin's arguments from plugstack.conf
 * (PlugStackConfig, else plugstack.conf beside slurm.conf; include lines
 * followed) into p. Without the plugin line, or on a bad argument (logged
 * with file and line), the built-in defaults apply. */
void isle__policy_read(struct isle__spank_policy *p);

/* Job options carried in the job's SPANK environment. */
struct isle__job_opts {
	int tp, pp;
	isle_place_mode mode;
	isle_tier span;
	isle_traffic traffic; /* AUTO: inferred from the job's shape */
	int set;	      /* 1 if any SPANK_ISLE_* variable was present */
};

/*
 * The options in a job's SPANK environment (env[nenv]), checked as sbatch
 * checks them (spank_opts.c) and against the policy pol. Returns 0, or
 * -EINVAL with err naming the variable and the limit (o then holds the
 * defaults and must not be used for placement).
 */
int isle__policy_job_opts(const struct isle__spank_policy *pol, char **env,
			  uint32_t nenv, struct isle__job_opts *o, char *err,
			  size_t errlen);

/*
 * What a request can be checked for before placement: tp x pp divides the
 * job's GPU count (gpus <= 0: unknown, not checked) and, in required mode,
 * tp fits the largest NVLink island (max_island GPUs; <= 0: unknown).
 * 0, or -EINVAL / -E2BIG with a message for the user in err.
 */
int isle__policy_gpu_check(const struct isle__job_opts *o, long gpus,
			   int max_island, char *err, size_t errlen);

#endif /* ISLE_POLICY_H */
