/*
 * spank_remote.c - slurmstepd (remote context): the per-task environment.
 *
 * task_init runs in each task after it became the job's user and before it
 * execs, with stdout/stderr already the task's. From the job's run
 * directory (<rundir>/<jobid>/, written by the prolog, see spank_job.c) it
 * sets:
 *   ISLE_PLAN        <dir>/plan.json
 *   NCCL_TOPO_FILE   <dir>/nccl-topo.xml        (unless the job set it)
 *   NCCL_*           the lines of <dir>/nccl.env (unless the job set them)
 *   LD_PRELOAD       + the admin's shim library, after the job's own
 *                    entries (steps of two tasks or more)
 * in srun steps that run one task per GPU of the job (the plan's ranks).
 * The batch script is no rank and gets none of it.
 * --isle-shim=off turns all of it off. Without a plan (the agent failed,
 * or never ran) the task runs unchanged and task 0 of each step prints why
 * to the job's stderr. The files are trusted only when root wrote them,
 * all the way from "/" (proto's trusted walk); reading them as the user is
 * the permission check: only the job's user can (its ACL entry).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "spank_isle.h"

/* plan.json and nccl.env: a plan is a line per rank and level. */
#define MAX_SMALL_FILE (16 << 20)
#define MAX_XML_FILE (1 << 20)

int isle__spank_remote_post_opt(spank_t sp, struct isle__spank_state *st)
{
	char err[256];

	if (isle__spank_resolve(&st->policy, &st->user, &st->job, err,
				sizeof(err))) {
		slurm_error("isle: %s", err);
		return -1;
	}
	st->resolved = 1;
	return 0;
}

/* Every task of an isle job sees its options as ISLE_* variables. */
static int _export_options(spank_t sp, const struct isle__spank_state *st)
{
	char buf[64];

	if (!st->user.set)
		return 0;
	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		const char *val =
		    isle_job_opt_format(&st->job, opt, buf, sizeof(buf));

		if (spank_setenv(sp, isle_job_opt_desc(opt)->env, val, 1) !=
		    ESPANK_SUCCESS) {
			slurm_error(
			    "isle: cannot set %s in the task environment",
			    isle_job_opt_desc(opt)->env);
			return -1;
		}
	}
	return 0;
}

/* Sets NAME=VALUE lines of nccl.env that the job did not set itself. */
static void _export_nccl_env(spank_t sp, char *text)
{
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (line[0] == '#' || !eq || strncmp(line, "NCCL_", 5))
			continue;
		*eq = '\0';
		/* Existing values win: spank_setenv(overwrite = 0). */
		spank_setenv(sp, line, eq + 1, 0);
	}
}

/* Appends the shim to LD_PRELOAD, keeping the job's entries first. Returns
 * 0, or -1 when the job's LD_PRELOAD is too long to extend safely. */
static int _preload_shim(spank_t sp, const char *shim)
{
	char cur[4096], next[8192];
	const char *p;
	size_t n = strlen(shim);
	spank_err_t rc = spank_getenv(sp, "LD_PRELOAD", cur, sizeof(cur));

	if (rc == ESPANK_ENV_NOEXIST)
		cur[0] = '\0';
	else if (rc != ESPANK_SUCCESS)
		return -1;
	/* Already there (an inner srun inherits the outer step's env). */
	for (p = cur; (p = strstr(p, shim)); p += n)
		if ((p == cur || p[-1] == ':' || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ':' || p[n] == ' '))
			return 0;
	snprintf(next, sizeof(next), "%s%s%s", cur, cur[0] ? ":" : "", shim);
	return spank_setenv(sp, "LD_PRELOAD", next, 1) == ESPANK_SUCCESS ? 0
									 : -1;
}

/* Entries of a comma list ("0,1,3"); 0 for NULL or "". */
static int _count_list(const char *s)
{
	int n = (s && *s) ? 1 : 0;

	for (; s && *s; s++)
		n += *s == ',';
	return n;
}

