/*
 * coll.c - allreduce algorithms on a channel: ring reduce-scatter and
 * allgather (raw or with a summable codec), the all-to-all reduce-scatter
 * for codecs that cannot be summed while compressed (qgZ / 1-bit pattern),
 * recursive doubling, and the hierarchical scheme that chains them.
 *
 * All of them work in place on buf. Shard q of a level is isle__shard(n,
 * nshards, q); ranks at or above nshards own an empty shard. Every rank ends
 * with bit-identical data: compressed shards are decoded by their owner too.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm_priv.h"

enum { SCR_SEND, SCR_RECV, SCR_ENC, SCR_OFF };
enum { STAGE_CONTRIB = 0, STAGE_SHARD = 1 };

static size_t esize(isle_dtype dt)
{
	return dt == ISLE_DTYPE_F64 ? 8 : 4;
}

static void add(void *dst, const void *src, size_t n, isle_dtype dt)
{
	if (dt == ISLE_DTYPE_F64)
		isle__cpu_add_f64(dst, src, n);
	else
		isle__cpu_add_f32(dst, src, n);
}

static void chunk(const struct isle__level *lv, size_t n, int q, size_t *off,
		  size_t *len)
{
	if (q < lv->nshards) {
		isle__shard(n, lv->nshards, q, off, len);
	} else {
		*off = n;
		*len = 0;
	}
}

/* Residual for EF, or NULL when the codec keeps none. */
static float *resid(struct isle__chan *ch, const struct isle_codec *c,
		    uint64_t key, int lvl, int stage, size_t n, int *rc)
{
	float *r;

	*rc = 0;
	if (!c->error_feedback || c->kind == ISLE_CODEC_NONE || !n)
		return NULL;
	r = isle__residual(ch, key, lvl * 2 + stage, n);
	if (!r)
		*rc = -ENOMEM;
	return r;
}

/*
 * Ring reduce-scatter. Step k: send chunk (r-k-1), receive chunk (r-k-2)
 * and add it in; after p-1 steps rank r holds the sum of chunk r. With
 * fp16/bf16 each hop sends its partial sum encoded and the receiver adds
 * the decoded values in fp32.
 */
static int ring_rs(struct isle__chan *ch, const struct isle__level *lv,
		   char *buf, size_t n, isle_dtype dt,
		   const struct isle_codec *c)
{
	const struct isle_codec_ops *ops = ch->owner->ops;
	int p = lv->size, r = lv->rank, raw = c->kind == ISLE_CODEC_NONE, rc;
	size_t es = esize(dt), maxlen, soff, slen, roff, rlen;
	void *sbuf, *rbuf;

	isle__shard(n, lv->nshards, 0, &soff, &maxlen);
	sbuf = raw ? NULL
		   : isle__scratch(ch, SCR_SEND,
				   isle_codec_encoded_size(c, maxlen));
	rbuf = isle__scratch(ch, SCR_RECV,
			     raw ? maxlen * es
				 : isle_codec_encoded_size(c, maxlen));
	if ((!raw && !sbuf) || !rbuf)
		return -ENOMEM;
	for (int k = 0; k < p - 1; k++) {
		const void *out;
		size_t sbytes, rbytes;

		chunk(lv, n, ((r - k - 1) % p + p) % p, &soff, &slen);
		chunk(lv, n, ((r - k - 2) % p + p) % p, &roff, &rlen);
		if (raw) {
			out = buf + soff * es;
			sbytes = slen * es;
			rbytes = rlen * es;
		} else {
			rc = slen ? ops->encode(c, (float *)buf + soff, slen,
						sbuf, NULL, NULL)
				  : 0;
			if (rc)
				return rc;
			out = sbuf;
			sbytes = slen ? isle_codec_encoded_size(c, slen) : 0;
			rbytes = rlen ? isle_codec_encoded_size(c, rlen) : 0;
		}
		rc = isle__sendrecv(ch, lv->comm, out, sbytes, (r + 1) % p,
				    rbuf, rbytes, (r - 1 + p) % p);
		if (rc)
			return rc;
		if (!rlen)
			continue;
		if (raw)
			add(buf + roff * es, rbuf, rlen, dt);
		else if ((rc = ops->decode_acc(c, rbuf, rlen,
					       (float *)buf + roff, NULL)))
			return rc;
	}
	return 0;
}

