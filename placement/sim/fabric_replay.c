/*
 * fabric_replay.c - islesim --replay-fabric: the flow model checked against
 * the emulated-fabric benchmark (bench/fabric/run.sh, build/bench/fabric.json).
 *
 * For every run of the benchmark (shape, configuration, seed) the jobs are
 * replayed on the nodes Slurm actually gave them (job_list[].hosts), with
 * the message sizes of bench/fabric/fabric_job.c at the run's scale. The
 * model predicts each training job's step time and the mean over the same
 * step records the benchmark averaged (step_ms_mean):
 *
 *   step = compute + sum over phases (TP, PP, DP) of
 *          max(fabric time, host CPU time of the phase) + verify CPU time
 *
 * Fabric: what tests/cluster/fabric.sh emulated, not the GPU cluster: the
 * cable tree of isle_emit_fabric() (one cable per node, one uplink per
 * switch), every cable tbf-shaped at its rate times the scale, both
 * directions apart. No netem on the benchmark host, so no cable latency.
 * Traffic between ranks of one node is shared memory (Open MPI vader), so
 * it is host time only. Allreduces are rings in rank order (Open MPI's
 * ring for large messages: each hop carries 2(n-1)/n of the buffer);
 * stage boundaries send 4 micro-batches forward and back, one after the
 * other. Flows of a job's phase share the cables by max-min fairness
 * (netsim.c's sim_maxmin) with every flow of the jobs whose Slurm run
 * interval overlaps it, as the flow model of islesim does at scale.
 *
 * Host: fixed per-element CPU costs (below), from the memory and copy
 * rates of a current x86 core; CPU work of all the job's ranks spread over
 * the host's cores. The model knows no host load: the benchmark records
 * the host's CPU idle, and a run at low idle measures the host's queue
 * more than the fabric, which the report says next to its error.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "islesim.h"

/* TCP payload per byte on the wire: 9000-byte MTU, 14 + 20 + 32 bytes of
 * Ethernet, IP and TCP (timestamps) headers per segment; tbf counts the
 * whole frame. */
#define TCP_EFF (8934.0 / 9014.0)
/* CPU seconds per element or byte, one core (fixed, not fitted):
 *   verify: fill() stores one float, check() loads it, one division and
 *           two compares: ~4 ns per float;
 *   sum:    the reduction of one float of an allreduce hop: ~0.5 ns;
 *   tcp:    a byte through the kernel: copy in at the sender, copy out at
 *           the receiver, both at ~2.5 GB/s with the veth/bridge/tbf
 *           path: 0.8 ns per byte;
 *   shm:    a byte through Open MPI's shared memory: two copies at
 *           ~10 GB/s: 0.2 ns. */
#define C_VERIFY 4e-9
#define C_SUM 0.5e-9
#define C_TCP 0.8e-9
#define C_SHM 0.2e-9
/* fabric_job.c's profiles and constants */
#define MICRO 4
#define FLOPS 4e14

struct fprofile {
	const char *name;
	double params, hidden;
	int layers;
	double tokens;
};

static const struct fprofile fprofiles[] = {
    {"7b", 7e9, 4096, 32, 4096},
    {"70b", 70e9, 8192, 80, 4096},
};

/* The emulated fabric: vertices are nodes and switches; up[v] the cable
 * to the parent (-1 at the root). Directed links 2*v (up) and 2*v+1
 * (down), capacity in bytes/s. */
struct efab {
	int nv, nnodes;
	char **name;
	int *parent;
	double *cap;
};

static void efab_free(struct efab *f)
{
	for (int i = 0; i < f->nv; i++)
		free(f->name[i]);
	free(f->name);
	free(f->parent);
	free(f->cap);
	memset(f, 0, sizeof(*f));
}

static int efab_vertex(const struct efab *f, const char *name)
{
	for (int i = 0; i < f->nv; i++)
		if (!strcmp(f->name[i], name))
			return i;
	return -1;
}

