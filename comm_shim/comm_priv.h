/*
 * comm_priv.h - internals shared by the comm_shim source files (isle__comm_*).
 */
#ifndef ISLE_COMM_PRIV_H
#define ISLE_COMM_PRIV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "isle_proto.h"
#include "isle_comm.h"

#define ISLE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A number from the environment: 0 and *out left alone when unset. */
int isle__env_double(const char *name, double *out, char *err, size_t errlen);

/* Even split of n elements into s shards: shard q is [off, off + len). */
static inline void isle__shard(size_t n, int s, int q, size_t *off, size_t *len)
{
	size_t base = n / (size_t)s, rem = n % (size_t)s, uq = (size_t)q;

	*off = uq * base + (uq < rem ? uq : rem);
	*len = base + (uq < rem ? 1 : 0);
}

/*
 * The crossover probe (comm.c): sizes ISLE__CAL_MIN << 2k for k <
 * ISLE__CAL_N (8 B .. 2 MiB), each run isle__cal_reps(k) + 1 times (one
 * warm-up; more where they cost little and noise is large) by every
 * candidate: the library's algorithms it lets a caller
 * pick (mpi_algo.h) and the shim's own path where the model gives it the
 * size. Size class k holds the sizes nearest to its probe size: above
 * (CAL_MIN << 2k) / 2, up to (CAL_MIN << 2k) * 2; -1 above the top one.
 */
#define ISLE__CAL_MIN 8u
#define ISLE__CAL_N 10
#define ISLE__CAL_REPS_MAX 11

static inline int isle__cal_reps(int k)
{
	return (ISLE__CAL_MIN << (2 * k)) <= (32u << 10) ? ISLE__CAL_REPS_MAX
							 : 3;
}
#define ISLE__LIB_MAX 6 /* library algorithms the probe tries, at most */

static inline int isle__cal_class(size_t bytes)
{
	int k = 0;

	while (k < ISLE__CAL_N &&
	       bytes > ((size_t)ISLE__CAL_MIN << (2 * k)) * 2)
		k++;
	return k < ISLE__CAL_N ? k : -1;
}

/* 2k for the sizes of class k up to its probe size, 2k + 1 above it; -1
 * above the top class. */
static inline int isle__cal_half(size_t bytes)
{
	int k = isle__cal_class(bytes);

	return k < 0 ? -1
		     : 2 * k + (bytes > ((size_t)ISLE__CAL_MIN << (2 * k)));
}

/* Payload bytes (per rank) the probe moves: nlib library algorithms at
 * every size, the shim's path at the sizes in shim_mask (bit k: size
 * ISLE__CAL_MIN << 2k), warm-up included. */
uint64_t isle__probe_cost(unsigned shim_mask, int nlib);

/*
 * 1 if a probe of cost payload bytes may run on a communicator whose
 * allreduces have carried `carried` payload bytes: cost <= share *
 * carried (share <= 0: always). The probe so stays within share of what
 * the communicator moved before it, and of what the job moves in all.
 */
int isle__probe_due(uint64_t carried, uint64_t cost, double share);
/* The least `carried` for which isle__probe_due() holds. */
uint64_t isle__probe_due_at(uint64_t cost, double share);

/* Codec internals (codec_cpu.c, codec_cuda.cu). */

/* top-k header count flag: at least k non-finite values (see isle_comm.h). */
#define ISLE_TOPK_NONFINITE 0x80000000u
/* int8 block with non-finite values (negative scale): the codes. */
#define ISLE_INT8_SPECIAL_STEPS 126.0f
#define ISLE_INT8_Q_PINF 127
#define ISLE_INT8_Q_NINF (-127)
#define ISLE_INT8_Q_NAN (-128)

/* The ratio of top-k codec c at its call-th call (from 0): c->ratio, or
 * during c->warm's warm-up the larger one the warm-up gives. */
double isle__topk_ratio_at(const struct isle_codec *c, uint64_t call);
/*
 * Top-k encode of x with c->momentum (host memory): mom (n, zero at first
 * use) becomes c->momentum * mom + x, the error-feedback residual res (n)
 * accumulates it, dst = topk(res), and res and mom are zero where dst
 * holds a value. 0 or a negative errno (-EINVAL: not topk, no buffers).
 */
int isle__topk_mom_encode(const struct isle_codec_ops *ops,
			  const struct isle_codec *c, const float *x, size_t n,
			  void *dst, float *res, float *mom);
void isle__cpu_add_f32(float *dst, const float *src, size_t n);
void isle__cpu_add_f64(double *dst, const double *src, size_t n);

/* ------------------------------------------------- MPI internals */
#ifdef MPI_VERSION

#include "mpi_algo.h"

#define ISLE__TAG 0x1517

