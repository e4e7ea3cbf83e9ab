/*
 * isle_eval.c - node selection for topology/isle.
 *
 * cons_tres has already narrowed node_map to the nodes this job may use
 * (partition, constraints, reservations, exclusive, node state) and filled
 * avail_res_array with what each node can give it. The placement engine picks
 * nodes and GPUs inside that; Slurm's own eval_nodes() then does the
 * per-node CPU/core/GRES accounting on exactly those nodes, so every other
 * job option keeps working. Finally the GPU bitmaps of the chosen nodes are
 * narrowed to the engine's GPUs, so cons_tres binds the job to whole NVLink
 * islands instead of whatever GPUs happen to come first.
 *
 * When the engine has nothing to say (no GPUs requested, nodes outside the
 * model, required nodes) or cannot place a job in preferred mode, the
 * callback returns ESLURM_NOT_SUPPORTED and Slurm's default algorithm runs.
 *
 * Each path fills one struct isle__eval_result; isle__eval_nodes records
 * it (isle__decision_record) once, at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isle_eval.h"

#include "isle_decision.h"
#include "isle_model.h"
#include "isle_policy.h"

#include "slurm/slurm_errno.h"
#include "src/common/core_array.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/gres.h"
#include "src/plugins/topology/common/eval_nodes.h"
#include "src/slurmctld/slurmctld.h"

/* slurmctld's job table; scontrol and slurmd load this plugin too, where
 * these data symbols do not exist (weak: NULL there). */
#pragma weak job_list
#pragma weak last_job_update

/*
 * The job's options (isle__policy_job_opts with isle__ctx.policy): the
 * environment reaches slurmctld from libslurm, scontrol or slurmrestd
 * without passing spank_isle.so.
 */
static int _job_opts_get(job_record_t *job_ptr, struct isle__job_opts *o,
			 char *err, size_t errlen)
{
	return isle__policy_job_opts(&isle__ctx.policy, job_ptr->spank_job_env,
				     job_ptr->spank_job_env_size, o, err,
				     errlen);
}

static bool _is_gpu(gres_state_t *gs)
{
	return gs && gs->plugin_id == gres_get_gpu_plugin_id();
}

/* Fills the GPU part of req from the job's GRES request; false if the job
 * asks for no GPUs or in a way the engine does not model. */
static bool _gpu_request(topology_eval_t *te, struct isle_place_req *req)
{
	job_record_t *job_ptr = te->job_ptr;
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js = NULL;
	bool fixed_nodes = te->min_nodes == te->max_nodes;

	if (!job_ptr->gres_list_req)
		return false;
	it = list_iterator_create(job_ptr->gres_list_req);
	while ((gs = list_next(it))) {
		if (_is_gpu(gs)) {
			if (js) { /* several GPU types: leave it to Slurm */
				js = NULL;
				break;
			}
			js = gs->gres_data;
		}
	}
	list_iterator_destroy(it);
	if (!js)
		return false;

	/* Counts beyond an int are no request the engine can meet: Slurm's
	 * default selection refuses them without isle truncating them. */
	if (te->min_nodes > INT_MAX)
		return false;
	if (js->gres_per_node) {
		if (js->gres_per_node > INT_MAX)
			return false;
		req->gpus_per_node = (int)js->gres_per_node;
		req->nodes = (int)te->min_nodes;
	} else if (js->gres_per_job) {
		if (js->gres_per_job > INT_MAX)
			return false;
		req->gpus = (int)js->gres_per_job;
		req->nodes = fixed_nodes ? (int)te->min_nodes : 0;
	} else if (js->gres_per_task && job_ptr->details->num_tasks) {
		uint64_t n;

		if (__builtin_mul_overflow(
			js->gres_per_task,
			(uint64_t)job_ptr->details->num_tasks, &n) ||
		    n > INT_MAX)
			return false;
		req->gpus = (int)n;
		req->nodes = fixed_nodes ? (int)te->min_nodes : 0;
	} else {
		return false; /* per-socket requests: Slurm's job */
	}
	return true;
}

