/*
 * islesim - replays a job stream against a cluster under several placement
 * policies and reports per-policy metrics (see usage()).
 *
 * The command line only: option parsing, the run modes and the report
 * writers, about 800 lines that share one struct cfg. The simulation is in
 * sim.c, the network model in netsim.c.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

#define BASELINE_NOTE                                                          \
	"note: linear, tree, block and random are islesim re-implementations " \
	"of Slurm's documented behaviour, not Slurm code"

struct cfg {
	const char *cluster, *mix, *csv, *data, *bench, *scale, *replay;
	const char *starts;
	const char *bf_log; /* --bf-log FILE */
	const char *fabric, *shape_dir, *commit;
	const char *write_cluster; /* --write-cluster FILE */
	const char *bench_cc;	   /* --bench-contention DIR */
	const char *bench_table;   /* --bench-table DIR */
	int mix_set;		   /* --mix given: --bench runs that mix only */
	double max_err;
	int policy; /* -1: all */
	int jobs, queue_depth, decisions, trace;
	double load;
	uint64_t seed;
	int slurm_release;
	struct sim_opts sched; /* Slurm's scheduler parameters */
};

static void usage(FILE *f)
{
	fputs(
	    "usage: islesim [options]\n"
	    "  --cluster NAME   superpod | nvl72 | pcie | lingjun | roce2 |"
	    " roce4 | scale:N |\n"
	    "                   cluster file\n"
	    "  --write-cluster FILE  write the --cluster model as a cluster"
	    " file and exit\n"
	    "  --bench-contention DIR  isle against isle-cc (kalos mix,"
	    " --jobs, 3 seeds\n"
	    "                   from --seed): DIR/contention.json and the"
	    " table\n"
	    "  --bench-table DIR  tree, block, isle, isle-cc and isle+shim"
	    " on six clusters\n"
	    "                   (--mix: that one, else all; --jobs, 3 seeds"
	    " from --seed):\n"
	    "                   DIR/placement-table.{json,md,svg}\n"
	    "  --policy P       isle | linear | tree | block | random |"
	    " tree-sw | block-seg |\n"
	    "                   isle-cc | isle+shim | all"
	    " (default all)\n"
	    "  --jobs N         generated jobs (default 2000)\n"
	    "  --mix M          seren | kalos | philly | helios (default"
	    " seren)\n"
	    "  --load L         offered load, 0..1 (default 0.9)\n"
	    "  --seed S         generator seed (default 1)\n"
	    "  --slurm-release R  the Slurm release tree and block follow:"
	    " 24.11 (default) | 25.11 | 26.05\n"
	    "  --csv FILE       read jobs: submit,duration,gpus,tp,pp"
	    "[,train|infer[,limit]]\n"
	    "                   (limit: the time limit in s backfill plans"
	    " with; default the duration)\n"
	    "  --trace          print every job's placement and rank order;\n"
	    "                   at the end of a training job of 2+ GPUs its\n"
	    "                   mean step, step alone, compute and the part\n"
	    "                   alone in flows leaving their NICs' switch (s)\n"
	    "  --starts FILE    append 'POLICY JOB SUBMIT START' per job"
	    " (s, ms; -1: never)\n"
	    "  --bf-log FILE    append each backfill pass's decisions:"
	    " per tested job\n"
	    "                   its start now or its reservation and nodes\n"
	    "Slurm's scheduler (SchedulerParameters; defaults are Slurm's):\n"
	    "  --queue-depth N  default_queue_depth: jobs the main pass"
	    " tries (100)\n"
	    "  --bf-interval S  bf_interval: seconds between backfill"
	    " passes (30)\n"
	    "  --bf-max-job-test N  bf_max_job_test: jobs a pass tests"
	    " (500)\n"
	    "  --bf-window MIN  bf_window: minutes the time map spans"
	    " (1440)\n"
	    "  --bf-resolution S  bf_resolution: its time step (60)\n"
	    "  --bf-continue    bf_continue (no effect: a pass takes no"
	    " simulated time)\n"
	    "  --max-switch-wait S  max_switch_wait: seconds tree-sw waits"
	    " for one leaf (300)\n"
	    "  --bf-agent       time backfill passes as backfill_agent does:"
	    " bf_interval\n"
	    "                   after the last pass while jobs pend, at once"
	    " when one arrives later\n"
	    "                   (default: every bf_interval from time 0)\n"
	    "  --ticks M,B      the main scheduler runs on the first tick after"
	    " an event,\n"
	    "                   M s into each second; backfill (--bf-agent)"
	    " polls each\n"
	    "                   second from its last pass, the first at B s\n"
	    "                   (default: the main scheduler at the event)\n"
	    "  --epoch0 S       slurmctld's clock (epoch s) at time 0:"
	    " its whole\n"
	    "                   seconds, bf_resolution steps and will-run's"
	    " 30 s barriers\n"
	    "                   fall there (default 0)\n"
	    "  --bf-pass-cost S  seconds a backfill pass takes per job it"
	    " tests: the\n"
	    "                   next pass (--bf-agent) follows its end"
	    " (default 0)\n"
	    "  --epilog S       seconds a node stays completing after its"
	    " job ends:\n"
	    "                   the main pass skips it, backfill defers a"
	    " job on it (0)\n"
	    "  --main-stamp-prev  the main scheduler's starts get the second"
	    " before\n"
	    "                   its tick as start time (slurmctld's coarse"
	    " time())\n"
	    "  --data DIR       shared data (default $ISLE_TEST_DATA or"
	    " ../shared/data)\n"
	    "  --bench DIR      all clusters x policies x mixes (--mix: that"
	    " one) + scale\n"
	    "                   runs: writes DIR/placement.json,\n"
	    "                   plot data and DIR/placement.gp\n"
	    "  --commit STR     recorded in placement.json (git describe"
	    " --dirty)\n"
	    "  --scale LIST     decision-time runs only, e.g. 1000,10000\n"
	    "  --decisions N    decisions per scale run (default 2000)\n"
	    "  --replay FILE    place a job sequence, no completions: lines\n"
	    "                   'LABEL NODES GPUS_PER_NODE [PIN|- [COMMIT|-]]'"
	    "\n"
	    "                   or 'end LABEL' (the job ends)\n"
	    "                   (PIN/COMMIT: node,node,...); prints\n"
	    "                   'POLICY LABEL node,node,...' ('-': none)\n"
	    "  --replay-fabric FILE  the flow model against the emulated"
	    " fabric: replays\n"
	    "                   bench-fabric's result file (fabric.json) on"
	    " the placements\n"
	    "                   Slurm chose; prints measured and predicted"
	    " mean step\n"
	    "  --shape-dir DIR  its cluster files (default bench/fabric)\n"
	    "  --max-err PCT    with --replay-fabric: exit 1 when a"
	    " configuration's\n"
	    "                   error exceeds PCT; exit 3 when the file"
	    " has no placements\n",
	    f);
}

