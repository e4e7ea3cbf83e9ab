/*
 * isle_compat.c - the topology plugin entry points of the Slurm release
 * isle is built against. The only file that tests SLURM_VERSION_NUMBER.
 *
 * 24.11: one topology per controller, no context argument, topology_p_
 *        topology_{free,pack,unpack,print}.
 * 25.11: a topology_ctx_t per topology (topology.yaml may name several),
 *        topology_p_topoinfo_*, add_rm_node (dynamic nodes),
 *        get_topology_str and per-job topology info kept in the job's
 *        saved state.
 * 26.05: 25.11's interface plus eval_node and allow_one_node (cons_tres's
 *        one-node path) and get_rank (task layout).
 * docs/slurm-releases.md has the whole table.
 *
 * isle keeps one model per controller; from 25.11 a second topology naming
 * topology/isle is refused at build_config with a message.
 */
#include <string.h>

#include "isle_compat.h"

#include "isle_jobinfo.h"
#include "isle_model.h"
#include "isle_topoinfo.h"
#include "topology_isle.h"

#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/plugins/topology/common/common_topo.h"

ISLE_EXPORT int init(void)
{
	return isle__topo_init();
}

ISLE_EXPORT int fini(void)
{
	return isle__topo_fini();
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)

const bool isle__compat_has_jobinfo = true;

/* As on 24.11 (TOPO_DATA_EXCLUSIVE_TOPO = 0): no --exclusive=topo. */
ISLE_EXPORT const bool supports_exclusive_topo = false;

static topology_ctx_t *isle_tctx; /* the topology isle serves */

void isle__compat_set_jobinfo(job_record_t *job_ptr, struct isle__jobinfo *ji)
{
	extern const uint32_t plugin_id;

	if (!ji)
		return;
	/* The interface clears topo_jobinfo before each evaluation; a
	 * second decision in one evaluation replaces the first. */
	if (job_ptr->topo_jobinfo &&
	    job_ptr->topo_jobinfo->plugin_id == plugin_id) {
		isle__jobinfo_free(job_ptr->topo_jobinfo->data);
		job_ptr->topo_jobinfo->data = ji;
		return;
	}
	if (job_ptr->topo_jobinfo) {
		isle__jobinfo_free(ji);
		return;
	}
	job_ptr->topo_jobinfo = xmalloc(sizeof(*job_ptr->topo_jobinfo));
	job_ptr->topo_jobinfo->plugin_id = plugin_id;
	job_ptr->topo_jobinfo->data = ji;
}

ISLE_EXPORT int topology_p_add_rm_node(node_record_t *node_ptr, char *unit,
				       topology_ctx_t *tctx)
{
	if (isle_tctx && tctx != isle_tctx)
		return SLURM_SUCCESS;
	return isle__topo_add_rm_node(node_ptr, unit);
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
ISLE_EXPORT bool topology_p_allow_one_node(void *tctx)
{
	/* One-node jobs go through eval_nodes too: the engine picks the
	 * node whose free GPUs share an island and fragment least. */
	return false;
}

ISLE_EXPORT int topology_p_eval_node(topology_eval_t *topo_eval, int node_inx)
{
	return common_test_node(topo_eval, node_inx);
}

ISLE_EXPORT int topology_p_get_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
				    uint32_t *size, void *tctx)
{
	return isle__topo_get_rank(node_bitmap, node_rank, size);
}
#endif /* 26.05: 25.11 has no one-node path and lays tasks out by node_rank */

/*
 * `scontrol show node` prints a node's topology_str: give each node of the
 * model "NAME:RACK:ISLAND:LEAF" unless the admin set one for another
 * topology. Runs under slurmctld's config write lock.
 */
