/* flags.c - one distribution from command-line flags; every error names its flag and value. */
#include <string.h>

#include "nd_dist.h"

const char nd_dist_flags_help[] =
    "Distribution (sizes in elements):\n"
    "  --shape D0,D1,..        tensor shape, rank 1 to 8 (required)\n"
    "  --shard D0,D1,..        shard shape, same rank as --shape (required unless --interleaved)\n"
    "  --interleaved           one page per shard, dealt round robin over every core or bank\n"
    "  --grid XxY              device core grid: X columns by Y rows (required for L1)\n"
    "  --cores RANGES          core list, e.g. '(0,0)-(1,2); (3,0)'; default: the whole grid\n"
    "  --orientation row|col   walk order inside each core range (default row)\n"
    "  --strategy round_robin|contiguous   shard assignment (default round_robin)\n"
    "  --page P0,P1,..         page box, same rank as --shape; default: a row of the shard's width\n"
    "                          (of the tensor's width when interleaved)\n"
    "  --tile HxW              tile pages over the last two dims: 32x32, 16x16, 16x32 or 32x16\n"
    "  --dtype f32|bf16|i32|u8 element type (default f32)\n"
    "  --buffer l1|dram        memory holding the shards (default l1); dram deals them over banks\n"
    "  --banks N               DRAM banks (default 12)\n"
    "  --l1-size BYTES         L1 per core, e.g. 1536K (default 1536K)\n"
    "  --dram-bank-size BYTES  bytes per DRAM bank (default 1G)\n"
    "Mesh-level sharding (instead of --shard and --strategy; the mesh covers the core list):\n"
    "  --einshard EXPR         einshard expression, e.g. 'x y -> x y*' or 'a b -> * a* b*'\n"
    "  --pspec SPEC            JAX PartitionSpec over --mesh, e.g. \"P('dp', None)\" or \"P(None, unreduced={'tp'})\"\n"
    "  --placements LIST       DTensor placements over --mesh, e.g. '[Shard(0), Replicate()]' or '[Partial(sum)]'\n"
    "  --mesh AXES             the mesh of --pspec or --placements: 'dp=2,tp=4' or '2,4'\n"
    "  --even                  a split that does not divide its dim is an error, not a short last shard\n"
    "                          (the default for --einshard and --pspec, as JAX requires)\n"
    "  --uneven                allow a short last shard for --einshard and --pspec too\n"
    "A mesh-level sharding is about devices: its L1 capacity is checked only when --l1-size is given.\n";

const char *const nd_dist_flag_names[] = {
    "shape", "shard", "grid", "page", "tile", "orientation", "strategy", "dtype", "cores", "buffer", "banks",
    "l1-size", "dram-bank-size", "interleaved", "einshard", "pspec", "placements", "mesh", "even", "uneven", NULL,
};

int nd_dist_flag_index(const char *name)
{
    for (int i = 0; nd_dist_flag_names[i]; ++i)
        if (strcmp(nd_dist_flag_names[i], name) == 0)
            return i;
    return -1;
}

void nd_dist_flags_set(nd_dist_flags *f, int which, const char *value)
{
    const char **slot[] = {&f->shape, &f->shard, &f->grid, &f->page, &f->tile, &f->orientation, &f->strategy,
                           &f->dtype, &f->cores, &f->buffer, &f->banks, &f->l1_size, &f->dram_bank_size, NULL,
                           &f->einshard, &f->pspec, &f->placements, &f->mesh};
    if (which == ND_DIST_FLAG_INTERLEAVED)
        f->interleaved = true;
    else if (which == ND_DIST_FLAG_EVEN)
        f->even = true;
    else if (which == ND_DIST_FLAG_UNEVEN)
        f->uneven = true;
    else
        *slot[which] = value;
}

static int rank_matches(const char *flag, const char *text, int rank, const nd_dist_spec *s, const char *shape,
                        nd_error *err)
{
    if (rank == s->rank)
        return 0;
    return nd_fail(err, "%s %s: rank %d does not match the rank %d of --shape %s", flag, text, rank, s->rank,
                   shape);
}

static int page_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    if (f->page && f->tile)
        return nd_fail(err, "--page %s: give either --page or --tile, not both", f->page);
    if (f->tile) {
        s->page_kind = ND_PAGE_TILE;
        return nd_parse_tile("--tile", f->tile, &s->tile_h, &s->tile_w, err);
    }
    if (f->page) {
        s->page_kind = ND_PAGE_BOX;
        if (nd_parse_dims("--page", f->page, s->page, &s->page_rank, err))
            return -1;
        return rank_matches("--page", f->page, s->page_rank, s, f->shape, err);
    }
    s->page_kind = ND_PAGE_ROW;
    return 0;
}

static int shard_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    s->interleaved = f->interleaved;
    if (f->interleaved && f->shard)
        return nd_fail(err, "--shard %s: an interleaved tensor has one page per shard; drop --shard or --interleaved",
                       f->shard);
    if (f->interleaved)
        return 0;
    if (!f->shard)
        return nd_fail(err, "--shard: required unless --interleaved");
    if (nd_parse_dims("--shard", f->shard, s->shard, &s->shard_rank, err))
        return -1;
    return rank_matches("--shard", f->shard, s->shard_rank, s, f->shape, err);
}

