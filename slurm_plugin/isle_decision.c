/*
 * isle_decision.c - what topology/isle tells people about a placement.
 *
 * Two outputs per decision:
 *   - one "isle: ..." line merged into the job's AdminComment, which
 *     `scontrol show job` prints and slurmctld saves with the job state;
 *   - a JSON record StateSaveLocation/isle/job_<id>.json with the request,
 *     the placement, the candidates the engine weighed and why the winner
 *     won. `islectl explain <jobid>` prints it (slurm_plugin/explain.c).
 *
 * cons_tres evaluates pending jobs many times (backfill, will-run tests), so
 * a record is only rewritten when the decision changed; the last write is
 * the one made when the job started.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "isle_compat.h"

#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#define CACHE_SLOTS 4096
#define LINE_SEP " | "

static struct {
	uint32_t job_id;
	uint32_t hash;
} cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

void isle__decision_reset(void)
{
	slurm_mutex_lock(&cache_lock);
	memset(cache, 0, sizeof(cache));
	slurm_mutex_unlock(&cache_lock);
}

static uint32_t _hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h ? h : 1;
}

/* True if (job, text) differs from the last decision recorded for job. */
static bool _changed(uint32_t job_id, const char *text)
{
	uint32_t h = _hash(text), slot = job_id % CACHE_SLOTS;
	bool changed;

	slurm_mutex_lock(&cache_lock);
	changed = cache[slot].job_id != job_id || cache[slot].hash != h;
	cache[slot].job_id = job_id;
	cache[slot].hash = h;
	slurm_mutex_unlock(&cache_lock);
	return changed;
}

static const char *_scope_name(const isle_topo *t,
			       const struct isle_place_cand *cd, char *buf,
			       size_t len)
{
	switch (cd->scope_tier) {
	case ISLE_TIER_NODE:
		if (cd->scope >= 0 && cd->scope < t->nnodes)
			return t->nodes[cd->scope].name;
		break;
	case ISLE_TIER_ISLAND:
		if (cd->scope >= 0 && cd->scope < t->nislands)
			return t->islands[cd->scope].name;
		break;
	case ISLE_TIER_CORE:
		return "cluster";
	default:
		break;
	}
	snprintf(buf, len, "%s-group-%d", isle_tier_name(cd->scope_tier),
		 cd->scope);
	return buf;
}

/* Distinct islands of the placement's GPUs, as "a,b". */
static char *_island_names(const isle_topo *t,
			   const struct isle_place_result *res)
{
	char *out = NULL;
	int *seen = xcalloc(MAX(t->nislands, 1), sizeof(int));

	for (int r = 0; r < res->nranks; r++) {
		const struct isle_node *n = &t->nodes[res->ranks[r].node];
		int isl = n->gpus[res->ranks[r].gpu].island;

		if (isl < 0 || isl >= t->nislands || seen[isl])
			continue;
		seen[isl] = 1;
		xstrfmtcat(out, "%s%s", out ? "," : "", t->islands[isl].name);
	}
	xfree(seen);
	return out ? out : xstrdup("none");
}

static double _ratio(const struct isle_place_result *res)
{
	if (res->ideal.total <= 0.0)
		return 1.0;
	return res->cost.total / res->ideal.total;
}

/* Replaces any earlier "isle:" segment of the AdminComment with line. */
static void _merge_admin_comment(job_record_t *job_ptr, const char *line)
{
	char *old = job_ptr->admin_comment, *keep = NULL, *p;

	if (old) {
		keep = xstrdup(old);
		if (!strncmp(keep, "isle:", 5))
			keep[0] = '\0';
		else if ((p = strstr(keep, LINE_SEP "isle:")))
			*p = '\0';
	}
	xfree(job_ptr->admin_comment);
	if (keep && keep[0])
		job_ptr->admin_comment =
		    xstrdup_printf("%s" LINE_SEP "%s", keep, line);
	else
		job_ptr->admin_comment = xstrdup(line);
	xfree(keep);
}

static json_object *_cost_json(const struct isle_place_cost *c)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "tp", json_object_new_double(c->tp));
	json_object_object_add(o, "pp", json_object_new_double(c->pp));
	json_object_object_add(o, "dp", json_object_new_double(c->dp));
	json_object_object_add(o, "total", json_object_new_double(c->total));
	return o;
}

static bool _same_scope(const struct isle_place_cand *a,
			const struct isle_place_cand *b)
{
	return a->scope_tier == b->scope_tier && a->scope == b->scope;
}

/* One sentence on why the winner won, against the best feasible candidate
 * of another scope. */
