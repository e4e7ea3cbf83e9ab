/*
 * topology_isle.h - topology/isle's entry points (topology_isle.c), as the
 * bodies isle_compat.c calls from the entry points of the Slurm release at
 * hand. Written once for every release: what differs between releases
 * stays in isle_compat.c.
 *
 * slurmctld calls them with its own locks held (config write lock for
 * build_config, job and node locks for eval_nodes). The plugin is also
 * loaded by scontrol and slurmd (to unpack and print the topology, and for
 * message routing): what runs there never touches slurmctld-only symbols.
 */
#ifndef TOPOLOGY_ISLE_H
#define TOPOLOGY_ISLE_H

#include <stdbool.h>
#include <stdint.h>

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/interfaces/topology.h"

#define ISLE_TOPO_PLUGIN_ID 190 /* unused by Slurm's topology plugins */

int isle__topo_init(void);
int isle__topo_fini(void);
/* name: the topology's name (25.11+ topology.yaml; "default" otherwise). */
int isle__topo_build_config(const char *name);
int isle__topo_destroy_config(void);
int isle__topo_eval_nodes(topology_eval_t *te);
int isle__topo_whole_topo(bitstr_t *node_mask);
bitstr_t *isle__topo_get_bitmap(const char *name);
bool isle__topo_node_ranking(void);
int isle__topo_get_node_addr(char *node_name, char **paddr, char **ppattern);
int isle__topo_split_hostlist(hostlist_t *hl, hostlist_t ***sp_hl, int *count,
			      uint16_t tree_width);
int isle__topo_get(topology_data_t type, void *data);
uint32_t isle__topo_get_fragmentation(bitstr_t *node_mask);

/*
 * A node was created, deleted or given a new topology string (25.11+
 * add_rm_node). unit: the part after "NAME:" of its Topology= value, or
 * NULL. The cluster file stays the truth about where a node is: a unit
 * naming a rack, island or switch the node is not in, or a node the file
 * does not describe, is logged and otherwise ignored (refusing would stop
 * slurmctld at startup when a saved node state predates the file).
 */
int isle__topo_add_rm_node(node_record_t *node_ptr, const char *unit);

/* Slurm ranks for the nodes of node_bitmap (in bitmap order) so that tasks
 * follow the engine's order: leaf, then NVLink island, then model order
 * (26.05 get_rank). */
int isle__topo_get_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
			uint32_t *size);

/* "rack:island:leaf" of Slurm node node_inx as the model sees it, or NULL
 * (xfree()): the node's Topology= string (25.11+). */
char *isle__topo_node_unit(int node_inx);

/* Eval call count and latency, "Calls=N MeanUs=.. P50Us=.. P99Us=..
 * MaxUs=.. SumUs=.. BucketsUs=..." (the topoinfo's IsleEval line); the
 * caller xfrees it. */
char *isle__topo_eval_stats(void);

#endif /* TOPOLOGY_ISLE_H */
