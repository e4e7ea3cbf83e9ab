/*
 * isle_comm.h - hierarchical, compressed allreduce that follows the placement.
 *
 * Four parts, usable on their own:
 *   1. Plan: the per-job plan file (ISLE_PLAN, JSON, docs/plan.md) that says,
 *      for every rank, its node, GPU, NVLink island, leaf switch and NIC, and
 *      lists the communication levels (tightest first) with bandwidth,
 *      latency and the codec used on that level.
 *   2. Codecs: fp32 <-> wire formats (none, fp16, bf16, int8 with per-block
 *      scales, top-k with error feedback). A codec backend is a table of
 *      function pointers (struct isle_codec_ops); the CPU backend is here,
 *      a CUDA backend provides the same table.
 *   3. Algorithm selection: the alpha-beta cost model that picks flat ring,
 *      recursive doubling or the hierarchical scheme for a message size.
 *   4. Communicator (MPI): isle_comm_* allreduce on an MPI communicator,
 *      declared only when <mpi.h> is included before this header.
 *
 * Error contract (the whole library):
 *   - Functions returning int return 0 on success and a negative errno on
 *     failure: -EINVAL bad argument or bad input, -ENOMEM, -ENOENT missing
 *     file, -EIO I/O or transport error, -ENOTSUP not handled here (the
 *     caller should use its own path, e.g. the original MPI call),
 *     -ETIMEDOUT a peer did not answer within the timeout (dead or hung),
 *     -EPROTO peers disagree (different counts or plans).
 *   - Functions taking (char *err, size_t errlen) also write one
 *     NUL-terminated line on failure. Plan errors name the file and the JSON
 *     path: "plan.json: $.ranks[3].island: expected a string". err may be
 *     NULL. isle_comm_strerror() names a return code.
 *   - Nothing here calls exit() or abort(); the MPI interposer maps errors to
 *     the communicator's MPI error handler.
 *
 * Ownership: create/load functions return objects owned by the caller, freed
 * with the matching _destroy(). Strings and arrays reachable from an object
 * belong to it. Plans and codec descriptors are read-only after loading and
 * may be shared by threads.
 */
#ifndef ISLE_COMM_H
#define ISLE_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isle_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ISLE_COMM_API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ plan */

/* Plans and codec specs are proto/ formats (isle_proto.h): struct
 * isle_plan, isle_plan_read/parse/write/hash/destroy, struct isle_codec,
 * isle_codec_parse/format. libislecomm.so exports them with this API. */

/*
 * The plan used without a plan file: node = island = hosts[rank], one level
 * per distinct tier that exists (an intra-node level if some node has more
 * than one rank, then one network level of scope job). Level bandwidth,
 * latency and codec come from the defaults in docs/comm-shim.md (overridable
 * by the ISLE_COMM_* environment). hosts is borrowed.
 */
ISLE_COMM_API int isle_plan_from_hosts(const char *const *hosts, int nranks,
				       struct isle_plan **out, char *err,
				       size_t errlen);

/* ---------------------------------------------------------------- codecs */

/* isle_codec_encoded_size, the bytes each codec sends, is proto's
 * (isle_proto.h), shared with islesim. */

/*
 * 1 if the wire format can be reduced hop by hop (decode, add in fp32,
 * re-encode: none, fp16, bf16); 0 if reduction needs the all-to-all
 * pattern (int8 scales, top-k index sets).
 */
ISLE_COMM_API int isle_codec_summable(const struct isle_codec *c);

/*
 * Worst-case error of one encode+decode, for tests and docs:
 *   fp16/bf16: relative error |y - x| <= bound * |x| (normal range),
 *   int8:      |y - x| <= bound * max|x| over the finite x of its block,
 *   none: 0; topk: not bounded (returns -1).
 */
ISLE_COMM_API double isle_codec_error_bound(const struct isle_codec *c);

