/*
 * test_topo_hostlist.c - Slurm host list expansion and compression.
 * Expected compressions are what libslurm's hostlist_uniq() +
 * hostlist_ranged_string() give for the same names;
 * test_topo_hostlist_slurm.c compares the two on a generated corpus.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isle_topo.h"

/* Expands expr and checks it gives exactly the space-separated want. */
static void expect_expand(const char *expr, const char *want)
{
	char **v = NULL, err[256] = "", joined[4096] = "";
	int n = -1, rc = isle_hostlist_expand(expr, &v, &n, err, sizeof(err));

	if (rc)
		fail_msg("expand '%s': %d %s", expr, rc, err);
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(joined, " ");
		strcat(joined, v[i]);
	}
	assert_string_equal(joined, want);
	isle_hostlist_free(v, n);
}

static void expect_expand_error(const char *expr, int want_rc)
{
	char **v = (char **)1, err[256] = "";
	int n = -1;

	assert_int_equal(isle_hostlist_expand(expr, &v, &n, err, sizeof(err)),
			 want_rc);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_true(strlen(err) > 0);
}

/* Compresses the space-separated names and compares. */
static void expect_compress(const char *names, const char *want)
{
	char buf[4096], *save = NULL, *tok, *got;
	const char *v[256];
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", names);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		v[n++] = tok;
	got = isle_hostlist_compress(v, n);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_expand(void **state)
{
	expect_expand("n1", "n1");
	expect_expand("n[1-3]", "n1 n2 n3");
	expect_expand("n[01-03,7],login", "n01 n02 n03 n7 login");
	expect_expand("gpu[8-11]", "gpu8 gpu9 gpu10 gpu11");
	expect_expand("a[1-2]b[01-02]", "a1b01 a1b02 a2b01 a2b02");
	expect_expand("rack[1-2]-ib", "rack1-ib rack2-ib");
	expect_expand(" x1, x2  x3,,", "x1 x2 x3");
	expect_expand("n[3,1]", "n3 n1"); /* order kept */
	expect_expand("n[1-1]", "n1");
	expect_expand("", "");
}

static void test_expand_errors(void **state)
{
	expect_expand_error("n[1-3", -EINVAL);
	expect_expand_error("n1-3]", -EINVAL);
	expect_expand_error("n[3-1]", -EINVAL);
	expect_expand_error("n[]", -EINVAL);
	expect_expand_error("n[1,]", -EINVAL);
	expect_expand_error("n[a-b]", -EINVAL);
	expect_expand_error("n[1-2-3]", -EINVAL);
	expect_expand_error("n[[1]]", -EINVAL);
	expect_expand_error("n[0-99999999]", -ERANGE);
	expect_expand_error(NULL, -EINVAL);
}

static void test_compress(void **state)
{
	expect_compress("", "");
	expect_compress("n01", "n01");
	expect_compress("n01 n02 n03 n04", "n[01-04]");
	expect_compress("n04 n02 n03 n01 n02", "n[01-04]");
	expect_compress("n01 n02 n03 n05 n07 n08", "n[01-03,05,07-08]");
	expect_compress("n9 n10 n11", "n[9-11]");
	expect_compress("n1 n2 n3 n10 n11", "n[1-3,10-11]");
	expect_compress("n08 n09 n10", "n[08-10]");
	expect_compress("n99 n100", "n[99-100]");
	expect_compress("n4 n05", "n[4,05]");
	expect_compress("n1 n01", "n[1,01]");
	expect_compress("n009 n10", "n[10,009]");
	expect_compress("n0 n00 n000", "n[0,00,000]");
	expect_compress("a-10 a-1 a-2", "a-[1-2,10]");
	expect_compress("login gpu2 gpu1 cpu1", "cpu1,gpu[1-2],login");
	expect_compress("n n1 n2", "n,n[1-2]");
	expect_compress("a b a", "a,b");
	expect_compress("r2n1 r10n1 r1n1", "r1n1,r2n1,r10n1");
	expect_compress("dgx-a100-01 dgx-a100-02", "dgx-a100-[01-02]");
	/* Names ending in letters sort by strnatcmp: a digit run with a
	 * leading zero compares left-aligned. */
	expect_compress("n097-ib n0100-ib n2-ib n10-ib",
			"n0100-ib,n097-ib,n2-ib,n10-ib");
	assert_null(isle_hostlist_compress(NULL, 2));
}

/* Expanding a compressed list gives the sorted, unique names back. */
static void test_round_trip(void **state)
{
	const char *names[] = {"c07", "c03", "c04", "c05", "c11",
			       "c10", "gw",  "c12", "c01", "c03"};
	char *s = isle_hostlist_compress(names, 10), **v, err[128];
	int n;

	assert_string_equal(s, "c[01,03-05,07,10-12],gw");
	assert_int_equal(isle_hostlist_expand(s, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 9);
	assert_string_equal(v[0], "c01");
	assert_string_equal(v[5], "c10");
	assert_string_equal(v[8], "gw");
	isle_hostlist_free(v, n);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_expand),
	    cmocka_unit_test(test_expand_errors),
	    cmocka_unit_test(test_compress),
	    cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
