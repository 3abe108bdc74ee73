/*
 * show_svg.c - ndgen show --format svg: the tensor drawn page by page, each page coloured by the
 * core that holds it and each shard outlined, beside every core's stack of shard slots.
 *
 * Rank >= 3 tensors are drawn as panels over their last two dims, one panel per index of the leading
 * dims; geometry is in elements, so a row page is a wide strip and a tile a square.
 */
#include <inttypes.h>

#include "show.h"

enum {
    MAX_PAGES = 20000, MAX_PANELS = 256, MAX_CORES = 512,
    MARGIN = 20, TITLE_H = 40, LABEL_H = 16, PANEL_GAP = 16, TENSOR_W = 640,
    SLOT_W = 96, SLOT_H = 22, CORE_GAP = 10, CORES_PER_ROW = 8,
};

typedef struct svg_geom {
    int rank;
    int64_t rows, cols;  /* elements of one panel */
    int64_t panels;      /* product of the leading dims */
    double unit;         /* pixels per element */
    int64_t per_row;     /* panels per row of panels */
    double panel_w, panel_h;
    double tensor_h;     /* height of the panel area */
} svg_geom;

static void core_colour(char *buf, size_t n, int64_t core)
{
    snprintf(buf, n, "hsl(%d,62%%,%d%%)", (int)(core * 137.508) % 360, 58 + (int)(core % 3) * 8);
}

static svg_geom geometry(const nd_dist *d)
{
    const nd_dist_spec *s = &d->spec;
    svg_geom g = {.rank = s->rank};
    g.rows = s->rank >= 2 ? s->shape[s->rank - 2] : 1;
    g.cols = s->shape[s->rank - 1];
    g.panels = 1;
    for (int i = 0; i + 2 < s->rank; ++i)
        g.panels *= s->shape[i];
    int64_t longest = g.cols > g.rows ? g.cols : g.rows;
    g.unit = (double)TENSOR_W / 2 / (double)longest;
    g.unit = g.unit > 28 ? 28 : g.unit < 1 ? 1 : g.unit;
    g.panel_w = (double)g.cols * g.unit;
    g.panel_h = (double)g.rows * g.unit;
    g.per_row = (int64_t)(TENSOR_W / (g.panel_w + PANEL_GAP));
    g.per_row = g.per_row < 1 ? 1 : g.per_row > g.panels ? g.panels : g.per_row;
    int64_t panel_rows = (g.panels + g.per_row - 1) / g.per_row;
    g.tensor_h = (double)panel_rows * (g.panel_h + LABEL_H + PANEL_GAP);
    return g;
}

/* Top-left corner of panel k. */
static void panel_origin(const svg_geom *g, int64_t k, double *x, double *y)
{
    *x = MARGIN + (double)(k % g->per_row) * (g->panel_w + PANEL_GAP);
    *y = MARGIN + TITLE_H + (double)(k / g->per_row) * (g->panel_h + LABEL_H + PANEL_GAP) + LABEL_H;
}

/* The box [lo, hi) of elements covered by a page or shard of the given extent at page coordinate c. */
static void elem_box(const nd_dist *d, const int64_t *c, const int64_t *extent, int64_t *lo, int64_t *hi)
{
    for (int i = 0; i < d->spec.rank; ++i) {
        lo[i] = c[i] * extent[i];
        hi[i] = lo[i] + extent[i] < d->spec.shape[i] ? lo[i] + extent[i] : d->spec.shape[i];
    }
}

/* Draws the box's rectangle in every panel it covers. */
static void draw_box(FILE *fp, const nd_dist *d, const svg_geom *g, const int64_t *lo, const int64_t *hi,
                     const char *style, const char *label)
{
    int r = d->spec.rank, lead = r > 2 ? r - 2 : 0;
    int64_t idx[ND_MAX_RANK];
    for (int i = 0; i < lead; ++i)
        idx[i] = lo[i];
    for (;;) {
        int64_t k = 0;
        for (int i = 0; i < lead; ++i)
            k = k * d->spec.shape[i] + idx[i];
        double px, py;
        panel_origin(g, k, &px, &py);
        int64_t y0 = r >= 2 ? lo[r - 2] : 0, y1 = r >= 2 ? hi[r - 2] : 1;
        fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" %s/>\n",
                px + (double)lo[r - 1] * g->unit, py + (double)y0 * g->unit,
                (double)(hi[r - 1] - lo[r - 1]) * g->unit, (double)(y1 - y0) * g->unit, style);
        if (label && (double)(hi[r - 1] - lo[r - 1]) * g->unit >= 20 && (double)(y1 - y0) * g->unit >= 12)
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" class=\"slot\">%s</text>\n",
                    px + (double)lo[r - 1] * g->unit + 3, py + (double)y0 * g->unit + 11, label);
        int i = lead - 1; /* next panel the box covers: odometer over the leading dims */
        while (i >= 0 && ++idx[i] == hi[i]) {
            idx[i] = lo[i];
            --i;
        }
        if (i < 0)
            break;
    }
}

