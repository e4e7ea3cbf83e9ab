/*
 * test_agent_discover.c - node discovery from real hwloc exports, the node
 * JSON they produce (golden files in tests/golden/discover/), and merging
 * node JSON into the cluster model.
 *
 * Inputs come from hwloc/ of the shared test data (test_data.h).
 * ISLE_GOLDEN_UPDATE=1 rewrites the expected JSON files.
 */
#include <errno.h>
#include <hwloc.h>
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

#include "isle_agent.h"
#include "isle_topo.h"
#include "test_data.h"

#define GOLDEN "tests/golden/discover"

static char xml[512];

static const char *hwloc_xml(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "hwloc/%s", name);
	return test_data_path(xml, sizeof(xml), rel);
}

static isle_agent_node *discover(const char *name)
{
	const char *path = hwloc_xml(name);
	isle_agent_node *n;
	char err[512];

	if (!path)
		return NULL;
	n = isle_agent_node_create();
	assert_non_null(n);
	if (isle_agent_discover_hwloc(n, path, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return n;
}

/* Node JSON of n, with the input path reduced to its name. */
static void check_golden(isle_agent_node *n, const char *name)
{
	char path[512], *text, *want;
	const char *u = getenv("ISLE_GOLDEN_UPDATE");

	free(n->source);
	assert_true(asprintf(&n->source, "hwloc xml %s", name) > 0);
	text = isle_agent_node_to_json(n);
	assert_non_null(text);
	snprintf(path, sizeof(path), "%s/%.*s.json", GOLDEN,
		 (int)(strlen(name) - 4), name);
	if (u && *u && strcmp(u, "0") != 0) {
		FILE *fp = fopen(path, "w");

		assert_non_null(fp);
		fputs(text, fp);
		assert_int_equal(fclose(fp), 0);
	} else {
		want = test_read_file(path);
		if (!want)
			fail_msg("missing golden file %s", path);
		if (strcmp(want, text) != 0)
			fail_msg("%s differs from the discovered node", path);
		free(want);
	}
	free(text);
}

/*
 * NVLink islands read independently of the agent: components of hwloc's
 * NVLinkBandwidth matrix over GPU OS devices, with all NVSwitch-like PCI
 * endpoints joined. Returns the number of islands among ngpus GPUs, or
 * ngpus when the file has no matrix.
 */
static int reference_islands(const char *path, int ngpus)
{
	struct hwloc_distances_s *d = NULL;
	hwloc_topology_t topo;
	unsigned nr = 1, i, j;
	int comp[256], ncomp, any_switch = -1;

	assert_int_equal(hwloc_topology_init(&topo), 0);
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	assert_int_equal(hwloc_topology_set_xml(topo, path), 0);
	assert_int_equal(hwloc_topology_load(topo), 0);
	if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &d, 0) ||
	    nr == 0) {
		hwloc_topology_destroy(topo);
		return ngpus;
	}
	assert_true(d->nbobjs < 256);
	for (i = 0; i < d->nbobjs; i++)
		comp[i] = (int)i;
	for (i = 0; i < d->nbobjs; i++) {
		if (d->objs[i]->type == HWLOC_OBJ_PCI_DEVICE) {
			if (any_switch < 0)
				any_switch = (int)i;
			comp[i] = any_switch;
		}
	}
	for (int pass = 0; pass < 64; pass++) {
		for (i = 0; i < d->nbobjs; i++)
			for (j = 0; j < d->nbobjs; j++)
				if ((d->values[i * d->nbobjs + j] ||
				     (d->objs[i]->type ==
					  HWLOC_OBJ_PCI_DEVICE &&
				      d->objs[j]->type ==
					  HWLOC_OBJ_PCI_DEVICE)) &&
				    comp[j] < comp[i])
					comp[i] = comp[j];
	}
	/* Distinct components among the GPUs. */
	ncomp = 0;
	for (i = 0; i < d->nbobjs; i++) {
		if (d->objs[i]->type != HWLOC_OBJ_OS_DEVICE)
			continue;
		for (j = 0; j < i; j++)
			if (d->objs[j]->type == HWLOC_OBJ_OS_DEVICE &&
			    comp[j] == comp[i])
				break;
		if (j == i)
			ncomp++;
	}
	hwloc_distances_release(topo, d);
	hwloc_topology_destroy(topo);
	return ncomp;
}

