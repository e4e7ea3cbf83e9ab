/*
 * report.c - the shim's per-job report (ISLE_REPORT_FILE, docs/comm-shim.md):
 * the one writer (plain stdio, run by the MPI and NCCL backends on rank 0)
 * and the one reader (json-c; the exporter, `islectl explain`, tests), and
 * the two places a report lives once a job has ended: the job's run
 * directory, read by root (isle_report_collect), and root's reports
 * directory (isle_report_store).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proto_priv.h"

int isle_report_class(uint64_t bytes)
{
	int k = 0;

	while (k < ISLE_REPORT_CLASSES - 1 &&
	       bytes >= isle_report_class_min(k + 1))
		k++;
	return k;
}

uint64_t isle_report_class_min(int k)
{
	return k <= 0 ? 0 : 256ull << (4 * (k - 1)); /* 256, 4Ki, 64Ki ... */
}

static const char *const path_names[ISLE_REPORT_PATHS] = {
    [ISLE_REPORT_SHIM] = "shim",
    [ISLE_REPORT_LIBRARY] = "library",
    [ISLE_REPORT_OMPI_RING] = "ompi:ring",
    [ISLE_REPORT_OMPI_RDOUBLING] = "ompi:rdoubling",
    [ISLE_REPORT_OMPI_RABENSEIFNER] = "ompi:rabenseifner",
    [ISLE_REPORT_OMPI_SEGRING] = "ompi:segring",
    [ISLE_REPORT_MPICH_NB] = "mpich:nb",
    [ISLE_REPORT_MPICH_SMP] = "mpich:smp",
    [ISLE_REPORT_MPICH_RDOUBLING] = "mpich:rdoubling",
    [ISLE_REPORT_MPICH_RSAG] = "mpich:rsag",
};

const char *isle_report_path_name(int p)
{
	return p >= 0 && p < ISLE_REPORT_PATHS ? path_names[p] : "?";
}

int isle_report_path_parse(const char *name)
{
	for (int p = 0; name && p < ISLE_REPORT_PATHS; p++)
		if (!strcmp(name, path_names[p]))
			return p;
	return -EINVAL;
}

/* The names of the bits of ran, as a JSON array's items. */
static void write_ran(FILE *f, unsigned ran)
{
	for (int p = 0; p < ISLE_REPORT_PATHS; p++)
		if (ran & (1u << p))
			fprintf(f, "%s\"%s\"",
				(ran & ((1u << p) - 1)) ? ", " : "",
				path_names[p]);
}

int isle_report_write(const struct isle_report *r, FILE *f)
{
	char num[32];
	int first = 1;

	fprintf(f, "{\"isle_report\": %d, \"api\": \"%s\", \"ranks\": %d,\n",
		ISLE_REPORT_VERSION, r->api, r->ranks);
	fprintf(f, " \"calls\": [\n");
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		fprintf(f,
			"  {\"min_bytes\": %" PRIu64 ", \"taken\": %" PRIu64
			", \"passed\": %" PRIu64 ", \"ran\": [",
			isle_report_class_min(k), r->taken[k], r->passed[k]);
		write_ran(f, r->ran[k]);
		fprintf(f, "]}%s\n", k < ISLE_REPORT_CLASSES - 1 ? "," : "");
	}
	fprintf(f, " ],\n \"tiers\": [");
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		int c1 = 1;

		if (!r->sent[t] && !r->library[t] && !r->codecs[t])
			continue;
		fprintf(f,
			"%s\n  {\"tier\": \"%s\", \"sent_bytes\": %" PRIu64
			", \"library_bytes\": %" PRIu64 ", \"codecs\": [",
			first ? "" : ",", isle_scope_name((isle_scope)t),
			r->sent[t], r->library[t]);
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r->codecs[t] & (1u << c)) {
				fprintf(
				    f, "%s\"%s\"", c1 ? "" : ", ",
				    isle_codec_kind_name((isle_codec_kind)c));
				c1 = 0;
			}
		fprintf(f, "]}");
		first = 0;
	}
	isle_fmt_double(num, sizeof(num), r->probe_s);
	fprintf(
	    f, "%s],\n \"probe\": {\"bytes\": %" PRIu64 ", \"seconds\": %s}}\n",
	    first ? "" : "\n ", r->probe_bytes, num);
	return ferror(f) ? -EIO : 0;
}

