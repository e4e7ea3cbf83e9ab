/*
 * policies.c - the policies islesim compares: isle (the engine) and
 * re-implementations of stock Slurm behaviour. The baselines are not Slurm
 * code; they follow the documented algorithms:
 *   linear: cons_tres without a topology plugin (_eval_nodes_consec in
 *           topology/common/eval_nodes.c): runs of consecutive usable
 *           nodes, the smallest run that holds the rest, else the
 *           largest; a job of one node takes the best-fit node of its
 *           run; lowest free GPUs first;
 *   tree:   topology/tree (_eval_nodes_topo): leaf switches one at a time,
 *           by Slurm's switch comparison (a leaf that holds the rest, best
 *           fit, first of equals; else the largest leaf of the largest
 *           parent) and switch distance from the leafs already taken;
 *           nodes in order;
 *   block:  topology/block: base blocks (NVLink domains, else leaf groups)
 *           aggregated in BlockSizes of 1, 2, 4, ... consecutive blocks;
 *           the level follows from the job size alone (no room: the job
 *           waits), best fit among its blocks and base blocks, last of
 *           equals; nodes in order;
 *   random: nodes in a seeded random order;
 *   tree-sw:   tree with --switches=1, what a careful user adds: a job
 *              that fits under one leaf switch waits for one;
 *   block-seg: block with --segment=S, S the largest divisor of the node
 *              count that fits a base block: each S-node segment placed
 *              by block as a job of its own, one after the other;
 *   isle-cc:   isle weighing the load running jobs put on the uplinks a
 *              placement crosses (contention_weight, contention.c).
 * Requests with a node shape (-N k --gpus-per-node=g) take exactly g GPUs
 * on each of k nodes that have g free, as Slurm's count of usable nodes.
 * None of the baselines knows about GPU islands inside a node or TP/PP, so
 * ranks follow the node order they chose and GPU indices, as srun's block
 * distribution does.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "isle_place.h"
#include "islesim.h"

const char *const sim_policy_names[SIM_NPOLICIES] = {
    "isle",    "linear",    "tree",    "block",	    "random",
    "tree-sw", "block-seg", "isle-cc", "isle+shim",
};

int sim_policy_parse(const char *s)
{
	for (int i = 0; i < SIM_NPOLICIES; i++)
		if (!strcmp(s, sim_policy_names[i]))
			return i;
	return -1;
}

/* A group of nodes (leaf group, spine group, block), nodes ascending. */
struct grp {
	int n;
	int *nodes;
};

struct sim_policy_ctx {
	enum sim_policy p;
	const isle_topo *t;
	isle_place_ctx *eng;
	struct sim_rng rng;
	int nleaf, nspine, nblock;
	struct grp *leaf, *spine, *block;
	int *leaf_spine; /* spine group of each leaf group */
	int *order;	 /* scratch: node order */
	long *score;	 /* scratch: free GPUs per group */
	int gpn;	 /* GPUs per node of the current request, 0: any */
	int release;	 /* see sim_policy_set_release */
	double waited, max_switch_wait;
};

static int groups_build(const isle_topo *t, const int *key, int ngroups,
			struct grp **out)
{
	struct grp *g = calloc((size_t)ngroups + 1, sizeof(*g));
	int i;

	if (!g)
		return -ENOMEM;
	for (i = 0; i < t->nnodes; i++)
		g[key[i]].n++;
	for (i = 0; i < ngroups; i++) {
		g[i].nodes = malloc(((size_t)g[i].n + 1) * sizeof(int));
		if (!g[i].nodes)
			return -ENOMEM;
		g[i].n = 0;
	}
	for (i = 0; i < t->nnodes; i++)
		g[key[i]].nodes[g[key[i]].n++] = i;
	*out = g;
	return 0;
}

static void groups_free(struct grp *g, int n)
{
	if (!g)
		return;
	for (int i = 0; i < n; i++)
		free(g[i].nodes);
	free(g);
}

