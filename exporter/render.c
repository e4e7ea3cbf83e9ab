/*
 * render.c - the metrics of a snapshot, as OpenMetrics or as the
 * Prometheus text format 0.0.4 (the same families and samples; 0.0.4 names
 * a counter's family with its _total and has no UNIT or EOF lines).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "isle_exporter.h"

static const char *const src_names[ISLE_EXP_SRC_COUNT] = {
    [ISLE_EXP_SRC_TOPOLOGY] = "topology",
    [ISLE_EXP_SRC_NODES] = "nodes",
    [ISLE_EXP_SRC_CLUSTER_FILE] = "cluster_file",
    [ISLE_EXP_SRC_STORE] = "store",
    [ISLE_EXP_SRC_REPORTS] = "reports",
};

const char *isle_exp_source_name(int src)
{
	return src >= 0 && src < ISLE_EXP_SRC_COUNT ? src_names[src] : NULL;
}

enum isle_exp_format isle_exp_negotiate(const char *accept)
{
	return accept && strcasestr(accept, "application/openmetrics-text")
		   ? ISLE_EXP_OPENMETRICS
		   : ISLE_EXP_TEXT;
}

/* --- fragmentation ----------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct isle_exp_node *)a)->name,
		      ((const struct isle_exp_node *)b)->name);
}

double isle_exp_fragmentation(isle_place_ctx *ctx, const isle_topo *t,
			      const struct isle_exp_topo *st,
			      const struct isle_exp_nodes *nodes)
{
	uint64_t *free_gpus = NULL;
	struct isle_exp_node *sorted = NULL;
	double frag = -1.0;
	int matched = 0;

	if (!ctx || !t || !st || st->fallback || !nodes)
		return -1.0;
	free_gpus =
	    calloc((size_t)(t->nnodes ? t->nnodes : 1), sizeof(uint64_t));
	sorted = malloc((size_t)(nodes->n ? nodes->n : 1) * sizeof(*sorted));
	if (!free_gpus || !sorted)
		goto out;
	/* Islands inside one node: topology/isle's free count per island,
	 * as the first free members (the score counts, never which). */
	for (int i = 0; i < st->nislands; i++) {
		const struct isle_exp_island *si = &st->islands[i];
		int k = isle_topo_find_island(t, si->name);
		const struct isle_island *isl;

		if (k < 0)
			goto out;
		isl = &t->islands[k];
		if (isl->multi_node)
			continue;
		if (si->free_gpus > isl->ngpus)
			goto out;
		for (int m = 0; m < si->free_gpus; m++)
			free_gpus[isl->members[m].node] |=
			    1ULL << isl->members[m].gpu;
		matched++;
	}
	/* Nodes of multi-node domains: their free count from Slurm. */
	memcpy(sorted, nodes->v, (size_t)nodes->n * sizeof(*sorted));
	qsort(sorted, (size_t)nodes->n, sizeof(*sorted), by_name);
	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];
		struct isle_exp_node key = {.name = n->name}, *sn;
		int f;

		if (n->domain < 0)
			continue;
		sn = bsearch(&key, sorted, (size_t)nodes->n, sizeof(*sorted),
			     by_name);
		f = sn && sn->usable ? sn->gpus - sn->used : 0;
		if (f > n->ngpus)
			f = n->ngpus;
		free_gpus[i] = f >= 64 ? ~0ULL : (1ULL << f) - 1;
		matched++;
	}
	if (matched)
		frag = isle_place_fragmentation(ctx, free_gpus);
out:
	free(free_gpus);
	free(sorted);
	return frag;
}

/* --- text -------------------------------------------------------------- */

struct sb {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t nc = b->cap * 2 + (size_t)n;
		char *np = realloc(b->p, nc);

		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
}

/* A label value with \, " and newlines escaped (both formats). */
static void sb_label(struct sb *b, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\')
			sb_printf(b, "\\\\");
		else if (*v == '"')
			sb_printf(b, "\\\"");
		else if (*v == '\n')
			sb_printf(b, "\\n");
		else
			sb_printf(b, "%c", *v);
	}
}

static void sb_double(struct sb *b, double v)
{
	char buf[64];

	isle_fmt_double(buf, sizeof(buf), v);
	sb_printf(b, "%s", buf);
}

enum kind { GAUGE, COUNTER, SUMMARY, HISTOGRAM, INFO };

static const char *const kind_names[] = {"gauge", "counter", "summary",
					 "histogram", "info"};

/* The family header. OpenMetrics: counters and infos are named without
 * _total / _info, a unit where the name ends in one. 0.0.4: the sample
 * name, and an info is a gauge. */
