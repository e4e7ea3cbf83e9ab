/*
 * spank_job.c - job prolog / epilog (job script context: root, once per node
 * of the job, in a `slurmstepd spank prolog|epilog` process).
 *
 * The prolog runs `isle-agent plan write` for the job's GPUs on this node;
 * the epilog runs `isle-agent plan remove`. The agent is a separate program
 * so that a bad cluster file or a crash there costs the job its shim, never
 * a slurmstepd. Neither callback ever fails: a failing SPANK prolog drains
 * the node, and a job without a plan simply runs with the shim off (the
 * agent leaves the reason in the job's run directory and spank_remote.c
 * prints it to the job's stderr).
 *
 * Option callbacks do not run in this context, so the options are read back
 * from the job's SPANK environment with spank_option_getopt.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* slurm_load_job() takes a job id on 24.11 and a slurm_step_id_t from 26.05
 * on; Slurm's own compatibility wrappers accept the job id on both. */
#define SLURM_BACKWARD_COMPAT
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "spank_isle.h"

/* The agent reads one JSON file and writes three small ones. */
#define AGENT_FIXED_ARGS 32
/* The GRES detail RPC: a controller that does not answer costs this. */
#define GRES_TIMEOUT_S 20
/* The agent's limit unless plugstack.conf sets agent_timeout=. */
#define AGENT_TIMEOUT_S 60
#define DEFAULT_AGENT "/usr/local/bin/isle-agent"
#define DEFAULT_RUNDIR "/run/isle"
/* _gres_child's line for the rank order; node names have no '!'. */
#define RANK_ORDER_LINE "!rank-order="

/* Fills st->user and st->job from the job's SPANK environment. */
static int _load_options(spank_t sp, struct isle__spank_state *st)
{
	char err[256];

	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		struct spank_option o = {
		    .name = (char *)isle_job_opt_desc(opt)->name,
		    .has_arg = 1,
		    .val = opt};
		char *val = NULL;

		if (spank_option_getopt(sp, &o, &val) != ESPANK_SUCCESS || !val)
			continue;
		if (isle_job_opt_parse(&st->user, opt, val, err, sizeof(err))) {
			slurm_error("isle: %s", err);
			return -1;
		}
	}
	if (isle__spank_resolve(&st->policy, &st->user, &st->job, err,
				sizeof(err))) {
		slurm_error("isle: %s", err);
		return -1;
	}
	st->resolved = 1;
	return 0;
}

int isle__spank_rundir(const struct isle__spank_policy *p, const char *node,
		       char *buf, size_t len)
{
	const char *s = p->rundir[0] ? p->rundir : DEFAULT_RUNDIR;
	size_t o = 0;

	for (; *s; s++) {
		const char *add = NULL;
		char one[2] = {*s, '\0'};

		if (s[0] == '%' && s[1] == 'n') {
			if (!node || !*node || strchr(node, '/'))
				return -EINVAL;
			add = node;
			s++;
		} else {
			add = one;
		}
		if (o + strlen(add) >= len)
			return -ENAMETOOLONG;
		memcpy(buf + o, add, strlen(add));
		o += strlen(add);
	}
	buf[o] = '\0';
	return 0;
}

/* The cluster file: the admin's, else proto's default (beside slurm.conf),
 * where topology/isle looks by default. */
