/*
 * reduce.c - the plain references of reduce_sum, reduce_max and reduce_mean over the axes given as the
 * launch's scalars: each output element folds every input element that maps to it, in row-major
 * order, in f32. A maximum is NaN when any of its elements is NaN.
 */
#include <math.h>
#include <stdbool.h>

#include "nd_accessor.h"

enum { REF_SUM, REF_MAX, REF_MEAN };

static void ref_reduce(const nda_ref_args *args, int64_t lo, int64_t hi, int kind)
{
    const nda_ref_operand *in = &args->operands[0], *out = &args->operands[1];
    bool red[ND_MAX_RANK] = {false};
    for (int i = 0; i < args->nscalars; ++i)
        red[(int)args->scalars[i]] = true;
    for (int64_t o = lo; o < hi; ++o) {
        int64_t x[ND_MAX_RANK], rest = o, combos = 1;
        for (int i = in->rank - 1; i >= 0; --i) { /* kept coordinates from o; reduced ones start at 0 */
            x[i] = red[i] ? 0 : rest % in->shape[i];
            rest /= red[i] ? 1 : in->shape[i];
            combos *= red[i] ? in->shape[i] : 1;
        }
        float acc = kind == REF_MAX ? -INFINITY : 0.0f;
        for (int64_t r = 0; r < combos; ++r) {
            int64_t idx = 0;
            for (int i = 0; i < in->rank; ++i)
                idx = idx * in->shape[i] + x[i];
            float v = ndref_load_f32(in, idx);
            if (kind != REF_MAX)
                acc += v;
            else if (isnan(v) || v > acc)
                acc = v;
            for (int i = in->rank - 1; i >= 0; --i) { /* the next combination of the reduced coordinates */
                if (!red[i])
                    continue;
                if (++x[i] < in->shape[i])
                    break;
                x[i] = 0;
            }
        }
        ndref_store_f32(out, o, kind == REF_MEAN ? acc / (float)combos : acc);
    }
}

static void ref_reduce_sum(const nda_ref_args *args, int64_t lo, int64_t hi) { ref_reduce(args, lo, hi, REF_SUM); }
static void ref_reduce_max(const nda_ref_args *args, int64_t lo, int64_t hi) { ref_reduce(args, lo, hi, REF_MAX); }
static void ref_reduce_mean(const nda_ref_args *args, int64_t lo, int64_t hi) { ref_reduce(args, lo, hi, REF_MEAN); }
