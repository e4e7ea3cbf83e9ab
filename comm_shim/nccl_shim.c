/*
 * nccl_shim.c - libisle_nccl.so: hierarchical, compressed ncclAllReduce.
 *
 * The NCCL backend of libisle_preload.so (preload.h), which loads it into an
 * unmodified NCCL program once it has checked the process's CUDA runtime and
 * NCCL versions. It links neither: CUDA calls bind to the process's runtime,
 * NCCL calls go through the resolver the preload library hands over.
 * ncclAllReduce of float sums is split along the placement: reduce-scatter
 * inside the node (or NVLink island) group, allreduce of the shard across
 * groups with the network level's codec, allgather back inside the group. The
 * two level communicators come from ncclCommSplit of the user's communicator
 * the first time it is used. Everything else, and every call the scheme does
 * not fit (other types or ops, grouped calls, graph capture, small messages,
 * unequal groups) goes to the real NCCL, found through that resolver.
 *
 * Across groups, formats that add up while encoded (fp16, bf16) use a plain
 * ncclAllReduce in that type. int8 and top-k use the all-to-all pattern:
 * each rank encodes one chunk per peer, peers exchange chunks, each decodes
 * and sums its chunk in fp32, re-encodes it and the chunks are allgathered.
 *
 * Grouping: level 0 of the plan (ISLE_PLAN) when the communicator has the
 * plan's size, otherwise the host name. Settings: docs/gpu.md.
 *
 * The whole backend is this one file (a little over 800 lines): it is the
 * only source of libisle_nccl.so, and its per-communicator state and the
 * resolved NCCL entry points are file-static by design.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "comm_priv.h"
#include "preload.h"

#define SHIM_API __attribute__((visibility("default")))

/* ------------------------------------------------------------ real NCCL */

struct real_nccl {
	ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t,
				   ncclRedOp_t, ncclComm_t, cudaStream_t);
	ncclResult_t (*reduce_scatter)(const void *, void *, size_t,
				       ncclDataType_t, ncclRedOp_t, ncclComm_t,
				       cudaStream_t);
	ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t,
				   ncclComm_t, cudaStream_t);
	ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int,
			     ncclComm_t, cudaStream_t);
	ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t,
			     cudaStream_t);
	ncclResult_t (*group_start)(void);
	ncclResult_t (*group_end)(void);
	ncclResult_t (*comm_split)(ncclComm_t, int, int, ncclComm_t *,
				   ncclConfig_t *);
	ncclResult_t (*comm_count)(const ncclComm_t, int *);
	ncclResult_t (*comm_user_rank)(const ncclComm_t, int *);
	ncclResult_t (*comm_cu_device)(const ncclComm_t, int *);
	ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t *);
	ncclResult_t (*comm_destroy)(ncclComm_t);
	ncclResult_t (*comm_abort)(ncclComm_t);
	const char *(*get_error_string)(ncclResult_t);
};

static struct real_nccl real;
static int real_ok;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static isle_resolve_fn resolver;

static void *real_sym(void **lib, const char *name)
{
	void *p = resolver ? resolver(name) : dlsym(RTLD_NEXT, name);

	/* The program may dlopen NCCL after us: then look there. Not when
	 * loaded by libisle_preload.so, which knows the process's own NCCL:
	 * a second one must never come in. */
	if (!p && !resolver && !*lib)
		*lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (!p && *lib)
		p = dlsym(*lib, name);
	if (!p)
		fprintf(stderr, "isle_nccl: real %s not found\n", name);
	return p;
}

