/*
 * netsim.c - flow-level network model of islesim.
 *
 * Every running job's collectives are flows between GPUs. A flow between
 * two nodes leaves through the NIC of its source GPU, climbs the fabric of
 * the cluster model only up to the lowest switches the two NICs have in
 * common, spread evenly over the equal uplinks, and comes down to the NIC
 * of its destination GPU. Directed links have capacities read from the
 * fabric (NIC rate; a switch's uplinks carry what is below it divided by
 * the oversubscription of the tier above). Links are shared between the
 * flows of all running jobs by max-min fairness (progressive filling).
 * Traffic inside one NVLink island (a node's or a multi-node domain's) and
 * between islands of one node (PCIe) uses the job's own GPUs only, so it
 * is solved once per job, with the same filling, on per-GPU ports.
 *
 * The model reads only the fabric and the flows, never the engine's cost.
 * Routing, the filling and the per-job step time share the link table, so
 * they stay one file of about 800 lines.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

#define EPS 1e-9

/* --- max-min fairness ---------------------------------------------------- */

int sim_maxmin(int nlinks, const double *cap, int nflows, const int *off,
	       const struct sim_use *use, double *rate)
{
	double *rem = NULL, *load = NULL, level = 0;
	int *lstart = NULL, *lflows = NULL, *active = NULL, nact = 0;
	char *frozen = NULL;
	int i, f, k, rc = -ENOMEM, left = nflows;

	rem = malloc(((size_t)nlinks + 1) * sizeof(*rem));
	load = calloc((size_t)nlinks + 1, sizeof(*load));
	lstart = calloc((size_t)nlinks + 2, sizeof(*lstart));
	lflows = malloc(((size_t)off[nflows] + 1) * sizeof(*lflows));
	active = malloc(((size_t)nlinks + 1) * sizeof(*active));
	frozen = calloc((size_t)nflows + 1, 1);
	if (!rem || !load || !lstart || !lflows || !active || !frozen)
		goto out;
	/* flows of each link (CSR) and the load of the unfrozen flows */
	for (k = 0; k < off[nflows]; k++) {
		if (use[k].link < 0 || use[k].link >= nlinks || use[k].w < 0) {
			rc = -EINVAL;
			goto out;
		}
		lstart[use[k].link + 1]++;
	}
	for (i = 0; i < nlinks; i++)
		lstart[i + 1] += lstart[i];
	{
		int *fill = active; /* scratch before the links are listed */

		memcpy(fill, lstart, (size_t)nlinks * sizeof(int));
		for (f = 0; f < nflows; f++)
			for (k = off[f]; k < off[f + 1]; k++) {
				lflows[fill[use[k].link]++] = f;
				load[use[k].link] += use[k].w;
			}
	}
	for (i = 0; i < nlinks; i++) {
		rem[i] = cap[i];
		if (load[i] > EPS)
			active[nact++] = i;
	}
	for (f = 0; f < nflows; f++) {
		rate[f] = INFINITY;
		if (off[f + 1] == off[f]) {
			frozen[f] = 1; /* uses no shared link */
			left--;
		}
	}
	/* raise every unfrozen flow together until a link fills; freeze the
	 * flows through it at the level reached */
	while (left > 0 && nact > 0) {
		double delta = INFINITY;
		int a, n = 0;

		for (a = 0; a < nact; a++) {
			double d = rem[active[a]] / load[active[a]];

			if (d < delta)
				delta = d;
		}
		if (delta < 0)
			delta = 0;
		level += delta;
		for (a = 0; a < nact; a++)
			rem[active[a]] -= delta * load[active[a]];
		for (a = 0; a < nact; a++) {
			int l = active[a];

			if (rem[l] > EPS * (cap[l] > 1 ? cap[l] : 1))
				continue;
			for (k = lstart[l]; k < lstart[l + 1]; k++) {
				int g = lflows[k];

				if (frozen[g])
					continue;
				frozen[g] = 1;
				rate[g] = level;
				left--;
				for (int e = off[g]; e < off[g + 1]; e++)
					load[use[e].link] -= use[e].w;
			}
		}
		for (a = 0; a < nact; a++)
			if (load[active[a]] > EPS)
				active[n++] = active[a];
		nact = n;
	}
	rc = 0;
out:
	free(rem);
	free(load);
	free(lstart);
	free(lflows);
	free(active);
	free(frozen);
	return rc;
}

