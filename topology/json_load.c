/*
 * json_load.c - reads cluster files (docs/cluster-file.md) from the JSON
 * tree of json_fast.c (plain JSON in one pass, anything else with json-c).
 *
 * Every value is type- and range-checked and every name reference resolved;
 * a problem stops the load with "file: $.json.path: reason". One walker
 * serves both a full load (into an empty model) and a merge of overrides
 * into a model built from other sources: objects are matched by name.
 *
 * Typed members and errors that name the JSON path come from json_walk.c,
 * which node_json.c reads node files through too. About 900 lines in one
 * file: the section readers share the load's state (struct jl: the names
 * this file defined, the racks it gave), which would otherwise become a
 * cross-file internal.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "isle_proto.h"
#include "json_walk.h"
#include "topo_priv.h"

struct jl {
	struct isle__jwalk w; /* file, JSON path, error buffer */
	isle_topo *t;
	/* Names defined in this file (keys borrowed from the JSON tree). */
	struct isle__index *seen_nodes, *seen_switches, *seen_racks;
	/* Rack given to each node by this file (-1: none yet). */
	int *rack_of, nrack_of, cap_rack_of;
};

/* --- Typed members ------------------------------------------------------ */

/* GUID: "0x..." hex string or a non-negative integer. */
static int get_guid(struct jl *j, struct jv *obj, uint64_t *out)
{
	struct jv *v;
	const char *s;
	char *end;
	int rc;

	if (!jv_get_ex(obj, "guid", &v) || !v)
		return 0;
	if (jv_is(v, JV_INT)) {
		if (jv_int64(v) < 0)
			return isle__jerr_key(&j->w, -ERANGE, "guid",
					      "negative");
		*out = (uint64_t)jv_int64(v);
		return 0;
	}
	rc = isle__jmember(&j->w, obj, "guid", J_STR, 1, &v);
	if (rc)
		return rc;
	s = jv_str(v);
	errno = 0;
	if (strncmp(s, "0x", 2) != 0 || !isxdigit((unsigned char)s[2]))
		return isle__jerr_key(&j->w, -EINVAL, "guid",
				      "expected a \"0x...\" hex string");
	*out = strtoull(s + 2, &end, 16);
	if (*end || errno)
		return isle__jerr_key(&j->w, -EINVAL, "guid",
				      "bad hex number '%s'", s);
	return 0;
}

/* Rejects keys other than allowed (NULL-terminated); "_..." keys are
 * comments and always allowed. */
static int check_keys(struct jl *j, struct jv *obj, const char *const *allowed)
{
	for (unsigned i = 0; i < obj->n; i++) {
		const char *key = obj->u.kids[i].key;
		const char *const *a;

		if (key[0] == '_')
			continue;
		for (a = allowed; *a && ((*a)[0] != key[0] || strcmp(*a, key));
		     a++)
			;
		if (!*a)
			return isle__jerr_key(&j->w, -EINVAL, key,
					      "unknown key");
	}
	return 0;
}

/* Marks name as defined in this file; duplicates are errors. */
static int define(struct jl *j, struct isle__index *seen, const char *name,
		  const char *what)
{
	int rc = isle__index_put(seen, name, 0);

	if (rc == -EEXIST)
		return isle__jerr_key(&j->w, -EEXIST, "name",
				      "duplicate %s '%s'", what, name);
	return rc ? isle__jerr(&j->w, rc, "out of memory") : 0;
}

/*
 * Resolves an array of node names or host lists ("gb[01-18]") at key into
 * a new array of node indices (caller frees *out).
 */
