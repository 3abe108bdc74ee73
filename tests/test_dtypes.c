/*
 * test_dtypes.c - the dtype table (ND_DTYPES in nd_dist/model.h) against facts written out here
 * independently: each dtype's name, size and storage, its name parsed back, the element one as C writes
 * it, floating values k/4 in [-8, 8] stored and loaded back exactly, and integers exact. A dtype added
 * to the table without a line here fails the count.
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
    {"i32", 4, false, false, "int32_t"},
    {"u8", 1, false, false, "uint8_t"},
};

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
    nd_dtype t;
    nd_error err;
    CHECK_ERROR(nd_parse_dtype("--dtype", "f16", &t, &err), err, ND_EINVAL, "f32, bf16, i32, u8");
    passed++;
    return test_finish(passed);
}
