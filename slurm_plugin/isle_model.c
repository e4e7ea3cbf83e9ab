/*
 * isle_model.c - the cluster file and its mapping onto Slurm's nodes.
 *
 * The model indexes nodes by its own order; Slurm by node_record_table_ptr,
 * which can be reordered on every reconfigure. The maps are rebuilt at each
 * build_config so that nothing else needs to care.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "isle_plugin.h"

#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/gres.h"

struct isle__ctx isle__ctx = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static void _group_free(struct isle__group *g, int n)
{
	if (!g)
		return;
	for (int i = 0; i < n; i++) {
		xfree(g[i].name);
		FREE_NULL_BITMAP(g[i].nodes);
	}
	xfree(g);
}

void isle__model_free(void)
{
	struct isle__ctx *c = &isle__ctx;
	int nisl = c->topo ? c->topo->nislands : 0;
	int nracks = c->topo ? c->topo->nracks : 0;
	int nsw = c->topo ? c->topo->nswitches : 0;

	_group_free(c->islands, nisl);
	_group_free(c->racks, nracks);
	_group_free(c->switches, nsw);
	c->islands = c->racks = c->switches = NULL;
	/* domains[] alias islands[].nodes */
	xfree(c->domains);
	c->ndomains = 0;
	xfree(c->slurm2model);
	xfree(c->model2slurm);
	FREE_NULL_BITMAP(c->model_nodes);
	isle_place_destroy(c->place);
	c->place = NULL;
	isle_topo_destroy(c->topo);
	c->topo = NULL;
	c->nslurm = 0;
}

static bitstr_t *_model_bitmap(const int *nodes, int n)
{
	bitstr_t *b = bit_alloc(node_record_count);

	for (int i = 0; i < n; i++) {
		int s = isle__ctx.model2slurm[nodes[i]];

		if (s >= 0)
			bit_set(b, s);
	}
	return b;
}

/*
 * Nodes below switch sw, through its child switches. Each switch is visited
 * once (seen[] holds the stamp of the walk that reached it), so a fat tree
 * with many paths, or a cycle in a model built without finalize's check,
 * costs at most one pass over the switches and links. stack has room for
 * every switch.
 */
static void _switch_nodes(const isle_topo *t, int sw, bitstr_t *out, int *seen,
			  int stamp, int *stack)
{
	int top = 0;

	stack[top++] = sw;
	seen[sw] = stamp;
	while (top > 0) {
		const struct isle_switch *s = &t->switches[stack[--top]];

		for (int i = 0; i < s->nnodes; i++) {
			int n = isle__ctx.model2slurm[s->nodes[i]];

			if (n >= 0)
				bit_set(out, n);
		}
		for (int i = 0; i < s->ndown; i++) {
			int d = s->down[i];

			if (d < 0 || d >= t->nswitches || seen[d] == stamp)
				continue;
			seen[d] = stamp;
			stack[top++] = d;
		}
	}
}

