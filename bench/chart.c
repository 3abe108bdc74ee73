/*
 * chart.c - the suite as an SVG bar chart. Cases measure in different units (GB/s, GFLOP/s), so
 * each bar is drawn as a percentage of its case's limit measured in the same run (the best of the
 * probes of its access pattern, the plain loop and the peers: limit.c), with the absolute rate written
 * beside it. The fastest peer library has a bar of its own, named in its tooltip.
 */
#include <string.h>

#include "ndrun.h"

enum { LABEL_W = 300, PLOT_W = 520, BAR_H = 11, GAP = 14, TOP = 58 };

static const struct {
    const char *name, *color;
} series[] = {
    {"generic", "#9e9e9e"}, {"specialized", "#1f77b4"}, {"plain loop", "#ff7f0e"}, {"best peer library", "#2ca02c"},
};

static const nr_timing *timing_of(const nr_result *r, int s)
{
    int best = nr_best_peer(r);
    const nr_timing *t[] = {&r->generic, &r->specialized, &r->reference, best >= 0 ? &r->peer[best] : NULL};
    return t[s];
}

static void text_escaped(FILE *fp, const char *s)
{
    for (; *s; ++s) {
        if (*s == '<')
            fputs("&lt;", fp);
        else if (*s == '>')
            fputs("&gt;", fp);
        else if (*s == '&')
            fputs("&amp;", fp);
        else
            fputc(*s, fp);
    }
}

static int bars_of(const nr_result *r) { return nr_best_peer(r) >= 0 ? 4 : 3; }

/* A bar's rate as a percentage of the case's limit; 0 when the limit was not measured. */
static double percent_of(const nr_result *r, int s)
{
    double limit = nr_limit(r), pct = 100 * nr_rate(r, timing_of(r, s)) / limit;
    return limit > 0 && pct == pct ? pct : 0;
}

static double scale_max(const nr_result *r, int n)
{
    double top = 100;
    for (int i = 0; i < n; ++i)
        for (int s = 0; s < bars_of(&r[i]); ++s) {
            double p = percent_of(&r[i], s);
            top = p > top ? p : top;
        }
    return top > 200 ? 200 : top;
}

static void legend(FILE *fp)
{
    int x = LABEL_W;
    for (int s = 0; s < 4; ++s) {
        fprintf(fp, "<rect x='%d' y='30' width='12' height='12' fill='%s'/>", x, series[s].color);
        fprintf(fp, "<text x='%d' y='40'>%s</text>\n", x + 16, series[s].name);
        x += 30 + 8 * (int)strlen(series[s].name);
    }
}

static int one_case(FILE *fp, const nr_result *r, int y, double top)
{
    int h = bars_of(r) * BAR_H;
    fprintf(fp, "<text x='%d' y='%d' text-anchor='end'>", LABEL_W - 8, y + h / 2);
    text_escaped(fp, r->label);
    fprintf(fp, "</text>\n<text x='%d' y='%d' text-anchor='end' class='small'>", LABEL_W - 8, y + h / 2 + 12);
    text_escaped(fp, r->family);
    fprintf(fp, " · %.*s</text>\n", (int)strcspn(r->shapes, ",-"), r->shapes); /* the first operand's shape */
    for (int s = 0; s < bars_of(r); ++s) {
        double rate = nr_rate(r, timing_of(r, s)), pct = percent_of(r, s);
        double w = PLOT_W * (pct > top ? top : pct) / top;
        fprintf(fp, "<rect x='%d' y='%d' width='%.1f' height='%d' fill='%s'><title>", LABEL_W, y + s * BAR_H, w,
                BAR_H - 1, series[s].color);
        text_escaped(fp, s == 3 ? r->peer_name[nr_best_peer(r)] : series[s].name);
        fprintf(fp, ": %.2f %s, %.0f%% of ", rate, r->flops > 0 ? "GFLOP/s" : "GB/s", pct);
        text_escaped(fp, nr_limit_name(r));
        fputs("</title></rect>", fp);
        fprintf(fp, "<text x='%.1f' y='%d' class='small'>%.1f %s</text>\n", LABEL_W + w + 4, y + s * BAR_H + 9, rate,
                r->flops > 0 ? "GF/s" : "GB/s");
    }
    return h + GAP;
}

void nr_chart_svg(FILE *fp, const nr_result *r, int n)
{
    double top = scale_max(r, n);
    int height = TOP + 30;
    for (int i = 0; i < n; ++i)
        height += bars_of(&r[i]) * BAR_H + GAP;
    fprintf(fp, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif' "
                "font-size='12'>\n<style>.small{font-size:10px;fill:#444}</style>\n"
                "<rect width='100%%' height='100%%' fill='white'/>\n",
            LABEL_W + PLOT_W + 110, height);
    fprintf(fp, "<text x='8' y='18' font-size='14'>ndrun bench on %d threads: each bar is a percentage of its case's "
                "limit, measured in the same run</text>\n", n ? r[0].threads : 0);
    legend(fp);
    int y = TOP;
    for (int i = 0; i < n; ++i)
        y += one_case(fp, &r[i], y, top);
    for (int p = 0; p <= (int)top; p += 25) { /* the axis, and the limit as a line at 100% */
        double x = LABEL_W + PLOT_W * p / top;
        fprintf(fp, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='%s' stroke-width='%d'/>", x, TOP - 6, x, y,
                p == 100 ? "#d62728" : "#ddd", p == 100 ? 2 : 1);
        fprintf(fp, "<text x='%.1f' y='%d' text-anchor='middle' class='small'>%d%%</text>\n", x, y + 14, p);
    }
    fprintf(fp, "<text x='%.1f' y='%d' class='small' fill='#d62728'>limit: the best of the probes of the case's access "
                "pattern (or the f32 FMA peak), its plain loop and its peers, in the same rounds</text>\n</svg>\n",
            (double)LABEL_W, y + 28);
}
