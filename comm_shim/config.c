/*
 * config.c - isle_comm_config from the environment, error strings. No MPI
 * here, so the plan and codec parts of libisle_comm.a link without it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_priv.h"

int isle__env_double(const char *name, double *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	v = strtod(s, &end);
	if (*end || v != v)
		return isle__errf(-EINVAL, err, errlen,
				  "%s='%s': expected a number", name, s);
	*out = v;
	return 0;
}

static int env_size(const char *name, size_t *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || s[0] == '-' || errno == ERANGE)
		goto bad;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	/* Refused, not wrapped: "17179869184G" would be 0 (fusion off). */
	if (*end || v > (SIZE_MAX >> shift))
		goto bad;
	v <<= shift;
	*out = (size_t)v;
	return 0;
bad:
	return isle__errf(-EINVAL, err, errlen,
			  "%s='%s': expected a byte count (e.g. 4M)", name, s);
}

void isle_comm_config_default(struct isle_comm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->algo = ISLE_ALGO_AUTO;
	cfg->timeout_s = 300;
	cfg->fusion_bytes = 4u << 20;
	cfg->cycle_ms = 2;
	cfg->min_bytes = 0;
	cfg->calibrate = 1;
	cfg->probe_share = 0.01;
	cfg->async = 1;
}

int isle_comm_config_from_env(struct isle_comm_config *cfg, char *err,
			      size_t errlen)
{
	const char *s;
	double v;
	size_t z;
	int rc;

	isle_comm_config_default(cfg);
	s = getenv(ISLE_PLAN_ENV);
	if (s && *s) {
		if (strlen(s) >= sizeof(cfg->plan_path))
			return isle__errf(-EINVAL, err, errlen,
					  "ISLE_PLAN: path too long");
		strcpy(cfg->plan_path, s);
	}
	s = getenv("ISLE_COMM_CODEC");
	if (s && *s) {
		char cerr[160];

		if (isle_codec_parse(s, &cfg->codec_override, cerr,
				     sizeof(cerr)))
			return isle__errf(-EINVAL, err, errlen,
					  "ISLE_COMM_CODEC: %s", cerr);
		cfg->have_codec_override = 1;
	}
	s = getenv("ISLE_COMM_ALGO");
	if (s && *s && isle_algo_parse(s, &cfg->algo))
		return isle__errf(
		    -EINVAL, err, errlen,
		    "ISLE_COMM_ALGO='%s': expected auto, "
		    "ring, rdoubling, hier, leader or passthrough",
		    s);
	if ((rc = isle__env_double("ISLE_COMM_TIMEOUT_S", &cfg->timeout_s, err,
				   errlen)) ||
	    (rc = isle__env_double("ISLE_COMM_CYCLE_MS", &cfg->cycle_ms, err,
				   errlen)) ||
	    (rc = env_size("ISLE_COMM_FUSION_BYTES", &cfg->fusion_bytes, err,
			   errlen)) ||
	    (rc = env_size("ISLE_COMM_MIN_BYTES", &cfg->min_bytes, err,
			   errlen)) ||
	    (rc = env_size("ISLE_COMM_SEGMENT_BYTES", &cfg->segment_bytes, err,
			   errlen)))
		return rc;
	if (cfg->timeout_s < 0 || cfg->cycle_ms < 0)
		return isle__errf(-EINVAL, err, errlen,
				  "ISLE_COMM_TIMEOUT_S and "
				  "ISLE_COMM_CYCLE_MS must be >= 0");
	v = 1;
	if ((rc = isle__env_double("ISLE_COMM_ASYNC", &v, err, errlen)))
		return rc;
	cfg->async = v != 0;
	v = 1;
	if ((rc = isle__env_double("ISLE_COMM_CALIBRATE", &v, err, errlen)))
		return rc;
	cfg->calibrate = v != 0;
	if ((rc = isle__env_double("ISLE_COMM_PROBE_SHARE", &cfg->probe_share,
				   err, errlen)))
		return rc;
	if (!(cfg->probe_share >= 0 && cfg->probe_share <= 1))
		return isle__errf(-EINVAL, err, errlen,
				  "ISLE_COMM_PROBE_SHARE must be in [0, 1]");
	z = 0;
	if ((rc = env_size("ISLE_COMM_VERBOSE", &z, err, errlen)))
		return rc;
	cfg->verbose = (int)z;
	return 0;
}

const char *isle_comm_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "success";
	case -ETIMEDOUT:
		return "peer dead or hung (timeout)";
	case -ENOTSUP:
		return "not handled by the shim";
	case -EPROTO:
		return "peers disagree (corrupt or mismatched data)";
	case -EIO:
		return "transport error (or an earlier failure on this "
		       "communicator)";
	default:
		return strerror(rc < 0 ? -rc : rc);
	}
}
