/*
 * permute.c - out = a with its axes permuted: output axis i is input axis perm[i], the perm coming as
 * the launch's scalars (the runtime checks that it is one, and the shapes). Owner computes: each core
 * fills the output pages it holds. When the last axis stays last, each output row is a contiguous
 * run of an input row; otherwise elements are gathered one by one.
 *
 * Operands: 0 a (input), 1 out (output). Scalars: perm(a).
 * Parameters: NDT_T, the stored element type (any: elements are moved, not computed).
 */
#include <stdint.h>
#include <string.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif

void permute(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    int perm[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
        perm[i] = (int)args->scalars[i];
    }
    const int64_t step = perm[r - 1] == r - 1; /* 1: rows stay rows; 0: gather */
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, y[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j = 0; j < len;) {
                int64_t n;
                for (int i = 0; i < r; ++i)
                    y[perm[i]] = x[i];
                const NDT_T *p = nda_elem_read(core, a, y, &n);
                const int64_t m = step ? rows_min(len - j, n) : 1;
                memcpy(z + off + j, p, (size_t)m * sizeof(NDT_T));
                j += m;
                x[r - 1] += m;
            }
        } while (rows_next(&w));
    }
}
