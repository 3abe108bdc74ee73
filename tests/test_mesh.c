/*
 * test_mesh.c - mesh-level shardings: the einshard grammar with expected meshes and shard shapes,
 * PartitionSpec and placements, round trips between the three notations, every error, and the
 * placement of each sharding checked element by element against the mesh definition.
 */
#include <string.h>

#include "nd_dist.h"
#include "testutil.h"

typedef struct grammar_case {
    const char *expr;
    const char *shape;
    int64_t devices;
    int64_t mesh[ND_MAX_MESH]; /* expected sizes in expression order; 0 ends */
    int64_t shard[ND_MAX_RANK];/* expected elements per device along each dim */
    int64_t copies;
} grammar_case;

static const grammar_case grammar[] = {
    /* the einshard tutorial and REFERENCE examples, on 8 devices */
    {"x y -> x y*", "128,256", 8, {1, 8}, {128, 32}, 1},
    {"y z -> y* z", "256,64", 8, {8, 1}, {32, 64}, 1},
    {"... -> * ...", "8,128", 8, {8, 1, 1}, {8, 128}, 8}, /* einshard: a size-1 mesh axis per '...' dim */
    {"a b -> * a* b*", "4,4", 8, {2, 2, 2}, {2, 2}, 2},
    /* fixed sizes, and fixed with proportional */
    {"a b -> a2 b4", "8,8", 8, {2, 4}, {4, 2}, 1},
    {"a b -> a2* b", "8,8", 8, {8, 1}, {1, 8}, 1},
    {"a b -> a2* b*", "8,8", 8, {4, 2}, {2, 4}, 1},
    /* 64 devices over three stars: the root is exactly 4 */
    {"a b c -> a* b* c*", "8,8,8", 64, {4, 4, 4}, {2, 2, 2}, 1},
    {"a b -> * a* b*", "16,16", 64, {4, 4, 4}, {4, 4}, 4},
    /* replication axes anywhere on the right */
    {"a b -> a* 2 b", "8,6", 8, {4, 2, 1}, {2, 6}, 2},
    {"a b -> 2* a b", "8,6", 8, {8, 1, 1}, {8, 6}, 8},
    {"a b -> b* a 2", "8,6", 8, {4, 1, 2}, {8, 2}, 2},
    /* ... on both sides, in the middle and at the ends */
    {"a ... -> a* ...", "8,3,5", 4, {4, 1, 1}, {2, 3, 5}, 1},
    {"... b -> ... b*", "3,5,8", 4, {1, 1, 4}, {3, 5, 2}, 1},
    {"a ... d -> d* ... a 2", "4,3,5,8", 8, {4, 1, 1, 1, 2}, {4, 3, 5, 2}, 2},
    /* uneven: torch.chunk's ceil rule, 13 over 6 is 3,3,3,3,1,0 */
    {"a -> a*", "13", 6, {6}, {3}, 1},
    {"a b -> a3 b*", "10,7", 6, {3, 2}, {4, 4}, 1},
    /* names with underscores and several letters */
    {"batch d_model -> batch* d_model", "8,16", 4, {4, 1}, {2, 16}, 1},
    /* non-ASCII letters (einshard takes Unicode letters), also as the mesh axis names PartitionSpec
     * prints: 2, 3 and 4 UTF-8 bytes, one a prefix of another */
    {"\u00e9t\u00e9 \u03b1 -> \u00e9t\u00e9* \u03b1", "8,6", 4, {4, 1}, {2, 6}, 1},
    {"\u6570 \u6570x ... -> \u6570x* ... \u6570", "4,8,3", 8, {8, 1, 1}, {4, 1, 3}, 1},
    {"\U00010400 \U00010400a -> \U00010400a2* \U00010400*", "4,8", 8, {4, 2}, {2, 2}, 1},
};

/* Parses a grammar case's shape and expression; false (reported once, by check_grammar) on error. */
static bool parse_case(const grammar_case *g, nd_sharding *sh, int64_t *shape, int *rank, bool report)
{
    nd_error err;
    test_case = g->expr;
    if (nd_parse_dims("shape", g->shape, shape, rank, &err) == 0 &&
        nd_einshard_parse(g->expr, *rank, g->devices, sh, &err) == 0)
        return true;
    if (report)
        CHECK(0, "rejected: %s", err.msg);
    return false;
}

