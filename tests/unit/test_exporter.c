/*
 * test_exporter.c - isle-exporter's readers (GRES strings, scontrol's node
 * JSON and topology text, decision records through proto), the store's
 * incremental scan, the fragmentation score and both renderings.
 */
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

#include "isle_exporter.h"

static void test_gres(void **state)
{
	static const struct {
		const char *s;
		int rc, n;
	} cases[] = {
	    {"gpu:4", 0, 4},
	    {"gpu:0", 0, 0},
	    {"gpu:a100:2(IDX:0-1)", 0, 2},
	    {"gpu:a100:2(IDX:0,2),gpu:h100:1(IDX:3)", 0, 3},
	    {"shard:8,gpu:2", 0, 2},
	    {"gpus:2", 0, 0},
	    {"gpu", 0, 1},
	    {"N/A", 0, 0},
	    {"(null)", 0, 0},
	    {"", 0, 0},
	    {"gpu:x", -EINVAL, 0},
	    {"gpu:2(IDX:0", -EINVAL, 0},
	    {"gpu:-1", -EINVAL, 0},
	    {"gpu:99999999999", -EINVAL, 0},
	    {"gpu:2)", -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = -1, rc = isle_exp_gres_gpus(cases[i].s, &n);

		if (rc != cases[i].rc || (!rc && n != cases[i].n))
			fail_msg("'%s': rc %d n %d", cases[i].s, rc, n);
	}
}

static void test_nodes(void **state)
{
	static const char json[] =
	    "{\"nodes\": ["
	    "{\"name\": \"n01\", \"gres\": \"gpu:4\", \"gres_used\": "
	    "\"gpu:2(IDX:0-1)\", \"state\": [\"MIXED\"]},"
	    "{\"name\": \"n02\", \"gres\": \"gpu:4\", \"gres_used\": \"gpu:0\","
	    " \"state\": [\"IDLE\", \"DRAIN\"]},"
	    "{\"name\": \"n03\", \"gres\": \"gpu:4\", \"gres_used\": \"gpu:0\","
	    " \"state\": [\"IDLE\", \"POWERED_DOWN\"]},"
	    "{\"name\": \"n04\", \"gres\": \"\", \"state\": [\"DOWN\", "
	    "\"NOT_RESPONDING\"]}]}";
	struct isle_exp_nodes n;
	char err[256];

	(void)state;
	assert_int_equal(
	    isle_exp_nodes_parse(json, strlen(json), "t", &n, err, sizeof(err)),
	    0);
	assert_int_equal(n.n, 4);
	assert_string_equal(n.v[0].name, "n01");
	assert_int_equal(n.v[0].gpus, 4);
	assert_int_equal(n.v[0].used, 2);
	assert_int_equal(n.v[0].usable, 1);
	assert_int_equal(n.v[1].usable, 0);
	assert_int_equal(n.v[2].usable, 1);
	assert_int_equal(n.v[3].gpus, 0);
	assert_int_equal(n.v[3].usable, 0);
	isle_exp_nodes_free(&n);

	assert_int_equal(isle_exp_nodes_parse("{\"nodes\": [", 11, "t", &n, err,
					      sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t: not JSON"));
	assert_int_equal(
	    isle_exp_nodes_parse("{}", 2, "t", &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "$.nodes"));
	assert_int_equal(
	    isle_exp_nodes_parse("{\"nodes\": [{\"name\": \"a\", \"gres\": "
				 "\"gpu:zz\"}]}",
				 44, "t", &n, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "$.nodes[0].gres"));
}

static const char topo_ok[] =
    "Topology=isle Cluster=gb200-test File=/etc/slurm/isle.json Status=ok "
    "GPUs=16 FreeGPUs=10\n"
    "RackName=rack1 Nodes=n[01-04] GPUs=16 FreeGPUs=10\n"
    "IslandName=nvl1 Type=nvlink-domain Nodes=n[01-02] GPUs=8 FreeGPUs=2\n"
    "IslandName=nvl2 Type=nvlink-domain Nodes=n[03-04] GPUs=8 FreeGPUs=8\n"
    "SwitchName=leaf1 Level=leaf Nodes=n[01-04] GPUs=16 FreeGPUs=10\n"
    "IsleEval Calls=5120 MeanUs=210 P50Us=68 P99Us=4352 MaxUs=9187 "
    "SumUs=1075300 BucketsUs=50:1000,100:3000,5000:5100,+Inf:5120\n";

static void test_topology(void **state)
{
	static const char fb[] =
	    "Topology=isle File=/etc/slurm/isle.json Status=fallback "
	    "Error=\"/etc/slurm/isle.json: $.nodes: bad \\\"x\\\" here\"\n"
	    "IsleEval Calls=0\n";
	struct isle_exp_topo t;
	char err[256];

	(void)state;
	assert_int_equal(isle_exp_topo_parse(topo_ok, &t, err, sizeof(err)), 0);
	assert_int_equal(t.fallback, 0);
	assert_string_equal(t.cluster, "gb200-test");
	assert_string_equal(t.file, "/etc/slurm/isle.json");
	assert_int_equal(t.gpus, 16);
	assert_int_equal(t.free_gpus, 10);
	assert_int_equal(t.nislands, 2);
	assert_string_equal(t.islands[1].name, "nvl2");
	assert_int_equal(t.islands[0].multi, 1);
	assert_int_equal(t.islands[0].free_gpus, 2);
	assert_int_equal(t.have_eval, 1);
	assert_int_equal(t.eval_calls, 5120);
	assert_int_equal(t.eval_p99_us, 4352);
	assert_int_equal(t.eval_sum_us, 1075300);
	assert_int_equal(t.neval_le, 3);
	assert_int_equal(t.eval_le_us[2], 5000);
	assert_int_equal(t.eval_le_count[2], 5100);
	isle_exp_topo_free(&t);

	/* A plugin without buckets: no bounds, the sum from the mean. */
	assert_int_equal(
	    isle_exp_topo_parse("Topology=isle Status=ok GPUs=4 FreeGPUs=4\n"
				"IsleEval Calls=10 MeanUs=7 P50Us=6 P99Us=9 "
				"MaxUs=9\n",
				&t, err, sizeof(err)),
	    0);
	assert_int_equal(t.have_eval, 1);
	assert_int_equal(t.neval_le, 0);
	assert_int_equal(t.eval_sum_us, 70);
	isle_exp_topo_free(&t);

	/* Buckets that are not cumulative, not ascending or not ending in
	 * the call count: the line is left out, the rest still reads. */
	static const char *const bad[] = {
	    "50:5,100:4,+Inf:10", "100:1,50:2,+Inf:10", "50:1,100:2,+Inf:9",
	    "50:1,100:2",	  "50:x,+Inf:10",	"50:1,,+Inf:10",
	    "-5:1,+Inf:10",	  "50:1,+Inf:10x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];

		snprintf(text, sizeof(text),
			 "Topology=isle Status=ok GPUs=4 FreeGPUs=4\n"
			 "IsleEval Calls=10 MeanUs=7 P50Us=6 P99Us=9 MaxUs=9 "
			 "SumUs=70 BucketsUs=%s\n",
			 bad[i]);
		assert_int_equal(
		    isle_exp_topo_parse(text, &t, err, sizeof(err)), 0);
		assert_int_equal(t.have_eval, 0);
		isle_exp_topo_free(&t);
	}

	assert_int_equal(isle_exp_topo_parse(fb, &t, err, sizeof(err)), 0);
	assert_int_equal(t.fallback, 1);
	assert_int_equal(t.nislands, 0);
	assert_non_null(strstr(t.error, "$.nodes"));
	assert_int_equal(t.have_eval, 1);
	assert_int_equal(t.eval_calls, 0);
	isle_exp_topo_free(&t);

	assert_int_equal(isle_exp_topo_parse("SwitchName=s1 Nodes=n1\n", &t,
					     err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "does not run topology/isle"));
	assert_int_equal(
	    isle_exp_topo_parse("Topology=isle Status=ok GPUs=4 FreeGPUs=4\n"
				"IslandName=a GPUs=4 FreeGPUs=5\n",
				&t, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "line 2"));
}

static void test_record_info(void **state)
{
	static const struct {
		const char *line;
		int outcome;
	} lines[] = {
	    {"isle: tp=8 pp=1", ISLE_OUTCOME_PLACED},
	    {"isle: planned tp=8", ISLE_OUTCOME_PLANNED},
	    {"isle: default selection: x", ISLE_OUTCOME_DEFAULT},
	    {"isle: fallback (cannot load): Slurm's default selection",
	     ISLE_OUTCOME_FALLBACK},
	    {"isle: waiting: fallback (x)", ISLE_OUTCOME_WAITING},
	    {"isle: refused: tp=16", ISLE_OUTCOME_REFUSED},
	    {"something else", ISLE_OUTCOME_OTHER},
	};
	struct isle_record_info in;
	void *rec;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(isle_record_outcome_of(lines[i].line),
				 lines[i].outcome);
	assert_string_equal(isle_record_outcome_name(ISLE_OUTCOME_DEFAULT),
			    "default_selection");
	assert_null(isle_record_outcome_name(ISLE_OUTCOME_COUNT));
	/* The writer's heads read back as their outcomes. */
	for (int o = 0; o < ISLE_OUTCOME_OTHER; o++)
		assert_int_equal(
		    isle_record_outcome_of(isle_record_outcome_prefix(o)), o);
	assert_null(isle_record_outcome_prefix(ISLE_OUTCOME_OTHER));
	assert_null(isle_record_outcome_prefix(-1));

	/* A record without a placement (proto's golden file). */
	assert_int_equal(isle_record_read(PROTO_GOLDEN_DIR "/record-good.json",
					  &rec, err, sizeof(err)),
			 0);
	isle_record_info(rec, &in);
	json_object_put(rec);
	assert_int_equal(in.job_id, 42);
	assert_int_equal(in.time, 1700000000);
	assert_int_equal(in.outcome, ISLE_OUTCOME_PLACED);
	assert_int_equal(in.tp_groups, -1);
	assert_true(in.cost_ratio < 0);
}

static char tmpdir[] = "/tmp/isle-test-exporter.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp~", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	/* As topology/isle's writer does: a new inode renamed over. */
	assert_int_equal(rename(tmp, path), 0);
}

static void rm(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	assert_int_equal(unlink(path), 0);
}

#define PLACED(id, groups, inside, ratio)                                      \
	"{\"job_id\": " #id ", \"line\": \"isle: tp=4 pp=1\", \"placement\": " \
	"{\"tp_groups\": " #groups ", \"tp_in_island\": " #inside              \
	", \"cost_ratio\": " #ratio "}}"

static void test_store(void **state)
{
	const struct isle_exp_store_stats *st;
	isle_exp_store *s;
	char err[512];

	(void)state;
	assert_non_null(mkdtemp(tmpdir));
	s = isle_exp_store_create(tmpdir);
	assert_non_null(s);
	st = isle_exp_store_stats(s);

	put("job_1.json", PLACED(1, 2, 1, 1.2));
	put("job_2.json.new", "{\"job_id\": 2, \"li"); /* being written */
	put("job_3.json", "{\"job_id\": 3, \"line\""); /* garbage */
	put("job_4.json", PLACED(5, 1, 1, 1.0));       /* another job's */
	put("notes.txt", "not a record");
	put("job_6.json",
	    "{\"job_id\": 6, \"line\": \"isle: fallback (x): Slurm's default "
	    "selection\"}");
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 2);
	assert_int_equal(st->partial, 1);
	assert_int_equal(st->unreadable, 2);
	assert_int_equal(st->decisions[ISLE_OUTCOME_PLACED], 1);
	assert_int_equal(st->decisions[ISLE_OUTCOME_FALLBACK], 1);
	assert_int_equal(st->tp_groups_placed, 2);
	assert_int_equal(st->tp_groups_split, 1);
	assert_int_equal(st->cost_count, 1);
	assert_int_equal(st->cost_le[0], 0); /* le 1 */
	assert_int_equal(st->cost_le[3], 1); /* le 1.25 */

	/* Rewritten (a new inode): read again, not counted again; the
	 * partial one done; the garbage one fixed: counted now. */
	put("job_1.json", PLACED(1, 2, 1, 1.2));
	rm("job_2.json.new");
	put("job_2.json", PLACED(2, 4, 4, 1.0));
	put("job_3.json", PLACED(3, 1, 0, 3.0));
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 4);
	assert_int_equal(st->partial, 0);
	assert_int_equal(st->unreadable, 1);
	assert_int_equal(st->decisions[ISLE_OUTCOME_PLACED], 3);
	assert_int_equal(st->tp_groups_placed, 7);
	assert_int_equal(st->tp_groups_split, 2);
	assert_int_equal(st->cost_le[0], 1);
	assert_int_equal(st->cost_le[6], 3); /* le 4 */

	/* Purged and brought back: counters keep their values. */
	rm("job_1.json");
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 3);
	put("job_1.json", PLACED(1, 2, 1, 1.2));
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 4);
	assert_int_equal(st->decisions[ISLE_OUTCOME_PLACED], 3);

	/* Many: the table grows. */
	for (int i = 100; i < 3100; i++) {
		char name[64], text[256];

		snprintf(name, sizeof(name), "job_%d.json", i);
		snprintf(text, sizeof(text),
			 "{\"job_id\": %d, \"line\": \"isle: default "
			 "selection: x\"}",
			 i);
		put(name, text);
	}
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 3004);
	assert_int_equal(st->decisions[ISLE_OUTCOME_DEFAULT], 3000);
	for (int i = 100; i < 3100; i++) {
		char name[64];

		snprintf(name, sizeof(name), "job_%d.json", i);
		rm(name);
	}
	rm("job_1.json");
	rm("job_2.json");
	rm("job_3.json");
	rm("job_4.json");
	rm("job_6.json");
	rm("notes.txt");
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->records, 0);
	assert_int_equal(st->decisions[ISLE_OUTCOME_DEFAULT], 3000);
	assert_int_equal(rmdir(tmpdir), 0);
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), -ENOENT);
	isle_exp_store_destroy(s);
}

