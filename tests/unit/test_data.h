/*
 * test_data.h - the shared test data for unit tests: real ibnetdiscover
 * dumps and hwloc exports kept outside the repository (README.md, "Test
 * data"). $ISLE_TEST_DATA names its directory, else ../shared/data from the
 * repository root (where make runs the tests). Include after <cmocka.h>.
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

#endif /* ISLE_TEST_DATA_H */