/* One level of this rank's hierarchy (or the flat "all ranks" level). */
struct isle__level {
	MPI_Comm comm; /* MPI_COMM_NULL where this rank holds no shard above */
	int size, rank;
	int nshards;  /* shards at this level: smallest group size, job-wide */
	int max_size; /* largest group size, job-wide (cost model) */
	double bw_gbps, lat_us;
	struct isle_codec codec;
	const char *name; /* borrowed from the plan */
};

struct isle__resid {
	uint64_t key;
	int stage;
	size_t n;
	float *r;
	struct isle__resid *next;
};

/*
 * A set of communicators for one thread of control: the blocking calls use
 * one channel, the helper thread another, so their messages never mix.
 */
struct isle__chan {
	struct isle_comm *owner;
	MPI_Comm all; /* dup of the user's communicator */
	int size, rank;
	int nlev;
	struct isle__level lev[ISLE_PLAN_MAX_LEVELS];
	struct isle__level flat; /* all ranks, codec none */
	/* 0..3: the blocking steps; 4..11: two pipelined top-level
	 * allreduces in flight, four slots each (coll.c). */
	void *scratch[12];
	size_t scratch_len[12];
	struct isle__resid *resid;
	/* Allreduces through a top-k level with warm-up: its clock. Every
	 * rank makes the same collective calls on a channel, so all read the
	 * same count (a per-buffer count would rest on buffer addresses). */
	uint64_t warm_calls;
	int failed;  /* sticky after a timeout: the peers are out of step */
	int probing; /* the crossover probe runs: its bytes count apart */
};

struct isle__async;

struct isle_comm {
	struct isle_comm_config cfg;
	struct isle_plan *plan;
	const struct isle_codec_ops *ops;
	int *plan_rank; /* communicator rank -> plan rank */
	struct isle__chan sync, async;
	struct isle__async *helper; /* NULL without THREAD_MULTIPLE */
	int plans_differ; /* ranks loaded different plans: passthrough */
	/* auto, the probe: the largest probe size a library algorithm won
	 * among those the model gives the shim (the helper's crossover). */
	size_t pass_max;
	int cal_pending; /* the probe waits for ... */
	/* ... the payload of this communicator's float and double sums, on
	 * either path (carried, the same on every rank), to reach cal_due
	 * (isle__probe_due_at of its cost cal_cost; UINT64_MAX: no probe). */
	uint64_t carried, cal_due, cal_cost;
	/* Calls of up to this many bytes (either type) always go to the
	 * library: the interposer hands them over at once (small_pass). */
	size_t small_pass;
	/* The library's algorithms the probe tries (lib[0] its default) and,
	 * Open MPI, a communicator for each (lib_comm[0]: sync.all). */
	int nlib;
	struct isle__lib_algo lib[ISLE__LIB_MAX];
	MPI_Comm lib_comm[ISLE__LIB_MAX];
	/* The probe's verdict per size class: -1 the model decides (the shim
	 * won, or no probe yet), i >= 0 library algorithm lib[i] (faster
	 * than the shim and than every other candidate). */
	signed char route[ISLE__CAL_N];
	/* What calls get, per half class (isle__cal_half): route[k] where a
	 * library algorithm won at k, else the library's pick at the
	 * neighbouring probe size on that side, if any: between two probe
	 * sizes the shim keeps calls only where it won at both. */
	signed char route_half[2 * ISLE__CAL_N];
	/* Above the probed sizes: the shim's and the library default's times
	 * as lines through the top two probe sizes; the shim keeps a call of
	 * n bytes only while big_da + n * big_dc < 0 (big_fit set). */
	int big_fit;
	double big_da, big_dc;
	int probed; /* route, big_* and pass_max hold the probe's verdict */
	char desc[1024];
};

/* xport.c */
int isle__waitall(struct isle__chan *ch, MPI_Comm comm, int n,
		  MPI_Request *reqs, const int *peers);
/*
 * Posts the receive of exactly `bytes` from src into *req, once the message
 * is there (matched probe): a message of another size (ranks called with
 * different counts or types) fails here with -EMSGSIZE and one line naming
 * the peer, at once, never summed and never a truncation error raised by the
 * MPI library on a handler of the user's. -ETIMEDOUT as isle__waitall().
 */
int isle__recv_exact(struct isle__chan *ch, MPI_Comm comm, void *buf,
		     size_t bytes, int src, MPI_Request *req);
int isle__sendrecv(struct isle__chan *ch, MPI_Comm comm, const void *sbuf,
		   size_t sbytes, int dst, void *rbuf, size_t rbytes, int src);
double isle__now(void);
/*
 * Tests (block = 0) or waits for (block = 1) n requests posted by the
 * pipelined hierarchy; *done = 1 when all completed. want[i] is the exact
 * byte count due for a receive, SIZE_MAX for a send; st holds n statuses.
 * Size mismatch: -EMSGSIZE and one line naming the peer; -ETIMEDOUT as
 * isle__waitall().
 */
