/*
 * json_fast.c - the JSON tree of json_fast.h.
 *
 * A cluster file of 10,000 nodes is about a million JSON values; json-c
 * gives each its own malloc (objects a hash table too) and frees them one
 * by one, which made that most of the load time. The loader only reads the
 * tree, so it is parsed here into one arena: strings decoded in place in a
 * copy of the text, values in blocks, freed at once. Only plain JSON takes
 * this path; anything else (comments, \u escapes, duplicate keys, huge or
 * odd numbers, syntax errors) goes through json-c as before and its tree is
 * copied, so what is accepted and every error message stay json-c's.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_fast.h"
#include "topo_priv.h"

struct jv_block {
	struct jv_block *next;
	size_t used, cap;
	max_align_t data[];
};

static void *jv_alloc(struct jv_doc *d, size_t size)
{
	struct jv_block *b = d->blocks;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!b || b->cap - b->used < size) {
		size_t cap = size > (1u << 20) ? size : (1u << 20);

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = d->blocks;
		d->blocks = b;
	}
	b->used += size;
	return (char *)b->data + b->used - size;
}

void isle__jv_doc_free(struct jv_doc *d)
{
	while (d->blocks) {
		struct jv_block *b = d->blocks;

		d->blocks = b->next;
		free(b);
	}
	free(d->text);
	free(d->stack);
	json_object_put(d->jc);
	memset(d, 0, sizeof(*d));
}

/* 1: not plain JSON (use json-c), -ENOMEM. */
static int jv_value(struct jv_doc *d, char **pp, struct jv *out, int depth);

static void jv_ws(char **pp)
{
	char *p = *pp;

	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	*pp = p;
}

