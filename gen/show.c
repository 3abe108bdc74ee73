/* show.c - ndgen show: a distribution as text, JSON or SVG. */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "ndgen.h"

/* ---------------------------------------------------------------- shared pieces */

static void put_dims(FILE *fp, const int64_t *d, int rank)
{
    fputc('[', fp);
    for (int i = 0; i < rank; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, d[i]);
    fputc(']', fp);
}

static const char *page_kind_name(const nd_dist_spec *s)
{
    return s->page_kind == ND_PAGE_TILE ? "tile" : s->page_kind == ND_PAGE_ROW ? "row" : "box";
}

/* Pages of core i's shards that hold tensor data (reserved pages minus padding). */
static int64_t core_real_pages(const nd_dist *d, int64_t core)
{
    int64_t n = 0, k = nd_layout_core_shards(&d->layout, core);
    for (int64_t s = 0; s < k; ++s)
        n += nd_dist_shard_real_pages(d, nd_layout_core_shard(&d->layout, core, s));
    return n;
}

/* Core holding shard s. */
static int64_t shard_core(const nd_dist *d, int64_t s) { return nd_layout_place(&d->layout, s, 0).core; }

/* ---------------------------------------------------------------- text */

static void text_header(FILE *fp, const nd_dist *d)
{
    const nd_dist_spec *s = &d->spec;
    const nd_layout *l = &d->layout;
    fputs("tensor    ", fp);
    put_dims(fp, s->shape, s->rank);
    fprintf(fp, " %s in %s, %s\n", nd_dtype_name(s->dtype), nd_buffer_name(s->buffer),
            s->interleaved ? "interleaved" : "sharded");
    fputs("page      ", fp);
    put_dims(fp, s->page, s->rank);
    fprintf(fp, " elements (%s, %" PRId64 " bytes); tensor is ", page_kind_name(s), d->page_bytes);
    put_dims(fp, l->pages, l->rank);
    fprintf(fp, " = %" PRId64 " pages\n", l->num_pages);
    fputs("shard     ", fp);
    put_dims(fp, s->shard, s->rank);
    fputs(" elements = ", fp);
    put_dims(fp, l->shard, l->rank);
    fputs(" pages; shard grid ", fp);
    put_dims(fp, l->grid, l->rank);
    fprintf(fp, " = %" PRId64 " shards\n", l->num_shards);
    fprintf(fp, "cores     %" PRId64 " in %d range(s), %s, %s\n", l->ncores, s->cores.nranges,
            nd_orientation_name(s->cores.orientation), nd_strategy_name(s->strategy));
    fprintf(fp, "per core  up to %" PRId64 " shards; %" PRId64 " pages reserved (%" PRId64 " bytes)\n",
            l->shards_per_core, d->pages_per_core, d->bytes_per_core);
    if (d->squeezed.rank != l->rank) {
        fputs("squeezed  ", fp);
        put_dims(fp, d->squeezed.pages, d->squeezed.rank);
        fputs(" pages in shards of ", fp);
        put_dims(fp, d->squeezed.shard, d->squeezed.rank);
        fputs(" (same placement, fewer dims)\n", fp);
    }
}

enum { MAP_MAX_SHARDS = 4096, LIST_MAX_SHARDS = 24 };

/* The shard grid as 2-D tables over its last two dims, one per index of the leading dims. */
static void text_shard_map(FILE *fp, const nd_dist *d)
{
    const nd_layout *l = &d->layout;
    if (l->num_shards > MAP_MAX_SHARDS) {
        fprintf(fp, "\nshard map: %" PRId64 " shards, too many to print\n", l->num_shards);
        return;
    }
    int r = l->rank;
    int64_t rows = r >= 2 ? l->grid[r - 2] : 1, cols = l->grid[r - 1], panel = rows * cols;
    int width = snprintf(NULL, 0, "%" PRId64, l->ncores - 1) + 1;
    fputs("\nshard map: the core index holding each shard of the shard grid\n", fp);
    for (int64_t base = 0; base < l->num_shards; base += panel) {
        if (r > 2) {
            fputs("  [", fp);
            for (int i = 0; i < r - 2; ++i)
                fprintf(fp, "%" PRId64 ",", base / l->grid_stride[i] % l->grid[i]);
            fputs(":,:]\n", fp);
        }
        for (int64_t y = 0; y < rows; ++y) {
            fputs("   ", fp);
            for (int64_t x = 0; x < cols; ++x)
                fprintf(fp, " %*" PRId64, width, shard_core(d, base + y * cols + x));
            fputc('\n', fp);
        }
    }
}

