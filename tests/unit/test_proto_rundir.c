/*
 * test_proto_rundir.c - proto's trusted walk to a job's run directory and
 * its one name check: a component owned by another user, writable by
 * others or a symlink, at every depth, is refused with its name; files
 * are read only when root's; hostile names are refused with the byte.
 * The ownership cases need root (chown): they are skipped otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "isle_proto.h"

#define NOBODY 65534

struct tree {
	char base[64];	/* /tmp/isle-rundir.XXXXXX, 0755 */
	char root[128]; /* base/a/b/c: the run root */
};

static void path_of(const struct tree *t, const char *rel, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s/%s", t->base, rel);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char p[256];

	snprintf(t->base, sizeof(t->base), "/tmp/isle-rundir.XXXXXX");
	if (!t || !mkdtemp(t->base) || chmod(t->base, 0755))
		return -1;
	path_of(t, "a", p, sizeof(p));
	mkdir(p, 0755);
	path_of(t, "a/b", p, sizeof(p));
	mkdir(p, 0755);
	path_of(t, "a/b/c", p, sizeof(p));
	mkdir(p, 0755);
	snprintf(t->root, sizeof(t->root), "%s/a/b/c", t->base);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->base);
	free(t);
	return system(cmd) ? -1 : 0;
}

/* isle_rundir_open(root) fails with rc and an error naming comp and why. */
static void refused(const struct tree *t, int rc, const char *comp,
		    const char *why)
{
	char err[512] = "", want[256];
	int fd = isle_rundir_open(t->root, 0, err, sizeof(err));

	if (fd >= 0)
		close(fd);
	snprintf(want, sizeof(want), "%s/%s %s", t->base, comp, why);
	if (fd != rc || !strstr(err, want))
		fail_msg("%s: rc %d (want %d)\n  got:  %s\n  want: ...%s", comp,
			 fd, rc, err, want);
}

static void opens(const struct tree *t)
{
	char err[512] = "";
	int fd = isle_rundir_open(t->root, 0, err, sizeof(err));

	if (fd < 0)
		fail_msg("%s: %s", t->root, err);
	close(fd);
}

static void test_walk_every_depth(void **state)
{
	struct tree *t = *state;
	static const char *const comps[] = {"a", "a/b", "a/b/c"};
	char p[200], moved[256];

	opens(t);
	for (size_t i = 0; i < 3; i++) {
		path_of(t, comps[i], p, sizeof(p));
		/* Writable by group or others. */
		assert_int_equal(chmod(p, 0775), 0);
		refused(t, -EPERM, comps[i], "is writable by group or others");
		assert_int_equal(chmod(p, 0757), 0);
		refused(t, -EPERM, comps[i], "is writable by group or others");
		assert_int_equal(chmod(p, 0755), 0);
		/* A symlink in its place (to the very same tree). */
		snprintf(moved, sizeof(moved), "%s.real", p);
		assert_int_equal(rename(p, moved), 0);
		assert_int_equal(symlink(moved, p), 0);
		refused(t, -EPERM, comps[i], "is a symbolic link");
		assert_int_equal(unlink(p), 0);
		assert_int_equal(rename(moved, p), 0);
		/* Owned by another user. */
		if (geteuid() == 0) {
			assert_int_equal(chown(p, NOBODY, (gid_t)-1), 0);
			refused(t, -EPERM, comps[i], "is owned by uid 65534");
			assert_int_equal(chown(p, 0, (gid_t)-1), 0);
		}
		opens(t);
	}
}