static int node_list(struct jl *j, struct jv *obj, const char *key, int **out,
		     int *n)
{
	struct jv *arr;
	int rc = isle__jmember(&j->w, obj, key, J_ARR, 0, &arr), cap = 0;
	size_t old;

	*out = NULL;
	*n = 0;
	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, key);
	for (size_t i = 0; i < jv_len(arr) && !rc; i++) {
		struct jv *v = jv_idx(arr, i);
		size_t o2 = isle__jpush_idx(&j->w, i);
		char **names = NULL, msg[256];
		int nn = 0;

		rc = isle__jexpect(&j->w, v, J_STR);
		if (!rc && isle_hostlist_expand(jv_str(v), &names, &nn, msg,
						sizeof(msg)))
			rc = isle__jerr(&j->w, -EINVAL, "%s", msg);
		if (!rc && isle__grow((void **)out, &cap, *n + nn, sizeof(int)))
			rc = isle__jerr(&j->w, -ENOMEM, "out of memory");
		for (int k = 0; !rc && k < nn; k++) {
			int idx = isle_topo_find_node(j->t, names[k]);

			if (idx < 0)
				rc = isle__jerr(&j->w, -ENOENT,
						"unknown node '%s'", names[k]);
			else
				(*out)[(*n)++] = idx;
		}
		isle_hostlist_free(names, nn);
		isle__jpop(&j->w, o2);
	}
	isle__jpop(&j->w, old);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* Iterates over the array at key of obj: body runs with item, i and the
 * path pointing at the item. Stops at the first error. */
#define FOREACH_ITEM(j, arr, i, item, rc)                                      \
	for (size_t i = 0, _old = 0;                                           \
	     !(rc) && i < jv_len(arr) &&                                       \
	     ((_old = isle__jpush_idx(&j->w, i)), (item = jv_idx(arr, i)), 1); \
	     isle__jpop(&j->w, _old), i++)

/* --- Sections ------------------------------------------------------------ */

static int load_tiers(struct jl *j, struct jv *root)
{
	static const char *const keys[] = {"bw_gbps", "lat_us", "oversub",
					   NULL};
	struct jv *tiers;
	int rc = isle__jmember(&j->w, root, "tiers", J_OBJ, 0, &tiers);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "tiers");
	for (unsigned i = 0; i < tiers->n; i++) {
		const char *key = tiers->u.kids[i].key;
		struct jv *val = jv_or_null(&tiers->u.kids[i]);
		int k = isle_tier_parse(key);
		struct isle_tier_param p;
		size_t o2;

		if (key[0] == '_')
			continue;
		if (k < 0) {
			rc = isle__jerr_key(&j->w, -EINVAL, key,
					    "unknown tier (island, node, leaf, "
					    "spine, core)");
			break;
		}
		o2 = isle__jpush_key(&j->w, key);
		p = j->t->tier[k];
		rc = isle__jexpect(&j->w, val, J_OBJ);
		if (!rc)
			rc = check_keys(j, val, keys);
		if (!rc)
			rc = isle__jget_num(&j->w, val, "bw_gbps", 1e-9,
					    &p.bw_gbps);
		if (!rc)
			rc = isle__jget_num(&j->w, val, "lat_us", 0, &p.lat_us);
		if (!rc)
			rc = isle__jget_num(&j->w, val, "oversub", 1,
					    &p.oversub);
		isle__jpop(&j->w, o2);
		if (rc)
			break;
		j->t->tier[k] = p;
	}
	isle__jpop(&j->w, old);
	return rc;
}

/* Finds or adds a rack by name. */
static int rack_index(struct jl *j, const char *name)
{
	int r = isle_topo_find_rack(j->t, name);

	if (r < 0)
		r = isle_topo_add_rack(j->t, name, NULL, 0);
	return r >= 0 ? r : isle__jerr(&j->w, r, "cannot add rack '%s'", name);
}

/*
 * Puts node ni into rack r. Two different racks for one node in this file
 * are an error (at key of the current object); a rack from an earlier
 * source is overridden.
 */
static int assign_rack(struct jl *j, int ni, int r, const char *key)
{
	int rc;

	if (ni >= j->nrack_of) {
		rc = isle__grow((void **)&j->rack_of, &j->cap_rack_of,
				j->t->nnodes, sizeof(int));
		if (rc)
			return isle__jerr(&j->w, rc, "out of memory");
		while (j->nrack_of < j->t->nnodes)
			j->rack_of[j->nrack_of++] = -1;
	}
	if (j->rack_of[ni] >= 0 && j->rack_of[ni] != r)
		return isle__jerr_key(
		    &j->w, -EINVAL, key, "node '%s' is already in rack '%s'",
		    j->t->nodes[ni].name, j->t->racks[j->rack_of[ni]].name);
	j->rack_of[ni] = r;
	rc = isle_topo_set_node_rack(j->t, ni, r);
	return rc ? isle__jerr(&j->w, rc, "out of memory") : 0;
}

