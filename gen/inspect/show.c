/* show.c - ndgen show: a distribution as text, JSON or SVG; the command (the renderers are show_text.c,
 * show_svg.c and, for a mesh-level sharding, show_mesh.c). */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "show.h"

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
    "  --all                   list everything, however long: without it, text prints the first 64\n"
    "                          cores and copies and a shard map of up to 4096 shards, JSON gives null\n"
    "                          for a list of more than 100000 entries (named in \"omitted\"), and svg\n"
    "                          refuses more than 20000 pages, 256 panels or 512 cores\n"
    "  --help                  show this help\n"
    "\n"
    "Per-core counts come from closed forms, so huge tensors and grids answer at once.\n";

enum { OPT_FORMAT = 256, OPT_OUTPUT, OPT_HELP, OPT_ALL, OPT_DIST };

/* The distribution flags, by nd_dist_flag_names (value OPT_DIST + index), then show's own. */
static void show_longopts(struct option *opts, size_t n)
{
    static const struct option own[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"help", no_argument, NULL, OPT_HELP},
        {"all", no_argument, NULL, OPT_ALL},
    };
    size_t k = 0;
    for (int i = 0; nd_dist_flag_names[i] && k + 5 < n; ++i, ++k)
        opts[k] = (struct option){nd_dist_flag_names[i], nd_dist_flag_is_switch(i) ? no_argument : required_argument,
                                  NULL, OPT_DIST + i};
    for (size_t i = 0; i < sizeof own / sizeof *own; ++i)
        opts[k++] = own[i];
    opts[k] = (struct option){NULL, 0, NULL, 0};
}

/* The per-core counts of one copy, from closed forms; v->data_pages is allocated. */
static int summarize(const nd_dist *d, bool all, ndg_show *v, nd_error *err)
{
    const nd_layout *l = &d->squeezed; /* the same placement in fewer dims */
    int64_t *data = ndg_malloc((size_t)l->ncores * sizeof *data);
    if (nd_layout_data_pages(l, data)) {
        free(data);
        return nd_fail(err, "--grid: out of memory counting the data pages of %lld cores", (long long)l->ncores);
    }
    *v = (ndg_show){.d = d, .data_pages = data, .min_shards = INT64_MAX, .min_data = INT64_MAX, .all = all};
    for (int64_t i = 0; i < l->ncores; ++i) {
        int64_t n = nd_layout_core_shards(l, i);
        v->min_shards = n < v->min_shards ? n : v->min_shards;
        v->max_shards = n > v->max_shards ? n : v->max_shards;
        v->min_data = data[i] < v->min_data ? data[i] : v->min_data;
        v->max_data = data[i] > v->max_data ? data[i] : v->max_data;
        v->idle += n == 0;
    }
    return 0;
}

static int render_to(FILE *fp, const char *format, const ndg_show *v, const nd_sharding *sh, nd_error *err)
{
    char caption[1400];
    if (strcmp(format, "svg") == 0) {
        if (sh)
            ndg_sharding_caption(caption, sizeof caption, sh, v->d);
        return ndg_render_svg(fp, v, sh ? caption : NULL, err);
    }
    if (strcmp(format, "json") == 0)
        sh ? ndg_render_sharding_json(fp, sh, v) : ndg_render_json(fp, v);
    else
        sh ? ndg_render_sharding_text(fp, sh, v) : ndg_render_text(fp, v);
    return 0;
}

/* sh: the mesh-level sharding d came from, or NULL. */
static int render(const char *format, const char *path, bool all, const nd_dist *d, const nd_sharding *sh,
                  bool capacity_checked, nd_error *err)
{
    ndf_output out;
    ndg_show v;
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "svg"))
        return nd_fail(err, "--format %s: unknown format; expected text, json or svg", format);
    if (summarize(d, all, &v, err))
        return -1;
    v.capacity_checked = capacity_checked;
    int rc = ndf_open(&out, path, err);
    if (!rc && render_to(out.fp, format, &v, sh, err)) {
        ndf_abort(&out);
        rc = -1;
    } else if (!rc) {
        rc = ndf_commit(&out, NULL, err);
    }
    free(v.data_pages);
    return rc;
}

int ndg_show_main(int argc, char **argv)
{
    nd_dist_flags flags = {0};
    const char *format = "text", *path = NULL;
    bool all = false;
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
        } else if (opt == OPT_ALL) {
            all = true;
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
    if (rc || render(format, path, all, &d, sharded ? &sh : NULL, !sharded || flags.l1_size, &err)) {
        fprintf(stderr, "ndgen show: %s\n", err.msg);
        return 1;
    }
    return 0;
}