struct sim_policy_ctx *sim_policy_create(enum sim_policy p, const isle_topo *t,
					 isle_place_ctx *eng, uint64_t seed)
{
	struct sim_policy_ctx *pc = calloc(1, sizeof(*pc));
	int *key = NULL, i, ok = 0;

	if (!pc)
		return NULL;
	pc->p = p;
	pc->t = t;
	pc->max_switch_wait = 300;
	pc->eng = eng;
	sim_rng_seed(&pc->rng, seed);
	key = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	pc->order = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	pc->score = malloc(((size_t)t->nnodes + 1) * sizeof(long));
	if (!key || !pc->order || !pc->score)
		goto out;
	pc->nleaf = t->ngroups[ISLE_TIER_LEAF];
	pc->nspine = t->ngroups[ISLE_TIER_SPINE];
	for (i = 0; i < t->nnodes; i++)
		key[i] = t->nodes[i].group[ISLE_TIER_LEAF];
	if (groups_build(t, key, pc->nleaf, &pc->leaf))
		goto out;
	for (i = 0; i < t->nnodes; i++)
		key[i] = t->nodes[i].group[ISLE_TIER_SPINE];
	if (groups_build(t, key, pc->nspine, &pc->spine))
		goto out;
	pc->leaf_spine = malloc(((size_t)pc->nleaf + 1) * sizeof(int));
	if (!pc->leaf_spine)
		goto out;
	for (i = 0; i < t->nnodes; i++)
		pc->leaf_spine[t->nodes[i].group[ISLE_TIER_LEAF]] =
		    t->nodes[i].group[ISLE_TIER_SPINE];
	pc->nblock = sim_cluster_blocks(t, key);
	if (pc->nblock < 0 || groups_build(t, key, pc->nblock, &pc->block))
		goto out;
	ok = 1;
out:
	free(key);
	if (!ok) {
		sim_policy_destroy(pc);
		return NULL;
	}
	return pc;
}

void sim_policy_destroy(struct sim_policy_ctx *pc)
{
	if (!pc)
		return;
	groups_free(pc->leaf, pc->nleaf);
	groups_free(pc->spine, pc->nspine);
	groups_free(pc->block, pc->nblock);
	free(pc->leaf_spine);
	free(pc->order);
	free(pc->score);
	free(pc);
}

static int nfree(const uint64_t *fm, int node)
{
	return __builtin_popcountll(fm[node]);
}

/* GPUs the current request can use on a node: g on a node with g free
 * when it asks g per node, else every free GPU. */
static int usable(const struct sim_policy_ctx *pc, const uint64_t *fm, int node)
{
	int f = nfree(fm, node);

	if (!pc->gpn)
		return f;
	return f >= pc->gpn ? pc->gpn : 0;
}

/* Takes GPUs from order[0..n) first fit, lowest GPU index first; ranks in
 * that order. Returns 0 or -ENOSPC. */
static int take_in_order(const struct sim_policy_ctx *pc, const int *order,
			 int n, const uint64_t *fm, int need,
			 struct isle_place_result *res)
{
	int i;

	res->nnodes = res->nranks = 0;
	for (i = 0; i < n && need > 0; i++) {
		uint64_t m = fm[order[i]], got = 0;

		if (pc->gpn) {
			if (nfree(fm, order[i]) < pc->gpn)
				continue;
			for (int k = nfree(fm, order[i]) - pc->gpn; k > 0; k--)
				m &= ~(1ULL << (63 - __builtin_clzll(m)));
		}
		while (m && need > 0) {
			int g = __builtin_ctzll(m);

			m &= m - 1;
			got |= 1ULL << g;
			res->ranks[res->nranks].node = order[i];
			res->ranks[res->nranks].gpu = g;
			res->nranks++;
			need--;
		}
		if (got) {
			res->nodes[res->nnodes] = order[i];
			res->masks[res->nnodes] = got;
			res->nnodes++;
		}
	}
	return need > 0 ? -ENOSPC : 0;
}

static long grp_free(const struct sim_policy_ctx *pc, const struct grp *g,
		     const uint64_t *fm)
{
	long s = 0;

	for (int i = 0; i < g->n; i++)
		s += usable(pc, fm, g->nodes[i]);
	return s;
}

/*
 * topology/tree (eval_nodes_tree.c, _eval_nodes_topo), counted in free
 * GPUs instead of nodes. Switches: leaf groups, spine groups, core groups
 * (connected parts); sw[] holds the free GPUs under each, parent[] the
 * switch above (-1: none).
 */
struct tree_sw {
	int n; /* leafs + spines + cores */
	int nleaf;
	long *cnt; /* free GPUs under the switch */
	int *parent;
	int *level; /* 0 leaf, 1 spine, 2 core */
};

