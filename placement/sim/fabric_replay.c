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
 * other. With the shim (the job's `isle_comm:` lines give the levels and
 * codecs of its DP communicators and the size it leaves to MPI), a DP
 * allreduce above that size is the shim's hierarchy: rings per level
 * among the ranks that share the level's scope, on shares of the buffer,
 * at the codec's wire size, all levels at once. Flows of a job's phase
 * share the cables by max-min fairness (netsim.c's sim_maxmin) with every
 * flow of the jobs whose Slurm run interval overlaps it, as the flow model
 * of islesim does at scale.
 *
 * Host: fixed per-element CPU costs (below), from the memory and copy
 * rates of a current x86 core; CPU work of all the job's ranks spread over
 * the host's cores. The model knows no host load: the benchmark records
 * the host's CPU idle, and a run at low idle measures the host's queue
 * more than the fabric, which the report says next to its error.
 *
 * Latency: every message hop that must finish before the next can start
 * (ring steps, pipeline hand-offs) costs one host message latency, taken
 * from the job's own probe, not from its steps: fabric_job times one
 * 4-byte allreduce over all its ranks after a barrier at every step
 * (recursive doubling, ceil(log2 n) hops); the median of the fastest
 * rank's time over the steps, divided by its hops, is the latency of one
 * hop under the load of the run. Runs without the probe get none.
 * With the probe the report also puts each phase's measured time (slowest
 * rank, mean over steps) next to the predicted one.
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
/* a compressed float: encode at the sender, decode-accumulate at the
 * receiver, at the single-core rates of `bench_comm codecs` (~10 and
 * ~15 GB/s of fp32 input): ~0.7 ns */
#define C_CODEC 0.7e-9
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
	char *kind; /* 'n' node, 'd' NVLink domain, 'l' leaf, 's' above */
};

static void efab_free(struct efab *f)
{
	for (int i = 0; i < f->nv; i++)
		free(f->name[i]);
	free(f->name);
	free(f->parent);
	free(f->cap);
	free(f->kind);
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
	char **n, *k;
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
	k = realloc(f->kind, (size_t)(f->nv + 1));
	if (k)
		f->kind = k;
	if (!n || !p || !c || !k || !(f->name[f->nv] = strdup(name)))
		return -ENOMEM;
	f->kind[f->nv] = 's';
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
			f->kind[rc] = 'n';
			f->nnodes++;
			continue;
		}
		if (sscanf(line, "switch %127s %127s", a, b) == 2) {
			if ((rc = efab_add(f, a)) < 0)
				break;
			f->kind[rc] = !strcmp(b, "domain") ? 'd'
				      : !strcmp(b, "leaf") ? 'l'
							   : 's';
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

/* A level of the shim's hierarchy for the job's DP allreduce. */
#define MAX_SLEV 8
struct slev {
	char scope;   /* i(sland), n(ode), l(eaf), j(ob) */
	double ratio; /* bytes on the wire per fp32 byte */
};

struct rjob {
	int train, tp, pp, dp, nranks, gpn, nrec, nph;
	int nslev; /* the shim's levels, 0: plain MPI */
	struct slev slev[MAX_SLEV];
	double pass_max;	     /* bytes the shim leaves to MPI */
	double hop_s;		     /* probed host latency of one hop */
	double meas_ph[SIM_NPHASES]; /* measured phase ms, summed over nph */
	double meas_comp;	     /* measured compute ms, summed */
	double t0, t1;		     /* Slurm start and end, s */
	double compute_s;	     /* the modelled compute sleep */
	double cpu_s[SIM_NPHASES];   /* host CPU per phase, busiest rank */
	double verify_cpu_s;	     /* per rank */
	double vtp_s, vdp_s;	     /* its TP and DP parts */
	int *node;		     /* per rank: fabric vertex */
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

/* Ring allreduce of bytes (fp32) over the ranks mem[0..n), ratio the
 * codec's wire bytes per byte: one flow per hop between nodes; host CPU
 * of the whole ring. */
static void ring_list(struct rjob *j, int jid, const int *mem, int n, int phase,
		      double bytes, double ratio, struct rflow **fl, int *nf,
		      int *cap)
{
	double hop = bytes * 2.0 * (n - 1) / n * ratio;

	if (n < 2)
		return;
	for (int i = 0; i < n; i++) {
		int r = mem[i], s = mem[(i + 1) % n], q = mem[(i + n - 1) % n];
		/* half the copies of a hop at each end */
		double c_out = j->node[r] != j->node[s] ? C_TCP : C_SHM;
		double c_in = j->node[q] != j->node[r] ? C_TCP : C_SHM;
		/* the reduce-scatter half sums (n-1)/n of the floats (or
		 * encodes and decodes them) */
		double w =
		    hop * (c_out + c_in) / 2 +
		    bytes / 4.0 * (n - 1) / n * (ratio < 1 ? C_CODEC : C_SUM);

		if (j->node[r] != j->node[s])
			add_flow(fl, nf, cap,
				 (struct rflow){jid, phase, j->node[r],
						j->node[s], hop});
		j->cpu_s[phase] = fmax(j->cpu_s[phase], w);
	}
}

/* Ranks first, first + stride, ... (n of them), uncompressed. */
static void ring_flows(struct rjob *j, int jid, int first, int stride, int n,
		       int phase, double bytes, struct rflow **fl, int *nf,
		       int *cap)
{
	int *mem = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));

	if (!mem) {
		flows_oom = 1;
		return;
	}
	for (int i = 0; i < n; i++)
		mem[i] = first + i * stride;
	ring_list(j, jid, mem, n, phase, bytes, 1.0, fl, nf, cap);
	free(mem);
}

