/*
 * peer.h - the libraries' side of peers.c: a case as the dense problem a library takes, and what each
 * library (peer_blas.c, peer_blis.c, peer_dnnl.c, peer_xsmm.c) provides for it. Only peers.c and those
 * files include it.
 */
#ifndef NDRUN_PEER_H
#define NDRUN_PEER_H

#include <stddef.h>

#include "ndrun.h"

/* What the op is, as the field's libraries name the operation on dense row-major f32 arrays. */
typedef enum {
    PEER_UNARY,   /* out = f(a), f by the op's name */
    PEER_BINARY,  /* out = a (op) b, b broadcast numpy-style along axes where its extent is 1 */
    PEER_SOFTMAX, /* over the last axis */
    PEER_REDUCE,  /* out extent 1 along the reduced axes */
    PEER_PERMUTE, /* out axis i is input axis perm[i] */
    PEER_COPY,    /* the dense form of a reshard or page copy: the same array */
    PEER_GEMM     /* batches of (m x k) times (k x n) */
} peer_kind;

typedef struct peer_problem {
    peer_kind kind;
    const char *op;           /* the op's name ("gelu", "add", "reduce_max", "matmul") */
    int rank;                 /* of the first input; every shape below has this rank */
    int64_t a[ND_MAX_RANK];   /* the first input's shape */
    int64_t b[ND_MAX_RANK];   /* PEER_BINARY: the second input's, 1 where it broadcasts (1s on the left) */
    int64_t out[ND_MAX_RANK]; /* the output's: 1 on a reduced axis; in output order for a permute */
    int perm[ND_MAX_RANK];    /* PEER_PERMUTE */
    int64_t a_elems, elems;   /* elements of the first input and of the output */
    int64_t batches, m, n, k; /* PEER_GEMM, all row-major: a is m x k, b k x n (n x k when b_transposed) */
    bool b_transposed;
    bool gemv;                /* b a vector: n == 1 and one batch */
    int threads;              /* the device's: every peer runs on as many */
    nd_device *dev;           /* its thread pool, for a library that leaves threading to its caller */
} peer_problem;

typedef struct peer_lib {
    const char *name;
    /* 1 when the library does p, with its prepared *state and the call it makes in what; 0 when it does
     * not do p (nothing held); -1 on error. */
    int (*open)(const peer_problem *p, void **state, char *what, size_t len, nd_error *err);
    /* in: the inputs' dense arrays in operand order; out: the output's. */
    void (*run)(void *state, const peer_problem *p, const void *const *in, void *out);
    void (*close)(void *state);
} peer_lib;

/* One per library ndrun was built with (peers.c lists them, in the order rows name them). */
extern const peer_lib nr_peer_openblas, nr_peer_blis, nr_peer_dnnl, nr_peer_xsmm;

#endif
