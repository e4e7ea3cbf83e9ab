/*
 * plan_build.c - from granted nodes and GPUs to ranks, levels and codecs.
 *
 * Ranks: one per granted GPU, nodes in Slurm's task order (the hostlist's,
 * or isle_topo_rank_order's where Slurm lays out tasks by topology ranks),
 * GPUs ascending inside a node: the default block distribution of srun
 * with one task per GPU.
 *
 * Levels: the shim nests its levels (docs/plan.md), so a level is kept only
 * where its groups are unions of the previous level's groups and fewer of
 * them. Candidates, tightest first: NVLink island, node (PCIe between
 * islands), leaf group; the last level always spans the job and is carried
 * by the loosest tier any two of the job's GPUs share. With more than three
 * levels the node level goes: it is the one with the least bandwidth gap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/* isle_codec_tier_default is indexed by isle_tier */
_Static_assert(ISLE_TIER_COUNT == 5, "isle_codec_tier_default's tiers");

void isle__codec_policy_default(struct isle__codec_policy *p)
{
	for (int i = 0; i < ISLE_TIER_COUNT; i++)
		snprintf(p->codec[i], sizeof(p->codec[i]), "%s",
			 isle_codec_tier_default(i));
}

int isle__codec_check(const char *spec, char *err, size_t errlen)
{
	struct isle_codec c;

	return isle_codec_parse(spec, &c, err, errlen);
}

