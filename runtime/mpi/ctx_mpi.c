/* ctx_mpi.c - what the MPI device's files share beside its context (mpi_internal.h): the clock, the
 * fatal path that names the failing call and process, and the layout of a process's segment. It calls
 * none of them, so device_mpi.c, stage_mpi.c and io_mpi.c each depend on it alone. */
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

#include "mpi_internal.h"

void nd_mpi_pause(long spins, double waited)
{
    if (spins < 1000)
        return;
    if (waited < 1e-3)
        sched_yield();
    else
        nanosleep(&(struct timespec){0, 20000}, NULL);
}

double nd_mpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void nd_mpi_die(const nd_mpi_ctx *c, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fprintf(stderr, "ndgen mpi: process %d of %d: %s failed: %s; ending the job\n", c->procs.rank,
            c->procs.nranks, call, text);
    fflush(stderr);
    MPI_Abort(c->comm, 1);
    abort(); /* MPI_Abort does not return */
}

int64_t nd_mpi_lay_segment(const nd_mpi_ctx *c, const nd_device_config *cfg, int r, int64_t *core_disp,
                           int64_t *bank_disp)
{
    int64_t at = 0;
    for (int64_t i = c->core_lo[r]; i < c->core_lo[r + 1]; ++i, at += cfg->l1_bytes)
        core_disp[i] = at;
    for (int b = 0; b < cfg->dram_banks; ++b)
        if (c->rank_of_bank[b] == r) {
            bank_disp[b] = at;
            at += cfg->dram_bank_bytes;
        }
    return at;
}
