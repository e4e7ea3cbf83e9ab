/*
 * topology_isle.c - topology/isle: the plugin's identity and the bodies of
 * its entry points, written once for every supported Slurm release.
 *
 * isle_compat.c exports the entry points with the signatures of the release
 * at hand and calls these. Node selection is in isle_eval.c; the cluster
 * file and node maps in isle_model.c; what `scontrol show topology` prints
 * in isle_topoinfo.c. docs/slurm-plugin.md walks one evaluation through
 * the files.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "topology_isle.h"

#include "isle_decision.h"
#include "isle_eval.h"
#include "isle_model.h"
#include "isle_policy.h"
#include "isle_topoinfo.h"
#include "isle_version.h"

#include "slurm/slurm_errno.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/plugins/topology/common/common_topo.h"

ISLE_EXPORT const char plugin_name[] = "topology isle plugin";
ISLE_EXPORT const char plugin_type[] = "topology/isle";
ISLE_EXPORT const uint32_t plugin_id = ISLE_TOPO_PLUGIN_ID;
ISLE_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * A plugin built for another Slurm than the one running it never places
 * jobs: the controller keeps running with its default selection.
 */
static bool disabled;

/* Name of the topology isle serves ("default" without topology.yaml). */
static char *topo_name;

/*
 * Eval latency: calls that isle (or its fallback) placed, timed around
 * Slurm's common node choice (which calls isle's eval once or more), in a
 * log-linear histogram: exact below 16 us, then 8 buckets per power of two
 * (12.5% wide). Atomic adds: the counters cost nothing on the scheduling
 * path and need no lock; a reader may see them a call apart.
 */
#define EVAL_LIN 16
#define EVAL_SUB 8
#define EVAL_NBUCKETS (EVAL_LIN + (64 - 4) * EVAL_SUB)
static uint64_t eval_calls, eval_sum_us, eval_max_us;
static uint64_t eval_hist[EVAL_NBUCKETS];

static int _eval_bucket(uint64_t us)
{
	int e;

	if (us < EVAL_LIN)
		return (int)us;
	e = 63 - __builtin_clzll(us); /* >= 4 */
	return EVAL_LIN + (e - 4) * EVAL_SUB +
	       (int)((us >> (e - 3)) & (EVAL_SUB - 1));
}

/* The middle of bucket b, in us. */
static uint64_t _eval_bucket_mid(int b)
{
	int e, sub;
	uint64_t lo, w;

	if (b < EVAL_LIN)
		return (uint64_t)b;
	e = (b - EVAL_LIN) / EVAL_SUB + 4;
	sub = (b - EVAL_LIN) % EVAL_SUB;
	w = 1ull << (e - 3);
	lo = (1ull << e) + (uint64_t)sub * w;
	return lo + w / 2;
}

