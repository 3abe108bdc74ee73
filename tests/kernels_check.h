/* kernels_check.h - test_kernels' check of one target, shared with its random differential driver. */
#ifndef KERNELS_CHECK_H
#define KERNELS_CHECK_H

#include <stdint.h>

#include "nd_runtime.h"

enum { NR_OPERANDS = 8 };

/* The kernel specialized for the operands' signatures sigs (prebuilt, or on demand when e is the op's
 * generic entry and the JIT is on) against e's generic kernel and the plain reference; failures are
 * CHECKs naming test_case. */
void check_case(nd_kernels *k, const nda_kernel_entry *e, const char *const *sigs);
/* Draws random cases for `seconds` from `seed` (differential.c); returns how many were checked. */
int differential_main(nd_kernels *k, double seconds, uint64_t seed);

#endif
