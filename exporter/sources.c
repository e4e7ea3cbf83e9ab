/*
 * sources.c - what scontrol prints: node states (`show node --json`) and
 * topology/isle's view (`show topology`).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "isle_exporter.h"
#include "isle_proto.h"

/* --- GRES strings -------------------------------------------------------- */

/* One "name[:type]:count[(...)]" entry of length n; *is_gpu and *count. */
static int gres_entry(const char *p, size_t n, int *is_gpu, long *count)
{
	const char *paren = memchr(p, '(', n), *end = paren ? paren : p + n;
	const char *colon = NULL, *q;
	char *e;

	for (q = p; q < end; q++)
		if (*q == ':')
			colon = q;
	*is_gpu = (size_t)(end - p) >= 3 && !strncmp(p, "gpu", 3) &&
		  (end - p == 3 || p[3] == ':');
	if (!colon) {
		/* "gpu" alone: Slurm's count 1 */
		*count = 1;
		return end > p ? 0 : -EINVAL;
	}
	if (colon + 1 == end || !isdigit((unsigned char)colon[1]))
		return -EINVAL;
	errno = 0;
	*count = strtol(colon + 1, &e, 10);
	if (errno || e != end || *count < 0 || *count > 1000000)
		return -EINVAL;
	if (paren && p[n - 1] != ')')
		return -EINVAL;
	return 0;
}

int isle_exp_gres_gpus(const char *gres, int *count)
{
	long total = 0;
	const char *p = gres;

	*count = 0;
	if (!gres || !*gres || !strcmp(gres, "N/A") || !strcmp(gres, "(null)"))
		return 0;
	while (*p) {
		/* Commas also sit inside "(IDX:0,2)": split outside parens. */
		const char *q = p;
		int depth = 0, is_gpu;
		long c;

		while (*q && (depth || *q != ',')) {
			depth += (*q == '(') - (*q == ')');
			if (depth < 0)
				return -EINVAL;
			q++;
		}
		if (depth || gres_entry(p, (size_t)(q - p), &is_gpu, &c))
			return -EINVAL;
		if (is_gpu)
			total += c;
		if (total > 1000000)
			return -EINVAL;
		p = *q ? q + 1 : q;
	}
	*count = (int)total;
	return 0;
}

/* --- scontrol show node --json -------------------------------------------- */

static const char *const unusable_flags[] = {"DOWN", "DRAIN", "FAIL",
					     "NOT_RESPONDING", "FUTURE"};

/* Exact flag names: POWERED_DOWN nodes stay selectable, as in Slurm. */
static int node_usable(json_object *state)
{
	int arr = state && json_object_is_type(state, json_type_array);
	size_t n = arr ? json_object_array_length(state) : (state ? 1 : 0);

	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(
		    arr ? json_object_array_get_idx(state, i) : state);

		for (size_t k = 0; s && k < sizeof(unusable_flags) /
						sizeof(unusable_flags[0]);
		     k++)
			if (!strcmp(s, unusable_flags[k]))
				return 0;
	}
	return 1;
}

void isle_exp_nodes_free(struct isle_exp_nodes *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->n; i++)
		free(n->v[i].name);
	free(n->v);
	n->v = NULL;
	n->n = 0;
}

