/*
 * isle_policy.c - what topology/isle and job_submit/isle share in slurmctld:
 * the cluster file path, the admin's job option policy (the spank_isle.so
 * line of plugstack.conf), the job's options from its SPANK environment
 * (parsed by spank_opts.c, as sbatch parses them) and the checks a job's
 * GPU request must pass before any placement is tried.
 */
#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "isle_policy.h"

#include "src/common/slurm_xlator.h"

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

/* proto's --isle-traffic values are the engine's traffic classes. */
_Static_assert((int)ISLE_JOB_TRAFFIC_AUTO == (int)ISLE_TRAFFIC_AUTO &&
		   (int)ISLE_JOB_TRAFFIC_DP == (int)ISLE_TRAFFIC_DP &&
		   (int)ISLE_JOB_TRAFFIC_PP == (int)ISLE_TRAFFIC_PP &&
		   (int)ISLE_JOB_TRAFFIC_INFER == (int)ISLE_TRAFFIC_INFER,
	       "enum isle_job_traffic follows isle_traffic");

char *isle__policy_cluster_path(void)
{
	const char *key = "IsleFile=";
	char *param = slurm_conf.topology_param, *p, *end, *conf_dir;
	char buf[PATH_MAX];

	p = param ? xstrcasestr(param, key) : NULL;
	if (p) {
		p += strlen(key);
		end = strchr(p, ',');
		return end ? xstrndup(p, end - p) : xstrdup(p);
	}
	/* proto's rule, in the directory Slurm read slurm.conf from. */
	conf_dir = get_extra_conf_path("");
	if (isle_cluster_file_path(conf_dir, buf, sizeof(buf)))
		buf[0] = '\0';
	xfree(conf_dir);
	return xstrdup(buf);
}

int isle__policy_contention_weight(double *w, char *err, size_t errlen)
{
	const char *key = "IsleContentionWeight=";
	char *param = slurm_conf.topology_param, *p, *val, *end;
	double v;
	int rc = 0;

	*w = 0;
	p = param ? xstrcasestr(param, key) : NULL;
	if (!p)
		return 0;
	p += strlen(key);
	end = strchr(p, ',');
	val = end ? xstrndup(p, end - p) : xstrdup(p);
	errno = 0;
	v = strtod(val, &end);
	if (!*val || *end || errno || !isfinite(v) || v < 0 ||
	    v > ISLE_POLICY_MAX_CC_WEIGHT) {
		snprintf(err, errlen,
			 "%s: TopologyParam IsleContentionWeight='%s': "
			 "expected a number from 0 to %g",
			 slurm_conf.slurm_conf ? slurm_conf.slurm_conf
					       : "slurm.conf",
			 val, ISLE_POLICY_MAX_CC_WEIGHT);
		rc = -EINVAL;
		goto out;
	}
	*w = v;
out:
	xfree(val);
	return rc;
}

/* --- the admin's job option policy (plugstack.conf) -------------------- */

#define PLUGSTACK_DEPTH 8 /* include nesting, as a guard against loops */

static int _plugstack_file(struct isle__spank_policy *p, const char *file,
			   int depth, char *err, size_t errlen, int *found);

/* include PATTERN: relative to the including file, glob(3) as Slurm. */
static int _plugstack_include(struct isle__spank_policy *p, const char *file,
			      int line, const char *pat, int depth, char *err,
			      size_t errlen, int *found)
{
	char *full = NULL, *dirc;
	glob_t gl;
	int rc = 0;

	if (pat[0] != '/') {
		dirc = xstrdup(file);
		full = xstrdup_printf("%s/%s", dirname(dirc), pat);
		xfree(dirc);
		pat = full;
	}
	if (!glob(pat, 0, NULL, &gl)) {
		for (size_t i = 0; !rc && !*found && i < gl.gl_pathc; i++)
			rc = _plugstack_file(p, gl.gl_pathv[i], depth + 1, err,
					     errlen, found);
		globfree(&gl);
	}
	(void)line;
	xfree(full);
	return rc;
}

/* Looks for the spank_isle.so line; parses its arguments into the policy.
 * *found is set once the line was seen (first one wins, as for Slurm). */
