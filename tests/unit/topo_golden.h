/*
 * topo_golden.h - golden-file helpers shared by the topology unit tests.
 * Include after <cmocka.h>, with TOPO_GOLDEN_DIR defined.
 */
#ifndef ISLE_TEST_TOPO_GOLDEN_H
#define ISLE_TEST_TOPO_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_data.h"

/* Reads a whole file; the caller frees. Fails the test if it is missing. */
static char *read_file(const char *path)
{
	char *buf = test_read_file(path);

	if (!buf)
		fail_msg("cannot open %s", path);
	return buf;
}

/* Compares text with a golden file; on a mismatch writes the actual text
 * beside the build for inspection. */
static void expect_golden(const char *text, const char *name)
{
	char path[512], *want;

	snprintf(path, sizeof(path), "%s/%s", TOPO_GOLDEN_DIR, name);
	want = read_file(path);
	if (strcmp(text, want) != 0) {
		char out[512];
		FILE *f;

		snprintf(out, sizeof(out), "/tmp/isle-golden-%s", name);
		f = fopen(out, "w");
		if (f) {
			fputs(text, f);
			fclose(f);
		}
		fail_msg("%s differs from %s (actual output in %s)", name, path,
			 out);
	}
	free(want);
}

#endif /* ISLE_TEST_TOPO_GOLDEN_H */
