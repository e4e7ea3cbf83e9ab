/*
 * islectl_explain.c - `islectl explain JOBID`: print topology/isle's
 * decision record, read with proto's isle_record_read from where proto
 * names it (isle_record_dir, isle_record_path).
 *
 * topology/isle writes a job's record when the job starts and removes it
 * when Slurm purges the job (MinJobAge); it survives slurmctld restarts. A
 * pending job has no record yet: its latest decision is the "isle:"
 * segment of its AdminComment, which explain then reads from Slurm's JSON
 * record of the job (`scontrol --json`), a field the user cannot write.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "isle_proto.h"
#include "islectl.h"

static const char *_str(json_object *o, const char *key, const char *def)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return def;
	return json_object_get_string(v);
}

static double _num(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return 0.0;
	return json_object_get_double(v);
}

static json_object *_obj(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* "0,1,2,3" as "0-3", "0,1,4,5" as "0-1,4-5". */
static void _print_gpu_list(FILE *out, json_object *arr)
{
	size_t n = json_object_array_length(arr);

	for (size_t i = 0; i < n;) {
		int first =
		    json_object_get_int(json_object_array_get_idx(arr, i));
		int last = first;
		size_t j = i + 1;

		while (j < n && json_object_get_int(json_object_array_get_idx(
				    arr, j)) == last + 1) {
			last++;
			j++;
		}
		fprintf(out, "%s%d", i ? "," : "", first);
		if (last != first)
			fprintf(out, "-%d", last);
		i = j;
	}
}

/*
 * Record strings end up on a terminal: a control character in a node or
 * island name, a note or the why (a newline, an escape sequence) would
 * break or garble the line, so text mode prints them as '?'. JSON mode
 * keeps them (json-c escapes them).
 */
static void _sanitize(json_object *o)
{
	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val)
		{
			(void)key;
			_sanitize(val);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			_sanitize(json_object_array_get_idx(o, i));
	} else if (json_object_is_type(o, json_type_string)) {
		const char *v = json_object_get_string(o);
		size_t len = (size_t)json_object_get_string_len(o), i;
		char *c;

		for (i = 0; i < len; i++)
			if (iscntrl((unsigned char)v[i]))
				break;
		if (i == len || !(c = malloc(len + 1)))
			return;
		for (i = 0; i < len; i++)
			c[i] = iscntrl((unsigned char)v[i]) ? '?' : v[i];
		c[len] = '\0';
		json_object_set_string(o, c);
		free(c);
	}
}

/* The contention term's part of a decision: the loaded links the
 * placement crosses and those it avoided, with the running jobs' load. */
static void _print_contention(json_object *cc, FILE *out)
{
	json_object *links = _obj(cc, "links");

	if (!cc || !json_object_is_type(cc, json_type_object))
		return;
	fprintf(out, "Contention: weight %.2f; traffic %s; term %.1f us",
		_num(cc, "weight"), _str(cc, "traffic", "?"), _num(cc, "term"));
	if (_obj(cc, "without_term"))
		fprintf(out, "; without the term: nodes %s",
			_str(cc, "without_term", "?"));
	fputc('\n', out);
	if (!links || !json_object_is_type(links, json_type_array) ||
	    !json_object_array_length(links)) {
		fprintf(out, "            no shared link on its path or "
			     "isle's alone carries running jobs' traffic\n");
		return;
	}
	for (size_t i = 0; i < json_object_array_length(links); i++) {
		json_object *l = json_object_array_get_idx(links, i);
		json_object *av = _obj(l, "avoided");

		fprintf(
		    out,
		    "            %-8s %s %s uplinks: running jobs' load "
		    "%.1f of %.1f GPUs of traffic (%.0f%%)\n",
		    av && json_object_get_boolean(av) ? "avoided" : "crosses",
		    _str(l, "link", "?"), _str(l, "tier", "?"), _num(l, "load"),
		    _num(l, "capacity"), 100 * _num(l, "share"));
	}
}

