/*
 * spank_opts.c - parsing and validation of the isle SPANK options and of
 * the admin policy in plugstack.conf. No Slurm calls: unit-tested directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "isle_place.h"
#include "spank_isle.h"

static const char *const codec_names[ISLE_CODEC_COUNT] = {
    [ISLE_CODEC_NONE] = "none", [ISLE_CODEC_FP16] = "fp16",
    [ISLE_CODEC_BF16] = "bf16", [ISLE_CODEC_INT8] = "int8",
    [ISLE_CODEC_TOPK] = "topk",
};

static const char *const opt_names[ISLE_OPT_COUNT] = {
    [ISLE_OPT_TP] = "isle-tp",
    [ISLE_OPT_PP] = "isle-pp",
    [ISLE_OPT_MODE] = "isle-mode",
    [ISLE_OPT_SPAN] = "isle-span",
    [ISLE_OPT_COMPRESS] = "isle-compress",
    [ISLE_OPT_SHIM] = "isle-shim",
};

static const char *const opt_envs[ISLE_OPT_COUNT] = {
    [ISLE_OPT_TP] = "ISLE_TP",
    [ISLE_OPT_PP] = "ISLE_PP",
    [ISLE_OPT_MODE] = "ISLE_MODE",
    [ISLE_OPT_SPAN] = "ISLE_SPAN",
    [ISLE_OPT_COMPRESS] = "ISLE_COMPRESS",
    [ISLE_OPT_SHIM] = "ISLE_SHIM",
};

/* The spans a job may ask for; "core" is the unrestricted default. */
static const struct {
	const char *name;
	isle_tier tier;
} spans[] = {
    {"island", ISLE_TIER_ISLAND},
    {"node", ISLE_TIER_NODE},
    {"leaf", ISLE_TIER_LEAF},
    {"spine", ISLE_TIER_SPINE},
};

static const char *_span_name(int tier)
{
	for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
		if ((int)spans[i].tier == tier)
			return spans[i].name;
	return "core"; /* unrestricted */
}

static int _fail(char *err, size_t errlen, const char *what, const char *val,
		 const char *expect)
{
	if (err && errlen)
		snprintf(err, errlen, "invalid %s '%s': expected %s", what,
			 val ? val : "", expect);
	return -EINVAL;
}

static int _parse_count(const char *val, int max, int *out)
{
	char *end;
	long n;

	if (!val || !*val)
		return -EINVAL;
	errno = 0;
	n = strtol(val, &end, 10);
	if (errno || *end || n < 1 || n > max)
		return -EINVAL;
	*out = (int)n;
	return 0;
}

static int _parse_codec(const char *val, enum isle__codec *codec, double *ratio)
{
	char *end;
	double r;

	if (!val)
		return -EINVAL;
	if (!strncasecmp(val, "topk:", 5)) {
		errno = 0;
		r = strtod(val + 5, &end);
		if (errno || end == val + 5 || *end || !(r > 0.0) || r > 1.0)
			return -EINVAL;
		*codec = ISLE_CODEC_TOPK;
		*ratio = r;
		return 0;
	}
	for (int c = 0; c < ISLE_CODEC_COUNT; c++) {
		if (c != ISLE_CODEC_TOPK && !strcasecmp(val, codec_names[c])) {
			*codec = c;
			*ratio = 0.0;
			return 0;
		}
	}
	return -EINVAL;
}

static int _parse_span(const char *val, int *span)
{
	for (size_t i = 0; val && i < sizeof(spans) / sizeof(spans[0]); i++) {
		if (!strcasecmp(val, spans[i].name)) {
			*span = spans[i].tier;
			return 0;
		}
	}
	return -EINVAL;
}

static int _parse_mode(const char *val, int *mode)
{
	if (val && !strcasecmp(val, "required"))
		*mode = ISLE_PLACE_REQUIRED;
	else if (val && !strcasecmp(val, "preferred"))
		*mode = ISLE_PLACE_PREFERRED;
	else
		return -EINVAL;
	return 0;
}

static int _parse_shim(const char *val, enum isle__shim *shim)
{
	if (val && !strcasecmp(val, "auto"))
		*shim = ISLE_SHIM_AUTO;
	else if (val && !strcasecmp(val, "off"))
		*shim = ISLE_SHIM_OFF;
	else
		return -EINVAL;
	return 0;
}