int isle_report_save(const struct isle_report *r, const char *path, char *err,
		     size_t errlen)
{
	char tmp[4352];
	FILE *f;
	int bad;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return errf(-ENAMETOOLONG, err, errlen,
			    "cannot write report %s: name too long", path);
	if (!(f = fopen(tmp, "we")))
		return errf(-errno, err, errlen, "cannot write report %s: %s",
			    tmp, strerror(errno));
	bad = isle_report_write(r, f) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		unlink(tmp);
		return errf(-EIO, err, errlen, "cannot write report %s", path);
	}
	return 0;
}

int isle_report_line(const struct isle_report *r, char *buf, size_t len)
{
	uint64_t taken = 0, passed = 0;
	int first = 1;
	size_t o;

	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		taken += r->taken[k];
		passed += r->passed[k];
	}
	o = (size_t)snprintf(buf, len,
			     "isle_report: %s, %d ranks: %" PRIu64
			     " allreduce taken, %" PRIu64 " passed through",
			     r->api, r->ranks, taken, passed);
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		if (!r->sent[t] && !r->library[t] && !r->codecs[t])
			continue;
		o += (size_t)snprintf(
		    buf + (o < len ? o : len), o < len ? len - o : 0,
		    "; %s %" PRIu64 " B sent (library %" PRIu64 " B)",
		    isle_scope_name((isle_scope)t), r->sent[t], r->library[t]);
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r->codecs[t] & (1u << c))
				o += (size_t)snprintf(
				    buf + (o < len ? o : len),
				    o < len ? len - o : 0, " %s",
				    isle_codec_kind_name((isle_codec_kind)c));
	}
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		if (!r->ran[k])
			continue;
		o += (size_t)snprintf(
		    buf + (o < len ? o : len), o < len ? len - o : 0,
		    "%s %" PRIu64 "+ B ", first ? "; ran" : ",",
		    isle_report_class_min(k));
		first = 0;
		for (int p = 0; p < ISLE_REPORT_PATHS; p++)
			if (r->ran[k] & (1u << p))
				o += (size_t)snprintf(
				    buf + (o < len ? o : len),
				    o < len ? len - o : 0, "%s%s",
				    (r->ran[k] & ((1u << p) - 1)) ? "+" : "",
				    path_names[p]);
	}
	o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0,
			      "; probe %" PRIu64 " B in %.3f s", r->probe_bytes,
			      r->probe_s);
	return (int)o;
}

/* ---------------------------------------------------------------- reader */

static int get(json_object *o, const char *key, json_type want, json_object **v)
{
	if (!json_object_object_get_ex(o, key, v) || !*v)
		return 0;
	if (json_object_get_type(*v) == want)
		return 1;
	return want == json_type_double &&
	       json_object_get_type(*v) == json_type_int;
}

static int get_u64(json_object *o, const char *key, uint64_t *out)
{
	json_object *v;
	int64_t x;

	if (!get(o, key, json_type_int, &v))
		return 0;
	errno = 0;
	x = json_object_get_int64(v);
	if (x < 0 || errno)
		return 0;
	*out = (uint64_t)x;
	return 1;
}

