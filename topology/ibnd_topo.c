/*
 * ibnd_topo.c - the step from a classified ibnetdiscover fabric
 * (ibnd_fabric.c) into isle_topo.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibnd_priv.h"

static int find_switch_linear(const isle_topo *t, const char *name)
{
	int i;

	for (i = 0; i < t->nswitches; i++)
		if (strcmp(t->switches[i].name, name) == 0)
			return i;
	return -1;
}

/* 1 if switch k is cabled to a switch of a higher level. */
static int has_higher(const isle_ibnd_fabric *f, int k)
{
	const struct isle_ibnd_node *n = &f->nodes[k];
	int j;

	for (j = 0; j < n->nlinks; j++) {
		const struct isle_ibnd_node *r = &f->nodes[n->links[j].peer];

		if (r->type == ISLE_IBND_SWITCH &&
		    r->level != ISLE_SW_UNKNOWN && r->level > n->level)
			return 1;
	}
	return 0;
}

/* Same-level cables (two spines tied together): the better-connected switch
 * is drawn above, ties by GUID, so that the model stays a DAG. */
static int above(const isle_ibnd_fabric *f, int a, int b)
{
	const struct isle_ibnd_node *x = &f->nodes[a], *y = &f->nodes[b];

	if (x->level != y->level)
		return x->level > y->level;
	if (x->nlinks != y->nlinks)
		return x->nlinks > y->nlinks;
	return x->guid < y->guid;
}

/*
 * A switch description an admin set on purpose ("leaf-r1", "ib-spine-03")
 * names the switch better than its GUID. Firmware defaults ("Voltaire 4036
 * - 36 QDR ports switch", "Mellanox Technologies
 * Aggregation Node", "MT4129 ...") have spaces or punctuation, so only one
 * word of [A-Za-z0-9._-] with a letter in it qualifies, and not a chip name
 * or something shaped like a dump id or a bare GUID.
 */
static int usable_switch_desc(const char *d)
{
	size_t len = strlen(d), i;
	int alpha = 0, hex = 1;

	if (len == 0 || len > 63 || d[0] == '-' || d[0] == '.')
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)d[i];

		if (!isalnum(c) && !strchr("._-", c))
			return 0;
		if (isalpha(c))
			alpha = 1;
		if (!isxdigit(c))
			hex = 0;
	}
	if (!alpha || hex || isle__ibnd_is_chip_name(d, len))
		return 0;
	if ((d[0] == 'S' || d[0] == 'H') && d[1] == '-')
		return 0;
	return 1;
}

/*
 * The name a switch's description gives it, or NULL. Managed NVIDIA
 * switches describe themselves as "MF0;HOSTNAME:MODEL/U1": the host name
 * is the admin's ("A09-P1-IBLEAF-04-04"), the rest firmware. *owned gets
 * a new string when the name is cut out of the description.
 */
static const char *desc_name(const struct isle_ibnd_node *n, char **owned)
{
	const char *d = n->desc, *colon;

	*owned = NULL;
	if (!strncmp(d, "MF0;", 4) && (colon = strchr(d + 4, ':'))) {
		*owned = strndup(d + 4, (size_t)(colon - d - 4));
		if (*owned && usable_switch_desc(*owned))
			return *owned;
		free(*owned);
		*owned = NULL;
		return NULL;
	}
	return usable_switch_desc(d) ? d : NULL;
}

/*
 * Names of the switches, by fabric node index: the name the description
 * gives (desc_name) where no other switch has it (nor as its dump id), else
 * the dump id. The strings belong to f, or to owned[] (freed by the caller,
 * NULL where unused).
 */