static void real_load(void)
{
	void *lib = NULL;
	int ok = 1;

#define LOAD(field, name)                                                      \
	do {                                                                   \
		*(void **)&real.field = real_sym(&lib, name);                  \
		ok &= real.field != NULL;                                      \
	} while (0)
	LOAD(all_reduce, "ncclAllReduce");
	LOAD(reduce_scatter, "ncclReduceScatter");
	LOAD(all_gather, "ncclAllGather");
	LOAD(send, "ncclSend");
	LOAD(recv, "ncclRecv");
	LOAD(group_start, "ncclGroupStart");
	LOAD(group_end, "ncclGroupEnd");
	LOAD(comm_split, "ncclCommSplit");
	LOAD(comm_count, "ncclCommCount");
	LOAD(comm_user_rank, "ncclCommUserRank");
	LOAD(comm_cu_device, "ncclCommCuDevice");
	LOAD(comm_get_async_error, "ncclCommGetAsyncError");
	LOAD(comm_destroy, "ncclCommDestroy");
	LOAD(comm_abort, "ncclCommAbort");
	LOAD(get_error_string, "ncclGetErrorString");
#undef LOAD
	real_ok = ok;
}

static int real_ready(void)
{
	pthread_once(&real_once, real_load);
	return real_ok;
}

/* Called by libisle_preload.so before anything else here. */
SHIM_API int isle_nccl_backend_init(int version, isle_resolve_fn resolve)
{
	if (version != ISLE_NCCL_BACKEND_VERSION || !resolve)
		return -EINVAL;
	resolver = resolve;
	return real_ready() ? 0 : -ENOENT;
}

/* ------------------------------------------------------------- settings */

static struct isle_comm_config cfg;
static struct isle_plan *cfg_plan; /* ISLE_PLAN, loaded once */
static int cfg_rc;
static char cfg_err[512];
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static void cfg_load(void)
{
	isle_comm_config_default(&cfg);
	cfg_rc = isle_comm_config_from_env(&cfg, cfg_err, sizeof(cfg_err));
	if (!cfg_rc && cfg.have_codec_override &&
	    (cfg.codec_override.momentum > 0 || cfg.codec_override.warm))
		cfg_rc = isle__errf(-ENOTSUP, cfg_err, sizeof(cfg_err),
				    "ISLE_COMM_CODEC: mom (momentum "
				    "correction) and warm (warm-up) are not "
				    "supported on the NCCL path; use topk "
				    "without them");
	if (!cfg_rc && cfg.plan_path[0])
		cfg_rc = isle_plan_read(cfg.plan_path, &cfg_plan, cfg_err,
					sizeof(cfg_err));
	if (cfg_rc)
		fprintf(stderr, "isle_nccl: %s\n", cfg_err);
}

/* ---------------------------------------------------------- per-comm state */

/* Error-feedback residual of one buffer (key = user send buffer). */
struct residual {
	const void *key;
	size_t count; /* elements of the shard it covers */
	float *buf;   /* device, count floats */
	struct residual *next;
};

struct hier {
	ncclComm_t comm; /* the user's communicator (table key) */
	int rank, nranks;
	int hier;		 /* 0: always pass through */
	ncclComm_t local, cross; /* NULL when that group has one rank */
	int lrank, lsize;	 /* position and size of the local group */
	int crank, csize;	 /* same across groups */
	struct isle_algo_level levels[2];
	struct isle_codec codec; /* across groups */
	cudaMemPool_t pool;	 /* stream-ordered scratch */
	struct residual *res;
	struct hier *next;
};

static struct hier *hiers;
static pthread_mutex_t hiers_lock = PTHREAD_MUTEX_INITIALIZER;

/* ncclGroupStart depth of this thread: grouped calls pass through. */
static __thread int group_depth;