/* racks: ["r1", {"name": "r2", "nodes": [...]}]; node lists run in pass 2. */
static int load_racks(struct jl *j, struct jv *root, int pass)
{
	static const char *const keys[] = {"name", "nodes", NULL};
	struct jv *arr, *item;
	int rc = isle__jmember(&j->w, root, "racks", J_ARR, 0, &arr);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "racks");
	FOREACH_ITEM(j, arr, i, item, rc)
	{
		const char *name = NULL;
		int r, *nodes = NULL, n = 0;

		if (jv_is(item, JV_STR)) {
			name = jv_str(item);
			rc = isle__jcheck_name(&j->w, NULL, name);
		} else {
			rc = isle__jexpect(&j->w, item, J_OBJ);
			if (!rc)
				rc = check_keys(j, item, keys);
			if (!rc)
				rc = isle__jget_str(&j->w, item, "name", 1, 1,
						    &name);
			if (!rc)
				rc = isle__jcheck_name(&j->w, "name", name);
		}
		if (rc)
			break;
		if (pass == 1) {
			rc = define(j, j->seen_racks, name, "rack");
			if (!rc)
				rc = rack_index(j, name) < 0 ? -EINVAL : 0;
			continue;
		}
		if (!jv_is(item, JV_OBJ))
			continue;
		r = isle_topo_find_rack(j->t, name);
		rc = node_list(j, item, "nodes", &nodes, &n);
		for (int k = 0; !rc && k < n; k++)
			rc = assign_rack(j, nodes[k], r, "nodes");
		free(nodes);
	}
	isle__jpop(&j->w, old);
	return rc;
}

static int switch_level(struct jl *j, struct jv *obj, isle_sw_level *level)
{
	const char *s = NULL;
	int rc = isle__jget_str(&j->w, obj, "level", 0, 1, &s);

	if (rc || !s)
		return rc;
	for (int l = ISLE_SW_LEAF; l <= ISLE_SW_UNKNOWN; l++)
		if (strcmp(s, isle_sw_level_name(l)) == 0) {
			*level = l;
			return 0;
		}
	return isle__jerr_key(&j->w, -EINVAL, "level",
			      "'%s' is not leaf, spine, core or unknown", s);
}

/* Pass 1: switches and their attributes. Pass 2: links and node cables. */
static int load_switches(struct jl *j, struct jv *root, int pass)
{
	static const char *const keys[] = {"name", "guid",     "level", "rail",
					   "gbps", "switches", "nodes", NULL};
	struct jv *arr, *item;
	int rc = isle__jmember(&j->w, root, "switches", J_ARR, 0, &arr);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "switches");
	FOREACH_ITEM(j, arr, i, item, rc)
	{
		struct isle_switch *s;
		struct jv *kids;
		const char *name = NULL;
		int sw, *nodes = NULL, n = 0;

		if (pass == 1) {
			isle_sw_level level = ISLE_SW_UNKNOWN;
			uint64_t guid = 0;

			rc = isle__jexpect(&j->w, item, J_OBJ);
			if (!rc)
				rc = check_keys(j, item, keys);
			if (!rc)
				rc = isle__jget_str(&j->w, item, "name", 1, 1,
						    &name);
			if (!rc)
				rc = isle__jcheck_name(&j->w, "name", name);
			if (!rc)
				rc =
				    define(j, j->seen_switches, name, "switch");
			if (rc)
				break;
			sw = isle_topo_find_switch(j->t, name);
			if (sw < 0)
				sw = isle_topo_add_switch(j->t, name, 0,
							  ISLE_SW_UNKNOWN);
			if (sw < 0) {
				rc = isle__jerr(&j->w, sw, "cannot add switch");
				break;
			}
			s = &j->t->switches[sw];
			guid = s->guid;
			level = s->level;
			rc = get_guid(j, item, &guid);
			if (!rc)
				rc = switch_level(j, item, &level);
			if (!rc)
				rc = isle__jget_int(&j->w, item, "rail", 0, -1,
						    4096, &s->rail);
			if (!rc)
				rc = isle__jget_num(&j->w, item, "gbps", 0,
						    &s->gbps);
			s->guid = guid;
			s->level = level;
			continue;
		}
		isle__jget_str(&j->w, item, "name", 1, 1, &name);
		sw = isle_topo_find_switch(j->t, name);
		rc = isle__jmember(&j->w, item, "switches", J_ARR, 0, &kids);
		if (rc > 0) {
			rc = 0;
		} else if (!rc) {
			struct jv *kid;
			size_t o2 = isle__jpush_key(&j->w, "switches");

			FOREACH_ITEM(j, kids, k, kid, rc)
			{
				int c;

				rc = isle__jexpect(&j->w, kid, J_STR);
				if (rc)
					break;
				c = isle_topo_find_switch(j->t, jv_str(kid));
				if (c < 0)
					rc = isle__jerr(&j->w, -ENOENT,
							"unknown switch '%s'",
							jv_str(kid));
				else if (c == sw)
					rc = isle__jerr(
					    &j->w, -EINVAL,
					    "switch cabled to itself");
				else
					rc = isle_topo_link_switches(j->t, sw,
								     c);
			}
			isle__jpop(&j->w, o2);
		}
		if (!rc)
			rc = node_list(j, item, "nodes", &nodes, &n);
		for (int k = 0; !rc && k < n; k++)
			rc = isle_topo_attach_node(j->t, sw, nodes[k], -1);
		free(nodes);
	}
	isle__jpop(&j->w, old);
	return rc;
}