static int parse_obj(json_object *o, const char *name, struct isle_report *r,
		     char *err, size_t errlen)
{
	json_object *v, *e, *a;
	uint64_t u;
	size_t n;

#define BAD(path, what)                                                        \
	errf(-EINVAL, err, errlen, "%s: %s: %s", name, path, what)
	if (!json_object_is_type(o, json_type_object))
		return BAD("$", "expected an object");
	if (!get_u64(o, "isle_report", &u) || u != ISLE_REPORT_VERSION)
		return BAD("$.isle_report", "expected 1");
	if (!get(o, "api", json_type_string, &v) ||
	    (strcmp(json_object_get_string(v), "mpi") &&
	     strcmp(json_object_get_string(v), "nccl")))
		return BAD("$.api", "expected \"mpi\" or \"nccl\"");
	snprintf(r->api, sizeof(r->api), "%s", json_object_get_string(v));
	if (!get_u64(o, "ranks", &u) || u < 1 || u > INT32_MAX)
		return BAD("$.ranks", "expected a positive integer");
	r->ranks = (int)u;
	if (!get(o, "calls", json_type_array, &a) ||
	    json_object_array_length(a) != ISLE_REPORT_CLASSES)
		return BAD("$.calls", "expected an array of 6 size classes");
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		char path[64];

		e = json_object_array_get_idx(a, (size_t)k);
		snprintf(path, sizeof(path), "$.calls[%d]", k);
		if (!json_object_is_type(e, json_type_object) ||
		    !get_u64(e, "min_bytes", &u) ||
		    u != isle_report_class_min(k))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.min_bytes: expected %" PRIu64, name,
				    path, isle_report_class_min(k));
		if (!get_u64(e, "taken", &r->taken[k]) ||
		    !get_u64(e, "passed", &r->passed[k]))
			return errf(-EINVAL, err, errlen,
				    "%s: %s: taken and passed must be "
				    "non-negative integers",
				    name, path);
		/* Reports from before "ran" have none. */
		if (!json_object_object_get_ex(e, "ran", &v))
			continue;
		if (!json_object_is_type(v, json_type_array))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.ran: expected an array", name,
				    path);
		for (size_t j = 0; j < json_object_array_length(v); j++) {
			json_object *pv = json_object_array_get_idx(v, j);
			int p = json_object_is_type(pv, json_type_string)
				    ? isle_report_path_parse(
					  json_object_get_string(pv))
				    : -EINVAL;

			if (p < 0 || (r->ran[k] & (1u << p)))
				return errf(-EINVAL, err, errlen,
					    "%s: %s.ran[%zu]: expected a path "
					    "(shim, library, ompi:ALGO, "
					    "mpich:ALGO), each once",
					    name, path, j);
			r->ran[k] |= 1u << p;
		}
	}
	if (!get(o, "tiers", json_type_array, &a))
		return BAD("$.tiers", "expected an array");
	n = json_object_array_length(a);
	for (size_t i = 0; i < n; i++) {
		char path[64];
		json_object *cs;
		isle_scope t;

		e = json_object_array_get_idx(a, i);
		snprintf(path, sizeof(path), "$.tiers[%zu]", i);
		if (!json_object_is_type(e, json_type_object) ||
		    !get(e, "tier", json_type_string, &v) ||
		    isle_scope_parse(json_object_get_string(v), &t))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.tier: expected island, node, leaf "
				    "or job",
				    name, path);
		if (r->sent[t] || r->library[t] || r->codecs[t])
			return errf(-EINVAL, err, errlen,
				    "%s: %s.tier: %s listed twice", name, path,
				    isle_scope_name(t));
		if (!get_u64(e, "sent_bytes", &r->sent[t]) ||
		    !get_u64(e, "library_bytes", &r->library[t]))
			return errf(-EINVAL, err, errlen,
				    "%s: %s: sent_bytes and library_bytes must "
				    "be non-negative integers",
				    name, path);
		if (!get(e, "codecs", json_type_array, &cs))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.codecs: expected an array", name,
				    path);
		for (size_t j = 0; j < json_object_array_length(cs); j++) {
			const char *s = json_object_get_string(
			    json_object_array_get_idx(cs, j));
			int c = 0;

			while (c < ISLE_CODEC_COUNT && s &&
			       strcmp(s, isle_codec_kind_name(c)))
				c++;
			if (!json_object_is_type(
				json_object_array_get_idx(cs, j),
				json_type_string) ||
			    c == ISLE_CODEC_COUNT)
				return errf(-EINVAL, err, errlen,
					    "%s: %s.codecs[%zu]: expected a "
					    "codec name",
					    name, path, j);
			r->codecs[t] |= 1u << c;
		}
	}
	if (!get(o, "probe", json_type_object, &e) ||
	    !get_u64(e, "bytes", &r->probe_bytes))
		return BAD("$.probe.bytes", "expected a non-negative integer");
	if (!get(e, "seconds", json_type_double, &v) ||
	    !(json_object_get_double(v) >= 0))
		return BAD("$.probe.seconds", "expected a number >= 0");
	r->probe_s = json_object_get_double(v);
	return 0;
#undef BAD
}

int isle_report_parse(const char *json, size_t len, const char *name,
		      struct isle_report *out, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		json_tokener_free(tok);
		json_object_put(o);
		return errf(-EINVAL, err, errlen, "%s: not JSON", name);
	}
	json_tokener_free(tok);
	rc = parse_obj(o, name, out, err, errlen);
	json_object_put(o);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* Reads the regular file fd (at most ISLE_REPORT_MAX bytes) and parses it;
 * closes fd. uid (unless -1) must own it, with one link. */