static int switch_names(const isle_ibnd_fabric *f, const char **names,
			char **owned)
{
	/* once: names seen; taken: seen twice, or a switch's id. */
	struct isle__index *once = isle__index_create();
	struct isle__index *taken = isle__index_create();
	const char **cand = calloc((size_t)f->nnodes + 1, sizeof(*cand));
	int i, rc = -ENOMEM;

	for (i = 0; i < f->nnodes; i++)
		owned[i] = NULL;
	if (!once || !taken || !cand)
		goto out;
	for (i = 0; i < f->nnodes; i++)
		if (f->nodes[i].type == ISLE_IBND_SWITCH &&
		    isle__index_put(taken, f->nodes[i].id, 1) == -ENOMEM)
			goto out;
	for (i = 0; i < f->nnodes; i++) {
		if (f->nodes[i].type != ISLE_IBND_SWITCH ||
		    !(cand[i] = desc_name(&f->nodes[i], &owned[i])))
			continue;
		rc = isle__index_put(once, cand[i], i);
		if (rc == -EEXIST)
			rc = isle__index_put(taken, cand[i], 1);
		if (rc == -ENOMEM)
			goto out;
	}
	for (i = 0; i < f->nnodes; i++) {
		names[i] = f->nodes[i].id;
		if (cand[i] && isle__index_get(taken, cand[i]) < 0)
			names[i] = cand[i];
	}
	rc = 0;
out:
	isle__index_destroy(once);
	isle__index_destroy(taken);
	free(cand);
	return rc;
}

/* Switch order in the model: by level from the leafs up, then by name in
 * natural order (rack2-leaf before rack10-leaf), not ibnetdiscover's walk
 * order, so that listings and tie-breaks read in the order of the room. */
struct sw_order {
	const isle_ibnd_fabric *f;
	const char **names;
};

static int cmp_switch(const void *a, const void *b, void *arg)
{
	const struct sw_order *o = arg;
	int x = *(const int *)a, y = *(const int *)b, c;

	if (o->f->nodes[x].level != o->f->nodes[y].level)
		return o->f->nodes[x].level < o->f->nodes[y].level ? -1 : 1;
	c = strverscmp(o->names[x], o->names[y]);
	return c ? c : (x > y) - (x < y);
}

/*
 * The part of the fabric a host subset uses: keep_host[i] for the host CAs
 * of the listed hosts, keep_sw[i] for the switches cabled to them and every
 * switch above those (the up-paths their traffic can take). Warns about
 * listed hosts the dump lacks; -ENOENT when it has none of them.
 */
static int select_hosts(const isle_ibnd_fabric *f, const char *list, char *keep,
			char *err, size_t errlen)
{
	struct isle__index *want = NULL, *seen = NULL;
	char **hosts = NULL, herr[256];
	int nhosts = 0, *queue = NULL, nq = 0, missing = 0, i, j, rc;

	rc = isle_hostlist_expand(list, &hosts, &nhosts, herr, sizeof(herr));
	if (rc)
		return isle__errf(rc, err, errlen, "--nodes '%s': %s", list,
				  herr);
	want = isle__index_create();
	seen = isle__index_create();
	queue = malloc((size_t)f->nnodes * sizeof(*queue) + 1);
	if (!want || !seen || !queue) {
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < nhosts; i++)
		isle__index_put(want, hosts[i], i);
	memset(keep, 0, (size_t)f->nnodes);
	for (i = 0; i < f->nnodes; i++) {
		const struct isle_ibnd_node *c = &f->nodes[i];

		if (!c->host || isle__index_get(want, c->host) < 0)
			continue;
		keep[i] = 1;
		isle__index_put(seen, c->host, i);
		for (j = 0; j < c->nlinks; j++) {
			int s = c->links[j].peer;

			if (f->nodes[s].type == ISLE_IBND_SWITCH && !keep[s]) {
				keep[s] = 1;
				queue[nq++] = s;
			}
		}
	}
	for (int q = 0; q < nq; q++) {
		const struct isle_ibnd_node *n = &f->nodes[queue[q]];

		for (j = 0; j < n->nlinks; j++) {
			int r = n->links[j].peer;

			if (f->nodes[r].type == ISLE_IBND_SWITCH && !keep[r] &&
			    above(f, r, queue[q])) {
				keep[r] = 1;
				queue[nq++] = r;
			}
		}
	}
	for (i = 0; i < nhosts; i++)
		missing += isle__index_get(seen, hosts[i]) < 0;
	if (missing == nhosts)
		rc = isle__errf(-ENOENT, err, errlen,
				"%s: none of the hosts of --nodes '%s' is in "
				"the dump",
				f->source, list);
	else if (missing)
		isle__warn("%s: %d of the %d hosts of --nodes are not in the "
			   "dump",
			   f->source, missing, nhosts);
out:
	isle_hostlist_free(hosts, nhosts);
	isle__index_destroy(want);
	isle__index_destroy(seen);
	free(queue);
	return rc;
}

