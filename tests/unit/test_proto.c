/*
 * test_proto - every reader and writer of proto/ against golden files:
 *   tests/golden/plan/     good-*.json read, written back, equal to
 *                          good-*.out and read again to the same text;
 *                          bad-*.json fail with exactly the line in bad-*.err
 *   tests/golden/proto/codec.in     one spec per line -> codec.out
 *                                   (canonical form or the error)
 *   tests/golden/proto/jobopt.in    "[env] OPTION VALUE" -> jobopt.out
 *   tests/golden/proto/table.out    the job option table
 *   tests/golden/proto/layout.out   run-dir names, cluster-file lookup,
 *                                   record names
 *   tests/golden/proto/record-*.json  decision records -> record-*.out
 * ISLE_GOLDEN_UPDATE=1 rewrites the expected files (review the diff).
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
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "isle_proto.h"
#include "test_plan_text.h"

#ifndef PROTO_GOLDEN_DIR
#define PROTO_GOLDEN_DIR "tests/golden/proto"
#endif

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void expect_file(const char *path, const char *got)
{
	char *want;

	if (getenv("ISLE_GOLDEN_UPDATE")) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(got, f);
		fclose(f);
		return;
	}
	want = slurp(path);
	if (!want)
		fail_msg("missing golden file %s (ISLE_GOLDEN_UPDATE=1)", path);
	if (strcmp(want, got))
		fail_msg("%s differs:\n--- want\n%s--- got\n%s", path, want,
			 got);
	free(want);
}

/* An in-memory stream the checks write their results to. */
struct out {
	char *buf;
	size_t len;
	FILE *f;
};

static void out_open(struct out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	assert_non_null(o->f);
}

static void out_check(struct out *o, const char *golden)
{
	char path[1024];

	fclose(o->f);
	snprintf(path, sizeof(path), "%s/%s", PROTO_GOLDEN_DIR, golden);
	expect_file(path, o->buf);
	free(o->buf);
}

static void test_plan_golden(void **state)
{
	char dir[512];
	DIR *d;
	struct dirent *e;
	int ngood = 0, nbad = 0;

	snprintf(dir, sizeof(dir), "%s/../plan", PROTO_GOLDEN_DIR);
	assert_int_equal(chdir(dir), 0);
	d = opendir(".");
	assert_non_null(d);
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		size_t len = strlen(name);
		char exp[512], err[512] = "";
		struct isle_plan *p = NULL, *p2 = NULL;
		int rc, compressed = 0;

		if (len < 6 || strcmp(name + len - 5, ".json"))
			continue;
		snprintf(exp, sizeof(exp), "%.*s.%s", (int)(len - 5), name,
			 name[0] == 'g' ? "out" : "err");
		rc = isle_plan_read(name, &p, err, sizeof(err));
		if (!strncmp(name, "good-", 5)) {
			char *text, *text2;

			if (rc)
				fail_msg("%s: %s", name, err);
			assert_int_equal(p->version, ISLE_PLAN_VERSION);
			text = test_plan_text(p);
			/* The preload's libc-only scan agrees with the
			 * reader. */
			for (int j = 0; j < p->nlevels; j++)
				compressed |=
				    p->levels[j].codec.kind != ISLE_CODEC_NONE;
			assert_int_equal(isle_plan_text_compresses(text),
					 compressed);
			expect_file(exp, text);
			/* What the writer emits reads back the same. */
			rc = isle_plan_parse(text, strlen(text), name, &p2, err,
					     sizeof(err));
			if (rc)
				fail_msg("%s (rewritten): %s", name, err);
			text2 = test_plan_text(p2);
			assert_string_equal(text, text2);
			assert_true(isle_plan_hash(p) == isle_plan_hash(p2));
			free(text);
			free(text2);
			isle_plan_destroy(p2);
			ngood++;
		} else if (!strncmp(name, "bad-", 4)) {
			if (!rc)
				fail_msg("%s: read, expected an error", name);
			assert_null(p);
			assert_int_equal(rc, -EINVAL);
			strcat(err, "\n");
			expect_file(exp, err);
			nbad++;
		}
		isle_plan_destroy(p);
	}
	closedir(d);
	assert_true(ngood >= 3);
	assert_true(nbad >= 10);
}

