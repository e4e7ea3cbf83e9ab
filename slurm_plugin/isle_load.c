/*
 * isle_load.c - the running jobs whose traffic the engine's contention
 * term charges: which were added, with what, so each is removed once.
 * See isle_load.h. No Slurm calls: plain malloc, unit-tested.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isle_load.h"

void isle__load_init(struct isle__load *l, isle_place_ctx *place)
{
	memset(l, 0, sizeof(*l));
	l->place = place;
}

static void _job_free(struct isle__load_job *j)
{
	free(j->nodes);
	free(j->masks);
	j->nodes = NULL;
	j->masks = NULL;
	j->nnodes = 0;
}

/* Takes the job's load off the engine. */
static void _unload(struct isle__load *l, struct isle__load_job *j)
{
	if (l->place && j->nnodes > 0)
		isle_place_load_remove(l->place, j->nodes, j->masks, j->nnodes,
				       j->traffic);
	_job_free(j);
}

void isle__load_fini(struct isle__load *l)
{
	for (int i = 0; i < l->njobs; i++)
		_job_free(&l->jobs[i]);
	free(l->jobs);
	free(l->slot);
	memset(l, 0, sizeof(*l));
}

void isle__load_clear(struct isle__load *l)
{
	isle_place_ctx *place = l->place;

	for (int i = 0; i < l->njobs; i++)
		_unload(l, &l->jobs[i]);
	isle__load_fini(l);
	l->place = place;
}

static unsigned _hash(uint32_t id, int nslots)
{
	return (id * 2654435761u) & (unsigned)(nslots - 1);
}

/* The slot of job_id: its entry's, or the empty one it would take. */
static int _slot_of(const struct isle__load *l, uint32_t job_id)
{
	unsigned s = _hash(job_id, l->nslots);

	while (l->slot[s] >= 0 && l->jobs[l->slot[s]].job_id != job_id)
		s = (s + 1) & (unsigned)(l->nslots - 1);
	return (int)s;
}

/* Index of job_id's entry, or -1. */
static int _find(const struct isle__load *l, uint32_t job_id)
{
	return l->nslots ? l->slot[_slot_of(l, job_id)] : -1;
}

/* Rebuilds the index for at least n jobs, at most half full. */
static int _rehash(struct isle__load *l, int n)
{
	int nslots = 16, *slot;

	while (nslots < 2 * n)
		nslots *= 2;
	if (!(slot = malloc((size_t)nslots * sizeof(int))))
		return -ENOMEM;
	free(l->slot);
	l->slot = slot;
	l->nslots = nslots;
	for (int i = 0; i < nslots; i++)
		slot[i] = -1;
	for (int i = 0; i < l->njobs; i++)
		slot[_slot_of(l, l->jobs[i].job_id)] = i;
	return 0;
}

void isle__load_begin(struct isle__load *l)
{
	l->gen++;
}

bool isle__load_seen(struct isle__load *l, uint32_t job_id, int64_t start)
{
	int i = _find(l, job_id);

	if (i < 0 || l->jobs[i].start != start)
		return false;
	l->jobs[i].gen = l->gen;
	return true;
}

int isle__load_add(struct isle__load *l, uint32_t job_id, int64_t start,
		   const int *nodes, const uint64_t *masks, int nnodes,
		   isle_traffic tr)
{
	struct isle__load_job *j,
	    nj = {
		.job_id = job_id, .start = start, .traffic = tr, .gen = l->gen};
	int i, rc = 0;

	if (!job_id || nnodes < 0 || (nnodes && (!nodes || !masks)))
		return -EINVAL;
	if (nnodes) {
		nj.nodes = malloc((size_t)nnodes * sizeof(int));
		nj.masks = malloc((size_t)nnodes * sizeof(uint64_t));
		if (!nj.nodes || !nj.masks) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(nj.nodes, nodes, (size_t)nnodes * sizeof(int));
		memcpy(nj.masks, masks, (size_t)nnodes * sizeof(uint64_t));
		nj.nnodes = nnodes;
	}
	i = _find(l, job_id);
	if (i < 0) {
		if (l->njobs == l->cap) {
			int cap = l->cap ? 2 * l->cap : 16;
			void *p =
			    realloc(l->jobs, (size_t)cap * sizeof(*l->jobs));

			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			l->jobs = p;
			l->cap = cap;
		}
		if (2 * (l->njobs + 1) > l->nslots &&
		    (rc = _rehash(l, l->njobs + 1)))
			goto out;
		i = l->njobs++;
		l->slot[_slot_of(l, job_id)] = i;
	} else {
		_unload(l, &l->jobs[i]); /* requeued and started again */
	}
	j = &l->jobs[i];
	*j = nj;
	nj.nodes = NULL;
	nj.masks = NULL;
	if (l->place && j->nnodes &&
	    (rc = isle_place_load_add(l->place, j->nodes, j->masks, j->nnodes,
				      tr)))
		_job_free(j); /* kept, so it is not retried each reconcile */
out:
	free(nj.nodes);
	free(nj.masks);
	return rc;
}

int isle__load_end(struct isle__load *l)
{
	int n = 0, left;

	for (int i = 0; i < l->njobs; i++) {
		if (l->jobs[i].gen == l->gen) {
			l->jobs[n++] = l->jobs[i];
			continue;
		}
		_unload(l, &l->jobs[i]);
	}
	left = l->njobs - n;
	l->njobs = n;
	/* The index only shrinks here: rebuilding it in place needs no
	 * memory when it cannot get larger. */
	if (left) {
		for (int s = 0; s < l->nslots; s++)
			l->slot[s] = -1;
		for (int i = 0; i < l->njobs; i++)
			l->slot[_slot_of(l, l->jobs[i].job_id)] = i;
	}
	return left;
}

int isle__load_count(const struct isle__load *l)
{
	return l->njobs;
}
