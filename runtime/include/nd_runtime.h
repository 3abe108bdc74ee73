/*
 * nd_runtime.h - the CPU core-grid backend: a device of virtual cores, each with its own L1 arena,
 * plus DRAM banks; distributed tensors placed by the distribution model; host scatter and gather;
 * and kernel launches over every virtual core on a thread pool.
 *
 * Errors follow nd_dist.h: 0 on success, -1 with a one-line message in nd_error, nothing changed.
 */
#ifndef ND_RUNTIME_H
#define ND_RUNTIME_H

#include <stdint.h>

#include "nd_accessor.h"
#include "nd_dist.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nd_device nd_device;
typedef struct nd_tensor nd_tensor;

typedef struct nd_device_config {
    int grid_x, grid_y;      /* virtual cores: grid_x columns by grid_y rows */
    int64_t l1_bytes;        /* per core */
    int dram_banks;
    int64_t dram_bank_bytes; /* per bank */
    int threads;             /* 0: one per hardware thread */
} nd_device_config;

/* Defaults: 8x8 cores of 1536 KiB L1, 12 DRAM banks of 1 GiB, one thread per hardware thread.
 * Arena memory is reserved, not committed: untouched L1 and DRAM cost no RAM. */
void nd_device_config_init(nd_device_config *cfg);

int nd_device_open(const nd_device_config *cfg, nd_device **out, nd_error *err);
/* Frees the device; its tensors must have been freed. */
void nd_device_close(nd_device *dev);
int nd_device_set_threads(nd_device *dev, int threads, nd_error *err);
int nd_device_threads(const nd_device *dev);
nd_device_config nd_device_get_config(const nd_device *dev);

/* Places d on dev: every core of d's core list gets d->bytes_per_core, zeroed. Fails, allocating
 * nothing, when d does not fit the device or a core lacks free space. */
int nd_tensor_alloc(nd_device *dev, const nd_dist *d, nd_tensor **out, nd_error *err);
void nd_tensor_free(nd_tensor *t);
const nd_dist *nd_tensor_dist(const nd_tensor *t);
const nda_tensor *nd_tensor_view(const nd_tensor *t);

/* Host scatter and gather of a contiguous row-major array of exactly the tensor's element bytes. */
int nd_tensor_write(nd_tensor *t, const void *host, int64_t bytes, nd_error *err);
int nd_tensor_read(const nd_tensor *t, void *host, int64_t bytes, nd_error *err);

typedef struct nd_launch_stats {
    double seconds;           /* wall time of the launch */
    int64_t ncores;           /* grid_x * grid_y */
    const nda_stats *per_core;/* by device core id; owned by the device, valid until the next launch */
    nda_stats total;
} nd_launch_stats;

/* Runs kernel once on every virtual core with args built from tensors[] and scalars[]. */
int nd_launch(nd_device *dev, nda_kernel_fn *kernel, nd_tensor *const *tensors, int ntensors,
              const double *scalars, int nscalars, nd_launch_stats *stats, nd_error *err);

#ifdef __cplusplus
}
#endif
#endif