/* The fabric vertex that stands for rank r's group at a shim scope. */
static int scope_key(const struct efab *f, const struct rjob *j, int r,
		     char scope)
{
	int v = j->node[r];

	switch (scope) {
	case 'i': /* an NVLink domain across nodes, else inside the node */
		return f->parent[v] >= 0 && f->kind[f->parent[v]] == 'd'
			   ? f->parent[v]
			   : v;
	case 'n':
		return v;
	case 'l':
		while (f->parent[v] >= 0 && f->kind[v] != 'l')
			v = f->parent[v];
		return v;
	default:
		return -1;
	}
}

/*
 * The shim's hierarchical allreduce of one DP group (ranks mem[0..n) in
 * communicator order): level by level, the members that share the level's
 * scope and their positions in the levels below form a group, which
 * reduce-scatters and allgathers its share (bytes over the sizes of the
 * groups below) as a ring in the level's codec. The levels' flows run at
 * once (the shim pipelines segments through them).
 */
static void shim_flows(const struct efab *f, struct rjob *j, int jid,
		       const int *mem, int n, double bytes, struct rflow **fl,
		       int *nf, int *cap)
{
	int *idx = calloc((size_t)n * (MAX_SLEV + 1), sizeof(int));
	int *div = malloc((size_t)n * sizeof(int)),
	    *grp = malloc((size_t)n * sizeof(int));

	if (!idx || !div || !grp) {
		flows_oom = 1;
		goto out;
	}
	for (int i = 0; i < n; i++)
		div[i] = 1;
	for (int l = 0; l < j->nslev; l++) {
		char sc = j->slev[l].scope;

		for (int i = 0; i < n; i++)
			idx[l * n + i] = -1;
		for (int i = 0; i < n; i++) {
			int g = 0;

			if (idx[l * n + i] >= 0)
				continue;
			/* i leads a new group: everyone with its key */
			for (int k = i; k < n; k++) {
				int same = scope_key(f, j, mem[k], sc) ==
					   scope_key(f, j, mem[i], sc);

				for (int m = 0; same && m < l; m++)
					same = idx[m * n + k] == idx[m * n + i];
				if (same && idx[l * n + k] < 0) {
					idx[l * n + k] = g;
					grp[g++] = mem[k];
				}
			}
			ring_list(j, jid, grp, g, SIM_PH_DP, bytes / div[i],
				  j->slev[l].ratio, fl, nf, cap);
		}
		/* the next level works on shares of 1 / group size */
		for (int i = 0; i < n; i++) {
			int g = 0;

			for (int k = 0; k < n; k++) {
				int same = scope_key(f, j, mem[k], sc) ==
					   scope_key(f, j, mem[i], sc);

				for (int m = 0; same && m < l; m++)
					same = idx[m * n + k] == idx[m * n + i];
				g += same;
			}
			div[i] *= g > 0 ? g : 1;
		}
	}
out:
	free(idx);
	free(div);
	free(grp);
}

/* phase_ms rows [compute, tp, pp, dp, lat_min_us, lat_max_us] of one job:
 * the measured phases and the per-hop latency of its probe. */
