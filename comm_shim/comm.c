/*
 * comm.c - the isle_comm context: configuration, plan -> per-level
 * communicators, scratch and residual buffers, the blocking allreduce.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm_priv.h"

#define RESID_MAX 256 /* residual buffers kept per channel (LRU) */

static int said_plans_differ; /* one line per process, not per comm */

/* --------------------------------------------------- scratch, residuals */

void *isle__scratch(struct isle__chan *ch, int slot, size_t bytes)
{
	void *p;

	if (bytes <= ch->scratch_len[slot] && ch->scratch[slot])
		return ch->scratch[slot];
	free(ch->scratch[slot]);
	ch->scratch[slot] = NULL;
	ch->scratch_len[slot] = 0;
	bytes = bytes < 4096 ? 4096 : bytes + bytes / 8;
	if (posix_memalign(&p, 64, bytes))
		return NULL;
	ch->scratch[slot] = p;
	ch->scratch_len[slot] = bytes;
	return p;
}

float *isle__residual(struct isle__chan *ch, uint64_t key, int stage, size_t n)
{
	struct isle__resid **pp = &ch->resid, *e = NULL;
	int count = 0;

	for (; *pp; pp = &(*pp)->next, count++)
		if ((*pp)->key == key && (*pp)->stage == stage) {
			e = *pp;
			*pp = e->next; /* unlink; goes to the front below */
			break;
		}
	if (!e) {
		if (count >= RESID_MAX) { /* evict the least recently used */
			pp = &ch->resid;
			while ((*pp)->next)
				pp = &(*pp)->next;
			free((*pp)->r);
			free(*pp);
			*pp = NULL;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->key = key;
		e->stage = stage;
	}
	if (e->n != n) { /* new buffer or its size changed: start from zero */
		free(e->r);
		e->r = calloc(n ? n : 1, sizeof(float));
		e->n = e->r ? n : 0;
	}
	e->next = ch->resid;
	ch->resid = e;
	return e->r;
}

/* ------------------------------------------------------- construction */

int isle__scope_val(const struct isle_plan_rank *r, isle_scope s)
{
	switch (s) {
	case ISLE_SCOPE_ISLAND:
		return r->island_id;
	case ISLE_SCOPE_NODE:
		return r->node_id;
	case ISLE_SCOPE_LEAF:
		return r->leaf_id;
	default:
		return 0;
	}
}

/* Rank i's group key at level l: scope value, positions below l. */
static void group_key(const struct isle_comm *c, const struct isle__groups *g,
		      int p, int l, int i, int *key)
{
	const struct isle_plan *pl = c->plan;

	key[0] =
	    isle__scope_val(&pl->ranks[c->plan_rank[i]], pl->levels[l].scope);
	for (int m = 0; m < l; m++)
		key[m + 1] = g->idx[m * p + i];
}

/*
 * The first active rank with i's key at level l, through an open
 * addressing table (slot: -1 empty): O(p) per level, not O(p^2).
 */
static int group_first(const struct isle_comm *c, const struct isle__groups *g,
		       int p, int l, int i, int *slot, size_t cap)
{
	int key[ISLE_PLAN_MAX_LEVELS], other[ISLE_PLAN_MAX_LEVELS];
	size_t h;

	group_key(c, g, p, l, i, key);
	h = (size_t)isle_fnv1a(ISLE_FNV1A_INIT, key,
			       sizeof(int) * (size_t)(l + 1)) &
	    (cap - 1);
	for (;; h = (h + 1) & (cap - 1)) {
		if (slot[h] < 0) {
			slot[h] = i;
			return i;
		}
		group_key(c, g, p, l, slot[h], other);
		if (!memcmp(key, other, sizeof(int) * (size_t)(l + 1)))
			return slot[h];
	}
}

int isle__build_groups(const struct isle_comm *c, int p, struct isle__groups *g)
{
	const struct isle_plan *pl = c->plan;
	int nlev = pl->nlevels, *sz = NULL, *active = NULL, *slot = NULL;
	size_t cap = 16;

	while (cap < 2 * (size_t)p)
		cap *= 2;
	g->color = malloc(sizeof(int) * (size_t)p * nlev);
	g->idx = malloc(sizeof(int) * (size_t)p * nlev);
	sz = malloc(sizeof(int) * (size_t)p);
	active = malloc(sizeof(int) * (size_t)p);
	slot = malloc(sizeof(int) * cap);
	if (!g->color || !g->idx || !sz || !active || !slot) {
		free(sz);
		free(active);
		free(slot);
		return -ENOMEM;
	}
	for (int i = 0; i < p; i++)
		active[i] = 1;
	for (int l = 0; l < nlev; l++) {
		int *color = g->color + l * p, *idx = g->idx + l * p;

		for (int i = 0; i < p; i++)
			sz[i] = 0;
		memset(slot, 0xff, sizeof(int) * cap);
		for (int i = 0; i < p; i++) {
			color[i] = -1;
			if (!active[i])
				continue;
			int j = group_first(c, g, p, l, i, slot, cap);

			color[i] = j == i ? i : color[j];
			idx[i] = sz[color[i]]++;
		}
		g->nshards[l] = INT_MAX;
		g->max_size[l] = 0;
		for (int i = 0; i < p; i++) {
			if (!sz[i])
				continue;
			g->nshards[l] =
			    sz[i] < g->nshards[l] ? sz[i] : g->nshards[l];
			g->max_size[l] =
			    sz[i] > g->max_size[l] ? sz[i] : g->max_size[l];
		}
		for (int i = 0; i < p; i++)
			active[i] = active[i] && idx[i] < g->nshards[l];
	}
	free(sz);
	free(active);
	free(slot);
	return 0;
}

static void chan_free(struct isle__chan *ch)
{
	struct isle__resid *e, *next;

	for (int l = 0; l < ch->nlev; l++)
		if (ch->lev[l].comm != MPI_COMM_NULL)
			PMPI_Comm_free(&ch->lev[l].comm);
	if (ch->all != MPI_COMM_NULL)
		PMPI_Comm_free(&ch->all);
	for (size_t i = 0; i < ISLE_ARRAY_SIZE(ch->scratch); i++)
		free(ch->scratch[i]);
	for (e = ch->resid; e; e = next) {
		next = e->next;
		free(e->r);
		free(e);
	}
	memset(ch, 0, sizeof(*ch));
	ch->all = MPI_COMM_NULL;
}

static int chan_init(struct isle_comm *c, MPI_Comm comm,
		     const struct isle__groups *g, struct isle__chan *ch)
{
	const struct isle_plan *pl = c->plan;
	double bw = 1e30, lat = 0;

	memset(ch, 0, sizeof(*ch));
	ch->owner = c;
	ch->all = MPI_COMM_NULL;
	for (int l = 0; l < ISLE_PLAN_MAX_LEVELS; l++)
		ch->lev[l].comm = MPI_COMM_NULL;
	if (PMPI_Comm_dup(comm, &ch->all) != MPI_SUCCESS)
		return -EIO;
	/* Errors (MPI_ERR_TRUNCATE) come back to the shim, which names the
	 * cause; the level communicators inherit this. */
	PMPI_Comm_set_errhandler(ch->all, MPI_ERRORS_RETURN);
	PMPI_Comm_size(ch->all, &ch->size);
	PMPI_Comm_rank(ch->all, &ch->rank);
	ch->nlev = pl->nlevels;
	for (int l = 0; l < ch->nlev; l++) {
		struct isle__level *lv = &ch->lev[l];
		const struct isle_plan_level *pv = &pl->levels[l];
		int color = g->color[l * ch->size + ch->rank];
		int key = g->idx[l * ch->size + ch->rank];

		if (PMPI_Comm_split(ch->all, color >= 0 ? color : MPI_UNDEFINED,
				    key, &lv->comm) != MPI_SUCCESS)
			return -EIO;
		if (lv->comm != MPI_COMM_NULL) {
			PMPI_Comm_size(lv->comm, &lv->size);
			PMPI_Comm_rank(lv->comm, &lv->rank);
		}
		lv->nshards = g->nshards[l];
		lv->max_size = g->max_size[l];
		lv->bw_gbps = pv->bw_gbps;
		lv->lat_us = pv->lat_us;
		lv->name = pv->name;
		lv->codec = pv->codec;
		if (c->cfg.have_codec_override && (l > 0 || ch->nlev == 1))
			lv->codec = c->cfg.codec_override;
		if (lv->max_size > 1 || l == 0) {
			bw = lv->bw_gbps < bw ? lv->bw_gbps : bw;
			lat = lv->lat_us > lat ? lv->lat_us : lat;
		}
	}
	ch->flat = (struct isle__level){
	    .comm = ch->all,
	    .size = ch->size,
	    .rank = ch->rank,
	    .nshards = ch->size,
	    .max_size = ch->size,
	    .bw_gbps = bw,
	    .lat_us = lat,
	    .codec = {.kind = ISLE_CODEC_NONE},
	    .name = "flat",
	};
	return 0;
}

/* Plan from ISLE_PLAN, or from the host names of comm's ranks. */
static int load_plan(struct isle_comm *c, MPI_Comm comm, int p, char *err,
		     size_t errlen)
{
	char me[MPI_MAX_PROCESSOR_NAME] = {0}, *names = NULL;
	const char **hosts = NULL;
	int rc, wsize, len;

	if (c->cfg.plan_path[0]) {
		MPI_Group g, gw;
		int *ranks;

		rc = isle_plan_read(c->cfg.plan_path, &c->plan, err, errlen);
		if (rc)
			return rc;
		PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
		if (c->plan->nranks != wsize)
			return isle__errf(-EINVAL, err, errlen,
					  "%s: $.ranks: plan has %d ranks, "
					  "MPI_COMM_WORLD has %d",
					  c->cfg.plan_path, c->plan->nranks,
					  wsize);
		ranks = malloc(sizeof(int) * (size_t)p);
		if (!ranks)
			return -ENOMEM;
		for (int i = 0; i < p; i++)
			ranks[i] = i;
		PMPI_Comm_group(comm, &g);
		PMPI_Comm_group(MPI_COMM_WORLD, &gw);
		PMPI_Group_translate_ranks(g, p, ranks, gw, c->plan_rank);
		PMPI_Group_free(&g);
		PMPI_Group_free(&gw);
		free(ranks);
		return 0;
	}

	names = calloc((size_t)p, MPI_MAX_PROCESSOR_NAME);
	hosts = calloc((size_t)p, sizeof(*hosts));
	rc = -ENOMEM;
	if (!names || !hosts)
		goto out;
	rc = -EIO;
	PMPI_Get_processor_name(me, &len);
	if (PMPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
			   MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
			   comm) != MPI_SUCCESS)
		goto out;
	for (int i = 0; i < p; i++) {
		names[(size_t)(i + 1) * MPI_MAX_PROCESSOR_NAME - 1] = '\0';
		hosts[i] = names + (size_t)i * MPI_MAX_PROCESSOR_NAME;
		c->plan_rank[i] = i;
	}
	rc = isle_plan_from_hosts(hosts, p, &c->plan, err, errlen);
out:
	free(names);
	free(hosts);
	return rc;
}

