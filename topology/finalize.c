/*
 * finalize.c - isle_topo_finalize(): derived islands, switch levels, tier
 * groups and the checks that need the whole model; and the NVLink
 * bandwidth derived from GPU models.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"

/* --- Finalize ------------------------------------------------------------ */

/* Union-find with path halving; the smaller index becomes the root so the
 * numbering of groups follows node order. */
static int uf_find(int *p, int x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

static void uf_union(int *p, int a, int b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a < b)
		p[b] = a;
	else if (b < a)
		p[a] = b;
}

/* Relabels the roots of p[0..n) as 0, 1, ... in order of first appearance;
 * writes the label of each element to out and returns the count. */
static int uf_label(int *p, int n, int *out, int *tmp)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		tmp[i] = -1;
	for (int i = 0; i < n; i++) {
		int r = uf_find(p, i);

		if (tmp[r] < 0)
			tmp[r] = count++;
		out[i] = tmp[r];
	}
	return count;
}

static int new_island(isle_topo *t, struct isle_island **out)
{
	int rc = isle__grow((void **)&t->islands, &t->cap_islands,
			    t->nislands + 1, sizeof(*t->islands));

	if (rc)
		return rc;
	*out = &t->islands[t->nislands];
	memset(*out, 0, sizeof(**out));
	return 0;
}

/* Fills a domain island's member list from its nodes. */
static int fill_domain(isle_topo *t, int idx)
{
	struct isle_island *is = &t->islands[idx];
	int n = 0;

	for (int i = 0; i < is->nnodes; i++)
		n += t->nodes[is->nodes[i]].ngpus;
	free(is->members);
	is->members = malloc((size_t)(n ? n : 1) * sizeof(*is->members));
	if (!is->members)
		return -ENOMEM;
	is->ngpus = 0;
	for (int i = 0; i < is->nnodes; i++) {
		struct isle_node *nd = &t->nodes[is->nodes[i]];

		for (int g = 0; g < nd->ngpus; g++) {
			is->members[is->ngpus].node = is->nodes[i];
			is->members[is->ngpus].gpu = g;
			is->ngpus++;
			nd->gpus[g].island = idx;
		}
		nd->first_island = idx;
		nd->nislands = nd->ngpus ? 1 : 0;
	}
	return 0;
}

/* Islands of one node without a domain: connected components of its NVLink
 * graph, numbered by their lowest GPU. */
static int node_islands(isle_topo *t, int ni, char *err, size_t errlen)
{
	struct isle_node *n = &t->nodes[ni];
	int p[ISLE_MAX_GPUS_PER_NODE], label[ISLE_MAX_GPUS_PER_NODE];
	int tmp[ISLE_MAX_GPUS_PER_NODE];
	int count, base = t->nislands;

	for (int a = 0; a < n->ngpus; a++)
		p[a] = a;
	for (int a = 0; a < n->ngpus; a++)
		for (int b = a + 1; b < n->ngpus; b++)
			if (n->nvlinks[a * n->ngpus + b])
				uf_union(p, a, b);
	count = uf_label(p, n->ngpus, label, tmp);
	for (int c = 0; c < count; c++) {
		struct isle_island *is;
		int rc = new_island(t, &is);

		if (rc)
			return rc;
		if (asprintf(&is->name, "%s:nvl%d", n->name, c) < 0)
			is->name = NULL;
		is->nodes = malloc(sizeof(int));
		is->members = malloc((size_t)n->ngpus * sizeof(*is->members));
		if (!is->name || !is->nodes || !is->members) {
			isle__free_island(is);
			return -ENOMEM;
		}
		is->nnodes = 1;
		is->nodes[0] = ni;
		rc = isle__index_put(t->island_idx, is->name, t->nislands);
		if (rc == -EEXIST)
			rc = isle__errf(-EINVAL, err, errlen,
					"island name '%s' of node '%s' clashes "
					"with a domain name",
					is->name, n->name);
		if (rc) {
			isle__free_island(is);
			return rc;
		}
		t->nislands++;
	}
	for (int g = 0; g < n->ngpus; g++) {
		struct isle_island *is = &t->islands[base + label[g]];

		is->members[is->ngpus].node = ni;
		is->members[is->ngpus].gpu = g;
		is->ngpus++;
		n->gpus[g].island = base + label[g];
	}
	n->first_island = count ? base : -1;
	n->nislands = count;
	return 0;
}

