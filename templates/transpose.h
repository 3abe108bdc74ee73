/*
 * transpose.h - in-register transposes of a tile of 64-byte lines, for the permute template.
 *
 * A tile is T x T elements of E bytes, T = 64 / E (a 64-byte cache line per row and per column), E 1,
 * 2, 4 or 8, given as T column runs (src[j][0, T)) and T row pointers (dst[b]): dst[b][at + j] =
 * src[j][b] for every b, j < T. It works on vectors of the compile target's width (ND_VBYTES, from
 * target.h; never wider, so nothing is lowered piece by piece): a tile is (T / N)^2 blocks of N x N
 * elements, N = ND_VBYTES / E lanes, each block N loads, log2(N) rounds of N shuffles, N stores. So a
 * 16 x 16 f32 tile takes 16 loads, 64 shuffles and 16 stores with AVX-512, where element moves take 256
 * loads and 256 stores.
 *
 * Round h (h = N/2, N/4, .., 1) swaps the off-diagonal h x h blocks of every 2h x 2h block: rows i and
 * i + h (bit h of i clear) become lo[k] = bit h of k clear ? a[k] : b[k - h] and hi[k] = bit h of k clear
 * ? a[k + h] : b[k], a and b the two rows. After the rounds for every bit, lane k of row i holds what
 * lane i of row k held. The shuffles are __builtin_shufflevector (GCC 12 and later, and Clang), whose lane
 * indices must be constants: the lists below spell them out for each lane count.
 */
#ifndef ND_TRANSPOSE_H
#define ND_TRANSPOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eltwise_rows.h"
#include "target.h"

/* Lane k of the rounds' two results, as an index into the pair (a, b): a's lanes are 0 .. N-1, b's N ..
 * 2N-1. Each is below 2N because h < N. */
#define TR_LO(N, h, k) (((k) & (h)) ? (N) + (k) - (h) : (k))
#define TR_HI(N, h, k) (((k) & (h)) ? (N) + (k) : (k) + (h))

/* TR_LANESn(M, N, h, k): M(N, h, k), .., M(N, h, k + n - 1), comma separated. */
#define TR_LANES1(M, N, h, k) M(N, h, k)
#define TR_LANES2(M, N, h, k) TR_LANES1(M, N, h, k), TR_LANES1(M, N, h, (k) + 1)
#define TR_LANES4(M, N, h, k) TR_LANES2(M, N, h, k), TR_LANES2(M, N, h, (k) + 2)
#define TR_LANES8(M, N, h, k) TR_LANES4(M, N, h, k), TR_LANES4(M, N, h, (k) + 4)
#define TR_LANES16(M, N, h, k) TR_LANES8(M, N, h, k), TR_LANES8(M, N, h, (k) + 8)
#define TR_LANES32(M, N, h, k) TR_LANES16(M, N, h, k), TR_LANES16(M, N, h, (k) + 16)
#define TR_LANES64(M, N, h, k) TR_LANES32(M, N, h, k), TR_LANES32(M, N, h, (k) + 32)

/* TR_ROUNDSn(R, N): R(N, h) for h = n/2, .., 1, the rounds of an n-lane transpose. */
#define TR_ROUNDS2(R, N) R(N, 1)
#define TR_ROUNDS4(R, N) R(N, 2) TR_ROUNDS2(R, N)
#define TR_ROUNDS8(R, N) R(N, 4) TR_ROUNDS4(R, N)
#define TR_ROUNDS16(R, N) R(N, 8) TR_ROUNDS8(R, N)
#define TR_ROUNDS32(R, N) R(N, 16) TR_ROUNDS16(R, N)
#define TR_ROUNDS64(R, N) R(N, 32) TR_ROUNDS32(R, N)

