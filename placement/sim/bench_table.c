/*
 * bench_table.c - islesim --bench-table: one results table of issue 26,
 * clusters superpod, nvl72, pcie, lingjun, roce2 and roce4 under tree,
 * block, isle, isle-cc and isle+shim, per mix, several seeds. Writes
 * DIR/placement-table.json (a row per cluster, mix and policy: medians
 * over the seeds and their range), DIR/placement-table.md (the table and
 * the verdict on the goals, whose bounds are the constants below, fixed
 * before the first run) and DIR/placement-table.svg (comm share and step
 * time per cluster and policy, no plotting tool needed).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

#define TB_SEEDS 3
/* goals (issue 26), judged on the medians over the seeds; the best
 * baseline is the better of Slurm's tree and block */
#define GOAL_SHARE_FROM 0.50 /* clusters where tree's comm share is this */
#define GOAL_SHARE_MAX 0.20  /* ... isle+shim's is below this */
#define GOAL_STEP_PCIE 0.70  /* isle+shim / best baseline step, pcie */
#define GOAL_STEP_NET 0.90   /* superpod, lingjun, roce2, roce4 */
#define GOAL_STEP_ANY 1.02   /* every cluster and mix */

static const char *const tb_clusters[] = {"superpod", "nvl72", "pcie",
					  "lingjun",  "roce2", "roce4"};
#define TB_NCL (int)(sizeof(tb_clusters) / sizeof(*tb_clusters))
static const enum sim_policy tb_pol[] = {SIM_TREE, SIM_BLOCK, SIM_ISLE,
					 SIM_ISLE_CC, SIM_ISLE_SHIM};
#define TB_NPOL (int)(sizeof(tb_pol) / sizeof(*tb_pol))
enum { P_TREE = 0, P_BLOCK = 1, P_SHIM = TB_NPOL - 1 };

/* one cluster and mix: every seed's metrics per policy */
struct tb_res {
	struct sim_metrics m[TB_SEEDS][TB_NPOL];
};

static double share(const struct sim_metrics *m)
{
	return m->step_time_mean > 0 ? m->comm_time_mean / m->step_time_mean
				     : 0;
}

enum fig { F_STEP, F_COMM, F_SHARE, F_WAIT, F_WAIT_GPU, F_SHIM };

static double fig(const struct sim_metrics *m, enum fig f)
{
	switch (f) {
	case F_STEP:
		return m->step_time_mean;
	case F_COMM:
		return m->comm_time_mean;
	case F_SHARE:
		return share(m);
	case F_WAIT:
		return m->wait_mean_s;
	case F_WAIT_GPU:
		return m->wait_gpu_mean_s;
	case F_SHIM:
		return m->dp_jobs ? (double)m->shim_jobs / m->dp_jobs : 0;
	}
	return 0;
}

/* Median over the seeds of figure f of policy p; lo and hi its range. */
static double med(const struct tb_res *r, int p, enum fig f, double *lo,
		  double *hi)
{
	double v[TB_SEEDS], x;

	for (int s = 0; s < TB_SEEDS; s++)
		v[s] = fig(&r->m[s][p], f);
	x = sim_median(v, TB_SEEDS); /* sorts v */
	if (lo)
		*lo = v[0];
	if (hi)
		*hi = v[TB_SEEDS - 1];
	return x;
}

static double class_med(const struct tb_res *r, int p, int k, int p95)
{
	double v[TB_SEEDS];

	for (int s = 0; s < TB_SEEDS; s++)
		v[s] = p95 ? r->m[s][p].wait_class_p95[k]
			   : r->m[s][p].wait_class_mean[k];
	return sim_median(v, TB_SEEDS);
}

static double best_base(const struct tb_res *r)
{
	return fmin(med(r, P_TREE, F_STEP, NULL, NULL),
		    med(r, P_BLOCK, F_STEP, NULL, NULL));
}

static int run_one(const char *cluster, const char *mix, const char *data,
		   int njobs, uint64_t seed0, struct tb_res *out)
{
	isle_topo *t = NULL;
	char err[512];
	int rc;

	rc = sim_cluster_build(cluster, data, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "islesim: %s\n", err);
		return rc;
	}
	for (int s = 0; s < TB_SEEDS && !rc; s++) {
		struct sim_job *jobs = sim_workload_gen(
		    sim_mix_find(mix), njobs, t->total_gpus, 0.9, seed0 + s);

		if (!jobs) {
			rc = -ENOMEM;
			break;
		}
		for (int p = 0; p < TB_NPOL && !rc; p++) {
			struct sim_opts o = {.policy = tb_pol[p],
					     .seed = seed0 + s};

			rc = sim_run(t, jobs, njobs, &o, &out->m[s][p]);
			if (rc)
				fprintf(stderr, "islesim: %s/%s: %s\n", cluster,
					sim_policy_names[tb_pol[p]],
					strerror(-rc));
		}
		free(jobs);
	}
	isle_topo_destroy(t);
	return rc;
}

