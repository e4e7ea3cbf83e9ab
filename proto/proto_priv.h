/*
 * proto_priv.h - internals shared by the files of proto/ (nothing outside
 * proto/ includes it).
 */
#ifndef ISLE_PROTO_PRIV_H
#define ISLE_PROTO_PRIV_H

#include <stddef.h>

#include "isle_proto.h"

/* vsnprintf into err (when not NULL); returns rc. */
int isle__proto_errf(int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define errf isle__proto_errf

#endif /* ISLE_PROTO_PRIV_H */