/*
 * One collective, on every rank whatever its own load gave: do all ranks
 * hold the same plan? Each contributes its plan hash h and ~h to one MIN
 * reduction; all are equal exactly when min(h) == h and min(~h) == ~h, and
 * then on every rank. Plans that differ (nodes that wrote their plans from
 * different facts) would choose different algorithms and deadlock, so all
 * ranks go to plain MPI together: the host-name plan (consistent, from an
 * allgather) for the groups, and the passthrough algorithm for every call.
 */
static int check_plans_agree(struct isle_comm *c, MPI_Comm comm, int p, int rc,
			     char *err, size_t errlen)
{
	const char *slurm_node = getenv("SLURMD_NODENAME");
	uint64_t mine[4], min[4];
	int wrank = 0;

	/* Runs on every rank, rc or not; a failed rank fails all later. */
	mine[0] = rc ? 0 : isle_plan_hash(c->plan);
	mine[1] = ~mine[0];
	mine[2] = rc == 0;
	/*
	 * Under Slurm a plan file names Slurm's nodes: a rank on another node
	 * than its plan says means the task layout is not the plan's rank
	 * order and the groups would be wrong. The lowest such world rank.
	 */
	mine[3] = UINT64_MAX;
	PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	if (!rc && c->cfg.plan_path[0] && slurm_node && *slurm_node &&
	    wrank < c->plan->nranks &&
	    strcmp(c->plan->ranks[wrank].node, slurm_node))
		mine[3] = (uint64_t)wrank;
	if (PMPI_Allreduce(mine, min, 4, MPI_UINT64_T, MPI_MIN, comm) !=
	    MPI_SUCCESS)
		return rc ? rc
			  : isle__errf(-EIO, err, errlen,
				       "isle_comm_create: plan check "
				       "failed");
	if (rc || !min[2])
		return rc;
	c->plans_differ =
	    min[0] != mine[0] || min[1] != mine[1] || min[3] != UINT64_MAX;
	if (!c->plans_differ)
		return 0;
	/*
	 * MPI_COMM_WORLD's context is built first and the plan is one file
	 * per process, so world rank 0 has seen it: it says it, once.
	 */
	if (wrank == 0 && min[3] != UINT64_MAX &&
	    !__atomic_exchange_n(&said_plans_differ, 1, __ATOMIC_RELAXED))
		fprintf(stderr,
			"isle_comm: rank %llu does not run on the node %s "
			"gives it (Slurm's task layout is not the plan's rank "
			"order): plain MPI on every rank\n",
			(unsigned long long)min[3], c->cfg.plan_path);
	else if (wrank == 0 &&
		 !__atomic_exchange_n(&said_plans_differ, 1, __ATOMIC_RELAXED))
		fprintf(stderr,
			"isle_comm: the ranks hold different plans (%s, hash "
			"%016llx on rank 0): plain MPI on every rank\n",
			c->cfg.plan_path[0] ? c->cfg.plan_path : "host names",
			(unsigned long long)mine[0]);
	isle_plan_destroy(c->plan);
	c->plan = NULL;
	c->cfg.plan_path[0] = '\0';
	c->cfg.algo = ISLE_ALGO_PASSTHROUGH;
	return load_plan(c, comm, p, err, errlen);
}