static void check_grammar(const grammar_case *g)
{
    nd_sharding sh;
    int64_t shape[ND_MAX_RANK];
    int rank;
    if (!parse_case(g, &sh, shape, &rank, true))
        return;
    int n = 0;
    while (n < ND_MAX_MESH && g->mesh[n])
        ++n;
    CHECK(sh.naxes == n, "mesh has %d axes, expected %d", sh.naxes, n);
    for (int i = 0; i < n && i < sh.naxes; ++i)
        CHECK(sh.axes[i].size == g->mesh[i], "mesh axis %d is %lld, expected %lld", i, (long long)sh.axes[i].size,
              (long long)g->mesh[i]);
    CHECK(nd_sharding_copies(&sh) == g->copies, "copies %lld, expected %lld", (long long)nd_sharding_copies(&sh),
          (long long)g->copies);
    for (int d = 0; d < rank; ++d) {
        int64_t k = nd_sharding_ways(&sh, d), per = (shape[d] + k - 1) / k;
        CHECK(per == g->shard[d], "dim %d: %lld per device, expected %lld", d, (long long)per, (long long)g->shard[d]);
    }
}

/* ---------------------------------------------------------------- errors */

typedef struct error_case {
    const char *expr;
    int rank;
    int64_t devices;
    const char *message; /* a substring of the expected message */
} error_case;

static const error_case einshard_errors[] = {
    {"a b", 2, 8, "expected '->' at column 4"},
    {"a b c -> a b c", 2, 8, "names 3 axes, but the tensor has rank 2"},
    {"a b = a b", 2, 8, "expected an axis name or '...' at column 5"},
    {"a b -> a* b*", 2, 6, "6 cores do not factor: 6 left for 2 '*' axes is not a perfect power of 2"},
    {"a b -> a3 b*", 2, 8, "8 cores do not factor: the fixed sizes and star bases multiply to 3, which does not divide 8"},
    {"a b -> a2 b2", 2, 8, "the mesh holds 4 devices, but there are 8 cores"},
    {"a b -> a*", 2, 8, "left-hand axis 'b' is missing on the right side"},
    {"a ... b ... -> a b", 2, 8, "more than one '...' on the left side at column 9"},
    {"a ... -> a* ... ...", 3, 8, "more than one '...' on the right side at column 17"},
    {"a ... -> a*", 3, 8, "'...' appears on the left side only"},
    {"a a -> a*", 2, 8, "axis 'a' named twice on the left side"},
    {"a b -> a* c", 2, 8, "left-hand axis 'b' is missing on the right side"}, /* c: a replication axis */
    {"a a -> a*", 2, 8, "axis 'a' named twice on the left side at column 3"},
    {"a b -> a*2 b", 2, 8, "the size comes before '*', as in 'a2*' at column 10"},
    {"a2 b -> a b*", 2, 8, "left-hand axis names are letters and '_', not digits at column 2"},
    {"a b -> a0* b", 2, 8, "size 0; mesh axis sizes are positive at column 9"},
    {"a b -> a .. b", 2, 8, "expected '...' at column 10"},
    {"a b -> a+ b", 2, 8, "expected a blank between elements, not '+' at column 9"},
    {"-> *", 1, 8, "the left side names no axis"},
};

typedef struct notation_error {
    const char *mesh, *text;
    int rank;
    bool pspec;
    const char *message;
} notation_error;

