/*
 * stats.c - what the shim did in this process, for the per-job report
 * (struct isle_report, proto/report.c): calls taken and passed through by
 * size class, bytes per tier against a ring in rank order, codecs, the
 * crossover probe. Counters are process-wide and atomic (the helper thread
 * adds to them too); MPI_Finalize sums them over the ranks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "comm_priv.h"

#define ADD(var, v) __atomic_fetch_add(&(var), (v), __ATOMIC_RELAXED)

/* passed and ran first: a pass-through of a small call touches one cache
 * line of them. */
static struct {
	uint64_t passed[ISLE_REPORT_CLASSES];
	unsigned ran[ISLE_REPORT_CLASSES];
	uint64_t taken[ISLE_REPORT_CLASSES];
	uint64_t sent[ISLE_REPORT_TIERS], library[ISLE_REPORT_TIERS];
	unsigned codecs[ISLE_REPORT_TIERS];
	uint64_t probe_bytes;
	uint64_t probe_ns;
} st __attribute__((aligned(64)));

void isle__stat_ran(uint64_t bytes, int path)
{
	int k = isle_report_class(bytes);
	unsigned bit = 1u << path;

	if (path == ISLE_REPORT_SHIM)
		ADD(st.taken[k], 1);
	else
		ADD(st.passed[k], 1);
	/* A read, not a locked write, once the path is known: the
	 * pass-through's every call comes here. */
	if (!(__atomic_load_n(&st.ran[k], __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(&st.ran[k], bit, __ATOMIC_RELAXED);
}

/* The tightest tier that holds both communicator ranks a and b of ch. */
static int tier_of(const struct isle__chan *ch, int a, int b)
{
	const struct isle_comm *c = ch->owner;
	const struct isle_plan *pl = c->plan;
	const struct isle_plan_rank *ra = &pl->ranks[c->plan_rank[a]],
				    *rb = &pl->ranks[c->plan_rank[b]];

	for (int l = 0; l < pl->nlevels; l++) {
		isle_scope s = pl->levels[l].scope;

		if (s == ISLE_SCOPE_JOB ||
		    isle__scope_val(ra, s) == isle__scope_val(rb, s))
			return (int)s;
	}
	return ISLE_SCOPE_JOB;
}

/* Bytes one rank sends in a ring allreduce of count elements in rank
 * order (the fewest any allreduce sends): all chunks but its own in the
 * reduce-scatter, all but its successor's in the allgather. */
static uint64_t ring_bytes(const struct isle__chan *ch, size_t count, size_t es)
{
	size_t off, mine, next;

	if (ch->size < 2)
		return 0;
	isle__shard(count, ch->size, ch->rank, &off, &mine);
	isle__shard(count, ch->size, (ch->rank + 1) % ch->size, &off, &next);
	return (uint64_t)(2 * count - mine - next) * es;
}

void isle__stat_taken(struct isle__chan *ch, size_t count, isle_dtype dt,
		      isle_algo algo)
{
	size_t es = dt == ISLE_DTYPE_F64 ? 8 : 4;
	int t;

	if (ch->size < 2)
		return;
	t = tier_of(ch, ch->rank, (ch->rank + 1) % ch->size);
	ADD(st.library[t], ring_bytes(ch, count, es));
	if (algo != ISLE_ALGO_HIER)
		return; /* flat: codec none, marked where it sends */
	for (int l = 0; l < ch->nlev; l++) {
		isle_codec_kind k = dt == ISLE_DTYPE_F64
					? ISLE_CODEC_NONE
					: ch->lev[l].codec.kind;

		if (ch->lev[l].max_size > 1)
			__atomic_fetch_or(
			    &st.codecs[ch->owner->plan->levels[l].scope],
			    1u << k, __ATOMIC_RELAXED);
	}
}

void isle__stat_send(struct isle__chan *ch, MPI_Comm comm, int peer,
		     size_t bytes)
{
	int t = ISLE_SCOPE_JOB;

	if (!bytes)
		return;
	if (ch->probing) {
		ADD(st.probe_bytes, bytes);
		return;
	}
	if (comm == ch->all) {
		t = tier_of(ch, ch->rank, peer);
		__atomic_fetch_or(&st.codecs[t], 1u << ISLE_CODEC_NONE,
				  __ATOMIC_RELAXED);
	} else {
		for (int l = 0; l < ch->nlev; l++)
			if (ch->lev[l].comm == comm)
				t = (int)ch->owner->plan->levels[l].scope;
	}
	ADD(st.sent[t], bytes);
}

void isle__stat_probe_lib(struct isle__chan *ch, size_t bytes)
{
	ADD(st.probe_bytes, ring_bytes(ch, bytes / 4, 4));
}

void isle__stat_probe_time(double s)
{
	ADD(st.probe_ns, (uint64_t)(s * 1e9));
}

static int env_flag(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

void isle__report_finalize(void)
{
	const char *file = getenv(ISLE_REPORT_FILE_ENV);
	int line = env_flag(ISLE_REPORT_ENV), me = 0;
	enum {
		NSUM = 2 * ISLE_REPORT_TIERS + 1,
		NBOR = ISLE_REPORT_TIERS + ISLE_REPORT_CLASSES
	};
	uint64_t sum[NSUM], sumr[NSUM], mx[2 * ISLE_REPORT_CLASSES + 1],
	    mxr[2 * ISLE_REPORT_CLASSES + 1];
	unsigned bor[NBOR]; /* codecs per tier, then ran per class */
	struct isle_report r = {.api = "mpi"};
	char buf[2048], err[4400];

	/* The environment is the job's, the same on every rank. */
	if (!line && !(file && *file))
		return;
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		sum[t] = __atomic_load_n(&st.sent[t], __ATOMIC_RELAXED);
		sum[ISLE_REPORT_TIERS + t] =
		    __atomic_load_n(&st.library[t], __ATOMIC_RELAXED);
		bor[t] = __atomic_load_n(&st.codecs[t], __ATOMIC_RELAXED);
	}
	sum[NSUM - 1] = __atomic_load_n(&st.probe_bytes, __ATOMIC_RELAXED);
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		mx[k] = __atomic_load_n(&st.taken[k], __ATOMIC_RELAXED);
		mx[ISLE_REPORT_CLASSES + k] =
		    __atomic_load_n(&st.passed[k], __ATOMIC_RELAXED);
		bor[ISLE_REPORT_TIERS + k] =
		    __atomic_load_n(&st.ran[k], __ATOMIC_RELAXED);
	}
	mx[2 * ISLE_REPORT_CLASSES] =
	    __atomic_load_n(&st.probe_ns, __ATOMIC_RELAXED);
	PMPI_Comm_rank(MPI_COMM_WORLD, &me);
	PMPI_Comm_size(MPI_COMM_WORLD, &r.ranks);
	if (PMPI_Reduce(sum, sumr, NSUM, MPI_UINT64_T, MPI_SUM, 0,
			MPI_COMM_WORLD) != MPI_SUCCESS ||
	    PMPI_Reduce(mx, mxr, 2 * ISLE_REPORT_CLASSES + 1, MPI_UINT64_T,
			MPI_MAX, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
	    PMPI_Reduce(me ? bor : MPI_IN_PLACE, bor, NBOR, MPI_UNSIGNED,
			MPI_BOR, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
	    me != 0)
		return;
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		r.sent[t] = sumr[t];
		r.library[t] = sumr[ISLE_REPORT_TIERS + t];
		r.codecs[t] = bor[t];
	}
	r.probe_bytes = sumr[NSUM - 1];
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		r.taken[k] = mxr[k];
		r.passed[k] = mxr[ISLE_REPORT_CLASSES + k];
		r.ran[k] = bor[ISLE_REPORT_TIERS + k];
	}
	r.probe_s = (double)mxr[2 * ISLE_REPORT_CLASSES] * 1e-9;
	if (line) {
		isle_report_line(&r, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	if (!file || !*file)
		return;
	if (isle_report_save(&r, file, err, sizeof(err)))
		fprintf(stderr, "isle_comm: %s\n", err);
}
