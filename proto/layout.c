/*
 * layout.c - where things are: the default cluster file and the decision
 * record files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proto_priv.h"

static int fit(int n, size_t len)
{
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int isle_cluster_file_path(const char *conf_dir, char *buf, size_t len)
{
	const char *conf, *slash;
	size_t n;

	if (!conf_dir || !*conf_dir) {
		conf = getenv("SLURM_CONF");
		slash = conf ? strrchr(conf, '/') : NULL;
		if (!slash)
			return fit(snprintf(buf, len, "/etc/slurm/%s",
					    ISLE_CLUSTER_FILE),
				   len);
		return fit(snprintf(buf, len, "%.*s/%s", (int)(slash - conf),
				    conf, ISLE_CLUSTER_FILE),
			   len);
	}
	n = strlen(conf_dir);
	while (n > 1 && conf_dir[n - 1] == '/')
		n--;
	return fit(snprintf(buf, len, "%.*s%s%s", (int)n, conf_dir,
			    conf_dir[n - 1] == '/' ? "" : "/",
			    ISLE_CLUSTER_FILE),
		   len);
}

int isle_record_dir(const char *state_dir, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "%s/%s", state_dir, ISLE_RECORD_SUBDIR),
		   len);
}

#define RECORD_PREFIX "job_"
#define RECORD_EXT ".json"

int isle_record_path(const char *records_dir, uint32_t job_id,
		     const char *suffix, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "%s/" RECORD_PREFIX "%u" RECORD_EXT "%s",
			    records_dir, job_id, suffix ? suffix : ""),
		   len);
}

int isle_record_name_parse(const char *name, uint32_t *job_id)
{
	const char *p = name + strlen(RECORD_PREFIX);
	unsigned long id;
	char *end;

	if (strncmp(name, RECORD_PREFIX, strlen(RECORD_PREFIX)) || *p < '0' ||
	    *p > '9')
		return -EINVAL;
	errno = 0;
	id = strtoul(p, &end, 10);
	if (errno || !id || id > UINT32_MAX)
		return -EINVAL;
	*job_id = (uint32_t)id;
	if (!strcmp(end, RECORD_EXT))
		return 0;
	if (!strcmp(end, RECORD_EXT ISLE_RECORD_PARTIAL))
		return -EAGAIN;
	return -EINVAL;
}

int isle_record_read(const char *path, void **out, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		json_type type;
	} required[] = {
	    {"job_id", json_type_int},
	    {"line", json_type_string},
	};
	json_object *o, *v;
	FILE *f;

	*out = NULL;
	/* json_object_from_file does not tell a missing file from bad
	 * JSON. */
	if (!(f = fopen(path, "r")))
		return errf(-errno, err, errlen, "%s: %s", path,
			    strerror(errno));
	fclose(f);
	o = json_object_from_file(path);
	if (!o)
		return errf(-EINVAL, err, errlen,
			    "%s: not a valid decision record (not JSON)", path);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errf(-EINVAL, err, errlen,
			    "%s: not a valid decision record ($: "
			    "expected an object)",
			    path);
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!json_object_object_get_ex(o, required[i].key, &v) ||
		    !json_object_is_type(v, required[i].type)) {
			json_object_put(o);
			return errf(-EINVAL, err, errlen,
				    "%s: not a valid decision record ($.%s: "
				    "missing or not %s)",
				    path, required[i].key,
				    required[i].type == json_type_int
					? "an integer"
					: "a string");
		}
	*out = o;
	return 0;
}

static const struct {
	const char *prefix, *name;
} outcomes[] = {
    [ISLE_OUTCOME_PLACED] = {"isle: tp=", "placed"},
    [ISLE_OUTCOME_PLANNED] = {"isle: planned ", "planned"},
    [ISLE_OUTCOME_DEFAULT] = {"isle: default selection", "default_selection"},
    [ISLE_OUTCOME_FALLBACK] = {"isle: fallback", "fallback"},
    [ISLE_OUTCOME_WAITING] = {"isle: waiting", "waiting"},
    [ISLE_OUTCOME_REFUSED] = {"isle: refused", "refused"},
    [ISLE_OUTCOME_OTHER] = {NULL, "other"},
};

int isle_record_outcome_of(const char *line)
{
	for (int i = 0; line && i < ISLE_OUTCOME_OTHER; i++)
		if (!strncmp(line, outcomes[i].prefix,
			     strlen(outcomes[i].prefix)))
			return i;
	return ISLE_OUTCOME_OTHER;
}

const char *isle_record_outcome_name(int outcome)
{
	if (outcome < 0 || outcome >= ISLE_OUTCOME_COUNT)
		return NULL;
	return outcomes[outcome].name;
}

const char *isle_record_outcome_prefix(int outcome)
{
	if (outcome < 0 || outcome >= ISLE_OUTCOME_COUNT)
		return NULL;
	return outcomes[outcome].prefix;
}

void isle_record_info(const void *rec, struct isle_record_info *info)
{
	json_object *o = (json_object *)rec, *pl, *v, *tg, *ti, *cr;

	memset(info, 0, sizeof(*info));
	info->tp_groups = info->tp_in_island = -1;
	info->cost_ratio = -1.0;
	if (json_object_object_get_ex(o, "job_id", &v))
		info->job_id = (uint32_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "time", &v) &&
	    json_object_is_type(v, json_type_int))
		info->time = json_object_get_int64(v);
	info->outcome = ISLE_OUTCOME_OTHER;
	if (json_object_object_get_ex(o, "line", &v))
		info->outcome =
		    isle_record_outcome_of(json_object_get_string(v));
	if (json_object_object_get_ex(o, "granted", &v) &&
	    json_object_is_type(v, json_type_array))
		info->granted_nodes = (int)json_object_array_length(v);
	if (!json_object_object_get_ex(o, "placement", &pl) ||
	    !json_object_is_type(pl, json_type_object) ||
	    !json_object_object_get_ex(pl, "tp_groups", &tg) ||
	    !json_object_is_type(tg, json_type_int) ||
	    !json_object_object_get_ex(pl, "tp_in_island", &ti) ||
	    !json_object_is_type(ti, json_type_int) ||
	    json_object_get_int(tg) < 0 || json_object_get_int(ti) < 0 ||
	    json_object_get_int(ti) > json_object_get_int(tg))
		return;
	info->tp_groups = json_object_get_int(tg);
	info->tp_in_island = json_object_get_int(ti);
	if (json_object_object_get_ex(pl, "cost_ratio", &cr) &&
	    (json_object_is_type(cr, json_type_double) ||
	     json_object_is_type(cr, json_type_int)) &&
	    json_object_get_double(cr) >= 0.0)
		info->cost_ratio = json_object_get_double(cr);
}