static int read_fd(int fd, uid_t uid, const char *name, struct isle_report *out,
		   char *err, size_t errlen)
{
	char *buf = NULL;
	struct stat st;
	size_t n = 0;
	int rc;

	if (fstat(fd, &st)) {
		rc = errf(-errno, err, errlen, "%s: %s", name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = errf(-EINVAL, err, errlen, "%s: not a regular file", name);
		goto out;
	}
	if (uid != (uid_t)-1 && (st.st_uid != uid || st.st_nlink != 1)) {
		rc = errf(-EPERM, err, errlen,
			  "%s: owned by uid %u with %lu links, expected the "
			  "job's uid %u and one link",
			  name, (unsigned)st.st_uid, (unsigned long)st.st_nlink,
			  (unsigned)uid);
		goto out;
	}
	if (st.st_size > ISLE_REPORT_MAX) {
		rc = errf(-EFBIG, err, errlen, "%s: %lld bytes, more than %d",
			  name, (long long)st.st_size, ISLE_REPORT_MAX);
		goto out;
	}
	/* One byte over the limit tells a file that grew since fstat. */
	if (!(buf = malloc(ISLE_REPORT_MAX + 1))) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t got = read(fd, buf + n, ISLE_REPORT_MAX + 1 - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = errf(-EIO, err, errlen, "%s: %s", name,
				  strerror(errno));
			goto out;
		}
		if (!got)
			break;
		n += (size_t)got;
		if (n > ISLE_REPORT_MAX) {
			rc = errf(-EFBIG, err, errlen, "%s: more than %d bytes",
				  name, ISLE_REPORT_MAX);
			goto out;
		}
	}
	rc = isle_report_parse(buf, n, name, out, err, errlen);
out:
	free(buf);
	close(fd);
	return rc;
}

#define RO_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

int isle_report_read(const char *path, struct isle_report *out, char *err,
		     size_t errlen)
{
	int fd;

	memset(out, 0, sizeof(*out));
	if ((fd = open(path, RO_FLAGS)) < 0)
		return errf(
		    errno == ELOOP ? -EINVAL : -errno, err, errlen, "%s: %s",
		    path, errno == ELOOP ? "a symbolic link" : strerror(errno));
	return read_fd(fd, (uid_t)-1, path, out, err, errlen);
}

int isle_report_step_name(uint32_t step_id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "step_%u.json", step_id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A name isle_report_step_name makes, and no other. */
static int is_step_name(const char *name)
{
	const char *p = name + 5;
	char *e;
	unsigned long v;

	if (strncmp(name, "step_", 5) || !isdigit((unsigned char)*p) ||
	    (*p == '0' && isdigit((unsigned char)p[1])))
		return 0;
	errno = 0;
	v = strtoul(p, &e, 10);
	return !errno && v <= UINT32_MAX && !strcmp(e, ".json");
}

void isle_report_add(struct isle_report *sum, const struct isle_report *r)
{
	if (!sum->api[0])
		memcpy(sum->api, r->api, sizeof(sum->api));
	if (r->ranks > sum->ranks)
		sum->ranks = r->ranks;
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		sum->taken[k] += r->taken[k];
		sum->passed[k] += r->passed[k];
		sum->ran[k] |= r->ran[k];
	}
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		sum->sent[t] += r->sent[t];
		sum->library[t] += r->library[t];
		sum->codecs[t] |= r->codecs[t];
	}
	sum->probe_bytes += r->probe_bytes;
	sum->probe_s += r->probe_s;
}