/* --- the fabric ---------------------------------------------------------- */

struct route {
	int n;
	struct sim_use *use;
};

struct fflow { /* a job's fabric flow: mult flows with one route */
	int route_src, route_dst; /* NIC links */
	int phase;
	double bytes; /* per step, per member flow */
	double mult;
	double rate;
};

struct netjob {
	int used;
	int nflows;
	struct fflow *flows;
	double local[SIM_NPHASES]; /* seconds per step on the job's own links */
};

struct sim_net {
	const isle_topo *t;
	int nnic;      /* NIC links (undirected) */
	int *nic_base; /* per node: first NIC link */
	int *nic_sw;   /* per NIC link: switch */
	int *up_base;  /* per switch: first uplink */
	int nlinks;    /* undirected: NIC links then switch uplinks */
	double *cap;   /* directed: 2 * link + (1 = down) */
	int *gpu_base; /* per node: first global GPU */
	int *lmap;     /* per GPU port: dense id in solve_local, else -1 */
	struct route *routes; /* nswitches^2, lazily */
	int *dista, *distb, *ok;
	double *wa;
	struct netjob *jobs;
	int njobs;
	/* solver scratch */
	int *off;
	struct sim_use *use;
	double *rate;
	int capf, capu;
};

static double tier_bw(const isle_topo *t, isle_tier k)
{
	return t->tier[k].bw_gbps > 0 ? t->tier[k].bw_gbps : 25.0;
}

static int nic_of(const struct isle_node *nd, int gpu)
{
	if (nd->nnics <= 0)
		return 0;
	if (nd->gpus[gpu].nic >= 0 && nd->gpus[gpu].nic < nd->nnics)
		return nd->gpus[gpu].nic;
	return gpu % nd->nnics;
}

struct sim_net *sim_net_create(const isle_topo *t)
{
	struct sim_net *n = calloc(1, sizeof(*n));
	double *down = NULL;
	int i, j, s, ok = 0;

	if (!n)
		return NULL;
	n->t = t;
	n->nic_base = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	n->gpu_base = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	n->up_base = malloc(((size_t)t->nswitches + 1) * sizeof(int));
	down = calloc((size_t)t->nswitches + 1, sizeof(double));
	if (!n->nic_base || !n->gpu_base || !n->up_base || !down)
		goto out;
	for (i = 0; i < t->nnodes; i++) {
		n->nic_base[i] = n->nnic;
		n->nnic += t->nodes[i].nnics > 0 ? t->nodes[i].nnics : 1;
		n->gpu_base[i] =
		    i ? n->gpu_base[i - 1] + t->nodes[i - 1].ngpus : 0;
	}
	n->nlinks = n->nnic;
	for (s = 0; s < t->nswitches; s++) {
		n->up_base[s] = n->nlinks;
		n->nlinks += t->switches[s].nup;
	}
	n->nic_sw = malloc(((size_t)n->nnic + 1) * sizeof(int));
	n->cap = calloc(2 * (size_t)n->nlinks + 1, sizeof(double));
	n->routes =
	    calloc((size_t)t->nswitches * t->nswitches + 1, sizeof(*n->routes));
	n->dista = malloc(((size_t)t->nswitches + 1) * sizeof(int));
	n->distb = malloc(((size_t)t->nswitches + 1) * sizeof(int));
	n->ok = malloc(((size_t)t->nswitches + 1) * sizeof(int));
	n->wa = malloc(((size_t)t->nswitches + 1) * sizeof(double));
	n->lmap = malloc((4 * (size_t)t->total_gpus + 1) * sizeof(int));
	if (!n->lmap)
		goto out;
	for (i = 0; i < 4 * t->total_gpus; i++)
		n->lmap[i] = -1;
	if (!n->nic_sw || !n->cap || !n->routes || !n->dista || !n->distb ||
	    !n->ok || !n->wa)
		goto out;
	/* NIC links: the port's rate; a node without NICs gets one link of
	 * the leaf tier's per-GPU bandwidth for each GPU */
	for (i = 0; i < t->nnodes; i++) {
		const struct isle_node *nd = &t->nodes[i];
		int nn = nd->nnics > 0 ? nd->nnics : 1;

		for (j = 0; j < nn; j++) {
			int l = n->nic_base[i] + j, sw = nd->leaf;
			double c = tier_bw(t, ISLE_TIER_LEAF) *
				   (nd->nnics > 0 ? 1 : nd->ngpus);

			if (nd->nnics > 0) {
				if (nd->nics[j].sw >= 0)
					sw = nd->nics[j].sw;
				if (nd->nics[j].gbps > 0)
					c = nd->nics[j].gbps / 8.0;
			}
			n->nic_sw[l] = sw;
			n->cap[2 * l] = n->cap[2 * l + 1] = c;
			if (sw >= 0)
				down[sw] += c;
		}
	}
	/* uplinks, lowest level first: what is below divided by the
	 * oversubscription of the tier above, spread over the uplinks */
	for (int lvl = ISLE_SW_LEAF; lvl <= ISLE_SW_UNKNOWN; lvl++)
		for (s = 0; s < t->nswitches; s++) {
			const struct isle_switch *sw = &t->switches[s];
			isle_tier k;
			double os, c;

			if ((int)sw->level != lvl || sw->nup == 0)
				continue;
			k = sw->level == ISLE_SW_LEAF ? ISLE_TIER_SPINE
						      : ISLE_TIER_CORE;
			os = t->tier[k].oversub >= 1 ? t->tier[k].oversub : 1;
			c = down[s] / os / sw->nup;
			if (c <= 0)
				c = tier_bw(t, k);
			for (j = 0; j < sw->nup; j++) {
				int l = n->up_base[s] + j;

				n->cap[2 * l] = n->cap[2 * l + 1] = c;
				down[sw->up[j]] += c;
			}
		}
	ok = 1;
out:
	free(down);
	if (!ok) {
		sim_net_destroy(n);
		return NULL;
	}
	return n;
}