static void print_header(void)
{
	printf("%-9s %-6s %-9s %7s %7s %7s %8s %8s %8s %9s %6s %6s %6s %5s %5s "
	       "%8s %8s  wait mean/p95 s by GPUs: %s\n",
	       "cluster", "mix", "policy", "step_s", "step95", "comm_s",
	       "wait_s", "wait95", "wait_gpu", "jct_s", "split%", "tp_req",
	       "ecost", "occ", "frag", "dec_p50", "dec_p99",
	       "1 | 2-8 | 9-64 | >64");
}

static void print_row(const char *cluster, const char *mix, const char *policy,
		      const struct sim_metrics *m)
{
	static int header;

	if (!header++)
		print_header();
	printf("%-9s %-6s %-9s %7.3f %7.2f %7.3f %8.0f %8.0f %8.0f %9.0f %6.1f "
	       "%6.1f %6.3f %5.3f %5.3f %8.1f %8.1f ",
	       cluster, mix, policy, m->step_time_mean, m->step_time_p95,
	       m->comm_time_mean, m->wait_mean_s, m->wait_p95_s,
	       m->wait_gpu_mean_s, m->jct_mean_s, m->tp_groups_split_pct,
	       m->tp_in_island_req_pct, m->comm_cost_ratio_mean,
	       m->occupancy_mean, m->fragmentation_mean, m->decision_us_p50,
	       m->decision_us_p99);
	for (int k = 0; k < SIM_NCLASSES; k++)
		printf(" %s %.0f/%.0f", sim_class_names[k],
		       m->wait_class_mean[k], m->wait_class_p95[k]);
	putchar('\n');
}

static int load_jobs(const struct cfg *c, const isle_topo *t,
		     struct sim_job **jobs, int *n)
{
	char err[512];

