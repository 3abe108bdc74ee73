/* setup.c - one case's device, distributed operands and random inputs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

int64_t nr_bytes(const nr_setup *su, int operand)
{
    return su->elems[operand] * su->dist[operand].elem_bytes;
}

int nr_setup_spans(const nr_setup *su, const void *host_out, nr_spans *s)
{
    int rc = 0;
    for (int k = 0; k < su->n && !rc; ++k) {
        if (!host_out)
            rc = nr_spans_tensor(s, su->t[k]);
        else
            rc = nr_spans_add(s, k + 1 < su->n ? su->host[k] : host_out, nr_bytes(su, k));
    }
    return rc;
}

static bool has_dtype(const nda_kernel_entry *e, const char *dtype)
{
    for (int i = 0; i < e->noperands; ++i)
        if (strcmp(e->dtypes[i], dtype) != 0)
            return false;
    return true;
}

static int find_entry(nd_kernels *k, const char *op, const char *dtype, const nda_kernel_entry **out, nd_error *err)
{
    bool named = false;
    for (int i = 0; i < nd_kernels_count(k); ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        if (strcmp(e->op, op) != 0 || e->signatures)
            continue;
        named = true;
        if (has_dtype(e, dtype)) {
            *out = e;
            return 0;
        }
    }
    if (!op)
        return nd_fail(err, "--op: required, such as --op add");
    nr_near near = {"", 0};
    for (int i = 0; i < nd_kernels_count(k) && !named; ++i)
        nr_nearest(op, nd_kernels_entry(k, i)->op, &near);
    return named ? nd_failc(err, ND_ENOENT, "--op %s: the op has no kernel whose operands are all %s", op, dtype)
                 : nd_failc(err, ND_ENOENT, "--op %s: no such op in the kernel library%s%s%s", op,
                            near.name[0] ? " (did you mean " : "", near.name, near.name[0] ? "?)" : "");
}

bool nr_moves_data(const nda_kernel_entry *e) { return e->moves_data; }

bool nr_named_indices(const nda_kernel_entry *e)
{
    bool named = e->noperands == 3;
    for (int k = 0; k < e->noperands && named; ++k)
        named = !strstr(e->indices[k], "...");
    return named;
}

bool nr_is_contraction(const nda_kernel_entry *e)
{
    if (!nr_named_indices(e))
        return false;
    for (int k = 0; k < 2; ++k) /* a letter of an input the output has not: summed */
        for (const char *p = e->indices[k]; *p; ++p)
            if (!strchr(e->indices[2], *p))
                return true;
    return false;
}

/* ---------------------------------------------------------------- shapes */

typedef struct shapes {
    int rank[NR_MAX_OPERANDS];
    int64_t dims[NR_MAX_OPERANDS][ND_MAX_RANK];
} shapes;

static int letter_shapes(const nda_kernel_entry *e, const int64_t *given, int n, shapes *sh, nd_error *err)
{
    char letters[64] = "";
    for (int k = 0; k < e->noperands; ++k)
        for (const char *p = e->indices[k]; *p; ++p)
            if (!strchr(letters, *p))
                strncat(letters, p, 1);
    if ((size_t)n != strlen(letters))
        return nd_fail(err, "--shape: op '%s' (%s,%s->%s) needs one size per index letter, %s, in that order",
                       e->op, e->indices[0], e->indices[1], e->indices[2], letters);
    for (int k = 0; k < e->noperands; ++k) {
        sh->rank[k] = (int)strlen(e->indices[k]);
        for (int i = 0; i < sh->rank[k]; ++i)
            sh->dims[k][i] = given[strchr(letters, e->indices[k][i]) - letters];
    }
    return 0;
}

