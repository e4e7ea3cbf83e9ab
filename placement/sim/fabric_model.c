/*
 * fabric_model.c - the flow model of islesim --replay-fabric: the fabric
 * tests/cluster/fabric.sh emulates, the flows and host work of a training
 * job's step (the sizes of bench/fabric/fabric_job.c), and the step time
 * they give. fabric_replay.c reads the benchmark's result file into it and
 * reports the prediction next to the measurement.
 *
 *   step = compute + sum over phases (TP, PP, DP) of
 *          max(fabric time, host CPU time of the phase) + verify CPU time
 *
 * Fabric: what tests/cluster/fabric.sh emulated, not the GPU cluster: the
 * cable tree of isle_emit_fabric() (one cable per node, one uplink per
 * switch), every cable tbf-shaped at its rate times the scale, both
 * directions apart. No netem on the benchmark host, so no cable latency.
 * Traffic between ranks of one node is shared memory (Open MPI vader), so
 * it is host time only. Allreduces: with blocking calls, rings in rank
 * order (Open MPI's ring for large messages: each hop carries 2(n-1)/n of
 * the buffer); with fabric_job --poll-us (MPI_Iallreduce, in place) what
 * Open MPI 4.1's libnbc runs for an in-place allreduce of any size: its
 * binomial schedule (nbc_iallreduce.c, allred_sched_diss), a reduce up a
 * binomial tree to rank 0 and a broadcast down another, whole buffer per
 * message, ceil(log2 n) rounds each way;
 * stage boundaries send 4 micro-batches forward and back, one after the
 * other. With the shim (the job's `isle_comm:` lines give the levels and
 * codecs of its DP communicators and the size it leaves to MPI), a DP
 * allreduce above that size is the shim's hierarchy: rings per level
 * among the ranks that share the level's scope, on shares of the buffer
 * (1 / the level's smallest group, as comm.c shards it), at the codec's
 * wire size, all levels at once. The flows of a round share the cables
 * by max-min fairness (netsim.c's sim_maxmin), a flow leaving when its
 * bytes are through, with one round of each job whose Slurm run interval
 * overlaps (a job's rounds run one after the other): the one that slows
 * the round most.
 *
 * Host: fixed per-element CPU costs (below), from the memory and copy
 * rates of a current x86 core. A phase's work runs on all the job's ranks
 * at once, on the host's cores shared with the other jobs' ranks that are
 * runnable: each for its CPU work per step, as the others sleep in their
 * compute and between polls. The polls' own CPU is not modelled: the
 * benchmark records the host's CPU idle next to the error.
 *
 * Latency: every message hop that must finish before the next can start
 * (ring steps, pipeline hand-offs) costs one host message latency, the
 * job's probed hop latency (fabric_replay.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_priv.h"

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

static const struct fprofile fprofiles[] = {
    {"7b", 7e9, 4096, 32, 4096},
    {"70b", 70e9, 8192, 80, 4096},
};

const struct fprofile *sim_fab_profile(const char *name)
{
	for (size_t k = 0; k < sizeof(fprofiles) / sizeof(fprofiles[0]); k++)
		if (name && !strcmp(name, fprofiles[k].name))
			return &fprofiles[k];
	return NULL;
}

void sim_efab_free(struct efab *f)
{
	for (int i = 0; i < f->nv; i++) {
		free(f->name[i]);
		if (f->isl)
			free(f->isl[i]);
	}
	free(f->isl);
	free(f->ngpu);
	free(f->name);
	free(f->parent);
	free(f->cap);
	free(f->kind);
	free(f->tier);
	memset(f, 0, sizeof(*f));
}

int sim_efab_vertex(const struct efab *f, const char *name)
{
	for (int i = 0; i < f->nv; i++)
		if (!strcmp(f->name[i], name))
			return i;
	return -1;
}

static int efab_add(struct efab *f, const char *name)
{
	int v = sim_efab_vertex(f, name);
	char **n, *k, (*t)[16];
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
	t = realloc(f->tier, (size_t)(f->nv + 1) * sizeof(*t));
	if (t)
		f->tier = t;
	if (!n || !p || !c || !k || !t || !(f->name[f->nv] = strdup(name)))
		return -ENOMEM;
	f->kind[f->nv] = 's';
	f->tier[f->nv][0] = 0;
	f->parent[f->nv] = -1;
	f->cap[2 * f->nv] = f->cap[2 * f->nv + 1] = 0;
	return f->nv++;
}

int sim_efab_build(const isle_topo *t, double scale, struct efab *f, char *err,
		   size_t errlen)
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
		char a[128], b[128], tier[16] = "";
		double gbit, lat;
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
		if (sscanf(line, "cable %127s %127s %lf %lf %15s", a, b, &gbit,
			   &lat, tier) < 3)
			continue;
		if ((va = efab_add(f, a)) < 0 || (vb = efab_add(f, b)) < 0) {
			rc = -ENOMEM;
			break;
		}
		if (f->parent[va] >= 0)
			continue; /* the emulation keeps the first uplink */
		f->parent[va] = vb;
		snprintf(f->tier[va], sizeof(f->tier[va]), "%s", tier);
		f->cap[2 * va] = f->cap[2 * va + 1] =
		    gbit * 1e9 * scale / 8.0 * TCP_EFF;
		rc = 0;
	}
	fclose(m);
	if (rc > 0)
		rc = 0;
	/* the NVLink islands inside each node, for the shim's island level */
	f->isl = calloc((size_t)f->nv + 1, sizeof(*f->isl));
	f->ngpu = calloc((size_t)f->nv + 1, sizeof(*f->ngpu));
	if (!rc && (!f->isl || !f->ngpu))
		rc = -ENOMEM;
	for (int v = 0; !rc && v < f->nv; v++) {
		int n =
		    f->kind[v] == 'n' ? isle_topo_find_node(t, f->name[v]) : -1;

		if (n < 0)
			continue;
		f->isl[v] =
		    malloc(((size_t)t->nodes[n].ngpus + 1) * sizeof(int));
		if (!f->isl[v]) {
			rc = -ENOMEM;
			break;
		}
		f->ngpu[v] = t->nodes[n].ngpus;
		for (int k = 0; k < f->ngpu[v]; k++)
			f->isl[v][k] = t->nodes[n].gpus[k].island;
	}
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

