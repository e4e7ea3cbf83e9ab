/*
 * mpi_interpose.c - the MPI backends libisle_mpi_ompi.so and
 * libisle_mpi_mpich.so: this file compiled against Open MPI's and against
 * MPICH's mpi.h. libisle_preload.so loads the one that matches the process
 * and calls it through struct isle_mpi_backend (preload.h); handles arrive
 * as isle_mpi_h and get their ABI's type here (H_).
 *
 * Takes over MPI_Allreduce and MPI_Iallreduce for MPI_FLOAT / MPI_DOUBLE
 * with MPI_SUM on intra-communicators; every other call, and these calls
 * with any other op, type (derived, non-contiguous) or an inter-
 * communicator, goes to the MPI library's own PMPI_ entry point untouched.
 *
 * One isle_comm per communicator, cached as an MPI attribute (freed with
 * the communicator, or in MPI_Finalize). MPI_COMM_WORLD's is built in
 * MPI_Init so that a bad plan fails at init; others on their first
 * allreduce (a collective call, so all ranks build it together).
 * MPI_Init asks for MPI_THREAD_MULTIPLE so that the helper thread can
 * progress MPI_Iallreduce; if the library refuses, MPI_Iallreduce passes
 * through. Errors: one line on stderr, then the communicator's error
 * handler (MPI_ERRORS_ARE_FATAL by default aborts the job).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "comm_priv.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

/* The one place where the two ABIs differ: handles are pointers in Open
 * MPI and ints in MPICH (the cast drops the register's unspecified upper
 * half). MPI_Status layouts differ too, but only mpi.h's fields are used. */
#ifdef OPEN_MPI
#define ISLE_MPI_ABI "Open MPI"
#define H_(type, h) ((type)(void *)(h))
#else
#define ISLE_MPI_ABI "MPICH"
#define H_(type, h) ((type)(int)(h))
#endif

struct ctx_ent {
	MPI_Comm comm;
	isle_comm *c;
	struct ctx_ent *next;
};

static int keyval = MPI_KEYVAL_INVALID;
static int disabled;
/*
 * The communicators a thread's MPI_Allreduce saw and their contexts (a
 * small table by handle), so that a call the shim hands to the library
 * costs no attribute lookup, also when calls alternate between
 * communicators. ctx_gen moves on whenever a context is freed: a handle the
 * library reuses for a new communicator never hits a stale entry.
 */
#define SEEN_N 8
static unsigned ctx_gen;
static __thread struct seen {
	MPI_Comm comm;
	isle_comm *c;
	unsigned gen;
} seen[SEEN_N];

static struct seen *seen_slot(MPI_Comm comm)
{
	uint64_t h = (uint64_t)(uintptr_t)comm * 0x9e3779b97f4a7c15ull;

	return &seen[h >> 61]; /* SEEN_N = 8 */
}
static pthread_mutex_t ents_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_ent *ents;

