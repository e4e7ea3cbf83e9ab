/*
 * preload.c - libisle_preload.so, the library the SPANK plugin puts in
 * LD_PRELOAD for every task. It needs nothing beyond libc, so a step that
 * never calls MPI or NCCL (srun hostname, a Python launcher) pays for one
 * small library and nothing more.
 *
 * It defines the entry points isle takes over (MPI_Init*, MPI_Finalize,
 * MPI_Allreduce, MPI_Iallreduce; ncclAllReduce, ncclGroupStart/End,
 * ncclCommDestroy/Abort). At the first MPI call it finds out which MPI the
 * process really runs, from symbols only that library defines, and loads
 * the matching backend from its own directory (preload.h); at the first
 * NCCL call it finds the process's own NCCL and CUDA runtime and loads the
 * NCCL backend when the versions fit. Otherwise every call goes to the next
 * definition (RTLD_NEXT) untouched, with one notice on stderr when
 * ISLE_COMM_VERBOSE is set or the job asked for compression.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isle_proto.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

/* CUDA major version the NCCL backend was built with; 0: none built. */
#ifndef ISLE_CUDA_MAJOR
#define ISLE_CUDA_MAJOR 0
#endif
/* ncclCommSplit, which the NCCL backend needs, came with NCCL 2.18. */
#define ISLE_NCCL_MIN_VERSION 21800

static int env_flag(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

/*
 * Whether the job asked for compression (ISLE_COMM_CODEC, or a codec in the
 * ISLE_PLAN file): then a pass-through is worth a notice even when quiet.
 * proto's plain text scan: this library parses no JSON and links nothing.
 */
static int compression_wanted(void)
{
	const char *codec = getenv("ISLE_COMM_CODEC"),
		   *plan = getenv(ISLE_PLAN_ENV);
	char buf[65536];
	size_t n = 0;
	FILE *f;

	if (isle_codec_spec_compresses(codec))
		return 1;
	if (!plan || !*plan || !(f = fopen(plan, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return isle_plan_text_compresses(buf);
}

static void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notice(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!env_flag("ISLE_COMM_VERBOSE") && !compression_wanted())
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "isle: %s\n", line);
}

/* dlopen()s NAME from this library's directory; NULL with why filled. */
static void *load_backend(const char *name, char *why, size_t whylen)
{
	char path[4096], self[PATH_MAX];
	const char *file, *slash;
	Dl_info di;
	void *h;

	if (!dladdr((void *)load_backend, &di) || !di.dli_fname) {
		snprintf(why, whylen, "cannot locate libisle_preload.so");
		return NULL;
	}
	/* Beside the installed file, also when LD_PRELOAD names a link. */
	file = realpath(di.dli_fname, self) ? self : di.dli_fname;
	if (!(slash = strrchr(file, '/'))) {
		snprintf(why, whylen, "cannot locate libisle_preload.so");
		return NULL;
	}
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - file), file,
		 name);
	if (access(path, R_OK) != 0) {
		snprintf(why, whylen, "no backend %s", path);
		return NULL;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(why, whylen, "cannot load %s: %s", path, dlerror());
	return h;
}

/* ------------------------------------------------------------------ MPI */

static struct {
	int (*init)(int *, char ***);
	int (*init_thread)(int *, char ***, int, int *);
	int (*finalize)(void);
	int (*allreduce)(const void *, void *, int, isle_mpi_h, isle_mpi_h,
			 isle_mpi_h);
	int (*iallreduce)(const void *, void *, int, isle_mpi_h, isle_mpi_h,
			  isle_mpi_h, void *);
} next_mpi;
static const struct isle_mpi_backend *mpi_be; /* NULL: pass-through */
static pthread_once_t mpi_once = PTHREAD_ONCE_INIT;

static void mpi_setup(void)
{
	const struct isle_mpi_backend *be;
	const char *abi, *lib;
	char why[4352] = "";
	void *h;

	*(void **)&next_mpi.init = dlsym(RTLD_NEXT, "MPI_Init");
	*(void **)&next_mpi.init_thread = dlsym(RTLD_NEXT, "MPI_Init_thread");
	*(void **)&next_mpi.finalize = dlsym(RTLD_NEXT, "MPI_Finalize");
	*(void **)&next_mpi.allreduce = dlsym(RTLD_NEXT, "MPI_Allreduce");
	*(void **)&next_mpi.iallreduce = dlsym(RTLD_NEXT, "MPI_Iallreduce");
	if (env_flag("ISLE_COMM_DISABLE"))
		return;
	/* Symbols only one family defines, before anything else is called. */
	if (dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world")) {
		abi = "Open MPI";
		lib = "libisle_mpi_ompi.so";
	} else if (dlsym(RTLD_DEFAULT, "MPIR_Dup_fn")) {
		abi = "MPICH ABI";
		lib = "libisle_mpi_mpich.so";
	} else {
		notice("MPI library not supported by isle (neither Open MPI "
		       "nor the MPICH ABI): MPI calls pass through unchanged");
		return;
	}
	h = load_backend(lib, why, sizeof(why));
	be = h ? dlsym(h, "isle_mpi_backend") : NULL;
	if (h && (!be || be->version != ISLE_MPI_BACKEND_VERSION))
		snprintf(why, sizeof(why), "%s: wrong backend version", lib);
	else if (be)
		mpi_be = be;
	if (!mpi_be)
		notice("%s: %s: MPI calls pass through unchanged", abi, why);
}

/* The next MPI_* definition; exits when there is none (no MPI linked). */
static void *mpi_next(void *fn, const char *name)
{
	if (!fn) {
		fprintf(stderr,
			"isle: %s called but no MPI library defines it\n",
			name);
		abort();
	}
	return fn;
}

EXPORT int MPI_Init(int *argc, char ***argv)
{
	pthread_once(&mpi_once, mpi_setup);
	if (mpi_be)
		return mpi_be->init(argc, argv);
	return ((int (*)(int *, char ***))mpi_next((void *)next_mpi.init,
						   "MPI_Init"))(argc, argv);
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	pthread_once(&mpi_once, mpi_setup);
	if (mpi_be)
		return mpi_be->init_thread(argc, argv, required, provided);
	return ((int (*)(int *, char ***, int, int *))mpi_next(
	    (void *)next_mpi.init_thread, "MPI_Init_thread"))(
	    argc, argv, required, provided);
}

EXPORT int MPI_Finalize(void)
{
	pthread_once(&mpi_once, mpi_setup);
	if (mpi_be)
		return mpi_be->finalize();
	return ((int (*)(void))mpi_next((void *)next_mpi.finalize,
					"MPI_Finalize"))();
}

EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
			 isle_mpi_h datatype, isle_mpi_h op, isle_mpi_h comm)
{
	pthread_once(&mpi_once, mpi_setup);
	if (mpi_be)
		return mpi_be->allreduce(sendbuf, recvbuf, count, datatype, op,
					 comm);
	mpi_next((void *)next_mpi.allreduce, "MPI_Allreduce");
	return next_mpi.allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

EXPORT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
			  isle_mpi_h datatype, isle_mpi_h op, isle_mpi_h comm,
			  void *request)
{
	pthread_once(&mpi_once, mpi_setup);
	if (mpi_be)
		return mpi_be->iallreduce(sendbuf, recvbuf, count, datatype, op,
					  comm, request);
	mpi_next((void *)next_mpi.iallreduce, "MPI_Iallreduce");
	return next_mpi.iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
				   request);
}

