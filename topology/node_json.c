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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isle_proto.h"
#include "json_walk.h"
#include "topo_priv.h"

/* A hex GUID string at key ("0x" optional); absent gives 0. */
static int get_guid(struct isle__jwalk *w, struct jv *o, const char *key,
		    uint64_t *out)
{
	const char *s = NULL;
	char *end;
	int rc = isle__jget_str(w, o, key, 0, 0, &s);

	*out = 0;
	if (rc < 0 || !s)
		return rc;
	errno = 0;
	*out = strtoull(s, &end, 16);
	if (errno || *end || end == s)
		return isle__jerr_key(w, -EINVAL, key, "not a hex GUID");
	return 0;
}

/* The name of NIC item i of nics, or NULL. */
static const char *nic_name(struct jv *nics, size_t i)
{
	struct jv *nm;

	if (!jv_get_ex(jv_idx(nics, i), "name", &nm) || !jv_is(nm, JV_STR))
		return NULL;
	return jv_str(nm);
}

/* Rank of a NIC name among the node's NICs ("mlx5_0" < "mlx5_10"). */
static int name_rank(struct jv *nics, const char *name)
{
	int rank = 0;

	for (size_t i = 0; i < jv_len(nics); i++) {
		const char *o = nic_name(nics, i);

		if (o && (strlen(o) < strlen(name) ||
			  (strlen(o) == strlen(name) && strcmp(o, name) < 0)))
			rank++;
	}
	return rank;
}

static int merge_nic(struct isle__jwalk *w, isle_topo *t, int node,
		     struct jv *nics, size_t i, int *map)
{
	struct jv *o = jv_idx(nics, i);
	struct isle_node *nd = &t->nodes[node];
	const char *name = NULL;
	uint64_t guid = 0;
	double gbps = 0;
	int numa = -1, found = -1, k;
	int rc = isle__jexpect(w, o, J_OBJ);