/* Levels where unknown: leafs hold nodes, spines hold leafs, cores the rest. */
static void derive_levels(isle_topo *t)
{
	int i, k;

	for (i = 0; i < t->nswitches; i++)
		if (t->switches[i].level == ISLE_SW_UNKNOWN &&
		    t->switches[i].nnodes > 0)
			t->switches[i].level = ISLE_SW_LEAF;
	for (i = 0; i < t->nswitches; i++) {
		struct isle_switch *s = &t->switches[i];

		if (s->level != ISLE_SW_UNKNOWN)
			continue;
		for (k = 0; k < s->ndown; k++)
			if (t->switches[s->down[k]].level == ISLE_SW_LEAF)
				break;
		if (k < s->ndown)
			s->level = ISLE_SW_SPINE;
	}
	for (i = 0; i < t->nswitches; i++)
		if (t->switches[i].level == ISLE_SW_UNKNOWN)
			t->switches[i].level = ISLE_SW_CORE;
}

/*
 * Tier groups of the nodes:
 *  LEAF:  nodes sharing any switch they are cabled to (union-find), so all
 *         rails of a rail-optimized scalable unit form one group;
 *  SPINE: leaf groups sharing a parent switch;
 *  CORE:  connected parts of the fabric (switch links, plus switches that
 *         share a node, for fabrics built as separate planes per rail).
 * A node without switch ports is a leaf and spine group of its own; all such
 * nodes share one CORE group (they are assumed to reach each other over some
 * network, like the rest of the cluster).
 */