/* Tasks per node when every node of the step runs the same number
 * (SLURM_STEP_TASKS_PER_NODE: "4(x2)", "4,4"), else -1. */
static long _uniform_tasks(const char *s)
{
	long k = -1;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v <= 0 || (k >= 0 && v != k))
			return -1;
		k = v;
		s = end;
		if (*s == '(' && !(s = strchr(s, ')'))) /* "(xN)": repeats */
			return -1;
		if (*s == ')')
			s++;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return k;
}

/*
 * 1 when the step's task distribution puts ranks where the plan does: nodes
 * filled in order (block, the default; "block:cyclic" only changes CPU
 * binding inside a node). Cyclic gives the same layout when each node runs
 * one task or the step has one node, which is what Slurm picks by default
 * for as many tasks as nodes (pure data parallelism), so it is accepted
 * there. Otherwise WHY says what to change.
 */
static int _distribution_ok(spank_t sp, uint32_t nnodes, long per_node,
			    char *why, size_t len)
{
	char dist[64];

	if (spank_getenv(sp, "SLURM_DISTRIBUTION", dist, sizeof(dist)) !=
		ESPANK_SUCCESS ||
	    !strncmp(dist, "block", 5) || !strcmp(dist, "unknown"))
		return 1;
	if (!strncmp(dist, "cyclic", 6) && (per_node == 1 || nnodes == 1))
		return 1;
	snprintf(why, len,
		 "--distribution=%s places rank 1 on another node, the plan "
		 "fills each node first; run the step with -m block",
		 dist);
	return 0;
}

/*
 * 1 if the step runs one task per granted GPU on every node of the job, in
 * a distribution that fills nodes in order: the rank layout the plan
 * describes (the prolog wrote it for every node with this node's GPU
 * count). Every task of a step decides alike, so the shim is on in all
 * ranks or in none. Any other step gets no plan, since the shim rejects a
 * plan whose rank count differs from MPI_COMM_WORLD's: 0 when this node's
 * GPUs do not match, -1 when the step's layout does not (the same on every
 * node).
 */
static int _step_matches_plan(spank_t sp, uint32_t ntasks, char *why,
			      size_t len)
{
	char buf[256];
	uint32_t nnodes = 0, local = 0;
	long job_nodes, per_node;
	int gpus;

	if (spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local) !=
		ESPANK_SUCCESS ||
	    spank_getenv(sp, "SLURM_JOB_NUM_NODES", buf, sizeof(buf)) !=
		ESPANK_SUCCESS)
		return 0;
	job_nodes = strtol(buf, NULL, 10);
	if (spank_getenv(sp, "SLURM_STEP_GPUS", buf, sizeof(buf)) !=
		ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_JOB_GPUS", buf, sizeof(buf)) !=
		ESPANK_SUCCESS)
		buf[0] = '\0';
	gpus = _count_list(buf);
	/* The step's layout is the same on every node; a node whose GPU
	 * count differs from it fails below (uneven --gpus, docs/admin.md). */
	if (spank_getenv(sp, "SLURM_STEP_TASKS_PER_NODE", buf, sizeof(buf)) !=
		ESPANK_SUCCESS ||
	    (per_node = _uniform_tasks(buf)) < 0) {
		snprintf(why, len,
			 "the step's nodes run different numbers of tasks");
		return -1;
	}
	if (!_distribution_ok(sp, nnodes, per_node, why, len))
		return -1;
	if (gpus > 0 && (long)nnodes == job_nodes && (int)local == gpus &&
	    (long)ntasks == job_nodes * gpus)
		return 1;
	snprintf(why, len,
		 "this step runs %u tasks on %u nodes; the plan has one rank "
		 "per GPU (%ld nodes x %d GPUs)",
		 ntasks, nnodes, job_nodes, gpus);
	return 0;
}

/* The node the plan (text, read from path) puts RANK on (proto's reader,
 * the shim's). 0 if found. */