/* ", probed 8:rdoubling 32:default ... 2M:isle": who runs each size class
 * after the probe ("isle": the model decides, shim or library default). */
static void describe_picks(const struct isle_comm *c, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, ", probed");

	for (int k = 0; k < ISLE__CAL_N && o < len; k++) {
		size_t b = (size_t)ISLE__CAL_MIN << (2 * k);

		o += (size_t)snprintf(
		    buf + o, len - o, " %zu%s:%s",
		    b >> (b >= (1u << 20) ? 20
			  : b >= 1024	  ? 10
					  : 0),
		    b >= (1u << 20) ? "M"
		    : b >= 1024	    ? "K"
				    : "",
		    c->route[k] >= 0 ? c->lib[c->route[k]].name : "isle");
	}
	/* Above the top class (top bytes): where the lines cross, if they
	 * do there (n = -da / dc). */
	if (c->big_fit && o < len) {
		double top =
		    2.0 * ((size_t)ISLE__CAL_MIN << (2 * (ISLE__CAL_N - 1)));
		double x = c->big_dc != 0 ? -c->big_da / c->big_dc : -1;
		int isle_top = c->big_da + top * c->big_dc < 0;

		if (x <= top)
			snprintf(buf + o, len - o, ", above: %s",
				 isle_top ? "isle" : "default");
		else
			snprintf(buf + o, len - o,
				 ", above: %s to %.0f B, then %s",
				 isle_top ? "isle" : "default", x,
				 isle_top ? "default" : "isle");
	}
}

