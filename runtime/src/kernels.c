/* kernels.c - loading generated kernel libraries and choosing a kernel for a launch. */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_where.h"
#include "runtime_internal.h"

/* What the registry knows of an entry as typed values, parsed once when its library loads: the
 * operands' dtypes and, for a specialized entry, each operand's key (its signature) and the fields its
 * partial set leaves free. Picking compares these, never text. */
typedef struct entry_keys {
    nd_dtype dtypes[ND_MAX_OPERANDS_CHECKED];
    nd_dist_key *keys; /* [noperands] for a specialized entry, else NULL */
    int set;           /* its partial set (a row of NDA_FIXED_SETS past "all"), or 0: exact or generic */
    unsigned free;     /* the ND_KEY_FREE_* fields that set leaves to run time */
} entry_keys;

_Static_assert(ND_KEY_FREE_SHAPE == NDA_FREE_SHAPE && ND_KEY_FREE_GRID == NDA_FREE_GRID,
               "the model's free-field bits are the kernel ABI's");

struct nd_kernels {
    int nlibs;
    void **libs;
    int n, cap;
    const nda_kernel_entry **entries;
    entry_keys *keys;   /* [n] */
    const char **spec;  /* [n]: the spec (registry group) each entry came from */
    nd_jit_where **where; /* [n]: where that spec and its templates are (shared by a group's entries) */
    int nwheres;
    nd_jit_where **wheres; /* every group's, owned */
    nd_jit *jit;        /* NULL: off */
    int max_fixed;      /* the most a picked kernel may fix: a row of NDA_FIXED_SETS, none before it */
};

/* A path a registry group records: the installed form under prefix when it exists there, else the
 * absolute one. */
static const char *locate(const char *prefix, const char *installed, const char *absolute, char *buf, size_t len)
{
    if (installed && prefix[0]) {
        snprintf(buf, len, "%s/%s", prefix, installed);
        if (access(buf, F_OK) == 0)
            return buf;
    }
    return absolute;
}

/* The group's spec and template folders, found from the library's install prefix (the folder above the
 * library's own folder). */
static nd_jit_where *where_of(const nda_kernel_library *lib, const nda_kernel_group *g, const char *prefix,
                              char (*store)[4096])
{
    nd_jit_where *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if (lib->cflags && !(w->cflags = strdup(lib->cflags))) {
        free(w);
        return NULL;
    }
    const char *spec = locate(prefix, g->spec_path_installed, g->spec_path, store[0], sizeof store[0]);
    w->spec_path = spec ? strdup(spec) : NULL;
    for (int i = 0; i < g->ntemplate_dirs && w->ntemplate_dirs < ND_JIT_MAX_TEMPLATE_DIRS; ++i) {
        const char *d = locate(prefix, g->template_dirs_installed ? g->template_dirs_installed[i] : NULL,
                               g->template_dirs[i], store[1], sizeof store[1]);
        if (d && (w->template_dirs[w->ntemplate_dirs] = strdup(d)))
            w->ntemplate_dirs++;
    }
    return w;
}

static void free_where(nd_jit_where *w)
{
    if (!w)
        return;
    free((char *)w->spec_path);
    free((char *)w->cflags);
    for (int i = 0; i < w->ntemplate_dirs; ++i)
        free((char *)w->template_dirs[i]);
    free(w);
}

int nd_kernels_open(nd_kernels **out, nd_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : nd_failc(err, ND_ENOMEM, "kernels: out of memory");
}

void nd_kernels_close(nd_kernels *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->nlibs; ++i)
        dlclose(k->libs[i]);
    free(k->libs);
    for (int i = 0; i < k->n; ++i)
        free(k->keys[i].keys);
    free(k->keys);
    free(k->entries);
    free(k->spec);
    free(k->where);
    for (int i = 0; i < k->nwheres; ++i)
        free_where(k->wheres[i]);
    free(k->wheres);
    nd_jit_free(k->jit);
    free(k);
}

