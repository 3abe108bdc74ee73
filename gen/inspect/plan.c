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
    nd_reduce reduce; /* what the parts pend */
    nd_sharding sh; /* the mesh form, for printing */
    bool regular;   /* sh describes it */
} placed;

typedef struct plan_opts {
    int nsteps;
    const char *steps[PLAN_MAX_STEPS];
    int nins;
    const char *ins[PLAN_MAX_INPUTS];
    const char *out, *shape, *grid, *mesh, *dtype, *format, *output;
    bool alternatives, uneven;
} plan_opts;

typedef struct plan_env {
    int64_t devices;
    int64_t size[128]; /* by letter */
    int64_t elem_bytes;
    const char *mesh, *shape; /* --mesh and --shape as given */
    bool uneven;              /* --uneven: einshard and PartitionSpec splits may leave a short last chunk */
    /* The user's notation, that of the first --in (PartitionSpec or placements over --mesh, else
     * einshard), in which every layout is stated; and for the first two, the mesh they are stated on. */
    nd_notation notation;
    bool has_mesh;
    nd_sharding mesh_axes;    /* --mesh: its axes' names and sizes (roles unused) */
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
    p->reduce = ND_REDUCE_SUM;
    for (int i = 0; i < sh->naxes; ++i)
        if (sh->axes[i].kind == ND_MESH_PARTIAL) {
            p->partial[p->npartial++] = (dev_axis){stride[i], sh->axes[i].size};
            p->reduce = sh->axes[i].reduce;
        }
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
    nd_chunk_range(n, ways(axes, na), piece(axes, na, v), lo, hi); /* the runtime's rule */
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
    int na = 0, pos[ND_MAX_MESH * 2]; /* a Shard axis's place in its dim's split, major first */
    p->regular = true;
    for (int i = n - 1; i >= 0 && p->regular; --i) { /* minor first */
        if (t[i].a.stride % expect || t[i].a.stride < expect) {
            p->regular = false;
            break;
        }
        if (t[i].a.stride > expect)
            axes[na++] = (nd_mesh_axis){.size = t[i].a.stride / expect, .kind = ND_MESH_REPLICATE, .dim = -1};
        pos[na] = t[i].pos;
        axes[na++] = (nd_mesh_axis){.size = t[i].a.size, .kind = t[i].kind, .dim = t[i].dim, .reduce = p->reduce};
        expect = t[i].a.stride * t[i].a.size;
    }
    if (p->regular && devices % expect)
        p->regular = false;
    if (p->regular && devices > expect)
        axes[na++] = (nd_mesh_axis){.size = devices / expect, .kind = ND_MESH_REPLICATE, .dim = -1};
    if (!p->regular || na > ND_MAX_MESH)
        return (void)(p->regular = false);
    for (int i = 0; i < na; ++i) /* back to major first */
        sh.axes[i] = axes[na - 1 - i];
    sh.naxes = na;
    for (int d = 0; d < p->rank; ++d) /* each dim split in its own order, which need not be the mesh's */
        for (int k = 0; k < p->nsplit[d]; ++k)
            for (int i = 0; i < na; ++i)
                if (sh.axes[i].kind == ND_MESH_SHARD && sh.axes[i].dim == d && pos[na - 1 - i] == k)
                    sh.split[d][sh.nsplit[d]++] = (int8_t)i;
    for (int d = 0; d < p->rank; ++d)
        snprintf(sh.dim_names[d], ND_MESH_NAME, "%c", p->letters[d]);
    p->sh = sh;
}

/* p in the first notation that can state it (einshard, placements, PartitionSpec); false when none can
 * or it has no regular mesh form. ndgen's own form: ranking breaks ties by it. */
static bool notation_text(const placed *p, char *text, size_t len)
{
    nd_error err;
    if (!p->regular)
        return false;
    return nd_einshard_format(&p->sh, text, len, &err) >= 0 || nd_placements_format(&p->sh, text, len, &err) >= 0 ||
           nd_pspec_format(&p->sh, text, len, &err) >= 0;
}

/* Mesh axes [first, last] of m as one device axis: the last one's stride, their sizes' product. */
static dev_axis mesh_run(const nd_sharding *m, int first, int last)
{
    dev_axis r = {1, 1};
    for (int i = m->naxes - 1; i > last; --i)
        r.stride *= m->axes[i].size;
    for (int i = first; i <= last; ++i)
        r.size *= m->axes[i].size;
    return r;
}

/* Gives axes [*first, *last] of m that make device axis a, none of them taken yet; false when none do
 * (a splits one of m's axes, or spans axes out of order). */
static bool on_mesh(const nd_sharding *m, dev_axis a, const bool *taken, int *first, int *last)
{
    for (int i = m->naxes - 1; i >= 0; --i) /* the shortest run: no size-1 axis before the ones that split */
        for (int j = i; j < m->naxes && !taken[j]; ++j) {
            if (taken[i])
                break;
            dev_axis r = mesh_run(m, i, j);
            if (r.stride == a.stride && r.size == a.size) {
                *first = i, *last = j;
                return true;
            }
        }
    return false;
}

/* p stated on the user's mesh (--mesh): each device axis of a split or of the parts as the run of mesh
 * axes it is, the axes no one takes replicating; false when p does not lie on that mesh's axes. */
static bool user_mesh_form(const placed *p, const plan_env *env, nd_sharding *out)
{
    bool taken[ND_MAX_MESH] = {false};
    *out = env->mesh_axes;
    out->notation = env->notation;
    out->rank = p->rank;
    memset(out->nsplit, 0, sizeof out->nsplit);
    for (int i = 0; i < out->naxes; ++i)
        out->axes[i].kind = ND_MESH_REPLICATE, out->axes[i].dim = -1, out->axes[i].reduced = false;
    for (int d = 0; d <= p->rank; ++d) { /* d == rank: the parts */
        int n = d < p->rank ? p->nsplit[d] : p->npartial;
        const dev_axis *axes = d < p->rank ? p->split[d] : p->partial;
        for (int k = 0; k < n; ++k) {
            int first, last;
            if (axes[k].size == 1)
                continue;
            if (!on_mesh(out, axes[k], taken, &first, &last))
                return false;
            for (int i = first; i <= last; ++i) {
                taken[i] = true;
                out->axes[i].kind = d < p->rank ? ND_MESH_SHARD : ND_MESH_PARTIAL;
                out->axes[i].dim = d < p->rank ? d : -1;
                out->axes[i].reduce = p->reduce;
                if (d < p->rank)
                    out->split[d][out->nsplit[d]++] = (int8_t)i;
            }
        }
    }
    for (int d = 0; d < p->rank; ++d)
        snprintf(out->dim_names[d], ND_MESH_NAME, "%c", p->letters[d]);
    return true;
}