/* The engine's request for a job: its isle options (o), then its GPUs as
 * _gpu_request reads them; false as there. */
static bool _place_request(topology_eval_t *te, const struct isle__job_opts *o,
			   struct isle_place_req *req)
{
	isle_place_req_init(req);
	req->tp = o->tp;
	req->pp = o->pp;
	req->mode = o->mode;
	req->max_span = o->span;
	return _gpu_request(te, req);
}

/* The GPU sock_gres of a node's availability for this job, or NULL. */
static sock_gres_t *_node_gpu_sock(avail_res_t *ar)
{
	list_itr_t *it;
	sock_gres_t *sg, *found = NULL;

	if (!ar || !ar->sock_gres_list)
		return NULL;
	it = list_iterator_create(ar->sock_gres_list);
	while ((sg = list_next(it))) {
		if (_is_gpu(sg->gres_state_job)) {
			found = sg;
			break;
		}
	}
	list_iterator_destroy(it);
	return found;
}

static void _or_bits(uint64_t *mask, bitstr_t *b, int ngpus)
{
	if (!b)
		return;
	for (int g = 0; g < ngpus && g < bit_size(b); g++)
		if (bit_test(b, g))
			*mask |= 1ULL << g;
}

/* GPUs of Slurm node i this job could get, as a model-sized mask. */
static uint64_t _node_free_mask(topology_eval_t *te, int i, int ngpus)
{
	node_record_t *node_ptr = node_record_table_ptr[i];
	avail_res_t *ar = te->avail_res_array[i];
	sock_gres_t *sg = _node_gpu_sock(ar);
	gres_node_state_t *ns = sg ? sg->gres_state_node->gres_data : NULL;
	uint64_t mask = 0;
	int n;

	if (sg) {
		_or_bits(&mask, sg->bits_any_sock, ngpus);
		for (int s = 0; sg->bits_by_sock && s < sg->sock_cnt; s++)
			_or_bits(&mask, sg->bits_by_sock[s], ngpus);
	}
	/* Without gres.conf Cores= Slurm keeps no per-GPU topology: every
	 * GPU of the node is a candidate. */
	if (!mask) {
		n = ns ? (int)MIN(ns->gres_cnt_avail, (uint64_t)ngpus)
		       : (ar ? MIN(ar->avail_gpus, ngpus) : 0);
		mask = (n >= 64) ? ~0ULL : ((1ULL << n) - 1);
	}
	if (sg && sg->use_total_gres) /* test_only: the job may wait */
		return mask;
	return isle__model_gpus_free(node_ptr, ns, mask, ngpus);
}

static void _narrow_bits(bitstr_t *b, uint64_t keep, uint64_t *cnt,
			 bitstr_t *alloc, bool use_total)
{
	int avail = 0;

	if (!b)
		return;
	for (int g = 0; g < bit_size(b); g++) {
		if (!bit_test(b, g))
			continue;
		if (g >= 64 || !((keep >> g) & 1)) {
			bit_clear(b, g);
			continue;
		}
		if (use_total || !alloc || g >= bit_size(alloc) ||
		    !bit_test(alloc, g))
			avail++;
	}
	if (cnt)
		*cnt = MIN(*cnt, (uint64_t)avail);
}

/*
 * Narrows the GPUs cons_tres may bind on a chosen node to the engine's
 * mask, so that a TP group gets a linked set (never 3,4,5,6 for TP=2).
 */
static void _restrict_node_gpus(topology_eval_t *te, int i, uint64_t keep)
{
	sock_gres_t *sg = _node_gpu_sock(te->avail_res_array[i]);
	gres_node_state_t *ns;
	bitstr_t *alloc;

	if (!sg)
		return;
	ns = sg->gres_state_node->gres_data;
	alloc = ns ? ns->gres_bit_alloc : NULL;
	_narrow_bits(sg->bits_any_sock, keep, &sg->cnt_any_sock, alloc,
		     sg->use_total_gres);
	for (int s = 0; sg->bits_by_sock && s < sg->sock_cnt; s++)
		_narrow_bits(sg->bits_by_sock[s], keep,
			     sg->cnt_by_sock ? &sg->cnt_by_sock[s] : NULL,
			     alloc, sg->use_total_gres);
	sg->total_cnt =
	    MIN(sg->total_cnt, (uint64_t)__builtin_popcountll(keep));
}