int nd_kernels_count(const nd_kernels *k) { return k->n; }

const nda_kernel_entry *nd_kernels_entry(const nd_kernels *k, int i) { return i >= 0 && i < k->n ? k->entries[i] : NULL; }

const char *nd_kernels_jit_notice(const nd_kernels *k) { return nd_jit_notice(k->jit); }

int nd_kernels_set_fixed(nd_kernels *k, const char *set, nd_error *err)
{
    int s = ndreg_fixed_parse(set);
    if (s < 0)
        return nd_fail(err, "fixed set '%s': expected all, pattern or shard (docs/partial.md)", set ? set : "(null)");
    k->max_fixed = s;
    return 0;
}

int nd_kernels_set_jit(nd_kernels *k, const nd_jit_config *cfg, nd_error *err)
{
    nd_jit *j = NULL;
    if (cfg && nd_jit_create(cfg, &j, err))
        return -1;
    nd_jit_free(k->jit);
    k->jit = j;
    return 0;
}

/* Whether op is an op of a spec other than spec among the first n kernels loaded. */
static bool other_spec_has(const nd_kernels *k, int n, const char *op, const char *spec)
{
    for (int j = 0; j < n; ++j)
        if (strcmp(op, k->entries[j]->op) == 0 && strcmp(spec, k->spec[j]) != 0)
            return true;
    return false;
}

/* The partial set (NDA_FIXED_SETS, a row past "all") a specialized entry fixed, or 0 for an exact one. */
static int partial_set(const nda_kernel_entry *e)
{
    int set = ndreg_fixed_parse(e->fixed);
    return set > 0 && ndreg_fixed_free(set) && e->patterns && e->shape_classes ? set : 0;
}

/* Entry e's typed values into *out. A signature that does not parse, or a pattern that is not its
 * signature with the set's free fields starred, refuses the library: picking would read it otherwise
 * than the text says. */
static int entry_keys_of(const nda_kernel_entry *e, const char *path, const char *spec, entry_keys *out,
                         nd_error *err)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < e->noperands; ++i)
        if (nd_parse_dtype("dtype", e->dtypes[i], &out->dtypes[i], err)) /* nd_registry_check read them */
            return -1;
    if (!e->signatures)
        return 0;
    out->set = partial_set(e);
    out->free = ndreg_fixed_free(out->set);
    out->keys = malloc((size_t)e->noperands * sizeof *out->keys);
    if (!out->keys)
        return nd_failc(err, ND_ENOMEM, "%s: out of memory registering kernels", path);
    for (int i = 0; i < e->noperands; ++i) {
        nd_error why;
        char pat[ND_SIGNATURE_LEN];
        if (nd_dist_key_parse(e->signatures[i], &out->keys[i], &why) == 0) {
            if (!out->set)
                continue;
            ndreg_split_signature(e->signatures[i], out->free, pat, sizeof pat, NULL, 0);
            if (strcmp(pat, e->patterns[i]) == 0)
                continue;
            nd_fail(&why, "its pattern '%s' is not its signature with the free fields starred ('%s')", e->patterns[i],
                    pat);
        }
        free(out->keys);
        out->keys = NULL;
        return nd_fail(err, "%s: registry group '%s', entry %s: operand '%s': %s; regenerate the library with ndgen",
                       path, spec, e->symbol, e->operands[i], why.msg);
    }
    return 0;
}

/* Room for one more entry in k's parallel arrays. */
static int grow(nd_kernels *k, const char *path, nd_error *err)
{
    if (k->n < k->cap)
        return 0;
    int cap = k->cap ? 2 * k->cap : 64;
    const nda_kernel_entry **e = realloc(k->entries, (size_t)cap * sizeof *e);
    if (e)
        k->entries = e;
    const char **spec = realloc(k->spec, (size_t)cap * sizeof *spec);
    if (spec)
        k->spec = spec;
    nd_jit_where **where = realloc(k->where, (size_t)cap * sizeof *where);
    if (where)
        k->where = where;
    entry_keys *keys = realloc(k->keys, (size_t)cap * sizeof *keys);
    if (keys)
        k->keys = keys;
    if (!e || !spec || !where || !keys)
        return nd_failc(err, ND_ENOMEM, "%s: out of memory registering kernels", path);
    k->cap = cap;
    return 0;
}

