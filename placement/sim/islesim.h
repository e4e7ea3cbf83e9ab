/*
 * islesim.h - internals of islesim, the discrete-event placement simulator.
 * Not a public interface: only the files of placement/sim/ include it.
 */
#ifndef ISLESIM_H
#define ISLESIM_H

#include <stdint.h>
#include <stdio.h>

#include "isle_place.h"

/* --- clusters.c --------------------------------------------------------- */

/* Builds a named cluster: "superpod", "nvl72", "pcie", "lingjun" (reads
 * data_dir/clos/lingjun-2023-topo.csv), or "scale:N" (N nodes of 8 GPUs,
 * 32 per leaf group). Also a cluster file path (isle_topo_load). Returns
 * 0 or a negative errno with err filled; *out is the caller's. */
int sim_cluster_build(const char *name, const char *data_dir, isle_topo **out,
		      char *err, size_t errlen);

/* Slurm topology/block base blocks of a cluster: one block per multi-node
 * NVLink domain when there are any, else per leaf group. block[node] gets
 * the block id; returns the block count. */
int sim_cluster_blocks(const isle_topo *t, int *block);

/* --- workload.c --------------------------------------------------------- */

struct sim_job {
	int id;
	double submit, duration; /* seconds */
	int gpus, tp, pp;
	isle_workload workload;
	/* filled by the simulation */
	double start;
	int placed;
};

struct sim_mix {
	const char *name;
	double mean_gpus; /* published mean GPUs per job */
	int max_gpus;	  /* published maximum */
};

/* The published mixes (shared/data/README.md); NULL name ends the list. */
extern const struct sim_mix sim_mixes[];
const struct sim_mix *sim_mix_find(const char *name);

/* Deterministic generator (xoshiro256**). */
struct sim_rng {
	uint64_t s[4];
};
void sim_rng_seed(struct sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(struct sim_rng *r);
double sim_rng_unif(struct sim_rng *r); /* [0, 1) */

/* Generates njobs jobs for a cluster of total_gpus GPUs at the given
 * offered load (0..1). Returns a malloc'd array the caller frees, or NULL. */
struct sim_job *sim_workload_gen(const struct sim_mix *mix, int njobs,
				 long total_gpus, double load, uint64_t seed);

/* Reads "submit,duration,gpus,tp,pp[,workload]" lines (header optional,
 * '#' comments). Returns 0 or -errno with err naming file:line. */
int sim_workload_read(const char *path, struct sim_job **jobs, int *njobs,
		      char *err, size_t errlen);

/* --- policies.c --------------------------------------------------------- */

enum sim_policy {
	SIM_ISLE = 0,
	SIM_LINEAR,
	SIM_TREE,
	SIM_BLOCK,
	SIM_RANDOM,
	SIM_NPOLICIES
};

extern const char *const sim_policy_names[SIM_NPOLICIES];
int sim_policy_parse(const char *s);

struct sim_policy_ctx;

/* A policy on a cluster; isle uses eng (borrowed). */
struct sim_policy_ctx *sim_policy_create(enum sim_policy p, const isle_topo *t,
					 isle_place_ctx *eng, uint64_t seed);
void sim_policy_destroy(struct sim_policy_ctx *pc);

/* Places req on free[]; fills res (nodes, masks, ranks) like isle_place.
 * Returns 0, -ENOSPC or another negative errno. */
int sim_policy_place(struct sim_policy_ctx *pc, const uint64_t *free,
		     const struct isle_place_req *req,
		     struct isle_place_result *res);

/* --- sim.c -------------------------------------------------------------- */

struct sim_metrics {
	double tp_in_island_pct;
	double comm_cost_ratio_mean, comm_cost_ratio_p95;
	double infer_latency_ratio_mean;
	double occupancy_mean;
	double wait_mean_s;
	double fragmentation_mean;
	double decision_us_p50, decision_us_p99;
	int jobs, placed;
	double tp_in_island_req_pct; /* TP groups of required-mode jobs */
};

struct sim_opts {
	enum sim_policy policy;
	uint64_t seed;
	int queue_depth; /* queued jobs tried per scheduling pass */
	FILE *trace;	 /* per-job placements, or NULL */
	FILE *cost_out;	 /* per-job cost ratios ("ratio"), or NULL */
	FILE *occ_out;	 /* "time occupancy" samples, or NULL */
};

/* Replays jobs[0..n) (sorted by submit) on t; fills m. */
int sim_run(const isle_topo *t, struct sim_job *jobs, int n,
	    const struct sim_opts *o, struct sim_metrics *m);

#endif /* ISLESIM_H */
