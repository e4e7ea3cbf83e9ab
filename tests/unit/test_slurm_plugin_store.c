/*
 * test_slurm_plugin_store.c - topology/isle's decision record store
 * (slurm_plugin/isle_store.c): records in memory, only started jobs on
 * disk, written and removed by the writer thread, reloaded at init.
 */
#include <dirent.h>
#include <errno.h>
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

#include "isle_store.h"

#define NJOBS 10000

/* What the fake scheduler says about each job id. */
static uint8_t job_state[NJOBS + 2];
static char dir[] = "/tmp/isle-store-test.XXXXXX";

/* Array task keys (above UINT32_MAX) start as job id key >> 32. */
static void probe(const uint64_t *keys, int n, uint8_t *state, uint32_t *ids,
		  void *arg)
{
	(void)arg;
	for (int i = 0; i < n; i++) {
		uint64_t k = keys[i] > UINT32_MAX ? keys[i] >> 32 : keys[i];

		state[i] = k <= NJOBS + 1 ? job_state[k] : ISLE_STORE_JOB_GONE;
		ids[i] = (uint32_t)k;
	}
}

static void quiet(int level, const char *msg)
{
	(void)level;
	(void)msg;
}

static int files(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "job_", 4))
			n++;
	closedir(d);
	return n;
}

static int has_file(uint32_t id)
{
	char p[256];
	struct stat sb;

	snprintf(p, sizeof(p), "%s/job_%u.json", dir, id);
	return stat(p, &sb) == 0;
}

/* Polls (the writer is a thread) with a generous hang guard. */
static int wait_until(int (*cond)(void *), void *arg)
{
	for (int i = 0; i < 3000; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (cond(arg))
			return 1;
		isle__store_kick();
		nanosleep(&ts, NULL);
	}
	return cond(arg);
}

static int c_files(void *arg)
{
	return files() == *(int *)arg;
}
static int c_has(void *arg)
{
	return has_file(*(uint32_t *)arg);
}

static char *record(uint32_t id, const char *line)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "{\"job_id\": %u, \"line\": \"%s\"}", id,
		 line);
	return buf;
}

static void test_store(void **state)
{
	struct isle__store_stats s;
	uint32_t id;
	int want;
	char *r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	rmdir(dir); /* the writer creates it on its first write */
	for (int i = 0; i <= NJOBS + 1; i++)
		job_state[i] = ISLE_STORE_JOB_PENDING;
	assert_int_equal(isle__store_init(dir, probe, NULL, quiet, 50), 0);

	/* Many evaluations of many pending jobs: memory only. */
	for (int pass = 0; pass < 3; pass++)
		for (id = 1; id <= NJOBS; id++) {
			const char *line = (pass & 1) ? "isle: planned tp=8"
						      : "isle: waiting: x";

			assert_int_equal(
			    isle__store_put(id, line, record(id, line)), 1);
			assert_true(isle__store_same(id, line));
			assert_int_equal(isle__store_put(id, line, "{}"), 0);
		}
	assert_false(isle__store_same(1, "isle: other"));
	r = isle__store_get(77);
	assert_non_null(r);
	assert_non_null(strstr(r, "\"job_id\": 77"));
	free(r);
	assert_null(isle__store_get(NJOBS + 5));
	isle__store_get_stats(&s);
	assert_int_equal(s.entries, NJOBS);
	assert_int_equal(s.puts, 3 * NJOBS);
	assert_int_equal(s.writes, 0);
	assert_int_equal(files(), 0);

	/* Job 5 starts: its decision is written once. */
	assert_int_equal(
	    isle__store_put(5, "isle: tp=8", record(5, "isle: tp=8")), 1);
	job_state[5] = ISLE_STORE_JOB_STARTED;
	id = 5;
	assert_true(wait_until(c_has, &id));
	isle__store_kick();
	want = 1;
	assert_true(wait_until(c_files, &want));
	isle__store_get_stats(&s);
	assert_int_equal(s.writes, 1);

	/* A decision keyed by array task starts as job 7: filed as job 7. */
	assert_int_equal(isle__store_put(7ull << 32 | 1, "isle: tp=2",
					 record(7, "isle: tp=2")),
			 1);
	job_state[7] = ISLE_STORE_JOB_STARTED;
	id = 7;
	assert_true(wait_until(c_has, &id));
	r = isle__store_get(7);
	assert_non_null(r);
	assert_non_null(strstr(r, "isle: tp=2"));
	free(r);
	assert_null(isle__store_get(7ull << 32 | 1));

	/* Started directly through the API (another Slurm's start hook). */
	assert_int_equal(isle__store_started(6), 0);
	id = 6;
	assert_true(wait_until(c_has, &id));
	assert_int_equal(isle__store_started(NJOBS + 5), -ENOENT);

	/* Slurm purges every job but 5: their records go, and so do the
	 * files of the purged started jobs. */
	for (int i = 0; i <= NJOBS + 1; i++)
		if (i != 5)
			job_state[i] = ISLE_STORE_JOB_GONE;
	want = 1;
	assert_true(wait_until(c_files, &want));
	assert_true(has_file(5));
	for (int i = 0; i < 300; i++) {
		isle__store_get_stats(&s);
		if (s.entries == 1)
			break;
		isle__store_kick();
		usleep(10000);
	}
	assert_int_equal(s.entries, 1);
	assert_int_equal(isle__store_purge(6), -ENOENT);
	isle__store_fini();

	/* A restarted controller finds job 5's record again. */
	assert_int_equal(isle__store_init(dir, probe, NULL, quiet, 50), 0);
	r = isle__store_get(5);
	assert_non_null(r);
	assert_non_null(strstr(r, "isle: tp=8"));
	free(r);
	assert_true(isle__store_same(5, "isle: tp=8"));
	/* purge through the API removes the file */
	assert_int_equal(isle__store_purge(5), 0);
	want = 0;
	assert_true(wait_until(c_files, &want));
	isle__store_fini();
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