void sim_net_destroy(struct sim_net *n)
{
	int i;

	if (!n)
		return;
	if (n->routes)
		for (i = 0; i < n->t->nswitches * n->t->nswitches; i++)
			free(n->routes[i].use);
	for (i = 0; i < n->njobs; i++)
		free(n->jobs[i].flows);
	free(n->jobs);
	free(n->routes);
	free(n->nic_base);
	free(n->nic_sw);
	free(n->up_base);
	free(n->gpu_base);
	free(n->cap);
	free(n->dista);
	free(n->distb);
	free(n->ok);
	free(n->wa);
	free(n->lmap);
	free(n->off);
	free(n->use);
	free(n->rate);
	free(n);
}

/* Up-distances from switch s to every ancestor (shortest, -1: none). */
static void up_dist(const isle_topo *t, int s, int *dist, int *queue)
{
	int h = 0, q = 0;

	for (int i = 0; i < t->nswitches; i++)
		dist[i] = -1;
	dist[s] = 0;
	queue[q++] = s;
	while (h < q) {
		int x = queue[h++];

		for (int j = 0; j < t->switches[x].nup; j++) {
			int p = t->switches[x].up[j];

			if (dist[p] < 0) {
				dist[p] = dist[x] + 1;
				queue[q++] = p;
			}
		}
	}
}

static int link_up_idx(const struct sim_net *n, int lo, int hi)
{
	const struct isle_switch *sw = &n->t->switches[lo];

	for (int j = 0; j < sw->nup; j++)
		if (sw->up[j] == hi)
			return n->up_base[lo] + j;
	return -1;
}