static void describe(struct isle_comm *c)
{
	const struct isle__chan *ch = &c->sync;
	size_t o = 0;

	o += (size_t)snprintf(c->desc, sizeof(c->desc),
			      "%d ranks, plan %s%s, codecs %s:", ch->size,
			      c->plan->source,
			      c->plans_differ ? " (ranks' plans differ: plain "
						"MPI)"
					      : "",
			      c->ops->name);
	for (int l = 0; l < ch->nlev && o < sizeof(c->desc); l++) {
		const struct isle__level *lv = &ch->lev[l];
		char codec[ISLE_CODEC_SPEC_MAX + 1];

		isle_codec_format(&lv->codec, codec, sizeof(codec));
		o += (size_t)snprintf(
		    c->desc + o, sizeof(c->desc) - o,
		    " %s[%s groups %d..%d, %g GB/s, %g us, "
		    "%s]",
		    lv->name, isle_scope_name(c->plan->levels[l].scope),
		    lv->nshards, lv->max_size, lv->bw_gbps, lv->lat_us, codec);
	}
	/* "MPI's own up to": fabric_replay.c reads it (the helper's
	 * crossover); the picks follow. */
	if (c->pass_max && o < sizeof(c->desc))
		o += (size_t)snprintf(c->desc + o, sizeof(c->desc) - o,
				      ", MPI's own up to %zu bytes (probed)",
				      c->pass_max);
	if (c->probed && o < sizeof(c->desc))
		describe_picks(c, c->desc + o, sizeof(c->desc) - o);
}

/*
 * The crossover probe (ISLE_COMM_CALIBRATE, auto only): where the model
 * trusts plan latencies that a loaded or oversubscribed host does not
 * deliver, the shim's many small steps lose to the library's few, and the
 * library's default is not its own best algorithm at every size. At each
 * probe size (8 B .. 2 MiB, x4) every candidate is timed in turn (median of
 * isle__cal_reps after a warm-up, each rank): the library's algorithms that it
 * lets a caller pick (lib_candidates, mpi_algo.h; its default first) and
 * the shim's path where the model gives it the size. One MPI_MAX allreduce
 * of all the times gives every rank the same numbers, so all pick alike:
 * per size class the fastest, where a library algorithm only displaces the
 * default or the shim by being strictly faster. Above the probes, where
 * bandwidth terms rule, the shim's and the default's times at the top two
 * sizes extend as lines, and the shim keeps a call only where its line is
 * the lower.
 *
 * It runs at a float or double sum (the same call on every rank: both of
 * the interposer's paths count the payload alike) once the communicator
 * has carried 1 / ISLE_COMM_PROBE_SHARE times the probe's payload
 * (isle__probe_due_at): a job that moves little never pays it, and no job
 * pays more than that share. About 58 MB per rank with four Open MPI
 * algorithms and the shim at every size, 70 MB with MPICH's five. Until
 * then the model decides alone, and the library runs its default.
 */