/* Registers lib's entries; with ND_LOAD_KEEP_OPS, not those of an op another spec's kernels loaded
 * before already define. */
static int add_entries_from(nd_kernels *k, const nda_kernel_library *lib, const char *path, const char *prefix,
                            nd_load_conflicts how, nd_error *err)
{
    char store[2][4096];
    const int before = k->n;
    for (int g = 0; g < lib->ngroups; ++g) {
        const nda_kernel_group *grp = lib->groups[g];
        nd_jit_where **ws = realloc(k->wheres, (size_t)(k->nwheres + 1) * sizeof *ws);
        if (ws)
            k->wheres = ws;
        nd_jit_where *w = ws ? where_of(lib, grp, prefix, store) : NULL;
        if (!w)
            return nd_failc(err, ND_ENOMEM, "%s: out of memory registering kernels", path);
        k->wheres[k->nwheres++] = w;
        for (int i = 0; i < grp->nentries; ++i) {
            if (how == ND_LOAD_KEEP_OPS && other_spec_has(k, before, grp->entries[i].op, grp->spec))
                continue;
            if (grow(k, path, err) || entry_keys_of(&grp->entries[i], path, grp->spec, &k->keys[k->n], err))
                return -1;
            k->spec[k->n] = grp->spec;
            k->where[k->n] = w;
            k->entries[k->n++] = &grp->entries[i];
        }
    }
    return 0;
}

/* add_entries_from, or on failure nothing: the entries it added are dropped again, their keys freed. */
static int add_entries(nd_kernels *k, const nda_kernel_library *lib, const char *path, const char *prefix,
                       nd_load_conflicts how, nd_error *err)
{
    const int before = k->n;
    int rc = add_entries_from(k, lib, path, prefix, how, err);
    if (rc) {
        for (int i = before; i < k->n; ++i)
            free(k->keys[i].keys);
        k->n = before;
    }
    return rc;
}

/* The folder above the one holding the library: its install prefix when installed; "" when unknown. */
static void prefix_of(const char *path, char *out, size_t len)
{
    char real[4096];
    out[0] = '\0';
    if (!realpath(path, real))
        return;
    for (int up = 0; up < 2; ++up) {
        char *slash = strrchr(real, '/');
        if (!slash)
            return;
        *slash = '\0';
    }
    snprintf(out, len, "%s", real[0] ? real : "/");
}

/* Whether a launch could pick between a and b: one op, the same operands' dtypes. */
static bool same_kind(const nda_kernel_entry *a, const nda_kernel_entry *b)
{
    bool same = strcmp(a->op, b->op) == 0 && a->noperands == b->noperands;
    for (int i = 0; i < a->noperands && same; ++i)
        same = strcmp(a->dtypes[i], b->dtypes[i]) == 0;
    return same;
}

/* The kernels a launch picks among all read its values by one declaration: a library declaring other
 * scalars for them (an older build, or a JIT library from a spec edited since) would read the values
 * at other positions, so it is refused whole. */
