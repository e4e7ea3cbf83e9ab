/*
 * ibnd_parse.c - reads `ibnetdiscover` text dumps (plain and -f output);
 * isle_ibnd_parse() then has ibnd_fabric.c classify the nodes.
 *
 * The dump is a list of node sections:
 *
 *   switchguid=0x8f10500200b50(8f10500200b50)
 *   Switch  36 "S-0008f10500200b50"  # "desc" enhanced port 0 lid 9 lmc 0
 *   [1]     "S-0008f10500108c5c"[15]  # "desc" lid 16 4xQDR
 *   [4]     "H-003048c749cd0000"[1](3048c749cd0001)  # "desc" lid 72 4xDDR
 *
 *   caguid=0x78e7d103002301dc
 *   Ca      1 "H-78e7d103002301dc"  # "host mlx5_0"
 *   [1](78e7d103002301dd)  "S-0008f105002036b4"[33]  # lid 14 lmc 0 "desc" lid
 * 10 4xQDR
 *
 * Every cable appears twice, once from each end. A dump is accepted only if
 * both ends agree, which is what catches truncated or garbled files: a
 * partial dump never yields a partial fabric.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibnd_priv.h"

struct parser {
	const char *path;
	int lineno;
	int started;	  /* saw the first line of the dump proper */
	int ended;	  /* a shell prompt after the dump: ignore the rest */
	uint64_t guid;	  /* from the last "switchguid=" / "caguid=" line */
	int cur;	  /* node whose port lines follow, -1 before any */
	char ***peer_ids; /* per node, per link: remote id until resolved */
	int cap_ids;
	isle_ibnd_fabric *f;
	char *err;
	size_t errlen;
};

/* Lane rates in Gb/s, as the IB specification names them. */
static const struct {
	const char *name;
	double gbps;
} lane_rates[] = {
    {"SDR", 2.5},    {"DDR", 5.0},   {"QDR", 10.0},
    {"FDR10", 10.0}, {"FDR", 14.0},  {"EDR", 25.0},
    {"HDR", 50.0},   {"NDR", 100.0}, {"XDR", 200.0},
};

static double lane_gbps(const char *speed)
{
	size_t i;

	for (i = 0; i < sizeof(lane_rates) / sizeof(lane_rates[0]); i++)
		if (strcmp(lane_rates[i].name, speed) == 0)
			return lane_rates[i].gbps;
	return 0.0;
}

static int perr(struct parser *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(struct parser *p, int rc, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return isle__errf(rc, p->err, p->errlen, "%s:%d: %s", p->path,
			  p->lineno, msg);
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Parses a decimal int at *s; advances *s. Returns 0 or -1. */
static int take_int(const char **s, int *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**s))
		return -1;
	errno = 0;
	v = strtol(*s, &end, 10);
	if (errno || v > 1000000)
		return -1;
	*out = (int)v;
	*s = end;
	return 0;
}

/* Parses a hex number (optional 0x) at *s; advances *s. */
static int take_hex(const char **s, uint64_t *out)
{
	const char *q = *s;
	char *end;

	if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	if (!isxdigit((unsigned char)*q))
		return -1;
	errno = 0;
	*out = strtoull(q, &end, 16);
	if (errno || end - q > 16)
		return -1;
	*s = end;
	return 0;
}

/* Parses "text" at *s into a new string; advances *s past the quote. */
static int take_quoted(const char **s, char **out)
{
	const char *q = *s, *end;

	if (*q != '"')
		return -1;
	end = strchr(q + 1, '"');
	if (!end)
		return -1;
	*out = strndup(q + 1, (size_t)(end - q - 1));
	if (!*out)
		return -ENOMEM;
	*s = end + 1;
	return 0;
}

/* Skips an optional "[ext N]" (ibnetdiscover -g external port). */
static void skip_ext(const char **s)
{
	const char *q = *s;
	int n;

	if (strncmp(q, "[ext ", 5) != 0)
		return;
	q += 5;
	if (take_int(&q, &n) == 0 && *q == ']')
		*s = q + 1;
}

