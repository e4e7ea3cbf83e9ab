/*
 * test_topo_json_fast.c - the cluster-file loader's one-pass JSON parser
 * (topology/json_fast.c) against json-c.
 *
 * The fast parser takes plain JSON and hands anything else to json-c, so
 * the rule it must keep is: whatever it accepts, json-c accepts too, with
 * the same tree (types, keys in order, numbers, strings); and the loader's
 * parse as a whole accepts, rejects and words its errors exactly as json-c
 * alone. Checked on every JSON golden file under tests/golden/ and on a
 * deterministic corpus of mutations of them: byte replacements, deletions,
 * insertions and truncations.
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_fast.h"
#include "test_data.h"

#ifndef GOLDEN_ROOT
#define GOLDEN_ROOT "tests/golden"
#endif

#define MUTATIONS_PER_FILE 120
#define MAX_FILES 256

struct corpus {
	char *path[MAX_FILES];
	char *text[MAX_FILES];
	int n;
};

static struct corpus corpus;

/* What the checks saw, so a test can tell it was not vacuous. */
struct tally {
	int cases, plain_ok, jc_ok, both_reject;
};

static int add_file(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	size_t n = strlen(path);

	if (type != FTW_F || n < 5 || strcmp(path + n - 5, ".json"))
		return 0;
	if (corpus.n == MAX_FILES)
		return 1;
	corpus.path[corpus.n] = strdup(path);
	corpus.text[corpus.n] = test_read_file(path);
	if (!corpus.path[corpus.n] || !corpus.text[corpus.n])
		return -1;
	corpus.n++;
	return 0;
}

static int cmp_idx(const void *a, const void *b)
{
	return strcmp(corpus.path[*(const int *)a],
		      corpus.path[*(const int *)b]);
}

static int setup(void **state)
{
	int order[MAX_FILES], i;
	char *p[MAX_FILES], *t[MAX_FILES];

	if (nftw(GOLDEN_ROOT, add_file, 16, FTW_PHYS) != 0)
		return -1;
	/* nftw's order is the directory's: sort for a fixed corpus. */
	for (i = 0; i < corpus.n; i++)
		order[i] = i;
	qsort(order, (size_t)corpus.n, sizeof(int), cmp_idx);
	for (i = 0; i < corpus.n; i++) {
		p[i] = corpus.path[order[i]];
		t[i] = corpus.text[order[i]];
	}
	memcpy(corpus.path, p, sizeof(p[0]) * (size_t)corpus.n);
	memcpy(corpus.text, t, sizeof(t[0]) * (size_t)corpus.n);
	return corpus.n > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	for (int i = 0; i < corpus.n; i++) {
		free(corpus.path[i]);
		free(corpus.text[i]);
	}
	corpus.n = 0;
	return 0;
}

/* Describes the first difference of two trees into why; 1 if equal. */
static int tree_eq(const struct jv *a, const struct jv *b, char *why,
		   size_t len)
{
	if (a->type != b->type) {
		snprintf(why, len, "type %d vs %d", a->type, b->type);
		return 0;
	}
	if ((a->key == NULL) != (b->key == NULL) ||
	    (a->key && strcmp(a->key, b->key))) {
		snprintf(why, len, "key \"%s\" vs \"%s\"",
			 a->key ? a->key : "-", b->key ? b->key : "-");
		return 0;
	}
	switch (a->type) {
	case JV_NULL:
		return 1;
	case JV_BOOL:
	case JV_INT:
		if (a->u.i != b->u.i) {
			snprintf(why, len, "integer %lld vs %lld",
				 (long long)a->u.i, (long long)b->u.i);
			return 0;
		}
		return 1;
	case JV_DBL:
		if (!(a->u.d == b->u.d) || signbit(a->u.d) != signbit(b->u.d)) {
			snprintf(why, len, "number %.17g vs %.17g", a->u.d,
				 b->u.d);
			return 0;
		}
		return 1;
	case JV_STR:
		if (a->n != b->n || memcmp(a->u.s, b->u.s, a->n)) {
			snprintf(why, len, "string \"%s\" vs \"%s\"", a->u.s,
				 b->u.s);
			return 0;
		}
		return 1;
	case JV_ARR:
	case JV_OBJ:
		if (a->n != b->n) {
			snprintf(why, len, "%u vs %u members", a->n, b->n);
			return 0;
		}
		for (unsigned i = 0; i < a->n; i++)
			if (!tree_eq(&a->u.kids[i], &b->u.kids[i], why, len))
				return 0;
		return 1;
	}
	snprintf(why, len, "bad type %d", a->type);
	return 0;
}

