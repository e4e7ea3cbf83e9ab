/*
 * model.c - the cluster model: builders and queries (finalize.c derives the
 * islands, switch levels and tier groups).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isle_proto.h"
#include "model_priv.h"

/* Defaults of the communication tiers; a cluster file overrides them. */
const struct isle_tier_param isle__default_tier[ISLE_TIER_COUNT] = {
    [ISLE_TIER_ISLAND] = {450.0, 1.0, 1.0},
    [ISLE_TIER_NODE] = {32.0, 2.0, 1.0},
    [ISLE_TIER_LEAF] = {50.0, 3.0, 1.0},
    [ISLE_TIER_SPINE] = {50.0, 5.0, 1.0},
    [ISLE_TIER_CORE] = {50.0, 7.0, 1.0},
};

static const char *const tier_names[ISLE_TIER_COUNT] = {
    [ISLE_TIER_ISLAND] = "island", [ISLE_TIER_NODE] = "node",
    [ISLE_TIER_LEAF] = "leaf",	   [ISLE_TIER_SPINE] = "spine",
    [ISLE_TIER_CORE] = "core",
};

static const char *const level_names[] = {
    [ISLE_SW_LEAF] = "leaf",
    [ISLE_SW_SPINE] = "spine",
    [ISLE_SW_CORE] = "core",
    [ISLE_SW_UNKNOWN] = "unknown",
};

static isle_topo_warn_fn warn_fn;
static void *warn_arg;

/* --- Small helpers shared by the library ------------------------------- */

void isle_topo_set_warn(isle_topo_warn_fn fn, void *arg)
{
	warn_fn = fn;
	warn_arg = arg;
}

void isle__warn(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!warn_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	warn_fn(warn_arg, msg);
}

int isle__bad_name_char(const char *name)
{
	int c = isle_name_check(name);

	return c < 0 ? '?' : c;
}

