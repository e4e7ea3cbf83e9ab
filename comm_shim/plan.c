/*
 * plan.c - the plan used without a plan file (from host names), and the
 * shim's error helper. Plan files themselves are read by proto/
 * (isle_plan_read).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_priv.h"

static int env_level(struct isle_plan_level *l, const char *name,
		     isle_scope scope, const char *bw_env, double bw,
		     const char *lat_env, double lat, char *err, size_t errlen)
{
	int rc;

	l->name = strdup(name);
	if (!l->name)
		return -ENOMEM;
	l->scope = scope;
	l->bw_gbps = bw;
	l->lat_us = lat;
	if ((rc = isle__env_double(bw_env, &l->bw_gbps, err, errlen)) ||
	    (rc = isle__env_double(lat_env, &l->lat_us, err, errlen)))
		return rc;
	if (!(l->bw_gbps > 0))
		return isle__errf(-EINVAL, err, errlen, "%s: must be > 0",
				  bw_env);
	return isle_codec_parse("none", &l->codec, NULL, 0);
}

int isle_plan_from_hosts(const char *const *hosts, int nranks,
			 struct isle_plan **out, char *err, size_t errlen)
{
	struct isle_plan *p;
	int rc = -ENOMEM, multi_rank_node = 0, multi_node = 0;

	*out = NULL;
	if (nranks < 1)
		return isle__errf(-EINVAL, err, errlen,
				  "isle_plan_from_hosts: no ranks");
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	p->version = ISLE_PLAN_VERSION;
	p->nranks = nranks;
	if (!(p->source = strdup("hostnames")) ||
	    !(p->ranks = calloc((size_t)nranks, sizeof(*p->ranks))))
		goto out;
	for (int i = 0; i < nranks; i++) {
		struct isle_plan_rank *r = &p->ranks[i];

		r->gpu = -1;
		if (!(r->node = strdup(hosts[i])) ||
		    !(r->island = strdup(hosts[i])) || !(r->leaf = strdup("")))
			goto out;
	}
	if ((rc = isle_plan_index(p)))
		goto out;
	/* Ids count up from 0 in order of first appearance. */
	for (int i = 0, seen = 0; i < nranks; i++) {
		multi_node |= p->ranks[i].node_id != 0;
		if (p->ranks[i].node_id < seen)
			multi_rank_node = 1;
		else
			seen = p->ranks[i].node_id + 1;
	}
	if (multi_rank_node || !multi_node) {
		rc = env_level(&p->levels[p->nlevels++], "node",
			       multi_node ? ISLE_SCOPE_ISLAND : ISLE_SCOPE_JOB,
			       "ISLE_COMM_LOCAL_GBPS", 20.0,
			       "ISLE_COMM_LOCAL_LAT_US", 1.0, err, errlen);
		if (rc)
			goto out;
	}
	if (multi_node) {
		rc = env_level(&p->levels[p->nlevels++], "network",
			       ISLE_SCOPE_JOB, "ISLE_COMM_NET_GBPS", 12.5,
			       "ISLE_COMM_NET_LAT_US", 20.0, err, errlen);
		if (rc)
			goto out;
	}
	*out = p;
	p = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		isle__errf(rc, err, errlen,
			   "isle_plan_from_hosts: out "
			   "of memory");
	isle_plan_destroy(p);
	return rc;
}
