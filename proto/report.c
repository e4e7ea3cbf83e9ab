/*
 * report.c - the shim's per-job report (ISLE_REPORT_FILE, docs/comm-shim.md):
 * the one writer (plain stdio, run by the MPI and NCCL backends on rank 0)
 * and the one reader (json-c; the exporter, `islectl explain`, tests).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proto_priv.h"

int isle_report_class(uint64_t bytes)
{
	int k = 0;

	while (k < ISLE_REPORT_CLASSES - 1 &&
	       bytes >= isle_report_class_min(k + 1))
		k++;
	return k;
}

uint64_t isle_report_class_min(int k)
{
	return k <= 0 ? 0 : 256ull << (4 * (k - 1)); /* 256, 4Ki, 64Ki ... */
}

int isle_report_write(const struct isle_report *r, FILE *f)
{
	char num[32];
	int first = 1;

	fprintf(f, "{\"isle_report\": %d, \"api\": \"%s\", \"ranks\": %d,\n",
		ISLE_REPORT_VERSION, r->api, r->ranks);
	fprintf(f, " \"calls\": [\n");
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++)
		fprintf(f,
			"  {\"min_bytes\": %" PRIu64 ", \"taken\": %" PRIu64
			", \"passed\": %" PRIu64 "}%s\n",
			isle_report_class_min(k), r->taken[k], r->passed[k],
			k < ISLE_REPORT_CLASSES - 1 ? "," : "");
	fprintf(f, " ],\n \"tiers\": [");
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		int c1 = 1;

		if (!r->sent[t] && !r->library[t] && !r->codecs[t])
			continue;
		fprintf(f,
			"%s\n  {\"tier\": \"%s\", \"sent_bytes\": %" PRIu64
			", \"library_bytes\": %" PRIu64 ", \"codecs\": [",
			first ? "" : ",", isle_scope_name((isle_scope)t),
			r->sent[t], r->library[t]);
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r->codecs[t] & (1u << c)) {
				fprintf(
				    f, "%s\"%s\"", c1 ? "" : ", ",
				    isle_codec_kind_name((isle_codec_kind)c));
				c1 = 0;
			}
		fprintf(f, "]}");
		first = 0;
	}
	isle_fmt_double(num, sizeof(num), r->probe_s);
	fprintf(
	    f, "%s],\n \"probe\": {\"bytes\": %" PRIu64 ", \"seconds\": %s}}\n",
	    first ? "" : "\n ", r->probe_bytes, num);
	return ferror(f) ? -EIO : 0;
}

int isle_report_save(const struct isle_report *r, const char *path, char *err,
		     size_t errlen)
{
	char tmp[4352];
	FILE *f;
	int bad;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return errf(-ENAMETOOLONG, err, errlen,
			    "cannot write report %s: name too long", path);
	if (!(f = fopen(tmp, "we")))
		return errf(-errno, err, errlen, "cannot write report %s: %s",
			    tmp, strerror(errno));
	bad = isle_report_write(r, f) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		unlink(tmp);
		return errf(-EIO, err, errlen, "cannot write report %s", path);
	}
	return 0;
}

int isle_report_line(const struct isle_report *r, char *buf, size_t len)
{
	uint64_t taken = 0, passed = 0;
	size_t o;

	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		taken += r->taken[k];
		passed += r->passed[k];
	}
	o = (size_t)snprintf(buf, len,
			     "isle_report: %s, %d ranks: %" PRIu64
			     " allreduce taken, %" PRIu64 " passed through",
			     r->api, r->ranks, taken, passed);
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		if (!r->sent[t] && !r->library[t] && !r->codecs[t])
			continue;
		o += (size_t)snprintf(
		    buf + (o < len ? o : len), o < len ? len - o : 0,
		    "; %s %" PRIu64 " B sent (library %" PRIu64 " B)",
		    isle_scope_name((isle_scope)t), r->sent[t], r->library[t]);
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r->codecs[t] & (1u << c))
				o += (size_t)snprintf(
				    buf + (o < len ? o : len),
				    o < len ? len - o : 0, " %s",
				    isle_codec_kind_name((isle_codec_kind)c));
	}
	o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0,
			      "; probe %" PRIu64 " B in %.3f s", r->probe_bytes,
			      r->probe_s);
	return (int)o;
}

/* ---------------------------------------------------------------- reader */

static int get(json_object *o, const char *key, json_type want, json_object **v)
{
	if (!json_object_object_get_ex(o, key, v) || !*v)
		return 0;
	if (json_object_get_type(*v) == want)
		return 1;
	return want == json_type_double &&
	       json_object_get_type(*v) == json_type_int;
}

static int get_u64(json_object *o, const char *key, uint64_t *out)
{
	json_object *v;
	int64_t x;

	if (!get(o, key, json_type_int, &v))
		return 0;
	errno = 0;
	x = json_object_get_int64(v);
	if (x < 0 || errno)
		return 0;
	*out = (uint64_t)x;
	return 1;
}

