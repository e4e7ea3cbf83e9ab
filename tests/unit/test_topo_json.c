/*
 * test_topo_json.c - cluster file load, save and merge.
 *
 * Golden files in tests/golden/topology/: cluster-small.json (a loose,
 * hand-written file using the shorthands) must save as
 * cluster-small.saved.json, and that file must load and save unchanged.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "isle_topo.h"

#ifndef TOPO_GOLDEN_DIR
#define TOPO_GOLDEN_DIR "tests/golden/topology"
#endif

#include "topo_golden.h"

static isle_topo *load_ok(const char *path)
{
	char err[512] = "";
	isle_topo *t = NULL;
	int rc = isle_topo_load(path, &t, err, sizeof(err));

	if (rc)
		fail_msg("load %s: %d %s", path, rc, err);
	return t;
}

static void test_golden_round_trip(void **state)
{
	isle_topo *t = load_ok(TOPO_GOLDEN_DIR "/cluster-small.json"), *t2;
	char *json = isle_topo_to_json(t), *json2;
	char err[512] = "";

	assert_non_null(json);
	expect_golden(json, "cluster-small.saved.json");
	/* The saved form reads back to the same model and the same text. */
	assert_int_equal(
	    isle_topo_load_buf(json, "saved", &t2, err, sizeof(err)), 0);
	json2 = isle_topo_to_json(t2);
	assert_string_equal(json, json2);
	free(json2);
	isle_topo_destroy(t2);
	free(json);
	isle_topo_destroy(t);
}

/* What the shorthands and derivations of the golden input mean. */
static void test_golden_model(void **state)
{
	isle_topo *t = load_ok(TOPO_GOLDEN_DIR "/cluster-small.json");
	int dgx1 = isle_topo_find_node(t, "dgx01");
	int dgx4 = isle_topo_find_node(t, "dgx04");
	int gb1 = isle_topo_find_node(t, "gb01");
	int pcie = isle_topo_find_node(t, "pcie01");
	int spine = isle_topo_find_switch(t, "spine0");

	assert_string_equal(t->name, "golden-small");
	assert_int_equal(t->nnodes, 8);
	assert_int_equal(t->total_gpus, 4 * 8 + 2 * 4 + 4 + 2);
	assert_true(t->tier[ISLE_TIER_SPINE].oversub == 2.0);
	assert_true(t->tier[ISLE_TIER_SPINE].bw_gbps == 50.0); /* default */
	assert_true(t->tier[ISLE_TIER_ISLAND].bw_gbps == 400.5);
	assert_string_equal(t->nodes[dgx1].gpus[3].bus_id, "0000:5d:00.0");
	assert_int_equal(t->nodes[dgx1].gpus[3].nic, 1);
	assert_int_equal(t->nodes[dgx1].gpus[7].numa, 1);
	assert_int_equal(t->nodes[dgx4].nvlinks[7 * 8 + 6], 18);
	assert_int_equal(t->nodes[dgx4].nics[2].rail, 2);
	assert_true(t->nodes[dgx4].nics[2].gbps == 400.0);
	assert_int_equal(t->nodes[dgx4].nics[2].guid, 0xb8cef60300000042ULL);
	assert_int_equal(t->switches[spine].guid, 0x0002c90300a1b2c3ULL);
	assert_int_equal(t->switches[spine].level, ISLE_SW_SPINE);
	assert_int_equal(t->switches[isle_topo_find_switch(t, "su1-r2")].level,
			 ISLE_SW_LEAF);
	assert_int_equal(t->switches[isle_topo_find_switch(t, "su1-r2")].rail,
			 2);
	/* Racks: declared with members, implicit from a node, empty. */
	assert_int_equal(t->nracks, 3);
	assert_string_equal(t->racks[t->nodes[dgx1].rack].name, "rack-a");
	assert_int_equal(t->racks[isle_topo_find_rack(t, "rack-b")].nnodes, 1);
	assert_int_equal(t->racks[isle_topo_find_rack(t, "rack-c")].nnodes, 0);
	/* Domain, islands, tiers. */
	assert_int_equal(t->islands[t->nodes[gb1].domain].ngpus, 8);
	assert_int_equal(t->nodes[pcie].nislands, 2);
	assert_int_equal(isle_topo_node_tier(t, dgx1, dgx4), ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, dgx1, gb1), ISLE_TIER_SPINE);
	assert_int_equal(isle_topo_node_tier(t, dgx1, pcie), ISLE_TIER_CORE);
	assert_int_equal(t->nodes[gb1].leaf,
			 isle_topo_find_switch(t, "gb-leaf"));
	isle_topo_destroy(t);
}

