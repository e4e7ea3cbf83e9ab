/*
 * discover.c - the node description shared by the discovery backends, the
 * derivations on top of it (islands, nearest NICs), and `isle-agent
 * discover`.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_priv.h"

isle_agent_node *isle_agent_node_create(void)
{
	isle_agent_node *n = calloc(1, sizeof(*n));

	if (n)
		n->fabric_clique = -1;
	return n;
}

void isle_agent_node_destroy(isle_agent_node *n)
{
	int i;

	if (!n)
		return;
	for (i = 0; i < n->ngpus; i++) {
		free(n->gpus[i].model);
		free(n->gpus[i].uuid);
		free(n->gpus[i].osdevs);
	}
	for (i = 0; i < n->nwarnings; i++)
		free(n->warnings[i]);
	free(n->warnings);
	free(n->gpus);
	free(n->nvlinks);
	free(n->nics);
	free(n->hostname);
	free(n->source);
	free(n->fabric_cluster);
	free(n);
}

void isle_agent_warn(isle_agent_node *n, const char *fmt, ...)
{
	char **w;
	char *msg;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return;
	w = realloc(n->warnings, (size_t)(n->nwarnings + 1) * sizeof(*w));
	if (!w) {
		free(msg);
		return;
	}
	n->warnings = w;
	n->warnings[n->nwarnings++] = msg;
}

static int norm_bus_id(const char *in, char *out, size_t len)
{
	unsigned dom = 0, bus, dev, fn;
	char tail;

	if (!in)
		return -EINVAL;
	/* NVML writes "00000000:07:00.0": an 8-digit domain. */
	if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
		dom = 0;
		if (sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
			return -EINVAL;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int isle__agent_add_gpu(isle_agent_node *n, const char *bus_id)
{
	struct isle_agent_gpu *g;
	uint16_t *m;
	int k = n->ngpus, i, j;

	g = realloc(n->gpus, (size_t)(k + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	n->gpus = g;
	m = calloc((size_t)(k + 1) * (k + 1), sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (i = 0; i < k; i++)
		for (j = 0; j < k; j++)
			m[i * (k + 1) + j] = n->nvlinks[i * k + j];
	free(n->nvlinks);
	n->nvlinks = m;
	memset(&g[k], 0, sizeof(g[k]));
	if (norm_bus_id(bus_id, g[k].bus_id, sizeof(g[k].bus_id)))
		snprintf(g[k].bus_id, sizeof(g[k].bus_id), "%s",
			 bus_id ? bus_id : "");
	g[k].numa = -1;
	g[k].island = -1;
	g[k].nic = -1;
	n->ngpus++;
	return k;
}

int isle__agent_add_nic(isle_agent_node *n, const char *name)
{
	struct isle_agent_nic *c;
	int k = n->nnics;

	c = realloc(n->nics, (size_t)(k + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	n->nics = c;
	memset(&c[k], 0, sizeof(c[k]));
	snprintf(c[k].name, sizeof(c[k].name), "%s", name);
	c[k].port = 1;
	c[k].lid = -1;
	c[k].state = -1;
	c[k].link_layer_ib = -1;
	c[k].numa = -1;
	n->nnics++;
	return k;
}

int isle__agent_find_gpu(const isle_agent_node *n, const char *bus_id)
{
	char want[32];
	int i;

	if (norm_bus_id(bus_id, want, sizeof(want)))
		return -1;
	for (i = 0; i < n->ngpus; i++)
		if (strcmp(n->gpus[i].bus_id, want) == 0)
			return i;
	return -1;
}

int isle__agent_find_nic(const isle_agent_node *n, const char *name)
{
	int i;

	for (i = 0; i < n->nnics; i++)
		if (strcmp(n->nics[i].name, name) == 0)
			return i;
	return -1;
}

/* --- Derivations -------------------------------------------------------- */

/* NVLink-capable form factors whose links nobody reported. */
static void check_missing_nvlink(isle_agent_node *n)
{
	int i, sxm = 0;

	if (n->nvlink_source != ISLE_NVLINK_NONE)
		return;
	for (i = 0; i < n->nwarnings; i++)
		if (strstr(n->warnings[i], "but no NVLink data"))
			return;
	for (i = 0; i < n->ngpus; i++)
		if (n->gpus[i].model && strstr(n->gpus[i].model, "SXM"))
			sxm++;
	if (sxm)
		isle_agent_warn(n,
				"%d SXM GPUs but no NVLink data (no NVML, and "
				"hwloc has no NVLinkBandwidth matrix): each "
				"GPU is its own island",
				sxm);
}

static int uf_find(int *p, int x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

void isle_agent_derive(isle_agent_node *n)
{
	int *parent, *label, i, j, g = n->ngpus;

	check_missing_nvlink(n);
	if (g == 0) {
		n->nislands = 0;
		return;
	}
	parent = malloc((size_t)g * sizeof(*parent));
	label = malloc((size_t)g * sizeof(*label));
	if (!parent || !label) {
		free(parent);
		free(label);
		return;
	}
	for (i = 0; i < g; i++) {
		parent[i] = i;
		label[i] = -1;
	}
	/* Direct links, and the NVSwitch fabric: every NVSwitch in a chassis
	 * is cabled to the others (DGX-2 bridges its two baseboards) but
	 * hwloc and NVML only see GPU-to-switch links. */
	for (i = 0; i < g; i++)
		for (j = i + 1; j < g; j++)
			if (n->nvlinks[i * g + j] ||
			    (n->gpus[i].nvswitch_links &&
			     n->gpus[j].nvswitch_links))
				parent[uf_find(parent, j)] = uf_find(parent, i);
	n->nislands = 0;
	for (i = 0; i < g; i++) {
		int r = uf_find(parent, i);

		if (label[r] < 0)
			label[r] = n->nislands++;
		n->gpus[i].island = label[r];
	}
	free(parent);
	free(label);

	/* GPUs without a PCIe-nearest NIC take one on their NUMA node. */
	for (i = 0; i < g; i++) {
		if (n->gpus[i].nic >= 0 || n->gpus[i].numa < 0)
			continue;
		for (j = 0; j < n->nnics; j++) {
			if (n->nics[j].numa == n->gpus[i].numa) {
				n->gpus[i].nic = j;
				n->nics[j].near_gpus |= 1ull << (i & 63);
				break;
			}
		}
	}
}

/* --- isle-agent discover ------------------------------------------------ */

static void discover_usage(FILE *o)
{
	fprintf(
	    o,
	    "usage: isle-agent discover [--hwloc-xml FILE] [--hostname NAME]\n"
	    "                           [--no-nvml] [--no-ibverbs] [-o FILE]\n"
	    "Describes this node (GPUs, NVLink islands, NICs, NUMA) as node "
	    "JSON\n(docs/node-json.md), on stdout or into FILE. With "
	    "--hwloc-xml, describes\nthe machine of that hwloc export "
	    "instead, and skips NVML and ibverbs.\n");
}

static int cmd_discover(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"hwloc-xml", required_argument, NULL, 'x'},
	    {"hostname", required_argument, NULL, 'H'},
	    {"output", required_argument, NULL, 'o'},
	    {"no-nvml", no_argument, NULL, 'N'},
	    {"no-ibverbs", no_argument, NULL, 'I'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *xml = NULL, *host = NULL, *out = "-";
	int use_nvml = 1, use_ibv = 1, c, rc, status = 1;
	isle_agent_node *n = NULL;
	char err[512];

	optind = 1;
	while ((c = getopt_long(argc, argv, "x:H:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'x':
			xml = optarg;
			break;
		case 'H':
			host = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'N':
			use_nvml = 0;
			break;
		case 'I':
			use_ibv = 0;
			break;
		case 'h':
			discover_usage(stdout);
			return 0;
		default:
			discover_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
			"isle-agent discover: unexpected argument '%s'\n",
			argv[optind]);
		discover_usage(stderr);
		return 2;
	}
	n = isle_agent_node_create();
	if (!n) {
		fprintf(stderr, "isle-agent discover: out of memory\n");
		return 1;
	}
	rc = isle_agent_discover_hwloc(n, xml, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "isle-agent discover: %s\n", err);
		goto out;
	}
	/* An XML export describes another machine: the local NVML and RDMA
	 * devices have nothing to say about it. */
	if (!xml && use_nvml) {
		rc = isle_agent_discover_nvml(n, err, sizeof(err));
		if (rc < 0 && rc != -ENOENT)
			isle_agent_warn(n, "NVML: %s", err);
	}
	if (!xml && use_ibv) {
		rc = isle_agent_discover_ibv(n, err, sizeof(err));
		if (rc < 0 && rc != -ENOENT)
			isle_agent_warn(n, "ibverbs: %s", err);
	}
	if (host) {
		free(n->hostname);
		n->hostname = strdup(host);
	} else if (!n->hostname) {
		n->hostname = strdup("unknown");
		isle_agent_warn(n,
				"%s names no host: \"unknown\" used "
				"(isle-agent discover --hostname NAME)",
				xml ? "the XML export" : "hwloc");
	}
	if (!n->hostname) {
		fprintf(stderr, "isle-agent discover: out of memory\n");
		goto out;
	}
	isle_agent_derive(n);
	rc = isle_agent_node_write(n, out, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "isle-agent discover: %s\n", err);
		goto out;
	}
	for (c = 0; c < n->nwarnings; c++)
		fprintf(stderr, "isle-agent discover: warning: %s\n",
			n->warnings[c]);
	status = 0;
out:
	isle_agent_node_destroy(n);
	return status;
}

const struct isle_agent_cmd isle_agent_cmd_discover = {
    .name = "discover",
    .summary = "describe this node's GPUs, NVLink islands and NICs as JSON",
    .run = cmd_discover,
};