static int env_flag(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

static int delete_ctx(MPI_Comm comm, int kv, void *val, void *extra)
{
	struct ctx_ent **pp, *e = val;

	__atomic_fetch_add(&ctx_gen, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&ents_mu);
	for (pp = &ents; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	pthread_mutex_unlock(&ents_mu);
	isle_comm_destroy(e->c);
	free(e);
	return MPI_SUCCESS;
}

/*
 * After a timeout the fatal error handler runs MPI_Abort, which needs the
 * runtime to reach the other nodes (PMIx, the launcher) and blocks for as
 * long as a frozen node stays frozen. A rank that has named a dead or hung
 * peer must still end: this thread ends the process one more
 * ISLE_COMM_TIMEOUT_S later if the abort has not.
 */
static double abort_grace_s;
static int abort_rank = -1;

static void *abort_watchdog(void *arg)
{
	struct timespec ts = {
	    .tv_sec = (time_t)abort_grace_s,
	    .tv_nsec =
		(long)((abort_grace_s - (double)(time_t)abort_grace_s) * 1e9)};

	(void)arg;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	dprintf(STDERR_FILENO,
		"isle_comm: rank %d: MPI_Abort did not end the process %g s "
		"after the timeout; exiting\n",
		abort_rank, abort_grace_s);
	_exit(EXIT_FAILURE);
	return NULL;
}

static void arm_abort_watchdog(MPI_Comm comm, int me)
{
	static int armed;
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	const char *s = getenv("ISLE_COMM_TIMEOUT_S");
	double t = s && *s ? strtod(s, NULL) : 300;
	pthread_attr_t a;
	pthread_t thr;
	int fatal;

	if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
		return;
	/* An application that handles errors itself decides what follows. */
	fatal = eh == MPI_ERRORS_ARE_FATAL;
	if (eh != MPI_ERRHANDLER_NULL)
		PMPI_Errhandler_free(&eh);
	if (!fatal || !(t > 0) ||
	    __atomic_exchange_n(&armed, 1, __ATOMIC_SEQ_CST))
		return;
	abort_grace_s = t;
	abort_rank = me;
	if (pthread_attr_init(&a))
		return;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&thr, &a, abort_watchdog, NULL);
	pthread_attr_destroy(&a);
}

static int fail(MPI_Comm comm, const char *what, int rc)
{
	int me = -1, code = rc == -EMSGSIZE ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;

	PMPI_Comm_rank(MPI_COMM_WORLD, &me);
	fprintf(stderr, "isle_comm: rank %d: %s: %s\n", me, what,
		isle_comm_strerror(rc));
	if (rc == -ETIMEDOUT)
		arm_abort_watchdog(comm, me);
	PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/*
 * Whether comm holds processes outside this MPI_COMM_WORLD (MPI_Comm_spawn,
 * MPI_Comm_connect, their merged intra-communicators): they are in no plan.
 * Every member sees the same answer, so all pass through together.
 */
static int outside_world(MPI_Comm comm)
{
	MPI_Group g = MPI_GROUP_NULL, gw = MPI_GROUP_NULL;
	int n = 0, *in = NULL, *tr = NULL, outside = 1;

	if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS ||
	    PMPI_Comm_group(MPI_COMM_WORLD, &gw) != MPI_SUCCESS ||
	    PMPI_Group_size(g, &n) != MPI_SUCCESS || n <= 0)
		goto out;
	in = malloc(sizeof(int) * (size_t)n);
	tr = malloc(sizeof(int) * (size_t)n);
	if (!in || !tr)
		goto out;
	for (int i = 0; i < n; i++)
		in[i] = i;
	if (PMPI_Group_translate_ranks(g, n, in, gw, tr) != MPI_SUCCESS)
		goto out;
	outside = 0;
	for (int i = 0; i < n; i++)
		if (tr[i] == MPI_UNDEFINED || tr[i] < 0)
			outside = 1;
out:
	if (g != MPI_GROUP_NULL)
		PMPI_Group_free(&g);
	if (gw != MPI_GROUP_NULL)
		PMPI_Group_free(&gw);
	free(in);
	free(tr);
	return outside;
}

/* The communicator's context; builds it on first use (collective). *out
 * stays NULL for a communicator the shim leaves to MPI (outside_world). */
static int get_ctx(MPI_Comm comm, isle_comm **out)
{
	struct ctx_ent *e;
	char err[1024] = "";
	int flag = 0, rank = 0, rc;

	*out = NULL;
	if (PMPI_Comm_get_attr(comm, keyval, &e, &flag) == MPI_SUCCESS &&
	    flag) {
		*out = e->c;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	rc = outside_world(comm)
		 ? 0
		 : isle_comm_create(comm, NULL, &e->c, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "isle_comm: %s\n", err);
		free(e);
		return rc;
	}
	e->comm = comm;
	if (PMPI_Comm_set_attr(comm, keyval, e) != MPI_SUCCESS) {
		isle_comm_destroy(e->c);
		free(e);
		return -EIO;
	}
	pthread_mutex_lock(&ents_mu);
	e->next = ents;
	ents = e;
	pthread_mutex_unlock(&ents_mu);
	if (e->c && e->c->cfg.verbose) {
		PMPI_Comm_rank(comm, &rank);
		if (rank == 0)
			fprintf(
			    stderr, "isle_comm: %s%s, %s backend\n", e->c->desc,
			    e->c->helper ? ", async helper" : "", ISLE_MPI_ABI);
	}
	*out = e->c;
	return 0;
}

/* After PMPI init: keyval, then MPI_COMM_WORLD's context. */
static int after_init(int rc)
{
	MPI_Comm parent = MPI_COMM_NULL;
	isle_comm *c;
	int err;

	if (rc != MPI_SUCCESS || disabled)
		return rc;
	/* A spawned process is outside the job's plan: MPI does it all. */
	if (PMPI_Comm_get_parent(&parent) == MPI_SUCCESS &&
	    parent != MPI_COMM_NULL) {
		if (env_flag("ISLE_COMM_VERBOSE"))
			fprintf(stderr, "isle_comm: spawned process: MPI calls "
					"pass through unchanged\n");
		disabled = 1;
		return rc;
	}
	if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_ctx, &keyval,
				    NULL) != MPI_SUCCESS) {
		disabled = 1;
		return rc;
	}
	err = get_ctx(MPI_COMM_WORLD, &c);
	if (err) {
		/* A bad plan or setting stops the job here, on every rank. */
		PMPI_Abort(MPI_COMM_WORLD, 1);
	}
	return rc;
}

