/*
 * model_priv.h - internals shared by model.c and finalize.c, the two
 * halves of the cluster model. Nothing else includes it.
 */
#ifndef ISLE_MODEL_PRIV_H
#define ISLE_MODEL_PRIV_H

#include "topo_priv.h"

/* Defaults of the communication tiers; a cluster file overrides them. */
extern const struct isle_tier_param isle__default_tier[ISLE_TIER_COUNT];

/* Frees what an island owns (not the island itself). */
void isle__free_island(struct isle_island *is);

/* Sorts an int array and drops duplicates. */
void isle__sort_unique(int *v, int *n);

/* Drops the derived (intra-node) islands and clears the finalized flag;
 * 0 or -ENOMEM. */
int isle__drop_derived_islands(isle_topo *t);

#endif /* ISLE_MODEL_PRIV_H */