static int to_topo(const isle_ibnd_fabric *f, const char *keep, isle_topo *t,
		   char *err, size_t errlen);

/*
 * Oversubscription from the cabling: what the leafs take in from their CAs
 * over what they send up (the spine tier), and what the spines below a core
 * take in from their leafs over what they send up (the core tier), summed
 * over the switches of that level. Rates where the dump gives them all,
 * else cable counts. Only a tier still at the default 1 is set; overrides
 * merged later win.
 */
static void derive_oversub(const isle_ibnd_fabric *f, const char *keep,
			   isle_topo *t)
{
	double down[2] = {0, 0}, up[2] = {0, 0};
	int counts = 0, pass, i, j;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < f->nnodes; i++) {
			const struct isle_ibnd_node *n = &f->nodes[i];
			double d = 0, u = 0;
			int k;

			if (n->type != ISLE_IBND_SWITCH || (keep && !keep[i]))
				continue;
			if (n->level == ISLE_SW_LEAF)
				k = 0;
			else if (n->level == ISLE_SW_SPINE)
				k = 1;
			else
				continue;
			for (j = 0; j < n->nlinks; j++) {
				int r = n->links[j].peer;
				double w = counts ? 1.0 : n->links[j].gbps;

				if (!counts && w <= 0) {
					counts = 1;
					break;
				}
				/* SHARP aggregation nodes live inside the
				 * switch and carry no host traffic. */
				if (f->nodes[r].type != ISLE_IBND_SWITCH) {
					if (k == 0 &&
					    f->nodes[r].kind !=
						ISLE_IBND_CA_AGGREGATION)
						d += w;
				} else if (above(f, r, i)) {
					u += w;
				} else if (k == 1 &&
					   f->nodes[r].level < n->level) {
					d += w;
				}
			}
			if (j < n->nlinks)
				break;
			if (u > 0 && d > 0) {
				down[k] += d;
				up[k] += u;
			}
		}
		if (i == f->nnodes)
			break;
		down[0] = down[1] = up[0] = up[1] = 0;
	}
	for (int k = 0; k < 2; k++) {
		struct isle_tier_param *p =
		    &t->tier[k ? ISLE_TIER_CORE : ISLE_TIER_SPINE];
		double ratio = up[k] > 0 ? down[k] / up[k] : 0;

		if (ratio >= 1.01 && p->oversub == 1.0)
			p->oversub = (double)(long)(ratio * 100 + 0.5) / 100;
	}
}

int isle_ibnd_to_topo(const isle_ibnd_fabric *f, isle_topo *t, char *err,
		      size_t errlen)
{
	return to_topo(f, NULL, t, err, errlen);
}

