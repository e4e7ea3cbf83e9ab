/*
 * proto_priv.h - internals shared by the files of proto/ (nothing outside
 * proto/ includes it).
 */
#ifndef ISLE_PROTO_PRIV_H
#define ISLE_PROTO_PRIV_H

#include <stddef.h>

#include "isle_proto.h"

#define errf isle__errf

#endif /* ISLE_PROTO_PRIV_H */