static int _cluster_path(const struct isle__spank_policy *p, char *buf,
			 size_t len)
{
	int n;

	if (!p->cluster_path[0])
		return isle_cluster_file_path(NULL, buf, len);
	n = snprintf(buf, len, "%s", p->cluster_path);
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/*
 * In a child process: "NODE=IDX" lines on fd for every node of the job,
 * from the allocation as the controller granted it (gres_detail_str[], one
 * per node in the order of the job's node list). The prolog process has no
 * Slurm API set up (slurm_load_job there dies on "No hash plugins loaded",
 * which fails the prolog and drains the node), so the child sets it up and
 * anything fatal costs the child only.
 */
/*
 * The order in which Slurm gives a multi-node job's nodes their task ids,
 * as `isle-agent plan write --rank-order` takes it. From 26.05 on, cons_tres
 * asks the topology plugin for node ranks (topology_p_get_rank) and the
 * step layout follows them unless SelectTypeParameters has
 * CR_NO_DIST_TOPO_BLOCK; topology/isle ranks by isle_topo_rank_order. 24.11
 * and 25.11 (no get_rank) lay tasks out in hostlist order. With
 * per-partition topologies (topology.yaml) TopologyPlugin names none and
 * hostlist is assumed; the task-side check (spank_remote.c) names any
 * disagreement.
 */
static const char *_rank_order(const slurm_conf_t *conf)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	if (conf && conf->topology_plugin &&
	    strstr(conf->topology_plugin, "isle") &&
	    (!conf->select_type || strstr(conf->select_type, "cons_tres")) &&
	    !(conf->select_type_param & SELECT_NO_DIST_TOPO_BLOCK))
		return "topology";
#else
	(void)conf;
#endif
	return "hostlist";
}

static void _gres_child(uint32_t job_id, int fd)
{
	job_info_msg_t *msg = NULL;
	slurm_conf_t *conf = NULL;
	hostlist_t *hl;
	char idx[512], *host;
	const job_info_t *j;

	slurm_init(NULL);
	/* First line: the rank order (RANK_ORDER_LINE), then NODE=IDX. */
	if (slurm_load_ctl_conf((time_t)0, &conf) != SLURM_SUCCESS)
		conf = NULL;
	dprintf(fd, RANK_ORDER_LINE "%s\n", _rank_order(conf));
	if (slurm_load_job(&msg, job_id, SHOW_DETAIL) != SLURM_SUCCESS ||
	    !msg || msg->record_count != 1 || !msg->job_array[0].nodes) {
		dprintf(STDERR_FILENO, "no job record from slurmctld: %s\n",
			slurm_strerror(errno));
		_exit(1);
	}
	j = &msg->job_array[0];
	hl = slurm_hostlist_create(j->nodes);
	if (!hl || slurm_hostlist_count(hl) != (int)j->gres_detail_cnt) {
		dprintf(STDERR_FILENO, "GRES detail for %u of the nodes %s\n",
			j->gres_detail_cnt, j->nodes);
		_exit(1);
	}
	for (uint32_t i = 0; i < j->gres_detail_cnt; i++) {
		host = slurm_hostlist_shift(hl);
		if (!host ||
		    isle__gres_gpu_idx(j->gres_detail_str[i], idx, sizeof(idx)))
			_exit(1);
		if (idx[0])
			dprintf(fd, "%s=%s\n", host, idx);
		free(host);
	}
	_exit(0);
}

/*
 * "--rank-order ORDER" and "--node-gpus NODE=IDX" for every node of the
 * job (_gres_child): the prolog's SLURM_JOB_GPUS is this node's only, and
 * plans written from it on nodes granted other indices disagree (the ranks
 * then pick different algorithms). Returns the number of strings in *out (freed
 * by the caller), 0 when the controller could not say (the plans then use
 * SLURM_JOB_GPUS everywhere, and the shim turns itself off if they differ), -1
 * on no memory.
 */
