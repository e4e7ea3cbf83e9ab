/*
 * shim_model.c - a job's collectives as comm_shim runs them, for the
 * isle+shim policy of islesim and for the replay of bench-fabric's shim
 * runs (fabric_model.c): one model of the hierarchy, the codecs, the
 * probe and the decision to pass through.
 *
 * Hierarchy (docs/comm-shim.md, "hier"): at level 0 the members that share
 * the level's scope (their NVLink island) form a group; at level l > 0 the
 * members that share the scope and hold the same position in their groups
 * below. Each group reduce-scatters and allgathers its share of the buffer
 * (the buffer over the sizes of its groups below) as a ring, at the wire
 * size of the level's codec. The shim pipelines segments through the
 * levels, so all levels' transfers run in one phase at once.
 *
 * Levels and codecs follow the plan isle-agent writes (agent/plan_build.c):
 * island, node (where islands split a node), leaf group, then the job; the
 * admin's default codec policy (isle_codec_tier_default) puts none on
 * NVLink and PCIe and int8 on the network.
 *
 * The shim reduces fp32 only (the NCCL and MPI interposers pass every
 * other type through), so a job that uses it hands it fp32 gradients:
 * 4 / SIM_TRAFFIC_BYTES times the bytes of the library's bf16 allreduce,
 * before the codecs shrink them (bf16 on the wire is the library's size
 * again, int8 about half of it; none on NVLink and PCIe is twice it).
 *
 * Only the DP gradient allreduce goes through the hierarchy: TP groups sit
 * inside an island under isle's placement (their level 0 is the whole
 * group, codec none, which is the library's ring), and pipeline sends are
 * point to point, which the shim never takes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"
#include "isle_proto.h"

double sim_codec_ratio(const char *spec)
{
	/* the shim's wire size at a large n (a power of two: exact for
	 * int8's power-of-two blocks), less topk's fixed header */
	const size_t n = (size_t)1 << 52;
	struct isle_codec c;

	if (isle_codec_parse(spec, &c, NULL, 0))
		return 1;
	return (double)(isle_codec_encoded_size(&c, n) -
			isle_codec_encoded_size(&c, 0)) /
	       (4.0 * (double)n);
}

int sim_shim_hier(int n, const struct sim_shim_level *lv, int nlev,
		  double bytes, sim_shim_ring_fn ring, void *ctx)
{
	int *idx = calloc((size_t)n * (nlev + 1) + 1, sizeof(int));
	int *grp = malloc(((size_t)n + 1) * sizeof(int));
	double *div = malloc(((size_t)n + 1) * sizeof(double));
	int rc = -ENOMEM;

	if (!idx || !grp || !div)
		goto out;
	for (int i = 0; i < n; i++)
		div[i] = 1;
	for (int l = 0; l < nlev; l++) {
		const int *key = lv[l].key;

		for (int i = 0; i < n; i++)
			idx[l * n + i] = -1;
		for (int i = 0; i < n; i++) {
			int g = 0;

			if (idx[l * n + i] >= 0)
				continue;
			/* i leads a new group: everyone with its key and its
			 * positions below */
			for (int k = i; k < n; k++) {
				int same = key[k] == key[i];

				for (int m = 0; same && m < l; m++)
					same = idx[m * n + k] == idx[m * n + i];
				if (same && idx[l * n + k] < 0) {
					idx[l * n + k] = g;
					grp[g++] = k;
				}
			}
			if (g > 1)
				ring(ctx, grp, g, bytes / div[i], lv[l].ratio);
		}
		/* the next level works on shares of 1 / group size */
		for (int i = 0; i < n; i++) {
			int g = 0;

			for (int k = 0; k < n; k++) {
				int same = key[k] == key[i];

				for (int m = 0; same && m < l; m++)
					same = idx[m * n + k] == idx[m * n + i];
				g += same;
			}
			div[i] *= g > 0 ? g : 1;
		}
	}
	rc = 0;
out:
	free(idx);
	free(grp);
	free(div);
	return rc;
}

