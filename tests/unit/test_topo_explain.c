/*
 * test_topo_explain.c - `islectl explain` on decision records
 * (topology/islectl_explain.c): text rendering, bad records, the command
 * line.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include <cmocka.h>

#include "isle_proto.h"
#include "islectl.h"

/* A record as topology/isle writes it (isle_decision.c). */
static const char *record =
    "{\"job_id\": 42, \"time\": 1700000000,"
    " \"cluster_file\": \"/etc/slurm/isle.json\","
    " \"line\": \"isle: tp=8 pp=1 dp=1 nodes=n[02-03] islands=nvl1 leafs=1 "
    "tp_in_island=1/1 cost=1.00x\","
    " \"why\": \"nvl1 ties on cost with nvl3 and leaves less fragmentation "
    "(0.250 vs 0.500)\","
    " \"request\": {\"gpus\": 8, \"nodes\": 2, \"gpus_per_node\": 4, \"tp\": "
    "8, \"pp\": 1,"
    "   \"mode\": \"required\", \"max_span\": \"core\"},"
    " \"placement\": {\"nodes\": \"n[02-03]\", \"per_node\": ["
    "   {\"node\": \"n02\", \"gpus\": [0, 1, 2, 3]}, {\"node\": \"n03\", "
    "\"gpus\": [0, 1, 4, 5, 7]}],"
    "   \"tp\": 8, \"pp\": 1, \"dp\": 1, \"tp_groups\": 1, \"tp_in_island\": 1,"
    "   \"islands\": \"nvl1\", \"leafs\": 1, \"span\": \"island\","
    "   \"cost\": {\"tp\": 10.0, \"pp\": 0.0, \"dp\": 0.0, \"total\": 10.0},"
    "   \"ideal\": {\"tp\": 10.0, \"pp\": 0.0, \"dp\": 0.0, \"total\": 10.0},"
    "   \"cost_ratio\": 1.0, \"frag\": 0.25},"
    " \"candidates\": ["
    "   {\"scope\": \"nvl1\", \"tier\": \"island\", \"feasible\": true, "
    "\"cost\": 10.0, \"frag\": 0.25, \"chosen\": true, \"note\": \"best so "
    "far\"},"
    "   {\"scope\": \"nvl3\", \"tier\": \"island\", \"feasible\": true, "
    "\"cost\": 10.0, \"frag\": 0.5, \"chosen\": false, \"note\": \"\"},"
    "   {\"scope\": \"leaf-group-0\", \"tier\": \"leaf\", \"feasible\": false, "
    "\"chosen\": false, \"note\": \"span leaf > island\"}]}";

static char dir[] = "/tmp/isle-explain-test.XXXXXX";

