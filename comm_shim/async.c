/*
 * async.c - the helper thread: non-blocking allreduce and tensor fusion.
 *
 * isle_comm_iallreduce() queues the request and returns; one helper thread
 * per communicator runs the queue on the communicator's second channel, so
 * computation overlaps communication. This needs MPI_THREAD_MULTIPLE (the
 * interposer asks for it in MPI_Init); without it there is no helper and
 * the caller uses the MPI library's own MPI_Iallreduce.
 *
 * Fusion: small requests (< fusion_bytes) wait up to cycle_ms for company
 * and are reduced as one buffer of up to fusion_bytes. Which requests go
 * together must be the same on every rank, and timers differ between ranks,
 * so each batch starts with a tiny MPI_MIN allreduce of the queue lengths:
 * all ranks take the first `min` requests, which every rank has posted
 * (collectives are posted in the same order everywhere). Batches are then
 * cut by a rule that depends only on the request sizes. A large request at
 * the head is the same on every rank, so it runs alone without the MIN.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "comm_priv.h"

struct isle_comm_req {
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	isle_dtype dtype;
	uint64_t key;
	size_t pass_max; /* the crossover when posted: the same on every rank */
	void (*done_cb)(void *arg, int rc);
	void *arg;
	struct isle__async *a;
	int rc;
	int done; /* under a->mu */
	struct isle_comm_req *next;
};

struct isle__async {
	struct isle_comm *c;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t work, finished;
	struct isle_comm_req *head, *tail;
	int npending;
	size_t pending_bytes;
	double oldest; /* post time of the queue head */
	int flush;     /* someone waits: do not hold back for fusion */
	int stop;
};

static size_t req_bytes(const struct isle_comm_req *r)
{
	return r->count * (r->dtype == ISLE_DTYPE_F64 ? 8 : 4);
}

static int fusible(const struct isle_comm *c, const struct isle_comm_req *r)
{
	return c->cfg.fusion_bytes && req_bytes(r) < c->cfg.fusion_bytes;
}

/* Every rank calls this with its queue length (>= 1); returns the min. */
static int negotiate(struct isle_comm *c, int mine, int *agreed)
{
	MPI_Request r;
	int peer = -1;

	if (PMPI_Iallreduce(&mine, agreed, 1, MPI_INT, MPI_MIN, c->async.all,
			    &r) != MPI_SUCCESS)
		return -EIO;
	return isle__waitall(&c->async, c->async.all, 1, &r, &peer);
}

static void finish(struct isle__async *a, struct isle_comm_req *r, int rc)
{
	r->rc = rc;
	if (r->done_cb) {
		r->done_cb(r->arg, rc);
		free(r);
		return;
	}
	pthread_mutex_lock(&a->mu);
	r->done = 1;
	pthread_cond_broadcast(&a->finished);
	pthread_mutex_unlock(&a->mu);
}

/* In-place sum of buf on the helper's channel, by the chosen algorithm. */
static int reduce(struct isle_comm *c, void *buf, size_t count, isle_dtype dt,
		  uint64_t key, size_t pass_max)
{
	isle_algo algo = isle__choose_pm(c, count, dt, pass_max);
	MPI_Request mr;
	int peer = -1;

	isle__stat_ran(count * (dt == ISLE_DTYPE_F64 ? 8 : 4),
		       algo != ISLE_ALGO_PASSTHROUGH ? ISLE_REPORT_SHIM
						     : ISLE_REPORT_LIBRARY);
	if (algo != ISLE_ALGO_PASSTHROUGH) {
		isle__stat_taken(&c->async, count, dt, algo);
		return isle__allreduce(&c->async, buf, count, dt, algo, key);
	}
	if (PMPI_Iallreduce(MPI_IN_PLACE, buf, (int)count,
			    dt == ISLE_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT,
			    MPI_SUM, c->async.all, &mr) != MPI_SUCCESS)
		return -EIO;
	return isle__waitall(&c->async, c->async.all, 1, &mr, &peer);
}