static void _build_maps(void)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;
	node_record_t *node_ptr;
	const char *first = NULL;
	int unknown = 0, extra = 0, *seen, *stack;

	c->nslurm = node_record_count;
	c->slurm2model = xcalloc(MAX(node_record_count, 1), sizeof(int));
	c->model2slurm = xcalloc(MAX(t->nnodes, 1), sizeof(int));
	c->model_nodes = bit_alloc(node_record_count);
	for (int i = 0; i < node_record_count; i++)
		c->slurm2model[i] = -1;
	for (int m = 0; m < t->nnodes; m++)
		c->model2slurm[m] = -1;

	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		int m = isle_topo_find_node(t, node_ptr->name);

		if (m < 0) {
			if (!unknown++)
				first = node_ptr->name;
			continue;
		}
		c->slurm2model[i] = m;
		c->model2slurm[m] = i;
		bit_set(c->model_nodes, i);
	}
	if (unknown)
		info("isle: %d Slurm node(s) are not in %s (first: %s); they "
		     "get default selection",
		     unknown, c->path, first);
	/* A file wider than slurm.conf is fine (nodes added later, e.g.
	 * dynamic ones, join at once): its extra nodes are never chosen. */
	for (int m = 0; m < t->nnodes; m++) {
		if (c->model2slurm[m] >= 0)
			continue;
		if (!extra++)
			first = t->nodes[m].name;
	}
	if (extra)
		info("isle: %d node(s) of %s are not Slurm nodes (first: %s); "
		     "isle places no job on them until they are",
		     extra, c->path, first);

	c->islands = xcalloc(MAX(t->nislands, 1), sizeof(*c->islands));
	c->domains = xcalloc(MAX(t->nislands, 1), sizeof(bitstr_t *));
	for (int i = 0; i < t->nislands; i++) {
		c->islands[i].name = xstrdup(t->islands[i].name);
		c->islands[i].nodes =
		    _model_bitmap(t->islands[i].nodes, t->islands[i].nnodes);
		if (t->islands[i].multi_node)
			c->domains[c->ndomains++] = c->islands[i].nodes;
	}
	c->racks = xcalloc(MAX(t->nracks, 1), sizeof(*c->racks));
	for (int i = 0; i < t->nracks; i++) {
		c->racks[i].name = xstrdup(t->racks[i].name);
		c->racks[i].nodes =
		    _model_bitmap(t->racks[i].nodes, t->racks[i].nnodes);
	}
	c->switches = xcalloc(MAX(t->nswitches, 1), sizeof(*c->switches));
	seen = xcalloc(MAX(t->nswitches, 1), sizeof(int));
	stack = xcalloc(MAX(t->nswitches, 1), sizeof(int));
	for (int i = 0; i < t->nswitches; i++) {
		c->switches[i].name = xstrdup(t->switches[i].name);
		c->switches[i].nodes = bit_alloc(node_record_count);
		_switch_nodes(t, i, c->switches[i].nodes, seen, i + 1, stack);
	}
	xfree(seen);
	xfree(stack);
}

void isle__model_warn(void *arg, const char *msg)
{
	warning("isle: %s", msg);
}

/* Findings of isle_topo_lint, logged up to LINT_LOG_MAX per load. */
#define LINT_LOG_MAX 20

struct lint_log {
	const char *path;
	int n;
};

static void _lint_warn(void *arg, const char *msg)
{
	struct lint_log *l = arg;

	if (l->n++ < LINT_LOG_MAX)
		warning("isle: %s: %s", l->path, msg);
}

int isle__model_load(void)
{
	struct isle__ctx *c = &isle__ctx;
	struct isle_place_opts opts;
	char err[512] = "";
	isle_topo *t = NULL;
	char *path = isle__cluster_path();
	struct lint_log lint = {0};
	int rc;

	slurm_mutex_lock(&c->lock);
	isle__model_free();
	xfree(c->path);
	xfree(c->load_error);
	c->path = path;

	rc = isle_topo_load(path, &t, err, sizeof(err));
	if (rc) {
		/* Keep slurmctld up. The loader's message names the file and
		 * the JSON path or line; say the file once. */
		const char *msg = err[0] ? err : strerror(-rc);
		size_t plen = strlen(path);

		if (!strncmp(msg, path, plen) && !strncmp(msg + plen, ": ", 2))
			msg += plen + 2;
		c->load_error = xstrdup(msg);
		error("isle: cannot load cluster file %s: %s; falling back to "
		      "default node selection",
		      path, c->load_error);
		slurm_mutex_unlock(&c->lock);
		return SLURM_ERROR;
	}
	c->topo = t;
	isle_place_opts_default(&opts);
	opts.explain_max = ISLE_EXPLAIN_MAX; /* for islectl explain */
	c->place = isle_place_create(t, &opts);
	if (!c->place) {
		c->load_error = xstrdup("placement engine refused the model");
		error("isle: %s: %s; falling back to default node selection",
		      path, c->load_error);
		isle__model_free();
		slurm_mutex_unlock(&c->lock);
		return SLURM_ERROR;
	}
	_build_maps();
	info("isle: loaded %s: %d nodes, %d islands, %d switches, %d racks, "
	     "%ld GPUs",
	     path, t->nnodes, t->nislands, t->nswitches, t->nracks,
	     t->total_gpus);
	/* Loadable but questionable content, as islectl validate says it. */
	lint.path = path;
	if (isle_topo_lint(t, _lint_warn, &lint) > LINT_LOG_MAX)
		warning("isle: %s: %d more warnings (islectl validate %s "
			"lists them all)",
			path, lint.n - LINT_LOG_MAX, path);
	slurm_mutex_unlock(&c->lock);
	return SLURM_SUCCESS;
}