int isle__spank_opt_parse(struct isle__spank_opts *o, int opt, const char *val,
			  char *err, size_t errlen)
{
	char what[32];
	int rc = -EINVAL;
	const char *expect = "";

	if (opt <= 0 || opt >= ISLE_OPT_COUNT)
		return _fail(err, errlen, "isle option", val, "a known option");
	snprintf(what, sizeof(what), "--%s", opt_names[opt]);
	switch (opt) {
	case ISLE_OPT_TP:
		rc = _parse_count(val, ISLE_SPANK_MAX_TP, &o->tp);
		expect = "an integer from 1 to 1024";
		break;
	case ISLE_OPT_PP:
		rc = _parse_count(val, ISLE_SPANK_MAX_PP, &o->pp);
		expect = "an integer from 1 to 1024";
		break;
	case ISLE_OPT_MODE:
		rc = _parse_mode(val, &o->mode);
		expect = "required or preferred";
		break;
	case ISLE_OPT_SPAN:
		rc = _parse_span(val, &o->span);
		expect = "island, node, leaf or spine";
		break;
	case ISLE_OPT_COMPRESS:
		rc = _parse_codec(val, &o->codec, &o->topk_ratio);
		expect =
		    "none, fp16, bf16, int8 or topk:RATIO with 0 < RATIO <= 1";
		break;
	case ISLE_OPT_SHIM:
		rc = _parse_shim(val, &o->shim);
		expect = "auto or off";
		break;
	}
	if (rc)
		return _fail(err, errlen, what, val, expect);
	o->set |= 1u << opt;
	return 0;
}

int isle__spank_env_parse(struct isle__spank_opts *o, int opt, const char *val,
			  char *err, size_t errlen)
{
	/* isle__spank_opt_value writes the unrestricted span as "core". */
	if (opt == ISLE_OPT_SPAN && val && !strcasecmp(val, "core")) {
		o->span = ISLE_TIER_CORE;
		o->set |= 1u << opt;
		return 0;
	}
	return isle__spank_opt_parse(o, opt, val, err, errlen);
}

void isle__spank_policy_init(struct isle__spank_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->defaults.tp = 1;
	p->defaults.pp = 1;
	p->defaults.mode = ISLE_PLACE_REQUIRED;
	p->defaults.span = ISLE_TIER_CORE; /* unrestricted */
	p->defaults.codec = ISLE_CODEC_NONE;
	p->defaults.shim = ISLE_SHIM_AUTO;
	p->allowed_codecs = (1u << ISLE_CODEC_COUNT) - 1;
	p->max_tp = ISLE_SPANK_MAX_TP;
}

static int _parse_codec_list(const char *val, unsigned *mask)
{
	char buf[256], *save = NULL, *tok;
	enum isle__codec c;
	double r;

	if (!val || strlen(val) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, val);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcasecmp(tok, "topk"))
			c = ISLE_CODEC_TOPK;
		else if (_parse_codec(tok, &c, &r))
			return -EINVAL;
		*mask |= 1u << c;
	}
	/* "none" is always allowed: a job can always run uncompressed. */
	*mask |= 1u << ISLE_CODEC_NONE;
	return 0;
}

int isle__spank_policy_parse(struct isle__spank_policy *p, int ac, char **av,
			     char *err, size_t errlen)
{
	struct isle__spank_opts *d = &p->defaults;

	for (int i = 0; i < ac; i++) {
		const char *arg = av[i], *eq = strchr(arg, '=');
		const char *val = eq ? eq + 1 : NULL;
		size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
		int rc = -EINVAL, opt = 0;
		const char *expect = "key=value";

#define KEY(k) (klen == strlen(k) && !strncmp(arg, k, klen))
		if (!eq)
			rc = -EINVAL;
		else if (KEY("default_tp"))
			opt = ISLE_OPT_TP;
		else if (KEY("default_pp"))
			opt = ISLE_OPT_PP;
		else if (KEY("default_mode"))
			opt = ISLE_OPT_MODE;
		else if (KEY("default_span"))
			opt = ISLE_OPT_SPAN;
		else if (KEY("default_compress"))
			opt = ISLE_OPT_COMPRESS;
		else if (KEY("default_shim"))
			opt = ISLE_OPT_SHIM;
		else if (KEY("allowed_codecs")) {
			rc = _parse_codec_list(val, &p->allowed_codecs);
			expect = "a comma list of none, fp16, bf16, int8, topk";
		} else if (KEY("max_tp")) {
			rc = _parse_count(val, ISLE_SPANK_MAX_TP, &p->max_tp);
			expect = "an integer from 1 to 1024";
		} else if (KEY("shim")) {
			rc = (val[0] == '/' &&
			      strlen(val) < sizeof(p->shim_path))
				 ? 0
				 : -EINVAL;
			if (!rc)
				strcpy(p->shim_path, val);
			expect = "an absolute path";
		} else if (KEY("agent") || KEY("cluster") || KEY("rundir")) {
			/* Per-job plan (spank_job.c): absolute paths. */
			char *dst = KEY("agent")     ? p->agent_path
				    : KEY("cluster") ? p->cluster_path
						     : p->rundir;

			rc = (val[0] == '/' && strlen(val) < PATH_MAX)
				 ? 0
				 : -EINVAL;
			if (!rc)
				strcpy(dst, val);
			expect = "an absolute path";
		} else if (KEY("agent_timeout")) {
			rc = _parse_count(val, 3600, &p->agent_timeout_s);
			expect = "seconds from 1 to 3600";
		} else if (KEY("codec_policy")) {
			rc = (*val && strlen(val) < sizeof(p->codec_policy))
				 ? 0
				 : -EINVAL;
			if (!rc)
				strcpy(p->codec_policy, val);
			expect =
			    "TIER=CODEC,... (island, node, leaf, spine, core)";
		} else {
			expect = "one of default_tp, default_pp, default_mode, "
				 "default_span, default_compress, "
				 "default_shim, allowed_codecs, max_tp, shim, "
				 "agent, agent_timeout, cluster, rundir, "
				 "codec_policy";
		}
#undef KEY
		if (opt) {
			rc = isle__spank_opt_parse(d, opt, val, err, errlen);
			if (rc)
				return rc; /* err names the option */
			continue;
		}
		if (rc) {
			if (err && errlen)
				snprintf(err, errlen,
					 "plugstack.conf: invalid argument "
					 "'%s': expected %s",
					 arg, expect);
			return -EINVAL;
		}
	}
	d->set = 0; /* defaults are not user choices */
	if (!(p->allowed_codecs & (1u << d->codec))) {
		if (err && errlen)
			snprintf(err, errlen,
				 "plugstack.conf: default_compress=%s is not "
				 "in allowed_codecs",
				 codec_names[d->codec]);
		return -EINVAL;
	}
	return 0;
}