int isle__grow(void **arr, int *cap, int need, size_t sz)
{
	int ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, (size_t)ncap * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/*
 * Appends v to an int array whose capacity is implied by its length (4, then
 * powers of two), so per-switch lists need no capacity field.
 */
static int append_int(int **arr, int *n, int v)
{
	int len = *n;

	if (len == 0 || (len >= 4 && (len & (len - 1)) == 0)) {
		int *p = realloc(*arr,
				 (size_t)(len < 4 ? 4 : 2 * len) * sizeof(int));

		if (!p)
			return -ENOMEM;
		*arr = p;
	}
	(*arr)[len] = v;
	*n = len + 1;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Sorts an int array and drops duplicates. */
void isle__sort_unique(int *v, int *n)
{
	int i, j;

	if (*n < 2)
		return;
	qsort(v, (size_t)*n, sizeof(int), cmp_int);
	for (i = 1, j = 1; i < *n; i++)
		if (v[i] != v[j - 1])
			v[j++] = v[i];
	*n = j;
}

/* --- Create / destroy ---------------------------------------------------- */

isle_topo *isle_topo_create(void)
{
	isle_topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	memcpy(t->tier, isle__default_tier, sizeof(t->tier));
	t->node_idx = isle__index_create();
	t->switch_idx = isle__index_create();
	t->island_idx = isle__index_create();
	if (!t->node_idx || !t->switch_idx || !t->island_idx) {
		isle_topo_destroy(t);
		return NULL;
	}
	return t;
}

void isle__free_island(struct isle_island *is)
{
	free(is->name);
	free(is->members);
	free(is->nodes);
}

void isle_topo_destroy(isle_topo *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nnodes; i++) {
		struct isle_node *n = &t->nodes[i];

		for (int g = 0; g < n->ngpus; g++) {
			free(n->gpus[g].bus_id);
			free(n->gpus[g].model);
		}
		for (int k = 0; k < n->nnics; k++)
			free(n->nics[k].name);
		free(n->name);
		free(n->gpus);
		free(n->nvlinks);
		free(n->nics);
	}
	for (int i = 0; i < t->nislands; i++)
		isle__free_island(&t->islands[i]);
	for (int i = 0; i < t->nswitches; i++) {
		struct isle_switch *s = &t->switches[i];

		free(s->name);
		free(s->up);
		free(s->down);
		free(s->nodes);
	}
	for (int i = 0; i < t->nracks; i++) {
		free(t->racks[i].name);
		free(t->racks[i].nodes);
	}
	free(t->nodes);
	free(t->islands);
	free(t->switches);
	free(t->racks);
	free(t->name);
	isle__index_destroy(t->node_idx);
	isle__index_destroy(t->switch_idx);
	isle__index_destroy(t->island_idx);
	free(t);
}

/* --- Builders ------------------------------------------------------------ */

static int valid_node(const isle_topo *t, int node)
{
	return t && node >= 0 && node < t->nnodes;
}

static int valid_gpu(const isle_topo *t, int node, int gpu)
{
	return valid_node(t, node) && gpu >= 0 && gpu < t->nodes[node].ngpus;
}

static int valid_switch(const isle_topo *t, int sw)
{
	return t && sw >= 0 && sw < t->nswitches;
}

int isle_topo_add_node(isle_topo *t, const char *name, int ngpus)
{
	struct isle_node *n;
	int idx, rc;

	if (!t || !name || !*name || ngpus < 0 ||
	    ngpus > ISLE_MAX_GPUS_PER_NODE)
		return -EINVAL;
	if (isle__index_get(t->node_idx, name) >= 0)
		return -EEXIST;
	rc = isle__grow((void **)&t->nodes, &t->cap_nodes, t->nnodes + 1,
			sizeof(*t->nodes));
	if (rc)
		return rc;
	idx = t->nnodes;
	n = &t->nodes[idx];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	if (ngpus) {
		n->gpus = calloc((size_t)ngpus, sizeof(*n->gpus));
		n->nvlinks = calloc((size_t)ngpus * ngpus, sizeof(*n->nvlinks));
	}
	if (!n->name || (ngpus && (!n->gpus || !n->nvlinks)))
		goto nomem;
	if (isle__index_put(t->node_idx, n->name, idx))
		goto nomem;
	n->ngpus = ngpus;
	for (int g = 0; g < ngpus; g++) {
		n->gpus[g].island = -1;
		n->gpus[g].numa = -1;
		n->gpus[g].nic = -1;
	}
	n->rack = -1;
	n->domain = -1;
	for (int k = 0; k < ISLE_TIER_COUNT; k++)
		n->group[k] = -1;
	n->leaf = -1;
	n->first_island = -1;
	t->nnodes++;
	t->finalized = 0;
	return idx;
nomem:
	free(n->name);
	free(n->gpus);
	free(n->nvlinks);
	return -ENOMEM;
}

/* Replaces *dst with a copy of src (NULL keeps *dst). */
static int set_str(char **dst, const char *src)
{
	char *p;

	if (!src)
		return 0;
	p = strdup(src);
	if (!p)
		return -ENOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

int isle_topo_set_ngpus(isle_topo *t, int node, int ngpus)
{
	struct isle_node *n;
	struct isle_gpu *gpus = NULL;
	uint16_t *nvl = NULL;
	int keep;

	if (!valid_node(t, node) || ngpus < 0 || ngpus > ISLE_MAX_GPUS_PER_NODE)
		return -EINVAL;
	n = &t->nodes[node];
	if (ngpus == n->ngpus)
		return 0;
	if (ngpus) {
		gpus = calloc((size_t)ngpus, sizeof(*gpus));
		nvl = calloc((size_t)ngpus * ngpus, sizeof(*nvl));
		if (!gpus || !nvl) {
			free(gpus);
			free(nvl);
			return -ENOMEM;
		}
	}
	keep = ngpus < n->ngpus ? ngpus : n->ngpus;
	for (int g = 0; g < ngpus; g++) {
		if (g < keep) {
			gpus[g] = n->gpus[g];
			for (int h = 0; h < keep; h++)
				nvl[g * ngpus + h] =
				    n->nvlinks[g * n->ngpus + h];
			continue;
		}
		gpus[g].island = -1;
		gpus[g].numa = -1;
		gpus[g].nic = -1;
	}
	for (int g = keep; g < n->ngpus; g++) {
		free(n->gpus[g].bus_id);
		free(n->gpus[g].model);
	}
	free(n->gpus);
	free(n->nvlinks);
	n->gpus = gpus;
	n->nvlinks = nvl;
	n->ngpus = ngpus;
	t->finalized = 0;
	return 0;
}

int isle_topo_set_gpu(isle_topo *t, int node, int gpu, const char *bus_id,
		      const char *model, int numa)
{
	struct isle_gpu *g;
	int rc;

	if (!valid_gpu(t, node, gpu) || numa < -1)
		return -EINVAL;
	g = &t->nodes[node].gpus[gpu];
	rc = set_str(&g->bus_id, bus_id);
	if (!rc)
		rc = set_str(&g->model, model);
	if (rc)
		return rc;
	g->numa = numa;
	return 0;
}

int isle_topo_set_nvlink(isle_topo *t, int node, int a, int b, int nlinks)
{
	struct isle_node *n;

	if (!valid_gpu(t, node, a) || !valid_gpu(t, node, b) || a == b)
		return -EINVAL;
	if (nlinks < 0 || nlinks > UINT16_MAX)
		return -ERANGE;
	n = &t->nodes[node];
	n->nvlinks[a * n->ngpus + b] = (uint16_t)nlinks;
	n->nvlinks[b * n->ngpus + a] = (uint16_t)nlinks;
	t->finalized = 0;
	return 0;
}

int isle_topo_add_nic(isle_topo *t, int node, const char *name, uint64_t guid,
		      int rail, double gbps, int numa)
{
	struct isle_node *n;
	struct isle_nic *nic, *p;

	if (!valid_node(t, node) || !name || !*name || rail < -1 || numa < -1 ||
	    gbps < 0)
		return -EINVAL;
	n = &t->nodes[node];
	for (int k = 0; k < n->nnics; k++)
		if (strcmp(n->nics[k].name, name) == 0)
			return -EEXIST;
	p = realloc(n->nics, (size_t)(n->nnics + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	n->nics = p;
	nic = &n->nics[n->nnics];
	nic->name = strdup(name);
	if (!nic->name)
		return -ENOMEM;
	nic->guid = guid;
	nic->rail = rail;
	nic->sw = -1;
	nic->numa = numa;
	nic->gbps = gbps;
	t->finalized = 0;
	return n->nnics++;
}

int isle_topo_set_gpu_nic(isle_topo *t, int node, int gpu, int nic)
{
	if (!valid_gpu(t, node, gpu) || nic < -1 || nic >= t->nodes[node].nnics)
		return -EINVAL;
	t->nodes[node].gpus[gpu].nic = nic;
	return 0;
}

int isle_topo_add_switch(isle_topo *t, const char *name, uint64_t guid,
			 isle_sw_level level)
{
	struct isle_switch *s;
	int idx, rc;

	if (!t || !name || !*name || (int)level < ISLE_SW_LEAF ||
	    level > ISLE_SW_UNKNOWN)
		return -EINVAL;
	if (isle__index_get(t->switch_idx, name) >= 0)
		return -EEXIST;
	rc = isle__grow((void **)&t->switches, &t->cap_switches,
			t->nswitches + 1, sizeof(*t->switches));
	if (rc)
		return rc;
	idx = t->nswitches;
	s = &t->switches[idx];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	if (isle__index_put(t->switch_idx, s->name, idx)) {
		free(s->name);
		return -ENOMEM;
	}
	s->guid = guid;
	s->level = level;
	s->rail = -1;
	t->nswitches++;
	t->finalized = 0;
	return idx;
}

int isle_topo_set_switch(isle_topo *t, int sw, int rail, double gbps)
{
	if (!valid_switch(t, sw) || rail < -1 || gbps < 0)
		return -EINVAL;
	t->switches[sw].rail = rail;
	t->switches[sw].gbps = gbps;
	return 0;
}

int isle_topo_link_switches(isle_topo *t, int parent, int child)
{
	struct isle_switch *p, *c;
	int rc;

	if (!valid_switch(t, parent) || !valid_switch(t, child) ||
	    parent == child)
		return -EINVAL;
	p = &t->switches[parent];
	c = &t->switches[child];
	for (int i = 0; i < c->nup; i++)
		if (c->up[i] == parent)
			return 0;
	rc = append_int(&p->down, &p->ndown, child);
	if (rc)
		return rc;
	rc = append_int(&c->up, &c->nup, parent);
	if (rc) {
		p->ndown--;
		return rc;
	}
	t->finalized = 0;
	return 0;
}

int isle_topo_attach_node(isle_topo *t, int sw, int node, int nic)
{
	struct isle_nic *k = NULL;
	int rc;

	if (!valid_switch(t, sw) || !valid_node(t, node) || nic < -1 ||
	    nic >= t->nodes[node].nnics)
		return -EINVAL;
	if (nic >= 0) {
		k = &t->nodes[node].nics[nic];
		if (k->sw == sw)
			return 0;
		if (k->sw >= 0)
			return -EEXIST; /* a port has one cable */
	}
	/* Duplicates are dropped by finalize; appending keeps this O(1). */
	rc = append_int(&t->switches[sw].nodes, &t->switches[sw].nnodes, node);
	if (rc)
		return rc;
	if (k)
		k->sw = sw;
	t->finalized = 0;
	return 0;
}

/*
 * Derived (intra-node) islands always follow the domain islands, so dropping
 * them keeps the indices add_domain returned.
 */
int isle__drop_derived_islands(isle_topo *t)
{
	t->finalized = 0;
	while (t->nislands > 0 && !t->islands[t->nislands - 1].multi_node)
		isle__free_island(&t->islands[--t->nislands]);
	isle__index_clear(t->island_idx);
	for (int i = 0; i < t->nislands; i++)
		if (isle__index_put(t->island_idx, t->islands[i].name, i))
			return -ENOMEM;
	for (int i = 0; i < t->nnodes; i++) {
		struct isle_node *n = &t->nodes[i];

		for (int g = 0; g < n->ngpus; g++)
			n->gpus[g].island = -1;
		n->first_island = -1;
		n->nislands = 0;
	}
	return 0;
}

int isle_topo_add_domain(isle_topo *t, const char *name, const int *nodes,
			 int nnodes, double bw_gbps)
{
	struct isle_island *is;
	int idx, rc, i;

	if (!t || !name || !*name || nnodes < 1 || !nodes || bw_gbps < 0)
		return -EINVAL;
	for (i = 0; i < nnodes; i++)
		if (!valid_node(t, nodes[i]))
			return -EINVAL;
	rc = isle__drop_derived_islands(t);
	if (rc)
		return rc;
	if (isle__index_get(t->island_idx, name) >= 0)
		return -EEXIST;
	rc = isle__grow((void **)&t->islands, &t->cap_islands, t->nislands + 1,
			sizeof(*t->islands));
	if (rc)
		return rc;
	idx = t->nislands;
	is = &t->islands[idx];
	memset(is, 0, sizeof(*is));
	is->name = strdup(name);
	is->nodes = malloc((size_t)nnodes * sizeof(int));
	if (!is->name || !is->nodes) {
		isle__free_island(is);
		return -ENOMEM;
	}
	memcpy(is->nodes, nodes, (size_t)nnodes * sizeof(int));
	is->nnodes = nnodes;
	isle__sort_unique(is->nodes, &is->nnodes);
	rc = is->nnodes == nnodes ? 0 : -EINVAL; /* a node listed twice */
	for (i = 0; !rc && i < nnodes; i++)
		if (t->nodes[nodes[i]].domain >= 0)
			rc = -EEXIST; /* a node is in one domain at most */
	if (!rc)
		rc = isle__index_put(t->island_idx, is->name, idx);
	if (rc) {
		isle__free_island(is);
		return rc;
	}
	for (i = 0; i < nnodes; i++)
		t->nodes[nodes[i]].domain = idx;
	is->multi_node = 1;
	is->bw_gbps = bw_gbps;
	t->nislands++;
	t->finalized = 0;
	return idx;
}

int isle_topo_add_rack(isle_topo *t, const char *name, const int *nodes,
		       int nnodes)
{
	struct isle_rack *r;
	int idx, rc, i;

	if (!t || !name || !*name || nnodes < 0 || (nnodes && !nodes))
		return -EINVAL;
	for (i = 0; i < nnodes; i++)
		if (!valid_node(t, nodes[i]))
			return -EINVAL;
	for (i = 0; i < t->nracks; i++)
		if (strcmp(t->racks[i].name, name) == 0)
			return -EEXIST;
	for (i = 0; i < nnodes; i++)
		if (t->nodes[nodes[i]].rack >= 0)
			return -EEXIST;
	rc = isle__grow((void **)&t->racks, &t->cap_racks, t->nracks + 1,
			sizeof(*t->racks));
	if (rc)
		return rc;
	idx = t->nracks;
	r = &t->racks[idx];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	r->nodes = malloc((size_t)(nnodes ? nnodes : 1) * sizeof(int));
	if (!r->name || !r->nodes) {
		free(r->name);
		free(r->nodes);
		return -ENOMEM;
	}
	if (nnodes)
		memcpy(r->nodes, nodes, (size_t)nnodes * sizeof(int));
	r->nnodes = nnodes;
	isle__sort_unique(r->nodes, &r->nnodes);
	if (r->nnodes != nnodes) {
		free(r->name);
		free(r->nodes);
		return -EINVAL;
	}
	for (i = 0; i < nnodes; i++)
		t->nodes[nodes[i]].rack = idx;
	t->nracks++;
	return idx;
}

int isle_topo_find_rack(const isle_topo *t, const char *name)
{
	for (int i = 0; t && name && i < t->nracks; i++)
		if (strcmp(t->racks[i].name, name) == 0)
			return i;
	return -1;
}

int isle_topo_set_node_rack(isle_topo *t, int node, int rack)
{
	struct isle_rack *r;
	int old, i;

	if (!valid_node(t, node) || rack < -1 || rack >= t->nracks)
		return -EINVAL;
	old = t->nodes[node].rack;
	if (old == rack)
		return 0;
	if (rack >= 0) {
		int *p;

		r = &t->racks[rack];
		p = realloc(r->nodes, (size_t)(r->nnodes + 1) * sizeof(int));
		if (!p)
			return -ENOMEM;
		r->nodes = p;
		for (i = r->nnodes; i > 0 && r->nodes[i - 1] > node; i--)
			r->nodes[i] = r->nodes[i - 1];
		r->nodes[i] = node;
		r->nnodes++;
	}
	if (old >= 0) {
		r = &t->racks[old];
		for (i = 0; i < r->nnodes && r->nodes[i] != node; i++)
			;
		if (i < r->nnodes) {
			memmove(&r->nodes[i], &r->nodes[i + 1],
				(size_t)(r->nnodes - i - 1) * sizeof(int));
			r->nnodes--;
		}
	}
	t->nodes[node].rack = rack;
	return 0;
}

/* --- Queries ------------------------------------------------------------- */

int isle_topo_find_node(const isle_topo *t, const char *name)
{
	return t ? isle__index_get(t->node_idx, name) : -1;
}

struct rank_key {
	int leaf, island, model, pos;
};

static int rank_key_cmp(const void *a, const void *b)
{
	const struct rank_key *x = a, *y = b;

	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	if (x->island != y->island)
		return x->island < y->island ? -1 : 1;
	if (x->model != y->model)
		return x->model < y->model ? -1 : 1;
	return x->pos - y->pos;
}

int isle_topo_rank_order(const isle_topo *t, const int *nodes, int n,
			 int *order)
{
	struct rank_key *keys;

	if (!t || n < 0 || (n && (!nodes || !order)))
		return -EINVAL;
	if (!n)
		return 0;
	keys = calloc(n, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		int m = nodes[i];

		keys[i].pos = i;
		if (m < 0 || m >= t->nnodes) {
			keys[i].leaf = keys[i].island = keys[i].model = INT_MAX;
			continue;
		}
		keys[i].leaf = t->nodes[m].group[ISLE_TIER_LEAF];
		keys[i].island = t->nodes[m].domain >= 0
				     ? t->nodes[m].domain
				     : t->nodes[m].first_island;
		keys[i].model = m;
	}
	qsort(keys, n, sizeof(*keys), rank_key_cmp);
	for (int r = 0; r < n; r++)
		order[r] = keys[r].pos;
	free(keys);
	return 0;
}

int isle_topo_find_switch(const isle_topo *t, const char *name)
{
	return t ? isle__index_get(t->switch_idx, name) : -1;
}

int isle_topo_find_island(const isle_topo *t, const char *name)
{
	return t ? isle__index_get(t->island_idx, name) : -1;
}

isle_tier isle_topo_node_tier(const isle_topo *t, int na, int nb)
{
	const struct isle_node *a, *b;

	if (!valid_node(t, na) || !valid_node(t, nb))
		return ISLE_TIER_CORE;
	a = &t->nodes[na];
	b = &t->nodes[nb];
	if (a->domain >= 0 && a->domain == b->domain)
		return ISLE_TIER_ISLAND;
	if (na == nb)
		return ISLE_TIER_NODE;
	for (int k = ISLE_TIER_LEAF; k < ISLE_TIER_CORE; k++)
		if (a->group[k] >= 0 && a->group[k] == b->group[k])
			return (isle_tier)k;
	return ISLE_TIER_CORE;
}

isle_tier isle_topo_gpu_tier(const isle_topo *t, int na, int ga, int nb, int gb)
{
	if (!valid_gpu(t, na, ga) || !valid_gpu(t, nb, gb))
		return ISLE_TIER_CORE;
	if (t->nodes[na].gpus[ga].island >= 0 &&
	    t->nodes[na].gpus[ga].island == t->nodes[nb].gpus[gb].island)
		return ISLE_TIER_ISLAND;
	return isle_topo_node_tier(t, na, nb);
}

double isle_topo_tier_bw(const isle_topo *t, isle_tier tier)
{
	const struct isle_tier_param *p;

	if (!t || (int)tier < 0 || tier >= ISLE_TIER_COUNT)
		return 0.0;
	p = &t->tier[tier];
	return p->oversub > 1.0 ? p->bw_gbps / p->oversub : p->bw_gbps;
}

double isle_topo_tier_lat(const isle_topo *t, isle_tier tier)
{
	if (!t || (int)tier < 0 || tier >= ISLE_TIER_COUNT)
		return 0.0;
	return t->tier[tier].lat_us;
}

const char *isle_tier_name(isle_tier tier)
{
	if ((int)tier < 0 || tier >= ISLE_TIER_COUNT)
		return NULL;
	return tier_names[tier];
}

int isle_tier_parse(const char *s)
{
	for (int i = 0; s && i < ISLE_TIER_COUNT; i++)
		if (strcmp(s, tier_names[i]) == 0)
			return i;
	return -1;
}

const char *isle_sw_level_name(isle_sw_level l)
{
	if ((int)l < ISLE_SW_LEAF || l > ISLE_SW_UNKNOWN)
		return NULL;
	return level_names[l];
}
