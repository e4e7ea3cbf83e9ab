/*
 * discover_json.c - writes a node description as node JSON
 * (docs/node-json.md; read back by topology/node_json.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_priv.h"
#include "isle_proto.h"
#include "isle_topo.h"

static const char *const nvlink_source_names[] = {
    [ISLE_NVLINK_NONE] = "none",
    [ISLE_NVLINK_HWLOC] = "hwloc",
    [ISLE_NVLINK_NVML] = "nvml",
};

static const char *nvlink_source_name(isle_nvlink_source s)
{
	return (unsigned)s < sizeof(nvlink_source_names) /
				 sizeof(nvlink_source_names[0])
		   ? nvlink_source_names[s]
		   : "none";
}

static json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *guid(uint64_t g)
{
	char buf[24];

	if (!g)
		return NULL;
	snprintf(buf, sizeof(buf), "0x%016" PRIx64, g);
	return json_object_new_string(buf);
}

static json_object *gpu_json(const isle_agent_node *n, int i)
{
	const struct isle_agent_gpu *g = &n->gpus[i];
	json_object *o = json_object_new_object(), *devs;
	char *copy, *tok, *save = NULL;

	json_object_object_add(o, "index", json_object_new_int(i));
	json_object_object_add(o, "bus_id", json_object_new_string(g->bus_id));
	json_object_object_add(o, "model", str_or_null(g->model));
	json_object_object_add(o, "uuid", str_or_null(g->uuid));
	json_object_object_add(o, "numa", json_object_new_int(g->numa));
	json_object_object_add(o, "island", json_object_new_int(g->island));
	json_object_object_add(
	    o, "nic",
	    g->nic >= 0 ? json_object_new_string(n->nics[g->nic].name) : NULL);
	json_object_object_add(o, "nvswitch_links",
			       json_object_new_int(g->nvswitch_links));
	devs = json_object_new_array();
	copy = g->osdevs ? strdup(g->osdevs) : NULL;
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save))
		json_object_array_add(devs, json_object_new_string(tok));
	free(copy);
	json_object_object_add(o, "osdevs", devs);
	return o;
}

static json_object *nic_json(const struct isle_agent_nic *c)
{
	json_object *o = json_object_new_object(), *near;
	int i;

	json_object_object_add(o, "name", json_object_new_string(c->name));
	json_object_object_add(o, "bus_id",
			       c->bus_id[0] ? json_object_new_string(c->bus_id)
					    : NULL);
	json_object_object_add(o, "node_guid", guid(c->node_guid));
	json_object_object_add(o, "port_guid", guid(c->port_guid));
	json_object_object_add(o, "port", json_object_new_int(c->port));
	json_object_object_add(o, "lid", json_object_new_int(c->lid));
	json_object_object_add(o, "state", json_object_new_int(c->state));
	json_object_object_add(o, "link_layer",
			       c->link_layer_ib < 0
				   ? NULL
				   : json_object_new_string(c->link_layer_ib
								? "infiniband"
								: "ethernet"));
	json_object_object_add(o, "gbps", json_object_new_double(c->gbps));
	json_object_object_add(o, "numa", json_object_new_int(c->numa));
	near = json_object_new_array();
	for (i = 0; i < 64; i++)
		if (c->near_gpus & (1ull << i))
			json_object_array_add(near, json_object_new_int(i));
	json_object_object_add(o, "near_gpus", near);
	return o;
}

char *isle_agent_node_to_json(const isle_agent_node *n)
{
	json_object *root = json_object_new_object(), *a, *m, *nv;
	char *out = NULL;
	int i, j, k;

	if (!root)
		return NULL;
	json_object_object_add(root, ISLE_NODE_JSON_KEY,
			       json_object_new_int(ISLE_NODE_JSON_VERSION));
	json_object_object_add(root, "hostname", str_or_null(n->hostname));
	json_object_object_add(root, "source", str_or_null(n->source));
	json_object_object_add(root, "numa_nodes",
			       json_object_new_int(n->nnuma));

	a = json_object_new_array();
	for (i = 0; i < n->ngpus; i++)
		json_object_array_add(a, gpu_json(n, i));
	json_object_object_add(root, "gpus", a);

	nv = json_object_new_object();
	json_object_object_add(
	    nv, "source",
	    json_object_new_string(nvlink_source_name(n->nvlink_source)));
	json_object_object_add(nv, "nvswitches",
			       json_object_new_int(n->nnvswitches));
	m = json_object_new_array();
	for (i = 0; i < n->ngpus; i++) {
		json_object *row = json_object_new_array();

		for (j = 0; j < n->ngpus; j++)
			json_object_array_add(
			    row,
			    json_object_new_int(n->nvlinks[i * n->ngpus + j]));
		json_object_array_add(m, row);
	}
	json_object_object_add(nv, "matrix", m);
	json_object_object_add(root, "nvlink", nv);

	a = json_object_new_array();
	for (k = 0; k < n->nislands; k++) {
		json_object *isl = json_object_new_array();

		for (i = 0; i < n->ngpus; i++)
			if (n->gpus[i].island == k)
				json_object_array_add(isl,
						      json_object_new_int(i));
		json_object_array_add(a, isl);
	}
	json_object_object_add(root, "islands", a);

	a = json_object_new_array();
	for (i = 0; i < n->nnics; i++)
		json_object_array_add(a, nic_json(&n->nics[i]));
	json_object_object_add(root, "nics", a);

	if (n->fabric_cluster) {
		json_object *f = json_object_new_object();

		json_object_object_add(
		    f, "cluster_uuid",
		    json_object_new_string(n->fabric_cluster));
		json_object_object_add(f, "clique",
				       json_object_new_int(n->fabric_clique));
		json_object_object_add(root, "fabric", f);
	} else {
		json_object_object_add(root, "fabric", NULL);
	}

	a = json_object_new_array();
	for (i = 0; i < n->nwarnings; i++)
		json_object_array_add(a,
				      json_object_new_string(n->warnings[i]));
	json_object_object_add(root, "warnings", a);

	const char *s = json_object_to_json_string_ext(
	    root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		size_t len = strlen(s);

		out = malloc(len + 2);
		if (out) {
			memcpy(out, s, len);
			out[len] = '\n';
			out[len + 1] = '\0';
		}
	}
	json_object_put(root);
	return out;
}

int isle_agent_node_write(const isle_agent_node *n, const char *path, char *err,
			  size_t errlen)
{
	char *text = isle_agent_node_to_json(n);
	int rc = 0;

	if (!text)
		return isle__errf(-ENOMEM, err, errlen, "out of memory");
	if (strcmp(path, "-") == 0) {
		if (fputs(text, stdout) == EOF || fflush(stdout) != 0)
			rc = isle__errf(-EIO, err, errlen,
					"stdout: write error");
		goto out;
	}
	/* Readers never see half a file; devices are written into. */
	rc = isle_write_file(path, text, strlen(text), 0644, err, errlen);
out:
	free(text);
	return rc;
}