/* "1,0" -> axes, each in [0, rank). */
static int axis_list(const char *flag, const char *text, int rank, int64_t *out, int *n, nd_error *err)
{
    *n = 0;
    for (const char *p = text; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || (*end && *end != ',') || *n == ND_MAX_RANK)
            return nd_fail(err, "%s %s: expected axes from 0 to %d, separated by commas", flag, text, rank - 1);
        if (v >= rank)
            return nd_fail(err, "%s %s: axis %ld does not exist at rank %d", flag, text, v, rank);
        out[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : nd_fail(err, "%s: expected at least one axis", flag);
}

/* The list of axes (--perm or --axes, by the list's type) after the named scalars, and the output
 * shape it implies for a one-input op. */
static int list_scalars(const nr_case *c, const nd_scalar_decl *d, int at, nr_setup *su, shapes *sh, nd_error *err)
{
    int r = sh->rank[0], n = 0;
    int64_t ax[ND_MAX_RANK];
    bool perm = d->type == ND_SCALAR_PERM;
    const char *text = perm ? c->perm : c->axes;
    if (text && axis_list(perm ? "--perm" : "--axes", text, r, ax, &n, err))
        return -1;
    if (!text) { /* defaults: the axes reversed, or the last axis */
        n = perm ? r : 1;
        for (int i = 0; i < n; ++i)
            ax[i] = perm ? r - 1 - i : r - 1;
    }
    if (perm && n != r)
        return nd_fail(err, "--perm %s: needs %d axes, one per axis of the input", text, r);
    su->nscalars = at + n;
    for (int i = 0; i < n; ++i)
        su->scalars[at + i] = (double)ax[i];
    sh->rank[1] = 0;
    for (int i = 0; i < r; ++i) {
        bool reduced = false;
        for (int j = 0; j < n && !perm; ++j)
            reduced = reduced || ax[j] == i;
        if (perm)
            sh->dims[1][sh->rank[1]++] = sh->dims[0][ax[i]];
        else if (!reduced)
            sh->dims[1][sh->rank[1]++] = sh->dims[0][i];
    }
    if (sh->rank[1] == 0) /* every axis reduced: one element, kept at the input's rank */
        for (int i = 0; i < r; ++i)
            sh->dims[1][sh->rank[1]++] = 1;
    return 0;
}

/* Whether text [text, stop), read as v, is not an integer literal or is one that v holds exactly. */
static bool integer_exact(const char *text, const char *stop, double v)
{
    char *end;
    errno = 0;
    long long i = strtoll(text, &end, 10);
    if (end != stop)
        return true; /* not an integer literal: strtod's reading is the value meant */
    return errno != ERANGE && v >= -0x1p63 && v < 0x1p63 && (long long)v == i;
}

/* The value --scalars gives NAME, into *v; 0 when it gives none, -1 when it is not a number. */
static int given_value(const char *given, const char *name, double *v, int *found, nd_error *err)
{
    size_t len = strlen(name);
    for (const char *q = given; *q;) {
        size_t item = strcspn(q, ","), eq = strcspn(q, "=");
        if (eq >= item)
            return nd_fail(err, "--scalars %s: '%.*s' is not NAME=VALUE", given, (int)item, q);
        if (eq == len && strncmp(q, name, len) == 0) {
            const char *text = q + eq + 1; /* read in place: a copy could cut a long number short */
            char *end;
            *v = strtod(text, &end);
            if (end == text || end != q + item || !isfinite(*v))
                return nd_fail(err, "--scalars %s: %s: '%.*s' is not a finite number", given, name,
                               (int)(item - eq - 1), text);
            if (!integer_exact(text, q + item, *v)) /* 2^53 + 1 would launch as 2^53 and pass an i64's check */
                return nd_fail(err, "--scalars %s: %s: %.*s is not exact in a double, as launch values travel", given,
                               name, (int)(item - eq - 1), text);
            ++*found;
        }
        q += item + (q[item] == ',');
    }
    return 0;
}

/* An op's named scalars from --scalars eps=V,alpha=V: each declared name once, no other, each value
 * a finite number; launched in the declared order. Types and ranges are nd_run's to check. */
static int named_scalars(const nr_case *c, const nda_kernel_entry *e, const nd_scalars *decl, int named,
                         nr_setup *su, nd_error *err)
{
    const char *given = c->scalars;
    if (!named && given && !decl->n)
        return nd_fail(err, "--scalars %s: op '%s' takes no launch scalars", given, e->op);
    if (!named)
        return given ? nd_fail(err, "--scalars %s: op '%s' takes only the list %s, given with --%s", given, e->op,
                               e->scalars, decl->d[0].type == ND_SCALAR_PERM ? "perm" : "axes") : 0;
    if (!given)
        return nd_fail(err, "op '%s' takes the launch scalars %s: give their values with --scalars, such as "
                            "--scalars %s=1", e->op, e->scalars, decl->d[0].name);
    for (int i = 0; i < named; ++i) {
        int found = 0;
        if (given_value(given, decl->d[i].name, &su->scalars[i], &found, err))
            return -1;
        if (found != 1)
            return nd_fail(err, "--scalars %s: %s '%s' of op '%s' (it takes %s)", given,
                           found ? "gives twice the scalar" : "lacks the scalar", decl->d[i].name, e->op, e->scalars);
    }
    for (const char *q = given; *q;) { /* every given name is declared */
        size_t item = strcspn(q, ","), eq = strcspn(q, "=");
        bool known = false;
        for (int i = 0; i < named && !known; ++i)
            known = strlen(decl->d[i].name) == eq && strncmp(decl->d[i].name, q, eq) == 0;
        if (!known)
            return nd_fail(err, "--scalars %s: op '%s' has no scalar '%.*s' (it takes %s)", given, e->op, (int)eq,
                           q, e->scalars);
        q += item + (q[item] == ',');
    }
    su->nscalars = named;
    return 0;
}

static int derive_shapes(const nr_case *c, const nda_kernel_entry *e, nr_setup *su, shapes *sh, nd_error *err)
{
    int64_t given[ND_MAX_RANK * 2];
    int n = 0;
    const char *text = c->flags[0].flags.shape;
    nd_scalars decl;
    if (!text)
        return nd_fail(err, "--shape: required, such as --shape 1024,1024");
    if (nd_parse_dims("--shape", text, given, &n, err))
        return -1;
    if (nr_named_indices(e))
        return letter_shapes(e, given, n, sh, err);
    for (int k = 0; k < e->noperands; ++k) {
        sh->rank[k] = n;
        memcpy(sh->dims[k], given, sizeof(int64_t) * (size_t)n);
    }
    if (nd_scalars_parse(e->scalars, &decl, err))
        return -1;
    int list = nd_scalars_list(&decl), named = list < 0 ? decl.n : list;
    if (named_scalars(c, e, &decl, named, su, err))
        return -1;
    return list >= 0 && e->noperands == 2 ? list_scalars(c, &decl.d[list], named, su, sh, err) : 0;
}

/* ---------------------------------------------------------------- distributions */

static const nd_dist_flags *own_flags(const nr_case *c, const char *name)
{
    for (int i = 1; i < c->nflags; ++i)
        if (strcmp(c->flags[i].name, name) == 0)
            return &c->flags[i].flags;
    return NULL;
}

static int check_operand_names(const nr_case *c, const nda_kernel_entry *e, nd_error *err)
{
    for (int i = 1; i < c->nflags; ++i) {
        bool found = false;
        for (int k = 0; k < e->noperands; ++k)
            found = found || strcmp(e->operands[k], c->flags[i].name) == 0;
        if (!found)
            return nd_fail(err, "--operand %s: op '%s' has no such operand (it has %s%s%s%s%s)", c->flags[i].name,
                           e->op, e->operands[0], e->noperands > 1 ? ", " : "", e->noperands > 1 ? e->operands[1] : "",
                           e->noperands > 2 ? ", " : "", e->noperands > 2 ? e->operands[2] : "");
    }
    return 0;
}

static int rank_of(const char *text)
{
    int r = text && text[0] ? 1 : 0;
    for (const char *p = text; p && *p; ++p)
        r += *p == ',';
    return r;
}

/* Operand k's flags: shared, then its own; its shape from sh unless it gives one. */
static int operand_dist(const nr_case *c, const nda_kernel_entry *e, int k, const shapes *sh, nd_dist *d,
                        nd_error *err)
{
    char shape[256] = "";
    nd_dist_flags f = c->flags[0].flags;
    const nd_dist_flags *own = own_flags(c, e->operands[k]);
    for (int i = 0; i < sh->rank[k]; ++i)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "," : "", (long long)sh->dims[k][i]);
    f.shape = shape;
    if (own)
        nd_dist_flags_overlay(&f, own);
    f.dtype = c->dtype ? c->dtype : "f32";
    f.l1_size = f.l1_size ? f.l1_size : "1024G"; /* ndrun sizes the device to fit its operands */
    f.dram_bank_size = f.dram_bank_size ? f.dram_bank_size : "1024G";
    if (f.shard && !(own && own->shard) && rank_of(f.shard) != rank_of(f.shape))
        return nd_fail(err, "operand '%s' has shape %s, of another rank than --shard %s; give it its own "
                            "--operand %s --shard", e->operands[k], f.shape, f.shard, e->operands[k]);
    nd_error why;
    if (nd_dist_from_flags(&f, d, &why))
        return nd_failc(err, why.code, "operand '%s': %s", e->operands[k], why.msg);
    return 0;
}