/*
 * Wire formats (little endian, produced and read by every backend alike):
 *   none: n fp32.   fp16/bf16: n uint16.
 *   int8: ceil(n/block) fp32 scales, then n int8 (value = q * scale),
 *         padded with zeros to a multiple of 4 bytes. A block holding NaN
 *         or inf has a negative scale (sign bit set, -0 included):
 *         q = 127 is +inf, -127 is -inf, -128 is NaN, others q * -scale
 *         with |q| <= 126 (scale = -(max finite |x|) / 126).
 *         A block whose max finite |x| is below 127 / FLT_MAX (~3.7e-37)
 *         has no float step: its finite values encode as 0.
 *   topk: uint32 count, uint32 n, then count uint32 indices (ascending),
 *         then count fp32 values; count <= max(1, ceil(ratio * n)).
 *         NaN and inf rank above every finite value (inf before NaN).
 *         If at least k values are non-finite, bit 31 of count is set
 *         and every unlisted element decodes as NaN.
 *   Every codec returns NaN and +-inf as they went in; error feedback
 *   keeps no residual for them.
 *
 * A backend: pointers are host memory for the CPU backend and device memory
 * for the CUDA one; stream is the backend's stream (cudaStream_t) or NULL.
 *   encode:     dst = enc(src + residual). If residual is not NULL (n fp32,
 *               owned by the caller, zero-initialised at first use),
 *               residual becomes (src + residual) - dec(dst): error feedback.
 *   decode:     dst = dec(src).
 *   decode_acc: dst += dec(src).
 * All return 0 or a negative errno.
 */
struct isle_codec_ops {
	const char *name; /* "avx2", "scalar", "cuda" */
	int (*encode)(const struct isle_codec *c, const float *src, size_t n,
		      void *dst, float *residual, void *stream);
	int (*decode)(const struct isle_codec *c, const void *src, size_t n,
		      float *dst, void *stream);
	int (*decode_acc)(const struct isle_codec *c, const void *src, size_t n,
			  float *dst, void *stream);
};

/* Best CPU backend for this machine (AVX2+F16C if present, else scalar). */
ISLE_COMM_API const struct isle_codec_ops *isle_codec_cpu_ops(void);
/* The portable reference backend. */
ISLE_COMM_API const struct isle_codec_ops *isle_codec_scalar_ops(void);
/* CUDA backend, defined by codec_cuda.cu in libisle_nccl.so only. */
const struct isle_codec_ops *isle_codec_cuda_ops(void);

/* ------------------------------------------------- algorithm selection */

typedef enum isle_algo {
	ISLE_ALGO_AUTO = 0,    /* cheapest by the alpha-beta model */
	ISLE_ALGO_RING,	       /* flat ring over all ranks, uncompressed */
	ISLE_ALGO_RDOUBLING,   /* recursive doubling, uncompressed */
	ISLE_ALGO_HIER,	       /* hierarchical, codec per level */
	ISLE_ALGO_PASSTHROUGH, /* the transport's own allreduce */
	ISLE_ALGO_LEADER, /* reduce to leaders, leaders' allreduce, bcast */
	ISLE_ALGO_COUNT
} isle_algo;

/* One level as the cost model sees it. */
struct isle_algo_level {
	int group_size; /* ranks that exchange at this level (>= 1) */
	double bw_gbps; /* GB/s (bytes) per rank */
	double lat_us;	/* per message */
	struct isle_codec codec;
};

/*
 * Alpha-beta time (microseconds) of allreduce of `bytes` bytes with algo
 * over levels[0..nlevels) (tightest first; total ranks = product of group
 * sizes). Flat algorithms run at the slowest bandwidth and the highest
 * latency of the levels. ISLE_ALGO_PASSTHROUGH is the library's own: the
 * best of recursive doubling, Rabenseifner and ring, ranks numbered level
 * by level. ISLE_ALGO_LEADER reduces each group to its first rank level by
 * level (binomial), the top level's leaders run recursive doubling, and the
 * result comes back down (binomial broadcast): whole messages, few of them,
 * for small sizes. Returns a negative value if algo cannot run.
 */
ISLE_COMM_API double isle_algo_cost_us(isle_algo algo,
				       const struct isle_algo_level *levels,
				       int nlevels, size_t bytes);

/*
 * The cheapest of the library's own (passthrough, preferred on ties),
 * hierarchical, ring and recursive doubling (leader is left to the
 * crossover probe, which times it). Depends only on its
 * arguments, so ranks that pass job-wide values all pick the same.
 */
ISLE_COMM_API isle_algo isle_algo_choose(const struct isle_algo_level *levels,
					 int nlevels, size_t bytes,
					 double *cost_us);

ISLE_COMM_API const char *isle_algo_name(isle_algo a);
ISLE_COMM_API int isle_algo_parse(const char *s, isle_algo *a);

/* ------------------------------------------------------------ general */

ISLE_COMM_API const char *isle_comm_strerror(int rc);

