/*
 * fixed.c - a target's `fixed` (and ndgen generate --fixed): which distribution parameters its kernel
 * takes as constants. The sets offered, their names and their pick order are nd_accessor.h's
 * NDA_FIXED_SETS; this file reads the ways a user names a set and says why any other set is refused.
 * docs/partial.md is the user's table of both.
 */
#include <stdio.h>
#include <string.h>

#include "ndgen.h"

/* Every distribution parameter a user may name, by group (aliases share one), the NDA_FREE_* bit it
 * belongs to (0: no set leaves it to run time), and why not. The first row of a group is its name. */
enum { P_SHAPE, P_GRID, P_RANK, P_DTYPE, P_PAGE, P_SHARD, P_STRATEGY, P_MEMORY, P_COPIES, P_GROUPS };
static const struct param {
    const char *name;
    int group;
    unsigned free;
    const char *why;
} params[] = {
    {"shape", P_SHAPE, NDA_FREE_SHAPE, NULL},
    {"grid", P_GRID, NDA_FREE_GRID, NULL},
    {"cores", P_GRID, NDA_FREE_GRID, NULL},
    {"orientation", P_GRID, NDA_FREE_GRID, NULL},
    {"rank", P_RANK, 0, "the loop nest has one loop per dim and each helper one term per dim; a kernel with the "
                        "rank at run time is the generic kernel"},
    {"dtype", P_DTYPE, 0, "an op's kernels are generated per dtype: the element type is the template's C type"},
    {"page", P_PAGE, 0, "the page box gives the page size in bytes, the in-page offsets and the step of the "
                        "innermost loop; with it at run time every address is the generic accessor's arithmetic"},
    {"tile", P_PAGE, 0, NULL},
    {"shard", P_SHARD, 0, "the shard extents are the loops' bounds, the in-shard strides and the divisors of every "
                          "page coordinate; with them at run time nothing is left to fold: the generic kernel"},
    {"strategy", P_STRATEGY, 0, "round-robin and contiguous deal shards to cores by different formulas, chosen "
                                "when generating; a choice at run time is the generic kernel's branch"},
    {"memory", P_MEMORY, 0, "L1 and DRAM differ in which core writes a page and which reads are local: the loop "
                            "over a core's own pages with no lookup exists only in L1"},
    {"buffer", P_MEMORY, 0, NULL},
    {"banks", P_MEMORY, 0, NULL},
    {"copies", P_COPIES, 0, "which copy a core reads and how parts combine are constants of the helpers "
                            "(nda_part_range, nda_part_reduce, nda_part_page_read)"},
    {"replicas", P_COPIES, 0, NULL},
    {"parts", P_COPIES, 0, NULL},
    {"reduce", P_COPIES, 0, NULL},
};
enum { NPARAMS = sizeof params / sizeof *params };

static const struct param *param_named(const char *word, size_t n)
{
    for (int i = 0; i < NPARAMS; ++i)
        if (strlen(params[i].name) == n && strncmp(params[i].name, word, n) == 0)
            return &params[i];
    return NULL;
}

/* The group's first row: its name and reason. */
static const struct param *group_row(int group)
{
    for (int i = 0; i < NPARAMS; ++i)
        if (params[i].group == group)
            return &params[i];
    return NULL;
}

/* The refusal of a word that names no parameter, listing the groups (params[]) and the sets
 * (NDA_FIXED_SETS) a user may give instead. */
static int unknown_param(const char *text, const char *word, size_t n, nd_error *err)
{
    char groups[256] = "", sets[128] = "";
    for (int g = 0; g < P_GROUPS; ++g)
        snprintf(groups + strlen(groups), sizeof groups - strlen(groups), "%s%s", g ? ", " : "", group_row(g)->name);
    for (int i = 0; i < NDA_FIXED_COUNT; ++i)
        snprintf(sets + strlen(sets), sizeof sets - strlen(sets), "%s\"%s\"", i ? ", " : "", ndreg_fixed_name(i));
    return nd_fail(err, "fixed = \"%s\": '%.*s' is not a distribution parameter (%s); give a set (%s), \"all but "
                        "P,..\", or the parameters to fix", text, (int)n, word, groups, sets);
}

/* Marks in *groups (bit per group) every parameter named in list: words separated by commas, blanks
 * and "and". 0, or -1 with err naming the first word that is no parameter. */
static int read_list(const char *text, const char *list, unsigned *groups, nd_error *err)
{
    *groups = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ", ");
        if (n && !(n == 3 && strncmp(p, "and", 3) == 0)) {
            const struct param *q = param_named(p, n);
            if (!q)
                return unknown_param(text, p, n, err);
            *groups |= 1u << q->group;
        }
        p += n + (p[n] != '\0');
    }
    return 0;
}

int ndg_fixed_parse(const char *text, nda_fixed *out, nd_error *err)
{
    int set = ndreg_fixed_parse(text);
    if (set >= 0) {
        *out = (nda_fixed)set;
        return 0;
    }
    static const char but[] = "all but ";
    bool all_but = strncmp(text, but, sizeof but - 1) == 0;
    unsigned named;
    if (read_list(text, all_but ? text + sizeof but - 1 : text, &named, err))
        return -1;
    unsigned free_groups = all_but ? named : ((1u << P_GROUPS) - 1) & ~named, free = 0;
    for (int g = 0; g < P_GROUPS; ++g) {
        const struct param *q = group_row(g);
        if (!(free_groups >> g & 1u))
            continue;
        if (!q->free)
            return nd_failc(err, ND_EREFUSED, "fixed = \"%s\": refused: it leaves the %s to run time, and %s", text,
                            q->name, q->why);
        free |= q->free;
    }
    for (int i = 0; i < NDA_FIXED_COUNT; ++i)
        if (ndreg_fixed_free(i) == free) {
            *out = (nda_fixed)i;
            return 0;
        }
    /* only the grid: what a kernel reading the core list at run time costs, "shard" costs too */
    return nd_failc(err, ND_EREFUSED, "fixed = \"%s\": refused: it leaves only the grid to run time, and ndgen "
                                      "reads the shape at run time wherever it reads the core list: the kernel "
                                      "would be fixed = \"shard\" (all but shape,grid) serving fewer launches; "
                                      "give \"shard\"", text);
}