static int same_scalars(const nd_kernels *k, const nda_kernel_library *lib, const char *path, nd_load_conflicts how,
                        nd_error *err)
{
    for (int g = 0; g < lib->ngroups; ++g)
        for (int i = 0; i < lib->groups[g]->nentries; ++i) {
            const nda_kernel_entry *e = &lib->groups[g]->entries[i];
            if (how != ND_LOAD_REFUSE_CONFLICTS && other_spec_has(k, k->n, e->op, lib->groups[g]->spec))
                continue; /* a conflict the caller settled: the two never serve one launch */
            for (int j = 0; j < k->n; ++j) {
                const char *a = e->scalars ? e->scalars : "", *b = k->entries[j]->scalars ? k->entries[j]->scalars : "";
                if (same_kind(e, k->entries[j]) && strcmp(a, b) != 0)
                    return nd_failc(err, ND_ESTALE, "%s: op '%s' declares the launch scalars '%s', but a library "
                                                    "loaded before declares '%s'; an op reads its scalars by one "
                                                    "declaration: regenerate the older library", path, e->op, a, b);
            }
        }
    return 0;
}

/* An op comes from one spec: a library whose op is also an op of another spec loaded before is refused
 * whole (unless the caller says which wins, nd_kernels_load_with), or a launch would pick between two
 * templates' kernels by its distributions. Libraries of the same spec (the JIT's, one per
 * specialization) add kernels to its ops. */
static int one_spec_per_op(const nd_kernels *k, const nda_kernel_library *lib, const char *path, nd_error *err)
{
    for (int g = 0; g < lib->ngroups; ++g)
        for (int i = 0; i < lib->groups[g]->nentries; ++i) {
            const nda_kernel_entry *e = &lib->groups[g]->entries[i];
            for (int j = 0; j < k->n; ++j)
                if (strcmp(e->op, k->entries[j]->op) == 0 && strcmp(lib->groups[g]->spec, k->spec[j]) != 0)
                    return nd_failc(err, ND_EREFUSED, "%s: op '%s' of spec '%s' is also an op of spec '%s', loaded "
                                                    "before; an op comes from one spec: rename one of them, or load "
                                                    "it with nd_kernels_load_with saying which wins", path,
                                    e->op, lib->groups[g]->spec, k->spec[j]);
        }
    return 0;
}

/* ND_LOAD_REPLACE_OPS, after lib's entries from index `from` on were added: the kernels other specs gave
 * the ops those entries define are dropped, so that lib's are the only ones of those ops. */
static void drop_replaced(nd_kernels *k, int from)
{
    int n = 0;
    for (int j = 0; j < k->n; ++j) {
        bool replaced = false;
        for (int i = from; i < k->n && j < from && !replaced; ++i)
            replaced = strcmp(k->entries[j]->op, k->entries[i]->op) == 0 && strcmp(k->spec[j], k->spec[i]) != 0;
        if (replaced) {
            free(k->keys[j].keys);
            continue;
        }
        k->keys[n] = k->keys[j];
        k->entries[n] = k->entries[j];
        k->spec[n] = k->spec[j];
        k->where[n++] = k->where[j];
    }
    k->n = n;
}

int nd_kernels_load(nd_kernels *k, const char *path, nd_error *err)
{
    return nd_kernels_load_with(k, path, ND_LOAD_REFUSE_CONFLICTS, err);
}