/* ----------------------------------------------------------------- NCCL */

/* ncclResult_t values (nccl.h), which this library does not include. */
#define NCCL_INTERNAL_ERROR 3

typedef int (*nccl_allreduce_fn)(const void *, void *, size_t, int, int, void *,
				 void *);
typedef int (*nccl_void_fn)(void);
typedef int (*nccl_comm_fn)(void *);

static struct {
	nccl_allreduce_fn allreduce;
	nccl_void_fn group_start, group_end;
	nccl_comm_fn comm_destroy, comm_abort;
} next_nccl, nccl_be;
static int nccl_engaged;
static void *nccl_lib; /* the process's NCCL when RTLD_NEXT misses it */
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

/*
 * The process's own NCCL or CUDA runtime symbol: the next definition
 * (NCCL linked into the program), else an NCCL or CUDA runtime already
 * loaded in a local scope (a Python extension), found without loading
 * anything new (RTLD_NOLOAD).
 */
static void *resolve(const char *name)
{
	static const char *const cudart[] = {
#if ISLE_CUDA_MAJOR
#define ISLE_STR2(x) #x
#define ISLE_STR(x) ISLE_STR2(x)
		"libcudart.so." ISLE_STR(ISLE_CUDA_MAJOR),
#endif
		"libcudart.so",
	};
	void *p = dlsym(RTLD_NEXT, name);

	if (p)
		return p;
	if (!strncmp(name, "nccl", 4)) {
		if (!nccl_lib)
			nccl_lib =
			    dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
		return nccl_lib ? dlsym(nccl_lib, name) : NULL;
	}
	for (size_t i = 0; i < sizeof(cudart) / sizeof(cudart[0]); i++) {
		void *h = dlopen(cudart[i], RTLD_NOW | RTLD_NOLOAD);

		if (h && (p = dlsym(h, name)))
			return p;
	}
	return NULL;
}

