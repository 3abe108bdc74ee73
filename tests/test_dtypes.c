/*
 * test_dtypes.c - the dtype table (ND_DTYPES in nd_dist/model.h) against facts written out here
 * independently: each dtype's name, size and storage, its name parsed back, the element one as C writes
 * it, floating values k/4 in [-8, 8] stored and loaded back exactly, and integers exact. A dtype added
 * to the table without a line here fails the count. f16's conversions (nd_accessor.h) against IEEE
 * binary16 as testutil.c writes it out from its definition.
 */
#include <math.h>
#include <string.h>

#include "nd_accessor.h"
#include "nd_dist.h"
#include "testutil.h"

static int64_t passed;

typedef struct fact {
    const char *name;
    int bytes;
    bool floating, stored_floating;
    const char *ctype;
} fact;

static const fact facts[] = {
    {"f32", 4, true, true, "float"},
    {"bf16", 2, true, false, "uint16_t"},
    {"f16", 2, true, false, "uint16_t"},
    {"i32", 4, false, false, "int32_t"},
    {"u8", 1, false, false, "uint8_t"},
};

/* One f32 against the definition: the nearest f16, ties to even (a NaN: any NaN of its sign). */
static void f16_round_one(float v)
{
    const uint16_t got = nda_f32_to_f16(v), want = test_f16_nearest(v);
    const bool same = isnan(v) ? (got & 0x7c00) == 0x7c00 && (got & 0x3ff) && (got & 0x8000) == (want & 0x8000)
                               : got == want;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    CHECK(same, "f32 %a (bits %08x) to f16: %04x, want %04x", (double)v, (unsigned)u, got, want);
    passed += same;
}

/* f16: every one of the 65,536 values to f32 and back against the definition (testutil.c), then f32 to
 * f16 at each midpoint between neighbouring f16 values and one f32 step either side of it (where the
 * rounding and the ties are decided), and 2^20 random f32 bit patterns, seed printed on failure. */
static void f16_conversions(void)
{
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = nda_f16_to_f32((uint16_t)h);
        const double want = test_f16_value((uint16_t)h);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        const bool nan = isnan(want);
        CHECK(nan ? isnan(f) && (u & 0x00400000u) && (u >> 31) == (h >> 15) : (double)f == want && !signbit(f) == !signbit(want),
              "f16 %04x to f32: %a, want %a", (unsigned)h, (double)f, want);
        CHECK(nan || nda_f32_to_f16(f) == h, "f16 %04x does not round-trip: %04x", (unsigned)h, nda_f32_to_f16(f));
        passed++;
        if ((h & 0x7fff) < 0x7c00) { /* finite: the midpoint to the next value up in magnitude */
            const double next = (h & 0x7fff) == 0x7bff ? 65536.0 : fabs(test_f16_value((uint16_t)(h + 1)));
            const float mid = (float)((fabs(want) + next) / 2) * (h & 0x8000 ? -1.0f : 1.0f); /* exact in f32 */
            f16_round_one(mid);
            f16_round_one(nextafterf(mid, 0));
            f16_round_one(nextafterf(mid, mid * 2));
        }
    }
    test_seed = 20261127;
    for (int k = 0; k < 1 << 20; ++k) {
        const uint32_t u = (uint32_t)rng_next(&test_seed);
        float v;
        memcpy(&v, &u, sizeof v);
        f16_round_one(v);
    }
    test_seed = 0;
    static const float edges[] = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f,
                                  0x1p-26f, 0x1p-149f, 0x1p-14f, 0x1.ffcp-15f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; ++i)
        f16_round_one(edges[i]);
}

int main(void)
{
    CHECK(ND_DTYPE_COUNT == (int)(sizeof facts / sizeof *facts), "ND_DTYPES has %d rows, this test %d: add a line",
          ND_DTYPE_COUNT, (int)(sizeof facts / sizeof *facts));
    for (int i = 0; i < ND_DTYPE_COUNT && i < (int)(sizeof facts / sizeof *facts); ++i) {
        const nd_dtype t = (nd_dtype)i;
        const fact *f = &facts[i];
        nd_dtype back;
        nd_error err;
        CHECK(strcmp(nd_dtype_name(t), f->name) == 0 && nd_dtype_size(t) == f->bytes &&
                  nd_dtype_floating(t) == f->floating && nd_dtype_stored_floating(t) == f->stored_floating &&
                  strcmp(nd_dtype_ctype(t), f->ctype) == 0,
              "dtype %d: %s %d bytes in %s, want %s %d bytes in %s", i, nd_dtype_name(t), nd_dtype_size(t),
              nd_dtype_ctype(t), f->name, f->bytes, f->ctype);
        CHECK(nd_parse_dtype("dtype", f->name, &back, &err) == 0 && back == t, "%s does not parse back", f->name);
        CHECK(f->floating ? nd_dtype_tolerance(t) > 0 : nd_dtype_tolerance(t) == 0, "%s: tolerance %g", f->name,
              nd_dtype_tolerance(t));
        uint8_t one[8] = {0}, want[8] = {0};
        nd_dtype_one(t, one);
        if (f->floating) {
            CHECK(ndref_dtype_load_f32(t, one, 0) == 1.0f, "%s: the element one loads as %g", f->name,
                  (double)ndref_dtype_load_f32(t, one, 0));
            for (int k = -32; k <= 32; ++k) { /* k/4: exact in every floating dtype */
                uint8_t cell[8];
                ndref_dtype_store_f32(t, cell, 0, (float)k / 4.0f);
                CHECK(ndref_dtype_load_f32(t, cell, 0) == (float)k / 4.0f, "%s: %d/4 does not round-trip", f->name, k);
            }
        } else {
            const int32_t one32 = 1;
            const uint8_t one8 = 1;
            memcpy(want, f->bytes == 4 ? (const void *)&one32 : (const void *)&one8, (size_t)f->bytes);
            CHECK(memcmp(one, want, (size_t)f->bytes) == 0, "%s: the element one's bytes", f->name);
        }
        passed++;
    }
    f16_conversions();
    nd_dtype t;
    nd_error err;
    CHECK_ERROR(nd_parse_dtype("--dtype", "f64", &t, &err), err, ND_EINVAL, "f32, bf16, f16, i32, u8");
    passed++;
    return test_finish(passed);
}
