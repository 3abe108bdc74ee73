/* show_text.c - ndgen show's text and JSON renderers of one distribution: its spec, shard map, cores,
 * shards and pages, each list cut at NDG_SHOW_LIMIT entries unless --all. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "show.h"

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

/* Core holding shard s. */
static int64_t shard_core(const nd_dist *d, int64_t s) { return nd_layout_place(&d->layout, s, 0).core; }

/* ---------------------------------------------------------------- text */

static void text_header(FILE *fp, const ndg_show *v)
{
    const nd_dist *d = v->d;
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
    fprintf(fp, "holding   %" PRId64 " to %" PRId64 " shards and %" PRId64 " to %" PRId64 " data pages per core; %" PRId64
            " of %" PRId64 " cores hold no shard\n", v->min_shards, v->max_shards, v->min_data, v->max_data, v->idle,
            l->ncores);
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
static void text_shard_map(FILE *fp, const nd_dist *d, bool all)
{
    const nd_layout *l = &d->layout;
    if (l->num_shards > MAP_MAX_SHARDS && !all) {
        fprintf(fp, "\nshard map: %" PRId64 " shards, more than %d: --all prints it\n", l->num_shards,
                MAP_MAX_SHARDS);
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

static void text_core(FILE *fp, const ndg_show *v, int64_t i)
{
    const nd_layout *l = &v->d->layout;
    nd_core c = nd_dist_core(v->d, i);
    int64_t n = nd_layout_core_shards(l, i);
    fprintf(fp, "  %" PRId64 " (%d,%d): %" PRId64 " shard%s", i, c.x, c.y, n, n == 1 ? "" : "s");
    for (int64_t k = 0; k < n && k < LIST_MAX_SHARDS; ++k)
        fprintf(fp, "%s%" PRId64, k ? " " : " [", nd_layout_core_shard(l, i, k));
    fputs(n > LIST_MAX_SHARDS ? " ...]" : n ? "]" : "", fp);
    fprintf(fp, "; %" PRId64 " of %" PRId64 " pages\n", v->data_pages[i], v->d->pages_per_core);
}

static void text_cores(FILE *fp, const ndg_show *v)
{
    int64_t n = v->d->layout.ncores, listed = v->all || n <= NDG_SHOW_TEXT_LINES ? n : NDG_SHOW_TEXT_LINES;
    fputs("\ncores: index (x,y): shards in slot order; pages holding data of those reserved\n", fp);
    for (int64_t i = 0; i < listed; ++i)
        text_core(fp, v, i);
    if (listed < n)
        fprintf(fp, "  ... %" PRId64 " more cores: --all lists every core\n", n - listed);
}

void ndg_render_text(FILE *fp, const ndg_show *v)
{
    text_header(fp, v);
    text_shard_map(fp, v->d, v->all);
    text_cores(fp, v);
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

typedef void json_put(FILE *fp, const ndg_show *v, int64_t i);

enum { OMITTED_LEN = 160 }; /* the names of the lists left out */

/* "key": [put(0),..,put(n-1)], or null when the list is left out (its name then goes in omitted).
 * lines: the entries start lines of their own. */
static void json_list(FILE *fp, const ndg_show *v, const char *key, int64_t n, char *omitted, json_put *put,
                      bool lines)
{
    fprintf(fp, "  \"%s\": ", key);
    if (!ndg_show_whole(v, n)) {
        fputs("null,\n", fp);
        snprintf(omitted + strlen(omitted), OMITTED_LEN - strlen(omitted), "%s\"%s\"", *omitted ? ", " : "", key);
        return;
    }
    fputc('[', fp);
    for (int64_t i = 0; i < n; ++i)
        put(fp, v, i);
    fputs(n && lines ? "\n  ],\n" : "],\n", fp);
}

static void put_core(FILE *fp, const ndg_show *v, int64_t i)
{
    nd_core c = nd_dist_core(v->d, i);
    fprintf(fp, i ? ",[%d,%d]" : "[%d,%d]", c.x, c.y);
}

static void put_shards(FILE *fp, const ndg_show *v, int64_t i)
{
    fprintf(fp, i ? ",%" PRId64 : "%" PRId64, nd_layout_core_shards(&v->d->layout, i));
}

static void put_reserved(FILE *fp, const ndg_show *v, int64_t i)
{
    fprintf(fp, i ? ",%" PRId64 : "%" PRId64, v->d->pages_per_core);
}

static void put_data(FILE *fp, const ndg_show *v, int64_t i)
{
    fprintf(fp, i ? ",%" PRId64 : "%" PRId64, v->data_pages[i]);
}

static void put_shard(FILE *fp, const ndg_show *v, int64_t s)
{
    const nd_layout *l = &v->d->layout;
    nd_loc loc = nd_layout_place(l, s, 0);
    fprintf(fp, "%s{\"core\": %" PRId64 ", \"slot\": %" PRId64 "}", s ? ",\n    " : "\n    ", loc.core,
            loc.offset / l->shard_pages);
}

static void put_page(FILE *fp, const ndg_show *v, int64_t p)
{
    nd_loc loc = nd_layout_locate_id(&v->d->squeezed, p);
    fprintf(fp, "%s{\"core\": %" PRId64 ", \"offset\": %" PRId64 "}", p ? ",\n    " : "\n    ", loc.core, loc.offset);
}

void ndg_render_json(FILE *fp, const ndg_show *v)
{
    const nd_layout *l = &v->d->layout;
    char omitted[OMITTED_LEN] = "";
    fputs("{\n", fp);
    json_spec(fp, v->d);
    json_list(fp, v, "cores", l->ncores, omitted, put_core, false);
    json_list(fp, v, "shards_per_core", l->ncores, omitted, put_shards, false);
    json_list(fp, v, "pages_per_core", l->ncores, omitted, put_reserved, false);
    json_list(fp, v, "data_pages_per_core", l->ncores, omitted, put_data, false);
    fprintf(fp, "  \"shards_per_core_range\": [%" PRId64 ",%" PRId64 "],\n  \"data_pages_per_core_range\": [%" PRId64
            ",%" PRId64 "],\n  \"cores_without_shards\": %" PRId64 ",\n", v->min_shards, v->max_shards, v->min_data,
            v->max_data, v->idle);
    json_list(fp, v, "shards", l->num_shards, omitted, put_shard, true);
    json_list(fp, v, "pages", l->num_pages, omitted, put_page, true);
    fprintf(fp, "  \"omitted\": [%s],\n  \"limit\": ", omitted);
    v->all ? fputs("null", fp) : fprintf(fp, "%d", NDG_SHOW_LIMIT);
    fputs("\n}\n", fp);
}

/* ---------------------------------------------------------------- the subcommand */
