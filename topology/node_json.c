/*
 * node_json.c - merges node files written by `isle-agent discover`
 * (docs/node-json.md) into the cluster model.
 *
 * A node file may describe a node the model does not have yet, or one an
 * ibnetdiscover dump already brought in with its NICs, rails and cables but
 * no GPUs: then GPUs are added and NICs are matched by port GUID, then name.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isle_proto.h"
#include "topo_priv.h"

struct ctx {
	const char *name; /* file name for messages */
	char *err;
	size_t errlen;
};

static int jerr(struct ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int jerr(struct ctx *c, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return isle__errf(-EINVAL, c->err, c->errlen, "%s: %s: %s", c->name,
			  path, msg);
}

/* An identifier (host, NIC, bus id) through proto's one name check. */
static int check_name(struct ctx *c, const char *path, const char *key,
		      const char *name)
{
	char msg[200];

	if (!name || !isle_name_error(NULL, name, msg, sizeof(msg)))
		return 0;
	return jerr(c, path, "\"%s\": %s", key, msg);
}

/* Free text (a GPU model): printable ASCII, at most 127 bytes. */
static int check_text(struct ctx *c, const char *path, const char *key,
		      const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (n > 127)
		return jerr(c, path, "\"%s\": longer than 127 characters", key);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 ||
		    (unsigned char)text[i] >= 0x7f)
			return jerr(c, path, "\"%s\": byte 0x%02x not allowed",
				    key, (unsigned char)text[i]);
	return 0;
}

/* Optional member of a type; *out NULL when absent or JSON null. */
static int member(struct ctx *c, json_object *o, const char *path,
		  const char *key, json_type type, json_object **out)
{
	json_object *v = NULL;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, type))
		return jerr(c, path, "\"%s\" should be %s", key,
			    json_type_to_name(type));
	*out = v;
	return 0;
}

/* Integer member in [lo, hi] (the cluster file's ranges, so that a merged
 * node saves into a file that loads); absent gives dflt. */
static int get_int(struct ctx *c, json_object *o, const char *path,
		   const char *key, int dflt, int64_t lo, int64_t hi, int *out)
{
	json_object *v;
	int rc = member(c, o, path, key, json_type_int, &v);
	int64_t x;

	*out = dflt;
	if (rc < 0 || !v)
		return rc;
	x = json_object_get_int64(v);
	if (x < lo || x > hi)
		return jerr(c, path, "\"%s\": %lld out of range [%lld, %lld]",
			    key, (long long)x, (long long)lo, (long long)hi);
	*out = (int)x;
	return 0;
}

static int get_str(struct ctx *c, json_object *o, const char *path,
		   const char *key, const char **out)
{
	json_object *v;
	int rc = member(c, o, path, key, json_type_string, &v);

	*out = v ? json_object_get_string(v) : NULL;
	return rc;
}

static int parse_guid(struct ctx *c, json_object *o, const char *path,
		      const char *key, uint64_t *out)
{
	const char *s;
	char *end;
	int rc = get_str(c, o, path, key, &s);

	*out = 0;
	if (rc < 0 || !s)
		return rc;
	errno = 0;
	*out = strtoull(s, &end, 16);
	if (errno || *end || end == s)
		return jerr(c, path, "\"%s\" is not a hex GUID", key);
	return 0;
}

/* Rank of a NIC name among the node's NICs ("mlx5_0" < "mlx5_10"). */
static int name_rank(json_object *nics, const char *name)
{
	size_t n = json_object_array_length(nics), i;
	int rank = 0;

	for (i = 0; i < n; i++) {
		json_object *nm;
		const char *o;

		if (!json_object_object_get_ex(
			json_object_array_get_idx(nics, i), "name", &nm) ||
		    !json_object_is_type(nm, json_type_string))
			continue;
		o = json_object_get_string(nm);
		if (strlen(o) < strlen(name) ||
		    (strlen(o) == strlen(name) && strcmp(o, name) < 0))
			rank++;
	}
	return rank;
}

