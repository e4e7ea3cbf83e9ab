/*
 * json_save.c - writes the model as a cluster file.
 *
 * A hand-rolled writer rather than json-c's pretty printer: the file is kept
 * under version control, so its layout is fixed and diff-friendly (one GPU,
 * NIC or switch per line, NVLinks one line per GPU, node lists as Slurm host
 * lists) and the output of load -> save is byte-identical every time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo_priv.h"

struct out {
	char *s;
	size_t len, cap;
	int oom;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 1 << 16;
		char *p;

		while (cap < o->len + n + 1)
			cap *= 2;
		p = realloc(o->s, cap);
		if (!p) {
			o->oom = 1;
			return;
		}
		o->s = p;
		o->cap = cap;
	}
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
putf(struct out *o, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(o, buf,
		    (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void put_str(struct out *o, const char *s)
{
	put(o, "\"", 1);
	while (*s) {
		size_t run = 0;

		/* Copy plain runs at once; escape quotes, backslashes,
		 * controls. */
		while (s[run] && s[run] != '"' && s[run] != '\\' &&
		       (unsigned char)s[run] >= 0x20)
			run++;
		put(o, s, run);
		s += run;
		if (!*s)
			break;
		if (*s == '"' || *s == '\\')
			putf(o, "\\%c", *s);
		else
			putf(o, "\\u%04x", (unsigned char)*s);
		s++;
	}
	put(o, "\"", 1);
}

