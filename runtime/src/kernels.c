/* kernels.c - loading generated kernel libraries and choosing a kernel for a launch. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

struct nd_kernels {
    int nlibs;
    void **libs;
    int n, cap;
    const nda_kernel_entry **entries;
};

int nd_kernels_open(nd_kernels **out, nd_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : nd_fail(err, "kernels: out of memory");
}

void nd_kernels_close(nd_kernels *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->nlibs; ++i)
        dlclose(k->libs[i]);
    free(k->libs);
    free(k->entries);
    free(k);
}

int nd_kernels_count(const nd_kernels *k) { return k->n; }

static int add_entries(nd_kernels *k, const nda_kernel_library *lib)
{
    for (int g = 0; g < lib->ngroups; ++g)
        for (int i = 0; i < lib->groups[g]->nentries; ++i) {
            if (k->n == k->cap) {
                int cap = k->cap ? 2 * k->cap : 64;
                const nda_kernel_entry **e = realloc(k->entries, (size_t)cap * sizeof *e);
                if (!e)
                    return -1;
                k->entries = e;
                k->cap = cap;
            }
            k->entries[k->n++] = &lib->groups[g]->entries[i];
        }
    return 0;
}

int nd_kernels_load(nd_kernels *k, const char *path, nd_error *err)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return nd_fail(err, "%s: cannot load the kernel library: %s", path, dlerror());
    const nda_kernel_library *lib = dlsym(h, "nda_kernel_registry");
    if (!lib) {
        dlclose(h);
        return nd_fail(err, "%s: not a kernel library: it has no nda_kernel_registry symbol", path);
    }
    if (lib->abi_version != NDA_ABI_VERSION) {
        unsigned v = lib->abi_version;
        dlclose(h);
        return nd_fail(err, "%s: kernel ABI version %u, but this runtime reads version %u; regenerate the library "
                            "with a matching ndgen", path, v, NDA_ABI_VERSION);
    }
    void **libs = realloc(k->libs, (size_t)(k->nlibs + 1) * sizeof *libs);
    int before = k->n;
    if (!libs || add_entries(k, lib)) {
        k->libs = libs ? libs : k->libs;
        k->n = before;
        dlclose(h);
        return nd_fail(err, "%s: out of memory registering kernels", path);
    }
    k->libs = libs;
    k->libs[k->nlibs++] = h;
    return 0;
}

/* ---------------------------------------------------------------- choosing */

static bool matches(const nda_kernel_entry *e, char sigs[][2048], int n)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(e->signatures[i], sigs[i]) != 0)
            return false;
    return true;
}

/* "no specialized kernel matches: operand 'a' is <sig>; the nearest target, <symbol>, has <sig>" */
static int no_match(const char *op, const nda_kernel_entry *const *cands, int ncands, char sigs[][2048], int n,
                    nd_error *err)
{
    const nda_kernel_entry *best = NULL;
    int best_same = -1, first_diff = 0;
    for (int c = 0; c < ncands; ++c) {
        int same = 0, diff = -1;
        for (int i = 0; i < n; ++i) {
            bool eq = strcmp(cands[c]->signatures[i], sigs[i]) == 0;
            same += eq;
            diff = diff < 0 && !eq ? i : diff;
        }
        if (same > best_same) {
            best = cands[c];
            best_same = same;
            first_diff = diff;
        }
    }
    if (!best)
        return nd_fail(err, "op '%s': no specialized kernel was generated for it; add targets to its spec", op);
    return nd_fail(err, "op '%s': no specialized kernel for these distributions: operand '%s' is [%s]; the nearest "
                        "target, %s, has [%s]", op, best->operands[first_diff], sigs[first_diff], best->symbol,
                   best->signatures[first_diff]);
}

static bool dtypes_match(const nda_kernel_entry *e, nd_tensor *const *tensors, int n)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(e->dtypes[i], nd_dtype_name(nd_tensor_dist(tensors[i])->spec.dtype)) != 0)
            return false;
    return true;
}

/* No entry of op takes these dtypes: name the first operand no entry accepts, and what it takes. */
static int dtype_error(const nd_kernels *k, const char *op, nd_tensor *const *tensors, int n, nd_error *err)
{
    for (int i = 0; i < n; ++i) {
        const char *have = nd_dtype_name(nd_tensor_dist(tensors[i])->spec.dtype), *name = "?";
        char takes[64] = "";
        bool ok = false;
        for (int j = 0; j < k->n && !ok; ++j) {
            const nda_kernel_entry *e = k->entries[j];
            if (strcmp(e->op, op) != 0 || e->noperands != n)
                continue;
            name = e->operands[i];
            ok = strcmp(e->dtypes[i], have) == 0;
            if (!strstr(takes, e->dtypes[i]))
                snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s", takes[0] ? " or " : "", e->dtypes[i]);
        }
        if (!ok)
            return nd_fail(err, "op '%s': operand '%s' is %s, but the op takes %s there", op, name, have, takes);
    }
    return nd_fail(err, "op '%s': no kernel takes this combination of dtypes", op);
}