/* _topo_compare_switches(): 1 when leaf i is the better choice, -1 when j
 * is, 0 when equal; *i_fit_out: whether i (or the ancestor of i the
 * comparison ended on) holds the rest. */
static int tree_compare(const struct tree_sw *s, int i, int j, long rem,
			int *i_fit_out)
{
	for (;;) {
		int i_fit = s->cnt[i] >= rem, j_fit = s->cnt[j] >= rem;

		*i_fit_out = i_fit;
		if (i_fit && j_fit) {
			if (s->cnt[i] < s->cnt[j])
				return 1;
			if (s->cnt[i] > s->cnt[j])
				return -1;
			break;
		} else if (i_fit) {
			return 1;
		} else if (j_fit) {
			return -1;
		}
		if (s->parent[i] < 0 || s->parent[j] < 0 ||
		    s->parent[i] == s->parent[j])
			break;
		i = s->parent[i];
		j = s->parent[j];
	}
	if (s->cnt[i] != s->cnt[j])
		return s->cnt[i] > s->cnt[j] ? 1 : -1;
	if (s->level[i] != s->level[j])
		return s->level[i] < s->level[j] ? 1 : -1;
	return 0;
}

#define TREE_INF (1L << 40)

/* Hops between two leafs (switches_dist): 2 under one spine, 4 under one
 * core, else unreachable. */
static long tree_leaf_dist(const struct tree_sw *s, int a, int b)
{
	int d = 0;

	while (a != b) {
		if (s->parent[a] < 0 || s->parent[b] < 0)
			return TREE_INF;
		a = s->parent[a];
		b = s->parent[b];
		d += 2;
	}
	return d;
}

static void tree_decrement(struct tree_sw *s, int i, long taken)
{
	for (; i >= 0; i = s->parent[i])
		s->cnt[i] = s->cnt[i] <= taken ? 0 : s->cnt[i] - taken;
}

