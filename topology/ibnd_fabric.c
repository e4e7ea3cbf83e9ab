/*
 * ibnd_fabric.c - makes sense of a parsed ibnetdiscover dump: which CAs are
 * hosts and on which rail, which switches are leafs, spines and cores; the
 * canonical summary used by the golden tests (ibnd_topo.c has the step into
 * isle_topo; ibnd_parse.c runs the reader and these steps).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibnd_priv.h"

/* --- GUID map and spine list ---------------------------------------------- */

void isle__ibnd_keymap_free(struct isle__ibnd_keymap *m)
{
	int i;

	for (i = 0; i < m->n; i++) {
		free(m->keys[i]);
		free(m->vals[i]);
	}
	free(m->keys);
	free(m->vals);
	isle__index_destroy(m->idx);
	memset(m, 0, sizeof(*m));
}

static void guid_key(char *buf, size_t len, uint64_t guid)
{
	snprintf(buf, len, "0x%016" PRIx64, guid);
}

/* Normalizes a key: hex GUIDs become "0x%016x", dump ids stay. */
static char *norm_key(const char *tok)
{
	char buf[24], *end;
	const char *q = tok;
	uint64_t g;

	if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	if (*q && strlen(q) <= 16) {
		g = strtoull(q, &end, 16);
		if (*end == '\0') {
			guid_key(buf, sizeof(buf), g);
			return strdup(buf);
		}
	}
	return strdup(tok);
}

