/*
 * plan.c - plan.json (docs/plan.md): the one reader (isle_plan_read, used by
 * comm_shim) and the one writer (isle_plan_write, used by isle-agent plan),
 * the dense rank ids and the plan hash the shim's ranks compare.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proto_priv.h"

static const char *const scope_names[ISLE_SCOPE_COUNT] = {
    [ISLE_SCOPE_ISLAND] = "island",
    [ISLE_SCOPE_NODE] = "node",
    [ISLE_SCOPE_LEAF] = "leaf",
    [ISLE_SCOPE_JOB] = "job",
};

const char *isle_scope_name(isle_scope s)
{
	return (unsigned)s < ISLE_SCOPE_COUNT ? scope_names[s] : "?";
}

int isle_scope_parse(const char *s, isle_scope *out)
{
	for (int i = 0; s && i < ISLE_SCOPE_COUNT; i++)
		if (!strcmp(s, scope_names[i])) {
			*out = (isle_scope)i;
			return 0;
		}
	return -EINVAL;
}

void isle_plan_destroy(struct isle_plan *plan)
{
	if (!plan)
		return;
	for (int i = 0; plan->ranks && i < plan->nranks; i++) {
		struct isle_plan_rank *r = &plan->ranks[i];

		free(r->node);
		free(r->island);
		free(r->leaf);
		free(r->nic);
	}
	for (int j = 0; j < plan->nlevels; j++)
		free(plan->levels[j].name);
	free(plan->ranks);
	free(plan->job_id);
	free(plan->source);
	free(plan);
}

uint64_t isle_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static uint64_t str_hash(const char *s)
{
	return isle_fnv1a(ISLE_FNV1A_INIT, s, strlen(s));
}

/*
 * Dense ids, numbered in order of first appearance, through one open
 * addressing table per field: O(n) for n ranks (a 65,536-rank plan).
 */