	if (c->csv) {
		int rc = sim_workload_read(c->csv, jobs, n, err, sizeof(err));

		if (rc)
			fprintf(stderr, "islesim: %s\n", err);
		return rc;
	}
	*jobs = sim_workload_gen(sim_mix_find(c->mix), c->jobs, t->total_gpus,
				 c->load, c->seed);
	*n = c->jobs;
	if (!*jobs) {
		fprintf(stderr, "islesim: cannot generate jobs\n");
		return -EINVAL;
	}
	return 0;
}

static FILE *open_out(const char *dir, const char *kind, const char *cluster,
		      const char *policy)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/placement-%s-%s-%s.dat", dir, kind,
		 cluster, policy);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "islesim: %s: %s\n", path, strerror(errno));
	return f;
}

/* --starts: every job's submit and start to the millisecond (the start
 * time check against real Slurm, bench/startcheck/run.sh); -1: never
 * started. */
static int write_starts(const char *path, const char *policy,
			const struct sim_job *jobs, int n)
{
	FILE *f = fopen(path, "a");
	int i;

	if (!f) {
		fprintf(stderr, "islesim: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s %d %.3f %.3f\n", policy, jobs[i].id,
			jobs[i].submit,
			jobs[i].placed > 0 ? jobs[i].start : -1.0);
	return fclose(f) ? -EIO : 0;
}

/* Runs the policies of c on one cluster; appends JSON rows to js. */
static int run_cluster(const struct cfg *c, const char *cluster, FILE *js,
		       int *first)
{
	struct sim_job *jobs = NULL;
	isle_topo *t = NULL;
	char err[512];
	int n = 0, p, rc;

	rc = sim_cluster_build(cluster, c->data, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "islesim: %s\n", err);
		return rc;
	}
	rc = load_jobs(c, t, &jobs, &n);
	if (rc)
		goto out;
	for (p = 0; p < SIM_NPOLICIES; p++) {
		struct sim_opts o = c->sched;
		struct sim_metrics m;

		o.policy = (enum sim_policy)p;
		o.seed = c->seed;
		o.slurm_release = c->slurm_release;
		if (c->policy >= 0 && p != c->policy)
			continue;
		if (c->bf_log) {
			o.bf_log = fopen(c->bf_log, "a");
			if (!o.bf_log) {
				rc = -errno;
				fprintf(stderr, "islesim: %s: %s\n", c->bf_log,
					strerror(errno));
				goto out;
			}
		}
		if (c->trace) {
			o.trace = stdout;
			printf("# cluster %s policy %s\n", cluster,
			       sim_policy_names[p]);
		}
		if (c->bench) {
			o.cost_out = open_out(c->bench, "step", cluster,
					      sim_policy_names[p]);
			o.occ_out = open_out(c->bench, "occ", cluster,
					     sim_policy_names[p]);
		}
		rc = sim_run(t, jobs, n, &o, &m);
		if (o.bf_log)
			fclose(o.bf_log);
		if (o.cost_out)
			fclose(o.cost_out);
		if (o.occ_out)
			fclose(o.occ_out);
		if (rc) {
			fprintf(stderr, "islesim: %s/%s: %s\n", cluster,
				sim_policy_names[p], strerror(-rc));
			goto out;
		}
		if (c->starts) {
			rc = write_starts(c->starts, sim_policy_names[p], jobs,
					  n);
			if (rc)
				goto out;
		}
		print_row(cluster, c->csv ? "csv" : c->mix, sim_policy_names[p],
			  &m);
		fflush(stdout);
		if (js) {
			fprintf(
			    js,
			    "%s\n    {\"cluster\": \"%s\", \"mix\": \"%s\", "
			    "\"policy\": \"%s\", "
			    "\"step_s\": %.4f, \"comm_s\": %.4f, "
			    "\"wait_gpu_s\": %.1f, "
			    "\"step_time_mean\": %.4f, "
			    "\"step_time_p95\": %.4f, "
			    "\"comm_time_mean\": %.4f, "
			    "\"wait_mean_s\": %.1f, \"wait_p95_s\": %.1f, "
			    "\"wait_gpu_mean_s\": %.1f, "
			    "\"jct_mean_s\": %.1f, "
			    "\"tp_groups_split_pct\": %.2f, "
			    "\"occupancy_mean\": %.4f, "
			    "\"tp_in_island_pct\": %.2f, "
			    "\"engine_cost_ratio_mean\": %.4f, "
			    "\"engine_cost_ratio_p95\": %.4f, "
			    "\"engine_infer_latency_ratio_mean\": %.4f, "
			    "\"fragmentation_mean\": %.4f, "
			    "\"decision_us_p50\": %.2f, "
			    "\"decision_us_p99\": %.2f, "
			    "\"wait_by_class\": {",
			    *first ? "" : ",", cluster, c->mix,
			    sim_policy_names[p], m.step_time_mean,
			    m.comm_time_mean, m.wait_gpu_mean_s,
			    m.step_time_mean, m.step_time_p95, m.comm_time_mean,
			    m.wait_mean_s, m.wait_p95_s, m.wait_gpu_mean_s,
			    m.jct_mean_s, m.tp_groups_split_pct,
			    m.occupancy_mean, m.tp_in_island_pct,
			    m.comm_cost_ratio_mean, m.comm_cost_ratio_p95,
			    m.infer_latency_ratio_mean, m.fragmentation_mean,
			    m.decision_us_p50, m.decision_us_p99);
			for (int k = 0; k < SIM_NCLASSES; k++)
				fprintf(js,
					"%s\"%s\": {\"jobs\": %d, "
					"\"mean_s\": %.1f, \"p95_s\": %.1f}",
					k ? ", " : "", sim_class_names[k],
					m.wait_class_n[k], m.wait_class_mean[k],
					m.wait_class_p95[k]);
			fputs("}}", js);
			*first = 0;
		}
	}
out:
	free(jobs);
	isle_topo_destroy(t);
	return rc;
}