static void text_cores(FILE *fp, const nd_dist *d)
{
    const nd_layout *l = &d->layout;
    fputs("\ncores: index (x,y): shards in slot order; pages holding data of those reserved\n", fp);
    for (int64_t i = 0; i < l->ncores; ++i) {
        nd_core c = nd_dist_core(d, i);
        int64_t n = nd_layout_core_shards(l, i);
        fprintf(fp, "  %" PRId64 " (%d,%d): %" PRId64 " shard%s", i, c.x, c.y, n, n == 1 ? "" : "s");
        for (int64_t k = 0; k < n && k < LIST_MAX_SHARDS; ++k)
            fprintf(fp, "%s%" PRId64, k ? " " : " [", nd_layout_core_shard(l, i, k));
        fputs(n > LIST_MAX_SHARDS ? " ...]" : n ? "]" : "", fp);
        fprintf(fp, "; %" PRId64 " of %" PRId64 " pages\n", core_real_pages(d, i), d->pages_per_core);
    }
}

void ndg_show_text(FILE *fp, const nd_dist *d)
{
    text_header(fp, d);
    text_shard_map(fp, d);
    text_cores(fp, d);
}

/* ---------------------------------------------------------------- json */

static void json_dims(FILE *fp, const char *key, const int64_t *d, int rank)
{
    fprintf(fp, "  \"%s\": ", key);
    put_dims(fp, d, rank);
    fputs(",\n", fp);
}

static void json_spec(FILE *fp, const nd_dist *d)
{
    const nd_dist_spec *s = &d->spec;
    const nd_layout *l = &d->layout;
    json_dims(fp, "shape", s->shape, s->rank);
    fprintf(fp, "  \"dtype\": \"%s\",\n  \"buffer\": \"%s\",\n  \"interleaved\": %s,\n", nd_dtype_name(s->dtype),
            nd_buffer_name(s->buffer), s->interleaved ? "true" : "false");
    fprintf(fp, "  \"page_kind\": \"%s\",\n  \"page_bytes\": %" PRId64 ",\n", page_kind_name(s), d->page_bytes);
    json_dims(fp, "page", s->page, s->rank);
    json_dims(fp, "shard", s->shard, s->rank);
    json_dims(fp, "tensor_pages", l->pages, l->rank);
    json_dims(fp, "shard_pages", l->shard, l->rank);
    json_dims(fp, "shard_grid", l->grid, l->rank);
    json_dims(fp, "squeezed_tensor_pages", d->squeezed.pages, d->squeezed.rank);
    json_dims(fp, "squeezed_shard_pages", d->squeezed.shard, d->squeezed.rank);
    fprintf(fp, "  \"num_pages\": %" PRId64 ",\n  \"num_shards\": %" PRId64 ",\n", l->num_pages, l->num_shards);
    fprintf(fp, "  \"strategy\": \"%s\",\n  \"orientation\": \"%s\",\n", nd_strategy_name(s->strategy),
            nd_orientation_name(s->cores.orientation));
}

static void json_per_core(FILE *fp, const nd_dist *d)
{
    const nd_layout *l = &d->layout;
    fputs("  \"cores\": [", fp);
    for (int64_t i = 0; i < l->ncores; ++i) {
        nd_core c = nd_dist_core(d, i);
        fprintf(fp, i ? ",[%d,%d]" : "[%d,%d]", c.x, c.y);
    }
    fputs("],\n  \"shards_per_core\": [", fp);
    for (int64_t i = 0; i < l->ncores; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, nd_layout_core_shards(l, i));
    fputs("],\n  \"pages_per_core\": [", fp);
    for (int64_t i = 0; i < l->ncores; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, d->pages_per_core);
    fputs("],\n  \"data_pages_per_core\": [", fp);
    for (int64_t i = 0; i < l->ncores; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, core_real_pages(d, i));
    fputs("],\n", fp);
}

void ndg_show_json(FILE *fp, const nd_dist *d)
{
    const nd_layout *l = &d->layout;
    fputs("{\n", fp);
    json_spec(fp, d);
    json_per_core(fp, d);
    fputs("  \"shards\": [", fp);
    for (int64_t s = 0; s < l->num_shards; ++s) {
        nd_loc loc = nd_layout_place(l, s, 0);
        fprintf(fp, "%s{\"core\": %" PRId64 ", \"slot\": %" PRId64 "}", s ? ",\n    " : "\n    ", loc.core,
                loc.offset / l->shard_pages);
    }
    fputs("\n  ],\n  \"pages\": [", fp);
    for (int64_t p = 0; p < l->num_pages; ++p) {
        nd_loc loc = nd_layout_locate_id(&d->squeezed, p);
        fprintf(fp, "%s{\"core\": %" PRId64 ", \"offset\": %" PRId64 "}", p ? ",\n    " : "\n    ", loc.core,
                loc.offset);
    }
    fputs("\n  ]\n}\n", fp);
}