static void test_dgx2_one_island(void **state)
{
	isle_agent_node *n = discover("nvidiaDGX2.xml");
	int i, j;

	if (!n)
		skip();
	assert_int_equal(n->ngpus, 16);
	assert_int_equal(n->nislands, 1);
	assert_int_equal(n->nislands, reference_islands(xml, n->ngpus));
	assert_int_equal(n->nvlink_source, ISLE_NVLINK_HWLOC);
	assert_int_equal(n->nnvswitches, 12);
	for (i = 0; i < n->ngpus; i++) {
		assert_int_equal(n->gpus[i].island, 0);
		/* A V100 has six NVLinks, one to each switch of its board. */
		assert_int_equal(n->gpus[i].nvswitch_links, 6);
		assert_non_null(strstr(n->gpus[i].model, "V100-SXM3"));
		for (j = 0; j < n->ngpus; j++)
			assert_int_equal(n->nvlinks[i * n->ngpus + j],
					 i == j ? 0 : 6);
	}
	/* The export names no host; nothing else is wrong with it. */
	assert_null(n->hostname);
	assert_int_equal(n->nwarnings, 0);
	check_golden(n, "nvidiaDGX2.xml");
	isle_agent_node_destroy(n);
}

static void test_lassen_islands_follow_links(void **state)
{
	isle_agent_node *n = discover("coral-lassen.xml");
	int i, expect;

	if (!n)
		skip();
	assert_int_equal(n->ngpus, 4);
	assert_string_equal(n->hostname, "lassen28");
	expect = reference_islands(xml, n->ngpus);
	assert_int_equal(n->nislands, expect);
	if (expect == n->ngpus) {
		/* The export has no NVLink matrix: islands cannot be known
		 * and the node says so rather than guessing. */
		assert_int_equal(n->nvlink_source, ISLE_NVLINK_NONE);
		assert_true(n->nwarnings >= 1);
		assert_non_null(strstr(n->warnings[0], "no NVLink data"));
	}
	/* cuda0 and nvml0 are one GPU. */
	for (i = 0; i < n->ngpus; i++)
		assert_non_null(strstr(n->gpus[i].osdevs, "nvml"));
	/* Two sockets, each with two GPUs and two ConnectX-5 ports. */
	assert_int_equal(n->nnics, 4);
	for (i = 0; i < n->ngpus; i++) {
		int nic = n->gpus[i].nic;

		assert_true(nic >= 0);
		assert_int_equal(n->nics[nic].numa, n->gpus[i].numa);
		assert_true(n->nics[nic].near_gpus & (1ull << i));
	}
	check_golden(n, "coral-lassen.xml");
	isle_agent_node_destroy(n);
}

static void test_pascal_island_per_gpu(void **state)
{
	isle_agent_node *n = discover("cts1-pascal.xml");
	int i;

	if (!n)
		skip();
	assert_int_equal(n->ngpus, 2);
	assert_int_equal(n->nislands, 2);
	assert_int_equal(n->nislands, reference_islands(xml, n->ngpus));
	for (i = 0; i < n->ngpus; i++)
		assert_int_equal(n->gpus[i].island, i);
	/* PCIe cards: no NVLink expected, nothing to warn about. */
	assert_int_equal(n->nwarnings, 0);
	check_golden(n, "cts1-pascal.xml");
	isle_agent_node_destroy(n);
}

static void test_wholeio_nic_guid(void **state)
{
	isle_agent_node *n = discover("2n8c-pci-wholeio.xml");
	int k;

	if (!n)
		skip();
	k = -1;
	for (int i = 0; i < n->nnics; i++)
		if (strcmp(n->nics[i].name, "mlx5_0") == 0)
			k = i;
	assert_true(k >= 0);
	assert_true(n->nics[k].node_guid == 0x248a0703001e39feull);
	assert_true(n->nics[k].port_guid == 0x248a0703001e39feull);
	assert_int_equal(n->nics[k].lid, 1);
	assert_int_equal(n->nics[k].state, 4);
	assert_string_equal(n->nics[k].bus_id, "0000:04:00.0");
	assert_int_equal(n->nics[k].numa, 1);
	/* The K40m (cuda0) and the Radeon (OpenCL) are GPUs; the VGA
	 * controller is not. */
	for (int i = 0; i < n->ngpus; i++)
		assert_null(
		    strstr(n->gpus[i].model ? n->gpus[i].model : "", "MGA"));
	check_golden(n, "2n8c-pci-wholeio.xml");
	isle_agent_node_destroy(n);
}