static int place_tree(struct sim_policy_ctx *pc, const uint64_t *fm, int need,
		      int one_switch, struct isle_place_result *res)
{
	const isle_topo *t = pc->t;
	int ncore =
	    t->ngroups[ISLE_TIER_CORE] > 0 ? t->ngroups[ISLE_TIER_CORE] : 0;
	struct tree_sw s = {.nleaf = pc->nleaf};
	long *dist = NULL, rem = need;
	int *used = NULL, i, top = -1, len = 0, rc = -ENOMEM;

	s.n = pc->nleaf + pc->nspine + ncore;
	s.cnt = calloc((size_t)s.n + 1, sizeof(long));
	s.parent = malloc(((size_t)s.n + 1) * sizeof(int));
	s.level = malloc(((size_t)s.n + 1) * sizeof(int));
	dist = calloc((size_t)pc->nleaf + 1, sizeof(long));
	used = calloc((size_t)pc->nleaf + 1, sizeof(int));
	if (!s.cnt || !s.parent || !s.level || !dist || !used)
		goto out;
	for (i = 0; i < s.n; i++) {
		s.parent[i] = -1;
		s.level[i] = i < pc->nleaf		  ? 0
			     : i < pc->nleaf + pc->nspine ? 1
							  : 2;
	}
	for (i = 0; i < t->nnodes; i++) {
		int l = t->nodes[i].group[ISLE_TIER_LEAF];
		int sp = t->nodes[i].group[ISLE_TIER_SPINE];
		int co = ncore ? t->nodes[i].group[ISLE_TIER_CORE] : -1;

		if (l < 0 || sp < 0)
			continue;
		s.parent[l] = pc->nleaf + sp;
		if (co >= 0)
			s.parent[pc->nleaf + sp] = pc->nleaf + pc->nspine + co;
	}
	/* the top switch: the highest level that holds the job, last of
	 * equals; nodes outside it are out of reach */
	for (i = 0; i < pc->nleaf; i++) {
		long f = grp_free(pc, &pc->leaf[i], fm);

		s.cnt[i] += f;
		if (s.parent[i] >= 0) {
			s.cnt[s.parent[i]] += f;
			if (s.parent[s.parent[i]] >= 0)
				s.cnt[s.parent[s.parent[i]]] += f;
		}
	}
	for (i = 0; i < s.n; i++)
		if (s.cnt[i] >= need && (top < 0 || s.level[i] >= s.level[top]))
			top = i;
	rc = -ENOSPC;
	if (top < 0)
		goto out;
	/* --switches=1: a job that fits under one leaf when it is empty takes
	 * the best-fit leaf that holds it now, or waits */
	if (one_switch) {
		long cap = 0;

		for (i = 0; i < pc->nleaf; i++) {
			long c = 0;

			for (int k = 0; k < pc->leaf[i].n; k++) {
				int g = t->nodes[pc->leaf[i].nodes[k]].ngpus;

				c += pc->gpn ? (g >= pc->gpn ? pc->gpn : 0) : g;
			}
			if (c > cap)
				cap = c;
		}
		if (cap >= need) {
			int best = -1;

			for (i = 0; i < pc->nleaf; i++)
				if (s.cnt[i] >= need &&
				    (best < 0 || s.cnt[i] < s.cnt[best]))
					best = i;
			if (best < 0)
				goto out;
			for (i = 0; i < pc->leaf[best].n; i++)
				pc->order[len++] = pc->leaf[best].nodes[i];
			rc = take_in_order(pc, pc->order, len, fm, need, res);
			goto out;
		}
	}
	for (i = 0; i < pc->nleaf; i++) {
		int a = i;

		while (a >= 0 && a != top)
			a = s.parent[a];
		if (a < 0) { /* not under the top switch */
			tree_decrement(&s, i, s.cnt[i]);
			used[i] = 1;
		}
	}
	/* leafs one at a time (_topo_choose_best_switch) */
	while (rem > 0) {
		int best = -1, i_fit;

		for (i = 0; i < pc->nleaf; i++) {
			int tcs;

			if (used[i])
				continue;
			if (best < 0 || dist[i] >= TREE_INF || !s.cnt[i]) {
				if (s.cnt[i] && dist[i] < TREE_INF)
					best = i;
				continue;
			}
			tcs = tree_compare(&s, i, best, rem, &i_fit);
			if ((dist[i] < dist[best] && i_fit) ||
			    (dist[i] == dist[best] && tcs > 0))
				best = i;
		}
		if (best < 0)
			goto out;
		for (i = 0; i < pc->nleaf; i++) {
			long d = tree_leaf_dist(&s, best, i);

			dist[i] = d >= TREE_INF || dist[i] >= TREE_INF
				      ? TREE_INF
				      : dist[i] + d;
		}
		used[best] = 1;
		for (i = 0; i < pc->leaf[best].n; i++)
			pc->order[len++] = pc->leaf[best].nodes[i];
		rem -= s.cnt[best];
		tree_decrement(&s, best, s.cnt[best]);
	}
	rc = take_in_order(pc, pc->order, len, fm, need, res);
out:
	free(s.cnt);
	free(s.parent);
	free(s.level);
	free(dist);
	free(used);
	return rc;
}

/*
 * topology/block (eval_nodes_block.c), counted in free GPUs. The block
 * level comes from the job size alone: ceil(log2(base blocks needed)),
 * blocks of 2^level consecutive base blocks (islectl emits every power of
 * two up to the block count in BlockSizes, so no level is skipped and the
 * llblock limit never applies; a level above the largest is the whole
 * cluster). Among the blocks of that level with room, the one with the
 * fewest free GPUs wins, the last of equals; none: the job waits.
 */
/* What base block b holds for the request: usable GPUs, or with
 * segments of seg nodes only whole segments. */
static long bb_cap(const struct sim_policy_ctx *pc, int b, const uint64_t *fm,
		   int seg)
{
	long nodes = 0;

	if (!seg)
		return grp_free(pc, &pc->block[b], fm);
	for (int k = 0; k < pc->block[b].n; k++)
		nodes += usable(pc, fm, pc->block[b].nodes[k]) > 0;
	return nodes / seg * seg * pc->gpn;
}