static int efab_add(struct efab *f, const char *name)
{
	int v = efab_vertex(f, name);
	char **n;
	int *p;
	double *c;

	if (v >= 0)
		return v;
	n = realloc(f->name, (size_t)(f->nv + 1) * sizeof(*n));
	if (n)
		f->name = n;
	p = realloc(f->parent, (size_t)(f->nv + 1) * sizeof(*p));
	if (p)
		f->parent = p;
	c = realloc(f->cap, 2 * (size_t)(f->nv + 1) * sizeof(*c));
	if (c)
		f->cap = c;
	if (!n || !p || !c || !(f->name[f->nv] = strdup(name)))
		return -ENOMEM;
	f->parent[f->nv] = -1;
	f->cap[2 * f->nv] = f->cap[2 * f->nv + 1] = 0;
	return f->nv++;
}

/* Builds the cable tree from `islectl emit fabric`'s plan of t. */
static int efab_build(const isle_topo *t, double scale, struct efab *f,
		      char *err, size_t errlen)
{
	char *buf = NULL, line[512];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc;

	memset(f, 0, sizeof(*f));
	if (!m)
		return -ENOMEM;
	rc = isle_emit_fabric(t, m);
	fclose(m);
	if (rc) {
		snprintf(err, errlen, "isle_emit_fabric: %d", rc);
		goto out;
	}
	m = fmemopen(buf, len, "r");
	if (!m) {
		rc = -ENOMEM;
		goto out;
	}
	while (fgets(line, sizeof(line), m)) {
		char a[128], b[128];
		double gbit;
		int va, vb;

		if (sscanf(line, "node %127s", a) == 1) {
			if ((rc = efab_add(f, a)) < 0)
				break;
			f->nnodes++;
			continue;
		}
		if (sscanf(line, "cable %127s %127s %lf", a, b, &gbit) != 3)
			continue;
		if ((va = efab_add(f, a)) < 0 || (vb = efab_add(f, b)) < 0) {
			rc = -ENOMEM;
			break;
		}
		if (f->parent[va] >= 0)
			continue; /* the emulation keeps the first uplink */
		f->parent[va] = vb;
		f->cap[2 * va] = f->cap[2 * va + 1] =
		    gbit * 1e9 * scale / 8.0 * TCP_EFF;
		rc = 0;
	}
	fclose(m);
	if (rc > 0)
		rc = 0;
out:
	free(buf);
	return rc;
}

/* Links of the path from vertex a up to the lowest common ancestor and
 * down to b; returns the count. */
static int efab_route(const struct efab *f, int a, int b, struct sim_use *u,
		      int max)
{
	int k = 0, x, y, depth_a = 0, depth_b = 0;

	for (x = a; f->parent[x] >= 0; x = f->parent[x])
		depth_a++;
	for (y = b; f->parent[y] >= 0; y = f->parent[y])
		depth_b++;
	x = a;
	y = b;
	while (x != y && k + 2 <= max) {
		if (depth_a >= depth_b) {
			u[k++] = (struct sim_use){2 * x, 1.0};
			x = f->parent[x];
			depth_a--;
		} else {
			u[k++] = (struct sim_use){2 * y + 1, 1.0};
			y = f->parent[y];
			depth_b--;
		}
		if (x < 0 || y < 0)
			break;
	}
	return k;
}

/* One cross-node transfer of a job's step. */
struct rflow {
	int job, phase;
	int a, b; /* fabric vertices of the two nodes */
	double bytes;
};

struct rjob {
	int train, tp, pp, dp, nranks, gpn, nrec;
	double t0, t1;		   /* Slurm start and end, s */
	double compute_s;	   /* the modelled compute sleep */
	double cpu_s[SIM_NPHASES]; /* host CPU per phase, busiest rank */
	double verify_cpu_s;	   /* per rank */
	int *node;		   /* per rank: fabric vertex */
	double measured_sum;
};

/* Set when a flow could not be stored (replay_run answers -ENOMEM). */
static int flows_oom;

static void add_flow(struct rflow **fl, int *n, int *cap, struct rflow f)
{
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 64;
		struct rflow *p = realloc(*fl, (size_t)nc * sizeof(*p));

		if (!p) {
			flows_oom = 1;
			return;
		}
		*fl = p;
		*cap = nc;
	}
	(*fl)[(*n)++] = f;
}