int isle__ibnd_keymap_read(struct isle__ibnd_keymap *m, const char *path,
			   int need_value, char *err, size_t errlen)
{
	char *line = NULL, *key = NULL, *val = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0, prev;
	FILE *fp;

	fp = fopen(path, "r");
	if (!fp) {
		rc = -errno;
		return isle__errf(rc, err, errlen, "%s: %s", path,
				  strerror(-rc));
	}
	m->idx = isle__index_create();
	if (!m->idx) {
		rc =
		    isle__errf(-ENOMEM, err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (getline(&line, &cap, fp) >= 0) {
		char *s = line, *k, *v;
		size_t len;

		lineno++;
		s[strcspn(s, "\r\n")] = '\0';
		s += strspn(s, " \t");
		if (!*s || *s == '#')
			continue;
		k = s;
		len = strcspn(k, " \t");
		v = k + len;
		v += strspn(v, " \t");
		k[len] = '\0';
		/* node-name-map style values are quoted: 0x... "host hca" */
		if (*v == '"') {
			char *e = strrchr(v + 1, '"');

			if (!e) {
				rc = isle__errf(-EINVAL, err, errlen,
						"%s:%d: unterminated quote",
						path, lineno);
				goto out;
			}
			*e = '\0';
			v++;
		} else {
			v[strcspn(v, "#")] = '\0';
		}
		len = strlen(v);
		while (len && isspace((unsigned char)v[len - 1]))
			v[--len] = '\0';
		if (need_value && !*v) {
			rc = isle__errf(-EINVAL, err, errlen,
					"%s:%d: expected \"GUID hostname\"",
					path, lineno);
			goto out;
		}
		key = norm_key(k);
		val = strdup(v);
		if (!key || !val ||
		    isle__grow((void **)&m->keys, &m->cap, m->n + 1,
			       sizeof(*m->keys)) < 0 ||
		    !(m->vals = realloc(m->vals, m->cap * sizeof(*m->vals)))) {
			rc = isle__errf(-ENOMEM, err, errlen,
					"%s: out of memory", path);
			goto out;
		}
		prev = isle__index_get(m->idx, key);
		if (prev >= 0) {
			/* Later lines win, as in ibnetdiscover's name map. */
			isle__warn("%s:%d: \"%s\" listed again", path, lineno,
				   k);
			free(m->vals[prev]);
			m->vals[prev] = val;
			val = NULL;
			free(key);
			key = NULL;
			continue;
		}
		m->keys[m->n] = key;
		m->vals[m->n] = val;
		rc = isle__index_put(m->idx, key, m->n);
		key = val = NULL;
		m->n++;
		if (rc < 0) {
			rc = isle__errf(rc, err, errlen, "%s: out of memory",
					path);
			goto out;
		}
	}
	rc = 0;
out:
	free(key);
	free(val);
	free(line);
	fclose(fp);
	return rc;
}

/* Finds a node in a keymap by dump id, node GUID or any port GUID. */
static int keymap_find(const struct isle__ibnd_keymap *m,
		       const struct isle_ibnd_node *n)
{
	char buf[24];
	int i, v;

	if (!m->idx)
		return -1;
	v = isle__index_get(m->idx, n->id);
	if (v >= 0)
		return v;
	if (n->guid) {
		guid_key(buf, sizeof(buf), n->guid);
		v = isle__index_get(m->idx, buf);
		if (v >= 0)
			return v;
	}
	for (i = 0; i < n->nlinks; i++) {
		if (!n->links[i].guid)
			continue;
		guid_key(buf, sizeof(buf), n->links[i].guid);
		v = isle__index_get(m->idx, buf);
		if (v >= 0)
			return v;
	}
	return -1;
}

/* --- Classification ------------------------------------------------------- */

/* Firmware default descriptions start with the chip: "MT4129 ConnectX7 ..." */
int isle__ibnd_is_chip_name(const char *tok, size_t len)
{
	size_t i;

	if (len < 3 || tok[0] != 'M' || tok[1] != 'T')
		return 0;
	for (i = 2; i < len; i++)
		if (!isdigit((unsigned char)tok[i]))
			return 0;
	return 1;
}

/*
 * Linux sets a CA's description to "<hostname> <device>" (e.g.
 * "a08-p1-dgx-04-c17 mlx5_5"); sites sometimes keep only the host name.
 * Anything longer is a firmware default and names no host.
 */
static int desc_host(const char *desc, char **host, char **hca, int any_host)
{
	const char *t1, *t2;
	size_t l1, l2;

	t1 = desc + strspn(desc, " \t");
	l1 = strcspn(t1, " \t");
	if (l1 == 0 || isle__ibnd_is_chip_name(t1, l1))
		return 0;
	/* An unset host name tells two machines apart no better than none. */
	if (!any_host && l1 >= 9 && strncmp(t1, "localhost", 9) == 0 &&
	    (l1 == 9 || t1[9] == '.'))
		return 0;
	t2 = t1 + l1;
	t2 += strspn(t2, " \t");
	l2 = strcspn(t2, " \t");
	if (t2[l2 + strspn(t2 + l2, " \t")] != '\0')
		return 0; /* three or more words */
	*host = strndup(t1, l1);
	*hca = strndup(t2, l2);
	if (!*host || !*hca) {
		free(*host);
		free(*hca);
		*host = *hca = NULL;
		return -ENOMEM;
	}
	return 1;
}

static int classify_ca(isle_ibnd_fabric *f, struct isle_ibnd_node *n,
		       const struct isle__ibnd_keymap *map, unsigned flags)
{
	int v = keymap_find(map, n), rc;

	n->kind = ISLE_IBND_CA_ANONYMOUS;
	if (v >= 0) {
		const char *val = map->vals[v];
		size_t l = strcspn(val, " \t");
		char *dh = NULL, *dhca = NULL;

		n->kind = ISLE_IBND_CA_HOST;
		n->host = strndup(val, l);
		val += l;
		val += strspn(val, " \t");
		if (*val) {
			n->hca = strdup(val);
		} else if (desc_host(n->desc, &dh, &dhca, 1) > 0) {
			n->hca = dhca;
			dhca = NULL;
		} else {
			n->hca = strdup("");
		}
		free(dh);
		free(dhca);
		return n->host && n->hca ? 0 : -ENOMEM;
	}
	if (strstr(n->desc, "Aggregation Node")) {
		n->kind = ISLE_IBND_CA_AGGREGATION;
		f->naggregation++;
		return 0;
	}
	rc = desc_host(n->desc, &n->host, &n->hca, 0);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		n->kind = ISLE_IBND_CA_HOST;
		return 0;
	}
	if (flags & ISLE_IBND_KEEP_ANONYMOUS) {
		n->kind = ISLE_IBND_CA_HOST;
		n->host = strdup(n->id);
		n->hca = strdup("");
		return n->host && n->hca ? 0 : -ENOMEM;
	}
	f->nanonymous++;
	return 0;
}

/* "mlx5_12" -> prefix length 5, number 12; no trailing digits: -1. */
static void split_hca(const char *name, size_t *plen, long *num)
{
	size_t len = strlen(name), i = len;

	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	*plen = i;
	*num = i < len ? strtol(name + i, NULL, 10) : -1;
}

static int cmp_hca(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t px, py;
	long nx, ny;
	int c;

	split_hca(x, &px, &nx);
	split_hca(y, &py, &ny);
	c = strncmp(x, y, px < py ? px : py);
	if (c || px != py)
		return c ? c : (px > py) - (px < py);
	if (nx != ny)
		return (nx > ny) - (nx < ny);
	return strcmp(x, y);
}

static int same_family(const char *x, const char *y)
{
	size_t px, py;
	long n;

	split_hca(x, &px, &n);
	split_hca(y, &py, &n);
	return px == py && strncmp(x, y, px) == 0;
}

/*
 * Rails: the rank of an HCA name among the names of its family across the
 * fabric ("mlx5_0 mlx5_1 mlx5_4 mlx5_5" -> rails 0-3, and so are
 * "HCA-1 HCA-2 HCA-5 HCA-6"). Ranking fabric-wide rather than per host keeps
 * a host with a missing cable on the right rails.
 */
static int assign_rails(isle_ibnd_fabric *f)
{
	const char **names;
	int n = 0, i, j, k, rank;

	names = malloc((size_t)f->nnodes * sizeof(*names) + 1);
	if (!names)
		return -ENOMEM;
	for (i = 0; i < f->nnodes; i++)
		if (f->nodes[i].host && f->nodes[i].hca[0])
			names[n++] = f->nodes[i].hca;
	qsort(names, (size_t)n, sizeof(*names), cmp_hca);
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *c = &f->nodes[i];

		if (!c->host || !c->hca[0])
			continue;
		rank = -1;
		for (j = 0; j < n; j++) {
			if (!same_family(names[j], c->hca))
				continue;
			if (j == 0 || strcmp(names[j], names[j - 1]) != 0 ||
			    !same_family(names[j - 1], c->hca))
				rank++;
			if (strcmp(names[j], c->hca) == 0)
				break;
		}
		c->rail = rank;
		if (rank + 1 > f->nrails)
			f->nrails = rank + 1;
	}
	/* Unnamed HCAs: by port GUID within their host. */
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *c = &f->nodes[i];

		if (!c->host || c->hca[0])
			continue;
		c->rail = 0;
		for (k = 0; k < f->nnodes; k++) {
			struct isle_ibnd_node *o = &f->nodes[k];

			if (o != c && o->host && !o->hca[0] &&
			    strcmp(o->host, c->host) == 0 && o->guid < c->guid)
				c->rail++;
		}
		if (c->rail + 1 > f->nrails)
			f->nrails = c->rail + 1;
	}
	free(names);
	return 0;
}

