/*
 * clusters.c - the simulated clusters, built through the isle_topo builder
 * API: (a) a DGX H100 SuperPOD-like cluster, (b) GB200 NVL72-like racks,
 * (c) PCIe servers with NVLink pairs, (d) the real Clos map of
 * shared/data/clos, (e) rail-optimised RoCE clusters with 2:1 and 4:1
 * aggregation on that map's grouping, plus synthetic clusters of any size
 * for the scale runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

#define CHECK(x)                                                               \
	do {                                                                   \
		rc = (x);                                                      \
		if (rc < 0)                                                    \
			goto out;                                              \
	} while (0)

static void set_tier(isle_topo *t, isle_tier k, double bw, double lat,
		     double oversub)
{
	t->tier[k].bw_gbps = bw;
	t->tier[k].lat_us = lat;
	t->tier[k].oversub = oversub;
}

/* A node of ngpus GPUs; NVLink between every pair inside a group of
 * `island` consecutive GPUs (island == ngpus: an NVSwitch board). */
static int add_node(isle_topo *t, const char *name, int ngpus, int island,
		    int nics)
{
	int n = isle_topo_add_node(t, name, ngpus), a, b, rc = 0;

	if (n < 0)
		return n;
	for (a = 0; a < ngpus; a++)
		for (b = a + 1; b < ngpus; b++)
			if (island > 1 && a / island == b / island)
				CHECK(isle_topo_set_nvlink(
				    t, n, a, b, island > 2 ? 18 : 4));
	for (a = 0; a < nics; a++) {
		char nic[16];
		int k;

		snprintf(nic, sizeof(nic), "mlx5_%d", a);
		k = isle_topo_add_nic(t, n, nic, 0, a, 400.0, -1);
		CHECK(k);
		if (nics == ngpus)
			CHECK(isle_topo_set_gpu_nic(t, n, a, k));
	}
	return n;
out:
	return rc;
}

static int add_switch(isle_topo *t, isle_sw_level lvl, const char *fmt, int a,
		      int b)
{
	char name[64];

	snprintf(name, sizeof(name), fmt, a, b);
	return isle_topo_add_switch(t, name, 0, lvl);
}

/*
 * (a) scalable units of per_su nodes x 8 GPUs (NVSwitch); per SU one leaf
 * per rail (8 rails); pods of pod_su SUs share 16 spines; pods meet at 4
 * core switches (one pod: no core). The last SU may be partial.
 */
static int build_superpod(isle_topo *t, int nodes, int per_su, int pod_su)
{
	int spines[16], cores[4], leaf[8], su, r, i, n, rc = 0;
	int nsu = (nodes + per_su - 1) / per_su, ncore = 0;
	char name[32];

	set_tier(t, ISLE_TIER_ISLAND, 450.0, 1.0, 1.0);
	set_tier(t, ISLE_TIER_NODE, 64.0, 2.0, 1.0);
	set_tier(t, ISLE_TIER_LEAF, 50.0, 3.0, 1.0);
	set_tier(t, ISLE_TIER_SPINE, 50.0, 5.0, 1.0);
	set_tier(t, ISLE_TIER_CORE, 50.0, 7.0, 2.0);
	if (nsu > pod_su) {
		ncore = 4;
		for (i = 0; i < ncore; i++)
			CHECK(cores[i] =
				  add_switch(t, ISLE_SW_CORE, "core%d", i, 0));
	}
	for (su = 0; su < nsu; su++) {
		if (su % pod_su == 0)
			for (i = 0; i < 16; i++) {
				CHECK(spines[i] = add_switch(t, ISLE_SW_SPINE,
							     "pod%d-spine%02d",
							     su / pod_su, i));
				for (r = 0; r < ncore; r++)
					CHECK(isle_topo_link_switches(
					    t, cores[r], spines[i]));
			}
		for (r = 0; r < 8; r++) {
			CHECK(leaf[r] = add_switch(t, ISLE_SW_LEAF,
						   "su%d-leaf-r%d", su, r));
			for (i = 0; i < 16; i++)
				CHECK(isle_topo_link_switches(t, spines[i],
							      leaf[r]));
		}
		for (i = 0; i < per_su && su * per_su + i < nodes; i++) {
			snprintf(name, sizeof(name), "dgx%05d",
				 su * per_su + i + 1);
			CHECK(n = add_node(t, name, 8, 8, 8));
			for (r = 0; r < 8; r++)
				CHECK(isle_topo_attach_node(t, leaf[r], n, r));
		}
	}
out:
	return rc < 0 ? rc : 0;
}

/* (b) 16 racks of up to 18 nodes x 4 GPUs, one NVLink domain and one leaf
 * per rack, leafs under 8 spines at 2:1; racks 3, 7 and 12 are partial. */