/* ---------------------------------------------------------------- the subcommand */

static const char show_usage[] =
    "usage: ndgen show --shape D0,.. (--shard D0,.. | --interleaved) --grid XxY [options]\n"
    "       ndgen show --shape D0,.. --einshard EXPR --grid XxY [options]\n"
    "       ndgen show --shape D0,.. (--pspec SPEC | --placements LIST) --mesh AXES --grid XxY [options]\n"
    "\n"
    "Shows where every shard and page of an ND-sharded tensor lives. For a mesh-level sharding it also\n"
    "shows the sharding in all three notations (those that can express it), the mesh, the elements per\n"
    "core, and the core group of every copy.\n"
    "\n";

static const char show_options[] =
    "\nOutput:\n"
    "  --format text|json|svg  text: header, shard map and per-core shards (default)\n"
    "                          json: the format documented in README.md\n"
    "                          svg:  the tensor coloured by core beside each core's stack of shards\n"
    "  --output FILE           write FILE (whole or not at all) instead of standard output\n"
    "  --help                  show this help\n";

enum { OPT_FORMAT = 256, OPT_OUTPUT, OPT_HELP, OPT_DIST };

/* The distribution flags, by nd_dist_flag_names (value OPT_DIST + index), then show's own. */
static void show_longopts(struct option *opts, size_t n)
{
    static const struct option own[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"help", no_argument, NULL, OPT_HELP},
    };
    size_t k = 0;
    for (int i = 0; nd_dist_flag_names[i] && k + 4 < n; ++i, ++k)
        opts[k] = (struct option){nd_dist_flag_names[i], nd_dist_flag_is_switch(i) ? no_argument : required_argument,
                                  NULL, OPT_DIST + i};
    for (size_t i = 0; i < sizeof own / sizeof *own; ++i)
        opts[k++] = own[i];
    opts[k] = (struct option){NULL, 0, NULL, 0};
}

/* sh: the mesh-level sharding d came from, or NULL. */
static int render(const char *format, const char *path, const nd_dist *d, const nd_sharding *sh, nd_error *err)
{
    ndg_output out;
    char caption[1400];
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "svg"))
        return nd_fail(err, "--format %s: unknown format; expected text, json or svg", format);
    if (ndg_output_open(&out, path, err))
        return -1;
    if (strcmp(format, "svg") == 0) {
        if (sh)
            ndg_sharding_caption(caption, sizeof caption, sh, d);
        if (ndg_show_svg(out.fp, d, sh ? caption : NULL, err)) {
            ndg_output_abort(&out);
            return -1;
        }
    } else if (strcmp(format, "json") == 0) {
        sh ? ndg_show_sharding_json(out.fp, sh, d) : ndg_show_json(out.fp, d);
    } else {
        sh ? ndg_show_sharding_text(out.fp, sh, d) : ndg_show_text(out.fp, d);
    }
    return ndg_output_commit(&out, NULL, err);
}

int ndg_show_main(int argc, char **argv)
{
    nd_dist_flags flags = {0};
    const char *format = "text", *path = NULL;
    nd_error err;
    int opt;
    opterr = 0;
    optind = 1;
    struct option longopts[32];
    show_longopts(longopts, sizeof longopts / sizeof *longopts);
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt == OPT_HELP) {
            printf("%s%s%s", show_usage, nd_dist_flags_help, show_options);
            return 0;
        } else if (opt == OPT_FORMAT) {
            format = optarg;
        } else if (opt == OPT_OUTPUT) {
            path = optarg;
        } else if (opt >= OPT_DIST) {
            nd_dist_flags_set(&flags, opt - OPT_DIST, optarg);
        } else {
            fprintf(stderr, "ndgen show: %s: unknown option or missing value; see ndgen show --help\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ndgen show: %s: unexpected argument; see ndgen show --help\n", argv[optind]);
        return 2;
    }
    nd_dist d;
    nd_sharding sh;
    bool sharded = nd_dist_flags_sharded(&flags);
    int rc = sharded ? nd_sharding_from_flags(&flags, &sh, &d, &err) : nd_dist_from_flags(&flags, &d, &err);
    if (rc || render(format, path, &d, sharded ? &sh : NULL, &err)) {
        fprintf(stderr, "ndgen show: %s\n", err.msg);
        return 1;
    }
    return 0;
}