/*
 * Levels: a leaf has host (or anonymous) CAs cabled to it and is not on the
 * spine list; every other switch is ranked by its distance from the nearest
 * leaf: 1 = spine, more = core. SHARP aggregation nodes sit inside every
 * switch and say nothing about its level.
 */
static int assign_levels(isle_ibnd_fabric *f,
			 const struct isle__ibnd_keymap *spines)
{
	int *dist, *queue, head = 0, tail = 0, i, j;

	dist = malloc((size_t)f->nnodes * sizeof(*dist));
	queue = malloc((size_t)f->nnodes * sizeof(*queue));
	if (!dist || !queue) {
		free(dist);
		free(queue);
		return -ENOMEM;
	}
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *n = &f->nodes[i];
		int edge = 0;

		dist[i] = -1;
		if (n->type != ISLE_IBND_SWITCH)
			continue;
		for (j = 0; j < n->nlinks; j++) {
			struct isle_ibnd_node *r = &f->nodes[n->links[j].peer];

			if (r->type != ISLE_IBND_CA ||
			    r->kind == ISLE_IBND_CA_AGGREGATION)
				continue;
			edge = 1;
			if (r->host)
				n->nhosts++;
		}
		if (edge && keymap_find(spines, n) < 0) {
			dist[i] = 0;
			queue[tail++] = i;
		}
	}
	while (head < tail) {
		struct isle_ibnd_node *n = &f->nodes[queue[head]];
		int d = dist[queue[head++]];

		for (j = 0; j < n->nlinks; j++) {
			int r = n->links[j].peer;

			if (f->nodes[r].type == ISLE_IBND_SWITCH &&
			    dist[r] < 0) {
				dist[r] = d + 1;
				queue[tail++] = r;
			}
		}
	}
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *n = &f->nodes[i];

		if (n->type != ISLE_IBND_SWITCH)
			continue;
		if (dist[i] == 0)
			n->level = ISLE_SW_LEAF;
		else if (dist[i] == 1)
			n->level = ISLE_SW_SPINE;
		else if (dist[i] > 1)
			n->level = ISLE_SW_CORE;
		else
			n->level = keymap_find(spines, n) >= 0
				       ? ISLE_SW_SPINE
				       : ISLE_SW_UNKNOWN;
		f->nlevel[n->level]++;
	}
	free(dist);
	free(queue);
	return 0;
}

