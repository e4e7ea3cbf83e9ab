/*
 * spank_opts.c - the admin policy in plugstack.conf and its application to
 * a job's options (the options themselves are proto's isle_job_opt_*). No
 * Slurm calls: unit-tested directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "isle_place.h"
#include "spank_isle.h"

/* Option values are proto's isle_job_opt_*; ids and enums must match the
 * engine's. */
_Static_assert((int)ISLE_JOB_REQUIRED == (int)ISLE_PLACE_REQUIRED &&
		   (int)ISLE_JOB_PREFERRED == (int)ISLE_PLACE_PREFERRED,
	       "isle_job_mode and isle_place_mode differ");
_Static_assert((int)ISLE_JOB_SPAN_ISLAND == (int)ISLE_TIER_ISLAND &&
		   (int)ISLE_JOB_SPAN_NODE == (int)ISLE_TIER_NODE &&
		   (int)ISLE_JOB_SPAN_LEAF == (int)ISLE_TIER_LEAF &&
		   (int)ISLE_JOB_SPAN_SPINE == (int)ISLE_TIER_SPINE &&
		   (int)ISLE_JOB_SPAN_CORE == (int)ISLE_TIER_CORE,
	       "isle_job_span and isle_tier differ");

void isle__spank_policy_init(struct isle__spank_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->defaults.tp = 1;
	p->defaults.pp = 1;
	p->defaults.mode = ISLE_PLACE_REQUIRED;
	p->defaults.span = ISLE_TIER_CORE; /* unrestricted */
	p->defaults.codec = (struct isle_codec){.kind = ISLE_CODEC_NONE};
	p->defaults.shim = ISLE_SHIM_AUTO;
	p->allowed_codecs = (1u << ISLE_CODEC_COUNT) - 1;
	p->max_tp = ISLE_JOB_MAX_TP;
	p->reports_keep = 10000;
}

/* Codec kinds: "topk" alone names the kind, other items are specs. */
static int _parse_codec_list(const char *val, unsigned *mask)
{
	char buf[256], *save = NULL, *tok;
	struct isle_codec c;

	if (!val || strlen(val) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, val);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcasecmp(tok, isle_codec_kind_name(ISLE_CODEC_TOPK)))
			c.kind = ISLE_CODEC_TOPK;
		else if (isle_codec_parse(tok, &c, NULL, 0))
			return -EINVAL;
		*mask |= 1u << c.kind;
	}
	/* "none" is always allowed: a job can always run uncompressed. */
	*mask |= 1u << ISLE_CODEC_NONE;
	return 0;
}

int isle__spank_policy_parse(struct isle__spank_policy *p, int ac, char **av,
			     char *err, size_t errlen)
{
	struct isle_job_opts *d = &p->defaults;

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
			rc = isle_count_parse(val, ISLE_JOB_MAX_TP, &p->max_tp);
			expect = isle_job_opt_desc(ISLE_OPT_TP)->expect;
		} else if (KEY("shim")) {
			rc = (val[0] == '/' &&
			      strlen(val) < sizeof(p->shim_path))
				 ? 0
				 : -EINVAL;
			if (!rc)
				strcpy(p->shim_path, val);
			expect = "an absolute path";
		} else if (KEY("agent") || KEY("cluster") || KEY("rundir") ||
			   KEY("reports")) {
			/* Per-job plan (spank_job.c): absolute paths. */
			char *dst = KEY("agent")     ? p->agent_path
				    : KEY("cluster") ? p->cluster_path
				    : KEY("rundir")  ? p->rundir
						     : p->reports_dir;

			rc = (val[0] == '/' && strlen(val) < PATH_MAX)
				 ? 0
				 : -EINVAL;
			if (!rc)
				strcpy(dst, val);
			expect = "an absolute path";
		} else if (KEY("reports_keep")) {
			int keep = 0;

			rc = isle_count_parse(val, 10000000, &keep);
			if (!rc)
				p->reports_keep = keep;
			expect = "a count from 1 to 10000000";
		} else if (KEY("agent_timeout")) {
			rc = isle_count_parse(val, 3600, &p->agent_timeout_s);
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
				 "codec_policy, reports, reports_keep";
		}
#undef KEY
		if (opt) {
			rc = isle_job_opt_parse(d, opt, val, err, errlen);
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
	if (!(p->allowed_codecs & (1u << d->codec.kind))) {
		if (err && errlen)
			snprintf(err, errlen,
				 "plugstack.conf: default_compress=%s is not "
				 "in allowed_codecs",
				 isle_codec_kind_name(d->codec.kind));
		return -EINVAL;
	}
	return 0;
}

int isle__spank_resolve(const struct isle__spank_policy *p,
			const struct isle_job_opts *user,
			struct isle_job_opts *out, char *err, size_t errlen)
{
	const struct isle_job_opts *d = &p->defaults;
	unsigned set = user->set;

#define PICK(bit, field)                                                       \
	out->field = (set & (1u << (bit))) ? user->field : d->field
	PICK(ISLE_OPT_TP, tp);
	PICK(ISLE_OPT_PP, pp);
	PICK(ISLE_OPT_MODE, mode);
	PICK(ISLE_OPT_SPAN, span);
	PICK(ISLE_OPT_COMPRESS, codec);
	PICK(ISLE_OPT_SHIM, shim);
	PICK(ISLE_OPT_TRAFFIC, traffic);
#undef PICK
	out->set = set;

	if (out->tp > p->max_tp) {
		snprintf(
		    err, errlen, "--%s=%d exceeds the site limit max_tp=%d",
		    isle_job_opt_desc(ISLE_OPT_TP)->name, out->tp, p->max_tp);
		return -EINVAL;
	}
	if (!(p->allowed_codecs & (1u << out->codec.kind))) {
		snprintf(err, errlen, "--%s=%s is not allowed on this cluster",
			 isle_job_opt_desc(ISLE_OPT_COMPRESS)->name,
			 isle_codec_kind_name(out->codec.kind));
		return -EINVAL;
	}
	/* Without an installed shim there is nothing to preload. */
	if (!p->shim_path[0])
		out->shim = ISLE_SHIM_OFF;
	if (out->codec.kind != ISLE_CODEC_NONE && out->shim == ISLE_SHIM_OFF &&
	    (set & (1u << ISLE_OPT_COMPRESS))) {
		snprintf(err, errlen,
			 "--%s=%s needs the isle shim, which is %s",
			 isle_job_opt_desc(ISLE_OPT_COMPRESS)->name,
			 isle_codec_kind_name(out->codec.kind),
			 p->shim_path[0] ? "off (--isle-shim=off)"
					 : "not installed on this cluster");
		return -EINVAL;
	}
	return 0;
}
