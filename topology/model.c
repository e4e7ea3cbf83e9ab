/*
 * model.c - the cluster model: builders, finalize (derived islands, switch
 * levels, tier groups) and queries.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

/* Defaults of the communication tiers; a cluster file overrides them. */
static const struct isle_tier_param default_tier[ISLE_TIER_COUNT] = {
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

int isle__err(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

int isle__bad_name_char(const char *name)
{
	for (const char *p = name; *p; p++)
		if (isspace((unsigned char)*p) || strchr(",[]=#\"", *p))
			return (unsigned char)*p;
	return 0;
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
static void sort_unique(int *v, int *n)
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
	memcpy(t->tier, default_tier, sizeof(t->tier));
	t->node_idx = isle__index_create();
	t->switch_idx = isle__index_create();
	t->island_idx = isle__index_create();
	if (!t->node_idx || !t->switch_idx || !t->island_idx) {
		isle_topo_destroy(t);
		return NULL;
	}
	return t;
}

static void free_island(struct isle_island *is)
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
		free_island(&t->islands[i]);
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
static int drop_derived_islands(isle_topo *t)
{
	t->finalized = 0;
	while (t->nislands > 0 && !t->islands[t->nislands - 1].multi_node)
		free_island(&t->islands[--t->nislands]);
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
	rc = drop_derived_islands(t);
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
		free_island(is);
		return -ENOMEM;
	}
	memcpy(is->nodes, nodes, (size_t)nnodes * sizeof(int));
	is->nnodes = nnodes;
	sort_unique(is->nodes, &is->nnodes);
	rc = is->nnodes == nnodes ? 0 : -EINVAL; /* a node listed twice */
	for (i = 0; !rc && i < nnodes; i++)
		if (t->nodes[nodes[i]].domain >= 0)
			rc = -EEXIST; /* a node is in one domain at most */
	if (!rc)
		rc = isle__index_put(t->island_idx, is->name, idx);
	if (rc) {
		free_island(is);
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
	sort_unique(r->nodes, &r->nnodes);
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

/* --- Finalize ------------------------------------------------------------ */

/* Union-find with path halving; the smaller index becomes the root so the
 * numbering of groups follows node order. */
static int uf_find(int *p, int x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

static void uf_union(int *p, int a, int b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a < b)
		p[b] = a;
	else if (b < a)
		p[a] = b;
}

/* Relabels the roots of p[0..n) as 0, 1, ... in order of first appearance;
 * writes the label of each element to out and returns the count. */
static int uf_label(int *p, int n, int *out, int *tmp)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		tmp[i] = -1;
	for (int i = 0; i < n; i++) {
		int r = uf_find(p, i);

		if (tmp[r] < 0)
			tmp[r] = count++;
		out[i] = tmp[r];
	}
	return count;
}

static int new_island(isle_topo *t, struct isle_island **out)
{
	int rc = isle__grow((void **)&t->islands, &t->cap_islands,
			    t->nislands + 1, sizeof(*t->islands));

	if (rc)
		return rc;
	*out = &t->islands[t->nislands];
	memset(*out, 0, sizeof(**out));
	return 0;
}

/* Fills a domain island's member list from its nodes. */
static int fill_domain(isle_topo *t, int idx)
{
	struct isle_island *is = &t->islands[idx];
	int n = 0;

	for (int i = 0; i < is->nnodes; i++)
		n += t->nodes[is->nodes[i]].ngpus;
	free(is->members);
	is->members = malloc((size_t)(n ? n : 1) * sizeof(*is->members));
	if (!is->members)
		return -ENOMEM;
	is->ngpus = 0;
	for (int i = 0; i < is->nnodes; i++) {
		struct isle_node *nd = &t->nodes[is->nodes[i]];

		for (int g = 0; g < nd->ngpus; g++) {
			is->members[is->ngpus].node = is->nodes[i];
			is->members[is->ngpus].gpu = g;
			is->ngpus++;
			nd->gpus[g].island = idx;
		}
		nd->first_island = idx;
		nd->nislands = nd->ngpus ? 1 : 0;
	}
	return 0;
}

/* Islands of one node without a domain: connected components of its NVLink
 * graph, numbered by their lowest GPU. */
static int node_islands(isle_topo *t, int ni, char *err, size_t errlen)
{
	struct isle_node *n = &t->nodes[ni];
	int p[ISLE_MAX_GPUS_PER_NODE], label[ISLE_MAX_GPUS_PER_NODE];
	int tmp[ISLE_MAX_GPUS_PER_NODE];
	int count, base = t->nislands;

	for (int a = 0; a < n->ngpus; a++)
		p[a] = a;
	for (int a = 0; a < n->ngpus; a++)
		for (int b = a + 1; b < n->ngpus; b++)
			if (n->nvlinks[a * n->ngpus + b])
				uf_union(p, a, b);
	count = uf_label(p, n->ngpus, label, tmp);
	for (int c = 0; c < count; c++) {
		struct isle_island *is;
		int rc = new_island(t, &is);

		if (rc)
			return rc;
		if (asprintf(&is->name, "%s:nvl%d", n->name, c) < 0)
			is->name = NULL;
		is->nodes = malloc(sizeof(int));
		is->members = malloc((size_t)n->ngpus * sizeof(*is->members));
		if (!is->name || !is->nodes || !is->members) {
			free_island(is);
			return -ENOMEM;
		}
		is->nnodes = 1;
		is->nodes[0] = ni;
		rc = isle__index_put(t->island_idx, is->name, t->nislands);
		if (rc == -EEXIST)
			rc = isle__err(-EINVAL, err, errlen,
				       "island name '%s' of node '%s' clashes "
				       "with a domain name",
				       is->name, n->name);
		if (rc) {
			free_island(is);
			return rc;
		}
		t->nislands++;
	}
	for (int g = 0; g < n->ngpus; g++) {
		struct isle_island *is = &t->islands[base + label[g]];

		is->members[is->ngpus].node = ni;
		is->members[is->ngpus].gpu = g;
		is->ngpus++;
		n->gpus[g].island = base + label[g];
	}
	n->first_island = count ? base : -1;
	n->nislands = count;
	return 0;
}

/* Levels where unknown: leafs hold nodes, spines hold leafs, cores the rest. */
static void derive_levels(isle_topo *t)
{
	int i, k;

	for (i = 0; i < t->nswitches; i++)
		if (t->switches[i].level == ISLE_SW_UNKNOWN &&
		    t->switches[i].nnodes > 0)
			t->switches[i].level = ISLE_SW_LEAF;
	for (i = 0; i < t->nswitches; i++) {
		struct isle_switch *s = &t->switches[i];

		if (s->level != ISLE_SW_UNKNOWN)
			continue;
		for (k = 0; k < s->ndown; k++)
			if (t->switches[s->down[k]].level == ISLE_SW_LEAF)
				break;
		if (k < s->ndown)
			s->level = ISLE_SW_SPINE;
	}
	for (i = 0; i < t->nswitches; i++)
		if (t->switches[i].level == ISLE_SW_UNKNOWN)
			t->switches[i].level = ISLE_SW_CORE;
}

/*
 * Tier groups of the nodes:
 *  LEAF:  nodes sharing any switch they are cabled to (union-find), so all
 *         rails of a rail-optimized scalable unit form one group;
 *  SPINE: leaf groups sharing a parent switch;
 *  CORE:  connected parts of the fabric (switch links, plus switches that
 *         share a node, for fabrics built as separate planes per rail).
 * A node without switch ports is a leaf and spine group of its own; all such
 * nodes share one CORE group (they are assumed to reach each other over some
 * network, like the rest of the cluster).
 */
static int derive_groups(isle_topo *t)
{
	int nn = t->nnodes, ns = t->nswitches;
	int *p = NULL, *q = NULL, *tmp = NULL, *lab = NULL, *rep = NULL;
	int *first = NULL, *sp = NULL;
	int rc = -ENOMEM, i, k, count, loose;

	p = malloc((size_t)(nn + 1) * sizeof(int));
	q = malloc((size_t)(nn + 1) * sizeof(int));
	tmp = malloc((size_t)(nn + ns + 1) * sizeof(int));
	lab = malloc((size_t)(nn + ns + 1) * sizeof(int));
	first = malloc((size_t)(nn + 1) * sizeof(int));
	rep = malloc((size_t)(ns + 1) * sizeof(int));
	sp = malloc((size_t)(ns + 1) * sizeof(int));
	if (!p || !q || !tmp || !lab || !first || !rep || !sp)
		goto out;

	/* LEAF */
	for (i = 0; i < nn; i++) {
		p[i] = i;
		first[i] = -1;
	}
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];

		for (k = 0; k < s->nnodes; k++) {
			uf_union(p, s->nodes[0], s->nodes[k]);
			if (first[s->nodes[k]] < 0)
				first[s->nodes[k]] = i;
		}
	}
	t->ngroups[ISLE_TIER_LEAF] = uf_label(p, nn, lab, tmp);
	for (i = 0; i < nn; i++)
		t->nodes[i].group[ISLE_TIER_LEAF] = lab[i];

	/* SPINE, over leaf groups; rep[s] is a leaf group below switch s. */
	for (i = 0; i < t->ngroups[ISLE_TIER_LEAF]; i++)
		q[i] = i;
	for (i = 0; i < ns; i++)
		rep[i] = -1;
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];
		int g;

		if (!s->nnodes)
			continue;
		g = t->nodes[s->nodes[0]].group[ISLE_TIER_LEAF];
		for (k = -1; k < s->nup; k++) {
			int up = k < 0 ? i : s->up[k];

			if (rep[up] < 0)
				rep[up] = g;
			else
				uf_union(q, rep[up], g);
		}
	}
	t->ngroups[ISLE_TIER_SPINE] =
	    uf_label(q, t->ngroups[ISLE_TIER_LEAF], lab, tmp);
	for (i = 0; i < nn; i++)
		t->nodes[i].group[ISLE_TIER_SPINE] =
		    lab[t->nodes[i].group[ISLE_TIER_LEAF]];

	/* CORE, over switches. */
	for (i = 0; i < ns; i++)
		sp[i] = i;
	for (i = 0; i < ns; i++) {
		const struct isle_switch *s = &t->switches[i];

		for (k = 0; k < s->ndown; k++)
			uf_union(sp, i, s->down[k]);
		for (k = 0; k < s->nnodes; k++)
			uf_union(sp, i, first[s->nodes[k]]);
	}
	for (i = 0; i < ns; i++)
		tmp[i] = -1;
	count = 0;
	loose = -1;
	for (i = 0; i < nn; i++) {
		int *g = &t->nodes[i].group[ISLE_TIER_CORE];

		if (first[i] < 0) {
			if (loose < 0)
				loose = count++;
			*g = loose;
			continue;
		}
		k = uf_find(sp, first[i]);
		if (tmp[k] < 0)
			tmp[k] = count++;
		*g = tmp[k];
	}
	t->ngroups[ISLE_TIER_CORE] = count;

	/* Primary leaf: the rail-0 port, else the first cabled port, else the
	 * first switch the node is attached to without a NIC. */
	for (i = 0; i < nn; i++) {
		struct isle_node *n = &t->nodes[i];
		int any = -1, rail0 = -1;

		for (k = 0; k < n->nnics; k++) {
			if (n->nics[k].sw < 0)
				continue;
			if (any < 0)
				any = n->nics[k].sw;
			if (rail0 < 0 && n->nics[k].rail == 0)
				rail0 = n->nics[k].sw;
		}
		n->leaf = rail0 >= 0 ? rail0 : any >= 0 ? any : first[i];
	}
	rc = 0;