static int place_block(struct sim_policy_ctx *pc, const uint64_t *fm, int need,
		       int seg, struct isle_place_result *res)
{
	int size = 1, a, i, best = -1, len = 0, nbb, *used = NULL;
	long bf = 0, base = 0, rem = need, *nb = NULL;
	int rc;

	if (pc->nblock <= 0)
		return -ENOSPC;
	/* base block size: the smallest block (BlockSizes' first entry) */
	for (i = 0; i < pc->nblock; i++) {
		long c = 0;

		for (int k = 0; k < pc->block[i].n; k++)
			c += pc->t->nodes[pc->block[i].nodes[k]].ngpus;
		if (c > 0 && (!base || c < base))
			base = c;
	}
	if (!base)
		return -ENOSPC;
	nbb = (int)((need + base - 1) / base);
	while (size < nbb)
		size *= 2;
	for (a = 0; a * size < pc->nblock; a++) {
		long f = 0;

		for (i = a * size; i < (a + 1) * size && i < pc->nblock; i++)
			f += bb_cap(pc, i, fm, seg);
		if (f >= need && (best < 0 || f <= bf)) {
			best = a;
			bf = f;
		}
	}
	if (best < 0)
		return -ENOSPC;
	/* base blocks of the chosen block (_choose_best_bblock): one that
	 * holds the rest, fewest free first; else the largest; last of
	 * equals either way */
	nb = calloc((size_t)size + 1, sizeof(long));
	used = calloc((size_t)size + 1, sizeof(int));
	rc = -ENOMEM;
	if (!nb || !used)
		goto out;
	for (i = 0; i < size && best * size + i < pc->nblock; i++)
		nb[i] = bb_cap(pc, best * size + i, fm, seg);
	while (rem > 0) {
		int bi = -1, bfit = 0;

		for (i = 0; i < size && best * size + i < pc->nblock; i++) {
			int fit = nb[i] >= rem;

			if (used[i])
				continue;
			if (bi < 0 || (fit && !bfit) ||
			    (!fit && !bfit && nb[i] >= nb[bi]) ||
			    (fit && nb[i] <= nb[bi])) {
				bi = i;
				bfit = fit;
			}
		}
		rc = -ENOSPC;
		if (bi < 0 || nb[bi] <= 0)
			goto out;
		used[bi] = 1;
		{
			const struct grp *g = &pc->block[best * size + bi];
			long take = seg ? nb[bi] / pc->gpn : g->n;

			/* with segments: only the nodes of whole segments */
			for (i = 0; i < g->n && take > 0; i++) {
				if (seg && !usable(pc, fm, g->nodes[i]))
					continue;
				pc->order[len++] = g->nodes[i];
				take--;
			}
		}
		rem -= nb[bi];
	}
	rc = take_in_order(pc, pc->order, len, fm, need, res);
out:
	free(nb);
	free(used);
	return rc;
}

/*
 * _eval_nodes_consec, counted in usable GPUs (equal node weights): a node
 * counts what the job takes there, as Slurm's CPU count of a node for
 * the job (88 of 88 decisions alike in test 35, one CPU per GPU). Sets
 * of consecutive usable nodes; repeatedly the set that suffices (GPUs and
 * nodes) with the fewest GPUs, else the one with the most (Slurm's test
 * order and ties: first wins), its nodes taken in order; with one node
 * left to take, the best-fit node of the set.
 */
static int place_consec(struct sim_policy_ctx *pc, const uint64_t *fm,
			const struct isle_place_req *req, int need,
			struct isle_place_result *res)
{
	const isle_topo *t = pc->t;
	int n = t->nnodes, nset = 0, len = 0, i, rc = -ENOMEM;
	int *start = malloc(((size_t)n + 1) * sizeof(int));
	int *end = malloc(((size_t)n + 1) * sizeof(int));
	long *gpus = malloc(((size_t)n + 1) * sizeof(long));
	int *nodes = malloc(((size_t)n + 1) * sizeof(int));
	long rem = need;
	int rem_nodes = req->nodes > 0 ? req->nodes : 1;
	int max_nodes = req->nodes > 0 ? req->nodes : n;