static void _restrict_gpus(topology_eval_t *te,
			   const struct isle_place_req *req,
			   const struct isle_place_result *res)
{
	struct isle__ctx *c = &isle__ctx;

	/* Only when every chosen node is in the allocation, so the masks add
	 * up to exactly the job's GPUs. */
	for (int k = 0; k < res->nnodes; k++) {
		int s = c->model2slurm[res->nodes[k]];

		if (s < 0 || !bit_test(te->node_map, s))
			return;
		if (req->gpus_per_node &&
		    __builtin_popcountll(res->masks[k]) < req->gpus_per_node)
			return;
	}
	for (int k = 0; k < res->nnodes; k++)
		_restrict_node_gpus(te, c->model2slurm[res->nodes[k]],
				    res->masks[k]);
}

/* Drops repeats (the engine tries each scope with two fills, which often
 * agree), keeping the first; returns the new count. */
static int _dedup_cands(struct isle_place_cand *cands, int ncands)
{
	int n = 0;

	for (int i = 0; i < ncands; i++) {
		int k;

		for (k = 0; k < n; k++)
			if (cands[k].scope_tier == cands[i].scope_tier &&
			    cands[k].scope == cands[i].scope &&
			    cands[k].feasible == cands[i].feasible &&
			    cands[k].cost == cands[i].cost &&
			    cands[k].frag == cands[i].frag)
				break;
		if (k < n)
			cands[k].chosen |= cands[i].chosen;
		else
			cands[n++] = cands[i];
	}
	return n;
}

/* The candidate the result came from, if the engine did not flag it:
 * the first feasible one with the same score. */
static void _mark_winner(struct isle_place_cand *cands, int ncands,
			 const struct isle_place_result *res)
{
	for (int i = 0; i < ncands; i++)
		if (cands[i].chosen)
			return;
	for (int i = 0; i < ncands; i++) {
		if (cands[i].feasible && cands[i].cost == res->cost.total &&
		    cands[i].frag == res->frag) {
			cands[i].chosen = 1;
			return;
		}
	}
}

static bitstr_t *_result_bitmap(const struct isle_place_result *res)
{
	bitstr_t *b = bit_alloc(node_record_count);

	for (int k = 0; k < res->nnodes; k++) {
		int s = isle__ctx.model2slurm[res->nodes[k]];

		if (s >= 0)
			bit_set(b, s);
	}
	return b;
}

/*
 * True if the placement uses GPUs that are busy right now: cons_tres was
 * testing a future start (backfill, will-run) or a submission, not starting
 * the job. Those tests run on copies of the node state; this looks at the
 * live one.
 */
static bool _planned(const struct isle_place_result *res)
{
	for (int k = 0; k < res->nnodes; k++) {
		int s = isle__ctx.model2slurm[res->nodes[k]], total;

		if (s < 0 ||
		    (res->masks[k] & ~isle__model_node_gpus(s, &total)))
			return true;
	}
	return false;
}

/* Runs Slurm's own eval_nodes() on the engine's nodes only. */
static int _eval_on(topology_eval_t *te, bitstr_t *nodes)
{
	bitstr_t *orig_map = bit_copy(te->node_map);
	bitstr_t **orig_core = copy_core_array(te->avail_core);
	uint32_t orig_max = te->max_nodes;
	int rc;

	bit_and(te->node_map, nodes);
	te->max_nodes = MIN(te->max_nodes, (uint32_t)bit_set_count(nodes));
	/* Slurm's default algorithm, without coming back here. */
	te->eval_nodes = NULL;
	rc = eval_nodes(te);
	te->eval_nodes = isle__eval_nodes;
	if (rc != SLURM_SUCCESS) {
		bit_copybits(te->node_map, orig_map);
		core_array_or(te->avail_core, orig_core);
		te->max_nodes = orig_max;
	}
	FREE_NULL_BITMAP(orig_map);
	free_core_array(&orig_core);
	return rc;
}

