/*
 * coll.c - allreduce algorithms on a channel: ring reduce-scatter and
 * allgather (raw or with a summable codec), the all-to-all reduce-scatter
 * for codecs that cannot be summed while compressed (qgZ / 1-bit pattern),
 * recursive doubling, the hierarchical scheme that chains them, and the
 * leader scheme for small messages (whole messages up and down the levels).
 *
 * All of them work in place on buf. Shard q of a level is isle__shard(n,
 * nshards, q); ranks at or above nshards own an empty shard. Every rank ends
 * with bit-identical data: compressed shards are decoded by their owner too.
 *
 * One file of about 800 lines: the hierarchy (and its segment pipeline) is
 * built from the level algorithms above it and shares their chunk, residual
 * and scratch helpers.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm_priv.h"

enum { SCR_SEND, SCR_RECV, SCR_ENC, SCR_OFF };
/* Residual buffers of a level: lvl * NSTAGES + stage. */
enum { STAGE_CONTRIB = 0, STAGE_SHARD = 1, STAGE_MOM = 2, NSTAGES = 3 };

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
	if (stage == STAGE_MOM && !(c->momentum > 0))
		return NULL;
	r = isle__residual(ch, key, lvl * NSTAGES + stage, n);
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

/* A contribution's encode: with momentum correction where mom is set. */
static int enc_contrib(const struct isle_codec_ops *ops,
		       const struct isle_codec *c, const float *x, size_t n,
		       void *dst, float *res, float *mom)
{
	if (mom)
		return isle__topk_mom_encode(ops, c, x, n, dst, res, mom);
	return ops->encode(c, x, n, dst, res, NULL);
}

/*
 * With momentum correction the owner's own chunk goes through the same
 * compressor as the chunks it receives (encoded into its own, otherwise
 * unused, send slot and decoded back): every rank's contribution to every
 * element then follows one momentum rule.
 */
static int own_mom(const struct isle_codec_ops *ops, const struct isle_codec *c,
		   float *x, size_t n, void *slot, float *res, float *mom)
{
	int rc;

	if (!mom || !n)
		return 0;
	rc = isle__topk_mom_encode(ops, c, x, n, slot, res, mom);
	return rc ? rc : ops->decode(c, slot, n, x, NULL);
}

/*
 * All-to-all reduce-scatter for int8/topk: every rank encodes chunk q (with
 * its error-feedback residual) and sends it to q; the owner adds the decoded
 * chunks in fp32 to its own, uncompressed (see own_mom), contribution.
 */