/*
 * Without Cores= in gres.conf Slurm keeps no GPU-to-core topology, and
 * cons_tres may bind any free GPUs of a node, not the linked set isle
 * chose. Said once per node, when the node's GPUs are first looked at.
 */
static void _warn_no_cores(const node_record_t *node_ptr,
			   const gres_node_state_t *ns)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static bitstr_t *warned;

	if (!ns->gres_cnt_avail)
		return;
	for (int i = 0; i < ns->topo_cnt; i++)
		if (ns->topo_core_bitmap && ns->topo_core_bitmap[i])
			return;
	slurm_mutex_lock(&lock);
	if (!warned || bit_size(warned) <= (bitoff_t)node_ptr->index) {
		bitoff_t n = MAX((bitoff_t)node_record_count,
				 (bitoff_t)node_ptr->index + 1);

		if (!warned)
			warned = bit_alloc(n);
		else
			bit_realloc(warned, n);
	}
	if (!bit_test(warned, node_ptr->index)) {
		bit_set(warned, node_ptr->index);
		warning(
		    "isle: node %s: gres.conf gives its GPUs no Cores=, so "
		    "Slurm may bind other GPUs of the node than the linked "
		    "set isle chose; write gres.conf with `islectl emit gres "
		    "--cores ...`",
		    node_ptr->name);
	}
	slurm_mutex_unlock(&lock);
}

bool isle__node_out_of_service(const node_record_t *node_ptr)
{
	return IS_NODE_DOWN(node_ptr) || IS_NODE_DRAIN(node_ptr) ||
	       IS_NODE_FAIL(node_ptr) || IS_NODE_NO_RESPOND(node_ptr) ||
	       IS_NODE_FUTURE(node_ptr);
}

uint64_t isle__node_free_gpus(int slurm_inx, int *total)
{
	node_record_t *node_ptr = node_record_table_ptr[slurm_inx];
	uint32_t gpu_id = gres_get_gpu_plugin_id();
	gres_state_t *gs;
	gres_node_state_t *ns;
	uint64_t mask = 0;
	int n;

	*total = 0;
	if (!node_ptr || !node_ptr->gres_list)
		return 0;
	gs = list_find_first(node_ptr->gres_list, gres_find_id, &gpu_id);
	if (!gs || !gs->gres_data)
		return 0;
	ns = gs->gres_data;
	_warn_no_cores(node_ptr, ns);
	n = MIN(ns->gres_cnt_avail, ISLE_MAX_GPUS_PER_NODE);
	*total = n;
	if (isle__node_out_of_service(node_ptr))
		return 0;
	if (ns->gres_bit_alloc) {
		for (int g = 0; g < n && g < bit_size(ns->gres_bit_alloc); g++)
			if (!bit_test(ns->gres_bit_alloc, g))
				mask |= 1ULL << g;
	} else {
		int free_cnt = n - (int)MIN(ns->gres_cnt_alloc, (uint64_t)n);

		for (int g = 0; g < free_cnt; g++)
			mask |= 1ULL << g;
	}
	return mask;
}

/* --- topoinfo snapshot -------------------------------------------------- */

static void _rec_counts(struct isle__topo_entry *r, bitstr_t *nodes,
			const uint64_t *free_mask, const int *totals)
{
	for (int i = 0; (i = bit_ffs_from_bit(nodes, i)) >= 0; i++) {
		r->gpus += totals[i];
		r->free_gpus += __builtin_popcountll(free_mask[i]);
	}
	r->nodes = bitmap2node_name(nodes);
}

/* Island GPU counts follow the island's members, not whole nodes. */
static void _island_counts(struct isle__topo_entry *r, const isle_topo *t,
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
	struct isle__topo_entry *r;
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
		free_mask[i] = isle__node_free_gpus(i, &totals[i]);
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
	r->children = isle__eval_stats_str();
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
