/* show_mesh.c - ndgen show for a mesh-level sharding: its three notations, mesh, shard shape and the
 * core group of each copy, ahead of the distribution of copy 0. */
#include <inttypes.h>
#include <string.h>

#include "show.h"

enum { NOTATION_LEN = 1024, LIST_MAX_CORES = 64 };

/* The three notations of sh; a notation that cannot express it gets why instead, and *ok false. */
typedef struct notations {
    char text[3][NOTATION_LEN];
    bool ok[3];
    char mesh[512];
} notations;

static const char *const notation_keys[3] = {"einshard", "pspec", "placements"};

/* sh in each notation, for a tensor of that shape: a notation whose system would refuse the split
 * (JAX and einshard when it does not divide) is shown as none, with the reason. */
static void notations_of(const nd_sharding *sh, const int64_t *shape, notations *n)
{
    int (*format[3])(const nd_sharding *, char *, size_t, nd_error *) = {nd_einshard_format, nd_pspec_format,
                                                                         nd_placements_format};
    static const nd_notation as[3] = {ND_NOTATION_EINSHARD, ND_NOTATION_PSPEC, ND_NOTATION_PLACEMENTS};
    for (int i = 0; i < 3; ++i) {
        nd_error err;
        nd_sharding in = *sh;
        in.notation = as[i];
        n->ok[i] = format[i](sh, n->text[i], sizeof n->text[i], &err) >= 0 &&
                   nd_sharding_check_splits(&in, shape, ND_SPLIT_NOTATION, &err) == 0;
        if (!n->ok[i])
            snprintf(n->text[i], sizeof n->text[i], "%s", err.msg);
    }
    nd_mesh_format(sh, n->mesh, sizeof n->mesh);
}

static const char *role_name(nd_mesh_kind k)
{
    return k == ND_MESH_SHARD ? "shard" : k == ND_MESH_PARTIAL ? "partial" : "replicate";
}

/* ---------------------------------------------------------------- text */

static void text_mesh(FILE *fp, const nd_sharding *sh, const char *mesh)
{
    char name[ND_MESH_NAME + 8];
    fprintf(fp, "mesh       %s, %" PRId64 " devices:", mesh, nd_sharding_devices(sh));
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        fprintf(fp, "%s %s ", i ? "," : "", nd_mesh_axis_name(sh, i, name, sizeof name));
        if (a->kind == ND_MESH_SHARD)
            fprintf(fp, "splits dim %d", a->dim);
        else if (a->kind == ND_MESH_PARTIAL)
            fprintf(fp, "partial (pending %s)", nd_reduce_name(a->reduce));
        else
            fputs("replicates", fp);
    }
    fputc('\n', fp);
}

static void text_groups(FILE *fp, const ndg_show *v)
{
    const nd_dist *d = v->d;
    int64_t n = d->layout.ncores, per = d->spec.replicas / d->spec.parts, copies = d->spec.replicas;
    int64_t listed = v->all || copies <= NDG_SHOW_TEXT_LINES ? copies : NDG_SHOW_TEXT_LINES;
    for (int64_t r = 0; r < listed; ++r) {
        fprintf(fp, "copy %-4" PRId64 "%s", r, d->spec.parts > 1 ? "" : " ");
        if (d->spec.parts > 1)
            fprintf(fp, "(part %" PRId64 ") ", r / per);
        for (int64_t i = 0; i < n && (i < LIST_MAX_CORES || v->all); ++i) {
            nd_core c = nd_dist_core(d, r * n + i);
            fprintf(fp, " (%d,%d)", c.x, c.y);
        }
        fputs(n > LIST_MAX_CORES && !v->all ? " ...\n" : "\n", fp);
    }
    if (listed < copies)
        fprintf(fp, "... %" PRId64 " more copies: --all lists every copy\n", copies - listed);
}

/* What memory the sharding was checked against: a mesh is of devices, so only when asked. */
static const char *memory_model(const ndg_show *v)
{
    return v->capacity_checked ? "each core's L1, checked against --l1-size"
                               : "per device, not checked against a core's L1 (give --l1-size to check)";
}

