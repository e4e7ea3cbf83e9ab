/*
 * preload.h - the interface between libisle_preload.so (the one library the
 * SPANK plugin preloads; libc only) and the backends it dlopen()s from its
 * own directory once it knows what the process uses:
 *
 *   libisle_mpi_ompi.so    Open MPI        (mpi_interpose.c, Open MPI's mpi.h)
 *   libisle_mpi_mpich.so   MPICH ABI       (mpi_interpose.c, MPICH's mpi.h)
 *   libisle_nccl.so        NCCL + CUDA     (nccl_shim.c, no CUDA/NCCL NEEDED)
 *
 * MPI handles cross this interface as isle_mpi_h: a pointer in Open MPI, an
 * int in the MPICH ABI. Both arrive in one integer register, so the preload
 * library forwards the register untouched and only the backend, compiled
 * against the matching mpi.h, gives it a type (the upper half of an int
 * argument's register is unspecified and dropped by that conversion).
 */
#ifndef ISLE_PRELOAD_H
#define ISLE_PRELOAD_H

#include <stdint.h>

typedef uintptr_t isle_mpi_h;

#define ISLE_MPI_BACKEND_VERSION 1
#define ISLE_NCCL_BACKEND_VERSION 1

/* Exported by each MPI backend as "isle_mpi_backend". */
struct isle_mpi_backend {
	int version;	 /* ISLE_MPI_BACKEND_VERSION */
	const char *abi; /* "Open MPI", "MPICH" */
	int (*init)(int *argc, char ***argv);
	int (*init_thread)(int *argc, char ***argv, int required,
			   int *provided);
	int (*finalize)(void);
	int (*allreduce)(const void *sendbuf, void *recvbuf, int count,
			 isle_mpi_h datatype, isle_mpi_h op, isle_mpi_h comm);
	int (*iallreduce)(const void *sendbuf, void *recvbuf, int count,
			  isle_mpi_h datatype, isle_mpi_h op, isle_mpi_h comm,
			  void *request);
};

/*
 * Exported by the NCCL backend as "isle_nccl_backend_init": resolve finds
 * the process's own NCCL and CUDA runtime symbols (the preload library
 * knows where they are; a dlopen()ed backend's RTLD_NEXT does not).
 */
typedef void *(*isle_resolve_fn)(const char *name);
typedef int (*isle_nccl_backend_init_fn)(int version, isle_resolve_fn resolve);

#endif /* ISLE_PRELOAD_H */