/*
 * Before the library's init: what the probe needs to pick the library's
 * own algorithms (mpi_algo.h), and the thread level the application asked
 * for (the shim raises it for its helper thread).
 */
static void before_init(int required)
{
	isle__app_thread_level = required;
#ifdef OPEN_MPI
	/* coll_tuned reads forced algorithms only with dynamic rules on,
	 * which cannot be set at run time; without a rules file or a forced
	 * algorithm it runs its fixed rules, as with them off. A job that
	 * set it keeps its value. */
	setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
#endif
}

static int b_init(int *argc, char ***argv)
{
	int provided;

	disabled = env_flag("ISLE_COMM_DISABLE");
	if (disabled)
		return PMPI_Init(argc, argv);
	before_init(MPI_THREAD_SINGLE);
	if (getenv("ISLE_COMM_ASYNC") && !env_flag("ISLE_COMM_ASYNC"))
		return after_init(PMPI_Init(argc, argv));
	return after_init(
	    PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
}

static int b_init_thread(int *argc, char ***argv, int required, int *provided)
{
	disabled = env_flag("ISLE_COMM_DISABLE");
	if (!disabled)
		before_init(required);
	if (!disabled &&
	    !(getenv("ISLE_COMM_ASYNC") && !env_flag("ISLE_COMM_ASYNC")))
		required = MPI_THREAD_MULTIPLE;
	return after_init(PMPI_Init_thread(argc, argv, required, provided));
}

/* A call the shim leaves to the library, for the report. */
static void count_passed(int count, MPI_Datatype dt)
{
	int sz = 0;

	if (count > 0 && PMPI_Type_size(dt, &sz) != MPI_SUCCESS)
		sz = 0;
	isle__stat_ran(count > 0 ? (uint64_t)count * (uint64_t)sz : 0,
		       ISLE_REPORT_LIBRARY);
}

static int b_finalize(void)
{
	isle__report_finalize(); /* collective: before anything is freed */
	if (!disabled && keyval != MPI_KEYVAL_INVALID) {
		for (;;) {
			MPI_Comm comm;

			pthread_mutex_lock(&ents_mu);
			comm = ents ? ents->comm : MPI_COMM_NULL;
			pthread_mutex_unlock(&ents_mu);
			if (comm == MPI_COMM_NULL)
				break;
			PMPI_Comm_delete_attr(comm, keyval); /* -> delete_ctx */
		}
		PMPI_Comm_free_keyval(&keyval);
	}
	isle__lib_t_fini();
	return PMPI_Finalize();
}

/* The calls the shim takes; anything else passes through. */
static int applies(MPI_Datatype dt, MPI_Op op, MPI_Comm comm, int count,
		   isle_dtype *out)
{
	int inter = 0;

	if (disabled || keyval == MPI_KEYVAL_INVALID || op != MPI_SUM ||
	    count <= 0)
		return 0;
	if (dt == MPI_FLOAT)
		*out = ISLE_DTYPE_F32;
	else if (dt == MPI_DOUBLE)
		*out = ISLE_DTYPE_F64;
	else
		return 0;
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return 0;
	return 1;
}

static int b_allreduce(const void *sendbuf, void *recvbuf, int count,
		       isle_mpi_h hdt, isle_mpi_h hop, isle_mpi_h hcomm)
{
	MPI_Datatype datatype = H_(MPI_Datatype, hdt);
	MPI_Op op = H_(MPI_Op, hop);
	MPI_Comm comm = H_(MPI_Comm, hcomm);
	isle_dtype dt;
	isle_comm *c;
	int rc;

	/* Sums on a communicator seen before that go to the library anyway
	 * (the model's small_pass, or the probe's verdict for the size):
	 * straight there, the same call on the same communicator as the long
	 * path (a table hit on one rank and a miss on another must meet in
	 * the same collective), counted alike, and never a call at which
	 * the probe is due (the long path runs it). */
	struct seen *last = seen_slot(comm);

	if (last->c && comm == last->comm && op == MPI_SUM && count > 0 &&
	    (datatype == MPI_FLOAT || datatype == MPI_DOUBLE) &&
	    last->gen == __atomic_load_n(&ctx_gen, __ATOMIC_ACQUIRE)) {
		size_t bytes = (size_t)count * (datatype == MPI_DOUBLE ? 8 : 4);
		isle_comm *lc = last->c;
		int h = isle__cal_half(bytes),
		    i = h < 0 ? -1 : lc->route_half[h];

		if (lc->carried + bytes < lc->cal_due &&
		    (bytes <= lc->small_pass || i >= 0)) {
			lc->carried += bytes;
			isle__stat_ran(bytes, i > 0
						  ? isle__lib_path(&lc->lib[i])
						  : ISLE_REPORT_LIBRARY);
			/* isle__lib_call's choice, inline: the default's
			 * call is the cost of every pass-through. */
			if ((i > 0
				 ? isle__lib_allreduce(&lc->lib[i], sendbuf,
						       recvbuf, count, datatype,
						       op, lc->lib_comm[i])
				 : PMPI_Allreduce(sendbuf, recvbuf, count,
						  datatype, op,
						  lc->sync.all)) == MPI_SUCCESS)
				return MPI_SUCCESS;
			return fail(comm, "MPI_Allreduce", -EIO);
		}
	}
	if (!applies(datatype, op, comm, count, &dt) ||
	    ((rc = get_ctx(comm, &c)) == 0 && !c)) {
		count_passed(count, datatype);
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op,
				      comm);
	}
	if (rc)
		return fail(comm, "MPI_Allreduce: setup", rc);
	last->gen = __atomic_load_n(&ctx_gen, __ATOMIC_ACQUIRE);
	last->comm = comm;
	last->c = c;
	rc = isle_comm_allreduce(c, sendbuf == MPI_IN_PLACE ? NULL : sendbuf,
				 recvbuf, (size_t)count, dt,
				 (uint64_t)(uintptr_t)recvbuf);
	if (rc == -ENOTSUP)
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op,
				      comm);
	return rc ? fail(comm, "MPI_Allreduce", rc) : MPI_SUCCESS;
}