static int setup(void **state)
{
	char path[256];
	FILE *f;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/isle", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/isle/job_42.json", dir);
	f = fopen(path, "w");
	fputs(record, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/isle/job_45.json", dir);
	f = fopen(path, "w");
	fputs("{\"job_id\": 45, \"line\": \"isle: waiting: no placement now\","
	      " \"why\": \"no placement now\", \"request\": {\"tp\": 8},"
	      " \"candidates\": []}",
	      f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/isle/job_43.json", dir);
	f = fopen(path, "w");
	fputs("{\"job_id\": 43, ", f); /* truncated */
	fclose(f);
	return 0;
}

/* A record whose placement avoided a loaded leaf uplink (the contention
 * object isle_decision.c writes), and hostile forms of that object. */
static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/isle/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *render(const char *name, int json, int *rc, char *err,
		    size_t errlen);

static void test_contention(void **state)
{
	static const char *bad[] = {
	    "{\"job_id\": 47, \"line\": \"isle: tp=1\", \"contention\": 5}",
	    "{\"job_id\": 47, \"line\": \"isle: tp=1\", \"contention\": "
	    "{\"links\": \"leaf1\"}}",
	    "{\"job_id\": 47, \"line\": \"isle: tp=1\", \"contention\": "
	    "{\"links\": [5, {\"link\": [1]}, null]}}",
	};
	char err[256];
	int rc;
	char *out;

	put("job_46.json",
	    "{\"job_id\": 46, \"line\": \"isle: tp=1 pp=1 dp=8\","
	    " \"why\": \"spine-group-0 is the only scope that fits; avoided "
	    "leaf2 uplinks\","
	    " \"contention\": {\"weight\": 1.0, \"term\": 12.5, \"traffic\": "
	    "\"dp\", \"without_term\": \"n01,n04\", \"links\": ["
	    "  {\"link\": \"leaf1\", \"tier\": \"leaf\", \"load\": 4.0, "
	    "\"capacity\": 2.0, \"share\": 2.0, \"avoided\": false},"
	    "  {\"link\": \"leaf2\", \"tier\": \"leaf\", \"load\": 4.0, "
	    "\"capacity\": 2.0, \"share\": 2.0, \"avoided\": true}]}}");
	out = render("job_46.json", 0, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Contention: weight 1.00; traffic dp; term "
				    "12.5 us; without the term: nodes "
				    "n01,n04\n"));
	assert_non_null(strstr(out, "crosses  leaf1 leaf uplinks: running "
				    "jobs' load 4.0 of 2.0 GPUs of traffic "
				    "(200%)"));
	assert_non_null(strstr(out, "avoided  leaf2 leaf uplinks: running "
				    "jobs' load 4.0 of 2.0 GPUs of traffic "
				    "(200%)"));
	free(out);
	out = render("job_46.json", 1, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"avoided\""));
	free(out);
	/* a record without the object prints no contention part */
	out = render("job_42.json", 0, &rc, err, sizeof(err));
	assert_null(strstr(out, "Contention:"));
	free(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		put("job_47.json", bad[i]);
		out = render("job_47.json", 0, &rc, err, sizeof(err));
		assert_int_equal(rc, 0);
		free(out);
	}
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *render(const char *name, int json, int *rc, char *err,
		    size_t errlen)
{
	char path[256], *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	snprintf(path, sizeof(path), "%s/isle/%s", dir, name);
	*rc = isle__explain_print(path, json, NULL, 0, out, err, errlen);
	fclose(out);
	return buf;
}

static void test_text(void **state)
{
	char err[256];
	int rc;
	char *out = render("job_42.json", 0, &rc, err, sizeof(err));

	assert_int_equal(rc, 0);
	assert_non_null(
	    strstr(out, "Job 42: isle: tp=8 pp=1 dp=1 nodes=n[02-03]"));
	assert_non_null(strstr(out, "mode=required"));
	/* GPU lists are compressed into ranges. */
	assert_non_null(strstr(out, "n02 GPUs 0-3;"));
	assert_non_null(strstr(out, "n03 GPUs 0-1,4-5,7;"));
	assert_non_null(strstr(out, "1 of 1 TP groups inside one island"));
	assert_non_null(strstr(out, "ratio 1.00x"));
	/* The winner is starred, infeasible candidates have no score. */
	assert_non_null(strstr(out, "* nvl1"));
	assert_null(strstr(out, "* nvl3"));
	assert_non_null(strstr(out, "span leaf > island"));
	assert_non_null(strstr(out, "Why:        nvl1 ties on cost"));
	free(out);

	out = render("job_42.json", 1, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"job_id\""));
	free(out);
}

/* A job isle did not place: no placement section. */
static void test_no_placement(void **state)
{
	char err[256];
	int rc;
	char *out = render("job_45.json", 0, &rc, err, sizeof(err));

	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Job 45: isle: waiting: no placement now"));
	assert_non_null(strstr(out, "tp=8"));
	assert_null(strstr(out, "Placement:"));
	assert_non_null(strstr(out, "Why:        no placement now"));
	free(out);
}

/*
 * Regression: record strings with control characters (a newline or an
 * escape sequence in a name, note or why) garbled the text output's lines.
 * Text mode prints them as '?', one line per field; JSON keeps them.
 */