static void _print_text(json_object *rec, FILE *out)
{
	json_object *rq = _obj(rec, "request"), *pl = _obj(rec, "placement");
	json_object *cands = _obj(rec, "candidates"), *per_node, *cost, *ideal;
	json_object *granted;

	fprintf(out, "Job %s: %s\n", _str(rec, "job_id", "?"),
		_str(rec, "line", ""));
	fprintf(out, "Cluster file: %s\n", _str(rec, "cluster_file", "?"));
	if (rq)
		fprintf(out,
			"Request:    gpus=%s nodes=%s gpus_per_node=%s tp=%s "
			"pp=%s mode=%s max_span=%s\n",
			_str(rq, "gpus", "0"), _str(rq, "nodes", "0"),
			_str(rq, "gpus_per_node", "0"), _str(rq, "tp", "1"),
			_str(rq, "pp", "1"), _str(rq, "mode", "?"),
			_str(rq, "max_span", "?"));
	if (pl) {
		fprintf(out, "Placement:  nodes %s;", _str(pl, "nodes", "?"));
		per_node = _obj(pl, "per_node");
		for (size_t i = 0;
		     per_node && i < json_object_array_length(per_node); i++) {
			json_object *n = json_object_array_get_idx(per_node, i);
			json_object *g = _obj(n, "gpus");

			fprintf(out, " %s GPUs ", _str(n, "node", "?"));
			if (g)
				_print_gpu_list(out, g);
			fputc(';', out);
		}
		fprintf(out,
			"\n            tp=%s pp=%s dp=%s; %s of %s TP groups "
			"inside one island; islands %s; leaf groups %s; widest "
			"tier %s\n",
			_str(pl, "tp", "?"), _str(pl, "pp", "?"),
			_str(pl, "dp", "?"), _str(pl, "tp_in_island", "?"),
			_str(pl, "tp_groups", "?"), _str(pl, "islands", "?"),
			_str(pl, "leafs", "?"), _str(pl, "span", "?"));
		cost = _obj(pl, "cost");
		ideal = _obj(pl, "ideal");
		fprintf(out,
			"Cost:       %.1f us (tp %.1f, pp %.1f, dp %.1f); "
			"empty-cluster optimum %.1f us; ratio %.2fx; "
			"fragmentation %.3f\n",
			_num(cost, "total"), _num(cost, "tp"), _num(cost, "pp"),
			_num(cost, "dp"), _num(ideal, "total"),
			_num(pl, "cost_ratio"), _num(pl, "frag"));
	}
	/* What Slurm granted when the job started (the saved record). */
	if ((granted = _obj(rec, "granted")) &&
	    json_object_is_type(granted, json_type_array)) {
		fprintf(out, "Granted:   ");
		for (size_t i = 0; i < json_object_array_length(granted); i++) {
			json_object *n = json_object_array_get_idx(granted, i);
			json_object *g = _obj(n, "gpus");

			fprintf(out, " %s GPUs ", _str(n, "node", "?"));
			if (g)
				_print_gpu_list(out, g);
			fputc(';', out);
		}
		fputc('\n', out);
	}
	if (cands && json_object_array_length(cands)) {
		fprintf(out, "Candidates: %-24s %-8s %12s %8s  %s\n", "scope",
			"tier", "cost(us)", "frag", "note");
		for (size_t i = 0; i < json_object_array_length(cands); i++) {
			json_object *c = json_object_array_get_idx(cands, i);
			json_object *chosen = _obj(c, "chosen");
			json_object *feas = _obj(c, "feasible");
			int ok = feas && json_object_get_boolean(feas);

			fprintf(out, "          %c %-24s %-8s ",
				chosen && json_object_get_boolean(chosen) ? '*'
									  : ' ',
				_str(c, "scope", "?"), _str(c, "tier", "?"));
			if (ok)
				fprintf(out, "%12.1f %8.3f", _num(c, "cost"),
					_num(c, "frag"));
			else
				fprintf(out, "%12s %8s", "-", "-");
			fprintf(out, "  %s\n", _str(c, "note", ""));
		}
	}
	_print_contention(_obj(rec, "contention"), out);
	fprintf(out, "Why:        %s\n", _str(rec, "why", "?"));
}

