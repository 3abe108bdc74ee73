/*
 * eltwise_unary.c - out = EXPR(a), element by element. Owner computes: each core fills the pages of
 * `out` it holds, reading `a` wherever it lives.
 *
 * When a and out share shape and page box the kernel works page by page (a constant, once
 * specialized); otherwise, for instance from tiles to rows, it walks each output page row by row and
 * reads contiguous runs of `a`.
 *
 * Operands: 0 a (input), 1 out (output), indexed "...".
 * Parameters: NDT_T, the stored C element type; NDT_LOAD(v) and NDT_STORE(v), conversions to and from
 * the type the expression computes in (bf16 is stored as uint16_t and computed in f32);
 * NDT_EXPR(x), the scalar expression.
 *
 * The expression is applied in blocks of VMATH_BLOCK elements (eltwise_rows.h), padded at the end of a run, so
 * that transcendental functions vectorize (libmvec) and every element takes the same path in the
 * generic and the specialized kernel.
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
#define NDT_EXPR(x) (x)
#endif

/* The elements of one streamed store, a vector of the target's (at most a block): computed into a buffer
 * of one vector, which the compiler keeps in a register. A block's buffer was two vectors on AVX2, that
 * went through the stack and left gelu and tanh 10% behind the plain loop on an AVX2 EPYC. */
enum { UNARY_STREAM_LANES = ROWS_STREAM_ALIGN / sizeof(NDT_T) < VMATH_BLOCK ? ROWS_STREAM_ALIGN / sizeof(NDT_T) : VMATH_BLOCK };

/* y[0, VMATH_BLOCK) = EXPR(x[0, VMATH_BLOCK)) by vector loops. With stream and y aligned for it, a vector
 * at a time through a buffer to streaming stores (eltwise_rows.h): the same vector function per lane,
 * so the same bits. Inlined into unary_run, whose vector width it then takes (VMATH_WIDE). */
static inline __attribute__((always_inline)) void unary_block(NDT_T *restrict y, const NDT_T *restrict x, bool stream)
{
    if (stream && rows_stream_aligned(y)) {
        for (int s = 0; s < VMATH_BLOCK; s += UNARY_STREAM_LANES) {
            NDT_T t[UNARY_STREAM_LANES];
            VMATH_KEEP_LOOP
            for (int k = 0; k < UNARY_STREAM_LANES; ++k)
                t[k] = NDT_STORE(NDT_EXPR(NDT_LOAD(x[s + k])));
            rows_stream(y + s, t, (int64_t)sizeof t);
        }
        return;
    }
    VMATH_KEEP_LOOP /* one vector loop, not 16 scalar calls */
    for (int k = 0; k < VMATH_BLOCK; ++k)
        y[k] = NDT_STORE(NDT_EXPR(NDT_LOAD(x[k])));
}

/* y[0, n) = EXPR(x[0, n)), VMATH_BLOCK lanes at a time: whole blocks in place, the rest padded to a
 * block (each lane's result depends on its own value alone, so both give the same bits). The input is
 * prefetched ahead (rows_prefetch: vector math outruns the hardware's prefetchers) in a loop of its
 * own: with the test for the run's end inside the one loop, GCC broadcast each of erf's coefficients
 * again for every vector instead of folding it into its FMA (75 instructions a vector against 45),
 * and gelu ran 20-30% behind the plain loop on an AVX2 EPYC. */
static VMATH_WIDE void unary_run(NDT_T *restrict y, const NDT_T *restrict x, int64_t n, bool stream)
{
    int64_t e0 = 0;
    const int64_t ahead = rows_prefetch_end(n, (int64_t)sizeof(NDT_T));
    for (; e0 + VMATH_BLOCK <= ahead; e0 += VMATH_BLOCK) {
        rows_prefetch(x + e0);
        unary_block(y + e0, x + e0, stream);
    }
    for (; e0 + VMATH_BLOCK <= n; e0 += VMATH_BLOCK)
        unary_block(y + e0, x + e0, stream);
    if (e0 < n) {
        const int64_t e = e0, m = n - e0;
        __typeof__(NDT_LOAD(x[0]) + 0) v[VMATH_BLOCK] = {0}, r[VMATH_BLOCK];
        for (int64_t k = 0; k < m; ++k)
            v[k] = NDT_LOAD(x[e + k]);
        VMATH_KEEP_LOOP
        for (int k = 0; k < VMATH_BLOCK; ++k)
            r[k] = NDT_EXPR(v[k]);
        for (int64_t k = 0; k < m; ++k)
            y[e + k] = NDT_STORE(r[k]);
    }
}

void eltwise_unary(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i)
        od[i] = nda_dim(out, i);
    const bool stream = rows_streaming(2 * rows_bytes(r, od, (int64_t)sizeof(NDT_T))); /* a and out */
    if (nda_same_paging(a, out)) {
        const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
        for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
            const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
            NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
            unary_run(y, x, n, stream);
        }
        return;
    }
    int64_t pd[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i)
        pd[i] = nda_page_dim(out, i);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j = 0; j < len;) {
                int64_t na;
                const NDT_T *pa = nda_elem_read(core, a, x, &na);
                const int64_t m = rows_min(len - j, na);
                unary_run(y + off + j, pa, m, stream);
                j += m;
                x[r - 1] += m;
            }
        } while (rows_next(&w));
    }
}
