/*
 * sim.c - the discrete-event loop of islesim.
 *
 * Events are job arrivals and completions. Scheduling follows Slurm
 * 24.11: the main scheduler (schedule()) after each event, in priority
 * order, stopping at the first job that cannot start; sched/backfill
 * every bf_interval when something changed, with a reservation for every
 * job it tests (main_pass, bf_pass). Every policy sees the same stream
 * and the same scheduler; only the placement differs.
 *
 * Requests are shaped as users submit them: a job of a whole node or more
 * asks for k nodes of g GPUs (-N k --gpus-per-node=g), a smaller job for
 * one node. Each training job's step time comes from the flow model
 * (netsim.c): compute plus its communication under the sharing of the
 * fabric with every job running at the time, recomputed whenever a job
 * with traffic on the fabric starts or ends; a job's step time is the
 * time-weighted mean over its run.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "islesim.h"

struct running {
	int job;
	double end;
	double limit_end; /* start + time limit: what backfill plans with */
	int nnodes;
	int *nodes;
	uint64_t *masks;
};

struct state {
	const isle_topo *t;
	const struct sim_opts *o;
	struct sim_job *jobs;
	int njobs;
	isle_place_ctx *eng; /* metrics: costs, ideal, fragmentation */
	struct sim_policy_ctx *pol;
	uint64_t *free;
	long free_total, total;
	int max_island;
	/* completions: binary min-heap on end time */
	struct running *heap;
	int nheap;
	/* queue of job indices, submit order */
	int *queue, nqueue;
	/* samples */
	double *dec_us, *ratio, *iratio;
	int ndec, capdec, nratio, capratio, niratio, capiratio;
	double busy_int, frag_int, window, last_occ_t;
	long tp_groups, tp_inside, req_groups, req_inside;
	double wait_sum, wait_gpu_sum, gpu_sum;
	int started;
	/* flow model: per job compute and step time, integrated over time */
	struct sim_net *net;
	double *compute, *step_cur, *step_int, *step_last;
	double *step_alone;	/* per job: its step time alone on the fabric */
	int dp_jobs, shim_jobs; /* isle+shim: DP jobs, those the shim took */
	double *alones;
	int nalones, capalones;
	char *onfab;
	int net_dirty;
	double *steps, *comms, *waits, *jcts;
	double *cwait[SIM_NCLASSES];
	int ncwait[SIM_NCLASSES], capcwait[SIM_NCLASSES];
	int nsteps, capsteps, ncomms, capcomms, nwaits, capwaits, njcts,
	    capjcts;
	long split_groups;
	int node_gpus;
	struct isle_place_result res;
	/* backfill: the GPUs free at a time of the map, those of them
	 * outside reservations, and a scratch result */
	uint64_t *proj, *bf;
	/* completing nodes (--epilog): until when each node's last ended
	 * job holds it in cg_node_bitmap; mfree is scratch */
	double *cg_until;
	uint64_t *mfree;
	struct isle_place_result proj_res;
};

/* A job's time limit: backfill reserves for it, not for the run time,
 * which Slurm does not know in advance. */
static double job_limit(const struct sim_job *j)
{
	return j->limit > 0 ? j->limit : j->duration;
}

/* Slurm's clocks are whole seconds of the epoch (time()); o->epoch0 is
 * the epoch time of islesim's time 0, so that the map's resolution steps
 * and will-run's 30 s barriers fall where slurmctld's do. */
static double slurm_sec(const struct sim_opts *o, double t)
{
	return floor(t + o->epoch0 + 1e-9) - o->epoch0;
}

/* t rounded down to bf_resolution on the epoch (_set_slot_time). */
static double res_floor(const struct sim_opts *o, double t)
{
	double r = o->bf_resolution;

	return floor((t + o->epoch0) / r + 1e-9) * r - o->epoch0;
}

/* A node of job r's still completes at now (cg_node_bitmap). */
static int cg_any(const struct state *s, const int *nodes, int nnodes,
		  double now)
{
	for (int k = 0; k < nnodes; k++)
		if (s->cg_until[nodes[k]] > now)
			return 1;
	return 0;
}

static void heap_push(struct state *s, struct running r)
{
	int i = s->nheap++;

	while (i > 0 && s->heap[(i - 1) / 2].end > r.end) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = r;
}

static struct running heap_pop(struct state *s)
{
	struct running top = s->heap[0], last = s->heap[--s->nheap];
	int i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->heap[c + 1].end < s->heap[c].end)
			c++;
		if (s->heap[c].end >= last.end)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = last;
	return top;
}