static char *_why(const isle_topo *t, const struct isle_place_result *res,
		  const struct isle_place_cand *cands, int ncands)
{
	const struct isle_place_cand *win = NULL, *next = NULL;
	const char *w, *n;
	char b1[64], b2[64];

	for (int i = 0; i < ncands; i++)
		if (cands[i].chosen)
			win = &cands[i];
	for (int i = 0; win && i < ncands; i++) {
		const struct isle_place_cand *k = &cands[i];

		if (!k->feasible || _same_scope(k, win))
			continue;
		if (!next || k->cost < next->cost ||
		    (k->cost == next->cost && k->frag < next->frag))
			next = k;
	}
	if (!win)
		return xstrdup_printf("the engine's best placement; cost %.2fx "
				      "of the empty-cluster optimum",
				      _ratio(res));
	w = _scope_name(t, win, b1, sizeof(b1));
	if (!next)
		return xstrdup_printf("%s is the only scope that fits; cost "
				      "%.2fx of the empty-cluster optimum",
				      w, _ratio(res));
	n = _scope_name(t, next, b2, sizeof(b2));
	if (win->cost < next->cost)
		return xstrdup_printf("%s has the lowest modelled cost (%.1f "
				      "us vs %.1f us in %s)",
				      w, win->cost, next->cost, n);
	if (win->frag < next->frag)
		return xstrdup_printf("%s ties on cost with %s and leaves less "
				      "fragmentation (%.3f vs %.3f)",
				      w, n, win->frag, next->frag);
	return xstrdup_printf("%s ties with %s on cost and fragmentation; "
			      "kept as the first found (tightest fit first)",
			      w, n);
}

static json_object *_request_json(const struct isle_place_req *req, int gpus)
{
	json_object *rq = json_object_new_object();

	json_object_object_add(
	    rq, "gpus", json_object_new_int(req->gpus ? req->gpus : gpus));
	json_object_object_add(rq, "nodes", json_object_new_int(req->nodes));
	json_object_object_add(rq, "gpus_per_node",
			       json_object_new_int(req->gpus_per_node));
	json_object_object_add(rq, "tp", json_object_new_int(req->tp));
	json_object_object_add(rq, "pp", json_object_new_int(req->pp));
	json_object_object_add(
	    rq, "mode",
	    json_object_new_string(isle_place_mode_name(req->mode)));
	json_object_object_add(
	    rq, "max_span",
	    json_object_new_string(isle_tier_name(req->max_span)));
	return rq;
}

static json_object *_placement_json(const isle_topo *t,
				    const struct isle_place_result *res,
				    const char *nodes, const char *islands)
{
	json_object *pl = json_object_new_object(), *arr;

	json_object_object_add(pl, "nodes", json_object_new_string(nodes));
	arr = json_object_new_array();
	for (int k = 0; k < res->nnodes; k++) {
		json_object *n = json_object_new_object(), *g;

		json_object_object_add(
		    n, "node",
		    json_object_new_string(t->nodes[res->nodes[k]].name));
		g = json_object_new_array();
		for (int b = 0; b < 64; b++)
			if ((res->masks[k] >> b) & 1)
				json_object_array_add(g,
						      json_object_new_int(b));
		json_object_object_add(n, "gpus", g);
		json_object_array_add(arr, n);
	}
	json_object_object_add(pl, "per_node", arr);
	json_object_object_add(pl, "tp", json_object_new_int(res->tp));
	json_object_object_add(pl, "pp", json_object_new_int(res->pp));
	json_object_object_add(pl, "dp", json_object_new_int(res->dp));
	json_object_object_add(pl, "tp_groups",
			       json_object_new_int(res->ntp_groups));
	json_object_object_add(pl, "tp_in_island",
			       json_object_new_int(res->tp_in_island));
	json_object_object_add(pl, "islands", json_object_new_string(islands));
	json_object_object_add(pl, "leafs", json_object_new_int(res->leafs));
	json_object_object_add(
	    pl, "span", json_object_new_string(isle_tier_name(res->span)));
	json_object_object_add(pl, "cost", _cost_json(&res->cost));
	json_object_object_add(pl, "ideal", _cost_json(&res->ideal));
	json_object_object_add(pl, "cost_ratio",
			       json_object_new_double(_ratio(res)));
	json_object_object_add(pl, "frag", json_object_new_double(res->frag));
	return pl;
}

static json_object *_cands_json(const isle_topo *t,
				const struct isle_place_cand *cands, int ncands)
{
	json_object *ca = json_object_new_array();
	char buf[64];

	for (int i = 0; i < ncands; i++) {
		json_object *cd = json_object_new_object();

		json_object_object_add(cd, "scope",
				       json_object_new_string(_scope_name(
					   t, &cands[i], buf, sizeof(buf))));
		json_object_object_add(cd, "tier",
				       json_object_new_string(isle_tier_name(
					   cands[i].scope_tier)));
		json_object_object_add(
		    cd, "feasible", json_object_new_boolean(cands[i].feasible));
		if (cands[i].feasible) {
			json_object_object_add(
			    cd, "cost", json_object_new_double(cands[i].cost));
			json_object_object_add(
			    cd, "frag", json_object_new_double(cands[i].frag));
		}
		json_object_object_add(
		    cd, "chosen", json_object_new_boolean(cands[i].chosen));
		json_object_object_add(cd, "note",
				       json_object_new_string(cands[i].note));
		json_object_array_add(ca, cd);
	}
	return ca;
}