static int derive_groups(isle_topo *t)
{
	int nn = t->nnodes, ns = t->nswitches;
	int *p = NULL, *q = NULL, *tmp = NULL, *lab = NULL, *rep = NULL;
	int *first = NULL, *sp = NULL;
	int rc = -ENOMEM, i, k, count, loose;

	p = malloc((size_t)(nn + 1) * sizeof(int));
	q = malloc((size_t)(nn + 1) * sizeof(int));
	tmp = malloc((size_t)(nn + ns + 1) * sizeof(int));
	lab = malloc((size_t)(nn + ns + 1) * sizeof(int));
	first = malloc((size_t)(nn + 1) * sizeof(int));
	rep = malloc((size_t)(ns + 1) * sizeof(int));
	sp = malloc((size_t)(ns + 1) * sizeof(int));
	if (!p || !q || !tmp || !lab || !first || !rep || !sp)
		goto out;

	/* LEAF */
	for (i = 0; i < nn; i++) {
		p[i] = i;
		first[i] = -1;
	}
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];

		for (k = 0; k < s->nnodes; k++) {
			uf_union(p, s->nodes[0], s->nodes[k]);
			if (first[s->nodes[k]] < 0)
				first[s->nodes[k]] = i;
		}
	}
	t->ngroups[ISLE_TIER_LEAF] = uf_label(p, nn, lab, tmp);
	for (i = 0; i < nn; i++)
		t->nodes[i].group[ISLE_TIER_LEAF] = lab[i];

	/* SPINE, over leaf groups; rep[s] is a leaf group below switch s. */
	for (i = 0; i < t->ngroups[ISLE_TIER_LEAF]; i++)
		q[i] = i;
	for (i = 0; i < ns; i++)
		rep[i] = -1;
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];
		int g;

		if (!s->nnodes)
			continue;
		g = t->nodes[s->nodes[0]].group[ISLE_TIER_LEAF];
		for (k = -1; k < s->nup; k++) {
			int up = k < 0 ? i : s->up[k];

			if (rep[up] < 0)
				rep[up] = g;
			else
				uf_union(q, rep[up], g);
		}
	}
	t->ngroups[ISLE_TIER_SPINE] =
	    uf_label(q, t->ngroups[ISLE_TIER_LEAF], lab, tmp);
	for (i = 0; i < nn; i++)
		t->nodes[i].group[ISLE_TIER_SPINE] =
		    lab[t->nodes[i].group[ISLE_TIER_LEAF]];

	/* CORE, over switches. */
	for (i = 0; i < ns; i++)
		sp[i] = i;
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];

		for (k = 0; k < s->ndown; k++)
			uf_union(sp, i, s->down[k]);
		for (k = 0; k < s->nnodes; k++)
			uf_union(sp, i, first[s->nodes[k]]);
	}
	for (i = 0; i < ns; i++)
		tmp[i] = -1;
	count = 0;
	loose = -1;
	for (i = 0; i < nn; i++) {
		int *g = &t->nodes[i].group[ISLE_TIER_CORE];

		if (first[i] < 0) {
			if (loose < 0)
				loose = count++;
			*g = loose;
			continue;
		}
		k = uf_find(sp, first[i]);
		if (tmp[k] < 0)
			tmp[k] = count++;
		*g = tmp[k];
	}
	t->ngroups[ISLE_TIER_CORE] = count;

	/* Primary leaf: the rail-0 port, else the first cabled port, else the
	 * first switch the node is attached to without a NIC. */
	for (i = 0; i < nn; i++) {
		struct isle_node *n = &t->nodes[i];
		int any = -1, rail0 = -1;

		for (k = 0; k < n->nnics; k++) {
			if (n->nics[k].sw < 0)
				continue;
			if (any < 0)
				any = n->nics[k].sw;
			if (rail0 < 0 && n->nics[k].rail == 0)
				rail0 = n->nics[k].sw;
		}
		n->leaf = rail0 >= 0 ? rail0 : any >= 0 ? any : first[i];
	}
	rc = 0;
out:
	free(p);
	free(q);
	free(tmp);
	free(lab);
	free(first);
	free(rep);
	free(sp);
	return rc;
}

/*
 * Switch links must form a DAG (parents above children): a file that lists
 * spines under leafs and leafs under spines has cycles, and every walk down
 * the fabric would loop. Iterative DFS (no recursion on a user-sized graph);
 * on a back edge the message names the switches on the cycle.
 */
static int check_switch_cycles(const isle_topo *t, char *err, size_t errlen)
{
	int ns = t->nswitches, rc = 0, depth, i, k, start;
	/* state: 0 unseen, 1 on the DFS path, 2 done */
	char *state = calloc((size_t)ns + 1, 1);
	int *path = malloc(((size_t)ns + 1) * sizeof(int));
	int *next = malloc(((size_t)ns + 1) * sizeof(int));
	char *msg = NULL;
	size_t len = 0;
	FILE *f;

	if (!state || !path || !next) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ns; i++) {
		if (state[i])
			continue;
		depth = 0;
		path[0] = i;
		next[0] = 0;
		state[i] = 1;
		while (depth >= 0) {
			const struct isle_switch *s = &t->switches[path[depth]];

			if (next[depth] >= s->ndown) {
				state[path[depth--]] = 2;
				continue;
			}
			k = s->down[next[depth]++];
			if (state[k] == 2)
				continue;
			if (state[k] == 0) {
				state[k] = 1;
				path[++depth] = k;
				next[depth] = 0;
				continue;
			}
			/* k is on the path: the cycle is path[start..depth]. */
			for (start = depth; path[start] != k; start--)
				;
			f = open_memstream(&msg, &len);
			if (!f) {
				rc = -ENOMEM;
				goto out;
			}
			for (int d = start; d <= depth; d++)
				fprintf(f, "%s -> ", t->switches[path[d]].name);
			fprintf(f, "%s", t->switches[k].name);
			fclose(f);
			rc =
			    isle__errf(-EINVAL, err, errlen,
				       "switch links form a cycle (a switch is "
				       "below itself): %s",
				       msg ? msg : "?");
			goto out;
		}
	}