static void _set_node_strs(topology_ctx_t *tctx)
{
	node_record_t *node_ptr;
	char *prefix = xstrdup_printf("%s:", tctx->name);

	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		char *unit;

		if (node_ptr->topology_str &&
		    xstrncmp(node_ptr->topology_str, prefix, strlen(prefix)))
			continue;
		if (!(unit = isle__topo_node_unit(node_ptr->index)))
			continue;
		xfree(node_ptr->topology_str);
		node_ptr->topology_str = xstrdup_printf("%s%s", prefix, unit);
		xfree(unit);
	}
	xfree(prefix);
}

ISLE_EXPORT int topology_p_build_config(topology_ctx_t *tctx)
{
	int rc;

	if (isle_tctx && isle_tctx != tctx) {
		error("isle: topology %s also names topology/isle; one isle "
		      "topology per controller, %s is served by %s",
		      tctx->name, tctx->name, isle_tctx->name);
		return SLURM_SUCCESS;
	}
	isle_tctx = tctx;
	tctx->plugin_ctx = &isle__ctx;
	rc = isle__topo_build_config(tctx->name);
	if (running_in_slurmctld())
		_set_node_strs(tctx);
	return rc;
}

ISLE_EXPORT int topology_p_destroy_config(topology_ctx_t *tctx)
{
	if (tctx != isle_tctx)
		return SLURM_SUCCESS;
	tctx->plugin_ctx = NULL;
	isle_tctx = NULL;
	return isle__topo_destroy_config();
}

ISLE_EXPORT int topology_p_eval_nodes(topology_eval_t *topo_eval)
{
	return isle__topo_eval_nodes(topo_eval);
}

ISLE_EXPORT int topology_p_whole_topo(bitstr_t *node_mask, void *tctx)
{
	return isle__topo_whole_topo(node_mask);
}

ISLE_EXPORT bitstr_t *topology_p_get_bitmap(char *name, void *tctx)
{
	return isle__topo_get_bitmap(name);
}

ISLE_EXPORT bool topology_p_generate_node_ranking(topology_ctx_t *tctx)
{
	return isle__topo_node_ranking();
}

ISLE_EXPORT int topology_p_get_node_addr(char *node_name, char **paddr,
					 char **ppattern, void *tctx)
{
	return isle__topo_get_node_addr(node_name, paddr, ppattern);
}

ISLE_EXPORT int topology_p_split_hostlist(hostlist_t *hl, hostlist_t ***sp_hl,
					  int *count, uint16_t tree_width,
					  void *tctx)
{
	return isle__topo_split_hostlist(hl, sp_hl, count, tree_width);
}

ISLE_EXPORT int topology_p_get(topology_data_t type, void *data, void *tctx)
{
	return isle__topo_get(type, data);
}

ISLE_EXPORT int topology_p_topoinfo_free(void *topoinfo_ptr)
{
	isle__topoinfo_free(topoinfo_ptr);
	return SLURM_SUCCESS;
}

ISLE_EXPORT int topology_p_topoinfo_pack(void *topoinfo_ptr, buf_t *buffer,
					 uint16_t protocol_version)
{
	return isle__topoinfo_pack(topoinfo_ptr, buffer, protocol_version);
}

ISLE_EXPORT int topology_p_topoinfo_print(void *topoinfo_ptr, char *nodes_list,
					  char *unit, char **out)
{
	return isle__topoinfo_print(topoinfo_ptr, nodes_list, unit, out);
}

ISLE_EXPORT int topology_p_topoinfo_unpack(void **topoinfo_pptr, buf_t *buffer,
					   uint16_t protocol_version)
{
	return isle__topoinfo_unpack(topoinfo_pptr, buffer, protocol_version);
}

ISLE_EXPORT void topology_p_jobinfo_free(void *topo_jobinfo)
{
	isle__jobinfo_free(topo_jobinfo);
}

ISLE_EXPORT void topology_p_jobinfo_pack(void *topo_jobinfo, buf_t *buffer,
					 uint16_t protocol_version)
{
	isle__jobinfo_pack(topo_jobinfo, buffer, protocol_version);
}

