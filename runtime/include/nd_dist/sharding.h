/*
 * nd_dist/sharding.h - mesh-level shardings and their three notations (einshard, JAX PartitionSpec, DTensor
 * placements): parsed, printed, and placed as ND distributions with copies. Part of nd_dist.h (library nd_dist).
 */
#ifndef ND_DIST_SHARDING_H
#define ND_DIST_SHARDING_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- mesh-level sharding */

/*
 * A device mesh laid over a core list, and what each mesh axis does to one tensor: split a tensor dim
 * (Shard), hold copies (Replicate) or hold partial results pending a reduction (Partial). This is the
 * layer users think in; nd_sharding_dist() turns it into an ND distribution with copies.
 *
 * The mesh is laid over the core list row-major: the last mesh axis varies fastest. A dim split by
 * several mesh axes is split by them in the order of split[dim], major first. Uneven splits follow
 * torch.chunk: each piece holds ceil(n / k) elements, so trailing pieces are short or empty (13 over 6
 * gives 3,3,3,3,1,0); the ND model keeps the short piece's padding and gives empty pieces no core.
 *
 * Three notations parse to it and print from it (mesh.c, einshard.c, pspec.c):
 *   einshard    'a b -> * a* b*'                 mesh from the expression, on D cores
 *   PartitionSpec  "P('a', None)" with mesh "r=2,a=4"  tensor-dim oriented, as in JAX
 *   placements  "[Replicate(), Shard(0)]" with mesh "2,4"  mesh-dim oriented, as in PyTorch DTensor
 * Parse errors name the column: "einshard 'a b': expected '->' at column 4".
 */
enum { ND_MAX_MESH = 16, ND_MESH_NAME = 24 };

typedef enum nd_mesh_kind { ND_MESH_REPLICATE, ND_MESH_SHARD, ND_MESH_PARTIAL } nd_mesh_kind;

/* The notation a sharding was written in: its system's rules apply to it. JAX (PartitionSpec) and
 * einshard (which builds a JAX NamedSharding) require every sharded dim to divide evenly; DTensor
 * chunks unevenly. */
typedef enum nd_notation { ND_NOTATION_NONE, ND_NOTATION_EINSHARD, ND_NOTATION_PSPEC, ND_NOTATION_PLACEMENTS } nd_notation;

/* How nd_sharding_dist treats a split that does not divide its dim. */
typedef enum nd_split_rule {
    ND_SPLIT_NOTATION, /* as the notation's system does: refused for einshard and PartitionSpec */
    ND_SPLIT_EVEN,     /* always refused */
    ND_SPLIT_UNEVEN,   /* always allowed: a short last shard (an ndgen extension to JAX and einshard) */
} nd_split_rule;

typedef struct nd_mesh_axis {
    char name[ND_MESH_NAME]; /* "" when unnamed */
    int64_t size;
    nd_mesh_kind kind;
    int dim;                 /* ND_MESH_SHARD: the tensor dim it splits */
    nd_reduce reduce;        /* ND_MESH_PARTIAL: the pending reduction */
    bool reduced;            /* ND_MESH_REPLICATE: named in a PartitionSpec's reduced={...} (JAX) */
} nd_mesh_axis;

typedef struct nd_sharding {
    nd_notation notation;                   /* what it was parsed from */
    int rank;                               /* of the tensor */
    int naxes;                              /* of the mesh */
    nd_mesh_axis axes[ND_MAX_MESH];
    char dim_names[ND_MAX_RANK][ND_MESH_NAME]; /* the tensor's axis names, "" when unknown */
    int nsplit[ND_MAX_RANK];                /* mesh axes splitting each dim */
    int8_t split[ND_MAX_RANK][ND_MAX_MESH]; /* which, major first */
} nd_sharding;

/* Devices in the mesh, and pieces dim d is split into. */
int64_t nd_sharding_devices(const nd_sharding *sh);
int64_t nd_sharding_ways(const nd_sharding *sh, int dim);
/* The one chunk rule of every split of a dim, the runtime's equal shards and the planner's blocks alike
 * (torch.chunk's): piece q of an extent n split k ways (n >= 0, k >= 1, 0 <= q < k) is [lo, hi) =
 * [q * ceil(n / k), (q + 1) * ceil(n / k)) clipped to n, so the last pieces may be short or empty. */