/* p as the user writes it: in the notation of the inputs, on their --mesh (its axis names and sizes).
 * When that notation cannot state p, ndgen's own form and why, so nothing printed claims a layout the
 * user's system would hold otherwise. */
static bool user_text(const placed *p, const plan_env *env, char *text, size_t len, char *why, size_t why_len)
{
    nd_error err;
    nd_sharding sh;
    why[0] = '\0';
    if (!p->regular || env->notation == ND_NOTATION_EINSHARD || !env->has_mesh)
        return notation_text(p, text, len);
    if (!user_mesh_form(p, env, &sh))
        snprintf(why, why_len, "not on mesh %s: a split crosses its axes", env->mesh);
    else if ((env->notation == ND_NOTATION_PSPEC ? nd_pspec_format(&sh, text, len, &err)
                                                 : nd_placements_format(&sh, text, len, &err)) >= 0)
        return true;
    else
        snprintf(why, why_len, "no %s form: %s", env->notation == ND_NOTATION_PSPEC ? "PartitionSpec" : "placements",
                 err.msg);
    return notation_text(p, text, len);
}

/* Whether the user's system holds p as ndgen places it, by the rules the front ends apply to what users
 * write (nd_sharding_check_splits): JAX and einshard (a JAX NamedSharding) require every split to divide
 * its dim, unless --uneven; DTensor chunks an uneven dim piece by piece, which for a dim split by several
 * axes may put elements elsewhere than ndgen's equal shards. */
static bool system_holds(const placed *p, const plan_env *env)
{
    nd_sharding sh;
    nd_error err;
    if (!p->regular) { /* no mesh form to state: divisibility alone, where the system asks for it */
        for (int d = 0; d < p->rank && !env->uneven && env->notation != ND_NOTATION_PLACEMENTS; ++d)
            if (p->shape[d] % ways(p->split[d], p->nsplit[d]))
                return false;
        return true;
    }
    if (env->notation == ND_NOTATION_EINSHARD || !env->has_mesh || !user_mesh_form(p, env, &sh)) {
        sh = p->sh;
        sh.notation = env->notation;
    }
    return nd_sharding_check_splits(&sh, p->shape, env->uneven ? ND_SPLIT_UNEVEN : ND_SPLIT_NOTATION, &err) == 0;
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
    nd_error why;
    if (nd_sharding_check_splits(&sh, p->shape, env->uneven ? ND_SPLIT_UNEVEN : ND_SPLIT_NOTATION, &why))
        return nd_failc(err, why.code, "%s: %s", text, why.msg);
    int first = -1;
    for (int i = 0; i < sh.naxes; ++i) {
        if (sh.axes[i].kind != ND_MESH_PARTIAL || sh.axes[i].size < 2)
            continue;
        if (first >= 0 && sh.axes[i].reduce != sh.axes[first].reduce)
            return nd_failc(err, ND_EREFUSED, "%s: parts pending %s and %s cannot be one tensor; resolve one first",
                            text, nd_reduce_name(sh.axes[first].reduce), nd_reduce_name(sh.axes[i].reduce));
        first = first < 0 ? i : first;
    }
    for (int d = 0; d < p->rank; ++d) /* einshard names its axes: they must be the einsum's, in order */
        if (sh.dim_names[d][0] && (sh.dim_names[d][0] != letters[d] || sh.dim_names[d][1]))
            return nd_fail(err, "%s: it names dim %d '%s', but the einsum calls it '%c'; name the axes as the einsum "
                                "does, in its order ('%s')", text, d, sh.dim_names[d], letters[d], letters);
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
    if (arrow > text && arrow[-1] == ',')
        return nd_fail(err, "einsum '%s': an input has no letters", text);
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
        if (env->size[(unsigned char)letter])
            return nd_fail(err, "--shape %s: '%c' is given twice", text, letter);
        env->size[(unsigned char)letter] = v;
        p += used;
        p += *p == ',';
    }
    return 0;
}

/* ---------------------------------------------------------------- one einsum */

/* Ways weighed: each costs work in proportion to the devices, so their number is capped by that work. */
enum { MAX_LETTERS = 2 * ND_MAX_RANK, MAX_WAYS = 4096, MAX_WAY_WORK = 1 << 22 };

/* One way to run a step, and what resolves its result. A way says, for each letter some input splits,
 * which input's split the devices follow (-1: none, the letter is read whole, gathering it). */
typedef struct alt {
    char what[256];
    int64_t bytes;          /* total over cores: inputs read remotely, then the collective */
    int64_t max_core;       /* the most bytes one core reads: the critical path */
    int64_t input_bytes;
    const char *gather;     /* "all_gather" when the way reads a split letter whole, else NULL */
    const char *collective; /* what resolves the result: NULL, all_reduce, reduce_scatter, all_gather */
    /* The bytes count ndgen's collective kernels as they are: direct, each core reading what it lacks from
     * the cores holding it (an all_reduce: the other P-1 parts of its block). For an all_reduce, the same
     * totals if it ran as reduce_scatter then all_gather (two launches, 2(P-1)/P of each block per core,
     * the volume of a ring or of recursive halving and doubling); -1 otherwise. */
    int64_t two_phase_bytes, two_phase_max_core;
    placed computed;        /* the result as the way computes it */
    placed result;          /* after the collective */
    char key[160];          /* the result's notation: ties are broken by it, so that the operands' order
                               in the einsum cannot change the plan */
} alt;