static const notation_error notation_errors[] = {
    {"dp=2,tp=4", "P('dp', 'tp', None)", 2, true, "longer than the tensor's rank 2 at column 15"},
    {"dp=2,tp=4", "P('dp', 'dp')", 2, true, "mesh axis 'dp' used twice (a partition, unreduced and reduced cannot overlap) at column 9"},
    {"dp=2,tp=4", "P(('dp', 'tp'), unreduced={'tp'})", 2, true, "mesh axis 'tp' used twice"},
    {"dp=2,tp=4", "P('sp')", 2, true, "mesh axis 'sp' is not in the mesh dp=2,tp=4 at column 3"},
    {"dp=2,tp=4", "P('dp'", 2, true, "expected ')'"},
    /* beyond ASCII: a stray character named whole, columns counted in characters */
    {"d\u00e9=2", "P('d\u00e9', None)\u00e9", 2, true, "unexpected '\u00e9' at column 14"},
    /* JAX's keyword arguments (jax/_src/partition_spec.py, _check) */
    {"dp=2,tp=4", "P('dp', reduced={'dp'})", 2, true, "mesh axis 'dp' used twice"},
    {"dp=2,tp=4", "P(unreduced={'tp'}, reduced={'tp'})", 2, true, "mesh axis 'tp' used twice"},
    {"dp=2,tp=4", "P(None, unreduced={None})", 2, true, "unreduced cannot contain None; name mesh axes"},
    {"dp=2,tp=4", "P('dp', unreduced_kind=max)", 2, true, "unreduced_kind without unreduced={...}"},
    {"dp=2,tp=4", "P(unreduced={'tp'}, unreduced_kind=avg)", 2, true, "unreduced_kind 'avg': JAX's UnreducedKind is sum, max or min"},
    {"dp=2,tp=4", "P(unreduced={'tp'}, 'dp')", 2, true, "a dim's entry after keyword arguments"},
    {"dp=2,tp=4", "P(reduced={'tp'}, reduced={'dp'})", 2, true, "keyword argument given twice"},
    {"dp=2,tp=4", "P('dp', reduced={'tp'}, unreduced={'tp'})", 2, true, "mesh axis 'tp' used twice"},
    {"dp=2,tp=4", "P('dp', unreduced=('tp',))", 2, true, "unreduced= takes a set of mesh axes, such as {'tp'}"},
    {"2,4", "[Shard(0)]", 2, false, "1 placements for a mesh of 2 axes"},
    {"2,4", "[Shard(2), Replicate()]", 2, false, "2 is out of range -2..1 at column 8"},
    {"2,4", "[Shard(0), Partial(mean)]", 2, false, "unknown reduction 'mean'"},
    {"2,4", "[Shard(0), Replicate(), Replicate()]", 2, false, "more placements than the mesh's 2 axes"},
    {"2,4", "[Spread(0), Replicate()]", 2, false, "expected Shard(d), _StridedShard(d, sf=k), Replicate() or Partial() at column 2"},
};

static void check_message(const char *what, int rc, const nd_error *err, const char *want)
{
    test_case = what;
    CHECK(rc != 0, "accepted; expected an error containing \"%s\"", want);
    if (rc)
        CHECK(strstr(err->msg, want) != NULL, "message \"%s\" lacks \"%s\"", err->msg, want);
}