/*
 * All-to-all reduce-scatter for int8/topk: every rank encodes chunk q (with
 * its error-feedback residual) and sends it to q; the owner adds the decoded
 * chunks in fp32 to its own, uncompressed, contribution.
 */
static int a2a_rs(struct isle__chan *ch, const struct isle__level *lv,
		  float *buf, size_t n, const struct isle_codec *c, float *res)
{
	const struct isle_codec_ops *ops = ch->owner->ops;
	int p = lv->size, r = lv->rank, nreq = 0, rc;
	size_t off, len, myoff, mylen, maxenc, myenc;
	MPI_Request *reqs;
	int *peers;
	char *sbuf, *rbuf;

	isle__shard(n, lv->nshards, 0, &off, &len);
	maxenc = isle_codec_encoded_size(c, len);
	chunk(lv, n, r, &myoff, &mylen);
	myenc = isle_codec_encoded_size(c, mylen);
	sbuf = isle__scratch(ch, SCR_SEND, maxenc * (size_t)p);
	rbuf = isle__scratch(ch, SCR_RECV, myenc * (size_t)p);
	reqs = isle__scratch(ch, SCR_OFF,
			     2 * (size_t)p * (sizeof(*reqs) + sizeof(*peers)));
	if (!sbuf || !rbuf || !reqs)
		return -ENOMEM;
	if (myenc > INT_MAX || maxenc > INT_MAX)
		return -EOVERFLOW;
	peers = (int *)(reqs + 2 * p);

	for (int k = 1; k < p; k++) {
		int q = (r + k) % p;

		chunk(lv, n, q, &off, &len);
		if (!len)
			continue;
		rc = ops->encode(c, buf + off, len, sbuf + (size_t)q * maxenc,
				 res ? res + off : NULL, NULL);
		if (rc)
			return rc;
		if (PMPI_Isend(sbuf + (size_t)q * maxenc,
			       (int)isle_codec_encoded_size(c, len), MPI_BYTE,
			       q, ISLE__TAG, lv->comm,
			       &reqs[nreq]) != MPI_SUCCESS)
			return -EIO;
		peers[nreq++] = q;
	}
	/* Every send is posted: now the receives, sizes checked. */
	for (int k = 1; mylen && k < p; k++) {
		int q = (r - k + p) % p;

		if ((rc = isle__recv_exact(ch, lv->comm,
					   rbuf + (size_t)q * myenc, myenc, q,
					   &reqs[nreq])))
			return rc;
		peers[nreq++] = q;
	}
	if ((rc = isle__waitall(ch, lv->comm, nreq, reqs, peers)))
		return rc;
	/* Fixed order: the owner's sum does not depend on arrival order. */
	for (int q = 0; mylen && q < p; q++)
		if (q != r && (rc = ops->decode_acc(c, rbuf + (size_t)q * myenc,
						    mylen, buf + myoff, NULL)))
			return rc;
	return 0;
}

/*
 * Ring allgather of the shards. Raw: pass the chunks themselves. Encoded:
 * the owner encodes its shard once (with its own residual), decodes it back
 * so that it holds what everyone else will hold, and the encoded shards go
 * round the ring.
 */