typedef struct step {
    const char *einsum;
    int nin;
    placed in[2];
    char letters[MAX_LETTERS + 1]; /* every letter, in first appearance order */
    bool free_[MAX_LETTERS], sharded[MAX_LETTERS];
    int nalts, cap;
    alt *alts;
    int chosen;
    int uneven_skipped; /* ways not proposed: a split the user's system refuses (does not divide) */
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

static int64_t block_volume(const placed *p, int64_t v)
{
    int64_t lo[ND_MAX_RANK], hi[ND_MAX_RANK];
    held(p, v, lo, hi);
    return overlap(lo, hi, lo, hi, p->rank);
}

/* Elements of a's block on device v that b's block on v also holds (a and b of the same tensor). */
static int64_t common_volume(const placed *a, const placed *b, int64_t v)
{
    int64_t alo[ND_MAX_RANK], ahi[ND_MAX_RANK], blo[ND_MAX_RANK], bhi[ND_MAX_RANK];
    held(a, v, alo, ahi);
    held(b, v, blo, bhi);
    return overlap(alo, ahi, blo, bhi, a->rank);
}

/* Whether a and b (of the same tensor) place it alike: every device holds the same block, and the
 * devices pend the same parts, grouped alike and pending the same op. Compared device by device, so
 * shardings written on different meshes, or in other orders, compare by where the elements are. */
static bool placement_equal(const placed *a, const placed *b, int64_t devices)
{
    int64_t pa = ways(a->partial, a->npartial), pb = ways(b->partial, b->npartial);
    if (a->rank != b->rank || pa != pb || (pa > 1 && a->reduce != b->reduce))
        return false;
    int64_t *label = pa > 1 ? ndg_malloc(sizeof *label * (size_t)pa) : NULL; /* a's part -> b's part */
    bool same = true;
    for (int64_t q = 0; q < pa && label; ++q)
        label[q] = -1;
    for (int64_t v = 0; v < devices && same; ++v) {
        int64_t vol = block_volume(a, v);
        same = vol == block_volume(b, v) && vol == common_volume(a, b, v);
        if (same && label) {
            int64_t qa = piece(a->partial, a->npartial, v), qb = piece(b->partial, b->npartial, v);
            same = label[qa] < 0 || label[qa] == qb;
            label[qa] = qb;
        }
    }
    free(label);
    return same;
}

static int letter_index(const step *s, char c) { return (int)(strchr(s->letters, c) - s->letters); }

static int dim_of(const placed *t, char c)
{
    const char *at = strchr(t->letters, c);
    return at ? (int)(at - t->letters) : -1;
}

static bool same_split(const placed *a, int da, const placed *b, int db)
{
    return a->nsplit[da] == b->nsplit[db] &&
           !memcmp(a->split[da], b->split[db], sizeof(dev_axis) * (size_t)a->nsplit[da]);
}

/* Whether the device axes vary independently: every combination of their coordinates is taken by the
 * same number of devices. Checked by counting, so meshes of any shapes compare exactly. */
static bool independent(const dev_axis *axes, int n, int64_t devices)
{
    int64_t combos = 1;
    for (int i = 0; i < n; ++i)
        combos = nd_size_mul(combos, axes[i].size);
    if (combos < 1 || combos > devices || devices % combos)
        return false;
    int64_t *count = ndg_calloc((size_t)combos, sizeof *count);
    bool ok = true;
    for (int64_t v = 0; v < devices && ok; ++v)
        ++count[piece(axes, n, v)];
    for (int64_t q = 0; q < combos && ok; ++q)
        ok = count[q] == devices / combos;
    free(count);
    return ok;
}

/* The candidates for letter i: each input that splits it, without repeats of the same split, then -1
 * (read whole). The first candidate is the default way: the first input that splits it. */
static int candidates(const step *s, int i, int *cand)
{
    int n = 0;
    char c = s->letters[i];
    for (int k = 0; k < s->nin; ++k) {
        int d = dim_of(&s->in[k], c);
        bool dup = false;
        for (int j = 0; j < n && d >= 0; ++j) /* only inputs that have the letter */
            dup |= same_split(&s->in[cand[j]], dim_of(&s->in[cand[j]], c), &s->in[k], d);
        if (d >= 0 && is_split(&s->in[k], d) && !dup)
            cand[n++] = k;
    }
    cand[n++] = -1;
    return n;
}

/* The device axes a way uses: each split letter's, then the Partial inputs' parts. */
static int way_axes(const step *s, const int *src, dev_axis *axes)
{
    int n = 0;
    for (int i = 0; s->letters[i]; ++i) {
        if (src[i] < 0)
            continue;
        const placed *t = &s->in[src[i]];
        int d = dim_of(t, s->letters[i]);
        for (int k = 0; k < t->nsplit[d] && n < MAX_DEV_AXES * 4; ++k)
            axes[n++] = t->split[d][k];
    }
    for (int k = 0; k < s->nin; ++k)
        for (int j = 0; j < s->in[k].npartial && n < MAX_DEV_AXES * 4; ++j)
            axes[n++] = s->in[k].partial[j];
    return n;
}

/* Bytes each device reads from other cores to compute its block the way src says, into per_core. */
static void way_input_bytes(const step *s, const plan_env *env, const int *src, int64_t *per_core)
{
    for (int64_t v = 0; v < env->devices; ++v)
        per_core[v] = 0;
    for (int k = 0; k < s->nin; ++k) {
        const placed *t = &s->in[k];
        for (int64_t v = 0; v < env->devices; ++v) {
            int64_t nlo[ND_MAX_RANK], nhi[ND_MAX_RANK], hlo[ND_MAX_RANK], hhi[ND_MAX_RANK], need = 1;
            for (int d = 0; d < t->rank; ++d) {
                int from = src[letter_index(s, t->letters[d])];
                const placed *f = from < 0 ? NULL : &s->in[from];
                int fd = f ? dim_of(f, t->letters[d]) : 0;
                if (f)
                    chunk(f->split[fd], f->nsplit[fd], f->shape[fd], v, &nlo[d], &nhi[d]);
                else
                    nlo[d] = 0, nhi[d] = t->shape[d];
                need = nd_size_mul(need, nhi[d] - nlo[d]);
            }
            held(t, v, hlo, hhi); /* a Partial input: v needs its own part, which it holds */
            int64_t remote = nd_size_mul(subc(need, overlap(nlo, nhi, hlo, hhi, t->rank)), env->elem_bytes);
            per_core[v] = nd_size_add(per_core[v], remote);
        }
    }
}

/* The result as the way computes it: free letters split as their source; Partial over the axes of the
 * split reduced letters and of a Partial input. Fails (returns -1 with why) when the parts would pend
 * two different reductions. */
static int way_output(const step *s, const char *out_letters, const plan_env *env, const int *src, placed *o,
                      char *why, size_t len)
{
    memset(o, 0, sizeof *o);
    o->rank = (int)strlen(out_letters);
    o->reduce = ND_REDUCE_SUM;
    snprintf(o->letters, sizeof o->letters, "%.8s", out_letters);
    bool reduced_split = false;
    for (int i = 0; s->letters[i]; ++i) {
        char c = s->letters[i];
        const placed *f = src[i] < 0 ? NULL : &s->in[src[i]];
        int fd = 0, od = dim_of(o, c);
        if (od >= 0) {
            for (int k = 0; k < s->nin && !o->shape[od]; ++k)
                if (dim_of(&s->in[k], c) >= 0)
                    o->shape[od] = s->in[k].shape[dim_of(&s->in[k], c)];
        }
        if (!f)
            continue;
        fd = dim_of(f, c);
        if (od >= 0) {
            o->nsplit[od] = f->nsplit[fd];
            memcpy(o->split[od], f->split[fd], sizeof o->split[od]);
        } else {
            reduced_split = true;
            for (int k = 0; k < f->nsplit[fd] && o->npartial < MAX_DEV_AXES; ++k)
                o->partial[o->npartial++] = f->split[fd][k];
        }
    }
    for (int k = 0; k < s->nin; ++k) {
        const placed *t = &s->in[k];
        if (ways(t->partial, t->npartial) <= 1)
            continue;
        if (reduced_split && t->reduce != ND_REDUCE_SUM) {
            snprintf(why, len, "%s is Partial(%s) and a sharded reduced axis adds a pending sum: the parts would pend "
                     "two reductions", t->name, nd_reduce_name(t->reduce));
            return -1;
        }
        o->reduce = t->reduce;
        for (int j = 0; j < t->npartial && o->npartial < MAX_DEV_AXES; ++j)
            o->partial[o->npartial++] = t->partial[j];
    }
    to_sharding(o, env->devices);
    return 0;
}

/* Bytes each core reads to turn the computed result o into w, if one collective can, and its name:
 * parts of its own block from the other cores (all_reduce, reduce_scatter: w's block on each core lies
 * in o's), or the pages of w's block it lacks (all_gather: o's block lies in w's); "" when each core
 * already holds w's block. NULL when none can. */
static const char *collective_to(const placed *o, const placed *w, const plan_env *env, int64_t *per_core)
{
    int64_t parts = ways(o->partial, o->npartial);
    bool inside = true, covers = true, same = true;
    if (ways(w->partial, w->npartial) > 1)
        return NULL; /* a Partial result only as computed */
    for (int64_t v = 0; v < env->devices; ++v) {
        int64_t wv = block_volume(w, v), ov = block_volume(o, v), both = common_volume(o, w, v);
        inside &= both == wv;
        covers &= both == ov;
        same &= both == wv && both == ov;
        per_core[v] = nd_size_mul(parts > 1 ? nd_size_mul(wv, parts - 1) : subc(wv, both), env->elem_bytes);
    }
    if (parts > 1)
        return !inside ? NULL : same ? "all_reduce" : "reduce_scatter";
    return inside ? "" : covers ? "all_gather" : NULL; /* inside: each core keeps part of its block */
}

static int add_alt(step *s, const char *way, const char *what, const int64_t *in, const int64_t *coll,
                   const plan_env *env, const char *gather, const char *collective, const placed *computed,
                   const placed *result)
{
    if (!system_holds(computed, env) || !system_holds(result, env)) { /* never proposed: the user could not */
        s->uneven_skipped++;
        return 0;
    }
    if (s->nalts == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        s->alts = ndg_realloc(s->alts, sizeof *s->alts * (size_t)cap);
        s->cap = cap;
    }
    alt *a = &s->alts[s->nalts++];
    snprintf(a->what, sizeof a->what, "%s%s%s", way, *way ? "; " : "", what);
    a->bytes = a->max_core = a->input_bytes = 0;
    for (int64_t v = 0; v < env->devices; ++v) {
        int64_t core = nd_size_add(in[v], coll ? coll[v] : 0);
        a->input_bytes = nd_size_add(a->input_bytes, in[v]);
        a->bytes = nd_size_add(a->bytes, core);
        a->max_core = core < 0 || a->max_core < 0 ? -1 : core > a->max_core ? core : a->max_core;
    }
    a->gather = gather;
    a->collective = collective && *collective ? collective : NULL;
    a->two_phase_bytes = a->two_phase_max_core = -1;
    int64_t parts = ways(computed->partial, computed->npartial);
    for (int64_t v = 0; a->collective && strcmp(a->collective, "all_reduce") == 0 && v < env->devices; ++v) {
        int64_t share = nd_size_mul(2 * (parts - 1), block_volume(result, v)) / parts; /* elements */
        int64_t core = nd_size_add(in[v], nd_size_mul(share, env->elem_bytes));
        a->two_phase_bytes = nd_size_add(v ? a->two_phase_bytes : 0, core);
        a->two_phase_max_core = core > a->two_phase_max_core ? core : a->two_phase_max_core;
    }
    a->computed = *computed;
    a->result = *result;
    if (!notation_text(result, a->key, sizeof a->key))
        a->key[0] = '\0';
    return 0;
}

/* The way's words: which letters are read whole, and which follow a split other than the first. */
static void way_words(const step *s, const int *src, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; s->letters[i] && n < len; ++i) {
        int cand[3], nc = candidates(s, i, cand), w;
        if (nc == 1 || src[i] == cand[0])
            continue;
        if (src[i] < 0)
            w = snprintf(buf + n, len - n, "%sall_gather '%c' first", n ? ", " : "", s->letters[i]);
        else
            w = snprintf(buf + n, len - n, "%s'%c' as %s splits it", n ? ", " : "", s->letters[i], s->in[src[i]].name);
        n += w > 0 ? (size_t)w : 0;
    }
}