int sim_fab_ceil_log2(int n)
{
	int k = 0;

	while (k < 30 && (1 << k) < n)
		k++;
	return k;
}

void sim_fab_wire_bytes(const struct efab *f, const struct rflows *fl, int jid,
			double *by)
{
	struct sim_use u[64];

	for (int e = 0; e < fl->n; e++) {
		int k;

		if (fl->v[e].job != jid)
			continue;
		k = efab_route(f, fl->v[e].a, fl->v[e].b, u, 64);
		for (int x = 0; x < k; x++)
			by[u[x].link / 2] += fl->v[e].bytes / TCP_EFF;
	}
}

/* Message hops of an allreduce over n ranks that wait for one another: a
 * ring takes 2(n-1) steps, libnbc's binomial schedule ceil(log2 n) rounds
 * up and as many down. */
static int allreduce_hops(const struct rjob *j, int n)
{
	if (n < 2)
		return 0;
	return j->nbc ? 2 * sim_fab_ceil_log2(n) : 2 * (n - 1);
}

/* Message hops of a phase that wait for one another; each pipeline
 * micro-batch goes down the stages and back. */
static int phase_hops(const struct rjob *j, int phase)
{
	switch (phase) {
	case SIM_PH_TP:
		return allreduce_hops(j, j->tp);
	case SIM_PH_PP:
		return j->pp > 1 ? 2 * MICRO * (j->pp - 1) : 0;
	default:
		return allreduce_hops(j, j->dp);
	}
}