static int _node_gpu_args(uint32_t job_id, char ***out)
{
	char *buf = NULL, *line, *save = NULL, **v = NULL;
	size_t len = 0, cap = 0;
	time_t deadline = time(NULL) + GRES_TIMEOUT_S;
	int pfd[2], status = 0, n = 0, lines = 0;
	pid_t pid;

	*out = NULL;
	if (pipe2(pfd, O_CLOEXEC))
		return 0;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return 0;
	}
	if (pid == 0) {
		close(pfd[0]);
		_gres_child(job_id, pfd[1]);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int left = (int)(deadline - time(NULL));
		ssize_t got;

		if (left <= 0 || poll(&p, 1, left * 1000) == 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (len + 4096 > cap) {
			char *nb = realloc(buf, cap ? 2 * cap : 8192);

			if (!nb) {
				kill(pid, SIGKILL);
				n = -1;
				break;
			}
			buf = nb;
			cap = cap ? 2 * cap : 8192;
		}
		got = read(pfd[0], buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n < 0 || !WIFEXITED(status) || WEXITSTATUS(status) || !buf) {
		if (n == 0)
			slurm_info("isle: job %u: no GPU indices per node from "
				   "slurmctld; every node's plan uses this "
				   "node's",
				   job_id);
		goto out;
	}
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	v = calloc(2 * (size_t)lines + 1, sizeof(*v));
	if (!v) {
		n = -1;
		goto out;
	}
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int order =
		    !strncmp(line, RANK_ORDER_LINE, strlen(RANK_ORDER_LINE));

		if (!(v[n] = strdup(order ? "--rank-order" : "--node-gpus")) ||
		    !(v[n + 1] = strdup(order ? line + strlen(RANK_ORDER_LINE)
					      : line))) {
			n = -1;
			break;
		}
		n += 2;
	}
out:
	if (n <= 0) {
		for (int i = 0; v && v[i]; i++)
			free(v[i]);
		free(v);
		v = NULL;
		n = n < 0 ? -1 : 0;
	}
	free(buf);
	*out = v;
	return n;
}

/* Logs each line the agent wrote to stderr through Slurm's log. */
static void _log_lines(char *buf, size_t *used, int flush)
{
	char *nl, *s = buf;

	while ((nl = memchr(s, '\n', *used - (s - buf)))) {
		*nl = '\0';
		if (*s)
			slurm_info("isle: %s", s);
		s = nl + 1;
	}
	*used -= s - buf;
	memmove(buf, s, *used);
	if (flush && *used) {
		buf[*used] = '\0';
		slurm_info("isle: %s", buf);
		*used = 0;
	}
}

/*
 * Runs the agent (argv[0] is its absolute path) with a clean environment,
 * logging its stderr, and waits at most timeout_s. Returns its exit
 * status, or -1 if it could not run or was killed.
 */
static int _run_agent(char *const argv[], int timeout_s)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
				     NULL};
	char buf[1024];
	size_t used = 0;
	time_t deadline = time(NULL) + timeout_s;
	int pfd[2], status = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		dup2(pfd[1], STDERR_FILENO);
		/* slurmstepd's own descriptors are none of the agent's
		 * business. */
		close_range(3, ~0U, 0);
		execve(argv[0], argv, envp);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int left = (int)(deadline - time(NULL));
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left * 1000) == 0) {
			slurm_error("isle: %s timed out after %d s; killed",
				    argv[0], timeout_s);
			kill(pid, SIGKILL);
			break;
		}
		n = read(pfd[0], buf + used, sizeof(buf) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += n;
		_log_lines(buf, &used, used == sizeof(buf) - 1);
	}
	_log_lines(buf, &used, 1);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *_agent(const struct isle__spank_policy *p)
{
	return p->agent_path[0] ? p->agent_path : DEFAULT_AGENT;
}

static int _agent_timeout(const struct isle__spank_policy *p)
{
	return p->agent_timeout_s > 0 ? p->agent_timeout_s : AGENT_TIMEOUT_S;
}

int isle__spank_plans_enabled(const struct isle__spank_policy *p)
{
	return p->agent_path[0] || !access(DEFAULT_AGENT, X_OK);
}

/*
 * The codec for the network levels: the user's --isle-compress, else the
 * admin's default_compress when it is not "none"; NULL leaves the choice to
 * the per-tier codec_policy.
 */
static const char *_compress(const struct isle__spank_state *st, char *buf,
			     size_t len)
{
	if ((st->user.set & (1u << ISLE_OPT_COMPRESS)) ||
	    st->job.codec.kind != ISLE_CODEC_NONE)
		return isle_job_opt_format(&st->job, ISLE_OPT_COMPRESS, buf,
					   len);
	return NULL;
}