static int build_nvl72(isle_topo *t)
{
	static const int partial[16] = {[3] = 16, [7] = 14, [12] = 9};
	int spines[8], nodes[18], rack, i, rc = 0;
	char name[32];

	set_tier(t, ISLE_TIER_ISLAND, 900.0, 1.0, 1.0);
	set_tier(t, ISLE_TIER_NODE, 64.0, 2.0, 1.0);
	set_tier(t, ISLE_TIER_LEAF, 50.0, 3.0, 1.0);
	set_tier(t, ISLE_TIER_SPINE, 50.0, 5.0, 2.0);
	set_tier(t, ISLE_TIER_CORE, 50.0, 7.0, 2.0);
	for (i = 0; i < 8; i++)
		CHECK(spines[i] =
			  add_switch(t, ISLE_SW_SPINE, "spine%d", i, 0));
	for (rack = 0; rack < 16; rack++) {
		int n = partial[rack] ? partial[rack] : 18, leaf;

		CHECK(leaf = add_switch(t, ISLE_SW_LEAF, "rack%02d-leaf", rack,
					0));
		for (i = 0; i < 8; i++)
			CHECK(isle_topo_link_switches(t, spines[i], leaf));
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "r%02dn%02d", rack, i + 1);
			CHECK(nodes[i] = add_node(t, name, 4, 4, 4));
			CHECK(isle_topo_attach_node(t, leaf, nodes[i], -1));
		}
		snprintf(name, sizeof(name), "nvl72-rack%02d", rack);
		CHECK(isle_topo_add_domain(t, name, nodes, n, 900.0));
		CHECK(isle_topo_add_rack(t, name, nodes, n));
	}
out:
	return rc < 0 ? rc : 0;
}

/* (c) 64 PCIe servers x 8 GPUs, NVLink bridges between GPU pairs, one NIC
 * each, 4 leafs of 16 nodes under 2 spines at 2:1. */
static int build_pcie(isle_topo *t)
{
	int spines[2], leaf = -1, i, n, rc = 0;
	char name[32];

	set_tier(t, ISLE_TIER_ISLAND, 112.0, 1.5, 1.0);
	set_tier(t, ISLE_TIER_NODE, 25.0, 3.0, 1.0);
	set_tier(t, ISLE_TIER_LEAF, 25.0, 4.0, 1.0);
	set_tier(t, ISLE_TIER_SPINE, 25.0, 6.0, 2.0);
	set_tier(t, ISLE_TIER_CORE, 25.0, 8.0, 2.0);
	for (i = 0; i < 2; i++)
		CHECK(spines[i] =
			  add_switch(t, ISLE_SW_SPINE, "spine%d", i, 0));
	for (i = 0; i < 64; i++) {
		if (i % 16 == 0) {
			CHECK(leaf = add_switch(t, ISLE_SW_LEAF, "leaf%d",
						i / 16, 0));
			CHECK(isle_topo_link_switches(t, spines[0], leaf));
			CHECK(isle_topo_link_switches(t, spines[1], leaf));
		}
		snprintf(name, sizeof(name), "pcie%02d", i + 1);
		CHECK(n = add_node(t, name, 8, 2, 1));
		CHECK(isle_topo_attach_node(t, leaf, n, 0));
	}
out:
	return rc < 0 ? rc : 0;
}

/* One row of the Lingjun Clos map: a host and its DSW (core), PSW
 * (aggregation) and ASW (ToR) names. */
typedef int (*lingjun_row_fn)(isle_topo *t, int host, const char *ip,
			      const char *dsw, const char *psw, const char *asw,
			      void *arg);

/* Reads data_dir/clos/lingjun-2023-topo.csv row by row into fn; the one
 * reader of the map for every cluster built from it. */
static int read_lingjun(isle_topo *t, const char *data_dir, lingjun_row_fn fn,
			void *arg, char *err, size_t errlen)
{
	char path[4096], line[512];
	FILE *f;
	int lineno = 0, host = 0, rc = 0;

	snprintf(path, sizeof(path), "%s/clos/lingjun-2023-topo.csv", data_dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		char *ip, *dsw, *psw, *asw, *save = NULL;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (lineno == 1 && !strncmp(line, "ip,", 3))
			continue;
		ip = strtok_r(line, ",", &save);
		dsw = strtok_r(NULL, ",", &save);
		psw = strtok_r(NULL, ",", &save);
		asw = strtok_r(NULL, ",", &save);
		if (!ip || !dsw || !psw || !asw) {
			snprintf(err, errlen, "%s:%d: expected ip,DSW,PSW,ASW",
				 path, lineno);
			rc = -EINVAL;
			goto out;
		}
		CHECK(fn(t, ++host, ip, dsw, psw, asw, arg));
	}
	if (host == 0) {
		snprintf(err, errlen, "%s: no hosts", path);
		rc = -EINVAL;
	}
out:
	if (rc < 0 && !err[0])
		snprintf(err, errlen, "%s:%d: cannot build the model (%s)",
			 path, lineno, strerror(-rc));
	fclose(f);
	return rc < 0 ? rc : 0;
}