/* GPUs of the largest NVLink island of the model. */
static int _max_island(void)
{
	const isle_topo *t = isle__ctx.topo;
	int max = 0;

	for (int i = 0; t && i < t->nislands; i++)
		max = MAX(max, t->islands[i].ngpus);
	return max;
}

/* True if cons_tres is testing whether the job could ever run (submit,
 * will-run): it then counts every GPU as free (use_total_gres). */
static bool _testing(topology_eval_t *te)
{
	for (int i = 0; next_node_bitmap(te->node_map, &i); i++) {
		sock_gres_t *sg = _node_gpu_sock(te->avail_res_array[i]);

		if (sg)
			return sg->use_total_gres;
	}
	return false;
}

/* --- the contention term: running jobs' loads ------------------------- */

/* GPUs Slurm granted running job_ptr on each model node: *nodes and
 * *masks (xmalloc'ed, model indices), returns how many nodes. */
static int _job_model_gpus(job_record_t *job_ptr, int **nodes, uint64_t **masks)
{
	struct isle__ctx *c = &isle__ctx;
	job_resources_t *jr = job_ptr->job_resrcs;
	int n = 0, j = 0, cnt;

	*nodes = NULL;
	*masks = NULL;
	if (!jr || !jr->node_bitmap || !job_ptr->gres_list_alloc)
		return 0;
	cnt = bit_set_count(jr->node_bitmap);
	*nodes = xcalloc(MAX(cnt, 1), sizeof(int));
	*masks = xcalloc(MAX(cnt, 1), sizeof(uint64_t));
	for (int i = 0; next_node_bitmap(jr->node_bitmap, &i) && j < cnt;
	     i++, j++) {
		int m = i < c->nslurm ? c->slurm2model[i] : -1;
		uint64_t mask = 0;
		bitstr_t *b;

		if (m < 0)
			continue;
		b = isle__model_job_gpus(job_ptr, j);
		_or_bits(&mask, b, c->topo->nodes[m].ngpus);
		FREE_NULL_BITMAP(b);
		if (!mask)
			continue;
		(*nodes)[n] = m;
		(*masks)[n++] = mask;
	}
	return n;
}

/* The traffic class of a running job: its --isle-traffic, else from its
 * options' shape and its GPUs (isle_traffic_of). */
static isle_traffic _job_traffic(job_record_t *job_ptr, const uint64_t *masks,
				 int n)
{
	struct isle__job_opts o;
	struct isle_place_req req;
	char err[256];

	if (_job_opts_get(job_ptr, &o, err, sizeof(err)))
		o.set = 0, o.tp = o.pp = 1, o.traffic = ISLE_TRAFFIC_AUTO;
	isle_place_req_init(&req);
	req.tp = o.tp;
	req.pp = o.pp;
	req.traffic = o.traffic;
	req.gpus = 0;
	for (int k = 0; k < n; k++)
		req.gpus += __builtin_popcountll(masks[k]);
	return isle_traffic_of(&req);
}

/*
 * Brings the engine's running-job loads up to date: the topology plugin
 * interface has no job-end hook, so whenever Slurm's job table changed
 * since the last look, the running jobs are compared with the ones the
 * engine holds (isle_load.h). Runs under the locks the evaluation holds
 * and ctx.lock; allocates only for jobs that started since. O(running
 * jobs) per change of the job table, not per evaluation.
 */
