/*
 * main.c - isle-exporter: options, the refresher thread and the HTTP
 * server (libmicrohttpd). See isle_exporter.h and docs/exporter.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "isle_exporter.h"

extern char **environ;

#define DEFAULT_LISTEN "127.0.0.1:9477"
#define MAX_CMD_OUTPUT (1024L * 1024 * 1024)

struct opts {
	const char *listen, *state_dir, *cluster, *scontrol, *port_file;
	const char *reports_dir;
	const char *topology_from, *nodes_from;
	double ttl, cmd_timeout;
	unsigned max_conn, max_per_ip, conn_timeout;
	int once;
	enum isle_exp_format format;
};

struct app {
	struct opts o;
	/* The rendered metrics, swapped in by the refresher. */
	pthread_mutex_t lock;
	char *text[2];
	size_t len[2];
	/* Refresher thread only. */
	struct isle_exp_topo st;
	int have_st;
	struct isle_exp_nodes nodes;
	int have_nodes;
	isle_topo *topo;
	isle_place_ctx *place;
	char topo_path[PATH_MAX];
	struct stat topo_stat;
	isle_exp_store *store;
	isle_exp_store *reports;
	struct isle_exp_source src[ISLE_EXP_SRC_COUNT];
	char last_err[ISLE_EXP_SRC_COUNT][512];
	/* Wakes the refresher: stop, or SIGHUP. */
	pthread_mutex_t wake_lock;
	pthread_cond_t wake;
	volatile int stop;
	int kick;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- commands ------------------------------------------------------------ */

/*
 * Runs argv (PATH lookup) with stdin from /dev/null, collecting stdout
 * into *out (malloc'ed, NUL-terminated). Killed after timeout_s: a hung
 * slurmctld must not hang the refresher, nor *cancel (set at exit) wait
 * for it. 0 or a negative errno with err.
 */