static void test_control_chars(void **state)
{
	static const char rec[] =
	    "{\"job_id\": 46, \"line\": \"isle: tp=4 pp=1 dp=1 nodes=n01\","
	    " \"why\": \"n\\u001b[2Jodd has the lowest modelled cost\\nsecond "
	    "line\\r\","
	    " \"candidates\": [{\"scope\": \"n\\u0007odd\", \"tier\": "
	    "\"island\", \"feasible\": true, \"cost\": 1.0, \"frag\": 0.0,"
	    " \"chosen\": true, \"note\": \"best\\tso far\"}]}";
	char path[256], err[256], *line, *end;
	int rc;
	FILE *f;
	char *out;

	snprintf(path, sizeof(path), "%s/isle/job_46.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(rec, f);
	fclose(f);
	out = render("job_46.json", 0, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	for (const char *p = out; *p; p++)
		assert_true(*p == '\n' || !iscntrl((unsigned char)*p));
	line = strstr(out, "Why:        ");
	assert_non_null(line);
	end = strchr(line, '\n');
	assert_non_null(end);
	*end = '\0';
	assert_string_equal(line, "Why:        n?[2Jodd has the lowest "
				  "modelled cost?second line?");
	*end = '\n';
	assert_non_null(strstr(out, "* n?odd"));
	assert_non_null(strstr(out, "best?so far"));
	free(out);

	out = render("job_46.json", 1, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\\nsecond line"));
	free(out);
}

static void test_bad_records(void **state)
{
	char err[256];
	int rc;
	char *out = render("job_43.json", 0, &rc, err, sizeof(err));

	assert_int_equal(rc, -EINVAL);
	assert_non_null(
	    strstr(err, "job_43.json: not a valid decision record"));
	free(out);
	out = render("job_44.json", 0, &rc, err, sizeof(err));
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(err, "job_44.json"));
	free(out);
}

static void test_command_line(void **state)
{
	char *ok[] = {"explain", "--state-dir", dir, "42", NULL};
	char *missing[] = {"explain", "--state-dir", dir, "44", NULL};
	char *bad_id[] = {"explain", "--state-dir", dir, "4x2", NULL};
	char *no_id[] = {"explain", NULL};
	FILE *saved = stdout;

	/* Keep the test output clean. */
	stdout = fopen("/dev/null", "w");
	assert_int_equal(isle__cmd_explain(4, ok), 0);
	fclose(stdout);
	stdout = saved;
	assert_int_equal(isle__cmd_explain(4, missing), 1);
	assert_int_equal(isle__cmd_explain(4, bad_id), 2);
	assert_int_equal(isle__cmd_explain(1, no_id), 2);
}

/*
 * isle's word comes from the admin_comment field of Slurm's JSON record
 * (finding 4): a user's comment that imitates "AdminComment=isle: ..." is
 * another field and never read.
 */
static void test_admin_comment(void **state)
{
	char buf[256];

	assert_int_equal(
	    isle__explain_admin_comment(
		"{\"jobs\": [{\"job_id\": 7, \"admin_comment\": \"isle: "
		"waiting: no placement now\", \"comment\": \"AdminComment="
		"isle: tp=8 placed on the best island\"}]}",
		buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "isle: waiting: no placement now");
	/* An operator's note first, then isle's segment. */
	assert_int_equal(
	    isle__explain_admin_comment(
		"{\"jobs\": [{\"admin_comment\": \"ticket 12 | isle: planned "
		"tp=8\"}]}",
		buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "isle: planned tp=8");
	/* Only the user's comment speaks of isle: nothing to show. */
	assert_int_equal(
	    isle__explain_admin_comment(
		"{\"jobs\": [{\"admin_comment\": \"\", \"comment\": "
		"\"AdminComment=isle: forged\"}]}",
		buf, sizeof(buf)),
	    -ENOENT);
	assert_int_equal(isle__explain_admin_comment(
			     "{\"jobs\": [{\"comment\": \"isle: forged\"}]}",
			     buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(
	    isle__explain_admin_comment("{\"jobs\": []}", buf, sizeof(buf)),
	    -ENOENT);
	assert_int_equal(
	    isle__explain_admin_comment("not json", buf, sizeof(buf)), -ENOENT);
}

/* The shim's report beside the decision: present, missing, unreadable,
 * no directory given; never an error. */
static void test_report(void **state)
{
	char rdir[] = "/tmp/isle-explain-reports.XXXXXX", path[256], err[256];
	struct isle_report r = {.api = "mpi", .ranks = 4};
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	assert_non_null(mkdtemp(rdir));
	r.taken[3] = 5;
	r.passed[0] = 8;
	r.sent[ISLE_SCOPE_ISLAND] = 8000000;
	r.library[ISLE_SCOPE_ISLAND] = 6000000;
	r.sent[ISLE_SCOPE_JOB] = 3000000;
	r.library[ISLE_SCOPE_JOB] = 6000000;
	r.codecs[ISLE_SCOPE_JOB] = 1u << ISLE_CODEC_INT8;
	assert_int_equal(isle_report_path(rdir, 42, path, sizeof(path)), 0);
	assert_int_equal(isle_report_save(&r, path, err, sizeof(err)), 0);

	out = open_memstream(&buf, &len);
	assert_int_equal(isle__explain_report(rdir, 42, out), 0);
	assert_int_equal(isle__explain_report(rdir, 43, out), 0);
	assert_int_equal(isle__explain_report(NULL, 42, out), 0);
	assert_int_equal(isle_report_path(rdir, 44, path, sizeof(path)), 0);
	assert_int_equal(symlink("job_42.json", path), 0);
	assert_int_equal(isle__explain_report(rdir, 44, out), 0);
	fclose(out);
	assert_non_null(strstr(buf, "Shim:       mpi, 4 ranks (report "));
	assert_non_null(
	    strstr(buf, "64 KiB - 1 MiB              5          0"));
	assert_non_null(
	    strstr(buf, "< 256 B                     0          8"));
	assert_non_null(strstr(buf, "island            8000000          6000000"
				    "   -33.3%"));
	assert_non_null(strstr(buf, "job               3000000          6000000"
				    "    50.0% int8"));
	assert_non_null(strstr(buf, "no report for job 43 in"));
	assert_non_null(strstr(buf, "no report looked for (no reports "
				    "directory"));
	assert_non_null(strstr(buf, "report unreadable: "));
	assert_non_null(strstr(buf, "job_44.json: a symbolic link"));
	free(buf);

	/* --json: the record gains the report, or null and why. */
	buf = NULL;
	out = open_memstream(&buf, &len);
	snprintf(path, sizeof(path), "%s/isle/job_42.json", dir);
	assert_int_equal(
	    isle__explain_print(path, 1, rdir, 42, out, err, sizeof(err)), 0);
	assert_int_equal(
	    isle__explain_print(path, 1, rdir, 44, out, err, sizeof(err)), 0);
	assert_int_equal(
	    isle__explain_print(path, 1, NULL, 42, out, err, sizeof(err)), 0);
	fclose(out);
	{
		json_tokener *tok = json_tokener_new();
		json_object *o[3], *rep, *v;
		const char *p = buf;

		for (int i = 0; i < 3; i++) {
			o[i] = json_tokener_parse_ex(tok, p, (int)strlen(p));
			assert_non_null(o[i]);
			p += json_tokener_get_parse_end(tok);
			json_tokener_reset(tok);
		}
		json_tokener_free(tok);
		assert_true(
		    json_object_object_get_ex(o[0], "shim_report", &rep));
		assert_true(json_object_object_get_ex(rep, "ranks", &v));
		assert_int_equal(json_object_get_int(v), 4);
		assert_true(json_object_object_get_ex(rep, "tiers", &v));
		assert_int_equal(json_object_array_length(v), 2);
		assert_false(
		    json_object_object_get_ex(o[0], "shim_report_error", &v));
		assert_true(
		    json_object_object_get_ex(o[1], "shim_report", &rep));
		assert_null(rep);
		assert_true(
		    json_object_object_get_ex(o[1], "shim_report_error", &v));
		assert_non_null(
		    strstr(json_object_get_string(v), "a symbolic link"));
		assert_false(
		    json_object_object_get_ex(o[2], "shim_report", &v));
		for (int i = 0; i < 3; i++)
			json_object_put(o[i]);
	}
	free(buf);
	snprintf(path, sizeof(path), "rm -rf '%s'", rdir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_contention),
	    cmocka_unit_test(test_report),
	    cmocka_unit_test(test_admin_comment),
	    cmocka_unit_test(test_no_placement),
	    cmocka_unit_test(test_control_chars),
	    cmocka_unit_test(test_bad_records),
	    cmocka_unit_test(test_command_line),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
