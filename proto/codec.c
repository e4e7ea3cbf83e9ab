/*
 * codec.c - codec spec strings: the one parser and the one formatter, used
 * by the shim (plan files, ISLE_COMM_CODEC), the agent (codec policy,
 * --compress) and the SPANK plugin (--isle-compress, allowed_codecs); and
 * the wire size of a codec, which the shim sends and islesim models.
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

const char *isle_codec_tier_default(int tier)
{
	/* int8 from the leaf up: the shim reduces fp32, so bf16 on the wire
	 * is only the size of the library's own bf16 allreduce and can never
	 * win; int8 is half of it and converges within 0.5 point of fp32
	 * (docs/results/converge-topk-warm.json). */
	static const char *const def[] = {"none", "none", "int8", "int8",
					  "int8"};

	return tier >= 0 && tier < (int)(sizeof(def) / sizeof(def[0]))
		   ? def[tier]
		   : NULL;
}

int isle_codec_is_flag(const char *item)
{
	return item && (!strcasecmp(item, "ef") || !strcasecmp(item, "noef") ||
			!strncasecmp(item, "mom=", 4) ||
			!strncasecmp(item, "warm=", 5) ||
			!strncasecmp(item, "mask=", 5));
}

/* warm=S: warm-up calls of a topk codec. */
static int parse_warm(const char *spec, const char *flag, struct isle_codec *c,
		      char *err, size_t errlen)
{
	char *end;
	unsigned long s;

	if (c->kind != ISLE_CODEC_TOPK)
		return errf(-EINVAL, err, errlen,
			    "codec '%s': warm (sparsity warm-up) is for "
			    "topk only",
			    spec);
	errno = 0;
	s = strtoul(flag + 5, &end, 10);
	if (!flag[5] || *end || flag[5] == '-' || flag[5] == '+' || errno ||
	    s > ISLE_CODEC_WARM_MAX)
		return errf(-EINVAL, err, errlen,
			    "codec '%s': warm must be a count of calls in "
			    "0..%u, e.g. warm=100",
			    spec, ISLE_CODEC_WARM_MAX);
	c->warm = (uint32_t)s;
	return 0;
}

/* mask=sent|stale: which momentum a sent element loses (mom only). */
static int parse_mask(const char *spec, const char *flag, struct isle_codec *c,
		      char *err, size_t errlen)
{
	if (c->kind != ISLE_CODEC_TOPK)
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mask (momentum masking) is for "
			    "topk only",
			    spec);
	if (!strcasecmp(flag + 5, "sent"))
		c->mask_stale = 0;
	else if (!strcasecmp(flag + 5, "stale"))
		c->mask_stale = 1;
	else
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mask must be sent or stale", spec);
	return 0;
}

/* One flag after the codec's name: ef, noef, mom=M, warm=S or mask=K. */
static int parse_flag(const char *spec, char *flag, struct isle_codec *c,
		      int *noef, char *err, size_t errlen)
{
	char *end;
	double m;

	if (!strcasecmp(flag, "ef")) {
		c->error_feedback = 1;
		*noef = 0;
		return 0;
	}
	if (!strcasecmp(flag, "noef")) {
		c->error_feedback = 0;
		*noef = 1;
		return 0;
	}
	if (!strncasecmp(flag, "warm=", 5))
		return parse_warm(spec, flag, c, err, errlen);
	if (!strncasecmp(flag, "mask=", 5))
		return parse_mask(spec, flag, c, err, errlen);
	if (strncasecmp(flag, "mom=", 4))
		return errf(-EINVAL, err, errlen,
			    "codec '%s': flag '%s' must be ef, noef, "
			    "mom=M, warm=S or mask=K (topk)",
			    spec, flag);
	if (c->kind != ISLE_CODEC_TOPK)
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mom (momentum correction) is for "
			    "topk only",
			    spec);
	m = strtod(flag + 4, &end);
	/* !(m >= 0) also refuses NaN. */
	if (!flag[4] || *end || !(m >= 0 && m < 1))
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mom must be in [0, 1), e.g. "
			    "mom=0.9",
			    spec);
	c->momentum = m;
	return 0;
}

int isle_codec_parse(const char *spec, struct isle_codec *c, char *err,
		     size_t errlen)
{
	char buf[ISLE_CODEC_SPEC_MAX + 1], *param, *flags, *flag, *next, *end;
	int kind = -1, noef = 0, rc;

	if (!spec || strlen(spec) >= sizeof(buf))
		return errf(-EINVAL, err, errlen, "bad codec spec '%s'",
			    spec ? spec : "(null)");
	strcpy(buf, spec);
	flags = strchr(buf, ',');
	if (flags)
		*flags++ = '\0';
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

	for (flag = flags; flag; flag = next) {
		next = strchr(flag, ',');
		if (next)
			*next++ = '\0';
		if (!*flag)
			return errf(-EINVAL, err, errlen,
				    "codec '%s': empty flag", spec);
		if ((rc = parse_flag(spec, flag, c, &noef, err, errlen)))
			return rc;
	}
	/* Masking is momentum's: alone it would do nothing. */
	if (c->mask_stale && !(c->momentum > 0))
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mask=stale needs mom=M", spec);
	/* Momentum lives in the residual: without one it would be lost. */
	if (c->momentum > 0 && noef)
		return errf(-EINVAL, err, errlen,
			    "codec '%s': mom needs error feedback "
			    "(drop noef)",
			    spec);
	return 0;
}

size_t isle_codec_topk_k(const struct isle_codec *c, size_t n)
{
	double x = c->ratio * (double)n;
	size_t k = (size_t)x;

	/* ceil without libm: proto needs libc and json-c only */
	if ((double)k < x)
		k++;
	if (k < 1)
		k = 1;
	return k < n ? k : n;
}

size_t isle_codec_encoded_size(const struct isle_codec *c, size_t n)
{
	switch (c->kind) {
	case ISLE_CODEC_FP16:
	case ISLE_CODEC_BF16:
		return (2 * n + 3) & ~(size_t)3;
	case ISLE_CODEC_INT8:
		return 4 * ((n + c->block - 1) / c->block) +
		       ((n + 3) & ~(size_t)3);
	case ISLE_CODEC_TOPK:
		return 8 + 8 * (n ? isle_codec_topk_k(c, n) : 0);
	case ISLE_CODEC_NONE:
	default:
		return 4 * n;
	}
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
	char r[40], m[64] = "", w[24] = "";

	int def_ef = c->kind == ISLE_CODEC_TOPK;
	const char *ef = c->error_feedback == def_ef ? ""
			 : c->error_feedback	     ? ",ef"
						     : ",noef";

	switch (c->kind) {
	case ISLE_CODEC_INT8:
		return snprintf(buf, len, "int8:%u%s", c->block, ef);
	case ISLE_CODEC_TOPK:
		isle_fmt_double(r, sizeof(r), c->ratio);
		if (c->momentum > 0) {
			strcpy(m, ",mom=");
			isle_fmt_double(m + 5, sizeof(m) - 11, c->momentum);
			if (c->mask_stale)
				strcat(m, ",mask=stale");
		}
		if (c->warm)
			snprintf(w, sizeof(w), ",warm=%u", c->warm);
		return snprintf(buf, len, "topk:%s%s%s%s", r, ef, m, w);
	default:
		return snprintf(buf, len, "%s%s", isle_codec_kind_name(c->kind),
				ef);
	}
}
