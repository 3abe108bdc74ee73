/*
 * registry.c - a kernel library's registry checked before any of it is used. The registry is data
 * another program wrote: its counts say how far arrays go and its pointers where strings are, so one
 * that lies would make the loader and every launch read out of bounds. Each count is bounded, and every
 * array and string must lie inside the library's own loaded segments (dl_iterate_phdr), read no further
 * than a segment's end; then the fields must be what ndgen writes (operand counts, dtypes, variants,
 * fixed sets and their shape classes).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "runtime_internal.h"

enum {
    MAX_GROUPS = 1 << 16,
    MAX_ENTRIES = 1 << 20,
    MAX_TEMPLATE_DIRS = 64,
    MAX_SCALAR_VALUES = ND_MAX_SCALARS * ND_MAX_RANK, /* every scalar a list of rank values */
    MAX_TEXT = 1 << 16                                 /* bytes of one string */
};

/* The loaded segments of one object. */
typedef struct segments {
    const void *probe; /* an address in the object */
    int n;
    uintptr_t lo[16], hi[16];
} segments;

static int find_segments(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    segments *s = data;
    uintptr_t p = (uintptr_t)s->probe;
    int n = 0;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && n < 16; ++i) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        s->lo[n] = info->dlpi_addr + ph->p_vaddr;
        s->hi[n] = s->lo[n] + ph->p_memsz;
        mine = mine || (p >= s->lo[n] && p < s->hi[n]);
        ++n;
    }
    if (!mine)
        return 0;
    s->n = n;
    return 1; /* found: stop */
}

/* Whether [p, p + bytes) lies in one segment. */
static bool inside(const segments *s, const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < s->n; ++i)
        if (a >= s->lo[i] && a < s->hi[i])
            return bytes <= s->hi[i] - a;
    return false;
}

/* Whether s is a string inside the object: its bytes and its NUL, within MAX_TEXT. */
static bool text_ok(const segments *seg, const char *s)
{
    if (!s || !inside(seg, s, 1))
        return false;
    uintptr_t end = (uintptr_t)s;
    for (int i = 0; i < seg->n; ++i)
        if (end >= seg->lo[i] && end < seg->hi[i])
            end = seg->hi[i];
    size_t room = end - (uintptr_t)s;
    return memchr(s, '\0', room < MAX_TEXT ? room : MAX_TEXT) != NULL;
}

/* Whether a is an array of n strings inside the object (n 0: a may be NULL); with nulls, entries may
 * be NULL. */
static bool array_ok(const segments *seg, const char *const *a, int n, bool nulls)
{
    if (n == 0)
        return true;
    if (!a || !inside(seg, a, (size_t)n * sizeof *a))
        return false;
    for (int i = 0; i < n; ++i)
        if (!(nulls && !a[i]) && !text_ok(seg, a[i]))
            return false;
    return true;
}

static bool texts_ok(const segments *seg, const char *const *a, int n) { return array_ok(seg, a, n, false); }