/*
 * The JSON form of the shim's report of job_id, added to rec as
 * "shim_report": the report as proto writes it (read and checked by
 * isle_report_read, written again by isle_report_write: one reader, one
 * writer), or null with "shim_report_error" saying why there is none.
 */
static void _json_report(json_object *rec, const char *reports_dir,
			 uint32_t job_id)
{
	char path[PATH_MAX], err[PATH_MAX + 256], *buf = NULL;
	json_object *rep = NULL;
	struct isle_report r;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (!reports_dir || !reports_dir[0])
		return;
	if (isle_report_path(reports_dir, job_id, path, sizeof(path))) {
		snprintf(err, sizeof(err), "%s: path too long", reports_dir);
		goto out;
	}
	rc = isle_report_read(path, &r, err, sizeof(err));
	if (rc == -ENOENT)
		snprintf(err, sizeof(err), "no report for job %u in %s", job_id,
			 reports_dir);
	if (rc)
		goto out;
	if (!(mem = open_memstream(&buf, &len))) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	rc = isle_report_write(&r, mem);
	fclose(mem);
	if (rc || !(rep = json_tokener_parse(buf)))
		snprintf(err, sizeof(err), "%s: cannot render", path);
out:
	free(buf);
	json_object_object_add(rec, "shim_report", rep);
	if (!rep)
		json_object_object_add(rec, "shim_report_error",
				       json_object_new_string(err));
}

int isle__explain_print(const char *path, int json, const char *reports_dir,
			uint32_t job_id, FILE *out, char *err, size_t errlen)
{
	json_object *rec;
	void *o;
	int rc = isle_record_read(path, &o, err, errlen);

	if (rc)
		return rc;
	rec = o;
	if (json) {
		_json_report(rec, reports_dir, job_id);
		fprintf(out, "%s\n",
			json_object_to_json_string_ext(
			    rec, JSON_C_TO_STRING_PRETTY));
	} else {
		_sanitize(rec);
		_print_text(rec, out);
	}
	json_object_put(rec);
	return 0;
}

static const char *const _class_names[ISLE_REPORT_CLASSES] = {
    "< 256 B",	      "256 B - 4 KiB", "4 - 64 KiB",
    "64 KiB - 1 MiB", "1 - 16 MiB",    ">= 16 MiB"};