static void test_plan_missing(void **state)
{
	struct isle_plan *p = (struct isle_plan *)1;
	char err[256];

	assert_int_equal(
	    isle_plan_read("/nonexistent/plan.json", &p, err, sizeof(err)),
	    -ENOENT);
	assert_null(p);
	assert_non_null(strstr(err, "/nonexistent/plan.json"));
}

/* Lines of a golden input, without the newline; blank lines and lines
 * starting with '#' are skipped. Calls fn for each. */
static void each_line(const char *golden, void (*fn)(FILE *, char *), FILE *o)
{
	char path[512], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", PROTO_GOLDEN_DIR, golden);
	f = fopen(path, "r");
	if (!f)
		fail_msg("missing %s", path);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		fn(o, line);
	}
	fclose(f);
}

static void codec_line(FILE *o, char *spec)
{
	struct isle_codec c, d;
	char buf[ISLE_CODEC_SPEC_MAX + 1], again[ISLE_CODEC_SPEC_MAX + 1];
	char err[256];

	if (isle_codec_parse(spec, &c, err, sizeof(err))) {
		fprintf(o, "%-24s error: %s\n", spec, err);
		return;
	}
	assert_true(isle_codec_format(&c, buf, sizeof(buf)) < (int)sizeof(buf));
	/* The canonical form parses to the same codec and formats alike. */
	assert_int_equal(isle_codec_parse(buf, &d, err, sizeof(err)), 0);
	isle_codec_format(&d, again, sizeof(again));
	assert_string_equal(buf, again);
	assert_int_equal(c.kind, d.kind);
	assert_int_equal(c.error_feedback, d.error_feedback);
	assert_true(c.momentum == d.momentum);
	assert_int_equal(c.warm, d.warm);
	assert_int_equal(c.mask_stale, d.mask_stale);
	assert_int_equal(isle_codec_spec_compresses(spec),
			 c.kind != ISLE_CODEC_NONE);
	fprintf(o, "%-24s %s (kind %s, block %u, ef %d, mom %.17g", spec, buf,
		isle_codec_kind_name(c.kind), c.block, c.error_feedback,
		c.momentum);
	/* Only where set: the lines of codecs without warm-up stay as they
	 * were. */
	if (c.warm)
		fprintf(o, ", warm %u", c.warm);
	if (c.mask_stale)
		fprintf(o, ", mask stale");
	fprintf(o, ")\n");
}

/* The default per tier is a codec the parser takes; past the tiers, none. */
static void test_codec_tier_default(void **state)
{
	static const char *const want[] = {"none", "none", "int8", "int8",
					   "int8"};
	struct isle_codec c;
	char err[128];

	(void)state;
	for (int t = 0; t < 5; t++) {
		assert_string_equal(isle_codec_tier_default(t), want[t]);
		assert_int_equal(isle_codec_parse(isle_codec_tier_default(t),
						  &c, err, sizeof(err)),
				 0);
	}
	assert_null(isle_codec_tier_default(-1));
	assert_null(isle_codec_tier_default(5));
}

static void test_codec_golden(void **state)
{
	struct out o;

	out_open(&o);
	each_line("codec.in", codec_line, o.f);
	out_check(&o, "codec.out");
}

static int opt_by_name(const char *name)
{
	for (int opt = 1; isle_job_opt_desc(opt); opt++)
		if (!strcmp(isle_job_opt_desc(opt)->name, name))
			return opt;
	return 0;
}

/* "[env] OPTION VALUE": the user's parser (or the environment's), then
 * what travels in the environment and that it reads back. */
static void jobopt_line(FILE *o, char *line)
{
	struct isle_job_opts opts = {0}, back = {0};
	char *name = line, *val, buf[64], err[256];
	int env = 0, opt, rc;

	if (!strncmp(line, "env ", 4)) {
		env = 1;
		name = line + 4;
	}
	val = strchr(name, ' ');
	if (val)
		*val++ = '\0';
	opt = opt_by_name(name);
	rc = env ? isle_job_env_parse(&opts, opt, val, err, sizeof(err))
		 : isle_job_opt_parse(&opts, opt, val, err, sizeof(err));
	fprintf(o, "%s%s %s: ", env ? "env " : "", name, val ? val : "(null)");
	if (rc) {
		assert_int_equal(rc, -EINVAL);
		assert_int_equal(opts.set, 0);
		fprintf(o, "error: %s\n", err);
		return;
	}
	assert_int_equal(opts.set, 1u << opt);
	isle_job_opt_format(&opts, opt, buf, sizeof(buf));
	if (isle_job_env_parse(&back, opt, buf, err, sizeof(err)))
		fail_msg("%s=%s does not read back: %s",
			 isle_job_opt_desc(opt)->env, buf, err);
	fprintf(o, "%s=%s\n", isle_job_opt_desc(opt)->env, buf);
}