/* Decodes the string at *pp (after the quote) in place. */
static int jv_string(char **pp, const char **s, unsigned *len)
{
	char *p = *pp, *w;

	*s = p;
	while (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
		p++;
	w = p;
	for (;;) {
		unsigned char c = (unsigned char)*p;

		if (c == '"')
			break;
		if (c < 0x20)
			return 1;
		if (c == '\\') {
			switch (p[1]) {
			case '"':
				c = '"';
				break;
			case '\\':
				c = '\\';
				break;
			case '/':
				c = '/';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			default:
				return 1; /* \u and bad escapes: json-c */
			}
			p++;
		}
		*w++ = (char)c;
		p++;
	}
	*w = '\0';
	*len = (unsigned)(w - *s);
	*pp = p + 1;
	return 0;
}

static int jv_number(char **pp, struct jv *out)
{
	char *p = *pp, *start = p, *end;
	int digits = 0, dbl = 0;

	if (*p == '-')
		p++;
	if (*p == '0' && p[1] >= '0' && p[1] <= '9')
		return 1;
	while (*p >= '0' && *p <= '9')
		p++, digits++;
	if (!digits)
		return 1;
	if (*p == '.') {
		dbl = 1;
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return 1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		dbl = 1;
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (!dbl) {
		int64_t x = 0;

		/* "-0" and numbers near the int64 limits: json-c decides. */
		if (digits > 18 || (start[0] == '-' && start[1] == '0'))
			return 1;
		for (char *q = start[0] == '-' ? start + 1 : start; q < p; q++)
			x = x * 10 + (*q - '0');
		out->type = JV_INT;
		out->u.i = start[0] == '-' ? -x : x;
	} else {
		char c = *p;

		*p = '\0';
		errno = 0;
		out->u.d = strtod(start, &end);
		*p = c;
		if (end != p || errno)
			return 1;
		out->type = JV_DBL;
	}
	*pp = p;
	return 0;
}

static int jv_push(struct jv_doc *d, const struct jv *v)
{
	if (d->nstack == d->capstack) {
		size_t cap = d->capstack ? d->capstack * 2 : 1024;
		struct jv *s = realloc(d->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		d->stack = s;
		d->capstack = cap;
	}
	d->stack[d->nstack++] = *v;
	return 0;
}

/* Moves the top n stack entries into the arena as out's children. */
static int jv_pop_kids(struct jv_doc *d, size_t base, struct jv *out)
{
	size_t n = d->nstack - base;

	out->n = (unsigned)n;
	out->u.kids = NULL;
	if (n) {
		out->u.kids = jv_alloc(d, n * sizeof(struct jv));
		if (!out->u.kids)
			return -ENOMEM;
		memcpy(out->u.kids, d->stack + base, n * sizeof(struct jv));
	}
	d->nstack = base;
	return 0;
}

static int jv_value(struct jv_doc *d, char **pp, struct jv *out, int depth)
{
	char *p;
	size_t base = d->nstack;
	int rc;

	jv_ws(pp);
	p = *pp;
	out->key = NULL;
	switch (*p) {
	case '{':
	case '[': {
		int obj = *p == '{';

		if (depth >= 30)
			return 1; /* json-c's nesting limit is 32 */
		out->type = obj ? JV_OBJ : JV_ARR;
		p++;
		jv_ws(&p);
		if (*p == (obj ? '}' : ']')) {
			p++;
		} else {
			for (;;) {
				struct jv kid;
				const char *key = NULL;
				unsigned klen;

				if (obj) {
					jv_ws(&p);
					if (*p != '"')
						return 1;
					p++;
					if (jv_string(&p, &key, &klen))
						return 1;
					/* Duplicate keys: json-c's rules. */
					for (size_t k = base; k < d->nstack;
					     k++)
						if (d->stack[k].key[0] ==
							key[0] &&
						    !strcmp(d->stack[k].key,
							    key))
							return 1;
					jv_ws(&p);
					if (*p++ != ':')
						return 1;
				}
				rc = jv_value(d, &p, &kid, depth + 1);
				if (rc)
					return rc;
				kid.key = key;
				if (jv_push(d, &kid))
					return -ENOMEM;
				jv_ws(&p);
				if (*p == ',') {
					p++;
					continue;
				}
				if (*p++ != (obj ? '}' : ']'))
					return 1;
				break;
			}
		}
		rc = jv_pop_kids(d, base, out);
		if (rc)
			return rc;
		break;
	}
	case '"':
		p++;
		out->type = JV_STR;
		if (jv_string(&p, &out->u.s, &out->n))
			return 1;
		break;
	case 't':
	case 'f':
	case 'n':
		if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4)) {
			out->type = *p == 't' ? JV_BOOL : JV_NULL;
			out->u.i = 1;
			p += 4;
		} else if (!strncmp(p, "false", 5)) {
			out->type = JV_BOOL;
			out->u.i = 0;
			p += 5;
		} else {
			return 1;
		}
		/* "nullx", "true1": json-c's errors. */
		if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
			return 1;
		break;
	default:
		if (*p == '-' || (*p >= '0' && *p <= '9')) {
			if (jv_number(&p, out))
				return 1;
			break;
		}
		return 1;
	}
	*pp = p;
	return 0;
}

/* Copies a json-c tree (strings borrowed from it). */
static int jv_from_jc(struct jv_doc *d, struct json_object *o, struct jv *out)
{
	memset(out, 0, sizeof(*out));
	switch (json_object_get_type(o)) {
	case json_type_null:
		out->type = JV_NULL;
		return 0;
	case json_type_boolean:
		out->type = JV_BOOL;
		out->u.i = json_object_get_boolean(o);
		return 0;
	case json_type_int:
		out->type = JV_INT;
		out->u.i = json_object_get_int64(o);
		return 0;
	case json_type_double:
		out->type = JV_DBL;
		out->u.d = json_object_get_double(o);
		return 0;
	case json_type_string:
		out->type = JV_STR;
		out->u.s = json_object_get_string(o);
		out->n = (unsigned)strlen(out->u.s);
		return 0;
	case json_type_array:
		out->type = JV_ARR;
		out->n = (unsigned)json_object_array_length(o);
		out->u.kids = jv_alloc(d, (out->n + 1) * sizeof(struct jv));
		if (!out->u.kids)
			return -ENOMEM;
		for (unsigned i = 0; i < out->n; i++)
			if (jv_from_jc(d, json_object_array_get_idx(o, i),
				       &out->u.kids[i]))
				return -ENOMEM;
		return 0;
	case json_type_object:
		out->type = JV_OBJ;
		out->n = (unsigned)json_object_object_length(o);
		out->u.kids = jv_alloc(d, (out->n + 1) * sizeof(struct jv));
		if (!out->u.kids)
			return -ENOMEM;
		{
			unsigned i = 0;

			json_object_object_foreach(o, key, val)
			{
				if (jv_from_jc(d, val, &out->u.kids[i]))
					return -ENOMEM;
				out->u.kids[i++].key = key;
			}
		}
		return 0;
	}
	return -EINVAL;
}
/* Parses buf; on a syntax error names line and column. */
static int parse(const char *buf, const char *name, struct json_object **out,
		 char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	size_t len = strlen(buf), end;
	enum json_tokener_error e;
	int line = 1, col = 1;

	*out = NULL;
	if (!tok)
		return isle__errf(-ENOMEM, err, errlen, "out of memory");
	*out = json_tokener_parse_ex(tok, buf, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (e == json_tokener_success) {
		while (end < len && isspace((unsigned char)buf[end]))
			end++;
		if (end == len)
			return 0;
		json_object_put(*out);
		*out = NULL;
	}
	for (size_t i = 0; i < end && i < len; i++) {
		col++;
		if (buf[i] == '\n') {
			line++;
			col = 1;
		}
	}
	json_object_put(*out);
	*out = NULL;
	return isle__errf(-EINVAL, err, errlen,
			  "%s:%d:%d: JSON syntax error: %s", name, line, col,
			  e == json_tokener_success ? "trailing data"
			  : e == json_tokener_continue
			      ? "unexpected end of file"
			      : json_tokener_error_desc(e));
}

int isle__jv_parse_plain(const char *buf, struct jv_doc *d)
{
	size_t len = strlen(buf);
	char *p;
	int rc;

	memset(d, 0, sizeof(*d));
	d->text = malloc(len + 1);
	if (!d->text)
		return -ENOMEM;
	memcpy(d->text, buf, len + 1);
	p = d->text;
	rc = jv_value(d, &p, &d->root, 0);
	/* json-c does not end a number at the end of its input ("0" is an
	 * unexpected end of file): a bare number is json-c's to judge. */
	if (!rc && (d->root.type == JV_INT || d->root.type == JV_DBL))
		rc = 1;
	if (!rc) {
		jv_ws(&p);
		if (!*p)
			return 0;
		rc = 1;
	}
	isle__jv_doc_free(d);
	return rc;
}

int isle__jv_parse_jc(const char *buf, const char *name, struct jv_doc *d,
		      char *err, size_t errlen)
{
	int rc;

	memset(d, 0, sizeof(*d));
	rc = parse(buf, name, &d->jc, err, errlen);
	if (!rc && jv_from_jc(d, d->jc, &d->root))
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
	if (rc)
		isle__jv_doc_free(d);
	return rc;
}

int isle__jv_parse(const char *buf, const char *name, struct jv_doc *d,
		   char *err, size_t errlen)
{
	int rc = isle__jv_parse_plain(buf, d);

	if (rc < 0)
		return isle__errf(rc, err, errlen, "out of memory");
	if (rc == 0)
		return 0;
	return isle__jv_parse_jc(buf, name, d, err, errlen);
}