static void json_row(FILE *js, const char *cluster, const char *mix,
		     const struct tb_res *r, int p, int first)
{
	double lo, hi, slo, shi, step = med(r, p, F_STEP, &slo, &shi);

	fprintf(js,
		"%s\n    {\"cluster\": \"%s\", \"mix\": \"%s\", "
		"\"policy\": \"%s\", \"step_s\": %.4f, "
		"\"step_s_range\": [%.4f, %.4f], \"comm_s\": %.4f, ",
		first ? "" : ",", cluster, mix, sim_policy_names[tb_pol[p]],
		step, slo, shi, med(r, p, F_COMM, NULL, NULL));
	fprintf(js, "\"comm_share\": %.4f, ", med(r, p, F_SHARE, &lo, &hi));
	fprintf(js, "\"comm_share_range\": [%.4f, %.4f], ", lo, hi);
	fprintf(js, "\"wait_gpu_s\": %.1f, ", med(r, p, F_WAIT_GPU, &lo, &hi));
	fprintf(js, "\"wait_gpu_s_range\": [%.1f, %.1f], ", lo, hi);
	fprintf(js, "\"wait_mean_s\": %.1f, ", med(r, p, F_WAIT, &lo, &hi));
	fprintf(js, "\"wait_mean_s_range\": [%.1f, %.1f], ", lo, hi);
	fprintf(js, "\"step_vs_best_baseline\": %.4f, ",
		best_base(r) > 0 ? step / best_base(r) : 1.0);
	if (tb_pol[p] == SIM_ISLE_SHIM)
		fprintf(js, "\"shim_taken_share\": %.4f, ",
			med(r, p, F_SHIM, NULL, NULL));
	fputs("\"wait_by_class\": {", js);
	for (int k = 0; k < SIM_NCLASSES; k++)
		fprintf(js,
			"%s\"%s\": {\"jobs\": %d, \"mean_s\": %.1f, "
			"\"p95_s\": %.1f}",
			k ? ", " : "", sim_class_names[k],
			r->m[0][p].wait_class_n[k], class_med(r, p, k, 0),
			class_med(r, p, k, 1));
	fputs("}}", js);
}

/* The goals of one cluster and mix; returns the misses, prints each
 * verdict to md and adds it to js. */
static int judge(FILE *md, FILE *js, int *jfirst, const char *cluster,
		 const char *mix, const struct tb_res *r)
{
	double best = best_base(r), shim = med(r, P_SHIM, F_STEP, NULL, NULL);
	double x = best > 0 ? shim / best : 1.0;
	struct {
		const char *goal;
		double value, bound;
		int below; /* met: value < bound (else <=) */
	} g[3];
	int ng = 0, miss = 0;

	if (med(r, P_TREE, F_SHARE, NULL, NULL) >= GOAL_SHARE_FROM)
		g[ng++] = (typeof(g[0])){"comm share < 20% (tree's >= 50%)",
					 med(r, P_SHIM, F_SHARE, NULL, NULL),
					 GOAL_SHARE_MAX, 1};
	if (!strcmp(cluster, "pcie"))
		g[ng++] = (typeof(g[0])){"step <= 0.7x best baseline", x,
					 GOAL_STEP_PCIE, 0};
	else if (strcmp(cluster, "nvl72"))
		g[ng++] = (typeof(g[0])){"step <= 0.9x best baseline", x,
					 GOAL_STEP_NET, 0};
	g[ng++] =
	    (typeof(g[0])){"step <= 1.02x best baseline", x, GOAL_STEP_ANY, 0};
	for (int i = 0; i < ng; i++) {
		int met = g[i].below ? g[i].value < g[i].bound
				     : g[i].value <= g[i].bound;

		miss += !met;
		fprintf(md, "| %s | %s | %s | %.3f | %.2f | %s |\n", cluster,
			mix, g[i].goal, g[i].value, g[i].bound,
			met ? "met" : "MISSED");
		fprintf(js,
			"%s\n    {\"cluster\": \"%s\", \"mix\": \"%s\", "
			"\"goal\": \"%s\", \"value\": %.4f, \"bound\": %.2f, "
			"\"met\": %s}",
			*jfirst ? "" : ",", cluster, mix, g[i].goal, g[i].value,
			g[i].bound, met ? "true" : "false");
		*jfirst = 0;
	}
	return miss;
}

