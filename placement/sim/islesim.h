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

/* Builds a named cluster: "superpod", "nvl72", "pcie", "lingjun", "roce2"
 * or "roce4" (the last three read data_dir/clos/lingjun-2023-topo.csv;
 * roce2/roce4: 8-GPU hosts, 4 rails, 2:1 / 4:1 into the aggregation), or
 * "scale:N" (N nodes of 8 GPUs,
 * 32 per leaf group). Also a cluster file path (isle_topo_load). Returns
 * 0 or a negative errno with err filled; *out is the caller's. */
int sim_cluster_build(const char *name, const char *data_dir, isle_topo **out,
		      char *err, size_t errlen);

/* Slurm topology/block base blocks of a cluster: one block per multi-node
 * NVLink domain when there are any, else per leaf group. block[node] gets
 * the block id; returns the block count. */
int sim_cluster_blocks(const isle_topo *t, int *block);

/* --- stats.c ------------------------------------------------------------ */

/* Thread CPU time in microseconds: a decision's own cost, not inflated
 * when the machine is shared and the thread is preempted. */
double sim_now_us(void);
/* The p-th percentile (0 < p <= 1) of v[0..n) by nearest rank: the
 * ceil(p * n)-th smallest. Sorts v; 0 when n is 0. */
double sim_pct(double *v, int n, double p);
/* The median of v[0..n), the mean of the middle two for even n. Sorts v;
 * 0 when n is 0. */
double sim_median(double *v, int n);
double sim_mean(const double *v, int n); /* 0 when n is 0 */

/* --- scale.c ------------------------------------------------------------ */

struct sim_scale {
	const char *data; /* ../shared/data, for the synthetic cluster */
	const char *mix;
	int nodes;
	uint64_t seed;
	int decisions;
	double contention_weight; /* 0: contention-blind isle */
};
struct sim_scale_result {
	double p50_us, p99_us; /* thread CPU time per decision */
	double busy_frac;      /* GPUs busy while timing */
	int decisions;
};
/* Decision time on an s->nodes cluster left about 57% busy by s->mix's
 * jobs (their link loads kept). 0 or a negative errno. */
int sim_decision_time(const struct sim_scale *s, struct sim_scale_result *r);

/* --- workload.c --------------------------------------------------------- */

