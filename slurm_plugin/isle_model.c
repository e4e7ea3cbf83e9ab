/*
 * isle_model.c - the cluster model in slurmctld: the cluster file, its
 * mapping onto Slurm's nodes, and which GPUs of a node are free.
 *
 * The model indexes nodes by its own order; Slurm by node_record_table_ptr,
 * which can be reordered on every reconfigure. The maps are rebuilt at each
 * build_config so that nothing else needs to care.
 *
 * Dynamic nodes (`scontrol create node`, `scontrol delete node`) change
 * Slurm's node table without a reconfigure, and a reused node index can
 * name another node: the maps are then patched by name (isle__model_sync,
 * isle__model_add_rm_node), so a node the file describes takes part in
 * placement as soon as it exists and a deleted one stops doing so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "isle_model.h"

#include "isle_policy.h"

#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#define ISLE_EXPLAIN_MAX 16 /* candidates kept per decision */

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
	isle__load_fini(&c->load); /* the engine and its loads go with it */
	c->load_synced = 0;
	isle_place_destroy(c->place);
	c->place = NULL;
	isle_place_destroy(c->place_blind);
	c->place_blind = NULL;
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
	char *path = isle__policy_cluster_path();
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
	if (isle__policy_contention_weight(&c->cc_weight, err, sizeof(err)))
		error("isle: %s; the contention term is off", err);
	isle_place_opts_default(&opts);
	opts.explain_max = ISLE_EXPLAIN_MAX; /* for islectl explain */
	if (c->cc_weight > 0) {
		struct isle_place_opts blind = opts;

		blind.explain_max = 0;
		c->place_blind = isle_place_create(t, &blind);
		opts.contention_weight = c->cc_weight;
	}
	c->place = isle_place_create(t, &opts);
	if (!c->place || (c->cc_weight > 0 && !c->place_blind)) {
		c->load_error = xstrdup("placement engine refused the model");
		error("isle: %s: %s; falling back to default node selection",
		      path, c->load_error);
		isle__model_free();
		slurm_mutex_unlock(&c->lock);
		return SLURM_ERROR;
	}
	isle__load_init(&c->load, c->place);
	_build_maps();
	if (c->cc_weight > 0)
		info("isle: contention term on (IsleContentionWeight=%g): "
		     "placement avoids links that running jobs load",
		     c->cc_weight);
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

/* The node takes no job now: down, drained, failed, not responding or not
 * yet in service (FUTURE). */
static bool _out_of_service(const node_record_t *node_ptr)
{
	return IS_NODE_DOWN(node_ptr) || IS_NODE_DRAIN(node_ptr) ||
	       IS_NODE_FAIL(node_ptr) || IS_NODE_NO_RESPOND(node_ptr) ||
	       IS_NODE_FUTURE(node_ptr);
}

uint64_t isle__model_gpus_free(const node_record_t *node_ptr,
			       const gres_node_state_t *ns, uint64_t mask,
			       int ngpus)
{
	int n;

	if (_out_of_service(node_ptr))
		return 0;
	if (ns && ns->gres_bit_alloc) {
		bitoff_t size = bit_size(ns->gres_bit_alloc);

		/* A GPU without a bit in the allocation map cannot be
		 * allocated: not free. */
		for (int g = 0; g < ngpus && g < 64; g++)
			if (g >= size || bit_test(ns->gres_bit_alloc, g))
				mask &= ~(1ULL << g);
	} else if (ns && ns->gres_cnt_alloc) {
		/* Counted but not placed: keep the lowest free count. */
		n = __builtin_popcountll(mask) -
		    (int)MIN(ns->gres_cnt_alloc, (uint64_t)ngpus);
		while (__builtin_popcountll(mask) > MAX(n, 0))
			mask &= ~(1ULL << (63 - __builtin_clzll(mask)));
	}
	return mask;
}

uint64_t isle__model_node_gpus(int slurm_inx, int *total)
{
	node_record_t *node_ptr = node_record_table_ptr[slurm_inx];
	uint32_t gpu_id = gres_get_gpu_plugin_id();
	gres_state_t *gs;
	gres_node_state_t *ns;
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
	return isle__model_gpus_free(node_ptr, ns,
				     n >= 64 ? ~0ULL : (1ULL << n) - 1, n);
}

bitstr_t *isle__model_job_gpus(job_record_t *job_ptr, int j)
{
	uint32_t gpu_id = gres_get_gpu_plugin_id();
	bitstr_t *b = NULL;
	list_itr_t *it;
	gres_state_t *gs;

	if (!job_ptr->gres_list_alloc)
		return NULL;
	it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *gj = gs->gres_data;

		if (gs->plugin_id != gpu_id || !gj || !gj->gres_bit_alloc ||
		    j >= (int)gj->node_cnt || !gj->gres_bit_alloc[j])
			continue;
		if (!b)
			b = bit_copy(gj->gres_bit_alloc[j]);
		else if (bit_size(b) == bit_size(gj->gres_bit_alloc[j]))
			bit_or(b, gj->gres_bit_alloc[j]);
	}
	list_iterator_destroy(it);
	return b;
}

/* --- nodes that come and go while slurmctld runs ------------------------ */

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

void isle__model_sync(bool force)
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

int isle__model_add_rm_node(node_record_t *node_ptr, const char *unit)
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

char *isle__model_node_unit(int s)
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

int isle__model_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
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
