/* flags.c - one distribution from the fields a command line or a spec states (ND_DIST_FLAGS); every
 * error names its flag (or spec key) and value. */
#include <stdio.h>
#include <string.h>

#include "nd_dist.h"

#define ND_DIST_FLAG_HELP(field, flag, kind, before, help) before "  --" flag help "\n"
const char nd_dist_flags_help[] =
    ND_DIST_FLAGS(ND_DIST_FLAG_HELP)
    "A mesh-level sharding is about devices: its L1 capacity is checked only when --l1-size is given.\n";

#define ND_DIST_FLAG_NAME(field, flag, kind, before, help) flag,
const char *const nd_dist_flag_names[] = {ND_DIST_FLAGS(ND_DIST_FLAG_NAME) NULL};
#define ND_DIST_FLAG_FIELD(field, flag, kind, before, help) #field,
const char *const nd_dist_flag_fields[] = {ND_DIST_FLAGS(ND_DIST_FLAG_FIELD) NULL};

bool nd_dist_flag_is_switch(int which)
{
#define ND_DIST_FLAG_IS_TEXT false
#define ND_DIST_FLAG_IS_SWITCH true
#define ND_DIST_FLAG_SWITCH(field, flag, kind, before, help) [ND_DIST_FLAG_##field] = ND_DIST_FLAG_IS_##kind,
    static const bool is_switch[ND_DIST_FLAG_COUNT] = {ND_DIST_FLAGS(ND_DIST_FLAG_SWITCH)};
    return which >= 0 && which < ND_DIST_FLAG_COUNT && is_switch[which];
}

static int index_in(const char *const *names, const char *name)
{
    for (int i = 0; names[i]; ++i)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int nd_dist_flag_index(const char *name) { return index_in(nd_dist_flag_names, name); }
int nd_dist_flag_field_index(const char *field) { return index_in(nd_dist_flag_fields, field); }

#define ND_DIST_FLAG_SET_TEXT(field) f->field = value
#define ND_DIST_FLAG_SET_SWITCH(field) f->field = true
#define ND_DIST_FLAG_SET(field, flag, kind, before, help) \
    case ND_DIST_FLAG_##field:                              \
        ND_DIST_FLAG_SET_##kind(field);                     \
        break;

void nd_dist_flags_set(nd_dist_flags *f, int which, const char *value)
{
    switch (which) {
        ND_DIST_FLAGS(ND_DIST_FLAG_SET)
    default:
        break;
    }
}

#define ND_DIST_FLAG_TAKE_TEXT(field) to->field = gives->field ? gives->field : to->field;
#define ND_DIST_FLAG_TAKE_SWITCH(field) to->field = to->field || gives->field;
#define ND_DIST_FLAG_TAKE(field, flag, kind, before, help) ND_DIST_FLAG_TAKE_##kind(field)

void nd_dist_flags_overlay(nd_dist_flags *to, const nd_dist_flags *gives)
{
    const nd_dist_flags shared = *to;
    ND_DIST_FLAGS(ND_DIST_FLAG_TAKE)
    const nd_dist_flags *notation = nd_dist_flags_sharded(gives) ? gives : &shared; /* one, never a mix */
    to->einshard = notation->einshard;
    to->pspec = notation->pspec;
    to->placements = notation->placements;
}

/* ---------------------------------------------------------------- names in messages */

/* A field as its messages name it: "--l1-size" on a command line, "l1_size" in a spec. */
typedef struct flag_name {
    char text[40];
} flag_name;

static flag_name name_of(const nd_dist_flags *f, int which)
{
    flag_name n;
    if (f->spec_keys)
        snprintf(n.text, sizeof n.text, "%s", nd_dist_flag_fields[which]);
    else
        snprintf(n.text, sizeof n.text, "--%s", nd_dist_flag_names[which]);
    return n;
}

#define NAME(f, field) name_of(f, ND_DIST_FLAG_##field).text

/* ---------------------------------------------------------------- fields to a distribution */

static int rank_matches(const nd_dist_flags *f, int which, const char *text, int rank, const nd_dist_spec *s,
                        nd_error *err)
{
    if (rank == s->rank)
        return 0;
    return nd_fail(err, "%s %s: rank %d does not match the rank %d of %s %s", name_of(f, which).text, text, rank,
                   s->rank, NAME(f, shape), f->shape);
}

static int page_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    if (f->page && f->tile)
        return nd_fail(err, "%s %s: give either %s or %s, not both", NAME(f, page), f->page, NAME(f, page),
                       NAME(f, tile));
    if (f->tile) {
        s->page_kind = ND_PAGE_TILE;
        return nd_parse_tile(NAME(f, tile), f->tile, &s->tile_h, &s->tile_w, err);
    }
    if (f->page) {
        s->page_kind = ND_PAGE_BOX;
        if (nd_parse_dims(NAME(f, page), f->page, s->page, &s->page_rank, err))
            return -1;
        return rank_matches(f, ND_DIST_FLAG_page, f->page, s->page_rank, s, err);
    }
    s->page_kind = ND_PAGE_ROW;
    return 0;
}