static int run_one(struct isle_comm *c, struct isle_comm_req *r)
{
	size_t es = r->dtype == ISLE_DTYPE_F64 ? 8 : 4;

	if (r->sendbuf && r->sendbuf != r->recvbuf)
		memcpy(r->recvbuf, r->sendbuf, r->count * es);
	return reduce(c, r->recvbuf, r->count, r->dtype, r->key, r->pass_max);
}

/* Reduce reqs[0..n) (same dtype, all fusible) as one buffer. */
static int run_fused(struct isle_comm *c, struct isle_comm_req **reqs, int n)
{
	size_t es = reqs[0]->dtype == ISLE_DTYPE_F64 ? 8 : 4, total = 0, o;
	uint64_t key = 0x9e3779b97f4a7c15ull;
	char *buf;
	int rc;

	for (int i = 0; i < n; i++) {
		total += reqs[i]->count;
		key = (key ^ reqs[i]->key) * 0x100000001b3ull;
	}
	buf = malloc(total * es);
	if (!buf)
		return -ENOMEM;
	o = 0;
	for (int i = 0; i < n; i++) {
		const struct isle_comm_req *r = reqs[i];

		memcpy(buf + o, r->sendbuf ? r->sendbuf : r->recvbuf,
		       r->count * es);
		o += r->count * es;
	}
	rc = reduce(c, buf, total, reqs[0]->dtype, key, reqs[0]->pass_max);
	o = 0;
	for (int i = 0; !rc && i < n; i++) {
		memcpy(reqs[i]->recvbuf, buf + o, reqs[i]->count * es);
		o += reqs[i]->count * es;
	}
	free(buf);
	return rc;
}

/* Run the first n queued requests, fused into batches by size only. */
static void run_batch(struct isle__async *a, struct isle_comm_req *list, int n)
{
	struct isle_comm *c = a->c;
	struct isle_comm_req *batch[256];

	while (n > 0) {
		struct isle_comm_req *r = list;
		size_t bytes = 0;
		int k = 0, rc;

		if (!fusible(c, r)) {
			list = r->next;
			n--;
			finish(a, r, run_one(c, r));
			continue;
		}
		while (n > 0 && k < (int)ISLE_ARRAY_SIZE(batch) &&
		       fusible(c, list) && list->dtype == r->dtype &&
		       list->pass_max == r->pass_max &&
		       bytes + req_bytes(list) <= c->cfg.fusion_bytes) {
			bytes += req_bytes(list);
			batch[k++] = list;
			list = list->next;
			n--;
		}
		rc = k == 1 ? run_one(c, batch[0]) : run_fused(c, batch, k);
		for (int i = 0; i < k; i++)
			finish(a, batch[i], rc);
	}
}