/* The resolutions of one way's result: keep it, all_reduce, reduce_scatter along each dim, or (for
 * --out) whatever one collective reaches the wanted sharding. */
static int resolutions(step *s, const plan_env *env, const int *src, const placed *o, const placed *want,
                       int64_t *in, int64_t *coll)
{
    char way[160], what[160];
    const char *gather = NULL;
    for (int i = 0; s->letters[i]; ++i)
        gather = src[i] < 0 && s->sharded[i] ? "all_gather" : gather;
    way_words(s, src, way, sizeof way);
    int64_t parts = ways(o->partial, o->npartial);
    int first = s->nalts, rc = 0;
    if (parts <= 1) {
        rc = add_alt(s, way, "no collective: the result is whole where it is computed", in, NULL, env, gather, NULL, o, o);
    } else {
        placed whole = *o;
        whole.npartial = 0;
        to_sharding(&whole, env->devices);
        snprintf(what, sizeof what, "leave the result Partial (a pending %s) for a later step", nd_reduce_name(o->reduce));
        rc = add_alt(s, way, what, in, NULL, env, gather, NULL, o, o);
        snprintf(what, sizeof what, "all_reduce the partial %ss: the result whole on every core",
                 nd_reduce_name(o->reduce));
        const char *name = collective_to(o, &whole, env, coll); /* all_reduce: whole's blocks are o's */
        rc = rc || (name && add_alt(s, way, what, in, coll, env, gather, name, o, &whole));
        for (int d = 0; d < o->rank && !rc; ++d)
            for (int major = 0; major < 2 && !rc; ++major) {
                /* the parts' axes now split d, minor to its own split, or major to it when it has one */
                if (major && whole.nsplit[d] == 0)
                    continue;
                placed scat = whole;
                if (scat.nsplit[d] + o->npartial > MAX_DEV_AXES)
                    continue;
                if (major) {
                    memmove(scat.split[d] + o->npartial, scat.split[d], sizeof(dev_axis) * (size_t)scat.nsplit[d]);
                    memcpy(scat.split[d], o->partial, sizeof(dev_axis) * (size_t)o->npartial);
                } else {
                    memcpy(scat.split[d] + scat.nsplit[d], o->partial, sizeof(dev_axis) * (size_t)o->npartial);
                }
                scat.nsplit[d] += o->npartial;
                to_sharding(&scat, env->devices);
                snprintf(what, sizeof what, "reduce_scatter along '%c'%s: the result split over the parts' cores",
                         o->letters[d], major ? ", parts major" : "");
                const char *scatter = collective_to(o, &scat, env, coll);
                rc = scatter && add_alt(s, way, what, in, coll, env, gather, scatter, o, &scat);
            }
    }
    if (rc || !want)
        return rc;
    for (int a = first; a < s->nalts; ++a)
        if (placement_equal(&s->alts[a].result, want, env->devices))
            return 0;
    const char *name = collective_to(o, want, env, coll);
    if (!name)
        return 0;
    if (*name)
        snprintf(what, sizeof what, "%s straight to the wanted sharding", name);
    else
        snprintf(what, sizeof what, "no collective: each core keeps its part of the result, the wanted sharding");
    return add_alt(s, way, what, in, coll, env, gather, name, o, want);
}