static void family(struct sb *b, enum isle_exp_format f, const char *name,
		   enum kind k, const char *unit, const char *help)
{
	if (f == ISLE_EXP_OPENMETRICS) {
		sb_printf(b, "# TYPE %s %s\n", name, kind_names[k]);
		if (unit)
			sb_printf(b, "# UNIT %s %s\n", name, unit);
		sb_printf(b, "# HELP %s %s\n", name, help);
		return;
	}
	sb_printf(b, "# HELP %s%s %s\n", name,
		  k == COUNTER ? "_total"
		  : k == INFO  ? "_info"
			       : "",
		  help);
	sb_printf(b, "# TYPE %s%s %s\n", name,
		  k == COUNTER ? "_total"
		  : k == INFO  ? "_info"
			       : "",
		  k == INFO ? "gauge" : kind_names[k]);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void islands(struct sb *b, enum isle_exp_format f,
		    const struct isle_exp_topo *st)
{
	int *sizes = malloc((size_t)(st->nislands + 1) * sizeof(int)), n = 0;

	if (!sizes) {
		b->oom = 1;
		return;
	}
	for (int i = 0; i < st->nislands; i++)
		sizes[n++] = st->islands[i].gpus;
	qsort(sizes, (size_t)n, sizeof(int), cmp_int);
	family(b, f, "isle_islands", GAUGE, NULL,
	       "NVLink islands in topology/isle's model, by GPUs per island.");
	for (int i = 0; i < n; i++) {
		int c = 0;

		if (i && sizes[i] == sizes[i - 1])
			continue;
		for (int k = 0; k < st->nislands; k++)
			c += st->islands[k].gpus == sizes[i];
		sb_printf(b, "isle_islands{island_gpus=\"%d\"} %d\n", sizes[i],
			  c);
	}
	family(b, f, "isle_islands_free", GAUGE, NULL,
	       "NVLink islands whose GPUs are all free, by GPUs per island.");
	for (int i = 0; i < n; i++) {
		int c = 0;

		if (i && sizes[i] == sizes[i - 1])
			continue;
		for (int k = 0; k < st->nislands; k++)
			c += st->islands[k].gpus == sizes[i] &&
			     st->islands[k].free_gpus == sizes[i];
		sb_printf(b, "isle_islands_free{island_gpus=\"%d\"} %d\n",
			  sizes[i], c);
	}
	free(sizes);
}

static void gpus(struct sb *b, enum isle_exp_format f,
		 const struct isle_exp_nodes *nodes)
{
	long fr = 0, al = 0, un = 0;

	for (int i = 0; i < nodes->n; i++) {
		const struct isle_exp_node *n = &nodes->v[i];

		al += n->used;
		if (n->usable)
			fr += n->gpus - n->used;
		else
			un += n->gpus - n->used;
	}
	family(b, f, "isle_gpus", GAUGE, NULL,
	       "GPUs of Slurm's nodes by state: free, allocated to jobs, or "
	       "unavailable (node down, drained, failed, not responding).");
	sb_printf(b, "isle_gpus{state=\"free\"} %ld\n", fr);
	sb_printf(b, "isle_gpus{state=\"allocated\"} %ld\n", al);
	sb_printf(b, "isle_gpus{state=\"unavailable\"} %ld\n", un);
}

static void eval(struct sb *b, enum isle_exp_format f,
		 const struct isle_exp_topo *st)
{
	family(b, f, "isle_eval_duration_seconds", HISTOGRAM, "seconds",
	       "Node selections topology/isle (or its fallback) made since "
	       "slurmctld started, timed (its IsleEval line; a call counts "
	       "toward a bound only when its log-linear bucket, 12.5% wide, "
	       "lies wholly below it).");
	for (int i = 0; i < st->neval_le; i++) {
		sb_printf(b, "isle_eval_duration_seconds_bucket{le=\"");
		sb_double(b, (double)st->eval_le_us[i] / 1e6);
		sb_printf(b, "\"} %llu\n",
			  (unsigned long long)st->eval_le_count[i]);
	}
	sb_printf(b, "isle_eval_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		  (unsigned long long)st->eval_calls);
	sb_printf(b, "isle_eval_duration_seconds_sum ");
	sb_double(b, (double)st->eval_sum_us / 1e6);
	sb_printf(b, "\nisle_eval_duration_seconds_count %llu\n",
		  (unsigned long long)st->eval_calls);
	family(b, f, "isle_eval_duration_max_seconds", GAUGE, "seconds",
	       "The longest node selection since slurmctld started.");
	sb_printf(b, "isle_eval_duration_max_seconds ");
	sb_double(b, (double)st->eval_max_us / 1e6);
	sb_printf(b, "\n");
}

static void store(struct sb *b, enum isle_exp_format f,
		  const struct isle_exp_store_stats *s)
{
	family(b, f, "isle_decisions", COUNTER, NULL,
	       "Started jobs by the decision that placed them, one per job, "
	       "counted when its record first appears in the store.");
	for (int o = 0; o < ISLE_OUTCOME_COUNT; o++)
		sb_printf(b, "isle_decisions_total{outcome=\"%s\"} %llu\n",
			  isle_record_outcome_name(o),
			  (unsigned long long)s->decisions[o]);
	family(b, f, "isle_tp_groups_placed", COUNTER, NULL,
	       "Tensor-parallel groups of started jobs isle placed.");
	sb_printf(b, "isle_tp_groups_placed_total %llu\n",
		  (unsigned long long)s->tp_groups_placed);
	family(b, f, "isle_tp_groups_split", COUNTER, NULL,
	       "Tensor-parallel groups of started jobs isle placed across "
	       "more than one NVLink island.");
	sb_printf(b, "isle_tp_groups_split_total %llu\n",
		  (unsigned long long)s->tp_groups_split);
	family(b, f, "isle_placement_cost_ratio", HISTOGRAM, "ratio",
	       "Modelled communication cost of isle's placements over the "
	       "same request on the empty cluster (1 = ideal).");
	for (int i = 0; i < ISLE_EXP_COST_NBOUNDS; i++) {
		sb_printf(b, "isle_placement_cost_ratio_bucket{le=\"");
		sb_double(b, isle_exp_cost_bounds[i]);
		sb_printf(b, "\"} %llu\n", (unsigned long long)s->cost_le[i]);
	}
	sb_printf(b, "isle_placement_cost_ratio_bucket{le=\"+Inf\"} %llu\n",
		  (unsigned long long)s->cost_count);
	sb_printf(b, "isle_placement_cost_ratio_sum ");
	sb_double(b, s->cost_sum);
	sb_printf(b, "\nisle_placement_cost_ratio_count %llu\n",
		  (unsigned long long)s->cost_count);
	family(b, f, "isle_decision_records", GAUGE, NULL,
	       "Files in the decision store: readable records, records being "
	       "written (.new) and files that do not read as records.");
	sb_printf(b, "isle_decision_records{state=\"readable\"} %ld\n",
		  s->records);
	sb_printf(b, "isle_decision_records{state=\"partial\"} %ld\n",
		  s->partial);
	sb_printf(b, "isle_decision_records{state=\"unreadable\"} %ld\n",
		  s->unreadable);
}

static void shim(struct sb *b, enum isle_exp_format f,
		 const struct isle_exp_store_stats *s)
{
	static const char *const path[2] = {"taken", "passed"};

	family(b, f, "isle_shim_jobs_reported", COUNTER, NULL,
	       "Finished jobs whose shim report reached the reports "
	       "directory, counted when first read.");
	sb_printf(b, "isle_shim_jobs_reported_total %llu\n",
		  (unsigned long long)s->jobs_reported);
	family(b, f, "isle_shim_allreduce_calls", COUNTER, NULL,
	       "Allreduce calls of reported jobs the shim ran itself (taken) "
	       "or passed to the library, by payload size class (lower "
	       "bound in bytes); per job the most any rank made.");
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < ISLE_REPORT_CLASSES; k++)
			sb_printf(b,
				  "isle_shim_allreduce_calls_total{path=\"%s\","
				  "size_min_bytes=\"%llu\"} %llu\n",
				  path[p],
				  (unsigned long long)isle_report_class_min(k),
				  (unsigned long long)(p ? s->shim_passed[k]
							 : s->shim_taken[k]));
	family(b, f, "isle_shim_sent_bytes", COUNTER, "bytes",
	       "Bytes the shim's own path sent through each tier of the plan "
	       "(all ranks of reported jobs).");
	for (int t = 0; t < ISLE_REPORT_TIERS; t++)
		sb_printf(b, "isle_shim_sent_bytes_total{tier=\"%s\"} %llu\n",
			  isle_scope_name((isle_scope)t),
			  (unsigned long long)s->shim_sent[t]);
	family(b, f, "isle_shim_library_bytes", COUNTER, "bytes",
	       "Bytes a ring allreduce in rank order, the fewest any "
	       "allreduce sends, would have sent through each tier for the "
	       "same calls (what the shim's bytes compare with).");
	for (int t = 0; t < ISLE_REPORT_TIERS; t++)
		sb_printf(b,
			  "isle_shim_library_bytes_total{tier=\"%s\"} %llu\n",
			  isle_scope_name((isle_scope)t),
			  (unsigned long long)s->shim_library[t]);
	family(b, f, "isle_shim_report_errors", COUNTER, NULL,
	       "Files in the reports directory that did not read as a report "
	       "(not JSON, a bad field, too big, a link), each version once; "
	       "they are skipped.");
	sb_printf(b, "isle_shim_report_errors_total %llu\n",
		  (unsigned long long)s->bad_files);
	family(b, f, "isle_shim_reports", GAUGE, NULL,
	       "Files in the reports directory: readable reports, files that "
	       "do not read, and new files left for a later scan (a scan "
	       "reads a bounded number).");
	sb_printf(b, "isle_shim_reports{state=\"readable\"} %ld\n", s->records);
	sb_printf(b, "isle_shim_reports{state=\"unreadable\"} %ld\n",
		  s->unreadable);
	sb_printf(b, "isle_shim_reports{state=\"deferred\"} %ld\n",
		  s->deferred);
}

char *isle_exp_render(const struct isle_exp_snapshot *s, enum isle_exp_format f,
		      size_t *len)
{
	struct sb b = {.cap = 16384};
	const struct isle_exp_topo *st = s->slurm_topo;

	if (!(b.p = malloc(b.cap)))
		return NULL;
	b.p[0] = '\0';
	if (st) {
		family(&b, f, "isle_fallback", GAUGE, NULL,
		       "1 while topology/isle has no usable cluster file and "
		       "Slurm's default selection places jobs.");
		sb_printf(&b, "isle_fallback %d\n", st->fallback);
		family(&b, f, "isle_cluster", INFO, NULL,
		       "The cluster file slurmctld's topology/isle loaded.");
		sb_printf(&b, "isle_cluster_info{cluster=\"");
		sb_label(&b, st->cluster ? st->cluster : "");
		sb_printf(&b, "\",file=\"");
		sb_label(&b, st->file ? st->file : "");
		sb_printf(&b, "\"} 1\n");
		if (!st->fallback)
			islands(&b, f, st);
		if (st->have_eval)
			eval(&b, f, st);
	}
	if (s->nodes)
		gpus(&b, f, s->nodes);
	if (s->fragmentation >= 0) {
		family(&b, f, "isle_fragmentation_ratio", GAUGE, "ratio",
		       "Share of free GPUs in partly used islands, nodes and "
		       "leaf groups (isle_place_fragmentation; 0 = every free "
		       "GPU is in a wholly free unit).");
		sb_printf(&b, "isle_fragmentation_ratio ");
		sb_double(&b, s->fragmentation);
		sb_printf(&b, "\n");
	}
	if (s->store)
		store(&b, f, s->store);
	if (s->reports)
		shim(&b, f, s->reports);

	family(&b, f, "isle_exporter_source_up", GAUGE, NULL,
	       "1 if the exporter's last read of the source succeeded.");
	for (int i = 0; i < ISLE_EXP_SRC_COUNT; i++)
		if (!s->src[i].off)
			sb_printf(&b,
				  "isle_exporter_source_up{source=\"%s\"} %d\n",
				  src_names[i], s->src[i].up);
	family(&b, f, "isle_exporter_source_last_success_timestamp_seconds",
	       GAUGE, "seconds",
	       "When the exporter last read the source successfully (Unix "
	       "time; 0 = never).");
	for (int i = 0; i < ISLE_EXP_SRC_COUNT; i++) {
		if (s->src[i].off)
			continue;
		sb_printf(&b,
			  "isle_exporter_source_last_success_timestamp_seconds"
			  "{source=\"%s\"} ",
			  src_names[i]);
		sb_double(&b, s->src[i].last_success);
		sb_printf(&b, "\n");
	}
	family(&b, f, "isle_exporter_source_duration_seconds", GAUGE, "seconds",
	       "How long the exporter's last read of the source took.");
	for (int i = 0; i < ISLE_EXP_SRC_COUNT; i++) {
		if (s->src[i].off)
			continue;
		sb_printf(
		    &b, "isle_exporter_source_duration_seconds{source=\"%s\"} ",
		    src_names[i]);
		sb_double(&b, s->src[i].seconds);
		sb_printf(&b, "\n");
	}
	family(&b, f, "isle_exporter_source_errors", COUNTER, NULL,
	       "Failed reads of the source.");
	for (int i = 0; i < ISLE_EXP_SRC_COUNT; i++)
		if (!s->src[i].off)
			sb_printf(
			    &b,
			    "isle_exporter_source_errors_total{source=\"%s\"} "
			    "%llu\n",
			    src_names[i], (unsigned long long)s->src[i].errors);
	if (f == ISLE_EXP_OPENMETRICS)
		sb_printf(&b, "# EOF\n");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}