/* Bars per cluster, one per policy: comm share (top) and step time over
 * the best baseline's (bottom), kalos or the first mix. */
static int write_svg(const char *path, const char *mix,
		     const struct tb_res *res)
{
	static const char *const color[TB_NPOL] = {
	    "#9e9e9e", "#607d8b", "#1f77b4", "#2ca02c", "#d62728"};
	const int W = 900, H = 560, left = 60, top = 40, ph = 200, gap = 60;
	const double cw = (W - left - 20) / (double)TB_NCL, bw = cw / 7;
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "islesim: %s: cannot write\n", path);
		return -EIO;
	}
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%d\" y=\"20\" font-size=\"14\">islesim, %s mix, "
		"median of %d seeds: comm share of step time (top), step "
		"time / best of tree and block (bottom)</text>\n",
		W, H, left, mix, TB_SEEDS);
	for (int panel = 0; panel < 2; panel++) {
		int y0 = top + panel * (ph + gap) + ph; /* the axis */
		double ymax = panel ? 1.2 : 1.0;

		fprintf(f,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"black\"/>\n",
			left, y0, W - 20, y0);
		for (int t = 0; t <= 4; t++) {
			double v = ymax * t / 4;
			int y = y0 - (int)(v / ymax * ph);

			fprintf(f,
				"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
				"stroke=\"#ddd\"/><text x=\"%d\" y=\"%d\" "
				"text-anchor=\"end\">%.*f</text>\n",
				left, y, W - 20, y, left - 4, y + 4,
				panel ? 1 : 0, panel ? v : 100 * v);
		}
		for (int c = 0; c < TB_NCL; c++) {
			const struct tb_res *r = &res[c];
			double best = best_base(r);

			for (int p = 0; p < TB_NPOL; p++) {
				double v = panel
					       ? (best > 0 ? med(r, p, F_STEP,
								 NULL, NULL) /
								 best
							   : 0)
					       : med(r, p, F_SHARE, NULL, NULL);
				double hgt = fmin(v, ymax) / ymax * ph;

				fprintf(f,
					"<rect x=\"%.1f\" y=\"%.1f\" "
					"width=\"%.1f\" height=\"%.1f\" "
					"fill=\"%s\"><title>%s %s: "
					"%.3f</title></rect>\n",
					left + c * cw + (p + 1) * bw, y0 - hgt,
					bw * 0.9, hgt, color[p], tb_clusters[c],
					sim_policy_names[tb_pol[p]], v);
			}
			fprintf(f,
				"<text x=\"%.1f\" y=\"%d\" "
				"text-anchor=\"middle\">%s</text>\n",
				left + c * cw + cw / 2, y0 + 16,
				tb_clusters[c]);
		}
		fprintf(f,
			"<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 "
			"%d)\" text-anchor=\"middle\">%s</text>\n",
			y0 - ph / 2, y0 - ph / 2,
			panel ? "step / best baseline" : "comm share %");
	}
	for (int p = 0; p < TB_NPOL; p++)
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			left + p * 120, H - 16, color[p], left + p * 120 + 16,
			H - 6, sim_policy_names[tb_pol[p]]);
	fputs("</svg>\n", f);
	return fclose(f) ? -EIO : 0;
}