#define CAL_MIN ISLE__CAL_MIN
#define CAL_N ISLE__CAL_N /* 8 B .. 2 MiB, x4 */
#define CAL_MAX (CAL_MIN << (2 * (CAL_N - 1)))
#define SMALL_PASS_MAX (64u << 10)
#define CAL_TIE 0.05 /* the shim's margin over the library (calibrate) */

int isle__app_thread_level = -1;

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The library's algorithms the probe tries: its default alone unless it
 * lets a caller pick (mpi_algo.h) and no thread of the application's can
 * make MPI calls beside the shim's (the picks go through process-wide
 * control variables). Job-wide facts, so the same on every rank.
 */
static void lib_candidates(struct isle_comm *c)
{
	int level = isle__app_thread_level, ok = 0;

	c->nlib = 1;
	c->lib_comm[0] = c->sync.all;
	isle__lib_parse(isle__lib_probe_names[0], &c->lib[0]);
	if (level < 0 && PMPI_Query_thread(&level) != MPI_SUCCESS)
		level = MPI_THREAD_MULTIPLE;
	if (level < MPI_THREAD_MULTIPLE && isle__lib_t_init() == 0)
		ok = isle__lib_usable();
	for (int i = 1; ok && isle__lib_probe_names[i] && i < ISLE__LIB_MAX;
	     i++) {
		if (isle__lib_parse(isle__lib_probe_names[i], &c->lib[i]))
			break;
		c->lib_comm[i] = MPI_COMM_NULL;
		c->nlib = i + 1;
	}
}

/* One timed run of candidate w (w < nlib: library algorithm w; nlib: the
 * shim by algo) on buf, n floats. */
static int probe_run(struct isle_comm *c, int w, float *buf, size_t n,
		     isle_algo algo)
{
	struct isle__chan *ch = &c->sync;

	if (w == c->nlib)
		return isle__allreduce(ch, buf, n, ISLE_DTYPE_F32, algo,
				       UINT64_MAX);
	isle__stat_probe_lib(ch, n * 4);
	return isle__lib_allreduce(&c->lib[w], MPI_IN_PLACE, buf, (int)n,
				   MPI_FLOAT, MPI_SUM,
				   c->lib_comm[w]) == MPI_SUCCESS
		   ? 0
		   : -EIO;
}

/* Line a + n * slope through (n0, t0) and (n1, t1). */
static void line2(double n0, double t0, double n1, double t1, double *a,
		  double *slope)
{
	*slope = (t1 - t0) / (n1 - n0);
	*a = t1 - *slope * n1;
}