static int push_sample(double **arr, int *n, int *cap, double v)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 1024;
		double *p = realloc(*arr, (size_t)nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = nc;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

static void make_req(const struct state *s, const struct sim_job *j,
		     struct isle_place_req *r)
{
	isle_place_req_init(r);
	r->gpus = j->gpus;
	r->tp = j->tp;
	r->pp = j->pp;
	r->workload = j->workload;
	/* as users submit: whole nodes as -N k --gpus-per-node=g, smaller
	 * jobs on one node */
	if (j->gpus >= s->node_gpus && j->gpus % s->node_gpus == 0) {
		r->nodes = j->gpus / s->node_gpus;
		r->gpus_per_node = s->node_gpus;
	} else if (j->gpus < s->node_gpus) {
		r->nodes = 1;
		r->gpus_per_node = j->gpus;
	}
	r->mode =
	    j->tp <= s->max_island ? ISLE_PLACE_REQUIRED : ISLE_PLACE_PREFERRED;
}

static void trace_job(struct state *s, const struct sim_job *j,
		      const struct isle_place_result *r, double ratio)
{
	FILE *f = s->o->trace;
	int i;

	fprintf(f,
		"job %d submit %.0f start %.0f gpus %d tp %d pp %d %s "
		"cost_ratio %.3f ->",
		j->id, j->submit, j->start, j->gpus, j->tp, j->pp,
		isle_workload_name(j->workload), ratio);
	for (i = 0; i < r->nnodes; i++) {
		uint64_t m = r->masks[i];

		fprintf(f, " %s[", s->t->nodes[r->nodes[i]].name);
		for (int first = 1; m; first = 0) {
			int g = __builtin_ctzll(m);

			fprintf(f, first ? "%d" : ",%d", g);
			m &= m - 1;
		}
		fputc(']', f);
	}
	fputs("\n  ranks:", f);
	for (i = 0; i < r->nranks; i++)
		fprintf(f, " %s:%d", s->t->nodes[r->ranks[i].node].name,
			r->ranks[i].gpu);
	fputc('\n', f);
}

/* Records the metrics of a job that starts with placement r. */
static int account(struct state *s, struct sim_job *j,
		   const struct isle_place_req *req,
		   const struct isle_place_result *r)
{
	struct isle_place_cost cost, ideal;
	double ratio = 1.0;
	int g, k, rc;

	if (j->tp > 1)
		for (g = 0; g + j->tp <= r->nranks; g += j->tp) {
			const struct isle_place_rank *a = &r->ranks[g];
			int isl = s->t->nodes[a->node].gpus[a->gpu].island;

			s->tp_groups++;
			for (k = 1; k < j->tp; k++) {
				const struct isle_place_rank *b = &a[k];

				if (s->t->nodes[b->node].gpus[b->gpu].island !=
				    isl)
					break;
			}
			if (k == j->tp)
				s->tp_inside++;
			if (req->mode == ISLE_PLACE_REQUIRED) {
				s->req_groups++;
				s->req_inside += k == j->tp;
			}
		}
	rc = isle_place_eval(s->eng, req, r->ranks, r->nranks, &cost);
	if (!rc)
		rc = isle_place_ideal(s->eng, req, &ideal);
	if (rc)
		return rc;
	if (ideal.total > 0) {
		ratio = cost.total / ideal.total;
		if (j->workload == ISLE_WORKLOAD_INFER)
			rc = push_sample(&s->iratio, &s->niratio, &s->capiratio,
					 ratio);
		else
			rc = push_sample(&s->ratio, &s->nratio, &s->capratio,
					 ratio);
		if (rc)
			return rc;
	}
	if (s->o->trace)
		trace_job(s, j, r, ratio);
	return 0;
}

/* Integrates the step time of the jobs on the fabric up to now and shares
 * the fabric anew when a job with fabric traffic came or went. */
static int net_update(struct state *s, double now)
{
	int i, rc;

	if (!s->net_dirty)
		return 0;
	for (i = 0; i < s->nheap; i++) {
		int ji = s->heap[i].job;

		if (!s->onfab[ji])
			continue;
		s->step_int[ji] += s->step_cur[ji] * (now - s->step_last[ji]);
		s->step_last[ji] = now;
	}
	rc = sim_net_solve(s->net);
	if (rc)
		return rc;
	for (i = 0; i < s->nheap; i++) {
		int ji = s->heap[i].job;

		if (s->onfab[ji])
			s->step_cur[ji] = s->compute[ji] +
					  sim_net_comm_time(s->net, ji, NULL);
	}
	s->net_dirty = 0;
	return 0;
}

/* The step time job ji would have alone on the fabric: what the sharing
 * between jobs adds to step time is the step time less this. */
static int net_alone(struct state *s, int ji)
{
	double comm = 0;
	int rc = 0;

	if (s->onfab[ji])
		rc = sim_net_comm_alone(s->net, ji, &comm);
	else
		comm = sim_net_comm_time(s->net, ji, NULL);
	s->step_alone[ji] = s->compute[ji] + comm;
	return rc;
}

/* A training job's traffic joins the flow model. */
static int net_start(struct state *s, int ji, double now,
		     const struct isle_place_result *r)
{
	const struct sim_job *j = &s->jobs[ji];
	struct sim_traffic tr;
	struct sim_xfer *x = NULL;
	int nx = 0, rc;

	s->step_last[ji] = now;
	s->step_int[ji] = 0;
	if (j->workload != ISLE_WORKLOAD_TRAIN)
		return 0;
	rc = sim_traffic_of(j->gpus, j->tp, j->pp, &tr);
	if (!rc && s->o->policy == SIM_ISLE_SHIM) {
		int used = 0;

		rc =
		    sim_shim_job_add(s->net, s->t, ji, &tr, r->ranks, r->nranks,
				     j->tp, j->pp, SIM_SHIM_PROBE_SHARE, &used);
		s->dp_jobs += tr.dp_bytes > 0 && j->gpus >= 2;
		s->shim_jobs += used && j->gpus >= 2;
	} else {
		if (!rc)
			rc = sim_job_xfers(&tr, r->ranks, r->nranks, j->tp,
					   j->pp, &x, &nx);
		if (!rc)
			rc = sim_net_job_add(s->net, ji, x, nx);
		free(x);
	}
	if (rc < 0)
		return rc;
	s->compute[ji] = tr.compute_s;
	s->onfab[ji] = rc > 0;
	s->net_dirty |= rc > 0;
	/* the job's own links only: its step time is fixed */
	s->step_cur[ji] = tr.compute_s + sim_net_comm_time(s->net, ji, NULL);
	return net_alone(s, ji);
}

/* A job ends: its mean step time is recorded and its traffic leaves. */
static int net_end(struct state *s, int ji, double end)
{
	const struct sim_job *j = &s->jobs[ji];

	if (j->workload != ISLE_WORKLOAD_TRAIN)
		return 0;
	s->step_int[ji] += s->step_cur[ji] * (end - s->step_last[ji]);
	if (j->gpus >= 2 &&
	    (push_sample(&s->steps, &s->nsteps, &s->capsteps,
			 s->step_int[ji] / j->duration) ||
	     push_sample(&s->comms, &s->ncomms, &s->capcomms,
			 s->step_int[ji] / j->duration - s->compute[ji])))
		return -ENOMEM;
	if (j->gpus >= 2 && push_sample(&s->alones, &s->nalones, &s->capalones,
					s->step_alone[ji]))
		return -ENOMEM;
	if (s->o->cost_out && j->gpus >= 2)
		fprintf(s->o->cost_out, "%.6f\n",
			s->step_int[ji] / j->duration);
	if (s->o->trace && j->gpus >= 2) {
		double comm = 0, above = 0;

		if (s->onfab[ji] &&
		    sim_net_comm_alone_split(s->net, ji, &comm, &above))
			return -ENOMEM;
		fprintf(s->o->trace,
			"end job %d step %.4f alone %.4f compute %.4f "
			"above_nic_switch %.4f\n",
			j->id, s->step_int[ji] / j->duration, s->step_alone[ji],
			s->compute[ji], above);
	}
	sim_net_job_remove(s->net, ji);
	s->net_dirty |= s->onfab[ji];
	s->onfab[ji] = 0;
	return 0;
}

/* The engine's link loads (isle_place_load_add) follow the running jobs
 * under every policy; only isle-cc's engine weighs them. */
static int load_track(struct state *s, int ji, const int *nodes,
		      const uint64_t *masks, int nnodes, int add)
{
	struct isle_place_req req;
	isle_traffic tr;

	make_req(s, &s->jobs[ji], &req);
	tr = isle_traffic_of(&req);
	return add ? isle_place_load_add(s->eng, nodes, masks, nnodes, tr)
		   : isle_place_load_remove(s->eng, nodes, masks, nnodes, tr);
}

/* stamp: the job's start_time, slurmctld's whole second for it. */
static int start_job(struct state *s, int ji, double now, double stamp,
		     const struct isle_place_req *req)
{
	struct sim_job *j = &s->jobs[ji];
	struct isle_place_result *r = &s->res;
	struct running run = {.job = ji,
			      .end = now + j->duration,
			      .limit_end = stamp + job_limit(j)};
	int rc, k;

	rc = isle_place_commit(r, s->free);
	if (rc)
		return rc; /* a policy handed out a busy GPU: a bug */
	run.nnodes = r->nnodes;
	run.nodes = malloc((size_t)r->nnodes * sizeof(int));
	run.masks = malloc((size_t)r->nnodes * sizeof(uint64_t));
	if (!run.nodes || !run.masks) {
		free(run.nodes);
		free(run.masks);
		return -ENOMEM;
	}
	memcpy(run.nodes, r->nodes, (size_t)r->nnodes * sizeof(int));
	memcpy(run.masks, r->masks, (size_t)r->nnodes * sizeof(uint64_t));
	heap_push(s, run);
	s->free_total -= j->gpus;
	j->start = now;
	j->placed = 1;
	s->started++;
	s->wait_sum += now - j->submit;
	s->wait_gpu_sum += (now - j->submit) * j->gpus;
	s->gpu_sum += j->gpus;
	k = sim_class_of(j->gpus);
	if (push_sample(&s->cwait[k], &s->ncwait[k], &s->capcwait[k],
			now - j->submit) ||
	    push_sample(&s->waits, &s->nwaits, &s->capwaits, now - j->submit) ||
	    push_sample(&s->jcts, &s->njcts, &s->capjcts,
			now - j->submit + j->duration))
		return -ENOMEM;
	rc = account(s, j, req, r);
	if (!rc)
		rc = load_track(s, ji, r->nodes, r->masks, r->nnodes, 1);
	if (rc)
		return rc;
	return net_start(s, ji, now, r);
}

static int cmp_end(const void *a, const void *b)
{
	const struct running *x = *(const struct running *const *)a;
	const struct running *y = *(const struct running *const *)b;

	/* cons_tres sorts the running jobs by end with glibc's stable
	 * qsort (_cr_job_list_sort): equal ends stay in job_list's order,
	 * the order the jobs were submitted in */
	if (x->limit_end != y->limit_end)
		return x->limit_end < y->limit_end ? -1 : 1;
	return (x->job > y->job) - (x->job < y->job);
}

/* Places job j on fm as the policy would at time `at` (tree-sw drops
 * --switches once the job has waited max_switch_wait by then). */
static int policy_place_at(struct state *s, const struct sim_job *j,
			   const uint64_t *fm, const struct isle_place_req *req,
			   double at, struct isle_place_result *res)
{
	sim_policy_set_waited(s->pol, at - j->submit);
	return sim_policy_place(s->pol, fm, req, res);
}

/*
 * Main scheduler (Slurm's schedule(), job_scheduler.c): pending jobs in
 * priority order (here submit order: priority/basic), at most
 * default_queue_depth of them; the first job that cannot start now blocks
 * the partition (one partition here), so no later job starts in this pass.
 */
/* The GPUs the main scheduler may take: free ones on nodes that are not
 * completing. */
static const uint64_t *main_free(struct state *s, double now)
{
	int i, any = 0;

	if (s->o->epilog_s <= 0)
		return s->free;
	for (i = 0; i < s->t->nnodes; i++) {
		s->mfree[i] = s->cg_until[i] > now ? 0 : s->free[i];
		any |= s->cg_until[i] > now;
	}
	return any ? s->mfree : s->free;
}

static int main_pass(struct state *s, double now)
{
	int qi, out = 0, rc = 0, blocked = 0;

	for (qi = 0; qi < s->nqueue; qi++) {
		int ji = s->queue[qi];
		struct sim_job *j = &s->jobs[ji];
		struct isle_place_req req;
		double t0;

		if (blocked || qi >= s->o->queue_depth ||
		    j->gpus > s->free_total) {
			blocked = 1;
			s->queue[out++] = ji;
			continue;
		}
		make_req(s, j, &req);
		t0 = sim_now_us();
		/* _pick_best_nodes leaves completing nodes out */
		rc = policy_place_at(s, j, main_free(s, now), &req, now,
				     &s->res);
		if (push_sample(&s->dec_us, &s->ndec, &s->capdec,
				sim_now_us() - t0))
			return -ENOMEM;
		if (rc == -ENOSPC) {
			rc = 0;
			blocked = 1;
			s->queue[out++] = ji;
			continue;
		}
		if (rc)
			return rc;
		/* the pass starts as the background loop wakes on the
		 * second; time() is the kernel's coarse clock, which can
		 * still read the second before (--main-stamp-prev) */
		rc = start_job(s, ji, now,
			       slurm_sec(s->o, now) - s->o->main_stamp_prev,
			       &req);
		if (rc)
			return rc;
	}
	s->nqueue = out;
	return 0;
}

/*
 * Backfill pass (sched/backfill, _attempt_backfill): every job tested, in
 * priority order and at most bf_max_job_test, gets the start Slurm's
 * will-run test finds for it (bf_earliest) inside bf_window: now (it
 * starts) or later (a reservation of its nodes, whole nodes as Slurm's
 * node_space bitmaps, from the start rounded down to bf_resolution to the
 * end rounded up, _set_slot_time). A later job sees the earlier ones'
 * reservations, so it starts now only where it delays none of them. The
 * running jobs end, for planning, at their start (whole seconds) plus
 * their time limit (job_limit), Slurm's end_time.
 */
struct bf_resv {
	double start, end;
	int nnodes;
	int *nodes;
};

struct bf_map {
	struct running **order; /* running jobs by end */
	int norder;
	struct bf_resv *resv;
	int nresv, capresv;
	int *stamp; /* per node: last candidate that excluded it */
	int stampv;
	int *node_ok; /* per node: free of reservations in the window */
};

static int bf_order(struct state *s, struct bf_map *m)
{
	struct running **o =
	    realloc(m->order, ((size_t)s->nheap + 1) * sizeof(*o));

	if (!o)
		return -ENOMEM;
	m->order = o;
	for (int i = 0; i < s->nheap; i++)
		o[i] = &s->heap[i];
	qsort(o, (size_t)s->nheap, sizeof(*o), cmp_end);
	m->norder = s->nheap;
	return 0;
}

static int bf_add_resv(struct bf_map *m, const struct isle_place_result *r,
		       double start, double end)
{
	struct bf_resv *v;

	if (m->nresv == m->capresv) {
		int nc = m->capresv ? 2 * m->capresv : 64;

		v = realloc(m->resv, (size_t)nc * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->resv = v;
		m->capresv = nc;
	}
	v = &m->resv[m->nresv];
	v->nodes = malloc(((size_t)r->nnodes + 1) * sizeof(int));
	if (!v->nodes)
		return -ENOMEM;
	memcpy(v->nodes, r->nodes, (size_t)r->nnodes * sizeof(int));
	v->nnodes = r->nnodes;
	v->start = start;
	v->end = end;
	m->nresv++;
	return 0;
}

/* Reservation v holds node n at some time in [a, b] (node_space slots
 * overlapping the window: end > a and begin <= b, _attempt_backfill). */
static int resv_overlaps(const struct bf_resv *v, double a, double b)
{
	return v->end > a && v->start <= b;
}

/*
 * later_start of _attempt_backfill: the first boundary of the time map
 * after start_res at which a node comes out of reservation, i.e. the
 * earliest end of a reservation past start_res with a node that no other
 * reservation holds right after it. INFINITY: none (Slurm's 0).
 */
static double bf_later_start(struct state *s, struct bf_map *m,
			     double start_res)
{
	double best = INFINITY;

	for (int i = 0; i < m->nresv; i++) {
		const struct bf_resv *v = &m->resv[i];
		int k, w, freed = 0;

		if (v->end <= start_res || v->end >= best)
			continue;
		m->stampv++;
		for (w = 0; w < m->nresv; w++) {
			const struct bf_resv *x = &m->resv[w];

			if (x->start <= v->end && x->end > v->end)
				for (k = 0; k < x->nnodes; k++)
					m->stamp[x->nodes[k]] = m->stampv;
		}
		for (k = 0; k < v->nnodes && !freed; k++)
			freed = m->stamp[v->nodes[k]] != m->stampv;
		if (freed)
			best = v->end;
	}
	return best;
}

/* s->bf: the GPUs of proj on nodes no reservation holds in [a, b];
 * node_ok[n] marks those nodes (the will-run test's node bitmap). */
static void bf_avail(struct state *s, struct bf_map *m, double a, double b,
		     int *node_ok)
{
	int i, k;

	m->stampv++;
	for (i = 0; i < m->nresv; i++) {
		const struct bf_resv *v = &m->resv[i];

		if (!resv_overlaps(v, a, b))
			continue;
		for (k = 0; k < v->nnodes; k++)
			m->stamp[v->nodes[k]] = m->stampv;
	}
	for (i = 0; i < s->t->nnodes; i++) {
		node_ok[i] = m->stamp[i] != m->stampv;
		s->bf[i] = node_ok[i] ? s->proj[i] : 0;
	}
}

/* The policy's placement of j on s->bf at t (now or later). */
static int bf_try(struct state *s, const struct sim_job *j,
		  const struct isle_place_req *req, double t, double now)
{
	sim_policy_set_waited(s->pol, t - j->submit);
	return t > now ? sim_policy_place_later(s->pol, s->bf, s->free, req,
						&s->proj_res)
		       : sim_policy_place(s->pol, s->bf, req, &s->proj_res);
}

/* The placement in s->proj_res meets a reservation in [a, b]
 * (_test_resv_overlap). */
static int bf_resv_conflict(struct state *s, struct bf_map *m, double a,
			    double b)
{
	const struct isle_place_result *r = &s->proj_res;
	int i, k;

	m->stampv++;
	for (k = 0; k < r->nnodes; k++)
		m->stamp[r->nodes[k]] = m->stampv;
	for (i = 0; i < m->nresv; i++) {
		const struct bf_resv *v = &m->resv[i];

		if (!(v->end > a && v->start < b))
			continue;
		for (k = 0; k < v->nnodes; k++)
			if (m->stamp[v->nodes[k]] == m->stampv)
				return 1;
	}
	return 0;
}

/*
 * When and where job j can start, as sched/backfill finds it
 * (_attempt_backfill with select/cons_tres's _will_run_test and
 * _future_run_test). *at gets the start (s->proj_res the placement),
 * INFINITY when the pass makes no reservation for it.
 * - The nodes tried are those no reservation of this pass holds over
 *   [start_res, start_res + limit]; will-run looks no further than
 *   later_start, the next time a reserved node comes free.
 * - Will-run tries now, then frees running jobs in order of their ends
 *   (start + limit) in groups: the first group holds the jobs that end
 *   up to 30 s past the 30 s barrier after the first end, and each
 *   later group twice the span; the start is the last freed job's end.
 *   So a reservation can start well after the first time the job fits.
 * - A start that then meets a reservation, or no start before
 *   later_start, tries again from there.
 */
static int bf_earliest(struct state *s, struct bf_map *m,
		       const struct sim_job *j,
		       const struct isle_place_req *req, double now, double *at)
{
	const struct sim_opts *o = s->o;
	const size_t fb = (size_t)s->t->nnodes * sizeof(uint64_t);
	double lim = job_limit(j), tnow = slurm_sec(o, now);
	double start_res = tnow;
	double window_end = res_floor(o, tnow + o->bf_window);
	int *ok = m->node_ok, rc, k;

	*at = INFINITY;
	for (;;) {
		double later, barrier = -INFINITY;
		double span = 30, found = INFINITY;
		int ri, more = 1;

		if (start_res > window_end)
			return 0;
		later = bf_later_start(s, m, start_res);
		/* usage: now, less the jobs that end before start_res */
		memcpy(s->proj, s->free, fb);
		for (ri = 0;
		     ri < m->norder &&
		     (start_res > tnow && m->order[ri]->limit_end < start_res);
		     ri++) {
			const struct running *r = m->order[ri];

			for (k = 0; k < r->nnodes; k++)
				s->proj[r->nodes[k]] |= r->masks[k];
		}
		bf_avail(s, m, start_res, start_res + lim, ok);
		rc = bf_try(s, j, req, start_res, tnow);
		if (rc == 0)
			found = start_res;
		else if (rc != -ENOSPC)
			return rc;
		while (found == INFINITY && more) {
			const struct running *last = NULL;
			int removed = 0;

			for (;;) {
				const struct running *r;
				int hit = 0;

				if (ri >= m->norder ||
				    m->order[ri]->limit_end > later) {
					more = 0;
					break;
				}
				r = m->order[ri++];
				for (k = 0; k < r->nnodes && !hit; k++)
					hit = ok[r->nodes[k]];
				if (!hit)
					continue;
				if (barrier == -INFINITY) {
					double e = r->limit_end + o->epoch0;

					barrier =
					    e - fmod(e, 30) + 30 - o->epoch0;
				}
				last = r;
				for (k = 0; k < r->nnodes; k++) {
					int n = r->nodes[k];

					s->proj[n] |= r->masks[k];
					if (ok[n])
						s->bf[n] = s->proj[n];
				}
				if (ri >= m->norder) {
					more = 0;
					break;
				}
				if (m->order[ri]->limit_end > barrier + span)
					break;
				if (removed++ > 200)
					break;
			}
			if (!last)
				break;
			/* past 200 removals Slurm goes on without a test */
			if (removed > 201)
				continue;
			/* a job past its planned end (start + limit, whole
			 * seconds) still holds its GPUs: not before now + 1 */
			found = fmax(last->limit_end, tnow + 1);
			rc = bf_try(s, j, req, found, tnow);
			if (rc == 0)
				break;
			found = INFINITY;
			if (rc != -ENOSPC)
				return rc;
			do
				span *= 2;
			while (ri < m->norder &&
			       m->order[ri]->limit_end > barrier + span);
		}
		if (found < INFINITY) {
			if (found > tnow) {
				double st = res_floor(o, found);
				double en = res_floor(
				    o, found + lim + o->bf_resolution - 1);

				if (found > tnow + o->bf_window)
					return 0;
				if (bf_resv_conflict(s, m, st, en)) {
					start_res = found;
					continue;
				}
			}
			*at = found <= tnow ? now : found;
			return 0;
		}
		if (later == INFINITY)
			return 0;
		start_res = later;
	}
}

/* --bf-log: "job ID start T|now|none nodes N,N..." per tested job. */
static void bf_log_job(struct state *s, const struct sim_job *j, double at,
		       double now)
{
	FILE *f = s->o->bf_log;
	const struct isle_place_result *r = &s->proj_res;

	if (at == INFINITY) {
		fprintf(f, "  job %d none\n", j->id);
		return;
	}
	if (at == now)
		fprintf(f, "  job %d now", j->id);
	else
		fprintf(f, "  job %d start %.3f", j->id, at);
	for (int k = 0; k < r->nnodes; k++)
		fprintf(f, "%s%s", k ? "," : " nodes ",
			s->t->nodes[r->nodes[k]].name);
	fputc('\n', f);
}

static int bf_pass(struct state *s, struct bf_map *m, double now, int *ntested)
{
	const struct sim_opts *o = s->o;
	double begin = res_floor(o, slurm_sec(o, now)); /* node_space[0] */
	int qi, out = 0, tested = 0, rc = 0;

	if (o->bf_log)
		fprintf(o->bf_log, "pass %.3f queue %d\n", now, s->nqueue);

	for (int i = 0; i < m->nresv; i++)
		free(m->resv[i].nodes);
	m->nresv = 0;
	rc = bf_order(s, m);
	if (rc)
		return rc;
	for (qi = 0; qi < s->nqueue; qi++) {
		int ji = s->queue[qi];
		struct sim_job *j = &s->jobs[ji];
		struct isle_place_req req;
		double at;

		if (tested >= o->bf_max_job_test) {
			s->queue[out++] = ji;
			continue;
		}
		tested++;
		make_req(s, j, &req);
		rc = bf_earliest(s, m, j, &req, now, &at);
		if (rc)
			return rc;
		/* nodes still completing: the job waits for their epilog,
		 * to now + 1 with a reservation (_attempt_backfill) */
		if (at == now &&
		    cg_any(s, s->proj_res.nodes, s->proj_res.nnodes, now))
			at = slurm_sec(o, now) + 1;
		if (o->bf_log)
			bf_log_job(s, j, at, now);
		if (at == now) {
			/* starts now, on what the map had free */
			struct isle_place_result tmp = s->res;

			s->res = s->proj_res;
			s->proj_res = tmp;
			rc = start_job(s, ji, now, slurm_sec(o, now), &req);
			if (!rc)
				rc = bf_order(s, m);
			if (rc)
				return rc;
			continue;
		}
		if (at < INFINITY) {
			/* _set_slot_time, then _add_reservation: from the
			 * map's start, one resolution step at least */
			double st = fmax(res_floor(o, at), begin);
			double en = res_floor(o, at + job_limit(j) +
						     o->bf_resolution - 1);

			rc = bf_add_resv(m, &s->proj_res, st,
					 fmax(en, st + o->bf_resolution));
			if (rc)
				return rc;
		}
		s->queue[out++] = ji;
	}
	s->nqueue = out;
	*ntested = tested;
	return 0;
}

/* Integrates occupancy and fragmentation up to `to` (inside the window). */
static void advance(struct state *s, double from, double to)
{
	double dt;

	if (to > s->window)
		to = s->window;
	dt = to - from;
	if (dt <= 0)
		return;
	s->busy_int += (double)(s->total - s->free_total) * dt;
	s->frag_int += isle_place_fragmentation(s->eng, s->free) * dt;
	if (s->o->occ_out &&
	    (to - s->last_occ_t >= s->window / 400 || to >= s->window)) {
		fprintf(s->o->occ_out, "%.1f %.4f\n", to / 3600.0,
			1.0 - (double)s->free_total / s->total);
		s->last_occ_t = to;
	}
}

const char *const sim_class_names[SIM_NCLASSES] = {"1", "2-8", "9-64", ">64"};

int sim_class_of(int gpus)
{
	return gpus <= 1 ? 0 : gpus <= 8 ? 1 : gpus <= 64 ? 2 : 3;
}

void sim_opts_fill(struct sim_opts *o)
{
	if (o->queue_depth <= 0)
		o->queue_depth = 100;
	if (o->bf_interval <= 0)
		o->bf_interval = 30;
	if (o->bf_max_job_test <= 0)
		o->bf_max_job_test = 500;
	if (o->bf_window <= 0)
		o->bf_window = 1440 * 60;
	if (o->bf_resolution <= 0)
		o->bf_resolution = 60;
	if (o->max_switch_wait <= 0)
		o->max_switch_wait = 300;
}

/*
 * The next backfill pass as backfill_agent (backfill.c) times it: it
 * sleeps bf_interval after a pass, then polls each second until
 * _more_work sees a change since that pass. While jobs pend there always
 * is one: each pass and each main pass stamp last_job_update as they set
 * the pending jobs' expected starts and reasons, so passes follow every
 * bf_interval. With no job pending a change still brings a pass, which
 * finds nothing to do but restarts the cycle. INFINITY: no pass is due
 * until the next change.
 */
static double bf_agent_next(const struct state *s, double now, double last,
			    int changed)
{
	if (!s->nqueue && !changed)
		return INFINITY;
	return last + s->o->bf_interval > now ? last + s->o->bf_interval : now;
}

/*
 * With o->ticks, the schedulers act on slurmctld's one-second clocks: the
 * main scheduler runs on the background loop's next tick after an event
 * (main_phase s into each second), backfill_agent on its own (bf_poll).
 * The first tick after t (what an event at t waits for).
 */
static double tick_after(double t, double phase)
{
	return floor(t - phase + 1e-9) + 1 + phase;
}

/* _more_work compares time() stamps, whole seconds: a change in the second
 * a pass ran counts as one after it. slurmctld's main scheduler ticks
 * when a second begins, so main_phase marks the seconds. */
static int same_second_or_later(double change, double pass, double phase)
{
	return change > -INFINITY &&
	       floor(change - phase + 1e-9) >= floor(pass - phase + 1e-9);
}

/* backfill_agent wakes bf_interval after its last pass and then polls
 * each second from there: its clock follows its own passes (and drifts
 * with them), bf_phase only places the first one. due: bf_agent_next's
 * time (the wake-up, or now). */
static double bf_poll(double last, double interval, double now, double due,
		      double phase)
{
	double wake = last + interval;

	if (last == -INFINITY)
		return tick_after(now, phase);
	if (due > now)
		return due;
	return wake + floor(now - wake + 1e-9) + 1;
}

/* The next time a queued tree-sw job stops waiting for one leaf: the
 * scheduler looks at it again then. */
static double next_switch_wait(const struct state *s, double now)
{
	double t = INFINITY;

	if (s->o->policy != SIM_TREE_SW)
		return t;
	for (int i = 0; i < s->nqueue; i++) {
		double w = s->jobs[s->queue[i]].submit + s->o->max_switch_wait;

		if (w > now && w < t)
			t = w;
	}
	return t;
}

/* The engine of a run: isle-cc's weighs the load of running jobs. */
static isle_place_ctx *engine_for(const isle_topo *t, enum sim_policy p)
{
	struct isle_place_opts eo;

	isle_place_opts_default(&eo);
	if (p == SIM_ISLE_CC)
		eo.contention_weight = SIM_CC_WEIGHT;
	return isle_place_create(t, &eo);
}

int sim_run(const isle_topo *t, struct sim_job *jobs, int n,
	    const struct sim_opts *o, struct sim_metrics *m)
{
	struct state s = {0};
	struct bf_map map = {0};
	struct sim_opts od = *o;
	double now = 0, next_bf = INFINITY, last_bf = -INFINITY;
	double last_change = -INFINITY;
	double next_main = INFINITY;
	int ai = 0, i, rc = -ENOMEM;

	memset(m, 0, sizeof(*m));
	sim_opts_fill(&od);
	o = &od;
	s.t = t;
	s.o = o;
	s.jobs = jobs;
	s.njobs = n;
	isle_place_result_init(&s.res);
	isle_place_result_init(&s.proj_res);
	s.eng = engine_for(t, o->policy);
	s.free = malloc((size_t)t->nnodes * sizeof(uint64_t));
	s.proj = malloc((size_t)t->nnodes * sizeof(uint64_t));
	map.stamp = calloc((size_t)t->nnodes + 1, sizeof(int));
	map.node_ok = calloc((size_t)t->nnodes + 1, sizeof(int));
	s.bf = calloc((size_t)t->nnodes + 1, sizeof(uint64_t));
	s.cg_until = calloc((size_t)t->nnodes + 1, sizeof(double));
	s.mfree = calloc((size_t)t->nnodes + 1, sizeof(uint64_t));
	s.heap = malloc(((size_t)n + 1) * sizeof(*s.heap));
	s.queue = malloc(((size_t)n + 1) * sizeof(int));
	s.net = sim_net_create(t);
	s.compute = calloc((size_t)n + 1, sizeof(double));
	s.step_cur = calloc((size_t)n + 1, sizeof(double));
	s.step_int = calloc((size_t)n + 1, sizeof(double));
	s.step_last = calloc((size_t)n + 1, sizeof(double));
	s.onfab = calloc((size_t)n + 1, 1);
	s.step_alone = calloc((size_t)n + 1, sizeof(double));
	if (!s.step_alone)
		goto out;
	if (!s.eng || !s.free || !s.proj || !map.stamp || !map.node_ok ||
	    !s.heap || !s.queue || !s.bf || !s.net || !s.compute ||
	    !s.step_cur || !s.step_int || !s.step_last || !s.onfab)
		goto out;
	s.pol = sim_policy_create(o->policy, t, s.eng, o->seed);
	if (s.pol) {
		sim_policy_set_release(s.pol, o->slurm_release);
		sim_policy_set_max_switch_wait(s.pol, o->max_switch_wait);
	}
	if (!s.pol)
		goto out;
	for (i = 0; i < t->nnodes; i++) {
		int g = t->nodes[i].ngpus;

		s.free[i] = g >= 64 ? ~0ULL : (1ULL << g) - 1;
		s.total += g;
		if (g > s.node_gpus)
			s.node_gpus = g;
	}
	for (i = 0; i < t->nislands; i++)
		if (t->islands[i].ngpus > s.max_island)
			s.max_island = t->islands[i].ngpus;
	s.free_total = s.total;
	s.window = n ? jobs[n - 1].submit : 0;
	for (i = 0; i < n; i++) {
		struct isle_place_req req;

		jobs[i].placed = 0;
		make_req(&s, &jobs[i], &req);
		if (isle_place_check(s.eng, &req, NULL, 0) == 0)
			m->jobs++;
		else
			jobs[i].placed = -1; /* never fits: dropped */
	}
	for (;;) {
		double next = INFINITY, sw = next_switch_wait(&s, now);
		int changed = 0, run_main, started;

		while (ai < n && jobs[ai].placed < 0)
			ai++;
		if (ai < n)
			next = jobs[ai].submit;
		if (s.nheap && s.heap[0].end < next)
			next = s.heap[0].end;
		if (next_bf < next)
			next = next_bf;
		if (next_main < next)
			next = next_main;
		if (sw < next)
			next = sw;
		if (o->epilog_s > 0)
			for (i = 0; i < t->nnodes; i++)
				if (s.cg_until[i] > now && s.cg_until[i] < next)
					next = s.cg_until[i];
		if (next == INFINITY)
			break;
		advance(&s, now, next);
		now = next;
		while (s.nheap && s.heap[0].end <= now) {
			struct running r = heap_pop(&s);

			for (i = 0; i < r.nnodes; i++) {
				s.free[r.nodes[i]] |= r.masks[i];
				s.cg_until[r.nodes[i]] = fmax(
				    s.cg_until[r.nodes[i]], now + o->epilog_s);
			}
			s.free_total += s.jobs[r.job].gpus;
			rc = load_track(&s, r.job, r.nodes, r.masks, r.nnodes,
					0);
			if (rc)
				goto out;
			free(r.nodes);
			free(r.masks);
			rc = net_end(&s, r.job, r.end);
			if (rc)
				goto out;
			changed = 1;
		}
		while (ai < n && jobs[ai].submit <= now) {
			if (jobs[ai].placed == 0)
				s.queue[s.nqueue++] = ai;
			ai++;
			changed = 1;
		}
		changed |= now == sw;
		/* an epilog's end brings the scheduler (job_epilog_complete) */
		if (o->epilog_s > 0)
			for (i = 0; i < t->nnodes; i++)
				changed |= s.cg_until[i] == now;
		/* the main scheduler runs on every event; the backfill
		 * scheduler every bf_interval, skipping a cycle when nothing
		 * changed (_more_work) */
		run_main = changed;
		if (o->ticks) {
			if (changed && next_main == INFINITY)
				next_main = tick_after(now, o->main_phase);
			run_main = now >= next_main;
			if (run_main)
				next_main = INFINITY;
		}
		started = s.started;
		rc = run_main ? main_pass(&s, now) : 0;
		changed |= s.started > started;
		if (!rc && now >= next_bf) {
			int tested = 0;

			rc = bf_pass(&s, &map, now, &tested);
			next_bf = INFINITY;
			/* backfill_agent sleeps from the pass's end */
			last_bf = now + o->bf_pass_cost * tested;
		}
		/* the pass's own starts count for _more_work (--ticks) only:
		 * without it the passes follow events, as before */
		if (changed || s.started > started)
			last_change = now;
		if (o->bf_agent) {
			if (next_bf == INFINITY)
				next_bf = bf_agent_next(
				    &s, now, last_bf,
				    o->ticks ? same_second_or_later(
						   last_change, last_bf,
						   o->main_phase)
					     : changed);
			if (o->ticks && next_bf < INFINITY)
				next_bf = bf_poll(last_bf, o->bf_interval, now,
						  next_bf, o->bf_phase);
		} else if (changed && s.nqueue && next_bf == INFINITY)
			next_bf =
			    (floor(now / o->bf_interval) + 1) * o->bf_interval;
		if (!rc)
			rc = net_update(&s, now);
		if (rc)
			goto out;
	}
	rc = 0;
	m->placed = s.started;
	m->tp_in_island_pct =
	    s.tp_groups ? 100.0 * s.tp_inside / s.tp_groups : 100.0;
	m->tp_in_island_req_pct =
	    s.req_groups ? 100.0 * s.req_inside / s.req_groups : 100.0;
	m->comm_cost_ratio_mean = sim_mean(s.ratio, s.nratio);
	m->comm_cost_ratio_p95 = sim_pct(s.ratio, s.nratio, 0.95);
	m->infer_latency_ratio_mean = sim_mean(s.iratio, s.niratio);
	m->occupancy_mean =
	    s.window > 0 ? s.busy_int / (s.window * (double)s.total) : 0;
	m->fragmentation_mean = s.window > 0 ? s.frag_int / s.window : 0;
	m->wait_mean_s = s.started ? s.wait_sum / s.started : 0;
	m->wait_p95_s = sim_pct(s.waits, s.nwaits, 0.95);
	m->wait_gpu_mean_s = s.gpu_sum > 0 ? s.wait_gpu_sum / s.gpu_sum : 0;
	m->jct_mean_s = sim_mean(s.jcts, s.njcts);
	for (i = 0; i < SIM_NCLASSES; i++) {
		m->wait_class_n[i] = s.ncwait[i];
		m->wait_class_mean[i] = sim_mean(s.cwait[i], s.ncwait[i]);
		m->wait_class_p95[i] = sim_pct(s.cwait[i], s.ncwait[i], 0.95);
	}
	m->step_time_mean = sim_mean(s.steps, s.nsteps);
	m->step_time_p95 = sim_pct(s.steps, s.nsteps, 0.95);
	m->comm_time_mean = sim_mean(s.comms, s.ncomms);
	m->dp_jobs = s.dp_jobs;
	m->shim_jobs = s.shim_jobs;
	m->step_alone_mean = sim_mean(s.alones, s.nalones);
	m->tp_groups_split_pct = 100.0 - m->tp_in_island_pct;
	m->decision_us_p50 = sim_pct(s.dec_us, s.ndec, 0.50);
	m->decision_us_p99 = sim_pct(s.dec_us, s.ndec, 0.99);
out:
	while (s.nheap) {
		struct running r = heap_pop(&s);

		free(r.nodes);
		free(r.masks);
	}
	sim_policy_destroy(s.pol);
	isle_place_destroy(s.eng);
	isle_place_result_fini(&s.res);
	isle_place_result_fini(&s.proj_res);
	free(s.free);
	free(s.proj);
	for (i = 0; i < map.nresv; i++)
		free(map.resv[i].nodes);
	free(map.resv);
	free(map.order);
	free(map.stamp);
	free(map.node_ok);
	free(s.bf);
	free(s.cg_until);
	free(s.mfree);
	free(s.heap);
	free(s.queue);
	free(s.dec_us);
	free(s.ratio);
	free(s.iratio);
	sim_net_destroy(s.net);
	free(s.compute);
	free(s.step_cur);
	free(s.step_int);
	free(s.step_last);
	free(s.onfab);
	free(s.step_alone);
	free(s.alones);
	free(s.steps);
	free(s.comms);
	free(s.waits);
	free(s.jcts);
	for (i = 0; i < SIM_NCLASSES; i++)
		free(s.cwait[i]);
	return rc;
}