static void add_flow(struct rflows *fl, struct rflow f)
{
	if (fl->n == fl->cap) {
		int nc = fl->cap ? 2 * fl->cap : 64;
		struct rflow *p = realloc(fl->v, (size_t)nc * sizeof(*p));

		if (!p) {
			fl->oom = 1;
			return;
		}
		fl->v = p;
		fl->cap = nc;
	}
	fl->v[fl->n++] = f;
}

/* Ring allreduce of bytes (fp32) over the ranks mem[0..n) in nsh shards
 * (coll.c's ring_rs and ring_ag; nsh < n where the shim's groups differ in
 * size: positions nsh.. own empty shards), ratio the codec's wire bytes per
 * byte: one flow per hop between nodes; host CPU of the whole ring. Shard q
 * goes round the ring from q + 1 to q in the reduce-scatter and from q to
 * q - 1 in the allgather, so hop i -> i + 1 carries every shard but shard
 * i in the first and but shard i + 1 in the second: 2(n-1)/n of the
 * buffer each where nsh = n. */
static void ring_list(struct rjob *j, int jid, const int *mem, int n, int nsh,
		      int phase, double bytes, double ratio, struct rflows *fl)
{
	double sh = bytes / nsh;

	if (n < 2)
		return;
	for (int i = 0; i < n; i++) {
		int r = mem[i], s = mem[(i + 1) % n], q = mem[(i + n - 1) % n];
		int prev = (i + n - 1) % n;
		double out =
		    (2 * nsh - (i < nsh) - ((i + 1) % n < nsh)) * sh * ratio;
		double in = (2 * nsh - (prev < nsh) - (i < nsh)) * sh * ratio;
		/* half the copies of a hop at each end */
		double c_out = j->node[r] != j->node[s] ? C_TCP : C_SHM;
		double c_in = j->node[q] != j->node[r] ? C_TCP : C_SHM;
		/* the reduce-scatter sums the shards that come in (or
		 * encodes and decodes them) */
		double w = (out * c_out + in * c_in) / 2 +
			   (nsh - (prev < nsh)) * sh / 4.0 *
			       (ratio < 1 ? C_CODEC : C_SUM);

		if (j->node[r] != j->node[s] && out > 0)
			add_flow(fl, (struct rflow){jid, phase, j->node[r],
						    j->node[s], out, 0});
		j->cpu_s[phase] = fmax(j->cpu_s[phase], w);
	}
}

/* One message of bytes from rank mem[s] to mem[d] in round q of a
 * binomial allreduce: a flow between nodes; both ends' copies in cpu[]. */
static void binom_msg(struct rjob *j, int jid, const int *mem, int s, int d,
		      int phase, int q, double bytes, double *cpu,
		      struct rflows *fl)
{
	int a = j->node[mem[s]], b = j->node[mem[d]];
	double c = a != b ? C_TCP : C_SHM;

	if (a != b)
		add_flow(fl, (struct rflow){jid, phase, a, b, bytes, q});
	cpu[s] += bytes * c / 2;
	cpu[d] += bytes * c / 2;
}

/* libnbc's binomial allreduce (allred_sched_diss, root 0) of bytes over
 * the ranks mem[0..n) in communicator order. Reduce, round r = 1..R
 * (R = ceil(log2 n)): v with v mod 2^r = 2^(r-1) sends its partial sum
 * to v - 2^(r-1), which adds it. Broadcast: v > 0 receives from
 * v - 2^floor(log2 v); a rank sends to all its children at once as soon
 * as it has the data, so a message from p is in round R + popcount(p)
 * (rank 0's in the first). Every message is the whole buffer. */
