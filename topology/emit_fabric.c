/*
 * emit_fabric.c - the cluster's data network as bridges and cables, for the
 * emulated fabric of the test cluster (tests/cluster/fabric.sh).
 *
 * The emulation is one layer-2 tree, so every switch keeps one uplink: its
 * first parent. Parallel uplinks of a fat tree become that one cable, rated
 * at what the switch's nodes can push through the tier above (summed node
 * rates over the tier's oversubscription). A multi-node NVLink domain is a
 * bridge of its own: its nodes are cabled to it at NVLink rate and it is
 * cabled to the leaf of its first node at the nodes' summed NIC rate.
 * Output format: docs/cluster-file.md, "Emitters".
 */
#include <errno.h>
#include <stdlib.h>

#include "isle_topo.h"

/* Gbit/s of one node at a tier: GPUs x GB/s per GPU x 8. */
static double node_gbit(const isle_topo *t, int n, double bw_gbps)
{
	int g = t->nodes[n].ngpus > 0 ? t->nodes[n].ngpus : 1;

	return g * bw_gbps * 8.0;
}

/* Effective per-GPU bandwidth (isle_topo_tier_bw divides by oversub). */
static double eff_bw(const isle_topo *t, isle_tier tier)
{
	return isle_topo_tier_bw(t, tier);
}

int isle_emit_fabric(const isle_topo *t, FILE *out)
{
	double *down = NULL; /* Gbit/s of nodes below each switch, at leaf bw */
	int *dom_leaf = NULL, nroots = 0, root_used = 0;
	int rc = 0;

	if (!t || !out || !t->finalized)
		return -EINVAL;
	down = calloc((size_t)t->nswitches + 1, sizeof(*down));
	dom_leaf = malloc(((size_t)t->nislands + 1) * sizeof(*dom_leaf));
	if (!down || !dom_leaf) {
		free(down);
		free(dom_leaf);
		return -ENOMEM;
	}
	fprintf(out, "# isle fabric: bridges and cables (rates in Gbit/s, "
		     "full scale; latency in us)\n");
	for (int i = 0; i < ISLE_TIER_COUNT; i++)
		fprintf(out, "tier %s %g %g %g\n", isle_tier_name((isle_tier)i),
			t->tier[i].bw_gbps, isle_topo_tier_lat(t, (isle_tier)i),
			t->tier[i].oversub >= 1.0 ? t->tier[i].oversub : 1.0);

	/* Node rates summed up the tree (first parents only). */
	for (int n = 0; n < t->nnodes; n++) {
		int s = t->nodes[n].leaf, hops = 0;
		double r = node_gbit(t, n, eff_bw(t, ISLE_TIER_LEAF));

		while (s >= 0 && hops++ < t->nswitches) {
			down[s] += r;
			s = t->switches[s].nup > 0 ? t->switches[s].up[0] : -1;
		}
	}
	for (int s = 0; s < t->nswitches; s++)
		if (t->switches[s].nup == 0)
			nroots++;
	for (int n = 0; n < t->nnodes; n++)
		if (t->nodes[n].leaf < 0 && t->nodes[n].domain < 0)
			nroots++;

	for (int s = 0; s < t->nswitches; s++) {
		const struct isle_switch *sw = &t->switches[s];

		fprintf(out, "switch %s %s\n", sw->name,
			isle_sw_level_name(sw->level));
	}
	for (int d = 0; d < t->nislands; d++) {
		const struct isle_island *is = &t->islands[d];

		dom_leaf[d] = -1;
		if (!is->multi_node)
			continue;
		fprintf(out, "switch %s domain\n", is->name);
		for (int k = 0; k < is->nnodes && dom_leaf[d] < 0; k++)
			dom_leaf[d] = t->nodes[is->nodes[k]].leaf;
		if (dom_leaf[d] < 0)
			nroots++;
	}
	/* Several trees (or nodes off the fabric): join them at a core. */
	if (nroots > 1) {
		fprintf(out, "switch fabric-root core\n");
		root_used = 1;
	}

	for (int n = 0; n < t->nnodes; n++) {
		const struct isle_node *nd = &t->nodes[n];

		if (nd->domain >= 0) {
			const struct isle_island *is = &t->islands[nd->domain];
			double bw =
			    is->bw_gbps > 0
				? is->bw_gbps
				: isle_topo_tier_bw(t, ISLE_TIER_ISLAND);

			fprintf(out, "node %s %d %s\n", nd->name, nd->ngpus,
				is->name);
			fprintf(out, "cable %s %s %g %g island\n", nd->name,
				is->name, node_gbit(t, n, bw),
				isle_topo_tier_lat(t, ISLE_TIER_ISLAND));
		} else {
			const char *to =
			    nd->leaf >= 0 ? t->switches[nd->leaf].name
					  : (root_used ? "fabric-root" : NULL);

			fprintf(out, "node %s %d %s\n", nd->name, nd->ngpus,
				to ? to : "-");
			if (to)
				fprintf(
				    out, "cable %s %s %g %g leaf\n", nd->name,
				    to,
				    node_gbit(t, n, eff_bw(t, ISLE_TIER_LEAF)),
				    isle_topo_tier_lat(t, ISLE_TIER_LEAF));
		}
	}
	/* NVLink island of every GPU, for telling split TP groups. */
	for (int n = 0; n < t->nnodes; n++) {
		const struct isle_node *nd = &t->nodes[n];

		fprintf(out, "gpus %s", nd->name);
		for (int g = 0; g < nd->ngpus; g++)
			fprintf(out, " %s",
				nd->gpus[g].island >= 0
				    ? t->islands[nd->gpus[g].island].name
				    : "-");
		fprintf(out, "\n");
	}
	for (int d = 0; d < t->nislands; d++) {
		const struct isle_island *is = &t->islands[d];
		double r = 0;
		const char *to;

		if (!is->multi_node)
			continue;
		for (int k = 0; k < is->nnodes; k++)
			r += node_gbit(t, is->nodes[k],
				       eff_bw(t, ISLE_TIER_LEAF));
		to = dom_leaf[d] >= 0 ? t->switches[dom_leaf[d]].name
				      : (root_used ? "fabric-root" : NULL);
		if (to)
			fprintf(out, "cable %s %s %g %g leaf\n", is->name, to,
				r, isle_topo_tier_lat(t, ISLE_TIER_LEAF));
	}
	for (int s = 0; s < t->nswitches; s++) {
		const struct isle_switch *sw = &t->switches[s];
		const char *to = sw->nup > 0
				     ? t->switches[sw->up[0]].name
				     : (root_used ? "fabric-root" : NULL);
		/* The cable above a leaf is the spine tier, above a spine
		 * the core tier: its oversubscription divides the rate. */
		isle_tier tier = sw->level == ISLE_SW_LEAF ? ISLE_TIER_SPINE
							   : ISLE_TIER_CORE;
		double o =
		    t->tier[tier].oversub >= 1.0 ? t->tier[tier].oversub : 1.0;

		if (!to)
			continue;
		if (down[s] <= 0)
			down[s] = 1; /* nothing below: keep the cable alive */
		fprintf(out, "cable %s %s %g %g %s\n", sw->name, to,
			down[s] / o, isle_topo_tier_lat(t, tier),
			isle_tier_name(tier));
	}
	if (ferror(out))
		rc = -EIO;
	free(down);
	free(dom_leaf);
	return rc;
}
