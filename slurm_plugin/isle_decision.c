/*
 * isle_decision.c - what topology/isle tells people about a placement.
 *
 * Two outputs per decision:
 *   - one "isle: ..." line merged into the job's AdminComment, which
 *     `scontrol show job` prints and slurmctld saves with the job state;
 *   - a JSON record StateSaveLocation/isle/job_<id>.json with the request,
 *     the placement, the candidates the engine weighed and why the winner
 *     won. `islectl explain <jobid>` prints it (topology/islectl_explain.c).
 *
 * The line's head for each outcome is proto's (isle_record_outcome_prefix),
 * the text islectl and isle-exporter match when they read it back.
 *
 * cons_tres evaluates pending jobs many times (submit test, main scheduler,
 * backfill's plans), with the job and node write locks held. Records stay in
 * memory (isle_store.c) and are only rebuilt when the line changed; the
 * store's writer thread writes the decision that started the job and removes
 * the files of jobs Slurm has purged. Which jobs those are is asked of
 * Slurm by the watcher below, a thread of its own, under a job read lock.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "isle_decision.h"

#include "isle_compat.h"
#include "isle_jobinfo.h"
#include "isle_model.h"
#include "isle_store.h"

#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/gres.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#define LINE_SEP " | "
#define PROBE_PERIOD_MS 1000

/*
 * The store key of a decision. A pending array's meta record is evaluated
 * for its next task (the scheduler sets array_task_id first); when the task
 * starts it is split off under a new job id, so the key names the task.
 */
static uint64_t _key(job_record_t *job_ptr)
{
	if (job_ptr->array_recs && job_ptr->array_task_id != NO_VAL)
		return ((uint64_t)job_ptr->array_task_id + 1) << 32 |
		       job_ptr->array_job_id;
	return job_ptr->job_id;
}

/* Per node GPU indices Slurm granted the started job, as the store's JSON
 * array (NULL if the job has no GPU bitmaps). Job and node read locks. */
static char *_granted(job_record_t *job_ptr)
{
	job_resources_t *jr = job_ptr->job_resrcs;
	json_object *arr;
	char *out = NULL;
	int j = 0, any = 0;

	if (!jr || !jr->node_bitmap || !job_ptr->gres_list_alloc)
		return NULL;
	arr = json_object_new_array();
	for (int i = 0; next_node_bitmap(jr->node_bitmap, &i); i++, j++) {
		json_object *n = json_object_new_object(), *g;
		bitstr_t *b = isle__model_job_gpus(job_ptr, j);

		g = json_object_new_array();
		for (int k = 0; b && k < bit_size(b); k++)
			if (bit_test(b, k))
				json_object_array_add(g,
						      json_object_new_int(k));
		any |= b != NULL;
		FREE_NULL_BITMAP(b);
		json_object_object_add(
		    n, "node",
		    json_object_new_string(node_record_table_ptr[i]->name));
		json_object_object_add(n, "gpus", g);
		json_object_array_add(arr, n);
	}
	if (any)
		out = strdup(json_object_to_json_string_ext(
		    arr, JSON_C_TO_STRING_PLAIN));
	json_object_put(arr);
	return out;
}

/*
 * The watcher: a thread that asks Slurm which jobs with a decision have
 * started (the store files their decision, with what the scheduler
 * granted) or are gone (purged after MinJobAge, or never accepted: the
 * record goes). It looks every PROBE_PERIOD_MS, or sooner when kicked, but
 * at most once per PROBE_MIN_GAP_MS: a busy scheduler kicks on every
 * evaluation and each look takes Slurm's job read lock.
 */
#define PROBE_MIN_GAP_MS 100

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int running, stop, kicked;
} watch = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

enum { WATCH_GONE, WATCH_PENDING, WATCH_STARTED };

