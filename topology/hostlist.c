/*
 * hostlist.c - Slurm-style host lists: "gpu[01-04,07],login1" <-> names.
 *
 * Compression follows Slurm's hostlist_uniq() + hostlist_ranged_string():
 * a name splits into a prefix and its trailing digits; names sort by prefix
 * (natural order), then by digit width, then by number; runs of consecutive
 * numbers with compatible zero padding collapse into "a-b" and all numbered
 * names of one prefix share one bracket.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

/* Longest digit suffix treated as a number (fits an unsigned long). */
#define MAX_SUFFIX_DIGITS 18

/* --- Expansion ----------------------------------------------------------- */

struct names {
	char **v;
	int n, cap;
};

static int names_push(struct names *nm, char *s)
{
	if (!s)
		return -ENOMEM;
	if (nm->n >= ISLE_HOSTLIST_MAX) {
		free(s);
		return -ERANGE;
	}
	if (isle__grow((void **)&nm->v, &nm->cap, nm->n + 1, sizeof(char *))) {
		free(s);
		return -ENOMEM;
	}
	nm->v[nm->n++] = s;
	return 0;
}

/* Parses an unsigned decimal number of at most MAX_SUFFIX_DIGITS digits. */
static const char *parse_num(const char *p, unsigned long *val, int *width)
{
	const char *s = p;

	*val = 0;
	while (isdigit((unsigned char)*p) && p - s < MAX_SUFFIX_DIGITS)
		*val = *val * 10 + (unsigned long)(*p++ - '0');
	if (p == s || isdigit((unsigned char)*p))
		return NULL;
	*width = (int)(p - s);
	return p;
}

/*
 * Expands one host expression (no top-level comma) of length len: text with
 * any number of bracket groups. Recursion walks the groups left to right,
 * with prefix holding the text expanded so far.
 */
static int expand_one(const char *expr, const char *p, const char *end,
		      char *prefix, size_t plen, struct names *nm, char *err,
		      size_t errlen)
{
	const char *open = memchr(p, '[', (size_t)(end - p));
	const char *close, *q;
	size_t tlen;
	int rc;

	tlen = (size_t)((open ? open : end) - p);
	if (plen + tlen + 24 >= 1024)
		return isle__errf(-EINVAL, err, errlen,
				  "'%s': host name too long", expr);
	memcpy(prefix + plen, p, tlen);
	plen += tlen;
	if (memchr(p, ']', tlen))
		return isle__errf(-EINVAL, err, errlen, "'%s': unmatched ']'",
				  expr);
	if (!open) {
		if (!plen)
			return isle__errf(-EINVAL, err, errlen,
					  "'%s': empty host name", expr);
		return names_push(nm, strndup(prefix, plen));
	}
	close = memchr(open, ']', (size_t)(end - open));
	if (!close)
		return isle__errf(-EINVAL, err, errlen, "'%s': missing ']'",
				  expr);
	for (q = open + 1; q < close;) {
		unsigned long lo, hi;
		int wlo, whi;

		q = parse_num(q, &lo, &wlo);
		if (!q)
			goto bad_range;
		hi = lo;
		if (*q == '-') {
			q = parse_num(q + 1, &hi, &whi);
			if (!q || hi < lo)
				goto bad_range;
		}
		if (q < close && *q != ',')
			goto bad_range;
		if (hi - lo >= ISLE_HOSTLIST_MAX)
			return isle__errf(-ERANGE, err, errlen,
					  "'%s': range too large", expr);
		for (unsigned long v = lo; v <= hi; v++) {
			int m = snprintf(prefix + plen, 24, "%0*lu", wlo, v);

			rc = expand_one(expr, close + 1, end, prefix,
					plen + (size_t)m, nm, err, errlen);
			if (rc)
				return rc;
		}
		if (q < close)
			q++;
		if (q == close && q[-1] == ',')
			goto bad_range;
	}
	if (close == open + 1)
		goto bad_range;
	return 0;
bad_range:
	return isle__errf(-EINVAL, err, errlen,
			  "'%s': bad range '%.*s' (want [a-b,c,...])", expr,
			  (int)(close - open + 1), open);
}