static int load_gpus(struct jl *j, struct jv *node, int ni,
		     struct jv **gpu_nics)
{
	static const char *const keys[] = {"bus_id", "model", "numa", "nic",
					   NULL};
	struct jv *v, *item;
	int rc, ngpus;
	size_t old;

	if (!jv_get_ex(node, "gpus", &v) || !v)
		return 0;
	if (jv_is(v, JV_INT)) {
		rc = isle__jget_int(&j->w, node, "gpus", 1, 0,
				    ISLE_MAX_GPUS_PER_NODE, &ngpus);
		if (!rc && isle_topo_set_ngpus(j->t, ni, ngpus))
			rc = isle__jerr_key(&j->w, -ENOMEM, "gpus",
					    "out of memory");
		return rc;
	}
	rc = isle__jmember(&j->w, node, "gpus", J_ARR, 1, &v);
	if (rc)
		return isle__jerr_key(&j->w, -EINVAL, "gpus",
				      "expected integer or array");
	if (jv_len(v) > ISLE_MAX_GPUS_PER_NODE)
		return isle__jerr_key(&j->w, -ERANGE, "gpus",
				      "more than %d GPUs",
				      ISLE_MAX_GPUS_PER_NODE);
	ngpus = (int)jv_len(v);
	/* GPUs merge by position: a shorter list would drop GPUs that
	 * discovery found, a longer one invent some. */
	if (j->t->nodes[ni].ngpus && ngpus != j->t->nodes[ni].ngpus)
		return isle__jerr_key(
		    &j->w, -EINVAL, "gpus",
		    "%d entries, but node '%s' has %d GPUs (GPUs "
		    "are matched by position: list each)",
		    ngpus, j->t->nodes[ni].name, j->t->nodes[ni].ngpus);
	if (isle_topo_set_ngpus(j->t, ni, ngpus))
		return isle__jerr_key(&j->w, -ENOMEM, "gpus", "out of memory");
	old = isle__jpush_key(&j->w, "gpus");
	FOREACH_ITEM(j, v, g, item, rc)
	{
		struct isle_gpu *gpu = &j->t->nodes[ni].gpus[g];
		const char *bus = NULL, *model = NULL;
		int numa = gpu->numa;

		rc = isle__jexpect(&j->w, item, J_OBJ);
		if (!rc)
			rc = check_keys(j, item, keys);
		if (!rc)
			rc = isle__jget_str(&j->w, item, "bus_id", 0, 1, &bus);
		if (!rc && bus)
			rc = isle__jcheck_name(&j->w, "bus_id", bus);
		if (!rc)
			rc = isle__jget_str(&j->w, item, "model", 0, 1, &model);
		if (!rc && model)
			rc = isle__jcheck_text(&j->w, "model", model);
		if (!rc)
			rc = isle__jget_int(&j->w, item, "numa", 0, -1, 4095,
					    &numa);
		if (!rc &&
		    isle_topo_set_gpu(j->t, ni, (int)g, bus, model, numa))
			rc = isle__jerr(&j->w, -ENOMEM, "out of memory");
		/* NIC references resolve once the NICs are read. */
		if (!rc)
			jv_get_ex(item, "nic", &gpu_nics[g]);
	}
	isle__jpop(&j->w, old);
	return rc;
}