static int ring_ag(struct isle__chan *ch, const struct isle__level *lv,
		   char *buf, size_t n, isle_dtype dt,
		   const struct isle_codec *c, float *res)
{
	const struct isle_codec_ops *ops = ch->owner->ops;
	int p = lv->size, r = lv->rank, raw = c->kind == ISLE_CODEC_NONE, rc;
	size_t es = esize(dt), off, len, *eoff;
	char *enc = NULL;

	if (raw) {
		for (int k = 0; k < p - 1; k++) {
			size_t soff, slen, roff, rlen;

			chunk(lv, n, ((r - k) % p + p) % p, &soff, &slen);
			chunk(lv, n, ((r - k - 1) % p + p) % p, &roff, &rlen);
			rc = isle__sendrecv(ch, lv->comm, buf + soff * es,
					    slen * es, (r + 1) % p,
					    buf + roff * es, rlen * es,
					    (r - 1 + p) % p);
			if (rc)
				return rc;
		}
		return 0;
	}

	eoff = isle__scratch(ch, SCR_OFF, (size_t)(p + 1) * sizeof(*eoff));
	if (!eoff)
		return -ENOMEM;
	eoff[0] = 0;
	for (int q = 0; q < p; q++) {
		chunk(lv, n, q, &off, &len);
		eoff[q + 1] =
		    eoff[q] + (len ? isle_codec_encoded_size(c, len) : 0);
	}
	if (!(enc = isle__scratch(ch, SCR_ENC, eoff[p])))
		return -ENOMEM;
	chunk(lv, n, r, &off, &len);
	if (len && ((rc = ops->encode(c, (float *)buf + off, len, enc + eoff[r],
				      res, NULL)) ||
		    (rc = ops->decode(c, enc + eoff[r], len, (float *)buf + off,
				      NULL))))
		return rc;
	for (int k = 0; k < p - 1; k++) {
		int sq = ((r - k) % p + p) % p, rq = ((r - k - 1) % p + p) % p;

		rc = isle__sendrecv(ch, lv->comm, enc + eoff[sq],
				    eoff[sq + 1] - eoff[sq], (r + 1) % p,
				    enc + eoff[rq], eoff[rq + 1] - eoff[rq],
				    (r - 1 + p) % p);
		if (rc)
			return rc;
		chunk(lv, n, rq, &off, &len);
		if (len && (rc = ops->decode(c, enc + eoff[rq], len,
					     (float *)buf + off, NULL)))
			return rc;
	}
	return 0;
}

/*
 * Recursive doubling, uncompressed. With p not a power of two the first
 * 2*(p - pof2) ranks pair up: odd ones fold their data into the even one
 * and sit out, then get the result back. a + b == b + a in IEEE
 * arithmetic, so all ranks end with identical bits.
 */
static int rdoubling(struct isle__chan *ch, const struct isle__level *lv,
		     void *buf, size_t n, isle_dtype dt)
{
	int p = lv->size, r = lv->rank, pof2 = 1, extra, vr, rc = 0;
	size_t bytes = n * esize(dt);
	void *tmp = isle__scratch(ch, SCR_RECV, bytes);

	if (!tmp)
		return -ENOMEM;
	while (pof2 * 2 <= p)
		pof2 *= 2;
	extra = p - pof2;
	if (r < 2 * extra) {
		if (r & 1) { /* fold into r - 1, wait for the result */
			rc = isle__sendrecv(ch, lv->comm, buf, bytes, r - 1,
					    NULL, 0, 0);
			return rc ? rc
				  : isle__sendrecv(ch, lv->comm, NULL, 0, 0,
						   buf, bytes, r - 1);
		}
		rc =
		    isle__sendrecv(ch, lv->comm, NULL, 0, 0, tmp, bytes, r + 1);
		if (rc)
			return rc;
		add(buf, tmp, n, dt);
		vr = r / 2;
	} else {
		vr = r - extra;
	}
	for (int mask = 1; mask < pof2; mask <<= 1) {
		int vpeer = vr ^ mask;
		int peer = vpeer < extra ? vpeer * 2 : vpeer + extra;

		rc = isle__sendrecv(ch, lv->comm, buf, bytes, peer, tmp, bytes,
				    peer);
		if (rc)
			return rc;
		add(buf, tmp, n, dt);
	}
	if (r < 2 * extra)
		rc =
		    isle__sendrecv(ch, lv->comm, buf, bytes, r + 1, NULL, 0, 0);
	return rc;
}

