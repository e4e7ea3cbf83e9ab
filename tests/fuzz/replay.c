/*
 * replay.c - runs a fuzz target over files without libFuzzer (gcc builds).
 *
 * With no arguments it replays every file under FUZZ_INPUT_DIR (the
 * target's committed seeds and crash regressions), one cmocka test per
 * file; with arguments, the named files or directories.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fuzz.h"

static char **paths;
static size_t npaths, cap;

static void add_path(const char *p)
{
	if (npaths == cap) {
		cap = cap ? 2 * cap : 64;
		paths = realloc(paths, cap * sizeof(*paths));
		if (!paths)
			abort();
	}
	paths[npaths] = strdup(p);
	if (!paths[npaths])
		abort();
	npaths++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_arg(const char *p)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	char buf[4096];

	if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
		add_path(p);
		return;
	}
	d = opendir(p);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s", p, e->d_name);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			add_path(buf);
	}
	closedir(d);
}

static void replay_one(void **state)
{
	const char *path = *state;
	uint8_t *data = NULL;
	size_t len = 0, got;
	FILE *fp = fopen(path, "rb");

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	len = (size_t)ftell(fp);
	rewind(fp);
	/* An empty file still gets a valid (non-NULL) pointer. */
	data = malloc(len ? len : 1);
	assert_non_null(data);
	got = fread(data, 1, len, fp);
	fclose(fp);
	assert_int_equal(got, len);
	assert_int_equal(LLVMFuzzerTestOneInput(data, len), 0);
	free(data);
}

int main(int argc, char **argv)
{
	struct CMUnitTest *tests;
	size_t i;
	int rc;

	if (argc > 1)
		for (i = 1; i < (size_t)argc; i++)
			add_arg(argv[i]);
	else
		add_arg(FUZZ_INPUT_DIR);
	if (npaths == 0) {
		fprintf(stderr, "replay: no input under %s\n",
			argc > 1 ? argv[1] : FUZZ_INPUT_DIR);
		return 1;
	}
	qsort(paths, npaths, sizeof(*paths), cmp_str);
	tests = calloc(npaths, sizeof(*tests));
	if (!tests)
		return 1;
	for (i = 0; i < npaths; i++) {
		const char *b = strrchr(paths[i], '/');

		tests[i].name = b ? b + 1 : paths[i];
		tests[i].test_func = replay_one;
		tests[i].initial_state = paths[i];
	}
	rc = _cmocka_run_group_tests(FUZZ_NAME, tests, npaths, NULL, NULL);
	for (i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	free(tests);
	return rc;
}