/* Parses "(hexguid)" if present. */
static int take_paren_guid(const char **s, uint64_t *out)
{
	const char *q = *s;

	if (*q != '(')
		return 0;
	q++;
	if (take_hex(&q, out) < 0 || *q != ')')
		return -1;
	*s = q + 1;
	return 0;
}

/* Finds "lid N" at *s (after optional spaces) and parses it. */
static int take_lid(const char **s, int *lid)
{
	const char *q = skip_ws(*s);

	if (strncmp(q, "lid ", 4) != 0)
		return -1;
	q += 4;
	if (take_int(&q, lid) < 0)
		return -1;
	*s = q;
	return 0;
}

/* Parses a "4xNDR" link token: width and speed. Returns 0 or -1. */
static int parse_rate(const char *tok, struct isle_ibnd_port *pt)
{
	const char *q = tok;
	int width;
	size_t n;

	if (take_int(&q, &width) < 0 || *q != 'x' || width < 1 || width > 32)
		return -1;
	q++;
	n = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	if (n == 0 || n >= sizeof(pt->speed) ||
	    (q[n] && q[n] != ' ' && q[n] != '\t'))
		return -1;
	pt->width = width;
	memcpy(pt->speed, q, n);
	pt->speed[n] = '\0';
	pt->gbps = width * lane_gbps(pt->speed);
	return 0;
}

static int add_node(struct parser *p, isle_ibnd_type type, int nports, char *id,
		    char *desc)
{
	isle_ibnd_fabric *f = p->f;
	struct isle_ibnd_node *n;
	int idx = f->nnodes, rc, prev;
	const char *q;

	prev = isle__index_get(f->id_idx, id);
	if (prev >= 0) {
		rc =
		    perr(p, -EINVAL, "duplicate node \"%s\" (first at line %d)",
			 id, f->nodes[prev].line);
		goto fail;
	}
	rc = isle__grow((void **)&f->nodes, &f->cap_nodes, idx + 1,
			sizeof(*f->nodes));
	if (rc == 0)
		rc = isle__grow((void **)&p->peer_ids, &p->cap_ids, idx + 1,
				sizeof(*p->peer_ids));
	if (rc < 0) {
		rc = perr(p, rc, "out of memory");
		goto fail;
	}
	p->peer_ids[idx] = NULL;
	n = &f->nodes[idx];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->id = id;
	n->desc = desc;
	n->nports = nports;
	n->lid = -1;
	n->line = p->lineno;
	n->rail = -1;
	n->level = ISLE_SW_UNKNOWN;
	n->guid = p->guid;
	/* Without a guid= line, the id itself carries the GUID: "S-<hex>". */
	q = id + 2;
	if (!n->guid && id[0] && id[1] == '-')
		take_hex(&q, &n->guid);
	p->guid = 0;
	f->nnodes++;
	rc = isle__index_put(f->id_idx, n->id, idx);
	if (rc < 0)
		return perr(p, rc, "out of memory");
	p->cur = idx;
	return 0;
fail:
	free(id);
	free(desc);
	return rc;
}