static int merge_nics(struct ctx *c, isle_topo *t, int node, json_object *nics,
		      int *map)
{
	size_t n = json_object_array_length(nics), i;
	char path[64];
	int rc, k;

	for (i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(nics, i), *gv;
		struct isle_node *nd = &t->nodes[node];
		const char *name = NULL;
		uint64_t guid = 0;
		double gbps = 0;
		int numa = -1, found = -1;

		snprintf(path, sizeof(path), "$.nics[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return jerr(c, path, "should be an object");
		rc = get_str(c, o, path, "name", &name);
		if (rc == 0 && !name)
			rc = jerr(c, path, "\"name\" is missing");
		if (rc == 0)
			rc = check_name(c, path, "name", name);
		if (rc == 0)
			rc = parse_guid(c, o, path, "port_guid", &guid);
		if (rc == 0)
			rc = get_int(c, o, path, "numa", -1, -1, 4095, &numa);
		if (rc == 0 &&
		    (rc = member(c, o, path, "gbps", json_type_double, &gv)) ==
			0 &&
		    gv) {
			gbps = json_object_get_double(gv);
			/* NaN and inf parse too (json-c): refuse them. */
			if (!(gbps >= 0) || gbps > 1e12)
				rc = jerr(c, path, "\"gbps\": %g out of range",
					  gbps);
		}
		if (rc < 0)
			return rc;
		for (k = 0; k < nd->nnics && found < 0; k++)
			if (guid && nd->nics[k].guid == guid)
				found = k;
		for (k = 0; k < nd->nnics && found < 0; k++)
			if (strcmp(nd->nics[k].name, name) == 0)
				found = k;
		if (found < 0) {
			found = isle_topo_add_nic(t, node, name, guid,
						  name_rank(nics, name), gbps,
						  numa);
			if (found < 0)
				return isle__errf(found, c->err, c->errlen,
						  "%s: %s: %s", c->name, path,
						  strerror(-found));
		} else {
			struct isle_nic *x = &t->nodes[node].nics[found];

			/* The node knows its device names; a dump may not. */
			if (strcmp(x->name, name) != 0) {
				char *dup = strdup(name);

				if (!dup)
					return isle__errf(-ENOMEM, c->err,
							  c->errlen,
							  "out of memory");
				free(x->name);
				x->name = dup;
			}
			if (!x->guid)
				x->guid = guid;
			if (x->numa < 0)
				x->numa = numa;
			if (x->gbps <= 0)
				x->gbps = gbps;
		}
		map[i] = found;
	}
	return 0;
}

static int merge_gpus(struct ctx *c, isle_topo *t, int node, json_object *gpus,
		      json_object *nics, const int *nicmap)
{
	size_t n = json_object_array_length(gpus), i, k;
	char path[64];
	int rc;

	for (i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(gpus, i);
		const char *bus = NULL, *model = NULL, *nic = NULL;
		int numa = -1;

		snprintf(path, sizeof(path), "$.gpus[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return jerr(c, path, "should be an object");
		rc = get_str(c, o, path, "bus_id", &bus);
		if (rc == 0)
			rc = check_name(c, path, "bus_id", bus);
		if (rc == 0)
			rc = get_str(c, o, path, "model", &model);
		if (rc == 0)
			rc = check_text(c, path, "model", model);
		if (rc == 0)
			rc = get_int(c, o, path, "numa", -1, -1, 4095, &numa);
		if (rc == 0)
			rc = get_str(c, o, path, "nic", &nic);
		if (rc < 0)
			return rc;
		rc = isle_topo_set_gpu(t, node, (int)i, bus, model, numa);
		if (rc < 0)
			return isle__errf(rc, c->err, c->errlen, "%s: %s: %s",
					  c->name, path, strerror(-rc));
		if (!nic)
			continue;
		for (k = 0; k < json_object_array_length(nics); k++) {
			json_object *nm;

			if (json_object_object_get_ex(
				json_object_array_get_idx(nics, k), "name",
				&nm) &&
			    strcmp(json_object_get_string(nm), nic) == 0)
				break;
		}
		if (k == json_object_array_length(nics))
			return jerr(c, path, "\"nic\": unknown NIC '%s'", nic);
		rc = isle_topo_set_gpu_nic(t, node, (int)i, nicmap[k]);
		if (rc < 0)
			return isle__errf(rc, c->err, c->errlen, "%s: %s: %s",
					  c->name, path, strerror(-rc));
	}
	return 0;
}

static int merge_nvlinks(struct ctx *c, isle_topo *t, int node,
			 json_object *root, int ngpus)
{
	json_object *nv, *m;
	char path[64];
	int rc, i, j;

	rc = member(c, root, "$", "nvlink", json_type_object, &nv);
	if (rc < 0 || !nv)
		return rc;
	rc = member(c, nv, "$.nvlink", "matrix", json_type_array, &m);
	if (rc < 0 || !m)
		return rc;
	if ((int)json_object_array_length(m) != ngpus)
		return jerr(c, "$.nvlink.matrix", "%zu rows for %d GPUs",
			    json_object_array_length(m), ngpus);
	for (i = 0; i < ngpus; i++) {
		json_object *row = json_object_array_get_idx(m, i);

		snprintf(path, sizeof(path), "$.nvlink.matrix[%d]", i);
		if (!json_object_is_type(row, json_type_array) ||
		    (int)json_object_array_length(row) != ngpus)
			return jerr(c, path, "should be an array of %d counts",
				    ngpus);
		for (j = 0; j < ngpus; j++) {
			json_object *v = json_object_array_get_idx(row, j);
			int links;

			if (!json_object_is_type(v, json_type_int) ||
			    (links = json_object_get_int(v)) < 0 ||
			    links > 1000) {
				snprintf(path, sizeof(path),
					 "$.nvlink.matrix[%d][%d]", i, j);
				return jerr(c, path, "should be a link count");
			}
			if (j <= i || links == 0)
				continue;
			rc = isle_topo_set_nvlink(t, node, i, j, links);
			if (rc < 0)
				return isle__errf(rc, c->err, c->errlen,
						  "%s: %s: %s", c->name, path,
						  strerror(-rc));
		}
	}
	return 0;
}

static int merge_root(struct ctx *c, isle_topo *t, json_object *root)
{
	json_object *gpus = NULL, *nics = NULL, *empty = NULL;
	const char *host = NULL;
	int *nicmap = NULL, node, ngpus, version = -1, rc;

	if (!json_object_is_type(root, json_type_object))
		return jerr(c, "$", "should be an object");
	rc = get_int(c, root, "$", ISLE_NODE_JSON_KEY, -1, INT32_MIN, INT32_MAX,
		     &version);
	if (rc < 0)
		return rc;
	if (version != ISLE_NODE_JSON_VERSION)
		return jerr(c, "$." ISLE_NODE_JSON_KEY,
			    version < 0 ? "missing (not an isle node file?)"
					: "unsupported version");
	rc = get_str(c, root, "$", "hostname", &host);
	if (rc == 0 && (!host || !*host))
		rc = jerr(c, "$.hostname", "missing");
	if (rc == 0)
		rc = check_name(c, "$", "hostname", host);
	if (rc == 0)
		rc = member(c, root, "$", "gpus", json_type_array, &gpus);
	if (rc == 0)
		rc = member(c, root, "$", "nics", json_type_array, &nics);
	if (rc < 0)
		return rc;
	empty = json_object_new_array();
	if (!empty)
		return isle__errf(-ENOMEM, c->err, c->errlen, "out of memory");
	if (!gpus)
		gpus = empty;
	if (!nics)
		nics = empty;
	ngpus = (int)json_object_array_length(gpus);
	if (ngpus > ISLE_MAX_GPUS_PER_NODE) {
		rc = jerr(c, "$.gpus", "%d GPUs, at most %d", ngpus,
			  ISLE_MAX_GPUS_PER_NODE);
		goto out;
	}
	node = isle_topo_find_node(t, host);
	if (node < 0) {
		node = isle_topo_add_node(t, host, ngpus);
	} else if (t->nodes[node].ngpus != ngpus) {
		if (t->nodes[node].ngpus != 0) {
			rc = jerr(c, "$.gpus",
				  "%d GPUs, the model has %d for "
				  "%s",
				  ngpus, t->nodes[node].ngpus, host);
			goto out;
		}
		rc = isle_topo_set_ngpus(t, node, ngpus);
		if (rc < 0)
			node = rc;
	}
	if (node < 0) {
		rc = isle__errf(node, c->err, c->errlen, "%s: node %s: %s",
				c->name, host, strerror(-node));
		goto out;
	}
	nicmap = calloc(json_object_array_length(nics) + 1, sizeof(*nicmap));
	if (!nicmap) {
		rc = isle__errf(-ENOMEM, c->err, c->errlen, "out of memory");
		goto out;
	}
	rc = merge_nics(c, t, node, nics, nicmap);
	if (rc == 0)
		rc = merge_gpus(c, t, node, gpus, nics, nicmap);
	if (rc == 0)
		rc = merge_nvlinks(c, t, node, root, ngpus);
	if (rc == 0)
		rc = node;
out:
	free(nicmap);
	json_object_put(empty);
	return rc;
}

int isle_topo_merge_node_json_buf(isle_topo *t, const char *buf,
				  const char *name, char *err, size_t errlen)
{
	struct ctx c = {
	    .name = name ? name : "node JSON", .err = err, .errlen = errlen};
	struct json_tokener *tok;
	json_object *root;
	int rc;

	if (!t || !buf)
		return isle__errf(-EINVAL, err, errlen, "%s: no input", c.name);
	tok = json_tokener_new();
	if (!tok)
		return isle__errf(-ENOMEM, err, errlen, "out of memory");
	root = json_tokener_parse_ex(tok, buf, (int)strlen(buf));
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		rc = isle__errf(
		    -EINVAL, err, errlen, "%s: not JSON: %s (near byte %zu)",
		    c.name,
		    json_tokener_error_desc(json_tokener_get_error(tok)),
		    json_tokener_get_parse_end(tok));
		json_object_put(root);
		json_tokener_free(tok);
		return rc;
	}
	json_tokener_free(tok);
	rc = merge_root(&c, t, root);
	json_object_put(root);
	return rc;
}

int isle_topo_merge_node_json(isle_topo *t, const char *path, char *err,
			      size_t errlen)
{
	char *buf;
	int rc;

	rc = isle__read_file(path, &buf, err, errlen);
	if (rc < 0)
		return rc;
	rc = isle_topo_merge_node_json_buf(t, buf, path, err, errlen);
	free(buf);
	return rc;
}

/* --- Multi-node NVLink domains -------------------------------------------- */

struct domain_member {
	char key[96]; /* "<cluster uuid>/<clique>" */
	int node;
};

static int cmp_member(const void *a, const void *b)
{
	const struct domain_member *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* The "fabric" object of a node file, as "uuid/clique", or "" if none. */
static int fabric_key(const char *buf, const char *name, char *key, size_t len,
		      char *err, size_t errlen)
{
	json_object *root = json_tokener_parse(buf), *f, *u, *q;

	key[0] = '\0';
	if (!root)
		return isle__errf(-EINVAL, err, errlen, "%s: not JSON", name);
	if (json_object_object_get_ex(root, "fabric", &f) && f &&
	    json_object_is_type(f, json_type_object) &&
	    json_object_object_get_ex(f, "cluster_uuid", &u) &&
	    json_object_is_type(u, json_type_string) &&
	    json_object_object_get_ex(f, "clique", &q) &&
	    json_object_is_type(q, json_type_int)) {
		/* The domain's name: it reaches the plan and cluster files. */
		snprintf(key, len, "%s:%d", json_object_get_string(u),
			 json_object_get_int(q));
		if (isle_name_check(key)) {
			json_object_put(root);
			return isle__errf(-EINVAL, err, errlen,
					  "%s: $.fabric.cluster_uuid: '%s' is "
					  "not a UUID",
					  name, json_object_get_string(u));
		}
	}
	json_object_put(root);
	return 0;
}

int isle_topo_merge_node_json_files(isle_topo *t, const char *const *paths,
				    int npaths, char *err, size_t errlen)
{
	struct domain_member *m;
	int i, j, k, nm = 0, rc = 0, *nodes = NULL;

	m = calloc((size_t)npaths + 1, sizeof(*m));
	nodes = calloc((size_t)npaths + 1, sizeof(*nodes));
	if (!m || !nodes) {
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < npaths; i++) {
		char *buf;
		int node;

		rc = isle__read_file(paths[i], &buf, err, errlen);
		if (rc < 0)
			goto out;
		node = isle_topo_merge_node_json_buf(t, buf, paths[i], err,
						     errlen);
		if (node >= 0)
			rc = fabric_key(buf, paths[i], m[nm].key,
					sizeof(m[nm].key), err, errlen);
		free(buf);
		if (node < 0) {
			rc = node;
			goto out;
		}
		if (rc < 0)
			goto out;
		if (m[nm].key[0])
			m[nm++].node = node;
	}
	/* Nodes whose GPUs report one fabric clique share one NVLink domain
	 * (a GB200 NVL72 rack): declare it. */
	qsort(m, (size_t)nm, sizeof(*m), cmp_member);
	for (i = 0; i < nm; i = j) {
		for (j = i, k = 0; j < nm && strcmp(m[j].key, m[i].key) == 0;
		     j++)
			if (k == 0 || nodes[k - 1] != m[j].node)
				nodes[k++] = m[j].node;
		if (k < 2)
			continue;
		rc = isle_topo_add_domain(t, m[i].key, nodes, k, 0.0);
		if (rc < 0) {
			rc = isle__errf(rc, err, errlen, "NVLink domain %s: %s",
					m[i].key, strerror(-rc));
			goto out;
		}
	}
	rc = 0;
out:
	free(m);
	free(nodes);
	return rc;
}
