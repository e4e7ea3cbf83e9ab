/*
 * xport.c - point-to-point transfers with a deadline. Every wait in the shim
 * goes through isle__waitall(), so a dead or hung peer turns into
 * -ETIMEDOUT and one clear line on stderr instead of a hang.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <mpi.h>

#include "comm_priv.h"

/* The longest nap between tests of the helper thread's waits: the most it
 * adds to one transfer's completion. */
#define HELPER_NAP_MAX_US 256

double isle__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Plan rank of rank `peer` in comm (a sub-communicator of ch->all). */
static int plan_rank_of(struct isle__chan *ch, MPI_Comm comm, int peer)
{
	MPI_Group g = MPI_GROUP_NULL, ga = MPI_GROUP_NULL;
	int r = -1;

	if (PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
	    PMPI_Comm_group(ch->all, &ga) == MPI_SUCCESS)
		PMPI_Group_translate_ranks(g, 1, &peer, ga, &r);
	if (g != MPI_GROUP_NULL)
		PMPI_Group_free(&g);
	if (ga != MPI_GROUP_NULL)
		PMPI_Group_free(&ga);
	return r >= 0 && r != MPI_UNDEFINED ? ch->owner->plan_rank[r] : -1;
}

static void report_timeout(struct isle__chan *ch, MPI_Comm comm, int peer)
{
	const struct isle_plan *p = ch->owner->plan;
	int me = ch->owner->plan_rank[ch->rank];
	int pr = peer >= 0 ? plan_rank_of(ch, comm, peer) : -1;

	if (pr < 0) { /* a collective step (fusion negotiation) */
		fprintf(stderr,
			"isle_comm: rank %d (%s): allreduce timed out after "
			"%g s waiting for the other ranks: peer dead or hung "
			"(ISLE_COMM_TIMEOUT_S)\n",
			me, p->ranks[me].node, ch->owner->cfg.timeout_s);
		return;
	}
	fprintf(stderr,
		"isle_comm: rank %d (%s): allreduce timed out after %g s "
		"waiting for rank %d (%s): peer dead or hung "
		"(ISLE_COMM_TIMEOUT_S)\n",
		me, p->ranks[me].node, ch->owner->cfg.timeout_s, pr,
		p->ranks[pr].node);
}

static void report_size(struct isle__chan *ch, MPI_Comm comm, int peer, int got,
			size_t want)
{
	const struct isle_plan *p = ch->owner->plan;
	int me = ch->owner->plan_rank[ch->rank];
	int pr = plan_rank_of(ch, comm, peer);

	fprintf(stderr,
		"isle_comm: rank %d (%s): allreduce: rank %d sent %d bytes "
		"where %zu were due: count or datatype differs across ranks "
		"(MPI_ERR_TRUNCATE)\n",
		me, p->ranks[me].node, pr, got, want);
}

int isle__recv_exact(struct isle__chan *ch, MPI_Comm comm, void *buf,
		     size_t bytes, int src, MPI_Request *req)
{
	double timeout = ch->owner->cfg.timeout_s;
	double deadline = isle__now() + timeout;
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Status st;
	int flag = 0, got = -1;

	if (bytes > INT_MAX)
		return -EOVERFLOW;
	for (unsigned spin = 0;; spin++) {
		if (PMPI_Improbe(src, ISLE__TAG, comm, &flag, &msg, &st) !=
		    MPI_SUCCESS)
			return -EIO;
		if (flag)
			break;
		if (spin > 256)
			sched_yield();
		if (timeout > 0 && (spin & 255) == 255 &&
		    isle__now() > deadline) {
			report_timeout(ch, comm, src);
			ch->failed = 1;
			return -ETIMEDOUT;
		}
	}
	if (PMPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS || got < 0 ||
	    (size_t)got != bytes) {
		report_size(ch, comm, src, got, bytes);
		ch->failed = 1; /* the message stays unreceived: out of step */
		return -EMSGSIZE;
	}
	return PMPI_Imrecv(buf, (int)bytes, MPI_BYTE, &msg, req) == MPI_SUCCESS
		   ? 0
		   : -EIO;
}

