/*
 * plan_emit.c - the files of a job's run directory (ISLE_RUNDIR_*):
 *   the plan       docs/plan.md, through proto's isle_plan_write (read by
 *                  proto's isle_plan_read in the shim; the unit tests check
 *                  it with that reader)
 *   NCCL env       NCCL settings for this node's rails
 * The NCCL XML is topology's isle_emit_nccl_xml() of the node.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/*
 * The plan as proto's struct isle_plan, written by proto's one writer.
 * Strings are borrowed from p and the model: the plan is not destroyed.
 */
int isle__plan_emit_json(const struct isle__plan *p, FILE *f)
{
	const isle_topo *t = p->topo;
	struct isle_plan out = {
	    .version = ISLE_PLAN_VERSION,
	    .job_id = p->job_id,
	    .nranks = p->nranks,
	    .nlevels = p->nlevels,
	};
	int rc;

	out.ranks = calloc(p->nranks ? p->nranks : 1, sizeof(*out.ranks));
	if (!out.ranks)
		return -ENOMEM;
	for (int r = 0; r < p->nranks; r++) {
		const struct isle__plan_rank *pr = &p->ranks[r];
		const struct isle_node *n = &t->nodes[pr->node];
		const struct isle_gpu *g = &n->gpus[pr->gpu];

		out.ranks[r] = (struct isle_plan_rank){
		    .node = (char *)n->name,
		    .gpu = pr->gpu,
		    .island = (char *)t->islands[g->island].name,
		    .leaf = (char *)pr->leaf,
		    .nic = (g->nic >= 0 && g->nic < n->nnics)
			       ? (char *)n->nics[g->nic].name
			       : NULL,
		};
	}
	for (int i = 0; i < p->nlevels; i++) {
		const struct isle__plan_level *l = &p->levels[i];

		out.levels[i] = (struct isle_plan_level){
		    .name = (char *)l->name,
		    .scope = l->scope,
		    .bw_gbps = l->bw_gbps,
		    .lat_us = l->lat_us,
		    .codec = l->codec,
		};
	}
	rc = isle_plan_write(&out, f);
	free(out.ranks);
	return rc;
}

/* Bit n of the result: NIC n of the local node serves a granted GPU. */
static uint64_t local_nics(const struct isle__plan *p)
{
	const struct isle_node *n = &p->topo->nodes[p->local_node];
	uint64_t m = 0;

	for (int g = 0; g < n->ngpus; g++)
		if ((p->local_gpus & (1ULL << g)) && n->gpus[g].nic >= 0 &&
		    n->gpus[g].nic < 64)
			m |= 1ULL << n->gpus[g].nic;
	/* Locality unknown: every NIC of the node. */
	if (!m)
		for (int i = 0; i < n->nnics && i < 64; i++)
			m |= 1ULL << i;
	return m;
}

/*
 * Rail-optimized node: its NICs carry distinct rails or reach distinct
 * switches. Then rings must stay on one rail (NCCL_CROSS_NIC=0), else NCCL
 * may pair any NICs.
 */
static int rail_optimized(const struct isle_node *n, uint64_t nics)
{
	int rail = -2, sw = -2;

	for (int i = 0; i < n->nnics && i < 64; i++) {
		if (!(nics & (1ULL << i)))
			continue;
		if (rail != -2 &&
		    (n->nics[i].rail != rail || n->nics[i].sw != sw))
			return 1;
		rail = n->nics[i].rail;
		sw = n->nics[i].sw;
	}
	return 0;
}

/* 1 if the job uses NVLink between this node and another one. */
static int multi_node_nvlink(const struct isle__plan *p)
{
	const isle_topo *t = p->topo;
	const struct isle_node *ln = &t->nodes[p->local_node];

	if (ln->domain < 0)
		return 0;
	for (int r = 0; r < p->nranks; r++)
		if (p->ranks[r].node != p->local_node &&
		    t->nodes[p->ranks[r].node].domain == ln->domain)
			return 1;
	return 0;
}

int isle__plan_emit_nccl_env(const struct isle__plan *p, const char *topo_file,
			     FILE *f)
{
	const struct isle_node *n = &p->topo->nodes[p->local_node];
	uint64_t nics = local_nics(p);
	const char *sep = "";

	/* Each name becomes part of a NAME=VALUE line the task exports: the
	 * loaders checked them, and a model built any other way is checked
	 * here (a newline would be a line of its own). */
	if (isle_name_check(n->name))
		return -EINVAL;
	for (int i = 0; i < n->nnics && i < 64; i++)
		if ((nics & (1ULL << i)) && isle_name_check(n->nics[i].name))
			return -EINVAL;
	fprintf(f,
		"# NCCL settings for job %s on %s, written by isle-agent.\n"
		"# The SPANK plugin exports them unless the job already "
		"sets them.\n",
		p->job_id, n->name);
	if (topo_file)
		fprintf(f, "NCCL_TOPO_FILE=%s\n", topo_file);
	if (!nics) {
		fprintf(f, "NCCL_IB_DISABLE=1\n");
	} else {
		/* "=" makes NCCL match the names exactly (mlx5_1 != mlx5_10).
		 */
		fprintf(f, "NCCL_IB_HCA==");
		for (int i = 0; i < n->nnics && i < 64; i++)
			if (nics & (1ULL << i)) {
				fprintf(f, "%s%s", sep, n->nics[i].name);
				sep = ",";
			}
		fprintf(f, "\nNCCL_CROSS_NIC=%d\n",
			rail_optimized(n, nics) ? 0 : 1);
	}
	if (multi_node_nvlink(p))
		fprintf(f, "NCCL_MNNVL_ENABLE=1\n");
	return ferror(f) ? -EIO : 0;
}