static void draw_tensor(FILE *fp, const nd_dist *d, const svg_geom *g)
{
    const nd_layout *l = &d->layout;
    int64_t c[ND_MAX_RANK], lo[ND_MAX_RANK], hi[ND_MAX_RANK];
    char style[128], colour[48], label[24];
    for (int64_t k = 0; k < g->panels; ++k) {
        double px, py;
        panel_origin(g, k, &px, &py);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" class=\"label\">[", px, py - 4);
        int64_t rem = k, idx[ND_MAX_RANK];
        for (int i = g->rank - 3; i >= 0; --i) {
            idx[i] = rem % d->spec.shape[i];
            rem /= d->spec.shape[i];
        }
        for (int i = 0; i < g->rank - 2; ++i)
            fprintf(fp, "%" PRId64 ",", idx[i]);
        fputs(g->rank >= 2 ? ":,:]</text>\n" : ":]</text>\n", fp);
    }
    for (int64_t p = 0; p < l->num_pages; ++p) {
        nd_dist_page_coord(d, p, c);
        elem_box(d, c, d->spec.page, lo, hi);
        core_colour(colour, sizeof colour, nd_layout_locate(l, c).core);
        snprintf(style, sizeof style, "fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.5\"", colour);
        draw_box(fp, d, g, lo, hi, style, NULL);
    }
    for (int64_t s = 0; s < l->num_shards; ++s) {
        nd_dist_shard_origin(d, s, c);
        for (int i = 0; i < d->spec.rank; ++i)
            c[i] /= l->shard[i];
        elem_box(d, c, d->spec.shard, lo, hi);
        snprintf(label, sizeof label, "%" PRId64, s);
        draw_box(fp, d, g, lo, hi, "fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"", label);
    }
}

static void draw_cores(FILE *fp, const nd_dist *d, double x0, double y0)
{
    const nd_layout *l = &d->layout;
    char colour[48];
    double col_h = LABEL_H + (double)l->shards_per_core * SLOT_H + CORE_GAP * 2;
    for (int64_t i = 0; i < l->ncores; ++i) {
        double x = x0 + (double)(i % CORES_PER_ROW) * (SLOT_W + CORE_GAP);
        double y = y0 + (double)(i / CORES_PER_ROW) * col_h;
        nd_core core = nd_dist_core(d, i);
        int64_t n = nd_layout_core_shards(l, i);
        core_colour(colour, sizeof colour, i);
        fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" class=\"label\">core %" PRId64 " (%d,%d)</text>\n", x,
                y + LABEL_H - 4, i, core.x, core.y);
        for (int64_t k = 0; k < l->shards_per_core; ++k) {
            double sy = y + LABEL_H + (double)k * SLOT_H;
            if (k < n)
                fprintf(fp,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#222\"/>\n"
                        "<text x=\"%.1f\" y=\"%.1f\" class=\"slot\">shard %" PRId64 "</text>\n",
                        x, sy, SLOT_W, SLOT_H, colour, x + 6, sy + SLOT_H - 7, nd_layout_core_shard(l, i, k));
            else
                fprintf(fp,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\" "
                        "stroke-dasharray=\"3,3\"/>\n",
                        x, sy, SLOT_W, SLOT_H);
        }
    }
}

int ndg_render_svg(FILE *fp, const ndg_show *v, const char *caption, nd_error *err)
{
    const nd_dist *d = v->d;
    const nd_layout *l = &d->layout;
    svg_geom g = geometry(d);
    if (!v->all && (l->num_pages > MAX_PAGES || g.panels > MAX_PANELS || l->ncores > MAX_CORES))
        return nd_fail(err, "--format svg: %" PRId64 " pages in %" PRId64 " panels on %" PRId64
                            " cores is too much to draw (limits %d, %d, %d); use text or json, or --all",
                       l->num_pages, g.panels, l->ncores, MAX_PAGES, MAX_PANELS, MAX_CORES);
    double tensor_w = (double)g.per_row * (g.panel_w + PANEL_GAP);
    double cores_x = MARGIN + (tensor_w > 200 ? tensor_w : 200) + 2 * PANEL_GAP;
    int64_t core_rows = (l->ncores + CORES_PER_ROW - 1) / CORES_PER_ROW;
    int64_t core_cols = l->ncores < CORES_PER_ROW ? l->ncores : CORES_PER_ROW;
    double cores_h = (double)core_rows * (LABEL_H + (double)l->shards_per_core * SLOT_H + CORE_GAP * 2);
    double w = cores_x + (double)core_cols * (SLOT_W + CORE_GAP) + MARGIN;
    double h = MARGIN + TITLE_H + (g.tensor_h > cores_h ? g.tensor_h : cores_h) + MARGIN;
    char shape[128], shard[128];
    for (int i = 0, n = 0, m = 0; i < d->spec.rank; ++i) {
        n += snprintf(shape + n, sizeof shape - (size_t)n, i ? ",%" PRId64 : "%" PRId64, d->spec.shape[i]);
        m += snprintf(shard + m, sizeof shard - (size_t)m, i ? ",%" PRId64 : "%" PRId64, d->spec.shard[i]);
    }
    fprintf(fp,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
            "<style>text{font-family:monospace;fill:#222}.label{font-size:11px}.slot{font-size:10px}"
            ".title{font-size:14px;font-weight:bold}</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
            "<text x=\"%d\" y=\"%d\" class=\"title\">tensor [%s], shard [%s], %" PRId64 " shards on %" PRId64
            " cores, %s</text>\n"
            "<text x=\"%.1f\" y=\"%d\" class=\"label\">each core's buffer, slot by slot</text>\n",
            w, h, w, h, MARGIN, MARGIN + 14, shape, shard, l->num_shards, l->ncores,
            nd_strategy_name(d->spec.strategy), cores_x, MARGIN + 34);
    if (caption) {
        fprintf(fp, "<text x=\"%d\" y=\"%d\" class=\"label\">", MARGIN, MARGIN + 30);
        for (const char *c = caption; *c; ++c) /* escape for XML */
            fputs(*c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : (char[2]){*c, 0}, fp);
        fputs("</text>\n", fp);
    }
    draw_tensor(fp, d, &g);
    draw_cores(fp, d, cores_x, MARGIN + TITLE_H);
    fputs("</svg>\n", fp);
    return 0;
}