out:
	free(p);
	free(q);
	free(tmp);
	free(lab);
	free(first);
	free(rep);
	free(sp);
	return rc;
}

/*
 * Switch links must form a DAG (parents above children): a file that lists
 * spines under leafs and leafs under spines has cycles, and every walk down
 * the fabric would loop. Iterative DFS (no recursion on a user-sized graph);
 * on a back edge the message names the switches on the cycle.
 */
static int check_switch_cycles(const isle_topo *t, char *err, size_t errlen)
{
	int ns = t->nswitches, rc = 0, depth, i, k, start;
	/* state: 0 unseen, 1 on the DFS path, 2 done */
	char *state = calloc((size_t)ns + 1, 1);
	int *path = malloc(((size_t)ns + 1) * sizeof(int));
	int *next = malloc(((size_t)ns + 1) * sizeof(int));
	char *msg = NULL;
	size_t len = 0;
	FILE *f;

	if (!state || !path || !next) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ns; i++) {
		if (state[i])
			continue;
		depth = 0;
		path[0] = i;
		next[0] = 0;
		state[i] = 1;
		while (depth >= 0) {
			const struct isle_switch *s = &t->switches[path[depth]];

			if (next[depth] >= s->ndown) {
				state[path[depth--]] = 2;
				continue;
			}
			k = s->down[next[depth]++];
			if (state[k] == 2)
				continue;
			if (state[k] == 0) {
				state[k] = 1;
				path[++depth] = k;
				next[depth] = 0;
				continue;
			}
			/* k is on the path: the cycle is path[start..depth]. */
			for (start = depth; path[start] != k; start--)
				;
			f = open_memstream(&msg, &len);
			if (!f) {
				rc = -ENOMEM;
				goto out;
			}
			for (int d = start; d <= depth; d++)
				fprintf(f, "%s -> ", t->switches[path[d]].name);
			fprintf(f, "%s", t->switches[k].name);
			fclose(f);
			rc = isle__err(-EINVAL, err, errlen,
				       "switch links form a cycle (a switch is "
				       "below itself): %s",
				       msg ? msg : "?");
			goto out;
		}
	}
