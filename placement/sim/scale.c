/*
 * scale.c - the engine's decision time on a large synthetic cluster, for
 * islesim --bench (isle) and --bench-contention (isle-cc): jobs of a mix
 * placed until the cluster is 85% full, a random third of them leave, then
 * decisions are timed on what is left. Every job that stays also loads the
 * links, so a contention term has its real work; at weight 0 the loads are
 * kept but never read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "islesim.h"

#define SCALE_JOBS 20000

static long busy_gpus(const isle_topo *t, const uint64_t *fm)
{
	long busy = t->total_gpus;

	for (int i = 0; i < t->nnodes; i++)
		busy -= __builtin_popcountll(fm[i]);
	return busy;
}

int sim_decision_time(const struct sim_scale *s, struct sim_scale_result *r)
{
	struct isle_place_result res, *held = NULL;
	struct isle_place_opts eo;
	struct isle_place_req *hreq = NULL;
	struct sim_job *jobs = NULL;
	isle_place_ctx *eng = NULL;
	uint64_t *fm = NULL;
	double *us = NULL;
	isle_topo *t = NULL;
	struct sim_rng rng;
	char name[32], err[512];
	long busy = 0;
	int rc, i, nheld = 0, nd = 0;

	isle_place_result_init(&res);
	snprintf(name, sizeof(name), "scale:%d", s->nodes);
	rc = sim_cluster_build(name, s->data, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "islesim: %s\n", err);
		return rc;
	}
	rc = -ENOMEM;
	isle_place_opts_default(&eo);
	eo.contention_weight = s->contention_weight;
	eng = isle_place_create(t, &eo);
	fm = malloc((size_t)t->nnodes * sizeof(uint64_t));
	held = calloc(SCALE_JOBS, sizeof(*held));
	hreq = calloc(SCALE_JOBS, sizeof(*hreq));
	us = malloc((size_t)s->decisions * sizeof(double));
	jobs = sim_workload_gen(sim_mix_find(s->mix), SCALE_JOBS, t->total_gpus,
				1.0, s->seed);
	if (!eng || !fm || !held || !hreq || !us || !jobs)
		goto out;
	for (i = 0; i < t->nnodes; i++)
		fm[i] = (1ULL << t->nodes[i].ngpus) - 1;
	sim_rng_seed(&rng, s->seed ^ 0x5ca1e);
	for (i = 0; i < SCALE_JOBS && busy < 0.85 * t->total_gpus; i++) {
		struct isle_place_req *req = &hreq[nheld];

		isle_place_req_init(req);
		req->gpus = jobs[i].gpus;
		req->tp = jobs[i].tp;
		req->pp = jobs[i].pp;
		req->workload = jobs[i].workload;
		if (isle_place(eng, fm, NULL, req, &held[nheld]) != 0)
			continue;
		rc = isle_place_commit(&held[nheld], fm);
		if (!rc)
			rc = isle_place_load_add(
			    eng, held[nheld].nodes, held[nheld].masks,
			    held[nheld].nnodes, isle_traffic_of(req));
		if (rc)
			goto out;
		busy += req->gpus;
		nheld++;
	}
	for (i = 0; i < nheld; i++)
		if (sim_rng_unif(&rng) < 1.0 / 3) {
			rc = isle_place_release(&held[i], fm);
			if (!rc)
				rc = isle_place_load_remove(
				    eng, held[i].nodes, held[i].masks,
				    held[i].nnodes, isle_traffic_of(&hreq[i]));
			if (rc)
				goto out;
		}
	for (i = 0; i < s->decisions; i++) {
		const struct sim_job *j = &jobs[(i * 7919) % SCALE_JOBS];
		struct isle_place_req req;
		double t0;

		isle_place_req_init(&req);
		req.gpus = j->gpus;
		req.tp = j->tp;
		req.pp = j->pp;
		req.workload = j->workload;
		t0 = sim_now_us();
		isle_place(eng, fm, NULL, &req, &res);
		us[nd++] = sim_now_us() - t0;
	}
	r->p50_us = sim_pct(us, nd, 0.50);
	r->p99_us = sim_pct(us, nd, 0.99);
	r->decisions = nd;
	r->busy_frac = (double)busy_gpus(t, fm) / t->total_gpus;
	rc = 0;
out:
	for (i = 0; held && i < nheld; i++)
		isle_place_result_fini(&held[i]);
	isle_place_result_fini(&res);
	free(held);
	free(hreq);
	free(us);
	free(jobs);
	free(fm);
	isle_place_destroy(eng);
	isle_topo_destroy(t);
	return rc;
}