static int a2a_rs(struct isle__chan *ch, const struct isle__level *lv,
		  float *buf, size_t n, const struct isle_codec *c, float *res,
		  float *mom)
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
		rc = enc_contrib(
		    ops, c, buf + off, len, sbuf + (size_t)q * maxenc,
		    res ? res + off : NULL, mom ? mom + off : NULL);
		if (rc)
			return rc;
		if (PMPI_Isend(sbuf + (size_t)q * maxenc,
			       (int)isle_codec_encoded_size(c, len), MPI_BYTE,
			       q, ISLE__TAG, lv->comm,
			       &reqs[nreq]) != MPI_SUCCESS)
			return -EIO;
		isle__stat_send(ch, lv->comm, q,
				isle_codec_encoded_size(c, len));
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
	if (mom &&
	    (rc = own_mom(ops, c, buf + myoff, mylen, sbuf + (size_t)r * maxenc,
			  res + myoff, mom + myoff))) {
		(void)isle__waitall(ch, lv->comm, nreq, reqs, peers);
		return rc;
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
	float *res, *mom = NULL;
	int rc;

	if (isle_codec_summable(c))
		return ring_rs(ch, lv, buf, n, dt, c);
	res = resid(ch, c, key, lvl, STAGE_CONTRIB, n, &rc);
	if (!rc && res)
		mom = resid(ch, c, key, lvl, STAGE_MOM, n, &rc);
	return rc ? rc : a2a_rs(ch, lv, buf, n, c, res, mom);
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

/* ------------------------------------------------ pipelined hierarchy */

/*
 * The last two levels of hier(), segment by segment, so that the slow top
 * level (the network) carries segment s while the level below reduces
 * segment s + 1 and gathers segment s - 1: the link's time and the node's
 * copies overlap instead of adding up. Every local rank sends its own shard
 * of each segment across, in parallel with the others (one stream per rank,
 * not one per node).
 *
 * The top-level allreduce of a segment is a small state machine (struct
 * topop) advanced between the node-level steps: each step posts its sends
 * and receives, and the next test that finds them complete adds the data in
 * and posts the next step. Two segments at most are in flight, each with
 * its own tag and scratch, so their messages never match the other's.
 */
enum { TOP_RD, TOP_RING, TOP_A2A };
enum { TSCR_SEND, TSCR_RECV, TSCR_ENC, TSCR_META, TSCR_N };
#define TOP_SLOT(i) (4 + (i)*TSCR_N)

struct topop {
	struct isle__chan *ch;
	const struct isle__level *lv;
	const struct isle_codec *c;
	char *buf;
	size_t n;
	isle_dtype dt;
	float *res_c, *res_s; /* error feedback (a2a), or NULL */
	float *mom;	      /* momentum correction (a2a), or NULL */
	int mode, phase, k, tag, slot, nreq, live;
	MPI_Request *req;
	MPI_Status *st;
	int *peers;
	size_t *want, *eoff;
	char *sbuf, *rbuf, *enc;
};

static int top_post(struct topop *t, const void *sbuf, size_t sbytes, int dst,
		    void *rbuf, size_t rbytes, int src)
{
	if (sbytes > INT_MAX || rbytes > INT_MAX)
		return -EOVERFLOW;
	if (sbytes) {
		if (PMPI_Isend(sbuf, (int)sbytes, MPI_BYTE, dst, t->tag,
			       t->lv->comm, &t->req[t->nreq]) != MPI_SUCCESS)
			return -EIO;
		isle__stat_send(t->ch, t->lv->comm, dst, sbytes);
		t->want[t->nreq] = SIZE_MAX;
		t->peers[t->nreq++] = dst;
	}
	if (rbytes) {
		if (PMPI_Irecv(rbuf, (int)rbytes, MPI_BYTE, src, t->tag,
			       t->lv->comm, &t->req[t->nreq]) != MPI_SUCCESS)
			return -EIO;
		t->want[t->nreq] = rbytes;
		t->peers[t->nreq++] = src;
	}
	return 0;
}

static size_t top_enc(const struct topop *t, size_t len)
{
	return len ? isle_codec_encoded_size(t->c, len) : 0;
}

/* Post step k of the current phase. */
static int top_step(struct topop *t)
{
	const struct isle_codec_ops *ops = t->ch->owner->ops;
	int p = t->lv->size, r = t->lv->rank, rc;
	size_t es = esize(t->dt), soff, slen, roff, rlen;

	t->nreq = 0;
	if (t->mode == TOP_RD) {
		int peer = r ^ (1 << t->k);

		return top_post(t, t->buf, t->n * es, peer, t->rbuf, t->n * es,
				peer);
	}
	if (t->phase == 0 && t->mode == TOP_RING) {
		chunk(t->lv, t->n, ((r - t->k - 1) % p + p) % p, &soff, &slen);
		chunk(t->lv, t->n, ((r - t->k - 2) % p + p) % p, &roff, &rlen);
		if (t->c->kind == ISLE_CODEC_NONE)
			return top_post(t, t->buf + soff * es, slen * es,
					(r + 1) % p, t->rbuf, rlen * es,
					(r - 1 + p) % p);
		if (slen && (rc = ops->encode(t->c, (float *)t->buf + soff,
					      slen, t->sbuf, NULL, NULL)))
			return rc;
		return top_post(t, t->sbuf, top_enc(t, slen), (r + 1) % p,
				t->rbuf, top_enc(t, rlen), (r - 1 + p) % p);
	}
	if (t->phase == 0) { /* TOP_A2A: every chunk to its owner at once */
		size_t maxenc, myenc;

		isle__shard(t->n, t->lv->nshards, 0, &soff, &slen);
		maxenc = isle_codec_encoded_size(t->c, slen);
		chunk(t->lv, t->n, r, &roff, &rlen);
		myenc = top_enc(t, rlen);
		for (int k = 1; k < p; k++) {
			int q = (r + k) % p;
			char *out = t->sbuf + (size_t)q * maxenc;

			chunk(t->lv, t->n, q, &soff, &slen);
			if (slen &&
			    (rc = enc_contrib(ops, t->c, (float *)t->buf + soff,
					      slen, out,
					      t->res_c ? t->res_c + soff : NULL,
					      t->mom ? t->mom + soff : NULL)))
				return rc;
			if ((rc = top_post(t, out, top_enc(t, slen), q, NULL, 0,
					   0)))
				return rc;
		}
		for (int k = 1; rlen && k < p; k++) {
			int q = (r - k + p) % p;

			if ((rc = top_post(t, NULL, 0, 0,
					   t->rbuf + (size_t)q * myenc, myenc,
					   q)))
				return rc;
		}
		/* Only encoded copies are in flight: the own chunk is free. */
		return t->mom ? own_mom(ops, t->c, (float *)t->buf + roff, rlen,
					t->sbuf + (size_t)r * maxenc,
					t->res_c + roff, t->mom + roff)
			      : 0;
	}
	/* Allgather step k. */
	if (t->c->kind == ISLE_CODEC_NONE) {
		chunk(t->lv, t->n, ((r - t->k) % p + p) % p, &soff, &slen);
		chunk(t->lv, t->n, ((r - t->k - 1) % p + p) % p, &roff, &rlen);
		return top_post(t, t->buf + soff * es, slen * es, (r + 1) % p,
				t->buf + roff * es, rlen * es, (r - 1 + p) % p);
	}
	{
		int sq = ((r - t->k) % p + p) % p,
		    rq = ((r - t->k - 1) % p + p) % p;

		return top_post(t, t->enc + t->eoff[sq],
				t->eoff[sq + 1] - t->eoff[sq], (r + 1) % p,
				t->enc + t->eoff[rq],
				t->eoff[rq + 1] - t->eoff[rq], (r - 1 + p) % p);
	}
}

/* Encoded allgather: the owner encodes its shard once and decodes it back
 * (so that it holds what the others will hold). */
static int top_ag_start(struct topop *t)
{
	const struct isle_codec_ops *ops = t->ch->owner->ops;
	size_t off, len;
	int rc;

	t->phase = 1;
	t->k = 0;
	if (t->c->kind == ISLE_CODEC_NONE)
		return 0;
	chunk(t->lv, t->n, t->lv->rank, &off, &len);
	if (len && ((rc = ops->encode(t->c, (float *)t->buf + off, len,
				      t->enc + t->eoff[t->lv->rank], t->res_s,
				      NULL)) ||
		    (rc = ops->decode(t->c, t->enc + t->eoff[t->lv->rank], len,
				      (float *)t->buf + off, NULL))))
		return rc;
	return 0;
}

/* The step just completed: fold its data in, move on. */
static int top_finish_step(struct topop *t)
{
	const struct isle_codec_ops *ops = t->ch->owner->ops;
	int p = t->lv->size, r = t->lv->rank, rc;
	size_t es = esize(t->dt), off, len;

	if (t->mode == TOP_RD) {
		add(t->buf, t->rbuf, t->n, t->dt);
		if ((1 << ++t->k) >= p)
			t->live = 0;
		return 0;
	}
	if (t->phase == 0 && t->mode == TOP_RING) {
		chunk(t->lv, t->n, ((r - t->k - 2) % p + p) % p, &off, &len);
		if (len && t->c->kind == ISLE_CODEC_NONE)
			add(t->buf + off * es, t->rbuf, len, t->dt);
		else if (len &&
			 (rc = ops->decode_acc(t->c, t->rbuf, len,
					       (float *)t->buf + off, NULL)))
			return rc;
		if (++t->k < p - 1)
			return 0;
		return top_ag_start(t);
	}
	if (t->phase == 0) { /* TOP_A2A, fixed order of the sum */
		size_t myenc;

		chunk(t->lv, t->n, r, &off, &len);
		myenc = top_enc(t, len);
		for (int q = 0; len && q < p; q++)
			if (q != r && (rc = ops->decode_acc(
					   t->c, t->rbuf + (size_t)q * myenc,
					   len, (float *)t->buf + off, NULL)))
				return rc;
		return top_ag_start(t);
	}
	if (t->c->kind != ISLE_CODEC_NONE) {
		int rq = ((r - t->k - 1) % p + p) % p;

		chunk(t->lv, t->n, rq, &off, &len);
		if (len && (rc = ops->decode(t->c, t->enc + t->eoff[rq], len,
					     (float *)t->buf + off, NULL)))
			return rc;
	}
	if (++t->k >= p - 1)
		t->live = 0;
	return 0;
}

/* Advance t as far as its completed steps allow; block: until done. */
static int top_progress(struct topop *t, int block)
{
	int rc, done;

	while (t->live) {
		rc = isle__test_sized(t->ch, t->lv->comm, t->nreq, t->req,
				      t->peers, t->want, t->st, block, &done);
		if (rc || !done)
			return rc;
		if ((rc = top_finish_step(t)))
			return rc;
		if (t->live && (rc = top_step(t)))
			return rc;
	}
	return 0;
}

static int top_start(struct topop *t, struct isle__chan *ch,
		     const struct isle__level *lv, const struct isle_codec *c,
		     char *buf, size_t n, isle_dtype dt, float *res_c,
		     float *res_s, float *mom, int slot)
{
	int p = lv->size, rc;
	size_t es = esize(dt), off, len, maxlen, rbytes, sbytes = 0, encb = 0;
	char *meta;

	*t = (struct topop){.ch = ch,
			    .lv = lv,
			    .c = c,
			    .buf = buf,
			    .n = n,
			    .dt = dt,
			    .res_c = res_c,
			    .res_s = res_s,
			    .mom = mom,
			    .tag = ISLE__TAG + 1 + slot,
			    .slot = TOP_SLOT(slot)};
	isle__shard(n, lv->nshards, 0, &off, &maxlen);
	if (c->kind == ISLE_CODEC_NONE) {
		struct isle_algo_level m = {p, lv->bw_gbps, lv->lat_us, *c};

		t->mode =
		    !(p & (p - 1)) &&
			    isle_algo_cost_us(ISLE_ALGO_RDOUBLING, &m, 1,
					      n * es) <
				isle_algo_cost_us(ISLE_ALGO_RING, &m, 1, n * es)
			? TOP_RD
			: TOP_RING;
		rbytes = t->mode == TOP_RD ? n * es : maxlen * es;
	} else if (isle_codec_summable(c)) {
		t->mode = TOP_RING;
		sbytes = rbytes = isle_codec_encoded_size(c, maxlen);
	} else {
		t->mode = TOP_A2A;
		sbytes = isle_codec_encoded_size(c, maxlen) * (size_t)p;
		chunk(lv, n, lv->rank, &off, &len);
		rbytes = top_enc(t, len) * (size_t)p;
	}
	meta = isle__scratch(ch, t->slot + TSCR_META,
			     2 * (size_t)p *
				     (sizeof(MPI_Request) + sizeof(MPI_Status) +
				      sizeof(int) + sizeof(size_t)) +
				 (size_t)(p + 1) * sizeof(size_t) + 8);
	t->rbuf = isle__scratch(ch, t->slot + TSCR_RECV, rbytes);
	t->sbuf =
	    sbytes ? isle__scratch(ch, t->slot + TSCR_SEND, sbytes) : NULL;
	if (!meta || !t->rbuf || (sbytes && !t->sbuf))
		return -ENOMEM;
	t->st = (MPI_Status *)meta;
	t->req = (MPI_Request *)(t->st + 2 * p);
	t->want = (size_t *)(void *)((char *)(t->req + 2 * p) +
				     (-(uintptr_t)(t->req + 2 * p) & 7));
	t->eoff = t->want + 2 * p;
	t->peers = (int *)(t->eoff + p + 1);
	if (c->kind != ISLE_CODEC_NONE) {
		t->eoff[0] = 0;
		for (int q = 0; q < p; q++) {
			chunk(lv, n, q, &off, &len);
			t->eoff[q + 1] = t->eoff[q] + top_enc(t, len);
		}
		encb = t->eoff[p];
		if (!(t->enc = isle__scratch(ch, t->slot + TSCR_ENC, encb)))
			return -ENOMEM;
	}
	t->live = 1;
	if ((rc = top_step(t)))
		return rc;
	return top_progress(t, 0);
}

/* Segments for a hierarchy of count elements at level l (1: none). */
static size_t hier_segments(const struct isle__chan *ch, int l, size_t n,
			    isle_dtype dt)
{
	size_t bytes = n * esize(dt), seg = ch->owner->cfg.segment_bytes;

	/* The two levels pipelined are l and the top; a lossy codec below the
	 * top keeps one residual per call, not per segment. */
	if (l != ch->nlev - 2 || ch->lev[l].codec.kind != ISLE_CODEC_NONE ||
	    ch->lev[l + 1].max_size < 2)
		return 1;
	if (!seg) { /* 16 segments, each 256 KiB .. 8 MiB */
		seg = bytes / 16;
		seg = seg < (256u << 10) ? 256u << 10 : seg;
		seg = seg > (8u << 20) ? 8u << 20 : seg;
	}
	if (seg >= bytes)
		return 1;
	seg = (bytes + seg - 1) / seg;
	seg = seg > n ? n : seg; /* no empty segments */
	return seg > 1024 ? 1024 : seg;
}

static int hier(struct isle__chan *ch, int l, char *buf, size_t n,
		isle_dtype dt, uint64_t key);

static int hier_pipe(struct isle__chan *ch, int l, char *buf, size_t n,
		     isle_dtype dt, uint64_t key, size_t nseg)
{
	static const struct isle_codec none = {.kind = ISLE_CODEC_NONE};
	const struct isle__level *lv = &ch->lev[l], *tv = &ch->lev[l + 1];
	const struct isle_codec *tc = dt == ISLE_DTYPE_F64 ? &none : &tv->codec;
	struct topop ops[2];
	size_t es = esize(dt), roff_c = 0, roff_s = 0, tot_c = 0, tot_s = 0;
	size_t soff, slen, off, len, toff, tlen;
	float *res_c = NULL, *res_s = NULL, *mom = NULL;
	int mine = lv->rank < lv->nshards, rc = 0;

	ops[0].live = ops[1].live = 0;
	/* Error feedback: one residual over all segments' top-level data. */
	if (mine && tc->error_feedback && !isle_codec_summable(tc) &&
	    tc->kind != ISLE_CODEC_NONE) {
		for (size_t s = 0; s < nseg; s++) {
			isle__shard(n, (int)nseg, (int)s, &soff, &slen);
			chunk(lv, slen, lv->rank, &off, &len);
			tot_c += len;
			chunk(tv, len, tv->rank, &toff, &tlen);
			tot_s += tlen;
		}
		if (tot_c &&
		    !(res_c = isle__residual(
			  ch, key, (l + 1) * NSTAGES + STAGE_CONTRIB, tot_c)))
			return -ENOMEM;
		if (tot_s &&
		    !(res_s = isle__residual(
			  ch, key, (l + 1) * NSTAGES + STAGE_SHARD, tot_s)))
			return -ENOMEM;
		if (tot_c && tc->momentum > 0 &&
		    !(mom = isle__residual(
			  ch, key, (l + 1) * NSTAGES + STAGE_MOM, tot_c)))
			return -ENOMEM;
	}
	for (size_t s = 0; s <= nseg; s++) {
		struct topop *t = &ops[s & 1], *prev = &ops[(s + 1) & 1];

		if (s < nseg) {
			isle__shard(n, (int)nseg, (int)s, &soff, &slen);
			if (lv->size > 1 &&
			    (rc = level_rs(ch, lv, buf + soff * es, slen, dt,
					   &none, key, l)))
				goto out;
			if (prev->live && (rc = top_progress(prev, 0)))
				goto out;
			chunk(lv, slen, lv->rank, &off, &len);
			if (mine && len && tv->size > 1) {
				chunk(tv, len, tv->rank, &toff, &tlen);
				rc = top_start(
				    t, ch, tv, tc, buf + (soff + off) * es, len,
				    dt, res_c ? res_c + roff_c : NULL,
				    res_s ? res_s + roff_s : NULL,
				    mom ? mom + roff_c : NULL, (int)(s & 1));
				roff_c += len;
				roff_s += tlen;
			} else if (mine && len) { /* group of one: no wire */
				rc = hier(
				    ch, l + 1, buf + (soff + off) * es, len, dt,
				    key ^ (0x9e3779b97f4a7c15ull * (s + 1)));
			}
			if (rc)
				goto out;
		}
		if (s == 0)
			continue;
		/* Segment s - 1: its top level done, gather it on the node. */
		if ((rc = top_progress(prev, 1)))
			goto out;
		isle__shard(n, (int)nseg, (int)(s - 1), &soff, &slen);
		if (lv->size > 1 && (rc = level_ag(ch, lv, buf + soff * es,
						   slen, dt, &none, key, l)))
			goto out;
	}
out:
	/* A failure leaves requests behind: the channel is failed anyway. */
	return rc;
}

static int hier(struct isle__chan *ch, int l, char *buf, size_t n,
		isle_dtype dt, uint64_t key)
{
	static const struct isle_codec none = {.kind = ISLE_CODEC_NONE};
	const struct isle__level *lv = &ch->lev[l];
	const struct isle_codec *c = dt == ISLE_DTYPE_F64 ? &none : &lv->codec;
	size_t off, len, nseg;
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
	if (l < ch->nlev - 1 && (nseg = hier_segments(ch, l, n, dt)) > 1)
		return hier_pipe(ch, l, buf, n, dt, key, nseg);
	/* Momentum correction applies in a group of one too (a2a_rs then only
	 * passes the own chunk through it), or such groups would train
	 * without momentum. */
	if ((lv->size > 1 || c->momentum > 0) &&
	    (rc = level_rs(ch, lv, buf, n, dt, c, key, l)))
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

/*
 * Leader scheme: at each level below the top, a binomial reduce to the
 * group's rank 0, which alone goes on to the next level (the level above
 * joins the groups' rank-0s, as the shards of index 0 in hier); recursive
 * doubling among the top level's leaders; then binomial broadcasts back
 * down. log2 messages per level instead of hier's 2(g - 1): the small-size
 * path of han. Uncompressed; every rank ends with the leaders' bits.
 */
static int leader(struct isle__chan *ch, int l, void *buf, size_t n,
		  isle_dtype dt)
{
	const struct isle__level *lv = &ch->lev[l];
	int p = lv->size, r = lv->rank, mask, rc = 0;
	size_t bytes = n * esize(dt);
	void *tmp;

	if (l == ch->nlev - 1)
		return p > 1 ? rdoubling(ch, lv, buf, n, dt) : 0;
	if (p > 1 && !(tmp = isle__scratch(ch, SCR_RECV, bytes)))
		return -ENOMEM;
	for (mask = 1; mask < p; mask <<= 1) {
		if (r & mask) {
			rc = isle__sendrecv(ch, lv->comm, buf, bytes, r - mask,
					    NULL, 0, 0);
			break;
		}
		if (r + mask < p) {
			rc = isle__sendrecv(ch, lv->comm, NULL, 0, 0, tmp,
					    bytes, r + mask);
			if (rc)
				return rc;
			add(buf, tmp, n, dt);
		}
	}
	if (rc)
		return rc;
	if (r == 0 && (rc = leader(ch, l + 1, buf, n, dt)))
		return rc;
	/* Down: from the parent (the bit the reduce sent on), then on to
	 * the children below that bit. */
	if (r)
		rc = isle__sendrecv(ch, lv->comm, NULL, 0, 0, buf, bytes,
				    r - mask);
	for (mask >>= 1; !rc && mask > 0; mask >>= 1)
		if (r + mask < p)
			rc = isle__sendrecv(ch, lv->comm, buf, bytes, r + mask,
					    NULL, 0, 0);
	return rc;
}

/*
 * Top-k levels with warm-up take this call's ratio; saved keeps the plan's
 * codecs. *warming is 1 when a level has warm-up (restore them after).
 */
static void warm_begin(struct isle__chan *ch, struct isle_codec *saved,
		       int *warming)
{
	uint64_t call = ch->warm_calls;

	*warming = 0;
	for (int l = 0; l < ch->nlev; l++) {
		const struct isle_codec *c = &ch->lev[l].codec;

		if (c->kind != ISLE_CODEC_TOPK || !c->warm)
			continue;
		if (!*warming) {
			for (int i = 0; i < ch->nlev; i++)
				saved[i] = ch->lev[i].codec;
			ch->warm_calls++;
			*warming = 1;
		}
		ch->lev[l].codec.ratio = isle__topk_ratio_at(c, call);
	}
}

int isle__allreduce(struct isle__chan *ch, void *buf, size_t count,
		    isle_dtype dtype, isle_algo algo, uint64_t key)
{
	static const struct isle_codec none = {.kind = ISLE_CODEC_NONE};
	struct isle_codec saved[ISLE_PLAN_MAX_LEVELS];
	int warming = 0, rc;

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
	case ISLE_ALGO_LEADER:
		rc = leader(ch, 0, buf, count, dtype);
		break;
	case ISLE_ALGO_HIER:
		warm_begin(ch, saved, &warming);
		rc = hier(ch, 0, buf, count, dtype, key);
		for (int l = 0; warming && l < ch->nlev; l++)
			ch->lev[l].codec = saved[l];
		break;
	default:
		rc = -ENOTSUP;
	}
	if (rc && rc != -ENOTSUP)
		ch->failed = 1;
	return rc;
}