/*
 * Settings of a communicator. isle_comm_config_from_env() fills it from
 * ISLE_PLAN and the ISLE_COMM_* variables (docs/comm-shim.md); the codec
 * override applies to every level but the first when set.
 */
struct isle_comm_config {
	char plan_path[4096]; /* "" = derive from host names */
	int have_codec_override;
	struct isle_codec codec_override; /* ISLE_COMM_CODEC */
	isle_algo algo;			  /* ISLE_COMM_ALGO, default auto */
	double timeout_s;    /* ISLE_COMM_TIMEOUT_S, 0 = wait forever */
	size_t fusion_bytes; /* ISLE_COMM_FUSION_BYTES, 0 = no fusion */
	double cycle_ms;     /* ISLE_COMM_CYCLE_MS */
	size_t min_bytes;    /* ISLE_COMM_MIN_BYTES: below, pass through */
	int calibrate;	     /* ISLE_COMM_CALIBRATE: crossover probe */
	int async;	     /* ISLE_COMM_ASYNC: helper thread */
	int verbose;	     /* ISLE_COMM_VERBOSE */
	/* ISLE_COMM_SEGMENT_BYTES: pipeline segment of the hierarchy's last
	 * two levels, 0 = auto (16 segments of 256 KiB .. 8 MiB) */
	size_t segment_bytes;
	/* ISLE_COMM_PROBE_SHARE: the probe waits until its payload is at most
	 * this share of what the communicator carried; 0 = no wait */
	double probe_share;
};

ISLE_COMM_API void isle_comm_config_default(struct isle_comm_config *cfg);
ISLE_COMM_API int isle_comm_config_from_env(struct isle_comm_config *cfg,
					    char *err, size_t errlen);

/* Data types the allreduce handles (sum). */
typedef enum isle_dtype {
	ISLE_DTYPE_F32 = 0,
	ISLE_DTYPE_F64, /* always exact: codecs apply to fp32 only */
} isle_dtype;

/* ------------------------------------------------- MPI communicator */
#if defined(MPI_VERSION)

typedef struct isle_comm isle_comm;
typedef struct isle_comm_req isle_comm_req;

/*
 * Collective over comm: duplicates comm, maps its ranks onto the plan
 * (cfg NULL = from the environment) and builds one sub-communicator per
 * level. *out is owned by the caller (isle_comm_destroy, also collective).
 * A bad plan fails here on every rank with the same message.
 */
ISLE_COMM_API int isle_comm_create(MPI_Comm comm,
				   const struct isle_comm_config *cfg,
				   isle_comm **out, char *err, size_t errlen);
ISLE_COMM_API void isle_comm_destroy(isle_comm *c);

/*
 * Sum-allreduce of count elements. sendbuf NULL means in place (recvbuf holds
 * the input). key names the buffer for error feedback residuals (the MPI
 * interposer uses the recvbuf address); the residual is reset when the count
 * for a key changes. Collective: same count, dtype and order on all ranks;
 * one thread at a time per communicator, as for MPI collectives.
 * Returns -ETIMEDOUT (with a message on stderr naming the peer) if a peer
 * does not answer within the configured timeout.
 */
ISLE_COMM_API int isle_comm_allreduce(isle_comm *c, const void *sendbuf,
				      void *recvbuf, size_t count,
				      isle_dtype dtype, uint64_t key);

/*
 * Non-blocking form, progressed by the helper thread (needs MPI
 * THREAD_MULTIPLE; -ENOTSUP otherwise). Buffers must stay valid until
 * isle_comm_wait() returns; it frees *req and returns the allreduce result.
 */
ISLE_COMM_API int isle_comm_iallreduce(isle_comm *c, const void *sendbuf,
				       void *recvbuf, size_t count,
				       isle_dtype dtype, uint64_t key,
				       isle_comm_req **req);
ISLE_COMM_API int isle_comm_wait(isle_comm_req *req);
/* *done = 1 once finished (then call isle_comm_wait to collect). */
ISLE_COMM_API int isle_comm_test(isle_comm_req *req, int *done);

/* The algorithm the communicator would use for count elements of dtype. */
ISLE_COMM_API isle_algo isle_comm_algo_for(const isle_comm *c, size_t count,
					   isle_dtype dtype);

/* One line describing the levels, group sizes and codecs (for logs). */
ISLE_COMM_API int isle_comm_describe(const isle_comm *c, char *buf, size_t len);

#endif /* MPI_VERSION */

#ifdef __cplusplus
}
#endif

#endif /* ISLE_COMM_H */
