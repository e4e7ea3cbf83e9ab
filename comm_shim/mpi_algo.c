/*
 * mpi_algo.c - the MPI library's own allreduce algorithms, picked through
 * MPI_T control variables (mpi_algo.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_algo.h"

#ifdef OPEN_MPI
#define CVAR_ALG "coll_tuned_allreduce_algorithm"
#define CVAR_SEG "coll_tuned_allreduce_algorithm_segmentsize"
#define CVAR_DYN "coll_tuned_use_dynamic_rules"
static const struct {
	const char *name;
	int alg, path;
} algs[] = {{"default", 0, ISLE_REPORT_LIBRARY},
	    {"ring", 4, ISLE_REPORT_OMPI_RING},
	    {"rdoubling", 3, ISLE_REPORT_OMPI_RDOUBLING},
	    {"rabenseifner", 6, ISLE_REPORT_OMPI_RABENSEIFNER},
	    {"segring", 5, ISLE_REPORT_OMPI_SEGRING}};
/* Segmented ring needs a segment size the probe would have to sweep: left
 * to the benchmark. */
const char *const isle__lib_probe_names[] = {"default", "rdoubling", "ring",
					     "rabenseifner", NULL};
#else
#define CVAR_ALG "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"
static const struct {
	const char *name;
	int alg, path;
} algs[] = {{"auto", 0, ISLE_REPORT_LIBRARY},
	    {"nb", 1, ISLE_REPORT_MPICH_NB},
	    {"smp", 2, ISLE_REPORT_MPICH_SMP},
	    {"rdoubling", 3, ISLE_REPORT_MPICH_RDOUBLING},
	    {"rsag", 4, ISLE_REPORT_MPICH_RSAG}};
const char *const isle__lib_probe_names[] = {"auto",	  "nb",	  "smp",
					     "rdoubling", "rsag", NULL};
#endif

/* Control variables bound so far, and the values they had then (the
 * job's own, put back after each write). */
static struct cvar {
	const char *name;
	MPI_T_cvar_handle h;
	int orig;
} cvars[4];

static struct cvar *cvar_get(const char *name)
{
	struct cvar *v = NULL;
	int n = 0, cnt;

	for (size_t k = 0; k < sizeof(cvars) / sizeof(cvars[0]); k++) {
		if (cvars[k].name && !strcmp(cvars[k].name, name))
			return &cvars[k];
		if (!cvars[k].name && !v)
			v = &cvars[k];
	}
	if (!v || MPI_T_cvar_get_num(&n) != MPI_SUCCESS)
		return NULL;
	for (int i = 0; i < n; i++) {
		char nm[256], desc[8];
		int nl = sizeof(nm), dl = sizeof(desc), verb, bind, scope;
		long long val = 0; /* an int, or a bool in its first bytes */
		MPI_Datatype dt;
		MPI_T_enum en;

		if (MPI_T_cvar_get_info(i, nm, &nl, &verb, &dt, &en, desc, &dl,
					&bind, &scope) != MPI_SUCCESS ||
		    strcmp(nm, name))
			continue;
		if (MPI_T_cvar_handle_alloc(i, NULL, &v->h, &cnt) !=
			MPI_SUCCESS ||
		    cnt != 1 || MPI_T_cvar_read(v->h, &val) != MPI_SUCCESS)
			return NULL;
		v->orig = (int)val;
		v->name = name;
		return v;
	}
	return NULL;
}

/* Writes val; check: read it back (a library may take a write and ignore
 * it), which the per-call writes skip once a first write was checked. */
static int cvar_write(const char *name, int val, int check)
{
	struct cvar *v = cvar_get(name);
	long long back = -1;

	if (!v)
		return -ENOENT;
	if (MPI_T_cvar_write(v->h, &val) != MPI_SUCCESS)
		return -EPERM;
	if (check &&
	    (MPI_T_cvar_read(v->h, &back) != MPI_SUCCESS || (int)back != val))
		return -EPERM;
	return 0;
}

static int t_inited;