int sim_bench_table(const char *dir, const char *data, const char *commit,
		    const char *mix_only, int njobs, uint64_t seed)
{
	struct tb_res *res = NULL, *plot = NULL;
	char path[4096];
	FILE *js = NULL, *md = NULL, *gj = NULL;
	const char *plot_mix = NULL;
	int rc = 0, first = 1, gfirst = 1, miss = 0, nmix = 0;

	snprintf(path, sizeof(path), "%s/placement-table.json", dir);
	js = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/placement-table.md", dir);
	md = fopen(path, "w");
	gj = tmpfile();
	res = calloc(TB_NCL * 4, sizeof(*res));
	if (!js || !md || !gj || !res) {
		fprintf(stderr, "islesim: %s: cannot write the table\n", dir);
		rc = -EIO;
		goto out;
	}
	fprintf(js,
		"{\"commit\": \"%s\", \"jobs\": %d, \"load\": 0.9, "
		"\"seeds\": [%llu, %llu], \"best_baseline\": \"min(tree, "
		"block)\",\n  \"results\": [",
		commit ? commit : "unknown", njobs, (unsigned long long)seed,
		(unsigned long long)seed + TB_SEEDS - 1);
	fprintf(md,
		"# islesim: one results table (issue 26)\n\n"
		"`make bench-placement-table`, commit %s, %d jobs per run, "
		"load 0.9, seeds %llu..%llu; medians over the seeds (range "
		"in placement-table.json). Flow model of islesim "
		"(placement/sim/netsim.c); isle+shim models the shim "
		"(placement/sim/shim_model.c). Best baseline: the better of "
		"tree and block.\n\n"
		"| cluster | mix | policy | step_s | step range | comm_s | "
		"comm share | wait_gpu_s | wait_mean_s | step / best "
		"baseline |\n|---|---|---|---|---|---|---|---|---|---|\n",
		commit ? commit : "unknown", njobs, (unsigned long long)seed,
		(unsigned long long)seed + TB_SEEDS - 1);
	fprintf(stdout, "%-9s %-7s %-9s %7s %15s %7s %6s %9s %9s %6s\n",
		"cluster", "mix", "policy", "step_s", "range", "comm_s",
		"share", "wait_gpu", "wait", "x_best");
	for (const struct sim_mix *mx = sim_mixes; mx->name; mx++) {
		if (mix_only && strcmp(mx->name, mix_only))
			continue;
		if (!plot_mix || !strcmp(mx->name, "kalos")) {
			plot_mix = mx->name;
			plot = res + nmix * TB_NCL;
		}
		for (int c = 0; c < TB_NCL; c++) {
			struct tb_res *r = &res[nmix * TB_NCL + c];

			rc = run_one(tb_clusters[c], mx->name, data, njobs,
				     seed, r);
			if (rc)
				goto out;
			for (int p = 0; p < TB_NPOL; p++) {
				double lo, hi,
				    step = med(r, p, F_STEP, &lo, &hi);
				double x = step / best_base(r);

				json_row(js, tb_clusters[c], mx->name, r, p,
					 first);
				first = 0;
				printf("%-9s %-7s %-9s %7.3f %7.3f-%7.3f "
				       "%7.3f %5.1f%% %9.0f %9.0f %6.3f\n",
				       tb_clusters[c], mx->name,
				       sim_policy_names[tb_pol[p]], step, lo,
				       hi, med(r, p, F_COMM, NULL, NULL),
				       100 * med(r, p, F_SHARE, NULL, NULL),
				       med(r, p, F_WAIT_GPU, NULL, NULL),
				       med(r, p, F_WAIT, NULL, NULL), x);
				fprintf(md,
					"| %s | %s | %s | %.3f | %.3f-%.3f | "
					"%.3f | %.1f%% | %.0f | %.0f | %.3f "
					"|\n",
					tb_clusters[c], mx->name,
					sim_policy_names[tb_pol[p]], step, lo,
					hi, med(r, p, F_COMM, NULL, NULL),
					100 * med(r, p, F_SHARE, NULL, NULL),
					med(r, p, F_WAIT_GPU, NULL, NULL),
					med(r, p, F_WAIT, NULL, NULL), x);
			}
			fflush(stdout);
		}
		nmix++;
	}
	fputs("\n## Goals (issue 26; bounds fixed in placement/sim/"
	      "bench_table.c before the run)\n\n"
	      "| cluster | mix | goal | value | bound | verdict |\n"
	      "|---|---|---|---|---|---|\n",
	      md);
	for (int m = 0, k = 0; m < nmix; k++) {
		const struct sim_mix *mx = &sim_mixes[k];

		if (mix_only && strcmp(mx->name, mix_only))
			continue;
		for (int c = 0; c < TB_NCL; c++)
			miss += judge(md, gj, &gfirst, tb_clusters[c], mx->name,
				      &res[m * TB_NCL + c]);
		m++;
	}
	fprintf(md, "\n%d goal verdict(s) missed.\n", miss);
	printf("%d goal verdict(s) missed (the table: %s)\n", miss, path);
	fputs("\n  ],\n  \"goals\": [", js);
	rewind(gj);
	for (int ch; (ch = fgetc(gj)) != EOF;)
		fputc(ch, js);
	fprintf(js, "\n  ],\n  \"goals_missed\": %d\n}\n", miss);
	snprintf(path, sizeof(path), "%s/placement-table.svg", dir);
	rc = write_svg(path, plot_mix, plot);
out:
	if (js && fclose(js) && !rc)
		rc = -EIO;
	if (md && fclose(md) && !rc)
		rc = -EIO;
	if (gj)
		fclose(gj);
	free(res);
	return rc;
}
