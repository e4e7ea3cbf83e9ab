/*
 * jobopt.c - isle's job options: the table (command-line names, environment
 * keys, help), their limits, the parser of each value and the canonical text
 * that travels in the job environment. sbatch/srun (SPANK local context),
 * slurmctld (topology/isle, job_submit/isle: they re-check everything) and
 * the tasks all go through here, so one value means one thing everywhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto_priv.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct isle_job_opt_desc opts[ISLE_OPT_COUNT] = {
    [ISLE_OPT_TP] = {"isle-tp", "ISLE_TP", "N",
		     "isle: tensor-parallel group size; each group is kept "
		     "inside one NVLink island",
		     "an integer from 1 to " STR(ISLE_JOB_MAX_TP)},
    [ISLE_OPT_PP] = {"isle-pp", "ISLE_PP", "N",
		     "isle: pipeline-parallel stages",
		     "an integer from 1 to " STR(ISLE_JOB_MAX_PP)},
    [ISLE_OPT_MODE] = {"isle-mode", "ISLE_MODE", "required|preferred",
		       "isle: wait for an island-aligned placement (required) "
		       "or take the best one available now (preferred)",
		       "required or preferred"},
    [ISLE_OPT_SPAN] = {"isle-span", "ISLE_SPAN", "island|node|leaf|spine",
		       "isle: loosest network tier the whole job may span",
		       "island, node, leaf or spine"},
    [ISLE_OPT_COMPRESS] = {"isle-compress", "ISLE_COMPRESS",
			   "none|fp16|bf16|int8[:BLOCK]|topk:RATIO[,ef|,noef]"
			   "[,mom=M]",
			   "isle: gradient compression on the slow tiers (via "
			   "the isle shim)",
			   "none, fp16, bf16, int8[:BLOCK] or topk:RATIO with "
			   "0 < RATIO <= 1, optionally with ,ef or ,noef; "
			   "topk also ,mom=M with 0 <= M < 1"},
    [ISLE_OPT_SHIM] = {"isle-shim", "ISLE_SHIM", "auto|off",
		       "isle: load the isle communication shim into the job's "
		       "tasks",
		       "auto or off"},
    [ISLE_OPT_TRAFFIC] = {"isle-traffic", "ISLE_TRAFFIC", "dp|pp|infer",
			  "isle: what the job mostly sends across switches "
			  "(data-parallel gradients, pipeline stages, "
			  "inference), for placement away from busy links",
			  "dp, pp or infer"},
};

/* Traffic names by enum isle_job_traffic; "auto" only in the
 * environment. */
static const char *const traffic_names[] = {
    [ISLE_JOB_TRAFFIC_AUTO] = "auto",
    [ISLE_JOB_TRAFFIC_DP] = "dp",
    [ISLE_JOB_TRAFFIC_PP] = "pp",
    [ISLE_JOB_TRAFFIC_INFER] = "infer",
};

/* Span names by enum isle_job_span; "core" only in the environment. */
static const char *const span_names[] = {
    [ISLE_JOB_SPAN_ISLAND] = "island", [ISLE_JOB_SPAN_NODE] = "node",
    [ISLE_JOB_SPAN_LEAF] = "leaf",     [ISLE_JOB_SPAN_SPINE] = "spine",
    [ISLE_JOB_SPAN_CORE] = "core",
};

const struct isle_job_opt_desc *isle_job_opt_desc(int opt)
{
	return (opt > 0 && opt < ISLE_OPT_COUNT) ? &opts[opt] : NULL;
}

int isle_count_parse(const char *val, int max, int *out)
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

static int parse_word(const char *val, const char *const *names, int n,
		      int *out)
{
	for (int i = 0; val && i < n; i++)
		if (!strcasecmp(val, names[i])) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

static int parse(struct isle_job_opts *o, int opt, const char *val,
		 int env_form, char *err, size_t errlen)
{
	static const char *const modes[] = {[ISLE_JOB_REQUIRED] = "required",
					    [ISLE_JOB_PREFERRED] = "preferred"};
	static const char *const shims[] = {
	    [ISLE_SHIM_AUTO] = "auto", [ISLE_SHIM_OFF] = "off"};
	int rc = -EINVAL;

	if (opt <= 0 || opt >= ISLE_OPT_COUNT)
		return errf(-EINVAL, err, errlen,
			    "invalid isle option %d '%s': expected a known "
			    "option",
			    opt, val ? val : "");
	switch (opt) {
	case ISLE_OPT_TP:
		rc = isle_count_parse(val, ISLE_JOB_MAX_TP, &o->tp);
		break;
	case ISLE_OPT_PP:
		rc = isle_count_parse(val, ISLE_JOB_MAX_PP, &o->pp);
		break;
	case ISLE_OPT_MODE:
		rc = parse_word(val, modes, 2, &o->mode);
		break;
	case ISLE_OPT_SPAN:
		/* The user names a limit; the environment may also say
		 * "core", the unrestricted default. */
		rc = parse_word(val, span_names,
				env_form ? ISLE_JOB_SPAN_CORE + 1
					 : ISLE_JOB_SPAN_CORE,
				&o->span);
		break;
	case ISLE_OPT_COMPRESS: {
		char cerr[160];

		/* The codec parser's line names the field that is wrong. */
		if (val && isle_codec_parse(val, &o->codec, cerr, sizeof(cerr)))
			return errf(-EINVAL, err, errlen, "invalid --%s: %s",
				    opts[opt].name, cerr);
		rc = val ? 0 : -EINVAL;
		break;
	}
	case ISLE_OPT_SHIM:
		rc = parse_word(val, shims, 2, &o->shim);
		break;
	case ISLE_OPT_TRAFFIC:
		/* The user names a class; the environment may also say
		 * "auto", the default. */
		if (env_form)
			rc = parse_word(val, traffic_names, 4, &o->traffic);
		else if (!(rc = parse_word(val, traffic_names + 1, 3,
					   &o->traffic)))
			o->traffic++;
		break;
	}
	if (rc)
		return errf(-EINVAL, err, errlen,
			    "invalid --%s '%s': expected %s", opts[opt].name,
			    val ? val : "", opts[opt].expect);
	o->set |= 1u << opt;
	return 0;
}

int isle_job_opt_parse(struct isle_job_opts *o, int opt, const char *val,
		       char *err, size_t errlen)
{
	return parse(o, opt, val, 0, err, errlen);
}

int isle_job_env_parse(struct isle_job_opts *o, int opt, const char *val,
		       char *err, size_t errlen)
{
	return parse(o, opt, val, 1, err, errlen);
}

const char *isle_job_opt_format(const struct isle_job_opts *o, int opt,
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
			 o->mode == ISLE_JOB_REQUIRED ? "required"
						      : "preferred");
		break;
	case ISLE_OPT_SPAN:
		snprintf(buf, len, "%s",
			 (unsigned)o->span < ISLE_JOB_SPAN_CORE
			     ? span_names[o->span]
			     : span_names[ISLE_JOB_SPAN_CORE]);
		break;
	case ISLE_OPT_COMPRESS:
		isle_codec_format(&o->codec, buf, len);
		break;
	case ISLE_OPT_SHIM:
		snprintf(buf, len, "%s",
			 o->shim == ISLE_SHIM_OFF ? "off" : "auto");
		break;
	case ISLE_OPT_TRAFFIC:
		snprintf(buf, len, "%s",
			 (unsigned)o->traffic <= ISLE_JOB_TRAFFIC_INFER
			     ? traffic_names[o->traffic]
			     : traffic_names[ISLE_JOB_TRAFFIC_AUTO]);
		break;
	}
	return buf;
}