/* ------------------------------------------- MPI_Iallreduce via grequest */

struct greq {
	MPI_Request req;
	int rc;
};

static int greq_query(void *state, MPI_Status *st)
{
	struct greq *g = state;

	PMPI_Status_set_elements(st, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = MPI_UNDEFINED;
	st->MPI_TAG = MPI_UNDEFINED;
	st->MPI_ERROR = g->rc ? MPI_ERR_OTHER : MPI_SUCCESS;
	return st->MPI_ERROR;
}

static int greq_free(void *state)
{
	free(state);
	return MPI_SUCCESS;
}

static int greq_cancel(void *state, int complete)
{
	return MPI_SUCCESS; /* a started collective cannot be cancelled */
}

static void greq_done(void *arg, int rc)
{
	struct greq *g = arg;

	if (rc) {
		int me = -1;

		PMPI_Comm_rank(MPI_COMM_WORLD, &me);
		fprintf(stderr, "isle_comm: rank %d: MPI_Iallreduce: %s\n", me,
			isle_comm_strerror(rc));
	}
	g->rc = rc;
	PMPI_Grequest_complete(g->req);
}

static int b_iallreduce(const void *sendbuf, void *recvbuf, int count,
			isle_mpi_h hdt, isle_mpi_h hop, isle_mpi_h hcomm,
			void *req)
{
	MPI_Datatype datatype = H_(MPI_Datatype, hdt);
	MPI_Op op = H_(MPI_Op, hop);
	MPI_Comm comm = H_(MPI_Comm, hcomm);
	MPI_Request *request = req;
	struct greq *g;
	isle_dtype dt;
	isle_comm *c;
	int rc;

	if (!applies(datatype, op, comm, count, &dt))
		goto passthrough;
	if ((rc = get_ctx(comm, &c)))
		return fail(comm, "MPI_Iallreduce: setup", rc);
	if (!c || (rc = isle__async_route(c, (size_t)count, dt)) == 0)
		goto passthrough;
	if (rc < 0)
		return fail(comm, "MPI_Iallreduce: probe", rc);
	/* The helper counts it when it runs (taken or not). */
	g = calloc(1, sizeof(*g));
	if (!g)
		return fail(comm, "MPI_Iallreduce", -ENOMEM);
	if (PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g,
				request) != MPI_SUCCESS) {
		free(g);
		goto passthrough;
	}
	g->req = *request;
	rc = isle__async_post(c, sendbuf == MPI_IN_PLACE ? NULL : sendbuf,
			      recvbuf, (size_t)count, dt,
			      (uint64_t)(uintptr_t)recvbuf, greq_done, g, NULL);
	if (rc) {
		g->rc = rc;
		PMPI_Grequest_complete(g->req);
		return fail(comm, "MPI_Iallreduce", rc);
	}
	return MPI_SUCCESS;
passthrough:
	count_passed(count, datatype);
	return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
			       request);
}

EXPORT const struct isle_mpi_backend isle_mpi_backend = {
    .version = ISLE_MPI_BACKEND_VERSION,
    .abi = ISLE_MPI_ABI,
    .init = b_init,
    .init_thread = b_init_thread,
    .finalize = b_finalize,
    .allreduce = b_allreduce,
    .iallreduce = b_iallreduce,
};