static void *helper_main(void *arg)
{
	struct isle__async *a = arg;
	struct isle_comm *c = a->c;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		struct isle_comm_req *list;
		int mine, n = 1, rc = 0, fuse;

		if (!a->npending) {
			if (a->stop)
				break;
			pthread_cond_wait(&a->work, &a->mu);
			continue;
		}
		/*
		 * A large request at the head runs alone, on every rank
		 * alike (same order everywhere): no waiting, no negotiation.
		 */
		fuse = fusible(c, a->head);
		if (fuse && !a->flush && !a->stop &&
		    a->pending_bytes < c->cfg.fusion_bytes) {
			double due = a->oldest + c->cfg.cycle_ms * 1e-3;

			if (isle__now() < due) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				double t = (double)ts.tv_sec +
					   (double)ts.tv_nsec * 1e-9 +
					   (due - isle__now());
				ts.tv_sec = (time_t)t;
				ts.tv_nsec =
				    (long)((t - (double)ts.tv_sec) * 1e9);
				pthread_cond_timedwait(&a->work, &a->mu, &ts);
				continue;
			}
		}
		mine = a->npending;
		pthread_mutex_unlock(&a->mu);

		if (fuse)
			rc = negotiate(c, mine, &n);

		pthread_mutex_lock(&a->mu);
		if (rc)
			n = a->npending; /* fail everything queued */
		list = a->head;
		for (int i = 0; i < n; i++) {
			a->pending_bytes -= req_bytes(a->head);
			a->head = a->head->next;
		}
		a->npending -= n;
		if (!a->head)
			a->tail = NULL;
		else
			a->oldest = isle__now();
		a->flush = 0;
		pthread_mutex_unlock(&a->mu);

		if (rc) {
			while (n--) {
				struct isle_comm_req *next = list->next;

				finish(a, list, rc);
				list = next;
			}
		} else {
			run_batch(a, list, n);
		}
		pthread_mutex_lock(&a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

int isle__async_start(struct isle_comm *c)
{
	struct isle__async *a;
	int level = MPI_THREAD_SINGLE;

	PMPI_Query_thread(&level);
	if (level != MPI_THREAD_MULTIPLE)
		return -ENOTSUP;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->c = c;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->finished, NULL);
	if (pthread_create(&a->thr, NULL, helper_main, a)) {
		pthread_mutex_destroy(&a->mu);
		pthread_cond_destroy(&a->work);
		pthread_cond_destroy(&a->finished);
		free(a);
		return -EAGAIN;
	}
	c->helper = a;
	return 0;
}

/* Drains the queue, then joins the thread. */
void isle__async_stop(struct isle_comm *c)
{
	struct isle__async *a = c->helper;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	a->flush = 1;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thr, NULL);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->finished);
	free(a);
	c->helper = NULL;
}

int isle__async_post(struct isle_comm *c, const void *sendbuf, void *recvbuf,
		     size_t count, isle_dtype dtype, uint64_t key,
		     void (*done_cb)(void *arg, int rc), void *arg,
		     isle_comm_req **req)
{
	struct isle__async *a = c->helper;
	struct isle_comm_req *r;

	if (req)
		*req = NULL;
	if (!a)
		return -ENOTSUP;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct isle_comm_req){
	    .sendbuf = sendbuf == recvbuf ? NULL : sendbuf,
	    .recvbuf = recvbuf,
	    .count = count,
	    .dtype = dtype,
	    .key = key,
	    .pass_max = c->pass_max,
	    .done_cb = done_cb,
	    .arg = arg,
	    .a = a,
	};
	pthread_mutex_lock(&a->mu);
	if (!a->head) {
		a->head = r;
		a->oldest = isle__now();
	} else {
		a->tail->next = r;
	}
	a->tail = r;
	a->npending++;
	a->pending_bytes += req_bytes(r);
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
	if (req)
		*req = r;
	return 0;
}

int isle_comm_iallreduce(isle_comm *c, const void *sendbuf, void *recvbuf,
			 size_t count, isle_dtype dtype, uint64_t key,
			 isle_comm_req **req)
{
	return isle__async_post(c, sendbuf, recvbuf, count, dtype, key, NULL,
				NULL, req);
}

int isle_comm_test(isle_comm_req *r, int *done)
{
	pthread_mutex_lock(&r->a->mu);
	*done = r->done;
	if (!r->done)
		r->a->flush = 1;
	pthread_mutex_unlock(&r->a->mu);
	return 0;
}

int isle_comm_wait(isle_comm_req *r)
{
	struct isle__async *a = r->a;
	int rc;

	pthread_mutex_lock(&a->mu);
	if (!r->done) {
		a->flush = 1;
		pthread_cond_signal(&a->work);
	}
	while (!r->done)
		pthread_cond_wait(&a->finished, &a->mu);
	pthread_mutex_unlock(&a->mu);
	rc = r->rc;
	free(r);
	return rc;
}
