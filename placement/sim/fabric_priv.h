/*
 * fabric_priv.h - between the flow model of the emulated fabric
 * (fabric_model.c) and its replay of bench-fabric's result file
 * (fabric_replay.c). Only those two files include it.
 */
#ifndef ISLESIM_FABRIC_PRIV_H
#define ISLESIM_FABRIC_PRIV_H

#include "islesim.h"

/* fabric_job.c's model profiles */
struct fprofile {
	const char *name;
	double params, hidden;
	int layers;
	double tokens;
};

/* The profile called name, or NULL. */
const struct fprofile *sim_fab_profile(const char *name);

/* The emulated fabric: vertices are nodes and switches; parent[v] the
 * vertex at the other end of v's uplink (-1 at the root). Directed links
 * 2*v (up) and 2*v+1 (down), capacity in bytes/s. */
struct efab {
	int nv, nnodes;
	char **name;
	int *parent;
	double *cap;
	char *kind;	  /* 'n' node, 'd' NVLink domain, 'l' leaf, 's' above */
	char (*tier)[16]; /* the tier of v's uplink, as the plan names it */
	/* node v's GPU k is in NVLink island isl[v][k] (k < ngpu[v]) */
	int **isl, *ngpu;
};

/* The cable tree of `islectl emit fabric`'s plan of t, each cable at its
 * rate times scale. 0 or a negative errno (err filled for the plan's). */
int sim_efab_build(const isle_topo *t, double scale, struct efab *f, char *err,
		   size_t errlen);
void sim_efab_free(struct efab *f);
/* The vertex called name, or -1. */
int sim_efab_vertex(const struct efab *f, const char *name);

/* One cross-node transfer of a job's step. */
struct rflow {
	int job, phase;
	int a, b; /* fabric vertices of the two nodes */
	double bytes;
	int round; /* a phase's rounds run one after the other */
};

/* The flows of the jobs of one run, and room for solving them. */
struct rflows {
	struct rflow *v;
	int n, cap;
	int oom; /* a flow could not be stored */
};

/* A level of the shim's hierarchy for the job's DP allreduce. */
#define MAX_SLEV 8
struct slev {
	char scope;   /* i(sland), n(ode), l(eaf), j(ob) */
	double ratio; /* bytes on the wire per fp32 byte */
};

/* A job of a run: what the result file says (fabric_replay.c), then what
 * the model adds (sim_fab_job_costs, sim_fab_job_flows). */
struct rjob {
	const struct fprofile *pr; /* its model */
	int train, tp, pp, dp, nranks, gpn, nrec, nph;
	int nbc;   /* non-blocking calls (fabric_job --poll-us): libnbc */
	int nslev; /* the shim's levels, 0: plain MPI */
	struct slev slev[MAX_SLEV];
	double pass_max;	     /* bytes the shim leaves to MPI */
	double hop_s;		     /* probed host latency of one hop */
	double meas_ph[SIM_NPHASES]; /* measured phase ms, summed over nph */
	double meas_comp;	     /* measured compute ms, summed */
	double t0, t1;		     /* Slurm start and end, s */
	double compute_s;	     /* the modelled compute sleep */
	double cpu_s[SIM_NPHASES];   /* host CPU per phase, busiest rank */
	double verify_cpu_s;	     /* per rank */
	double vtp_s, vdp_s;	     /* its TP and DP parts */
	int *node;		     /* per rank: fabric vertex */
	double measured_sum;
	double solo_s; /* its step, no other job's ranks on the host; 0 */
};

/* Adds to by[v] the bytes that fl's flows of job jid carry over v's
 * uplink per step (both directions), TCP/IP/Ethernet framing included:
 * what the kernel's counters of the emulated cables count. */
void sim_fab_wire_bytes(const struct efab *f, const struct rflows *fl, int jid,
			double *by);

/* ceil(log2 n), 0 for n <= 1. */
int sim_fab_ceil_log2(int n);

/* The job's compute and fill-and-check CPU time at the run's scale. */
void sim_fab_job_costs(struct rjob *j, double scale);

/* Adds the flows of a training job's step (job jid of the run) to fl and
 * its host CPU per phase to j; a failed allocation sets fl->oom. */
void sim_fab_job_flows(const struct efab *f, struct rjob *j, int jid,
		       double scale, struct rflows *fl);

/* The model's step of job i of a run, seconds: total, and its fabric,
 * host and latency parts; per phase, with the phase's fill and check. */
struct fab_step {
	double step, fab, host, lat;
	double ph[SIM_NPHASES];
};

/* Predicts job i's step among jobs[0..nj) and the run's flows on a host of
 * cores cores; other jobs' ranks take the host's cores where their
 * solo_s is known (> 0). 0 or a negative errno. */
int sim_fab_step(const struct efab *f, const struct rjob *jobs, int nj,
		 const struct rflows *fl, int i, long cores,
		 struct fab_step *out);

#endif /* ISLESIM_FABRIC_PRIV_H */
