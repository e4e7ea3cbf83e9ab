/*
 * test_topo_ibnd.c - ibnetdiscover dump reader: golden summaries, error
 * messages, and the X5 fabric against the topology.conf its admins wrote.
 *
 * Golden files live in tests/golden/ibnd/: every NAME.out or NAME.net input
 * has either NAME.summary (expected isle_ibnd_summary output) or NAME.err
 * (expected error, with the directory stripped from the path). Real dumps
 * from the shared test data (test_data.h) are compared with
 * shared-NAME.summary. ISLE_GOLDEN_UPDATE=1 rewrites the expected files.
 */
#include <ctype.h>
#include <dirent.h>
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

#include <cmocka.h>

#include "isle_topo.h"
#include "test_data.h"

#define GOLDEN "tests/golden/ibnd"

static char warnings[65536];

static void collect_warning(void *arg, const char *msg)
{
	size_t len = strlen(warnings);

	snprintf(warnings + len, sizeof(warnings) - len, "%s\n", msg);
}

static int setup(void **state)
{
	warnings[0] = '\0';
	isle_topo_set_warn(collect_warning, NULL);
	return 0;
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void spew(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static int updating(void)
{
	const char *u = getenv("ISLE_GOLDEN_UPDATE");

	return u && *u && strcmp(u, "0") != 0;
}

/* Compares text with the golden file, or rewrites it in update mode. */
static void check_golden(const char *expected_path, const char *text)
{
	char *want;

	if (updating()) {
		spew(expected_path, text);
		return;
	}
	want = test_read_file(expected_path);
	if (!want)
		fail_msg("missing golden file %s", expected_path);
	if (strcmp(want, text) != 0) {
		const char *a = want, *b = text;
		int line = 1;

		while (*a && *a == *b) {
			if (*a == '\n')
				line++;
			a++;
			b++;
		}
		fail_msg("%s differs at line %d", expected_path, line);
	}
	free(want);
}

/* Error text with the directory of the input dropped: "x.out:3: ...". */
static const char *strip_dir(const char *err, const char *dir)
{
	size_t n = strlen(dir);

	if (strncmp(err, dir, n) == 0 && err[n] == '/')
		return err + n + 1;
	return err;
}

static void run_golden_case(const char *dir, const char *name, const char *ext)
{
	char in[512], exp[512], err[512];
	isle_ibnd_fabric *f = NULL;
	int rc;

	snprintf(in, sizeof(in), "%s/%s%s", dir, name, ext);
	snprintf(exp, sizeof(exp), "%s/%s.err", dir, name);
	rc = isle_ibnd_parse(in, NULL, &f, err, sizeof(err));
	if (exists(exp) || (updating() && strncmp(name, "bad-", 4) == 0)) {
		char line[600];

		if (rc == 0)
			fail_msg("%s parsed, expected an error", in);
		assert_null(f);
		snprintf(line, sizeof(line), "%s\n", strip_dir(err, dir));
		check_golden(exp, line);
		return;
	}
	if (rc != 0)
		fail_msg("%s: %s", in, err);
	snprintf(exp, sizeof(exp), "%s/%s.summary", dir, name);
	char *sum = isle_ibnd_summary(f);

	assert_non_null(sum);
	check_golden(exp, sum);
	free(sum);
	isle_ibnd_fabric_destroy(f);
}

static void test_golden_dir(void **state)
{
	struct dirent *de;
	DIR *d = opendir(GOLDEN);
	int cases = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char name[256];
		const char *dot = strrchr(de->d_name, '.');

		if (!dot || (strcmp(dot, ".out") && strcmp(dot, ".net")))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(dot - de->d_name),
			 de->d_name);
		run_golden_case(GOLDEN, name, dot);
		cases++;
	}
	closedir(d);
	/* small.net, small-full.out and the bad-*.out variants. */
	assert_true(cases >= 8);
}

/* --- Real dumps --------------------------------------------------------- */