static void _eval_stat_add(uint64_t us)
{
	uint64_t max = __atomic_load_n(&eval_max_us, __ATOMIC_RELAXED);

	__atomic_fetch_add(&eval_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&eval_sum_us, us, __ATOMIC_RELAXED);
	__atomic_fetch_add(&eval_hist[_eval_bucket(us)], 1, __ATOMIC_RELAXED);
	while (us > max &&
	       !__atomic_compare_exchange_n(&eval_max_us, &max, us, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static uint64_t _eval_pct(const uint64_t *hist, uint64_t n, double q)
{
	uint64_t want = (uint64_t)(q * (double)n), seen = 0;

	if (want >= n)
		want = n - 1;
	for (int b = 0; b < EVAL_NBUCKETS; b++) {
		seen += hist[b];
		if (seen > want)
			return _eval_bucket_mid(b);
	}
	return 0;
}

/* "Calls=N MeanUs=M P50Us=A P99Us=B MaxUs=C SumUs=S BucketsUs=50:n,...,
 * +Inf:N" (xfree it). Percentiles are bucket middles (within 6.25% of the
 * true value), at most the max. A bucket counts toward a bound only when
 * its upper edge is within it, so the cumulative counts are never
 * overstated (up to 12.5% of a bound's calls land in the next one). */
char *isle__topo_eval_stats(void)
{
	static const uint64_t le_us[] = {50,	 100,	 250,	 500,	1000,
					 2500,	 5000,	 10000,	 25000, 50000,
					 100000, 250000, 1000000};
	uint64_t hist[EVAL_NBUCKETS], n = 0, sum, max, seen = 0;
	char *s;
	int b = 0;

	for (int i = 0; i < EVAL_NBUCKETS; i++) {
		hist[i] = __atomic_load_n(&eval_hist[i], __ATOMIC_RELAXED);
		n += hist[i];
	}
	sum = __atomic_load_n(&eval_sum_us, __ATOMIC_RELAXED);
	max = __atomic_load_n(&eval_max_us, __ATOMIC_RELAXED);
	if (!n)
		s = xstrdup("Calls=0 SumUs=0");
	else
		s = xstrdup_printf(
		    "Calls=%" PRIu64 " MeanUs=%" PRIu64 " P50Us=%" PRIu64
		    " P99Us=%" PRIu64 " MaxUs=%" PRIu64 " SumUs=%" PRIu64,
		    n, sum / n, MIN(_eval_pct(hist, n, 0.50), max),
		    MIN(_eval_pct(hist, n, 0.99), max), max, sum);
	for (size_t i = 0; i < ARRAY_SIZE(le_us); i++) {
		for (; b < EVAL_NBUCKETS; b++) {
			/* the bucket's exclusive upper edge */
			uint64_t w =
			    b < EVAL_LIN
				? 1
				: 1ull << ((b - EVAL_LIN) / EVAL_SUB + 1);
			uint64_t edge = b < EVAL_LIN
					    ? (uint64_t)b + 1
					    : _eval_bucket_mid(b) + w / 2;

			if (edge > le_us[i])
				break;
			seen += hist[b];
		}
		xstrfmtcat(s, "%s%" PRIu64 ":%" PRIu64,
			   i ? "," : " BucketsUs=", le_us[i], seen);
	}
	xstrfmtcat(s, ",+Inf:%" PRIu64, n);
	return s;
}

int isle__topo_init(void)
{
	if (isle__version_check(plugin_type)) {
		error("isle: not placing jobs: Slurm's default selection is "
		      "used");
		disabled = true;
		return SLURM_SUCCESS;
	}
	/* Loader warnings (skipped dump lines, duplicate names, ...) go to
	 * the controller's log rather than nowhere. */
	isle_topo_set_warn(isle__model_warn, NULL);
	verbose("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

int isle__topo_fini(void)
{
	if (__atomic_load_n(&eval_calls, __ATOMIC_RELAXED)) {
		char *st = isle__topo_eval_stats();

		verbose("isle: eval %s", st);
		xfree(st);
	}
	isle_topo_set_warn(NULL, NULL);
	slurm_mutex_lock(&isle__ctx.lock);
	isle__model_free();
	xfree(isle__ctx.path);
	xfree(isle__ctx.load_error);
	slurm_mutex_unlock(&isle__ctx.lock);
	isle__decision_fini();
	xfree(topo_name);
	return SLURM_SUCCESS;
}

/* Startup and every scontrol reconfigure: reload the cluster file. A bad
 * file is logged and selection falls back to Slurm's default. */
int isle__topo_build_config(const char *name)
{
	if (!running_in_slurmctld() || disabled)
		return SLURM_SUCCESS;
	if (name && xstrcmp(topo_name, name)) {
		xfree(topo_name);
		topo_name = xstrdup(name);
	}
	isle__decision_init();
	isle__policy_read(&isle__ctx.policy);
	(void)isle__model_load();
	isle__model_sync(true);
	return SLURM_SUCCESS;
}

int isle__topo_destroy_config(void)
{
	slurm_mutex_lock(&isle__ctx.lock);
	isle__model_free();
	slurm_mutex_unlock(&isle__ctx.lock);
	return SLURM_SUCCESS;
}

/*
 * Like topology/tree, isle takes the place of Slurm's consecutive best-fit
 * but not of the policies that outrank it (--spread-job, LLN partitions,
 * pack_serial_at_end, busy-node preference): trump_others stays false.
 */
int isle__topo_eval_nodes(topology_eval_t *topo_eval)
{
	struct timespec t0, t1;
	int rc;

	topo_eval->trump_others = false;
	isle__model_sync(false);
	/* Without a model the callback still runs while the cluster file
	 * does not load: it says so in the job's AdminComment. */
	if ((isle__ctx.topo &&
	     bit_overlap_any(isle__ctx.model_nodes, topo_eval->node_map)) ||
	    (!isle__ctx.topo && isle__ctx.load_error))
		topo_eval->eval_nodes = isle__eval_nodes;
	else
		topo_eval->eval_nodes = NULL;
	if (!topo_eval->eval_nodes)
		return common_topo_choose_nodes(topo_eval);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = common_topo_choose_nodes(topo_eval);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	_eval_stat_add((uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000 +
		       (uint64_t)(t1.tv_nsec - t0.tv_nsec) / 1000);
	return rc;
}

/* --exclusive=topo and reservations: widen to whole multi-node islands. */
int isle__topo_whole_topo(bitstr_t *node_mask)
{
	for (int i = 0; i < isle__ctx.ndomains; i++) {
		if (bit_overlap_any(isle__ctx.domains[i], node_mask))
			bit_or(node_mask, isle__ctx.domains[i]);
	}
	return SLURM_SUCCESS;
}

/* Island, rack or switch name -> its nodes (do not free). */
bitstr_t *isle__topo_get_bitmap(const char *name)
{
	struct isle__ctx *c = &isle__ctx;

	if (!c->topo || !name)
		return NULL;
	for (int i = 0; i < c->topo->nislands; i++)
		if (!xstrcmp(c->islands[i].name, name))
			return c->islands[i].nodes;
	for (int i = 0; i < c->topo->nracks; i++)
		if (!xstrcmp(c->racks[i].name, name))
			return c->racks[i].nodes;
	for (int i = 0; i < c->topo->nswitches; i++)
		if (!xstrcmp(c->switches[i].name, name))
			return c->switches[i].nodes;
	return NULL;
}

/*
 * Ranks nodes so that each leaf group and, inside it, each NVLink island is
 * contiguous: Slurm's default best-fit then walks islands in order. Runs
 * before build_config, so it loads the file on its own.
 */
bool isle__topo_node_ranking(void)
{
	char err[512] = "", *path = isle__policy_cluster_path();
	isle_topo *t = NULL;
	node_record_t *node_ptr;
	int *nodes, *order, *rank;
	bool ranked = false;

	if (disabled ||
	    xstrcasestr(slurm_conf.topology_param, "IsleNoNodeRank") ||
	    isle_topo_load(path, &t, err, sizeof(err))) {
		xfree(path);
		return false;
	}
	nodes = xcalloc(MAX(t->nnodes, 1), sizeof(int));
	order = xcalloc(MAX(t->nnodes, 1), sizeof(int));
	rank = xcalloc(MAX(t->nnodes, 1), sizeof(int));
	for (int m = 0; m < t->nnodes; m++)
		nodes[m] = m;
	/* The order get_rank gives a job's nodes (isle__model_rank). */
	if (isle_topo_rank_order(t, nodes, t->nnodes, order))
		goto out;
	for (int k = 0; k < t->nnodes; k++)
		rank[order[k]] = k + 1;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		int m = isle_topo_find_node(t, node_ptr->name);

		node_ptr->node_rank = (m >= 0) ? rank[m] : t->nnodes + 1 + i;
	}
	ranked = true;
out:
	xfree(nodes);
	xfree(order);
	xfree(rank);
	xfree(path);
	isle_topo_destroy(t);
	return ranked;
}

int isle__topo_add_rm_node(node_record_t *node_ptr, const char *unit)
{
	return isle__model_add_rm_node(node_ptr, unit);
}

int isle__topo_get_rank(bitstr_t *node_bitmap, uint32_t **node_rank,
			uint32_t *size)
{
	return isle__model_rank(node_bitmap, node_rank, size);
}

char *isle__topo_node_unit(int node_inx)
{
	return isle__model_node_unit(node_inx);
}

int isle__topo_get_node_addr(char *node_name, char **paddr, char **ppattern)
{
	return common_topo_get_node_addr(node_name, paddr, ppattern);
}

int isle__topo_split_hostlist(hostlist_t *hl, hostlist_t ***sp_hl, int *count,
			      uint16_t tree_width)
{
	return common_topo_split_hostlist_treewidth(hl, sp_hl, count,
						    tree_width);
}

int isle__topo_get(topology_data_t type, void *data)
{
	switch (type) {
	case TOPO_DATA_TOPOLOGY_PTR: {
		dynamic_plugin_data_t **pptr = data;

		*pptr = xmalloc(sizeof(dynamic_plugin_data_t));
		(*pptr)->data = isle__topoinfo_build();
		(*pptr)->plugin_id = plugin_id;
		return SLURM_SUCCESS;
	}
	case TOPO_DATA_REC_CNT: {
		int *cnt = data;
		const isle_topo *t = isle__ctx.topo;

		*cnt = t ? t->nracks + t->nislands + t->nswitches : 0;
		return SLURM_SUCCESS;
	}
	case TOPO_DATA_EXCLUSIVE_TOPO: {
		int *exclusive = data;

		*exclusive = 0;
		return SLURM_SUCCESS;
	}
	default:
		break;
	}
	error("isle: unsupported topology_p_get type %d", type);
	return SLURM_ERROR;
}

/*
 * Backfill's bf_topopt: lower is better. Fragmentation of the cluster if
 * only the nodes in node_mask were free, scaled to 0..1000000.
 */
uint32_t isle__topo_get_fragmentation(bitstr_t *node_mask)
{
	struct isle__ctx *c = &isle__ctx;
	uint64_t *free_mask;
	double frag;

	if (!c->topo || !c->place)
		return 0;
	free_mask = xcalloc(MAX(c->topo->nnodes, 1), sizeof(uint64_t));
	for (int m = 0; m < c->topo->nnodes; m++) {
		int s = c->model2slurm[m];
		int ng = c->topo->nodes[m].ngpus;

		if (s >= 0 && s < bit_size(node_mask) && bit_test(node_mask, s))
			free_mask[m] = (ng >= 64) ? ~0ULL : ((1ULL << ng) - 1);
	}
	slurm_mutex_lock(&c->lock);
	frag = isle_place_fragmentation(c->place, free_mask);
	slurm_mutex_unlock(&c->lock);
	xfree(free_mask);
	return (uint32_t)(frag * 1000000.0);
}
