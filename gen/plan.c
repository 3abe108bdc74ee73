/*
 * plan.c - ndgen plan: sharding analysis of a chain of einsums over one device list.
 *
 * Every operand's sharding is turned into device axes: (stride, size) pairs over the flat core list,
 * so shardings written on different meshes can be compared. Device v holds, along each tensor dim, the
 * chunk its coordinates on that dim's device axes pick (torch.chunk's rule).
 *
 * For each einsum: a letter is free when the output has it, reduced otherwise; it is sharded when some
 * operand splits it. Each device computes the output block its free letters' chunks give, summed over
 * its chunk of the reduced letters; when a reduced letter is sharded the output is Partial over the
 * devices that split it. Bytes moved are what ndgen's kernels read from other cores: the input pages a
 * device needs and does not hold, and for a collective the parts of its block held elsewhere.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ndgen.h"

enum { PLAN_MAX_STEPS = 8, PLAN_MAX_INPUTS = 9, MAX_DEV_AXES = ND_MAX_MESH, MAX_DEVICES = 1 << 16 };

typedef struct dev_axis {
    int64_t stride, size;
} dev_axis;

/* A sharding as device axes per dim; partial axes are the pending sum's. */
typedef struct placed {
    char name[32];
    char letters[ND_MAX_RANK + 1];
    int64_t shape[ND_MAX_RANK];
    int rank;
    int nsplit[ND_MAX_RANK];
    dev_axis split[ND_MAX_RANK][MAX_DEV_AXES];
    int npartial;
    dev_axis partial[MAX_DEV_AXES];
    nd_sharding sh; /* the mesh form, for printing */
    bool regular;   /* sh describes it */
} placed;

typedef struct plan_opts {
    int nsteps;
    const char *steps[PLAN_MAX_STEPS];
    int nins;
    const char *ins[PLAN_MAX_INPUTS];
    const char *out, *shape, *grid, *mesh, *dtype, *format, *output;
    bool alternatives;
} plan_opts;

typedef struct plan_env {
    int64_t devices;
    int64_t size[128]; /* by letter */
    int64_t elem_bytes;
    const char *mesh, *shape; /* --mesh and --shape as given */
} plan_env;

/* ---------------------------------------------------------------- checked sizes */

/* Sizes are products of letter sizes up to 2^40: nd_size_mul and nd_size_add check every one. */

static int64_t subc(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a - b; }

/* ---------------------------------------------------------------- device axes */

static void from_sharding(placed *p, const nd_sharding *sh)
{
    int64_t stride[ND_MAX_MESH], s = 1;
    for (int i = sh->naxes - 1; i >= 0; --i) {
        stride[i] = s;
        s *= sh->axes[i].size;
    }
    p->sh = *sh;
    p->regular = true;
    p->npartial = 0;
    for (int d = 0; d < p->rank; ++d) {
        p->nsplit[d] = 0;
        for (int k = 0; k < sh->nsplit[d]; ++k) {
            int a = sh->split[d][k];
            p->split[d][p->nsplit[d]++] = (dev_axis){stride[a], sh->axes[a].size};
        }
    }
    for (int i = 0; i < sh->naxes; ++i)
        if (sh->axes[i].kind == ND_MESH_PARTIAL)
            p->partial[p->npartial++] = (dev_axis){stride[i], sh->axes[i].size};
}

static int64_t ways(const dev_axis *axes, int n)
{
    int64_t k = 1;
    for (int i = 0; i < n; ++i)
        k = nd_size_mul(k, axes[i].size); /* at most the devices: the parsers check the mesh's product */
    return k;
}

/* Device v's coordinate over axes (major first): its piece among ways(axes). */
static int64_t piece(const dev_axis *axes, int n, int64_t v)
{
    int64_t q = 0;
    for (int i = 0; i < n; ++i)
        q = q * axes[i].size + v / axes[i].stride % axes[i].size;
    return q;
}

/* [lo, hi) of an extent n split over axes, on device v. */
static void chunk(const dev_axis *axes, int na, int64_t n, int64_t v, int64_t *lo, int64_t *hi)
{
    if (na == 0) { /* the common unsplit dim, without divisions */
        *lo = 0;
        *hi = n;
        return;
    }
    int64_t k = ways(axes, na), c = (n + k - 1) / k, q = piece(axes, na, v);
    *lo = q * c < n ? q * c : n;
    *hi = *lo + c < n ? *lo + c : n;
}

static bool is_split(const placed *p, int d)
{
    return ways(p->split[d], p->nsplit[d]) > 1;
}

