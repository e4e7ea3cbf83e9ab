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

static int scope_val(const struct isle_plan_rank *r, isle_scope s)
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

/*
 * Groups at every level, computed identically on every rank from the plan:
 * level l groups the ranks still active that share the scope value and
 * their positions in all lower groups. color[l][i] is the lowest rank of
 * i's group (-1: not active), idx[l][i] its position in it.
 */
struct groups {
	int *color, *idx;
	int nshards[ISLE_COMM_MAX_LEVELS], max_size[ISLE_COMM_MAX_LEVELS];
};

static int build_groups(const struct isle_comm *c, int p, struct groups *g)
{
	const struct isle_plan *pl = c->plan;
	int nlev = pl->nlevels, *sz = NULL, *active = NULL;

	g->color = malloc(sizeof(int) * (size_t)p * nlev);
	g->idx = malloc(sizeof(int) * (size_t)p * nlev);
	sz = malloc(sizeof(int) * (size_t)p);
	active = malloc(sizeof(int) * (size_t)p);
	if (!g->color || !g->idx || !sz || !active) {
		free(sz);
		free(active);
		return -ENOMEM;
	}
	for (int i = 0; i < p; i++)
		active[i] = 1;
	for (int l = 0; l < nlev; l++) {
		int *color = g->color + l * p, *idx = g->idx + l * p;
		isle_scope s = pl->levels[l].scope;

		for (int i = 0; i < p; i++) {
			const struct isle_plan_rank *ri =
			    &pl->ranks[c->plan_rank[i]];

			sz[i] = 0;
			color[i] = -1;
			if (!active[i])
				continue;
			color[i] = i;
			for (int j = 0; j < i; j++) {
				const struct isle_plan_rank *rj =
				    &pl->ranks[c->plan_rank[j]];
				int same = active[j] &&
					   scope_val(ri, s) == scope_val(rj, s);

				for (int m = 0; same && m < l; m++)
					same = g->idx[m * p + i] ==
					       g->idx[m * p + j];
				if (same) {
					color[i] = color[j];
					break;
				}
			}
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

static int chan_init(struct isle_comm *c, MPI_Comm comm, const struct groups *g,
		     struct isle__chan *ch)
{
	const struct isle_plan *pl = c->plan;
	double bw = 1e30, lat = 0;

	memset(ch, 0, sizeof(*ch));
	ch->owner = c;
	ch->all = MPI_COMM_NULL;
	for (int l = 0; l < ISLE_COMM_MAX_LEVELS; l++)
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

		rc = isle_plan_load(c->cfg.plan_path, &c->plan, err, errlen);
		if (rc)
			return rc;
		PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
		if (c->plan->nranks != wsize)
			return isle__comm_errf(
			    err, errlen, -EINVAL,
			    "%s: $.ranks: plan has %d ranks, "
			    "MPI_COMM_WORLD has %d",
			    c->cfg.plan_path, c->plan->nranks, wsize);
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

static void describe(struct isle_comm *c)
{
	const struct isle__chan *ch = &c->sync;
	size_t o = 0;

	o += (size_t)snprintf(c->desc, sizeof(c->desc),
			      "%d ranks, plan %s, codecs %s:", ch->size,
			      c->plan->source, c->ops->name);
	for (int l = 0; l < ch->nlev && o < sizeof(c->desc); l++) {
		const struct isle__level *lv = &ch->lev[l];
		char codec[48];

		isle_codec_format(&lv->codec, codec, sizeof(codec));
		o += (size_t)snprintf(
		    c->desc + o, sizeof(c->desc) - o,
		    " %s[%s groups %d..%d, %g GB/s, %g us, "
		    "%s]",
		    lv->name, isle_scope_name(c->plan->levels[l].scope),
		    lv->nshards, lv->max_size, lv->bw_gbps, lv->lat_us, codec);
	}
}

int isle_comm_create(MPI_Comm comm, const struct isle_comm_config *cfg,
		     isle_comm **out, char *err, size_t errlen)
{
	struct groups g = {0};
	struct isle_comm *c;
	char lerr[512] = "";
	int p, rc, worst;

	*out = NULL;
	if (PMPI_Comm_size(comm, &p) != MPI_SUCCESS)
		return isle__comm_errf(err, errlen, -EINVAL,
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
	if (!rc)
		rc = build_groups(c, p, &g);

	/* Fail together: a rank that goes on alone would hang the others. */
	if (PMPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm) !=
	    MPI_SUCCESS)
		worst = rc ? rc : -EIO;
	if (worst) {
		if (rc)
			isle__comm_errf(err, errlen, rc, "%s",
					lerr[0] ? lerr
						: isle_comm_strerror(rc));
		else
			isle__comm_errf(err, errlen, worst,
					"isle_comm_create failed on another "
					"rank: %s",
					isle_comm_strerror(worst));
		rc = worst;
		goto out;
	}
	if ((rc = chan_init(c, comm, &g, &c->sync)) ||
	    (rc = chan_init(c, comm, &g, &c->async))) {
		isle__comm_errf(err, errlen, rc, "isle_comm_create: %s",
				isle_comm_strerror(rc));
		goto out;
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
	const struct isle__chan *ch = &c->sync;
	struct isle_algo_level m[ISLE_COMM_MAX_LEVELS];
	size_t bytes = count * (dtype == ISLE_DTYPE_F64 ? 8 : 4);

	/* Messages are int-counted bytes: leave giant ones to MPI. */
	if (bytes < c->cfg.min_bytes || count > INT_MAX / 8)
		return ISLE_ALGO_PASSTHROUGH;
	if (c->cfg.algo != ISLE_ALGO_AUTO)
		return c->cfg.algo;
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

int isle_comm_allreduce(isle_comm *c, const void *sendbuf, void *recvbuf,
			size_t count, isle_dtype dtype, uint64_t key)
{
	size_t es = dtype == ISLE_DTYPE_F64 ? 8 : 4;
	isle_algo algo = isle__choose(c, count, dtype);

	if (count > INT_MAX)
		return -EOVERFLOW;
	if (algo == ISLE_ALGO_PASSTHROUGH) {
		int rc = PMPI_Allreduce(
		    sendbuf ? sendbuf : MPI_IN_PLACE, recvbuf, (int)count,
		    dtype == ISLE_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
		    c->sync.all);

		return rc == MPI_SUCCESS ? 0 : -EIO;
	}
	if (sendbuf && sendbuf != recvbuf)
		memcpy(recvbuf, sendbuf, count * es);
	return isle__allreduce(&c->sync, recvbuf, count, dtype, algo, key);
}
