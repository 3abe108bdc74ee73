/* device_setup.h - the kernel tests' device: one that holds a target's operands, and the operands on it; and their JIT. */
#ifndef ND_DEVICE_SETUP_H
#define ND_DEVICE_SETUP_H

#include "nd_runtime.h"

enum { TD_OPERANDS = 8 };

typedef struct td_setup {
    nd_device *dev;
    nd_tensor *t[TD_OPERANDS];
    nd_dist d[TD_OPERANDS];
    int n;
    int64_t elems[TD_OPERANDS]; /* per operand */
} td_setup;

/* The operands' distributions from their signatures sigs[0..n) into s (no device yet), and a device
 * configuration holding them: every core and DRAM bank they name, a core per bank (core c writes bank
 * c), and L1 and banks large enough for all of them at once. */
int td_setup_config(const char *const *sigs, int n, int threads, td_setup *s, nd_device_config *cfg, nd_error *err);
/* Allocates every operand on s->dev. */
int td_setup_alloc(td_setup *s, nd_error *err);
/* td_setup_config, nd_device_open, td_setup_alloc. */
int td_setup_open(const char *const *sigs, int n, int threads, td_setup *s, nd_error *err);
/* Frees the operands and closes the device; a half-made setup too. */
void td_setup_free(td_setup *s);

/* A device holding d (on a grid_x x grid_y grid, or grid_x DRAM banks) and nothing else: exits with a
 * message when it cannot be opened. */
nd_device *td_device_for(const nd_dist *d, int grid_x, int grid_y, int threads);

/* A test's kernels (library lib loaded) and a default device of `threads` threads; on failure prints
 * "who: message" and leaves nothing open. */
int td_open_library(const char *who, const char *lib, int threads, nd_kernels **k, nd_device **dev);

/* A JIT configuration from the six words NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS that a
 * kernel test's command line gives (CMake passes them), caching in cache_dir (NULL: a private
 * temporary folder, so every kernel is built from the templates as they are). */
void td_jit_config(nd_jit_config *cfg, char *const *words, const char *cache_dir);
/* Turns on k's JIT configured by td_jit_config(words, NULL). */
int td_set_jit(nd_kernels *k, char *const *words, nd_error *err);

#endif