static int shard_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    s->interleaved = f->interleaved;
    if (f->interleaved && f->shard)
        return nd_fail(err, "%s %s: an interleaved tensor has one page per shard; drop %s or %s", NAME(f, shard),
                       f->shard, NAME(f, shard), NAME(f, interleaved));
    if (f->interleaved)
        return 0;
    if (!f->shard)
        return nd_fail(err, "%s: required unless %s", NAME(f, shard), NAME(f, interleaved));
    if (nd_parse_dims(NAME(f, shard), f->shard, s->shard, &s->shard_rank, err))
        return -1;
    return rank_matches(f, ND_DIST_FLAG_shard, f->shard, s->shard_rank, s, err);
}

static int enum_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    if (f->dtype && nd_parse_dtype(NAME(f, dtype), f->dtype, &s->dtype, err))
        return -1;
    if (f->orientation && nd_parse_orientation(NAME(f, orientation), f->orientation, &s->cores.orientation, err))
        return -1;
    if (f->strategy && nd_parse_strategy(NAME(f, strategy), f->strategy, &s->strategy, err))
        return -1;
    if (f->buffer && nd_parse_buffer(NAME(f, buffer), f->buffer, &s->buffer, err))
        return -1;
    return 0;
}

/* The grid the core list lives in: cores for L1, banks for DRAM. */
static int grid_flags(const nd_dist_flags *f, nd_dist_spec *s, int *gx, int *gy, nd_error *err)
{
    if (s->buffer == ND_DRAM) {
        int64_t banks = ND_DEFAULT_DRAM_BANKS;
        if (f->banks && nd_parse_size(NAME(f, banks), f->banks, &banks, err))
            return -1;
        if (banks > ND_MAX_GRID)
            return nd_fail(err, "%s %s: at most %d banks", NAME(f, banks), f->banks, ND_MAX_GRID);
        *gx = (int)banks;
        *gy = 1;
    } else if (!f->grid) {
        return nd_fail(err, "%s: required for an L1 tensor, such as %s 2x3", NAME(f, grid), NAME(f, grid));
    } else if (nd_parse_grid(NAME(f, grid), f->grid, gx, gy, err)) {
        return -1;
    }
    if (f->cores && nd_parse_cores(NAME(f, cores), f->cores, &s->cores, err))
        return -1;
    return 0;
}

static int capacity_flags(const nd_dist_flags *f, const nd_dist_spec *s, int64_t *capacity, nd_error *err)
{
    bool dram = s->buffer == ND_DRAM;
    const char *text = dram ? f->dram_bank_size : f->l1_size;
    *capacity = dram ? ND_DEFAULT_DRAM_BANK_BYTES : ND_DEFAULT_L1_BYTES;
    return text ? nd_parse_size(dram ? NAME(f, dram_bank_size) : NAME(f, l1_size), text, capacity, err) : 0;
}

