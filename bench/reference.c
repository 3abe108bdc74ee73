/*
 * reference.c - runs an op's plain reference, the function its spec names or derives (nda_ref_fn, in
 * the kernel library beside its kernels), over the host arrays of a case, split over the device's
 * threads. What each op computes lives in its spec, not here; this file only feeds the reference and
 * reads element types.
 */
#include <string.h>

#include "ndrun.h"

enum { CHUNK = 4096 }; /* output elements per piece of work handed to a thread, about */

float nr_load_f32(const void *p, int64_t i, nd_dtype t)
{
    return ndref_dtype_load_f32(t, p, i);
}

typedef struct job {
    nda_ref_fn *fn;
    nda_ref_args args;
    int64_t n, chunk; /* output elements, and per piece */
} job;

static void piece(void *ctx, int64_t k)
{
    const job *j = ctx;
    int64_t lo = k * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
    j->fn(&j->args, lo, hi);
}

bool nr_has_reference(const nr_setup *su)
{
    return su->entry->reference != NULL;
}

int nr_reference(nd_device *dev, const nr_setup *su, void *out, nd_error *err)
{
    const nda_kernel_entry *e = su->entry;
    if (!e->reference)
        return nd_failc(err, ND_ENOENT, "op '%s': its spec gives no plain reference (reference = ...)", e->op);
    nda_ref_operand ops[NR_MAX_OPERANDS];
    for (int k = 0; k < su->n; ++k)
        ops[k] = (nda_ref_operand){k + 1 < su->n ? su->host[k] : out, su->dist[k].spec.rank, su->dist[k].spec.shape,
                                   (int)su->dist[k].spec.dtype, e->indices[k]};
    const nd_dist_spec *o = &su->dist[su->n - 1].spec;
    job j = {e->reference, {su->n, ops, su->nscalars, su->scalars}, su->elems[su->n - 1], 0};
    /* whole output rows of about CHUNK elements (a row-wise reference such as softmax's then reads each row
     * once), but pieces enough for every thread: a reference is correct for any range */
    int64_t row = o->rank ? o->shape[o->rank - 1] : 1, rows = row >= CHUNK ? 1 : CHUNK / row;
    int64_t want = 4 * (int64_t)nd_device_threads(dev);
    j.chunk = rows * row;
    if (j.n / j.chunk < want)
        j.chunk = (j.n + want - 1) / want;
    j.chunk = j.chunk > 0 ? j.chunk : 1;
    nd_device_parallel(dev, (j.n + j.chunk - 1) / j.chunk, piece, &j);
    return 0;
}
