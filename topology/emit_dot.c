/*
 * emit_dot.c - Graphviz picture of the cluster.
 *
 * Switches are boxes ranked by level (core on top), nodes sit below their
 * switches, each rack is a grey cluster around its nodes, each multi-node
 * NVLink domain a dashed cluster (inside its rack when it has one), and a
 * node's label lists its intra-node islands. Nodes appear left to right in
 * name order, and cluster labels sit at the bottom, away from the cables
 * coming down. Nodes of a job share a fill
 * colour, with a legend.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

static const char *const palette[] = {
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
    "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9",
};
#define NPALETTE (int)(sizeof(palette) / sizeof(palette[0]))

static const char *const level_fill[] = {
    [ISLE_SW_LEAF] = "#e0ecff",
    [ISLE_SW_SPINE] = "#c6dbef",
    [ISLE_SW_CORE] = "#9ecae1",
    [ISLE_SW_UNKNOWN] = "#eeeeee",
};

/* DOT string literal. */
static void q(FILE *out, const char *prefix, const char *s)
{
	fputc('"', out);
	fputs(prefix, out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void emit_node(const isle_topo *t, int i, const int *job_of_node,
		      FILE *out)
{
	const struct isle_node *n = &t->nodes[i];
	int job = job_of_node ? job_of_node[i] : -1;

	fputs("    ", out);
	q(out, "n:", n->name);
	fprintf(out,
		" [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", "
		"label=\"",
		job >= 0 ? palette[job % NPALETTE] : "white");
	for (const char *p = n->name; *p; p++)
		fprintf(out, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
	fprintf(out, "\\n%d GPU", n->ngpus);
	if (n->domain < 0 && n->nislands > 1) {
		/* One line per island: "nvl0: 0-3". */
		for (int k = 0; k < n->nislands; k++) {
			const struct isle_island *is =
			    &t->islands[n->first_island + k];

			fprintf(out, "\\nnvl%d: %d", k, is->members[0].gpu);
			if (is->ngpus > 1)
				fprintf(out, "%s%d",
					is->ngpus ==
						is->members[is->ngpus - 1].gpu -
						    is->members[0].gpu + 1
					    ? "-"
					    : "..",
					is->members[is->ngpus - 1].gpu);
		}
	}
	fputs("\"];\n", out);
}

static int cmp_node_name(const void *a, const void *b, void *arg)
{
	const isle_topo *t = arg;

	return strverscmp(t->nodes[*(const int *)a].name,
			  t->nodes[*(const int *)b].name);
}

/* The rack all of the domain's nodes are in, else -1. */
static int domain_rack(const isle_topo *t, const struct isle_island *is)
{
	int r = is->nnodes ? t->nodes[is->nodes[0]].rack : -1;

	for (int k = 1; k < is->nnodes; k++)
		if (t->nodes[is->nodes[k]].rack != r)
			return -1;
	return r;
}

/* Domains of rack r (-1: those in no single rack) and the loose nodes of
 * rack r (-1: of no rack). order[] is in name order; dot places the nodes
 * of a cluster right to left in the order they are declared, others left
 * to right, so nodes in a cluster are declared last name first. */
static void emit_group(const isle_topo *t, int r, const int *order,
		       const int *job_of_node, FILE *out)
{
	for (int d = 0; d < t->nislands; d++) {
		const struct isle_island *is = &t->islands[d];

		if (!is->multi_node || domain_rack(t, is) != r)
			continue;
		fprintf(out, "  subgraph cluster_d%d {\n    label=", d);
		q(out, "NVLink domain ", is->name);
		fputs("; labelloc=b; style=dashed;\n", out);
		for (int k = t->nnodes - 1; k >= 0; k--)
			if (t->nodes[order[k]].domain == d)
				emit_node(t, order[k], job_of_node, out);
		fputs("  }\n", out);
	}
	for (int i = 0; i < t->nnodes; i++) {
		int k = r >= 0 ? t->nnodes - 1 - i : i;
		const struct isle_node *n = &t->nodes[order[k]];

		if (n->rack == r && n->domain < 0)
			emit_node(t, order[k], job_of_node, out);
	}
}

int isle_emit_dot(const isle_topo *t, const int *job_of_node,
		  const char *const *job_names, int njobs, FILE *out)
{
	int *order = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	int *down = malloc(((size_t)t->nnodes + 1) * sizeof(int));

	if (!order || !down) {
		free(order);
		free(down);
		return -ENOMEM;
	}
	for (int i = 0; i < t->nnodes; i++)
		order[i] = i;
	qsort_r(order, (size_t)t->nnodes, sizeof(int), cmp_node_name,
		(void *)t);

	fputs("graph cluster {\n", out);
	fputs("  graph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, "
	      "label=",
	      out);
	q(out, "", t->name ? t->name : "cluster");
	fprintf(out, "];\n  node [fontname=\"Helvetica\", fontsize=10];\n");

	/* Switches, one rank per level, core first. */
	for (int level = ISLE_SW_CORE; level >= ISLE_SW_LEAF; level--) {
		int any = 0;

		for (int s = 0; s < t->nswitches; s++) {
			const struct isle_switch *sw = &t->switches[s];

			if (sw->level != (isle_sw_level)level &&
			    !(level == ISLE_SW_CORE &&
			      sw->level == ISLE_SW_UNKNOWN))
				continue;
			if (!any++)
				fputs("  { rank=same;\n", out);
			fputs("    ", out);
			q(out, "s:", sw->name);
			fprintf(out,
				" [shape=box, style=filled, fillcolor=\"%s\", "
				"label=",
				level_fill[sw->level]);
			q(out, "", sw->name);
			fputs("];\n", out);
		}
		if (any)
			fputs("  }\n", out);
	}

	/* Nodes: racks and domains as clusters, the rest loose. */
	for (int r = 0; r < t->nracks; r++) {
		if (!t->racks[r].nnodes)
			continue;
		fprintf(out, "  subgraph cluster_r%d {\n    label=", r);
		q(out, "rack ", t->racks[r].name);
		fputs("; labelloc=b; style=filled; fillcolor=\"#f4f4f4\"; "
		      "color=\"#bbbbbb\";\n",
		      out);
		emit_group(t, r, order, job_of_node, out);
		fputs("  }\n", out);
	}
	emit_group(t, -1, order, job_of_node, out);

	/* Cables: switch-switch, then switch-node once per pair. */
	for (int s = 0; s < t->nswitches; s++) {
		const struct isle_switch *sw = &t->switches[s];

		for (int k = 0; k < sw->ndown; k++) {
			fputs("  ", out);
			q(out, "s:", sw->name);
			fputs(" -- ", out);
			q(out, "s:", t->switches[sw->down[k]].name);
			fputs(";\n", out);
		}
		/* nodes is NULL on a switch without nodes: no memcpy. */
		if (sw->nnodes)
			memcpy(down, sw->nodes,
			       (size_t)sw->nnodes * sizeof(int));
		qsort_r(down, (size_t)sw->nnodes, sizeof(int), cmp_node_name,
			(void *)t);
		for (int k = 0; k < sw->nnodes; k++) {
			fputs("  ", out);
			q(out, "s:", sw->name);
			fputs(" -- ", out);
			q(out, "n:", t->nodes[down[k]].name);
			fputs(";\n", out);
		}
	}
	free(order);
	free(down);

	if (job_names && njobs > 0) {
		fputs("  subgraph cluster_legend {\n    label=\"jobs\";\n",
		      out);
		for (int j = 0; j < njobs; j++) {
			fprintf(out,
				"    \"job:%d\" [shape=box, style=filled, "
				"fillcolor=\"%s\", label=",
				j, palette[j % NPALETTE]);
			q(out, "", job_names[j]);
			fputs("];\n", out);
		}
		fputs("  }\n", out);
	}
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}
