/*
 * isle_topoinfo.c - what `scontrol show topology` prints: a snapshot of the
 * model's racks, islands and switches with their GPU counts, built in
 * slurmctld, packed to scontrol and printed there.
 *
 * The pack format is the entries' fields in order; scontrol and slurmctld
 * run the same plugin build, as Slurm requires.
 */
#include <inttypes.h>

#include "isle_topoinfo.h"

#include "isle_model.h"
#include "topology_isle.h"

#include "slurm/slurm_errno.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

static void _rec_counts(struct isle__topoinfo_entry *r, bitstr_t *nodes,
			const uint64_t *free_mask, const int *totals)
{
	for (int i = 0; (i = bit_ffs_from_bit(nodes, i)) >= 0; i++) {
		r->gpus += totals[i];
		r->free_gpus += __builtin_popcountll(free_mask[i]);
	}
	r->nodes = bitmap2node_name(nodes);
}

/* Island GPU counts follow the island's members, not whole nodes. */
static void _island_counts(struct isle__topoinfo_entry *r, const isle_topo *t,
			   const struct isle_island *isl,
			   const uint64_t *free_mask)
{
	for (int k = 0; k < isl->ngpus; k++) {
		int s = isle__ctx.model2slurm[isl->members[k].node];

		r->gpus++;
		if (s >= 0 && (free_mask[s] >> isl->members[k].gpu) & 1)
			r->free_gpus++;
	}
	(void)t;
}

struct isle__topoinfo *isle__topoinfo_build(void)
{
	struct isle__ctx *c = &isle__ctx;
	struct isle__topoinfo *ti = xmalloc(sizeof(*ti));
	const isle_topo *t;
	uint64_t *free_mask = NULL;
	int *totals = NULL;
	struct isle__topoinfo_entry *r;
	int n = 0;

	slurm_mutex_lock(&c->lock);
	t = c->topo;
	ti->count = 2 + (t ? t->nracks + t->nislands + t->nswitches : 0);
	ti->recs = xcalloc(ti->count, sizeof(*ti->recs));

	r = &ti->recs[n++];
	r->kind = ISLE_ENTRY_SUMMARY;
	r->name = xstrdup(t && t->name ? t->name : "isle");
	r->nodes = xstrdup(c->path);
	if (!t) {
		r->children = xstrdup(c->load_error ? c->load_error
						    : "no cluster file loaded");
		goto out;
	}

	free_mask = xcalloc(MAX(node_record_count, 1), sizeof(uint64_t));
	totals = xcalloc(MAX(node_record_count, 1), sizeof(int));
	for (int i = 0; i < node_record_count && i < c->nslurm; i++) {
		if (!bit_test(c->model_nodes, i))
			continue;
		free_mask[i] = isle__model_node_gpus(i, &totals[i]);
		r->gpus += totals[i];
		r->free_gpus += __builtin_popcountll(free_mask[i]);
	}

	for (int i = 0; i < t->nracks; i++) {
		r = &ti->recs[n++];
		r->kind = ISLE_ENTRY_RACK;
		r->name = xstrdup(c->racks[i].name);
		_rec_counts(r, c->racks[i].nodes, free_mask, totals);
	}
	for (int i = 0; i < t->nislands; i++) {
		r = &ti->recs[n++];
		r->kind = ISLE_ENTRY_ISLAND;
		r->level = t->islands[i].multi_node;
		r->name = xstrdup(c->islands[i].name);
		r->nodes = bitmap2node_name(c->islands[i].nodes);
		_island_counts(r, t, &t->islands[i], free_mask);
	}
	for (int i = 0; i < t->nswitches; i++) {
		const struct isle_switch *sw = &t->switches[i];
		hostlist_t *hl = NULL;

		r = &ti->recs[n++];
		r->kind = ISLE_ENTRY_SWITCH;
		r->level = sw->level;
		r->name = xstrdup(sw->name);
		_rec_counts(r, c->switches[i].nodes, free_mask, totals);
		for (int k = 0; k < sw->ndown; k++) {
			if (!hl)
				hl = hostlist_create(NULL);
			hostlist_push_host(hl, t->switches[sw->down[k]].name);
		}
		if (hl) {
			r->children = hostlist_ranged_string_xmalloc(hl);
			hostlist_destroy(hl);
		}
	}
out:
	r = &ti->recs[n++];
	r->kind = ISLE_ENTRY_EVAL;
	r->name = xstrdup("eval");
	r->children = isle__topo_eval_stats();
	ti->count = n;
	slurm_mutex_unlock(&c->lock);
	xfree(free_mask);
	xfree(totals);
	return ti;
}

void isle__topoinfo_free(struct isle__topoinfo *ti)
{
	if (!ti)
		return;
	for (uint32_t i = 0; i < ti->count; i++) {
		xfree(ti->recs[i].name);
		xfree(ti->recs[i].nodes);
		xfree(ti->recs[i].children);
	}
	xfree(ti->recs);
	xfree(ti);
}