static void _loads_sync(void)
{
	struct isle__ctx *c = &isle__ctx;
	list_itr_t *it;
	job_record_t *job_ptr;
	time_t now = time(NULL);

	if (c->cc_weight <= 0 || !&job_list || !&last_job_update || !job_list ||
	    last_job_update < c->load_synced)
		return;
	isle__load_begin(&c->load);
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		int *nodes, n;
		uint64_t *masks;

		if (!IS_JOB_RUNNING(job_ptr) ||
		    isle__load_seen(&c->load, job_ptr->job_id,
				    job_ptr->start_time))
			continue;
		n = _job_model_gpus(job_ptr, &nodes, &masks);
		if (isle__load_add(&c->load, job_ptr->job_id,
				   job_ptr->start_time, nodes, masks, n,
				   _job_traffic(job_ptr, masks, n)))
			debug("isle: %pJ: its traffic is not counted on the "
			      "shared links",
			      job_ptr);
		xfree(nodes);
		xfree(masks);
	}
	list_iterator_destroy(it);
	isle__load_end(&c->load);
	c->load_synced = now;
}

/* Bit g (leaf: 0..n, spine: after them) of the groups whose uplinks
 * res's GPUs cross: those of every group of a tier it touches when it
 * touches more than one, as contention.c charges them. */
static void _crossed(const struct isle_place_result *res, const int *nodes,
		     int nnodes, bitstr_t *leaf, bitstr_t *spine)
{
	const isle_topo *t = isle__ctx.topo;
	bitstr_t *b[2] = {leaf, spine};
	static const isle_tier k[2] = {ISLE_TIER_LEAF, ISLE_TIER_SPINE};

	if (res) {
		nodes = res->nodes;
		nnodes = res->nnodes;
	}
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < nnodes; j++) {
			int g = t->nodes[nodes[j]].group[k[i]];

			if (g >= 0 && g < bit_size(b[i]))
				bit_set(b[i], g);
		}
		if (bit_set_count(b[i]) < 2)
			bit_clear_all(b[i]);
	}
}

static bool _same_nodes(const struct isle_place_result *a,
			const struct isle_place_result *b)
{
	if (a->nnodes != b->nnodes)
		return false;
	for (int k = 0; k < a->nnodes; k++)
		if (a->nodes[k] != b->nodes[k] || a->masks[k] != b->masks[k])
			return false;
	return true;
}

/*
 * For explain: the loaded links the placement crosses, and those the
 * engine without the contention term would have crossed instead
 * (avoided). Places the request once more, on the term-blind engine, only
 * when some link carries load. ctx.lock held.
 */
static void _links(const uint64_t *free_mask, const uint64_t *free_now,
		   const uint64_t *eligible, bool later,
		   struct isle__eval_result *r)
{
	struct isle__ctx *c = &isle__ctx;
	const isle_topo *t = c->topo;
	static const isle_tier k[2] = {ISLE_TIER_LEAF, ISLE_TIER_SPINE};
	struct isle_place_result blind;
	bitstr_t *mine[2], *other[2];
	bool loaded = false;
	int rc, n = 0;

	for (int i = 0; i < 2 && !loaded; i++)
		for (int g = 0; g < t->ngroups[k[i]] && !loaded; g++) {
			double l = 0;

			isle_place_link_load(c->place, k[i], g, &l, NULL);
			loaded = l > 0;
		}
	if (!loaded || !c->place_blind)
		return;
	isle_place_result_init(&blind);
	if (later)
		rc = isle_place_later(c->place_blind, free_mask, free_now,
				      eligible, &r->req, &blind);
	else
		rc = isle_place(c->place_blind, free_mask, eligible, &r->req,
				&blind);
	for (int i = 0; i < 2; i++) {
		mine[i] = bit_alloc(MAX(t->ngroups[k[i]], 1));
		other[i] = bit_alloc(MAX(t->ngroups[k[i]], 1));
	}
	_crossed(&r->res, NULL, 0, mine[0], mine[1]);
	if (!rc && !_same_nodes(&blind, &r->res)) {
		_crossed(&blind, NULL, 0, other[0], other[1]);
		r->blind_nodes = xcalloc(blind.nnodes, sizeof(int));
		memcpy(r->blind_nodes, blind.nodes, blind.nnodes * sizeof(int));
		r->blind_nnodes = blind.nnodes;
	}
	r->links = xcalloc(t->ngroups[ISLE_TIER_LEAF] +
			       t->ngroups[ISLE_TIER_SPINE] + 1,
			   sizeof(*r->links));
	for (int i = 0; i < 2; i++)
		for (int g = 0; g < t->ngroups[k[i]]; g++) {
			struct isle__eval_link *lk = &r->links[n];

			if (!bit_test(mine[i], g) && !bit_test(other[i], g))
				continue;
			isle_place_link_load(c->place, k[i], g, &lk->load,
					     &lk->cap);
			if (lk->load <= 0)
				continue;
			lk->tier = k[i];
			lk->group = g;
			lk->avoided = !bit_test(mine[i], g);
			n++;
		}
	r->nlinks = n;
	for (int i = 0; i < 2; i++) {
		FREE_NULL_BITMAP(mine[i]);
		FREE_NULL_BITMAP(other[i]);
	}
	isle_place_result_fini(&blind);
}

