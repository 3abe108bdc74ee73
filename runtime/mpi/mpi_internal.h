/* mpi_internal.h - what the sources of nd_runtime_mpi share; not installed. */
#ifndef ND_MPI_INTERNAL_H
#define ND_MPI_INTERNAL_H

#include "nd_runtime_mpi.h"
#include "runtime_internal.h"

/* A device's MPI state, behind nd_device_procs.ctx. */
typedef struct nd_mpi_ctx {
    nd_device_procs procs;       /* procs.ctx points back here */
    MPI_Comm comm;               /* the user's communicator, duplicated, errors returned */
    MPI_Comm shm;                /* the same processes, as one node's shared-memory communicator */
    MPI_Win win;                 /* every process's L1 and banks */
    double fence_timeout;
    int32_t *rank_of_core, *rank_of_bank;
    int64_t *core_lo;            /* [nranks + 1]: process r runs cores [core_lo[r], core_lo[r + 1]) */
    int *stat_counts, *stat_displs; /* bytes of nda_stats per process, for the gather */
    double *seconds;             /* [nranks]: each process's own run in the last launch */
} nd_mpi_ctx;

/* Prints which call failed on which process and ends the job (MPI_Abort); never returns. */
_Noreturn void nd_mpi_die(const nd_mpi_ctx *c, const char *call, int rc);

#endif