static int calibrate(struct isle_comm *c)
{
	struct isle__chan *ch = &c->sync;
	int nv = c->nlib + 1; /* candidates: the library's, then the shim */
	double mine[CAL_N * (ISLE__LIB_MAX + 1)],
	    all[CAL_N * (ISLE__LIB_MAX + 1)];
	isle_algo algo[CAL_N];
	float *buf = NULL, *tmpl = NULL;
	int rc = 0;
	double start = isle__now();

	c->pass_max = 0;
	for (int k = 0; k < CAL_N; k++)
		algo[k] = isle__choose_pm(c, (CAL_MIN << (2 * k)) / 4,
					  ISLE_DTYPE_F32, 0);
	ch->probing = 1; /* its traffic counts apart (report) */
	buf = malloc(CAL_MAX);
	tmpl = malloc(CAL_MAX);
	if (!buf || !tmpl) {
		rc = -ENOMEM;
		goto out;
	}
	/* Open MPI: a communicator per algorithm (collective, all ranks). */
	for (int i = 1; i < c->nlib; i++)
		if (c->lib_comm[i] == MPI_COMM_NULL &&
		    (rc = isle__lib_dup(ch->all, &c->lib[i], &c->lib_comm[i])))
			goto out;
	for (size_t i = 0; i < CAL_MAX / 4; i++)
		tmpl[i] = (float)((int)(i % 7) - 3) * 0.25f;
	for (int k = 0; k < CAL_N; k++) {
		size_t bytes = CAL_MIN << (2 * k),
		       n = bytes / 4 ? bytes / 4 : 1;
		double t[ISLE__LIB_MAX + 1][ISLE__CAL_REPS_MAX];
		int reps = isle__cal_reps(k);

		for (int r = -1; r < reps; r++)
			for (int j = 0; j < nv; j++) {
				/* The order turns each round: no candidate
				 * always follows the same one. */
				int w = (j + r + 1) % nv;
				double t0;

				if (w == c->nlib &&
				    algo[k] == ISLE_ALGO_PASSTHROUGH)
					continue;
				memcpy(buf, tmpl, n * 4);
				PMPI_Barrier(ch->all);
				t0 = isle__now();
				if ((rc = probe_run(c, w, buf, n, algo[k])))
					goto out;
				if (r >= 0)
					t[w][r] = isle__now() - t0;
			}
		for (int w = 0; w < nv; w++) {
			mine[k * nv + w] = 0;
			if (w == c->nlib && algo[k] == ISLE_ALGO_PASSTHROUGH)
				continue;
			qsort(t[w], (size_t)reps, sizeof(double), cmp_dbl);
			mine[k * nv + w] = t[w][reps / 2];
		}
	}
	/* The slowest rank's times, the same on every rank: all pick alike. */
	if (PMPI_Allreduce(mine, all, CAL_N * nv, MPI_DOUBLE, MPI_MAX,
			   ch->all) != MPI_SUCCESS) {
		rc = -EIO;
		goto out;
	}
	for (int k = 0; k < CAL_N; k++) {
		const double *tk = all + k * nv;
		int shim = algo[k] != ISLE_ALGO_PASSTHROUGH;
		int best = 0;

		/* Another library algorithm takes over from the default
		 * only by being strictly faster; the shim only by beating
		 * the library's best by CAL_TIE (passthrough wins ties:
		 * within the noise of a few repetitions on a shared host,
		 * the library is the side that cannot make a job slower). */
		for (int w = 1; w < c->nlib; w++)
			if (tk[w] < tk[best])
				best = w;
		if (shim && tk[c->nlib] < (1 - CAL_TIE) * tk[best])
			best = c->nlib;
		c->route[k] = (signed char)(best == c->nlib ? -1 : best);
		if (shim && best != c->nlib)
			c->pass_max = CAL_MIN << (2 * k);
	}
	for (int h = 0; h < 2 * CAL_N; h++) {
		int k = h / 2, j = h % 2 ? k + 1 : k - 1;

		c->route_half[h] = c->route[k];
		if (c->route[k] < 0 && j >= 0 && j < CAL_N)
			c->route_half[h] = c->route[j];
	}
	/* Above the probe, bandwidth terms: where the shim and the default
	 * ran at the top two sizes, their lines decide. */
	c->big_fit = algo[CAL_N - 2] != ISLE_ALGO_PASSTHROUGH &&
		     algo[CAL_N - 1] != ISLE_ALGO_PASSTHROUGH;
	if (c->big_fit) {
		double n0 = CAL_MAX / 4, n1 = CAL_MAX, as, cs, ad, cd;
		const double *t0 = all + (CAL_N - 2) * nv,
			     *t1 = all + (CAL_N - 1) * nv;

		line2(n0, t0[c->nlib], n1, t1[c->nlib], &as, &cs);
		line2(n0, t0[0], n1, t1[0], &ad, &cd);
		c->big_da = as - ad;
		c->big_dc = cs - cd;
	}
	c->probed = 1;
out:
	ch->probing = 0;
	isle__stat_probe_time(isle__now() - start);
	free(buf);
	free(tmpl);
	return rc;
}