/* Switch  36 "S-..."  # "desc" enhanced port 0 lid 9 lmc 0 */
static int parse_header(struct parser *p, const char *line)
{
	isle_ibnd_type type;
	const char *s = line;
	char *id = NULL, *desc = NULL;
	int nports, rc, lid = -1;

	if (strncmp(s, "Switch", 6) == 0) {
		type = ISLE_IBND_SWITCH;
		s += 6;
	} else if (strncmp(s, "Ca", 2) == 0) {
		type = ISLE_IBND_CA;
		s += 2;
	} else {
		type = ISLE_IBND_ROUTER;
		s += 2;
	}
	s = skip_ws(s);
	if (take_int(&s, &nports) < 0 || nports < 1 || nports > 255)
		return perr(p, -EINVAL, "bad port count in node header");
	s = skip_ws(s);
	rc = take_quoted(&s, &id);
	if (rc < 0 || !*id) {
		free(id);
		return perr(p, rc == -ENOMEM ? rc : -EINVAL,
			    "node header without a quoted node id");
	}
	s = skip_ws(s);
	if (*s == '#') {
		s = skip_ws(s + 1);
		if (*s == '"' && take_quoted(&s, &desc) < 0) {
			free(id);
			return perr(p, -EINVAL,
				    "unterminated node description");
		}
		/* Switches: "enhanced port 0 lid 9 lmc 0" */
		const char *l = strstr(s, "lid ");
		if (l)
			take_lid(&l, &lid);
	} else if (*s) {
		free(id);
		return perr(p, -EINVAL, "unexpected text after node id");
	}
	if (!desc)
		desc = strdup("");
	if (!desc) {
		free(id);
		return perr(p, -ENOMEM, "out of memory");
	}
	rc = add_node(p, type, nports, id, desc);
	if (rc == 0)
		p->f->nodes[p->cur].lid = lid;
	return rc;
}

/*
 * [1]	"H-e09d..."[1](e09d...)  # "a08-p1-dgx-04-c01 mlx5_5" lid 647 4xNDR
 * [1](78e7...)  "S-0008..."[33]  # lid 14 lmc 0 "desc" lid 10 4xQDR s=4 w=2 v=4
 */
static int parse_port(struct parser *p, const char *line)
{
	struct isle_ibnd_node *n;
	struct isle_ibnd_port pt = {0};
	const char *s = line + 1;
	char *peer = NULL, *rdesc = NULL, **ids;
	uint64_t rguid = 0;
	int rc, i, lid;

	if (p->cur < 0)
		return perr(p, -EINVAL, "port line before any node header");
	n = &p->f->nodes[p->cur];
	if (take_int(&s, &pt.port) < 0 || *s != ']')
		return perr(p, -EINVAL, "bad local port number");
	s++;
	skip_ext(&s);
	if (take_paren_guid(&s, &pt.guid) < 0)
		return perr(p, -EINVAL, "bad port GUID");
	s = skip_ws(s);
	rc = take_quoted(&s, &peer);
	if (rc == -ENOMEM)
		return perr(p, rc, "out of memory");
	if (rc < 0)
		return perr(p, -EINVAL, "port %d: %s", pt.port,
			    *s == '"'
				? "unterminated remote node id (truncated "
				  "line?)"
				: "no quoted remote node id");
	if (*s != '[' || (s++, take_int(&s, &pt.peer_port)) < 0 || *s != ']') {
		rc = perr(p, -EINVAL, "port %d: bad remote port number",
			  pt.port);
		goto out;
	}
	s++;
	skip_ext(&s);
	if (take_paren_guid(&s, &rguid) < 0) {
		rc = perr(p, -EINVAL, "port %d: bad remote port GUID", pt.port);
		goto out;
	}
	s = skip_ws(s);
	if (*s == '#') {
		s = skip_ws(s + 1);
		/* CA ports first give their own LID: "lid 14 lmc 0". */
		if (strncmp(s, "lid ", 4) == 0 && take_lid(&s, &lid) == 0) {
			n->lid = lid;
			s = skip_ws(s);
			if (strncmp(s, "lmc ", 4) == 0) {
				s += 4;
				take_int(&s, &lid);
			}
			s = skip_ws(s);
		}
		if (*s == '"' && take_quoted(&s, &rdesc) < 0) {
			rc = perr(p, -EINVAL,
				  "port %d: unterminated description", pt.port);
			goto out;
		}
		if (take_lid(&s, &lid) == 0) {
			s = skip_ws(s);
			if (isdigit((unsigned char)*s) &&
			    parse_rate(s, &pt) < 0) {
				rc = perr(p, -EINVAL,
					  "port %d: bad link rate \"%.16s\"",
					  pt.port, s);
				goto out;
			}
		}
	} else if (*s) {
		rc = perr(p, -EINVAL, "port %d: unexpected text \"%.24s\"",
			  pt.port, s);
		goto out;
	}
	if (pt.port < 1 || pt.port > n->nports) {
		rc = perr(p, -EINVAL, "port %d out of range 1..%d of \"%s\"",
			  pt.port, n->nports, n->id);
		goto out;
	}
	for (i = 0; i < n->nlinks; i++) {
		if (n->links[i].port == pt.port) {
			rc = perr(p, -EINVAL, "port %d of \"%s\" listed twice",
				  pt.port, n->id);
			goto out;
		}
	}
	pt.line = p->lineno;
	pt.peer = -1;
	/* Links are few per node; grow by one, the dump is read once. */
	struct isle_ibnd_port *nl =
	    realloc(n->links, (n->nlinks + 1) * sizeof(*nl));
	ids = realloc(p->peer_ids[p->cur], (n->nlinks + 1) * sizeof(*ids));
	if (nl)
		n->links = nl;
	if (ids)
		p->peer_ids[p->cur] = ids;
	if (!nl || !ids) {
		rc = perr(p, -ENOMEM, "out of memory");
		goto out;
	}
	n->links[n->nlinks] = pt;
	ids[n->nlinks] = peer;
	peer = NULL;
	n->nlinks++;
	rc = 0;
out:
	free(peer);
	free(rdesc);
	return rc;
}