static void test_jobopt_golden(void **state)
{
	struct out o;

	out_open(&o);
	each_line("jobopt.in", jobopt_line, o.f);
	out_check(&o, "jobopt.out");
}

static void test_jobopt_table(void **state)
{
	struct out o;
	int opt;

	out_open(&o);
	fprintf(o.f, "max tp %d, max pp %d\n", ISLE_JOB_MAX_TP,
		ISLE_JOB_MAX_PP);
	for (opt = 1; isle_job_opt_desc(opt); opt++) {
		const struct isle_job_opt_desc *d = isle_job_opt_desc(opt);

		fprintf(o.f, "%d --%s=%s %s\n  %s\n  expects %s\n", opt,
			d->name, d->arginfo, d->env, d->usage, d->expect);
	}
	assert_int_equal(opt, ISLE_OPT_COUNT);
	assert_null(isle_job_opt_desc(0));
	out_check(&o, "table.out");
}

static void test_layout_golden(void **state)
{
	static const char *const names[] = {
	    "job_42.json",  "job_42.json.new",	   "job_0.json", "job_x.json",
	    "job_42.jsonx", "job_4294967296.json", "other.json", "job_.json"};
	struct out o;
	char buf[256], dir[256];
	uint32_t id;

	out_open(&o);
	fprintf(o.f, "run dir: %s %s %s %s\n", ISLE_RUNDIR_PLAN,
		ISLE_RUNDIR_NCCL_XML, ISLE_RUNDIR_NCCL_ENV, ISLE_RUNDIR_ERROR);
	fprintf(o.f, "node JSON: \"%s\": %d\n", ISLE_NODE_JSON_KEY,
		ISLE_NODE_JSON_VERSION);

	setenv("SLURM_CONF", "/etc/slurm-x/slurm.conf", 1);
	assert_int_equal(isle_cluster_file_path(NULL, buf, sizeof(buf)), 0);
	fprintf(o.f, "cluster, SLURM_CONF=/etc/slurm-x/slurm.conf: %s\n", buf);
	unsetenv("SLURM_CONF");
	assert_int_equal(isle_cluster_file_path("", buf, sizeof(buf)), 0);
	fprintf(o.f, "cluster, no SLURM_CONF: %s\n", buf);
	assert_int_equal(
	    isle_cluster_file_path("/opt/slurm/etc/", buf, sizeof(buf)), 0);
	fprintf(o.f, "cluster, conf dir /opt/slurm/etc/: %s\n", buf);
	assert_int_equal(isle_cluster_file_path("/", buf, sizeof(buf)), 0);
	fprintf(o.f, "cluster, conf dir /: %s\n", buf);
	assert_int_equal(isle_cluster_file_path("/etc", buf, 8), -ENAMETOOLONG);

	assert_int_equal(isle_record_dir("/var/spool/slurm", dir, sizeof(dir)),
			 0);
	fprintf(o.f, "records: %s\n", dir);
	assert_int_equal(isle_record_path(dir, 42, "", buf, sizeof(buf)), 0);
	fprintf(o.f, "record 42: %s\n", buf);
	assert_int_equal(
	    isle_record_path(dir, 42, ISLE_RECORD_PARTIAL, buf, sizeof(buf)),
	    0);
	fprintf(o.f, "record 42 being written: %s\n", buf);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int rc;

		id = 0;
		rc = isle_record_name_parse(names[i], &id);
		fprintf(o.f, "name %s: %s id %u\n", names[i],
			rc == 0		? "record"
			: rc == -EAGAIN ? "partial"
					: "not a record",
			rc == -EINVAL ? 0 : id);
	}
	out_check(&o, "layout.out");
}