/* Reduce-scatter at a level, picking the pattern the codec allows. */
static int level_rs(struct isle__chan *ch, const struct isle__level *lv,
		    void *buf, size_t n, isle_dtype dt,
		    const struct isle_codec *c, uint64_t key, int lvl)
{
	float *res;
	int rc;

	if (isle_codec_summable(c))
		return ring_rs(ch, lv, buf, n, dt, c);
	res = resid(ch, c, key, lvl, STAGE_CONTRIB, n, &rc);
	return rc ? rc : a2a_rs(ch, lv, buf, n, c, res);
}

static int level_ag(struct isle__chan *ch, const struct isle__level *lv,
		    void *buf, size_t n, isle_dtype dt,
		    const struct isle_codec *c, uint64_t key, int lvl)
{
	size_t off, len;
	float *res;
	int rc = 0;

	chunk(lv, n, lv->rank, &off, &len);
	res = isle_codec_summable(c)
		  ? NULL
		  : resid(ch, c, key, lvl, STAGE_SHARD, len, &rc);
	if (!isle_codec_summable(c) && rc)
		return rc;
	return ring_ag(ch, lv, buf, n, dt, c, res);
}

static int hier(struct isle__chan *ch, int l, char *buf, size_t n,
		isle_dtype dt, uint64_t key)
{
	static const struct isle_codec none = {.kind = ISLE_CODEC_NONE};
	const struct isle__level *lv = &ch->lev[l];
	const struct isle_codec *c = dt == ISLE_DTYPE_F64 ? &none : &lv->codec;
	size_t off, len;
	int rc;

	if (l == ch->nlev - 1 && c->kind == ISLE_CODEC_NONE && lv->size > 1) {
		struct isle_algo_level m = {lv->size, lv->bw_gbps, lv->lat_us,
					    none};
		double rd = isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &m, 1,
					      n * esize(dt));
		double ring =
		    isle_algo_cost_us(ISLE_ALGO_RING, &m, 1, n * esize(dt));

		if (rd < ring)
			return rdoubling(ch, lv, buf, n, dt);
	}
	if (lv->size > 1 && (rc = level_rs(ch, lv, buf, n, dt, c, key, l)))
		return rc;
	if (l < ch->nlev - 1 && lv->rank < lv->nshards) {
		chunk(lv, n, lv->rank, &off, &len);
		if (len &&
		    (rc = hier(ch, l + 1, buf + off * esize(dt), len, dt, key)))
			return rc;
	}
	/*
	 * A lossy codec re-encodes the shard even in a group of one: groups of
	 * other sizes at this level do, and all ranks must end up equal.
	 */
	if ((lv->size > 1 || c->kind != ISLE_CODEC_NONE) &&
	    (rc = level_ag(ch, lv, buf, n, dt, c, key, l)))
		return rc;
	return 0;
}

int isle__allreduce(struct isle__chan *ch, void *buf, size_t count,
		    isle_dtype dtype, isle_algo algo, uint64_t key)
{
	static const struct isle_codec none = {.kind = ISLE_CODEC_NONE};
	int rc;

	if (ch->failed)
		return -EIO;
	if (count == 0 || ch->size == 1)
		return 0;
	if (count > INT_MAX / 8)
		return -EOVERFLOW;
	switch (algo) {
	case ISLE_ALGO_RING:
		rc = ring_rs(ch, &ch->flat, buf, count, dtype, &none);
		if (!rc)
			rc = ring_ag(ch, &ch->flat, buf, count, dtype, &none,
				     NULL);
		break;
	case ISLE_ALGO_RDOUBLING:
		rc = rdoubling(ch, &ch->flat, buf, count, dtype);
		break;
	case ISLE_ALGO_HIER:
		rc = hier(ch, 0, buf, count, dtype, key);
		break;
	default:
		rc = -ENOTSUP;
	}
	if (rc && rc != -ENOTSUP)
		ch->failed = 1;
	return rc;
}