int isle__codec_policy_parse(struct isle__codec_policy *p, const char *s,
			     char *err, size_t errlen)
{
	char *copy, *save = NULL, *item;
	char *codec = NULL;
	int rc = 0;

	if (!s || !*s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (item = strtok_r(copy, ",; ", &save); item;
	     item = strtok_r(NULL, ",; ", &save)) {
		char *eq = strchr(item, '=');
		int tier;

		if (codec && isle_codec_is_flag(item)) {
			/* "spine=topk:0.01,mom=0.9": a flag of the last. */
			size_t len = strlen(codec);

			snprintf(codec + len, ISLE_PLAN_CODEC_LEN - len, ",%s",
				 item);
		} else if (!eq) {
			(void)isle__errf(0, err, errlen,
					 "codec policy '%s': '%s' is not "
					 "TIER=CODEC",
					 s, item);
			rc = -EINVAL;
			goto out;
		} else {
			*eq = '\0';
			tier = isle_tier_parse(item);
			if (tier < 0) {
				(void)isle__errf(0, err, errlen,
						 "codec policy '%s': unknown "
						 "tier '%s' (island, node, "
						 "leaf, spine, core)",
						 s, item);
				rc = -EINVAL;
				goto out;
			}
			codec = p->codec[tier];
			snprintf(codec, ISLE_PLAN_CODEC_LEN, "%s", eq + 1);
		}
		rc = isle__codec_check(codec, err, errlen);
		if (rc)
			goto out;
	}
out:
	free(copy);
	return rc;
}

/* Partition keys of ranks at one scope. */
static int rank_key(const isle_topo *t, const struct isle__plan_rank *r,
		    isle_scope s)
{
	const struct isle_node *n = &t->nodes[r->node];

	switch (s) {
	case ISLE_SCOPE_ISLAND:
		return n->gpus[r->gpu].island;
	case ISLE_SCOPE_NODE:
		return r->node;
	case ISLE_SCOPE_LEAF:
		return n->group[ISLE_TIER_LEAF]; /* -1: one unknown leaf */
	case ISLE_SCOPE_JOB:
	case ISLE_SCOPE_COUNT:
		break;
	}
	return 0;
}

/* Keys at a scope lie in [-1, key_range - 1). */
static int key_range(const isle_topo *t, isle_scope s)
{
	switch (s) {
	case ISLE_SCOPE_ISLAND:
		return t->nislands + 1;
	case ISLE_SCOPE_NODE:
		return t->nnodes + 1;
	case ISLE_SCOPE_LEAF:
		return t->ngroups[ISLE_TIER_LEAF] + 1;
	case ISLE_SCOPE_JOB:
	case ISLE_SCOPE_COUNT:
		break;
	}
	return 1;
}

/*
 * Counts the groups at scope b and checks that each group at scope a lies
 * inside one of them. Returns the count, 0 if a does not nest in b, or
 * -ENOMEM.
 */
static int nest_groups(const struct isle__plan *p, isle_scope a, isle_scope b)
{
	const isle_topo *t = p->topo;
	int na = key_range(t, a), nb = key_range(t, b), groups = 0;
	int *a_to_b = malloc(na * sizeof(*a_to_b));
	char *seen = calloc(nb, 1);

	if (!a_to_b || !seen) {
		groups = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < na; i++)
		a_to_b[i] = -1;
	for (int i = 0; i < p->nranks; i++) {
		int ka = rank_key(t, &p->ranks[i], a) + 1;
		int kb = rank_key(t, &p->ranks[i], b) + 1;

		if (a_to_b[ka] >= 0 && a_to_b[ka] != kb) {
			groups = 0;
			goto out;
		}
		a_to_b[ka] = kb;
		if (!seen[kb]) {
			seen[kb] = 1;
			groups++;
		}
	}
out:
	free(a_to_b);
	free(seen);
	return groups;
}

/* Loosest tier between any two of the job's GPUs. */
static isle_tier job_tier(const struct isle__plan *p, const int *nodes,
			  int nnodes)
{
	const isle_topo *t = p->topo;
	isle_tier worst = ISLE_TIER_ISLAND;

	for (int i = 0; i < nnodes; i++)
		for (int j = i + 1; j < nnodes; j++) {
			isle_tier x =
			    isle_topo_node_tier(t, nodes[i], nodes[j]);

			if (x > worst)
				worst = x;
			if (worst == ISLE_TIER_CORE)
				return worst;
		}
	/* Inside nodes: GPUs of different islands meet over PCIe. */
	for (int i = 0; i < p->nranks && worst < ISLE_TIER_NODE; i++)
		for (int j = i + 1; j < p->nranks; j++) {
			const struct isle__plan_rank *a = &p->ranks[i],
						     *b = &p->ranks[j];

			if (a->node == b->node &&
			    isle_topo_gpu_tier(t, a->node, a->gpu, b->node,
					       b->gpu) > worst)
				worst = isle_topo_gpu_tier(t, a->node, a->gpu,
							   b->node, b->gpu);
		}
	return worst;
}

static const char *tier_level_name(isle_tier tier)
{
	static const char *const names[ISLE_TIER_COUNT] = {
	    "nvlink", "pcie", "leaf", "spine", "core"};

	return names[tier];
}

/* NVLink bandwidth of the job's slowest island, or the tier default. */
static double island_bw(const struct isle__plan *p)
{
	const isle_topo *t = p->topo;
	double bw = 0;

	for (int i = 0; i < p->nranks; i++) {
		const struct isle_island *is =
		    &t->islands[t->nodes[p->ranks[i].node]
				    .gpus[p->ranks[i].gpu]
				    .island];

		if (is->bw_gbps > 0 && (bw == 0 || is->bw_gbps < bw))
			bw = is->bw_gbps;
	}
	return bw > 0 ? bw : isle_topo_tier_bw(t, ISLE_TIER_ISLAND);
}

static int set_level(struct isle__plan *p, struct isle__plan_level *l,
		     isle_scope s, isle_tier tier,
		     const struct isle__plan_req *req)
{
	const isle_topo *t = p->topo;
	const char *codec;

	l->name = tier_level_name(tier);
	l->scope = s;
	l->tier = tier;
	l->bw_gbps = tier == ISLE_TIER_ISLAND ? island_bw(p)
					      : isle_topo_tier_bw(t, tier);
	l->lat_us = isle_topo_tier_lat(t, tier);

	codec = req->policy.codec[tier];
	/* Spine and core codecs are for oversubscribed tiers only. */
	if (tier >= ISLE_TIER_SPINE && t->tier[tier].oversub <= 1.0)
		codec = req->policy.codec[ISLE_TIER_LEAF];
	/* The user's choice covers the network, never NVLink or PCIe; "none"
	 * turns compression off everywhere. */
	if (req->compress && *req->compress) {
		struct isle_codec user;
		int rc = isle_codec_parse(req->compress, &user, NULL, 0);

		if (rc)
			return rc;
		if (tier >= ISLE_TIER_LEAF || user.kind == ISLE_CODEC_NONE)
			codec = req->compress;
	}
	return isle_codec_parse(codec, &l->codec, NULL, 0);
}

static int build_levels(struct isle__plan *p, const int *nodes, int nnodes,
			const struct isle__plan_req *req)
{
	static const isle_scope cand[] = {ISLE_SCOPE_ISLAND, ISLE_SCOPE_NODE,
					  ISLE_SCOPE_LEAF};
	static const isle_tier cand_tier[] = {ISLE_TIER_ISLAND, ISLE_TIER_NODE,
					      ISLE_TIER_LEAF};
	isle_scope kept[4];
	isle_tier kept_tier[4];
	int nkept = 0, prev_groups = p->nranks;

	for (size_t c = 0; c < sizeof(cand) / sizeof(cand[0]); c++) {
		/* Groups at this scope; 0 if the last kept level's groups
		 * do not nest in them (an island wider than a node). */
		int g =
		    nest_groups(p, nkept ? kept[nkept - 1] : cand[c], cand[c]);

		if (g < 0)
			return g;
		if (g == 1)
			break; /* this scope already spans the job */
		if (g == 0 || g >= prev_groups)
			continue;
		kept[nkept] = cand[c];
		kept_tier[nkept++] = cand_tier[c];
		prev_groups = g;
	}
	kept[nkept] = ISLE_SCOPE_JOB;
	kept_tier[nkept++] = job_tier(p, nodes, nnodes);

	/* Too many levels for the shim: PCIe between islands goes first. */
	if (nkept > ISLE_PLAN_MAX_LEVELS) {
		for (int i = 0; i < nkept; i++)
			if (kept[i] == ISLE_SCOPE_NODE) {
				memmove(&kept[i], &kept[i + 1],
					(nkept - i - 1) * sizeof(kept[0]));
				memmove(&kept_tier[i], &kept_tier[i + 1],
					(nkept - i - 1) * sizeof(kept_tier[0]));
				nkept--;
				break;
			}
	}
	p->nlevels = nkept;
	for (int i = 0; i < nkept; i++) {
		int rc =
		    set_level(p, &p->levels[i], kept[i], kept_tier[i], req);

		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Names each leaf group after the primary leaf switch of its first node in
 * the model, so every node of the job derives the same names. Fills
 * p->ranks[].leaf ("" where the group is unknown).
 */
static int name_leaf_groups(struct isle__plan *p)
{
	const isle_topo *t = p->topo;
	int ng = t->ngroups[ISLE_TIER_LEAF];
	const char **names = calloc(ng > 0 ? ng : 1, sizeof(*names));

	if (!names)
		return -ENOMEM;
	for (int n = 0; n < t->nnodes; n++) {
		int g = t->nodes[n].group[ISLE_TIER_LEAF];

		if (g >= 0 && g < ng && !names[g] && t->nodes[n].leaf >= 0)
			names[g] = t->switches[t->nodes[n].leaf].name;
	}
	for (int r = 0; r < p->nranks; r++) {
		int g = t->nodes[p->ranks[r].node].group[ISLE_TIER_LEAF];

		p->ranks[r].leaf =
		    (g >= 0 && g < ng && names[g]) ? names[g] : "";
	}
	free(names);
	return 0;
}

static uint64_t node_gpus(const struct isle__plan_req *req, const char *name)
{
	for (int i = 0; i < req->noverride; i++)
		if (!strcmp(req->override_node[i], name))
			return req->override_gpus[i];
	return req->gpus;
}

int isle__plan_build(const isle_topo *t, const struct isle__plan_req *req,
		     struct isle__plan **out, char *err, size_t errlen)
{
	struct isle__plan *p = NULL;
	char **names = NULL, *seen = NULL;
	int nnames = 0, *nodes = NULL, *order = NULL, rc;

	*out = NULL;
	if (req->compress && *req->compress) {
		rc = isle__codec_check(req->compress, err, errlen);
		if (rc)
			return rc;
	}
	rc = isle_hostlist_expand(req->nodes, &names, &nnames, err, errlen);
	if (rc)
		goto out;
	p = calloc(1, sizeof(*p));
	nodes = calloc(nnames, sizeof(*nodes));
	seen = calloc(t->nnodes, 1);
	if (!p || !nodes || !seen)
		goto nomem;
	p->topo = t;
	p->local_node = -1;
	p->job_id = strdup(req->job_id ? req->job_id : "");
	if (!p->job_id)
		goto nomem;

	for (int i = 0; i < nnames; i++) {
		int n = isle_topo_find_node(t, names[i]);
		uint64_t m = node_gpus(req, names[i]);

		if (n < 0) {
			(void)isle__errf(0, err, errlen,
					 "node '%s' is not in the cluster file",
					 names[i]);
			rc = -ENOENT;
			goto out;
		}
		if (seen[n]) {
			(void)isle__errf(0, err, errlen,
					 "node '%s' is granted twice",
					 names[i]);
			rc = -EINVAL;
			goto out;
		}
		seen[n] = 1;
		if (t->nodes[n].ngpus < 64 && (m >> t->nodes[n].ngpus)) {
			(void)isle__errf(0, err, errlen,
					 "node '%s' has %d GPUs; the job was "
					 "granted index %d",
					 names[i], t->nodes[n].ngpus,
					 63 - __builtin_clzll(m));
			rc = -EINVAL;
			goto out;
		}
		nodes[i] = n;
		p->nranks += __builtin_popcountll(m);
		if (req->local_node && !strcmp(req->local_node, names[i])) {
			p->local_node = n;
			p->local_gpus = m;
		}
	}
	p->nnodes = nnames;
	if (req->local_node && p->local_node < 0) {
		(void)isle__errf(0, err, errlen,
				 "this node '%s' is not among the job's nodes "
				 "'%s'",
				 req->local_node, req->nodes);
		rc = -EINVAL;
		goto out;
	}
	if (p->local_node < 0) {
		p->local_node = nodes[0];
		p->local_gpus = node_gpus(req, names[0]);
	}
	if (p->nranks == 0) {
		(void)isle__errf(0, err, errlen, "the job has no GPUs on '%s'",
				 req->nodes);
		rc = -EINVAL;
		goto out;
	}

	p->ranks = calloc(p->nranks, sizeof(*p->ranks));
	order = calloc(nnames, sizeof(*order));
	if (!p->ranks || !order)
		goto nomem;
	for (int i = 0; i < nnames; i++)
		order[i] = i;
	if (req->topo_order) {
		rc = isle_topo_rank_order(t, nodes, nnames, order);
		if (rc)
			goto out;
	}
	for (int k = 0, r = 0; k < nnames; k++) {
		int i = order[k];
		uint64_t m = node_gpus(req, names[i]);

		for (int g = 0; g < ISLE_MAX_GPUS_PER_NODE; g++)
			if (m & (1ULL << g)) {
				p->ranks[r].node = nodes[i];
				p->ranks[r++].gpu = g;
			}
	}
	rc = name_leaf_groups(p);
	if (!rc)
		rc = build_levels(p, nodes, nnames, req);
	if (rc)
		goto out;
	*out = p;
	p = NULL;
	goto out;
nomem:
	rc = -ENOMEM;
	(void)isle__errf(0, err, errlen, "out of memory");
out:
	isle_hostlist_free(names, nnames);
	free(nodes);
	free(order);
	free(seen);
	isle__plan_free(p);
	return rc;
}

void isle__plan_free(struct isle__plan *p)
{
	if (!p)
		return;
	free(p->job_id);
	free(p->ranks);
	free(p);
}
