/*
 * test_place_util.h - random small clusters and checks shared by the
 * placement unit tests (header-only: each test is one binary).
 */
#ifndef TEST_PLACE_UTIL_H
#define TEST_PLACE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "isle_place.h"

/* Deterministic test randomness (splitmix64). */
static uint64_t tp_rng_state;

static inline void tp_seed(uint64_t s)
{
	tp_rng_state = s;
}

static inline uint64_t tp_rand(void)
{
	uint64_t z = (tp_rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline int tp_randint(int n)
{
	return (int)(tp_rand() % (uint64_t)n);
}

enum tp_kind {
	TP_NVSWITCH, /* all GPUs of a node in one island */
	TP_PAIRS,    /* NVLink pairs */
	TP_DOMAIN,   /* multi-node NVLink domains of a few nodes */
	TP_MIXED,    /* nodes of all three kinds */
	TP_KINDS
};

static inline void tp_link_node(isle_topo *t, int n, int ngpus, int island)
{
	for (int a = 0; a < ngpus; a++)
		for (int b = a + 1; b < ngpus; b++)
			if (a / island == b / island)
				isle_topo_set_nvlink(t, n, a, b, 4);
}

/*
 * A random cluster of nnodes nodes with gpn GPUs each: leaf groups of
 * `per_leaf` nodes, spine groups of two leafs, tier parameters with some
 * oversubscription. Returns a finalized model or NULL.
 */
static inline isle_topo *tp_cluster(enum tp_kind kind, int nnodes, int gpn,
				    int per_leaf)
{
	isle_topo *t = isle_topo_create();
	int spine = -1, leaf = -1, core, i;
	char name[32], err[256];

	if (!t)
		return NULL;
	core = isle_topo_add_switch(t, "core", 0, ISLE_SW_CORE);
	for (i = 0; i < nnodes; i++) {
		int n, k = kind == TP_MIXED ? tp_randint(3) : (int)kind;

		if (i % (2 * per_leaf) == 0) {
			snprintf(name, sizeof(name), "spine%d", i);
			spine = isle_topo_add_switch(t, name, 0, ISLE_SW_SPINE);
			isle_topo_link_switches(t, core, spine);
		}
		if (i % per_leaf == 0) {
			snprintf(name, sizeof(name), "leaf%d", i);
			leaf = isle_topo_add_switch(t, name, 0, ISLE_SW_LEAF);
			isle_topo_link_switches(t, spine, leaf);
		}
		snprintf(name, sizeof(name), "n%02d", i);
		n = isle_topo_add_node(t, name, gpn);
		if (n < 0)
			goto fail;
		isle_topo_attach_node(t, leaf, n, -1);
		if (k == TP_NVSWITCH || k == TP_DOMAIN)
			tp_link_node(t, n, gpn, gpn);
		else
			tp_link_node(t, n, gpn, 2);
		/* domains of 2 consecutive nodes inside a leaf */
		if (kind == TP_DOMAIN && i % 2 == 1 &&
		    i / per_leaf == (i - 1) / per_leaf) {
			int nodes[2] = {i - 1, i};

			snprintf(name, sizeof(name), "dom%d", i);
			if (isle_topo_add_domain(t, name, nodes, 2, 900.0) < 0)
				goto fail;
		}
	}
	t->tier[ISLE_TIER_SPINE].oversub = 2.0;
	t->tier[ISLE_TIER_CORE].oversub = 4.0;
	if (isle_topo_finalize(t, err, sizeof(err)))
		goto fail;
	return t;
fail:
	isle_topo_destroy(t);
	return NULL;
}

/* Random free masks: each GPU free with probability pct/100. */
static inline void tp_random_free(const isle_topo *t, uint64_t *fm, int pct)
{
	for (int i = 0; i < t->nnodes; i++) {
		fm[i] = 0;
		for (int g = 0; g < t->nodes[i].ngpus; g++)
			if (tp_randint(100) < pct)
				fm[i] |= 1ULL << g;
	}
}

static inline int tp_island(const isle_topo *t, const struct isle_place_rank *r)
{
	return t->nodes[r->node].gpus[r->gpu].island;
}

#endif /* TEST_PLACE_UTIL_H */