static int _plan_rank_node(const char *text, const char *path, uint32_t rank,
			   char *node, size_t len)
{
	struct isle_plan *plan = NULL;
	int rc = -1;

	if (isle_plan_parse(text, strlen(text), path, &plan, NULL, 0))
		return -1;
	if (rank < (uint32_t)plan->nranks &&
	    strlen(plan->ranks[rank].node) < len) {
		strcpy(node, plan->ranks[rank].node);
		rc = 0;
	}
	isle_plan_destroy(plan);
	return rc;
}

/* One line on the task's stderr: the job's output shows why. */
static void _say_shim_off(uint32_t job_id, const char *node, const char *why)
{
	size_t n = strcspn(why, "\n");

	fprintf(stderr, "isle: shim off for job %u on %s: %.*s\n", job_id, node,
		(int)n, why);
	fflush(stderr);
}

int isle__spank_remote_task_init(spank_t sp, const struct isle__spank_state *st)
{
	char node[256], rundir[512], jobid[16], dir[600], path[700];
	char why[1024], err[768], plan_node[256];
	uint32_t job_id = 0, step_id = 0, ntasks = 0, task_gid = 0;
	int task_id = -1, match, dfd = -1, rc;
	char *text = NULL, *plan_text = NULL;

	if (!st->resolved)
		return 0;
	if (_export_options(sp, st))
		return -1;
	if (st->job.shim == ISLE_SHIM_OFF ||
	    !isle__spank_plans_enabled(&st->policy))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) !=
		ESPANK_SUCCESS)
		return 0;
	if (step_id == SLURM_EXTERN_CONT)
		return 0;
	/* Jobs with no GPU on this node get no plan, by design. */
	if ((spank_getenv(sp, "SLURM_JOB_GPUS", path, sizeof(path)) !=
		 ESPANK_SUCCESS ||
	     !path[0]) &&
	    (spank_getenv(sp, "SLURM_STEP_GPUS", path, sizeof(path)) !=
		 ESPANK_SUCCESS ||
	     !path[0]))
		return 0;
	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) !=
		ESPANK_SUCCESS ||
	    isle__spank_rundir(&st->policy, node, rundir, sizeof(rundir)))
		return 0;
	snprintf(jobid, sizeof(jobid), "%u", job_id);
	snprintf(dir, sizeof(dir), "%s/%u", rundir, job_id);

	/*
	 * Nothing of the run dir is trusted unless root wrote it: every
	 * component from "/" is root's and writable by nobody else, and so are
	 * the files (proto's trusted walk). The paths handed to the task stay
	 * valid: nobody but root can change what they name.
	 */
	dfd = isle_rundir_open_job(rundir, jobid, err, sizeof(err));
	if (dfd >= 0)
		rc = isle_rundir_read(dfd, ISLE_RUNDIR_PLAN, MAX_SMALL_FILE,
				      &plan_text, err, sizeof(err));
	else
		rc = dfd;
	if (rc) {
		if (task_id != 0)
			goto out;
		if (rc == -ENOENT && dfd >= 0 &&
		    !isle_rundir_read(dfd, ISLE_RUNDIR_ERROR, MAX_SMALL_FILE,
				      &text, NULL, 0)) {
			_say_shim_off(job_id, node, text);
		} else if (rc == -ENOENT) {
			snprintf(why, sizeof(why),
				 "no plan in %s (the job prolog did not write "
				 "one: see the slurmd log)",
				 dir);
			_say_shim_off(job_id, node, why);
		} else {
			slurm_error("isle: job %u: %s: not trusted", job_id,
				    err);
			snprintf(why, sizeof(why), "%s: not trusted", err);
			_say_shim_off(job_id, node, why);
		}
		goto out;
	}
	/* The batch script is no rank: its srun steps get their own
	 * settings, and nothing leaks into steps run with --isle-shim=off. */
	if (step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_INTERACTIVE_STEP)
		goto out;
	why[0] = '\0';
	if ((match = _step_matches_plan(sp, ntasks, why, sizeof(why))) < 1) {
		uint32_t rank = 1;

		/* A step-wide reason once (the job's first rank), a node's
		 * own once per node. */
		if (match < 0)
			spank_get_item(sp, S_TASK_GLOBAL_ID, &rank);
		else
			rank = (uint32_t)task_id;
		if (rank == 0 && why[0] && st->user.set && ntasks > 1)
			_say_shim_off(job_id, node, why);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, ISLE_RUNDIR_PLAN);
	/*
	 * Slurm's task layout against the plan's rank -> node map (26.05
	 * orders nodes by topology/isle's ranks, 24.11 by the hostlist, and
	 * the prolog told the agent which). The task still gets the plan: the
	 * other nodes may agree, and all ranks must decide alike; the shim
	 * compares SLURMD_NODENAME with the plan in one collective and falls
	 * back to plain MPI on every rank. Said once per disagreeing node.
	 */
	if (task_id == 0 &&
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &task_gid) == ESPANK_SUCCESS &&
	    !_plan_rank_node(plan_text, path, task_gid, plan_node,
			     sizeof(plan_node)) &&
	    strcmp(plan_node, node)) {
		snprintf(why, sizeof(why),
			 "Slurm started task %u on %s, the plan puts rank %u "
			 "on %s: the step's task layout is not the plan's "
			 "rank order (TopologyPlugin, SelectTypeParameters "
			 "CR_NO_DIST_TOPO_BLOCK or -m/--distribution)",
			 task_gid, node, task_gid, plan_node);
		_say_shim_off(job_id, node, why);
	}
	spank_setenv(sp, ISLE_PLAN_ENV, path, 1);
	/* Where the shim's report waits for the epilog, unless the job
	 * wants it elsewhere. */
	if (st->policy.reports_dir[0]) {
		char step[32];

		isle_report_step_name(step_id, step, sizeof(step));
		snprintf(path, sizeof(path), "%s/%s/%s", dir,
			 ISLE_RUNDIR_REPORT_DIR, step);
		spank_setenv(sp, ISLE_REPORT_FILE_ENV, path, 0);
	}
	if (!isle_rundir_read(dfd, ISLE_RUNDIR_NCCL_XML, MAX_XML_FILE, &text,
			      NULL, 0)) {
		snprintf(path, sizeof(path), "%s/%s", dir,
			 ISLE_RUNDIR_NCCL_XML);
		spank_setenv(sp, "NCCL_TOPO_FILE", path, 0);
		free(text);
		text = NULL;
	}
	if (!isle_rundir_read(dfd, ISLE_RUNDIR_NCCL_ENV, MAX_SMALL_FILE, &text,
			      NULL, 0))
		_export_nccl_env(sp, text);
	/* A single task has nobody to reduce with. */
	if (!st->policy.shim_path[0] || ntasks < 2)
		goto out;
	/*
	 * Checked here, in the task: container plugins listed before isle
	 * (pyxis) have set up the step's mount namespace by now, so a path
	 * the step cannot see is never preloaded (ld.so would print an error
	 * for every process). One notice per step, from its first task.
	 */
	if (access(st->policy.shim_path, R_OK)) {
		uint32_t global_id = 1;

		if (spank_get_item(sp, S_TASK_GLOBAL_ID, &global_id) ==
			ESPANK_SUCCESS &&
		    global_id == 0) {
			char msg[sizeof(st->policy.shim_path) + 160];

			snprintf(msg, sizeof(msg),
				 "%s is not visible in this step (a container "
				 "without isle's mount, see docs/admin.md, or "
				 "missing on this node): not preloaded",
				 st->policy.shim_path);
			_say_shim_off(job_id, node, msg);
		}
		goto out;
	}
	if (_preload_shim(sp, st->policy.shim_path) && task_id == 0)
		_say_shim_off(job_id, node,
			      "LD_PRELOAD is too long to add the shim to");
out:
	free(text);
	free(plan_text);
	if (dfd >= 0)
		close(dfd);
	return 0;
}