int isle_report_collect(int jobdfd, uid_t uid, const char *name,
			struct isle_report *out, char *err, size_t errlen)
{
	char path[4352];
	struct isle_report r;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	int dfd, fd, e, rc, entries = 0, found = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%s", name, ISLE_RUNDIR_REPORT_DIR);
	dfd = openat(jobdfd, ISLE_RUNDIR_REPORT_DIR,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		e = errno;
		return errf(-EPERM, err, errlen, "%s: %s", path,
			    e == ELOOP || e == ENOTDIR
				? "not a directory (a link or a file)"
				: strerror(e));
	}
	if (fstat(dfd, &st) || st.st_uid != uid) {
		close(dfd);
		return errf(-EPERM, err, errlen,
			    "%s: not owned by the job's uid %u", path,
			    (unsigned)uid);
	}
	/* The listing reads its own descriptor; dfd stays for openat. */
	if ((fd = dup(dfd)) < 0 || !(d = fdopendir(fd))) {
		e = errno;
		if (fd >= 0)
			close(fd);
		rc = errf(-e, err, errlen, "%s: %s", path, strerror(e));
		goto out;
	}
	while ((de = readdir(d))) {
		if (++entries > ISLE_REPORT_STEPS_MAX + 2) {
			rc = errf(-E2BIG, err, errlen,
				  "%s: more than %d entries", path,
				  ISLE_REPORT_STEPS_MAX);
			goto out;
		}
		if (!is_step_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", name,
			 ISLE_RUNDIR_REPORT_DIR, de->d_name);
		if ((fd = openat(dfd, de->d_name, RO_FLAGS)) < 0) {
			e = errno;
			if (e == ENOENT) /* gone since the listing */
				continue;
			rc = errf(-EPERM, err, errlen, "%s: %s", path,
				  e == ELOOP ? "a symbolic link, not followed"
					     : strerror(e));
			goto out;
		}
		if ((rc = read_fd(fd, uid, path, &r, err, errlen)))
			goto out;
		isle_report_add(out, &r);
		found = 1;
	}
	rc = found ? 0 : -ENOENT;
out:
	if (d)
		closedir(d);
	close(dfd);
	if (rc && rc != -ENOENT)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ------------------------------------------------------ reports directory */

#define STORE_PREFIX "job_"
#define STORE_SUFFIX ".json"
/* Files being written: ".job_<id>.json.<pid>". */
#define STORE_TMP_AGE_S 3600

int isle_report_path(const char *dir, uint32_t job_id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" STORE_PREFIX "%u" STORE_SUFFIX, dir,
			 job_id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int isle_report_name_parse(const char *name, uint32_t *job_id)
{
	const char *p = name + strlen(STORE_PREFIX);
	char *e;
	unsigned long v;

	if (strncmp(name, STORE_PREFIX, strlen(STORE_PREFIX)) ||
	    !isdigit((unsigned char)*p) ||
	    (*p == '0' && isdigit((unsigned char)p[1])))
		return -EINVAL;
	errno = 0;
	v = strtoul(p, &e, 10);
	if (errno || v > UINT32_MAX || strcmp(e, STORE_SUFFIX))
		return -EINVAL;
	*job_id = (uint32_t)v;
	return 0;
}

struct aged {
	time_t mtime;
	uint32_t id;
};

static int by_age(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Keeps the newest keep reports of dfd; removes stale temporary files. */
static int prune(int dfd, long keep, const char *dir, char *err, size_t errlen)
{
	struct aged *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	time_t now = time(NULL);
	int fd, rc = 0;
	DIR *d;

	if ((fd = dup(dfd)) < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return errf(-errno, err, errlen, "reports dir %s: %s", dir,
			    strerror(errno));
	}
	while ((de = readdir(d))) {
		struct stat st;
		uint32_t id;

		if (de->d_name[0] == '.' && de->d_name[1] == 'j' &&
		    !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    st.st_mtime + STORE_TMP_AGE_S < now) {
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (isle_report_name_parse(de->d_name, &id) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (n == cap) {
			struct aged *nv = realloc(
			    v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

			if (!nv) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n].mtime = st.st_mtime;
		v[n++].id = id;
	}
	if (keep > 0 && n > (size_t)keep) {
		qsort(v, n, sizeof(*v), by_age);
		for (size_t i = 0; i < n - (size_t)keep; i++) {
			char name[64];

			snprintf(name, sizeof(name),
				 STORE_PREFIX "%u" STORE_SUFFIX, v[i].id);
			unlinkat(dfd, name, 0); /* another epilog's race */
		}
	}
out:
	free(v);
	closedir(d);
	return rc;
}

int isle_report_store(const char *dir, uint32_t job_id,
		      const struct isle_report *r, long keep, char *err,
		      size_t errlen)
{
	char tmp[64], name[64];
	FILE *f = NULL;
	int dfd, fd, rc;

	dfd = isle_rundir_open(dir, 1, err, errlen);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), STORE_PREFIX "%u" STORE_SUFFIX, job_id);
	snprintf(tmp, sizeof(tmp), "." STORE_PREFIX "%u" STORE_SUFFIX ".%ld",
		 job_id, (long)getpid());
	fd = openat(dfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = errf(-errno, err, errlen, "reports dir %s: %s: %s", dir,
			  tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
		goto out;
	}
	rc = isle_report_write(r, f);
	if (fflush(f) || fsync(fileno(f)))
		rc = -EIO;
	if (fclose(f))
		rc = -EIO;
	if (!rc && fchmodat(dfd, tmp, 0644, 0))
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name))
		rc = -errno;
	if (rc) {
		unlinkat(dfd, tmp, 0);
		rc =
		    errf(rc, err, errlen, "reports dir %s: cannot write %s: %s",
			 dir, name, strerror(-rc));
		goto out;
	}
	rc = prune(dfd, keep, dir, err, errlen);
out:
	close(dfd);
	return rc;
}