/* Ring allreduce of bytes over ranks first, first + stride, ... (n of
 * them): one flow per hop between nodes; host CPU of the whole ring. */
static void ring_flows(struct rjob *j, int jid, int first, int stride, int n,
		       int phase, double bytes, struct rflow **fl, int *nf,
		       int *cap)
{
	double hop = bytes * 2.0 * (n - 1) / n;

	if (n < 2)
		return;
	for (int i = 0; i < n; i++) {
		int r = first + i * stride, s = first + (i + 1) % n * stride;
		int q = first + (i + n - 1) % n * stride;
		/* half the copies of a hop at each end */
		double c_out = j->node[r] != j->node[s] ? C_TCP : C_SHM;
		double c_in = j->node[q] != j->node[r] ? C_TCP : C_SHM;
		/* the reduce-scatter half sums (n-1)/n of the floats */
		double w = hop * (c_out + c_in) / 2 +
			   bytes / 4.0 * (n - 1) / n * C_SUM;

		if (j->node[r] != j->node[s])
			add_flow(fl, nf, cap,
				 (struct rflow){jid, phase, j->node[r],
						j->node[s], hop});
		j->cpu_s[phase] = fmax(j->cpu_s[phase], w);
	}
}

static int job_parse(json_object *o, const struct efab *f, double scale,
		     struct rjob *j, char *err, size_t errlen)
{
	json_object *v, *hosts, *ms;
	const struct fprofile *pr = NULL;
	const char *model;
	double shard;
	int nh;

	memset(j, 0, sizeof(*j));
	if (!json_object_object_get_ex(o, "kind", &v))
		goto bad;
	j->train = !strcmp(json_object_get_string(v), "train");
	if (!json_object_object_get_ex(o, "model", &v))
		goto bad;
	model = json_object_get_string(v);
	for (size_t k = 0; k < sizeof(fprofiles) / sizeof(fprofiles[0]); k++)
		if (!strcmp(model, fprofiles[k].name))
			pr = &fprofiles[k];
	if (!pr) {
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

		j->node[r] = efab_vertex(f, h ? h : "");
		if (j->node[r] < 0) {
			snprintf(err, errlen, "host '%s' not in the fabric",
				 h ? h : "?");
			return -EINVAL;
		}
	}
	shard = pr->params / (j->tp * j->pp);
	j->compute_s = 6.0 * shard * pr->tokens / FLOPS;
	/* fill() and check() of every reduced float, per rank */
	{
		double ntp = fmax(16, 2.0 * pr->layers / j->pp * pr->tokens *
					  pr->hidden * 2 * scale / 4);
		double ndp = fmax(16, shard * 2 * scale / 4);

		if (j->tp > 1)
			j->verify_cpu_s += ntp * C_VERIFY;
		if (j->dp > 1)
			j->verify_cpu_s += ndp * C_VERIFY;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "job entry without kind/model/gpus/tp/pp/hosts/ms");
	return -EINVAL;
}

/* The flows of a training job's step (sizes of fabric_job.c). */
static void job_flows(struct rjob *j, int jid, double scale,
		      const struct fprofile *pr, struct rflow **fl, int *nf,
		      int *cap)
{
	double shard = pr->params / (j->tp * j->pp);
	double tp_b = fmax(16, 2.0 * pr->layers / j->pp * pr->tokens *
				   pr->hidden * 2 * scale / 4) *
		      4;
	double pp_b =
	    fmax(16, pr->tokens / MICRO * pr->hidden * 2 * scale / 4) * 4;
	double dp_b = fmax(16, shard * 2 * scale / 4) * 4;
	int blk = j->tp * j->pp;

	for (int g = 0; j->tp > 1 && g < j->nranks; g += j->tp)
		ring_flows(j, jid, g, 1, j->tp, SIM_PH_TP, tp_b, fl, nf, cap);
	/* each boundary: MICRO sends forward, MICRO back, one after the
	 * other: one flow of all of them per direction */
	for (int r = 0; j->pp > 1 && r < j->nranks; r++) {
		int s = r + j->tp;

		if ((r / j->tp) % j->pp + 1 >= j->pp)
			continue;
		/* a rank sends and receives each micro-batch once */
		if (j->node[r] != j->node[s]) {
			add_flow(fl, nf, cap,
				 (struct rflow){jid, SIM_PH_PP, j->node[r],
						j->node[s],
						2.0 * MICRO * pp_b});
			j->cpu_s[SIM_PH_PP] = fmax(j->cpu_s[SIM_PH_PP],
						   2.0 * MICRO * pp_b * C_TCP);
		} else {
			j->cpu_s[SIM_PH_PP] = fmax(j->cpu_s[SIM_PH_PP],
						   2.0 * MICRO * pp_b * C_SHM);
		}
	}
	for (int r = 0; j->dp > 1 && r < blk; r++)
		ring_flows(j, jid, r, blk, j->dp, SIM_PH_DP, dp_b, fl, nf, cap);
}