int nd_kernels_load_with(nd_kernels *k, const char *path, nd_load_conflicts how, nd_error *err)
{
    if (how != ND_LOAD_REFUSE_CONFLICTS && how != ND_LOAD_REPLACE_OPS && how != ND_LOAD_KEEP_OPS)
        return nd_fail(err, "%s: conflict rule %d: expected ND_LOAD_REFUSE_CONFLICTS, _REPLACE_OPS or _KEEP_OPS", path,
                       (int)how);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) /* dlerror says why; the code tells a missing file from one the loader refused */
        return nd_failc(err, strchr(path, '/') && access(path, F_OK) != 0 && errno == ENOENT ? ND_ENOENT : ND_ESYS,
                        "%s: cannot load the kernel library: %s", path, dlerror());
    const nda_kernel_library *lib = dlsym(h, "nda_kernel_registry");
    if (!lib) {
        dlclose(h);
        return nd_fail(err, "%s: not a kernel library: it has no nda_kernel_registry symbol", path);
    }
    if (lib->abi_version != NDA_ABI_VERSION) {
        unsigned v = lib->abi_version;
        dlclose(h);
        return nd_failc(err, ND_ESTALE, "%s: kernel ABI version %u, but this runtime reads version %u; regenerate "
                                        "the library with a matching ndgen", path, v, NDA_ABI_VERSION);
    }
    if (nd_registry_check(lib, path, err) || same_scalars(k, lib, path, how, err) ||
        (how == ND_LOAD_REFUSE_CONFLICTS && one_spec_per_op(k, lib, path, err))) {
        dlclose(h);
        return -1;
    }
    void **libs = realloc(k->libs, (size_t)(k->nlibs + 1) * sizeof *libs);
    int before = k->n;
    char prefix[4096] = "";
    if (strchr(path, '/'))
        prefix_of(path, prefix, sizeof prefix);
    if (!libs || add_entries(k, lib, path, prefix, how, err)) {
        k->libs = libs ? libs : k->libs;
        dlclose(h);
        return libs ? -1 : nd_failc(err, ND_ENOMEM, "%s: out of memory registering kernels", path);
    }
    if (how == ND_LOAD_REPLACE_OPS)
        drop_replaced(k, before);
    k->libs = libs;
    k->libs[k->nlibs++] = h;
    return 0;
}

/* ---------------------------------------------------------------- choosing */

/* A specialized entry serves the launch's keys: every operand's key matches outside the fields the
 * entry's set leaves free (none for an exact kernel), and operands the kernel assumed alike in those
 * (nda_kernel_entry.shape_classes) are. */
static bool serves(const nda_kernel_entry *e, const entry_keys *ek, const nd_dist_key *keys, int n)
{
    for (int i = 0; i < n; ++i)
        if (!nd_dist_key_match(&ek->keys[i], &keys[i], ek->free) ||
            (ek->set && !nd_dist_key_same_free(&keys[i], &keys[e->shape_classes[i]], ek->free)))
            return false;
    return true;
}

/* "no specialized kernel matches: operand 'a' is <sig>; the nearest target, <symbol>, has <sig>" */
static int no_match(const char *op, const nda_kernel_entry *const *cands, int ncands, char sigs[][ND_SIGNATURE_LEN], int n,
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
        return nd_failc(err, ND_ENOENT, "op '%s': no specialized kernel was generated for it; add targets to its spec",
                        op);
    assert(first_diff >= 0 && first_diff < n); /* scan matched none of the candidates exactly */
    return nd_failc(err, ND_ENOENT, "op '%s': no specialized kernel for these distributions: operand '%s' is [%s]; "
                                    "the nearest target, %s, has [%s]", op, best->operands[first_diff],
                    sigs[first_diff], best->symbol, best->signatures[first_diff]);
}

static bool dtypes_match(const entry_keys *ek, const nd_dist_key *keys, int n)
{
    for (int i = 0; i < n; ++i)
        if (ek->dtypes[i] != keys[i].dtype)
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
            return nd_failc(err, ND_ENOENT, "op '%s': operand '%s' is %s, but the op takes %s there", op, name, have,
                            takes);
    }
    return nd_failc(err, ND_ENOENT, "op '%s': no kernel takes this combination of dtypes", op);
}


/* The launch's scalars; n < 0 when the caller does not say them (nd_kernels_pick). */
typedef struct launch_scalars {
    const double *v;
    int n;
} launch_scalars;

/* How many launch scalars a kernel has as constants. */
static int fixed_count(const nda_kernel_entry *e)
{
    int n = 0;
    for (int i = 0; i < e->nscalar_values; ++i)
        n += !isnan(e->scalar_values[i]);
    return n;
}

/* The op's entries for these tensors' dtypes: its generic one, the one specialized for sigs, the first
 * of each partial set serving them, and the other specialized ones (for a helpful error). */