/*
 * Decision time of the engine on an N-node cluster (8 GPUs per node) that
 * is about 70% busy with a fragmented mix: jobs from the generator are
 * placed until 85% full, then a random third of them leave. Then
 * `decisions` requests from the same mix are placed (not committed).
 */
static int run_scale(const struct cfg *c, int nodes, double *p50, double *p99)
{
	struct sim_scale s = {.data = c->data,
			      .mix = c->mix,
			      .nodes = nodes,
			      .seed = c->seed,
			      .decisions = c->decisions};
	struct sim_scale_result r;
	int rc = sim_decision_time(&s, &r);

	if (rc)
		return rc;
	*p50 = r.p50_us;
	*p99 = r.p99_us;
	printf("scale %6d nodes, mix %s: decision p50 %8.1f us  p99 %8.1f us "
	       "(%d decisions, %.0f%% of GPUs busy)\n",
	       nodes, c->mix, *p50, *p99, r.decisions, 100.0 * r.busy_frac);
	return 0;
}

static int run_scales(const struct cfg *c, FILE *js, int *first)
{
	char list[256], *save = NULL, *tok;
	int rc = 0;

	snprintf(list, sizeof(list), "%s", c->scale ? c->scale : "1000,10000");
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		double p50, p99;
		int nodes = atoi(tok);

		if (nodes <= 0) {
			fprintf(stderr, "islesim: bad --scale entry '%s'\n",
				tok);
			return -EINVAL;
		}
		rc = run_scale(c, nodes, &p50, &p99);
		if (rc)
			return rc;
		if (js)
			fprintf(js,
				"%s\n    {\"nodes\": %d, \"mix\": \"%s\", "
				"\"decision_us_p50\": %.2f, "
				"\"decision_us_p99\": %.2f}",
				*first ? "" : ",", nodes, c->mix, p50, p99);
		*first = 0;
	}
	return 0;
}

static const char *const bench_clusters[] = {"superpod", "nvl72", "pcie",
					     "lingjun",	 "roce2", "roce4"};
#define NBENCH_CL (int)(sizeof(bench_clusters) / sizeof(*bench_clusters))

/* gnuplot script: step-time CDF per policy (top; flow model, training
 * jobs of 2+ GPUs) and occupancy over time (bottom), one column per
 * cluster. */