const char *sim_shim_codec(const isle_topo *t, isle_tier tier)
{
	/* spine and core codecs are for oversubscribed tiers only */
	if (tier >= ISLE_TIER_SPINE && t->tier[tier].oversub <= 1.0)
		tier = ISLE_TIER_LEAF;
	return isle_codec_tier_default(tier);
}

/* Groups at a scope's keys among members that share the previous kept
 * level's key; 0 when those groups do not nest in the scope's. */
static int nest_groups(const int *prev, const int *key, int n)
{
	int groups = 0;

	for (int i = 0; i < n; i++) {
		int seen = 0;

		for (int k = 0; k < n; k++) {
			if (prev && prev[k] == prev[i] && key[k] != key[i])
				return 0;
			if (k < i && key[k] == key[i])
				seen = 1;
		}
		groups += !seen;
	}
	return groups;
}

int sim_shim_levels(const isle_topo *t, const struct isle_place_rank *ranks,
		    const int *mem, int n, int *keys, struct sim_shim_level *lv)
{
	static const isle_tier cand[] = {ISLE_TIER_ISLAND, ISLE_TIER_NODE,
					 ISLE_TIER_LEAF};
	isle_tier top = ISLE_TIER_ISLAND;
	const int *prev = NULL;
	int nlev = 0, prev_groups = n;

	for (size_t c = 0; c < sizeof(cand) / sizeof(*cand); c++) {
		int *key = keys + (size_t)nlev * n, g;

		for (int i = 0; i < n; i++) {
			const struct isle_place_rank *r = &ranks[mem[i]];
			const struct isle_node *nd = &t->nodes[r->node];

			key[i] = cand[c] == ISLE_TIER_ISLAND
				     ? nd->gpus[r->gpu].island
				 : cand[c] == ISLE_TIER_NODE
				     ? r->node
				     : nd->group[ISLE_TIER_LEAF];
		}
		g = nest_groups(prev, key, n);
		if (g == 1)
			break; /* this scope already spans the group */
		if (g == 0 || g >= prev_groups)
			continue;
		lv[nlev] = (struct sim_shim_level){
		    key, sim_codec_ratio(sim_shim_codec(t, cand[c]))};
		prev = key;
		prev_groups = g;
		nlev++;
	}
	/* the job level: carried by the loosest tier two members share */
	for (int i = 0; i < n; i++)
		for (int k = i + 1; k < n; k++) {
			const struct isle_place_rank *a = &ranks[mem[i]],
						     *b = &ranks[mem[k]];
			isle_tier x = isle_topo_gpu_tier(t, a->node, a->gpu,
							 b->node, b->gpu);

			top = x > top ? x : top;
		}
	memset(keys + (size_t)nlev * n, 0, (size_t)n * sizeof(int));
	lv[nlev] = (struct sim_shim_level){
	    keys + (size_t)nlev * n, sim_codec_ratio(sim_shim_codec(t, top))};
	return nlev + 1;
}

struct xring {
	const struct isle_place_rank *ranks;
	const int *mem;
	struct sim_xfer *x;
	int k;
	double scale; /* the probe's share on top of the shim's bytes */
	int *tmp;
};

static void xring_cb(void *ctx, const int *grp, int g, double bytes,
		     double ratio)
{
	struct xring *r = ctx;

	for (int i = 0; i < g; i++)
		r->tmp[i] = r->mem[grp[i]];
	r->k = sim_ring_xfers(r->x, r->k, r->ranks, r->tmp, g, SIM_PH_DP,
			      bytes * ratio * r->scale);
}