/* A record's common part: who, when, the line and why. */
static json_object *_record_json(job_record_t *job_ptr, const char *line,
				 const char *why)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "job_id",
			       json_object_new_int64(job_ptr->job_id));
	json_object_object_add(o, "time", json_object_new_int64(time(NULL)));
	json_object_object_add(o, "cluster_file",
			       json_object_new_string(isle__ctx.path));
	json_object_object_add(o, "line", json_object_new_string(line));
	json_object_object_add(o, "why", json_object_new_string(why));
	return o;
}

/* Writes StateSaveLocation/isle/job_<id>.json atomically; consumes o. */
static void _save_record(job_record_t *job_ptr, json_object *o)
{
	char *dir = NULL, *path = NULL, *tmp = NULL;

	dir = xstrdup_printf("%s/%s", slurm_conf.state_save_location,
			     ISLE_STATE_SUBDIR);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		error("isle: cannot create %s: %m", dir);
		goto out;
	}
	path = xstrdup_printf("%s/job_%u.json", dir, job_ptr->job_id);
	/* One temporary file per writer: two threads recording the same job
	 * must not interleave their bytes in one file. */
	tmp = xstrdup_printf("%s.%lx.new", path, (unsigned long)pthread_self());
	if (json_object_to_file_ext(tmp, o, JSON_C_TO_STRING_PRETTY) ||
	    rename(tmp, path)) {
		error("isle: cannot write decision record %s: %m", path);
		(void)unlink(tmp);
	}
out:
	json_object_put(o);
	xfree(dir);
	xfree(path);
	xfree(tmp);
}

/* The decision as the job's topology info (releases that keep one). */
static void _jobinfo_set(job_record_t *job_ptr, const char *line,
			 const struct isle_place_result *res,
			 const char *islands, json_object *o)
{
	if (!isle__compat_has_jobinfo)
		return;
	isle__compat_set_jobinfo(
	    job_ptr, isle__jobinfo_create(job_ptr, line, res, islands,
					  json_object_to_json_string_ext(
					      o, JSON_C_TO_STRING_PRETTY)));
}

void isle__decision_record(job_record_t *job_ptr,
			   const struct isle_place_req *req,
			   const struct isle_place_result *res,
			   const struct isle_place_cand *cands, int ncands,
			   bitstr_t *node_map, bool planned)
{
	const isle_topo *t = isle__ctx.topo;
	char *nodes = bitmap2node_name(node_map);
	char *islands = _island_names(t, res);
	char *line, *why = NULL;
	json_object *o;
	bool changed;

	line = xstrdup_printf("isle: %stp=%d pp=%d dp=%d nodes=%s islands=%s "
			      "leafs=%d tp_in_island=%d/%d cost=%.2fx",
			      planned ? "planned " : "", res->tp, res->pp,
			      res->dp, nodes, islands, res->leafs,
			      res->tp_in_island, res->ntp_groups, _ratio(res));
	_merge_admin_comment(job_ptr, line);
	/* Where Slurm keeps per-job topology info it clears it before each
	 * evaluation: the record goes there every time, to the file only
	 * when it changed. */
	changed = _changed(job_ptr->job_id, line);
	if (changed || isle__compat_has_jobinfo) {
		why = _why(t, res, cands, ncands);
		o = _record_json(job_ptr, line, why);
		json_object_object_add(o, "planned",
				       json_object_new_boolean(planned));
		json_object_object_add(o, "request",
				       _request_json(req, res->nranks));
		json_object_object_add(o, "placement",
				       _placement_json(t, res, nodes, islands));
		json_object_object_add(o, "candidates",
				       _cands_json(t, cands, ncands));
		_jobinfo_set(job_ptr, line, res, islands, o);
		if (changed) {
			debug("isle: %pJ: %s (%s)", job_ptr, line, why);
			_save_record(job_ptr, o);
		} else {
			json_object_put(o);
		}
	}
	xfree(why);
	xfree(line);
	xfree(islands);
	xfree(nodes);
}

void isle__decision_none(job_record_t *job_ptr,
			 const struct isle_place_req *req, const char *what,
			 const char *reason,
			 const struct isle_place_cand *cands, int ncands)
{
	char *line = xstrdup_printf("isle: %s: %s", what, reason);
	json_object *o;
	bool changed;

	_merge_admin_comment(job_ptr, line);
	changed = _changed(job_ptr->job_id, line);
	if (changed || isle__compat_has_jobinfo) {
		o = _record_json(job_ptr, line, reason);
		json_object_object_add(o, "request", _request_json(req, 0));
		json_object_object_add(
		    o, "candidates",
		    _cands_json(isle__ctx.topo, cands, ncands));
		_jobinfo_set(job_ptr, line, NULL, NULL, o);
		if (changed)
			_save_record(job_ptr, o);
		else
			json_object_put(o);
	}
	xfree(line);
}