static const struct fprofile *profile_of(json_object *o)
{
	json_object *v;

	if (!json_object_object_get_ex(o, "model", &v))
		return NULL;
	for (size_t k = 0; k < sizeof(fprofiles) / sizeof(fprofiles[0]); k++)
		if (!strcmp(json_object_get_string(v), fprofiles[k].name))
			return &fprofiles[k];
	return NULL;
}

/* Predicted mean step (ms) of one run; *meas the measured one over the
 * same records, *fab_ms and *host_ms the mean fabric and host parts. */
static int replay_run(const struct efab *f, json_object *run, double scale,
		      double *pred, double *meas, double *fab_ms,
		      double *host_ms, char *err, size_t errlen)
{
	json_object *jl;
	struct rjob *jobs = NULL;
	struct rflow *fl = NULL;
	struct sim_use *use = NULL;
	double *rate = NULL;
	int *off = NULL, nj, nf = 0, capf = 0, rc = 0, recs = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double psum = 0, msum = 0, fsum = 0, hsum = 0;

	if (cores < 1)
		cores = 1;
	flows_oom = 0;
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

		rc = job_parse(o, f, scale, &jobs[i], err, errlen);
		if (rc)
			goto out;
		if (jobs[i].train)
			job_flows(&jobs[i], i, scale, profile_of(o), &fl, &nf,
				  &capf);
	}
	if (flows_oom) {
		rc = -ENOMEM;
		goto out;
	}
	off = malloc(((size_t)nf + 1) * sizeof(int));
	use = malloc(((size_t)nf * 2 * f->nv + 1) * sizeof(*use));
	rate = malloc(((size_t)nf + 1) * sizeof(double));
	if (!off || !use || !rate) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nj; i++) {
		struct rjob *j = &jobs[i];
		double fab[SIM_NPHASES] = {0}, step, host = 0, fsec = 0, slow;
		int n = 0;

		if (!j->train || !j->nrec)
			continue;
		for (int p = 0; p < SIM_NPHASES; p++) {
			int k = 0, nu = 0;

			/* this phase of job i, every flow of the jobs
			 * running at the same time */
			for (int e = 0; e < nf; e++) {
				const struct rjob *o = &jobs[fl[e].job];

				if (fl[e].job == i
					? fl[e].phase != p
					: !(o->t0 < j->t1 && j->t0 < o->t1))
					continue;
				off[k] = nu;
				nu += efab_route(f, fl[e].a, fl[e].b, use + nu,
						 2 * f->nv);
				off[++k] = nu;
			}
			off[k] = nu;
			rc = sim_maxmin(2 * f->nv, f->cap, k, off, use, rate);
			if (rc)
				goto out;
			k = 0;
			for (int e = 0; e < nf; e++) {
				const struct rjob *o = &jobs[fl[e].job];
				int mine = fl[e].job == i && fl[e].phase == p;

				if (fl[e].job == i
					? fl[e].phase != p
					: !(o->t0 < j->t1 && j->t0 < o->t1))
					continue;
				if (mine && isfinite(rate[k]) && rate[k] > 0)
					fab[p] =
					    fmax(fab[p], fl[e].bytes / rate[k]);
				k++;
			}
		}
		/* processor sharing: every rank of the runs' jobs that are
		 * up at the same time is runnable (Open MPI polls, yielding),
		 * so a rank gets cores / ranks of the host */
		{
			int ranks = 0;

			for (int o = 0; o < nj; o++)
				if (o == i ||
				    (jobs[o].t0 < j->t1 && j->t0 < jobs[o].t1))
					ranks += jobs[o].nranks;
			slow = ranks > cores ? (double)ranks / cores : 1.0;
		}
		step = j->compute_s;
		for (int p = 0; p < SIM_NPHASES; p++) {
			double cpu = j->cpu_s[p] * slow;

			step += fmax(fab[p], cpu);
			host += fmax(0, cpu - fab[p]);
			fsec += fab[p];
		}
		host += j->verify_cpu_s * slow;
		step += j->verify_cpu_s * slow;
		n = j->nrec;
		psum += step * 1e3 * n;
		fsum += fsec * 1e3 * n;
		hsum += host * 1e3 * n;
		msum += j->measured_sum;
		recs += n;
	}
	if (!recs) {
		rc = -ENODATA;
		snprintf(err, errlen, "no training step records");
		goto out;
	}
	*pred = psum / recs;
	*meas = msum / recs;
	*fab_ms = fsum / recs;
	*host_ms = hsum / recs;
