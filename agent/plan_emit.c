/*
 * plan_emit.c - the files of a job's run directory.
 *
 *   plan.json      docs/plan.md, version 1 (read by comm_shim's
 *                  isle_plan_load; the unit tests check it with that reader)
 *   nccl.env       NCCL settings for this node's rails
 * The third, nccl-topo.xml, is topology's isle_emit_nccl_xml() of the node.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "plan.h"

static int add(json_object *o, const char *key, json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_object_add(o, key, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static json_object *rank_json(const struct isle__plan *p, int r)
{
	const isle_topo *t = p->topo;
	const struct isle__plan_rank *pr = &p->ranks[r];
	const struct isle_node *n = &t->nodes[pr->node];
	const struct isle_gpu *g = &n->gpus[pr->gpu];
	json_object *o = json_object_new_object();
	int rc;

	if (!o)
		return NULL;
	rc = add(o, "rank", json_object_new_int(r));
	rc = rc ?: add(o, "node", json_object_new_string(n->name));
	rc = rc ?: add(o, "gpu", json_object_new_int(pr->gpu));
	rc = rc
		 ?: add(o, "island",
			json_object_new_string(t->islands[g->island].name));
	rc = rc ?: add(o, "leaf", json_object_new_string(pr->leaf));
	if (!rc && g->nic >= 0 && g->nic < n->nnics)
		rc =
		    add(o, "nic", json_object_new_string(n->nics[g->nic].name));
	if (rc) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static json_object *level_json(const struct isle__plan_level *l)
{
	json_object *o = json_object_new_object();
	int rc;

	if (!o)
		return NULL;
	rc = add(o, "name", json_object_new_string(l->name));
	rc = rc ?: add(o, "scope", json_object_new_string(l->scope));
	rc = rc ?: add(o, "bw_gbps", json_object_new_double(l->bw_gbps));
	rc = rc ?: add(o, "lat_us", json_object_new_double(l->lat_us));
	rc = rc ?: add(o, "codec", json_object_new_string(l->codec));
	if (rc) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* One rank or level per line, as in docs/plan.md: readable at 10,000 ranks. */
static int emit_array(FILE *f, const char *key, json_object **items, int n,
		      int last)
{
	fprintf(f, "  \"%s\": [\n", key);
	for (int i = 0; i < n; i++)
		fprintf(f, "    %s%s\n",
			json_object_to_json_string_ext(
			    items[i], JSON_C_TO_STRING_SPACED |
					  JSON_C_TO_STRING_NOSLASHESCAPE),
			i + 1 < n ? "," : "");
	fprintf(f, "  ]%s\n", last ? "" : ",");
	return ferror(f) ? -EIO : 0;
}

int isle__plan_emit_json(const struct isle__plan *p, FILE *f)
{
	json_object **items = calloc(p->nranks + p->nlevels, sizeof(*items));
	json_object *id = json_object_new_string(p->job_id);
	int rc = -ENOMEM;

	if (!items || !id)
		goto out;
	for (int r = 0; r < p->nranks; r++)
		if (!(items[r] = rank_json(p, r)))
			goto out;
	for (int i = 0; i < p->nlevels; i++)
		if (!(items[p->nranks + i] = level_json(&p->levels[i])))
			goto out;
	fprintf(f, "{\n  \"isle_plan\": 1,\n  \"job_id\": %s,\n",
		json_object_to_json_string(id));
	rc = emit_array(f, "ranks", items, p->nranks, 0);
	rc = rc ?: emit_array(f, "levels", items + p->nranks, p->nlevels, 1);
	fprintf(f, "}\n");
	if (!rc && ferror(f))
		rc = -EIO;
out:
	for (int i = 0; items && i < p->nranks + p->nlevels; i++)
		json_object_put(items[i]);
	free(items);
	json_object_put(id);
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