int isle__spank_resolve(const struct isle__spank_policy *p,
			const struct isle__spank_opts *user,
			struct isle__spank_opts *out, char *err, size_t errlen)
{
	const struct isle__spank_opts *d = &p->defaults;
	unsigned set = user->set;

#define PICK(bit, field)                                                       \
	out->field = (set & (1u << (bit))) ? user->field : d->field
	PICK(ISLE_OPT_TP, tp);
	PICK(ISLE_OPT_PP, pp);
	PICK(ISLE_OPT_MODE, mode);
	PICK(ISLE_OPT_SPAN, span);
	PICK(ISLE_OPT_COMPRESS, codec);
	PICK(ISLE_OPT_COMPRESS, topk_ratio);
	PICK(ISLE_OPT_SHIM, shim);
#undef PICK
	out->set = set;

	if (out->tp > p->max_tp) {
		snprintf(err, errlen,
			 "--isle-tp=%d exceeds the site limit max_tp=%d",
			 out->tp, p->max_tp);
		return -EINVAL;
	}
	if (!(p->allowed_codecs & (1u << out->codec))) {
		snprintf(err, errlen,
			 "--isle-compress=%s is not allowed on this cluster",
			 codec_names[out->codec]);
		return -EINVAL;
	}
	/* Without an installed shim there is nothing to preload. */
	if (!p->shim_path[0])
		out->shim = ISLE_SHIM_OFF;
	if (out->codec != ISLE_CODEC_NONE && out->shim == ISLE_SHIM_OFF &&
	    (set & (1u << ISLE_OPT_COMPRESS))) {
		snprintf(err, errlen,
			 "--isle-compress=%s needs the isle shim, which is %s",
			 codec_names[out->codec],
			 p->shim_path[0] ? "off (--isle-shim=off)"
					 : "not installed on this cluster");
		return -EINVAL;
	}
	return 0;
}

const char *isle__spank_opt_value(const struct isle__spank_opts *o, int opt,
				  char *buf, size_t len)
{
	buf[0] = '\0';
	switch (opt) {
	case ISLE_OPT_TP:
		snprintf(buf, len, "%d", o->tp);
		break;
	case ISLE_OPT_PP:
		snprintf(buf, len, "%d", o->pp);
		break;
	case ISLE_OPT_MODE:
		snprintf(buf, len, "%s",
			 o->mode == ISLE_PLACE_REQUIRED ? "required"
							: "preferred");
		break;
	case ISLE_OPT_SPAN:
		snprintf(buf, len, "%s", _span_name(o->span));
		break;
	case ISLE_OPT_COMPRESS:
		if (o->codec == ISLE_CODEC_TOPK)
			snprintf(buf, len, "topk:%g", o->topk_ratio);
		else
			snprintf(buf, len, "%s", codec_names[o->codec]);
		break;
	case ISLE_OPT_SHIM:
		snprintf(buf, len, "%s",
			 o->shim == ISLE_SHIM_OFF ? "off" : "auto");
		break;
	}
	return buf;
}

const char *isle__spank_opt_env(int opt)
{
	return (opt > 0 && opt < ISLE_OPT_COUNT) ? opt_envs[opt] : NULL;
}

const char *isle__spank_opt_name(int opt)
{
	return (opt > 0 && opt < ISLE_OPT_COUNT) ? opt_names[opt] : NULL;
}
