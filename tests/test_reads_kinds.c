/*
 * test_reads_kinds.c OPS USEROPS - the typed op properties of kernel registries (nda_kernel_entry.reads
 * and moves_data, ABI 10) against what each op is, written out here: what an output element of every
 * bundled op reads of its inputs (elementwise ops pointwise, contractions by their letters, reductions
 * along their axes, softmax along its row, permute by its perm, all_reduce and reduce_scatter every part
 * at the output's coordinates, page copies whole), which
 * bundled ops only move data, and for a user's library that a reference is pointwise only when derived
 * from EXPR, never because a function is named "elementwise", and that a bundled reference's name on
 * a user's own function, or a bundled template's on a user's own template, says nothing either.
 */
#include <dlfcn.h>
#include <string.h>

#include "nd_accessor.h"
#include "testutil.h"

static int64_t passed;

typedef struct fact {
    const char *op;
    int reads;
    bool moves_data;
} fact;

static const fact bundled[] = {
    {"relu", NDA_READS_POINTWISE, false},     {"gelu", NDA_READS_POINTWISE, false},
    {"add", NDA_READS_POINTWISE, false},      {"mul_add", NDA_READS_POINTWISE, false},
    {"matmul", NDA_READS_LETTERS, false},     {"bmm", NDA_READS_LETTERS, false},
    {"scores", NDA_READS_LETTERS, false},     {"context", NDA_READS_LETTERS, false},
    {"matvec", NDA_READS_LETTERS, false},
    {"reduce_sum", NDA_READS_AXES, false},    {"reduce_max", NDA_READS_AXES, false},
    {"reduce_mean", NDA_READS_AXES, false},   {"softmax", NDA_READS_LAST_AXIS, false},
    {"permute", NDA_READS_PERM, true},        {"reshard", NDA_READS_POINTWISE, true},
    {"page_copy", NDA_READS_WHOLE, true},     {"all_reduce", NDA_READS_PARTS, false},
    {"reduce_scatter", NDA_READS_PARTS, false}, {"all_gather", NDA_READS_POINTWISE, false},
};

static const fact userops[] = {
    {"silu", NDA_READS_WHOLE, false},     /* no reference */
    {"softplus", NDA_READS_POINTWISE, false}, /* derived from its EXPR */
    {"iabsdiff", NDA_READS_WHOLE, false}, /* a function */
    {"iabsdiff_named", NDA_READS_WHOLE, false}, /* a function named "elementwise" */
    {"iabsdiff_softmax_named", NDA_READS_WHOLE, false}, /* a user's function named as a bundled one */
    {"first_part", NDA_READS_WHOLE, false}, /* a user's template named as the bundled all_reduce.c */
};

/* Every entry of each listed op carries the fact's fields; each op has at least one entry. */
static void check(const char *path, const fact *facts, int n)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const nda_kernel_library *lib = h ? dlsym(h, "nda_kernel_registry") : NULL;
    CHECK(lib != NULL, "%s: no registry", path);
    for (int f = 0; lib && f < n; ++f) {
        int seen = 0;
        for (int g = 0; g < lib->ngroups; ++g)
            for (int i = 0; i < lib->groups[g]->nentries; ++i) {
                const nda_kernel_entry *e = &lib->groups[g]->entries[i];
                if (strcmp(e->op, facts[f].op) != 0)
                    continue;
                ++seen;
                CHECK(e->reads == facts[f].reads && e->moves_data == facts[f].moves_data,
                      "%s: %s reads %d, moves data %d; want %d and %d", path, e->symbol, e->reads, e->moves_data,
                      facts[f].reads, facts[f].moves_data);
            }
        CHECK(seen > 0, "%s: no entry of op %s", path, facts[f].op);
        ++passed;
    }
    if (h)
        dlclose(h);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_reads_kinds OPS USEROPS\n");
        return 1;
    }
    check(argv[1], bundled, (int)(sizeof bundled / sizeof *bundled));
    check(argv[2], userops, (int)(sizeof userops / sizeof *userops));
    return test_finish(passed);
}
