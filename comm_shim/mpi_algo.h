/*
 * mpi_algo.h - the MPI library's own allreduce algorithms, picked by a
 * caller: one place for the shim's crossover probe (comm.c) and the paired
 * benchmark (bench_paired.c). Compiled against Open MPI's and against
 * MPICH's mpi.h; what a name means depends on that library.
 *
 *   Open MPI (coll_tuned)  coll_tuned_allreduce_algorithm (and _segmentsize)
 *                          written through MPI_T, which coll_tuned copies
 *                          when a communicator is created: one duplicated
 *                          communicator per algorithm. Needs
 *                          coll_tuned_use_dynamic_rules (read-only at run
 *                          time: the shim sets it before MPI_Init unless
 *                          the job did; it changes no default).
 *   MPICH                  MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM, read by each
 *                          call: written before the call, put back after.
 *                          Process-wide: only where no other thread of the
 *                          job's makes blocking allreduces meanwhile.
 *
 * Errors: 0 or a negative errno (-ENOENT: the library has no such control
 * variable; -EPERM: it refuses the write; -EINVAL: unknown name). The
 * caller has run MPI_T_init_thread. Not thread-safe: one thread at a time
 * (the shim's probe and its calls on one communicator are serialised by
 * MPI's rules for collectives).
 */
#ifndef ISLE_MPI_ALGO_H
#define ISLE_MPI_ALGO_H

#include <mpi.h>

#include "isle_proto.h"

/* Library algorithm: alg 0 is the library's default. */
struct isle__lib_algo {
	int alg, seg; /* seg: Open MPI segmented ring's segment bytes */
	char name[24];
};

/* MPI_T_init_thread, once per process: 0 or -EIO. isle__lib_t_fini()
 * undoes it, before MPI_Finalize (Open MPI 4.1 crashes in MPI_T_finalize
 * after it); nothing where isle__lib_t_init() did nothing. */
int isle__lib_t_init(void);
void isle__lib_t_fini(void);

/* "default", "ring", "rdoubling", "rabenseifner", "segring:BYTES" (Open
 * MPI); "auto", "nb", "smp", "rdoubling", "rsag" (MPICH). */
int isle__lib_parse(const char *name, struct isle__lib_algo *out);

/* a's name in the per-job report (enum isle_report_path). A function, not
 * a field: struct isle_comm holds these, and its layout (the fields the
 * pass-through reads) stays as it was. */
int isle__lib_path(const struct isle__lib_algo *a);

/* The names the shim's probe tries, the library's default first; NULL
 * ends the list. */
extern const char *const isle__lib_probe_names[];

/* 1 if the library lets a caller pick its allreduce algorithm here: the
 * control variables exist and are writable, and the job forced none. */
int isle__lib_usable(void);

/* A duplicate of comm whose allreduce runs a (Open MPI: coll_tuned's
 * forced algorithm; MPICH: a plain duplicate, the call picks). Collective
 * over comm. */
int isle__lib_dup(MPI_Comm comm, const struct isle__lib_algo *a, MPI_Comm *out);

/* PMPI_Allreduce on comm (from isle__lib_dup, or any communicator for a's
 * alg 0) by algorithm a. MPI's return code. */
int isle__lib_allreduce(const struct isle__lib_algo *a, const void *sendbuf,
			void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
			MPI_Comm comm);

#endif /* ISLE_MPI_ALGO_H */