/* While the cluster file cannot be loaded. */
static void _evaluate_fallback(topology_eval_t *te, struct isle__eval_result *r)
{
	struct isle__job_opts o;
	char err[256];

	if (_job_opts_get(te->job_ptr, &o, err, sizeof(err)))
		o.set = 0; /* refused options: preferred, like any job */
	if (!_place_request(te, &o, &r->req))
		return;
	r->have_req = true;
	r->fallback = true;
	/* No model, so no placement keeps TP groups inside islands: required
	 * mode waits until the file loads again, the rest runs where Slurm's
	 * default selection puts it, and the AdminComment says so instead of
	 * keeping an earlier plan. The submit test lets the job queue. */
	if (o.set && o.mode == ISLE_PLACE_REQUIRED) {
		r->outcome = ISLE_OUTCOME_WAITING;
		r->reason = xstrdup_printf("fallback (cannot load the cluster "
					   "file: %s): required mode waits "
					   "for a valid cluster file",
					   isle__ctx.load_error);
		if (!_testing(te))
			r->rc = SLURM_ERROR;
	} else {
		r->outcome = ISLE_OUTCOME_FALLBACK;
		r->reason = xstrdup("Slurm's default selection");
	}
}

/* The engine's placement inside cons_tres's maps. */
static void _evaluate(topology_eval_t *te, struct isle__eval_result *r)
{
	struct isle__ctx *c = &isle__ctx;
	job_record_t *job_ptr = te->job_ptr;
	struct isle_place_req *req = &r->req;
	struct isle_place_result *res = &r->res;
	struct isle__job_opts o;
	const struct isle_place_cand *engine_cands;
	uint64_t *free_mask = NULL, *free_now = NULL, *eligible = NULL;
	bool later = false;
	bitstr_t *chosen = NULL;
	bitstr_t *req_map = job_ptr->details->req_node_bitmap;
	char err[256];
	int ncands = 0, rc;

	if (!c->topo || !c->place)
		return;
	/* -w with fewer nodes than the job needs: Slurm adds the rest. */
	if (req_map && (uint32_t)bit_set_count(req_map) < te->min_nodes)
		return;

	if (_job_opts_get(job_ptr, &o, err, sizeof(err))) {
		r->outcome = ISLE_OUTCOME_DEFAULT;
		r->reason = xstrdup(err);
		return;
	}
	if (!_place_request(te, &o, req))
		return;
	r->have_req = true;
	/* What job_submit/isle refuses at submit, for jobs that reach the
	 * scheduler without it: the reason in words, not the engine's. */
	if (isle__policy_gpu_check(
		&o,
		req->gpus ? req->gpus : (long)req->gpus_per_node * req->nodes,
		_max_island(), err, sizeof(err))) {
		if (o.mode == ISLE_PLACE_REQUIRED)
			r->rc = SLURM_ERROR;
		r->outcome = r->rc == SLURM_ERROR ? ISLE_OUTCOME_REFUSED
						  : ISLE_OUTCOME_DEFAULT;
		r->reason = xstrdup(err);
		return;
	}

	free_mask = xcalloc(MAX(c->topo->nnodes, 1), sizeof(uint64_t));
	free_now = xcalloc(MAX(c->topo->nnodes, 1), sizeof(uint64_t));
	eligible = xcalloc((c->topo->nnodes + 63) / 64 + 1, sizeof(uint64_t));
	for (int i = 0; next_node_bitmap(te->node_map, &i); i++) {
		int m = (i < c->nslurm) ? c->slurm2model[i] : -1, total;

		if (m < 0 || (req_map && !bit_test(req_map, i)))
			continue;
		free_mask[m] = _node_free_mask(te, i, c->topo->nodes[m].ngpus);
		free_now[m] = isle__model_node_gpus(i, &total);
		later |= (free_mask[m] & ~free_now[m]) != 0;
		if (free_mask[m])
			eligible[m / 64] |= 1ULL << (m % 64);
	}

	slurm_mutex_lock(&c->lock);
	_loads_sync();
	req->traffic = o.traffic;
	/* A future start (backfill's will-run test, a submit test): the
	 * reservation leaves the GPUs free now to jobs that start now, as
	 * islesim's isle does. */
	if (later)
		rc = isle_place_later(c->place, free_mask, free_now, eligible,
				      req, res);
	else
		rc = isle_place(c->place, free_mask, eligible, req, res);
	/* Copy: the engine's array only lives until its next call. */
	engine_cands = isle_place_candidates(c->place, &ncands);
	if (ncands > 0) {
		r->cands = xcalloc(ncands, sizeof(*r->cands));
		memcpy(r->cands, engine_cands, ncands * sizeof(*r->cands));
	}
	if (!rc && c->cc_weight > 0)
		_links(free_mask, free_now, eligible, later, r);
	slurm_mutex_unlock(&c->lock);
	if (!rc)
		_mark_winner(r->cands, ncands, res);
	r->ncands = _dedup_cands(r->cands, ncands);

	if (rc) {
		/* Required mode waits for a placement that keeps TP groups
		 * whole (or is refused if it can never have one); preferred
		 * lets Slurm's default algorithm choose. */
		if (o.mode == ISLE_PLACE_REQUIRED && rc != -ENOMEM)
			r->rc = SLURM_ERROR;
		if (r->rc != SLURM_ERROR)
			r->outcome = ISLE_OUTCOME_DEFAULT;
		else if (rc == -ENOSPC)
			r->outcome = ISLE_OUTCOME_WAITING;
		else
			r->outcome = ISLE_OUTCOME_REFUSED;
		r->reason = xstrdup(res->reason);
		goto out;
	}

	chosen = _result_bitmap(res);
	if (_eval_on(te, chosen) != SLURM_SUCCESS) {
		if (o.mode == ISLE_PLACE_REQUIRED)
			r->rc = SLURM_ERROR;
		r->outcome = r->rc == SLURM_ERROR ? ISLE_OUTCOME_WAITING
						  : ISLE_OUTCOME_DEFAULT;
		r->reason = xstrdup("the isle nodes lack CPUs, memory or other "
				    "resources this job needs");
		goto out;
	}
	_restrict_gpus(te, req, res);
	r->outcome = _planned(res) ? ISLE_OUTCOME_PLANNED : ISLE_OUTCOME_PLACED;
	r->node_map = te->node_map;
	r->rc = SLURM_SUCCESS;
out:
	FREE_NULL_BITMAP(chosen);
	xfree(free_mask);
	xfree(free_now);
	xfree(eligible);
}

int isle__eval_nodes(topology_eval_t *te)
{
	struct isle__eval_result r = {
	    .job_ptr = te->job_ptr,
	    .rc = ESLURM_NOT_SUPPORTED,
	    .outcome = ISLE_OUTCOME_OTHER,
	};
	int rc;

	isle_place_result_init(&r.res);
	if (isle__ctx.topo)
		_evaluate(te, &r);
	else if (isle__ctx.load_error)
		_evaluate_fallback(te, &r);
	if (r.outcome != ISLE_OUTCOME_OTHER)
		isle__decision_record(&r);
	rc = r.rc;
	isle_place_result_fini(&r.res);
	xfree(r.cands);
	xfree(r.reason);
	xfree(r.links);
	xfree(r.blind_nodes);
	return rc;
}