static void check_errors(void)
{
    nd_sharding sh;
    nd_error err;
    for (size_t i = 0; i < sizeof einshard_errors / sizeof *einshard_errors; ++i) {
        const error_case *e = &einshard_errors[i];
        check_message(e->expr, nd_einshard_parse(e->expr, e->rank, e->devices, &sh, &err), &err, e->message);
    }
    for (size_t i = 0; i < sizeof notation_errors / sizeof *notation_errors; ++i) {
        const notation_error *e = &notation_errors[i];
        int rc = nd_mesh_parse(e->mesh, &sh, &err);
        CHECK(rc == 0, "mesh %s: %s", e->mesh, err.msg);
        rc = e->pspec ? nd_pspec_parse(e->text, e->rank, &sh, &err) : nd_placements_parse(e->text, e->rank, &sh, &err);
        check_message(e->text, rc, &err, e->message);
    }
    check_message("mesh 2,y=4", nd_mesh_parse("2,y=4", &sh, &err), &err, "name every mesh axis or none");
    /* names are letters: no byte order mark, combining mark or other script's digit; their limit is bytes */
    check_message("a name with a byte order mark", nd_mesh_parse("ab=2,\ufeffab=1", &sh, &err), &err,
                  "expected a mesh axis name at column 6");
    check_message("a name of a combining mark", nd_mesh_parse("\u0301a=2", &sh, &err), &err, "at column 1");
    check_message("a name of Arabic-Indic digits", nd_mesh_parse("x=2,\u0661=2", &sh, &err), &err, "at column 5");
    check_message("a name of 24 bytes", nd_mesh_parse("\U00010400\U00010400\U00010400\U00010400\U00010400\U00010400=2",
                                                    &sh, &err), &err, "name longer than 23 bytes at column 1");
    /* what one notation cannot say */
    CHECK(nd_mesh_parse("dp=2,tp=4", &sh, &err) == 0 && nd_pspec_parse("P(('dp','tp'))", 1, &sh, &err) == 0, "%s",
          err.msg);
    char buf[256];
    check_message("einshard of a dim split twice", nd_einshard_format(&sh, buf, sizeof buf, &err), &err,
                  "dim 0 is split by 2 mesh axes");
    CHECK(nd_placements_parse("[Partial(max), Shard(0)]", 1, &sh, &err) == 0, "%s", err.msg);
    /* JAX's UnreducedKind holds max (jax/_src/partition_spec.py) */
    CHECK(nd_pspec_format(&sh, buf, sizeof buf, &err) >= 0 &&
              strcmp(buf, "P('tp', unreduced={'dp'}, unreduced_kind=max)") == 0, "PartitionSpec of Partial(max): %s",
          buf);
    check_message("einshard of Partial", nd_einshard_format(&sh, buf, sizeof buf, &err), &err,
                  "einshard has no pending reductions");
    CHECK(nd_placements_parse("[Partial(product), Shard(0)]", 1, &sh, &err) == 0, "%s", err.msg);
    check_message("PartitionSpec of Partial(product)", nd_pspec_format(&sh, buf, sizeof buf, &err), &err,
                  "Partial(product) on mesh axis 'dp' has no PartitionSpec form: JAX's unreduced_kind is sum, max or min");
    CHECK(nd_pspec_parse("P(('tp','dp'))", 1, &sh, &err) == 0, "%s", err.msg);
    CHECK(nd_placements_format(&sh, buf, sizeof buf, &err) >= 0 &&
              strcmp(buf, "[_StridedShard(dim=0, sf=4), Shard(0)]") == 0, "placements of a reversed split: %s", buf);
    CHECK(nd_mesh_parse("x=2,y=2,z=2", &sh, &err) == 0 && nd_pspec_parse("P(('y','x','z'))", 1, &sh, &err) == 0,
          "%s", err.msg);
    check_message("placements of a split no single _StridedShard states",
                  nd_placements_format(&sh, buf, sizeof buf, &err), &err,
                  "dim 0 is split by its mesh axes in an order DTensor placements cannot state");
}

/* ---------------------------------------------------------------- round trips */

typedef struct trip_case {
    const char *mesh, *pspec, *placements, *einshard; /* einshard NULL: it has no einshard form */
    int rank;
} trip_case;

static const trip_case trips[] = {
    {"x=1,y=8", "P('x', 'y')", "[Shard(0), Shard(1)]", "x y -> x y8", 2},
    {"m0=2,a=2,b=2", "P('a', 'b')", "[Replicate(), Shard(0), Shard(1)]", "a b -> 2 a2 b2", 2},
    {"dp=2,tp=4", "P('dp', None)", "[Shard(0), Replicate()]", "dp a -> dp2 4 a", 2},
    {"dp=2,tp=4", "P(None, 'tp', 'dp')", "[Shard(2), Shard(1)]", "a tp dp -> dp2 tp4 a", 3},
    {"dp=2,tp=4", "P(('dp', 'tp'), None)", "[Shard(0), Shard(0)]", NULL, 2},
    {"dp=2,tp=4", "P('dp', None, unreduced={'tp'}, unreduced_kind=sum)", "[Shard(0), Partial(sum)]", NULL, 2},
    {"dp=2,tp=4", "P('dp', None, unreduced={'tp'}, unreduced_kind=max)", "[Shard(0), Partial(max)]", NULL, 2},
    {"dp=2,tp=4", "P(None, 'dp', reduced={'tp'})", "[Shard(1), Replicate()]", "a dp -> dp2 4 a", 2},
};