void ndg_render_sharding_text(FILE *fp, const nd_sharding *sh, const ndg_show *v)
{
    const nd_dist *d = v->d;
    notations n;
    static const char *const labels[3] = {"einshard  ", "pspec     ", "placements"};
    notations_of(sh, d->spec.shape, &n);
    for (int i = 0; i < 3; ++i)
        fprintf(fp, "%s %s%s%s\n", labels[i], n.ok[i] ? "" : "(none: ", n.text[i], n.ok[i] ? "" : ")");
    text_mesh(fp, sh, n.mesh);
    fputs("per core   ", fp);
    for (int i = 0; i < d->spec.rank; ++i)
        fprintf(fp, i ? ",%" PRId64 : "[%" PRId64, d->spec.shard[i]);
    fprintf(fp, "] elements (the shard shape); %d cop%s", (int)d->spec.replicas, d->spec.replicas == 1 ? "y" : "ies");
    if (d->spec.parts > 1)
        fprintf(fp, " forming %d partial sums", (int)d->spec.parts);
    fprintf(fp, "\nmemory     %s\n\n", memory_model(v));
    text_groups(fp, v);
    fputs("\ncopy 0 as an ND distribution (every copy places its pages alike on its own cores):\n", fp);
    ndg_render_text(fp, v);
}

/* ---------------------------------------------------------------- json */

static void json_axes(FILE *fp, const nd_sharding *sh)
{
    char name[ND_MESH_NAME + 8];
    fputs("  \"mesh\": [", fp);
    for (int i = 0; i < sh->naxes; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, sh->axes[i].size);
    fputs("],\n  \"mesh_axes\": [", fp);
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", fp);
        ndg_json_string(fp, nd_mesh_axis_name(sh, i, name, sizeof name));
        fprintf(fp, ", \"size\": %" PRId64 ", \"role\": \"%s\"", a->size, role_name(a->kind));
        if (a->kind == ND_MESH_SHARD)
            fprintf(fp, ", \"dim\": %d", a->dim);
        if (a->kind == ND_MESH_PARTIAL)
            fprintf(fp, ", \"reduce\": \"%s\"", nd_reduce_name(a->reduce));
        fputc('}', fp);
    }
    fputs(sh->naxes ? "\n  ],\n" : "],\n", fp);
}

/* Every copy's cores, or null when they are more than the limit; "omitted" names it then. */
static void json_groups(FILE *fp, const ndg_show *v)
{
    const nd_dist *d = v->d;
    int64_t n = d->layout.ncores;
    bool whole = ndg_show_whole(v, d->list_cores);
    fprintf(fp, "  \"omitted\": [%s],\n", whole ? "" : "\"groups\"");
    if (!whole) {
        fputs("  \"groups\": null,\n", fp);
        return;
    }
    fputs("  \"groups\": [", fp);
    for (int64_t r = 0; r < d->spec.replicas; ++r) {
        fputs(r ? ",\n    [" : "\n    [", fp);
        for (int64_t i = 0; i < n; ++i) {
            nd_core c = nd_dist_core(d, r * n + i);
            fprintf(fp, i ? ",[%d,%d]" : "[%d,%d]", c.x, c.y);
        }
        fputc(']', fp);
    }
    fputs("\n  ],\n", fp);
}

void ndg_render_sharding_json(FILE *fp, const nd_sharding *sh, const ndg_show *v)
{
    const nd_dist *d = v->d;
    notations n;
    notations_of(sh, d->spec.shape, &n);
    fputs("{\n", fp);
    for (int i = 0; i < 3; ++i) {
        fprintf(fp, "  \"%s\": ", notation_keys[i]);
        n.ok[i] ? ndg_json_string(fp, n.text[i]) : (void)fputs("null", fp);
        if (!n.ok[i]) {
            fprintf(fp, ",\n  \"%s_error\": ", notation_keys[i]);
            ndg_json_string(fp, n.text[i]);
        }
        fputs(",\n", fp);
    }
    fputs("  \"mesh_text\": ", fp);
    ndg_json_string(fp, n.mesh);
    fputs(",\n", fp);
    json_axes(fp, sh);
    fputs("  \"shard_shape\": [", fp);
    for (int i = 0; i < d->spec.rank; ++i)
        fprintf(fp, i ? ",%" PRId64 : "%" PRId64, d->spec.shard[i]);
    fprintf(fp, "],\n  \"replicas\": %d,\n  \"parts\": %d,\n  \"memory\": ", (int)d->spec.replicas, (int)d->spec.parts);
    ndg_json_string(fp, memory_model(v));
    fputs(",\n", fp);
    json_groups(fp, v);
    fputs("  \"distribution\": ", fp);
    ndg_render_json(fp, v);
    fputs("}\n", fp);
}

void ndg_sharding_caption(char *buf, size_t len, const nd_sharding *sh, const nd_dist *d)
{
    notations n;
    notations_of(sh, d->spec.shape, &n);
    int k = n.ok[0] ? 0 : n.ok[1] ? 1 : 2;
    snprintf(buf, len, "%s %s on mesh %s: copy 0 of %d shown", notation_keys[k], n.text[k], n.mesh,
             (int)d->spec.replicas);
}