/* `isle-agent plan remove` for the job's run dir on this node. */
static void _remove_plan(const struct isle__spank_state *st, uint32_t job_id,
			 const char *rundir)
{
	char jobid[16];
	char *argv[8];
	int rc;

	snprintf(jobid, sizeof(jobid), "%u", job_id);
	argv[0] = (char *)_agent(&st->policy);
	argv[1] = "plan";
	argv[2] = "remove";
	argv[3] = "--job";
	argv[4] = jobid;
	argv[5] = "--rundir";
	argv[6] = (char *)rundir;
	argv[7] = NULL;
	rc = _run_agent(argv, _agent_timeout(&st->policy));
	if (rc)
		slurm_error("isle: job %u: %s plan remove failed (status %d)",
			    job_id, argv[0], rc);
}

/*
 * A directory of this job id left from before (a crash, or an id used
 * again after the controller's state was wiped) must never reach the
 * job's tasks, whatever happens next: the prolog removes it first, in
 * process (proto's removal: no links followed, no mount crossed), since
 * the agent may be the very thing that fails.
 */
static void _clear_leftover(uint32_t job_id, const char *rundir)
{
	char jobid[16], err[512];
	int rootfd;

	snprintf(jobid, sizeof(jobid), "%u", job_id);
	rootfd = isle_rundir_open(rundir, 0, err, sizeof(err));
	if (rootfd == -ENOENT)
		return;
	if (rootfd < 0) {
		slurm_error("isle: job %u: %s", job_id, err);
		return;
	}
	if (faccessat(rootfd, jobid, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		slurm_info("isle: job %u: removing a leftover %s/%s", job_id,
			   rundir, jobid);
		if (isle_rundir_remove(rootfd, jobid, err, sizeof(err)))
			slurm_error("isle: job %u: %s", job_id, err);
	}
	close(rootfd);
}

int isle__spank_job_prolog(spank_t sp, struct isle__spank_state *st)
{
	const char *node = getenv("SLURMD_NODENAME");
	const char *nodes = getenv("SLURM_JOB_NODELIST");
	const char *gpus = getenv("SLURM_JOB_GPUS");
	char rundir[512], cluster[512], jobid[16], uid[16], codec[64];
	char **argv = NULL, **node_gpus = NULL;
	uint32_t job_id = 0;
	uid_t job_uid = 0;
	int ac = 0, rc, nng = 0;

	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &job_uid) != ESPANK_SUCCESS) {
		slurm_error("isle: prolog: no job id or uid; no plan");
		return 0;
	}
	if (!isle__spank_plans_enabled(&st->policy))
		return 0; /* and the tasks look for none */
	if (!node ||
	    isle__spank_rundir(&st->policy, node, rundir, sizeof(rundir))) {
		slurm_error("isle: job %u: bad rundir= in plugstack.conf, or "
			    "no SLURMD_NODENAME; no plan",
			    job_id);
		return 0;
	}
	_clear_leftover(job_id, rundir);
	if (_load_options(sp, st)) {
		slurm_error("isle: job %u: options unreadable; no plan",
			    job_id);
		goto out;
	}
	/* Shim off, or not a GPU job here: nothing to plan, no message. */
	if (st->job.shim == ISLE_SHIM_OFF || !gpus || !*gpus || !nodes ||
	    !*nodes)
		goto out;
	if (_cluster_path(&st->policy, cluster, sizeof(cluster))) {
		slurm_error("isle: job %u: bad cluster= in plugstack.conf; no "
			    "plan",
			    job_id);
		goto out;
	}
	snprintf(jobid, sizeof(jobid), "%u", job_id);
	snprintf(uid, sizeof(uid), "%u", (unsigned)job_uid);
	/* One node: SLURM_JOB_GPUS is all there is to know. */
	nng = strpbrk(nodes, ",[") ? _node_gpu_args(job_id, &node_gpus) : 0;
	argv = calloc(AGENT_FIXED_ARGS + (nng > 0 ? nng : 0), sizeof(*argv));
	if (nng < 0 || !argv) {
		slurm_error("isle: job %u: out of memory; no plan", job_id);
		nng = 0;
		goto out;
	}

	argv[ac++] = (char *)_agent(&st->policy);
	argv[ac++] = "plan";
	argv[ac++] = "write";
	argv[ac++] = "--job";
	argv[ac++] = jobid;
	argv[ac++] = "--nodes";
	argv[ac++] = (char *)nodes;
	argv[ac++] = "--gpus-per-node";
	argv[ac++] = (char *)gpus;
	argv[ac++] = "--node";
	argv[ac++] = (char *)node;
	argv[ac++] = "--cluster";
	argv[ac++] = cluster;
	argv[ac++] = "--rundir";
	argv[ac++] = rundir;
	argv[ac++] = "--uid";
	argv[ac++] = uid;
	if (_compress(st, codec, sizeof(codec))) {
		argv[ac++] = "--compress";
		argv[ac++] = codec;
	}
	if (st->policy.codec_policy[0]) {
		argv[ac++] = "--policy";
		argv[ac++] = (char *)st->policy.codec_policy;
	}
	for (int i = 0; i < nng; i++)
		argv[ac++] = node_gpus[i];
	argv[ac] = NULL;

	rc = _run_agent(argv, _agent_timeout(&st->policy));
	if (rc == 0) {
		slurm_verbose("isle: job %u: plan in %s/%u", job_id, rundir,
			      job_id);
		goto out;
	}
	if (rc == 1) { /* the reason is in the run dir for the job */
		slurm_info("isle: job %u: no plan on %s; the job runs without "
			   "the shim",
			   job_id, node);
		goto out;
	}
	slurm_error("isle: job %u: %s plan write failed (status %d); the job "
		    "runs without the shim",
		    job_id, argv[0], rc);
	_clear_leftover(job_id, rundir); /* what it may have left half done */