int isle__test_sized(struct isle__chan *ch, MPI_Comm comm, int n,
		     MPI_Request *reqs, const int *peers, const size_t *want,
		     MPI_Status *st, int block, int *done);

/* comm.c */

/*
 * Groups at every level, computed identically on every rank from the plan:
 * level l groups the ranks still active that share the scope value and
 * their positions in all lower groups. color[l][i] is the lowest rank of
 * i's group (-1: not active), idx[l][i] its position in it. Needs c->plan
 * and c->plan_rank (p entries) only; the caller frees color and idx.
 */
struct isle__groups {
	int *color, *idx;
	int nshards[ISLE_PLAN_MAX_LEVELS], max_size[ISLE_PLAN_MAX_LEVELS];
};
int isle__build_groups(const struct isle_comm *c, int p,
		       struct isle__groups *g);
void *isle__scratch(struct isle__chan *ch, int slot, size_t bytes);
float *isle__residual(struct isle__chan *ch, uint64_t key, int stage, size_t n);
isle_algo isle__choose(const struct isle_comm *c, size_t count,
		       isle_dtype dtype);
/* The same with the crossover as it stood when the call was made (the
 * helper thread's requests carry theirs). */
isle_algo isle__choose_pm(const struct isle_comm *c, size_t count,
			  isle_dtype dtype, size_t pass_max);

/* Whether the probe gave calls of `bytes` to the library. */
static inline int isle__routed(const struct isle_comm *c, size_t bytes)
{
	int h = isle__cal_half(bytes);

	return h >= 0 && c->route_half[h] >= 0;
}
/* A call the shim hands to the library, by the algorithm the probe picked
 * for its size (the default where it picked none). MPI's return code. */
/* The library algorithm (index into c->lib) for a call of bytes that the
 * shim passes on; 0: the default. */
int isle__lib_pick(const struct isle_comm *c, size_t bytes);
int isle__lib_call(const struct isle_comm *c, const void *sendbuf,
		   void *recvbuf, int count, MPI_Datatype dt, size_t bytes);
/* The thread level the application asked for (the interposer raises
 * what it gets); -1 unknown: MPI_Query_thread's. */
extern int isle__app_thread_level;

/* coll.c: in-place sum of buf on channel ch. */
int isle__allreduce(struct isle__chan *ch, void *buf, size_t count,
		    isle_dtype dtype, isle_algo algo, uint64_t key);

/*
 * stats.c: what the shim did, process-wide, for the per-job report
 * (struct isle_report). Safe from any thread (atomic counters).
 */
int isle__scope_val(const struct isle_plan_rank *r, isle_scope s);
/* A call of `bytes` payload bytes and what ran it (enum
 * isle_report_path: ISLE_REPORT_SHIM is a taken call). */
void isle__stat_ran(uint64_t bytes, int path);
/* A taken call of count elements by algo on ch: the library's bytes for
 * it (ring in rank order) and the codecs its levels use. */
void isle__stat_taken(struct isle__chan *ch, size_t count, isle_dtype dt,
		      isle_algo algo);
/* bytes sent by the shim to rank peer of comm (ch->all or a level's). */
void isle__stat_send(struct isle__chan *ch, MPI_Comm comm, int peer,
		     size_t bytes);
/* The library's allreduce of `bytes` on ch run by the probe. */
void isle__stat_probe_lib(struct isle__chan *ch, size_t bytes);
void isle__stat_probe_time(double s);
/* Collective over MPI_COMM_WORLD, before PMPI_Finalize: sums the ranks'
 * figures on rank 0, which prints and writes the report when
 * ISLE_REPORT / ISLE_REPORT_FILE ask for it. Nothing when neither is set. */
void isle__report_finalize(void);

/*
 * Whether an MPI_Iallreduce of count dtype on c goes to the helper thread
 * (1) or to the library on the caller's thread (0); < 0 the probe failed.
 * Counts the call toward the probe and runs it when due: a collective, so
 * every rank calls this at each of the communicator's float and double sums.
 * Caller's thread only.
 */
int isle__async_route(struct isle_comm *c, size_t count, isle_dtype dtype);

/* async.c */
int isle__async_start(struct isle_comm *c);
void isle__async_stop(struct isle_comm *c);
/*
 * Queue an allreduce for the helper thread. With done_cb, the helper calls
 * done_cb(arg, rc) when it finishes and frees the request itself; without,
 * *req is returned for isle_comm_wait(). -ENOTSUP without a helper.
 */
int isle__async_post(struct isle_comm *c, const void *sendbuf, void *recvbuf,
		     size_t count, isle_dtype dtype, uint64_t key,
		     void (*done_cb)(void *arg, int rc), void *arg,
		     isle_comm_req **req);

#endif /* MPI_VERSION */

#endif /* ISLE_COMM_PRIV_H */