static int is_header(const char *s)
{
	return strncmp(s, "Switch", 6) == 0 ||
	       ((strncmp(s, "Ca", 2) == 0 || strncmp(s, "Rt", 2) == 0) &&
		(s[2] == ' ' || s[2] == '\t'));
}

/*
 * "key=value" lines: vendid=, devid=, sysimgguid=, and the node GUID of the
 * next header (switchguid=, caguid=, rtguid=). Other keys a newer
 * ibnetdiscover may print are skipped. Returns 1 if s was one.
 */
static int parse_keyval(struct parser *p, const char *s)
{
	static const char *const guid_keys[] = {
	    "switchguid=", "caguid=", "rtguid="};
	size_t i, n = strspn(s, "abcdefghijklmnopqrstuvwxyz_");

	if (n == 0 || s[n] != '=' || strpbrk(s, " \t"))
		return 0;
	for (i = 0; i < sizeof(guid_keys) / sizeof(guid_keys[0]); i++) {
		if (strncmp(s, guid_keys[i], n + 1) == 0) {
			const char *q = s + n + 1;

			if (take_hex(&q, &p->guid) < 0)
				return perr(p, -EINVAL, "bad GUID in \"%s\"",
					    s);
			return 1;
		}
	}
	return 1;
}

/*
 * A shell prompt, as in a terminal session pasted around the dump:
 * "root@head:~# ", "[alice@login1 ~]$ exit", "bash-5.1$". Port and header
 * lines always quote a node id, so a line with a quote is never one.
 */
static int is_prompt(const char *s)
{
	size_t n = strcspn(s, "$#%>");

	if (!s[n] || (s[n + 1] && s[n + 1] != ' ') || strchr(s, '"') || n > 64)
		return 0;
	if (n == 0) /* "$ ", "> "; "# ..." is the dump's own comment */
		return s[0] != '#';
	return memchr(s, '@', n) || s[n - 1] == ']' || s[n - 1] == '~' ||
	       strncmp(s, "bash", 4) == 0 || strncmp(s, "sh-", 3) == 0;
}