/* ---------------------------------------------------------------- memory */


enum { OS_PAGE = 4096, CORE_ENTRY = 64, TENSOR_CORE_ENTRY = 176 }; /* see device_bytes */

static int64_t dist_bytes(const nd_dist *d)
{
    int64_t n = d->elem_bytes;
    for (int i = 0; i < d->spec.rank; ++i)
        n = nd_size_mul(n, d->spec.shape[i]);
    return n;
}

/* RAM a tensor can come to occupy: the pages holding data, in every copy, plus the two OS pages a
 * holding core's buffer may straddle (cores holding no shard are never touched); every core's buffer
 * for a Partial tensor, which nd_tensor_write fills whole. */
static int64_t tensor_ram(const nd_dist *d)
{
    const nd_layout *l = &d->layout;
    if (d->spec.parts > 1)
        return nd_size_mul(d->list_cores, nd_size_add(d->bytes_per_core, OS_PAGE));
    int64_t holders = l->strategy == ND_ROUND_ROBIN ? (l->num_shards < l->ncores ? l->num_shards : l->ncores)
                                                    : (l->num_shards + l->shards_per_core - 1) / l->shards_per_core;
    return nd_size_mul(d->spec.replicas, nd_size_add(nd_size_mul(l->num_pages, d->page_bytes), nd_size_mul(holders, 2 * OS_PAGE)));
}