/*
 * The rail of a rail-optimized leaf is the rail most of its hosts use. A
 * host on another rail is either a management server or a crossed cable
 * (HCA-5 and HCA-6 swapped); both are worth a look, so warn. Only a CA's
 * first connected port carries its rail: the second port of a dual-port
 * HCA on another switch (a dual-plane fabric) says nothing about rails.
 */
static int rail_port(const isle_ibnd_fabric *f, int sw,
		     const struct isle_ibnd_port *l)
{
	const struct isle_ibnd_node *c = &f->nodes[l->peer];

	return c->nlinks && c->links[0].peer == sw &&
	       c->links[0].port == l->peer_port;
}

static int assign_switch_rails(isle_ibnd_fabric *f)
{
	int *count, i, j;

	if (f->nrails < 2)
		return 0;
	count = malloc((size_t)f->nrails * sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *s = &f->nodes[i];
		int total = 0, best = -1;

		if (s->type != ISLE_IBND_SWITCH || s->level != ISLE_SW_LEAF)
			continue;
		memset(count, 0, (size_t)f->nrails * sizeof(*count));
		for (j = 0; j < s->nlinks; j++) {
			const struct isle_ibnd_node *c =
			    &f->nodes[s->links[j].peer];

			if (c->host && c->rail >= 0 &&
			    rail_port(f, i, &s->links[j])) {
				count[c->rail]++;
				total++;
			}
		}
		for (j = 0; j < f->nrails; j++)
			if (best < 0 || count[j] > count[best])
				best = j;
		if (total == 0 || 2 * count[best] <= total)
			continue;
		s->rail = best;
		for (j = 0; j < s->nlinks; j++) {
			const struct isle_ibnd_node *c =
			    &f->nodes[s->links[j].peer];

			if (c->host && c->rail >= 0 && c->rail != best &&
			    rail_port(f, i, &s->links[j]))
				isle__warn("%s:%d: %s %s (rail %d) is cabled "
					   "to %s, a rail %d leaf (crossed "
					   "cable?)",
					   f->source, s->links[j].line, c->host,
					   c->hca, c->rail, s->id, best);
		}
	}
	free(count);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_host_hca(const void *a, const void *b)
{
	const struct isle_ibnd_node *x =
	    *(const struct isle_ibnd_node *const *)a;
	const struct isle_ibnd_node *y =
	    *(const struct isle_ibnd_node *const *)b;
	int c = strcmp(x->host, y->host);

	return c ? c : strcmp(x->hca, y->hca);
}

/* Counts hosts; two CAs claiming the same "host hca" are two machines with
 * one name (cloned images), which the model cannot tell apart: warn. */
static int count_hosts(isle_ibnd_fabric *f)
{
	const struct isle_ibnd_node **v;
	int n = 0, i;

	v = malloc((size_t)f->nnodes * sizeof(*v) + 1);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->nnodes; i++)
		if (f->nodes[i].host)
			v[n++] = &f->nodes[i];
	f->nhost_cas = n;
	qsort(v, (size_t)n, sizeof(*v), cmp_host_hca);
	f->nhosts = 0;
	for (i = 0; i < n; i++) {
		if (i == 0 || strcmp(v[i]->host, v[i - 1]->host) != 0)
			f->nhosts++;
		else if (v[i]->hca[0] && strcmp(v[i]->hca, v[i - 1]->hca) == 0)
			isle__warn("%s:%d: \"%s %s\" also at line %d: two "
				   "machines with one name?",
				   f->source, v[i]->line, v[i]->host, v[i]->hca,
				   v[i - 1]->line);
	}
	free(v);
	return 0;
}

