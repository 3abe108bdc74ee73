/*
 * eltwise_binary.c - out = EXPR(a, b), element by element, with numpy broadcasting. Owner computes:
 * each core fills the pages of `out` it holds, reading `a` and `b` wherever they live.
 *
 * When a, b and out share shape and page box, page p of each holds the same elements and the kernel
 * works page by page; a specialized kernel knows this as a constant. Otherwise it walks each output
 * page row by row and reads contiguous runs of the inputs, broadcasting where an input's dim is 1.
 *
 * Operands: 0 a, 1 b (inputs), 2 out (output), indexed "...".
 * Parameters: NDT_T, the stored C element type; NDT_LOAD(v) and NDT_STORE(v), conversions to and from
 * the type the expression computes in (bf16 is stored as uint16_t and computed in f32);
 * NDT_EXPR(x, y), the scalar expression.
 */
#include <math.h>
#include <stdint.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_LOAD
#define NDT_LOAD(v) (v)
#endif
#ifndef NDT_STORE
#define NDT_STORE(v) (v)
#endif
#ifndef NDT_EXPR
#define NDT_EXPR(x, y) ((x) + (y))
#endif

/* z[0, n) = EXPR(x[e sx], y[e sy]) (a stride of 0 broadcasts), streamed past the cache (eltwise_rows.h). */
static inline void binary_run(NDT_T *restrict z, const NDT_T *restrict x, int64_t sx, const NDT_T *restrict y,
                              int64_t sy, int64_t n, bool stream)
{
#define BINARY_AT(i) NDT_STORE(NDT_EXPR(NDT_LOAD(x[(i) * sx]), NDT_LOAD(y[(i) * sy])))
    ROWS_STORE_RUN(z, n, stream, BINARY_AT);
#undef BINARY_AT
}

void eltwise_binary(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i)
        od[i] = nda_dim(out, i);
    const int ra = nda_rank(a), rb = nda_rank(b);
    int64_t pd[ROWS_MAX_RANK], ad[ROWS_MAX_RANK], bd[ROWS_MAX_RANK];
    for (int i = 0; i < ra; ++i)
        ad[i] = nda_dim(a, i);
    for (int i = 0; i < rb; ++i)
        bd[i] = nda_dim(b, i);
    const int64_t e = (int64_t)sizeof(NDT_T);
    const bool stream = rows_streaming(rows_bytes(r, od, e) + rows_bytes(ra, ad, e) + rows_bytes(rb, bd, e));
    if (nda_same_paging(a, out) && nda_same_paging(b, out)) {
        const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
        for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
            const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
            const NDT_T *y = nda_page_read(core, b, nda_iter_page(&it));
            NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
            binary_run(z, x, 1, y, 1, n, stream);
        }
        return;
    }
    for (int i = 0; i < r; ++i)
        pd[i] = nda_page_dim(out, i);
    const int64_t sa = ad[ra - 1] != 1, sb = bd[rb - 1] != 1; /* 0: broadcast along the last dim */
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j = 0; j < len;) {
                int64_t xa[ROWS_MAX_RANK], xb[ROWS_MAX_RANK], na, nb;
                rows_broadcast(xa, x, r, ad, ra);
                rows_broadcast(xb, x, r, bd, rb);
                const NDT_T *pa = nda_elem_read(core, a, xa, &na);
                const NDT_T *pb = nda_elem_read(core, b, xb, &nb);
                const int64_t m = rows_min(len - j, rows_min(sa ? na : len, sb ? nb : len));
                binary_run(z + off + j, pa, sa, pb, sb, m, stream);
                j += m;
                x[r - 1] += m;
            }
        } while (rows_next(&w));
    }
}