static int run_cmd(char *const argv[], double timeout_s,
		   const volatile int *cancel, char **out, size_t *outlen,
		   char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc = 0, status;
	size_t cap = 65536, len = 0, elen = 0;
	char *buf = malloc(cap), ebuf[256] = "";
	double deadline = mono_s() + timeout_s;
	pid_t pid;

	*out = NULL;
	if (!buf || pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		rc = buf ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: %s", argv[0], strerror(-rc));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (rc) {
		snprintf(err, errlen, "%s: %s", argv[0], strerror(rc));
		rc = -rc;
		goto out;
	}
	for (int open_fds = 2; open_fds > 0;) {
		struct pollfd p[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
		double left = deadline - mono_s();
		int n;

		if (left <= 0 || *cancel) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			snprintf(err, errlen, "%s: no answer in %g s (killed)",
				 argv[0], timeout_s);
			rc = -ETIMEDOUT;
			goto out;
		}
		n = poll(p, 2, left > 0.2 ? 200 : (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto out;
		}
		if (p[0].revents) {
			ssize_t r;

			if (cap - len < 65536) {
				char *nb;

				if (cap >= (size_t)MAX_CMD_OUTPUT ||
				    !(nb = realloc(buf, cap * 2))) {
					kill(pid, SIGKILL);
					waitpid(pid, NULL, 0);
					snprintf(err, errlen,
						 "%s: output too large",
						 argv[0]);
					rc = -EIO;
					goto out;
				}
				buf = nb;
				cap *= 2;
			}
			r = read(po[0], buf + len, cap - len - 1);
			if (r > 0)
				len += (size_t)r;
			else if (r == 0 || errno != EINTR) {
				p[0].fd = -1;
				close(po[0]);
				po[0] = -1;
				open_fds--;
			}
		}
		if (pe[0] >= 0 && p[1].revents) {
			char tmp[1024];
			ssize_t r = read(pe[0], tmp, sizeof(tmp));

			if (r > 0) {
				size_t k = (size_t)r;

				if (k > sizeof(ebuf) - 1 - elen)
					k = sizeof(ebuf) - 1 - elen;
				memcpy(ebuf + elen, tmp, k);
				elen += k;
				ebuf[elen] = '\0';
			} else if (r == 0 || errno != EINTR) {
				close(pe[0]);
				pe[0] = -1;
				open_fds--;
			}
		}
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		ebuf[strcspn(ebuf, "\n")] = '\0';
		snprintf(err, errlen, "%s %s: failed%s%s", argv[0],
			 argv[1] ? argv[1] : "", ebuf[0] ? ": " : "", ebuf);
		rc = -EIO;
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	buf = NULL;
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	free(buf);
	return rc;
}

static int read_file(const char *path, char **out, size_t *outlen, char *err,
		     size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t cap = 65536, len = 0, r;
	char *buf;

	*out = NULL;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -ENOENT;
	}
	buf = malloc(cap);
	while (buf && (r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += r;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* Slurm's output of scontrol ARG..., or the file `from` instead. */
static int slurm_text(struct app *a, const char *from, char *const args[],
		      char **out, size_t *len, char *err, size_t errlen)
{
	char *argv[8] = {(char *)a->o.scontrol};
	int i;

	if (from)
		return read_file(from, out, len, err, errlen);
	for (i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	return run_cmd(argv, a->o.cmd_timeout, &a->stop, out, len, err, errlen);
}

/* --- refresh ------------------------------------------------------------- */

static void src_done(struct app *a, int src, int rc, const char *err, double t0)
{
	struct isle_exp_source *s = &a->src[src];
	int was_up = s->up;

	s->seconds = mono_s() - t0;
	s->up = rc == 0;
	if (rc == 0) {
		s->last_success = now_s();
		if (!was_up && a->last_err[src][0])
			fprintf(stderr, "isle-exporter: %s: reads again\n",
				isle_exp_source_name(src));
		a->last_err[src][0] = '\0';
		return;
	}
	s->errors++;
	/* Said once per error, not once per refresh. */
	if (strcmp(a->last_err[src], err)) {
		fprintf(stderr, "isle-exporter: %s: %s\n",
			isle_exp_source_name(src), err);
		snprintf(a->last_err[src], sizeof(a->last_err[src]), "%s", err);
	}
}

static void refresh_topology(struct app *a)
{
	static char *const args[] = {"show", "topology", NULL};
	char err[512] = "", *text = NULL;
	struct isle_exp_topo st;
	double t0 = mono_s();
	size_t len;
	int rc;

	rc = slurm_text(a, a->o.topology_from, args, &text, &len, err,
			sizeof(err));
	if (!rc)
		rc = isle_exp_topo_parse(text, &st, err, sizeof(err));
	free(text);
	if (!rc) {
		/* A failed read keeps the last good view (with source_up 0):
		 * a slurmctld restart does not blank the dashboards. */
		isle_exp_topo_free(&a->st);
		a->st = st;
		a->have_st = 1;
	}
	src_done(a, ISLE_EXP_SRC_TOPOLOGY, rc, err, t0);
}

static void refresh_nodes(struct app *a)
{
	static char *const args[] = {"show", "node", "--json", NULL};
	char err[512] = "", *text = NULL;
	struct isle_exp_nodes n;
	double t0 = mono_s();
	size_t len;
	int rc;

	rc =
	    slurm_text(a, a->o.nodes_from, args, &text, &len, err, sizeof(err));
	if (!rc)
		rc = isle_exp_nodes_parse(text, len,
					  a->o.nodes_from
					      ? a->o.nodes_from
					      : "scontrol show node --json",
					  &n, err, sizeof(err));
	free(text);
	if (!rc) {
		isle_exp_nodes_free(&a->nodes);
		a->nodes = n;
		a->have_nodes = 1;
	}
	src_done(a, ISLE_EXP_SRC_NODES, rc, err, t0);
}

/* The cluster file: --cluster, else the one slurmctld loaded (File= of
 * `scontrol show topology`), else proto's default beside slurm.conf.
 * Loaded again when it changes. */
static void refresh_cluster_file(struct app *a)
{
	char path[PATH_MAX], err[PATH_MAX + 256] = "";
	double t0 = mono_s();
	struct stat sb;
	isle_topo *t;
	int rc = 0;

	if (a->o.cluster)
		snprintf(path, sizeof(path), "%s", a->o.cluster);
	else if (a->have_st && a->st.file && a->st.file[0])
		snprintf(path, sizeof(path), "%s", a->st.file);
	else if ((rc = isle_cluster_file_path(NULL, path, sizeof(path))))
		snprintf(err, sizeof(err), "cluster file path too long");
	if (!rc && stat(path, &sb)) {
		rc = -errno;
		snprintf(err, sizeof(err), "%s: %s", path, strerror(errno));
	}
	if (!rc && a->topo && !strcmp(path, a->topo_path) &&
	    sb.st_ino == a->topo_stat.st_ino &&
	    sb.st_size == a->topo_stat.st_size &&
	    sb.st_mtim.tv_sec == a->topo_stat.st_mtim.tv_sec &&
	    sb.st_mtim.tv_nsec == a->topo_stat.st_mtim.tv_nsec) {
		src_done(a, ISLE_EXP_SRC_CLUSTER_FILE, 0, "", t0);
		return;
	}
	if (!rc)
		rc = isle_topo_load(path, &t, err, sizeof(err));
	/* A file that no longer loads leaves no model: no fragmentation
	 * rather than a stale one. */
	isle_place_destroy(a->place);
	isle_topo_destroy(a->topo);
	a->place = NULL;
	a->topo = NULL;
	if (!rc) {
		a->topo = t;
		a->place = isle_place_create(t, NULL);
		if (!a->place) {
			rc = -ENOMEM;
			snprintf(err, sizeof(err), "%s: no engine context",
				 path);
		}
		snprintf(a->topo_path, sizeof(a->topo_path), "%s", path);
		a->topo_stat = sb;
	}
	src_done(a, ISLE_EXP_SRC_CLUSTER_FILE, rc, err, t0);
}

/* StateSaveLocation: --state-dir, $ISLE_STATE_DIR, else slurmctld's own
 * configuration (`scontrol show config`). */
static int state_dir(struct app *a, char *dir, size_t len, char *err,
		     size_t errlen)
{
	static char *const args[] = {"show", "config", NULL};
	const char *env = getenv("ISLE_STATE_DIR");
	char *text = NULL, *p;
	size_t n;
	int rc;

	if (a->o.state_dir || (env && *env)) {
		snprintf(dir, len, "%s", a->o.state_dir ? a->o.state_dir : env);
		return 0;
	}
	if ((rc = slurm_text(a, NULL, args, &text, &n, err, errlen)))
		return rc;
	for (p = text; p && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "StateSaveLocation", 17)) {
			char *v = strchr(p, '=');

			if (!v)
				break;
			v++;
			while (*v == ' ')
				v++;
			snprintf(dir, len, "%.*s", (int)strcspn(v, " \n"), v);
			free(text);
			return 0;
		}
	free(text);
	snprintf(err, errlen, "scontrol show config: no StateSaveLocation");
	return -ENOENT;
}

static void refresh_store(struct app *a)
{
	char dir[PATH_MAX], rdir[PATH_MAX], err[PATH_MAX + 256] = "";
	double t0 = mono_s();
	int rc = 0;

	if (!a->store) {
		rc = state_dir(a, dir, sizeof(dir), err, sizeof(err));
		if (!rc && (rc = isle_record_dir(dir, rdir, sizeof(rdir))))
			snprintf(err, sizeof(err), "%s: path too long", dir);
		if (!rc && !(a->store = isle_exp_store_create(rdir)))
			rc = -ENOMEM;
	}
	if (!rc) {
		rc = isle_exp_store_scan(a->store, err, sizeof(err));
		/* No directory yet: no job has started under topology/isle. */
		if (rc == -ENOENT)
			rc = 0;
	}
	src_done(a, ISLE_EXP_SRC_STORE, rc, err, t0);
}

/* New reports read per refresh: a directory flooded with files is worked
 * through over several refreshes, each of bounded time. */
#define REPORTS_PER_SCAN 5000

static void refresh_reports(struct app *a)
{
	char err[PATH_MAX + 256] = "";
	double t0 = mono_s();
	int rc = 0;

	if (!a->o.reports_dir)
		return;
	if (!a->reports && !(a->reports = isle_exp_reports_create(
				 a->o.reports_dir, REPORTS_PER_SCAN)))
		rc = -ENOMEM;
	if (!rc) {
		rc = isle_exp_store_scan(a->reports, err, sizeof(err));
		/* No directory yet: no job has left a report. */
		if (rc == -ENOENT)
			rc = 0;
	}
	src_done(a, ISLE_EXP_SRC_REPORTS, rc, err, t0);
}

static void refresh(struct app *a)
{
	struct isle_exp_snapshot s = {.fragmentation = -1.0};
	char *text[2];
	size_t len[2];

	refresh_topology(a);
	refresh_nodes(a);
	refresh_cluster_file(a);
	refresh_store(a);
	refresh_reports(a);
	s.slurm_topo = a->have_st ? &a->st : NULL;
	s.nodes = a->have_nodes ? &a->nodes : NULL;
	s.store = a->store ? isle_exp_store_stats(a->store) : NULL;
	s.reports = a->reports ? isle_exp_store_stats(a->reports) : NULL;
	if (a->topo && a->src[ISLE_EXP_SRC_TOPOLOGY].up &&
	    a->src[ISLE_EXP_SRC_NODES].up)
		s.fragmentation = isle_exp_fragmentation(a->place, a->topo,
							 s.slurm_topo, s.nodes);
	memcpy(s.src, a->src, sizeof(s.src));
	text[0] = isle_exp_render(&s, ISLE_EXP_OPENMETRICS, &len[0]);
	text[1] = isle_exp_render(&s, ISLE_EXP_TEXT, &len[1]);
	if (!text[0] || !text[1]) {
		fprintf(stderr, "isle-exporter: out of memory rendering\n");
		free(text[0]);
		free(text[1]);
		return;
	}
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < 2; i++) {
		free(a->text[i]);
		a->text[i] = text[i];
		a->len[i] = len[i];
	}
	pthread_mutex_unlock(&a->lock);
}

static void *refresher(void *arg)
{
	struct app *a = arg;

	for (;;) {
		struct timespec ts;
		double until;

		refresh(a);
		until = now_s() + a->o.ttl;
		ts.tv_sec = (time_t)until;
		ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
		pthread_mutex_lock(&a->wake_lock);
		while (!a->stop && !a->kick &&
		       pthread_cond_timedwait(&a->wake, &a->wake_lock, &ts) !=
			   ETIMEDOUT)
			;
		a->kick = 0;
		if (a->stop) {
			pthread_mutex_unlock(&a->wake_lock);
			return NULL;
		}
		pthread_mutex_unlock(&a->wake_lock);
	}
}

/* --- HTTP ---------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *ctype, char *body, size_t len)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result msg(struct MHD_Connection *c, unsigned status,
			   const char *text)
{
	char *b = strdup(text);

	return b ? reply(c, status, "text/plain; charset=utf-8", b, strlen(b))
		 : MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	struct app *a = cls;
	enum isle_exp_format f;
	char *body;
	size_t len;

	(void)version;
	(void)upload;
	(void)con_cls;
	/* A request body is read and dropped (MHD bounds it by the
	 * connection's memory limit); the answer goes on the first call. */
	*upload_len = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return msg(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			   "only GET and HEAD\n");
	if (!strcmp(url, "/"))
		return msg(c, MHD_HTTP_OK,
			   "isle-exporter: metrics at /metrics\n");
	if (strcmp(url, "/metrics"))
		return msg(c, MHD_HTTP_NOT_FOUND, "not found\n");
	f = isle_exp_negotiate(MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
	pthread_mutex_lock(&a->lock);
	len = a->len[f];
	body = a->text[f] ? malloc(len ? len : 1) : NULL;
	if (body)
		memcpy(body, a->text[f], len);
	pthread_mutex_unlock(&a->lock);
	if (!body)
		return msg(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			   "no metrics yet: the first refresh is running\n");
	return reply(c, MHD_HTTP_OK,
		     f == ISLE_EXP_OPENMETRICS ? ISLE_EXP_CT_OPENMETRICS
					       : ISLE_EXP_CT_TEXT,
		     body, len);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fprintf(stderr, "isle-exporter: http: ");
	vfprintf(stderr, fmt, ap);
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (every address). */
static int parse_listen(const char *s, struct sockaddr_storage *ss,
			socklen_t *sl, char *err, size_t errlen)
{
	char host[256], *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
			*res;
	const char *h;
	int rc;

	if (strlen(s) >= sizeof(host) || !(port = strrchr(s, ':')) ||
	    !port[1]) {
		snprintf(err, errlen,
			 "--listen '%s': expected HOST:PORT, [IPV6]:PORT or "
			 ":PORT",
			 s);
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(port - s), s);
	h = host;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		h = host + 1;
	}
	rc = getaddrinfo(*h ? h : NULL, port + 1, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "--listen '%s': %s", s, gai_strerror(rc));
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int write_port_file(const char *path, unsigned port)
{
	char tmp[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		return -errno;
	fprintf(f, "%u\n", port);
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

/* --- options ------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: isle-exporter [options]\n"
	    "  Serves isle's placement quality as OpenMetrics on "
	    "http://ADDR/metrics.\n"
	    "  --listen ADDR         HOST:PORT, [IPV6]:PORT, :PORT for every "
	    "address\n"
	    "                        (default " DEFAULT_LISTEN
	    "; port 0 picks a free one)\n"
	    "  --port-file FILE      write the port listened on\n"
	    "  --ttl S               refresh period, seconds (default 10)\n"
	    "  --state-dir DIR       StateSaveLocation (default "
	    "$ISLE_STATE_DIR,\n"
	    "                        else `scontrol show config`)\n"
	    "  --reports-dir DIR     the shim's per-job reports "
	    "(plugstack.conf "
	    "reports=;\n"
	    "                        no shim metrics without it)\n"
	    "  --cluster FILE        cluster file (default: the one "
	    "slurmctld loaded)\n"
	    "  --scontrol PATH       scontrol to run (default: scontrol in "
	    "PATH)\n"
	    "  --command-timeout S   kill scontrol after S seconds "
	    "(default 10)\n"
	    "  --max-connections N   (default 64)\n"
	    "  --max-per-ip N        (default 16)\n"
	    "  --connection-timeout S  idle connections closed after S "
	    "(default 5)\n"
	    "  --topology-from FILE  read `scontrol show topology` text from "
	    "FILE\n"
	    "  --nodes-from FILE     read `scontrol show node --json` from "
	    "FILE\n"
	    "  --once[=FORMAT]       print one rendering (openmetrics or "
	    "text) and exit\n");
}

static int num(const char *opt, const char *v, double lo, double hi,
	       double *out)
{
	char *e;

	errno = 0;
	*out = strtod(v, &e);
	if (errno || e == v || *e || *out < lo || *out > hi) {
		fprintf(stderr,
			"isle-exporter: invalid %s '%s': expected a number "
			"from %g to %g\n",
			opt, v, lo, hi);
		return -EINVAL;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"port-file", required_argument, NULL, 'P'},
	    {"ttl", required_argument, NULL, 't'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"reports-dir", required_argument, NULL, 'R'},
	    {"cluster", required_argument, NULL, 'c'},
	    {"scontrol", required_argument, NULL, 'S'},
	    {"command-timeout", required_argument, NULL, 'T'},
	    {"max-connections", required_argument, NULL, 'm'},
	    {"max-per-ip", required_argument, NULL, 'i'},
	    {"connection-timeout", required_argument, NULL, 'C'},
	    {"topology-from", required_argument, NULL, 'y'},
	    {"nodes-from", required_argument, NULL, 'n'},
	    {"once", optional_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	double d;
	int c;

	*o = (struct opts){.listen = DEFAULT_LISTEN,
			   .scontrol = "scontrol",
			   .ttl = 10,
			   .cmd_timeout = 10,
			   .max_conn = 64,
			   .max_per_ip = 16,
			   .conn_timeout = 5};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->listen = optarg;
			break;
		case 'P':
			o->port_file = optarg;
			break;
		case 't':
			if (num("--ttl", optarg, 0.1, 86400, &o->ttl))
				return 2;
			break;
		case 's':
			o->state_dir = optarg;
			break;
		case 'R':
			o->reports_dir = optarg;
			break;
		case 'c':
			o->cluster = optarg;
			break;
		case 'S':
			o->scontrol = optarg;
			break;
		case 'T':
			if (num("--command-timeout", optarg, 0.1, 3600,
				&o->cmd_timeout))
				return 2;
			break;
		case 'm':
			if (num("--max-connections", optarg, 1, 100000, &d))
				return 2;
			o->max_conn = (unsigned)d;
			break;
		case 'i':
			if (num("--max-per-ip", optarg, 1, 100000, &d))
				return 2;
			o->max_per_ip = (unsigned)d;
			break;
		case 'C':
			if (num("--connection-timeout", optarg, 1, 3600, &d))
				return 2;
			o->conn_timeout = (unsigned)d;
			break;
		case 'y':
			o->topology_from = optarg;
			break;
		case 'n':
			o->nodes_from = optarg;
			break;
		case 'o':
			o->once = 1;
			if (optarg && !strcmp(optarg, "text"))
				o->format = ISLE_EXP_TEXT;
			else if (optarg && strcmp(optarg, "openmetrics")) {
				fprintf(stderr,
					"isle-exporter: invalid --once '%s': "
					"expected openmetrics or text\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "isle-exporter: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct app a = {0};
	struct sockaddr_storage ss;
	socklen_t sl;
	struct MHD_Daemon *d;
	pthread_t th;
	sigset_t sigs;
	char err[512];
	int rc, sig;

	rc = parse_opts(argc, argv, &a.o);
	if (rc)
		return rc == 1 ? 0 : 2;
	a.src[ISLE_EXP_SRC_REPORTS].off = !a.o.reports_dir;
	pthread_mutex_init(&a.lock, NULL);
	pthread_mutex_init(&a.wake_lock, NULL);
	pthread_cond_init(&a.wake, NULL);
	if (a.o.once) {
		refresh(&a);
		rc = a.text[a.o.format] ? 0 : 1;
		if (!rc)
			fwrite(a.text[a.o.format], 1, a.len[a.o.format],
			       stdout);
		goto out;
	}
	if (parse_listen(a.o.listen, &ss, &sl, err, sizeof(err))) {
		fprintf(stderr, "isle-exporter: %s\n", err);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
		(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, handle, &a, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	    NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, a.o.max_conn,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, a.o.max_per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, a.o.conn_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "isle-exporter: cannot listen on %s\n",
			a.o.listen);
		return 1;
	}
	{
		const union MHD_DaemonInfo *di =
		    MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
		unsigned port = di ? di->port : 0;

		fprintf(stderr, "isle-exporter: listening on %s (port %u)\n",
			a.o.listen, port);
		if (a.o.port_file &&
		    (rc = write_port_file(a.o.port_file, port))) {
			fprintf(stderr, "isle-exporter: %s: %s\n",
				a.o.port_file, strerror(-rc));
			MHD_stop_daemon(d);
			return 1;
		}
	}
	if ((rc = pthread_create(&th, NULL, refresher, &a))) {
		fprintf(stderr, "isle-exporter: no refresher thread: %s\n",
			strerror(rc));
		MHD_stop_daemon(d);
		return 1;
	}
	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		pthread_mutex_lock(&a.wake_lock);
		if (sig == SIGHUP)
			a.kick = 1;
		else
			a.stop = 1;
		pthread_cond_signal(&a.wake);
		pthread_mutex_unlock(&a.wake_lock);
		if (sig != SIGHUP)
			break;
	}
	pthread_join(th, NULL);
	MHD_stop_daemon(d);
	rc = 0;
out:
	free(a.text[0]);
	free(a.text[1]);
	isle_exp_topo_free(&a.st);
	isle_exp_nodes_free(&a.nodes);
	isle_exp_store_destroy(a.store);
	isle_exp_store_destroy(a.reports);
	isle_place_destroy(a.place);
	isle_topo_destroy(a.topo);
	return rc;
}