static int parse_line(struct parser *p, char *line)
{
	size_t len = strlen(line);
	const char *s;
	int rc;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
		       line[len - 1] == ' ' || line[len - 1] == '\t'))
		line[--len] = '\0';
	s = skip_ws(line);
	if (!*s || p->ended)
		return 0;
	/* ibnetdiscover's own complaints, when stderr went into the file. */
	if (strncmp(s, "ibwarn:", 7) == 0 ||
	    strncmp(s, "ibnetdiscover:", 14) == 0 ||
	    strncmp(s, "ibpanic:", 8) == 0) {
		isle__warn("%s:%d: skipping a message of ibnetdiscover: "
			   "\"%.60s\"",
			   p->path, p->lineno, s);
		return 0;
	}
	if (p->started && is_prompt(s)) {
		/* The end of a pasted terminal session; a dump cut short
		 * before it still fails the cable check. */
		isle__warn("%s:%d: the dump ends at a shell prompt: \"%.40s\"",
			   p->path, p->lineno, s);
		p->ended = 1;
		return 0;
	}
	if (*s == '#') {
		/* The dump opens with "# Topology file: ...". */
		if (strstr(s, "Topology file"))
			p->started = 1;
		return 0;
	}
	rc = parse_keyval(p, s);
	if (rc != 0) {
		p->started = 1;
		return rc < 0 ? rc : 0;
	}
	if (is_header(s)) {
		p->started = 1;
		return parse_header(p, s);
	}
	if (*s == '[' && p->started)
		return parse_port(p, s);
	if (!p->started) {
		isle__warn("%s:%d: skipping a line before the dump: \"%.40s\"",
			   p->path, p->lineno, s);
		return 0;
	}
	return perr(p, -EINVAL, "unrecognized line \"%.40s\" (garbled dump?)",
		    s);
}

/* Resolves remote ids and checks that both ends of every cable agree. */
static int check_links(struct parser *p)
{
	isle_ibnd_fabric *f = p->f;
	int i, j, k;

	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *n = &f->nodes[i];

		if (n->nlinks == 0) {
			p->lineno = n->line;
			return perr(p, -EINVAL,
				    "\"%s\" has no connected port (truncated "
				    "dump?)",
				    n->id);
		}
		for (j = 0; j < n->nlinks; j++) {
			struct isle_ibnd_port *pt = &n->links[j];
			const char *peer = p->peer_ids[i][j];

			pt->peer = isle__index_get(f->id_idx, peer);
			if (pt->peer < 0) {
				p->lineno = pt->line;
				return perr(p, -EINVAL,
					    "port %d links to \"%s\", which is "
					    "not in the dump (truncated dump?)",
					    pt->port, peer);
			}
		}
	}
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *n = &f->nodes[i];

		for (j = 0; j < n->nlinks; j++) {
			struct isle_ibnd_port *pt = &n->links[j];
			struct isle_ibnd_node *r = &f->nodes[pt->peer];
			struct isle_ibnd_port *back = NULL;

			for (k = 0; k < r->nlinks; k++)
				if (r->links[k].port == pt->peer_port)
					back = &r->links[k];
			if (!back || back->peer != i ||
			    back->peer_port != pt->port) {
				p->lineno = pt->line;
				return perr(p, -EINVAL,
					    "\"%s\"[%d] -> \"%s\"[%d] is not "
					    "listed back from \"%s\" (garbled "
					    "dump?)",
					    n->id, pt->port, r->id,
					    pt->peer_port, r->id);
			}
			if (i < pt->peer ||
			    (i == pt->peer && pt->port < pt->peer_port))
				f->nlinks++;
		}
	}
	return 0;
}

static int cmp_port(const void *a, const void *b)
{
	const struct isle_ibnd_port *x = a, *y = b;

	return (x->port > y->port) - (x->port < y->port);
}

