/*
 * isle_nodes.c - Slurm nodes that come and go while slurmctld runs.
 *
 * The cluster file describes the hardware; Slurm's node table says which of
 * it is configured now. Dynamic nodes (`scontrol create node`, `scontrol
 * delete node`) change the table without a reconfigure, and a reused node
 * index can name another node. The maps of isle_model.c are patched here
 * by name, so a node the file describes takes part in placement as soon as
 * it exists and a deleted one stops doing so.
 */
#include <string.h>

#include "isle_compat.h"

#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

char *isle__topo_name;

static int sync_active = -1; /* active_node_record_count at the last sync */

/* Sets or clears Slurm node s in the group bitmaps of model node m. */
static void _groups_set(int m, int s, bool on)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;
	const struct isle_node *n = &t->nodes[m];
	bool *seen;
	int *stack, depth = 0;

	for (int i = 0; i < t->nislands; i++) {
		for (int k = 0; k < t->islands[i].nnodes; k++) {
			if (t->islands[i].nodes[k] != m)
				continue;
			if (on)
				bit_set(c->islands[i].nodes, s);
			else
				bit_clear(c->islands[i].nodes, s);
		}
	}
	if (n->rack >= 0 && n->rack < t->nracks) {
		if (on)
			bit_set(c->racks[n->rack].nodes, s);
		else
			bit_clear(c->racks[n->rack].nodes, s);
	}
	/* Every switch the node is cabled to, and all above them; the
	 * visited set keeps a cabling loop in the file from looping here. */
	seen = xcalloc(MAX(t->nswitches, 1), sizeof(bool));
	stack = xcalloc(MAX(t->nswitches, 1), sizeof(int));
	for (int sw = 0; sw < t->nswitches; sw++) {
		for (int k = 0; k < t->switches[sw].nnodes; k++) {
			if (t->switches[sw].nodes[k] == m && !seen[sw]) {
				seen[sw] = true;
				stack[depth++] = sw;
			}
		}
	}
	while (depth > 0) {
		int sw = stack[--depth];

		if (on)
			bit_set(c->switches[sw].nodes, s);
		else
			bit_clear(c->switches[sw].nodes, s);
		for (int k = 0; k < t->switches[sw].nup; k++) {
			int up = t->switches[sw].up[k];

			if (up >= 0 && up < t->nswitches && !seen[up]) {
				seen[up] = true;
				stack[depth++] = up;
			}
		}
	}
	xfree(seen);
	xfree(stack);
}

static void _unmap(int s)
{
	struct isle__ctx *c = &isle__ctx;
	int m = c->slurm2model[s];

	if (m < 0)
		return;
	_groups_set(m, s, false);
	if (c->model2slurm[m] == s)
		c->model2slurm[m] = -1;
	c->slurm2model[s] = -1;
	bit_clear(c->model_nodes, s);
}

static void _map(int s, int m)
{
	struct isle__ctx *c = &isle__ctx;

	if (c->slurm2model[s] == m)
		return;
	_unmap(s);
	if (c->model2slurm[m] >= 0)
		_unmap(c->model2slurm[m]);
	c->slurm2model[s] = m;
	c->model2slurm[m] = s;
	bit_set(c->model_nodes, s);
	_groups_set(m, s, true);
}

/* Maps Slurm index s by its node's current name. ctx.lock held. */
static int _sync_one(int s)
{
	struct isle__ctx *c = &isle__ctx;
	node_record_t *node_ptr;
	int m;

	if (s < 0 || s >= c->nslurm || s >= node_record_count)
		return -1;
	node_ptr = node_record_table_ptr[s];
	m = node_ptr ? isle_topo_find_node(c->topo, node_ptr->name) : -1;
	if (m < 0) {
		_unmap(s);
		return -1;
	}
	if (c->slurm2model[s] != m) {
		info("isle: node %s (index %d) now takes part in placement",
		     node_ptr->name, s);
		_map(s, m);
	}
	return m;
}

void isle__nodes_sync(bool force)
{
	struct isle__ctx *c = &isle__ctx;

	if (!c->topo || !c->slurm2model)
		return;
	if (!force && sync_active == active_node_record_count)
		return;
	slurm_mutex_lock(&c->lock);
	for (int s = 0; s < c->nslurm && s < node_record_count; s++) {
		int was = c->slurm2model[s];

		if (_sync_one(s) < 0 && was >= 0)
			info("isle: Slurm node index %d (%s in the cluster "
			     "file) is gone; it no longer takes part in "
			     "placement",
			     s, c->topo->nodes[was].name);
	}
	if (node_record_count > c->nslurm)
		debug("isle: %d node slots beyond the %d known at the last "
		      "reconfigure get default selection",
		      node_record_count - c->nslurm, c->nslurm);
	sync_active = active_node_record_count;
	slurm_mutex_unlock(&c->lock);
}