	if (!start || !end || !gpus || !nodes)
		goto out;
	for (i = 0; i < n; i++) {
		int u = usable(pc, fm, i);

		if (!u)
			continue;
		if (!nset || end[nset - 1] != i - 1) {
			start[nset] = i;
			gpus[nset] = 0;
			nodes[nset] = 0;
			nset++;
		}
		end[nset - 1] = i;
		gpus[nset - 1] += u;
		nodes[nset - 1]++;
	}
	rc = -ENOSPC;
	while (max_nodes > 0 && (rem > 0 || rem_nodes > 0)) {
		int best = -1, bsuff = 0;

		for (i = 0; i < nset; i++) {
			int suff;

			if (!nodes[i])
				continue;
			suff = gpus[i] >= rem && nodes[i] >= rem_nodes;
			if (best < 0 || (suff && !bsuff) ||
			    (suff && gpus[i] < gpus[best]) ||
			    (!suff && gpus[i] > gpus[best])) {
				best = i;
				bsuff = suff;
			}
		}
		if (best < 0)
			goto out;
		if (rem_nodes <= 1) {
			int bf = -1;

			for (i = start[best]; i <= end[best]; i++) {
				int u = usable(pc, fm, i);

				if (u >= rem && u > 0 &&
				    (bf < 0 || u < usable(pc, fm, bf)))
					bf = i;
			}
			if (bf >= 0) {
				start[best] = end[best] = bf;
			}
		}
		for (i = start[best]; i <= end[best]; i++) {
			int u = usable(pc, fm, i);

			if (max_nodes == 0 || (rem <= 0 && rem_nodes <= 0))
				break;
			if (!u || (max_nodes == 1 && u < rem))
				continue;
			pc->order[len++] = i;
			rem -= u;
			rem_nodes--;
			max_nodes--;
		}
		gpus[best] = 0;
		nodes[best] = 0;
	}
	rc = rem > 0 ? -ENOSPC
		     : take_in_order(pc, pc->order, len, fm, need, res);
out:
	free(start);
	free(end);
	free(gpus);
	free(nodes);
	return rc;
}

static int place_random(struct sim_policy_ctx *pc, const uint64_t *fm, int need,
			struct isle_place_result *res)
{
	int n = 0, i;

	for (i = 0; i < pc->t->nnodes; i++)
		if (fm[i])
			pc->order[n++] = i;
	for (i = n - 1; i > 0; i--) {
		int j = (int)(sim_rng_next(&pc->rng) % (uint64_t)(i + 1));
		int x = pc->order[i];

		pc->order[i] = pc->order[j];
		pc->order[j] = x;
	}
	return take_in_order(pc, pc->order, n, fm, need, res);
}

/* --segment: the largest divisor of the node count that fits in the
 * smallest base block; 0 for a job without a node shape. */
static int segment_of(const struct sim_policy_ctx *pc,
		      const struct isle_place_req *req)
{
	int bb = 0, s;

	if (req->nodes <= 1 || !req->gpus_per_node)
		return 0;
	for (int i = 0; i < pc->nblock; i++)
		if (!bb || pc->block[i].n < bb)
			bb = pc->block[i].n;
	for (s = req->nodes < bb ? req->nodes : bb; s > 1; s--)
		if (req->nodes % s == 0)
			break;
	return s;
}

/*
 * --segment=S (eval_nodes_block.c): each segment of S nodes is placed as a
 * job of its own by the block algorithm (its level from S nodes, best
 * fit), on the nodes the segments before it left. 0 or -ENOSPC.
 */
static int place_segments(struct sim_policy_ctx *pc, const uint64_t *fm,
			  const struct isle_place_req *req, int need,
			  struct isle_place_result *res)
{
	int seg = segment_of(pc, req), n = pc->t->nnodes, got = 0, rc, i, k;
	int *nodes = NULL;
	uint64_t *left = NULL;

	if (seg <= 1 || !pc->gpn)
		return place_block(pc, fm, need, 0, res);
	left = malloc(((size_t)n + 1) * sizeof(*left));
	nodes = malloc(((size_t)req->nodes + 1) * sizeof(*nodes));
	rc = -ENOMEM;
	if (!left || !nodes)
		goto out;
	memcpy(left, fm, (size_t)n * sizeof(*left));
	for (k = 0; k < req->nodes / seg; k++) {
		rc = place_block(pc, left, seg * pc->gpn, 0, res);
		if (rc)
			goto out;
		for (i = 0; i < res->nnodes; i++) {
			nodes[got++] = res->nodes[i];
			left[res->nodes[i]] = 0;
		}
	}
	/* the segments' nodes in the order chosen, then GPUs as block takes
	 * them */
	memcpy(pc->order, nodes, (size_t)got * sizeof(int));
	rc = take_in_order(pc, pc->order, got, fm, need, res);
out:
	free(left);
	free(nodes);
	return rc;
}

