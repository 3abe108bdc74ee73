/* Accepted: file-scope names that are also names in the generated code (offset, base, stats, page,
 * self, local, in, shard): each variant gets its own copy, renamed. out = clamp(a + 2, -4, 4) + 10. */
#include "nd_accessor.h"

static const float offset = 2.0f;
static const float base[2] = {10.0f, 20.0f};
typedef struct stats {
    float lo, hi;
} stats;
static const float local = 0.0f, in = 1.0f, shard = 1.0f;

static float page(float v) { return v + offset; }
static float self(const stats *s, float v) { return v < s->lo ? s->lo : v > s->hi ? s->hi : v; }

void collide_statics(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const stats s = {-4.0f, 4.0f};
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = self(&s, page(x[e])) + base[0] * in * shard + local;
    }
}