static int write_plot(const char *dir)
{
	char path[4096];
	FILE *f;
	int k, p;

	snprintf(path, sizeof(path), "%s/placement.gp", dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "islesim: %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	fprintf(f,
		"set terminal pngcairo size 1800,900 noenhanced\n"
		"set output '%s/placement.png'\n"
		"set multiplot layout 2,%d title 'islesim: step time under "
		"the flow model (CDF) and GPU occupancy'\n"
		"set key bottom right\nset grid\n",
		dir, NBENCH_CL);
	for (k = 0; k < NBENCH_CL; k++) {
		fprintf(f,
			"set title '%s: step time CDF'\n"
			"set xlabel 'step time, s'\nset ylabel 'CDF'\n"
			"set logscale x\nset yrange [0:1]\nplot ",
			bench_clusters[k]);
		for (p = 0; p < SIM_NPOLICIES; p++)
			fprintf(f,
				"%s'%s/placement-step-%s-%s.dat' using 1:(1) "
				"smooth cnormal with lines lw 2 title '%s'",
				p ? ", " : "", dir, bench_clusters[k],
				sim_policy_names[p], sim_policy_names[p]);
		fputs("\nunset logscale x\n", f);
	}
	for (k = 0; k < NBENCH_CL; k++) {
		fprintf(f,
			"set title '%s: occupancy'\nset xlabel 'hours'\n"
			"set ylabel 'busy GPUs'\nset yrange [0:1]\nplot ",
			bench_clusters[k]);
		for (p = 0; p < SIM_NPOLICIES; p++)
			fprintf(f,
				"%s'%s/placement-occ-%s-%s.dat' using 1:2 "
				"with lines title '%s'",
				p ? ", " : "", dir, bench_clusters[k],
				sim_policy_names[p], sim_policy_names[p]);
		fputc('\n', f);
	}
	fputs("unset multiplot\n", f);
	return fclose(f) ? -EIO : 0;
}