/* The reduce op a Partial input may carry through this einsum: sum and avg are linear, so they pass
 * through any contraction of one Partial operand; max, min and product pass only through an einsum of
 * one input that reduces nothing (a transpose or copy). */
static int partial_inputs(const step *s, nd_error *err)
{
    int partial = 0, reduced = 0;
    for (int i = 0; s->letters[i]; ++i)
        reduced += !s->free_[i];
    for (int k = 0; k < s->nin; ++k) {
        const placed *t = &s->in[k];
        if (ways(t->partial, t->npartial) <= 1)
            continue;
        ++partial;
        if (!nd_reduce_linear(t->reduce) && (s->nin > 1 || reduced))
            return nd_failc(err, ND_EREFUSED, "einsum '%s': input %s is Partial(%s); only a pending sum or avg, "
                            "being linear, passes through a product or a reduction: resolve the pending %s first",
                            s->einsum, t->name, nd_reduce_name(t->reduce), nd_reduce_name(t->reduce));
    }
    if (partial > 1)
        return nd_failc(err, ND_EREFUSED, "einsum '%s': both inputs are Partial; a product of two pending sums is not "
                        "a pending sum: resolve one first", s->einsum);
    return 0;
}

/* Every way to run the step whose device axes vary independently (one mesh axis on two result dims, or
 * on a free and a reduced axis, would leave blocks no device computes), each with its resolutions. */