/* "nvlink_all": N gives every GPU pair N links (NVSwitch systems); then
 * "nvlinks": [[a, b, n], ...] sets pairs. */
static int load_nvlinks(struct jl *j, struct jv *node, int ni)
{
	struct jv *arr, *item;
	int ngpus = j->t->nodes[ni].ngpus, all = -1, rc;
	size_t old;

	rc = isle__jget_int(&j->w, node, "nvlink_all", 0, 0, UINT16_MAX, &all);
	for (int a = 0; !rc && all >= 0 && a < ngpus; a++)
		for (int b = a + 1; b < ngpus; b++)
			isle_topo_set_nvlink(j->t, ni, a, b, all);
	if (!rc)
		rc = isle__jmember(&j->w, node, "nvlinks", J_ARR, 0, &arr);
	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "nvlinks");
	FOREACH_ITEM(j, arr, i, item, rc)
	{
		int64_t v[3];

		if (!jv_is(item, JV_ARR) || jv_len(item) != 3) {
			rc = isle__jerr(&j->w, -EINVAL,
					"expected [gpu_a, gpu_b, links]");
			break;
		}
		for (size_t k = 0; k < 3 && !rc; k++) {
			struct jv *x = jv_idx(item, k);
			size_t o2 = isle__jpush_idx(&j->w, k);

			rc = isle__jexpect(&j->w, x, J_INT);
			if (!rc)
				v[k] = jv_int64(x);
			if (!rc && k < 2 && (v[k] < 0 || v[k] >= ngpus))
				rc = isle__jerr(&j->w, -ERANGE,
						"GPU %" PRId64 " out of range "
						"(node has %d GPUs)",
						v[k], ngpus);
			if (!rc && k == 2 && (v[k] < 0 || v[k] > UINT16_MAX))
				rc = isle__jerr(&j->w, -ERANGE,
						"link count %" PRId64
						" out of range",
						v[k]);
			isle__jpop(&j->w, o2);
		}
		if (!rc && v[0] == v[1])
			rc = isle__jerr(&j->w, -EINVAL,
					"NVLink from GPU %" PRId64 " to itself",
					v[0]);
		if (!rc)
			rc = isle_topo_set_nvlink(j->t, ni, (int)v[0],
						  (int)v[1], (int)v[2]);
	}
	isle__jpop(&j->w, old);
	return rc;
}

