/*
 * sim.c - the discrete-event loop of islesim.
 *
 * Events are job arrivals and completions. After each event time the
 * scheduler walks the queue in submit order with EASY backfill: the first
 * job that does not fit gets a reservation at the earliest completion time
 * at which the policy can place it, and later jobs may start only if they
 * end before it or leave it room (placed elsewhere if need be). Every policy
 * sees the same stream and the same scheduler; only the placement differs.
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
#include <time.h>

#include "islesim.h"

struct running {
	int job;
	double end;
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
	char *onfab;
	int net_dirty;
	double *steps, *comms, *waits, *jcts;
	int nsteps, capsteps, ncomms, capcomms, nwaits, capwaits, njcts,
	    capjcts;
	long split_groups;
	int node_gpus;
	struct isle_place_result res;
	/* reservations: projected free masks and a scratch result; resv has
	 * the GPUs the reserved job gets at the shadow time, bf the free
	 * GPUs outside them */
	uint64_t *proj, *saved, *resv, *bf;
	struct isle_place_result proj_res;
};

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

/* Thread CPU time: a decision's own cost, not inflated when the machine is
 * shared and the thread is preempted. */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
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
	if (!rc)
		rc = sim_job_xfers(&tr, r->ranks, r->nranks, j->tp, j->pp, &x,
				   &nx);
	if (!rc)
		rc = sim_net_job_add(s->net, ji, x, nx);
	free(x);
	if (rc < 0)
		return rc;
	s->compute[ji] = tr.compute_s;
	s->onfab[ji] = rc > 0;
	s->net_dirty |= rc > 0;
	/* the job's own links only: its step time is fixed */
	s->step_cur[ji] = tr.compute_s + sim_net_comm_time(s->net, ji, NULL);
	return 0;
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
	if (s->o->cost_out && j->gpus >= 2)
		fprintf(s->o->cost_out, "%.6f\n",
			s->step_int[ji] / j->duration);
	sim_net_job_remove(s->net, ji);
	s->net_dirty |= s->onfab[ji];
	s->onfab[ji] = 0;
	return 0;
}

static int start_job(struct state *s, int ji, double now,
		     const struct isle_place_req *req)
{
	struct sim_job *j = &s->jobs[ji];
	struct isle_place_result *r = &s->res;
	struct running run = {.job = ji, .end = now + j->duration};
	int rc;

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
	if (push_sample(&s->waits, &s->nwaits, &s->capwaits, now - j->submit) ||
	    push_sample(&s->jcts, &s->njcts, &s->capjcts,
			now - j->submit + j->duration))
		return -ENOMEM;
	rc = account(s, j, req, r);
	if (rc)
		return rc;
	return net_start(s, ji, now, r);
}

