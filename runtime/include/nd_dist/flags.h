/*
 * nd_dist/flags.h - a distribution from the fields a command line or a spec states (ND_DIST_FLAGS), shared by
 * ndgen, ndrun and specs. Part of nd_dist.h (library nd_dist).
 */
#ifndef ND_DIST_FLAGS_H
#define ND_DIST_FLAGS_H

#include "sharding.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- command-line distributions */

/*
 * The fields of a distribution as a command line or a spec states them, one row each (the one list;
 * the struct, names, help, spec keys and ndrun's per-operand overlay all come from it):
 *   X(field, flag, kind, before, help)
 *   field   the nd_dist_flags member and a spec's key ("l1_size")
 *   flag    the command-line name without "--" ("l1-size")
 *   kind    TEXT (takes a value) or SWITCH (takes none)
 *   before  --help text printed before the row (a section heading), usually ""
 *   help    the rest of the row's --help line after "--flag", its description at column 27
 */
#define ND_DIST_FLAGS(X)                                                                                          \
    X(shape, "shape", TEXT, "Distribution (sizes in elements):\n",                                                \
      " D0,D1,..        tensor shape, rank 1 to 8 (required)")                                                    \
    X(shard, "shard", TEXT, "", " D0,D1,..        shard shape, same rank as --shape (required unless --interleaved)") \
    X(interleaved, "interleaved", SWITCH, "", "           one page per shard, dealt round robin over every core or bank") \
    X(grid, "grid", TEXT, "", " XxY              device core grid: X columns by Y rows (required for L1)")          \
    X(cores, "cores", TEXT, "", " RANGES          core list, e.g. '(0,0)-(1,2); (3,0)'; default: the whole grid")  \
    X(orientation, "orientation", TEXT, "", " row|col   walk order inside each core range (default row)")          \
    X(strategy, "strategy", TEXT, "", " round_robin|contiguous   shard assignment (default round_robin)")         \
    X(page, "page", TEXT, "",                                                                                       \
      " P0,P1,..         page box, same rank as --shape; default: a row of the shard's width\n"                     \
      "                          (of the tensor's width when interleaved)")                                        \
    X(tile, "tile", TEXT, "", " HxW              tile pages over the last two dims: 32x32, 16x16, 16x32 or 32x16") \
    X(dtype, "dtype", TEXT, "", " T               element type: " ND_DTYPE_LIST "(default f32)")                 \
    X(buffer, "buffer", TEXT, "", " l1|dram        memory holding the shards (default l1); dram deals them over banks") \
    X(banks, "banks", TEXT, "", " N               DRAM banks (default 12)")                                         \
    X(l1_size, "l1-size", TEXT, "", " BYTES         L1 per core, e.g. 1536K (default 1536K)")                        \
    X(dram_bank_size, "dram-bank-size", TEXT, "", " BYTES  bytes per DRAM bank (default 1G)")                       \
    X(einshard, "einshard", TEXT,                                                                                  \
      "Mesh-level sharding (instead of --shard and --strategy; the mesh covers the core list):\n",                  \
      " EXPR         einshard expression, e.g. 'x y -> x y*' or 'a b -> * a* b*'")                                  \
    X(pspec, "pspec", TEXT, "",                                                                                     \
      " SPEC            JAX PartitionSpec over --mesh, e.g. \"P('dp', None)\" or \"P(None, unreduced={'tp'})\"")     \
    X(placements, "placements", TEXT, "",                                                                          \
      " LIST       DTensor placements over --mesh, e.g. '[Shard(0), Replicate()]' or '[Partial(sum)]'")            \
    X(mesh, "mesh", TEXT, "", " AXES             the mesh of --pspec or --placements: 'dp=2,tp=4' or '2,4'")         \
    X(even, "even", SWITCH, "",                                                                                     \
      "                  a split that does not divide its dim is an error, not a short last shard\n"                \
      "                          (the default for --einshard and --pspec, as JAX requires)")                       \
    X(uneven, "uneven", SWITCH, "", "                allow a short last shard for --einshard and --pspec too")

#define ND_DIST_FLAG_MEMBER_TEXT(field) const char *field;
#define ND_DIST_FLAG_MEMBER_SWITCH(field) bool field;
#define ND_DIST_FLAG_MEMBER(field, flag, kind, before, help) ND_DIST_FLAG_MEMBER_##kind(field)
#define ND_DIST_FLAG_ENUM(field, flag, kind, before, help) ND_DIST_FLAG_##field,

/* A distribution's fields as given (NULL or false: not given), shared by ndgen, ndrun and specs. A
 * mesh-level notation (einshard, pspec or placements) replaces shard and strategy. */
typedef struct nd_dist_flags {
    ND_DIST_FLAGS(ND_DIST_FLAG_MEMBER)
    bool spec_keys; /* messages name fields as a spec's keys ("l1_size"), not as flags ("--l1-size") */
} nd_dist_flags;

/* Each field's index in ND_DIST_FLAGS: ND_DIST_FLAG_shape, ..., and their count. */
enum { ND_DIST_FLAGS(ND_DIST_FLAG_ENUM) ND_DIST_FLAG_COUNT };

/* Validates every flag and the resulting distribution, including that it fits its memory (a
 * mesh-level sharding only when l1_size is given); each error names its flag or key and value. */
int nd_dist_from_flags(const nd_dist_flags *f, nd_dist *out, nd_error *err);
/* Whether the flags state a mesh-level sharding; if so nd_sharding_from_flags gives it as well. */
bool nd_dist_flags_sharded(const nd_dist_flags *f);
int nd_sharding_from_flags(const nd_dist_flags *f, nd_sharding *sh, nd_dist *out, nd_error *err);
/* The flags' long names without "--" and their fields' names (spec keys), by index, NULL-terminated. */
extern const char *const nd_dist_flag_names[];
extern const char *const nd_dist_flag_fields[];
/* Whether flag which is a switch (takes no value). */
bool nd_dist_flag_is_switch(int which);
/* The index of a flag name (nd_dist_flag_names), or of a field name with nd_dist_flag_field_index; -1. */
int nd_dist_flag_index(const char *name);
int nd_dist_flag_field_index(const char *field);
/* Stores flag which's value (a switch is set, value ignored); value must outlive f. */
void nd_dist_flags_set(nd_dist_flags *f, int which, const char *value);
/* to takes each field from gives, where gives states it: an operand's own flags over the shared ones.
 * A mesh-level notation in gives replaces to's whole notation (einshard, pspec, placements). */
void nd_dist_flags_overlay(nd_dist_flags *to, const nd_dist_flags *gives);
/* The --help lines for the flags above. */
extern const char nd_dist_flags_help[];

#ifdef __cplusplus
}
#endif
#endif