out:
	free(msg);
	free(state);
	free(path);
	free(next);
	return rc;
}

int isle_topo_finalize(isle_topo *t, char *err, size_t errlen)
{
	int rc, i;

	if (!t)
		return isle__err(-EINVAL, err, errlen, "no model");
	rc = drop_derived_islands(t);
	if (rc)
		goto out;
	for (i = 0; i < t->nswitches; i++)
		sort_unique(t->switches[i].nodes, &t->switches[i].nnodes);
	for (i = 0; i < t->nislands; i++) {
		rc = fill_domain(t, i);
		if (rc)
			goto out;
	}
	t->total_gpus = 0;
	for (i = 0; i < t->nnodes; i++) {
		t->total_gpus += t->nodes[i].ngpus;
		if (t->nodes[i].domain >= 0)
			continue;
		rc = node_islands(t, i, err, errlen);
		if (rc)
			goto out;
	}
	rc = check_switch_cycles(t, err, errlen);
	if (rc)
		goto out;
	t->ngroups[ISLE_TIER_ISLAND] = t->nislands;
	t->ngroups[ISLE_TIER_NODE] = t->nnodes;
	derive_levels(t);
	rc = derive_groups(t);
	if (rc)
		goto out;
	t->finalized = 1;
out:
	if (rc == -ENOMEM)
		isle__err(rc, err, errlen, "out of memory");
	return rc;
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

/* NVLink links per GPU and GB/s per link and direction, by GPU model. */
static const struct {
	const char *tag;
	int links;
	double gbps;
} nvlink_gen[] = {
    {"P100", 4, 20.0},	 {"V100", 6, 25.0},   {"A100", 12, 25.0},
    {"A800", 8, 25.0},	 {"H100", 18, 25.0},  {"H200", 18, 25.0},
    {"H800", 8, 25.0},	 {"GB200", 18, 50.0}, {"B200", 18, 50.0},
    {"GB300", 18, 50.0}, {"B300", 18, 50.0},
};

double isle_topo_derive_nvlink_bw(isle_topo *t)
{
	double bw = 0.0;

	if (!t || t->tier[ISLE_TIER_ISLAND].bw_gbps !=
		      default_tier[ISLE_TIER_ISLAND].bw_gbps)
		return 0.0;
	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];

		for (int a = 0; a < n->ngpus; a++) {
			const char *model = n->gpus[a].model;
			long sum = 0;
			size_t k;

			for (int b = 0; b < n->ngpus; b++)
				sum += n->nvlinks[a * n->ngpus + b];
			if (!sum)
				continue;
			/* An unknown model leaves the default alone. */
			for (k = 0; model && k < sizeof(nvlink_gen) /
						     sizeof(nvlink_gen[0]);
			     k++)
				if (strstr(model, nvlink_gen[k].tag))
					break;
			if (!model ||
			    k == sizeof(nvlink_gen) / sizeof(nvlink_gen[0]))
				return 0.0;
			/* Behind NVSwitches every pair shows the GPU's own
			 * link count: a row sum above it is the switch. */
			if (sum > nvlink_gen[k].links)
				sum = nvlink_gen[k].links;
			if (bw == 0.0 || sum * nvlink_gen[k].gbps < bw)
				bw = (double)sum * nvlink_gen[k].gbps;
		}
	}
	if (bw > 0.0)
		t->tier[ISLE_TIER_ISLAND].bw_gbps = bw;
	return bw;
}