/* True if name is a rack, island or switch that holds model node m. */
static bool _unit_holds(const char *name, int s)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;

	for (int i = 0; i < t->nracks; i++)
		if (!xstrcmp(c->racks[i].name, name))
			return bit_test(c->racks[i].nodes, s);
	for (int i = 0; i < t->nislands; i++)
		if (!xstrcmp(c->islands[i].name, name))
			return bit_test(c->islands[i].nodes, s);
	for (int i = 0; i < t->nswitches; i++)
		if (!xstrcmp(c->switches[i].name, name))
			return bit_test(c->switches[i].nodes, s);
	return false;
}

int isle__nodes_add_rm(node_record_t *node_ptr, const char *unit)
{
	struct isle__ctx *c = &isle__ctx;
	char *copy = NULL, *tok, *save = NULL;
	int m;

	if (!c->topo || !c->slurm2model)
		return SLURM_SUCCESS;
	slurm_mutex_lock(&c->lock);
	m = _sync_one(node_ptr->index);
	if (!unit || !unit[0])
		goto out;
	if (m < 0) {
		error("isle: node %s is not in cluster file %s (or beyond the "
		      "node table known at the last reconfigure); it gets "
		      "default selection until it is described there",
		      node_ptr->name, c->path);
		goto out;
	}
	copy = xstrdup(unit);
	for (tok = strtok_r(copy, ":", &save); tok;
	     tok = strtok_r(NULL, ":", &save)) {
		if (_unit_holds(tok, node_ptr->index))
			continue;
		error("isle: node %s: topology unit %s is not a rack, island "
		      "or switch of this node in %s; the cluster file decides "
		      "where a node is",
		      node_ptr->name, tok, c->path);
		break;
	}
out:
	slurm_mutex_unlock(&c->lock);
	xfree(copy);
	return SLURM_SUCCESS;
}

char *isle__nodes_unit(int s)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;
	const struct isle_node *n;
	char *out = NULL;
	int m, isl, leaf = -1;

	if (!t || !c->slurm2model || s < 0 || s >= c->nslurm)
		return NULL;
	if ((m = c->slurm2model[s]) < 0)
		return NULL;
	n = &t->nodes[m];
	isl = n->domain >= 0 ? n->domain : n->first_island;
	for (int sw = 0; sw < t->nswitches && leaf < 0; sw++) {
		if (t->switches[sw].level != ISLE_SW_LEAF)
			continue;
		for (int k = 0; k < t->switches[sw].nnodes; k++)
			if (t->switches[sw].nodes[k] == m)
				leaf = sw;
	}
	xstrfmtcat(out, "%s:%s:%s",
		   (n->rack >= 0 && n->rack < t->nracks)
		       ? t->racks[n->rack].name
		       : "-",
		   (isl >= 0 && isl < t->nislands) ? t->islands[isl].name : "-",
		   leaf >= 0 ? t->switches[leaf].name : "-");
	return out;
}

int isle__nodes_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
		     uint32_t *size)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;
	int *nodes, *order;
	uint32_t count, k = 0;
	int rc = SLURM_SUCCESS;

	*node_rank = NULL;
	*size = 0;
	if (!node_bitmap || !(count = bit_set_count(node_bitmap)))
		return SLURM_SUCCESS;
	if (!t) /* no model: no ranks, Slurm keeps hostlist order */
		return SLURM_SUCCESS;
	nodes = xcalloc(count, sizeof(*nodes));
	order = xcalloc(count, sizeof(*order));
	for (int i = 0;
	     (i = bit_ffs_from_bit(node_bitmap, i)) >= 0 && k < count; i++, k++)
		nodes[k] =
		    (c->slurm2model && i < c->nslurm) ? c->slurm2model[i] : -1;
	if (isle_topo_rank_order(t, nodes, count, order)) {
		rc = SLURM_ERROR;
		goto out;
	}
	*node_rank = xcalloc(count, sizeof(**node_rank));
	for (uint32_t r = 0; r < count; r++)
		(*node_rank)[order[r]] = r + 1;
	*size = count;
out:
	xfree(nodes);
	xfree(order);
	return rc;
}