static void binom_list(struct rjob *j, int jid, const int *mem, int n,
		       int phase, double bytes, struct rflows *fl)
{
	int maxr = sim_fab_ceil_log2(n);
	double *cpu = calloc((size_t)(n > 0 ? n : 1), sizeof(*cpu));

	if (!cpu) {
		fl->oom = 1;
		return;
	}
	for (int r = 1; n > 1 && r <= maxr; r++)
		for (int v = 1 << (r - 1); v < n; v += 1 << r) {
			binom_msg(j, jid, mem, v, v - (1 << (r - 1)), phase,
				  r - 1, bytes, cpu, fl);
			cpu[v - (1 << (r - 1))] += bytes / 4.0 * C_SUM;
		}
	for (int v = 1; n > 1 && v < n; v++) {
		int p = v - (1 << (sim_fab_ceil_log2(v + 1) - 1));

		binom_msg(j, jid, mem, p, v, phase,
			  maxr + __builtin_popcount((unsigned)p), bytes, cpu,
			  fl);
	}
	for (int i = 0; i < n; i++)
		j->cpu_s[phase] = fmax(j->cpu_s[phase], cpu[i]);
	free(cpu);
}

/* Ranks first, first + stride, ... (n of them), uncompressed: a ring, or
 * libnbc's binomial schedule where the job uses non-blocking calls. */
static void ring_flows(struct rjob *j, int jid, int first, int stride, int n,
		       int phase, double bytes, struct rflows *fl)
{
	int *mem = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));

	if (!mem) {
		fl->oom = 1;
		return;
	}
	for (int i = 0; i < n; i++)
		mem[i] = first + i * stride;
	if (j->nbc)
		binom_list(j, jid, mem, n, phase, bytes, fl);
	else
		ring_list(j, jid, mem, n, n, phase, bytes, 1.0, fl);
	free(mem);
}