/* The device: each tensor's RAM, and the runtime's entries per core (arena and statistics per
 * device core; per tensor and core, its index entries and arena block list). */
static int64_t device_bytes(const nr_setup *su, int64_t device_cores)
{
    int64_t n = nd_size_mul(device_cores, CORE_ENTRY);
    for (int k = 0; k < su->n; ++k)
        n = nd_size_add(n, nd_size_add(tensor_ram(&su->dist[k]), nd_size_mul(device_cores, TENSOR_CORE_ENTRY)));
    return n;
}

/* The host: the operands' arrays, three outputs to compare, the timing rounds, and with probes three
 * STREAM arrays of the largest operand. */
static int64_t host_bytes(const nr_setup *su, bool probes)
{
    int64_t n = 5 * 100000 * (int64_t)sizeof(double), largest = OS_PAGE;
    for (int k = 0; k < su->n; ++k) {
        int64_t b = dist_bytes(&su->dist[k]);
        n = nd_size_add(n, b);
        largest = b < 0 ? -1 : b > largest ? b : largest;
    }
    return nd_size_add(n, nd_size_add(nd_size_mul(3, dist_bytes(&su->dist[su->n - 1])), probes ? nd_size_mul(3, largest) : 0));
}

/* A number from a file such as memory.max; -1 when absent or not a number ("max"). */
static int64_t read_number(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long long v = -1;
    size_t klen = key ? strlen(key) : 0;
    while (f && fgets(line, sizeof line, f))
        if ((!key || strncmp(line, key, klen) == 0) && sscanf(line + klen, " %lld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* Bytes the machine has available, and where that figure comes from; -1 when unknown. MemAvailable,
 * or less when this process's cgroup (v2) leaves less under its memory.max. */
static int64_t available_bytes(const char **source)
{
    int64_t avail = read_number("/proc/meminfo", "MemAvailable:");
    char path[600], dir[400] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f && fscanf(f, "0::%399s", dir) != 1)
        dir[0] = '\0';
    if (f)
        fclose(f);
    *source = "MemAvailable in /proc/meminfo";
    avail = avail < 0 ? -1 : nd_size_mul(avail, 1024);
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", strcmp(dir, "/") ? dir : "");
    int64_t max = dir[0] ? read_number(path, NULL) : -1;
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", strcmp(dir, "/") ? dir : "");
    int64_t used = max >= 0 ? read_number(path, NULL) : -1;
    if (used >= 0 && (avail < 0 || max - used < avail)) {
        avail = max > used ? max - used : 0;
        *source = "this cgroup's memory.max less memory.current";
    }
    return avail;
}

/* Refuses, before allocating anything, a case whose host and device memory exceed what is available. */
static int check_memory(const nr_setup *su, bool probes, int64_t device_cores, nd_error *err)
{
    const char *source;
    int64_t host = host_bytes(su, probes), dev = device_bytes(su, device_cores), need = nd_size_add(host, dev);
    int64_t avail = available_bytes(&source);
    if (need < 0)
        return nd_failc(err, ND_ERANGE, "memory: the operands' host and device bytes overflow 64 bits");
    if (avail < 0 || need <= avail)
        return 0;
    return nd_failc(err, ND_ENOMEM, "memory: the case needs %lld MiB (host %lld MiB, device %lld MiB), but the machine "
                                    "has %lld MiB available (%s)", (long long)((need + (1 << 20) - 1) >> 20),
                    (long long)((host + (1 << 20) - 1) >> 20), (long long)((dev + (1 << 20) - 1) >> 20),
                    (long long)(avail >> 20), source);
}

/* ---------------------------------------------------------------- device and inputs */

/* A device just large enough for the operands: the grid and banks they use, each core's L1 (and each
 * bank) the sum of their buffers with room for alignment. */
static int device_config(const nr_setup *su, const nr_settings *s, nd_device_config *out, nd_error *err)
{
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = cfg.dram_banks = 1;
    int64_t per_core = 4096;
    for (int k = 0; k < su->n; ++k) {
        const nd_dist *d = &su->dist[k];
        int maxx = 0, maxy = 0;
        for (int r = 0; r < d->spec.cores.nranges; ++r) {
            maxx = d->spec.cores.ranges[r].hi.x > maxx ? d->spec.cores.ranges[r].hi.x : maxx;
            maxy = d->spec.cores.ranges[r].hi.y > maxy ? d->spec.cores.ranges[r].hi.y : maxy;
        }
        if (d->spec.buffer == ND_DRAM) /* a bank per listed core, and a device core to write each */
            cfg.dram_banks = maxx + 1 > cfg.dram_banks ? maxx + 1 : cfg.dram_banks;
        cfg.grid_x = maxx + 1 > cfg.grid_x ? maxx + 1 : cfg.grid_x;
        cfg.grid_y = d->spec.buffer == ND_L1 && maxy + 1 > cfg.grid_y ? maxy + 1 : cfg.grid_y;
        per_core = nd_size_add(per_core, nd_size_add(d->bytes_per_core, 4096));
    }
    if (per_core < 0)
        return nd_failc(err, ND_ERANGE, "memory: the operands' bytes per core overflow 64 bits");
    cfg.l1_bytes = cfg.dram_bank_bytes = per_core;
    cfg.threads = s->threads;
    cfg.huge_pages = !s->small_pages;
    *out = cfg;
    return 0;
}

static int open_device(nr_setup *su, const nr_settings *s, nd_error *err)
{
    nd_device_config cfg;
    if (device_config(su, s, &cfg, err) || check_memory(su, s->probes, (int64_t)cfg.grid_x * cfg.grid_y, err))
        return -1;
    return nr_open_device(&cfg, &su->dev, err);
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Floats are multiples of 1/4 in [-8, 8]: exact in bf16, and sums of products stay exact in f32 for
 * the sizes the suite runs, so any summation order gives the same result. */
static void fill(void *p, int64_t n, nd_dtype t, uint64_t *state)
{
    for (int64_t i = 0; i < n; ++i) {
        uint64_t r = next_random(state);
        float f = (float)((int)(r % 65) - 32) / 4.0f;
        if (nd_dtype_floating(t)) /* exact in every floating dtype: its store conversion keeps it */
            ndref_dtype_store_f32(t, p, i, f);
        else /* integers: the random bits, as many bytes as the dtype has (little-endian hosts) */
            memcpy((uint8_t *)p + i * nd_dtype_size(t), &r, (size_t)nd_dtype_size(t));
    }
}

static int make_operands(nr_setup *su, const nr_settings *s, nd_error *err)
{
    uint64_t state = s->seed;
    for (int k = 0; k < su->n; ++k) {
        su->elems[k] = 1;
        for (int i = 0; i < su->dist[k].spec.rank; ++i)
            su->elems[k] = nd_size_mul(su->elems[k], su->dist[k].spec.shape[i]); /* fits: nd_dist checked the bytes */
        su->host[k] = nr_host_alloc(su->dev, nr_bytes(su, k));
        if (!su->host[k])
            return nd_failc(err, ND_ENOMEM, "operand '%s': out of host memory", su->entry->operands[k]);
        if (nd_tensor_alloc(su->dev, &su->dist[k], &su->t[k], err))
            return -1;
        if (k + 1 < su->n) {
            fill(su->host[k], su->elems[k], su->dist[k].spec.dtype, &state);
            if (nd_tensor_write(su->t[k], su->host[k], nr_bytes(su, k), err))
                return -1;
        }
    }
    return 0;
}

int nr_setup_open(nd_kernels *k, const nr_case *c, const nr_settings *s, nr_setup *su, nd_error *err)
{
    shapes sh;
    memset(su, 0, sizeof *su);
    if (!c->op)
        return nd_fail(err, "--op: required, such as --op add");
    if (find_entry(k, c->op, c->dtype ? c->dtype : "f32", &su->entry, err) ||
        check_operand_names(c, su->entry, err) || derive_shapes(c, su->entry, su, &sh, err))
        return -1;
    su->n = su->entry->noperands;
    for (int i = 0; i < su->n; ++i)
        if (operand_dist(c, su->entry, i, &sh, &su->dist[i], err))
            return -1;
    if (open_device(su, s, err) || make_operands(su, s, err)) {
        nr_setup_close(su);
        return -1;
    }
    return 0;
}

void nr_setup_close(nr_setup *su)
{
    for (int k = 0; k < su->n; ++k) {
        nd_tensor_free(su->t[k]);
        free(su->host[k]);
    }
    nd_device_close(su->dev);
    memset(su, 0, sizeof *su);
}
