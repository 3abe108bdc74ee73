/* jit_where.h - where on-demand specialization finds a library's spec and templates (kernels.c resolves
 * it from the library's registry group, jit.c uses it). Beside runtime_internal.h's JIT interface. */
#ifndef ND_JIT_WHERE_H
#define ND_JIT_WHERE_H

#include "runtime_internal.h"

typedef struct nd_jit_where {
    const char *spec_path;   /* the spec file the library was generated from, resolved; NULL: unknown */
    int ntemplate_dirs;      /* the template folders it was generated with, resolved */
    const char *template_dirs[ND_JIT_MAX_TEMPLATE_DIRS];
    const char *cflags;      /* the flags the library's kernels were compiled with; NULL: not recorded */
} nd_jit_where;

/* nd_jit_library, with the spec looked up where the library says it is when the configuration's spec
 * folders do not hold it, and the library's template folders searched (and put on the compiler's
 * include path) after the configuration's; the kernel fixes set `fixed` (a row of NDA_FIXED_SETS): a
 * partial set's entry is keyed by the fixed parameters alone (each operand's signature with the free
 * ones starred, and which operands share their free ones), so every launch it serves finds it. */
int nd_jit_library_at(nd_jit *j, const nda_kernel_entry *generic, const char *spec, const nd_jit_where *where,
                      char (*sigs)[ND_SIGNATURE_LEN], int fixed, char *path, size_t len, nd_jit_outcome *outcome, char *note,
                      size_t note_len, nd_error *err);

#endif