static int load_nics(struct jl *j, struct jv *node, int ni)
{
	static const char *const keys[] = {"name", "guid", "rail", "switch",
					   "numa", "gbps", NULL};
	struct jv *arr, *item;
	int rc = isle__jmember(&j->w, node, "nics", J_ARR, 0, &arr);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "nics");
	FOREACH_ITEM(j, arr, i, item, rc)
	{
		struct isle_node *n = &j->t->nodes[ni];
		struct isle_nic nic = {.rail = -1, .sw = -1, .numa = -1};
		const char *name = NULL, *sw = NULL;
		int k;

		rc = isle__jexpect(&j->w, item, J_OBJ);
		if (!rc)
			rc = check_keys(j, item, keys);
		if (!rc)
			rc = isle__jget_str(&j->w, item, "name", 1, 1, &name);
		if (!rc)
			rc = isle__jcheck_name(&j->w, "name", name);
		if (rc)
			break;
		for (k = 0; k < n->nnics && strcmp(n->nics[k].name, name); k++)
			;
		if (k < n->nnics)
			nic = n->nics[k];
		rc = get_guid(j, item, &nic.guid);
		if (!rc)
			rc = isle__jget_int(&j->w, item, "rail", 0, -1, 4096,
					    &nic.rail);
		if (!rc)
			rc = isle__jget_int(&j->w, item, "numa", 0, -1, 4095,
					    &nic.numa);
		if (!rc)
			rc = isle__jget_num(&j->w, item, "gbps", 0, &nic.gbps);
		if (!rc)
			rc = isle__jget_str(&j->w, item, "switch", 0, 1, &sw);
		if (rc)
			break;
		if (k == n->nnics) {
			k = isle_topo_add_nic(j->t, ni, name, nic.guid,
					      nic.rail, nic.gbps, nic.numa);
			if (k < 0) {
				rc = isle__jerr(&j->w, k, "cannot add NIC '%s'",
						name);
				break;
			}
		} else {
			n->nics[k].guid = nic.guid;
			n->nics[k].rail = nic.rail;
			n->nics[k].numa = nic.numa;
			n->nics[k].gbps = nic.gbps;
		}
		if (sw) {
			int s = isle_topo_find_switch(j->t, sw);

			if (s < 0)
				rc = isle__jerr_key(&j->w, -ENOENT, "switch",
						    "unknown switch '%s'", sw);
			else if (isle_topo_attach_node(j->t, s, ni, k))
				rc = isle__jerr_key(
				    &j->w, -EINVAL, "switch",
				    "NIC is already cabled to '%s'",
				    j->t->switches[n->nics[k].sw].name);
		}
	}
	isle__jpop(&j->w, old);
	return rc;
}

/* A GPU's nearest NIC: index into the node's NICs, or the NIC's name. */
static int load_gpu_nic(struct jl *j, int ni, int g, struct jv *v)
{
	struct isle_node *n = &j->t->nodes[ni];
	size_t old = isle__jpush_key(&j->w, "gpus"),
	       o2 = isle__jpush_idx(&j->w, (size_t)g);
	int rc = 0, k = -1;

	if (jv_is(v, JV_INT)) {
		int64_t x = jv_int64(v);

		if (x < -1 || x >= n->nnics)
			rc = isle__jerr_key(&j->w, -ERANGE, "nic",
					    "NIC %" PRId64
					    " out of range (node has "
					    "%d NICs)",
					    x, n->nnics);
		k = (int)x;
	} else if (jv_is(v, JV_STR)) {
		const char *s = jv_str(v);

		for (k = 0; k < n->nnics && strcmp(n->nics[k].name, s); k++)
			;
		if (k == n->nnics)
			rc = isle__jerr_key(&j->w, -ENOENT, "nic",
					    "unknown NIC '%s'", s);
	} else {
		rc = isle__jerr_key(&j->w, -EINVAL, "nic",
				    "expected NIC name or index");
	}
	if (!rc)
		rc = isle_topo_set_gpu_nic(j->t, ni, g, k);
	isle__jpop(&j->w, o2);
	isle__jpop(&j->w, old);
	return rc;
}

/* One node object applied to the node NAME. */
static int load_node_one(struct jl *j, struct jv *item, const char *name)
{
	struct jv *gpu_nics[ISLE_MAX_GPUS_PER_NODE] = {0};
	const char *rack = NULL;
	int rc, ni;

	rc = isle__jcheck_name(&j->w, "name", name);
	if (rc)
		return rc;
	ni = isle_topo_find_node(j->t, name);
	if (ni < 0)
		ni = isle_topo_add_node(j->t, name, 0);
	if (ni < 0)
		return isle__jerr(&j->w, ni, "cannot add node '%s'", name);
	/* The index keeps the key: the model's copy outlives a host list's
	 * expansion. */
	rc = define(j, j->seen_nodes, j->t->nodes[ni].name, "node");
	if (!rc)
		rc = load_gpus(j, item, ni, gpu_nics);
	if (!rc)
		rc = load_nvlinks(j, item, ni);
	if (!rc)
		rc = load_nics(j, item, ni);
	for (int g = 0; !rc && g < j->t->nodes[ni].ngpus; g++)
		if (gpu_nics[g])
			rc = load_gpu_nic(j, ni, g, gpu_nics[g]);
	if (!rc)
		rc = isle__jget_str(&j->w, item, "rack", 0, 1, &rack);
	if (!rc && rack)
		rc = isle__jcheck_name(&j->w, "rack", rack);
	if (!rc && rack) {
		int r = rack_index(j, rack);

		rc = r < 0 ? r : assign_rack(j, ni, r, "rack");
	}
	return rc;
}