static void _sweep(void)
{
	slurmctld_lock_t job_read = {.job = READ_LOCK, .node = READ_LOCK};
	uint64_t *keys;
	uint8_t *unsaved, *state;
	uint32_t *ids;
	char **gpus;
	int n = isle__store_keys(&keys, &unsaved);

	if (n <= 0)
		goto out;
	state = xcalloc(n, sizeof(*state));
	ids = xcalloc(n, sizeof(*ids));
	gpus = xcalloc(n, sizeof(*gpus));
	lock_slurmctld(job_read);
	for (int i = 0; i < n; i++) {
		job_record_t *job_ptr;

		if (keys[i] > UINT32_MAX)
			job_ptr = find_job_array_rec(
			    (uint32_t)keys[i], (uint32_t)(keys[i] >> 32) - 1);
		else
			job_ptr = find_job_record((uint32_t)keys[i]);
		if (!job_ptr)
			state[i] = WATCH_GONE;
		else if (IS_JOB_PENDING(job_ptr) || !job_ptr->nodes ||
			 !job_ptr->nodes[0])
			/* not started, or ended without starting (cancelled
			 * while pending): nothing to save */
			state[i] = WATCH_PENDING;
		else {
			state[i] = WATCH_STARTED;
			ids[i] = job_ptr->job_id;
			if (unsaved[i])
				gpus[i] = _granted(job_ptr);
		}
	}
	unlock_slurmctld(job_read);
	/* The store's calls, without Slurm's lock: they never block. */
	for (int i = 0; i < n; i++) {
		if (state[i] == WATCH_GONE)
			(void)isle__store_purge(keys[i]);
		else if (state[i] == WATCH_STARTED)
			(void)isle__store_started(keys[i], ids[i], gpus[i]);
		else
			free(gpus[i]);
	}
	xfree(state);
	xfree(ids);
	xfree(gpus);
out:
	free(keys);
	free(unsaved);
}