void nd_chunk_range(int64_t n, int64_t k, int64_t q, int64_t *lo, int64_t *hi);
/* Copies (product of Replicate and Partial axes) and partial sums (product of Partial axes). */
int64_t nd_sharding_copies(const nd_sharding *sh);
int64_t nd_sharding_parts(const nd_sharding *sh);
/* The same placement: the same mesh axes of size > 1 in the same order, each with the same role, and
 * the same split of every dim. Names, and axes of size 1, are not compared. */
bool nd_sharding_equal(const nd_sharding *a, const nd_sharding *b);
/* Checks the invariants every parser guarantees: sizes positive, split[] matching the Shard axes. */
int nd_sharding_check(const nd_sharding *sh, nd_error *err);

/* An einshard expression for a tensor of the given rank on `devices` cores. The proportional root
 * is computed in integers. */
int nd_einshard_parse(const char *expr, int rank, int64_t devices, nd_sharding *out, nd_error *err);
/* A mesh: "2,4", "2x4" or "dp=2,tp=4" (names optional, all or none); "" is one device. */
int nd_mesh_parse(const char *text, nd_sharding *out, nd_error *err);
/* A PartitionSpec over the mesh already in *sh (from nd_mesh_parse): "P('x', None, ('a','b'))",
 * the P( ) and quotes optional, as JAX's P takes it: fewer entries than the rank leave the last dims
 * unsplit; "unreduced={'y'}" holds pending reductions of "unreduced_kind=sum|max|min" (sum when
 * absent), "reduced={'z'}" names replicated axes whose gradients would be pending sums. */
int nd_pspec_parse(const char *text, int rank, nd_sharding *sh, nd_error *err);
/* DTensor placements, one per axis of the mesh in *sh: "[Shard(1), Replicate(), Partial(sum)]". */
int nd_placements_parse(const char *text, int rank, nd_sharding *sh, nd_error *err);

/* Whichever notation is given: einshard alone, or pspec or placements over mesh. Fails unless exactly
 * one notation is given, with a mesh exactly when it needs one. */
int nd_sharding_parse(const char *einshard, const char *pspec, const char *placements, const char *mesh, int rank,
                      int64_t devices, nd_sharding *out, nd_error *err);

/* The other notations of a sharding. Each fails, naming why, when the notation cannot express it:
 * einshard has no Partial and maps each dim to exactly one mesh axis; a PartitionSpec has no
 * pending reduction other than a sum. Unnamed axes print as "m0", "m1", ... (by position). */
int nd_einshard_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err);
int nd_pspec_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err);
int nd_placements_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err);
int nd_mesh_format(const nd_sharding *sh, char *buf, size_t len);

/* The mesh axis's name as printed: its own, or "m<position>". */
const char *nd_mesh_axis_name(const nd_sharding *sh, int axis, char *buf, size_t len);

/*
 * The ND distribution of a tensor sharded by sh. base supplies shape, dtype, page or tile, memory
 * and the core list the mesh is laid over (the whole gx by gy grid when it has no ranges); the shard
 * shape, strategy and copies are derived here. Copy r is the group of cores sharing its coordinates on
 * the Replicate and Partial axes (Partial axes major); within a copy, the core holding shard s comes
 * s-th. split: whether a dim that its split does not divide is an error or has a short last shard.
 */
int nd_sharding_dist(const nd_sharding *sh, const nd_dist_spec *base, int gx, int gy, nd_split_rule split,
                     nd_dist *out, nd_error *err);

/* The splits of sh over a tensor of that shape, as nd_sharding_dist checks them: refused when the rule
 * (or the notation's system) requires a dim to divide and it does not, or when several mesh axes split
 * a dim unevenly (DTensor's nested chunking is not one ND split). */
int nd_sharding_check_splits(const nd_sharding *sh, const int64_t *shape, nd_split_rule rule, nd_error *err);

/* Core i of a core list, walking its ranges in order; and the list's length. */
nd_core nd_core_set_at(const nd_core_set *set, int64_t i);
int64_t nd_core_set_count(const nd_core_set *set);

#ifdef __cplusplus
}
#endif
#endif