typedef struct scan_result {
    int generic, special;          /* entry indices, -1: none */
    int partial[NDA_FIXED_COUNT];  /* [set]: the first kernel of that partial set serving them, -1: none */
    int other_scalars;             /* a kernel for them that fixed other scalar values, -1: none */
    int ncands;
    const nda_kernel_entry *cands[256];
} scan_result;

static void scan(const nd_kernels *k, const char *op, const nd_dist_key *keys, int n, launch_scalars sc,
                 scan_result *r)
{
    r->generic = r->special = r->other_scalars = -1;
    for (int s = 0; s < NDA_FIXED_COUNT; ++s)
        r->partial[s] = -1;
    r->ncands = 0;
    for (int i = 0; i < k->n; ++i) {
        const nda_kernel_entry *e = k->entries[i];
        const entry_keys *ek = &k->keys[i];
        if (strcmp(e->op, op) != 0 || e->noperands != n || !dtypes_match(ek, keys, n))
            continue;
        if (e->signatures && !nd_kernel_serves_scalars(e, sc.v, sc.n))
            r->other_scalars = i;
        else if (!e->signatures)
            r->generic = r->generic < 0 ? i : r->generic;
        else if (ek->set) /* never "exact", even on the target it was generated from */
            r->partial[ek->set] = r->partial[ek->set] < 0 && serves(e, ek, keys, n) ? i : r->partial[ek->set];
        else if (serves(e, ek, keys, n)) /* of two, the one fixing more scalars; else the first registered */
            r->special = r->special < 0 || fixed_count(e) > fixed_count(k->entries[r->special]) ? i : r->special;
        else if (r->ncands < 256)
            r->cands[r->ncands++] = e;
    }
}

/* The most specialized kernel scan found that may be taken (fixing at most k->max_fixed): the exact
 * one, else the first of each partial set in NDA_FIXED_SETS order; -1: none. */
static int best_specialized(const nd_kernels *k, const scan_result *r)
{
    if (k->max_fixed == NDA_FIXED_ALL && r->special >= 0)
        return r->special;
    for (int s = k->max_fixed > 1 ? k->max_fixed : 1; s < NDA_FIXED_COUNT; ++s)
        if (r->partial[s] >= 0)
            return r->partial[s];
    return -1;
}

/* Specializes op for sigs through the JIT (a kernel of set k->max_fixed), loads the library and scans
 * again. Returns 1 when the JIT gives no kernel (the compiler failed, the cache folder was refused or
 * unusable, the library does not load): how->jit is ND_JIT_FAILED, and its note and err say why. */
static int specialize(nd_kernels *k, const char *op, const nd_dist_key *keys, int n, char sigs[][ND_SIGNATURE_LEN],
                      launch_scalars sc, scan_result *r, nd_kernel_pick *how, nd_error *err)
{
    char path[4096];
    nd_error jerr;
    assert(k->jit && r->generic >= 0 && r->generic < k->n);
    int rc = nd_jit_library_at(k->jit, k->entries[r->generic], k->spec[r->generic], k->where[r->generic], sigs,
                               k->max_fixed, path, sizeof path, &how->jit, how->jit_note, sizeof how->jit_note, &jerr);
    if (!rc && nd_kernels_load(k, path, &jerr))
        rc = 1;
    if (rc) {
        nd_failc(err, jerr.code, "%s", jerr.msg);
        if (rc < 0)
            return -1;
        how->jit = ND_JIT_FAILED;
        snprintf(how->jit_note, sizeof how->jit_note, "%.*s", (int)sizeof how->jit_note - 1, jerr.msg);
        return 1;
    }
    scan(k, op, keys, n, sc, r);
    if (best_specialized(k, r) < 0)
        return nd_failc(err, ND_ENOENT, "jit: op '%s': the library %s has no kernel for these distributions", op,
                        path);
    return 0;
}