static void test_save_file(void **state)
{
	isle_topo *t = load_ok(TOPO_GOLDEN_DIR "/cluster-small.json"), *t2;
	char dir[] = "/tmp/isle-topo-json-XXXXXX", path[256], err[512] = "";
	char *a, *b;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.json", dir);
	assert_int_equal(isle_topo_save(t, path, err, sizeof(err)), 0);
	t2 = load_ok(path);
	a = isle_topo_to_json(t);
	b = isle_topo_to_json(t2);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* A name the loader would refuse is not written. */
	assert_int_equal(
	    isle_topo_add_switch(t2, "Quantum QM9700", 0, ISLE_SW_LEAF) >= 0,
	    1);
	assert_int_equal(isle_topo_save(t2, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "switch name 'Quantum QM9700'"));
	/* So is a NIC's (an ibnetdiscover node description can carry any
	 * byte); the file once written did not load. */
	isle_topo_destroy(t2);
	t2 = load_ok(path);
	assert_true(isle_topo_add_nic(t2, 0, "mlx5\xff", 0, -1, 0, -1) >= 0);
	assert_int_equal(isle_topo_save(t2, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NIC name 'mlx5"));
	/* A directory that does not exist gives an error naming it. */
	assert_true(
	    isle_topo_save(t, "/nonexistent-dir/c.json", err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/nonexistent-dir/c.json"));
	unlink(path);
	rmdir(dir);
	isle_topo_destroy(t);
	isle_topo_destroy(t2);
}

struct bad_case {
	const char *json;
	const char *err;
};

#define NAMES "(names are letters, digits, '_', '-', '.', ':')"
#define N1 "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpus\": 2}, "

static const struct bad_case bad_cases[] = {
    {"", "t.json:1:1: JSON syntax error: unexpected end of file"},
    {"{\"version\": 1,\n \"nodes\": [}",
     "t.json:2:12: JSON syntax error: unexpected character"},
    {"{} x", "t.json:1:4: JSON syntax error: trailing data"},
    {"[]", "t.json: $: expected object"},
    {"{}", "t.json: $.version: missing"},
    {"{\"version\": 2}", "t.json: $.version: unsupported version 2 (this "
			 "isle reads 1)"},
    {"{\"version\": \"1\"}", "t.json: $.version: expected integer"},
    {"{\"version\": 1, \"nodez\": []}", "t.json: $.nodez: unknown key"},
    {"{\"version\": 1, \"_note\": \"comments are fine\", \"nodes\": {}}",
     "t.json: $.nodes: expected array"},
    {N1 "{\"gpus\": 1}]}", "t.json: $.nodes[1].name: missing"},
    {N1 "{\"name\": \"a\"}]}", "t.json: $.nodes[1].name: duplicate node "
			       "'a'"},
    {N1 "{\"name\": \"b c\"}]}",
     "t.json: $.nodes[1].name: 'b c': character ' ' not allowed " NAMES},
    /* Hostile names in every identifier field: each would reach an env
     * line, the NCCL XML, a path, topology.conf or a log. */
    {N1 "{\"name\": \"b\", \"nics\": [{\"name\": \"mlx5_0\\nNCCL_NET_"
	"PLUGIN=/x/evil.so\\nNCCL_X\"}]}]}",
     "t.json: $.nodes[1].nics[0].name: 'mlx5_0\\x0aNCCL_NET_PLUGIN=/x/evil"
     ".so\\x0aNCCL_X': byte 0x0a not allowed " NAMES},
    {N1 "{\"name\": \"b\", \"nics\": [{\"name\": \"mlx5_0,mlx5_9\"}]}]}",
     "t.json: $.nodes[1].nics[0].name: 'mlx5_0,mlx5_9': character ',' not "
     "allowed " NAMES},
    {N1 "{\"name\": \"../etc\"}]}",
     "t.json: $.nodes[1].name: '../etc': character '.' not allowed " NAMES},
    {N1 "{\"name\": \"b\", \"rack\": \"r/1\"}]}",
     "t.json: $.nodes[1].rack: 'r/1': character '/' not allowed " NAMES},
    {N1 "{\"name\": \"b\", \"gpus\": [{\"bus_id\": \"0000:01:00.0\\\"/>"
	"<x\"}]}]}",
     "t.json: $.nodes[1].gpus[0].bus_id: '0000:01:00.0\"/><x': character "
     "'\"' not allowed " NAMES},
    {N1 "{\"name\": \"b\", \"gpus\": [{\"model\": \"H100\\u001b[2J\"}]}]}",
     "t.json: $.nodes[1].gpus[0].model: byte 0x1b not allowed"},
    {N1 "{\"name\": \"b\"}], \"domains\": [{\"name\": \"d<1>\", "
	"\"nodes\": [\"a\"]}]}",
     "t.json: $.domains[0].name: 'd<1>': character '<' not allowed " NAMES},
    {N1 "{\"name\": \"b\"}], \"racks\": [\"r;1\"]}",
     "t.json: $.racks[0]: 'r;1': character ';' not allowed " NAMES},
    {"{\"version\": 1, \"switches\": [{\"name\": \"leaf$(id)\"}]}",
     "t.json: $.switches[0].name: 'leaf$(id)': character '$' not "
     "allowed " NAMES},
    {N1 "{\"name\": \"b\", \"gpus\": 65}]}",
     "t.json: $.nodes[1].gpus: 65 out of range [0, 64]"},
    {N1 "{\"name\": \"b\", \"gpus\": [{}, {\"numa\": 1.5}]}]}",
     "t.json: $.nodes[1].gpus[1].numa: expected integer"},
    {N1 "{\"name\": \"b\", \"gpus\": [{\"bus\": 1}]}]}",
     "t.json: $.nodes[1].gpus[0].bus: unknown key"},
    {N1 "{\"name\": \"b\", \"gpus\": 2, \"nvlinks\": [[0, 2, 1]]}]}",
     "t.json: $.nodes[1].nvlinks[0][1]: GPU 2 out of range (node has 2 "
     "GPUs)"},
    {N1 "{\"name\": \"b\", \"gpus\": 2, \"nvlinks\": [[1, 1, 1]]}]}",
     "t.json: $.nodes[1].nvlinks[0]: NVLink from GPU 1 to itself"},
    {N1 "{\"name\": \"b\", \"gpus\": 2, \"nvlinks\": [[0, 1]]}]}",
     "t.json: $.nodes[1].nvlinks[0]: expected [gpu_a, gpu_b, links]"},
    {N1 "{\"name\": \"b\", \"nics\": [{\"name\": \"m\", \"switch\": "
	"\"s\"}]}]}",
     "t.json: $.nodes[1].nics[0].switch: unknown switch 's'"},
    {N1 "{\"name\": \"b\", \"nics\": [{\"name\": \"m\", \"guid\": "
	"\"12\"}]}]}",
     "t.json: $.nodes[1].nics[0].guid: expected a \"0x...\" hex string"},
    {N1 "{\"name\": \"b\", \"gpus\": [{\"nic\": \"m\"}]}]}",
     "t.json: $.nodes[1].gpus[0].nic: unknown NIC 'm'"},
    {N1 "{\"name\": \"b\", \"rack\": 3}]}",
     "t.json: $.nodes[1].rack: expected string"},
    {N1 "{\"name\": \"b\"}], \"domains\": [{\"name\": \"d\", \"nodes\": "
	"[\"a\", \"c\"]}]}",
     "t.json: $.domains[0].nodes[1]: unknown node 'c'"},
    {N1 "{\"name\": \"b\"}], \"domains\": [{\"name\": \"d\", \"nodes\": "
	"[\"a\"]}, {\"name\": \"e\", \"nodes\": [\"a\", \"b\"]}]}",
     "t.json: $.domains[1].nodes: a node is listed twice or is already "
     "in another domain"},
    {N1 "{\"name\": \"b\"}], \"domains\": [{\"name\": \"d\", \"nodes\": "
	"[\"[a\"]}]}",
     "t.json: $.domains[0].nodes[0]: '[a': missing ']'"},
    {N1 "{\"name\": \"b\"}], \"domains\": [{\"name\": \"d\"}]}",
     "t.json: $.domains[0].nodes: no nodes"},
    {"{\"version\": 1, \"switches\": [{\"name\": \"s\", \"switches\": "
     "[\"t\"]}]}",
     "t.json: $.switches[0].switches[0]: unknown switch 't'"},
    {"{\"version\": 1, \"switches\": [{\"name\": \"s\", \"level\": "
     "\"top\"}]}",
     "t.json: $.switches[0].level: 'top' is not leaf, spine, core or "
     "unknown"},
    {"{\"version\": 1, \"switches\": [{\"name\": \"s\"}, {\"name\": "
     "\"s\"}]}",
     "t.json: $.switches[1].name: duplicate switch 's'"},
    {"{\"version\": 1, \"switches\": [{\"name\": \"s\", \"nodes\": "
     "[\"n1\"]}]}",
     "t.json: $.switches[0].nodes[0]: unknown node 'n1'"},
    {"{\"version\": 1, \"tiers\": {\"rack\": {}}}",
     "t.json: $.tiers.rack: unknown tier (island, node, leaf, spine, "
     "core)"},
    {"{\"version\": 1, \"tiers\": {\"leaf\": {\"oversub\": 0.5}}}",
     "t.json: $.tiers.leaf.oversub: 0.5 out of range (min 1)"},
    {"{\"version\": 1, \"racks\": [\"r\", {\"name\": \"r\"}]}",
     "t.json: $.racks[1].name: duplicate rack 'r'"},
    {"{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"rack\": \"x\"}], "
     "\"racks\": [{\"name\": \"r\", \"nodes\": [\"a\"]}]}",
     "t.json: $.racks[0].nodes: node 'a' is already in rack 'x'"},
    {"{\"version\": 1, \"nodes\": [{\"name\": \"a:nvl0\"}, {\"name\": "
     "\"b\", \"gpus\": 1}], \"domains\": [{\"name\": \"b:nvl0\", "
     "\"nodes\": [\"a:nvl0\"]}]}",
     "t.json: island name 'b:nvl0' of node 'b' clashes with a domain "
     "name"},
    /* leafs listed under the spine and the spine under a leaf */
    {"{\"version\": 1, \"switches\": [{\"name\": \"leaf1\", "
     "\"switches\": [\"spine1\"]}, {\"name\": \"leaf2\"}, {\"name\": "
     "\"spine1\", \"switches\": [\"leaf1\", \"leaf2\"]}]}",
     "t.json: switch links form a cycle (a switch is below itself): "
     "leaf1 -> spine1 -> leaf1"},
};

/* Output paths that are not plain files: a symlink keeps its link and the
 * file it names is replaced; a device is written into, never replaced
 * (`islectl build -o /dev/null` once turned /dev/null into a file). */
static void test_write_file_targets(void **state)
{
	char dir[] = "/tmp/isle-test-write-XXXXXX", a[256], b[256], c[256];
	char err[256], buf[16] = "";
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/real", dir);
	snprintf(b, sizeof(b), "%s/link", dir);
	snprintf(c, sizeof(c), "%s/null", dir);
	assert_int_equal(isle_write_file(a, "one", 3, 0644, err, sizeof(err)),
			 0);
	assert_int_equal(symlink("real", b), 0);
	assert_int_equal(isle_write_file(b, "two", 3, 0600, err, sizeof(err)),
			 0);
	assert_int_equal(lstat(b, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	f = fopen(a, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "two");
	/* A character device like /dev/null, made here when we may. */
	if (mknod(c, S_IFCHR | 0666, makedev(1, 3)) == 0) {
		assert_int_equal(
		    isle_write_file(c, "three", 5, 0644, err, sizeof(err)), 0);
		assert_int_equal(lstat(c, &st), 0);
		assert_true(S_ISCHR(st.st_mode));
		unlink(c);
	}
	/* A directory cannot be written: error naming the path. */
	assert_true(isle_write_file(dir, "x", 1, 0644, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, dir));
	unlink(b);
	unlink(a);
	assert_int_equal(rmdir(dir), 0);
}

static void test_bad_input(void **state)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		isle_topo *t = (isle_topo *)1;
		char err[512] = "";
		int rc = isle_topo_load_buf(bad_cases[i].json, "t.json", &t,
					    err, sizeof(err));

		if (rc >= 0 || strcmp(err, bad_cases[i].err) != 0)
			fail_msg("case %zu: rc %d\n  got:  %s\n  want: %s", i,
				 rc, err, bad_cases[i].err);
		assert_null(t);
	}
}

static void test_missing_file(void **state)
{
	isle_topo *t;
	char err[512];

	assert_int_equal(
	    isle_topo_load("/nonexistent/c.json", &t, err, sizeof(err)),
	    -ENOENT);
	assert_string_equal(err,
			    "/nonexistent/c.json: No such file or directory");
	assert_null(t);
}

/* Overrides merge by name into a model built from another source. */
static void test_merge(void **state)
{
	char dir[] = "/tmp/isle-topo-merge-XXXXXX", path[256], err[512] = "";
	isle_topo *t = isle_topo_create();
	int a, b, sw;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/over.json", dir);
	/* As from a fabric dump: nodes without GPUs, NICs cabled. */
	a = isle_topo_add_node(t, "a", 0);
	b = isle_topo_add_node(t, "b", 0);
	/* An earlier source put a in a rack the overrides move it out of. */
	assert_int_equal(isle_topo_add_rack(t, "r0", &a, 1), 0);
	sw = isle_topo_add_switch(t, "leaf", 0, ISLE_SW_UNKNOWN);
	assert_int_equal(isle_topo_add_nic(t, a, "mlx5_0", 0x10, 0, 200, -1),
			 0);
	assert_int_equal(isle_topo_attach_node(t, sw, a, 0), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"tiers\": {\"leaf\": {\"bw_gbps\": 25}},\n"
	      " \"racks\": [{\"name\": \"r1\", \"nodes\": [\"a\", \"b\"]}],\n"
	      " \"nodes\": [{\"name\": \"a\", \"gpus\": 2, \"nvlinks\": [[0, "
	      "1, 4]],\n"
	      "   \"nics\": [{\"name\": \"mlx5_0\", \"numa\": 1}]},\n"
	      "  {\"name\": \"c\", \"gpus\": 1}],\n"
	      " \"domains\": [{\"name\": \"d\", \"nodes\": [\"a\", \"b\"]}]}\n",
	      f);
	fclose(f);
	if (isle_topo_merge_json(t, path, err, sizeof(err)) ||
	    isle_topo_finalize(t, err, sizeof(err)))
		fail_msg("merge: %s", err);
	assert_int_equal(t->nnodes, 3);
	assert_int_equal(t->nodes[a].ngpus, 2);
	assert_int_equal(t->nodes[a].nnics, 1);
	assert_int_equal(t->nodes[a].nics[0].numa, 1);
	assert_int_equal(t->nodes[a].nics[0].guid, 0x10); /* kept */
	assert_int_equal(t->nodes[a].nics[0].sw, sw);
	assert_true(t->tier[ISLE_TIER_LEAF].bw_gbps == 25.0);
	assert_true(t->tier[ISLE_TIER_LEAF].lat_us == 3.0);
	assert_int_equal(t->nodes[b].rack, isle_topo_find_rack(t, "r1"));
	assert_int_equal(t->nodes[a].rack, isle_topo_find_rack(t, "r1"));
	assert_int_equal(t->racks[isle_topo_find_rack(t, "r0")].nnodes, 0);
	assert_int_equal(isle_topo_node_tier(t, a, b), ISLE_TIER_ISLAND);
	assert_int_equal(t->islands[t->nodes[a].domain].ngpus, 2);
	/* A second merge of a bad file names the path. */
	f = fopen(path, "w");
	fputs("{\"nodes\": [{\"name\": \"a\", \"gpus\": [{\"numa\": "
	      "\"x\"}, {}]}]}",
	      f);
	fclose(f);
	assert_int_equal(isle_topo_merge_json(t, path, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "over.json: $.nodes[0].gpus[0].numa: "
				    "expected integer"));
	unlink(path);
	rmdir(dir);
	isle_topo_destroy(t);
}

/* An override's node name may be a host list; GPUs are matched by their
 * position, so a GPU -> NIC override lists every GPU and keeps what
 * discovery found (bus ids). */
static void test_merge_hostlist(void **state)
{
	char dir[] = "/tmp/isle-topo-merge-XXXXXX", path[256], err[512] = "";
	isle_topo *t = isle_topo_create();
	char name[16], bus[32];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/over.json", dir);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "gb%03d", i + 1);
		int ni = isle_topo_add_node(t, name, 4);

		assert_true(ni >= 0);
		for (int g = 0; g < 4; g++) {
			snprintf(bus, sizeof(bus), "0000:%02x:00.0", g + 1);
			assert_int_equal(
			    isle_topo_set_gpu(t, ni, g, bus, NULL, 0), 0);
		}
		assert_int_equal(
		    isle_topo_add_nic(t, ni, "mlx5_0", 0, 0, 400, 0), 0);
		assert_int_equal(
		    isle_topo_add_nic(t, ni, "mlx5_1", 0, 1, 400, 0), 1);
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"nodes\": [{\"name\": \"gb[001-003]\", \"rack\": \"r1\",\n"
	      "  \"gpus\": [{\"nic\": \"mlx5_0\"}, {\"nic\": \"mlx5_0\"},\n"
	      "           {\"nic\": \"mlx5_1\"}, {\"nic\": 1}]}]}\n",
	      f);
	fclose(f);
	if (isle_topo_merge_json(t, path, err, sizeof(err)) ||
	    isle_topo_finalize(t, err, sizeof(err)))
		fail_msg("merge: %s", err);
	for (int i = 0; i < 3; i++) {
		const struct isle_node *n = &t->nodes[i];

		assert_int_equal(n->rack, isle_topo_find_rack(t, "r1"));
		assert_int_equal(n->ngpus, 4);
		assert_int_equal(n->gpus[0].nic, 0);
		assert_int_equal(n->gpus[1].nic, 0);
		assert_int_equal(n->gpus[2].nic, 1);
		assert_int_equal(n->gpus[3].nic, 1);
		assert_string_equal(n->gpus[3].bus_id, "0000:04:00.0");
	}
	assert_int_equal(t->nodes[3].rack, -1);
	assert_int_equal(t->nodes[3].gpus[0].nic, -1);
	assert_int_equal(t->racks[isle_topo_find_rack(t, "r1")].nnodes, 3);

	/* A GPU list of another length than the node's is an error. */
	f = fopen(path, "w");
	fputs("{\"nodes\": [{\"name\": \"gb004\", \"gpus\": [{}, {}]}]}", f);
	fclose(f);
	assert_int_equal(isle_topo_merge_json(t, path, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "$.nodes[0].gpus: 2 entries, but node "
				    "'gb004' has 4 GPUs"));
	assert_int_equal(t->nodes[3].ngpus, 4);

	/* A bad host list names its JSON path; a node twice is an error. */
	f = fopen(path, "w");
	fputs("{\"nodes\": [{\"name\": \"gb[003-001]\"}]}", f);
	fclose(f);
	assert_int_equal(isle_topo_merge_json(t, path, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "over.json: $.nodes[0].name: "));
	f = fopen(path, "w");
	fputs("{\"nodes\": [{\"name\": \"gb[001-002]\"}, "
	      "{\"name\": \"gb002\"}]}",
	      f);
	fclose(f);
	assert_true(isle_topo_merge_json(t, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "duplicate node 'gb002'"));
	unlink(path);
	rmdir(dir);
	isle_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden_round_trip),
	    cmocka_unit_test(test_golden_model),
	    cmocka_unit_test(test_save_file),
	    cmocka_unit_test(test_write_file_targets),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_merge_hostlist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
