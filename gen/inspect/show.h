/*
 * show.h - ndgen show's renderers (show_text.c, show_svg.c, show_mesh.c). Work is bounded by what is
 * asked: per-core counts come from closed forms (nd_layout_core_shards, nd_layout_data_pages), and a
 * list longer than NDG_SHOW_LIMIT entries (pages, shards, cores, a copy's cores) is summarized, unless
 * --all asks for every entry however long that takes.
 */
#ifndef NDG_SHOW_H
#define NDG_SHOW_H

#include "ndgen.h"

enum {
    NDG_SHOW_LIMIT = 100000,  /* JSON lists and SVG pages past this are left out without --all */
    NDG_SHOW_TEXT_LINES = 64, /* text lists cores and copies one a line up to this */
};

typedef struct ndg_show {
    const nd_dist *d;
    int64_t *data_pages;                  /* [layout.ncores]: pages holding data, per core */
    int64_t min_shards, max_shards;       /* over the cores of one copy */
    int64_t min_data, max_data, idle;     /* data pages; idle: cores holding no shard */
    bool all;                             /* --all */
    bool capacity_checked;                /* the tensor was checked to fit its memory (a mesh-level
                                             sharding only with --l1-size: it is about devices) */
} ndg_show;

/* Whether a list of n entries is written whole. */
static inline bool ndg_show_whole(const ndg_show *v, int64_t n) { return v->all || n <= NDG_SHOW_LIMIT; }

void ndg_render_text(FILE *fp, const ndg_show *v);
void ndg_render_json(FILE *fp, const ndg_show *v);
/* caption: a line under the title, or NULL. Refuses more than it can draw unless v->all. */
int ndg_render_svg(FILE *fp, const ndg_show *v, const char *caption, nd_error *err);
void ndg_render_sharding_text(FILE *fp, const nd_sharding *sh, const ndg_show *v);
void ndg_render_sharding_json(FILE *fp, const nd_sharding *sh, const ndg_show *v);

#endif