out:
	for (int i = 0; i < nng; i++)
		free(node_gpus[i]);
	free(node_gpus);
	free(argv);
	return 0;
}

/*
 * The shim's report, if the job left one on this node (rank 0's), into
 * root's reports directory, in process and before the run dir goes. What
 * the job wrote is hostile input: proto's collect reads it without
 * following links or blocking, size-bounded, owned by the job's uid.
 */
static void _collect_report(const struct isle__spank_state *st, uint32_t job_id,
			    uid_t uid, const char *rundir)
{
	struct isle_report r;
	char jobid[16], dir[600], err[1024];
	int dfd, rc;

	snprintf(jobid, sizeof(jobid), "%u", job_id);
	snprintf(dir, sizeof(dir), "%s/%s", rundir, jobid);
	dfd = isle_rundir_open_job(rundir, jobid, err, sizeof(err));
	if (dfd == -ENOENT)
		return;
	if (dfd < 0) {
		slurm_error("isle: job %u: shim report not collected: %s",
			    job_id, err);
		return;
	}
	rc = isle_report_collect(dfd, uid, dir, &r, err, sizeof(err));
	close(dfd);
	if (rc == -ENOENT)
		return;
	if (rc) {
		slurm_error("isle: job %u: shim report not collected: %s",
			    job_id, err);
		return;
	}
	if (isle_report_store(st->policy.reports_dir, job_id, &r,
			      st->policy.reports_keep, err, sizeof(err)))
		slurm_error("isle: job %u: shim report not stored: %s", job_id,
			    err);
	else
		slurm_verbose("isle: job %u: shim report stored in %s", job_id,
			      st->policy.reports_dir);
}

int isle__spank_job_epilog(spank_t sp, struct isle__spank_state *st)
{
	const char *node = getenv("SLURMD_NODENAME");
	char rundir[512];
	uint32_t job_id = 0;
	uid_t uid = 0;

	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS)
		return 0;
	/* Whatever the options say now, clean up: the prolog may have run
	 * with other ones (a requeued job). */
	if (!node || !isle__spank_plans_enabled(&st->policy) ||
	    isle__spank_rundir(&st->policy, node, rundir, sizeof(rundir)))
		return 0;
	if (st->policy.reports_dir[0] &&
	    spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
		_collect_report(st, job_id, uid, rundir);
	if (getenv("SLURM_JOB_GPUS"))
		_remove_plan(st, job_id, rundir);
	else
		_clear_leftover(job_id, rundir);
	return 0;
}