static int run_bench(const struct cfg *c)
{
	char path[4096];
	FILE *js;
	int first = 1, rc = 0;
	size_t k;

	snprintf(path, sizeof(path), "%s/placement.json", c->bench);
	js = fopen(path, "w");
	if (!js) {
		fprintf(stderr, "islesim: %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	puts(BASELINE_NOTE);
	fprintf(js, "{\"commit\": \"%s\",\n  \"results\": [",
		c->commit ? c->commit : "unknown");
	for (const struct sim_mix *mx = sim_mixes; mx->name; mx++) {
		struct cfg cm = *c;

		if (c->mix_set && strcmp(mx->name, c->mix))
			continue;
		cm.mix = mx->name;
		for (k = 0;
		     k < sizeof(bench_clusters) / sizeof(*bench_clusters);
		     k++) {
			rc = run_cluster(&cm, bench_clusters[k], js, &first);
			if (rc)
				goto out;
		}
	}
	fputs("\n  ],\n  \"scale\": [", js);
	first = 1;
	rc = run_scales(c, js, &first);
	/* and the published mix with the largest jobs (mean 26.8 GPUs) */
	if (!rc && strcmp(c->mix, "kalos")) {
		struct cfg k = *c;

		k.mix = "kalos";
		rc = run_scales(&k, js, &first);
	}
	if (rc)
		goto out;
	fputs("\n  ]\n}\n", js);
	rc = write_plot(c->bench);
out:
	if (fclose(js) && !rc)
		rc = -EIO;
	return rc;
}

/*
 * --replay: the baselines' choices for a fixed job sequence, for comparing
 * them with the real Slurm plugins (tests/crosscheck/). Jobs arrive in
 * order and never end. A job with a pinned node list (like sbatch -w)
 * takes GPUS_PER_NODE GPUs on each listed node without asking the policy;
 * any other job asks the policy for NODES x GPUS_PER_NODE GPUs (the
 * baselines see a GPU count; the engine also gets the node shape). An
 * optional COMMIT list replaces the policy's choice in the state that the
 * next jobs see ("-": nothing), so that each decision can be compared
 * with Slurm's from the state Slurm was in. A line 'end LABEL' frees
 * the GPUs job LABEL holds (the job ended), so that a sequence can run
 * long without filling the cluster.
 */

/* GPUs a replayed job holds, by label. */
struct held {
	char label[128];
	int n;
	int nodes[64];
	uint64_t masks[64];
};
static int replay_pin(const isle_topo *t, uint64_t *fm, char *pins, int gpn,
		      const char *path, int line, FILE *out, struct held *h)
{
	char *save = NULL, *tok;
	int first = 1;

	for (tok = strtok_r(pins, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int ni = isle_topo_find_node(t, tok), k;

		if (ni < 0) {
			fprintf(stderr, "islesim: %s:%d: no node '%s'\n", path,
				line, tok);
			return -EINVAL;
		}
		if (__builtin_popcountll(fm[ni]) < gpn) {
			fprintf(stderr,
				"islesim: %s:%d: node '%s' has fewer than %d "
				"free GPUs\n",
				path, line, tok, gpn);
			return -EINVAL;
		}
		if (h && h->n < 64) {
			uint64_t m = fm[ni], got = 0;

			for (k = 0; k < gpn; k++) {
				got |= m & -m;
				m &= m - 1;
			}
			h->nodes[h->n] = ni;
			h->masks[h->n++] = got;
		}
		for (k = 0; k < gpn; k++)
			fm[ni] &= fm[ni] - 1; /* lowest free GPU first */
		fprintf(out, "%s%s", first ? "" : ",", tok);
		first = 0;
	}
	return 0;
}

static int replay_policy(const struct cfg *c, const isle_topo *t,
			 isle_place_ctx *eng, int p, FILE *in)
{
	struct isle_place_result res;
	struct sim_policy_ctx *pc;
	uint64_t *fm = malloc(((size_t)t->nnodes + 1) * sizeof(uint64_t));
	struct held *held = NULL, *h;
	char buf[1024];
	int i, line = 0, rc = 0, nheld = 0, capheld = 0;

	isle_place_result_init(&res);
	pc = sim_policy_create((enum sim_policy)p, t, eng, c->seed);
	if (pc)
		sim_policy_set_release(pc, c->slurm_release);
	if (!fm || !pc) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < t->nnodes; i++)
		fm[i] = t->nodes[i].ngpus >= 64
			    ? ~0ULL
			    : (1ULL << t->nodes[i].ngpus) - 1;
	rewind(in);
	while (fgets(buf, sizeof(buf), in)) {
		char label[128], pins[448] = "", commit[448] = "";
		struct isle_place_req req;
		int nodes, gpn, nf;

		line++;
		nf = sscanf(buf, " %127s %d %d %447s %447s", label, &nodes,
			    &gpn, pins, commit);
		if (nf <= 0 || label[0] == '#')
			continue;
		if (!strcmp(label, "end")) {
			char who[128];

			if (sscanf(buf, " end %127s", who) != 1) {
				fprintf(stderr,
					"islesim: %s:%d: expected "
					"'end LABEL'\n",
					c->replay, line);
				rc = -EINVAL;
				goto out;
			}
			for (i = 0; i < nheld; i++)
				if (!strcmp(held[i].label, who))
					break;
			if (i == nheld)
				continue; /* it never ran */
			for (int k = 0; k < held[i].n; k++)
				fm[held[i].nodes[k]] |= held[i].masks[k];
			held[i].label[0] = '\0';
			continue;
		}
		if (nf < 3 || nodes <= 0 || gpn <= 0 || gpn > 64) {
			fprintf(stderr,
				"islesim: %s:%d: expected 'LABEL NODES "
				"GPUS_PER_NODE [PIN|- [COMMIT|-]]'\n",
				c->replay, line);
			rc = -EINVAL;
			goto out;
		}
		printf("%s %s ", sim_policy_names[p], label);
		if (nheld == capheld) {
			struct held *nh;

			capheld = capheld ? 2 * capheld : 64;
			nh = realloc(held, (size_t)capheld * sizeof(*nh));
			if (!nh) {
				rc = -ENOMEM;
				goto out;
			}
			held = nh;
		}
		h = &held[nheld++];
		snprintf(h->label, sizeof(h->label), "%s", label);
		h->n = 0;
		if (pins[0] && strcmp(pins, "-")) {
			rc = replay_pin(t, fm, pins, gpn, c->replay, line,
					stdout, h);
			putchar('\n');
			if (rc)
				goto out;
			continue;
		}
		isle_place_req_init(&req);
		req.gpus = nodes * gpn;
		req.nodes = nodes;
		req.gpus_per_node = gpn;
		req.tp = 1;
		req.pp = 1;
		if (sim_policy_place(pc, fm, &req, &res) != 0)
			res.nnodes = 0;
		for (i = 0; i < res.nnodes; i++) {
			printf("%s%s", i ? "," : "",
			       t->nodes[res.nodes[i]].name);
			if (!commit[0]) {
				fm[res.nodes[i]] &= ~res.masks[i];
				if (h->n < 64) {
					h->nodes[h->n] = res.nodes[i];
					h->masks[h->n++] = res.masks[i];
				}
			}
		}
		puts(res.nnodes ? "" : "-");
		if (commit[0] && strcmp(commit, "-")) {
			FILE *nul = fopen("/dev/null", "w");

			rc = nul ? replay_pin(t, fm, commit, gpn, c->replay,
					      line, nul, h)
				 : -errno;
			if (nul)
				fclose(nul);
			if (rc)
				goto out;
		}
	}
out:
	sim_policy_destroy(pc);
	isle_place_result_fini(&res);
	free(fm);
	free(held);
	return rc;
}

static int run_replay(const struct cfg *c)
{
	isle_place_ctx *eng = NULL;
	isle_topo *t = NULL;
	FILE *in = fopen(c->replay, "r");
	char err[512];
	int p, rc;

	if (!in) {
		fprintf(stderr, "islesim: %s: %s\n", c->replay,
			strerror(errno));
		return -EIO;
	}
	rc = sim_cluster_build(c->cluster, c->data, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "islesim: %s\n", err);
		goto out;
	}
	eng = isle_place_create(t, NULL);
	if (!eng) {
		rc = -ENOMEM;
		goto out;
	}
	printf("# %s\n", BASELINE_NOTE);
	for (p = 0; p < SIM_NPOLICIES && !rc; p++)
		if (c->policy < 0 || p == c->policy)
			rc = replay_policy(c, t, eng, p, in);
out:
	isle_place_destroy(eng);
	isle_topo_destroy(t);
	fclose(in);
	return rc;
}

/* --write-cluster: the model islesim runs on, as a cluster file, so that
 * islectl validate and the Slurm plugins can read the same cluster. */
static int write_cluster(const struct cfg *c)
{
	isle_topo *t = NULL;
	char err[512];
	int rc;

	rc = sim_cluster_build(c->cluster, c->data, &t, err, sizeof(err));
	if (!rc)
		rc = isle_topo_save(t, c->write_cluster, err, sizeof(err));
	if (rc)
		fprintf(stderr, "islesim: %s\n", err);
	isle_topo_destroy(t);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"cluster", required_argument, NULL, 'c'},
	    {"policy", required_argument, NULL, 'p'},
	    {"jobs", required_argument, NULL, 'n'},
	    {"mix", required_argument, NULL, 'm'},
	    {"load", required_argument, NULL, 'l'},
	    {"seed", required_argument, NULL, 's'},
	    {"csv", required_argument, NULL, 'f'},
	    {"trace", no_argument, NULL, 't'},
	    {"queue-depth", required_argument, NULL, 'q'},
	    {"bf-interval", required_argument, NULL, 'I'},
	    {"bf-max-job-test", required_argument, NULL, 'J'},
	    {"bf-window", required_argument, NULL, 'W'},
	    {"bf-resolution", required_argument, NULL, 'Z'},
	    {"bf-continue", no_argument, NULL, 'C'},
	    {"max-switch-wait", required_argument, NULL, 'X'},
	    {"bf-agent", no_argument, NULL, 'A'},
	    {"ticks", required_argument, NULL, 'T'},
	    {"epoch0", required_argument, NULL, 'e'},
	    {"bf-log", required_argument, NULL, 'L'},
	    {"bf-pass-cost", required_argument, NULL, 'Q'},
	    {"epilog", required_argument, NULL, 'g'},
	    {"main-stamp-prev", no_argument, NULL, 'Y'},
	    {"starts", required_argument, NULL, 'o'},
	    {"data", required_argument, NULL, 'd'},
	    {"bench", required_argument, NULL, 'b'},
	    {"scale", required_argument, NULL, 'S'},
	    {"decisions", required_argument, NULL, 'D'},
	    {"replay", required_argument, NULL, 'r'},
	    {"slurm-release", required_argument, NULL, 'R'},
	    {"replay-fabric", required_argument, NULL, 'F'},
	    {"shape-dir", required_argument, NULL, 'P'},
	    {"max-err", required_argument, NULL, 'E'},
	    {"commit", required_argument, NULL, 'G'},
	    {"write-cluster", required_argument, NULL, 'w'},
	    {"bench-contention", required_argument, NULL, 'K'},
	    {"bench-table", required_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct cfg c = {.cluster = "superpod",
			.mix = "seren",
			.policy = -1,
			.jobs = 2000,
			.queue_depth = 100,
			.decisions = 2000,
			.load = 0.9,
			.seed = 1};
	int opt, rc, bad = 0;

	c.data = getenv("ISLE_TEST_DATA");
	if (!c.data || !*c.data)
		c.data = "../shared/data";
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'c':
			c.cluster = optarg;
			break;
		case 'p':
			if (!strcmp(optarg, "all")) {
				c.policy = -1;
			} else if ((c.policy = sim_policy_parse(optarg)) < 0) {
				fprintf(stderr,
					"islesim: unknown policy '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			c.jobs = atoi(optarg);
			break;
		case 'm':
			if (!sim_mix_find(optarg)) {
				fprintf(stderr, "islesim: unknown mix '%s'\n",
					optarg);
				return 2;
			}
			c.mix = optarg;
			c.mix_set = 1;
			break;
		case 'G':
			c.commit = optarg;
			break;
		case 'w':
			c.write_cluster = optarg;
			break;
		case 'K':
			c.bench_cc = optarg;
			break;
		case 'B':
			c.bench_table = optarg;
			break;
		case 'l':
			c.load = atof(optarg);
			break;
		case 's':
			c.seed = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			c.csv = optarg;
			break;
		case 't':
			c.trace = 1;
			break;
		case 'q':
			c.queue_depth = atoi(optarg);
			c.sched.queue_depth = c.queue_depth;
			break;
		case 'I':
			c.sched.bf_interval = atof(optarg);
			bad |= c.sched.bf_interval <= 0;
			break;
		case 'J':
			c.sched.bf_max_job_test = atoi(optarg);
			bad |= c.sched.bf_max_job_test <= 0;
			break;
		case 'W':
			c.sched.bf_window = atof(optarg) * 60;
			bad |= c.sched.bf_window <= 0;
			break;
		case 'Z':
			c.sched.bf_resolution = atof(optarg);
			bad |= c.sched.bf_resolution <= 0;
			break;
		case 'C':
			c.sched.bf_continue = 1;
			break;
		case 'X':
			c.sched.max_switch_wait = atof(optarg);
			bad |= c.sched.max_switch_wait <= 0;
			break;
		case 'A':
			c.sched.bf_agent = 1;
			break;
		case 'o':
			c.starts = optarg;
			break;
		case 'T':
			c.sched.ticks = 1;
			bad |= sscanf(optarg, "%lf,%lf", &c.sched.main_phase,
				      &c.sched.bf_phase) != 2 ||
			       c.sched.main_phase < 0 ||
			       c.sched.main_phase >= 1 ||
			       c.sched.bf_phase < 0 || c.sched.bf_phase >= 1;
			break;
		case 'L':
			c.bf_log = optarg;
			break;
		case 'g':
			c.sched.epilog_s = atof(optarg);
			bad |= c.sched.epilog_s < 0;
			break;
		case 'Y':
			c.sched.main_stamp_prev = 1;
			break;
		case 'Q':
			c.sched.bf_pass_cost = atof(optarg);
			bad |= c.sched.bf_pass_cost < 0;
			break;
		case 'e':
			c.sched.epoch0 = atof(optarg);
			bad |= c.sched.epoch0 < 0;
			break;
		case 'd':
			c.data = optarg;
			break;
		case 'b':
			c.bench = optarg;
			break;
		case 'S':
			c.scale = optarg;
			break;
		case 'D':
			c.decisions = atoi(optarg);
			break;
		case 'r':
			c.replay = optarg;
			break;
		case 'R':
			if ((c.slurm_release = sim_release_parse(optarg)) < 0) {
				fprintf(stderr,
					"islesim: --slurm-release: expected "
					"24.11, 25.11 or 26.05, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'F':
			c.fabric = optarg;
			break;
		case 'P':
			c.shape_dir = optarg;
			break;
		case 'E':
			c.max_err = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (bad || optind < argc || c.jobs <= 0 || c.queue_depth <= 0 ||
	    c.decisions <= 0 || c.load <= 0 || c.load > 1.0) {
		usage(stderr);
		return 2;
	}
	if (c.fabric) {
		rc = sim_fabric_replay(
		    c.fabric, c.shape_dir ? c.shape_dir : "bench/fabric",
		    c.max_err, stdout);
		return rc == -ENODATA ? 3 : rc ? 1 : 0;
	}
	if (c.write_cluster)
		return write_cluster(&c) ? 1 : 0;
	if (c.bench_cc)
		return sim_bench_contention(c.bench_cc, c.data, c.commit,
					    c.jobs, c.seed, c.decisions)
			   ? 1
			   : 0;
	if (c.bench_table)
		return sim_bench_table(c.bench_table, c.data, c.commit,
				       c.mix_set ? c.mix : NULL, c.jobs, c.seed)
			   ? 1
			   : 0;
	if (c.replay)
		rc = run_replay(&c);
	else if (c.bench)
		rc = run_bench(&c);
	else if (c.scale) {
		int first = 1;

		rc = run_scales(&c, NULL, &first);
	} else {
		int first = 1;

		puts(BASELINE_NOTE);
		rc = run_cluster(&c, c.cluster, NULL, &first);
	}
	return rc ? 1 : 0;
}