/* Parses every notation of one case and checks they agree, then prints each and parses it back. */
static void check_trip(const trip_case *t)
{
    nd_sharding a, b, c;
    nd_error err;
    char text[512];
    test_case = t->pspec;
    if (nd_mesh_parse(t->mesh, &a, &err) || nd_pspec_parse(t->pspec, t->rank, &a, &err) ||
        nd_mesh_parse(t->mesh, &b, &err) || nd_placements_parse(t->placements, t->rank, &b, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    CHECK(nd_sharding_equal(&a, &b), "PartitionSpec and placements differ");
    CHECK(nd_pspec_format(&a, text, sizeof text, &err) >= 0 && strcmp(text, t->pspec) == 0, "pspec printed %s", text);
    CHECK(nd_placements_format(&a, text, sizeof text, &err) >= 0 && strcmp(text, t->placements) == 0,
          "placements printed %s", text);
    int rc = nd_einshard_format(&a, text, sizeof text, &err);
    if (!t->einshard) {
        CHECK(rc < 0, "printed einshard %s for a sharding einshard cannot express", text);
        return;
    }
    CHECK(rc >= 0 && strcmp(text, t->einshard) == 0, "einshard printed %s, expected %s", rc >= 0 ? text : err.msg,
          t->einshard);
    CHECK(nd_einshard_parse(t->einshard, t->rank, nd_sharding_devices(&a), &c, &err) == 0, "%s", err.msg);
    CHECK(nd_sharding_equal(&a, &c), "einshard %s parses to another sharding", t->einshard);
}

/* einshard -> PartitionSpec -> placements -> einshard, for every grammar case. */
static void check_grammar_trip(const grammar_case *g)
{
    nd_sharding a, b;
    nd_error err;
    char text[512], mesh[512];
    int64_t shape[ND_MAX_RANK];
    int rank;
    if (!parse_case(g, &a, shape, &rank, false))
        return;
    nd_mesh_format(&a, mesh, sizeof mesh);
    CHECK(nd_pspec_format(&a, text, sizeof text, &err) >= 0 && nd_mesh_parse(mesh, &b, &err) == 0 &&
              nd_pspec_parse(text, rank, &b, &err) == 0 && nd_sharding_equal(&a, &b), "via PartitionSpec %s", text);
    CHECK(nd_placements_format(&b, text, sizeof text, &err) >= 0 && nd_placements_parse(text, rank, &b, &err) == 0 &&
              nd_sharding_equal(&a, &b), "via placements %s", text);
    CHECK(nd_einshard_format(&b, text, sizeof text, &err) >= 0 &&
              nd_einshard_parse(text, rank, g->devices, &b, &err) == 0 && nd_sharding_equal(&a, &b),
          "via einshard %s", text);
}

/* ---------------------------------------------------------------- placement, element by element */

/* The mesh coordinate of device v, row-major over the mesh. */
static void mesh_coord(const nd_sharding *sh, int64_t v, int64_t *m)
{
    for (int i = sh->naxes - 1; i >= 0; --i) {
        m[i] = v % sh->axes[i].size;
        v /= sh->axes[i].size;
    }
}

/* Whether device v holds element e by the mesh definition: along each dim, its coordinate on the
 * dim's mesh axes (major first) picks a chunk of ceil(n / k) elements. */
static bool should_hold(const nd_sharding *sh, const int64_t *shape, int64_t v, const int64_t *e)
{
    int64_t m[ND_MAX_MESH];
    mesh_coord(sh, v, m);
    for (int d = 0; d < sh->rank; ++d) {
        int64_t q = 0, k = 1;
        for (int j = 0; j < sh->nsplit[d]; ++j) {
            q = q * sh->axes[sh->split[d][j]].size + m[sh->split[d][j]];
            k *= sh->axes[sh->split[d][j]].size;
        }
        int64_t c = (shape[d] + k - 1) / k;
        if (e[d] / c != q)
            return false;
    }
    return true;
}

/* Whether the distribution puts element e on device v (position v of the row-major gx by 1 grid). */
static bool does_hold(const nd_dist *d, int64_t v, const int64_t *e)
{
    int64_t li = nd_dist_core_index(d, (nd_core){(int32_t)v, 0}), pc[ND_MAX_RANK];
    if (li < 0)
        return false;
    for (int i = 0; i < d->spec.rank; ++i)
        pc[i] = e[i] / d->spec.page[i];
    return nd_layout_locate(&d->layout, pc).core == li % d->layout.ncores;
}

static void check_placement(const nd_sharding *sh, const int64_t *shape, int rank, int64_t devices)
{
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    s.rank = rank;
    memcpy(s.shape, shape, (size_t)rank * sizeof *shape);
    /* uneven: the ND placement of a short last shard is checked here; the notations' own rules
     * (JAX and einshard refuse it) in test_notations */
    if (nd_sharding_dist(sh, &s, (int)devices, 1, ND_SPLIT_UNEVEN, &d, &err)) {
        CHECK(0, "placement: %s", err.msg);
        return;
    }
    CHECK(d.spec.replicas == nd_sharding_copies(sh), "replicas %d", (int)d.spec.replicas);
    int64_t e[ND_MAX_RANK] = {0}, total = 1, bad = 0;
    for (int i = 0; i < rank; ++i)
        total *= shape[i];
    for (int64_t flat = 0; flat < total; ++flat) {
        for (int i = rank - 1, f = (int)flat; i >= 0; --i) {
            e[i] = f % shape[i];
            f /= (int)shape[i];
        }
        for (int64_t v = 0; v < devices; ++v)
            bad += should_hold(sh, shape, v, e) != does_hold(&d, v, e);
    }
    CHECK(bad == 0, "%lld (element, device) pairs placed against the mesh definition", (long long)bad);
}

static void check_grammar_placement(const grammar_case *g)
{
    nd_sharding sh;
    int64_t shape[ND_MAX_RANK];
    int rank;
    if (parse_case(g, &sh, shape, &rank, false))
        check_placement(&sh, shape, rank, g->devices);
}

/* A dim split by two axes and a Partial axis: pieces, copies and parts. */
static void check_partial_placement(void)
{
    nd_sharding sh;
    nd_error err;
    int64_t shape[2] = {12, 6};
    test_case = "[Shard(0), Partial(sum), Shard(0)]";
    CHECK(nd_mesh_parse("a=2,p=2,b=2", &sh, &err) == 0 && nd_placements_parse(test_case, 2, &sh, &err) == 0, "%s",
          err.msg);
    CHECK(nd_sharding_parts(&sh) == 2 && nd_sharding_copies(&sh) == 2, "parts %lld copies %lld",
          (long long)nd_sharding_parts(&sh), (long long)nd_sharding_copies(&sh));
    check_placement(&sh, shape, 2, 8);
    /* even: 10 over 4 does not divide */
    nd_dist_spec s;
    nd_dist d;
    nd_dist_spec_init(&s);
    s.rank = 2;
    memcpy(s.shape, shape, sizeof shape);
    s.shape[0] = 10;
    check_message("even split", nd_sharding_dist(&sh, &s, 8, 1, ND_SPLIT_EVEN, &d, &err), &err,
                  "dim 0: size 10 does not divide into 4 shards");
    /* DTensor chunks piece by piece: 10 -> 5,5 -> 3,2,3,2, which equal ND shards cannot hold */
    check_message("nested uneven split", nd_sharding_dist(&sh, &s, 8, 1, ND_SPLIT_NOTATION, &d, &err), &err,
                  "dim 0: size 10 split by 2 mesh axes one after another gives pieces 3,2,3,2 (DTensor's nested "
                  "chunking), but an ND distribution holds equal shards, 3,3,3,1; refused");
    s.page_kind = ND_PAGE_TILE;
    s.tile_h = s.tile_w = 32;
    s.shape[0] = 100;
    s.shape[1] = 64;
    check_message("tile split", nd_sharding_dist(&sh, &s, 8, 1, ND_SPLIT_NOTATION, &d, &err), &err,
                  "dim 0: size 100 split 4 ways gives shards of 25, not a multiple of the 32-element page");
    s.page_kind = ND_PAGE_ROW;
    check_message("too few cores", nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_NOTATION, &d, &err), &err,
                  "mesh a=2,p=2,b=2: it holds 8 devices, but the core list has 4 cores");
}

/* DTensor's own examples of nested chunking (compute_local_shape_and_global_offset's docstring in
 * torch/distributed/tensor/_utils.py, and 13 rows over a 2x3 mesh): the widths DTensor gives differ from
 * one chunking of the whole dim, so ndgen refuses them, naming DTensor's widths. */
static void check_dtensor_nested(void)
{
    static const struct {
        const char *mesh, *placements;
        int64_t shape[2];
        const char *want;
    } cases[] = {
        {"2,2", "[Shard(1), Shard(1)]", {2, 5}, "dim 1: size 5 split by 2 mesh axes one after another gives pieces 2,1,1,1"},
        {"2,3", "[Shard(0), Shard(0)]", {13, 4}, "dim 0: size 13 split by 2 mesh axes one after another gives pieces 3,3,1,2,2,2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        nd_sharding sh;
        nd_error err;
        nd_dist_spec s;
        nd_dist d;
        test_case = cases[i].placements;
        CHECK(nd_mesh_parse(cases[i].mesh, &sh, &err) == 0 && nd_placements_parse(cases[i].placements, 2, &sh, &err) == 0,
              "%s", err.msg);
        nd_dist_spec_init(&s);
        s.rank = 2;
        memcpy(s.shape, cases[i].shape, sizeof s.shape[0] * 2);
        int devices = (int)nd_sharding_devices(&sh);
        check_message("nested", nd_sharding_dist(&sh, &s, devices, 1, ND_SPLIT_NOTATION, &d, &err), &err, cases[i].want);
    }
}

/* Each notation keeps its system's rule for a split that does not divide: JAX refuses it
 * (jax/_src/sharding.py, _common_shard_shape), and so does einshard, which builds a JAX NamedSharding;
 * DTensor chunks with torch.chunk. ND_SPLIT_UNEVEN and ND_SPLIT_EVEN override the notation. */
static void check_split_rules(void)
{
    nd_sharding sh;
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    s.rank = 1;
    s.shape[0] = 13;
    test_case = "P('x') on 13 over 4";
    CHECK(nd_mesh_parse("x=4", &sh, &err) == 0 && nd_pspec_parse("P('x')", 1, &sh, &err) == 0, "%s", err.msg);
    check_message(test_case, nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_NOTATION, &d, &err), &err,
                  "dim 0: size 13 does not divide into 4 shards; JAX requires a PartitionSpec to divide every dim");
    CHECK(err.code == ND_EREFUSED, "code %s", nd_errcode_name(err.code));
    CHECK(nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_UNEVEN, &d, &err) == 0 && d.spec.shard[0] == 4, "uneven: %s",
          err.msg);
    test_case = "a -> a* on 13 over 4";
    CHECK(nd_einshard_parse("a -> a*", 1, 4, &sh, &err) == 0, "%s", err.msg);
    check_message(test_case, nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_NOTATION, &d, &err), &err,
                  "axis 'a' (dim 0): size 13 does not divide into 4 shards; einshard builds a JAX NamedSharding");
    test_case = "[Shard(0)] on 13 over 4";
    CHECK(nd_mesh_parse("4", &sh, &err) == 0 && nd_placements_parse("[Shard(0)]", 1, &sh, &err) == 0, "%s", err.msg);
    CHECK(nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_NOTATION, &d, &err) == 0 && d.spec.shard[0] == 4, "DTensor: %s",
          err.msg);
    check_message(test_case, nd_sharding_dist(&sh, &s, 4, 1, ND_SPLIT_EVEN, &d, &err), &err,
                  "dim 0: size 13 does not divide into 4 shards");
}

int main(void)
{
    int64_t n = 0;
    for (size_t i = 0; i < sizeof grammar / sizeof *grammar; ++i, ++n) {
        check_grammar(&grammar[i]);
        check_grammar_trip(&grammar[i]);
        check_grammar_placement(&grammar[i]);
    }
    for (size_t i = 0; i < sizeof trips / sizeof *trips; ++i, ++n)
        check_trip(&trips[i]);
    check_errors();
    check_partial_placement();
    check_dtensor_nested();
    check_split_rules();
    return test_finish(n + 2);
}
