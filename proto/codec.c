/*
 * codec.c - codec spec strings: the one parser and the one formatter, used
 * by the shim (plan files, ISLE_COMM_CODEC), the agent (codec policy,
 * --compress) and the SPANK plugin (--isle-compress, allowed_codecs).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto_priv.h"

static const char *const kind_names[ISLE_CODEC_COUNT] = {
    [ISLE_CODEC_NONE] = "none", [ISLE_CODEC_FP16] = "fp16",
    [ISLE_CODEC_BF16] = "bf16", [ISLE_CODEC_INT8] = "int8",
    [ISLE_CODEC_TOPK] = "topk",
};

const char *isle_codec_kind_name(isle_codec_kind k)
{
	return (unsigned)k < ISLE_CODEC_COUNT ? kind_names[k] : "?";
}

int isle_codec_parse(const char *spec, struct isle_codec *c, char *err,
		     size_t errlen)
{
	char buf[ISLE_CODEC_SPEC_MAX + 1], *param, *flag, *end;
	int kind = -1;

	if (!spec || strlen(spec) >= sizeof(buf))
		return errf(-EINVAL, err, errlen, "bad codec spec '%s'",
			    spec ? spec : "(null)");
	strcpy(buf, spec);
	flag = strchr(buf, ',');
	if (flag)
		*flag++ = '\0';
	param = strchr(buf, ':');
	if (param)
		*param++ = '\0';
	for (int k = 0; k < ISLE_CODEC_COUNT; k++)
		if (!strcasecmp(buf, kind_names[k]))
			kind = k;
	if (kind < 0)
		return errf(-EINVAL, err, errlen,
			    "unknown codec '%s' (none, fp16, bf16, "
			    "int8[:BLOCK], topk:RATIO)",
			    spec);

	memset(c, 0, sizeof(*c));
	c->kind = (isle_codec_kind)kind;
	c->block = ISLE_CODEC_INT8_DEFAULT_BLOCK;
	c->error_feedback = kind == ISLE_CODEC_TOPK;

	if (kind == ISLE_CODEC_INT8 && param) {
		unsigned long b = strtoul(param, &end, 10);

		if (!*param || *end || b < 8 || b > 65536 || b % 8)
			return errf(-EINVAL, err, errlen,
				    "codec '%s': block must be a "
				    "multiple of 8 in 8..65536",
				    spec);
		c->block = (uint32_t)b;
	} else if (kind == ISLE_CODEC_TOPK) {
		double r = param ? strtod(param, &end) : 0;

		if (!param || !*param || *end || !(r > 0 && r <= 1))
			return errf(-EINVAL, err, errlen,
				    "codec '%s': topk needs a ratio "
				    "in (0, 1], e.g. topk:0.01",
				    spec);
		c->ratio = r;
	} else if (param) {
		return errf(-EINVAL, err, errlen,
			    "codec '%s': %s takes no parameter", spec,
			    kind_names[kind]);
	}

	if (flag) {
		if (!strcasecmp(flag, "ef"))
			c->error_feedback = 1;
		else if (!strcasecmp(flag, "noef"))
			c->error_feedback = 0;
		else
			return errf(-EINVAL, err, errlen,
				    "codec '%s': flag must be ef or "
				    "noef",
				    spec);
	}
	return 0;
}

int isle_fmt_double(char *buf, size_t len, double v)
{
	char tmp[40];
	int p, n = 0;

	for (p = 6; p <= 17; p++) {
		n = snprintf(tmp, sizeof(tmp), "%.*g", p, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	return snprintf(buf, len, "%s", tmp) < 0 ? -1 : n;
}

int isle_codec_format(const struct isle_codec *c, char *buf, size_t len)
{
	char r[40];

	int def_ef = c->kind == ISLE_CODEC_TOPK;
	const char *ef = c->error_feedback == def_ef ? ""
			 : c->error_feedback	     ? ",ef"
						     : ",noef";

	switch (c->kind) {
	case ISLE_CODEC_INT8:
		return snprintf(buf, len, "int8:%u%s", c->block, ef);
	case ISLE_CODEC_TOPK:
		isle_fmt_double(r, sizeof(r), c->ratio);
		return snprintf(buf, len, "topk:%s%s", r, ef);
	default:
		return snprintf(buf, len, "%s%s", isle_codec_kind_name(c->kind),
				ef);
	}
}