static int intern_field(struct isle_plan *p, size_t off, size_t id_off)
{
	size_t cap = 16;
	int *slot, next = 0;

	while (cap < 2 * (size_t)p->nranks)
		cap *= 2;
	slot = malloc(cap * sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	memset(slot, 0xff, cap * sizeof(*slot)); /* -1: empty */
	for (int i = 0; i < p->nranks; i++) {
		struct isle_plan_rank *r = &p->ranks[i];
		const char *name = *(char **)((char *)r + off);
		size_t h = (size_t)str_hash(name) & (cap - 1);
		int *id = (int *)((char *)r + id_off);

		for (;; h = (h + 1) & (cap - 1)) {
			const struct isle_plan_rank *o;

			if (slot[h] < 0) {
				slot[h] = i;
				*id = next++;
				break;
			}
			o = &p->ranks[slot[h]];
			if (!strcmp(*(char *const *)((const char *)o + off),
				    name)) {
				*id = *(const int *)((const char *)o + id_off);
				break;
			}
		}
	}
	free(slot);
	return 0;
}

int isle_plan_index(struct isle_plan *p)
{
	int rc;

	if ((rc = intern_field(p, offsetof(struct isle_plan_rank, node),
			       offsetof(struct isle_plan_rank, node_id))) ||
	    (rc = intern_field(p, offsetof(struct isle_plan_rank, island),
			       offsetof(struct isle_plan_rank, island_id))) ||
	    (rc = intern_field(p, offsetof(struct isle_plan_rank, leaf),
			       offsetof(struct isle_plan_rank, leaf_id))))
		return rc;
	return 0;
}

/* Field by field, with a separator, so "ab"+"c" and "a"+"bc" differ. */
static uint64_t hash_str(uint64_t h, const char *s)
{
	h = isle_fnv1a(h, s ? s : "", s ? strlen(s) + 1 : 0);
	return isle_fnv1a(h, s ? "\x01" : "\x02", 1);
}

static uint64_t hash_num(uint64_t h, double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.17g", v);
	return hash_str(h, buf);
}

uint64_t isle_plan_hash(const struct isle_plan *p)
{
	uint64_t h = ISLE_FNV1A_INIT;
	char codec[64];

	h = hash_num(h, p->nranks);
	for (int i = 0; i < p->nranks; i++) {
		const struct isle_plan_rank *r = &p->ranks[i];

		h = hash_str(h, r->node);
		h = hash_num(h, r->gpu);
		h = hash_str(h, r->island);
		h = hash_str(h, r->leaf);
		h = hash_str(h, r->nic);
	}
	h = hash_num(h, p->nlevels);
	for (int j = 0; j < p->nlevels; j++) {
		const struct isle_plan_level *l = &p->levels[j];

		isle_codec_format(&l->codec, codec, sizeof(codec));
		h = hash_str(h, l->name);
		h = hash_num(h, l->scope);
		h = hash_num(h, l->bw_gbps);
		h = hash_num(h, l->lat_us);
		h = hash_str(h, codec);
	}
	return h;
}

/* ------------------------------------------------------------- parsing */

struct jctx {
	const char *file;
	char *err;
	size_t errlen;
};

#define JERR(cx, rc, fmt, ...)                                                 \
	errf((rc), (cx)->err, (cx)->errlen, "%s: " fmt, (cx)->file,            \
	     ##__VA_ARGS__)

/* Looks up key; *v is NULL when absent. Wrong type is an error. */
static int jget(struct jctx *cx, json_object *obj, const char *path,
		const char *key, json_type want, int required, json_object **v)
{
	json_type t;

	*v = NULL;
	if (!json_object_object_get_ex(obj, key, v) || !*v) {
		*v = NULL;
		if (!required)
			return 0;
		return JERR(cx, -EINVAL, "%s.%s: missing", path, key);
	}
	t = json_object_get_type(*v);
	if (t == want || (want == json_type_double && t == json_type_int))
		return 0;
	return JERR(cx, -EINVAL, "%s.%s: expected %s, got %s", path, key,
		    want == json_type_double   ? "a number"
		    : want == json_type_int    ? "an integer"
		    : want == json_type_string ? "a string"
		    : want == json_type_array  ? "an array"
					       : "an object",
		    json_type_to_name(t));
}

static int jstrdup(struct jctx *cx, json_object *v, const char *path,
		   const char *key, int nonempty, char **out)
{
	const char *s = json_object_get_string(v);

	if (nonempty && !*s)
		return JERR(cx, -EINVAL, "%s.%s: empty string", path, key);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int parse_rank(struct jctx *cx, json_object *o, int idx,
		      struct isle_plan *p)
{
	char path[64];
	json_object *v;
	struct isle_plan_rank *r;
	int64_t rank;
	int rc;

	snprintf(path, sizeof(path), "$.ranks[%d]", idx);
	if (!json_object_is_type(o, json_type_object))
		return JERR(cx, -EINVAL, "%s: expected an object", path);
	if ((rc = jget(cx, o, path, "rank", json_type_int, 1, &v)))
		return rc;
	rank = json_object_get_int64(v);
	if (rank < 0 || rank >= p->nranks)
		return JERR(cx, -EINVAL, "%s.rank: %lld out of range 0..%d",
			    path, (long long)rank, p->nranks - 1);
	r = &p->ranks[rank];
	if (r->node)
		return JERR(cx, -EINVAL, "%s.rank: rank %lld listed twice",
			    path, (long long)rank);

	if ((rc = jget(cx, o, path, "node", json_type_string, 1, &v)) ||
	    (rc = jstrdup(cx, v, path, "node", 1, &r->node)))
		return rc;
	r->gpu = -1;
	if ((rc = jget(cx, o, path, "gpu", json_type_int, 0, &v)))
		return rc;
	if (v) {
		int64_t g = json_object_get_int64(v);

		if (g < -1 || g > 4096)
			return JERR(cx, -EINVAL, "%s.gpu: %lld out of range",
				    path, (long long)g);
		r->gpu = (int)g;
	}
	if ((rc = jget(cx, o, path, "island", json_type_string, 0, &v)))
		return rc;
	if ((rc = v ? jstrdup(cx, v, path, "island", 1, &r->island)
		    : ((r->island = strdup(r->node)) ? 0 : -ENOMEM)))
		return rc;
	if ((rc = jget(cx, o, path, "leaf", json_type_string, 0, &v)))
		return rc;
	if ((rc = v ? jstrdup(cx, v, path, "leaf", 0, &r->leaf)
		    : ((r->leaf = strdup("")) ? 0 : -ENOMEM)))
		return rc;
	if ((rc = jget(cx, o, path, "nic", json_type_string, 0, &v)))
		return rc;
	if (v && (rc = jstrdup(cx, v, path, "nic", 0, &r->nic)))
		return rc;
	return 0;
}

static int parse_level(struct jctx *cx, json_object *o, int j, int nlevels,
		       struct isle_plan_level *l)
{
	char path[64], cerr[160];
	json_object *v;
	int rc;

	snprintf(path, sizeof(path), "$.levels[%d]", j);
	if (!json_object_is_type(o, json_type_object))
		return JERR(cx, -EINVAL, "%s: expected an object", path);
	if ((rc = jget(cx, o, path, "name", json_type_string, 1, &v)) ||
	    (rc = jstrdup(cx, v, path, "name", 1, &l->name)))
		return rc;

	l->scope = j == nlevels - 1 ? ISLE_SCOPE_JOB
		   : j == 0	    ? ISLE_SCOPE_ISLAND
				    : ISLE_SCOPE_LEAF;
	if ((rc = jget(cx, o, path, "scope", json_type_string, 0, &v)))
		return rc;
	if (v && isle_scope_parse(json_object_get_string(v), &l->scope))
		return JERR(cx, -EINVAL,
			    "%s.scope: '%s' is not one of island, node, leaf, "
			    "job",
			    path, json_object_get_string(v));
	if (j == nlevels - 1 && l->scope != ISLE_SCOPE_JOB)
		return JERR(cx, -EINVAL,
			    "%s.scope: the last level must have scope job",
			    path);
	if (j < nlevels - 1 && l->scope == ISLE_SCOPE_JOB)
		return JERR(cx, -EINVAL,
			    "%s.scope: only the last level may have scope job",
			    path);

	if ((rc = jget(cx, o, path, "bw_gbps", json_type_double, 1, &v)))
		return rc;
	l->bw_gbps = json_object_get_double(v);
	if (!(l->bw_gbps > 0) || l->bw_gbps > 1e6)
		return JERR(cx, -EINVAL, "%s.bw_gbps: %g must be in (0, 1e6]",
			    path, l->bw_gbps);
	if ((rc = jget(cx, o, path, "lat_us", json_type_double, 1, &v)))
		return rc;
	/* + 0.0 turns -0 into 0: "-0" and "0" are one plan (same hash). */
	l->lat_us = json_object_get_double(v) + 0.0;
	if (!(l->lat_us >= 0) || l->lat_us > 1e7)
		return JERR(cx, -EINVAL, "%s.lat_us: %g must be in [0, 1e7]",
			    path, l->lat_us);

	if ((rc = jget(cx, o, path, "codec", json_type_string, 0, &v)))
		return rc;
	if (!v)
		return isle_codec_parse("none", &l->codec, NULL, 0);
	if (isle_codec_parse(json_object_get_string(v), &l->codec, cerr,
			     sizeof(cerr)))
		return JERR(cx, -EINVAL, "%s.codec: %s", path, cerr);
	return 0;
}

static int parse_root(struct jctx *cx, json_object *root, struct isle_plan *p)
{
	json_object *v, *ranks, *levels;
	int rc;
	size_t n;

	if (!json_object_is_type(root, json_type_object))
		return JERR(cx, -EINVAL, "%s: expected an object", "$");
	if ((rc = jget(cx, root, "$", "isle_plan", json_type_int, 1, &v)))
		return rc;
	if (json_object_get_int64(v) != ISLE_PLAN_VERSION)
		return JERR(cx, -EINVAL,
			    "%s: version %lld not supported (this reader knows "
			    "%d)",
			    "$.isle_plan", (long long)json_object_get_int64(v),
			    ISLE_PLAN_VERSION);
	p->version = ISLE_PLAN_VERSION;
	if ((rc = jget(cx, root, "$", "job_id", json_type_string, 0, &v)))
		return rc;
	if (v && (rc = jstrdup(cx, v, "$", "job_id", 0, &p->job_id)))
		return rc;

	if ((rc = jget(cx, root, "$", "ranks", json_type_array, 1, &ranks)))
		return rc;
	n = json_object_array_length(ranks);
	if (n == 0 || n > (1u << 20))
		return JERR(cx, -EINVAL, "%s: %zu ranks (need 1..%u)",
			    "$.ranks", n, 1u << 20);
	p->nranks = (int)n;
	p->ranks = calloc(n, sizeof(*p->ranks));
	if (!p->ranks)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if ((rc = parse_rank(cx, json_object_array_get_idx(ranks, i),
				     (int)i, p)))
			return rc;
	/* n entries, each rank in range and unique: all present. */

	if ((rc = jget(cx, root, "$", "levels", json_type_array, 1, &levels)))
		return rc;
	n = json_object_array_length(levels);
	if (n < 1 || n > ISLE_PLAN_MAX_LEVELS)
		return JERR(cx, -EINVAL, "%s: %zu levels (need 1..%d)",
			    "$.levels", n, ISLE_PLAN_MAX_LEVELS);
	for (size_t j = 0; j < n; j++) {
		p->nlevels = (int)j + 1; /* so destroy frees what was set */
		if ((rc = parse_level(cx, json_object_array_get_idx(levels, j),
				      (int)j, (int)n, &p->levels[j])))
			return rc;
	}
	return isle_plan_index(p);
}

int isle_plan_parse(const char *json, size_t len, const char *name,
		    struct isle_plan **out, char *err, size_t errlen)
{
	struct jctx cx = {name ? name : "plan", err, errlen};
	struct json_tokener *tok = NULL;
	json_object *root = NULL;
	struct isle_plan *p = NULL;
	int rc;

	*out = NULL;
	if (len > INT32_MAX)
		return errf(-EINVAL, err, errlen, "%s: too large", cx.file);
	tok = json_tokener_new();
	p = calloc(1, sizeof(*p));
	if (!tok || !p) {
		rc = errf(-ENOMEM, err, errlen, "%s: out of memory", cx.file);
		goto out;
	}
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset < (int)len) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		int line = 1;

		for (size_t i = 0; i < len && i < (size_t)tok->char_offset; i++)
			line += json[i] == '\n';
		if (root && e == json_tokener_success)
			rc = errf(-EINVAL, err, errlen,
				  "%s:%d: trailing data after the "
				  "JSON object",
				  cx.file, line);
		else
			rc = errf(-EINVAL, err, errlen,
				  "%s:%d: invalid JSON: %s", cx.file, line,
				  e == json_tokener_continue
				      ? "unexpected end of file"
				      : json_tokener_error_desc(e));
		goto out;
	}
	if (!(p->source = strdup(cx.file))) {
		rc = -ENOMEM;
		goto out;
	}
	rc = parse_root(&cx, root, p);
	if (rc == -ENOMEM)
		errf(rc, err, errlen, "%s: out of memory", cx.file);
	if (rc)
		goto out;
	*out = p;
	p = NULL;
out:
	isle_plan_destroy(p);
	if (root)
		json_object_put(root);
	if (tok)
		json_tokener_free(tok);
	return rc;
}

int isle_plan_read(const char *path, struct isle_plan **out, char *err,
		   size_t errlen)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0, got;
	int rc;

	*out = NULL;
	f = fopen(path, "r");
	if (!f) {
		rc = -errno;
		return errf(rc, err, errlen, "%s: %s", path, strerror(-rc));
	}
	do {
		if (len + 4096 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 65536;
			if (cap > (64u << 20)) {
				rc = errf(-EINVAL, err, errlen,
					  "%s: larger than 64 MiB", path);
				goto out;
			}
			if (!(nb = realloc(buf, cap))) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		rc = errf(-EIO, err, errlen, "%s: read error", path);
		goto out;
	}
	rc = isle_plan_parse(buf, len, path, out, err, errlen);
out:
	free(buf);
	fclose(f);
	return rc;
}

/* ---------------------------------------------------------- writing */

static void put_str(FILE *f, const char *s)
{
	json_object *o = json_object_new_string(s);

	fputs(
	    o ? json_object_to_json_string_ext(
		    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
	      : "\"\"",
	    f);
	json_object_put(o);
}

int isle_plan_write(const struct isle_plan *p, FILE *f)
{
	char codec[64], bw[40], lat[40];

	fprintf(f, "{\n  \"isle_plan\": %d,\n", ISLE_PLAN_VERSION);
	if (p->job_id) {
		fputs("  \"job_id\": ", f);
		put_str(f, p->job_id);
		fputs(",\n", f);
	}
	fputs("  \"ranks\": [\n", f);
	for (int i = 0; i < p->nranks; i++) {
		const struct isle_plan_rank *r = &p->ranks[i];

		fprintf(f, "    {\"rank\": %d, \"node\": ", i);
		put_str(f, r->node);
		fprintf(f, ", \"gpu\": %d, \"island\": ", r->gpu);
		put_str(f, r->island);
		fputs(", \"leaf\": ", f);
		put_str(f, r->leaf);
		if (r->nic) {
			fputs(", \"nic\": ", f);
			put_str(f, r->nic);
		}
		fprintf(f, "}%s\n", i + 1 < p->nranks ? "," : "");
	}
	fputs("  ],\n  \"levels\": [\n", f);
	for (int j = 0; j < p->nlevels; j++) {
		const struct isle_plan_level *l = &p->levels[j];

		isle_codec_format(&l->codec, codec, sizeof(codec));
		isle_fmt_double(bw, sizeof(bw), l->bw_gbps);
		isle_fmt_double(lat, sizeof(lat), l->lat_us);
		fputs("    {\"name\": ", f);
		put_str(f, l->name);
		fprintf(f,
			", \"scope\": \"%s\", \"bw_gbps\": %s, "
			"\"lat_us\": %s, \"codec\": \"%s\"}%s\n",
			isle_scope_name(l->scope), bw, lat, codec,
			j + 1 < p->nlevels ? "," : "");
	}
	fputs("  ]\n}\n", f);
	return ferror(f) ? -EIO : 0;
}