/* One round on the N vectors v[]: every pair (v[i], v[i + h]) with bit h of i clear. */
#define TR_ROUND(N, h)                                                                                 \
    for (int i = 0; i < (N); ++i)                                                                      \
        if (!(i & (h))) {                                                                              \
            const tr_vec a = v[i], b = v[i + (h)];                                                     \
            v[i] = __builtin_shufflevector(a, b, TR_LANES##N(TR_LO, N, h, 0));                         \
            v[i + (h)] = __builtin_shufflevector(a, b, TR_LANES##N(TR_HI, N, h, 0));                   \
        }

/* tr_tileE(dst, at, src, stream): the tile of E-byte elements, as above. N is a literal (the lists are
 * pasted by name), so the definition goes through one more macro level to expand it first. The blocks
 * of N rows are done one row block at a time, all of its T / N blocks before any store, so each row's
 * 64-byte line is stored in consecutive stores: a non-temporal line written in pieces far apart can
 * leave the write-combining buffer partly filled. Each source line is loaded as one unaligned vector
 * (tr_uvec): a memcpy into the vector was lowered by GCC to two 32-byte loads stored to the stack and
 * read back as one 64-byte vector, a store-forwarding stall on every line. */
#define TR_TILE(E, LANE_T, N) TR_TILE_(E, LANE_T, N)
#define TR_TILE_(E, LANE_T, N)                                                                         \
    static inline void tr_tile##E(void *const *dst, int64_t at, const void *const *src, bool stream)   \
    {                                                                                                  \
        typedef LANE_T tr_vec __attribute__((vector_size(ND_VBYTES)));                                 \
        typedef LANE_T tr_uvec __attribute__((vector_size(ND_VBYTES), aligned(1), may_alias));         \
        enum { T = 64 / (E), S = T / (N) };                                                            \
        for (int sb = 0; sb < T; sb += (N)) {                                                          \
            tr_vec r[S][N];                                                                            \
            for (int s = 0; s < S; ++s) {                                                              \
                tr_vec *v = r[s];                                                                      \
                for (int i = 0; i < (N); ++i)                                                          \
                    v[i] = *(const tr_uvec *)((const uint8_t *)src[s * (N) + i] + (size_t)sb * (E));   \
                TR_ROUNDS##N(TR_ROUND, N)                                                              \
            }                                                                                          \
            for (int i = 0; i < (N); ++i)                                                              \
                for (int s = 0; s < S; ++s) {                                                          \
                    uint8_t *d = (uint8_t *)dst[sb + i] + (size_t)(at + s * (N)) * (E);                \
                    if (stream)                                                                        \
                        rows_stream(d, &r[s][i], sizeof r[s][i]);                                      \
                    else                                                                               \
                        memcpy(d, &r[s][i], sizeof r[s][i]);                                           \
                }                                                                                      \
        }                                                                                              \
    }

TR_TILE(1, uint8_t, ND_VLANES_1)
TR_TILE(2, uint16_t, ND_VLANES_2)
TR_TILE(4, uint32_t, ND_VLANES_4)
TR_TILE(8, uint64_t, ND_VLANES_8)
_Static_assert(ND_VLANES_1 == ND_VBYTES && ND_VLANES_2 * 2 == ND_VBYTES && ND_VLANES_4 * 4 == ND_VBYTES &&
                   ND_VLANES_8 * 8 == ND_VBYTES, "target.h: the lane counts must fill a vector of ND_VBYTES");

/* The tile of elements of esize bytes (1, 2, 4 or 8; a constant where this is inlined, so one branch
 * remains): dst[b][at + j] = src[j][b], b and j below 64 / esize, in elements. With stream, the rows
 * are written with non-temporal stores (eltwise_rows.h), and dst[b] + at must be ROWS_STREAM_ALIGN
 * aligned. */
static inline void tr_tile(void *const *dst, int64_t at, const void *const *src, size_t esize, bool stream)
{
    switch (esize) {
    case 1: tr_tile1(dst, at, src, stream); break;
    case 2: tr_tile2(dst, at, src, stream); break;
    case 4: tr_tile4(dst, at, src, stream); break;
    default: tr_tile8(dst, at, src, stream); break;
    }
}

#endif