struct sim_job {
	int id;
	double submit, duration; /* seconds */
	/* the time limit backfill plans with (s); 0: the duration, as
	 * when users give exact limits */
	double limit;
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

/* Reads "submit,duration,gpus,tp,pp[,workload[,limit]]" lines (header
 * optional, '#' comments; limit in seconds, at least the duration).
 * Returns 0 or -errno with err naming file:line. */
int sim_workload_read(const char *path, struct sim_job **jobs, int *njobs,
		      char *err, size_t errlen);

/* --- traffic.c ---------------------------------------------------------- */

/* A model class: what a job of that size trains (dense transformer, bf16,
 * sequences of 4096 tokens, one sequence per micro-batch). */
struct sim_model_class {
	const char *name;
	int max_gpus; /* jobs of at most this many GPUs train this class */
	double params;
	int layers, hidden;
};

/* The table, smallest class first; NULL name ends it. */
extern const struct sim_model_class sim_model_classes[];

/* Bytes per element of the activations and gradients traffic.c moves
 * (bf16). */
#define SIM_TRAFFIC_BYTES 2.0

/* One training step of a job, per GPU. */
struct sim_traffic {
	const struct sim_model_class *model;
	double compute_s;	 /* seconds of compute per step */
	double tp_msg, tp_calls; /* TP allreduce: bytes per call, calls */
	double pp_msg, pp_calls; /* stage boundary: bytes per send, sends */
	double dp_bytes;	 /* gradients allreduced per DP replica */
};

/* Traffic of a training job of gpus GPUs as tp x pp x dp: the class comes
 * from the job size; every policy sees the same. 0 or -EINVAL. */
int sim_traffic_of(int gpus, int tp, int pp, struct sim_traffic *out);

/* --- netsim.c: flow-level network model ------------------------------- */

enum sim_phase { SIM_PH_TP = 0, SIM_PH_PP, SIM_PH_DP, SIM_NPHASES };

/* A flow's use of a directed link: the flow's rate times w. */
struct sim_use {
	int link;
	double w;
};

/* Max-min fair rates (progressive filling) of nflows flows; flow f uses
 * use[off[f]..off[f+1]); a flow that uses no link gets INFINITY. Rates in
 * the unit of cap. 0, -EINVAL or -ENOMEM. */
int sim_maxmin(int nlinks, const double *cap, int nflows, const int *off,
	       const struct sim_use *use, double *rate);

/* A transfer of one step between two GPUs (bytes per step). */
struct sim_xfer {
	int node_a, gpu_a, node_b, gpu_b;
	int phase;
	double bytes;
};

/* The rank-to-rank transfers of one training step of a placed job (ring
 * allreduce for TP and DP groups, sends between pipeline stages); rank
 * layout as in isle_place.h; rings visit a node's GPUs together and
 * cross to the next node on one channel per GPU pair, as NCCL does. *out
 * is malloc'd; 0 or -ENOMEM. */
int sim_job_xfers(const struct sim_traffic *tr,
		  const struct isle_place_rank *ranks, int nranks, int tp,
		  int pp, struct sim_xfer **out, int *nout);

/* Ring allreduce of bytes over members[0..n) as NCCL builds it (the
 * transfers sim_job_xfers makes for one group), appended to x from index
 * k; members are regrouped by node. Returns the new count (at most 2n
 * added). */
int sim_ring_xfers(struct sim_xfer *x, int k,
		   const struct isle_place_rank *ranks, int *members, int n,
		   int phase, double bytes);

struct sim_net;

struct sim_net *sim_net_create(const isle_topo *t);
void sim_net_destroy(struct sim_net *n);

/* The directed links a flow from GPU a to GPU b of different nodes uses:
 * NIC up, NIC down, then the switch links with their share. Returns the
 * count or -ENOSPC when more than max. */
int sim_net_route(struct sim_net *n, int node_a, int gpu_a, int node_b,
		  int gpu_b, struct sim_use *out, int max);

/* What directed link `link` is: lo = switch below (or -1 - node for a NIC
 * link), hi = switch above, *cap in GB/s; returns 0 up, 1 down. */
int sim_net_link_info(const struct sim_net *n, int link, int *lo, int *hi,
		      double *cap);

/* Adds job id's transfers (rates of its own links are solved now);
 * returns the number of its flows on the shared fabric, or -errno. */
int sim_net_job_add(struct sim_net *n, int id, const struct sim_xfer *x,
		    int nx);
void sim_net_job_remove(struct sim_net *n, int id);

/* Communication seconds per step of job id if it had the fabric to
 * itself (its flows alone, max-min): *out. 0 or -errno. */
int sim_net_comm_alone(struct sim_net *n, int id, double *out);
/* The same, and in *above (NULL: not wanted) the part of it spent in
 * flows that leave the switch of their NICs (per phase the slowest such
 * flow, summed over phases). */
int sim_net_comm_alone_split(struct sim_net *n, int id, double *out,
			     double *above);

/* Shares the fabric between all jobs' flows (max-min). 0 or -errno. */
int sim_net_solve(struct sim_net *n);

/* Communication seconds per step of job id under the last solve: per
 * phase the slowest of its flows, phases one after the other. */
double sim_net_comm_time(const struct sim_net *n, int id,
			 double phase_s[SIM_NPHASES]);

/* --- fabric_replay.c: the flow model against the emulated fabric ------ */

/* Replays every run of the fabric benchmark's result file (fabric.json of
 * bench/fabric/run.sh, with its job_list placements) on the emulated
 * fabric of shape_dir/SHAPE.json and prints, per shape and configuration,
 * the measured and predicted mean training step and the error. Returns 0;
 * 1 when max_err_pct > 0 and some configuration's |error| exceeds it;
 * -ENODATA when the file has no training runs to replay (no job_list);
 * another negative errno on a bad file. */
int sim_fabric_replay(const char *path, const char *shape_dir,
		      double max_err_pct, FILE *out);

/* --- shim_model.c: collectives as comm_shim runs them ---------------- */

/* ISLE_COMM_PROBE_SHARE's default (comm_shim/config.c): the crossover
 * probe moves at most this share of what a communicator carried. */
#define SIM_SHIM_PROBE_SHARE 0.01

/* Wire bytes per fp32 byte of a codec spec, from the shim's
 * isle_codec_encoded_size (proto) at large n: bf16 and fp16 0.5, int8:B
 * 0.25 + 1/B, topk:R 2R, a spec isle_codec_parse refuses 1. */
double sim_codec_ratio(const char *spec);

/* The admin's default codec (agent/plan_build.c) for a level carried by
 * tier: none on NVLink and PCIe, int8 across the network (a
 * non-blocking spine or core takes the leaf's codec). */
const char *sim_shim_codec(const isle_topo *t, isle_tier tier);

/* One level of the shim's hierarchy: per member its key at the level's
 * scope, and the codec's wire ratio. */
struct sim_shim_level {
	const int *key;
	double ratio;
};

/* One group's ring: members grp[0..g) (indices into the communicator),
 * bytes of fp32 payload, the level's wire ratio. */
typedef void (*sim_shim_ring_fn)(void *ctx, const int *grp, int g, double bytes,
				 double ratio);

/* The hierarchy of an allreduce of bytes over n members (see
 * shim_model.c): calls ring once per group of two or more members, level
 * by level. 0 or -ENOMEM. */
int sim_shim_hier(int n, const struct sim_shim_level *lv, int nlev,
		  double bytes, sim_shim_ring_fn ring, void *ctx);

/* The levels the plan gives a communicator of ranks mem[0..n) of a
 * placed job: island, node, leaf where each nests and has fewer groups,
 * then the job; keys has room for n * (ISLE_TIER_COUNT + 1). Returns the
 * level count (at least 1). */
int sim_shim_levels(const isle_topo *t, const struct isle_place_rank *ranks,
		    const int *mem, int n, int *keys,
		    struct sim_shim_level *lv);

/* A step's transfers with the DP allreduce as the shim runs it (its
 * bytes grown by probe_share, the bound on the probe), TP and PP as
 * sim_job_xfers. *out malloc'd; 0 or -ENOMEM. */
int sim_shim_xfers(const isle_topo *t, const struct sim_traffic *tr,
		   const struct isle_place_rank *ranks, int nranks, int tp,
		   int pp, double probe_share, struct sim_xfer **out,
		   int *nout);

/* Adds job id's traffic under isle+shim: the shim's transfers when their
 * communication alone on the job's own links is strictly shorter than
 * the library's, else the library's (the shim passes through). *used: 1
 * when the shim's. Returns what sim_net_job_add returns. */
int sim_shim_job_add(struct sim_net *net, const isle_topo *t, int id,
		     const struct sim_traffic *tr,
		     const struct isle_place_rank *ranks, int nranks, int tp,
		     int pp, double probe_share, int *used);

/* --- policies.c --------------------------------------------------------- */

enum sim_policy {
	SIM_ISLE = 0,
	SIM_LINEAR,
	SIM_TREE,
	SIM_BLOCK,
	SIM_RANDOM,
	SIM_TREE_SW,   /* tree with --switches=1 */
	SIM_BLOCK_SEG, /* block with --segment */
	SIM_ISLE_CC,   /* isle with contention_weight SIM_CC_WEIGHT */
	SIM_ISLE_SHIM, /* isle's placement, collectives through the shim */
	SIM_NPOLICIES
};

/* isle-cc's contention_weight (isle_place.h): fixed before its results
 * were looked at, not tuned on them. */
#define SIM_CC_WEIGHT 1.0

extern const char *const sim_policy_names[SIM_NPOLICIES];
int sim_policy_parse(const char *s);

struct sim_policy_ctx;

/* A policy on a cluster; isle uses eng (borrowed). */
struct sim_policy_ctx *sim_policy_create(enum sim_policy p, const isle_topo *t,
					 isle_place_ctx *eng, uint64_t seed);
void sim_policy_destroy(struct sim_policy_ctx *pc);

/* The Slurm release the baselines follow, as major*100+minor (2411, 2511,
 * 2605; 0: 24.11). From 26.05 cons_tres takes a job of at most one node
 * before the topology plugin's eval_nodes (_get_one_res): the first node
 * in node order (equal weights) that fits, under tree and block alike. */
void sim_policy_set_release(struct sim_policy_ctx *pc, int release);

/* "24.11", "25.11" or "26.05" (a longer version such as 26.05.3 too) ->
 * 2411, 2511, 2605; -EINVAL otherwise. */
int sim_release_parse(const char *s);

/* Seconds the next request's job has waited (by the time it would
 * start), and how long tree-sw waits for one leaf switch before it takes
 * any (Slurm's max_switch_wait; default 300). */
void sim_policy_set_waited(struct sim_policy_ctx *pc, double waited);
void sim_policy_set_max_switch_wait(struct sim_policy_ctx *pc, double s);

/* Places req on free[]; fills res (nodes, masks, ranks) like isle_place.
 * Returns 0, -ENOSPC or another negative errno. */
int sim_policy_place(struct sim_policy_ctx *pc, const uint64_t *free,
		     const struct isle_place_req *req,
		     struct isle_place_result *res);

/* A reservation at a later time (backfill): fm_later free then, fm_now
 * free now. isle: isle_place_later (nodes busy now first); the baselines
 * place on fm_later as Slurm's plugins do on the will-run bitmap. */
int sim_policy_place_later(struct sim_policy_ctx *pc, const uint64_t *fm_later,
			   const uint64_t *fm_now,
			   const struct isle_place_req *req,
			   struct isle_place_result *res);

/* --- sim.c -------------------------------------------------------------- */

/* Job size classes of the wait report: 1, 2-8, 9-64, >64 GPUs. */
enum { SIM_NCLASSES = 4 };
extern const char *const sim_class_names[SIM_NCLASSES];
int sim_class_of(int gpus);

struct sim_metrics {
	/* flow model (netsim.c): mean step time over each training job of
	 * 2+ GPUs's run, seconds */
	double step_time_mean, step_time_p95;
	double comm_time_mean; /* its communication part */
	/* isle+shim: training jobs of 2+ GPUs with a DP allreduce, and those
	 * whose allreduce the shim took (the rest passed through) */
	int dp_jobs, shim_jobs;
	double step_alone_mean; /* the same jobs' step alone on the fabric */
	double wait_p95_s, jct_mean_s; /* jct = wait + run time */
	double wait_gpu_mean_s;	       /* wait weighted by the job's GPUs */
	double tp_groups_split_pct;
	double tp_in_island_pct;
	/* the engine's own cost (isle_place_eval / isle_place_ideal) */
	double comm_cost_ratio_mean, comm_cost_ratio_p95;
	double infer_latency_ratio_mean;
	double occupancy_mean;
	double wait_mean_s;
	double fragmentation_mean;
	double decision_us_p50, decision_us_p99;
	int jobs, placed;
	double tp_in_island_req_pct; /* TP groups of required-mode jobs */
	/* wait by job size class (sim_class_of); count 0: no such job */
	double wait_class_mean[SIM_NCLASSES], wait_class_p95[SIM_NCLASSES];
	int wait_class_n[SIM_NCLASSES];
};

/* Scheduling follows Slurm's main scheduler and sched/backfill (sim.c);
 * a field left 0 gets Slurm's default (sim_opts_fill). */
struct sim_opts {
	enum sim_policy policy;
	uint64_t seed;
	int slurm_release;	/* see sim_policy_set_release */
	int queue_depth;	/* default_queue_depth: main pass (100) */
	double bf_interval;	/* s between backfill passes (30) */
	int bf_max_job_test;	/* jobs a backfill pass tests (500) */
	double bf_window;	/* s the time map spans (1440 min) */
	double bf_resolution;	/* s, the map's time step (60) */
	int bf_continue;	/* accepted; see sim.c */
	double max_switch_wait; /* s tree-sw waits for one leaf (300) */
	/* backfill passes timed as backfill_agent times them: bf_interval
	 * after the previous pass while jobs pend, at once when one arrives
	 * after that (0: on a grid of bf_interval from time 0) */
	int bf_agent;
	/* main passes and backfill_agent's polls on one-second ticks, this
	 * far into each second (sim.c, tick_at) */
	int ticks;
	double main_phase, bf_phase;
	/* slurmctld's epoch time at islesim's time 0 (s): its clocks are
	 * whole seconds and its map steps and will-run barriers fall on
	 * the epoch (sim.c, slurm_sec); 0 unless --epoch0 */
	double epoch0;
	/* s a backfill pass takes per job it tests: backfill_agent's next
	 * pass follows the end of the last (--bf-pass-cost; 0: none) */
	double bf_pass_cost;
	/* s a node completes after its job ends (the epilog's reply): the
	 * main scheduler skips it, backfill defers a job that chose it
	 * (--epilog; 0: none) */
	double epilog_s;
	/* the main scheduler stamps its starts with the second before its
	 * tick: slurmctld's time() (the coarse clock) has not turned yet as
	 * the background loop wakes on the second (--main-stamp-prev) */
	int main_stamp_prev;
	FILE *trace;	/* per-job placements, or NULL */
	FILE *bf_log;	/* backfill passes' decisions (sim.c), or NULL */
	FILE *cost_out; /* per-job step times (2+ GPU training), or NULL */
	FILE *occ_out;	/* "time occupancy" samples, or NULL */
};

/* Slurm's defaults for the fields left 0. */
void sim_opts_fill(struct sim_opts *o);

/* Replays jobs[0..n) (sorted by submit) on t; fills m. */
int sim_run(const isle_topo *t, struct sim_job *jobs, int n,
	    const struct sim_opts *o, struct sim_metrics *m);

/* --- bench_cc.c ---------------------------------------------------------- */

/* islesim --bench-contention: isle against isle-cc (see bench_cc.c);
 * writes dir/contention.json, prints the table and the goals' verdict.
 * 0 (also when a goal is missed) or a negative errno. */
int sim_bench_contention(const char *dir, const char *data, const char *commit,
			 int njobs, uint64_t seed, int decisions);

/* --- bench_table.c ------------------------------------------------------ */

/* islesim --bench-table: six clusters under tree, block, isle, isle-cc and
 * isle+shim, each mix (or mix_only), 3 seeds from seed: writes
 * dir/placement-table.{json,md,svg}, prints the table and the goals'
 * verdict. 0 (also when a goal is missed) or a negative errno. */
int sim_bench_table(const char *dir, const char *data, const char *commit,
		    const char *mix_only, int njobs, uint64_t seed);

#endif /* ISLESIM_H */