static void test_record_golden(void **state)
{
	DIR *d = opendir(PROTO_GOLDEN_DIR);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		size_t len = strlen(name);
		char path[512], exp[512], err[512];
		void *rec = NULL;
		struct out o;
		int rc;

		if (strncmp(name, "record-", 7) || len < 6 ||
		    strcmp(name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", PROTO_GOLDEN_DIR, name);
		snprintf(exp, sizeof(exp), "%.*s.out", (int)(len - 5), name);
		out_open(&o);
		rc = isle_record_read(path, &rec, err, sizeof(err));
		if (rc) {
			assert_null(rec);
			/* The message names the file; the golden file keeps
			 * the part after the directory. */
			fprintf(o.f, "error %d: %s\n", rc,
				strstr(err, name) ? strstr(err, name) : err);
		} else {
			fprintf(o.f, "%s\n",
				json_object_to_json_string_ext(
				    rec, JSON_C_TO_STRING_PRETTY |
					     JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(rec);
		}
		out_check(&o, exp);
		n++;
	}
	closedir(d);
	assert_true(n >= 4);
}

/* Shim reports: report-*.json read, written back (the written form reads
 * back equal), and the ISLE_REPORT=1 line; or the reader's error. */
static void test_report_golden(void **state)
{
	DIR *d = opendir(PROTO_GOLDEN_DIR);
	struct dirent *e;
	int n = 0;

	(void)state;
	assert_non_null(d);
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		size_t len = strlen(name);
		char path[512], exp[512], err[512], line[1024];
		struct isle_report r, back;
		char *text = NULL;
		size_t tlen = 0;
		struct out o;
		FILE *f;
		int rc;

		if (strncmp(name, "report-", 7) || len < 6 ||
		    strcmp(name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", PROTO_GOLDEN_DIR, name);
		snprintf(exp, sizeof(exp), "%.*s.out", (int)(len - 5), name);
		out_open(&o);
		rc = isle_report_read(path, &r, err, sizeof(err));
		if (rc) {
			fprintf(o.f, "error %d: %s\n", rc,
				strstr(err, name) ? strstr(err, name) : err);
		} else {
			f = open_memstream(&text, &tlen);
			assert_non_null(f);
			assert_int_equal(isle_report_write(&r, f), 0);
			fclose(f);
			assert_int_equal(isle_report_parse(text, tlen, "back",
							   &back, err,
							   sizeof(err)),
					 0);
			assert_memory_equal(&r, &back, sizeof(r));
			isle_report_line(&r, line, sizeof(line));
			fprintf(o.f, "%s%s\n", text, line);
			free(text);
		}
		out_check(&o, exp);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
	/* Path names: each reads back as itself, nothing else reads. */
	for (int p = 0; p < ISLE_REPORT_PATHS; p++)
		assert_int_equal(
		    isle_report_path_parse(isle_report_path_name(p)), p);
	assert_string_equal(isle_report_path_name(ISLE_REPORT_MPICH_SMP),
			    "mpich:smp");
	assert_int_equal(isle_report_path_parse("smp"), -EINVAL);
	assert_int_equal(isle_report_path_parse("?"), -EINVAL);
	/* Class bounds. */
	assert_int_equal(isle_report_class(0), 0);
	assert_int_equal(isle_report_class(255), 0);
	assert_int_equal(isle_report_class(256), 1);
	assert_int_equal(isle_report_class(4095), 1);
	assert_int_equal(isle_report_class(4096), 2);
	assert_int_equal(isle_report_class(1 << 20), 4);
	assert_int_equal(isle_report_class((16u << 20) - 1), 4);
	assert_int_equal(isle_report_class(16u << 20), 5);
	assert_int_equal(isle_report_class(UINT64_MAX), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec_golden),
	    cmocka_unit_test(test_codec_tier_default),
	    cmocka_unit_test(test_jobopt_golden),
	    cmocka_unit_test(test_jobopt_table),
	    cmocka_unit_test(test_layout_golden),
	    cmocka_unit_test(test_record_golden),
	    cmocka_unit_test(test_report_golden),
	    cmocka_unit_test(test_plan_missing),
	    /* Last: it changes the working directory. */
	    cmocka_unit_test(test_plan_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