/* The fabric vertex that stands for rank r's group at a shim scope. */
static int scope_key(const struct efab *f, const struct rjob *j, int r,
		     char scope)
{
	int v = j->node[r];

	switch (scope) {
	case 'i': /* an NVLink domain across nodes, else the island of the
		   * rank's GPU in its node: local rank k on GPU k (the
		   * result file records no GPU indices) */
		if (f->parent[v] >= 0 && f->kind[f->parent[v]] == 'd')
			return f->parent[v];
		if (r % j->gpn < f->ngpu[v])
			return f->nv + f->isl[v][r % j->gpn];
		return v;
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

/* Members i and k meet at level l: both active, same scope, same
 * positions at every level below. */
static int same_group(const int *key, const int *act, int *const *below, int l,
		      int i, int k)
{
	if (!act[k] || key[k] != key[i])
		return 0;
	for (int m = 0; m < l; m++)
		if (below[m][k] != below[m][i])
			return 0;
	return 1;
}

/*
 * The shim's hierarchical allreduce of one DP group (ranks mem[0..n) in
 * communicator order) at the job's printed levels, as comm.c's
 * isle__build_groups and coll.c's hier() run it: at level l the active
 * members with the same scope and the same positions below form a group
 * (members in order); the level has nshards = its smallest group's size,
 * job-wide; every group splits its share into nshards shards, and only
 * positions below nshards go on to the levels above, with a share of
 * 1 / nshards. With groups of unequal size (leaf groups 1..3) a group of
 * 3 moves its whole share round its ring and one member carries all of
 * it up, where groups of equal size give each member 1 / size.
 */
static void shim_flows(const struct efab *f, struct rjob *j, int jid,
		       const int *mem, int n, double bytes, struct rflows *fl)
{
	int *key = malloc(((size_t)n * 4 + 1) * sizeof(int));
	int *idx = key + n, *act = key + 2 * n, *tmp = key + 3 * n;
	int **below = calloc((size_t)j->nslev + 1, sizeof(*below));
	double share = bytes;

	if (!key || !below) {
		fl->oom = 1;
		goto out;
	}
	for (int i = 0; i < n; i++)
		act[i] = 1;
	for (int l = 0; l < j->nslev; l++) {
		int nsh = n;

		if (!(below[l] = malloc((size_t)n * sizeof(int)))) {
			fl->oom = 1;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			key[i] = scope_key(f, j, mem[i], j->slev[l].scope);
			idx[i] = -1;
		}
		/* groups: idx[] the position, nsh the smallest size */
		for (int i = 0; i < n; i++) {
			int g = 0;

			if (!act[i] || idx[i] >= 0)
				continue;
			for (int k = i; k < n; k++)
				if (same_group(key, act, below, l, i, k))
					idx[k] = g++;
			nsh = g < nsh ? g : nsh;
		}
		for (int i = 0; i < n; i++) {
			int g = 0;

			if (!act[i] || idx[i] != 0)
				continue;
			for (int k = i; k < n; k++)
				if (same_group(key, act, below, l, i, k))
					tmp[g++] = mem[k];
			ring_list(j, jid, tmp, g, nsh, SIM_PH_DP, share,
				  j->slev[l].ratio, fl);
		}
		for (int i = 0; i < n; i++) {
			below[l][i] = idx[i];
			act[i] = act[i] && idx[i] < nsh;
		}
		share /= nsh;
	}
out:
	for (int l = 0; below && l < j->nslev; l++)
		free(below[l]);
	free(below);
	free(key);
}

void sim_fab_job_costs(struct rjob *j, double scale)
{
	const struct fprofile *pr = j->pr;
	double shard = pr->params / (j->tp * j->pp);
	/* fill() and check() of every reduced float, per rank */
	double ntp = fmax(16, 2.0 * pr->layers / j->pp * pr->tokens *
				  pr->hidden * 2 * scale / 4);
	double ndp = fmax(16, shard * 2 * scale / 4);

	j->compute_s = 6.0 * shard * pr->tokens / FLOPS;
	if (j->tp > 1)
		j->vtp_s = ntp * C_VERIFY;
	if (j->dp > 1)
		j->vdp_s = ndp * C_VERIFY;
	j->verify_cpu_s = j->vtp_s + j->vdp_s;
}

/* The sizes of fabric_job.c. */
void sim_fab_job_flows(const struct efab *f, struct rjob *j, int jid,
		       double scale, struct rflows *fl)
{
	const struct fprofile *pr = j->pr;
	double shard = pr->params / (j->tp * j->pp);
	double tp_b = fmax(16, 2.0 * pr->layers / j->pp * pr->tokens *
				   pr->hidden * 2 * scale / 4) *
		      4;
	double pp_b =
	    fmax(16, pr->tokens / MICRO * pr->hidden * 2 * scale / 4) * 4;
	double dp_b = fmax(16, shard * 2 * scale / 4) * 4;
	int blk = j->tp * j->pp;

	for (int g = 0; j->tp > 1 && g < j->nranks; g += j->tp)
		ring_flows(j, jid, g, 1, j->tp, SIM_PH_TP, tp_b, fl);
	/* each boundary: MICRO sends forward, MICRO back, one after the
	 * other: one flow of all of them per direction */
	for (int r = 0; j->pp > 1 && r < j->nranks; r++) {
		int s = r + j->tp;

		if ((r / j->tp) % j->pp + 1 >= j->pp)
			continue;
		/* a rank sends and receives each micro-batch once */
		if (j->node[r] != j->node[s]) {
			add_flow(fl, (struct rflow){jid, SIM_PH_PP, j->node[r],
						    j->node[s],
						    2.0 * MICRO * pp_b, 0});
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
			ring_flows(j, jid, r, blk, j->dp, SIM_PH_DP, dp_b, fl);
			continue;
		}
		if (!(mem = malloc((size_t)j->dp * sizeof(int)))) {
			fl->oom = 1;
			return;
		}
		for (int k = 0; k < j->dp; k++)
			mem[k] = r + k * blk;
		shim_flows(f, j, jid, mem, j->dp, dp_b, fl);
		free(mem);
	}
}

/* Job o runs while job i does: their Slurm run intervals overlap. */
static int overlaps(const struct rjob *jobs, int i, int o)
{
	return o != i && jobs[o].t0 < jobs[i].t1 && jobs[i].t0 < jobs[o].t1;
}

/* The host CPU of one rank of j per step, busiest rank per phase. */
static double job_cpu(const struct rjob *j)
{
	double w = j->verify_cpu_s;

	for (int p = 0; p < SIM_NPHASES; p++)
		w += j->cpu_s[p];
	return w;
}

/* Room for solving one round against the other jobs' rounds. */
struct rsolve {
	const struct efab *f;
	const struct rflows *fl;
	struct sim_use *use, *ause;
	double *rate, *rem;
	int *off, *aoff, *idx; /* idx: the flow of each entry */
	int *pick; /* per job: its round against this one, -1: none */
};

/* Flow e is in job o's round key (phase * 1024 + round). */
static int in_round(const struct rflow *e, int o, int key)
{
	return e->job == o && e->phase * 1024 + e->round == key;
}

/*
 * The time of job i's round key beside the picked rounds of the other
 * jobs, all starting together: the flows share the cables max-min, a
 * flow that has sent its bytes leaves and the rest speed up, until job
 * i's last flow is through. 0 or a negative errno.
 */
static int round_time(struct rsolve *s, int nj, int i, int key, double *t)
{
	const struct rflows *fl = s->fl;
	int n = 0, nu = 0, rc = 0, own = 0;

	*t = 0;
	for (int e = 0; e < fl->n; e++) {
		int o = fl->v[e].job, mine = in_round(&fl->v[e], i, key);

		if (!mine && (o == i || o >= nj || s->pick[o] < 0 ||
			      !in_round(&fl->v[e], o, s->pick[o])))
			continue;
		s->idx[n] = e;
		s->rem[n] = fmax(0, fl->v[e].bytes);
		s->off[n] = nu;
		nu += efab_route(s->f, fl->v[e].a, fl->v[e].b, s->use + nu,
				 2 * s->f->nv);
		own += mine && s->rem[n] > 0;
		n++;
	}
	s->off[n] = nu;
	while (own > 0) {
		int k = 0, ku = 0;
		double dt = INFINITY;

		/* the flows still sending, compacted for sim_maxmin */
		for (int x = 0; x < n; x++) {
			if (s->rem[x] <= 0)
				continue;
			s->aoff[k++] = ku;
			for (int u = s->off[x]; u < s->off[x + 1]; u++)
				s->ause[ku++] = s->use[u];
		}
		s->aoff[k] = ku;
		rc = sim_maxmin(2 * s->f->nv, s->f->cap, k, s->aoff, s->ause,
				s->rate);
		if (rc)
			return rc;
		k = 0;
		for (int x = 0; x < n; x++) {
			if (s->rem[x] <= 0)
				continue;
			if (isfinite(s->rate[k]) && s->rate[k] > 0)
				dt = fmin(dt, s->rem[x] / s->rate[k]);
			else
				dt = 0; /* no cable between them */
			k++;
		}
		*t += dt;
		k = 0;
		for (int x = 0; x < n; x++) {
			double r;

			if (s->rem[x] <= 0)
				continue;
			r = s->rate[k++];
			s->rem[x] = isfinite(r) && r > 0 && dt < INFINITY
					? s->rem[x] - r * dt
					: 0;
			/* done within rounding */
			if (s->rem[x] <= 1e-9 * fl->v[s->idx[x]].bytes) {
				s->rem[x] = 0;
				own -= in_round(&fl->v[s->idx[x]], i, key);
			}
		}
	}
	return 0;
}

int sim_fab_step(const struct efab *f, const struct rjob *jobs, int nj,
		 const struct rflows *fl, int i, long cores,
		 struct fab_step *out)
{
	const struct rjob *j = &jobs[i];
	double fab[SIM_NPHASES] = {0}, slow, busy;
	struct rsolve s = {.f = f, .fl = fl};
	size_t nu = (size_t)fl->n * 2 * f->nv + 1, nf = (size_t)fl->n + 1;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	s.use = malloc(nu * sizeof(*s.use));
	s.ause = malloc(nu * sizeof(*s.ause));
	s.rate = malloc(nf * sizeof(double));
	s.rem = malloc(nf * sizeof(double));
	s.off = malloc(nf * sizeof(int));
	s.aoff = malloc(nf * sizeof(int));
	s.idx = malloc(nf * sizeof(int));
	s.pick = malloc(((size_t)nj + 1) * sizeof(int));
	if (!s.off || !s.use || !s.rate || !s.pick || !s.ause || !s.rem ||
	    !s.aoff || !s.idx) {
		rc = -ENOMEM;
		goto out;
	}
	/*
	 * A job's rounds run one after the other, so only one round of each
	 * other job can be on the cables beside one of job i's rounds. Each
	 * round of job i gets, from every job that runs at the same time,
	 * the round of theirs that slows it most (collide.json: two jobs on
	 * one cable slow each other as if their transfers always
	 * coincided); a phase is its rounds one after the other, each the
	 * time of its slowest flow.
	 */
	for (int e = 0; e < fl->n; e++) {
		int key = fl->v[e].phase * 1024 + fl->v[e].round, seen = 0;
		double t;

		if (fl->v[e].job != i)
			continue;
		for (int x = 0; x < e && !seen; x++)
			seen = in_round(&fl->v[x], i, key);
		if (seen)
			continue;
		for (int o = 0; o < nj; o++)
			s.pick[o] = -1;
		for (int o = 0; o < nj; o++) {
			double worst = -1;
			int best = -1;

			if (!overlaps(jobs, i, o))
				continue;
			for (int x = 0; x < fl->n; x++) {
				int ko = fl->v[x].phase * 1024 + fl->v[x].round,
				    dup = 0;

				if (fl->v[x].job != o)
					continue;
				for (int y = 0; y < x && !dup; y++)
					dup = in_round(&fl->v[y], o, ko);
				if (dup)
					continue;
				s.pick[o] = ko;
				rc = round_time(&s, nj, i, key, &t);
				if (rc)
					goto out;
				if (t > worst)
					worst = t, best = ko;
			}
			s.pick[o] = best;
		}
		rc = round_time(&s, nj, i, key, &t);
		if (rc)
			goto out;
		fab[fl->v[e].phase] += t;
	}
	/* processor sharing: the job's ranks do a phase's work at the same
	 * moment (the collective before lines them up). With blocking calls
	 * every rank of the other jobs spins in Open MPI's TCP path while it
	 * waits, so is always runnable; with --poll-us one is runnable for
	 * its share of CPU work per step (solo_s) and sleeps in compute or
	 * between polls the rest of the time. A rank gets cores / runnable
	 * ranks of the host. */
	busy = j->nranks;
	for (int o = 0; o < nj; o++)
		if (overlaps(jobs, i, o) && !jobs[o].nbc)
			busy += jobs[o].nranks;
		else if (overlaps(jobs, i, o) && jobs[o].solo_s > 0)
			busy += jobs[o].nranks *
				fmin(1, job_cpu(&jobs[o]) / jobs[o].solo_s);
	slow = busy > cores ? busy / cores : 1.0;
	out->step = j->compute_s;
	for (int p = 0; p < SIM_NPHASES; p++) {
		double cpu = j->cpu_s[p] * slow;
		double l = phase_hops(j, p) * j->hop_s;
		double ph = fmax(fab[p], cpu) + l;

		out->step += ph;
		out->host += fmax(0, cpu - fab[p]);
		out->fab += fab[p];
		out->lat += l;
		/* fill and check are in the phase */
		out->ph[p] = ph + (p == SIM_PH_TP   ? j->vtp_s
				   : p == SIM_PH_DP ? j->vdp_s
						    : 0) *
				      slow;
	}
	out->host += j->verify_cpu_s * slow;
	out->step += j->verify_cpu_s * slow;
out:
	free(s.off);
	free(s.use);
	free(s.rate);
	free(s.pick);
	free(s.ause);
	free(s.rem);
	free(s.aoff);
	free(s.idx);
	return rc;
}