int isle__lib_t_init(void)
{
	int provided, level = MPI_THREAD_MULTIPLE, inited = 0;

	if (t_inited)
		return 0;
	/* Open MPI 4.1 sets the process's thread level to the one MPI_T is
	 * asked for, even after MPI_Init: ask for what MPI_Init gave, or
	 * MPI_THREAD_MULTIPLE would silently become SINGLE. */
	if (PMPI_Initialized(&inited) == MPI_SUCCESS && inited &&
	    PMPI_Query_thread(&level) != MPI_SUCCESS)
		return -EIO;
	if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS)
		return -EIO;
	t_inited = 1;
	return 0;
}

void isle__lib_t_fini(void)
{
	if (!t_inited)
		return;
	t_inited = 0;
	memset(cvars, 0, sizeof(cvars)); /* their handles go with MPI_T */
	MPI_T_finalize();
}

int isle__lib_parse(const char *name, struct isle__lib_algo *out)
{
	const char *colon = strchr(name, ':');
	size_t len = colon ? (size_t)(colon - name) : strlen(name);

	memset(out, 0, sizeof(*out));
	for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++) {
		if (strlen(algs[k].name) != len ||
		    strncmp(algs[k].name, name, len))
			continue;
#ifdef OPEN_MPI
		if ((algs[k].alg == 5) != (colon != NULL))
			return -EINVAL; /* segring takes a segment size */
		if (colon) {
			char *end;
			long s = strtol(colon + 1, &end, 10);

			if (*end == 'K')
				s <<= 10, end++;
			if (*end || s <= 0 || s > (1L << 30))
				return -EINVAL;
			out->seg = (int)s;
		}
#else
		if (colon)
			return -EINVAL;
#endif
		out->alg = algs[k].alg;
		snprintf(out->name, sizeof(out->name), "%s", name);
		return 0;
	}
	return -EINVAL;
}

int isle__lib_path(const struct isle__lib_algo *a)
{
	for (size_t k = 0; a->alg && k < sizeof(algs) / sizeof(algs[0]); k++)
		if (algs[k].alg == a->alg)
			return algs[k].path;
	return ISLE_REPORT_LIBRARY;
}

int isle__lib_usable(void)
{
	struct cvar *alg = cvar_get(CVAR_ALG);

	/* A job that forced an algorithm keeps it. */
	if (!alg || alg->orig != 0 || cvar_write(CVAR_ALG, 0, 1))
		return 0;
#ifdef OPEN_MPI
	{
		struct cvar *dyn = cvar_get(CVAR_DYN),
			    *seg = cvar_get(CVAR_SEG);

		/* Writable: its own value back. */
		if (!dyn || !dyn->orig || !seg ||
		    cvar_write(CVAR_SEG, seg->orig, 1))
			return 0;
	}
#endif
	return 1;
}

int isle__lib_dup(MPI_Comm comm, const struct isle__lib_algo *a, MPI_Comm *out)
{
	int rc = 0;

#ifdef OPEN_MPI
	if (a->alg && ((rc = cvar_write(CVAR_ALG, a->alg, 1)) ||
		       (rc = cvar_write(CVAR_SEG, a->seg, 1))))
		goto out;
#endif
	if (PMPI_Comm_dup(comm, out) != MPI_SUCCESS)
		rc = -EIO;
#ifdef OPEN_MPI
out:
	if (a->alg) {
		cvar_write(CVAR_ALG, cvar_get(CVAR_ALG)->orig, 1);
		if (cvar_get(CVAR_SEG))
			cvar_write(CVAR_SEG, cvar_get(CVAR_SEG)->orig, 1);
	}
#endif
	return rc;
}

int isle__lib_allreduce(const struct isle__lib_algo *a, const void *sendbuf,
			void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
			MPI_Comm comm)
{
#ifdef OPEN_MPI
	(void)a;
	return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
#else
	/* Bound, and a first write read back, once: no name lookup per
	 * call (the pass-through's cost). */
	static struct cvar *v;
	int rc, val = a->alg;

	if (!a->alg)
		return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
	if (!v || !v->name) {
		if (cvar_write(CVAR_ALG, a->alg, 1))
			return MPI_ERR_OTHER;
		v = cvar_get(CVAR_ALG);
	}
	if (MPI_T_cvar_write(v->h, &val) != MPI_SUCCESS)
		return MPI_ERR_OTHER;
	rc = PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
	MPI_T_cvar_write(v->h, &v->orig);
	return rc;
#endif
}