/* isle_ibnd_to_topo, for the fabric nodes keep[] marks (NULL: all). */
static int to_topo(const isle_ibnd_fabric *f, const char *keep, isle_topo *t,
		   char *err, size_t errlen)
{
	struct isle__index *nodes = NULL;
	const char **swname = NULL;
	char **owned = NULL;
	int *sw = NULL, *order = NULL, nsw = 0, rc = 0, i, j, k;
	long peer_links = 0;
	struct sw_order so;

	sw = malloc((size_t)f->nnodes * sizeof(*sw) + 1);
	order = malloc((size_t)f->nnodes * sizeof(*order) + 1);
	swname = malloc((size_t)f->nnodes * sizeof(*swname) + 1);
	owned = calloc((size_t)f->nnodes + 1, sizeof(*owned));
	nodes = isle__index_create();
	if (!sw || !order || !swname || !owned || !nodes ||
	    switch_names(f, swname, owned) < 0) {
		rc = isle__errf(-ENOMEM, err, errlen, "%s: out of memory",
				f->source);
		goto out;
	}
	for (i = 0; i < t->nnodes; i++)
		isle__index_put(nodes, t->nodes[i].name, i);
	for (i = 0; i < f->nnodes; i++) {
		sw[i] = -1;
		if (f->nodes[i].type == ISLE_IBND_SWITCH && (!keep || keep[i]))
			order[nsw++] = i;
	}
	so.f = f;
	so.names = swname;
	qsort_r(order, (size_t)nsw, sizeof(*order), cmp_switch, &so);

	for (k = 0; k < nsw; k++) {
		const struct isle_ibnd_node *n = &f->nodes[order[k]];

		i = order[k];
		rc = isle_topo_add_switch(t, swname[i], n->guid, n->level);
		if (rc == -EEXIST)
			rc = find_switch_linear(t, swname[i]);
		if (rc < 0) {
			rc = isle__errf(rc, err, errlen,
					"%s:%d: switch \"%s\": %s", f->source,
					n->line, swname[i], strerror(-rc));
			goto out;
		}
		sw[i] = rc;
		rc = isle_topo_set_switch(t, sw[i], n->rail,
					  isle__ibnd_max_gbps(n));
		if (rc < 0) {
			rc = isle__errf(rc, err, errlen,
					"%s:%d: switch \"%s\": %s", f->source,
					n->line, swname[i], strerror(-rc));
			goto out;
		}
	}
	for (k = 0; k < nsw; k++) {
		const struct isle_ibnd_node *n = &f->nodes[order[k]];

		i = order[k];
		for (j = 0; j < n->nlinks; j++) {
			int r = n->links[j].peer;

			if (sw[r] < 0 || !above(f, r, i))
				continue;
			/* Two leafs cabled to each other with nothing above
			 * (a small cluster, or planes tied together): the
			 * cable is their only path, so the one drawn above
			 * stands in for a spine and their nodes share a spine
			 * group. Said once per pair, at its first cable. */
			if (f->nodes[r].level == n->level &&
			    n->level == ISLE_SW_LEAF && !has_higher(f, i) &&
			    !has_higher(f, r)) {
				int first = 1, q;

				for (q = 0; q < j; q++)
					first &= n->links[q].peer != r;
				if (first)
					isle__warn(
					    "%s:%d: leafs %s and %s are cabled "
					    "to each other with no spine "
					    "above: "
					    "%s stands in for their spine",
					    f->source, n->links[j].line, n->id,
					    f->nodes[r].id, f->nodes[r].id);
			} else if (f->nodes[r].level == n->level) {
				peer_links++;
			}
			rc = isle_topo_link_switches(t, sw[r], sw[i]);
			if (rc < 0) {
				rc = isle__errf(
				    rc, err, errlen, "%s:%d: cable %s - %s: %s",
				    f->source, n->links[j].line, n->id,
				    f->nodes[r].id, strerror(-rc));
				goto out;
			}
		}
	}
	if (peer_links)
		isle__warn("%s: %ld cables join switches of the same level; "
			   "drawn as parent/child",
			   f->source, peer_links);

	for (i = 0; i < f->nnodes; i++) {
		const struct isle_ibnd_node *c = &f->nodes[i];
		struct isle_node *node;
		char nicname[32];
		const char *name;
		int nd, nic = -1;
		uint64_t guid;

		if (!c->host || (keep && !keep[i]))
			continue;
		nd = isle__index_get(nodes, c->host);
		if (nd < 0) {
			nd = isle_topo_add_node(t, c->host, 0);
			if (nd < 0) {
				rc = isle__errf(
				    nd, err, errlen, "%s:%d: host \"%s\": %s",
				    f->source, c->line, c->host, strerror(-nd));
				goto out;
			}
			isle__index_put(nodes, t->nodes[nd].name, nd);
		}
		node = &t->nodes[nd];
		guid = c->links[0].guid ? c->links[0].guid : c->guid;
		name = c->hca;
		if (!name[0]) {
			snprintf(nicname, sizeof(nicname), "hca%d", c->rail);
			name = nicname;
		}
		for (j = 0; j < node->nnics && nic < 0; j++)
			if ((guid && node->nics[j].guid == guid) ||
			    strcmp(node->nics[j].name, name) == 0)
				nic = j;
		if (nic < 0) {
			nic = isle_topo_add_nic(t, nd, name, guid, c->rail,
						isle__ibnd_max_gbps(c), -1);
			if (nic < 0) {
				rc = isle__errf(nic, err, errlen,
						"%s:%d: %s %s: %s", f->source,
						c->line, c->host, name,
						strerror(-nic));
				goto out;
			}
		} else {
			struct isle_nic *x = &t->nodes[nd].nics[nic];

			if (!x->guid)
				x->guid = guid;
			if (x->rail < 0)
				x->rail = c->rail;
			if (x->gbps <= 0)
				x->gbps = isle__ibnd_max_gbps(c);
		}
		for (j = 0; j < c->nlinks; j++) {
			int s = sw[c->links[j].peer];

			if (s < 0)
				continue;
			/* A NIC has one cable; a second connected port of
			 * the same CA is recorded for the node only. */
			rc = isle_topo_attach_node(t, s, nd, j == 0 ? nic : -1);
			if (rc < 0) {
				rc = isle__errf(
				    rc, err, errlen, "%s:%d: %s to %s: %s",
				    f->source, c->links[j].line, c->host,
				    t->switches[s].name, strerror(-rc));
				goto out;
			}
		}
	}
	derive_oversub(f, keep, t);
	if (f->naggregation || f->nanonymous)
		isle__warn("%s: %d aggregation nodes and %d anonymous CAs "
			   "excluded",
			   f->source, f->naggregation, f->nanonymous);
	rc = 0;
out:
	free(sw);
	free(order);
	free(swname);
	for (i = 0; owned && i < f->nnodes; i++)
		free(owned[i]);
	free(owned);
	isle__index_destroy(nodes);
	return rc;
}