/* The entry to run: op and dtypes first, then the exact distributions (or the generic kernel). */
/* The launch's signatures, for the JIT and for messages (the only paths that need text); NULL when
 * out of memory. */
static char (*launch_sigs(nd_tensor *const *tensors, int n))[ND_SIGNATURE_LEN]
{
    char (*sigs)[ND_SIGNATURE_LEN] = calloc((size_t)n, sizeof *sigs);
    for (int i = 0; sigs && i < n; ++i)
        nd_dist_signature(nd_tensor_dist(tensors[i]), sigs[i], sizeof sigs[i]);
    return sigs;
}

/* The index of the entry to run: op and dtypes first, then the launch's keys against the kernels'
 * (or the generic kernel). */
static int pick_entry(nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, launch_scalars sc,
                      nd_variant want, int *out, nd_kernel_pick *how, nd_error *err)
{
    int named = 0, arity = -1, typed = 0, rc = 0;
    for (int i = 0; i < k->n; ++i)
        if (strcmp(k->entries[i]->op, op) == 0) {
            ++named;
            arity = k->entries[i]->noperands;
        }
    if (!named)
        return nd_failc(err, ND_ENOENT, "op '%s': no loaded kernel library provides it", op);
    if (arity != ntensors)
        return nd_fail(err, "op '%s' takes %d operands, but the launch gives %d", op, arity, ntensors);
    for (int i = 0; i < ntensors; ++i)
        if (!tensors[i])
            return nd_fail(err, "op '%s': operand %d is NULL", op, i);
    nd_dist_key *keys = malloc((size_t)ntensors * sizeof *keys);
    scan_result *r = malloc(sizeof *r);
    char (*sigs)[ND_SIGNATURE_LEN] = NULL;
    if (!keys || !r) {
        free(keys);
        free(r);
        return nd_failc(err, ND_ENOMEM, "op '%s': out of memory", op);
    }
    for (int i = 0; i < ntensors; ++i)
        nd_dist_key_of(nd_tensor_dist(tensors[i]), &keys[i]);
    for (int i = 0; i < k->n; ++i)
        typed += !strcmp(k->entries[i]->op, op) && k->entries[i]->noperands == ntensors &&
                 dtypes_match(&k->keys[i], keys, ntensors);
    if (!typed)
        rc = dtype_error(k, op, tensors, ntensors, err);
    if (rc) {
        free(keys);
        free(r);
        return rc;
    }
    scan(k, op, keys, ntensors, sc, r);
    /* every entry of an op carries the same indices */
    int any = r->generic >= 0 ? r->generic : r->special;
    assert(any >= 0 || r->ncands > 0); /* typed: some entry takes these dtypes */
    rc = nd_op_check(any >= 0 ? k->entries[any] : r->cands[0], tensors, ntensors, err);
    how->jit = ND_JIT_NONE;
    how->jit_note[0] = '\0';
    /* exact, then partial kernels in NDA_FIXED_SETS order (a new size of a known pattern builds nothing),
     * then the JIT, then the generic kernel */
    int best = want == ND_VARIANT_GENERIC ? -1 : best_specialized(k, r);
    if (!rc && want != ND_VARIANT_GENERIC && best < 0 && r->generic >= 0 && k->jit) {
        sigs = launch_sigs(tensors, ntensors);
        rc = sigs ? specialize(k, op, keys, ntensors, sigs, sc, r, how, err)
                  : nd_failc(err, ND_ENOMEM, "op '%s': out of memory", op);
        if (rc > 0) /* the compiler failed: AUTO runs the generic kernel, SPECIALIZED fails with its message */
            rc = want == ND_VARIANT_SPECIALIZED ? -1 : 0;
        best = rc ? -1 : best_specialized(k, r);
    }
    if (!rc && want == ND_VARIANT_SPECIALIZED && best < 0 && r->other_scalars >= 0)
        rc = nd_failc(err, ND_ENOENT, "op '%s': the kernel specialized for these distributions (%s) fixed other "
                                      "scalar values than the launch gives", op, k->entries[r->other_scalars]->symbol);
    else if (!rc && want == ND_VARIANT_SPECIALIZED && best < 0 && (sigs || (sigs = launch_sigs(tensors, ntensors))))
        rc = no_match(op, r->cands, r->ncands, sigs, ntensors, err);
    else if (!rc && want == ND_VARIANT_SPECIALIZED && best < 0)
        rc = nd_failc(err, ND_ENOMEM, "op '%s': out of memory", op);
    if (!rc && best < 0 && r->generic < 0)
        rc = nd_failc(err, ND_ENOENT, "op '%s': no generic kernel is registered", op);
    if (!rc) {
        *out = best < 0 ? r->generic : best;
        assert(*out >= 0 && *out < k->n);
    }
    free(sigs);
    free(keys);
    free(r);
    return rc;
}