/*
 * A node object. Its name may be a host list ("gb[001-018]"): the object
 * then applies to each of those nodes, as an override of racks or NICs
 * for a whole rack is written once.
 */
static int load_node(struct jl *j, struct jv *item)
{
	static const char *const keys[] = {
	    "name", "rack", "gpus", "nvlinks", "nvlink_all", "nics", NULL};
	const char *name = NULL;
	char **hosts = NULL, err[256];
	int rc, nhosts = 0;

	rc = isle__jexpect(&j->w, item, J_OBJ);
	if (!rc)
		rc = check_keys(j, item, keys);
	if (!rc)
		rc = isle__jget_str(&j->w, item, "name", 1, 1, &name);
	if (rc)
		return rc;
	if (!strchr(name, '['))
		return load_node_one(j, item, name);
	if (isle_hostlist_expand(name, &hosts, &nhosts, err, sizeof(err)))
		return isle__jerr_key(&j->w, -EINVAL, "name", "'%s': %s", name,
				      err);
	for (int h = 0; !rc && h < nhosts; h++)
		rc = load_node_one(j, item, hosts[h]);
	isle_hostlist_free(hosts, nhosts);
	return rc;
}

static int load_nodes(struct jl *j, struct jv *root)
{
	struct jv *arr, *item;
	int rc = isle__jmember(&j->w, root, "nodes", J_ARR, 0, &arr);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "nodes");
	FOREACH_ITEM(j, arr, i, item, rc)
	rc = load_node(j, item);
	isle__jpop(&j->w, old);
	return rc;
}

static int load_domains(struct jl *j, struct jv *root)
{
	static const char *const keys[] = {"name", "nodes", "bw_gbps", NULL};
	struct jv *arr, *item;
	int rc = isle__jmember(&j->w, root, "domains", J_ARR, 0, &arr);
	size_t old;

	if (rc)
		return rc > 0 ? 0 : rc;
	old = isle__jpush_key(&j->w, "domains");
	FOREACH_ITEM(j, arr, i, item, rc)
	{
		const char *name = NULL;
		double bw = 0;
		int *nodes = NULL, n = 0, d;

		rc = isle__jexpect(&j->w, item, J_OBJ);
		if (!rc)
			rc = check_keys(j, item, keys);
		if (!rc)
			rc = isle__jget_str(&j->w, item, "name", 1, 1, &name);
		if (!rc)
			rc = isle__jcheck_name(&j->w, "name", name);
		if (!rc)
			rc = isle__jget_num(&j->w, item, "bw_gbps", 0, &bw);
		if (!rc)
			rc = node_list(j, item, "nodes", &nodes, &n);
		if (!rc && !n)
			rc =
			    isle__jerr_key(&j->w, -EINVAL, "nodes", "no nodes");
		if (rc) {
			free(nodes);
			break;
		}
		d = isle_topo_add_domain(j->t, name, nodes, n, bw);
		if (d == -EEXIST && isle_topo_find_island(j->t, name) >= 0)
			rc = isle__jerr_key(&j->w, d, "name",
					    "duplicate domain '%s'", name);
		else if (d == -EEXIST || d == -EINVAL)
			rc = isle__jerr_key(
			    &j->w, d, "nodes",
			    "a node is listed twice or is already in "
			    "another domain");
		else if (d < 0)
			rc = isle__jerr(&j->w, d, "cannot add domain");
		free(nodes);
	}
	isle__jpop(&j->w, old);
	return rc;
}

/* --- Entry points -------------------------------------------------------- */