void isle_hostlist_free(char **names, int n)
{
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int isle_hostlist_expand(const char *expr, char ***names, int *n, char *err,
			 size_t errlen)
{
	struct names nm = {0};
	char prefix[1024];
	const char *p = expr;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if (!expr)
		return isle__errf(-EINVAL, err, errlen, "no host list");
	while (*p && !rc) {
		const char *end = p;
		int depth = 0;

		if (*p == ',' || isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		/* A top-level comma or blank ends the expression. */
		for (; *end; end++) {
			if (*end == '[')
				depth++;
			else if (*end == ']')
				depth--;
			else if (!depth &&
				 (*end == ',' || isspace((unsigned char)*end)))
				break;
			if (depth < 0 || depth > 1)
				break;
		}
		if (depth != 0) {
			rc = isle__errf(-EINVAL, err, errlen, "'%s': %s", expr,
					depth < 0   ? "unmatched ']'"
					: depth > 1 ? "nested '['"
						    : "missing ']'");
			break;
		}
		rc = expand_one(expr, p, end, prefix, 0, &nm, err, errlen);
		p = end;
	}
	if (rc == -ERANGE)
		isle__errf(rc, err, errlen, "'%s': more than %d hosts", expr,
			   ISLE_HOSTLIST_MAX);
	else if (rc == -ENOMEM)
		isle__errf(rc, err, errlen, "out of memory");
	if (rc) {
		isle_hostlist_free(nm.v, nm.n);
		return rc;
	}
	*names = nm.v;
	*n = nm.n;
	return 0;
}

/* --- Compression --------------------------------------------------------- */

struct host {
	const char *name;
	size_t plen;	   /* prefix length */
	int single;	   /* no numeric suffix */
	int width;	   /* digits of the suffix */
	unsigned long num; /* suffix value */
};

/* Byte i of a length-bounded string, 0 past its end. */
static int at(const char *s, size_t n, size_t i)
{
	return i < n ? (unsigned char)s[i] : 0;
}

/* Digit runs of natcmp: a run with a leading zero compares left-aligned,
 * digit by digit ("097" > "0100"); ... */
static int run_left(const char *a, size_t la, size_t i, const char *b,
		    size_t lb, size_t j)
{
	for (;; i++, j++) {
		int ca = at(a, la, i), cb = at(b, lb, j);

		if (!isdigit(ca) && !isdigit(cb))
			return 0;
		if (!isdigit(ca))
			return -1;
		if (!isdigit(cb))
			return 1;
		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
}

/* ... the others by value: the longer run is larger, else the first
 * differing digit decides. */
static int run_right(const char *a, size_t la, size_t i, const char *b,
		     size_t lb, size_t j)
{
	int bias = 0;

	for (;; i++, j++) {
		int ca = at(a, la, i), cb = at(b, lb, j);

		if (!isdigit(ca) && !isdigit(cb))
			return bias;
		if (!isdigit(ca))
			return -1;
		if (!isdigit(cb))
			return 1;
		if (ca != cb && !bias)
			bias = ca < cb ? -1 : 1;
	}
}

/* Natural order of two prefixes, exactly as Slurm's strnatcmp() (Martin
 * Pool's algorithm) orders hostrange prefixes: "r2n" < "r10n", but
 * "r097n" > "r0100n". Equal only for equal strings. */
static int natcmp(const char *a, size_t la, const char *b, size_t lb)
{
	for (size_t i = 0, j = 0;; i++, j++) {
		int ca = at(a, la, i), cb = at(b, lb, j);

		if (isdigit(ca) && isdigit(cb)) {
			int c = (ca == '0' || cb == '0')
				    ? run_left(a, la, i, b, lb, j)
				    : run_right(a, la, i, b, lb, j);

			if (c)
				return c;
		}
		if (!ca && !cb)
			return 0;
		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
}

static int host_cmp(const void *pa, const void *pb)
{
	const struct host *a = pa, *b = pb;
	int c = natcmp(a->name, a->plen, b->name, b->plen);

	if (c)
		return c;
	if (a->single != b->single)
		return a->single ? -1 : 1; /* as Slurm: plain names first */
	if (a->single)
		return 0;
	if (a->width != b->width)
		return a->width < b->width ? -1 : 1;
	return (a->num > b->num) - (a->num < b->num);
}

static int digits(unsigned long v)
{
	int n = 1;

	while (v /= 10)
		n++;
	return n;
}

static int zero_pad(unsigned long v, int width)
{
	int d = digits(v);

	return width > d ? width - d : 0;
}

/*
 * Slurm's _width_equiv(): the widths wn, wm of numbers n, m are compatible
 * when printing both with one of them changes the zero padding of at most
 * one number; the other width is then adjusted to match.
 */
static int width_equiv(unsigned long n, int *wn, unsigned long m, int *wm)
{
	int npad, nmpad, mpad, mnpad;

	if (*wn == *wm)
		return 1;
	npad = zero_pad(n, *wn);
	nmpad = zero_pad(n, *wm);
	mpad = zero_pad(m, *wm);
	mnpad = zero_pad(m, *wn);
	if (npad != nmpad && mpad != mnpad)
		return 0;
	if (npad != nmpad)
		*wm = *wn;
	else
		*wn = *wm;
	return 1;
}

struct buf {
	char *s;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p)
			return -ENOMEM;
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int buf_num(struct buf *b, int width, unsigned long v)
{
	char tmp[32];
	int m = snprintf(tmp, sizeof(tmp), "%0*lu", width, v);

	return buf_add(b, tmp, (size_t)m);
}

static void split(struct host *h, const char *name)
{
	size_t len = strlen(name), p = len;

	while (p > 0 && isdigit((unsigned char)name[p - 1]))
		p--;
	h->name = name;
	h->single = p == len || len - p > MAX_SUFFIX_DIGITS;
	h->plen = h->single ? len : p;
	h->width = (int)(len - p);
	h->num = h->single ? 0 : strtoul(name + p, NULL, 10);
}

static int same_prefix(const struct host *a, const struct host *b)
{
	return a->plen == b->plen && memcmp(a->name, b->name, a->plen) == 0;
}

char *isle_hostlist_compress(const char *const *names, int n)
{
	struct host *h = NULL;
	struct buf b = {0};
	int i = 0, rc = 0;

	if (n < 0 || (n && !names))
		return NULL;
	if (buf_add(&b, "", 0))
		return NULL;
	if (n == 0)
		return b.s;
	h = malloc((size_t)n * sizeof(*h));
	if (!h)
		goto nomem;
	for (int k = 0; k < n; k++)
		split(&h[k], names[k]);
	qsort(h, (size_t)n, sizeof(*h), host_cmp);

	while (i < n && !rc) {
		int j = i, nhosts = 0, first = 1;

		/* A group: one plain name, or all numbered names of a prefix.
		 */
		if (h[i].single) {
			if (b.len)
				rc = buf_add(&b, ",", 1);
			if (!rc)
				rc = buf_add(&b, h[i].name, strlen(h[i].name));
			while (++i < n && host_cmp(&h[i - 1], &h[i]) == 0)
				;
			continue;
		}
		while (j < n && !h[j].single && same_prefix(&h[i], &h[j]))
			j++;
		for (int k = i; k < j; k++)
			nhosts += k == i || h[k].num != h[k - 1].num ||
				  h[k].width != h[k - 1].width;
		if (b.len)
			rc = buf_add(&b, ",", 1);
		if (!rc)
			rc = buf_add(&b, h[i].name, h[i].plen);
		if (!rc && nhosts > 1)
			rc = buf_add(&b, "[", 1);
		while (i < j && !rc) {
			unsigned long lo = h[i].num, hi = lo;
			int width = h[i].width;

			/* Extend the run while numbers follow on (duplicates
			 * included) and the zero padding stays compatible. */
			while (++i < j) {
				int w = width, wn = h[i].width;

				if (h[i].num != hi && h[i].num != hi + 1)
					break;
				if (!width_equiv(lo, &w, h[i].num, &wn))
					break;
				if (h[i].num == hi &&
				    h[i].width != h[i - 1].width)
					break;
				width = w;
				hi = h[i].num;
			}
			if (!first)
				rc = buf_add(&b, ",", 1);
			first = 0;
			if (!rc)
				rc = buf_num(&b, width, lo);
			if (!rc && hi > lo) {
				rc = buf_add(&b, "-", 1);
				if (!rc)
					rc = buf_num(&b, width, hi);
			}
		}
		if (!rc && nhosts > 1)
			rc = buf_add(&b, "]", 1);
	}
	if (rc)
		goto nomem;
	free(h);
	return b.s;
nomem:
	free(h);
	free(b.s);
	return NULL;
}
