/*
 * topo_priv.h - internals shared by the files of the topology library.
 * Not installed; nothing outside topology/ includes it.
 */
#ifndef ISLE_TOPO_PRIV_H
#define ISLE_TOPO_PRIV_H

#include <stdarg.h>
#include <stddef.h>

#include "isle_proto.h"
#include "isle_topo.h"

/*
 * Name -> index hash (index.c). Open addressing with linear probing over
 * borrowed key pointers: the caller keeps the strings alive (they are the
 * names owned by the model's nodes, switches and islands).
 */
struct isle__index *isle__index_create(void);
void isle__index_destroy(struct isle__index *ix);
/* Drops every entry but keeps the table. */
void isle__index_clear(struct isle__index *ix);
/* Inserts key -> val; -EEXIST if the key is present, -ENOMEM. */
int isle__index_put(struct isle__index *ix, const char *key, int val);
/* Value of key or -1. NULL index or key give -1. */
int isle__index_get(const struct isle__index *ix, const char *key);

/* Sends a printf-style warning to the callback set by isle_topo_set_warn. */
void isle__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* First byte of name that proto's name check (isle_name_check) refuses
 * ('?' for an empty or too long name), or 0 when the name is fine. */
int isle__bad_name_char(const char *name);

/* The library's one whole-file reader: *out is the file's contents,
 * NUL-terminated, for the caller to free. Files holding a NUL byte are
 * refused (-EINVAL); errors name the path. */
int isle__read_file(const char *path, char **out, char *err, size_t errlen);

/* Grows *arr (elements of size sz) so that it can hold need elements. */
int isle__grow(void **arr, int *cap, int need, size_t sz);

#endif /* ISLE_TOPO_PRIV_H */