static int parse_obj(json_object *o, const char *name, struct isle_report *r,
		     char *err, size_t errlen)
{
	json_object *v, *e, *a;
	uint64_t u;
	size_t n;

#define BAD(path, what)                                                        \
	errf(-EINVAL, err, errlen, "%s: %s: %s", name, path, what)
	if (!json_object_is_type(o, json_type_object))
		return BAD("$", "expected an object");
	if (!get_u64(o, "isle_report", &u) || u != ISLE_REPORT_VERSION)
		return BAD("$.isle_report", "expected 1");
	if (!get(o, "api", json_type_string, &v) ||
	    (strcmp(json_object_get_string(v), "mpi") &&
	     strcmp(json_object_get_string(v), "nccl")))
		return BAD("$.api", "expected \"mpi\" or \"nccl\"");
	snprintf(r->api, sizeof(r->api), "%s", json_object_get_string(v));
	if (!get_u64(o, "ranks", &u) || u < 1 || u > INT32_MAX)
		return BAD("$.ranks", "expected a positive integer");
	r->ranks = (int)u;
	if (!get(o, "calls", json_type_array, &a) ||
	    json_object_array_length(a) != ISLE_REPORT_CLASSES)
		return BAD("$.calls", "expected an array of 6 size classes");
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		char path[64];

		e = json_object_array_get_idx(a, (size_t)k);
		snprintf(path, sizeof(path), "$.calls[%d]", k);
		if (!json_object_is_type(e, json_type_object) ||
		    !get_u64(e, "min_bytes", &u) ||
		    u != isle_report_class_min(k))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.min_bytes: expected %" PRIu64, name,
				    path, isle_report_class_min(k));
		if (!get_u64(e, "taken", &r->taken[k]) ||
		    !get_u64(e, "passed", &r->passed[k]))
			return errf(-EINVAL, err, errlen,
				    "%s: %s: taken and passed must be "
				    "non-negative integers",
				    name, path);
	}
	if (!get(o, "tiers", json_type_array, &a))
		return BAD("$.tiers", "expected an array");
	n = json_object_array_length(a);
	for (size_t i = 0; i < n; i++) {
		char path[64];
		json_object *cs;
		isle_scope t;

		e = json_object_array_get_idx(a, i);
		snprintf(path, sizeof(path), "$.tiers[%zu]", i);
		if (!json_object_is_type(e, json_type_object) ||
		    !get(e, "tier", json_type_string, &v) ||
		    isle_scope_parse(json_object_get_string(v), &t))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.tier: expected island, node, leaf "
				    "or job",
				    name, path);
		if (r->sent[t] || r->library[t] || r->codecs[t])
			return errf(-EINVAL, err, errlen,
				    "%s: %s.tier: %s listed twice", name, path,
				    isle_scope_name(t));
		if (!get_u64(e, "sent_bytes", &r->sent[t]) ||
		    !get_u64(e, "library_bytes", &r->library[t]))
			return errf(-EINVAL, err, errlen,
				    "%s: %s: sent_bytes and library_bytes must "
				    "be non-negative integers",
				    name, path);
		if (!get(e, "codecs", json_type_array, &cs))
			return errf(-EINVAL, err, errlen,
				    "%s: %s.codecs: expected an array", name,
				    path);
		for (size_t j = 0; j < json_object_array_length(cs); j++) {
			const char *s = json_object_get_string(
			    json_object_array_get_idx(cs, j));
			int c = 0;

			while (c < ISLE_CODEC_COUNT && s &&
			       strcmp(s, isle_codec_kind_name(c)))
				c++;
			if (!json_object_is_type(
				json_object_array_get_idx(cs, j),
				json_type_string) ||
			    c == ISLE_CODEC_COUNT)
				return errf(-EINVAL, err, errlen,
					    "%s: %s.codecs[%zu]: expected a "
					    "codec name",
					    name, path, j);
			r->codecs[t] |= 1u << c;
		}
	}
	if (!get(o, "probe", json_type_object, &e) ||
	    !get_u64(e, "bytes", &r->probe_bytes))
		return BAD("$.probe.bytes", "expected a non-negative integer");
	if (!get(e, "seconds", json_type_double, &v) ||
	    !(json_object_get_double(v) >= 0))
		return BAD("$.probe.seconds", "expected a number >= 0");
	r->probe_s = json_object_get_double(v);
	return 0;
#undef BAD
}

int isle_report_parse(const char *json, size_t len, const char *name,
		      struct isle_report *out, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		json_tokener_free(tok);
		json_object_put(o);
		return errf(-EINVAL, err, errlen, "%s: not JSON", name);
	}
	json_tokener_free(tok);
	rc = parse_obj(o, name, out, err, errlen);
	json_object_put(o);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

int isle_report_read(const char *path, struct isle_report *out, char *err,
		     size_t errlen)
{
	char *buf = NULL;
	size_t n = 0, cap = 0;
	FILE *f;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(f = fopen(path, "re")))
		return errf(-errno, err, errlen, "%s: %s", path,
			    strerror(errno));
	for (;;) {
		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap = cap * 2 + 8192);

			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (!got)
			break;
	}
	fclose(f);
	rc = isle_report_parse(buf, n, path, out, err, errlen);
	free(buf);
	return rc;
}
