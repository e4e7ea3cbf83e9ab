/*
 * job_submit_isle.c - job_submit/isle (JobSubmitPlugins=isle): refuses at
 * submit, with a message the submitter sees, the isle jobs that no
 * placement can ever satisfy:
 *   - --isle-tp x --isle-pp does not divide the job's GPU count;
 *   - --isle-mode=required with --isle-tp larger than the largest NVLink
 *     island of the cluster file.
 * sbatch cannot check these (a SPANK plugin does not see the GPU request)
 * and jobs from libslurm or slurmrestd never pass spank_isle.so: the job's
 * SPANK environment is read here with the parser topology/isle uses
 * (isle_policy.c, spank_opts.c). Options the parser or the admin's policy
 * refuses are left to topology/isle, which runs such jobs under Slurm's
 * default selection and says why in their AdminComment.
 *
 * slurmctld calls job_submit() with the job read lock held: nothing here
 * touches files after init(), which reads plugstack.conf and the cluster
 * file (slurmctld reloads plugins on `scontrol reconfigure`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isle_policy.h"

#include "src/common/slurm_xlator.h"

#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

ISLE_EXPORT const char plugin_name[] = "isle job submit plugin";
ISLE_EXPORT const char plugin_type[] = "job_submit/isle";
ISLE_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static struct isle__spank_policy policy;
static int max_island; /* GPUs of the largest island; 0: no cluster file */

ISLE_EXPORT int init(void)
{
	char err[512] = "", *path = isle__policy_cluster_path();
	isle_topo *t = NULL;

	isle__policy_read(&policy);
	max_island = 0;
	if (isle_topo_load(path, &t, err, sizeof(err))) {
		/* topology/isle logs the reason; only the TP x PP check
		 * applies until the file loads. */
		verbose("isle: job_submit: no cluster file (%s): island sizes "
			"not checked",
			path);
	} else {
		for (int i = 0; i < t->nislands; i++)
			max_island = MAX(max_island, t->islands[i].ngpus);
		isle_topo_destroy(t);
	}
	verbose("%s loaded: largest island %d GPUs", plugin_name, max_island);
	xfree(path);
	return SLURM_SUCCESS;
}

ISLE_EXPORT int fini(void)
{
	return SLURM_SUCCESS;
}

/*
 * The GPU count of one TRES list ("gres/gpu:4", "gres/gpu:h100:4,cpu=2"):
 * the sum of its gpu entries, 0 if none, -1 if a count is not a plain
 * number (left to Slurm).
 */
static long _tres_gpus(const char *tres)
{
	char *copy, *tok, *save = NULL;
	long sum = 0;

	if (!tres || !tres[0])
		return 0;
	copy = xstrdup(tres);
	for (tok = strtok_r(copy, ",;", &save); tok;
	     tok = strtok_r(NULL, ",;", &save)) {
		char *name = tok, *cnt, *end;
		long n;

		if (!strncmp(name, "gres/", 5) || !strncmp(name, "gres:", 5))
			name += 5;
		if (strncmp(name, "gpu", 3) || (name[3] && name[3] != ':'))
			continue;
		cnt = strrchr(name, ':');
		if (!cnt) {
			n = 1;
		} else {
			errno = 0;
			n = strtol(cnt + 1, &end, 10);
			if (errno || end == cnt + 1 || *end || n < 0) {
				sum = -1;
				break;
			}
		}
		if (__builtin_add_overflow(sum, n, &sum)) {
			sum = -1;
			break;
		}
	}
	xfree(copy);
	return sum;
}

/* The job's total GPUs if the request fixes it, else 0 (not checked). */
static long _job_gpus(const job_desc_msg_t *d)
{
	long n, total;

	if ((n = _tres_gpus(d->tres_per_job)))
		return n;
	if ((n = _tres_gpus(d->tres_per_node))) {
		if (n < 0 || d->min_nodes == NO_VAL || !d->min_nodes ||
		    __builtin_mul_overflow(n, (long)d->min_nodes, &total))
			return 0;
		return total;
	}
	if ((n = _tres_gpus(d->tres_per_task))) {
		if (n < 0 || d->num_tasks == NO_VAL || !d->num_tasks ||
		    __builtin_mul_overflow(n, (long)d->num_tasks, &total))
			return 0;
		return total;
	}
	return 0;
}

ISLE_EXPORT int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
			   char **err_msg)
{
	struct isle__job_opts o;
	char err[400];
	long gpus;
	int rc;

	if (isle__policy_job_opts(&policy, job_desc->spank_job_env,
				  job_desc->spank_job_env_size, &o, err,
				  sizeof(err)) ||
	    !o.set)
		return SLURM_SUCCESS;
	gpus = _job_gpus(job_desc);
	rc = isle__policy_gpu_check(&o, gpus, max_island, err, sizeof(err));
	if (!rc)
		return SLURM_SUCCESS;
	info("isle: job submission from uid %u refused: %s", submit_uid, err);
	if (err_msg) {
		xfree(*err_msg);
		*err_msg = xstrdup_printf("isle: %s", err);
	}
	return rc == -E2BIG ? ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
			    : ESLURM_INVALID_GRES;
}

ISLE_EXPORT int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
			   uint32_t submit_uid, char **err_msg)
{
	return SLURM_SUCCESS;
}