/* Rebuilds the mesh form from device axes: sorted major first, gaps filled by replication. */
static void to_sharding(placed *p, int64_t devices)
{
    typedef struct tagged { dev_axis a; nd_mesh_kind kind; int dim, pos; } tagged;
    tagged t[ND_MAX_MESH * 2];
    int n = 0;
    for (int d = 0; d < p->rank; ++d)
        for (int k = 0; k < p->nsplit[d]; ++k)
            if (p->split[d][k].size > 1 && n < ND_MAX_MESH)
                t[n++] = (tagged){p->split[d][k], ND_MESH_SHARD, d, k};
    for (int k = 0; k < p->npartial; ++k)
        if (p->partial[k].size > 1 && n < ND_MAX_MESH)
            t[n++] = (tagged){p->partial[k], ND_MESH_PARTIAL, -1, 0};
    for (int i = 1; i < n; ++i) /* by stride, largest first */
        for (int j = i; j > 0 && t[j].a.stride > t[j - 1].a.stride; --j) {
            tagged x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    nd_sharding sh;
    memset(&sh, 0, sizeof sh);
    sh.rank = p->rank;
    int64_t expect = 1;
    nd_mesh_axis axes[ND_MAX_MESH * 2];
    int na = 0;
    p->regular = true;
    for (int i = n - 1; i >= 0 && p->regular; --i) { /* minor first */
        if (t[i].a.stride % expect || t[i].a.stride < expect) {
            p->regular = false;
            break;
        }
        if (t[i].a.stride > expect)
            axes[na++] = (nd_mesh_axis){"", t[i].a.stride / expect, ND_MESH_REPLICATE, -1, ND_REDUCE_SUM};
        axes[na++] = (nd_mesh_axis){"", t[i].a.size, t[i].kind, t[i].dim, ND_REDUCE_SUM};
        expect = t[i].a.stride * t[i].a.size;
    }
    if (p->regular && devices % expect)
        p->regular = false;
    if (p->regular && devices > expect)
        axes[na++] = (nd_mesh_axis){"", devices / expect, ND_MESH_REPLICATE, -1, ND_REDUCE_SUM};
    if (!p->regular || na > ND_MAX_MESH)
        return (void)(p->regular = false);
    for (int i = 0; i < na; ++i) /* back to major first */
        sh.axes[i] = axes[na - 1 - i];
    sh.naxes = na;
    for (int i = 0; i < na; ++i)
        if (sh.axes[i].kind == ND_MESH_SHARD)
            sh.split[sh.axes[i].dim][sh.nsplit[sh.axes[i].dim]++] = (int8_t)i;
    for (int d = 0; d < p->rank; ++d)
        snprintf(sh.dim_names[d], ND_MESH_NAME, "%c", p->letters[d]);
    p->sh = sh;
}

/* ---------------------------------------------------------------- parsing */

static int parse_sharding(const char *text, const char *letters, const plan_env *env, placed *p, nd_error *err)
{
    nd_sharding sh;
    p->rank = (int)strlen(letters);
    snprintf(p->letters, sizeof p->letters, "%.8s", letters);
    for (int d = 0; d < p->rank; ++d)
        p->shape[d] = env->size[(unsigned char)letters[d]];
    const char *pspec = strncmp(text, "pspec:", 6) == 0 ? text + 6 : NULL;
    const char *placements = strncmp(text, "placements:", 11) == 0 ? text + 11 : NULL;
    const char *einshard = pspec || placements ? NULL : text;
    if (nd_sharding_parse(einshard, pspec, placements, einshard ? NULL : env->mesh, p->rank, env->devices, &sh, err))
        return -1;
    if (nd_sharding_devices(&sh) != env->devices)
        return nd_fail(err, "%s: its mesh holds %lld devices, but --grid has %lld", text,
                       (long long)nd_sharding_devices(&sh), (long long)env->devices);
    for (int d = 0; d < p->rank; ++d)
        snprintf(sh.dim_names[d], ND_MESH_NAME, "%c", letters[d]);
    from_sharding(p, &sh);
    return 0;
}

/* "bx,xy->by": input letter strings and the output's. */
static int parse_einsum(const char *text, char in[2][ND_MAX_RANK + 1], int *nin, char *out, nd_error *err)
{
    const char *arrow = strstr(text, "->");
    if (!arrow)
        return nd_fail(err, "einsum '%s': expected '->'", text);
    *nin = 0;
    for (const char *p = text; p < arrow;) {
        size_t n = strcspn(p, ",-");
        if (*nin == 2 || n == 0 || n > ND_MAX_RANK)
            return nd_fail(err, "einsum '%s': expected one or two inputs of 1 to %d letters", text, ND_MAX_RANK);
        memcpy(in[*nin], p, n);
        in[(*nin)++][n] = '\0';
        p += n + (p[n] == ',');
    }
    snprintf(out, ND_MAX_RANK + 1, "%s", arrow + 2);
    const char *all[3] = {in[0], *nin > 1 ? in[1] : "", out};
    for (int k = 0; k < 3; ++k)
        for (const char *c = all[k]; *c; ++c)
            if (*c < 'a' || *c > 'z' || strchr(c + 1, *c))
                return nd_fail(err, "einsum '%s': '%c' in '%s': axes are lower-case letters, each once per operand",
                               text, *c, all[k]);
    if (!*out || strlen(arrow + 2) > ND_MAX_RANK)
        return nd_fail(err, "einsum '%s': the output needs 1 to %d letters", text, ND_MAX_RANK);
    for (const char *c = out; *c; ++c)
        if (!strchr(in[0], *c) && !(*nin > 1 && strchr(in[1], *c)))
            return nd_fail(err, "einsum '%s': output axis '%c' is in no input", text, *c);
    return 0;
}

static int parse_shape(const char *text, plan_env *env, nd_error *err)
{
    const char *p = text;
    while (*p) {
        char letter;
        long long v;
        int used;
        if (sscanf(p, " %c = %lld%n", &letter, &v, &used) != 2 || letter < 'a' || letter > 'z' || v < 1 ||
            v > (1LL << 40))
            return nd_fail(err, "--shape %s: expected letter=size pairs, such as b=8,x=128", text);
        env->size[(unsigned char)letter] = v;
        p += used;
        p += *p == ',';
    }
    return 0;
}

/* ---------------------------------------------------------------- one einsum */

typedef struct alt {
    char what[160];
    int64_t bytes;
    const char *collective; /* NULL: none */
    placed result;
} alt;

typedef struct step {
    const char *einsum;
    int nin;
    placed in[2];
    placed out;        /* as computed: Partial when a reduced letter is sharded */
    char letters[27];  /* every letter, in first appearance order */
    bool free_[27], sharded[27];
    int64_t input_bytes;
    int nalts;
    alt alts[3 + ND_MAX_RANK]; /* all_reduce, a reduce_scatter per dim, all_gather, none */
    int chosen;
} step;

/* Interval overlap of two chunk lists, as a volume. */
static int64_t overlap(const int64_t *alo, const int64_t *ahi, const int64_t *blo, const int64_t *bhi, int r)
{
    int64_t v = 1;
    for (int d = 0; d < r; ++d) {
        int64_t lo = alo[d] > blo[d] ? alo[d] : blo[d], hi = ahi[d] < bhi[d] ? ahi[d] : bhi[d];
        v = nd_size_mul(v, hi > lo ? hi - lo : 0);
    }
    return v;
}

static void held(const placed *p, int64_t v, int64_t *lo, int64_t *hi)
{
    for (int d = 0; d < p->rank; ++d)
        chunk(p->split[d], p->nsplit[d], p->shape[d], v, &lo[d], &hi[d]);
}

/* Source of letter c for the computation: the first operand splitting it, else the first having it. */
static const placed *source(const step *s, char c, int *dim)
{
    const placed *pick = NULL;
    for (int k = s->nin - 1; k >= 0; --k) {
        const char *at = strchr(s->in[k].letters, c);
        if (at && (!pick || is_split(&s->in[k], (int)(at - s->in[k].letters)))) {
            pick = &s->in[k];
            *dim = (int)(at - s->in[k].letters);
        }
    }
    return pick;
}

/* Where input t's dims come from for the computation: the source operand's dim, or NULL when the
 * dim is needed whole (a reduced letter, gathered first). */
static void need_sources(const step *s, const placed *t, bool gather, const placed **src, int *sd)
{
    for (int d = 0; d < t->rank; ++d) {
        src[d] = source(s, t->letters[d], &sd[d]);
        if (gather && !s->free_[strchr(s->letters, t->letters[d]) - s->letters])
            src[d] = NULL;
    }
}

/* Bytes device v reads from other cores to compute its block; gather: reduced letters whole. */
static int64_t input_bytes(const step *s, const plan_env *env, bool gather)
{
    int64_t total = 0;
    for (int k = 0; k < s->nin; ++k) {
        const placed *t = &s->in[k], *src[ND_MAX_RANK];
        int sd[ND_MAX_RANK] = {0};
        need_sources(s, t, gather, src, sd);
        for (int64_t v = 0; v < env->devices; ++v) {
            int64_t nlo[ND_MAX_RANK], nhi[ND_MAX_RANK], hlo[ND_MAX_RANK], hhi[ND_MAX_RANK], need = 1;
            for (int d = 0; d < t->rank; ++d) {
                if (src[d])
                    chunk(src[d]->split[sd[d]], src[d]->nsplit[sd[d]], src[d]->shape[sd[d]], v, &nlo[d], &nhi[d]);
                else
                    nlo[d] = 0, nhi[d] = t->shape[d];
                need = nd_size_mul(need, nhi[d] - nlo[d]);
            }
            held(t, v, hlo, hhi);
            total = nd_size_add(total, nd_size_mul(subc(need, overlap(nlo, nhi, hlo, hhi, t->rank)), env->elem_bytes));
        }
    }
    return total;
}

/* The output as computed: free letters split as their source; Partial over reduced letters' axes,
 * unless gather (the reduced letters' inputs made whole first). */
static void compute_output(const step *s, const char *out_letters, const plan_env *env, bool gather, placed *o)
{
    memset(o, 0, sizeof *o);
    o->rank = (int)strlen(out_letters);
    snprintf(o->letters, sizeof o->letters, "%.8s", out_letters);
    for (int d = 0; d < o->rank; ++d) {
        int sd = 0;
        const placed *src = source(s, out_letters[d], &sd);
        o->shape[d] = src->shape[sd];
        o->nsplit[d] = src->nsplit[sd];
        memcpy(o->split[d], src->split[sd], sizeof o->split[d]);
    }
    for (const char *c = s->letters; *c && !gather; ++c) {
        int sd = 0;
        const placed *src = source(s, *c, &sd);
        if (strchr(out_letters, *c) || !is_split(src, sd))
            continue;
        for (int k = 0; k < src->nsplit[sd] && o->npartial < MAX_DEV_AXES; ++k)
            o->partial[o->npartial++] = src->split[sd][k];
    }
    to_sharding(o, env->devices);
}

static int64_t block_volume(const placed *p, int64_t v)
{
    int64_t lo[ND_MAX_RANK], hi[ND_MAX_RANK], n = 1;
    held(p, v, lo, hi);
    for (int d = 0; d < p->rank; ++d)
        n = nd_size_mul(n, hi[d] - lo[d]);
    return n;
}

static void add_alt(step *s, const char *what, int64_t bytes, const char *collective, const placed *result)
{
    alt *a = &s->alts[s->nalts++];
    snprintf(a->what, sizeof a->what, "%s", what);
    a->bytes = bytes;
    a->collective = collective;
    a->result = *result;
}

/* The resolutions of a Partial output: keep it, all_reduce, reduce_scatter along each free letter, or
 * gather the reduced letters' inputs first. */
static void alternatives(step *s, const plan_env *env)
{
    const placed partial = s->out;
    int64_t parts = ways(partial.partial, partial.npartial), ar = 0;
    placed whole = partial;
    whole.npartial = 0;
    to_sharding(&whole, env->devices);
    for (int64_t v = 0; v < env->devices; ++v)
        ar = nd_size_add(ar, nd_size_mul(nd_size_mul(block_volume(&whole, v), parts - 1), env->elem_bytes));
    add_alt(s, "all_reduce the partial sums: the result whole on every core", nd_size_add(s->input_bytes, ar), "all_reduce",
            &whole);
    for (int d = 0; d < partial.rank; ++d) {
        placed scat = whole;
        char what[160];
        int64_t rs = 0;
        if (scat.nsplit[d] + partial.npartial > MAX_DEV_AXES)
            continue;
        for (int k = 0; k < partial.npartial; ++k) /* the parts' axes now split d, minor to its own */
            scat.split[d][scat.nsplit[d]++] = partial.partial[k];
        to_sharding(&scat, env->devices);
        for (int64_t v = 0; v < env->devices; ++v)
            rs = nd_size_add(rs, nd_size_mul(nd_size_mul(block_volume(&scat, v), parts - 1), env->elem_bytes));
        snprintf(what, sizeof what, "reduce_scatter along '%c': the result split over the parts' cores",
                 partial.letters[d]);
        add_alt(s, what, nd_size_add(s->input_bytes, rs), "reduce_scatter", &scat);
    }
    placed gathered;
    compute_output(s, partial.letters, env, true, &gathered);
    add_alt(s, "all_gather the reduced axes' inputs first: no partial sums", input_bytes(s, env, true), "all_gather",
            &gathered);
    add_alt(s, "leave the result Partial (a pending sum) for a later step", s->input_bytes, NULL, &partial);
}

static void rank_alts(step *s)
{
    for (int i = 1; i < s->nalts; ++i)
        for (int j = i; j > 0 && s->alts[j].bytes < s->alts[j - 1].bytes; --j) {
            alt x = s->alts[j];
            s->alts[j] = s->alts[j - 1];
            s->alts[j - 1] = x;
        }
}

static const char *parallelism(const step *s)
{
    bool f = false, r = false;
    for (int i = 0; s->letters[i]; ++i) {
        f |= s->sharded[i] && s->free_[i];
        r |= s->sharded[i] && !s->free_[i];
    }
    return f && r ? "hybrid (data and tensor parallel)" : f ? "data parallel" : r ? "tensor parallel"
                                                                              : "none (nothing is sharded)";
}

static void classify(step *s, const char *out_letters)
{
    int n = 0;
    for (int k = 0; k < s->nin; ++k)
        for (const char *c = s->in[k].letters; *c; ++c)
            if (!memchr(s->letters, *c, (size_t)n))
                s->letters[n++] = *c;
    s->letters[n] = '\0';
    for (int i = 0; i < n; ++i) {
        s->free_[i] = strchr(out_letters, s->letters[i]) != NULL;
        s->sharded[i] = false;
        for (int k = 0; k < s->nin; ++k) {
            const char *at = strchr(s->in[k].letters, s->letters[i]);
            s->sharded[i] |= at && is_split(&s->in[k], (int)(at - s->in[k].letters));
        }
    }
}

/* ---------------------------------------------------------------- output */

static void put_notation(FILE *fp, const placed *p, bool json)
{
    char text[1024];
    nd_error err;
    if (!p->regular) {
        fputs(json ? "null" : "(no regular mesh form)", fp);
        return;
    }
    int rc = nd_einshard_format(&p->sh, text, sizeof text, &err);
    if (rc < 0)
        rc = nd_placements_format(&p->sh, text, sizeof text, &err);
    json ? ndg_json_string(fp, rc < 0 ? err.msg : text) : (void)fputs(rc < 0 ? err.msg : text, fp);
}

static void text_step(FILE *fp, const step *s, int i, bool all)
{
    fprintf(fp, "step %d: %s\n  inputs:", i + 1, s->einsum);
    for (int k = 0; k < s->nin; ++k) {
        fprintf(fp, "%s %s ", k ? "," : "", s->in[k].name);
        put_notation(fp, &s->in[k], false);
    }
    fputs("\n  axes:  ", fp);
    for (int j = 0; s->letters[j]; ++j)
        fprintf(fp, "%s%c %s%s", j ? ", " : "", s->letters[j], s->free_[j] ? "free" : "reduced",
                s->sharded[j] ? " sharded" : "");
    fprintf(fp, "\n  parallelism: %s\n  output %s: ", parallelism(s), s->out.name);
    put_notation(fp, &s->out, false);
    int64_t parts = ways(s->out.partial, s->out.npartial);
    if (parts > 1)
        fprintf(fp, "  (Partial: a pending sum of %" PRId64 " parts)", parts);
    const alt *c = &s->alts[s->chosen];
    fprintf(fp, "\n  plan: %s\n  collective: %s; bytes moved: %" PRId64 " (inputs %" PRId64 ")\n", c->what,
            c->collective ? c->collective : "none", c->bytes, s->input_bytes);
    for (int a = 0; all && a < s->nalts; ++a)
        fprintf(fp, "    %d. %12" PRId64 " bytes  %s\n", a + 1, s->alts[a].bytes, s->alts[a].what);
}

static void json_step(FILE *fp, const step *s, bool all)
{
    fputs("    {\"einsum\": ", fp);
    ndg_json_string(fp, s->einsum);
    fputs(", \"axes\": [", fp);
    for (int j = 0; s->letters[j]; ++j)
        fprintf(fp, "%s{\"axis\": \"%c\", \"role\": \"%s\", \"sharded\": %s}", j ? ", " : "", s->letters[j],
                s->free_[j] ? "free" : "reduced", s->sharded[j] ? "true" : "false");
    fprintf(fp, "],\n     \"parallelism\": \"%s\", \"partial\": %s, \"parts\": %" PRId64 ", \"output\": ", parallelism(s),
            s->out.npartial && ways(s->out.partial, s->out.npartial) > 1 ? "true" : "false",
            ways(s->out.partial, s->out.npartial));
    put_notation(fp, &s->out, true);
    const alt *c = &s->alts[s->chosen];
    fprintf(fp, ",\n     \"collective\": %s%s%s, \"bytes\": %" PRId64 ", \"input_bytes\": %" PRId64 ", \"result\": ",
            c->collective ? "\"" : "", c->collective ? c->collective : "null", c->collective ? "\"" : "", c->bytes,
            s->input_bytes);
    put_notation(fp, &c->result, true);
    if (all) {
        fputs(",\n     \"alternatives\": [", fp);
        for (int a = 0; a < s->nalts; ++a) {
            fputs(a ? ", {\"what\": " : "{\"what\": ", fp);
            ndg_json_string(fp, s->alts[a].what);
            fprintf(fp, ", \"bytes\": %" PRId64 ", \"collective\": %s%s%s}", s->alts[a].bytes, s->alts[a].collective ? "\"" : "",
                    s->alts[a].collective ? s->alts[a].collective : "null", s->alts[a].collective ? "\"" : "");
        }
        fputc(']', fp);
    }
    fputc('}', fp);
}

/* ---------------------------------------------------------------- the subcommand */

static const char plan_usage[] =
    "usage: ndgen plan EINSUM [EINSUM...] --in NAME=SHARDING... --shape LETTER=N,... --grid XxY [options]\n"
    "\n"
    "Sharding analysis of a chain of einsums, such as 'bx,xy->by' 'by,yz->bz' (an MLP; elementwise ops\n"
    "between them keep the sharding). The first einsum takes the first --in operands; each later one\n"
    "takes the previous result, then the next --in. For every einsum it classifies the axes (free or\n"
    "reduced, sharded or not), names the parallelism, says whether the result is Partial, which\n"
    "collective resolves it, and the bytes moved between cores by ndgen's kernels.\n"
    "\n"
    "Options:\n"
    "  --in NAME=SHARDING     an input: an einshard expression ('x y -> x y*'), or pspec:SPEC or\n"
    "                         placements:LIST over --mesh\n"
    "  --out SHARDING         the sharding wanted for the last result; default: a Partial result is\n"
    "                         all-reduced, any other kept as computed\n"
    "  --shape LETTER=N,...   the size of every axis letter (required)\n"
    "  --grid XxY             the cores the meshes cover (required)\n"
    "  --mesh AXES            the mesh of pspec: and placements: shardings\n"
    "  --dtype f32|bf16|...   element type, for bytes (default f32)\n"
    "  --alternatives         list every way to resolve each Partial result, fewest bytes first\n"
    "  --format text|json     (default text)\n"
    "  --output FILE          write FILE (whole or not at all) instead of standard output\n"
    "  --help                 show this help\n";

enum { P_IN = 256, P_OUT, P_SHAPE, P_GRID, P_MESH, P_DTYPE, P_ALTS, P_FORMAT, P_OUTPUT, P_HELP };

static const struct option plan_longopts[] = {
    {"in", required_argument, NULL, P_IN},         {"out", required_argument, NULL, P_OUT},
    {"shape", required_argument, NULL, P_SHAPE},   {"grid", required_argument, NULL, P_GRID},
    {"mesh", required_argument, NULL, P_MESH},     {"dtype", required_argument, NULL, P_DTYPE},
    {"alternatives", no_argument, NULL, P_ALTS},   {"format", required_argument, NULL, P_FORMAT},
    {"output", required_argument, NULL, P_OUTPUT}, {"help", no_argument, NULL, P_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_args(int argc, char **argv, plan_opts *o)
{
    int opt;
    memset(o, 0, sizeof *o);
    o->format = "text";
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", plan_longopts, NULL)) != -1) {
        if (opt == P_HELP) {
            fputs(plan_usage, stdout);
            return 1;
        } else if (opt == P_IN && o->nins < PLAN_MAX_INPUTS) {
            o->ins[o->nins++] = optarg;
        } else if (opt >= P_OUT && opt <= P_OUTPUT && opt != P_ALTS) {
            const char **slot[] = {&o->out, &o->shape, &o->grid, &o->mesh, &o->dtype, NULL, &o->format, &o->output};
            *slot[opt - P_OUT] = optarg;
        } else if (opt == P_ALTS) {
            o->alternatives = true;
        } else {
            fprintf(stderr, "ndgen plan: %s: unknown option, missing value or too many; see ndgen plan --help\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    for (; optind < argc && o->nsteps < PLAN_MAX_STEPS; ++optind)
        o->steps[o->nsteps++] = argv[optind];
    if (optind < argc || o->nsteps == 0) {
        fprintf(stderr, "ndgen plan: give 1 to %d einsums, such as 'bx,xy->by'; see ndgen plan --help\n",
                PLAN_MAX_STEPS);
        return 2;
    }
    return 0;
}

static int setup_env(const plan_opts *o, plan_env *env, nd_error *err)
{
    int gx, gy;
    nd_dtype t = ND_F32;
    memset(env, 0, sizeof *env);
    if (!o->shape || !o->grid)
        return nd_fail(err, "--%s: required", o->shape ? "grid" : "shape");
    if (parse_shape(o->shape, env, err) || nd_parse_grid("--grid", o->grid, &gx, &gy, err) ||
        (o->dtype && nd_parse_dtype("--dtype", o->dtype, &t, err)))
        return -1;
    env->devices = (int64_t)gx * gy;
    if (env->devices > MAX_DEVICES)
        return nd_fail(err, "--grid %s: at most %d cores", o->grid, MAX_DEVICES);
    env->elem_bytes = nd_dtype_size(t);
    env->mesh = o->mesh;
    env->shape = o->shape;
    return 0;
}

/* A tensor's byte size must fit 64 bits, as every count derived from it does. */
static int check_tensor_bytes(const placed *p, const char *what, const plan_env *env, nd_error *err)
{
    int64_t n = env->elem_bytes;
    for (int d = 0; d < p->rank; ++d)
        n = nd_size_mul(n, p->shape[d]);
    if (n >= 0)
        return 0;
    return nd_fail(err, "--shape %s: %s '%s' holds more bytes than 64 bits count", env->shape, what, p->letters);
}

/* Whether some byte count of step s overflowed. */
static bool step_overflows(const step *s)
{
    bool over = s->input_bytes < 0;
    for (int a = 0; a < s->nalts; ++a)
        over = over || s->alts[a].bytes < 0;
    return over;
}

/* Operand k of step i: the previous result for the first operand of later steps, else the next --in. */
static int bind_input(const plan_opts *o, const plan_env *env, step *steps, int i, int k, int *next_in,
                      const char *letters, nd_error *err)
{
    placed *p = &steps[i].in[k];
    if (i > 0 && k == 0) {
        *p = steps[i - 1].alts[steps[i - 1].chosen].result;
        if (strlen(p->letters) != strlen(letters))
            return nd_fail(err, "einsum '%s': its first input has %d axes, but the previous result has %d",
                           steps[i].einsum, (int)strlen(letters), p->rank);
        snprintf(p->letters, sizeof p->letters, "%.8s", letters); /* the same tensor, renamed axes */
        if (ways(p->partial, p->npartial) > 1)
            return nd_fail(err, "einsum '%s': its first input, the previous result, is kept Partial; ndgen plan does "
                                "not plan over pending reductions (a contraction of one stays pending): choose a "
                                "resolution of the previous result with --out", steps[i].einsum);
        return 0;
    }
    if (*next_in == o->nins)
        return nd_fail(err, "einsum '%s': needs another --in", steps[i].einsum);
    const char *arg = o->ins[(*next_in)++], *eq = strchr(arg, '=');
    if (!eq || eq == arg || eq - arg >= (int)sizeof p->name)
        return nd_fail(err, "--in %s: expected NAME=SHARDING", arg);
    for (const char *c = letters; *c; ++c)
        if (!env->size[(unsigned char)*c])
            return nd_fail(err, "--shape: no size for axis '%c' of '%s'", *c, steps[i].einsum);
    if (parse_sharding(eq + 1, letters, env, p, err))
        return -1;
    if (ways(p->partial, p->npartial) > 1)
        return nd_fail(err, "--in %s: the input is Partial; ndgen plan does not plan over pending reductions (a "
                            "contraction of one stays pending, and only a sum may): resolve it first and give the "
                            "result's sharding", arg);
    snprintf(p->name, sizeof p->name, "%.*s", (int)(eq - arg), arg);
    return check_tensor_bytes(p, "input", env, err);
}

/* The alternative reaching want (a sharding of the output), or -1. */
static int matching_alt(const step *s, const char *want, const plan_env *env, nd_error *err)
{
    placed w;
    if (parse_sharding(want, s->out.letters, env, &w, err))
        return -2;
    for (int a = 0; a < s->nalts; ++a)
        if (s->alts[a].result.regular && nd_sharding_equal(&s->alts[a].result.sh, &w.sh))
            return a;
    return -1;
}

static int plan_step(const plan_opts *o, const plan_env *env, step *steps, int i, int *next_in, nd_error *err)
{
    step *s = &steps[i];
    char in[2][ND_MAX_RANK + 1], out[ND_MAX_RANK + 1];
    s->einsum = o->steps[i];
    if (parse_einsum(s->einsum, in, &s->nin, out, err))
        return -1;
    for (int k = 0; k < s->nin; ++k)
        if (bind_input(o, env, steps, i, k, next_in, in[k], err))
            return -1;
    classify(s, out);
    s->input_bytes = input_bytes(s, env, false);
    compute_output(s, out, env, false, &s->out);
    snprintf(s->out.name, sizeof s->out.name, "%s", i + 1 == o->nsteps ? "out" : "intermediate");
    if (check_tensor_bytes(&s->out, "the output", env, err))
        return -1;
    bool partial = ways(s->out.partial, s->out.npartial) > 1;
    if (partial)
        alternatives(s, env);
    else
        add_alt(s, "no collective: the result is whole where it is computed", s->input_bytes, NULL, &s->out);
    if (step_overflows(s))
        return nd_fail(err, "--shape %s: the bytes einsum '%s' moves overflow 64 bits", env->shape, s->einsum);
    rank_alts(s);
    s->chosen = 0; /* the fewest bytes, for an intermediate result: never left Partial */
    while (i + 1 < o->nsteps && s->alts[s->chosen].result.npartial && s->chosen + 1 < s->nalts)
        ++s->chosen;
    if (i + 1 == o->nsteps && partial && !o->out)
        for (int a = 0; a < s->nalts; ++a)
            if (s->alts[a].collective && strcmp(s->alts[a].collective, "all_reduce") == 0)
                s->chosen = a;
    if (i + 1 == o->nsteps && o->out) {
        int a = matching_alt(s, o->out, env, err);
        if (a == -2)
            return -1;
        if (a < 0)
            return nd_fail(err, "--out %s: no plan here reaches that sharding; see --alternatives", o->out);
        s->chosen = a;
    }
    return 0;
}

/* Bytes moved by the chosen plans of all steps, or -1 on overflow. */
static int64_t total_bytes(const plan_opts *o, const step *steps)
{
    int64_t total = 0;
    for (int i = 0; i < o->nsteps; ++i)
        total = nd_size_add(total, steps[i].alts[steps[i].chosen].bytes);
    return total;
}

static void report(FILE *fp, const plan_opts *o, const plan_env *env, const step *steps)
{
    int64_t total = total_bytes(o, steps), ncoll = 0;
    bool json = strcmp(o->format, "json") == 0;
    if (json)
        fprintf(fp, "{\n  \"devices\": %" PRId64 ",\n  \"steps\": [\n", env->devices);
    for (int i = 0; i < o->nsteps; ++i) {
        json ? json_step(fp, &steps[i], o->alternatives) : text_step(fp, &steps[i], i, o->alternatives);
        fputs(json && i + 1 < o->nsteps ? ",\n" : json ? "\n" : "", fp);
        ncoll += steps[i].alts[steps[i].chosen].collective != NULL;
    }
    if (json) {
        fputs("  ],\n  \"collectives\": [", fp);
        for (int i = 0, n = 0; i < o->nsteps; ++i)
            if (steps[i].alts[steps[i].chosen].collective)
                fprintf(fp, "%s\"%s\"", n++ ? ", " : "", steps[i].alts[steps[i].chosen].collective);
        fprintf(fp, "],\n  \"bytes\": %" PRId64 "\n}\n", total);
        return;
    }
    fprintf(fp, "total: %" PRId64 " collective%s, %" PRId64 " bytes moved between cores\n", ncoll,
            ncoll == 1 ? "" : "s", total);
}

int ndg_plan_main(int argc, char **argv)
{
    plan_opts o;
    plan_env env;
    nd_error err;
    int rc = parse_args(argc, argv, &o), next_in = 0;
    if (rc)
        return rc == 1 ? 0 : rc;
    if (strcmp(o.format, "text") && strcmp(o.format, "json")) {
        fprintf(stderr, "ndgen plan: --format %s: expected text or json\n", o.format);
        return 2;
    }
    step *steps = calloc(PLAN_MAX_STEPS, sizeof *steps);
    if (!steps) {
        fputs("ndgen plan: out of memory\n", stderr);
        return 1;
    }
    rc = setup_env(&o, &env, &err);
    for (int i = 0; i < o.nsteps && !rc; ++i)
        rc = plan_step(&o, &env, steps, i, &next_in, &err);
    if (!rc && next_in < o.nins)
        rc = nd_fail(&err, "--in %s: no einsum takes it", o.ins[next_in]);
    if (!rc && total_bytes(&o, steps) < 0)
        rc = nd_fail(&err, "--shape %s: the bytes all steps move overflow 64 bits", o.shape);
    ndg_output out;
    if (!rc && (rc = ndg_output_open(&out, o.output, &err)) == 0) {
        report(out.fp, &o, &env, steps);
        rc = ndg_output_commit(&out, NULL, &err);
    }
    if (rc)
        fprintf(stderr, "ndgen plan: %s\n", err.msg);
    free(steps);
    return rc ? 1 : 0;
}