out:
	for (int i = 0; i < nj; i++)
		free(jobs[i].node);
	free(jobs);
	free(fl);
	free(off);
	free(use);
	free(rate);
	return rc;
}

int sim_fabric_replay(const char *path, const char *shape_dir,
		      double max_err_pct, FILE *out)
{
	json_object *root = json_object_from_file(path), *shapes, *v;
	double scale;
	int rc = 0, over = 0, n = 0;
	char err[256] = "";

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
	fprintf(out, "%-12s %-14s %5s %9s %9s %7s %8s %8s %6s\n", "shape",
		"config", "runs", "meas_ms", "pred_ms", "err%", "fab_ms",
		"host_ms", "idle%");
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
		rc = efab_build(t, scale, &f, err, sizeof(err));
		isle_topo_destroy(t);
		if (rc) {
			fprintf(stderr, "islesim: %s: %s\n", file, err);
			goto out;
		}
		/* configurations in the order of the file, seeds together */
		for (size_t i = 0; i < json_object_array_length(res); i++) {
			json_object *ri = json_object_array_get_idx(res, i);
			const char *cfg;
			double ps = 0, ms = 0, fs = 0, hs = 0, idle = 0, e;
			int runs = 0, seen = 0;

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
			for (size_t k = i; k < json_object_array_length(res);
			     k++) {
				json_object *rk = json_object_array_get_idx(res,
									    k),
					    *c;
				double p = 0, m = 0, fm = 0, hm = 0;

				json_object_object_get_ex(rk, "config", &c);
				if (strcmp(json_object_get_string(c), cfg))
					continue;
				rc = replay_run(&f, rk, scale, &p, &m, &fm, &hm,
						err, sizeof(err));
				if (rc == -ENODATA)
					continue;
				if (rc) {
					fprintf(stderr,
						"islesim: %s %s %s: %s\n", path,
						name, cfg, err);
					efab_free(&f);
					goto out;
				}
				if (json_object_object_get_ex(
					rk, "cpu_idle_pct", &c))
					idle += json_object_get_double(c);
				ps += p;
				ms += m;
				fs += fm;
				hs += hm;
				runs++;
			}
			if (!runs)
				continue;
			e = 100.0 * (ps - ms) / ms;
			fprintf(out,
				"%-12s %-14s %5d %9.1f %9.1f %+7.1f %8.1f "
				"%8.1f %6.1f\n",
				name, cfg, runs, ms / runs, ps / runs, e,
				fs / runs, hs / runs, idle / runs);
			n++;
			if (max_err_pct > 0 && fabs(e) > max_err_pct)
				over++;
		}
		efab_free(&f);
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