int isle_comm_create(MPI_Comm comm, const struct isle_comm_config *cfg,
		     isle_comm **out, char *err, size_t errlen)
{
	struct isle__groups g = {0};
	struct isle_comm *c;
	char lerr[512] = "";
	int p, rc, worst;

	*out = NULL;
	if (PMPI_Comm_size(comm, &p) != MPI_SUCCESS)
		return isle__errf(-EINVAL, err, errlen,
				  "isle_comm_create: bad communicator");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sync.all = c->async.all = MPI_COMM_NULL;
	c->ops = isle_codec_cpu_ops();
	c->plan_rank = calloc((size_t)p, sizeof(int));
	rc = c->plan_rank ? 0 : -ENOMEM;
	if (!rc && cfg)
		c->cfg = *cfg;
	else if (!rc)
		rc = isle_comm_config_from_env(&c->cfg, lerr, sizeof(lerr));
	if (!rc)
		rc = load_plan(c, comm, p, lerr, sizeof(lerr));
	rc = check_plans_agree(c, comm, p, rc, lerr, sizeof(lerr));
	if (!rc)
		rc = isle__build_groups(c, p, &g);

	/* Fail together: a rank that goes on alone would hang the others. */
	if (PMPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm) !=
	    MPI_SUCCESS)
		worst = rc ? rc : -EIO;
	if (worst) {
		if (rc)
			isle__errf(rc, err, errlen, "%s",
				   lerr[0] ? lerr : isle_comm_strerror(rc));
		else
			isle__errf(worst, err, errlen,
				   "isle_comm_create failed on another "
				   "rank: %s",
				   isle_comm_strerror(worst));
		rc = worst;
		goto out;
	}
	if ((rc = chan_init(c, comm, &g, &c->sync)) ||
	    (rc = chan_init(c, comm, &g, &c->async))) {
		isle__errf(rc, err, errlen, "isle_comm_create: %s",
			   isle_comm_strerror(rc));
		goto out;
	}
	memset(c->route, 0xff, sizeof(c->route));
	memset(c->route_half, 0xff, sizeof(c->route_half));
	lib_candidates(c);
	/* The sizes the choice gives to the library whatever the probe
	 * finds (it only ever moves sizes to the library): a job-wide value
	 * (plan and settings), so all ranks hand the same calls over. */
	for (size_t b = 8; b <= SMALL_PASS_MAX; b *= 2) {
		if (isle__choose_pm(c, b / 4, ISLE_DTYPE_F32, 0) !=
			ISLE_ALGO_PASSTHROUGH ||
		    isle__choose_pm(c, b / 8, ISLE_DTYPE_F64, 0) !=
			ISLE_ALGO_PASSTHROUGH)
			break;
		c->small_pass = b;
	}
	if (c->sync.size < 2)
		c->small_pass = 0;
	/* The probe: the shim's path where the model gives it the size, the
	 * library's algorithms everywhere; none where there is no choice. */
	{
		unsigned shim = 0;

		for (int k = 0; k < CAL_N; k++)
			if (isle__choose_pm(c, (CAL_MIN << (2 * k)) / 4,
					    ISLE_DTYPE_F32,
					    0) != ISLE_ALGO_PASSTHROUGH)
				shim |= 1u << k;
		c->cal_pending = c->cfg.calibrate &&
				 c->cfg.algo == ISLE_ALGO_AUTO &&
				 c->sync.size > 1 && (shim || c->nlib > 1);
		c->cal_cost = isle__probe_cost(shim, c->nlib);
		c->cal_due =
		    c->cal_pending
			? isle__probe_due_at(c->cal_cost, c->cfg.probe_share)
			: UINT64_MAX;
	}
	describe(c);
	if (c->cfg.async)
		isle__async_start(c); /* stays NULL without THREAD_MULTIPLE */
	*out = c;
	c = NULL;
out:
	free(g.color);
	free(g.idx);
	isle_comm_destroy(c);
	return rc;
}

void isle_comm_destroy(isle_comm *c)
{
	if (!c)
		return;
	isle__async_stop(c);
	for (int i = 1; i < c->nlib; i++)
		if (c->lib_comm[i] != MPI_COMM_NULL)
			PMPI_Comm_free(&c->lib_comm[i]);
	chan_free(&c->sync);
	chan_free(&c->async);
	isle_plan_destroy(c->plan);
	free(c->plan_rank);
	free(c);
}

int isle_comm_describe(const isle_comm *c, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", c->desc);
}

/* ------------------------------------------------------------ allreduce */

isle_algo isle__choose(const struct isle_comm *c, size_t count,
		       isle_dtype dtype)
{
	size_t bytes = count * (dtype == ISLE_DTYPE_F64 ? 8 : 4);
	isle_algo a = isle__choose_pm(c, count, dtype, 0);

	if (a == ISLE_ALGO_PASSTHROUGH || c->cfg.algo != ISLE_ALGO_AUTO)
		return a;
	if (isle__routed(c, bytes))
		return ISLE_ALGO_PASSTHROUGH;
	if (isle__cal_class(bytes) < 0 && c->big_fit &&
	    !(c->big_da + (double)bytes * c->big_dc < 0))
		return ISLE_ALGO_PASSTHROUGH;
	return a;
}

int isle__lib_pick(const struct isle_comm *c, size_t bytes)
{
	int h = isle__cal_half(bytes);

	return h >= 0 && c->route_half[h] > 0 ? c->route_half[h] : 0;
}

int isle__lib_call(const struct isle_comm *c, const void *sendbuf,
		   void *recvbuf, int count, MPI_Datatype dt, size_t bytes)
{
	int i = isle__lib_pick(c, bytes);

	return isle__lib_allreduce(&c->lib[i], sendbuf, recvbuf, count, dt,
				   MPI_SUM, c->lib_comm[i]);
}

