/*
 * fabric_replay.c - islesim --replay-fabric: the flow model
 * (fabric_model.c) checked against the emulated-fabric benchmark
 * (bench/fabric/run.sh, build/bench/fabric.json).
 *
 * For every run of the benchmark (shape, configuration, seed) the jobs are
 * replayed on the nodes Slurm actually gave them (job_list[].hosts), with
 * the message sizes of bench/fabric/fabric_job.c at the run's scale. The
 * model predicts each training job's step time; this file reads the
 * result file into it and reports the mean prediction over the same step
 * records the benchmark averaged (step_ms_mean) next to the measurement.
 *
 * The ranks used non-blocking calls (MPI_Iallreduce, Open MPI's libnbc)
 * where the file's poll_us is above 0; a file without it is from run.sh's
 * default, 1000 us.
 *
 * The host latency of one message hop comes from the job's own probe, not
 * from its steps: fabric_job times one 4-byte allreduce over all its ranks
 * after a barrier at every step; the median of the fastest rank's time
 * over the steps, divided by the hops that rank waits for, is the latency
 * of one hop under the load of the run. Blocking: recursive doubling,
 * ceil(log2 n) hops for every rank. In place: libnbc's binomial schedule
 * (nbc_iallreduce.c, allred_sched_diss), 2 ceil(log2 n) hops end to end,
 * but the fastest rank is the root: it waits for the ceil(log2 n) rounds
 * of the reduce, then posts its broadcast sends, which a 4-byte (eager)
 * message completes at once, without waiting for the receivers. Runs without
 * the probe get none. With the probe the report also puts each phase's
 * measured time (slowest rank, mean over steps) next to the predicted one.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric_priv.h"

/* phase_ms rows [compute, tp, pp, dp, lat_min_us, lat_max_us] of one job:
 * the measured phases and the per-hop latency of its probe. */
static void probe_parse(struct rjob *j, json_object *rows)
{
	int n = (int)json_object_array_length(rows), hops = 0, m = 0;
	double *lat = malloc(((size_t)n + 1) * sizeof(*lat));

	hops = sim_fab_ceil_log2(j->nranks);
	for (int k = 0; lat && k < n; k++) {
		json_object *row = json_object_array_get_idx(rows, k);

		if (!json_object_is_type(row, json_type_array) ||
		    json_object_array_length(row) < 6)
			continue;
		j->meas_comp +=
		    json_object_get_double(json_object_array_get_idx(row, 0));
		for (int p = 0; p < SIM_NPHASES; p++)
			j->meas_ph[p] += json_object_get_double(
			    json_object_array_get_idx(row, 1 + p));
		lat[m++] =
		    json_object_get_double(json_object_array_get_idx(row, 4));
		j->nph++;
	}
	if (m && hops)
		j->hop_s = sim_median(lat, m) / hops * 1e-6;
	free(lat);
}

/* The shim's `isle_comm:` lines of the job: the levels of a communicator
 * of dp ranks (the DP groups) and its probed crossover. */
static void shim_parse(struct rjob *j, json_object *lines)
{
	for (size_t k = 0; k < json_object_array_length(lines); k++) {
		const char *s = json_object_get_string(
			       json_object_array_get_idx(lines, k)),
			   *q;
		struct slev lv[MAX_SLEV];
		int n, nl = 0;

		if (!s || sscanf(s, "isle_comm: %d ranks", &n) != 1 ||
		    n != j->dp)
			continue;
		if ((q = strstr(s, "MPI's own up to "))) {
			j->pass_max = fmax(j->pass_max, atof(q + 16));
			if (strstr(s, "crossover probed"))
				continue;
		}
		if (!strstr(s, ", plan ") || strstr(s, "plain MPI"))
			continue;
		for (q = strchr(s, '['); q && nl < MAX_SLEV;
		     q = strchr(q + 1, '[')) {
			char scope[16], codec[48];
			int a, b;
			double bw, lat;

			if (sscanf(q,
				   "[%15s groups %d..%d, %lf GB/s, %lf us, "
				   "%47[^]]",
				   scope, &a, &b, &bw, &lat, codec) != 6)
				continue;
			lv[nl].scope = scope[0];
			lv[nl].ratio = sim_codec_ratio(codec);
			nl++;
		}
		if (nl > j->nslev) {
			memcpy(j->slev, lv, (size_t)nl * sizeof(lv[0]));
			j->nslev = nl;
		}
	}
}