int isle__explain_report(const char *reports_dir, uint32_t job_id, FILE *out)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct isle_report r;
	int rc, any = 0;

	if (!reports_dir || !reports_dir[0]) {
		fprintf(out, "Shim:       no report looked for (no reports "
			     "directory: --reports DIR or $ISLE_REPORTS_DIR, "
			     "plugstack.conf's reports=)\n");
		return 0;
	}
	if (isle_report_path(reports_dir, job_id, path, sizeof(path))) {
		fprintf(out, "Shim:       %s: path too long\n", reports_dir);
		return 0;
	}
	rc = isle_report_read(path, &r, err, sizeof(err));
	if (rc == -ENOENT) {
		fprintf(out,
			"Shim:       no report for job %u in %s (the shim did "
			"not run, the job has not ended, or the report was "
			"pruned)\n",
			job_id, reports_dir);
		return 0;
	}
	if (rc) {
		for (char *c = err; *c; c++)
			if (iscntrl((unsigned char)*c))
				*c = '?';
		fprintf(out, "Shim:       report unreadable: %s\n", err);
		return 0;
	}
	fprintf(out, "Shim:       %s, %d rank%s (report %s)\n", r.api, r.ranks,
		r.ranks == 1 ? "" : "s", path);
	fprintf(out, "            allreduce by size    %10s %10s\n", "taken",
		"passed");
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++)
		if (r.taken[k] || r.passed[k])
			fprintf(out, "              %-18s %10llu %10llu\n",
				_class_names[k], (unsigned long long)r.taken[k],
				(unsigned long long)r.passed[k]);
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		if (!r.sent[t] && !r.library[t])
			continue;
		if (!any)
			fprintf(out, "            %-8s %16s %16s %8s\n", "tier",
				"sent B", "a ring B", "saved");
		any = 1;
		fprintf(out, "            %-8s %16llu %16llu ",
			isle_scope_name((isle_scope)t),
			(unsigned long long)r.sent[t],
			(unsigned long long)r.library[t]);
		if (r.library[t])
			fprintf(out, "%7.1f%%",
				100.0 * (1.0 - (double)r.sent[t] /
						   (double)r.library[t]));
		else
			fprintf(out, "%8s", "-");
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r.codecs[t] & (1u << c))
				fprintf(
				    out, " %s",
				    isle_codec_kind_name((isle_codec_kind)c));
		fprintf(out, "\n");
	}
	if (!any)
		fprintf(out,
			"            no bytes through the shim's own path\n");
	if (r.probe_bytes)
		fprintf(out, "            crossover probe: %llu B in %.3f s\n",
			(unsigned long long)r.probe_bytes, r.probe_s);
	return 0;
}