isle_algo isle__choose_pm(const struct isle_comm *c, size_t count,
			  isle_dtype dtype, size_t pass_max)
{
	const struct isle__chan *ch = &c->sync;
	struct isle_algo_level m[ISLE_PLAN_MAX_LEVELS];
	size_t bytes = count * (dtype == ISLE_DTYPE_F64 ? 8 : 4);

	/* Messages are int-counted bytes: leave giant ones to MPI. */
	if (bytes < c->cfg.min_bytes || count > INT_MAX / 8)
		return ISLE_ALGO_PASSTHROUGH;
	if (c->cfg.algo != ISLE_ALGO_AUTO)
		return c->cfg.algo;
	if (bytes <= pass_max)
		return ISLE_ALGO_PASSTHROUGH;
	/* Job-wide values only, so that every rank picks the same. */
	for (int l = 0; l < ch->nlev; l++) {
		m[l].group_size = ch->lev[l].max_size;
		m[l].bw_gbps = ch->lev[l].bw_gbps;
		m[l].lat_us = ch->lev[l].lat_us;
		m[l].codec = ch->lev[l].codec;
		if (dtype == ISLE_DTYPE_F64)
			m[l].codec.kind = ISLE_CODEC_NONE;
	}
	return isle_algo_choose(m, ch->nlev, bytes, NULL);
}

isle_algo isle_comm_algo_for(const isle_comm *c, size_t count, isle_dtype dtype)
{
	return isle__choose(c, count, dtype);
}

/* Counts bytes toward this communicator's probe and runs it once due, at
 * the same call on every rank (collectives come in the same order
 * everywhere; both paths count). */
static int probe_if_due(struct isle_comm *c, size_t bytes)
{
	char picks[256];
	int rc;

	c->carried += bytes;
	if (c->carried < c->cal_due)
		return 0;
	c->cal_pending = 0;
	c->cal_due = UINT64_MAX;
	if ((rc = calibrate(c)))
		return rc;
	describe(c);
	describe_picks(c, picks, sizeof(picks));
	if (c->cfg.verbose && c->sync.rank == 0)
		fprintf(stderr,
			"isle_comm: %d ranks: crossover probed at %s "
			"allreduce of %zu bytes (%llu bytes carried, "
			"probe %llu): MPI's own up to %zu bytes%s\n",
			c->sync.size, c->carried == bytes ? "the first" : "an",
			bytes, (unsigned long long)c->carried,
			(unsigned long long)c->cal_cost, c->pass_max, picks);
	/* ISLE_COMM_VERBOSE=2: every rank's picks (the same). */
	if (c->cfg.verbose >= 2)
		fprintf(stderr, "isle_comm: rank %d of %d%s\n", c->sync.rank,
			c->sync.size, picks);
	return 0;
}

int isle__async_route(struct isle_comm *c, size_t count, isle_dtype dtype)
{
	size_t es = dtype == ISLE_DTYPE_F64 ? 8 : 4;
	int rc;

	if (!c->helper || count > INT_MAX)
		return 0;
	if ((rc = probe_if_due(c, count * es)))
		return rc;
	/* The model alone never gives the helper a call while the probe can
	 * still judge it: the shim's path there is unmeasured, and the
	 * library's own MPI_Iallreduce, progressed by the caller's waits,
	 * costs no thread of its own (a job that ends before the probe is
	 * due never runs the shim's path blind). */
	if (c->cfg.algo == ISLE_ALGO_AUTO && c->cfg.calibrate && !c->probed)
		return 0;
	return isle__choose(c, count, dtype) != ISLE_ALGO_PASSTHROUGH;
}

int isle_comm_allreduce(isle_comm *c, const void *sendbuf, void *recvbuf,
			size_t count, isle_dtype dtype, uint64_t key)
{
	size_t es = dtype == ISLE_DTYPE_F64 ? 8 : 4;
	isle_algo algo;
	int i, rc;

	if (count > INT_MAX)
		return -EOVERFLOW;
	if ((rc = probe_if_due(c, count * es)))
		return rc;
	algo = isle__choose(c, count, dtype);
	if (algo != ISLE_ALGO_PASSTHROUGH)
		isle__stat_ran(count * es, ISLE_REPORT_SHIM);
	else if ((i = isle__lib_pick(c, count * es)) > 0)
		isle__stat_ran(count * es, isle__lib_path(&c->lib[i]));
	else
		isle__stat_ran(count * es, ISLE_REPORT_LIBRARY);
	if (algo != ISLE_ALGO_PASSTHROUGH)
		isle__stat_taken(&c->sync, count, dtype, algo);
	if (algo == ISLE_ALGO_PASSTHROUGH)
		return isle__lib_call(c, sendbuf ? sendbuf : MPI_IN_PLACE,
				      recvbuf, (int)count,
				      dtype == ISLE_DTYPE_F64 ? MPI_DOUBLE
							      : MPI_FLOAT,
				      count * es) == MPI_SUCCESS
			   ? 0
			   : -EIO;
	if (sendbuf && sendbuf != recvbuf)
		memcpy(recvbuf, sendbuf, count * es);
	return isle__allreduce(&c->sync, recvbuf, count, dtype, algo, key);
}