static int enumerate_ways(step *s, const char *out_letters, const plan_env *env, const placed *want, nd_error *err)
{
    int cand[MAX_LETTERS][3], ncand[MAX_LETTERS], src[MAX_LETTERS], n = (int)strlen(s->letters);
    int64_t total = 1;
    char why[200] = "";
    for (int i = 0; i < n; ++i) {
        ncand[i] = candidates(s, i, cand[i]);
        src[i] = cand[i][0];
        total *= ncand[i];
    }
    if (total > MAX_WAYS || total * env->devices > MAX_WAY_WORK)
        return nd_fail(err, "einsum '%s': %lld ways to combine the inputs' splits over %lld cores, more than ndgen "
                       "plan weighs (%d, and %d way-cores)", s->einsum, (long long)total, (long long)env->devices,
                       MAX_WAYS, MAX_WAY_WORK);
    int64_t *in = ndg_malloc(sizeof *in * (size_t)env->devices * 2);
    int rc = 0;
    int pick[MAX_LETTERS] = {0};
    for (int64_t w = 0; w < total && !rc; ++w) {
        int64_t q = w;
        for (int i = n - 1; i >= 0; --i) { /* way 0 is every letter's first candidate */
            pick[i] = (int)(q % ncand[i]);
            q /= ncand[i];
            src[i] = cand[i][pick[i]];
        }
        dev_axis axes[MAX_DEV_AXES * 4];
        placed o;
        if (!independent(axes, way_axes(s, src, axes), env->devices)) {
            if (!why[0])
                snprintf(why, sizeof why, "the inputs' splits share a mesh axis between two axes of the einsum");
            continue;
        }
        if (way_output(s, out_letters, env, src, &o, why, sizeof why))
            continue;
        way_input_bytes(s, env, src, in);
        rc = resolutions(s, env, src, &o, want, in, in + env->devices);
        if (rc)
            nd_failc(err, ND_ENOMEM, "out of memory");
    }
    free(in);
    if (!rc && s->nalts == 0 && s->uneven_skipped)
        return nd_failc(err, ND_EREFUSED, "einsum '%s': every way to compute it splits a dim into pieces that do not "
                        "divide it, which %s refuses; give --uneven for a short last shard", s->einsum,
                        env->notation == ND_NOTATION_PSPEC ? "JAX" : "einshard's JAX NamedSharding");
    if (!rc && s->nalts == 0)
        return nd_failc(err, ND_EREFUSED, "einsum '%s': no way to compute it: %s", s->einsum, why);
    return rc;
}

/* Fewest bytes on the busiest core first, then fewest in total, then by the result's notation. */
static void rank_alts(step *s)
{
    for (int i = 1; i < s->nalts; ++i)
        for (int j = i; j > 0; --j) {
            const alt *a = &s->alts[j], *b = &s->alts[j - 1];
            if (a->max_core != b->max_core ? a->max_core > b->max_core
                : a->bytes != b->bytes     ? a->bytes > b->bytes
                                           : strcmp(a->key, b->key) >= 0)
                break;
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
            int d = dim_of(&s->in[k], s->letters[i]);
            s->sharded[i] |= d >= 0 && is_split(&s->in[k], d);
        }
    }
}

/* ---------------------------------------------------------------- output */

/* p in the user's notation (user_text). In text, a form the user's notation could not give says why,
 * and a placements or PartitionSpec form on a mesh of ndgen's own says that mesh's sizes. */
static void put_notation(FILE *fp, const placed *p, const plan_env *env, bool json)
{
    char text[1024], why[600], mesh[256];
    if (!user_text(p, env, text, sizeof text, why, sizeof why)) {
        fputs(json ? "null" : "(no regular mesh form)", fp);
        return;
    }
    if (json) {
        ndg_json_string(fp, text);
        return;
    }
    fputs(text, fp);
    bool own_mesh = why[0] || env->notation == ND_NOTATION_EINSHARD || !env->has_mesh;
    if (own_mesh && (text[0] == '[' || text[0] == 'P') && nd_mesh_format(&p->sh, mesh, sizeof mesh) >= 0)
        fprintf(fp, " on mesh %s", mesh);
    if (why[0])
        fprintf(fp, " (%s)", why);
}

/* "all_gather then all_reduce", "reduce_scatter", or "none". */
static const char *collectives_of(const alt *a, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", a->gather ? a->gather : "", a->gather && a->collective ? " then " : "",
             a->collective ? a->collective : "");
    return buf[0] ? buf : "none";
}

static void text_step(FILE *fp, const step *s, const plan_env *env, int i, bool all)
{
    const alt *c = &s->alts[s->chosen];
    char names[64];
    fprintf(fp, "step %d: %s\n  inputs:", i + 1, s->einsum);
    for (int k = 0; k < s->nin; ++k) {
        fprintf(fp, "%s %s ", k ? "," : "", s->in[k].name);
        put_notation(fp, &s->in[k], env, false);
    }
    fputs("\n  axes:  ", fp);
    for (int j = 0; s->letters[j]; ++j)
        fprintf(fp, "%s%c %s%s", j ? ", " : "", s->letters[j], s->free_[j] ? "free" : "reduced",
                s->sharded[j] ? " sharded" : "");
    fprintf(fp, "\n  parallelism: %s\n  output %s: ", parallelism(s), c->computed.name);
    put_notation(fp, &c->computed, env, false);
    int64_t parts = ways(c->computed.partial, c->computed.npartial);
    if (parts > 1)
        fprintf(fp, "  (Partial: a pending %s of %" PRId64 " parts)", nd_reduce_name(c->computed.reduce), parts);
    fprintf(fp, "\n  plan: %s\n  collective: %s; bytes moved: %" PRId64 " (inputs %" PRId64 "), at most %" PRId64
            " by one core\n", c->what, collectives_of(c, names, sizeof names), c->bytes, c->input_bytes, c->max_core);
    if (c->collective || c->gather)
        fprintf(fp, "  algorithm: direct, as ndgen's collective kernels run: each core reads what it lacks from the "
                    "cores holding it%s\n", c->collective && strcmp(c->collective, "all_reduce") == 0
                                               ? " (the other P-1 parts of its block)" : "");
    if (c->two_phase_bytes >= 0)
        fprintf(fp, "  as reduce_scatter then all_gather (two launches, 2(P-1)/P of each block per core): %" PRId64
                    " bytes, at most %" PRId64 " by one core\n", c->two_phase_bytes, c->two_phase_max_core);
    for (int a = 0; all && a < s->nalts; ++a)
        fprintf(fp, "    %d. %12" PRId64 " bytes, %10" PRId64 " on the busiest core  %s\n", a + 1, s->alts[a].bytes,
                s->alts[a].max_core, s->alts[a].what);
}

static void json_name(FILE *fp, const char *name)
{
    if (name)
        ndg_json_string(fp, name);
    else
        fputs("null", fp);
}