int sim_shim_xfers(const isle_topo *t, const struct sim_traffic *tr,
		   const struct isle_place_rank *ranks, int nranks, int tp,
		   int pp, double probe_share, struct sim_xfer **out, int *nout)
{
	struct sim_shim_level lv[ISLE_TIER_COUNT + 1];
	struct sim_traffic own = *tr;
	struct sim_xfer *x = NULL, *dp = NULL;
	int dp_n = nranks / (tp * pp), blk = tp * pp, ndp = 0, rc;
	int *mem = malloc(((size_t)dp_n + 1) * sizeof(int));
	int *tmp = malloc(((size_t)dp_n + 1) * sizeof(int));
	int *keys =
	    malloc(((size_t)dp_n * (ISLE_TIER_COUNT + 1) + 1) * sizeof(int));

	*out = NULL;
	*nout = 0;
	rc = -ENOMEM;
	/* a ring of g makes at most 2g transfers, at most 4 levels */
	dp = malloc(((size_t)nranks * 8 + 1) * sizeof(*dp));
	if (!mem || !tmp || !keys || !dp)
		goto out;
	/* TP and PP as the library runs them */
	own.dp_bytes = 0;
	rc = sim_job_xfers(&own, ranks, nranks, tp, pp, &x, nout);
	if (rc)
		goto out;
	for (int r = 0; tr->dp_bytes > 0 && r < blk; r++) {
		struct xring ctx = {ranks, mem, dp, ndp, 1 + probe_share, tmp};
		int nlev;

		for (int i = 0; i < dp_n; i++)
			mem[i] = r + i * blk;
		nlev = sim_shim_levels(t, ranks, mem, dp_n, keys, lv);
		rc = sim_shim_hier(dp_n, lv, nlev,
				   tr->dp_bytes * 4.0 / SIM_TRAFFIC_BYTES,
				   xring_cb, &ctx);
		if (rc)
			goto out;
		ndp = ctx.k;
	}
	if (ndp) {
		struct sim_xfer *all =
		    realloc(x, ((size_t)*nout + ndp + 1) * sizeof(*x));

		rc = -ENOMEM;
		if (!all)
			goto out;
		x = all;
		memcpy(x + *nout, dp, (size_t)ndp * sizeof(*x));
		*nout += ndp;
	}
	*out = x;
	x = NULL;
	rc = 0;
out:
	if (rc)
		*nout = 0;
	free(x);
	free(dp);
	free(mem);
	free(tmp);
	free(keys);
	return rc;
}

/* Adds x as job id's traffic and returns its communication seconds per
 * step alone on the fabric in *s; the traffic stays. */
static int add_alone(struct sim_net *net, int id, const struct sim_xfer *x,
		     int nx, double *s)
{
	int rc = sim_net_job_add(net, id, x, nx), rc2;

	if (rc < 0)
		return rc;
	rc2 = rc > 0 ? sim_net_comm_alone(net, id, s)
		     : (*s = sim_net_comm_time(net, id, NULL), 0);
	return rc2 ? rc2 : rc;
}

int sim_shim_job_add(struct sim_net *net, const isle_topo *t, int id,
		     const struct sim_traffic *tr,
		     const struct isle_place_rank *ranks, int nranks, int tp,
		     int pp, double probe_share, int *used)
{
	struct sim_xfer *plain = NULL, *shim = NULL;
	int np = 0, ns = 0, rc;
	double tp_s = 0, ts_s = 0;

	*used = 0;
	rc = sim_job_xfers(tr, ranks, nranks, tp, pp, &plain, &np);
	if (rc)
		goto out;
	if (tr->dp_bytes > 0) {
		rc = sim_shim_xfers(t, tr, ranks, nranks, tp, pp, probe_share,
				    &shim, &ns);
		if (rc)
			goto out;
		rc = add_alone(net, id, shim, ns, &ts_s);
		if (rc < 0)
			goto out;
		sim_net_job_remove(net, id);
	}
	rc = add_alone(net, id, plain, np, &tp_s);
	if (rc < 0 || tr->dp_bytes <= 0 || !(ts_s < tp_s))
		goto out;
	/* the shim's path is strictly faster on the job's own links: it
	 * takes the allreduce; on a tie the library keeps it */
	sim_net_job_remove(net, id);
	rc = sim_net_job_add(net, id, shim, ns);
	*used = rc >= 0;
out:
	free(plain);
	free(shim);
	return rc;
}