static void probe_parse(struct rjob *j, json_object *rows)
{
	int n = (int)json_object_array_length(rows), hops = 0, m = 0;
	double *lat = malloc(((size_t)n + 1) * sizeof(*lat));

	for (int x = 1; x < j->nranks; x <<= 1)
		hops++;
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

/* Message hops of a phase that wait for one another: a ring allreduce
 * takes 2(n-1) steps, each pipeline micro-batch goes down the stages and
 * back. */
static int phase_hops(const struct rjob *j, int phase)
{
	switch (phase) {
	case SIM_PH_TP:
		return j->tp > 1 ? 2 * (j->tp - 1) : 0;
	case SIM_PH_PP:
		return j->pp > 1 ? 2 * MICRO * (j->pp - 1) : 0;
	default:
		return j->dp > 1 ? 2 * (j->dp - 1) : 0;
	}
}

/* Wire bytes per fp32 byte of a codec as the shim prints it (the wire
 * formats of docs/comm-shim.md). */
static double codec_ratio(const char *c)
{
	double x;

	if (!strncmp(c, "fp16", 4) || !strncmp(c, "bf16", 4))
		return 0.5;
	if (!strncmp(c, "int8", 4)) { /* a byte each, a float per block */
		x = c[4] == ':' ? atof(c + 5) : 256;
		return 0.25 + 1.0 / (x >= 1 ? x : 256);
	}
	if (!strncmp(c, "topk", 4)) { /* index and value of the kept */
		x = c[4] == ':' ? atof(c + 5) : 0.01;
		return x > 0 && x < 0.5 ? 2 * x : 1;
	}
	return 1;
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
			lv[nl].ratio = codec_ratio(codec);
			nl++;
		}
		if (nl > j->nslev) {
			memcpy(j->slev, lv, (size_t)nl * sizeof(lv[0]));
			j->nslev = nl;
		}
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
	if (json_object_object_get_ex(o, "phase_ms", &v) &&
	    json_object_is_type(v, json_type_array))
		probe_parse(j, v);
	if (json_object_object_get_ex(o, "shim", &v) &&
	    json_object_is_type(v, json_type_array))
		shim_parse(j, v);
	shard = pr->params / (j->tp * j->pp);
	j->compute_s = 6.0 * shard * pr->tokens / FLOPS;
	/* fill() and check() of every reduced float, per rank */
	{
		double ntp = fmax(16, 2.0 * pr->layers / j->pp * pr->tokens *
					  pr->hidden * 2 * scale / 4);
		double ndp = fmax(16, shard * 2 * scale / 4);

		if (j->tp > 1)
			j->vtp_s = ntp * C_VERIFY;
		if (j->dp > 1)
			j->vdp_s = ndp * C_VERIFY;
		j->verify_cpu_s = j->vtp_s + j->vdp_s;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "job entry without kind/model/gpus/tp/pp/hosts/ms");
	return -EINVAL;
}

/* The flows of a training job's step (sizes of fabric_job.c). */
static void job_flows(const struct efab *f, struct rjob *j, int jid,
		      double scale, const struct fprofile *pr,
		      struct rflow **fl, int *nf, int *cap)
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
	for (int r = 0; j->dp > 1 && r < blk; r++) {
		int *mem;

		if (!j->nslev || dp_b <= j->pass_max) {
			ring_flows(j, jid, r, blk, j->dp, SIM_PH_DP, dp_b, fl,
				   nf, cap);
			continue;
		}
		if (!(mem = malloc((size_t)j->dp * sizeof(int)))) {
			flows_oom = 1;
			return;
		}
		for (int k = 0; k < j->dp; k++)
			mem[k] = r + k * blk;
		shim_flows(f, j, jid, mem, j->dp, dp_b, fl, nf, cap);
		free(mem);
	}
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

/* One run's means (ms): predicted and measured step over the same
 * records, the fabric, host and latency parts of the prediction; per
 * phase, predicted and measured over the records that have the probe. */
struct rmean {
	double pred, meas, fab, host, lat, comp_pred, comp_meas;
	double ph_pred[SIM_NPHASES], ph_meas[SIM_NPHASES];
	int ph_recs;
};

static int replay_run(const struct efab *f, json_object *run, double scale,
		      struct rmean *res, char *err, size_t errlen)
{
	json_object *jl;
	struct rjob *jobs = NULL;
	struct rflow *fl = NULL;
	struct sim_use *use = NULL;
	double *rate = NULL;
	int *off = NULL, nj, nf = 0, capf = 0, rc = 0, recs = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double psum = 0, msum = 0, fsum = 0, hsum = 0, lsum = 0;
	double php[SIM_NPHASES] = {0}, phm[SIM_NPHASES] = {0}, cp = 0, cm = 0;
	int phrecs = 0;

	memset(res, 0, sizeof(*res));
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
			job_flows(f, &jobs[i], i, scale, profile_of(o), &fl,
				  &nf, &capf);
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
		double lat = 0;
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
			double l = phase_hops(j, p) * j->hop_s;
			double ph = fmax(fab[p], cpu) + l;

			step += ph;
			host += fmax(0, cpu - fab[p]);
			fsec += fab[p];
			lat += l;
			if (j->nph) /* fill and check are in the phase */
				php[p] += (ph + (p == SIM_PH_TP	  ? j->vtp_s
						 : p == SIM_PH_DP ? j->vdp_s
								  : 0) *
						    slow) *
					  1e3 * j->nph;
		}
		host += j->verify_cpu_s * slow;
		step += j->verify_cpu_s * slow;
		n = j->nrec;
		psum += step * 1e3 * n;
		fsum += fsec * 1e3 * n;
		hsum += host * 1e3 * n;
		lsum += lat * 1e3 * n;
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
	int rc = 0, over = 0, n = 0, nph = 0;
	char err[256] = "";
	/* names point into root, which lives to the end */
	struct {
		const char *shape, *cfg;
		struct rmean m;
		int runs;
	} phs[64];

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
			struct rmean sum = {0};
			double idle = 0, e;
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
				struct rmean r;

				json_object_object_get_ex(rk, "config", &c);
				if (strcmp(json_object_get_string(c), cfg))
					continue;
				rc = replay_run(&f, rk, scale, &r, err,
						sizeof(err));
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
		efab_free(&f);
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
