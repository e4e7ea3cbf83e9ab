/*
 * test_data.h - test inputs for unit tests: the shared test data, real
 * ibnetdiscover dumps and hwloc exports kept outside the repository
 * (README.md, "Test data"; $ISLE_TEST_DATA names its directory, else
 * ../shared/data from the repository root, where make runs the tests), and
 * the tests' one whole-file reader. Include after <cmocka.h>.
 */
#ifndef ISLE_TEST_DATA_H
#define ISLE_TEST_DATA_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static inline const char *test_data_dir(void)
{
	const char *d = getenv("ISLE_TEST_DATA");

	return d && *d ? d : "../shared/data";
}

/* Writes DATA/rel into buf. Returns buf, or NULL after a "SKIP:" line that
 * names the missing file (the caller then skips). */
static inline const char *test_data_path(char *buf, size_t len, const char *rel)
{
	struct stat st;
	int n = snprintf(buf, len, "%s/%s", test_data_dir(), rel);

	if (n < 0 || (size_t)n >= len)
		fail_msg("test data path too long: %s/%s", test_data_dir(),
			 rel);
	if (stat(buf, &st) == 0)
		return buf;
	printf("SKIP: test data %s missing (set ISLE_TEST_DATA)\n", buf);
	return NULL;
}

/* A whole file, NUL-terminated, for the caller to free; NULL if it cannot be
 * opened. A read error fails the test. */
static inline char *test_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (ferror(f))
		fail_msg("%s: read error", path);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

#endif /* ISLE_TEST_DATA_H */