void sim_policy_set_release(struct sim_policy_ctx *pc, int release)
{
	pc->release = release;
}

void sim_policy_set_waited(struct sim_policy_ctx *pc, double waited)
{
	pc->waited = waited;
}

void sim_policy_set_max_switch_wait(struct sim_policy_ctx *pc, double s)
{
	pc->max_switch_wait = s;
}

int sim_release_parse(const char *s)
{
	unsigned maj, min;
	int n = 0;

	if (sscanf(s, "%u.%u%n", &maj, &min, &n) != 2 || (s[n] && s[n] != '.'))
		return -EINVAL;
	if (maj == 24 && min == 11)
		return 2411;
	if (maj == 25 && min == 11)
		return 2511;
	if (maj == 26 && min == 5)
		return 2605;
	return -EINVAL;
}

/* Slurm 26.05's _get_one_res: one node, the first that fits, wherever the
 * topology plugin allows it (tree, block and flat, which is linear's). */
static bool one_node_first_fit(const struct sim_policy_ctx *pc,
			       const struct isle_place_req *req)
{
	if (pc->release < 2605 || req->nodes != 1)
		return false;
	return pc->p == SIM_TREE || pc->p == SIM_TREE_SW ||
	       pc->p == SIM_BLOCK || pc->p == SIM_BLOCK_SEG ||
	       pc->p == SIM_LINEAR;
}

int sim_policy_place(struct sim_policy_ctx *pc, const uint64_t *fm,
		     const struct isle_place_req *req,
		     struct isle_place_result *res)
{
	int need = req->gpus, i, rc;

	if (pc->p == SIM_ISLE || pc->p == SIM_ISLE_CC || pc->p == SIM_ISLE_SHIM)
		return isle_place(pc->eng, fm, NULL, req, res);
	pc->gpn = req->gpus_per_node;
	if (!need)
		need = req->nodes * req->gpus_per_node;
	rc = isle_place_result_reserve(res, pc->t->nnodes, need);
	if (rc)
		return rc;
	res->reason[0] = '\0';
	if (one_node_first_fit(pc, req)) {
		for (i = 0; i < pc->t->nnodes; i++)
			pc->order[i] = i;
		pc->gpn = need; /* all of it on the one node */
		rc = take_in_order(pc, pc->order, pc->t->nnodes, fm, need, res);
		goto placed;
	}
	switch (pc->p) {
	case SIM_LINEAR:
		rc = place_consec(pc, fm, req, need, res);
		break;
	case SIM_TREE:
	case SIM_TREE_SW:
		/* --switches=1 holds until the job has waited
		 * max_switch_wait (Slurm then takes any switches) */
		rc = place_tree(pc, fm, need,
				pc->p == SIM_TREE_SW &&
				    pc->waited < pc->max_switch_wait,
				res);
		break;
	case SIM_BLOCK:
		rc = place_block(pc, fm, need, 0, res);
		break;
	case SIM_BLOCK_SEG:
		rc = place_segments(pc, fm, req, need, res);
		break;
	case SIM_RANDOM:
		rc = place_random(pc, fm, need, res);
		break;
	default:
		rc = -EINVAL;
	}
placed:
	if (rc) {
		res->nnodes = res->nranks = 0;
		return rc;
	}
	/* nodes ascending, as the engine reports them */
	for (i = 1; i < res->nnodes; i++) {
		int n = res->nodes[i], j = i - 1;
		uint64_t m = res->masks[i];

		while (j >= 0 && res->nodes[j] > n) {
			res->nodes[j + 1] = res->nodes[j];
			res->masks[j + 1] = res->masks[j];
			j--;
		}
		res->nodes[j + 1] = n;
		res->masks[j + 1] = m;
	}
	res->tp = req->tp;
	res->pp = req->pp;
	res->dp = need / (req->tp * req->pp);
	return 0;
}

int sim_policy_place_later(struct sim_policy_ctx *pc, const uint64_t *fm_later,
			   const uint64_t *fm_now,
			   const struct isle_place_req *req,
			   struct isle_place_result *res)
{
	if (pc->p == SIM_ISLE || pc->p == SIM_ISLE_CC || pc->p == SIM_ISLE_SHIM)
		return isle_place_later(pc->eng, fm_later, fm_now, NULL, req,
					res);
	return sim_policy_place(pc, fm_later, req, res);
}
