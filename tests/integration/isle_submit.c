/*
 * isle_submit.c - submits a batch job through libslurm, the way a program
 * or slurmrestd does: no sbatch, so no spank_isle.so option checks.
 *
 *   isle_submit [-N NODES] [--tres-per-job T] [--tres-per-node T]
 *               [--spank K=V]... [--wrap CMD] [-o FILE]
 *
 * Prints the job id on success; on a refusal prints Slurm's error to
 * stderr and exits 1. Built by tests/integration/70-ctl-hostile.sh against
 * the test cluster's libslurm.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#define MAX_SPANK 16
/* The response's job id field (the test passes step_id.job_id for 26.05). */
#ifndef ISLE_SUBMIT_JOB_ID
#define ISLE_SUBMIT_JOB_ID job_id
#endif

int main(int argc, char **argv)
{
	job_desc_msg_t desc;
	submit_response_msg_t *resp = NULL;
	char *spank[MAX_SPANK], *env[] = {"PATH=/usr/bin:/bin", NULL};
	char script[4096], cwd[4096];
	const char *wrap = "true", *out = "/dev/null";
	int nspank = 0, rc;

	slurm_init(NULL);
	slurm_init_job_desc_msg(&desc);
	desc.min_nodes = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			goto usage;
		if (!strcmp(a, "-N"))
			desc.min_nodes = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--tres-per-job"))
			desc.tres_per_job = (char *)v;
		else if (!strcmp(a, "--tres-per-node"))
			desc.tres_per_node = (char *)v;
		else if (!strcmp(a, "--spank") && nspank < MAX_SPANK)
			spank[nspank++] = (char *)v;
		else if (!strcmp(a, "--wrap"))
			wrap = v;
		else if (!strcmp(a, "-o"))
			out = v;
		else
			goto usage;
		i++;
	}
	snprintf(script, sizeof(script), "#!/bin/sh\n%s\n", wrap);
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/tmp");
	desc.name = "isle-submit";
	desc.script = script;
	desc.std_out = (char *)out;
	desc.std_err = (char *)out;
	desc.work_dir = cwd;
	desc.user_id = getuid();
	desc.group_id = getgid();
	desc.environment = env;
	desc.env_size = 1;
	desc.spank_job_env = nspank ? spank : NULL;
	desc.spank_job_env_size = (uint32_t)nspank;

	rc = slurm_submit_batch_job(&desc, &resp);
	if (rc != SLURM_SUCCESS) {
		fprintf(stderr, "isle_submit: %s\n", slurm_strerror(errno));
		slurm_fini();
		return 1;
	}
	printf("%u\n", resp->ISLE_SUBMIT_JOB_ID);
	slurm_free_submit_response_response_msg(resp);
	slurm_fini();
	return 0;
usage:
	fprintf(stderr, "usage: isle_submit [-N NODES] [--tres-per-job T] "
			"[--tres-per-node T] [--spank K=V]... [--wrap CMD] "
			"[-o FILE]\n");
	return 2;
}