static int cmp_end(const void *a, const void *b)
{
	const struct running *x = *(const struct running *const *)a;
	const struct running *y = *(const struct running *const *)b;

	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * EASY backfill reservation for job j: the earliest completion time after
 * which the policy can place j on the GPUs free then (running jobs end in
 * order), tried at every completion time once enough GPUs are free by
 * count, as Slurm's backfill tests the job against the ends of the running
 * jobs; *extra gets the GPUs to spare at that time. A cap on the tries
 * would leave a reservation at a time when the job still does not fit,
 * and since no later job keeps such a reservation, the whole queue would
 * wait behind it: that hit the policies that cannot place a job whenever
 * the GPU count allows (isle in required mode, tree-sw, block-seg). Every
 * policy gets the same treatment.
 */
static void set_resv(struct state *s, const struct isle_place_result *r)
{
	memset(s->resv, 0, (size_t)s->t->nnodes * sizeof(uint64_t));
	for (int k = 0; k < r->nnodes; k++)
		s->resv[r->nodes[k]] = r->masks[k];
}

static double shadow_time(struct state *s, const struct sim_job *j, long *extra)
{
	struct running **order;
	struct isle_place_req req;
	long avail = s->free_total;
	double t = INFINITY;
	int i;

	*extra = 0;
	order = malloc(((size_t)s->nheap + 1) * sizeof(*order));
	if (!order)
		return t;
	for (i = 0; i < s->nheap; i++)
		order[i] = &s->heap[i];
	qsort(order, (size_t)s->nheap, sizeof(*order), cmp_end);
	memcpy(s->proj, s->free, (size_t)s->t->nnodes * sizeof(uint64_t));
	make_req(s, j, &req);
	for (i = 0; i < s->nheap; i++) {
		const struct running *r = order[i];

		for (int k = 0; k < r->nnodes; k++)
			s->proj[r->nodes[k]] |= r->masks[k];
		avail += s->jobs[r->job].gpus;
		if (avail < j->gpus)
			continue;
		t = r->end;
		*extra = avail - j->gpus;
		if (i + 1 < s->nheap && order[i + 1]->end == r->end)
			continue; /* release everything ending together */
		if (sim_policy_place(s->pol, s->proj, &req, &s->proj_res) ==
		    0) {
			set_resv(s, &s->proj_res);
			break;
		}
	}
	free(order);
	return t;
}

/*
 * Backfill check: 1 if the reserved job still fits at the shadow time when
 * the GPUs of r stay busy past it; then they are taken out of the
 * projection for good.
 */
static int keeps_reservation(struct state *s, const struct sim_job *head,
			     const struct isle_place_result *r)
{
	struct isle_place_req req;
	int k, ok;

	for (k = 0; k < r->nnodes; k++) {
		s->saved[k] = s->proj[r->nodes[k]];
		s->proj[r->nodes[k]] &= ~r->masks[k];
	}
	make_req(s, head, &req);
	ok = sim_policy_place(s->pol, s->proj, &req, &s->proj_res) == 0;
	if (ok)
		set_resv(s, &s->proj_res);
	else
		for (k = 0; k < r->nnodes; k++)
			s->proj[r->nodes[k]] = s->saved[k];
	return ok;
}

/*
 * A job that runs past the reservation and whose own choice would take
 * GPUs the reserved job needs may still start elsewhere: placed by the
 * same policy on the free GPUs outside the reservation, as Slurm's
 * backfill keeps a later job off the reserved nodes. Its GPUs leave the
 * projection. 1 if placed (in s->res).
 */
static int place_around(struct state *s, const struct isle_place_req *req)
{
	int i;

	for (i = 0; i < s->t->nnodes; i++)
		s->bf[i] = s->free[i] & ~s->resv[i];
	if (sim_policy_place(s->pol, s->bf, req, &s->res))
		return 0;
	for (i = 0; i < s->res.nnodes; i++)
		s->proj[s->res.nodes[i]] &= ~s->res.masks[i];
	return 1;
}

static int schedule(struct state *s, double now)
{
	int qi, out = 0, tried = 0, rc = 0;
	const struct sim_job *head = NULL;
	double shadow = INFINITY;
	long extra = 0;
	struct {
		int gpus, tp, pp;
	} failed[64];
	int nfailed = 0;

	for (qi = 0; qi < s->nqueue; qi++) {
		int ji = s->queue[qi], f, ok = 0;
		struct sim_job *j = &s->jobs[ji];
		int past = head && now + j->duration > shadow;
		struct isle_place_req req;

		/* a job running past the reservation must leave room for it */
		if (tried >= s->o->queue_depth || j->gpus > s->free_total ||
		    (past && j->gpus > extra))
			goto wait;
		for (f = 0; f < nfailed; f++)
			if (failed[f].gpus == j->gpus &&
			    failed[f].tp == j->tp && failed[f].pp == j->pp)
				break;
		if (f < nfailed)
			goto wait;
		make_req(s, j, &req);
		{
			double t0 = now_us();

			rc = sim_policy_place(s->pol, s->free, &req, &s->res);
			if (push_sample(&s->dec_us, &s->ndec, &s->capdec,
					now_us() - t0))
				return -ENOMEM;
		}
		tried++;
		if (rc == -ENOSPC) {
			if (nfailed < 64) {
				failed[nfailed].gpus = j->gpus;
				failed[nfailed].tp = j->tp;
				failed[nfailed].pp = j->pp;
				nfailed++;
			}
			rc = 0;
			goto wait;
		}
		if (rc)
			return rc;
		if (past && !keeps_reservation(s, head, &s->res) &&
		    (shadow == INFINITY || !place_around(s, &req)))
			goto wait;
		rc = start_job(s, ji, now, &req);
		if (rc)
			return rc;
		if (past)
			extra -= j->gpus;
		ok = 1;
	wait:
		if (ok)
			continue;
		s->queue[out++] = ji;
		if (!head) {
			head = j;
			shadow = shadow_time(s, j, &extra);
		}
	}
	s->nqueue = out;
	return rc;
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

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int k;

	if (n == 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	k = (int)ceil(p * n) - 1;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return v[k];
}

static double mean(const double *v, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : 0.0;
}

int sim_run(const isle_topo *t, struct sim_job *jobs, int n,
	    const struct sim_opts *o, struct sim_metrics *m)
{
	struct state s = {0};
	double now = 0;
	int ai = 0, i, rc = -ENOMEM;

	memset(m, 0, sizeof(*m));
	s.t = t;
	s.o = o;
	s.jobs = jobs;
	s.njobs = n;
	isle_place_result_init(&s.res);
	isle_place_result_init(&s.proj_res);
	s.eng = isle_place_create(t, NULL);
	s.free = malloc((size_t)t->nnodes * sizeof(uint64_t));
	s.proj = malloc((size_t)t->nnodes * sizeof(uint64_t));
	s.saved = malloc((size_t)t->nnodes * sizeof(uint64_t));
	s.resv = calloc((size_t)t->nnodes + 1, sizeof(uint64_t));
	s.bf = calloc((size_t)t->nnodes + 1, sizeof(uint64_t));
	s.heap = malloc(((size_t)n + 1) * sizeof(*s.heap));
	s.queue = malloc(((size_t)n + 1) * sizeof(int));
	s.net = sim_net_create(t);
	s.compute = calloc((size_t)n + 1, sizeof(double));
	s.step_cur = calloc((size_t)n + 1, sizeof(double));
	s.step_int = calloc((size_t)n + 1, sizeof(double));
	s.step_last = calloc((size_t)n + 1, sizeof(double));
	s.onfab = calloc((size_t)n + 1, 1);
	if (!s.eng || !s.free || !s.proj || !s.saved || !s.heap || !s.queue ||
	    !s.resv || !s.bf || !s.net || !s.compute || !s.step_cur ||
	    !s.step_int || !s.step_last || !s.onfab)
		goto out;
	s.pol = sim_policy_create(o->policy, t, s.eng, o->seed);
	if (s.pol)
		sim_policy_set_release(s.pol, o->slurm_release);
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
		double next = INFINITY;

		while (ai < n && jobs[ai].placed < 0)
			ai++;
		if (ai < n)
			next = jobs[ai].submit;
		if (s.nheap && s.heap[0].end < next)
			next = s.heap[0].end;
		if (next == INFINITY)
			break;
		advance(&s, now, next);
		now = next;
		while (s.nheap && s.heap[0].end <= now) {
			struct running r = heap_pop(&s);

			for (i = 0; i < r.nnodes; i++)
				s.free[r.nodes[i]] |= r.masks[i];
			s.free_total += s.jobs[r.job].gpus;
			free(r.nodes);
			free(r.masks);
			rc = net_end(&s, r.job, r.end);
			if (rc)
				goto out;
		}
		while (ai < n && jobs[ai].submit <= now) {
			if (jobs[ai].placed == 0)
				s.queue[s.nqueue++] = ai;
			ai++;
		}
		rc = schedule(&s, now);
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
	m->comm_cost_ratio_mean = mean(s.ratio, s.nratio);
	m->comm_cost_ratio_p95 = pct(s.ratio, s.nratio, 0.95);
	m->infer_latency_ratio_mean = mean(s.iratio, s.niratio);
	m->occupancy_mean =
	    s.window > 0 ? s.busy_int / (s.window * (double)s.total) : 0;
	m->fragmentation_mean = s.window > 0 ? s.frag_int / s.window : 0;
	m->wait_mean_s = s.started ? s.wait_sum / s.started : 0;
	m->wait_p95_s = pct(s.waits, s.nwaits, 0.95);
	m->wait_gpu_mean_s = s.gpu_sum > 0 ? s.wait_gpu_sum / s.gpu_sum : 0;
	m->jct_mean_s = mean(s.jcts, s.njcts);
	m->step_time_mean = mean(s.steps, s.nsteps);
	m->step_time_p95 = pct(s.steps, s.nsteps, 0.95);
	m->comm_time_mean = mean(s.comms, s.ncomms);
	m->tp_groups_split_pct = 100.0 - m->tp_in_island_pct;
	m->decision_us_p50 = pct(s.dec_us, s.ndec, 0.50);
	m->decision_us_p99 = pct(s.dec_us, s.ndec, 0.99);
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
	free(s.saved);
	free(s.resv);
	free(s.bf);
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
	free(s.steps);
	free(s.comms);
	free(s.waits);
	free(s.jcts);
	return rc;
}