/* 4 nodes of 4 GPUs: n01-n02 one NVLink domain, n03-n04 two NVLink pairs
 * each; one leaf. */
static const char cluster[] =
    "{\"version\": 1, \"name\": \"t\", \"nodes\": ["
    "{\"name\": \"n01\", \"gpus\": 4}, {\"name\": \"n02\", \"gpus\": 4},"
    "{\"name\": \"n03\", \"gpus\": 4, \"nvlinks\": [[0,1,4],[2,3,4]]},"
    "{\"name\": \"n04\", \"gpus\": 4, \"nvlinks\": [[0,1,4],[2,3,4]]}],"
    "\"domains\": [{\"name\": \"nvl1\", \"nodes\": [\"n01\", \"n02\"]}],"
    "\"switches\": [{\"name\": \"leaf1\", \"level\": \"leaf\", \"nodes\": "
    "[\"n[01-04]\"]}]}";

static void test_fragmentation(void **state)
{
	isle_topo *t;
	isle_place_ctx *c;
	struct isle_exp_topo st = {0};
	struct isle_exp_nodes nodes = {0};
	struct isle_exp_node nv[4] = {{"n01", 4, 1, 1},
				      {"n02", 4, 0, 1},
				      {"n03", 4, 1, 1},
				      {"n04", 4, 0, 0}};
	struct isle_exp_island isl[5];
	uint64_t masks[4];
	char err[512];
	double f, want;

	(void)state;
	assert_int_equal(
	    isle_topo_load_buf(cluster, "t.json", &t, err, sizeof(err)), 0);
	c = isle_place_create(t, NULL);
	assert_non_null(c);
	/* What topology/isle would print for: n01 GPU 3 busy, n03 GPU 1
	 * busy, n04 drained. */
	isl[0] = (struct isle_exp_island){"nvl1", 1, 8, 7};
	isl[1] = (struct isle_exp_island){"n03:nvl0", 0, 2, 1};
	isl[2] = (struct isle_exp_island){"n03:nvl1", 0, 2, 2};
	isl[3] = (struct isle_exp_island){"n04:nvl0", 0, 2, 0};
	isl[4] = (struct isle_exp_island){"n04:nvl1", 0, 2, 0};
	for (int i = 1; i < 5; i++)
		assert_true(isle_topo_find_island(t, isl[i].name) >= 0);
	st.nislands = 5;
	st.islands = isl;
	nodes.n = 4;
	nodes.v = nv;
	f = isle_exp_fragmentation(c, t, &st, &nodes);
	masks[isle_topo_find_node(t, "n01")] = 0x7;
	masks[isle_topo_find_node(t, "n02")] = 0xf;
	masks[isle_topo_find_node(t, "n03")] = 0xd;
	masks[isle_topo_find_node(t, "n04")] = 0x0;
	want = isle_place_fragmentation(c, masks);
	assert_true(want > 0);
	assert_true(f == want);

	/* An island the model does not have: unknown. */
	isl[2].name = "zz";
	assert_true(isle_exp_fragmentation(c, t, &st, &nodes) < 0);
	isle_place_destroy(c);
	isle_topo_destroy(t);
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

static void test_render(void **state)
{
	struct isle_exp_topo st;
	struct isle_exp_store_stats ss = {0};
	struct isle_exp_node nv[2] = {{"n01", 4, 3, 1}, {"n02", 4, 0, 0}};
	struct isle_exp_nodes nodes = {2, nv};
	struct isle_exp_snapshot s = {.fragmentation = 0.25};
	char err[256], *om, *txt;
	size_t len;

	(void)state;
	assert_int_equal(isle_exp_topo_parse(topo_ok, &st, err, sizeof(err)),
			 0);
	free(st.cluster);
	st.cluster = strdup("a\"b\\c\nd");
	ss.decisions[ISLE_OUTCOME_PLACED] = 3;
	ss.tp_groups_split = 1;
	s.slurm_topo = &st;
	s.nodes = &nodes;
	s.store = &ss;
	s.src[ISLE_EXP_SRC_STORE].up = 1;
	om = isle_exp_render(&s, ISLE_EXP_OPENMETRICS, &len);
	assert_non_null(om);
	assert_int_equal(strlen(om), len);
	assert_true(len > 6 && !strcmp(om + len - 6, "# EOF\n"));
	assert_true(has_line(om, "# TYPE isle_decisions counter"));
	assert_true(has_line(om, "isle_decisions_total{outcome=\"placed\"} 3"));
	assert_true(has_line(om, "isle_tp_groups_split_total 1"));
	assert_true(has_line(om, "# UNIT isle_eval_duration_seconds seconds"));
	assert_true(
	    has_line(om, "# TYPE isle_eval_duration_seconds histogram"));
	assert_true(has_line(om,
			     "isle_eval_duration_seconds_bucket{le=\"5e-05\"} "
			     "1000"));
	assert_true(has_line(om,
			     "isle_eval_duration_seconds_bucket{le=\"0.005\"} "
			     "5100"));
	assert_true(has_line(om,
			     "isle_eval_duration_seconds_bucket{le=\"+Inf\"} "
			     "5120"));
	assert_true(has_line(om, "isle_eval_duration_seconds_sum 1.0753"));
	assert_true(has_line(om, "isle_eval_duration_seconds_count 5120"));
	assert_true(has_line(om, "isle_islands{island_gpus=\"8\"} 2"));
	assert_true(has_line(om, "isle_islands_free{island_gpus=\"8\"} 1"));
	assert_true(has_line(om, "isle_gpus{state=\"free\"} 1"));
	assert_true(has_line(om, "isle_gpus{state=\"allocated\"} 3"));
	assert_true(has_line(om, "isle_gpus{state=\"unavailable\"} 4"));
	assert_true(has_line(om, "isle_fragmentation_ratio 0.25"));
	assert_true(has_line(om, "isle_fallback 0"));
	assert_true(has_line(om, "# TYPE isle_cluster info"));
	assert_true(has_line(om,
			     "isle_cluster_info{cluster=\"a\\\"b\\\\c\\nd\","
			     "file=\"/etc/slurm/isle.json\"} 1"));
	assert_true(
	    has_line(om, "isle_exporter_source_up{source=\"store\"} 1"));
	assert_true(
	    has_line(om, "isle_placement_cost_ratio_bucket{le=\"+Inf\"} 0"));

	txt = isle_exp_render(&s, ISLE_EXP_TEXT, &len);
	assert_non_null(txt);
	assert_null(strstr(txt, "# EOF"));
	assert_null(strstr(txt, "# UNIT"));
	assert_true(has_line(txt, "# TYPE isle_decisions_total counter"));
	assert_true(has_line(txt, "# TYPE isle_cluster_info gauge"));
	assert_true(
	    has_line(txt, "isle_decisions_total{outcome=\"placed\"} 3"));
	free(om);
	free(txt);
	isle_exp_topo_free(&st);

	assert_int_equal(isle_exp_negotiate(NULL), ISLE_EXP_TEXT);
	assert_int_equal(isle_exp_negotiate("*/*"), ISLE_EXP_TEXT);
	assert_int_equal(
	    isle_exp_negotiate("application/openmetrics-text;version=1.0.0,"
			       "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
	    ISLE_EXP_OPENMETRICS);
}

/* A report of `taken` 64 KiB calls, 2 passed small ones, 1000 bytes sent
 * and 3000 the library's through the node tier. */
static void put_report(const char *dir, const char *name, int taken)
{
	struct isle_report r = {.api = "mpi", .ranks = 2};
	char path[512], err[256];

	r.taken[3] = (uint64_t)taken;
	r.passed[0] = 2;
	r.sent[ISLE_SCOPE_NODE] = 1000;
	r.library[ISLE_SCOPE_NODE] = 3000;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(isle_report_save(&r, path, err, sizeof(err)), 0);
}

static void test_reports(void **state)
{
	char dir[] = "/tmp/isle-test-reports.XXXXXX", path[600], err[512];
	const struct isle_exp_store_stats *st;
	struct isle_exp_snapshot snap = {.fragmentation = -1};
	isle_exp_store *s;
	char *om;
	size_t len;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* Two new files read a scan. */
	s = isle_exp_reports_create(dir, 2);
	assert_non_null(s);
	st = isle_exp_store_stats(s);
	put_report(dir, "job_1.json", 5);
	put_report(dir, "job_2.json", 7);
	put_report(dir, "job_3.json", 1);
	snprintf(path, sizeof(path), "%s/job_4.json", dir);
	assert_int_equal(symlink("job_1.json", path), 0); /* not followed */
	snprintf(path, sizeof(path), "%s/job_5.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 2 * ISLE_REPORT_MAX / 8; i++)
		fputs("        ", f); /* too big */
	fclose(f);
	snprintf(path, sizeof(path), "%s/.job_6.json.77", dir); /* writing */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);

	for (int scan = 0; scan < 3; scan++)
		assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->jobs_reported, 3);
	assert_int_equal(st->shim_taken[3], 13);
	assert_int_equal(st->shim_passed[0], 6);
	assert_int_equal(st->shim_sent[ISLE_SCOPE_NODE], 3000);
	assert_int_equal(st->shim_library[ISLE_SCOPE_NODE], 9000);
	assert_int_equal(st->records, 3);
	assert_int_equal(st->unreadable, 2);
	assert_int_equal(st->deferred, 0);
	assert_int_equal(st->bad_files, 2);
	/* Read once: another scan counts nothing again. */
	assert_int_equal(isle_exp_store_scan(s, err, sizeof(err)), 0);
	assert_int_equal(st->jobs_reported, 3);
	assert_int_equal(st->bad_files, 2);

	snap.reports = st;
	snap.src[ISLE_EXP_SRC_REPORTS].up = 1;
	om = isle_exp_render(&snap, ISLE_EXP_OPENMETRICS, &len);
	assert_non_null(om);
	assert_true(has_line(om, "# TYPE isle_shim_jobs_reported counter"));
	assert_true(has_line(om, "isle_shim_jobs_reported_total 3"));
	assert_true(has_line(om,
			     "isle_shim_allreduce_calls_total{path=\"taken\","
			     "size_min_bytes=\"65536\"} 13"));
	assert_true(has_line(om,
			     "isle_shim_allreduce_calls_total{path=\"passed\","
			     "size_min_bytes=\"0\"} 6"));
	assert_true(has_line(om, "# UNIT isle_shim_sent_bytes bytes"));
	assert_true(
	    has_line(om, "isle_shim_sent_bytes_total{tier=\"node\"} 3000"));
	assert_true(
	    has_line(om, "isle_shim_library_bytes_total{tier=\"node\"} 9000"));
	assert_true(has_line(om, "isle_shim_report_errors_total 2"));
	assert_true(
	    has_line(om, "isle_exporter_source_up{source=\"reports\"} 1"));
	free(om);
	/* A source not configured is left out, not shown down. */
	snap.reports = NULL;
	snap.src[ISLE_EXP_SRC_REPORTS].off = 1;
	om = isle_exp_render(&snap, ISLE_EXP_OPENMETRICS, &len);
	assert_non_null(om);
	assert_null(strstr(om, "reports"));
	assert_null(strstr(om, "isle_shim_"));
	free(om);
	isle_exp_store_destroy(s);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gres),
	    cmocka_unit_test(test_nodes),
	    cmocka_unit_test(test_topology),
	    cmocka_unit_test(test_record_info),
	    cmocka_unit_test(test_store),
	    cmocka_unit_test(test_fragmentation),
	    cmocka_unit_test(test_render),
	    cmocka_unit_test(test_reports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