int isle__topoinfo_pack(void *topoinfo_ptr, buf_t *buffer,
			uint16_t protocol_version)
{
	struct isle__topoinfo *ti = topoinfo_ptr;

	pack32(ti->count, buffer);
	for (uint32_t i = 0; i < ti->count; i++) {
		struct isle__topoinfo_entry *r = &ti->recs[i];

		pack16(r->kind, buffer);
		pack16(r->level, buffer);
		packstr(r->name, buffer);
		packstr(r->nodes, buffer);
		packstr(r->children, buffer);
		pack32(r->gpus, buffer);
		pack32(r->free_gpus, buffer);
	}
	return SLURM_SUCCESS;
}

int isle__topoinfo_unpack(void **topoinfo_pptr, buf_t *buffer,
			  uint16_t protocol_version)
{
	struct isle__topoinfo *ti = xmalloc(sizeof(*ti));

	*topoinfo_pptr = ti;
	safe_unpack32(&ti->count, buffer);
	safe_xcalloc(ti->recs, ti->count, sizeof(*ti->recs));
	for (uint32_t i = 0; i < ti->count; i++) {
		struct isle__topoinfo_entry *r = &ti->recs[i];

		safe_unpack16(&r->kind, buffer);
		safe_unpack16(&r->level, buffer);
		safe_unpackstr(&r->name, buffer);
		safe_unpackstr(&r->nodes, buffer);
		safe_unpackstr(&r->children, buffer);
		safe_unpack32(&r->gpus, buffer);
		safe_unpack32(&r->free_gpus, buffer);
	}
	return SLURM_SUCCESS;

unpack_error:
	isle__topoinfo_free(ti);
	*topoinfo_pptr = NULL;
	return SLURM_ERROR;
}

static void _print_rec(const struct isle__topoinfo_entry *r, char **out)
{
	static const char *const sw_level[] = {"leaf", "spine", "core",
					       "unknown"};

	switch (r->kind) {
	case ISLE_ENTRY_SUMMARY:
		if (r->children) {
			xstrfmtcat(*out,
				   "Topology=isle File=%s Status=fallback "
				   "Error=\"%s\"\n",
				   r->nodes, r->children);
			return;
		}
		xstrfmtcat(*out,
			   "Topology=isle Cluster=%s File=%s Status=ok GPUs=%u "
			   "FreeGPUs=%u\n",
			   r->name, r->nodes, r->gpus, r->free_gpus);
		return;
	case ISLE_ENTRY_RACK:
		xstrfmtcat(*out, "RackName=%s", r->name);
		break;
	case ISLE_ENTRY_ISLAND:
		xstrfmtcat(*out, "IslandName=%s Type=%s", r->name,
			   r->level ? "nvlink-domain" : "nvlink-node");
		break;
	case ISLE_ENTRY_SWITCH:
		xstrfmtcat(*out, "SwitchName=%s Level=%s", r->name,
			   sw_level[MIN(r->level, 3)]);
		if (r->children)
			xstrfmtcat(*out, " Switches=%s", r->children);
		break;
	case ISLE_ENTRY_EVAL:
		xstrfmtcat(*out, "IsleEval %s\n", r->children);
		return;
	default:
		return;
	}
	xstrfmtcat(*out, " Nodes=%s GPUs=%u FreeGPUs=%u\n",
		   r->nodes ? r->nodes : "", r->gpus, r->free_gpus);
}

static bool _rec_matches(const struct isle__topoinfo_entry *r,
			 const char *filter)
{
	hostset_t *hs;
	bool match;

	if (!xstrcmp(r->name, filter))
		return true;
	if (r->kind == ISLE_ENTRY_SUMMARY || !r->nodes || !r->nodes[0])
		return false;
	if (!(hs = hostset_create(r->nodes)))
		return false;
	match = hostset_within(hs, filter);
	hostset_destroy(hs);
	return match;
}

/* scontrol show topology [NAME] [unit=NAME]: runs in scontrol. */
int isle__topoinfo_print(void *topoinfo_ptr, char *nodes_list, const char *unit,
			 char **out)
{
	struct isle__topoinfo *ti = topoinfo_ptr;
	int matched = 0;

	*out = NULL;
	for (uint32_t i = 0; ti && i < ti->count; i++) {
		if (nodes_list && nodes_list[0] &&
		    !_rec_matches(&ti->recs[i], nodes_list))
			continue;
		if (unit && unit[0] && xstrcmp(ti->recs[i].name, unit))
			continue;
		_print_rec(&ti->recs[i], out);
		matched++;
	}
	if (!matched && ((nodes_list && nodes_list[0]) || (unit && unit[0])))
		error("isle topology has no island, rack, switch or node named "
		      "%s",
		      (unit && unit[0]) ? unit : nodes_list);
	return SLURM_SUCCESS;
}