static int _plugstack_file(struct isle__spank_policy *p, const char *file,
			   int depth, char *err, size_t errlen, int *found)
{
	char buf[4096], perr[256];
	FILE *f;
	int lineno = 0, rc = 0;

	if (depth > PLUGSTACK_DEPTH)
		return 0;
	if (!(f = fopen(file, "re")))
		return 0;
	while (!rc && !*found && fgets(buf, sizeof(buf), f)) {
		char *av[64], *save = NULL, *tok, *hash;
		int ac = 0;

		lineno++;
		if ((hash = strchr(buf, '#')))
			*hash = '\0';
		for (tok = strtok_r(buf, " \t\r\n", &save);
		     tok && ac < (int)ARRAY_SIZE(av);
		     tok = strtok_r(NULL, " \t\r\n", &save))
			av[ac++] = tok;
		if (ac < 2)
			continue;
		if (!strcasecmp(av[0], "include")) {
			rc = _plugstack_include(p, file, lineno, av[1], depth,
						err, errlen, found);
			continue;
		}
		if (strcasecmp(av[0], "required") &&
		    strcasecmp(av[0], "optional"))
			continue;
		tok = strrchr(av[1], '/');
		if (xstrcmp(tok ? tok + 1 : av[1], "spank_isle.so"))
			continue;
		*found = 1;
		if (isle__spank_policy_parse(p, ac - 2, av + 2, perr,
					     sizeof(perr))) {
			snprintf(err, errlen, "%s:%d: %s", file, lineno, perr);
			rc = -EINVAL;
		}
	}
	fclose(f);
	return rc;
}

void isle__policy_read(struct isle__spank_policy *p)
{
	char *path, err[512] = "";
	int found = 0, rc;

	if (!(path = xstrdup(slurm_conf.plugstack)))
		path = get_extra_conf_path("plugstack.conf");
	isle__spank_policy_init(p);
	rc = _plugstack_file(p, path, 0, err, sizeof(err), &found);
	if (rc) {
		/* sbatch refuses every job on this line too; the limits
		 * still hold with the built-in defaults. */
		error("isle: %s; checking job options against the built-in "
		      "limits",
		      err);
		isle__spank_policy_init(p);
	} else if (found) {
		verbose("isle: job option policy from %s: max_tp=%d", path,
			p->max_tp);
	} else {
		verbose("isle: no spank_isle.so line in %s; checking job "
			"options against the built-in limits",
			path);
	}
	xfree(path);
}

/* --- the job's options --------------------------------------------------- */

static const char *_env_value(char **env, uint32_t n, const char *name)
{
	size_t len = strlen(name);

	for (uint32_t i = 0; env && i < n; i++) {
		const char *e = env[i];

		if (!e)
			continue;
		/* slurmctld prefixes every entry with SPANK_ on submit. */
		if (!strncmp(e, "SPANK_", 6))
			e += 6;
		if (!strncmp(e, name, len) && e[len] == '=')
			return e + len + 1;
	}
	return NULL;
}

/* err without control characters: it quotes user text and ends up in the
 * AdminComment, the log and `islectl explain`. */
static void _printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int isle__policy_job_opts(const struct isle__spank_policy *pol, char **env,
			  uint32_t nenv, struct isle__job_opts *o, char *err,
			  size_t errlen)
{
	struct isle_job_opts user = {0}, job;
	char perr[200];
	int rc = 0;

	/* A job with no isle option keeps the engine's defaults. */
	o->set = 0;
	o->tp = o->pp = 1;
	o->mode = ISLE_PLACE_PREFERRED;
	o->span = ISLE_TIER_CORE;
	o->traffic = ISLE_TRAFFIC_AUTO;
	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		const char *name = isle_job_opt_desc(opt)->env;
		const char *v = _env_value(env, nenv, name);

		if (!v)
			continue;
		if (isle_job_env_parse(&user, opt, v, perr, sizeof(perr))) {
			snprintf(err, errlen, "job option %s refused: %s", name,
				 perr);
			rc = -EINVAL;
			goto out;
		}
	}
	if (!user.set)
		return 0;
	/* Unset options from the admin's defaults, then max_tp and the
	 * allowed codecs, exactly as sbatch resolves them. */
	if (isle__spank_resolve(pol, &user, &job, perr, sizeof(perr))) {
		snprintf(err, errlen, "job options refused: %s", perr);
		rc = -EINVAL;
		goto out;
	}
	o->set = 1;
	o->tp = job.tp;
	o->pp = job.pp;
	o->mode = job.mode;
	o->span = job.span;
	o->traffic = (isle_traffic)job.traffic;
out:
	if (rc)
		_printable(err);
	return rc;
}

int isle__policy_gpu_check(const struct isle__job_opts *o, long gpus,
			   int max_island, char *err, size_t errlen)
{
	long group = (long)o->tp * o->pp;

	if (!o->set)
		return 0;
	if (gpus > 0 && gpus % group) {
		snprintf(err, errlen,
			 "--isle-tp=%d x --isle-pp=%d = %ld GPUs per model "
			 "replica does not divide the job's %ld GPUs",
			 o->tp, o->pp, group, gpus);
		return -EINVAL;
	}
	if (o->mode == ISLE_PLACE_REQUIRED && max_island > 0 &&
	    o->tp > max_island) {
		snprintf(err, errlen,
			 "--isle-tp=%d cannot be kept inside one NVLink island "
			 "(the largest has %d GPUs) and --isle-mode=required "
			 "would wait forever; use --isle-tp<=%d or "
			 "--isle-mode=preferred",
			 o->tp, max_island, max_island);
		return -E2BIG;
	}
	return 0;
}