static int job_parse(json_object *o, const struct efab *f, double scale,
		     int nbc, struct rjob *j, char *err, size_t errlen)
{
	json_object *v, *hosts, *ms;
	const char *model;
	int nh;

	memset(j, 0, sizeof(*j));
	j->nbc = nbc;
	if (!json_object_object_get_ex(o, "kind", &v))
		goto bad;
	j->train = !strcmp(json_object_get_string(v), "train");
	if (!json_object_object_get_ex(o, "model", &v))
		goto bad;
	model = json_object_get_string(v);
	j->pr = sim_fab_profile(model);
	if (!j->pr) {
		snprintf(err, errlen, "unknown model '%s'", model);
		return -EINVAL;
	}
	if (!json_object_object_get_ex(o, "gpus", &v))
		goto bad;
	j->gpn = json_object_get_int(v);
	if (!json_object_object_get_ex(o, "tp", &v))
		goto bad;
	j->tp = json_object_get_int(v);
	if (!json_object_object_get_ex(o, "pp", &v))
		goto bad;
	j->pp = json_object_get_int(v);
	if (json_object_object_get_ex(o, "start", &v))
		j->t0 = json_object_get_double(v);
	if (json_object_object_get_ex(o, "end", &v))
		j->t1 = json_object_get_double(v);
	if (!json_object_object_get_ex(o, "hosts", &hosts) ||
	    !json_object_object_get_ex(o, "ms", &ms))
		goto bad;
	nh = (int)json_object_array_length(hosts);
	j->nrec = (int)json_object_array_length(ms);
	for (int k = 0; k < j->nrec; k++)
		j->measured_sum +=
		    json_object_get_double(json_object_array_get_idx(ms, k));
	j->nranks = nh * j->gpn;
	if (nh < 1 || j->gpn < 1 || j->tp < 1 || j->pp < 1 ||
	    j->nranks % (j->tp * j->pp)) {
		snprintf(err, errlen, "job of %d x %d ranks, tp %d pp %d", nh,
			 j->gpn, j->tp, j->pp);
		return -EINVAL;
	}
	j->dp = j->nranks / (j->tp * j->pp);
	j->node = malloc((size_t)j->nranks * sizeof(int));
	if (!j->node)
		return -ENOMEM;
	for (int r = 0; r < j->nranks; r++) {
		const char *h = json_object_get_string(
		    json_object_array_get_idx(hosts, r / j->gpn));

		j->node[r] = sim_efab_vertex(f, h ? h : "");
		if (j->node[r] < 0) {
			snprintf(err, errlen, "host '%s' not in the fabric",
				 h ? h : "?");
			return -EINVAL;
		}
	}
	if (json_object_object_get_ex(o, "phase_ms", &v) &&
	    json_object_is_type(v, json_type_array))
		probe_parse(j, v);
	if (json_object_object_get_ex(o, "shim", &v) &&
	    json_object_is_type(v, json_type_array))
		shim_parse(j, v);
	sim_fab_job_costs(j, scale);
	return 0;
bad:
	snprintf(err, errlen,
		 "job entry without kind/model/gpus/tp/pp/hosts/ms");
	return -EINVAL;
}

/* One run's means (ms): predicted and measured step over the same
 * records, the fabric, host and latency parts of the prediction; per
 * phase, predicted and measured over the records that have the probe. */
struct rmean {
	double pred, meas, fab, host, lat, comp_pred, comp_meas;
	double ph_pred[SIM_NPHASES], ph_meas[SIM_NPHASES];
	int ph_recs;
};

/* wire[v] gets the model's bytes over v's uplink in the whole run: every
 * training job's flows per step times its steps (the records and step 0,
 * which run.sh leaves out). */
