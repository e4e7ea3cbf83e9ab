/*
 * ibnd_fabric.c - makes sense of a parsed ibnetdiscover dump: which CAs are
 * hosts and on which rail, which switches are leafs, spines and cores; the
 * canonical summary used by the golden tests; and the step into isle_topo.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibnd_priv.h"

/* --- GUID map and spine list ---------------------------------------------- */

/*
 * A name list read from a file: "key [value...]" lines, '#' comments. Keys
 * are dump ids ("H-0002c903...") or GUIDs ("0x0002c903..."), normalized so
 * that either spelling finds a node.
 */
struct keymap {
	int n, cap;
	char **keys;
	char **vals;
	struct isle__index *idx;
};

static void keymap_free(struct keymap *m)
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

static int keymap_read(struct keymap *m, const char *path, int need_value,
		       char *err, size_t errlen)
{
	char *line = NULL, *key = NULL, *val = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0, prev;
	FILE *fp;

	fp = fopen(path, "r");
	if (!fp) {
		rc = -errno;
		return isle__err(rc, err, errlen, "%s: %s", path,
				 strerror(-rc));
	}
	m->idx = isle__index_create();
	if (!m->idx) {
		rc = isle__err(-ENOMEM, err, errlen, "%s: out of memory", path);
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
				rc = isle__err(-EINVAL, err, errlen,
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
			rc = isle__err(-EINVAL, err, errlen,
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
			rc = isle__err(-ENOMEM, err, errlen,
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
			rc = isle__err(rc, err, errlen, "%s: out of memory",
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
static int keymap_find(const struct keymap *m, const struct isle_ibnd_node *n)
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

/* --- Classification ----------------------------------------------------- */

/* Firmware default descriptions start with the chip: "MT4129 ConnectX7 ..." */
static int is_chip_name(const char *tok, size_t len)
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
	if (l1 == 0 || is_chip_name(t1, l1))
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
		       const struct keymap *map, unsigned flags)
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
static int assign_levels(isle_ibnd_fabric *f, const struct keymap *spines)
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

/* Anonymous CAs reported one per line, then a count of the rest. */
#define ANON_REPORT_MAX 32

/*
 * An HCA whose description is still the firmware default (the host never
 * set one: no driver loaded, or an old OFED) cannot be tied to a host.
 * Its node GUID and where it is cabled are what an admin needs to name it
 * in a GUID map, so each one is reported with the map line to add.
 */
static void report_anonymous(const isle_ibnd_fabric *f)
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

int isle_ibnd_parse(const char *dump_path, const struct isle_ibnd_opts *opts,
		    isle_ibnd_fabric **out, char *err, size_t errlen)
{
	struct isle_ibnd_opts none = {0};
	struct keymap map = {0}, spines = {0};
	isle_ibnd_fabric *f = NULL;
	int rc, i;

	*out = NULL;
	if (!opts)
		opts = &none;
	if (!dump_path)
		return isle__err(-EINVAL, err, errlen, "no dump file given");
	if (opts->guid_map) {
		rc = keymap_read(&map, opts->guid_map, 1, err, errlen);
		if (rc < 0)
			goto out;
	}
	if (opts->spine_map) {
		rc = keymap_read(&spines, opts->spine_map, 0, err, errlen);
		if (rc < 0)
			goto out;
	}
	rc = isle__ibnd_read(dump_path, &f, err, errlen);
	if (rc < 0)
		goto out;
	for (i = 0; i < f->nnodes && rc == 0; i++)
		if (f->nodes[i].type == ISLE_IBND_CA)
			rc = classify_ca(f, &f->nodes[i], &map, opts->flags);
	if (rc == 0)
		rc = assign_rails(f);
	if (rc == 0)
		rc = assign_levels(f, &spines);
	if (rc == 0)
		rc = assign_switch_rails(f);
	if (rc == 0)
		rc = count_hosts(f);
	if (rc < 0) {
		isle__err(rc, err, errlen, "%s: out of memory", dump_path);
		goto out;
	}
	report_anonymous(f);
	*out = f;
	f = NULL;
out:
	isle_ibnd_fabric_destroy(f);
	keymap_free(&map);
	keymap_free(&spines);
	return rc;
}

/* --- Summary ------------------------------------------------------------ */

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

static double max_gbps(const struct isle_ibnd_node *n)
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
			s->nlinks, max_gbps(s), s->nhosts, cas);
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

/* --- Into the cluster model ---------------------------------------------- */

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
	if (!alpha || hex || is_chip_name(d, len))
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
		return isle__err(rc, err, errlen, "--nodes '%s': %s", list,
				 herr);
	want = isle__index_create();
	seen = isle__index_create();
	queue = malloc((size_t)f->nnodes * sizeof(*queue) + 1);
	if (!want || !seen || !queue) {
		rc = isle__err(-ENOMEM, err, errlen, "out of memory");
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
		rc = isle__err(-ENOENT, err, errlen,
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
		rc = isle__err(-ENOMEM, err, errlen, "%s: out of memory",
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
			rc = isle__err(rc, err, errlen,
				       "%s:%d: switch \"%s\": %s", f->source,
				       n->line, swname[i], strerror(-rc));
			goto out;
		}
		sw[i] = rc;
		rc = isle_topo_set_switch(t, sw[i], n->rail, max_gbps(n));
		if (rc < 0) {
			rc = isle__err(rc, err, errlen,
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
				rc = isle__err(
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
				rc = isle__err(
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
						max_gbps(c), -1);
			if (nic < 0) {
				rc = isle__err(nic, err, errlen,
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
				x->gbps = max_gbps(c);
		}
		for (j = 0; j < c->nlinks; j++) {
			int s = sw[c->links[j].peer];

			if (s < 0)
				continue;
			/* A NIC has one cable; a second connected port of
			 * the same CA is recorded for the node only. */
			rc = isle_topo_attach_node(t, s, nd, j == 0 ? nic : -1);
			if (rc < 0) {
				rc = isle__err(
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
		return isle__err(-EINVAL, err, errlen, "no model");
	rc = isle_ibnd_parse(dump_path, opts, &f, err, errlen);
	if (rc < 0)
		return rc;
	if (opts && opts->nodes) {
		keep = malloc((size_t)f->nnodes + 1);
		rc = keep ? select_hosts(f, opts->nodes, keep, err, errlen)
			  : isle__err(-ENOMEM, err, errlen, "out of memory");
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
