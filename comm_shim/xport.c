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
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "comm_priv.h"

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

/*
 * A receive that got another size than posted: the ranks called with
 * different counts or types. Plain MPI fails at once (MPI_ERR_TRUNCATE); so
 * does the shim, naming the peer, and a short message is never summed.
 */
static int report_size(struct isle__chan *ch, MPI_Comm comm, int peer,
		       const MPI_Status *st, size_t want)
{
	int me = ch->owner->plan_rank[ch->rank], pr = plan_rank_of(ch, comm, peer);
	int got = -1;

	if (st->MPI_ERROR == MPI_SUCCESS)
		PMPI_Get_count(st, MPI_BYTE, &got);
	fprintf(stderr,
		"isle_comm: rank %d: allreduce: message from rank %d %s %zu "
		"bytes: count or datatype differs across ranks "
		"(MPI_ERR_TRUNCATE)\n",
		me, pr, got >= 0 ? "has" : "is longer than", want);
	if (got >= 0)
		fprintf(stderr, "isle_comm: rank %d: (received %d bytes)\n", me,
			got);
	ch->failed = 1;
	return -EMSGSIZE;
}

/* Checks the receives among n finished requests (rbytes[i] != SIZE_MAX). */
static int check_sizes(struct isle__chan *ch, MPI_Comm comm, int n,
		       const MPI_Status *st, const size_t *rbytes,
		       const int *peers)
{
	for (int i = 0; rbytes && i < n; i++) {
		int got = -1;

		if (rbytes[i] == SIZE_MAX)
			continue;
		if (st[i].MPI_ERROR != MPI_SUCCESS &&
		    st[i].MPI_ERROR != MPI_ERR_PENDING)
			return report_size(ch, comm, peers[i], &st[i],
					   rbytes[i]);
		if (PMPI_Get_count(&st[i], MPI_BYTE, &got) != MPI_SUCCESS ||
		    (size_t)got != rbytes[i])
			return report_size(ch, comm, peers[i], &st[i],
					   rbytes[i]);
	}
	return 0;
}

int isle__waitall(struct isle__chan *ch, MPI_Comm comm, int n,
		  MPI_Request *reqs, const int *peers)
{
	return isle__waitall_sizes(ch, comm, n, reqs, peers, NULL);
}

int isle__waitall_sizes(struct isle__chan *ch, MPI_Comm comm, int n,
			MPI_Request *reqs, const int *peers,
			const size_t *rbytes)
{
	double timeout = ch->owner->cfg.timeout_s, deadline;
	MPI_Status stbuf[4], *st = stbuf;
	int flag = 0, rc = -EIO;

	if (n == 0)
		return 0;
	if (rbytes && n > (int)ISLE_ARRAY_SIZE(stbuf) &&
	    !(st = malloc(sizeof(*st) * (size_t)n)))
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		st[i].MPI_ERROR = MPI_SUCCESS;
	if (timeout <= 0) {
		int e = PMPI_Waitall(n, reqs, rbytes ? st : MPI_STATUSES_IGNORE);

		if (e == MPI_SUCCESS || (rbytes && e == MPI_ERR_IN_STATUS))
			rc = check_sizes(ch, comm, n, st, rbytes, peers);
		if (e != MPI_SUCCESS && !rc)
			rc = -EIO;
		goto out;
	}
	deadline = isle__now() + timeout;
	for (unsigned spin = 0;; spin++) {
		int e = PMPI_Testall(n, reqs, &flag,
				     rbytes ? st : MPI_STATUSES_IGNORE);

		if (e != MPI_SUCCESS && !(rbytes && e == MPI_ERR_IN_STATUS))
			goto out;
		if (flag || e != MPI_SUCCESS) {
			rc = check_sizes(ch, comm, n, st, rbytes, peers);
			if (!rc && e != MPI_SUCCESS)
				rc = -EIO;
			goto out;
		}
		/* Oversubscribed nodes: let the peer we wait for run. */
		if (spin > 256)
			sched_yield();
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
	rc = -ETIMEDOUT;
out:
	if (st != stbuf)
		free(st);
	return rc;
}

int isle__sendrecv(struct isle__chan *ch, MPI_Comm comm, const void *sbuf,
		   size_t sbytes, int dst, void *rbuf, size_t rbytes, int src)
{
	MPI_Request r[2];
	size_t want[2];
	int peers[2], n = 0;

	if (sbytes > INT_MAX || rbytes > INT_MAX)
		return -EOVERFLOW;
	if (rbytes) {
		if (PMPI_Irecv(rbuf, (int)rbytes, MPI_BYTE, src, ISLE__TAG,
			       comm, &r[n]) != MPI_SUCCESS)
			return -EIO;
		want[n] = rbytes;
		peers[n++] = src;
	}
	if (sbytes) {
		if (PMPI_Isend(sbuf, (int)sbytes, MPI_BYTE, dst, ISLE__TAG,
			       comm, &r[n]) != MPI_SUCCESS)
			return -EIO;
		want[n] = SIZE_MAX;
		peers[n++] = dst;
	}
	return isle__waitall_sizes(ch, comm, n, r, peers, want);
}
