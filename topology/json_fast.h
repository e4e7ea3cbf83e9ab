/*
 * json_fast.h - the read-only JSON tree the cluster-file and node-file
 * loaders walk (json_fast.c; json_walk.h reads typed values out of it),
 * filled by a one-pass arena parser for plain JSON or from json-c for
 * anything else. Internal to topology/.
 */
#ifndef ISLE_JSON_FAST_H
#define ISLE_JSON_FAST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct json_object;
struct jv_block;

enum jv_type { JV_NULL, JV_BOOL, JV_INT, JV_DBL, JV_STR, JV_ARR, JV_OBJ };

struct jv {
	enum jv_type type;
	unsigned n;	 /* members, items or string length */
	const char *key; /* member name inside an object */
	union {
		int64_t i;
		double d;
		const char *s;
		struct jv *kids;
	} u;
};

struct jv_doc {
	struct jv_block *blocks;
	char *text;		/* decoded copy (fast path) */
	struct json_object *jc; /* json-c tree (fallback) */
	struct jv *stack;	/* siblings being parsed */
	size_t nstack, capstack;
	struct jv root;
};

/*
 * Parses buf into d (isle__jv_doc_free frees it): plain JSON in one pass,
 * anything else through json-c for its rules and messages. Syntax errors
 * read "name:line:col: JSON syntax error: reason". 0 or negative errno.
 */
int isle__jv_parse(const char *buf, const char *name, struct jv_doc *d,
		   char *err, size_t errlen);

/* The two halves, apart for the differential test (test_topo_json_fast).
 * _plain: 0 parsed, 1 not plain JSON (d empty), -ENOMEM. Whatever it
 * parses, json-c must parse to the same tree. _jc: json-c alone, as
 * isle__jv_parse's fallback. */
int isle__jv_parse_plain(const char *buf, struct jv_doc *d);
int isle__jv_parse_jc(const char *buf, const char *name, struct jv_doc *d,
		      char *err, size_t errlen);
void isle__jv_doc_free(struct jv_doc *d);

/* The json-c API the loader uses, on struct jv; JSON null reads as NULL. */
static inline struct jv *jv_or_null(struct jv *v)
{
	return v && v->type != JV_NULL ? v : NULL;
}

static inline int jv_get_ex(struct jv *obj, const char *key, struct jv **out)
{
	*out = NULL;
	if (!obj || obj->type != JV_OBJ)
		return 0;
	for (unsigned i = 0; i < obj->n; i++)
		if (obj->u.kids[i].key[0] == key[0] &&
		    !strcmp(obj->u.kids[i].key, key)) {
			*out = jv_or_null(&obj->u.kids[i]);
			return 1;
		}
	return 0;
}

static inline int jv_is(const struct jv *v, enum jv_type t)
{
	return v ? v->type == t : t == JV_NULL;
}

static inline int64_t jv_int64(const struct jv *v)
{
	return v->type == JV_INT ? v->u.i : (int64_t)v->u.d;
}

static inline double jv_double(const struct jv *v)
{
	return v->type == JV_INT ? (double)v->u.i : v->u.d;
}

static inline const char *jv_str(const struct jv *v)
{
	return v->type == JV_STR ? v->u.s : "";
}

static inline size_t jv_len(const struct jv *v)
{
	return v && v->type == JV_ARR ? v->n : 0;
}

static inline struct jv *jv_idx(struct jv *v, size_t i)
{
	return jv_or_null(&v->u.kids[i]);
}

#endif /* ISLE_JSON_FAST_H */