ISLE_EXPORT int topology_p_jobinfo_unpack(void **topo_jobinfo, buf_t *buffer,
					  uint16_t protocol_version)
{
	return isle__jobinfo_unpack(topo_jobinfo, buffer, protocol_version);
}

ISLE_EXPORT int topology_p_jobinfo_get(topology_jobinfo_type_t type,
				       void *topo_jobinfo, void *data)
{
	return ESLURM_NOT_SUPPORTED; /* segment lists are topology/block's */
}

ISLE_EXPORT uint32_t topology_p_get_fragmentation(bitstr_t *node_mask,
						  void *tctx)
{
	return isle__topo_get_fragmentation(node_mask);
}

/* scontrol show node: Topology=NAME:RACK:ISLAND:LEAF */
ISLE_EXPORT void topology_p_get_topology_str(node_record_t *node_ptr,
					     char **topology_str_ptr,
					     topology_ctx_t *tctx)
{
	char *unit;

	if (tctx != isle_tctx ||
	    !(unit = isle__topo_node_unit(node_ptr->index)))
		return;
	xstrfmtcat(*topology_str_ptr, "%s%s:%s", *topology_str_ptr ? "," : "",
		   tctx->name, unit);
	xfree(unit);
}

#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0) &&                  \
    SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25, 0, 0)

const bool isle__compat_has_jobinfo = false;

void isle__compat_set_jobinfo(job_record_t *job_ptr, struct isle__jobinfo *ji)
{
	isle__jobinfo_free(ji); /* no per-job topology info in 24.11 */
}

ISLE_EXPORT int topology_p_build_config(void)
{
	return isle__topo_build_config("default");
}

ISLE_EXPORT int topology_p_eval_nodes(topology_eval_t *topo_eval)
{
	return isle__topo_eval_nodes(topo_eval);
}

ISLE_EXPORT int topology_p_whole_topo(bitstr_t *node_mask)
{
	return isle__topo_whole_topo(node_mask);
}

ISLE_EXPORT bitstr_t *topology_p_get_bitmap(char *name)
{
	return isle__topo_get_bitmap(name);
}

ISLE_EXPORT bool topology_p_generate_node_ranking(void)
{
	return isle__topo_node_ranking();
}

ISLE_EXPORT int topology_p_get_node_addr(char *node_name, char **paddr,
					 char **ppattern)
{
	return isle__topo_get_node_addr(node_name, paddr, ppattern);
}

ISLE_EXPORT int topology_p_split_hostlist(hostlist_t *hl, hostlist_t ***sp_hl,
					  int *count, uint16_t tree_width)
{
	return isle__topo_split_hostlist(hl, sp_hl, count, tree_width);
}

ISLE_EXPORT int topology_p_topology_free(void *topoinfo_ptr)
{
	isle__topoinfo_free(topoinfo_ptr);
	return SLURM_SUCCESS;
}

ISLE_EXPORT int topology_p_get(topology_data_t type, void *data)
{
	return isle__topo_get(type, data);
}

ISLE_EXPORT int topology_p_topology_pack(void *topoinfo_ptr, buf_t *buffer,
					 uint16_t protocol_version)
{
	return isle__topoinfo_pack(topoinfo_ptr, buffer, protocol_version);
}

ISLE_EXPORT int topology_p_topology_print(void *topoinfo_ptr, char *nodes_list,
					  char **out)
{
	return isle__topoinfo_print(topoinfo_ptr, nodes_list, NULL, out);
}

ISLE_EXPORT int topology_p_topology_unpack(void **topoinfo_pptr, buf_t *buffer,
					   uint16_t protocol_version)
{
	return isle__topoinfo_unpack(topoinfo_pptr, buffer, protocol_version);
}

ISLE_EXPORT uint32_t topology_p_get_fragmentation(bitstr_t *node_mask)
{
	return isle__topo_get_fragmentation(node_mask);
}

#else
#error "topology/isle supports Slurm 24.11, 25.11 and 26.05, not " SLURM_VERSION_STRING
#endif