static int ibnd_read(const char *path, isle_ibnd_fabric **out, char *err,
		     size_t errlen)
{
	struct parser p = {
	    .path = path, .cur = -1, .err = err, .errlen = errlen};
	isle_ibnd_fabric *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	FILE *fp = NULL;
	int rc, i, j;

	*out = NULL;
	fp = fopen(path, "r");
	if (!fp) {
		rc = -errno;
		return isle__errf(rc, err, errlen, "%s: %s", path,
				  strerror(-rc));
	}
	f = calloc(1, sizeof(*f));
	if (f)
		f->id_idx = isle__index_create();
	if (f)
		f->source = strdup(path);
	if (!f || !f->id_idx || !f->source) {
		rc =
		    isle__errf(-ENOMEM, err, errlen, "%s: out of memory", path);
		goto out;
	}
	p.f = f;
	while (getline(&line, &cap, fp) >= 0) {
		p.lineno++;
		rc = parse_line(&p, line);
		if (rc < 0)
			goto out;
	}
	if (ferror(fp)) {
		rc = perr(&p, -EIO, "read error");
		goto out;
	}
	if (f->nnodes == 0) {
		rc = isle__errf(-EINVAL, err, errlen,
				"%s: no switch or CA found (not an "
				"ibnetdiscover dump?)",
				path);
		goto out;
	}
	rc = check_links(&p);
	if (rc < 0)
		goto out;
	for (i = 0; i < f->nnodes; i++) {
		struct isle_ibnd_node *n = &f->nodes[i];

		qsort(n->links, (size_t)n->nlinks, sizeof(*n->links), cmp_port);
		if (n->type == ISLE_IBND_SWITCH)
			f->nswitches++;
		else if (n->type == ISLE_IBND_CA)
			f->ncas++;
		else
			f->nrouters++;
	}
	*out = f;
	f = NULL;
out:
	if (p.peer_ids) {
		for (i = 0; i < p.f->nnodes; i++) {
			for (j = 0; p.peer_ids[i] && j < p.f->nodes[i].nlinks;
			     j++)
				free(p.peer_ids[i][j]);
			free(p.peer_ids[i]);
		}
		free(p.peer_ids);
	}
	isle_ibnd_fabric_destroy(f);
	free(line);
	fclose(fp);
	return rc;
}

void isle_ibnd_fabric_destroy(isle_ibnd_fabric *f)
{
	int i;

	if (!f)
		return;
	for (i = 0; i < f->nnodes; i++) {
		free(f->nodes[i].id);
		free(f->nodes[i].desc);
		free(f->nodes[i].host);
		free(f->nodes[i].hca);
		free(f->nodes[i].links);
	}
	free(f->nodes);
	isle__index_destroy(f->id_idx);
	free(f->source);
	free(f);
}

int isle_ibnd_find(const isle_ibnd_fabric *f, const char *id)
{
	return f ? isle__index_get(f->id_idx, id) : -1;
}

int isle_ibnd_parse(const char *dump_path, const struct isle_ibnd_opts *opts,
		    isle_ibnd_fabric **out, char *err, size_t errlen)
{
	struct isle_ibnd_opts none = {0};
	struct isle__ibnd_keymap map = {0}, spines = {0};
	isle_ibnd_fabric *f = NULL;
	int rc;

	*out = NULL;
	if (!opts)
		opts = &none;
	if (!dump_path)
		return isle__errf(-EINVAL, err, errlen, "no dump file given");
	if (opts->guid_map) {
		rc = isle__ibnd_keymap_read(&map, opts->guid_map, 1, err,
					    errlen);
		if (rc < 0)
			goto out;
	}
	if (opts->spine_map) {
		rc = isle__ibnd_keymap_read(&spines, opts->spine_map, 0, err,
					    errlen);
		if (rc < 0)
			goto out;
	}
	rc = ibnd_read(dump_path, &f, err, errlen);
	if (rc < 0)
		goto out;
	rc = isle__ibnd_classify(f, &map, &spines, opts->flags);
	if (rc < 0) {
		isle__errf(rc, err, errlen, "%s: out of memory", dump_path);
		goto out;
	}
	isle__ibnd_report_anonymous(f);
	*out = f;
	f = NULL;
out:
	isle_ibnd_fabric_destroy(f);
	isle__ibnd_keymap_free(&map);
	isle__ibnd_keymap_free(&spines);
	return rc;
}