static int route_push(struct route *r, int *cap, int link, double w)
{
	for (int i = 0; i < r->n; i++)
		if (r->use[i].link == link) {
			r->use[i].w += w;
			return 0;
		}
	if (r->n == *cap) {
		int nc = *cap ? 2 * *cap : 8;
		struct sim_use *p = realloc(r->use, (size_t)nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->use = p;
		*cap = nc;
	}
	r->use[r->n].link = link;
	r->use[r->n].w = w;
	r->n++;
	return 0;
}

/*
 * Switch part of the route from switch a up to the lowest common switches
 * and down to switch b: traffic splits evenly over the uplinks (and
 * downlinks) on shortest paths that lead to a common switch.
 */
static int route_build(struct sim_net *n, int a, int b, struct route *r)
{
	const isle_topo *t = n->t;
	int *da = n->dista, *db = n->distb, *ok = n->ok, *order = NULL;
	double *w = n->wa;
	int best = -1, j, x, cap = 0, rc = -ENOMEM, maxd = 0;

	order = malloc(((size_t)t->nswitches + 1) * sizeof(int));
	if (!order)
		goto out;
	up_dist(t, a, da, order);
	up_dist(t, b, db, order);
	for (x = 0; x < t->nswitches; x++)
		if (da[x] >= 0 && db[x] >= 0 &&
		    (best < 0 || da[x] + db[x] < best))
			best = da[x] + db[x];
	rc = 0;
	if (best < 0)
		goto out; /* no common switch: only the NIC links */
	/* ok: on a shortest up-path from a to a common switch */
	for (x = 0; x < t->nswitches; x++) {
		w[x] = 0;
		ok[x] = 0;
		if (da[x] > maxd)
			maxd = da[x];
	}
	for (int d = maxd; d >= 0; d--)
		for (x = 0; x < t->nswitches; x++) {
			if (da[x] != d)
				continue;
			ok[x] = db[x] >= 0 && da[x] + db[x] == best;
			for (j = 0; j < t->switches[x].nup && !ok[x]; j++) {
				int p = t->switches[x].up[j];

				ok[x] = da[p] == d + 1 && ok[p];
			}
		}
	/* up from a */
	w[a] = 1;
	for (int d = 0; d <= maxd; d++)
		for (x = 0; x < t->nswitches; x++) {
			int np = 0;

			if (da[x] != d || w[x] <= 0 || !ok[x] ||
			    (db[x] >= 0 && da[x] + db[x] == best))
				continue;
			for (j = 0; j < t->switches[x].nup; j++) {
				int p = t->switches[x].up[j];

				np += da[p] == d + 1 && ok[p];
			}
			for (j = 0; j < t->switches[x].nup && np; j++) {
				int p = t->switches[x].up[j];

				if (da[p] != d + 1 || !ok[p])
					continue;
				w[p] += w[x] / np;
				rc =
				    route_push(r, &cap, 2 * (n->up_base[x] + j),
					       w[x] / np);
				if (rc)
					goto out;
			}
		}
	/* down to b: the weight that arrived at the common switches */
	for (x = 0; x < t->nswitches; x++)
		if (!(da[x] >= 0 && db[x] >= 0 && da[x] + db[x] == best))
			w[x] = 0;
	maxd = 0;
	for (x = 0; x < t->nswitches; x++)
		if (w[x] > 0 && db[x] > maxd)
			maxd = db[x];
	for (int d = maxd; d > 0; d--)
		for (x = 0; x < t->nswitches; x++) {
			const struct isle_switch *sw = &t->switches[x];
			int nc = 0;

			if (db[x] != d || w[x] <= 0)
				continue;
			for (j = 0; j < sw->ndown; j++)
				nc += db[sw->down[j]] == d - 1;
			for (j = 0; j < sw->ndown && nc; j++) {
				int y = sw->down[j], l;

				if (db[y] != d - 1)
					continue;
				l = link_up_idx(n, y, x);
				if (l < 0)
					continue;
				w[y] += w[x] / nc;
				rc = route_push(r, &cap, 2 * l + 1, w[x] / nc);
				if (rc)
					goto out;
			}
		}
out:
	free(order);
	return rc;
}

static const struct route *route_get(struct sim_net *n, int a, int b)
{
	struct route *r;

	if (a < 0 || b < 0 || a == b)
		return NULL;
	r = &n->routes[(size_t)a * n->t->nswitches + b];
	if (!r->use && !r->n) {
		if (route_build(n, a, b, r)) {
			free(r->use);
			r->use = NULL;
			r->n = 0;
			return NULL;
		}
		if (!r->use)
			r->use = malloc(sizeof(*r->use)); /* built, empty */
	}
	return r;
}

int sim_net_route(struct sim_net *n, int node_a, int gpu_a, int node_b,
		  int gpu_b, struct sim_use *out, int max)
{
	const isle_topo *t = n->t;
	int la = n->nic_base[node_a] + nic_of(&t->nodes[node_a], gpu_a);
	int lb = n->nic_base[node_b] + nic_of(&t->nodes[node_b], gpu_b);
	const struct route *r = route_get(n, n->nic_sw[la], n->nic_sw[lb]);
	int k = 0;

	if (max < 2)
		return -ENOSPC;
	out[k++] = (struct sim_use){2 * la, 1.0};
	out[k++] = (struct sim_use){2 * lb + 1, 1.0};
	for (int i = 0; r && i < r->n; i++) {
		if (k == max)
			return -ENOSPC;
		out[k++] = r->use[i];
	}
	return k;
}

int sim_net_link_info(const struct sim_net *n, int link, int *lo, int *hi,
		      double *cap)
{
	int u = link / 2;

	if (link < 0 || u >= n->nlinks)
		return -EINVAL;
	*cap = n->cap[link];
	if (u < n->nnic) {
		int node = 0;

		while (node + 1 < n->t->nnodes && n->nic_base[node + 1] <= u)
			node++;
		*lo = -1 - node;
		*hi = n->nic_sw[u];
		return link & 1;
	}
	for (int s = n->t->nswitches - 1; s >= 0; s--)
		if (n->up_base[s] <= u &&
		    u < n->up_base[s] + n->t->switches[s].nup) {
			*lo = s;
			*hi = n->t->switches[s].up[u - n->up_base[s]];
			return link & 1;
		}
	return -EINVAL;
}

/* --- jobs --------------------------------------------------------------- */

static int same_island(const isle_topo *t, const struct sim_xfer *x)
{
	return t->nodes[x->node_a].gpus[x->gpu_a].island ==
	       t->nodes[x->node_b].gpus[x->gpu_b].island;
}

static double island_bw(const isle_topo *t, int node, int gpu)
{
	const struct isle_island *is =
	    &t->islands[t->nodes[node].gpus[gpu].island];

	return is->bw_gbps > 0 ? is->bw_gbps : tier_bw(t, ISLE_TIER_ISLAND);
}

static int cmp_fflow(const void *a, const void *b)
{
	const struct fflow *x = a, *y = b;

	if (x->phase != y->phase)
		return x->phase - y->phase;
	if (x->route_src != y->route_src)
		return x->route_src - y->route_src;
	if (x->route_dst != y->route_dst)
		return x->route_dst - y->route_dst;
	return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/*
 * The job's traffic inside its own GPUs: per GPU an NVLink port and a
 * PCIe port, each way; filled like the fabric.
 */
static int solve_local(struct sim_net *n, struct netjob *j,
		       const struct sim_xfer *x, int nx)
{
	const isle_topo *t = n->t;
	int *off = NULL, *map = NULL, *ids = NULL, nf = 0, nl = 0, i, rc;
	struct sim_use *use = NULL;
	double *cap = NULL, *rate = NULL;

	rc = -ENOMEM;
	off = malloc(((size_t)nx + 1) * sizeof(int));
	use = calloc((size_t)nx * 2 + 1, sizeof(*use));
	rate = malloc(((size_t)nx + 1) * sizeof(double));
	map = malloc(((size_t)nx + 1) * sizeof(int));
	cap = calloc((size_t)nx * 2 + 1, sizeof(double));
	ids = malloc(((size_t)nx * 2 + 1) * sizeof(int));
	if (!off || !use || !rate || !map || !cap || !ids)
		goto out;
	off[0] = 0;
	for (i = 0; i < nx; i++) {
		const struct sim_xfer *f = &x[i];
		int ga = n->gpu_base[f->node_a] + f->gpu_a;
		int gb = n->gpu_base[f->node_b] + f->gpu_b;
		int isl = same_island(t, f), k = off[nf], e;
		int port[2] = {4 * ga + (isl ? 0 : 2), 4 * gb + (isl ? 1 : 3)};

		if (f->node_a != f->node_b && !isl)
			continue; /* on the fabric */
		if (ga == gb || f->bytes <= 0)
			continue;
		/* per GPU: NVLink out/in, PCIe out/in; numbered densely */
		for (e = 0; e < 2; e++) {
			int l = n->lmap[port[e]];

			if (l < 0) {
				l = n->lmap[port[e]] = nl;
				ids[nl++] = port[e];
				cap[l] = isl ? island_bw(
						   t, e ? f->node_b : f->node_a,
						   e ? f->gpu_b : f->gpu_a)
					     : tier_bw(t, ISLE_TIER_NODE);
			}
			use[k++] = (struct sim_use){l, 1.0};
		}
		map[nf] = i;
		off[++nf] = k;
	}
	for (i = 0; i < nl; i++)
		n->lmap[ids[i]] = -1;
	rc = sim_maxmin(nl, cap, nf, off, use, rate);
	if (rc)
		goto out;
	for (i = 0; i < nf; i++) {
		const struct sim_xfer *f = &x[map[i]];
		double s = f->bytes / (rate[i] * 1e9);

		if (s > j->local[f->phase])
			j->local[f->phase] = s;
	}
out:
	free(off);
	free(use);
	free(rate);
	free(map);
	free(cap);
	free(ids);
	return rc;
}

int sim_net_job_add(struct sim_net *n, int id, const struct sim_xfer *x, int nx)
{
	const isle_topo *t = n->t;
	struct netjob *j;
	int i, m = 0, rc;

	if (id < 0)
		return -EINVAL;
	if (id >= n->njobs) {
		int nn = id + 1 > 2 * n->njobs ? id + 1 : 2 * n->njobs;
		struct netjob *p = realloc(n->jobs, (size_t)nn * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + n->njobs, 0, (size_t)(nn - n->njobs) * sizeof(*p));
		n->jobs = p;
		n->njobs = nn;
	}
	j = &n->jobs[id];
	if (j->used)
		return -EEXIST;
	memset(j, 0, sizeof(*j));
	for (i = 0; i < nx; i++)
		if (x[i].phase < 0 || x[i].phase >= SIM_NPHASES)
			return -EINVAL;
	j->flows = malloc(((size_t)nx + 1) * sizeof(*j->flows));
	if (!j->flows)
		return -ENOMEM;
	rc = solve_local(n, j, x, nx);
	if (rc) {
		free(j->flows);
		j->flows = NULL;
		return rc;
	}
	for (i = 0; i < nx; i++) {
		const struct sim_xfer *f = &x[i];

		if (f->node_a == f->node_b || same_island(t, f) ||
		    f->bytes <= 0)
			continue;
		j->flows[m++] = (struct fflow){
		    .route_src = n->nic_base[f->node_a] +
				 nic_of(&t->nodes[f->node_a], f->gpu_a),
		    .route_dst = n->nic_base[f->node_b] +
				 nic_of(&t->nodes[f->node_b], f->gpu_b),
		    .phase = f->phase,
		    .bytes = f->bytes,
		    .mult = 1,
		    .rate = INFINITY};
	}
	/* flows of one phase between the same two NICs share a route: one
	 * flow of that multiplicity fills the links the same way */
	qsort(j->flows, (size_t)m, sizeof(*j->flows), cmp_fflow);
	j->nflows = 0;
	for (i = 0; i < m; i++) {
		struct fflow *last =
		    j->nflows ? &j->flows[j->nflows - 1] : NULL;

		if (last && !cmp_fflow(last, &j->flows[i]))
			last->mult += 1;
		else
			j->flows[j->nflows++] = j->flows[i];
	}
	j->used = 1;
	return j->nflows;
}

void sim_net_job_remove(struct sim_net *n, int id)
{
	if (id < 0 || id >= n->njobs || !n->jobs[id].used)
		return;
	free(n->jobs[id].flows);
	memset(&n->jobs[id], 0, sizeof(n->jobs[id]));
}

static int grow(void **p, int *capn, int need, size_t sz)
{
	if (need <= *capn)
		return 0;
	int nc = need > 2 * *capn ? need : 2 * *capn;
	void *q = realloc(*p, (size_t)nc * sz);

	if (!q)
		return -ENOMEM;
	*p = q;
	*capn = nc;
	return 0;
}

int sim_net_solve(struct sim_net *n)
{
	int nf = 0, nu = 0, i, k, rc, capo = n->capf, capr = n->capf;

	for (i = 0; i < n->njobs; i++)
		if (n->jobs[i].used)
			nf += n->jobs[i].nflows;
	rc = grow((void **)&n->off, &capo, nf + 1, sizeof(int));
	if (!rc)
		rc = grow((void **)&n->rate, &capr, nf + 1, sizeof(double));
	if (rc)
		return rc;
	n->capf = capo < capr ? capo : capr;
	nf = 0;
	n->off[0] = 0;
	for (i = 0; i < n->njobs; i++) {
		struct netjob *j = &n->jobs[i];

		for (k = 0; j->used && k < j->nflows; k++) {
			struct fflow *f = &j->flows[k];
			const struct route *r =
			    route_get(n, n->nic_sw[f->route_src],
				      n->nic_sw[f->route_dst]);
			int need = nu + 2 + (r ? r->n : 0);

			rc = grow((void **)&n->use, &n->capu, need,
				  sizeof(*n->use));
			if (rc)
				return rc;
			n->use[nu++] =
			    (struct sim_use){2 * f->route_src, f->mult};
			n->use[nu++] =
			    (struct sim_use){2 * f->route_dst + 1, f->mult};
			for (int e = 0; r && e < r->n; e++)
				n->use[nu++] = (struct sim_use){
				    r->use[e].link, r->use[e].w * f->mult};
			n->off[++nf] = nu;
		}
	}
	rc = sim_maxmin(2 * n->nlinks, n->cap, nf, n->off, n->use, n->rate);
	if (rc)
		return rc;
	nf = 0;
	for (i = 0; i < n->njobs; i++)
		for (k = 0; n->jobs[i].used && k < n->jobs[i].nflows; k++)
			n->jobs[i].flows[k].rate = n->rate[nf++];
	return 0;
}

int sim_net_comm_alone(struct sim_net *n, int id, double *out)
{
	return sim_net_comm_alone_split(n, id, out, NULL);
}

int sim_net_comm_alone_split(struct sim_net *n, int id, double *out,
			     double *above)
{
	const struct netjob *j;
	struct sim_use *use = NULL;
	double *rate = NULL, ph[SIM_NPHASES], up[SIM_NPHASES] = {0};
	int *off = NULL, nu = 0, need = 0, k, p, rc = -ENOMEM;

	*out = 0;
	if (above)
		*above = 0;
	if (id < 0 || id >= n->njobs || !n->jobs[id].used)
		return -EINVAL;
	j = &n->jobs[id];
	for (k = 0; k < j->nflows; k++) {
		const struct route *r =
		    route_get(n, n->nic_sw[j->flows[k].route_src],
			      n->nic_sw[j->flows[k].route_dst]);

		need += 2 + (r ? r->n : 0);
	}
	off = malloc(((size_t)j->nflows + 1) * sizeof(int));
	rate = malloc(((size_t)j->nflows + 1) * sizeof(double));
	use = malloc(((size_t)need + 1) * sizeof(*use));
	if (!off || !rate || !use)
		goto out;
	off[0] = 0;
	for (k = 0; k < j->nflows; k++) {
		const struct fflow *f = &j->flows[k];
		const struct route *r = route_get(n, n->nic_sw[f->route_src],
						  n->nic_sw[f->route_dst]);

		use[nu++] = (struct sim_use){2 * f->route_src, f->mult};
		use[nu++] = (struct sim_use){2 * f->route_dst + 1, f->mult};
		for (int e = 0; r && e < r->n; e++)
			use[nu++] = (struct sim_use){r->use[e].link,
						     r->use[e].w * f->mult};
		off[k + 1] = nu;
	}
	rc = sim_maxmin(2 * n->nlinks, n->cap, j->nflows, off, use, rate);
	if (rc)
		goto out;
	for (p = 0; p < SIM_NPHASES; p++)
		ph[p] = j->local[p];
	for (k = 0; k < j->nflows; k++) {
		double s = j->flows[k].bytes / (rate[k] * 1e9);
		int q = j->flows[k].phase;

		if (s > ph[q])
			ph[q] = s;
		/* a flow with links between switches leaves its NICs' switch */
		if (off[k + 1] - off[k] > 2 && s > up[q])
			up[q] = s;
	}
	for (p = 0; p < SIM_NPHASES; p++) {
		*out += ph[p];
		if (above)
			*above += up[p];
	}
out:
	free(off);
	free(rate);
	free(use);
	return rc;
}

double sim_net_comm_time(const struct sim_net *n, int id,
			 double phase_s[SIM_NPHASES])
{
	const struct netjob *j;
	double tot = 0, ph[SIM_NPHASES];
	int p, k;

	if (id < 0 || id >= n->njobs || !n->jobs[id].used)
		return 0;
	j = &n->jobs[id];
	for (p = 0; p < SIM_NPHASES; p++)
		ph[p] = j->local[p];
	for (k = 0; k < j->nflows; k++) {
		const struct fflow *f = &j->flows[k];
		double s = f->bytes / (f->rate * 1e9);

		if (s > ph[f->phase])
			ph[f->phase] = s;
	}
	for (p = 0; p < SIM_NPHASES; p++) {
		tot += ph[p];
		if (phase_s)
			phase_s[p] = ph[p];
	}
	return tot;
}