static isle_ibnd_fabric *parse_shared(const char *file, const char *map,
				      const char *spine, unsigned flags)
{
	char dump[512], m[512], s[512], err[512];
	struct isle_ibnd_opts o = {.flags = flags};
	isle_ibnd_fabric *f = NULL;

	snprintf(m, sizeof(m), "ibnetdiscover/%s", file);
	if (!test_data_path(dump, sizeof(dump), m))
		return NULL;
	if (map) {
		snprintf(s, sizeof(s), "ibnetdiscover/%s", map);
		if (!test_data_path(m, sizeof(m), s))
			return NULL;
		o.guid_map = m;
	}
	if (spine) {
		char rel[512];

		snprintf(rel, sizeof(rel), "ibnetdiscover/%s", spine);
		if (!test_data_path(s, sizeof(s), rel))
			return NULL;
		o.spine_map = s;
	}
	if (isle_ibnd_parse(dump, &o, &f, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return f;
}

static void test_ndr_golden_and_counts(void **state)
{
	isle_ibnd_fabric *f =
	    parse_shared("topograph-ndr-example.out", NULL, NULL, 0);
	int i, j, leafs_named = 0, spines_named = 0, rail = 0;

	if (!f)
		skip();
	char *sum = isle_ibnd_summary(f);

	check_golden(GOLDEN "/shared-topograph-ndr-example.summary", sum);
	free(sum);

	assert_int_equal(f->nswitches, 40);
	assert_int_equal(f->nlevel[ISLE_SW_LEAF], 31);
	assert_int_equal(f->nlevel[ISLE_SW_SPINE], 9);
	assert_int_equal(f->naggregation, 40);
	assert_int_equal(f->nrails, 4);
	for (i = 0; i < f->nnodes; i++) {
		const struct isle_ibnd_node *n = &f->nodes[i];

		if (n->type != ISLE_IBND_SWITCH)
			continue;
		/* The site named its switches; levels come from cabling. */
		if (n->level == ISLE_SW_LEAF && strstr(n->desc, "IBLEAF"))
			leafs_named++;
		if (n->level == ISLE_SW_SPINE && strstr(n->desc, "IBSPINE"))
			spines_named++;
		/* Rail-optimized: a leaf's hosts share its rail, and every
		 * host that does not is reported. */
		if (n->level == ISLE_SW_LEAF)
			assert_true(n->rail >= 0 && n->rail < 4);
		for (j = 0; j < n->nlinks; j++) {
			const struct isle_ibnd_node *c =
			    &f->nodes[n->links[j].peer];
			char needle[128];

			if (!c->host || c->rail == n->rail)
				continue;
			snprintf(needle, sizeof(needle), "%s %s (rail %d)",
				 c->host, c->hca, c->rail);
			if (!strstr(warnings, needle))
				fail_msg("no warning for %s", needle);
			rail++;
		}
	}
	/* Off-rail CAs are exceptions (crossed cables, management hosts). */
	assert_true(rail > 0 && rail < f->nhost_cas / 20);
	assert_int_equal(leafs_named, 31);
	assert_int_equal(spines_named, 9);
	/* "a08-p1-dgx-04-c17 mlx5_5": host and HCA from the description. */
	for (i = 0; i < f->nnodes; i++)
		if (f->nodes[i].host &&
		    strcmp(f->nodes[i].host, "a08-p1-dgx-04-c17") == 0 &&
		    strcmp(f->nodes[i].hca, "mlx5_5") == 0)
			break;
	assert_true(i < f->nnodes);
	assert_int_equal(f->nodes[i].rail, 3);
	isle_ibnd_fabric_destroy(f);
}

static void test_ndr_into_model(void **state)
{
	char dump[512], err[512];
	isle_topo *t;
	int i, hosts_with_4 = 0;

	if (!test_data_path(dump, sizeof(dump),
			    "ibnetdiscover/topograph-ndr-example.out"))
		skip();
	t = isle_topo_create();
	assert_non_null(t);
	if (isle_ibnd_load(t, dump, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_non_null(strstr(warnings, "40 aggregation nodes and"));
	assert_non_null(strstr(warnings, "anonymous CAs excluded"));
	if (isle_topo_finalize(t, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(t->nswitches, 40);
	for (i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];
		int r, k, seen = 0;

		for (k = 0; k < n->nnics; k++) {
			r = n->nics[k].rail;
			assert_true(r >= 0 && r < 4);
			assert_true(n->nics[k].sw >= 0);
			assert_true(n->nics[k].gbps > 0);
			assert_int_equal(seen & (1 << r),
					 0); /* one NIC per rail */
			seen |= 1 << r;
		}
		if (seen == 0xf)
			hosts_with_4++;
	}
	assert_true(hosts_with_4 > 100);
	isle_topo_destroy(t);
}

static void test_bad_dump_real(void **state)
{
	char dump[512], err[512] = "";
	isle_topo *t;

	if (!test_data_path(dump, sizeof(dump),
			    "ibnetdiscover/topograph-example-bad.out"))
		skip();
	t = isle_topo_create();
	assert_int_equal(isle_ibnd_load(t, dump, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "topograph-example-bad.out:10: "));
	assert_non_null(strstr(err, "truncated"));
	/* No partial model. */
	assert_int_equal(t->nnodes, 0);
	assert_int_equal(t->nswitches, 0);
	isle_topo_destroy(t);
}

/* --- X5: the fabric vs. the topology.conf generated by its admins ------- */

struct strset {
	int n;
	char *v[256];
};

static void set_add(struct strset *s, const char *x)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return;
	assert_true(s->n < 256);
	s->v[s->n++] = strdup(x);
}

static void set_free(struct strset *s)
{
	while (s->n)
		free(s->v[--s->n]);
}

static int set_equal(const struct strset *a, const struct strset *b)
{
	int i, j;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		for (j = 0; j < b->n && strcmp(a->v[i], b->v[j]); j++)
			;
		if (j == b->n)
			return 0;
	}
	return 1;
}

/* Expands a Slurm hostlist "a[1-3,5],b" with the library's expander. */
static void expand_hostlist(const char *list, struct strset *out)
{
	char **names = NULL, err[256];
	int n = 0, i;

	if (isle_hostlist_expand(list, &names, &n, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (i = 0; i < n; i++)
		set_add(out, names[i]);
	isle_hostlist_free(names, n);
}

static void test_x5_matches_topology_conf(void **state)
{
	char dump[512], map[512], spine[512], conf[512], err[512];
	struct isle_ibnd_opts o = {.flags = ISLE_IBND_KEEP_ANONYMOUS};
	char *text, *line, *save = NULL;
	isle_topo *t;
	int checked = 0, i;

	if (!test_data_path(dump, sizeof(dump), "ibnetdiscover/X5.topofile") ||
	    !test_data_path(map, sizeof(map), "ibnetdiscover/X5.map") ||
	    !test_data_path(spine, sizeof(spine), "ibnetdiscover/X5.spine") ||
	    !test_data_path(conf, sizeof(conf),
			    "ibnetdiscover/X5.topology.conf"))
		skip();
	o.guid_map = map;
	o.spine_map = spine;
	t = isle_topo_create();
	/* The spine list changes nothing here; the map alone (what
	 * `islectl build` passes) gives the same model. */
	if (isle_ibnd_load(t, dump, map, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	i = t->nnodes;
	isle_topo_destroy(t);
	t = isle_topo_create();
	if (isle_ibnd_load_opts(t, dump, &o, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(t->nnodes, i);
	assert_int_equal(t->nnodes, 89);
	if (isle_topo_finalize(t, err, sizeof(err)) != 0)
		fail_msg("%s", err);

	text = test_read_file(conf);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct strset want = {0}, got = {0};
		char swname[128], list[4096];
		const struct isle_switch *sw;
		int s;

		if (sscanf(line, "SwitchName=%127s Nodes=%4095s", swname,
			   list) == 2) {
			s = isle_topo_find_switch(t, swname);
			if (s < 0)
				fail_msg("switch %s not in the model", swname);
			sw = &t->switches[s];
			expand_hostlist(list, &want);
			for (i = 0; i < sw->nnodes; i++)
				set_add(&got, t->nodes[sw->nodes[i]].name);
			assert_int_equal(sw->level, ISLE_SW_LEAF);
		} else if (sscanf(line, "SwitchName=%127s Switches=%4095s",
				  swname, list) == 2) {
			s = isle_topo_find_switch(t, swname);
			if (s < 0)
				fail_msg("switch %s not in the model", swname);
			sw = &t->switches[s];
			expand_hostlist(list, &want);
			/* ibmap2slurm lists every switch cabled to a spine. */
			for (i = 0; i < sw->nup; i++)
				set_add(&got, t->switches[sw->up[i]].name);
			for (i = 0; i < sw->ndown; i++)
				set_add(&got, t->switches[sw->down[i]].name);
		} else {
			continue;
		}
		if (!set_equal(&want, &got))
			fail_msg("%s: %d expected, %d in the model", swname,
				 want.n, got.n);
		checked++;
		set_free(&want);
		set_free(&got);
	}
	free(text);
	assert_int_equal(checked, t->nswitches);
	assert_int_equal(checked, 11);
	isle_topo_destroy(t);
}

/* --nodes: only the listed hosts and the switches on their way up. */
static void test_node_subset(void **state)
{
	char dump[512], map[512], err[512];
	struct isle_ibnd_opts o = {.flags = ISLE_IBND_KEEP_ANONYMOUS};
	isle_topo *t;
	int leafs = 0;

	t = isle_topo_create();
	o.nodes = "zz[1-3]";
	assert_int_equal(
	    isle_ibnd_load_opts(t, GOLDEN "/small.net", &o, err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "none of the hosts of --nodes"));
	assert_int_equal(t->nnodes, 0);
	o.nodes = "gpu[01-02";
	assert_int_equal(
	    isle_ibnd_load_opts(t, GOLDEN "/small.net", &o, err, sizeof(err)),
	    -EINVAL);
	isle_topo_destroy(t);

	if (!test_data_path(dump, sizeof(dump), "ibnetdiscover/X5.topofile") ||
	    !test_data_path(map, sizeof(map), "ibnetdiscover/X5.map"))
		skip();
	t = isle_topo_create();
	o.guid_map = map;
	o.nodes = "sl390lin[101-110],r815lin104,nothere1";
	if (isle_ibnd_load_opts(t, dump, &o, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (isle_topo_finalize(t, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(t->nnodes, 11);
	assert_true(isle_topo_find_node(t, "sl390lin105") >= 0);
	assert_true(isle_topo_find_node(t, "sl390lin111") < 0);
	/* 2 of the 6 leafs; every spine and the core above them stay */
	for (int s = 0; s < t->nswitches; s++) {
		leafs += t->switches[s].level == ISLE_SW_LEAF;
		if (t->switches[s].level == ISLE_SW_LEAF)
			assert_true(t->switches[s].nnodes > 0);
	}
	assert_int_equal(leafs, 2);
	assert_int_equal(t->nswitches, 7);
	isle_topo_destroy(t);
}

static void test_x5_golden(void **state)
{
	isle_ibnd_fabric *f =
	    parse_shared("X5.topofile", "X5.map", "X5.spine", 0);
	if (!f)
		skip();
	char *sum = isle_ibnd_summary(f);

	check_golden(GOLDEN "/shared-X5.summary", sum);
	/* Without KEEP_ANONYMOUS the three unmapped HCAs stay out. */
	assert_int_equal(f->nanonymous, 3);
	assert_int_equal(f->nhosts, 86);
	free(sum);
	isle_ibnd_fabric_destroy(f);
}

/* --- Options and odd inputs -------------------------------------------- */

static void write_tmp(char *path, size_t len, const char *tag, const char *text)
{
	snprintf(path, len, "/tmp/isle-test-ibnd-%d-%s", (int)getpid(), tag);
	spew(path, text);
}

static void test_map_formats(void **state)
{
	char map[256], err[512];
	struct isle_ibnd_opts o = {0};
	isle_ibnd_fabric *f = NULL;
	int i, found = 0;

	/* ibnetdiscover --node-name-map style, then the X5 style. */
	write_tmp(map, sizeof(map), "map",
		  "# comment\n"
		  "0x0002c90000000901 \"gpu09 mlx5_0\"\n"
		  "H-0002c90000000a01 gpu10\n");
	o.guid_map = map;
	assert_int_equal(
	    isle_ibnd_parse(GOLDEN "/small.net", &o, &f, err, sizeof(err)), 0);
	for (i = 0; i < f->nnodes; i++) {
		const struct isle_ibnd_node *n = &f->nodes[i];

		if (n->guid == 0x0002c90000000901ull) {
			assert_string_equal(n->host, "gpu09");
			assert_string_equal(n->hca, "mlx5_0");
			assert_int_equal(n->rail, 0);
			found++;
		}
		if (n->guid == 0x0002c90000000a01ull) {
			assert_string_equal(n->host, "gpu10");
			/* HCA name still comes from the description. */
			assert_string_equal(n->hca, "mlx5_0");
			found++;
		}
	}
	assert_int_equal(found, 2);
	assert_int_equal(f->nanonymous, 0);
	assert_int_equal(f->nhosts, 5);
	isle_ibnd_fabric_destroy(f);

	write_tmp(map, sizeof(map), "map", "H-0002c90000000901\n");
	assert_int_equal(
	    isle_ibnd_parse(GOLDEN "/small.net", &o, &f, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, ":1: expected \"GUID hostname\""));
	assert_null(f);
	unlink(map);

	o.guid_map = "/nonexistent/x.map";
	assert_true(
	    isle_ibnd_parse(GOLDEN "/small.net", &o, &f, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/nonexistent/x.map"));
}

static void test_spine_list_and_prompt(void **state)
{
	char spine[256], err[512];
	struct isle_ibnd_opts o = {0};
	isle_ibnd_fabric *f = NULL;
	int i;

	assert_int_equal(isle_ibnd_parse(GOLDEN "/small-full.out", NULL, &f,
					 err, sizeof(err)),
			 0);
	assert_non_null(strstr(warnings, "small-full.out:1: skipping"));
	isle_ibnd_fabric_destroy(f);

	/* A listed switch is never a leaf even with hosts cabled to it; the
	 * unlisted switches above it move up. */
	write_tmp(spine, sizeof(spine), "spine", "0x0002c90000000020\n");
	o.spine_map = spine;
	assert_int_equal(
	    isle_ibnd_parse(GOLDEN "/small.net", &o, &f, err, sizeof(err)), 0);
	i = isle_ibnd_find(f, "S-0002c90000000020");
	assert_true(i >= 0);
	assert_int_equal(f->nodes[i].level, ISLE_SW_CORE);
	i = isle_ibnd_find(f, "S-0002c90000000030");
	assert_int_equal(f->nodes[i].level, ISLE_SW_SPINE);
	assert_int_equal(isle_ibnd_find(f, "S-nope"), -1);
	isle_ibnd_fabric_destroy(f);
	unlink(spine);
}

static void test_merge_into_existing_nodes(void **state)
{
	char err[512];
	isle_topo *t = isle_topo_create();
	int n, i;

	/* A node known before the dump keeps its GPUs and gains NICs. */
	n = isle_topo_add_node(t, "gpu02", 8);
	assert_true(n >= 0);
	assert_int_equal(
	    isle_ibnd_load(t, GOLDEN "/small.net", NULL, err, sizeof(err)), 0);
	assert_int_equal(t->nnodes, 3);
	assert_int_equal(t->nodes[n].ngpus, 8);
	assert_int_equal(t->nodes[n].nnics, 2);
	/* Loading the same dump again changes nothing. */
	assert_int_equal(
	    isle_ibnd_load(t, GOLDEN "/small.net", NULL, err, sizeof(err)), 0);
	assert_int_equal(t->nnodes, 3);
	assert_int_equal(t->nswitches, 3);
	assert_int_equal(t->nodes[n].nnics, 2);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	/* "MF0;leaf-r1:MQM9700/U1": the managed switch's host name */
	i = isle_topo_find_switch(t, "leaf-r1");
	assert_true(i >= 0);
	assert_int_equal(t->switches[i].guid, 0x0002c90000000020);
	assert_int_equal(t->switches[i].rail, 1);
	assert_int_equal(t->switches[i].level, ISLE_SW_LEAF);
	isle_topo_destroy(t);
}

/* Switches named by a one-word admin description keep it; generic firmware
 * descriptions and descriptions two switches share fall back to the id. */
static void test_switch_desc_names(void **state)
{
	static const char dump[] =
	    "Switch\t4 \"S-00000000000000a1\"\t# \"rack1-leaf\" base port 0 "
	    "lid 1 lmc 0\n"
	    "[1]\t\"H-00000000000000b1\"[1]\t# \"gpu01 mlx5_0\" lid 11 4xNDR\n"
	    "[2]\t\"S-00000000000000a3\"[1]\t# \"spine1\" lid 3 4xNDR\n"
	    "[3]\t\"S-00000000000000a4\"[1]\t# \"Voltaire 4036 - 36 QDR ports "
	    "switch\" lid 4 4xNDR\n"
	    "\n"
	    "Switch\t4 \"S-00000000000000a2\"\t# \"MF0;leaf-x:MQM9700/U1\" "
	    "base port 0 lid 2 lmc 0\n"
	    "[1]\t\"H-00000000000000b2\"[1]\t# \"gpu02 mlx5_0\" lid 12 4xNDR\n"
	    "[2]\t\"S-00000000000000a3\"[2]\t# \"spine1\" lid 3 4xNDR\n"
	    "[3]\t\"S-00000000000000a5\"[1]\t# \"twin\" lid 5 4xNDR\n"
	    "\n"
	    "Switch\t4 \"S-00000000000000a3\"\t# \"spine1\" base port 0 lid 3 "
	    "lmc 0\n"
	    "[1]\t\"S-00000000000000a1\"[2]\t# \"rack1-leaf\" lid 1 4xNDR\n"
	    "[2]\t\"S-00000000000000a2\"[2]\t# \"MF0;leaf-x:MQM9700/U1\" lid 2 "
	    "4xNDR\n"
	    "\n"
	    "Switch\t4 \"S-00000000000000a4\"\t# \"Voltaire 4036 - 36 QDR "
	    "ports switch\" base port 0 lid 4 lmc 0\n"
	    "[1]\t\"S-00000000000000a1\"[3]\t# \"rack1-leaf\" lid 1 4xNDR\n"
	    "[2]\t\"S-00000000000000a6\"[1]\t# \"twin\" lid 6 4xNDR\n"
	    "\n"
	    "Switch\t4 \"S-00000000000000a5\"\t# \"twin\" base port 0 lid 5 "
	    "lmc 0\n"
	    "[1]\t\"S-00000000000000a2\"[3]\t# \"MF0;leaf-x:MQM9700/U1\" lid 2 "
	    "4xNDR\n"
	    "\n"
	    "Switch\t4 \"S-00000000000000a6\"\t# \"twin\" base port 0 lid 6 "
	    "lmc 0\n"
	    "[1]\t\"S-00000000000000a4\"[2]\t# \"Voltaire 4036 - 36 QDR ports "
	    "switch\" lid 4 4xNDR\n"
	    "\n"
	    "Ca\t1 \"H-00000000000000b1\"\t# \"gpu01 mlx5_0\"\n"
	    "[1](00000000000000b1)\t\"S-00000000000000a1\"[1]\t# lid 11 lmc 0 "
	    "\"rack1-leaf\" lid 1 4xNDR\n"
	    "\n"
	    "Ca\t1 \"H-00000000000000b2\"\t# \"gpu02 mlx5_0\"\n"
	    "[1](00000000000000b2)\t\"S-00000000000000a2\"[1]\t# lid 12 lmc 0 "
	    "\"MF0;leaf-x:MQM9700/U1\" lid 2 4xNDR\n";
	char path[256], err[512];
	isle_topo *t = isle_topo_create();
	int i;

	write_tmp(path, sizeof(path), "names", dump);
	assert_int_equal(isle_ibnd_load(t, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(t->nswitches, 6);
	i = isle_topo_find_switch(t, "rack1-leaf");
	assert_true(i >= 0);
	assert_int_equal(t->switches[i].guid, 0xa1);
	assert_true(isle_topo_find_switch(t, "spine1") >= 0);
	/* a managed switch ("MF0;leaf-x:MQM9700/U1") by its host name */
	i = isle_topo_find_switch(t, "leaf-x");
	assert_true(i >= 0);
	assert_int_equal(t->switches[i].guid, 0xa2);
	assert_true(isle_topo_find_switch(t, "S-00000000000000a4") >= 0);
	assert_true(isle_topo_find_switch(t, "S-00000000000000a5") >= 0);
	assert_true(isle_topo_find_switch(t, "S-00000000000000a6") >= 0);
	assert_int_equal(isle_topo_find_switch(t, "twin"), -1);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	isle_topo_destroy(t);
	unlink(path);
}

/* Loads a golden dump into a new finalized model (no GUID map). */
static isle_topo *load_model(const char *path)
{
	isle_topo *t = isle_topo_create();
	char err[512];

	assert_non_null(t);
	if (isle_ibnd_load(t, path, NULL, err, sizeof(err)) != 0 ||
	    isle_topo_finalize(t, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
	return t;
}

static int node_of(const isle_topo *t, const char *name)
{
	int i = isle_topo_find_node(t, name);

	if (i < 0)
		fail_msg("no node %s", name);
	return i;
}

/*
 * two-leaf.net: two leafs joined by two cables, no spine (a small
 * cluster). Each leaf is its own leaf group; the cable makes them one
 * spine group, said once per pair of leafs; the anonymous HCA is reported
 * with its GUID and where it is cabled, so an admin can name it.
 */
static void test_peer_leafs_no_spine(void **state)
{
	isle_topo *t = load_model(GOLDEN "/two-leaf.net");
	int a1 = node_of(t, "a1"), a2 = node_of(t, "a2");
	int b1 = node_of(t, "b1"), b2 = node_of(t, "b2"), i;
	const char *w;

	assert_int_equal(t->nnodes, 4);
	assert_int_equal(t->nswitches, 2);
	for (i = 0; i < t->nswitches; i++)
		assert_int_equal(t->switches[i].level, ISLE_SW_LEAF);
	assert_int_equal(isle_topo_node_tier(t, a1, a2), ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, b1, b2), ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, a1, b1), ISLE_TIER_SPINE);
	assert_int_equal(isle_topo_node_tier(t, a2, b2), ISLE_TIER_SPINE);
	assert_int_equal(t->ngroups[ISLE_TIER_LEAF], 2);
	assert_int_equal(t->ngroups[ISLE_TIER_SPINE], 1);
	w = strstr(warnings, "cabled to each other with no spine above");
	assert_non_null(w);
	assert_null(strstr(w + 10, "cabled to each other"));
	assert_null(strstr(warnings, "drawn as parent/child"));
	assert_non_null(strstr(warnings,
			       "anonymous HCA H-0002c90000000901, node GUID "
			       "0x0002c90000000901"));
	assert_non_null(strstr(warnings, "cabled to S-0002c90000000020[5]"));
	assert_non_null(strstr(warnings, "\"0x0002c90000000901 HOST HCA\""));
	/* Saved and loaded again, the cluster file says the same. */
	{
		char *js = isle_topo_to_json(t), err[512];
		isle_topo *u = NULL;

		assert_non_null(js);
		if (isle_topo_load_buf(js, "two.json", &u, err, sizeof(err)))
			fail_msg("%s", err);
		assert_int_equal(
		    isle_topo_node_tier(u, node_of(u, "a1"), node_of(u, "b1")),
		    ISLE_TIER_SPINE);
		assert_int_equal(
		    isle_topo_node_tier(u, node_of(u, "a1"), node_of(u, "a2")),
		    ISLE_TIER_LEAF);
		isle_topo_destroy(u);
		free(js);
	}
	isle_topo_destroy(t);
}

/*
 * dual-home.net: two planes (switches not cabled together), every host on
 * both: h1 and h2 through the two ports of one HCA, h3 through two HCAs.
 * The first port of an HCA is its NIC and gives its rail; the second port
 * cables the node to the other plane without making a rail of its own.
 */
static void test_dual_homed_hosts(void **state)
{
	isle_topo *t = load_model(GOLDEN "/dual-home.net");
	int h1 = node_of(t, "h1"), h2 = node_of(t, "h2"), h3 = node_of(t, "h3");
	int pa = isle_topo_find_switch(t, "plane-a");
	int pb = isle_topo_find_switch(t, "plane-b");
	const struct isle_switch *b;
	int i, seen = 0;

	assert_true(pa >= 0 && pb >= 0);
	assert_int_equal(t->nodes[h1].nnics, 1);
	assert_int_equal(t->nodes[h1].nics[0].sw, pa);
	assert_int_equal(t->nodes[h3].nnics, 2);
	assert_int_equal(t->nodes[h3].nics[0].sw, pa);
	assert_int_equal(t->nodes[h3].nics[1].sw, pb);
	assert_int_equal(t->nodes[h3].nics[1].rail, 1);
	/* Every host is on plane b too. */
	b = &t->switches[pb];
	for (i = 0; i < b->nnodes; i++)
		seen |= 1 << (b->nodes[i] == h1	  ? 0
			      : b->nodes[i] == h2 ? 1
						  : 2);
	assert_int_equal(b->nnodes, 3);
	assert_int_equal(seen, 7);
	assert_int_equal(t->switches[pb].rail, 1);
	assert_int_equal(isle_topo_node_tier(t, h1, h2), ISLE_TIER_LEAF);
	assert_int_equal(isle_topo_node_tier(t, h1, h3), ISLE_TIER_LEAF);
	assert_int_equal(t->nodes[h1].leaf, pa);
	/* A second port is not a crossed cable. */
	assert_null(strstr(warnings, "crossed cable"));
	/* The cluster file keeps the second port's cable. */
	{
		char *js = isle_topo_to_json(t), err[512];
		isle_topo *u = NULL;

		assert_non_null(js);
		if (isle_topo_load_buf(js, "dual.json", &u, err, sizeof(err)))
			fail_msg("%s", err);
		pb = isle_topo_find_switch(u, "plane-b");
		assert_true(pb >= 0);
		assert_int_equal(u->switches[pb].nnodes, 3);
		assert_int_equal(
		    isle_topo_node_tier(u, node_of(u, "h1"), node_of(u, "h3")),
		    ISLE_TIER_LEAF);
		isle_topo_destroy(u);
		free(js);
	}
	isle_topo_destroy(t);
}

/*
 * prompt-around.out: two-leaf.net as pasted from a terminal: the command
 * line and an ibwarn before it, an ibwarn inside, and a prompt and more
 * text after it. The fabric is the same as without them.
 */
static void test_text_around_dump(void **state)
{
	isle_ibnd_fabric *f = NULL, *g = NULL;
	char err[512], *x, *y;

	assert_int_equal(isle_ibnd_parse(GOLDEN "/prompt-around.out", NULL, &f,
					 err, sizeof(err)),
			 0);
	assert_int_equal(
	    isle_ibnd_parse(GOLDEN "/two-leaf.net", NULL, &g, err, sizeof(err)),
	    0);
	x = isle_ibnd_summary(f);
	y = isle_ibnd_summary(g);
	assert_string_equal(x, y);
	assert_non_null(strstr(warnings, "prompt-around.out:1: skipping"));
	assert_non_null(strstr(warnings, "prompt-around.out:30: skipping a "
					 "message of ibnetdiscover"));
	assert_non_null(strstr(warnings,
			       "prompt-around.out:42: the dump ends at a shell "
			       "prompt"));
	free(x);
	free(y);
	isle_ibnd_fabric_destroy(f);
	isle_ibnd_fabric_destroy(g);
}

/* A dump cut short before the prompt still fails the cable check. */
static void test_prompt_after_truncated_dump(void **state)
{
	char path[256], err[512],
	    *full = test_read_file(GOLDEN "/prompt-around.out");
	isle_ibnd_fabric *f = NULL;
	char *cut;

	assert_non_null(full);
	/* Drop the last CA section (the anonymous HCA) but keep the prompt. */
	cut = strstr(full, "caguid=0x0002c90000000901");
	assert_non_null(cut);
	memmove(cut, strstr(cut, "alice@mgmt01"),
		strlen(strstr(cut, "alice")) + 1);
	write_tmp(path, sizeof(path), "cut", full);
	assert_int_equal(isle_ibnd_parse(path, NULL, &f, err, sizeof(err)),
			 -EINVAL);
	assert_null(f);
	assert_non_null(strstr(err, "H-0002c90000000901"));
	unlink(path);
	free(full);
}

/* Appends one cable end: "[port] "PEER"[pport] # "desc" lid 1 4xNDR". */
static void cable(char *buf, size_t len, int port, const char *peer, int pport,
		  const char *rate)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "[%d]\t\"%s\"[%d]\t# \"x\" lid 1 %s\n", port,
		 peer, pport, rate);
}

/*
 * Two leafs of 4 hosts with 2 cables each to one spine (2:1), the spine
 * with 1 cable to a core (4:1): the tiers get that oversubscription.
 */
static void test_oversub_from_cabling(void **state)
{
	char dump[8192] = "", path[256], err[512], id[32], host[32];
	isle_topo *t;

	for (int l = 0; l < 2; l++) {
		size_t n = strlen(dump);

		snprintf(dump + n, sizeof(dump) - n,
			 "Switch\t8 \"S-00000000000000a%d\"\t# \"leaf%d\" base "
			 "port 0 lid 1 lmc 0\n",
			 l, l);
		for (int h = 0; h < 4; h++) {
			snprintf(id, sizeof(id), "H-00000000000000%d%d", l, h);
			cable(dump, sizeof(dump), h + 1, id, 1, "4xNDR");
		}
		cable(dump, sizeof(dump), 5, "S-00000000000000c0", 1 + 2 * l,
		      "4xNDR");
		cable(dump, sizeof(dump), 6, "S-00000000000000c0", 2 + 2 * l,
		      "4xNDR");
		strcat(dump, "\n");
	}
	strcat(dump, "Switch\t8 \"S-00000000000000c0\"\t# \"spine0\" base port "
		     "0 lid 1 lmc 0\n");
	for (int k = 0; k < 4; k++)
		cable(dump, sizeof(dump), k + 1,
		      k < 2 ? "S-00000000000000a0" : "S-00000000000000a1",
		      5 + k % 2, "4xNDR");
	cable(dump, sizeof(dump), 5, "S-00000000000000d0", 1, "4xNDR");
	strcat(dump,
	       "\nSwitch\t8 \"S-00000000000000d0\"\t# \"core0\" base port "
	       "0 lid 1 lmc 0\n");
	cable(dump, sizeof(dump), 1, "S-00000000000000c0", 5, "4xNDR");
	for (int l = 0; l < 2; l++)
		for (int h = 0; h < 4; h++) {
			size_t n = strlen(dump);

			snprintf(id, sizeof(id), "H-00000000000000%d%d", l, h);
			snprintf(host, sizeof(host), "n%d%d mlx5_0", l, h);
			snprintf(dump + n, sizeof(dump) - n,
				 "\nCa\t1 \"%s\"\t# \"%s\"\n", id, host);
			snprintf(id, sizeof(id), "S-00000000000000a%d", l);
			cable(dump, sizeof(dump), 1, id, h + 1, "4xNDR");
		}

	write_tmp(path, sizeof(path), "oversub", dump);
	t = isle_topo_create();
	if (isle_ibnd_load(t, path, NULL, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(t->nnodes, 8);
	assert_true(t->tier[ISLE_TIER_SPINE].oversub == 2.0);
	assert_true(t->tier[ISLE_TIER_CORE].oversub == 4.0);
	assert_true(t->tier[ISLE_TIER_LEAF].oversub == 1.0);
	isle_topo_destroy(t);

	/* An admin's value (a source merged before) is kept. */
	t = isle_topo_create();
	t->tier[ISLE_TIER_SPINE].oversub = 3.0;
	if (isle_ibnd_load(t, path, NULL, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(t->tier[ISLE_TIER_SPINE].oversub == 3.0);
	isle_topo_destroy(t);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_golden_dir, setup),
	    cmocka_unit_test_setup(test_ndr_golden_and_counts, setup),
	    cmocka_unit_test_setup(test_ndr_into_model, setup),
	    cmocka_unit_test_setup(test_bad_dump_real, setup),
	    cmocka_unit_test_setup(test_x5_matches_topology_conf, setup),
	    cmocka_unit_test_setup(test_x5_golden, setup),
	    cmocka_unit_test_setup(test_node_subset, setup),
	    cmocka_unit_test_setup(test_oversub_from_cabling, setup),
	    cmocka_unit_test_setup(test_map_formats, setup),
	    cmocka_unit_test_setup(test_spine_list_and_prompt, setup),
	    cmocka_unit_test_setup(test_merge_into_existing_nodes, setup),
	    cmocka_unit_test_setup(test_switch_desc_names, setup),
	    cmocka_unit_test_setup(test_peer_leafs_no_spine, setup),
	    cmocka_unit_test_setup(test_dual_homed_hosts, setup),
	    cmocka_unit_test_setup(test_text_around_dump, setup),
	    cmocka_unit_test_setup(test_prompt_after_truncated_dump, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