static void put_int(struct out *o, long long v)
{
	char buf[24], *p = buf + sizeof(buf);
	unsigned long long u =
	    v < 0 ? -(unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	put(o, p, (size_t)(buf + sizeof(buf) - p));
}

/* Shortest text that reads back as the same double. */
static void put_num(struct out *o, double v)
{
	char buf[64];

	if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
		put_int(o, (long long)v);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	puts_(o, buf);
}

/* Writes *sep, then "key": ; later members of the object get ", ". */
static void field(struct out *o, const char **sep, const char *k)
{
	puts_(o, *sep);
	put_str(o, k);
	puts_(o, ": ");
	*sep = ", ";
}

/* A member after the first: , "key": */
static void key(struct out *o, const char *k)
{
	const char *sep = ", ";

	field(o, &sep, k);
}

static void put_guid(struct out *o, uint64_t guid)
{
	if (guid) {
		key(o, "guid");
		putf(o, "\"0x%016" PRIx64 "\"", guid);
	}
}

/* A node list as an array of compressed Slurm host lists. */
static void put_nodes(struct out *o, const isle_topo *t, const int *idx, int n)
{
	const char **names = malloc((size_t)(n ? n : 1) * sizeof(char *));
	char *list;

	if (!names) {
		o->oom = 1;
		return;
	}
	for (int i = 0; i < n; i++)
		names[i] = t->nodes[idx[i]].name;
	list = isle_hostlist_compress(names, n);
	free(names);
	if (!list) {
		o->oom = 1;
		return;
	}
	puts_(o, "[");
	if (*list)
		put_str(o, list);
	puts_(o, "]");
	free(list);
}

static void put_tiers(struct out *o, const isle_topo *t)
{
	puts_(o, ",\n  \"tiers\": {");
	for (int k = 0; k < ISLE_TIER_COUNT; k++) {
		const struct isle_tier_param *p = &t->tier[k];

		putf(o, "%s\n    ", k ? "," : "");
		put_str(o, isle_tier_name(k));
		puts_(o, ": {\"bw_gbps\": ");
		put_num(o, p->bw_gbps);
		puts_(o, ", \"lat_us\": ");
		put_num(o, p->lat_us);
		puts_(o, ", \"oversub\": ");
		put_num(o, p->oversub);
		puts_(o, "}");
	}
	puts_(o, "\n  }");
}

static int gpu_has_details(const struct isle_gpu *g)
{
	return g->bus_id || g->model || g->numa >= 0 || g->nic >= 0;
}

/* The link count shared by every GPU pair, or 0 (NVSwitch systems have
 * one; the file then says "nvlink_all" instead of listing the pairs). */
static int uniform_nvlinks(const struct isle_node *n)
{
	int c = n->ngpus >= 2 ? n->nvlinks[1] : 0;

	for (int a = 0; c && a < n->ngpus; a++)
		for (int b = a + 1; b < n->ngpus; b++)
			if (n->nvlinks[a * n->ngpus + b] != c)
				return 0;
	return c;
}

static void put_node(struct out *o, const isle_topo *t,
		     const struct isle_node *n)
{
	int details = 0, first, all;

	puts_(o, "    {\n      \"name\": ");
	put_str(o, n->name);
	if (n->rack >= 0) {
		puts_(o, ",\n      \"rack\": ");
		put_str(o, t->racks[n->rack].name);
	}
	for (int g = 0; g < n->ngpus; g++)
		details |= gpu_has_details(&n->gpus[g]);
	if (!details) {
		putf(o, ",\n      \"gpus\": %d", n->ngpus);
	} else {
		puts_(o, ",\n      \"gpus\": [");
		for (int g = 0; g < n->ngpus; g++) {
			const struct isle_gpu *gp = &n->gpus[g];
			const char *sep = "";

			puts_(o, g ? ",\n        {" : "\n        {");
			if (gp->bus_id) {
				field(o, &sep, "bus_id");
				put_str(o, gp->bus_id);
			}
			if (gp->model) {
				field(o, &sep, "model");
				put_str(o, gp->model);
			}
			if (gp->numa >= 0) {
				field(o, &sep, "numa");
				put_int(o, gp->numa);
			}
			if (gp->nic >= 0) {
				field(o, &sep, "nic");
				put_str(o, n->nics[gp->nic].name);
			}
			puts_(o, "}");
		}
		puts_(o, "\n      ]");
	}
	all = uniform_nvlinks(n);
	if (all > 0)
		putf(o, ",\n      \"nvlink_all\": %d", all);
	first = 1;
	for (int a = 0; all <= 0 && a < n->ngpus; a++) {
		int row = 1;

		for (int b = a + 1; b < n->ngpus; b++) {
			int c = n->nvlinks[a * n->ngpus + b];

			if (!c)
				continue;
			if (first)
				puts_(o, ",\n      \"nvlinks\": [\n        ");
			else if (row)
				puts_(o, ",\n        ");
			else
				puts_(o, ", ");
			putf(o, "[%d, %d, %d]", a, b, c);
			first = row = 0;
		}
	}
	if (!first)
		puts_(o, "\n      ]");
	if (n->nnics) {
		puts_(o, ",\n      \"nics\": [");
		for (int k = 0; k < n->nnics; k++) {
			const struct isle_nic *c = &n->nics[k];

			puts_(o, k ? ",\n        {\"name\": "
				   : "\n        {\"name\": ");
			put_str(o, c->name);
			put_guid(o, c->guid);
			if (c->rail >= 0) {
				key(o, "rail");
				put_int(o, c->rail);
			}
			if (c->sw >= 0) {
				key(o, "switch");
				put_str(o, t->switches[c->sw].name);
			}
			if (c->numa >= 0) {
				key(o, "numa");
				put_int(o, c->numa);
			}
			if (c->gbps > 0) {
				key(o, "gbps");
				put_num(o, c->gbps);
			}
			puts_(o, "}");
		}
		puts_(o, "\n      ]");
	}
	puts_(o, "\n    }");
}

/* Nodes cabled to switch sw without a NIC naming it (those are written
 * with the NIC). */
static int plain_nodes(const isle_topo *t, int sw, int *out)
{
	const struct isle_switch *s = &t->switches[sw];
	int n = 0;

	for (int i = 0; i < s->nnodes; i++) {
		const struct isle_node *nd = &t->nodes[s->nodes[i]];
		int k;

		for (k = 0; k < nd->nnics && nd->nics[k].sw != sw; k++)
			;
		if (k == nd->nnics)
			out[n++] = s->nodes[i];
	}
	return n;
}

static void put_switch(struct out *o, const isle_topo *t, int sw, int *tmp)
{
	const struct isle_switch *s = &t->switches[sw];
	int n;

	puts_(o, "    {\"name\": ");
	put_str(o, s->name);
	put_guid(o, s->guid);
	key(o, "level");
	put_str(o, isle_sw_level_name(s->level));
	if (s->rail >= 0) {
		key(o, "rail");
		putf(o, "%d", s->rail);
	}
	if (s->gbps > 0) {
		key(o, "gbps");
		put_num(o, s->gbps);
	}
	if (s->ndown) {
		key(o, "switches");
		puts_(o, "[");
		for (int k = 0; k < s->ndown; k++) {
			if (k)
				puts_(o, ", ");
			put_str(o, t->switches[s->down[k]].name);
		}
		puts_(o, "]");
	}
	n = plain_nodes(t, sw, tmp);
	if (n) {
		key(o, "nodes");
		put_nodes(o, t, tmp, n);
	}
	puts_(o, "}");
}

char *isle_topo_to_json(const isle_topo *t)
{
	struct out o = {0};
	int *tmp = NULL, ndomains = 0;

	if (!t)
		return NULL;
	putf(&o, "{\n  \"version\": %d", ISLE_TOPO_SCHEMA_VERSION);
	if (t->name) {
		puts_(&o, ",\n  \"name\": ");
		put_str(&o, t->name);
	}
	put_tiers(&o, t);

	puts_(&o, ",\n  \"nodes\": [");
	for (int i = 0; i < t->nnodes; i++) {
		puts_(&o, i ? ",\n" : "\n");
		put_node(&o, t, &t->nodes[i]);
	}
	puts_(&o, t->nnodes ? "\n  ]" : "]");

	for (int i = 0; i < t->nislands; i++)
		ndomains += t->islands[i].multi_node;
	if (ndomains) {
		puts_(&o, ",\n  \"domains\": [");
		for (int i = 0, d = 0; i < t->nislands; i++) {
			const struct isle_island *is = &t->islands[i];

			if (!is->multi_node)
				continue;
			puts_(&o,
			      d++ ? ",\n    {\"name\": " : "\n    {\"name\": ");
			put_str(&o, is->name);
			key(&o, "nodes");
			put_nodes(&o, t, is->nodes, is->nnodes);
			if (is->bw_gbps > 0) {
				key(&o, "bw_gbps");
				put_num(&o, is->bw_gbps);
			}
			puts_(&o, "}");
		}
		puts_(&o, "\n  ]");
	}

	if (t->nracks) {
		puts_(&o, ",\n  \"racks\": [");
		for (int i = 0; i < t->nracks; i++) {
			puts_(&o, i ? ", " : "");
			put_str(&o, t->racks[i].name);
		}
		puts_(&o, "]");
	}

	if (t->nswitches) {
		tmp = malloc((size_t)(t->nnodes ? t->nnodes : 1) * sizeof(int));
		if (!tmp)
			o.oom = 1;
		puts_(&o, ",\n  \"switches\": [");
		for (int i = 0; tmp && i < t->nswitches; i++) {
			puts_(&o, i ? ",\n" : "\n");
			put_switch(&o, t, i, tmp);
		}
		puts_(&o, "\n  ]");
		free(tmp);
	}
	puts_(&o, "\n}\n");
	if (o.oom) {
		free(o.s);
		return NULL;
	}
	return o.s;
}

/* Names the loader would refuse make a file that cannot be read back. */
static int check_names(const isle_topo *t, const char *path, char *err,
		       size_t errlen)
{
	for (int i = 0; i < t->nnodes; i++)
		if (isle__bad_name_char(t->nodes[i].name))
			return isle__errf(
			    -EINVAL, err, errlen,
			    "%s: node name '%s' has character "
			    "'%c' that cluster files do not allow",
			    path, t->nodes[i].name,
			    isle__bad_name_char(t->nodes[i].name));
	for (int i = 0; i < t->nswitches; i++)
		if (isle__bad_name_char(t->switches[i].name))
			return isle__errf(
			    -EINVAL, err, errlen,
			    "%s: switch name '%s' has character "
			    "'%c' that cluster files do not allow",
			    path, t->switches[i].name,
			    isle__bad_name_char(t->switches[i].name));
	/* A NIC's name can come from an ibnetdiscover node description. */
	for (int i = 0; i < t->nnodes; i++)
		for (int k = 0; k < t->nodes[i].nnics; k++)
			if (isle__bad_name_char(t->nodes[i].nics[k].name))
				return isle__errf(
				    -EINVAL, err, errlen,
				    "%s: node %s: NIC name '%s' has character "
				    "'%c' that cluster files do not allow",
				    path, t->nodes[i].name,
				    t->nodes[i].nics[k].name,
				    isle__bad_name_char(
					t->nodes[i].nics[k].name));
	return 0;
}

int isle_topo_save(const isle_topo *t, const char *path, char *err,
		   size_t errlen)
{
	char *json = NULL;
	int rc;

	rc = check_names(t, path, err, errlen);
	if (rc)
		return rc;
	json = isle_topo_to_json(t);
	if (!json)
		return isle__errf(-ENOMEM, err, errlen, "%s: out of memory",
				  path);
	/* Cluster files are configuration: readable like any other. */
	rc = isle_write_file(path, json, strlen(json), 0644, err, errlen);
	free(json);
	return rc;
}