static void test_bad_xml(void **state)
{
	char path[256], err[512] = "";
	isle_agent_node *n = isle_agent_node_create();
	FILE *fp;

	snprintf(path, sizeof(path), "/tmp/isle-test-agent-%d.xml",
		 (int)getpid());
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
	      "  <object type=\"Machine\"\n",
	      fp);
	fclose(fp);
	assert_true(isle_agent_discover_hwloc(n, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, path));
	unlink(path);
	isle_agent_node_destroy(n);

	n = isle_agent_node_create();
	assert_int_equal(isle_agent_discover_hwloc(n, "/nonexistent/x.xml", err,
						   sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.xml"));
	isle_agent_node_destroy(n);
}

/* On a machine without the hardware the optional backends say -ENOENT and
 * leave the node alone; with it they succeed. */
static void test_optional_backends(void **state)
{
	isle_agent_node *n = isle_agent_node_create();
	char err[256];
	int rc;

	assert_int_equal(isle_agent_discover_hwloc(n, NULL, err, sizeof(err)),
			 0);
	assert_non_null(n->hostname);
	rc = isle_agent_discover_ibv(n, err, sizeof(err));
	assert_true(rc == 0 || rc == -ENOENT);
	if (rc == -ENOENT)
		assert_non_null(strstr(err, "no RDMA devices"));
	for (int i = 0; rc == 0 && i < n->nnics; i++)
		assert_true(n->nics[i].node_guid != 0);
	rc = isle_agent_discover_nvml(n, err, sizeof(err));
	assert_true(rc == 0 || rc == -ENOENT);
	if (rc == 0)
		assert_int_equal(n->nvlink_source, ISLE_NVLINK_NVML);
	isle_agent_node_destroy(n);
}

/* --- NVML, through the fake library ----------------------------------- */

/* Points the backend at build/tests/libfake_nvml.so, beside this binary. */
static int use_fake_nvml(const char *mode)
{
	char exe[512], lib[600], *slash;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len <= 0)
		return -1;
	exe[len] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(lib, sizeof(lib), "%s/libfake_nvml.so", exe);
	if (access(lib, R_OK) != 0)
		return -1;
	setenv("ISLE_NVML_LIBRARY", lib, 1);
	setenv("FAKE_NVML_MODE", mode, 1);
	return 0;
}

static void test_nvml_pairs_and_fabric(void **state)
{
	isle_agent_node *n = isle_agent_node_create();
	char err[256], *js;
	int i;

	if (use_fake_nvml("pairs") != 0)
		skip();
	assert_int_equal(isle_agent_discover_nvml(n, err, sizeof(err)), 0);
	unsetenv("ISLE_NVML_LIBRARY");
	/* GPUs hwloc did not report are added, by PCI bus id. */
	assert_int_equal(n->ngpus, 4);
	assert_string_equal(n->gpus[2].bus_id, "0000:03:00.0");
	assert_string_equal(n->gpus[2].model, "NVIDIA GB200");
	assert_int_equal(n->nvlink_source, ISLE_NVLINK_NVML);
	/* Two links per bridged pair, nothing across. */
	assert_int_equal(n->nvlinks[0 * 4 + 1], 2);
	assert_int_equal(n->nvlinks[2 * 4 + 3], 2);
	assert_int_equal(n->nvlinks[1 * 4 + 2], 0);
	assert_int_equal(n->nislands, 2);
	assert_int_equal(n->gpus[0].island, n->gpus[1].island);
	assert_int_not_equal(n->gpus[1].island, n->gpus[2].island);
	for (i = 0; i < 4; i++)
		assert_int_equal(n->gpus[i].nvswitch_links, 0);
	/* The multi-node domain reaches the node JSON. */
	assert_string_equal(n->fabric_cluster,
			    "00112233-4455-6677-8899-aabbccddeeff");
	assert_int_equal(n->fabric_clique, 5);
	js = isle_agent_node_to_json(n);
	assert_non_null(strstr(js, "\"clique\": 5"));
	free(js);
	isle_agent_node_destroy(n);
}