int isle_ibnd_load_opts(isle_topo *t, const char *dump_path,
			const struct isle_ibnd_opts *opts, char *err,
			size_t errlen)
{
	isle_ibnd_fabric *f = NULL;
	char *keep = NULL;
	int rc;

	if (!t)
		return isle__errf(-EINVAL, err, errlen, "no model");
	rc = isle_ibnd_parse(dump_path, opts, &f, err, errlen);
	if (rc < 0)
		return rc;
	if (opts && opts->nodes) {
		keep = malloc((size_t)f->nnodes + 1);
		rc = keep ? select_hosts(f, opts->nodes, keep, err, errlen)
			  : isle__errf(-ENOMEM, err, errlen, "out of memory");
	}
	if (rc >= 0)
		rc = to_topo(f, keep, t, err, errlen);
	free(keep);
	isle_ibnd_fabric_destroy(f);
	return rc;
}

int isle_ibnd_load(isle_topo *t, const char *dump_path,
		   const char *guid_map_path, char *err, size_t errlen)
{
	/* A GUID map is the naming authority: CAs it leaves out are hosts
	 * under their dump id, not noise. */
	struct isle_ibnd_opts o = {
	    .guid_map = guid_map_path,
	    .flags = guid_map_path ? ISLE_IBND_KEEP_ANONYMOUS : 0,
	};

	return isle_ibnd_load_opts(t, dump_path, &o, err, errlen);
}