/* The switch called name, added at level lvl when new (*isnew set). */
static int get_switch(isle_topo *t, isle_sw_level lvl, const char *name,
		      int *isnew)
{
	int s = isle_topo_find_switch(t, name);

	*isnew = s < 0;
	return s >= 0 ? s : isle_topo_add_switch(t, name, 0, lvl);
}

/* (d) the Lingjun Clos map: one host per row, 8 GPUs on NVSwitch, ASW =
 * leaf (named per PSW: ASW names repeat under different PSWs), PSW = spine,
 * DSW = core. */
static int lingjun_row(isle_topo *t, int host, const char *ip, const char *dsw,
		       const char *psw, const char *asw, void *arg)
{
	char name[64], sw[160];
	int d, p, a, n, isnew, rc = 0;

	(void)arg;
	CHECK(d = get_switch(t, ISLE_SW_CORE, dsw, &isnew));
	snprintf(sw, sizeof(sw), "%s/%s", dsw, psw);
	CHECK(p = get_switch(t, ISLE_SW_SPINE, sw, &isnew));
	if (isnew)
		CHECK(isle_topo_link_switches(t, d, p));
	snprintf(sw, sizeof(sw), "%s/%s/%s", dsw, psw, asw);
	CHECK(a = get_switch(t, ISLE_SW_LEAF, sw, &isnew));
	if (isnew)
		CHECK(isle_topo_link_switches(t, p, a));
	snprintf(name, sizeof(name), "lj%03d-%.8s", host, ip);
	CHECK(n = add_node(t, name, 8, 8, 1));
	CHECK(isle_topo_attach_node(t, a, n, 0));
out:
	return rc < 0 ? rc : 0;
}

static int build_lingjun(isle_topo *t, const char *data_dir, char *err,
			 size_t errlen)
{
	set_tier(t, ISLE_TIER_ISLAND, 450.0, 1.0, 1.0);
	set_tier(t, ISLE_TIER_NODE, 64.0, 2.0, 1.0);
	set_tier(t, ISLE_TIER_LEAF, 50.0, 3.0, 1.0);
	set_tier(t, ISLE_TIER_SPINE, 50.0, 5.0, 1.5);
	set_tier(t, ISLE_TIER_CORE, 50.0, 7.0, 3.0);
	return read_lingjun(t, data_dir, lingjun_row, NULL, err, errlen);
}

/*
 * (e) RoCE-like, rail-optimised clusters on the Lingjun map's grouping:
 * every host of the map is an 8-GPU NVSwitch server with 4 NICs of 400
 * Gb/s, one per rail, GPUs 2r and 2r+1 on NIC r. Each ASW group of the map
 * is a ToR group of 4 rail ToRs (NIC r on ToR r); each PSW group is an
 * aggregation group of ROCE_PLANES switches that every ToR of the group
 * uplinks to; every aggregation switch meets the ROCE_PLANES core
 * switches of its DSW. The oversubscription (2:1 for roce2, 4:1 for
 * roce4) sits where ToRs uplink into the aggregation; aggregation to core
 * is 1:1 on what arrives there. Switch names join the map's names with
 * '-' (cluster files allow no '/').
 */
#define ROCE_RAILS 4
#define ROCE_PLANES 4

