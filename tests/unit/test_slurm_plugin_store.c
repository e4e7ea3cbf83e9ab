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

/* What the scheduler says about each job id. */
enum { GONE, PENDING, STARTED };
static uint8_t job_state[NJOBS + 2];
static char dir[] = "/tmp/isle-store-test.XXXXXX";

/*
 * What isle_decision.c's watcher does with the store's keys: started jobs
 * are filed, gone ones purged. Array task keys (above UINT32_MAX) start as
 * job id key >> 32. Job 5 was granted GPUs 4,5 of n01.
 */
static void sweep(void)
{
	uint64_t *keys;
	uint8_t *unsaved;
	int n = isle__store_keys(&keys, &unsaved);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		uint64_t k = keys[i] > UINT32_MAX ? keys[i] >> 32 : keys[i];
		int state = k <= NJOBS + 1 ? job_state[k] : GONE;
		char *gpus = NULL;

		if (state == GONE) {
			assert_int_equal(isle__store_purge(keys[i]), 0);
			continue;
		}
		if (state != STARTED)
			continue;
		if (k == 5 && unsaved[i])
			gpus = strdup("[{\"node\":\"n01\",\"gpus\":[4,5]}]");
		assert_int_equal(
		    isle__store_started(keys[i], (uint32_t)k, gpus), 0);
	}
	free(keys);
	free(unsaved);
}

static int entries(void)
{
	uint64_t *keys;
	uint8_t *unsaved;
	int n = isle__store_keys(&keys, &unsaved);

	free(keys);
	free(unsaved);
	return n;
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
	uint32_t id;
	int want;
	char *r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	rmdir(dir); /* the writer creates it on its first write */
	for (int i = 0; i <= NJOBS + 1; i++)
		job_state[i] = PENDING;
	assert_int_equal(isle__store_init(dir, quiet), 0);

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
	assert_non_null(strstr(r, "isle: waiting: x"));
	free(r);
	assert_null(isle__store_get(NJOBS + 5));
	assert_int_equal(entries(), NJOBS);
	sweep();
	assert_int_equal(files(), 0);

	/* Job 5 starts: its decision is written once. */
	assert_int_equal(
	    isle__store_put(5, "isle: tp=8", record(5, "isle: tp=8")), 1);
	job_state[5] = STARTED;
	sweep();
	id = 5;
	assert_true(wait_until(c_has, &id));
	sweep();
	want = 1;
	assert_true(wait_until(c_files, &want));
	/* The saved record carries what the scheduler granted. */
	r = isle__store_get(5);
	assert_non_null(r);
	assert_non_null(
	    strstr(r, "\"granted\":[{\"node\":\"n01\",\"gpus\":[4,5]}]"));
	assert_non_null(strstr(r, "isle: tp=8"));
	free(r);

	/* A decision keyed by array task starts as job 7: filed as job 7. */
	assert_int_equal(isle__store_put(7ull << 32 | 1, "isle: tp=2",
					 record(7, "isle: tp=2")),
			 1);
	job_state[7] = STARTED;
	sweep();
	id = 7;
	assert_true(wait_until(c_has, &id));
	r = isle__store_get(7);
	assert_non_null(r);
	assert_non_null(strstr(r, "isle: tp=2"));
	assert_null(strstr(r, "granted"));
	free(r);
	assert_null(isle__store_get(7ull << 32 | 1));

	/* Started under its own key (job 6 is still pending to the sweep). */
	assert_int_equal(isle__store_started(6, 6, NULL), 0);
	id = 6;
	assert_true(wait_until(c_has, &id));
	assert_int_equal(isle__store_started(NJOBS + 5, NJOBS + 5, NULL),
			 -ENOENT);

	/* Slurm purges every job but 5: their records go, and so do the
	 * files of the purged started jobs. */
	for (int i = 0; i <= NJOBS + 1; i++)
		if (i != 5)
			job_state[i] = GONE;
	sweep();
	want = 1;
	assert_true(wait_until(c_files, &want));
	assert_true(has_file(5));
	assert_int_equal(entries(), 1);
	assert_int_equal(isle__store_purge(6), -ENOENT);
	isle__store_fini();

	/* A restarted controller finds job 5's record again. */
	assert_int_equal(isle__store_init(dir, quiet), 0);
	r = isle__store_get(5);
	assert_non_null(r);
	assert_non_null(strstr(r, "isle: tp=8"));
	assert_non_null(strstr(r, "\"granted\""));
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