/* Runs both parsers and the loader's combined parse on text. */
static void check(const char *text, const char *label, struct tally *t)
{
	struct jv_doc fast, jc, both;
	char ejc[512] = "", eboth[512] = "", why[256] = "";
	int rp, rj, rb;

	rp = isle__jv_parse_plain(text, &fast);
	rj = isle__jv_parse_jc(text, "f.json", &jc, ejc, sizeof(ejc));
	rb = isle__jv_parse(text, "f.json", &both, eboth, sizeof(eboth));
	if (rp < 0 || (rj && rj != -EINVAL))
		fail_msg("%s: parser failed: fast %d, json-c %d", label, rp,
			 rj);
	t->cases++;
	t->plain_ok += rp == 0;
	t->jc_ok += rj == 0;
	t->both_reject += rp != 0 && rj != 0;
	if (rp == 0 && rj != 0)
		fail_msg("%s: fast parser accepts what json-c rejects (%s)",
			 label, ejc);
	if (rp == 0 && !tree_eq(&fast.root, &jc.root, why, sizeof(why)))
		fail_msg("%s: trees differ: %s", label, why);
	if (rb != rj || strcmp(eboth, ejc))
		fail_msg("%s: loader parse %d \"%s\", json-c %d \"%s\"", label,
			 rb, eboth, rj, ejc);
	if (rb == 0 && !tree_eq(&both.root, &jc.root, why, sizeof(why)))
		fail_msg("%s: loader tree differs from json-c's: %s", label,
			 why);
	if (rp == 0)
		isle__jv_doc_free(&fast);
	if (rj == 0)
		isle__jv_doc_free(&jc);
	if (rb == 0)
		isle__jv_doc_free(&both);
}

static void test_golden_files(void **state)
{
	struct tally t = {0};

	for (int i = 0; i < corpus.n; i++)
		check(corpus.text[i], corpus.path[i], &t);
	print_message("%d golden JSON files: %d fast, %d json-c\n", t.cases,
		      t.plain_ok, t.jc_ok);
	/* The golden files are plain JSON (two are syntax errors on purpose):
	 * the fast path must take every file json-c takes. */
	assert_int_equal(t.plain_ok, t.jc_ok);
	assert_true(t.both_reject < t.cases);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Bytes that change JSON structure, plus a few plain ones. */
static const char interesting[] = "{}[]\",:\\/ \t\n0123456789-+.eEtfnulx\x01";

/* Mutation k of text into out (large enough for strlen(text) + 8). */
static void mutate(const char *text, uint64_t *s, char *out)
{
	size_t len = strlen(text), at;
	char c;

	memcpy(out, text, len + 1);
	if (len == 0)
		return;
	at = next(s) % len;
	c = interesting[next(s) % (sizeof(interesting) - 1)];
	switch (next(s) % 5) {
	case 0: /* replace with a structural byte */
		out[at] = c;
		break;
	case 1: /* replace with any byte but NUL */
		out[at] = (char)(1 + next(s) % 255);
		break;
	case 2: /* delete */
		memmove(out + at, out + at + 1, len - at);
		break;
	case 3: /* insert */
		memmove(out + at + 1, out + at, len - at + 1);
		out[at] = c;
		break;
	default: /* truncate */
		out[at] = '\0';
		break;
	}
}

static void test_mutations(void **state)
{
	struct tally t = {0};
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	char label[600];

	for (int i = 0; i < corpus.n; i++) {
		char *buf = malloc(strlen(corpus.text[i]) + 8);

		assert_non_null(buf);
		for (int k = 0; k < MUTATIONS_PER_FILE; k++) {
			mutate(corpus.text[i], &s, buf);
			snprintf(label, sizeof(label), "%s mutation %d",
				 corpus.path[i], k);
			check(buf, label, &t);
		}
		free(buf);
	}
	print_message("%d mutations: %d fast, %d json-c, %d both reject\n",
		      t.cases, t.plain_ok, t.jc_ok, t.both_reject);
	/* Both outcomes must be exercised for the comparison to mean much. */
	assert_true(t.cases >= 2000);
	assert_true(t.plain_ok > t.cases / 10);
	assert_true(t.both_reject > t.cases / 10);
}

/* Cases at the edges of what the fast parser takes. */
static void test_edges(void **state)
{
	static const char *const cases[] = {
	    "0",
	    "-0",
	    "-0.0",
	    "1e400",
	    "123456789012345678",
	    "1234567890123456789",
	    "-9223372036854775808",
	    "01",
	    "1.",
	    ".5",
	    "1e",
	    "[1,]",
	    "{\"a\":1,}",
	    "{\"a\":1,\"a\":2}",
	    "\"\\u0041\"",
	    "\"a\\qb\"",
	    "\"tab\tin\"",
	    "nullx",
	    "true1",
	    "[true false]",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	    "{\"\":\"\"}",
	    "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
	    "[] x",
	    " \v[]",
	    "[]\f",
	    "",
	    "   ",
	    "/* c */ {}",
	    "{\"a\" 1}",
	    "NaN",
	    "'a'",
	    "{\"a\":[1,2.5,-3e-2,\"x\",null,true,false,{}]}",
	};
	struct tally t = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check(cases[i], cases[i], &t);
	assert_true(t.plain_ok > 0 && t.both_reject > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden_files),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