/* StateSaveLocation from slurm.conf (last one wins, as in Slurm). */
static int _state_dir_from_conf(const char *conf, char *dir, size_t len)
{
	char line[4096];
	FILE *f = fopen(conf, "r");
	int found = 0;

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *hash, *end;

		if ((hash = strchr(p, '#')))
			*hash = '\0';
		while (isspace((unsigned char)*p))
			p++;
		if (strncasecmp(p, "StateSaveLocation", 17))
			continue;
		p += 17;
		while (isspace((unsigned char)*p))
			p++;
		if (*p++ != '=')
			continue;
		while (isspace((unsigned char)*p))
			p++;
		end = p + strcspn(p, " \t\r\n");
		*end = '\0';
		if (*p && (size_t)(end - p) < len) {
			snprintf(dir, len, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

/*
 * The "isle: ..." segment of the admin_comment in Slurm's JSON record of a
 * job (`scontrol --json show job`). Only an operator or the controller can
 * write admin_comment, and a field is not a text line: a user's comment
 * cannot pose as isle's word. isle's segment is the whole comment or
 * follows " | " (slurm_plugin's _merge_admin_comment). 0 or -ENOENT.
 */
int isle__explain_admin_comment(const char *json, char *buf, size_t len)
{
	json_object *root = json_tokener_parse(json), *jobs, *job, *ac;
	const char *s, *isle = NULL;
	int rc = -ENOENT;

	if (!root || !json_object_object_get_ex(root, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array) ||
	    json_object_array_length(jobs) != 1)
		goto out;
	job = json_object_array_get_idx(jobs, 0);
	if (!json_object_object_get_ex(job, "admin_comment", &ac) ||
	    !json_object_is_type(ac, json_type_string))
		goto out;
	s = json_object_get_string(ac);
	if (!strncmp(s, "isle: ", 6))
		isle = s;
	else if ((isle = strstr(s, " | isle: ")))
		isle += 3;
	if (isle) {
		snprintf(buf, len, "%s", isle);
		rc = 0;
	}
out:
	json_object_put(root);
	return rc;
}

/* isle's AdminComment segment for a job that has not started. */
static int _admin_comment_line(unsigned long job_id, char *buf, size_t len)
{
	char cmd[80], *json = NULL;
	size_t used = 0, cap = 0;
	int rc = -ENOENT;
	FILE *p;

	/* The id is a number parsed from the whole argument: no shell
	 * metacharacter can reach this command line. */
	snprintf(cmd, sizeof(cmd), "scontrol --json show job %lu 2>/dev/null",
		 job_id);
	if (!(p = popen(cmd, "r")))
		return -ENOENT;
	for (;;) {
		size_t n;

		if (used + 4096 + 1 > cap) {
			char *q;

			if (cap >= (64u << 20)) /* not a job record */
				goto out;
			cap = cap ? 2 * cap : 65536;
			if (!(q = realloc(json, cap)))
				goto out;
			json = q;
		}
		n = fread(json + used, 1, 4096, p);
		used += n;
		if (n < 4096)
			break;
	}
	json[used] = '\0';
	rc = isle__explain_admin_comment(json, buf, len);
out:
	pclose(p);
	free(json);
	return rc;
}

static void _usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: islectl explain [--state-dir DIR] [--reports DIR] [--json] "
	    "JOBID\n"
	    "  Prints topology/isle's placement decision for a job: the\n"
	    "  candidates considered, their scores and why the winner won,\n"
	    "  and, once the job has ended, its shim report.\n"
	    "  --state-dir: StateSaveLocation (default: $ISLE_STATE_DIR,\n"
	    "  else from $SLURM_CONF or /etc/slurm/slurm.conf).\n"
	    "  --reports: the shim's reports (plugstack.conf reports=;\n"
	    "  default $ISLE_REPORTS_DIR).\n"
	    "  --json: the decision record as JSON, with the shim's report\n"
	    "  as \"shim_report\".\n");
}

/* islectl's subcommand (topology/islectl.h). */
int isle__cmd_explain(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"state-dir", required_argument, NULL, 's'},
	    {"reports", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char dir[PATH_MAX] = "", rdir[PATH_MAX], path[PATH_MAX];
	const char *reports = getenv("ISLE_REPORTS_DIR");
	char err[PATH_MAX + 128];
	const char *conf, *env;
	char *end;
	unsigned long job_id;
	int c, json = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:r:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			snprintf(dir, sizeof(dir), "%s", optarg);
			break;
		case 'r':
			reports = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			_usage(stdout);
			return 0;
		default:
			_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		_usage(stderr);
		return 2;
	}
	errno = 0;
	job_id = strtoul(argv[optind], &end, 10);
	if (errno || end == argv[optind] || *end || !job_id ||
	    job_id > UINT32_MAX) {
		fprintf(stderr, "islectl explain: invalid job id '%s'\n",
			argv[optind]);
		return 2;
	}
	if (!dir[0] && (env = getenv("ISLE_STATE_DIR")) && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	if (!dir[0]) {
		conf = getenv("SLURM_CONF");
		if (!conf || !*conf)
			conf = "/etc/slurm/slurm.conf";
		if (_state_dir_from_conf(conf, dir, sizeof(dir))) {
			fprintf(stderr,
				"islectl explain: no StateSaveLocation in %s; "
				"use --state-dir\n",
				conf);
			return 1;
		}
	}
	if (isle_record_dir(dir, rdir, sizeof(rdir)) ||
	    isle_record_path(rdir, (uint32_t)job_id, "", path, sizeof(path))) {
		fprintf(stderr, "islectl explain: %s: path too long\n", dir);
		return 1;
	}
	if (isle__explain_print(path, json, reports, (uint32_t)job_id, stdout,
				err, sizeof(err))) {
		char line[4096];

		if (!json &&
		    _admin_comment_line(job_id, line, sizeof(line)) == 0) {
			for (char *c = line; *c; c++)
				if (iscntrl((unsigned char)*c))
					*c = '?';
			printf("Job %lu: %s\n"
			       "(no decision record: it is written when the "
			       "job starts; this is the job's latest decision "
			       "from its AdminComment)\n",
			       job_id, line);
			return 0;
		}
		fprintf(
		    stderr,
		    "islectl explain: job %lu: no isle decision record (%s)\n",
		    job_id, err);
		return 1;
	}
	if (!json)
		isle__explain_report(reports, (uint32_t)job_id, stdout);
	return 0;
}