int isle__ibnd_classify(isle_ibnd_fabric *f,
			const struct isle__ibnd_keymap *map,
			const struct isle__ibnd_keymap *spines, unsigned flags)
{
	int rc = 0, i;

	for (i = 0; i < f->nnodes && rc == 0; i++)
		if (f->nodes[i].type == ISLE_IBND_CA)
			rc = classify_ca(f, &f->nodes[i], map, flags);
	if (rc == 0)
		rc = assign_rails(f);
	if (rc == 0)
		rc = assign_levels(f, spines);
	if (rc == 0)
		rc = assign_switch_rails(f);
	if (rc == 0)
		rc = count_hosts(f);
	return rc;
}

/* Anonymous CAs reported one per line, then a count of the rest. */
#define ANON_REPORT_MAX 32

/*
 * An HCA whose description is still the firmware default (the host never
 * set one: no driver loaded, or an old OFED) cannot be tied to a host.
 * Its node GUID and where it is cabled are what an admin needs to name it
 * in a GUID map, so each one is reported with the map line to add.
 */
void isle__ibnd_report_anonymous(const isle_ibnd_fabric *f)
{
	int i, shown = 0;

	for (i = 0; i < f->nnodes; i++) {
		const struct isle_ibnd_node *n = &f->nodes[i];
		const struct isle_ibnd_node *sw;

		if (n->type != ISLE_IBND_CA ||
		    n->kind != ISLE_IBND_CA_ANONYMOUS || n->host)
			continue;
		if (shown++ == ANON_REPORT_MAX)
			continue;
		sw = n->nlinks ? &f->nodes[n->links[0].peer] : NULL;
		isle__warn("%s:%d: anonymous HCA %s, node GUID 0x%016" PRIx64
			   " (\"%.48s\"), cabled to %s[%d]: name it with a "
			   "GUID map line \"0x%016" PRIx64 " HOST HCA\"",
			   f->source, n->line, n->id, n->guid, n->desc,
			   sw ? sw->id : "-",
			   n->nlinks ? n->links[0].peer_port : 0, n->guid);
	}
	if (shown > ANON_REPORT_MAX)
		isle__warn("%s: %d more anonymous HCAs not listed", f->source,
			   shown - ANON_REPORT_MAX);
}

/* --- Summary -------------------------------------------------------------- */

/* Distinct switch neighbours of n on one side ("up", "down" or "peer"). */
static void put_neighbours(FILE *o, const isle_ibnd_fabric *f,
			   const struct isle_ibnd_node *n, int side,
			   const char **buf)
{
	int i, k = 0;

	for (i = 0; i < n->nlinks; i++) {
		const struct isle_ibnd_node *r = &f->nodes[n->links[i].peer];
		int s;

		if (r->type != ISLE_IBND_SWITCH)
			continue;
		s = (r->level > n->level) - (r->level < n->level);
		if (s == side)
			buf[k++] = r->id;
	}
	qsort(buf, (size_t)k, sizeof(*buf), cmp_str);
	for (i = 0; i < k; i++)
		if (i == 0 || strcmp(buf[i], buf[i - 1]) != 0)
			fprintf(o, "%s%s", i ? "," : "", buf[i]);
	if (k == 0)
		fputc('-', o);
}

static int cmp_node_id(const void *a, const void *b)
{
	const struct isle_ibnd_node *x =
	    *(const struct isle_ibnd_node *const *)a;
	const struct isle_ibnd_node *y =
	    *(const struct isle_ibnd_node *const *)b;

	return strcmp(x->id, y->id);
}