static int shape_flag(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    if (!f->shape)
        return nd_fail(err, "%s: required, such as %s 3,7,5", NAME(f, shape), NAME(f, shape));
    return nd_parse_dims(NAME(f, shape), f->shape, s->shape, &s->rank, err);
}

bool nd_dist_flags_sharded(const nd_dist_flags *f) { return f->einshard || f->pspec || f->placements; }

int nd_dist_from_flags(const nd_dist_flags *f, nd_dist *out, nd_error *err)
{
    nd_dist_spec s;
    int gx = 0, gy = 0;
    int64_t capacity;
    if (nd_dist_flags_sharded(f)) {
        nd_sharding sh;
        return nd_sharding_from_flags(f, &sh, out, err);
    }
    if (f->mesh || f->even || f->uneven)
        return nd_fail(err, "%s: goes with %s, %s or %s", f->mesh ? NAME(f, mesh) : f->even ? NAME(f, even) : NAME(f, uneven),
                       NAME(f, einshard), NAME(f, pspec), NAME(f, placements));
    nd_dist_spec_init(&s);
    if (shape_flag(f, &s, err) || enum_flags(f, &s, err) || shard_flags(f, &s, err) || page_flags(f, &s, err) ||
        grid_flags(f, &s, &gx, &gy, err) || capacity_flags(f, &s, &capacity, err) || nd_dist_make(&s, gx, gy, out, err))
        return -1;
    return nd_dist_check_fit(out, capacity, err);
}

/* ---------------------------------------------------------------- mesh-level notations */

/* Exactly one notation, with a mesh where it needs one, and none of the fields it replaces. */
static int notation_flags(const nd_dist_flags *f, nd_error *err)
{
    if (!!f->einshard + !!f->pspec + !!f->placements > 1)
        return nd_fail(err, "%s, %s, %s: give one of them", NAME(f, einshard), NAME(f, pspec), NAME(f, placements));
    if (f->shard || f->strategy || f->interleaved)
        return nd_fail(err, "%s: a mesh-level sharding sets the shard and the strategy; drop it",
                       f->shard ? NAME(f, shard) : f->strategy ? NAME(f, strategy) : NAME(f, interleaved));
    if (f->einshard && f->mesh)
        return nd_fail(err, "%s %s: an einshard expression states its own mesh; drop %s", NAME(f, mesh), f->mesh,
                       NAME(f, mesh));
    if (!f->einshard && !f->mesh)
        return nd_fail(err, "%s: required with %s, such as %s dp=2,tp=4", NAME(f, mesh),
                       f->pspec ? NAME(f, pspec) : NAME(f, placements), NAME(f, mesh));
    if (f->even && f->uneven)
        return nd_fail(err, "%s, %s: give one of them", NAME(f, even), NAME(f, uneven));
    return 0;
}

int nd_sharding_from_flags(const nd_dist_flags *f, nd_sharding *sh, nd_dist *out, nd_error *err)
{
    nd_dist_spec s;
    int gx = 0, gy = 0;
    int64_t capacity;
    nd_dist_spec_init(&s);
    if (shape_flag(f, &s, err) || notation_flags(f, err) || enum_flags(f, &s, err) || page_flags(f, &s, err) ||
        grid_flags(f, &s, &gx, &gy, err) || capacity_flags(f, &s, &capacity, err))
        return -1;
    int64_t devices = s.cores.nranges ? nd_core_set_count(&s.cores) : (int64_t)gx * gy;
    nd_split_rule rule = f->even ? ND_SPLIT_EVEN : f->uneven ? ND_SPLIT_UNEVEN : ND_SPLIT_NOTATION;
    if (nd_sharding_parse(f->einshard, f->pspec, f->placements, f->mesh, s.rank, devices, sh, err) ||
        nd_sharding_dist(sh, &s, gx, gy, rule, out, err))
        return -1;
    /* A mesh is of devices, whose memory the notations do not state: capacity only when asked. */
    return f->l1_size ? nd_dist_check_fit(out, capacity, err) : 0;
}