static void json_step(FILE *fp, const step *s, const plan_env *env, bool all)
{
    const alt *c = &s->alts[s->chosen];
    int64_t parts = ways(c->computed.partial, c->computed.npartial);
    fputs("    {\"einsum\": ", fp);
    ndg_json_string(fp, s->einsum);
    fputs(", \"axes\": [", fp);
    for (int j = 0; s->letters[j]; ++j)
        fprintf(fp, "%s{\"axis\": \"%c\", \"role\": \"%s\", \"sharded\": %s}", j ? ", " : "", s->letters[j],
                s->free_[j] ? "free" : "reduced", s->sharded[j] ? "true" : "false");
    fprintf(fp, "],\n     \"parallelism\": \"%s\", \"partial\": %s, \"parts\": %" PRId64 ", \"reduce\": ",
            parallelism(s), parts > 1 ? "true" : "false", parts);
    json_name(fp, parts > 1 ? nd_reduce_name(c->computed.reduce) : NULL);
    fputs(", \"output\": ", fp);
    put_notation(fp, &c->computed, env, true);
    fputs(",\n     \"gather\": ", fp);
    json_name(fp, c->gather);
    fputs(", \"collective\": ", fp);
    json_name(fp, c->collective);
    fprintf(fp, ", \"algorithm\": %s", c->collective || c->gather ? "\"direct\"" : "null");
    if (c->two_phase_bytes >= 0)
        fprintf(fp, ", \"two_phase_bytes\": %" PRId64 ", \"two_phase_max_core_bytes\": %" PRId64, c->two_phase_bytes,
                c->two_phase_max_core);
    fprintf(fp, ", \"bytes\": %" PRId64 ", \"input_bytes\": %" PRId64 ", \"max_core_bytes\": %" PRId64 ", \"result\": ",
            c->bytes, c->input_bytes, c->max_core);
    put_notation(fp, &c->result, env, true);
    if (all) {
        fputs(",\n     \"alternatives\": [", fp);
        for (int a = 0; a < s->nalts; ++a) {
            fputs(a ? ", {\"what\": " : "{\"what\": ", fp);
            ndg_json_string(fp, s->alts[a].what);
            fprintf(fp, ", \"bytes\": %" PRId64 ", \"max_core_bytes\": %" PRId64 ", \"gather\": ", s->alts[a].bytes,
                    s->alts[a].max_core);
            json_name(fp, s->alts[a].gather);
            fputs(", \"collective\": ", fp);
            json_name(fp, s->alts[a].collective);
            fputs(", \"result\": ", fp);
            put_notation(fp, &s->alts[a].result, env, true);
            fputc('}', fp);
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
    "Every way to combine the inputs' splits is weighed: a letter two inputs split differently may\n"
    "follow either, and any split letter may be gathered whole first. A way in which one mesh axis\n"
    "would split two letters (two result dims, or a free and a reduced axis) leaves blocks that no core\n"
    "computes and is never proposed. A Partial input (a pending sum or avg) stays pending through a\n"
    "contraction; max, min and product pass only through a one-input einsum that reduces nothing.\n"
    "Plans are ranked by the most bytes one core reads (the critical path), then by the total.\n"
    "Layouts are stated as the inputs are written (PartitionSpecs or placements over --mesh, in its\n"
    "axis names; else einshard), and one JAX would refuse (a split that does not divide) is never\n"
    "proposed without --uneven.\n"
    "\n"
    "Options:\n"
    "  --in NAME=SHARDING     an input: an einshard expression ('x y -> x y*'), or pspec:SPEC or\n"
    "                         placements:LIST over --mesh\n"
    "  --out SHARDING         the sharding wanted for the last result; default: the best plan whose\n"
    "                         result is not Partial and not reduce-scattered\n"
    "  --shape LETTER=N,...   the size of every axis letter (required)\n"
    "  --grid XxY             the cores the meshes cover (required)\n"
    "  --mesh AXES            the mesh of pspec: and placements: shardings\n"
    "  --uneven               allow einshard and pspec splits that do not divide (JAX refuses them)\n"
    "  --dtype f32|bf16|...   element type, for bytes (default f32)\n"
    "  --alternatives         list every plan for each einsum, best first\n"
    "  --format text|json     (default text)\n"
    "  --output FILE          write FILE (whole or not at all) instead of standard output\n"
    "  --help                 show this help\n";

enum { P_IN = 256, P_OUT, P_SHAPE, P_GRID, P_MESH, P_DTYPE, P_ALTS, P_FORMAT, P_OUTPUT, P_HELP, P_UNEVEN };

static const struct option plan_longopts[] = {
    {"in", required_argument, NULL, P_IN},         {"out", required_argument, NULL, P_OUT},
    {"shape", required_argument, NULL, P_SHAPE},   {"grid", required_argument, NULL, P_GRID},
    {"mesh", required_argument, NULL, P_MESH},     {"dtype", required_argument, NULL, P_DTYPE},
    {"alternatives", no_argument, NULL, P_ALTS},   {"format", required_argument, NULL, P_FORMAT},
    {"output", required_argument, NULL, P_OUTPUT}, {"help", no_argument, NULL, P_HELP},
    {"uneven", no_argument, NULL, P_UNEVEN},       {NULL, 0, NULL, 0},
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
        } else if (opt == P_UNEVEN) {
            o->uneven = true;
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
    env->uneven = o->uneven;
    env->notation = ND_NOTATION_EINSHARD;
    for (int i = 0; i < o->nins && env->notation == ND_NOTATION_EINSHARD; ++i) {
        const char *eq = strchr(o->ins[i], '=');
        if (eq && strncmp(eq + 1, "pspec:", 6) == 0)
            env->notation = ND_NOTATION_PSPEC;
        else if (eq && strncmp(eq + 1, "placements:", 11) == 0)
            env->notation = ND_NOTATION_PLACEMENTS;
    }
    env->has_mesh = o->mesh && nd_mesh_parse(o->mesh, &env->mesh_axes, err) == 0;
    if (o->mesh && !env->has_mesh)
        return -1;
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
    bool over = false;
    for (int a = 0; a < s->nalts; ++a)
        over = over || s->alts[a].bytes < 0 || s->alts[a].max_core < 0 || s->alts[a].input_bytes < 0;
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
        snprintf(p->name, sizeof p->name, "intermediate");
        to_sharding(p, env->devices);
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
    snprintf(p->name, sizeof p->name, "%.*s", (int)(eq - arg), arg);
    return check_tensor_bytes(p, "input", env, err);
}

static bool result_is(const alt *a, const placed *want, int64_t devices)
{
    return placement_equal(&a->result, want, devices);
}

/* The plan taken: the best reaching --out for the last step; else the best whose result is not Partial
 * (an elementwise op between steps would not keep a pending reduction), and for the last step not
 * reduce-scattered either. */
static int choose(step *s, bool last, const placed *want, const char *out, int64_t devices, nd_error *err)
{
    for (int a = 0; a < s->nalts; ++a) {
        const alt *x = &s->alts[a];
        bool ok = want ? result_is(x, want, devices)
                       : ways(x->result.partial, x->result.npartial) <= 1 &&
                             !(last && x->collective && strcmp(x->collective, "reduce_scatter") == 0);
        if (ok) {
            s->chosen = a;
            return 0;
        }
    }
    if (want)
        return nd_failc(err, ND_EREFUSED, "--out %s: no plan here reaches that sharding with one collective; see "
                        "--alternatives", out);
    return nd_failc(err, ND_EREFUSED, "einsum '%s': every plan leaves its result Partial", s->einsum);
}

static int plan_step(const plan_opts *o, const plan_env *env, step *steps, int i, int *next_in, nd_error *err)
{
    step *s = &steps[i];
    char in[2][ND_MAX_RANK + 1], out[ND_MAX_RANK + 1];
    bool last = i + 1 == o->nsteps;
    placed want, *wantp = NULL;
    s->einsum = o->steps[i];
    if (parse_einsum(s->einsum, in, &s->nin, out, err))
        return -1;
    for (int k = 0; k < s->nin; ++k)
        if (bind_input(o, env, steps, i, k, next_in, in[k], err))
            return -1;
    classify(s, out);
    if (partial_inputs(s, err))
        return -1;
    if (last && o->out) {
        for (int d = 0; out[d]; ++d)
            if (!env->size[(unsigned char)out[d]])
                return nd_fail(err, "--shape: no size for axis '%c' of '%s'", out[d], s->einsum);
        if (parse_sharding(o->out, out, env, &want, err))
            return -1;
        wantp = &want;
    }
    if (enumerate_ways(s, out, env, wantp, err))
        return -1;
    for (int a = 0; a < s->nalts; ++a) {
        snprintf(s->alts[a].computed.name, sizeof s->alts[a].computed.name, "%s", last ? "out" : "intermediate");
        if (check_tensor_bytes(&s->alts[a].computed, "the output", env, err))
            return -1;
    }
    if (step_overflows(s))
        return nd_fail(err, "--shape %s: the bytes einsum '%s' moves overflow 64 bits", env->shape, s->einsum);
    rank_alts(s);
    return choose(s, last, wantp, o->out, env->devices, err);
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
    static const char *const notation[] = {[ND_NOTATION_EINSHARD] = "einshard", [ND_NOTATION_PSPEC] = "pspec",
                                           [ND_NOTATION_PLACEMENTS] = "placements"};
    bool on_mesh = env->notation != ND_NOTATION_EINSHARD && env->has_mesh;
    if (json) {
        fprintf(fp, "{\n  \"devices\": %" PRId64 ",\n  \"notation\": \"%s\",\n  \"mesh\": ", env->devices,
                notation[env->notation]);
        json_name(fp, on_mesh ? env->mesh : NULL);
        fputs(",\n  \"steps\": [\n", fp);
    } else if (on_mesh) {
        fprintf(fp, "layouts: %s over mesh %s, as the inputs are written\n",
                env->notation == ND_NOTATION_PSPEC ? "PartitionSpecs" : "placements", env->mesh);
    }
    for (int i = 0; i < o->nsteps; ++i) {
        json ? json_step(fp, &steps[i], env, o->alternatives) : text_step(fp, &steps[i], env, i, o->alternatives);
        fputs(json && i + 1 < o->nsteps ? ",\n" : json ? "\n" : "", fp);
        ncoll += (steps[i].alts[steps[i].chosen].gather != NULL) + (steps[i].alts[steps[i].chosen].collective != NULL);
    }
    if (json) {
        fputs("  ],\n  \"collectives\": [", fp);
        for (int i = 0, n = 0; i < o->nsteps; ++i) {
            const alt *c = &steps[i].alts[steps[i].chosen];
            if (c->gather)
                fprintf(fp, "%s\"%s\"", n++ ? ", " : "", c->gather);
            if (c->collective)
                fprintf(fp, "%s\"%s\"", n++ ? ", " : "", c->collective);
        }
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
    step *steps = ndg_calloc(PLAN_MAX_STEPS, sizeof *steps);
    rc = setup_env(&o, &env, &err);
    for (int i = 0; i < o.nsteps && !rc; ++i)
        rc = plan_step(&o, &env, steps, i, &next_in, &err);
    if (!rc && next_in < o.nins)
        rc = nd_fail(&err, "--in %s: no einsum takes it", o.ins[next_in]);
    if (!rc && total_bytes(&o, steps) < 0)
        rc = nd_fail(&err, "--shape %s: the bytes all steps move overflow 64 bits", o.shape);
    ndf_output out;
    if (!rc && (rc = ndf_open(&out, o.output, &err)) == 0) {
        report(out.fp, &o, &env, steps);
        rc = ndf_commit(&out, NULL, &err);
    }
    if (rc)
        fprintf(stderr, "ndgen plan: %s\n", err.msg);
    for (int i = 0; i < PLAN_MAX_STEPS; ++i)
        free(steps[i].alts);
    free(steps);
    return rc ? 1 : 0;
}