static int pick(nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, launch_scalars sc,
                nd_variant want, nd_kernel_pick *out, nd_error *err)
{
    int i = -1;
    if (pick_entry(k, op, tensors, ntensors, sc, want, &i, out, err))
        return -1;
    const nda_kernel_entry *e = k->entries[i];
    out->fn = e->fn;
    out->symbol = e->symbol;
    out->specialized = e->signatures != NULL;
    out->entry = e;
    out->fixed = !e->signatures ? "none" : ndreg_fixed_name(k->keys[i].set);
    return 0;
}

int nd_kernels_pick(nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, nd_variant want,
                    nd_kernel_pick *out, nd_error *err)
{
    return pick(k, op, tensors, ntensors, (launch_scalars){NULL, -1}, want, out, err);
}

/* Every page of an output needs a writer: in DRAM, device core c writes bank c of the list. */
static int check_writers(const nda_kernel_entry *e, nd_device *dev, nd_tensor *const *tensors, int n, nd_error *err)
{
    nd_device_config cfg = nd_device_get_config(dev);
    int64_t cores = (int64_t)cfg.grid_x * cfg.grid_y;
    for (int i = n - e->noutputs; i < n; ++i) {
        const nd_dist *d = nd_tensor_dist(tensors[i]);
        if (d->spec.buffer == ND_DRAM && d->layout.ncores > cores)
            return nd_failc(err, ND_EREFUSED, "op '%s': output '%s' spans %lld DRAM banks, but the device has %lld "
                                              "cores to write them; each bank needs a core", e->op, e->operands[i],
                            (long long)d->layout.ncores, (long long)cores);
    }
    return 0;
}

int nd_run(const nd_launch_desc *l, nd_error *err)
{
    if (!l || !l->device || !l->kernels || !l->op)
        return nd_fail(err, "run: the launch needs a device, kernels and an op");
    if (l->ntensors < 0 || (l->ntensors && !l->tensors) || l->nscalars < 0 || (l->nscalars && !l->scalars))
        return nd_fail(err, "op '%s': %d tensors and %d scalars, but %s", l->op, l->ntensors, l->nscalars,
                       l->ntensors < 0 || l->nscalars < 0 ? "counts cannot be negative" : "no array holds them");
    nd_kernel_pick local, *p = l->pick ? l->pick : &local;
    launch_scalars sc = {l->scalars, l->nscalars};
    if (pick(l->kernels, l->op, l->tensors, l->ntensors, sc, l->variant, p, err) ||
        check_writers(p->entry, l->device, l->tensors, l->ntensors, err) ||
        nd_op_check_scalars(p->entry, l->tensors, l->ntensors, l->scalars, l->nscalars, err))
        return -1;
    assert(p->fn && p->entry && p->entry->noperands == l->ntensors);
    if (l->picked)
        l->picked(l->picked_ctx, p);
    return nd_launch_entry(l->device, p->entry, l->tensors, l->ntensors, l->scalars, l->nscalars, l->stats, err);
}