/* Why the NCCL backend cannot run in this process, or "" when it can. */
static void nccl_check(char *why, size_t len)
{
	int (*rt_version)(int *) = NULL, (*nccl_version)(int *) = NULL;
	int rtv = 0, nv = 0;
	Dl_info di;

	*(void **)&rt_version = resolve("cudaRuntimeGetVersion");
	*(void **)&nccl_version = resolve("ncclGetVersion");
	if (!ISLE_CUDA_MAJOR)
		snprintf(why, len, "isle was built without the NCCL backend");
	else if (!rt_version || rt_version(&rtv) != 0)
		snprintf(why, len, "no CUDA runtime in the process");
	else if (rtv / 1000 != ISLE_CUDA_MAJOR)
		snprintf(why, len,
			 "CUDA runtime %d.%d, isle's NCCL backend needs %d.x",
			 rtv / 1000, rtv % 1000 / 10, ISLE_CUDA_MAJOR);
	else if (!nccl_version || nccl_version(&nv) != 0)
		snprintf(why, len, "ncclGetVersion failed");
	else if (nv < ISLE_NCCL_MIN_VERSION)
		snprintf(why, len, "NCCL %d, isle needs %d or later", nv,
			 ISLE_NCCL_MIN_VERSION);
	/* The backend's CUDA calls bind to the process's runtime. */
	else if (!dladdr((void *)rt_version, &di) || !di.dli_fname ||
		 !dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
		snprintf(why, len, "cannot share the CUDA runtime");
}

static void nccl_setup(void)
{
	isle_nccl_backend_init_fn init;
	char why[4352] = "";
	void *h = NULL;

	*(void **)&next_nccl.allreduce = resolve("ncclAllReduce");
	*(void **)&next_nccl.group_start = resolve("ncclGroupStart");
	*(void **)&next_nccl.group_end = resolve("ncclGroupEnd");
	*(void **)&next_nccl.comm_destroy = resolve("ncclCommDestroy");
	*(void **)&next_nccl.comm_abort = resolve("ncclCommAbort");
	if (env_flag("ISLE_COMM_DISABLE"))
		return;
	if (!next_nccl.allreduce) {
		notice("NCCL: no NCCL library in the process");
		return;
	}
	nccl_check(why, sizeof(why));
	if (!why[0])
		h = load_backend("libisle_nccl.so", why, sizeof(why));
	if (h) {
		*(void **)&init = dlsym(h, "isle_nccl_backend_init");
		*(void **)&nccl_be.allreduce = dlsym(h, "ncclAllReduce");
		*(void **)&nccl_be.group_start = dlsym(h, "ncclGroupStart");
		*(void **)&nccl_be.group_end = dlsym(h, "ncclGroupEnd");
		*(void **)&nccl_be.comm_destroy = dlsym(h, "ncclCommDestroy");
		*(void **)&nccl_be.comm_abort = dlsym(h, "ncclCommAbort");
		if (!init || !nccl_be.allreduce || !nccl_be.group_start ||
		    !nccl_be.group_end || !nccl_be.comm_destroy ||
		    !nccl_be.comm_abort)
			snprintf(why, sizeof(why),
				 "libisle_nccl.so: missing entry points");
		else if (init(ISLE_NCCL_BACKEND_VERSION, resolve) != 0)
			snprintf(why, sizeof(why),
				 "libisle_nccl.so: backend init failed");
		else
			nccl_engaged = 1;
	}
	if (!nccl_engaged)
		notice("NCCL: %s: NCCL calls pass through unchanged", why);
}

static int nccl_missing(const char *name)
{
	fprintf(stderr, "isle: %s called but no NCCL library defines it\n",
		name);
	return NCCL_INTERNAL_ERROR;
}

EXPORT int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			 int datatype, int op, void *comm, void *stream)
{
	pthread_once(&nccl_once, nccl_setup);
	if (nccl_engaged)
		return nccl_be.allreduce(sendbuff, recvbuff, count, datatype,
					 op, comm, stream);
	if (!next_nccl.allreduce)
		return nccl_missing("ncclAllReduce");
	return next_nccl.allreduce(sendbuff, recvbuff, count, datatype, op,
				   comm, stream);
}

#define NCCL_FORWARD(name, field, params, args)                                \
	EXPORT int name params                                                 \
	{                                                                      \
		pthread_once(&nccl_once, nccl_setup);                          \
		if (nccl_engaged)                                              \
			return nccl_be.field args;                             \
		if (!next_nccl.field)                                          \
			return nccl_missing(#name);                            \
		return next_nccl.field args;                                   \
	}

NCCL_FORWARD(ncclGroupStart, group_start, (void), ())
NCCL_FORWARD(ncclGroupEnd, group_end, (void), ())
NCCL_FORWARD(ncclCommDestroy, comm_destroy, (void *comm), (comm))
NCCL_FORWARD(ncclCommAbort, comm_abort, (void *comm), (comm))