/* What is wrong with entry e, or NULL. */
static const char *entry_problem(const segments *seg, const nda_kernel_entry *e)
{
    nd_dtype dt;
    nd_error ignored;
    if (!text_ok(seg, e->op) || !text_ok(seg, e->variant) || !text_ok(seg, e->symbol) || !e->fn)
        return "its op, variant, symbol or function is missing or outside the library";
    const bool generic = strcmp(e->variant, "generic") == 0;
    if (!generic && strcmp(e->variant, "specialized") != 0)
        return "its variant is neither generic nor specialized";
    if (e->noperands < 1 || e->noperands > ND_MAX_OPERANDS_CHECKED || e->noutputs < 1 || e->noutputs > e->noperands)
        return "its operand or output count is out of range";
    if (!texts_ok(seg, e->operands, e->noperands) || !texts_ok(seg, e->indices, e->noperands) ||
        !texts_ok(seg, e->dtypes, e->noperands))
        return "its operand names, indices or dtypes are missing or outside the library";
    for (int i = 0; i < e->noperands; ++i) /* exactly as ndgen writes it: "F32" would be f32 to the parser */
        if (nd_parse_dtype("dtype", e->dtypes[i], &dt, &ignored) || strcmp(e->dtypes[i], nd_dtype_name(dt)) != 0)
            return "a dtype is not one the runtime knows";
    unsigned char moves, chunked; /* read as bytes: a bool holding another value is undefined to read as bool */
    memcpy(&moves, &e->moves_data, 1);
    memcpy(&chunked, &e->parts_chunked, 1);
    if ((unsigned)e->reads >= NDA_READS_COUNT || moves > 1 || chunked > 1)
        return "its read kind, moves_data or parts_chunked is out of range";
    if (generic != (e->signatures == NULL) || (!generic && !texts_ok(seg, e->signatures, e->noperands)))
        return "its signatures do not match its variant (generic: none; specialized: one per operand)";
    if ((e->scalars && !text_ok(seg, e->scalars)) || (e->requires && !text_ok(seg, e->requires)) ||
        (e->reference_name && !text_ok(seg, e->reference_name)) || (e->fixed && !text_ok(seg, e->fixed)))
        return "a string field lies outside the library";
    if (e->fixed && ndreg_fixed_parse(e->fixed) < 0)
        return "its fixed set is not one the runtime knows";
    if (e->patterns || e->shape_classes) {
        if (!texts_ok(seg, e->patterns, e->noperands) || !e->shape_classes ||
            !inside(seg, e->shape_classes, (size_t)e->noperands * sizeof *e->shape_classes))
            return "its patterns or shape classes are missing or outside the library";
        for (int i = 0; i < e->noperands; ++i)
            if (e->shape_classes[i] < 0 || e->shape_classes[i] >= e->noperands)
                return "a shape class names no operand";
    }
    if (e->nscalar_values < 0 || e->nscalar_values > MAX_SCALAR_VALUES ||
        (e->nscalar_values > 0 &&
         (!e->scalar_values || !inside(seg, e->scalar_values, (size_t)e->nscalar_values * sizeof(double)))))
        return "its fixed scalar values are out of range or outside the library";
    return NULL;
}

static const char *group_problem(const segments *seg, const nda_kernel_group *g)
{
    if (!text_ok(seg, g->spec))
        return "its spec name is missing or outside the library";
    if ((g->spec_path && !text_ok(seg, g->spec_path)) || (g->spec_path_installed && !text_ok(seg, g->spec_path_installed)))
        return "its spec path lies outside the library";
    if (g->nentries < 0 || g->nentries > MAX_ENTRIES ||
        (g->nentries > 0 && (!g->entries || !inside(seg, g->entries, (size_t)g->nentries * sizeof *g->entries))))
        return "its entry count is out of range or its entries lie outside the library";
    /* a relocatable library records each folder's installed form alone (template_dirs[i] NULL) */
    if (g->ntemplate_dirs < 0 || g->ntemplate_dirs > MAX_TEMPLATE_DIRS ||
        !array_ok(seg, g->template_dirs, g->ntemplate_dirs, true) ||
        (g->template_dirs_installed && !array_ok(seg, g->template_dirs_installed, g->ntemplate_dirs, true)))
        return "its template folders are out of range or outside the library";
    return NULL;
}

int nd_registry_check(const nda_kernel_library *lib, const char *path, nd_error *err)
{
    segments seg = {.probe = lib};
    if (!dl_iterate_phdr(find_segments, &seg) || !inside(&seg, lib, sizeof *lib))
        return nd_fail(err, "%s: its registry is not in the library's own memory", path);
    if (lib->ngroups < 0 || lib->ngroups > MAX_GROUPS ||
        (lib->ngroups > 0 && (!lib->groups || !inside(&seg, lib->groups, (size_t)lib->ngroups * sizeof *lib->groups))))
        return nd_fail(err, "%s: the registry's group count (%d) is out of range or its groups lie outside the library",
                       path, lib->ngroups);
    if (lib->cflags && !text_ok(&seg, lib->cflags))
        return nd_fail(err, "%s: the registry's kernel flags lie outside the library; regenerate it with ndgen", path);
    for (int g = 0; g < lib->ngroups; ++g) {
        const nda_kernel_group *grp = lib->groups[g];
        const char *why = !grp || !inside(&seg, grp, sizeof *grp) ? "it lies outside the library" : group_problem(&seg, grp);
        if (why)
            return nd_fail(err, "%s: registry group %d: %s; regenerate the library with ndgen", path, g, why);
        for (int i = 0; i < grp->nentries; ++i)
            if ((why = entry_problem(&seg, &grp->entries[i])) != NULL)
                return nd_fail(err, "%s: registry group '%s', entry %d: %s; regenerate the library with ndgen", path,
                               grp->spec, i, why);
    }
    return 0;
}