static ncclResult_t from_cuda(cudaError_t e)
{
	return e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

static ncclResult_t from_errno(int rc)
{
	switch (rc) {
	case 0:
		return ncclSuccess;
	case -EINVAL:
		return ncclInvalidArgument;
	case -ENOTSUP:
		return ncclInvalidUsage;
	case -ENOMEM:
	case -EIO:
		return ncclUnhandledCudaError;
	default:
		return ncclInternalError;
	}
}

#define TRY(expr)                                                              \
	do {                                                                   \
		ncclResult_t r_ = (expr);                                      \
		if (r_ != ncclSuccess) {                                       \
			ret = r_;                                              \
			goto out;                                              \
		}                                                              \
	} while (0)
#define TRY_CUDA(expr) TRY(from_cuda(expr))
#define TRY_ERRNO(expr) TRY(from_errno(expr))

/* A communicator split in non-blocking mode reports progress: wait it out. */
static ncclResult_t wait_ready(ncclComm_t c, ncclResult_t r)
{
	while (r == ncclInProgress)
		real.comm_get_async_error(c, &r);
	return r;
}

static void hier_free(struct hier *h, int abort)
{
	ncclResult_t (*fini)(ncclComm_t) =
	    abort ? real.comm_abort : real.comm_destroy;

	while (h->res) {
		struct residual *r = h->res;

		h->res = r->next;
		cudaFree(r->buf);
		free(r);
	}
	if (h->local)
		fini(h->local);
	if (h->cross)
		fini(h->cross);
	if (h->pool)
		cudaMemPoolDestroy(h->pool);
	free(h);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t x = 1469598103934665603ull;

	for (; *s; s++)
		x = (x ^ (unsigned char)*s) * 1099511628211ull;
	return x;
}

/* Group key of this rank at the lowest level: plan id or host name hash. */
static uint64_t my_group_key(const struct hier *h)
{
	char host[256] = "";

	if (cfg_plan && cfg_plan->nranks == h->nranks) {
		const struct isle_plan_rank *r = &cfg_plan->ranks[h->rank];

		switch (cfg_plan->levels[0].scope) {
		case ISLE_SCOPE_NODE:
			return (uint64_t)r->node_id;
		case ISLE_SCOPE_LEAF:
			return (uint64_t)r->leaf_id;
		case ISLE_SCOPE_JOB:
			return 0;
		default:
			return (uint64_t)r->island_id;
		}
	}
	gethostname(host, sizeof(host) - 1);
	return fnv1a(host);
}

static int said_plans_differ; /* one line per process */

/* Every rank's value of mine, through the real allgather (setup only). */
static ncclResult_t gather_keys(struct hier *h, cudaStream_t st, uint64_t mine,
				uint64_t *keys)
{
	uint64_t *d = NULL;
	ncclResult_t ret = ncclSuccess;

	TRY_CUDA(cudaMalloc((void **)&d, (size_t)h->nranks * sizeof(*d)));
	TRY_CUDA(cudaMemcpyAsync(d + h->rank, &mine, sizeof(mine),
				 cudaMemcpyHostToDevice, st));
	TRY(real.all_gather(d + h->rank, d, sizeof(mine), ncclUint8, h->comm,
			    st));
	TRY_CUDA(cudaMemcpyAsync(keys, d, (size_t)h->nranks * sizeof(*d),
				 cudaMemcpyDeviceToHost, st));
	TRY_CUDA(cudaStreamSynchronize(st));
out:
	cudaFree(d);
	return ret;
}

/* Level parameters: the plan's, or the host-name defaults of isle_comm.h. */
static int set_levels(struct hier *h, const uint64_t *keys)
{
	struct isle_plan *plan = cfg_plan, *own = NULL;
	const struct isle_plan_level *lo, *hi;
	char err[256], (*names)[24] = NULL;
	const char **hosts = NULL;
	int rc = 0;

	if (!plan || plan->nranks != h->nranks) {
		names = calloc((size_t)h->nranks, sizeof(*names));
		hosts = calloc((size_t)h->nranks, sizeof(*hosts));
		if (!names || !hosts) {
			rc = -ENOMEM;
			goto out;
		}
		for (int i = 0; i < h->nranks; i++) {
			snprintf(names[i], sizeof(names[i]), "g%016llx",
				 (unsigned long long)keys[i]);
			hosts[i] = names[i];
		}
		rc = isle_plan_from_hosts(hosts, h->nranks, &own, err,
					  sizeof(err));
		if (rc) {
			fprintf(stderr, "isle_nccl: %s\n", err);
			goto out;
		}
		plan = own;
	}
	lo = &plan->levels[0];
	hi = &plan->levels[plan->nlevels - 1];
	h->levels[0] = (struct isle_algo_level){h->lsize, lo->bw_gbps,
						lo->lat_us, lo->codec};
	h->levels[1] = (struct isle_algo_level){h->csize, hi->bw_gbps,
						hi->lat_us, hi->codec};
	h->codec = cfg.have_codec_override ? cfg.codec_override : hi->codec;
	h->levels[1].codec = h->codec;
	/* The CUDA path keeps no momentum buffers and no warm-up clock:
	 * refused, never dropped. */
	if (h->codec.momentum > 0 || h->codec.warm) {
		char spec[ISLE_CODEC_SPEC_MAX + 1];

		isle_codec_format(&h->codec, spec, sizeof(spec));
		fprintf(stderr,
			"isle_nccl: codec '%s': mom (momentum correction) and "
			"warm (warm-up) are not supported on the NCCL path; "
			"use topk without them\n",
			spec);
		rc = -ENOTSUP;
	}
out:
	isle_plan_destroy(own);
	free(names);
	free(hosts);
	return rc;
}

/*
 * Collective setup on the first allreduce of comm: group keys, then the
 * two splits. Leaves h->hier = 0 when the groups have unequal sizes.
 */
static ncclResult_t hier_setup(struct hier *h, cudaStream_t st)
{
	ncclResult_t ret = ncclSuccess;
	uint64_t *keys = NULL;
	int group = -1, ngroups = 0, minsz = 0, maxsz = 0;
	int *gsize = NULL, *gfirst = NULL;
	struct cudaMemPoolProps props = {0};
	uint64_t keep = UINT64_MAX;
	int dev;

	TRY(real.comm_count(h->comm, &h->nranks));
	TRY(real.comm_user_rank(h->comm, &h->rank));
	keys = calloc((size_t)h->nranks, sizeof(*keys));
	gsize = calloc((size_t)h->nranks, sizeof(*gsize));
	gfirst = calloc((size_t)h->nranks, sizeof(*gfirst));
	if (!keys || !gsize || !gfirst) {
		ret = ncclSystemError;
		goto out;
	}
	/*
	 * Ranks holding different plans would pick different algorithms and
	 * hang: then all pass through to plain NCCL together, said once.
	 */
	TRY(gather_keys(h, st, cfg_plan ? isle_plan_hash(cfg_plan) : 0, keys));
	for (int i = 1; i < h->nranks; i++)
		if (keys[i] != keys[0]) {
			if (h->rank == 0 &&
			    !__atomic_exchange_n(&said_plans_differ, 1,
						 __ATOMIC_RELAXED))
				fprintf(stderr,
					"isle_nccl: the ranks hold different "
					"plans (%s): plain NCCL on every "
					"rank\n",
					cfg.plan_path);
			goto out;
		}
	TRY(gather_keys(h, st, my_group_key(h), keys));

	/* Dense group ids in order of first rank; every rank computes alike. */
	for (int i = 0; i < h->nranks; i++) {
		int g = 0;

		while (g < ngroups && keys[gfirst[g]] != keys[i])
			g++;
		if (g == ngroups)
			gfirst[ngroups++] = i;
		if (i == h->rank) {
			group = g;
			h->lrank = gsize[g];
		}
		gsize[g]++;
	}
	minsz = maxsz = gsize[0];
	for (int g = 1; g < ngroups; g++) {
		minsz = gsize[g] < minsz ? gsize[g] : minsz;
		maxsz = gsize[g] > maxsz ? gsize[g] : maxsz;
	}
	h->lsize = gsize[group];
	h->csize = ngroups;
	h->crank = group;
	if (minsz != maxsz || (ngroups < 2 && cfg.algo != ISLE_ALGO_HIER)) {
		if (cfg.verbose)
			fprintf(stderr,
				"isle_nccl: rank %d: %d groups of %d..%d "
				"ranks, passing through\n",
				h->rank, ngroups, minsz, maxsz);
		goto out;
	}
	TRY_ERRNO(set_levels(h, keys));

	/* Every rank takes part in both splits, in the same order. */
	if (h->lsize > 1)
		TRY(wait_ready(
		    h->local,
		    real.comm_split(h->comm, group, h->rank, &h->local, NULL)));
	if (h->csize > 1)
		TRY(wait_ready(h->cross,
			       real.comm_split(h->comm, h->lrank, h->rank,
					       &h->cross, NULL)));

	TRY(real.comm_cu_device(h->comm, &dev));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	TRY_CUDA(cudaMemPoolCreate(&h->pool, &props));
	/* Keep freed scratch in the pool between calls. */
	TRY_CUDA(cudaMemPoolSetAttribute(
	    h->pool, cudaMemPoolAttrReleaseThreshold, &keep));
	h->hier = 1;
	if (cfg.verbose) {
		char spec[64];

		isle_codec_format(&h->codec, spec, sizeof(spec));
		fprintf(stderr,
			"isle_nccl: rank %d: %d groups of %d ranks, codec %s\n",
			h->rank, h->csize, h->lsize, spec);
	}
out:
	free(keys);
	free(gsize);
	free(gfirst);
	return ret;
}

/* The state of comm, set up on first use; NULL with *ret set on failure. */
static struct hier *hier_get(ncclComm_t comm, cudaStream_t st,
			     ncclResult_t *ret)
{
	struct hier *h;

	pthread_mutex_lock(&hiers_lock);
	for (h = hiers; h && h->comm != comm; h = h->next)
		;
	pthread_mutex_unlock(&hiers_lock);
	if (h)
		return h;

	h = calloc(1, sizeof(*h));
	if (!h) {
		*ret = ncclSystemError;
		return NULL;
	}
	h->comm = comm;
	*ret = hier_setup(h, st);
	if (*ret != ncclSuccess) {
		hier_free(h, 0);
		return NULL;
	}
	pthread_mutex_lock(&hiers_lock);
	h->next = hiers;
	hiers = h;
	pthread_mutex_unlock(&hiers_lock);
	return h;
}

/* Removes comm's state from the table; NULL if it had none. */
static struct hier *hier_take(ncclComm_t comm)
{
	struct hier **pp, *h = NULL;

	pthread_mutex_lock(&hiers_lock);
	for (pp = &hiers; *pp; pp = &(*pp)->next)
		if ((*pp)->comm == comm) {
			h = *pp;
			*pp = h->next;
			break;
		}
	pthread_mutex_unlock(&hiers_lock);
	return h;
}

/* Residual for key over count floats, zeroed when new or resized. */
static ncclResult_t residual_get(struct hier *h, const void *key, size_t count,
				 cudaStream_t st, float **out)
{
	struct residual *r;

	for (r = h->res; r && r->key != key; r = r->next)
		;
	if (r && r->count != count) {
		cudaFree(r->buf); /* synchronises: the old one may be in use */
		r->buf = NULL;
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return ncclSystemError;
		r->key = key;
		r->next = h->res;
		h->res = r;
	}
	if (!r->buf) {
		r->count = count;
		if (cudaMalloc((void **)&r->buf, count * sizeof(float)) !=
		    cudaSuccess) {
			r->buf = NULL;
			return ncclUnhandledCudaError;
		}
		if (cudaMemsetAsync(r->buf, 0, count * sizeof(float), st) !=
		    cudaSuccess)
			return ncclUnhandledCudaError;
	}
	*out = r->buf;
	return ncclSuccess;
}

/* ------------------------------------------------------------ algorithm */

/* Pool scratch on the stream, freed in stream order by scratch_free. */
static ncclResult_t scratch(struct hier *h, size_t bytes, cudaStream_t st,
			    void **p)
{
	return from_cuda(
	    cudaMallocFromPoolAsync(p, bytes ? bytes : 4, h->pool, st));
}

static void scratch_free(void *p, cudaStream_t st)
{
	if (p)
		cudaFreeAsync(p, st);
}

/* The codec that carries a reduced top-k chunk: room for every peer's k. */
static struct isle_codec regather_codec(const struct isle_codec *c, size_t len,
					int peers)
{
	struct isle_codec r = *c;

	if (c->kind == ISLE_CODEC_TOPK && len) {
		double k = (double)isle_codec_topk_k(c, len) * peers;

		r.ratio = k >= (double)len ? 1.0 : k / (double)len;
	}
	r.error_feedback = 0;
	return r;
}

/* Chunk q of sendb to cross peer q, peer q's chunk for us into recvb[q]. */
static ncclResult_t exchange(struct hier *h, const char *sendb, char *recvb,
			     size_t slot, cudaStream_t st)
{
	ncclResult_t ret, end;

	ret = real.group_start();
	if (ret != ncclSuccess)
		return ret;
	for (int q = 0; q < h->csize && ret == ncclSuccess; q++) {
		if (q == h->crank)
			continue;
		ret = real.send(sendb + q * slot, slot, ncclUint8, q, h->cross,
				st);
		if (ret == ncclSuccess)
			ret = real.recv(recvb + q * slot, slot, ncclUint8, q,
					h->cross, st);
	}
	end = real.group_end(); /* always close the group */
	return ret != ncclSuccess ? ret : end;
}

/*
 * shard (len floats, device) := sum over the cross group, with a codec that
 * does not add up while encoded: encode one chunk per peer, exchange, sum
 * own chunk in fp32, re-encode, allgather, decode.
 */
static ncclResult_t cross_alltoall(struct hier *h, float *shard, size_t len,
				   float *res, cudaStream_t st)
{
	const struct isle_codec_ops *ops = isle_codec_cuda_ops();
	const struct isle_codec *c = &h->codec;
	int n = h->csize, me = h->crank;
	size_t cmax = (len + (size_t)n - 1) / (size_t)n, slot, slot2 = 0;
	ncclResult_t ret = ncclSuccess;
	char *sendb = NULL, *recvb = NULL, *gath = NULL;
	struct isle_codec rcodec;
	float *acc = NULL;
	size_t off, clen;

	slot = isle_codec_encoded_size(c, cmax);
	for (int q = 0; q < n; q++) {
		size_t s2;

		isle__shard(len, n, q, &off, &clen);
		rcodec = regather_codec(c, clen, n);
		s2 = isle_codec_encoded_size(&rcodec, clen);
		slot2 = s2 > slot2 ? s2 : slot2;
	}
	TRY(scratch(h, slot * (size_t)n, st, (void **)&sendb));
	TRY(scratch(h, slot * (size_t)n, st, (void **)&recvb));
	TRY(scratch(h, slot2 * (size_t)n, st, (void **)&gath));
	TRY(scratch(h, cmax * sizeof(float), st, (void **)&acc));

	for (int q = 0; q < n; q++) {
		isle__shard(len, n, q, &off, &clen);
		TRY_ERRNO(ops->encode(c, shard + off, clen, sendb + q * slot,
				      res ? res + off : NULL, st));
	}
	TRY(exchange(h, sendb, recvb, slot, st));

	/* Own chunk: the same decoded values the peers' chunks carry. */
	isle__shard(len, n, me, &off, &clen);
	TRY_ERRNO(ops->decode(c, sendb + me * slot, clen, acc, st));
	for (int q = 0; q < n; q++)
		if (q != me)
			TRY_ERRNO(ops->decode_acc(c, recvb + q * slot, clen,
						  acc, st));

	rcodec = regather_codec(c, clen, n);
	TRY_ERRNO(ops->encode(&rcodec, acc, clen, gath + me * slot2, NULL, st));
	if (h->cross) /* one group: nothing to gather */
		TRY(real.all_gather(gath + me * slot2, gath, slot2, ncclUint8,
				    h->cross, st));
	for (int q = 0; q < n; q++) {
		isle__shard(len, n, q, &off, &clen);
		rcodec = regather_codec(c, clen, n);
		TRY_ERRNO(ops->decode(&rcodec, gath + q * slot2, clen,
				      shard + off, st));
	}
out:
	scratch_free(sendb, st);
	scratch_free(recvb, st);
	scratch_free(gath, st);
	scratch_free(acc, st);
	return ret;
}

/* shard := sum over the cross group, encoded with h->codec. */
static ncclResult_t cross_allreduce(struct hier *h, float *shard, size_t len,
				    const void *key, cudaStream_t st)
{
	const struct isle_codec_ops *ops = isle_codec_cuda_ops();
	const struct isle_codec *c = &h->codec;
	ncclResult_t ret = ncclSuccess;
	float *res = NULL;
	void *enc = NULL;
	ncclDataType_t t;

	if (c->error_feedback && c->kind != ISLE_CODEC_NONE)
		TRY(residual_get(h, key, len, st, &res));
	switch (c->kind) {
	case ISLE_CODEC_NONE:
		if (h->cross)
			TRY(real.all_reduce(shard, shard, len, ncclFloat32,
					    ncclSum, h->cross, st));
		break;
	case ISLE_CODEC_FP16:
	case ISLE_CODEC_BF16:
		t = c->kind == ISLE_CODEC_FP16 ? ncclFloat16 : ncclBfloat16;
		TRY(scratch(h, isle_codec_encoded_size(c, len), st, &enc));
		TRY_ERRNO(ops->encode(c, shard, len, enc, res, st));
		if (h->cross)
			TRY(real.all_reduce(enc, enc, len, t, ncclSum, h->cross,
					    st));
		TRY_ERRNO(ops->decode(c, enc, len, shard, st));
		break;
	default:
		TRY(cross_alltoall(h, shard, len, res, st));
		break;
	}
out:
	scratch_free(enc, st);
	return ret;
}

/*
 * Reduce-scatter in the local group, shard across groups, allgather back.
 * In place on recvbuff when count divides evenly, else on a padded copy.
 */
static ncclResult_t hier_allreduce(struct hier *h, const void *sendbuff,
				   void *recvbuff, size_t count,
				   cudaStream_t st)
{
	size_t l = (size_t)h->lsize, shard = (count + l - 1) / l;
	float *work = recvbuff, *mine;
	ncclResult_t ret = ncclSuccess;
	int padded = count % l != 0;

	if (padded) {
		TRY(scratch(h, shard * l * sizeof(float), st, (void **)&work));
		TRY_CUDA(cudaMemsetAsync(
		    work + count, 0, (shard * l - count) * sizeof(float), st));
	}
	mine = work + (size_t)h->lrank * shard;
	if (h->local) {
		if (padded && sendbuff != work)
			TRY_CUDA(cudaMemcpyAsync(work, sendbuff,
						 count * sizeof(float),
						 cudaMemcpyDeviceToDevice, st));
		TRY(real.reduce_scatter(padded ? work : sendbuff, mine, shard,
					ncclFloat32, ncclSum, h->local, st));
	} else if (sendbuff != recvbuff) {
		TRY_CUDA(cudaMemcpyAsync(recvbuff, sendbuff,
					 count * sizeof(float),
					 cudaMemcpyDeviceToDevice, st));
	}
	TRY(cross_allreduce(h, mine, shard, sendbuff, st));
	if (h->local)
		TRY(real.all_gather(mine, work, shard, ncclFloat32, h->local,
				    st));
	if (padded)
		TRY_CUDA(cudaMemcpyAsync(recvbuff, work, count * sizeof(float),
					 cudaMemcpyDeviceToDevice, st));
out:
	if (padded)
		scratch_free(work, st);
	return ret;
}

/*
 * The per-job report (struct isle_report): this process's calls taken and
 * passed by size class and the codecs used, written when a communicator
 * this process is rank 0 of is destroyed. NCCL moves the bytes, so the
 * tiers carry codecs only (docs/comm-shim.md).
 */
static struct isle_report nreport = {.api = "nccl", .ranks = 1};
static pthread_mutex_t nreport_mu = PTHREAD_MUTEX_INITIALIZER;

static void report_call(const struct hier *h, size_t bytes, int taken)
{
	int k = isle_report_class(bytes);

	pthread_mutex_lock(&nreport_mu);
	if (taken) {
		nreport.taken[k]++;
		nreport.codecs[ISLE_SCOPE_JOB] |= 1u << h->codec.kind;
		nreport.codecs[cfg_plan ? cfg_plan->levels[0].scope
					: ISLE_SCOPE_NODE] |=
		    1u << ISLE_CODEC_NONE;
	} else {
		nreport.passed[k]++;
	}
	/* NCCL's own choice where the shim passes. */
	nreport.ran[k] |= 1u
			  << (taken ? ISLE_REPORT_SHIM : ISLE_REPORT_LIBRARY);
	pthread_mutex_unlock(&nreport_mu);
}

static void report_write(void)
{
	const char *file = getenv(ISLE_REPORT_FILE_ENV),
		   *line = getenv(ISLE_REPORT_ENV);
	char buf[2048], err[4400];
	struct isle_report r;

	pthread_mutex_lock(&nreport_mu);
	r = nreport;
	pthread_mutex_unlock(&nreport_mu);
	if (line && *line && strcmp(line, "0")) {
		isle_report_line(&r, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	if (!file || !*file)
		return;
	if (isle_report_save(&r, file, err, sizeof(err)))
		fprintf(stderr, "isle_nccl: %s\n", err);
}

/* Whether this call takes the hierarchical path. */
static int use_hier(const struct hier *h, size_t count)
{
	size_t bytes = count * sizeof(float);
	isle_algo a = cfg.algo;

	if (!h->hier)
		return 0;
	if (a == ISLE_ALGO_HIER)
		return 1; /* forced, even for one group (tests) */
	if (a != ISLE_ALGO_AUTO || bytes < cfg.min_bytes || h->csize < 2)
		return 0;
	return isle_algo_choose(h->levels, 2, bytes, NULL) == ISLE_ALGO_HIER;
}

/* ------------------------------------------------------ interposed API */

SHIM_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff,
				    size_t count, ncclDataType_t datatype,
				    ncclRedOp_t op, ncclComm_t comm,
				    cudaStream_t stream)
{
	enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	ncclResult_t ret = ncclSuccess;
	size_t es = datatype == ncclFloat64 || datatype == ncclInt64 ||
			    datatype == ncclUint64
			? 8
		    : datatype == ncclFloat32 || datatype == ncclInt32 ||
			    datatype == ncclUint32
			? 4
		    : datatype == ncclInt8 || datatype == ncclUint8 ? 1
								    : 2;
	struct hier *h = NULL;

	if (!real_ready())
		return ncclSystemError;
	pthread_once(&cfg_once, cfg_load);
	if (cfg_rc)
		return ncclInvalidUsage; /* bad plan or settings: said at load
					  */
	if (datatype != ncclFloat32 || op != ncclSum || count == 0 ||
	    group_depth > 0 || cfg.algo == ISLE_ALGO_PASSTHROUGH ||
	    cudaStreamIsCapturing(stream, &cap) != cudaSuccess ||
	    cap != cudaStreamCaptureStatusNone)
		goto pass;
	h = hier_get(comm, stream, &ret);
	if (!h)
		return ret;
	if (use_hier(h, count)) {
		report_call(h, count * es, 1);
		return hier_allreduce(h, sendbuff, recvbuff, count, stream);
	}
pass:
	report_call(h, count * es, 0);
	return real.all_reduce(sendbuff, recvbuff, count, datatype, op, comm,
			       stream);
}

SHIM_API ncclResult_t ncclGroupStart(void)
{
	ncclResult_t r;

	if (!real_ready())
		return ncclSystemError;
	r = real.group_start();
	if (r == ncclSuccess)
		group_depth++;
	return r;
}

SHIM_API ncclResult_t ncclGroupEnd(void)
{
	if (!real_ready())
		return ncclSystemError;
	if (group_depth > 0)
		group_depth--;
	return real.group_end();
}

SHIM_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	struct hier *h;

	if (!real_ready())
		return ncclSystemError;
	h = hier_take(comm);
	if (h && h->rank == 0)
		report_write();
	if (h)
		hier_free(h, 0);
	return real.comm_destroy(comm);
}

SHIM_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	struct hier *h;

	if (!real_ready())
		return ncclSystemError;
	h = hier_take(comm);
	if (h)
		hier_free(h, 1);
	return real.comm_abort(comm);
}