static int enum_flags(const nd_dist_flags *f, nd_dist_spec *s, nd_error *err)
{
    if (f->dtype && nd_parse_dtype("--dtype", f->dtype, &s->dtype, err))
        return -1;
    if (f->orientation && nd_parse_orientation("--orientation", f->orientation, &s->cores.orientation, err))
        return -1;
    if (f->strategy && nd_parse_strategy("--strategy", f->strategy, &s->strategy, err))
        return -1;
    if (f->buffer && nd_parse_buffer("--buffer", f->buffer, &s->buffer, err))
        return -1;
    return 0;
}

/* The grid the core list lives in: cores for L1, banks for DRAM. */
static int grid_flags(const nd_dist_flags *f, nd_dist_spec *s, int *gx, int *gy, nd_error *err)
{
    if (s->buffer == ND_DRAM) {
        int64_t banks = ND_DEFAULT_DRAM_BANKS;
        if (f->banks && nd_parse_size("--banks", f->banks, &banks, err))
            return -1;
        if (banks > ND_MAX_GRID)
            return nd_fail(err, "--banks %s: at most %d banks", f->banks, ND_MAX_GRID);
        *gx = (int)banks;
        *gy = 1;
    } else if (!f->grid) {
        return nd_fail(err, "--grid: required for an L1 tensor, such as --grid 2x3");
    } else if (nd_parse_grid("--grid", f->grid, gx, gy, err)) {
        return -1;
    }
    if (f->cores && nd_parse_cores("--cores", f->cores, &s->cores, err))
        return -1;
    return 0;
}

static int capacity_flags(const nd_dist_flags *f, const nd_dist_spec *s, int64_t *capacity, nd_error *err)
{
    *capacity = s->buffer == ND_DRAM ? ND_DEFAULT_DRAM_BANK_BYTES : ND_DEFAULT_L1_BYTES;
    const char *size_flag = s->buffer == ND_DRAM ? "--dram-bank-size" : "--l1-size";
    const char *size_text = s->buffer == ND_DRAM ? f->dram_bank_size : f->l1_size;
    return size_text ? nd_parse_size(size_flag, size_text, capacity, err) : 0;
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
        return nd_fail(err, "--%s: goes with --einshard, --pspec or --placements",
                       f->mesh ? "mesh" : f->even ? "even" : "uneven");
    nd_dist_spec_init(&s);
    if (!f->shape)
        return nd_fail(err, "--shape: required, such as --shape 3,7,5");
    if (nd_parse_dims("--shape", f->shape, s.shape, &s.rank, err) || enum_flags(f, &s, err) ||
        shard_flags(f, &s, err) || page_flags(f, &s, err) || grid_flags(f, &s, &gx, &gy, err) ||
        capacity_flags(f, &s, &capacity, err) || nd_dist_make(&s, gx, gy, out, err))
        return -1;
    return nd_dist_check_fit(out, capacity, err);
}

/* ---------------------------------------------------------------- mesh-level notations */

/* Exactly one notation, with --mesh where it needs one, and none of the flags it replaces. */
static int notation_flags(const nd_dist_flags *f, nd_error *err)
{
    if (!!f->einshard + !!f->pspec + !!f->placements > 1)
        return nd_fail(err, "--einshard, --pspec, --placements: give one of them");
    if (f->shard || f->strategy || f->interleaved)
        return nd_fail(err, "--%s: a mesh-level sharding sets the shard and the strategy; drop it",
                       f->shard ? "shard" : f->strategy ? "strategy" : "interleaved");
    if (f->einshard && f->mesh)
        return nd_fail(err, "--mesh %s: an einshard expression states its own mesh; drop --mesh", f->mesh);
    if (!f->einshard && !f->mesh)
        return nd_fail(err, "--mesh: required with --%s, such as --mesh dp=2,tp=4", f->pspec ? "pspec" : "placements");
    if (f->even && f->uneven)
        return nd_fail(err, "--even, --uneven: give one of them");
    return 0;
}

int nd_sharding_from_flags(const nd_dist_flags *f, nd_sharding *sh, nd_dist *out, nd_error *err)
{
    nd_dist_spec s;
    int gx = 0, gy = 0;
    int64_t capacity;
    nd_dist_spec_init(&s);
    if (!f->shape)
        return nd_fail(err, "--shape: required, such as --shape 3,7,5");
    if (notation_flags(f, err) || nd_parse_dims("--shape", f->shape, s.shape, &s.rank, err) ||
        enum_flags(f, &s, err) || page_flags(f, &s, err) || grid_flags(f, &s, &gx, &gy, err) ||
        capacity_flags(f, &s, &capacity, err))
        return -1;
    int64_t devices = s.cores.nranges ? nd_core_set_count(&s.cores) : (int64_t)gx * gy;
    nd_split_rule rule = f->even ? ND_SPLIT_EVEN : f->uneven ? ND_SPLIT_UNEVEN : ND_SPLIT_NOTATION;
    if (nd_sharding_parse(f->einshard, f->pspec, f->placements, f->mesh, s.rank, devices, sh, err) ||
        nd_sharding_dist(sh, &s, gx, gy, rule, out, err))
        return -1;
    /* A mesh is of devices, whose memory the notations do not state: capacity only when asked. */
    return f->l1_size ? nd_dist_check_fit(out, capacity, err) : 0;
}