static int replay_run(const struct efab *f, json_object *run, double scale,
		      int nbc, struct rmean *res, double *wire, char *err,
		      size_t errlen)
{
	json_object *jl;
	struct rjob *jobs = NULL;
	struct rflows fl = {0};
	int nj, rc = 0, recs = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double psum = 0, msum = 0, fsum = 0, hsum = 0, lsum = 0;
	double php[SIM_NPHASES] = {0}, phm[SIM_NPHASES] = {0}, cp = 0, cm = 0;
	int phrecs = 0;

	memset(res, 0, sizeof(*res));
	if (cores < 1)
		cores = 1;
	if (!json_object_object_get_ex(run, "job_list", &jl)) {
		snprintf(err, errlen,
			 "run without job_list (a fabric.json from before "
			 "run.sh recorded placements)");
		return -ENOENT;
	}
	nj = (int)json_object_array_length(jl);
	jobs = calloc((size_t)nj + 1, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	for (int i = 0; i < nj; i++) {
		json_object *o = json_object_array_get_idx(jl, i);

		rc = job_parse(o, f, scale, nbc, &jobs[i], err, errlen);
		if (rc)
			goto out;
		if (jobs[i].train)
			sim_fab_job_flows(f, &jobs[i], i, scale, &fl);
	}
	if (fl.oom) {
		rc = -ENOMEM;
		goto out;
	}
	/* each training job's step without the others' ranks on the host
	 * first: the share of its step it keeps the host's cores busy */
	for (int i = 0; i < nj; i++) {
		struct fab_step st;

		if (!jobs[i].train)
			continue;
		rc = sim_fab_step(f, jobs, nj, &fl, i, cores, &st);
		if (rc)
			goto out;
		jobs[i].solo_s = st.step;
	}
	for (int i = 0; i < nj; i++) {
		struct rjob *j = &jobs[i];
		struct fab_step st;
		int n = j->nrec;

		if (j->train) {
			double *by = calloc((size_t)f->nv + 1, sizeof(*by));

			if (!by) {
				rc = -ENOMEM;
				goto out;
			}
			sim_fab_wire_bytes(f, &fl, i, by);
			for (int v = 0; v < f->nv; v++)
				wire[v] += by[v] * (j->nrec + 1);
			free(by);
		}
		if (!j->train || !j->nrec)
			continue;
		rc = sim_fab_step(f, jobs, nj, &fl, i, cores, &st);
		if (rc)
			goto out;
		for (int p = 0; j->nph && p < SIM_NPHASES; p++)
			php[p] += st.ph[p] * 1e3 * j->nph;
		psum += st.step * 1e3 * n;
		fsum += st.fab * 1e3 * n;
		hsum += st.host * 1e3 * n;
		lsum += st.lat * 1e3 * n;
		msum += j->measured_sum;
		recs += n;
		for (int p = 0; j->nph && p < SIM_NPHASES; p++)
			phm[p] += j->meas_ph[p];
		cm += j->meas_comp;
		cp += j->compute_s * 1e3 * j->nph;
		phrecs += j->nph;
	}
	if (!recs) {
		rc = -ENODATA;
		snprintf(err, errlen, "no training step records");
		goto out;
	}
	res->pred = psum / recs;
	res->meas = msum / recs;
	res->fab = fsum / recs;
	res->host = hsum / recs;
	res->lat = lsum / recs;
	for (int p = 0; phrecs && p < SIM_NPHASES; p++) {
		res->ph_pred[p] = php[p] / phrecs;
		res->ph_meas[p] = phm[p] / phrecs;
	}
	res->ph_recs = phrecs;
	if (phrecs) {
		res->comp_pred = cp / phrecs;
		res->comp_meas = cm / phrecs;
	}
out:
	for (int i = 0; i < nj; i++)
		free(jobs[i].node);
	free(jobs);
	free(fl.v);
	return rc;
}

/* The t-th distinct tier name of f's cables, in vertex order, or NULL. */
static const char *wb_tier(const struct efab *f, int t)
{
	for (int v = 0; v < f->nv; v++) {
		int first = f->tier[v][0] != 0;

		for (int u = 0; first && u < v; u++)
			first = strcmp(f->tier[u], f->tier[v]) != 0;
		if (first && !t--)
			return f->tier[v];
	}
	return NULL;
}

int sim_fabric_replay(const char *path, const char *shape_dir,
		      double max_err_pct, FILE *out)
{
	json_object *root = json_object_from_file(path), *shapes, *v;
	double scale;
	int rc = 0, over = 0, n = 0, nph = 0, nbc = 1;
	char err[256] = "";
	/* names point into root, which lives to the end */
	struct {
		const char *shape, *cfg;
		struct rmean m;
		int runs;
	} phs[64];
	/* per configuration: wire bytes by tier, measured (link_bytes_by_tier)
	 * and the model's, MB per run */
	struct {
		const char *shape, *cfg;
		char tier[4][16];
		double meas[4], model[4];
		int nt, runs;
	} wb[64];
	int nwb = 0;

	if (!root) {
		fprintf(stderr, "islesim: %s: %s\n", path,
			json_util_get_last_err());
		return -EINVAL;
	}
	if (!json_object_object_get_ex(root, "scale", &v) ||
	    (scale = json_object_get_double(v)) <= 0 ||
	    !json_object_object_get_ex(root, "shapes", &shapes)) {
		fprintf(stderr, "islesim: %s: no scale/shapes\n", path);
		rc = -EINVAL;
		goto out;
	}
	if (json_object_object_get_ex(root, "poll_us", &v))
		nbc = json_object_get_int(v) > 0;
	fprintf(out, "%-12s %-14s %5s %9s %9s %7s %8s %8s %7s %6s\n", "shape",
		"config", "runs", "meas_ms", "pred_ms", "err%", "fab_ms",
		"host_ms", "lat_ms", "idle%");
	for (size_t s = 0; s < json_object_array_length(shapes); s++) {
		json_object *sh = json_object_array_get_idx(shapes, s), *res;
		char file[4096];
		const char *name;
		isle_topo *t = NULL;
		struct efab f;

		if (!json_object_object_get_ex(sh, "shape", &v) ||
		    !json_object_object_get_ex(sh, "results", &res))
			continue;
		name = json_object_get_string(v);
		snprintf(file, sizeof(file), "%s/%s.json", shape_dir, name);
		rc = sim_cluster_build(file, NULL, &t, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "islesim: %s: %s\n", file, err);
			goto out;
		}
		rc = sim_efab_build(t, scale, &f, err, sizeof(err));
		isle_topo_destroy(t);
		if (rc) {
			fprintf(stderr, "islesim: %s: %s\n", file, err);
			goto out;
		}
		/* configurations in the order of the file, seeds together */
		for (size_t i = 0; i < json_object_array_length(res); i++) {
			json_object *ri = json_object_array_get_idx(res, i);
			const char *cfg;
			struct rmean sum = {0};
			double idle = 0, e, *wire;
			double wmeas[4] = {0};
			int runs = 0, seen = 0, wruns = 0;

			json_object_object_get_ex(ri, "config", &v);
			cfg = json_object_get_string(v);
			for (size_t k = 0; k < i && !seen; k++) {
				json_object *rk = json_object_array_get_idx(res,
									    k),
					    *c;

				json_object_object_get_ex(rk, "config", &c);
				seen = !strcmp(json_object_get_string(c), cfg);
			}
			if (seen)
				continue;
			wire = calloc((size_t)f.nv + 1, sizeof(*wire));
			if (!wire) {
				rc = -ENOMEM;
				sim_efab_free(&f);
				goto out;
			}
			for (size_t k = i; k < json_object_array_length(res);
			     k++) {
				json_object *rk = json_object_array_get_idx(res,
									    k),
					    *c;
				struct rmean r;

				json_object_object_get_ex(rk, "config", &c);
				if (strcmp(json_object_get_string(c), cfg))
					continue;
				rc = replay_run(&f, rk, scale, nbc, &r, wire,
						err, sizeof(err));
				if (rc == -ENODATA)
					continue;
				if (rc) {
					fprintf(stderr,
						"islesim: %s %s %s: %s\n", path,
						name, cfg, err);
					free(wire);
					sim_efab_free(&f);
					goto out;
				}
				if (json_object_object_get_ex(
					rk, "link_bytes_by_tier", &c)) {
					for (int t = 0; t < 4; t++) {
						json_object *b;
						const char *tn =
						    nwb < 64 ? wb_tier(&f, t)
							     : NULL;

						if (tn &&
						    json_object_object_get_ex(
							c, tn, &b))
							wmeas[t] +=
							    json_object_get_double(
								b);
					}
					wruns++;
				}
				if (json_object_object_get_ex(
					rk, "cpu_idle_pct", &c))
					idle += json_object_get_double(c);
				sum.pred += r.pred;
				sum.meas += r.meas;
				sum.fab += r.fab;
				sum.host += r.host;
				sum.lat += r.lat;
				for (int p = 0; r.ph_recs && p < SIM_NPHASES;
				     p++) {
					sum.ph_pred[p] += r.ph_pred[p];
					sum.ph_meas[p] += r.ph_meas[p];
				}
				sum.ph_recs += r.ph_recs > 0;
				sum.comp_pred += r.comp_pred;
				sum.comp_meas += r.comp_meas;
				runs++;
			}
			if (runs && wruns == runs && nwb < 64) {
				wb[nwb].shape = name;
				wb[nwb].cfg = cfg;
				wb[nwb].runs = runs;
				wb[nwb].nt = 0;
				for (int t = 0; t < 4 && wb_tier(&f, t); t++) {
					snprintf(wb[nwb].tier[t], 16, "%s",
						 wb_tier(&f, t));
					wb[nwb].meas[t] = wmeas[t] / runs / 1e6;
					wb[nwb].model[t] = 0;
					for (int v = 0; v < f.nv; v++)
						if (!strcmp(f.tier[v],
							    wb_tier(&f, t)))
							wb[nwb].model[t] +=
							    wire[v] / runs /
							    1e6;
					wb[nwb].nt = t + 1;
				}
				nwb++;
			}
			free(wire);
			if (!runs)
				continue;
			e = 100.0 * (sum.pred - sum.meas) / sum.meas;
			fprintf(out,
				"%-12s %-14s %5d %9.1f %9.1f %+7.1f %8.1f "
				"%8.1f %7.1f %6.1f\n",
				name, cfg, runs, sum.meas / runs,
				sum.pred / runs, e, sum.fab / runs,
				sum.host / runs, sum.lat / runs, idle / runs);
			if (sum.ph_recs &&
			    nph < (int)(sizeof(phs) / sizeof(phs[0]))) {
				phs[nph].shape = name;
				phs[nph].cfg = cfg;
				phs[nph].m = sum;
				phs[nph].runs = sum.ph_recs;
				nph++;
			}
			n++;
			if (max_err_pct > 0 && fabs(e) > max_err_pct)
				over++;
		}
		sim_efab_free(&f);
	}
	/* per phase, where the runs carry fabric_job's probe */
	if (nph)
		fprintf(out,
			"\nper phase, slowest rank, ms (measured/predicted; "
			"TP and DP with fill and check):\n"
			"%-12s %-14s %5s %17s %17s %17s %17s\n",
			"shape", "config", "runs", "compute", "tp", "pp", "dp");
	for (int k = 0; k < nph; k++) {
		fprintf(out, "%-12s %-14s %5d %8.1f/%-8.1f", phs[k].shape,
			phs[k].cfg, phs[k].runs,
			phs[k].m.comp_meas / phs[k].runs,
			phs[k].m.comp_pred / phs[k].runs);
		for (int p = 0; p < SIM_NPHASES; p++)
			fprintf(out, " %8.1f/%-8.1f",
				phs[k].m.ph_meas[p] / phs[k].runs,
				phs[k].m.ph_pred[p] / phs[k].runs);
		fputc('\n', out);
	}
	/* the bytes term alone: what the kernel counted on the cables */
	if (nwb)
		fprintf(out,
			"\nwire bytes per run by cable tier, MB "
			"(measured/model; the model: training jobs' flows, "
			"all steps):\n");
	for (int k = 0; k < nwb; k++) {
		fprintf(out, "%-12s %-14s %5d", wb[k].shape, wb[k].cfg,
			wb[k].runs);
		for (int t = 0; t < wb[k].nt; t++)
			fprintf(out, "  %s %.1f/%.1f", wb[k].tier[t],
				wb[k].meas[t], wb[k].model[t]);
		fputc('\n', out);
	}
	rc = 0;
	if (!n) {
		fprintf(stderr, "islesim: %s: no training runs to replay\n",
			path);
		rc = -ENODATA;
	} else if (over) {
		fprintf(out, "%d of %d configurations over %.0f%% error\n",
			over, n, max_err_pct);
		rc = 1;
	}
out:
	json_object_put(root);
	return rc;
}