static int merge_root(struct jl *j, struct jv *root, int full)
{
	static const char *const keys[] = {"version", "name",	  "tiers",
					   "racks",   "switches", "nodes",
					   "domains", NULL};
	const char *name = NULL;
	int rc, version = ISLE_TOPO_SCHEMA_VERSION;

	j->seen_nodes = isle__index_create();
	j->seen_switches = isle__index_create();
	j->seen_racks = isle__index_create();
	if (!j->seen_nodes || !j->seen_switches || !j->seen_racks) {
		rc =
		    isle__errf(-ENOMEM, j->w.err, j->w.errlen, "out of memory");
		goto out;
	}
	isle__jwalk_init(&j->w, j->w.file, j->w.err, j->w.errlen);
	rc = isle__jexpect(&j->w, root, J_OBJ);
	if (!rc)
		rc = check_keys(j, root, keys);
	if (!rc)
		rc = isle__jget_int(&j->w, root, "version", full, 0, 1000000,
				    &version);
	if (!rc && version != ISLE_TOPO_SCHEMA_VERSION)
		rc = isle__jerr_key(
		    &j->w, -EINVAL, "version",
		    "unsupported version %d (this isle reads %d)", version,
		    ISLE_TOPO_SCHEMA_VERSION);
	if (!rc)
		rc = isle__jget_str(&j->w, root, "name", 0, 1, &name);
	if (!rc && name) {
		free(j->t->name);
		j->t->name = strdup(name);
		if (!j->t->name)
			rc = isle__jerr(&j->w, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = load_tiers(j, root);
	if (!rc)
		rc = load_racks(j, root, 1);
	if (!rc)
		rc = load_switches(j, root, 1);
	if (!rc)
		rc = load_nodes(j, root);
	if (!rc)
		rc = load_switches(j, root, 2);
	if (!rc)
		rc = load_racks(j, root, 2);
	if (!rc)
		rc = load_domains(j, root);
out:
	isle__index_destroy(j->seen_nodes);
	isle__index_destroy(j->seen_switches);
	isle__index_destroy(j->seen_racks);
	free(j->rack_of);
	return rc;
}
int isle_topo_load_buf(const char *buf, const char *name, isle_topo **out,
		       char *err, size_t errlen)
{
	struct jl j = {.w = {.file = name ? name : "<buffer>",
			     .err = err,
			     .errlen = errlen}};
	struct jv_doc doc;
	char ferr[512] = "";
	int rc;

	*out = NULL;
	if (!buf)
		return isle__errf(-EINVAL, err, errlen, "%s: no data",
				  j.w.file);
	rc = isle__jv_parse(buf, j.w.file, &doc, err, errlen);
	if (rc)
		return rc;
	j.t = isle_topo_create();
	if (!j.t) {
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	rc = merge_root(&j, jv_or_null(&doc.root), 1);
	/* The model holds copies of everything; drop the tree before finalize
	 * allocates its own working memory. */
	isle__jv_doc_free(&doc);
	if (!rc) {
		rc = isle_topo_finalize(j.t, ferr, sizeof(ferr));
		if (rc)
			isle__errf(rc, err, errlen, "%s: %s", j.w.file, ferr);
	}
	if (!rc) {
		*out = j.t;
		j.t = NULL;
	}
out:
	isle_topo_destroy(j.t);
	isle__jv_doc_free(&doc);
	return rc;
}

int isle_topo_load(const char *path, isle_topo **out, char *err, size_t errlen)
{
	char *buf;
	int rc;

	*out = NULL;
	rc = isle__read_file(path, &buf, err, errlen);
	if (rc)
		return rc;
	rc = isle_topo_load_buf(buf, path, out, err, errlen);
	free(buf);
	return rc;
}

int isle_topo_merge_json(isle_topo *t, const char *path, char *err,
			 size_t errlen)
{
	struct jl j = {.w = {.file = path, .err = err, .errlen = errlen},
		       .t = t};
	struct jv_doc doc;
	char *buf;
	int rc;

	if (!t)
		return isle__errf(-EINVAL, err, errlen, "no model");
	rc = isle__read_file(path, &buf, err, errlen);
	if (rc)
		return rc;
	rc = isle__jv_parse(buf, path, &doc, err, errlen);
	if (!rc) {
		rc = merge_root(&j, jv_or_null(&doc.root), 0);
		isle__jv_doc_free(&doc);
	}
	t->finalized = 0;
	free(buf);
	return rc;
}