static int cmp_host_ca(const void *a, const void *b)
{
	const struct isle_ibnd_node *x =
	    *(const struct isle_ibnd_node *const *)a;
	const struct isle_ibnd_node *y =
	    *(const struct isle_ibnd_node *const *)b;
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->rail != y->rail)
		return (x->rail > y->rail) - (x->rail < y->rail);
	return strcmp(x->id, y->id);
}

double isle__ibnd_max_gbps(const struct isle_ibnd_node *n)
{
	double g = 0;
	int i;

	for (i = 0; i < n->nlinks; i++)
		if (n->links[i].gbps > g)
			g = n->links[i].gbps;
	return g;
}

char *isle_ibnd_summary(const isle_ibnd_fabric *f)
{
	const struct isle_ibnd_node **v = NULL;
	const char **nb = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *o;
	int i, j, k, n;

	o = open_memstream(&buf, &len);
	if (!o)
		return NULL;
	v = malloc((size_t)f->nnodes * sizeof(*v) + 1);
	nb = malloc(256 * sizeof(*nb));
	if (!v || !nb)
		goto fail;
	fprintf(o, "# isle ibnetdiscover summary v1\n");
	fprintf(o, "switches %d leaf %d spine %d core %d unknown %d\n",
		f->nswitches, f->nlevel[ISLE_SW_LEAF], f->nlevel[ISLE_SW_SPINE],
		f->nlevel[ISLE_SW_CORE], f->nlevel[ISLE_SW_UNKNOWN]);
	fprintf(o, "cas %d host_cas %d hosts %d aggregation %d anonymous %d\n",
		f->ncas, f->nhost_cas, f->nhosts, f->naggregation,
		f->nanonymous);
	fprintf(o, "routers %d links %ld rails %d\n", f->nrouters, f->nlinks,
		f->nrails);

	for (i = n = 0; i < f->nnodes; i++)
		if (f->nodes[i].type == ISLE_IBND_SWITCH)
			v[n++] = &f->nodes[i];
	qsort(v, (size_t)n, sizeof(*v), cmp_node_id);
	for (i = 0; i < n; i++) {
		const struct isle_ibnd_node *s = v[i];
		int cas = 0;

		for (j = 0; j < s->nlinks; j++)
			if (f->nodes[s->links[j].peer].host)
				cas++;
		fprintf(o,
			"switch %s %s ports %d links %d gbps %g hosts %d "
			"host_cas %d",
			s->id, isle_sw_level_name(s->level), s->nports,
			s->nlinks, isle__ibnd_max_gbps(s), s->nhosts, cas);
		if (s->rail >= 0)
			fprintf(o, " rail %d", s->rail);
		fputs(" up ", o);
		/* A switch has at most 255 ports, so nb fits its links. */
		put_neighbours(o, f, s, 1, nb);
		fputs(" down ", o);
		put_neighbours(o, f, s, -1, nb);
		fputs(" peer ", o);
		put_neighbours(o, f, s, 0, nb);
		fprintf(o, " desc \"%s\"\n", s->desc);
	}

	for (i = n = 0; i < f->nnodes; i++)
		if (f->nodes[i].host)
			v[n++] = &f->nodes[i];
	qsort(v, (size_t)n, sizeof(*v), cmp_host_ca);
	for (i = 0; i < n; i = k) {
		fprintf(o, "host %s", v[i]->host);
		for (k = i; k < n && strcmp(v[k]->host, v[i]->host) == 0; k++) {
			const struct isle_ibnd_node *c = v[k];

			fprintf(o, " %s:rail%d", c->hca[0] ? c->hca : c->id,
				c->rail);
			for (j = 0; j < c->nlinks; j++) {
				const struct isle_ibnd_port *pt = &c->links[j];

				fprintf(o, ":%s[%d]:%dx%s",
					f->nodes[pt->peer].id, pt->peer_port,
					pt->width,
					pt->speed[0] ? pt->speed : "?");
			}
		}
		fputc('\n', o);
	}
	free(v);
	free(nb);
	if (fclose(o) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
fail:
	free(v);
	free(nb);
	fclose(o);
	free(buf);
	return NULL;
}