static void test_nvml_nvswitch(void **state)
{
	isle_agent_node *n = isle_agent_node_create();
	char err[256];
	int i;

	if (use_fake_nvml("nvswitch") != 0)
		skip();
	assert_int_equal(isle_agent_discover_nvml(n, err, sizeof(err)), 0);
	assert_int_equal(n->ngpus, 8);
	assert_int_equal(n->nislands, 1);
	for (i = 0; i < 8; i++)
		assert_int_equal(n->gpus[i].nvswitch_links, 18);
	assert_int_equal(n->nvlinks[3 * 8 + 5], 18);
	/* Fabric not started: no domain. */
	assert_null(n->fabric_cluster);
	isle_agent_node_destroy(n);

	n = isle_agent_node_create();
	setenv("FAKE_NVML_MODE", "nogpu", 1);
	assert_int_equal(isle_agent_discover_nvml(n, err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(n->ngpus, 0);
	unsetenv("ISLE_NVML_LIBRARY");
	isle_agent_node_destroy(n);
}

/* --- Node JSON into the model ------------------------------------------- */

static char *node_json(const char *xmlname, const char *host)
{
	isle_agent_node *n = discover(xmlname);
	char *text;

	if (!n)
		return NULL;
	if (host) {
		free(n->hostname);
		n->hostname = strdup(host);
	}
	text = isle_agent_node_to_json(n);
	isle_agent_node_destroy(n);
	return text;
}

static void test_merge_dgx2(void **state)
{
	char *js = node_json("nvidiaDGX2.xml", "dgx2-01"), err[512];
	isle_topo *t;
	int node;

	if (!js)
		skip();
	t = isle_topo_create();
	node =
	    isle_topo_merge_node_json_buf(t, js, "dgx2.json", err, sizeof(err));
	if (node < 0)
		fail_msg("%s", err);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	assert_int_equal(t->nodes[node].ngpus, 16);
	assert_int_equal(t->nodes[node].nislands, 1);
	assert_string_equal(t->nodes[node].gpus[3].model,
			    "Tesla V100-SXM3-32GB-H");
	assert_int_equal(isle_topo_gpu_tier(t, node, 0, node, 15),
			 ISLE_TIER_ISLAND);
	isle_topo_destroy(t);
	free(js);
}

static void test_merge_lassen_fills_fabric_node(void **state)
{
	char *js = node_json("coral-lassen.xml", NULL), err[512], dump[256];
	isle_topo *t;
	FILE *fp;
	int node, k;

	if (!js)
		skip();
	/* A dump that saw lassen28's four HCA ports (by their GUIDs, without
	 * device names) on two leafs. */
	snprintf(dump, sizeof(dump), "/tmp/isle-test-agent-%d.out",
		 (int)getpid());
	fp = fopen(dump, "w");
	assert_non_null(fp);
	fputs("Switch\t36 \"S-0000000000000001\"\t\t# \"leaf1\"\n"
	      "[1]\t\"H-506b4b03003ceee8\"[1]\t\t# \"lassen28\" lid 2 4xEDR\n"
	      "[2]\t\"H-506b4b03003ceeea\"[1]\t\t# \"lassen28\" lid 3 4xEDR\n"
	      "\n"
	      "Ca\t1 \"H-506b4b03003ceee8\"\t\t# \"lassen28\"\n"
	      "[1](506b4b03003ceee8)\t\"S-0000000000000001\"[1]\t\t# lid 2 "
	      "lmc 0 \"leaf1\" lid 1 4xEDR\n"
	      "\n"
	      "Ca\t1 \"H-506b4b03003ceeea\"\t\t# \"lassen28\"\n"
	      "[1](506b4b03003ceeea)\t\"S-0000000000000001\"[2]\t\t# lid 3 "
	      "lmc 0 \"leaf1\" lid 1 4xEDR\n",
	      fp);
	fclose(fp);
	t = isle_topo_create();
	if (isle_ibnd_load(t, dump, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	unlink(dump);
	node = isle_topo_find_node(t, "lassen28");
	assert_true(node >= 0);
	assert_int_equal(t->nodes[node].ngpus, 0);
	assert_int_equal(t->nodes[node].nnics, 2);

	assert_int_equal(isle_topo_merge_node_json_buf(t, js, "lassen.json",
						       err, sizeof(err)),
			 node);
	assert_int_equal(t->nodes[node].ngpus, 4);
	/* Two NICs matched by GUID (and renamed), two added. */
	assert_int_equal(t->nodes[node].nnics, 4);
	for (k = 0; k < 4; k++) {
		const struct isle_nic *x = &t->nodes[node].nics[k];

		if (x->guid == 0x506b4b03003ceee8ull) {
			assert_string_equal(x->name, "mlx5_0");
			assert_int_equal(x->sw, 0);
		}
		assert_true(x->numa == 0 || x->numa == 8);
	}
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	assert_string_equal(
	    t->nodes[node].nics[t->nodes[node].gpus[2].nic].name, "mlx5_2");
	isle_topo_destroy(t);
	free(js);
}

static void test_merge_errors(void **state)
{
	char err[512];
	isle_topo *t = isle_topo_create();
	char *js;
	int node;

	assert_int_equal(isle_topo_merge_node_json_buf(t, "{\"isle_node\": 1,",
						       "a.json", err,
						       sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "a.json:1:17: JSON syntax error"));
	assert_int_equal(isle_topo_merge_node_json_buf(
			     t,
			     "{\"isle_node\": 1, \"hostname\": \"x\", "
			     "\"gpus\": [{\"numa\": \"zero\"}]}",
			     "b.json", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(
	    strstr(err, "b.json: $.gpus[0].numa: expected integer"));
	assert_int_equal(
	    isle_topo_merge_node_json_buf(t, "{\"hostname\": \"x\"}", "c.json",
					  err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "c.json: $.isle_node"));
	/* A rate written as an integer is a number like any other. */
	node = isle_topo_merge_node_json_buf(
	    t,
	    "{\"isle_node\": 1, \"hostname\": \"g\", "
	    "\"nics\": [{\"name\": \"mlx5_0\", \"gbps\": 400}]}",
	    "g.json", err, sizeof(err));
	assert_true(node >= 0);
	assert_int_equal(t->nodes[node].nnics, 1);
	assert_true(t->nodes[node].nics[0].gbps == 400.0);
	assert_int_equal(isle_topo_merge_node_json(t, "/nonexistent/n.json",
						   err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/n.json"));
	/* A node the model holds with other GPUs is not silently resized. */
	js = node_json("cts1-pascal.xml", NULL);
	if (js) {
		assert_true(isle_topo_add_node(t, "pascal4", 8) >= 0);
		assert_int_equal(isle_topo_merge_node_json_buf(
				     t, js, "p.json", err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "p.json: $.gpus: 2 GPUs"));
		free(js);
	}
	isle_topo_destroy(t);
}

static void test_multi_node_domain(void **state)
{
	char paths[3][256], err[512];
	const char *p[3] = {paths[0], paths[1], paths[2]};
	const char *hosts[3] = {"gb-01", "gb-02", "gb-03"};
	const int clique[3] = {7, 7, 8};
	isle_topo *t = isle_topo_create();
	int i, a, b, c;

	for (i = 0; i < 3; i++) {
		FILE *fp;

		snprintf(paths[i], sizeof(paths[i]),
			 "/tmp/isle-test-agent-%d-%d.json", (int)getpid(), i);
		fp = fopen(paths[i], "w");
		assert_non_null(fp);
		fprintf(fp,
			"{\"isle_node\": 1, \"hostname\": \"%s\",\n"
			" \"gpus\": [{\"bus_id\": \"0000:01:00.0\"},"
			" {\"bus_id\": \"0000:02:00.0\"}],\n"
			" \"fabric\": {\"cluster_uuid\": "
			"\"6a5f1c2e-0000-4000-8000-00000000abcd\", "
			"\"clique\": %d}}\n",
			hosts[i], clique[i]);
		fclose(fp);
	}
	if (isle_topo_merge_node_json_files(t, p, 3, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (i = 0; i < 3; i++)
		unlink(paths[i]);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	a = isle_topo_find_node(t, "gb-01");
	b = isle_topo_find_node(t, "gb-02");
	c = isle_topo_find_node(t, "gb-03");
	/* Same clique: one NVLink domain; the third node is on its own. */
	assert_int_equal(isle_topo_gpu_tier(t, a, 1, b, 0), ISLE_TIER_ISLAND);
	assert_int_not_equal(isle_topo_gpu_tier(t, a, 0, c, 0),
			     ISLE_TIER_ISLAND);
	isle_topo_destroy(t);
}

/*
 * AMD GPUs: hwloc's RSMI backend reports Infinity Fabric links as the
 * "XGMIBandwidth" matrix. tests/golden/discover/mi250x-xgmi.xml, written
 * for this test: four MI250X GCDs, 0-1 and 2-3 joined by 4 xGMI links
 * (200 GB/s), nothing across the pairs.
 */
static void test_xgmi_islands(void **state)
{
	isle_agent_node *n = isle_agent_node_create();
	isle_topo *t = isle_topo_create();
	char err[512], *js;
	int node, i;

	(void)state;
	assert_non_null(n);
	assert_non_null(t);
	if (isle_agent_discover_hwloc(n, GOLDEN "/mi250x-xgmi.xml", err,
				      sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(n->ngpus, 4);
	assert_int_equal(n->nvlink_source, ISLE_NVLINK_HWLOC);
	assert_int_equal(n->nvlinks[0 * 4 + 1], 4);
	assert_int_equal(n->nvlinks[2 * 4 + 3], 4);
	assert_int_equal(n->nvlinks[0 * 4 + 2], 0);
	assert_int_equal(n->nvlinks[1 * 4 + 3], 0);
	assert_int_equal(n->nislands, 2);
	assert_int_equal(n->gpus[0].island, n->gpus[1].island);
	assert_int_equal(n->gpus[2].island, n->gpus[3].island);
	assert_int_not_equal(n->gpus[0].island, n->gpus[2].island);
	for (i = 0; i < 4; i++)
		assert_string_equal(n->gpus[i].model, "AMD Instinct MI250X");
	/* The islands survive into the cluster model. */
	js = isle_agent_node_to_json(n);
	assert_non_null(js);
	node = isle_topo_merge_node_json_buf(t, js, "mi250-01.json", err,
					     sizeof(err));
	assert_true(node >= 0);
	assert_int_equal(isle_topo_finalize(t, err, sizeof(err)), 0);
	assert_int_equal(isle_topo_gpu_tier(t, node, 0, node, 1),
			 ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_gpu_tier(t, node, 2, node, 3),
			 ISLE_TIER_ISLAND);
	assert_int_equal(isle_topo_gpu_tier(t, node, 1, node, 2),
			 ISLE_TIER_NODE);
	free(js);
	isle_topo_destroy(t);
	isle_agent_node_destroy(n);
}

/* hwloc 2.9 crashes on an object without complete_cpuset (found by
 * fuzz_hwloc_xml): the agent reports the file instead of crashing. */
static void test_xml_that_crashes_hwloc(void **state)
{
	const char *path =
	    "tests/fuzz/inputs/hwloc_xml/crash-no-complete-cpuset.xml";
	isle_agent_node *n = isle_agent_node_create();
	char err[512];

	(void)state;
	assert_int_equal(isle_agent_discover_hwloc(n, path, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, path));
	isle_agent_node_destroy(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dgx2_one_island),
	    cmocka_unit_test(test_lassen_islands_follow_links),
	    cmocka_unit_test(test_pascal_island_per_gpu),
	    cmocka_unit_test(test_wholeio_nic_guid),
	    cmocka_unit_test(test_bad_xml),
	    cmocka_unit_test(test_optional_backends),
	    cmocka_unit_test(test_nvml_pairs_and_fabric),
	    cmocka_unit_test(test_nvml_nvswitch),
	    cmocka_unit_test(test_merge_dgx2),
	    cmocka_unit_test(test_merge_lassen_fills_fabric_node),
	    cmocka_unit_test(test_merge_errors),
	    cmocka_unit_test(test_multi_node_domain),
	    cmocka_unit_test(test_xgmi_islands),
	    cmocka_unit_test(test_xml_that_crashes_hwloc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