int isle__waitall(struct isle__chan *ch, MPI_Comm comm, int n,
		  MPI_Request *reqs, const int *peers)
{
	double timeout = ch->owner->cfg.timeout_s, deadline;
	int flag = 0, helper = ch == &ch->owner->async;
	long nap_us = 16;

	if (n == 0)
		return 0;
	if (timeout <= 0)
		return PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS
			   ? 0
			   : -EIO;
	deadline = isle__now() + timeout;
	for (unsigned spin = 0;; spin++) {
		if (PMPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE) !=
		    MPI_SUCCESS)
			return -EIO;
		if (flag)
			return 0;
		/* Oversubscribed nodes: let the peer we wait for run. The
		 * helper thread sleeps instead, from 16 us doubling to
		 * HELPER_NAP_MAX_US: it runs beside the application's
		 * compute, which a spinning helper would slow down. */
		if (spin > 256 && helper) {
			struct timespec ts = {0, 1000L * nap_us};

			nanosleep(&ts, NULL);
			if (nap_us < HELPER_NAP_MAX_US)
				nap_us *= 2;
		} else if (spin > 256) {
			sched_yield();
		}
		if ((spin & 255) == 255 && isle__now() > deadline)
			break;
	}
	/* Name the first peer still missing, then drop what is pending. */
	for (int i = 0; i < n; i++) {
		int done = 1;

		if (reqs[i] != MPI_REQUEST_NULL)
			PMPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
		if (!done && flag >= 0) {
			report_timeout(ch, comm, peers[i]);
			flag = -1;
		}
		if (reqs[i] != MPI_REQUEST_NULL) {
			PMPI_Cancel(&reqs[i]);
			PMPI_Request_free(&reqs[i]);
		}
	}
	ch->failed = 1;
	return -ETIMEDOUT;
}

int isle__sendrecv(struct isle__chan *ch, MPI_Comm comm, const void *sbuf,
		   size_t sbytes, int dst, void *rbuf, size_t rbytes, int src)
{
	MPI_Request r[2];
	int peers[2], n = 0, rc;

	if (sbytes > INT_MAX || rbytes > INT_MAX)
		return -EOVERFLOW;
	if (sbytes) {
		if (PMPI_Isend(sbuf, (int)sbytes, MPI_BYTE, dst, ISLE__TAG,
			       comm, &r[n]) != MPI_SUCCESS)
			return -EIO;
		isle__stat_send(ch, comm, dst, sbytes);
		peers[n++] = dst;
	}
	if (rbytes) {
		if ((rc = isle__recv_exact(ch, comm, rbuf, rbytes, src, &r[n])))
			return rc;
		peers[n++] = src;
	}
	return isle__waitall(ch, comm, n, r, peers);
}

int isle__test_sized(struct isle__chan *ch, MPI_Comm comm, int n,
		     MPI_Request *reqs, const int *peers, const size_t *want,
		     MPI_Status *st, int block, int *done)
{
	double timeout = ch->owner->cfg.timeout_s;
	double deadline = isle__now() + timeout;
	int flag = 0, rc;

	*done = 0;
	for (unsigned spin = 0;; spin++) {
		rc = n ? PMPI_Testall(n, reqs, &flag, st) : MPI_SUCCESS;
		if (!n)
			flag = 1;
		if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
			return -EIO;
		if (flag || rc == MPI_ERR_IN_STATUS)
			break;
		if (!block)
			return 0;
		if (spin > 256)
			sched_yield();
		if (timeout > 0 && (spin & 255) == 255 &&
		    isle__now() > deadline) {
			for (int i = 0; i < n; i++)
				if (reqs[i] != MPI_REQUEST_NULL) {
					report_timeout(ch, comm, peers[i]);
					break;
				}
			for (int i = 0; i < n; i++)
				if (reqs[i] != MPI_REQUEST_NULL) {
					PMPI_Cancel(&reqs[i]);
					PMPI_Request_free(&reqs[i]);
				}
			ch->failed = 1;
			return -ETIMEDOUT;
		}
	}
	/* Receives: exactly the bytes due (a longer message fails with
	 * MPI_ERR_TRUNCATE in its status, a shorter one is counted short). */
	if (rc == MPI_ERR_IN_STATUS) {
		for (int i = 0; i < n; i++)
			if (want[i] != SIZE_MAX &&
			    st[i].MPI_ERROR == MPI_ERR_TRUNCATE) {
				report_size(ch, comm, peers[i], -1, want[i]);
				ch->failed = 1;
				return -EMSGSIZE;
			}
		ch->failed = 1;
		return -EIO;
	}
	for (int i = 0; i < n; i++) {
		int got = -1;

		if (want[i] == SIZE_MAX)
			continue;
		if (PMPI_Get_count(&st[i], MPI_BYTE, &got) != MPI_SUCCESS ||
		    got < 0 || (size_t)got != want[i]) {
			report_size(ch, comm, peers[i], got, want[i]);
			ch->failed = 1;
			return -EMSGSIZE;
		}
	}
	*done = 1;
	return 0;
}