out:
	free(msg);
	free(state);
	free(path);
	free(next);
	return rc;
}

int isle_topo_finalize(isle_topo *t, char *err, size_t errlen)
{
	int rc, i;

	if (!t)
		return isle__errf(-EINVAL, err, errlen, "no model");
	rc = isle__drop_derived_islands(t);
	if (rc)
		goto out;
	for (i = 0; i < t->nswitches; i++)
		isle__sort_unique(t->switches[i].nodes, &t->switches[i].nnodes);
	for (i = 0; i < t->nislands; i++) {
		rc = fill_domain(t, i);
		if (rc)
			goto out;
	}
	t->total_gpus = 0;
	for (i = 0; i < t->nnodes; i++) {
		t->total_gpus += t->nodes[i].ngpus;
		if (t->nodes[i].domain >= 0)
			continue;
		rc = node_islands(t, i, err, errlen);
		if (rc)
			goto out;
	}
	rc = check_switch_cycles(t, err, errlen);
	if (rc)
		goto out;
	t->ngroups[ISLE_TIER_ISLAND] = t->nislands;
	t->ngroups[ISLE_TIER_NODE] = t->nnodes;
	derive_levels(t);
	rc = derive_groups(t);
	if (rc)
		goto out;
	t->finalized = 1;
out:
	if (rc == -ENOMEM)
		isle__errf(rc, err, errlen, "out of memory");
	return rc;
}
/* NVLink links per GPU and GB/s per link and direction, by GPU model. */
static const struct {
	const char *tag;
	int links;
	double gbps;
} nvlink_gen[] = {
    {"P100", 4, 20.0},	 {"V100", 6, 25.0},   {"A100", 12, 25.0},
    {"A800", 8, 25.0},	 {"H100", 18, 25.0},  {"H200", 18, 25.0},
    {"H800", 8, 25.0},	 {"GB200", 18, 50.0}, {"B200", 18, 50.0},
    {"GB300", 18, 50.0}, {"B300", 18, 50.0},
};

double isle_topo_derive_nvlink_bw(isle_topo *t)
{
	double bw = 0.0;

	if (!t || t->tier[ISLE_TIER_ISLAND].bw_gbps !=
		      isle__default_tier[ISLE_TIER_ISLAND].bw_gbps)
		return 0.0;
	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];

		for (int a = 0; a < n->ngpus; a++) {
			const char *model = n->gpus[a].model;
			long sum = 0;
			size_t k;

			for (int b = 0; b < n->ngpus; b++)
				sum += n->nvlinks[a * n->ngpus + b];
			if (!sum)
				continue;
			/* An unknown model leaves the default alone. */
			for (k = 0; model && k < sizeof(nvlink_gen) /
						     sizeof(nvlink_gen[0]);
			     k++)
				if (strstr(model, nvlink_gen[k].tag))
					break;
			if (!model ||
			    k == sizeof(nvlink_gen) / sizeof(nvlink_gen[0]))
				return 0.0;
			/* Behind NVSwitches every pair shows the GPU's own
			 * link count: a row sum above it is the switch. */
			if (sum > nvlink_gen[k].links)
				sum = nvlink_gen[k].links;
			if (bw == 0.0 || sum * nvlink_gen[k].gbps < bw)
				bw = (double)sum * nvlink_gen[k].gbps;
		}
	}
	if (bw > 0.0)
		t->tier[ISLE_TIER_ISLAND].bw_gbps = bw;
	return bw;
}