int isle_exp_nodes_parse(const char *json, size_t len, const char *name,
			 struct isle_exp_nodes *out, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	json_object *root = NULL, *arr, *v;
	int rc = -EINVAL;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	if (len > (size_t)INT32_MAX) {
		rc = isle__errf(-EINVAL, err, errlen, "%s: too large", name);
		goto out;
	}
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		rc = isle__errf(
		    -EINVAL, err, errlen, "%s: not JSON (%s)", name,
		    json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if (!json_object_object_get_ex(root, "nodes", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		rc = isle__errf(-EINVAL, err, errlen,
				"%s: $.nodes: missing or not an array", name);
		goto out;
	}
	n = json_object_array_length(arr);
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(arr, i), *st = NULL;
		struct isle_exp_node *nd = &out->v[out->n];
		const char *s;

		if (!json_object_is_type(o, json_type_object) ||
		    !json_object_object_get_ex(o, "name", &v) ||
		    !json_object_is_type(v, json_type_string)) {
			rc = isle__errf(-EINVAL, err, errlen,
					"%s: $.nodes[%zu].name: missing", name,
					i);
			goto out;
		}
		if (!(nd->name = strdup(json_object_get_string(v)))) {
			rc = -ENOMEM;
			goto out;
		}
		out->n++;
		s = json_object_object_get_ex(o, "gres", &v)
			? json_object_get_string(v)
			: "";
		if (isle_exp_gres_gpus(s, &nd->gpus)) {
			rc = isle__errf(
			    -EINVAL, err, errlen,
			    "%s: $.nodes[%zu].gres: cannot read '%s'", name, i,
			    s);
			goto out;
		}
		s = json_object_object_get_ex(o, "gres_used", &v)
			? json_object_get_string(v)
			: "";
		if (isle_exp_gres_gpus(s, &nd->used)) {
			rc = isle__errf(
			    -EINVAL, err, errlen,
			    "%s: $.nodes[%zu].gres_used: cannot read '%s'",
			    name, i, s);
			goto out;
		}
		if (nd->used > nd->gpus)
			nd->used = nd->gpus;
		json_object_object_get_ex(o, "state", &st);
		nd->usable = node_usable(st);
	}
	rc = 0;
out:
	if (rc)
		isle_exp_nodes_free(out);
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

/* --- scontrol show topology ----------------------------------------------- */

void isle_exp_topo_free(struct isle_exp_topo *t)
{
	if (!t)
		return;
	free(t->cluster);
	free(t->file);
	free(t->error);
	for (int i = 0; i < t->nislands; i++)
		free(t->islands[i].name);
	free(t->islands);
	memset(t, 0, sizeof(*t));
}

/* The value of KEY= in line (a "quoted value" may hold blanks), copied
 * into buf; 0 or -ENOENT. */
static int kv(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line, *e;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=')
			break;
		p += kl;
	}
	if (!p)
		return -ENOENT;
	p += kl + 1;
	if (*p == '"') {
		p++;
		e = strrchr(p, '"');
		if (!e)
			e = p + strlen(p);
	} else {
		e = p + strcspn(p, " \n");
	}
	snprintf(buf, len, "%.*s", (int)(e - p), p);
	return 0;
}

static int kv_long(const char *line, const char *key, long *out)
{
	char buf[32], *e;

	if (kv(line, key, buf, sizeof(buf)) || !isdigit((unsigned char)buf[0]))
		return -EINVAL;
	errno = 0;
	*out = strtol(buf, &e, 10);
	return errno || *e ? -EINVAL : 0;
}

static int kv_u64(const char *line, const char *key, uint64_t *out)
{
	long v;

	if (kv_long(line, key, &v))
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

/* BucketsUs=LE:N,...,+Inf:N of an IsleEval line: bounds ascending,
 * counts cumulative, +Inf the call count. No BucketsUs= is not an error
 * (neval_le 0). */
static int eval_buckets(const char *line, struct isle_exp_topo *out)
{
	char val[2048], *p = val, *e;
	uint64_t prev_le = 0, prev_n = 0;

	if (kv(line, "BucketsUs", val, sizeof(val)))
		return 0;
	for (;;) {
		uint64_t le, n;

		if (!strncmp(p, "+Inf:", 5)) {
			if (!isdigit((unsigned char)p[5]))
				return -EINVAL;
			errno = 0;
			n = strtoull(p + 5, &e, 10);
			return errno || *e || n != out->eval_calls || n < prev_n
				   ? -EINVAL
				   : 0;
		}
		if (out->neval_le == ISLE_EXP_EVAL_MAX_BOUNDS ||
		    !isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		le = strtoull(p, &e, 10);
		if (errno || *e != ':' || !isdigit((unsigned char)e[1]) ||
		    (out->neval_le && le <= prev_le))
			return -EINVAL;
		n = strtoull(e + 1, &e, 10);
		if (errno || *e != ',' || n < prev_n)
			return -EINVAL;
		out->eval_le_us[out->neval_le] = prev_le = le;
		out->eval_le_count[out->neval_le++] = prev_n = n;
		p = e + 1;
	}
}

int isle_exp_topo_parse(const char *text, struct isle_exp_topo *out, char *err,
			size_t errlen)
{
	char buf[4096], val[1024];
	const char *p = text;
	int lineno = 0, seen = 0, cap = 0, rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		lineno++;
		snprintf(buf, sizeof(buf), "%.*s",
			 (int)(n < sizeof(buf) ? n : sizeof(buf) - 1), p);
		p = nl ? nl + 1 : NULL;
		if (!strncmp(buf, "Topology=isle ", 14)) {
			seen = 1;
			/* A second summary line replaces the first. */
			free(out->cluster);
			free(out->file);
			free(out->error);
			out->cluster = out->file = out->error = NULL;
			if (!kv(buf, "Status", val, sizeof(val)))
				out->fallback = !strcmp(val, "fallback");
			if (!kv(buf, "Cluster", val, sizeof(val)) &&
			    !(out->cluster = strdup(val)))
				goto nomem;
			if (!kv(buf, "File", val, sizeof(val)) &&
			    !(out->file = strdup(val)))
				goto nomem;
			if (!kv(buf, "Error", val, sizeof(val)) &&
			    !(out->error = strdup(val)))
				goto nomem;
			if (!out->fallback &&
			    (kv_long(buf, "GPUs", &out->gpus) ||
			     kv_long(buf, "FreeGPUs", &out->free_gpus))) {
				rc = isle__errf(
				    -EINVAL, err, errlen,
				    "scontrol show topology: line %d: no "
				    "GPUs= or FreeGPUs=",
				    lineno);
				goto fail;
			}
		} else if (!strncmp(buf, "IslandName=", 11)) {
			struct isle_exp_island *isl;
			long g, f;

			if (kv(buf, "IslandName", val, sizeof(val)) ||
			    kv_long(buf, "GPUs", &g) ||
			    kv_long(buf, "FreeGPUs", &f) || f > g) {
				rc = isle__errf(
				    -EINVAL, err, errlen,
				    "scontrol show topology: line %d: "
				    "island without GPUs= and FreeGPUs=",
				    lineno);
				goto fail;
			}
			if (out->nislands == cap) {
				int nc = cap ? 2 * cap : 64;
				void *nv = realloc(out->islands,
						   (size_t)nc * sizeof(*isl));

				if (!nv)
					goto nomem;
				out->islands = nv;
				cap = nc;
			}
			isl = &out->islands[out->nislands];
			memset(isl, 0, sizeof(*isl));
			if (!(isl->name = strdup(val)))
				goto nomem;
			out->nislands++;
			isl->gpus = (int)g;
			isl->free_gpus = (int)f;
			isl->multi = !kv(buf, "Type", val, sizeof(val)) &&
				     !strcmp(val, "nvlink-domain");
		} else if (!strncmp(buf, "IsleEval ", 9)) {
			out->have_eval =
			    !kv_u64(buf, "Calls", &out->eval_calls);
			if (out->have_eval && out->eval_calls &&
			    (kv_u64(buf, "MeanUs", &out->eval_mean_us) ||
			     kv_u64(buf, "P50Us", &out->eval_p50_us) ||
			     kv_u64(buf, "P99Us", &out->eval_p99_us) ||
			     kv_u64(buf, "MaxUs", &out->eval_max_us)))
				out->have_eval = 0;
			out->neval_le = 0;
			if (kv_u64(buf, "SumUs", &out->eval_sum_us))
				out->eval_sum_us =
				    out->eval_mean_us * out->eval_calls;
			else if (out->have_eval && eval_buckets(buf, out))
				out->have_eval = 0; /* not the plugin's */
		}
	}
	if (!seen) {
		rc = isle__errf(
		    -EINVAL, err, errlen,
		    "scontrol show topology: no 'Topology=isle' line: "
		    "slurmctld does not run topology/isle");
		goto fail;
	}
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	isle_exp_topo_free(out);
	return rc;
}