/* The entry to run: op and dtypes first, then the exact distributions (or the generic kernel). */
static int pick_entry(const nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, nd_variant want,
                      const nda_kernel_entry **out, nd_error *err)
{
    const nda_kernel_entry *generic = NULL, *special = NULL, *cands[256];
    int ncands = 0, named = 0, arity = -1, typed = 0;
    for (int i = 0; i < k->n; ++i) {
        const nda_kernel_entry *e = k->entries[i];
        if (strcmp(e->op, op) != 0)
            continue;
        ++named;
        arity = e->noperands;
        typed += e->noperands == ntensors && dtypes_match(e, tensors, ntensors);
    }
    if (!named)
        return nd_fail(err, "op '%s': no loaded kernel library provides it", op);
    if (arity != ntensors)
        return nd_fail(err, "op '%s' takes %d operands, but the launch gives %d", op, arity, ntensors);
    if (!typed)
        return dtype_error(k, op, tensors, ntensors, err);
    char (*sigs)[2048] = calloc((size_t)ntensors, sizeof *sigs);
    for (int i = 0; i < ntensors; ++i)
        nd_dist_signature(nd_tensor_dist(tensors[i]), sigs[i], sizeof sigs[i]);
    for (int i = 0; i < k->n; ++i) {
        const nda_kernel_entry *e = k->entries[i];
        if (strcmp(e->op, op) != 0 || e->noperands != ntensors || !dtypes_match(e, tensors, ntensors))
            continue;
        if (!e->signatures)
            generic = generic ? generic : e;
        else if (matches(e, sigs, ntensors))
            special = special ? special : e;
        else if (ncands < 256)
            cands[ncands++] = e;
    }
    /* every entry of an op carries the same indices */
    int rc = nd_op_check(generic ? generic : special ? special : cands[0], tensors, ntensors, err);
    if (!rc && want == ND_VARIANT_SPECIALIZED && !special)
        rc = no_match(op, cands, ncands, sigs, ntensors, err);
    if (!rc && (want == ND_VARIANT_GENERIC || !special) && !generic)
        rc = nd_fail(err, "op '%s': no generic kernel is registered", op);
    if (!rc)
        *out = want == ND_VARIANT_GENERIC || !special ? generic : special;
    free(sigs);
    return rc;
}

int nd_kernels_pick(const nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, nd_variant want,
                    nd_kernel_pick *out, nd_error *err)
{
    const nda_kernel_entry *e;
    if (pick_entry(k, op, tensors, ntensors, want, &e, err))
        return -1;
    *out = (nd_kernel_pick){e->fn, e->symbol, e->signatures != NULL};
    return 0;
}

/* Every page of an output needs a writer: in DRAM, device core c writes bank c of the list. */
static int check_writers(const nda_kernel_entry *e, nd_device *dev, nd_tensor *const *tensors, int n, nd_error *err)
{
    nd_device_config cfg = nd_device_get_config(dev);
    int64_t cores = (int64_t)cfg.grid_x * cfg.grid_y;
    for (int i = n - e->noutputs; i < n; ++i) {
        const nd_dist *d = nd_tensor_dist(tensors[i]);
        if (d->spec.buffer == ND_DRAM && d->layout.ncores > cores)
            return nd_fail(err, "op '%s': output '%s' spans %lld DRAM banks, but the device has %lld cores to "
                                "write them; each bank needs a core", e->op, e->operands[i],
                           (long long)d->layout.ncores, (long long)cores);
    }
    return 0;
}

int nd_run(nd_device *dev, const nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors,
           const double *scalars, int nscalars, nd_variant want, nd_kernel_pick *pick, nd_launch_stats *stats,
           nd_error *err)
{
    const nda_kernel_entry *e;
    if (pick_entry(k, op, tensors, ntensors, want, &e, err) || check_writers(e, dev, tensors, ntensors, err) ||
        nd_op_check_scalars(e, tensors, ntensors, scalars, nscalars, err))
        return -1;
    if (pick)
        *pick = (nd_kernel_pick){e->fn, e->symbol, e->signatures != NULL};
    return nd_launch(dev, e->fn, tensors, ntensors, scalars, nscalars, stats, err);
}