static void _add_ms(struct timespec *t, unsigned ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool _reached(const struct timespec *now, const struct timespec *t)
{
	return now->tv_sec > t->tv_sec ||
	       (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static void *_watch_run(void *arg)
{
	struct timespec last, due, now;

	(void)arg;
	pthread_mutex_lock(&watch.lock);
	clock_gettime(CLOCK_MONOTONIC, &last);
	while (!watch.stop) {
		due = last;
		_add_ms(&due,
			watch.kicked ? PROBE_MIN_GAP_MS : PROBE_PERIOD_MS);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (_reached(&now, &due)) {
			watch.kicked = 0;
			pthread_mutex_unlock(&watch.lock);
			_sweep();
			pthread_mutex_lock(&watch.lock);
			clock_gettime(CLOCK_MONOTONIC, &last);
			continue;
		}
		pthread_cond_timedwait(&watch.cond, &watch.lock, &due);
	}
	pthread_mutex_unlock(&watch.lock);
	return NULL;
}

static int _watch_start(void)
{
	pthread_condattr_t ca;
	int rc = 0;

	pthread_mutex_lock(&watch.lock);
	if (watch.running)
		goto out;
	/* timedwait deadlines are on the monotonic clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&watch.cond, &ca);
	pthread_condattr_destroy(&ca);
	watch.stop = 0;
	rc = -pthread_create(&watch.thread, NULL, _watch_run, NULL);
	watch.running = !rc;
out:
	pthread_mutex_unlock(&watch.lock);
	return rc;
}

static void _watch_stop(void)
{
	pthread_mutex_lock(&watch.lock);
	if (!watch.running) {
		pthread_mutex_unlock(&watch.lock);
		return;
	}
	watch.stop = 1;
	pthread_cond_signal(&watch.cond);
	pthread_mutex_unlock(&watch.lock);
	pthread_join(watch.thread, NULL);
	pthread_mutex_lock(&watch.lock);
	watch.running = 0;
	pthread_cond_destroy(&watch.cond);
	pthread_mutex_unlock(&watch.lock);
}

/* Asks the watcher to look now (a decision that may start a job), instead
 * of at its next period. */
static void _kick(void)
{
	pthread_mutex_lock(&watch.lock);
	if (watch.running) {
		watch.kicked = 1;
		pthread_cond_signal(&watch.cond);
	}
	pthread_mutex_unlock(&watch.lock);
}

static void _store_log(int level, const char *msg)
{
	if (level == ISLE_STORE_LOG_ERROR)
		error("%s", msg);
	else if (level == ISLE_STORE_LOG_INFO)
		info("%s", msg);
	else
		debug("%s", msg);
}

void isle__decision_init(void)
{
	char dir[PATH_MAX];
	int rc;

	if (!running_in_slurmctld())
		return;
	rc = isle_record_dir(slurm_conf.state_save_location, dir, sizeof(dir));
	if (!rc)
		rc = isle__store_init(dir, _store_log);
	if (!rc)
		rc = _watch_start();
	if (rc)
		error("isle: cannot start the decision record writer: %s",
		      strerror(-rc));
}

void isle__decision_fini(void)
{
	_watch_stop();
	isle__store_fini();
}

/* Keeps (line, o) as the job's decision; consumes o. */
static void _store(job_record_t *job_ptr, const char *line, json_object *o,
		   bool may_start)
{
	int rc = isle__store_put(
	    _key(job_ptr), line,
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));

	if (rc < 0)
		error("isle: %pJ: cannot keep the decision record: %s", job_ptr,
		      strerror(-rc));
	json_object_put(o);
	/* The job may start at the end of this scheduling pass: let the
	 * writer look soon rather than at its next period. */
	if (may_start)
		_kick();
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

/*
 * The job's current decision as its topology info, where the release keeps
 * one (26.05): Slurm clears it before each evaluation and packs it into the
 * job's saved state, so it is set on every evaluation, from the store.
 */
static void _jobinfo_set(job_record_t *job_ptr, const char *line,
			 const struct isle_place_result *res,
			 const char *islands)
{
	uint64_t key;
	char *record;

	if (!isle__compat_has_jobinfo)
		return;
	key = _key(job_ptr);
	record = isle__store_get(key);
	isle__compat_set_jobinfo(
	    job_ptr,
	    isle__jobinfo_create(job_ptr, key, line, res, islands, record));
	free(record);
}

void isle__decision_restore(uint64_t key, const char *line, const char *record)
{
	int rc = isle__store_put(key, line, record);

	if (rc < 0)
		error("isle: cannot restore the decision record of job key "
		      "%" PRIu64 ": %s",
		      key, strerror(-rc));
	else if (rc > 0)
		_kick();
}

/* r's line: proto's head for the outcome, then the placement's figures
 * or ": REASON" (new string). */
static char *_line(const struct isle__eval_result *r, const char *nodes,
		   const char *islands)
{
	const char *head = isle_record_outcome_prefix(r->outcome);
	const struct isle_place_result *res = &r->res;

	switch (r->outcome) {
	case ISLE_OUTCOME_PLACED:
	case ISLE_OUTCOME_PLANNED:
		/* PLACED's head is "isle: tp=", PLANNED's "isle: planned " */
		return xstrdup_printf(
		    "%s%s%d pp=%d dp=%d nodes=%s islands=%s leafs=%d "
		    "tp_in_island=%d/%d cost=%.2fx",
		    head, r->outcome == ISLE_OUTCOME_PLANNED ? "tp=" : "",
		    res->tp, res->pp, res->dp, nodes, islands, res->leafs,
		    res->tp_in_island, res->ntp_groups, _ratio(res));
	case ISLE_OUTCOME_FALLBACK:
		return xstrdup_printf("%s (cannot load the cluster file: %s): "
				      "%s",
				      head, isle__ctx.load_error, r->reason);
	default:
		return xstrdup_printf("%s: %s", head, r->reason);
	}
}

/* A shared link's name: the uplinks of a leaf group are named by its
 * first node's leaf switch, those of a spine group by that switch's first
 * spine; "leaf-group-N" where the file names none. */
static const char *_link_name(const isle_topo *t,
			      const struct isle__eval_link *lk, char *buf,
			      size_t len)
{
	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];
		const struct isle_switch *sw;

		if (n->group[lk->tier] != lk->group)
			continue;
		if (n->leaf < 0 || n->leaf >= t->nswitches)
			break;
		sw = &t->switches[n->leaf];
		if (lk->tier == ISLE_TIER_LEAF)
			return sw->name;
		if (sw->nup > 0 && sw->up[0] >= 0 && sw->up[0] < t->nswitches)
			return t->switches[sw->up[0]].name;
		break;
	}
	snprintf(buf, len, "%s-group-%d", isle_tier_name(lk->tier), lk->group);
	return buf;
}

static double _share(const struct isle__eval_link *lk)
{
	return lk->cap > 0 ? lk->load / lk->cap : 0;
}

/* Nodes of the term-blind placement, as "a,b" (model names). */
static char *_blind_names(const isle_topo *t, const struct isle__eval_result *r)
{
	char *s = NULL;

	for (int k = 0; k < r->blind_nnodes; k++)
		xstrfmtcat(s, "%s%s", k ? "," : "",
			   t->nodes[r->blind_nodes[k]].name);
	return s;
}

/* The record's "contention" object: the weight, the term of the choice
 * and each loaded link crossed or avoided, with its load. */
static json_object *_contention_json(const isle_topo *t,
				     const struct isle__eval_result *r)
{
	json_object *o = json_object_new_object(), *arr;
	char buf[64], *blind = _blind_names(t, r);

	json_object_object_add(o, "weight",
			       json_object_new_double(isle__ctx.cc_weight));
	json_object_object_add(o, "term",
			       json_object_new_double(r->res.contention));
	json_object_object_add(o, "traffic",
			       json_object_new_string(isle_traffic_name(
				   isle_traffic_of(&r->req))));
	if (blind)
		json_object_object_add(o, "without_term",
				       json_object_new_string(blind));
	arr = json_object_new_array();
	for (int i = 0; i < r->nlinks; i++) {
		const struct isle__eval_link *lk = &r->links[i];
		json_object *l = json_object_new_object();

		json_object_object_add(l, "link",
				       json_object_new_string(_link_name(
					   t, lk, buf, sizeof(buf))));
		json_object_object_add(
		    l, "tier",
		    json_object_new_string(isle_tier_name(lk->tier)));
		json_object_object_add(l, "load",
				       json_object_new_double(lk->load));
		json_object_object_add(l, "capacity",
				       json_object_new_double(lk->cap));
		json_object_object_add(l, "share",
				       json_object_new_double(_share(lk)));
		json_object_object_add(l, "avoided",
				       json_object_new_boolean(lk->avoided));
		json_object_array_add(arr, l);
	}
	json_object_object_add(o, "links", arr);
	xfree(blind);
	return o;
}

/* "; avoided leaf1 (running jobs' load 8.0 of 16.0, 50%), which isle
 * without the contention term would cross (n03,n09)", or "". */
static char *_why_avoided(const isle_topo *t, const struct isle__eval_result *r)
{
	char buf[64], *s = NULL, *blind;
	int n = 0;

	for (int i = 0; i < r->nlinks; i++) {
		const struct isle__eval_link *lk = &r->links[i];

		if (!lk->avoided)
			continue;
		xstrfmtcat(s,
			   "%s%s uplinks (running jobs' load %.1f of %.1f, "
			   "%.0f%%)",
			   n++ ? ", " : "; avoided ",
			   _link_name(t, lk, buf, sizeof(buf)), lk->load,
			   lk->cap, 100 * _share(lk));
	}
	if (!s)
		return xstrdup("");
	blind = _blind_names(t, r);
	xstrfmtcat(s,
		   ", which isle without the contention term would cross "
		   "(on %s)",
		   blind ? blind : "other nodes");
	xfree(blind);
	return s;
}

static void _record_placed(const struct isle__eval_result *r)
{
	job_record_t *job_ptr = r->job_ptr;
	const struct isle_place_result *res = &r->res;
	const isle_topo *t = isle__ctx.topo;
	bool planned = r->outcome == ISLE_OUTCOME_PLANNED;
	char *nodes = bitmap2node_name(r->node_map);
	char *islands = _island_names(t, res);
	char *line = _line(r, nodes, islands), *why, *sig;
	json_object *o;

	_merge_admin_comment(job_ptr, line);
	/* The line names no GPUs: two decisions on the same nodes with
	 * other GPUs differ, so the store compares both. */
	sig = xstrdup(line);
	for (int k = 0; k < res->nnodes; k++)
		xstrfmtcat(sig, " %d:%" PRIx64, res->nodes[k], res->masks[k]);
	if (!isle__store_same(_key(job_ptr), sig)) {
		why = _why(t, res, r->cands, r->ncands);
		if (isle__ctx.cc_weight > 0) {
			char *av = _why_avoided(t, r);

			xstrcat(why, av);
			xfree(av);
		}
		debug("isle: %pJ: %s (%s)", job_ptr, line, why);
		o = _record_json(job_ptr, line, why);
		json_object_object_add(o, "planned",
				       json_object_new_boolean(planned));
		json_object_object_add(o, "request",
				       _request_json(&r->req, res->nranks));
		json_object_object_add(o, "placement",
				       _placement_json(t, res, nodes, islands));
		json_object_object_add(o, "candidates",
				       _cands_json(t, r->cands, r->ncands));
		if (isle__ctx.cc_weight > 0)
			json_object_object_add(o, "contention",
					       _contention_json(t, r));
		_store(job_ptr, sig, o, !planned);
		xfree(why);
	} else if (!planned) {
		_kick();
	}
	_jobinfo_set(job_ptr, line, res, islands);
	xfree(sig);
	xfree(line);
	xfree(islands);
	xfree(nodes);
}

/* isle did not place the job: "isle: WORD: REASON" and a record without
 * placement, so `islectl explain` tells why. */
static void _record_none(const struct isle__eval_result *r)
{
	job_record_t *job_ptr = r->job_ptr;
	char *line = _line(r, NULL, NULL);
	/* "WORD: REASON", for the log */
	const char *said = line + strlen("isle: ");
	bool may_start = r->outcome == ISLE_OUTCOME_DEFAULT ||
			 r->outcome == ISLE_OUTCOME_FALLBACK;
	json_object *o;

	_merge_admin_comment(job_ptr, line);
	if (!isle__store_same(_key(job_ptr), line)) {
		/* Once per job and reason, not per evaluation: options
		 * refused here (a job that bypassed sbatch), requests that
		 * can never be placed and the fallback are said where admins
		 * look; the rest at debug level. */
		if (!r->have_req || r->outcome == ISLE_OUTCOME_REFUSED ||
		    r->fallback)
			info("isle: %pJ: %s", job_ptr, said);
		else
			debug("isle: %pJ: %s", job_ptr, said);
		o = _record_json(job_ptr, line, r->reason);
		if (r->have_req)
			json_object_object_add(o, "request",
					       _request_json(&r->req, 0));
		if (isle__ctx.topo)
			json_object_object_add(
			    o, "candidates",
			    _cands_json(isle__ctx.topo, r->cands, r->ncands));
		_store(job_ptr, line, o, may_start);
	} else if (may_start) {
		_kick();
	}
	_jobinfo_set(job_ptr, line, NULL, NULL);
	xfree(line);
}

void isle__decision_record(const struct isle__eval_result *r)
{
	if (r->outcome == ISLE_OUTCOME_PLACED ||
	    r->outcome == ISLE_OUTCOME_PLANNED)
		_record_placed(r);
	else
		_record_none(r);
}