static void test_walk_sticky_and_names(void **state)
{
	struct tree *t = *state;
	char p[256], err[512];
	int fd;

	/* A root-owned sticky directory (/tmp) on the way is fine... */
	path_of(t, "a", p, sizeof(p));
	assert_int_equal(chmod(p, 01777), 0);
	opens(t);
	/* ...but not as the run root itself. */
	fd = isle_rundir_open(p, 0, err, sizeof(err));
	assert_int_equal(fd, -EPERM);
	assert_non_null(strstr(err, "is writable by group or others"));
	if (geteuid() == 0) {
		/* Sticky but another user's: refused. */
		assert_int_equal(chown(p, NOBODY, (gid_t)-1), 0);
		refused(t, -EPERM, "a", "is owned by uid 65534");
		assert_int_equal(chown(p, 0, (gid_t)-1), 0);
	}
	assert_int_equal(chmod(p, 0755), 0);

	assert_int_equal(isle_rundir_open("run/isle", 0, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not an absolute path"));
	snprintf(p, sizeof(p), "%s/a/../a/b/c", t->base);
	assert_int_equal(isle_rundir_open(p, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "component '..' not allowed"));
	snprintf(p, sizeof(p), "%s/a/x/y", t->base);
	assert_int_equal(isle_rundir_open(p, 0, err, sizeof(err)), -ENOENT);
	/* With create, missing components are made; doubled slashes pass. */
	snprintf(p, sizeof(p), "%s//a/x/y/", t->base);
	fd = isle_rundir_open(p, 1, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
}

static void put_file(const char *dir, const char *name, const char *text,
		     mode_t mode)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
}

static void test_read_files(void **state)
{
	struct tree *t = *state;
	char job[200], p[256], err[512], *text = NULL;
	int dfd;

	snprintf(job, sizeof(job), "%s/42", t->root);
	assert_int_equal(mkdir(job, 0750), 0);
	put_file(job, "plan.json", "{}\n", 0640);
	put_file(job, "open", "x", 0666);
	put_file(job, "big", "0123456789", 0640);
	snprintf(p, sizeof(p), "%s/link", job);
	assert_int_equal(symlink("plan.json", p), 0);

	dfd = isle_rundir_open_job(t->root, "42", err, sizeof(err));
	assert_true(dfd >= 0);
	assert_int_equal(
	    isle_rundir_read(dfd, "plan.json", 100, &text, err, sizeof(err)),
	    0);
	assert_string_equal(text, "{}\n");
	free(text);
	assert_int_equal(
	    isle_rundir_read(dfd, "open", 100, &text, err, sizeof(err)),
	    -EPERM);
	assert_null(text);
	assert_non_null(strstr(err, "open is writable by group or others"));
	assert_int_equal(
	    isle_rundir_read(dfd, "link", 100, &text, err, sizeof(err)),
	    -ELOOP);
	assert_non_null(strstr(err, "link: is a symbolic link"));
	assert_int_equal(
	    isle_rundir_read(dfd, "big", 4, &text, err, sizeof(err)), -EFBIG);
	assert_int_equal(
	    isle_rundir_read(dfd, "none", 4, &text, err, sizeof(err)), -ENOENT);
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/plan.json", job);
		assert_int_equal(chown(p, NOBODY, (gid_t)-1), 0);
		assert_int_equal(isle_rundir_read(dfd, "plan.json", 100, &text,
						  err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "owned by uid 65534"));
	}
	close(dfd);

	/* The job directory itself: another user's, or a link, is refused. */
	if (geteuid() == 0) {
		assert_int_equal(chown(job, NOBODY, (gid_t)-1), 0);
		assert_int_equal(
		    isle_rundir_open_job(t->root, "42", err, sizeof(err)),
		    -EPERM);
		assert_non_null(strstr(err, "/42 is owned by uid 65534"));
		assert_int_equal(chown(job, 0, (gid_t)-1), 0);
	}
	snprintf(p, sizeof(p), "%s/43", t->root);
	assert_int_equal(symlink(job, p), 0);
	assert_true(isle_rundir_open_job(t->root, "43", err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "is a symbolic link"));
	assert_int_equal(isle_rundir_open_job(t->root, "..", err, sizeof(err)),
			 -EINVAL);
	/* A forged tree under a directory another user owns (finding 1). */
	if (geteuid() == 0) {
		path_of(t, "a/b", p, sizeof(p));
		assert_int_equal(chown(p, NOBODY, (gid_t)-1), 0);
		assert_int_equal(
		    isle_rundir_open_job(t->root, "42", err, sizeof(err)),
		    -EPERM);
		assert_non_null(strstr(err, "/a/b is owned by uid 65534"));
		assert_int_equal(chown(p, 0, (gid_t)-1), 0);
	}
}

static void test_name_check(void **state)
{
	static const char *const good[] = {
	    "n01",
	    "gb200-rack01",
	    "mlx5_0",
	    "0000:3b:00.0",
	    "ib0",
	    "a.b",
	    "6a5f1c2e-0000-4000-8000-00000000abcd:7"};
	static const struct {
		const char *name;
		int bad;
	} bad[] = {
	    {"", -1},		{"mlx5_0\nNCCL_NET_PLUGIN=/x/evil.so", '\n'},
	    {"a b", ' '},	{"a/b", '/'},
	    {"..", '.'},	{".hidden", '.'},
	    {"-x", '-'},	{":x", ':'},
	    {"a,b", ','},	{"a=b", '='},
	    {"a\"b", '"'},	{"a<b", '<'},
	    {"a&b", '&'},	{"a;b", ';'},
	    {"a$b", '$'},	{"a`b", '`'},
	    {"a\\b", '\\'},	{"a[1]", '['},
	    {"a\x1b[2J", 0x1b}, {"caf\xc3\xa9", 0xc3},
	};
	char err[256], longname[ISLE_NAME_MAX + 2];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(isle_name_check(good[i]), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (isle_name_check(bad[i].name) != bad[i].bad)
			fail_msg("'%s': %d, want %d", bad[i].name,
				 isle_name_check(bad[i].name), bad[i].bad);
	assert_int_equal(isle_name_check(NULL), -1);
	memset(longname, 'a', sizeof(longname));
	longname[ISLE_NAME_MAX] = '\0';
	assert_int_equal(isle_name_check(longname), 0);
	longname[ISLE_NAME_MAX] = 'a';
	longname[ISLE_NAME_MAX + 1] = '\0';
	assert_int_equal(isle_name_check(longname), -1);

	assert_int_equal(isle_name_error("NIC", "mlx5_0", err, sizeof(err)), 0);
	assert_int_equal(
	    isle_name_error("NIC", "mlx5_0\nNCCL_X=1", err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "NIC 'mlx5_0\\x0aNCCL_X=1': byte 0x0a not "
				 "allowed (names are letters, digits, '_', "
				 "'-', '.', ':')");
}

/* --------------------------------------------- shim reports, as root reads */

static const char good_report[] =
    "{\"isle_report\": 1, \"api\": \"mpi\", \"ranks\": 2, \"calls\": ["
    "{\"min_bytes\": 0, \"taken\": 0, \"passed\": 3},"
    "{\"min_bytes\": 256, \"taken\": 0, \"passed\": 0},"
    "{\"min_bytes\": 4096, \"taken\": 0, \"passed\": 0},"
    "{\"min_bytes\": 65536, \"taken\": 7, \"passed\": 0},"
    "{\"min_bytes\": 1048576, \"taken\": 0, \"passed\": 0},"
    "{\"min_bytes\": 16777216, \"taken\": 0, \"passed\": 0}],"
    "\"tiers\": [{\"tier\": \"node\", \"sent_bytes\": 100, "
    "\"library_bytes\": 300, \"codecs\": [\"int8\"]}],"
    "\"probe\": {\"bytes\": 0, \"seconds\": 0}}\n";

static void put(const char *path, const char *data, size_t len, uid_t uid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchown(fd, uid, uid), 0);
	close(fd);
}

/* isle_report_collect on job 77 of NOBODY: rc and a message holding why;
 * on success, the sum of steps copies of good_report. */
static void collect_steps(const struct tree *t, int want_rc, const char *why,
			  int steps)
{
	struct isle_report r;
	char err[1024] = "", dir[256];
	int dfd = isle_rundir_open_job(t->root, "77", err, sizeof(err));
	int rc;

	assert_true(dfd >= 0);
	snprintf(dir, sizeof(dir), "%s/77", t->root);
	rc = isle_report_collect(dfd, NOBODY, dir, &r, err, sizeof(err));
	close(dfd);
	if (rc != want_rc || (why && !strstr(err, why)))
		fail_msg("rc %d (want %d), err '%s' (want '%s')", rc, want_rc,
			 err, why ? why : "");
	if (!rc) {
		assert_string_equal(r.api, "mpi");
		assert_int_equal(r.ranks, 2);
		assert_int_equal(r.taken[3], 7 * steps);
		assert_int_equal(r.passed[0], 3 * steps);
		assert_int_equal(r.sent[ISLE_SCOPE_NODE], 100 * steps);
		assert_int_equal(r.library[ISLE_SCOPE_NODE], 300 * steps);
		assert_int_equal(r.codecs[ISLE_SCOPE_NODE],
				 1u << ISLE_CODEC_INT8);
	}
}

static void collect(const struct tree *t, int want_rc, const char *why)
{
	collect_steps(t, want_rc, why, 1);
}

static void test_report_collect(void **state)
{
	struct tree *t = *state;
	char job[256], rdir[300], f[400], other[400];
	char *big;

	if (geteuid() != 0)
		skip();
	snprintf(job, sizeof(job), "%s/77", t->root);
	assert_int_equal(mkdir(job, 0700), 0);
	snprintf(rdir, sizeof(rdir), "%s/report", job);
	snprintf(f, sizeof(f), "%s/step_0.json", rdir);
	/* No report directory, an empty one: no report, no error. */
	collect(t, -ENOENT, NULL);
	assert_int_equal(mkdir(rdir, 0700), 0);
	assert_int_equal(chown(rdir, NOBODY, NOBODY), 0);
	collect(t, -ENOENT, NULL);

	put(f, good_report, strlen(good_report), NOBODY);
	collect(t, 0, NULL);

	/* Each step its own report, summed; other names left alone. */
	snprintf(other, sizeof(other), "%s/step_4294967291.json", rdir);
	put(other, good_report, strlen(good_report), NOBODY);
	snprintf(other, sizeof(other), "%s/step_4.json.new", rdir);
	put(other, "garbage", 7, NOBODY);
	snprintf(other, sizeof(other), "%s/step_04.json", rdir);
	put(other, "garbage", 7, NOBODY);
	collect_steps(t, 0, NULL, 2);
	/* A directory of too many entries is refused, not read on. */
	for (int i = 0; i < ISLE_REPORT_STEPS_MAX; i++) {
		snprintf(other, sizeof(other), "%s/x%d", rdir, i);
		put(other, "", 0, NOBODY);
	}
	collect(t, -E2BIG, "more than 1024 entries");
	for (int i = 0; i < ISLE_REPORT_STEPS_MAX; i++) {
		snprintf(other, sizeof(other), "%s/x%d", rdir, i);
		unlink(other);
	}
	snprintf(other, sizeof(other), "%s/step_4294967291.json", rdir);
	unlink(other);
	snprintf(other, sizeof(other), "%s/step_4.json.new", rdir);
	unlink(other);
	snprintf(other, sizeof(other), "%s/step_04.json", rdir);
	unlink(other);
	collect(t, 0, NULL);

	/* Hostile jobs: a link to another job's (or root's) file... */
	snprintf(other, sizeof(other), "%s/other.json", t->base);
	put(other, good_report, strlen(good_report), NOBODY);
	unlink(f);
	assert_int_equal(symlink(other, f), 0);
	collect(t, -EPERM, "a symbolic link, not followed");
	unlink(f);
	/* ...a hard link to it (two links)... */
	assert_int_equal(link(other, f), 0);
	collect(t, -EPERM, "one link");
	unlink(f);
	/* ...a file of someone else... */
	put(f, good_report, strlen(good_report), 0);
	collect(t, -EPERM, "expected the job's uid 65534");
	unlink(f);
	/* ...a FIFO nobody writes (refused at once, never waited on)... */
	assert_int_equal(mkfifo(f, 0600), 0);
	assert_int_equal(chown(f, NOBODY, NOBODY), 0);
	collect(t, -EINVAL, "not a regular file");
	unlink(f);
	/* ...a huge file, garbage, a report dir that is a link. */
	big = malloc(4 * ISLE_REPORT_MAX);
	assert_non_null(big);
	memset(big, ' ', 4 * ISLE_REPORT_MAX);
	put(f, big, 4 * ISLE_REPORT_MAX, NOBODY);
	free(big);
	collect(t, -EFBIG, "bytes, more than 65536");
	put(f, "\x01\x02garbage", 9, NOBODY);
	collect(t, -EINVAL, "step_0.json: not JSON");
	put(f, "{\"isle_report\": 2}", 18, NOBODY);
	collect(t, -EINVAL, "$.isle_report");
	unlink(f);
	assert_int_equal(rmdir(rdir), 0);
	assert_int_equal(symlink(t->base, rdir), 0);
	collect(t, -EPERM, "not a directory");
	unlink(rdir);
	/* A report dir the job does not own (root's: planted otherwise). */
	assert_int_equal(mkdir(rdir, 0700), 0);
	collect(t, -EPERM, "not owned by the job's uid 65534");
}

static void test_report_store(void **state)
{
	struct tree *t = *state;
	struct isle_report r, back;
	char dir[256], path[300], err[1024];
	struct stat st;
	uint32_t id;

	assert_int_equal(isle_report_parse(good_report, strlen(good_report),
					   "good", &r, err, sizeof(err)),
			 0);
	snprintf(dir, sizeof(dir), "%s/reports", t->root);
	/* Created, then whole files only, one per job. */
	for (uint32_t j = 1; j <= 5; j++) {
		struct timespec ts[2] = {{.tv_sec = 1000 + (time_t)j},
					 {.tv_sec = 1000 + (time_t)j}};

		r.ranks = (int)j;
		assert_int_equal(
		    isle_report_store(dir, j, &r, 3, err, sizeof(err)), 0);
		assert_int_equal(isle_report_path(dir, j, path, sizeof(path)),
				 0);
		assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	}
	/* The newest 3 by time are left: 3, 4 and 5. */
	assert_int_equal(isle_report_path(dir, 1, path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(isle_report_path(dir, 5, path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(isle_report_read(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back.ranks, 5);
	assert_int_equal(back.taken[3], 7);
	/* A stored report is replaced whole. */
	r.ranks = 9;
	assert_int_equal(isle_report_store(dir, 5, &r, 3, err, sizeof(err)), 0);
	assert_int_equal(isle_report_read(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back.ranks, 9);
	/* Only a trusted directory: one others can write is refused. */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(isle_report_store(dir, 6, &r, 3, err, sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "writable"));
	assert_int_equal(chmod(dir, 0755), 0);

	assert_int_equal(isle_report_name_parse("job_12.json", &id), 0);
	assert_int_equal(id, 12);
	assert_int_equal(isle_report_name_parse("job_012.json", &id), -EINVAL);
	assert_int_equal(isle_report_name_parse(".job_12.json.77", &id),
			 -EINVAL);
	assert_int_equal(isle_report_name_parse("job_12.json.new", &id),
			 -EINVAL);
	assert_int_equal(isle_report_name_parse("job_4294967296.json", &id),
			 -EINVAL);
	assert_int_equal(isle_report_name_parse("job_.json", &id), -EINVAL);
	/* isle_report_read does not follow links either. */
	snprintf(path, sizeof(path), "%s/link.json", t->base);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(isle_report_read(path, &back, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "a symbolic link"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_walk_every_depth, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_walk_sticky_and_names, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_read_files, setup, teardown),
	    cmocka_unit_test(test_name_check),
	    cmocka_unit_test_setup_teardown(test_report_collect, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_report_store, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
