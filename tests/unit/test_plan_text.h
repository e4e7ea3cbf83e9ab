/*
 * test_plan_text.h - a plan as the text isle_plan_write gives it, for the
 * unit tests of its writer and readers (test_proto.c, test_comm_plan.c).
 * Include after <cmocka.h> and isle_proto.h.
 */
#ifndef ISLE_TEST_PLAN_TEXT_H
#define ISLE_TEST_PLAN_TEXT_H

#include <stdio.h>

/* The caller frees the text. */
static inline char *test_plan_text(const struct isle_plan *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(isle_plan_write(p, f), 0);
	fclose(f);
	return buf;
}

#endif /* ISLE_TEST_PLAN_TEXT_H */
