/*
 * json_walk.c - typed values out of a JSON tree with errors that name the
 * file and JSON path (json_walk.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "isle_proto.h"
#include "json_walk.h"

void isle__jwalk_init(struct isle__jwalk *w, const char *file, char *err,
		      size_t errlen)
{
	w->file = file;
	w->err = err;
	w->errlen = errlen;
	w->path[0] = '$';
	w->path[1] = '\0';
	w->plen = 1;
}

static int vjerr(struct isle__jwalk *w, int rc, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return isle__errf(rc, w->err, w->errlen, "%s: %s: %s", w->file, w->path,
			  msg);
}

int isle__jerr(struct isle__jwalk *w, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = vjerr(w, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int isle__jerr_key(struct isle__jwalk *w, int rc, const char *key,
		   const char *fmt, ...)
{
	size_t old = isle__jpush_key(w, key);
	va_list ap;

	va_start(ap, fmt);
	rc = vjerr(w, rc, fmt, ap);
	va_end(ap);
	isle__jpop(w, old);
	return rc;
}

static const char *const jtype_name[] = {
    "integer", "number", "string", "array", "object",
};

static int is_type(struct jv *v, enum jtype want)
{
	switch (want) {
	case J_INT:
		return jv_is(v, JV_INT);
	case J_NUM:
		return jv_is(v, JV_INT) || jv_is(v, JV_DBL);
	case J_STR:
		return jv_is(v, JV_STR);
	case J_ARR:
		return jv_is(v, JV_ARR);
	case J_OBJ:
		return jv_is(v, JV_OBJ);
	}
	return 0;
}

int isle__jexpect(struct isle__jwalk *w, struct jv *v, enum jtype want)
{
	if (is_type(v, want))
		return 0;
	return isle__jerr(w, -EINVAL, "expected %s", jtype_name[want]);
}

int isle__jmember(struct isle__jwalk *w, struct jv *obj, const char *key,
		  enum jtype want, int required, struct jv **out)
{
	struct jv *v;

	*out = NULL;
	if (!jv_get_ex(obj, key, &v) || !v) {
		if (!required)
			return 1;
		return isle__jerr_key(w, -EINVAL, key, "missing");
	}
	if (!is_type(v, want))
		return isle__jerr_key(w, -EINVAL, key, "expected %s",
				      jtype_name[want]);
	*out = v;
	return 0;
}

int isle__jget_int(struct isle__jwalk *w, struct jv *obj, const char *key,
		   int required, int64_t lo, int64_t hi, int *out)
{
	struct jv *v;
	int64_t x;
	int rc = isle__jmember(w, obj, key, J_INT, required, &v);

	if (rc)
		return rc > 0 ? 0 : rc;
	x = jv_int64(v);
	if (x < lo || x > hi)
		return isle__jerr_key(w, -ERANGE, key,
				      "%" PRId64 " out of range [%" PRId64
				      ", %" PRId64 "]",
				      x, lo, hi);
	*out = (int)x;
	return 0;
}

int isle__jget_num(struct isle__jwalk *w, struct jv *obj, const char *key,
		   double lo, double *out)
{
	struct jv *v;
	double x;
	int rc = isle__jmember(w, obj, key, J_NUM, 0, &v);

	if (rc)
		return rc > 0 ? 0 : rc;
	x = jv_double(v);
	if (!(x >= lo) || x > 1e12)
		return isle__jerr_key(w, -ERANGE, key,
				      "%g out of range (min %g)", x, lo);
	*out = x;
	return 0;
}

int isle__jget_str(struct isle__jwalk *w, struct jv *obj, const char *key,
		   int required, int nonempty, const char **out)
{
	struct jv *v;
	int rc = isle__jmember(w, obj, key, J_STR, required, &v);

	if (rc)
		return rc > 0 ? 0 : rc;
	*out = jv_str(v);
	if (nonempty && !**out)
		return isle__jerr_key(w, -EINVAL, key, "empty string");
	return 0;
}

int isle__jcheck_name(struct isle__jwalk *w, const char *key, const char *name)
{
	char msg[256];

	if (!name || !isle_name_error(NULL, name, msg, sizeof(msg)))
		return 0;
	return key ? isle__jerr_key(w, -EINVAL, key, "%s", msg)
		   : isle__jerr(w, -EINVAL, "%s", msg);
}

int isle__jcheck_text(struct isle__jwalk *w, const char *key, const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (n > 127)
		return isle__jerr_key(w, -EINVAL, key,
				      "longer than 127 characters");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 ||
		    (unsigned char)text[i] >= 0x7f)
			return isle__jerr_key(w, -EINVAL, key,
					      "byte 0x%02x not allowed",
					      (unsigned char)text[i]);
	return 0;
}
