/*
 * isle_compat.h - the seam between topology/isle and the Slurm release it is
 * built against.
 *
 * The plugin interface changed between 24.11 and 25.11 (entry points gained a
 * topology context, topology_p_topology_* became topology_p_topoinfo_*,
 * add_rm_node, get_topology_str and per-job topology info appeared) and
 * again in 26.05 (eval_node, allow_one_node, get_rank; docs/slurm-releases.md).
 * isle_compat.c is the only file that tests SLURM_VERSION_NUMBER:
 * it exports the entry points of the release at hand and calls the
 * release-neutral bodies declared here (topology_isle.c, isle_nodes.c,
 * isle_jobinfo.c). Everything else in the plugin is written once.
 */
#ifndef ISLE_COMPAT_H
#define ISLE_COMPAT_H

#include "isle_plugin.h"

#include "src/common/pack.h"

/* --- topology_isle.c: bodies of the entry points ------------------------ */

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
int isle__topoinfo_pack(void *ti, buf_t *buffer, uint16_t protocol_version);
int isle__topoinfo_unpack(void **ti, buf_t *buffer, uint16_t protocol_version);
/* unit: only the record of that name (25.11+ `scontrol show topology unit=`) */
int isle__topoinfo_print(void *ti, char *nodes_list, const char *unit,
			 char **out);
uint32_t isle__topo_get_fragmentation(bitstr_t *node_mask);

/* --- isle_nodes.c: nodes added, removed or moved at run time ------------ */

/*
 * A node was created, deleted or given a new topology string (25.11+
 * add_rm_node). unit: the part after "NAME:" of its Topology= value, or
 * NULL. The cluster file stays the truth about where a node is: a unit
 * naming a rack, island or switch the node is not in, or a node the file
 * does not describe, is logged and otherwise ignored (refusing would stop
 * slurmctld at startup when a saved node state predates the file).
 */
int isle__nodes_add_rm(node_record_t *node_ptr, const char *unit);

/* Re-maps Slurm nodes onto the model by name when the node table changed
 * since the last look (dynamic nodes; cheap otherwise). */
void isle__nodes_sync(bool force);

/* "rack:island:leaf" of a node as the model sees it, or NULL. xfree(). */
char *isle__nodes_unit(int slurm_inx);

/* Slurm ranks for the nodes of node_bitmap (in bitmap order) so that tasks
 * follow the engine's order: leaf, then NVLink island, then model order. */
int isle__nodes_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
		     uint32_t *size);

/* Name of the topology isle serves ("default" without topology.yaml). */
extern char *isle__topo_name;

/* --- isle_jobinfo.c: the decision in Slurm's own job state -------------- */

/* What isle decided for a job, as packed into the job's saved state. */
struct isle__jobinfo {
	uint64_t key;  /* the decision store's key (job id, or array task) */
	char *line;    /* the "isle:" AdminComment line */
	char *islands; /* island names, comma separated */
	uint32_t tp, pp, dp, leafs, tp_in_island, ntp_groups;
	uint32_t nnodes;
	char **nodes;	/* [nnodes] node names in rank order */
	uint64_t *gpus; /* [nnodes] GPU masks */
	char *record;	/* the explain record (JSON text), or NULL */
};

struct isle__jobinfo *isle__jobinfo_create(job_record_t *job_ptr, uint64_t key,
					   const char *line,
					   const struct isle_place_result *res,
					   const char *islands,
					   const char *record);
void isle__jobinfo_free(void *ji);
void isle__jobinfo_pack(void *ji, buf_t *buffer, uint16_t protocol_version);
/* In slurmctld it also hands the record back to the decision store. */
int isle__jobinfo_unpack(void **ji, buf_t *buffer, uint16_t protocol_version);

/* --- isle_decision.c ------------------------------------------------- */

/*
 * A decision came back with a job's saved state (slurmctld restart): makes
 * it the job's current decision again, so the explain path has it (the
 * store's writer persists it; nothing here touches files).
 */
void isle__decision_restore(uint64_t key, const char *line, const char *record);

/* --- isle_compat.c: release services for the release-neutral code ------- */

/* True when the release keeps per-job topology info in its job state. */
extern const bool isle__compat_has_jobinfo;

/* Attaches ji to the job's topology info (consumes ji; 24.11: frees it). */
void isle__compat_set_jobinfo(job_record_t *job_ptr, struct isle__jobinfo *ji);

/* --- isle_version.c --------------------------------------------------- */

/*
 * Compares the Slurm this plugin was built against with the one that loaded
 * it. 0 if they match; else logs one error naming both versions and returns
 * -EPROTO. what: the plugin, for the message.
 */
int isle__version_check(const char *what);

#endif /* ISLE_COMPAT_H */
