/*
 * isle_topoinfo.h - what `scontrol show topology` prints (isle_topoinfo.c):
 * topoinfo entries, one per rack, island and switch of the model, with a
 * summary first and the eval statistics last. Built in slurmctld, packed,
 * unpacked and printed in scontrol.
 */
#ifndef ISLE_TOPOINFO_H
#define ISLE_TOPOINFO_H

#include <stdint.h>

#include "src/common/slurm_xlator.h"

#include "src/common/pack.h"

enum isle__topoinfo_kind {
	ISLE_ENTRY_SUMMARY = 0,
	ISLE_ENTRY_RACK,
	ISLE_ENTRY_ISLAND,
	ISLE_ENTRY_SWITCH,
	ISLE_ENTRY_EVAL, /* children: isle__topo_eval_stats() */
};

struct isle__topoinfo_entry {
	uint16_t kind;
	uint16_t level; /* switch level (isle_sw_level) */
	char *name;
	char *nodes;	/* hostlist string */
	char *children; /* switches below, or the error text for SUMMARY */
	uint32_t gpus;
	uint32_t free_gpus;
};

struct isle__topoinfo {
	uint32_t count;
	struct isle__topoinfo_entry *recs;
};

/* A snapshot of the entries with current free GPU counts (slurmctld). */
struct isle__topoinfo *isle__topoinfo_build(void);
void isle__topoinfo_free(struct isle__topoinfo *ti);
int isle__topoinfo_pack(void *ti, buf_t *buffer, uint16_t protocol_version);
int isle__topoinfo_unpack(void **ti, buf_t *buffer, uint16_t protocol_version);
/* Prints the entries whose name is nodes_list or that hold its nodes;
 * unit: only the entry of that name (25.11+ `scontrol show topology
 * unit=`). */
int isle__topoinfo_print(void *ti, char *nodes_list, const char *unit,
			 char **out);

#endif /* ISLE_TOPOINFO_H */
