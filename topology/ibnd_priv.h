/*
 * ibnd_priv.h - internals shared by topology/ibnd_*.c.
 */
#ifndef ISLE_IBND_PRIV_H
#define ISLE_IBND_PRIV_H

#include "topo_priv.h"

/* Reads the dump into a fabric of nodes and checked links, unclassified.
 * On failure *out is NULL and err reads "path:line: reason". */
int isle__ibnd_read(const char *path, isle_ibnd_fabric **out, char *err,
		    size_t errlen);

/* Per-lane rate of an IB speed name ("NDR" -> 100 Gb/s), 0 if unknown. */
double isle__ibnd_lane_gbps(const char *speed);

#endif /* ISLE_IBND_PRIV_H */
