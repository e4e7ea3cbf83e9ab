/*
 * util.c - small helpers of the placement API: applying results to free
 * masks, the cluster fragmentation metric, names and messages.
 */
#include <errno.h>
#include <string.h>

#include "place_priv.h"

int isle_place_commit(const struct isle_place_result *res, uint64_t *free_gpus)
{
	int i;

	if (!res || !free_gpus)
		return -EINVAL;
	for (i = 0; i < res->nnodes; i++)
		if ((free_gpus[res->nodes[i]] & res->masks[i]) != res->masks[i])
			return -EINVAL;
	for (i = 0; i < res->nnodes; i++)
		free_gpus[res->nodes[i]] &= ~res->masks[i];
	return 0;
}

int isle_place_release(const struct isle_place_result *res, uint64_t *free_gpus)
{
	int i;

	if (!res || !free_gpus)
		return -EINVAL;
	for (i = 0; i < res->nnodes; i++)
		if (free_gpus[res->nodes[i]] & res->masks[i])
			return -EINVAL;
	for (i = 0; i < res->nnodes; i++)
		free_gpus[res->nodes[i]] |= res->masks[i];
	return 0;
}

/*
 * Share of free GPUs in partly used units, per level: islands (a domain is
 * one island), nodes, leaf groups; the mean of the three. One pass over
 * the tree, bottom-up.
 */
double isle_place_fragmentation(isle_place_ctx *c, const uint64_t *free_gpus)
{
	long total = 0, part[3] = {0, 0, 0};
	int i, *fr = c->freec;

	if (!c || !free_gpus)
		return 0.0;
	for (i = 0; i < c->nv; i++)
		fr[i] = 0;
	for (i = 0; i < c->nlevel[PV_UNIT]; i++) {
		int u = c->by_level[PV_UNIT][i];

		fr[u] = __builtin_popcountll(free_gpus[c->v[u].node] &
					     c->v[u].mask);
	}
	for (i = c->nv - 1; i > 0; i--)
		fr[c->v[i].parent] += fr[i];
	total = fr[c->root];
	if (total == 0)
		return 0.0;
	for (i = 0; i < c->nv; i++) {
		const struct pv *p = &c->v[i];
		int k;

		if (fr[i] == 0 || fr[i] == p->size)
			continue;
		if ((p->level == PV_UNIT && !p->multi) || p->level == PV_DOMAIN)
			k = 0;
		else if (p->level == PV_NODE)
			k = 1;
		else if (p->level == PV_LEAF)
			k = 2;
		else
			continue;
		part[k] += fr[i];
	}
	return (double)(part[0] + part[1] + part[2]) / (3.0 * total);
}

const char *isle_place_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case -EINVAL:
		return "invalid request";
	case -E2BIG:
		return "never fits on this cluster";
	case -ENOSPC:
		return "no placement now";
	case -ENOMEM:
		return "out of memory";
	default:
		return "error";
	}
}

/* Enum names: one table per enum, indexed by value, read both ways. */
static const char *const mode_names[] = {
    [ISLE_PLACE_REQUIRED] = "required",
    [ISLE_PLACE_PREFERRED] = "preferred",
};

static const char *const workload_names[] = {
    [ISLE_WORKLOAD_TRAIN] = "train",
    [ISLE_WORKLOAD_INFER] = "infer",
};

#define NAMES_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

const char *isle_place_mode_name(isle_place_mode m)
{
	return (unsigned)m < (unsigned)NAMES_LEN(mode_names) ? mode_names[m]
							     : NULL;
}

int isle_place_mode_parse(const char *s)
{
	return name_index(mode_names, NAMES_LEN(mode_names), s);
}

const char *isle_workload_name(isle_workload w)
{
	return (unsigned)w < (unsigned)NAMES_LEN(workload_names)
		   ? workload_names[w]
		   : NULL;
}

int isle_workload_parse(const char *s)
{
	return name_index(workload_names, NAMES_LEN(workload_names), s);
}
