/*
 * json_walk.h - reading typed values out of a JSON tree (json_fast.h) with
 * errors that name the file and the JSON path: "file: $.nodes[3].gpus:
 * reason". The cluster-file loader (json_load.c) and the node-file merge
 * (node_json.c) read through it. Internal to topology/.
 *
 * Functions returning int return 0, or a negative errno with the walk's
 * error buffer filled.
 */
#ifndef ISLE_JSON_WALK_H
#define ISLE_JSON_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "json_fast.h"

/* A walk: the file name, the JSON path of the value being read and the
 * caller's error buffer. path starts as "$". */
struct isle__jwalk {
	const char *file;
	char *err;
	size_t errlen;
	char path[1024];
	size_t plen;
};

void isle__jwalk_init(struct isle__jwalk *w, const char *file, char *err,
		      size_t errlen);

/* Appends text to the path, truncated to fit; returns the old length for
 * isle__jpop. Inline: it runs for every value loaded, hence no snprintf. */
static inline size_t isle__jpush_text(struct isle__jwalk *w, const char *text,
				      size_t n)
{
	size_t old = w->plen;

	if (n > sizeof(w->path) - 1 - old)
		n = sizeof(w->path) - 1 - old;
	memcpy(w->path + old, text, n);
	w->plen = old + n;
	w->path[w->plen] = '\0';
	return old;
}

static inline size_t isle__jpush_key(struct isle__jwalk *w, const char *key)
{
	size_t old = isle__jpush_text(w, ".", 1);

	isle__jpush_text(w, key, strlen(key));
	return old;
}

static inline size_t isle__jpush_idx(struct isle__jwalk *w, size_t i)
{
	char buf[32], *p = buf + sizeof(buf);

	*--p = ']';
	do
		*--p = (char)('0' + i % 10);
	while ((i /= 10));
	*--p = '[';
	return isle__jpush_text(w, p, (size_t)(buf + sizeof(buf) - p));
}

static inline void isle__jpop(struct isle__jwalk *w, size_t old)
{
	w->plen = old;
	w->path[old] = '\0';
}

/* "file: path: message"; returns rc. */
int isle__jerr(struct isle__jwalk *w, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, at member key of the current object. */
int isle__jerr_key(struct isle__jwalk *w, int rc, const char *key,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

enum jtype { J_INT, J_NUM, J_STR, J_ARR, J_OBJ };

/* v (the current value) is of type want, else -EINVAL. */
int isle__jexpect(struct isle__jwalk *w, struct jv *v, enum jtype want);

/*
 * Looks up key in obj and checks its type. Returns 0 with *out set, 1
 * (*out NULL) when the key is absent or JSON null and not required, or a
 * negative errno.
 */
int isle__jmember(struct isle__jwalk *w, struct jv *obj, const char *key,
		  enum jtype want, int required, struct jv **out);

/* Integer member in [lo, hi]; absent keeps *out. */
int isle__jget_int(struct isle__jwalk *w, struct jv *obj, const char *key,
		   int required, int64_t lo, int64_t hi, int *out);
/* Number member in [lo, 1e12] (NaN refused); absent keeps *out. */
int isle__jget_num(struct isle__jwalk *w, struct jv *obj, const char *key,
		   double lo, double *out);
/* String member, borrowed from the tree; absent keeps *out. nonempty:
 * "" is an error. */
int isle__jget_str(struct isle__jwalk *w, struct jv *obj, const char *key,
		   int required, int nonempty, const char **out);

/* name (NULL: fine) through proto's one name check (isle_name_error), at
 * member key (NULL: the current path). */
int isle__jcheck_name(struct isle__jwalk *w, const char *key, const char *name);
/* Free text (a GPU model) shown in logs: printable ASCII, at most 127
 * bytes; NULL is fine. */
int isle__jcheck_text(struct isle__jwalk *w, const char *key, const char *text);

#endif /* ISLE_JSON_WALK_H */