	if (rc == 0)
		rc = isle__jget_str(w, o, "name", 1, 0, &name);
	if (rc == 0)
		rc = isle__jcheck_name(w, "name", name);
	if (rc == 0)
		rc = get_guid(w, o, "port_guid", &guid);
	if (rc == 0)
		rc = isle__jget_int(w, o, "numa", 0, -1, 4095, &numa);
	if (rc == 0)
		rc = isle__jget_num(w, o, "gbps", 0, &gbps);
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
					  name_rank(nics, name), gbps, numa);
		if (found < 0)
			return isle__jerr(w, found, "%s", strerror(-found));
	} else {
		struct isle_nic *x = &t->nodes[node].nics[found];

		/* The node knows its device names; a dump may not. */
		if (strcmp(x->name, name) != 0) {
			char *dup = strdup(name);

			if (!dup)
				return isle__errf(-ENOMEM, w->err, w->errlen,
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
	return 0;
}

static int merge_gpu(struct isle__jwalk *w, isle_topo *t, int node,
		     struct jv *gpus, size_t i, struct jv *nics,
		     const int *nicmap)
{
	struct jv *o = jv_idx(gpus, i);
	const char *bus = NULL, *model = NULL, *nic = NULL;
	int numa = -1;
	size_t k;
	int rc = isle__jexpect(w, o, J_OBJ);

	if (rc == 0)
		rc = isle__jget_str(w, o, "bus_id", 0, 0, &bus);
	if (rc == 0)
		rc = isle__jcheck_name(w, "bus_id", bus);
	if (rc == 0)
		rc = isle__jget_str(w, o, "model", 0, 0, &model);
	if (rc == 0)
		rc = isle__jcheck_text(w, "model", model);
	if (rc == 0)
		rc = isle__jget_int(w, o, "numa", 0, -1, 4095, &numa);
	if (rc == 0)
		rc = isle__jget_str(w, o, "nic", 0, 0, &nic);
	if (rc < 0)
		return rc;
	rc = isle_topo_set_gpu(t, node, (int)i, bus, model, numa);
	if (rc < 0)
		return isle__jerr(w, rc, "%s", strerror(-rc));
	if (!nic)
		return 0;
	for (k = 0; k < jv_len(nics); k++) {
		const char *o_name = nic_name(nics, k);

		if (o_name && strcmp(o_name, nic) == 0)
			break;
	}
	if (k == jv_len(nics))
		return isle__jerr_key(w, -EINVAL, "nic", "unknown NIC '%s'",
				      nic);
	rc = isle_topo_set_gpu_nic(t, node, (int)i, nicmap[k]);
	if (rc < 0)
		return isle__jerr(w, rc, "%s", strerror(-rc));
	return 0;
}

static int merge_nvlinks(struct isle__jwalk *w, isle_topo *t, int node,
			 struct jv *root, int ngpus)
{
	struct jv *nv, *m;
	size_t old = w->plen;
	int rc, i, j;

	rc = isle__jmember(w, root, "nvlink", J_OBJ, 0, &nv);
	if (rc)
		return rc > 0 ? 0 : rc;
	isle__jpush_key(w, "nvlink");
	rc = isle__jmember(w, nv, "matrix", J_ARR, 0, &m);
	if (rc)
		goto out;
	isle__jpush_key(w, "matrix");
	if ((int)jv_len(m) != ngpus)
		return isle__jerr(w, -EINVAL, "%zu rows for %d GPUs", jv_len(m),
				  ngpus);
	for (i = 0; i < ngpus; i++) {
		struct jv *row = jv_idx(m, (size_t)i);
		size_t oi = isle__jpush_idx(w, (size_t)i);

		if (!jv_is(row, JV_ARR) || (int)jv_len(row) != ngpus)
			return isle__jerr(w, -EINVAL,
					  "should be an array of %d counts",
					  ngpus);
		for (j = 0; j < ngpus; j++) {
			struct jv *v = jv_idx(row, (size_t)j);
			int64_t links = jv_is(v, JV_INT) ? jv_int64(v) : -1;

			if (links < 0 || links > 1000) {
				isle__jpush_idx(w, (size_t)j);
				return isle__jerr(w, -EINVAL,
						  "should be a link count");
			}
			if (j <= i || links == 0)
				continue;
			rc = isle_topo_set_nvlink(t, node, i, j, (int)links);
			if (rc < 0)
				return isle__jerr(w, rc, "%s", strerror(-rc));
		}
		isle__jpop(w, oi);
	}
out:
	isle__jpop(w, old);
	return rc > 0 ? 0 : rc;
}

static int merge_root(struct isle__jwalk *w, isle_topo *t, struct jv *root)
{
	struct jv *gpus = NULL, *nics = NULL;
	const char *host = NULL;
	int *nicmap = NULL, node, ngpus, version = -1, rc;
	size_t old;

	rc = isle__jexpect(w, root, J_OBJ);
	if (rc == 0)
		rc = isle__jget_int(w, root, ISLE_NODE_JSON_KEY, 0, INT32_MIN,
				    INT32_MAX, &version);
	if (rc < 0)
		return rc;
	if (version != ISLE_NODE_JSON_VERSION)
		return isle__jerr_key(w, -EINVAL, ISLE_NODE_JSON_KEY, "%s",
				      version < 0
					  ? "missing (not an isle node file?)"
					  : "unsupported version");
	rc = isle__jget_str(w, root, "hostname", 0, 0, &host);
	if (rc == 0 && (!host || !*host))
		rc = isle__jerr_key(w, -EINVAL, "hostname", "missing");
	if (rc == 0)
		rc = isle__jcheck_name(w, "hostname", host);
	if (rc == 0)
		rc = isle__jmember(w, root, "gpus", J_ARR, 0, &gpus);
	if (rc >= 0)
		rc = isle__jmember(w, root, "nics", J_ARR, 0, &nics);
	if (rc < 0)
		return rc;
	rc = 0;
	ngpus = (int)jv_len(gpus);
	if (ngpus > ISLE_MAX_GPUS_PER_NODE)
		return isle__jerr_key(w, -EINVAL, "gpus", "%d GPUs, at most %d",
				      ngpus, ISLE_MAX_GPUS_PER_NODE);
	node = isle_topo_find_node(t, host);
	if (node < 0) {
		node = isle_topo_add_node(t, host, ngpus);
	} else if (t->nodes[node].ngpus != ngpus) {
		if (t->nodes[node].ngpus != 0)
			return isle__jerr_key(
			    w, -EINVAL, "gpus",
			    "%d GPUs, the model has %d for %s", ngpus,
			    t->nodes[node].ngpus, host);
		rc = isle_topo_set_ngpus(t, node, ngpus);
		if (rc < 0)
			node = rc;
	}
	if (node < 0)
		return isle__errf(node, w->err, w->errlen, "%s: node %s: %s",
				  w->file, host, strerror(-node));
	nicmap = calloc(jv_len(nics) + 1, sizeof(*nicmap));
	if (!nicmap)
		return isle__errf(-ENOMEM, w->err, w->errlen, "out of memory");
	old = isle__jpush_key(w, "nics");
	for (size_t i = 0; rc == 0 && i < jv_len(nics); i++) {
		size_t oi = isle__jpush_idx(w, i);

		rc = merge_nic(w, t, node, nics, i, nicmap);
		isle__jpop(w, oi);
	}
	isle__jpop(w, old);
	old = isle__jpush_key(w, "gpus");
	for (size_t i = 0; rc == 0 && i < jv_len(gpus); i++) {
		size_t oi = isle__jpush_idx(w, i);

		rc = merge_gpu(w, t, node, gpus, i, nics, nicmap);
		isle__jpop(w, oi);
	}
	isle__jpop(w, old);
	if (rc == 0)
		rc = merge_nvlinks(w, t, node, root, ngpus);
	free(nicmap);
	return rc ? rc : node;
}

/* The "fabric" object of a node file (NVML's fabric clique of its GPUs)
 * as "uuid:clique" in key, or "" if none. */
static int fabric_key(struct isle__jwalk *w, struct jv *root, char *key,
		      size_t len)
{
	struct jv *f, *u, *q;
	int64_t clique;

	key[0] = '\0';
	if (!jv_get_ex(root, "fabric", &f) || !jv_is(f, JV_OBJ) ||
	    !jv_get_ex(f, "cluster_uuid", &u) || !jv_is(u, JV_STR) ||
	    !jv_get_ex(f, "clique", &q) || !jv_is(q, JV_INT))
		return 0;
	clique = jv_int64(q);
	clique = clique > INT32_MAX   ? INT32_MAX
		 : clique < INT32_MIN ? INT32_MIN
				      : clique;
	/* The domain's name: it reaches the plan and cluster files. */
	snprintf(key, len, "%s:%d", jv_str(u), (int)clique);
	if (!isle_name_check(key))
		return 0;
	isle__jpush_key(w, "fabric");
	return isle__jerr_key(w, -EINVAL, "cluster_uuid", "'%s' is not a UUID",
			      jv_str(u));
}

/* Merges one node file; key (NULL: not wanted) gets its fabric key. */
static int merge_buf(isle_topo *t, const char *buf, const char *name, char *key,
		     size_t keylen, char *err, size_t errlen)
{
	struct isle__jwalk w;
	struct jv_doc doc;
	int rc, k;

	isle__jwalk_init(&w, name ? name : "node JSON", err, errlen);
	if (!t || !buf)
		return isle__errf(-EINVAL, err, errlen, "%s: no input", w.file);
	rc = isle__jv_parse(buf, w.file, &doc, err, errlen);
	if (rc)
		return rc;
	rc = merge_root(&w, t, jv_or_null(&doc.root));
	if (rc >= 0 && key &&
	    (k = fabric_key(&w, jv_or_null(&doc.root), key, keylen)) < 0)
		rc = k;
	isle__jv_doc_free(&doc);
	return rc;
}

int isle_topo_merge_node_json_buf(isle_topo *t, const char *buf,
				  const char *name, char *err, size_t errlen)
{
	return merge_buf(t, buf, name, NULL, 0, err, errlen);
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
	char key[96]; /* "<cluster uuid>:<clique>" */
	int node;
};

static int cmp_member(const void *a, const void *b)
{
	const struct domain_member *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->node > y->node) - (x->node < y->node);
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
		node = merge_buf(t, buf, paths[i], m[nm].key, sizeof(m[nm].key),
				 err, errlen);
		free(buf);
		if (node < 0) {
			rc = node;
			goto out;
		}
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