static int roce_row(isle_topo *t, int host, const char *ip, const char *dsw,
		    const char *psw, const char *asw, void *arg)
{
	int core[ROCE_PLANES], agg[ROCE_PLANES], tor, n, i, r, isnew, rc = 0;
	char name[64], sw[160];

	(void)arg;
	for (i = 0; i < ROCE_PLANES; i++) {
		snprintf(sw, sizeof(sw), "%s-core%d", dsw, i);
		CHECK(core[i] = get_switch(t, ISLE_SW_CORE, sw, &isnew));
	}
	for (i = 0; i < ROCE_PLANES; i++) {
		snprintf(sw, sizeof(sw), "%s-%s-agg%d", dsw, psw, i);
		CHECK(agg[i] = get_switch(t, ISLE_SW_SPINE, sw, &isnew));
		for (r = 0; isnew && r < ROCE_PLANES; r++)
			CHECK(isle_topo_link_switches(t, core[r], agg[i]));
	}
	snprintf(name, sizeof(name), "rc%03d-%.8s", host, ip);
	CHECK(n = add_node(t, name, 8, 8, 0));
	for (r = 0; r < ROCE_RAILS; r++) {
		char nic[16];
		int k;

		snprintf(sw, sizeof(sw), "%s-%s-%s-r%d", dsw, psw, asw, r);
		CHECK(tor = get_switch(t, ISLE_SW_LEAF, sw, &isnew));
		if (isnew) {
			CHECK(isle_topo_set_switch(t, tor, r, 400.0));
			for (i = 0; i < ROCE_PLANES; i++)
				CHECK(isle_topo_link_switches(t, agg[i], tor));
		}
		snprintf(nic, sizeof(nic), "mlx5_%d", r);
		CHECK(k = isle_topo_add_nic(t, n, nic, 0, r, 400.0, -1));
		CHECK(isle_topo_set_gpu_nic(t, n, 2 * r, k));
		CHECK(isle_topo_set_gpu_nic(t, n, 2 * r + 1, k));
		CHECK(isle_topo_attach_node(t, tor, n, k));
	}
out:
	return rc < 0 ? rc : 0;
}

static int build_roce(isle_topo *t, double oversub, const char *data_dir,
		      char *err, size_t errlen)
{
	set_tier(t, ISLE_TIER_ISLAND, 450.0, 1.0, 1.0);
	set_tier(t, ISLE_TIER_NODE, 64.0, 2.0, 1.0);
	/* per GPU: two GPUs share a 400 Gb/s NIC */
	set_tier(t, ISLE_TIER_LEAF, 25.0, 3.0, 1.0);
	set_tier(t, ISLE_TIER_SPINE, 25.0, 5.0, oversub);
	set_tier(t, ISLE_TIER_CORE, 25.0, 7.0, 1.0);
	return read_lingjun(t, data_dir, roce_row, NULL, err, errlen);
}

int sim_cluster_build(const char *name, const char *data_dir, isle_topo **out,
		      char *err, size_t errlen)
{
	isle_topo *t;
	int rc;

	*out = NULL;
	err[0] = '\0';
	if (strchr(name, '/') || strstr(name, ".json"))
		return isle_topo_load(name, out, err, errlen);
	t = isle_topo_create();
	if (!t)
		return -ENOMEM;
	t->name = strdup(name);
	if (!strcmp(name, "superpod")) {
		rc = build_superpod(t, 128, 32, 4);
	} else if (!strcmp(name, "nvl72")) {
		rc = build_nvl72(t);
	} else if (!strcmp(name, "pcie")) {
		rc = build_pcie(t);
	} else if (!strcmp(name, "lingjun")) {
		rc = build_lingjun(t, data_dir, err, errlen);
	} else if (!strcmp(name, "roce2") || !strcmp(name, "roce4")) {
		rc = build_roce(t, name[4] - '0', data_dir, err, errlen);
	} else if (!strncmp(name, "scale:", 6) && atoi(name + 6) > 0) {
		rc = build_superpod(t, atoi(name + 6), 32, 8);
	} else {
		snprintf(err, errlen,
			 "unknown cluster '%s' (superpod, nvl72, "
			 "pcie, lingjun, roce2, roce4, scale:N or a "
			 "cluster file)",
			 name);
		rc = -EINVAL;
	}
	if (!rc)
		rc = isle_topo_finalize(t, err, errlen);
	if (rc) {
		if (!err[0])
			snprintf(err, errlen, "%s: cannot build the model (%s)",
				 name, strerror(-rc));
		isle_topo_destroy(t);
		return rc;
	}
	*out = t;
	return 0;
}

int sim_cluster_blocks(const isle_topo *t, int *block)
{
	int i, n = 0, have_dom = 0, *map;

	for (i = 0; i < t->nnodes; i++)
		if (t->nodes[i].domain >= 0)
			have_dom = 1;
	map = malloc(((size_t)t->nislands + t->ngroups[ISLE_TIER_LEAF] + 1) *
		     sizeof(int));
	if (!map)
		return -ENOMEM;
	for (i = 0; i < t->nislands + t->ngroups[ISLE_TIER_LEAF]; i++)
		map[i] = -1;
	for (i = 0; i < t->nnodes; i++) {
		const struct isle_node *nd = &t->nodes[i];
		int key = have_dom && nd->domain >= 0
			      ? nd->domain
			      : t->nislands + nd->group[ISLE_TIER_LEAF];

		if (map[key] < 0)
			map[key] = n++;
		block[i] = map[key];
	}
	free(map);
	return n;
}
