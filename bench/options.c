/* options.c - the options ndrun compare and ndrun bench share. */
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

const char nr_options_help[] =
    "What to run:\n"
    "  --op NAME               the op, as its spec names it (add, relu, matmul, reduce_sum, permute, ...)\n"
    "  --dtype T               every operand's dtype: " ND_DTYPE_LIST "(default f32)\n"
    "  --axes A,B              reduced axes of a reduction (default: the last)\n"
    "  --perm P0,P1,..         the permutation of a permute (default: the axes reversed)\n"
    "  --scalars N=V,..        the values of an op's named launch scalars, each one once (eps=1e-5)\n"
    "  --operand NAME          the distribution flags after it apply to operand NAME only; the flags\n"
    "                          before any --operand apply to every operand\n"
    "\n"
    "Shapes: --shape is every operand's shape, except that a reduction's or permute's output follows\n"
    "from --axes or --perm, and a contraction's --shape lists the size of each index letter in order of\n"
    "first appearance (matmul ik,kj->ij: --shape I,K,J). An operand of another shape, such as a\n"
    "broadcast one, takes its own --operand NAME --shape. --shard applies to every operand of its rank.\n"
    "\n"
    "How:\n"
    "  --threads N             threads running the cores, the reference and the probes (default: 2)\n"
    "  --repeats N             at least N timed runs of each variant (default 5)\n"
    "  --min-time SECONDS      and at least this long per variant (default 0.2)\n"
    "  --no-jit                never specialize on demand: without a prebuilt kernel, compare fails\n"
    "  --cache-dir DIR         the JIT cache, a folder of yours only you can write (default: $NDGEN_CACHE_DIR,\n"
    "                          else $XDG_CACHE_HOME/ndgen, else ~/.cache/ndgen, else a private temporary\n"
    "                          folder removed at exit)\n"
    "  --seed N                seed of the random inputs (default 1)\n"
    "  --watchdog SECONDS      a kernel launch (or the JIT building its kernel) running longer stops\n"
    "                          ndrun with exit status 1, naming the kernel (default 600; 0: no limit)\n"
    "  --no-probes             skip measuring the machine (STREAM, memcpy, FMA peak): no limit column\n"
    "  --small-pages           4 KiB pages only: no transparent huge pages for the tensors' large pieces\n"
    "                          nor for the plain loop's, the peers' and the probes' arrays\n"
    "  --json                  print JSON instead of a table\n";

void nr_settings_init(nr_settings *s)
{
    memset(s, 0, sizeof *s);
    s->threads = 2;
    s->min_repeats = 5;
    s->min_seconds = 0.2;
    s->jit = true;
    s->probes = true;
    s->seed = 1;
    s->fixed = "all";
    s->watchdog = NR_WATCHDOG_DEFAULT;
    if (nd_jit_default_cache_dir(s->cache_dir, sizeof s->cache_dir))
        s->cache_dir[0] = '\0';
}

/* The value of option argv[*i]: after '=' or the next argument. */
static const char *value_of(int argc, char **argv, int *i, const char *name, nd_error *err)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        nd_fail(err, "--%s: needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int parse_int(const char *flag, const char *text, long lo, long hi, long *out, nd_error *err)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!text[0] || *end || v < lo || v > hi) { /* -1 stated here: callers read *out only on 0 */
        nd_fail(err, "%s %s: expected a whole number from %ld to %ld", flag, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int settings_option(const char *name, const char *v, nr_settings *s, nd_error *err)
{
    long n;
    if (strcmp(name, "threads") == 0) {
        if (parse_int("--threads", v, 1, 1024, &n, err))
            return -1;
        s->threads = (int)n;
    } else if (strcmp(name, "repeats") == 0) {
        if (parse_int("--repeats", v, 1, 100000, &n, err))
            return -1;
        s->min_repeats = (int)n;
    } else if (strcmp(name, "min-time") == 0) {
        char *end;
        s->min_seconds = strtod(v, &end);
        if (!v[0] || *end || !(s->min_seconds >= 0 && s->min_seconds <= 3600))
            return nd_fail(err, "--min-time %s: expected seconds from 0 to 3600", v);
    } else if (strcmp(name, "watchdog") == 0) {
        char *end;
        s->watchdog = strtod(v, &end);
        if (!v[0] || *end || !(s->watchdog >= 0 && s->watchdog <= 86400))
            return nd_fail(err, "--watchdog %s: expected seconds from 0 (no limit) to 86400", v);
    } else if (strcmp(name, "seed") == 0) {
        if (parse_int("--seed", v, 0, 2147483647, &n, err))
            return -1;
        s->seed = (uint64_t)n;
    } else if (strcmp(name, "cache-dir") == 0) {
        if (!v[0] || strlen(v) >= sizeof s->cache_dir)
            return nd_fail(err, "--cache-dir '%s': expected a folder path", v);
        strcpy(s->cache_dir, v);
    } else {
        return 1;
    }
    return 0;
}

static int case_option(const char *name, const char *v, nr_case *c, nd_error *err)
{
    if (strcmp(name, "op") == 0) {
        c->op = v;
    } else if (strcmp(name, "dtype") == 0) {
        nd_dtype t;
        if (nd_parse_dtype("--dtype", v, &t, err))
            return -1;
        c->dtype = v;
    } else if (strcmp(name, "axes") == 0) {
        c->axes = v;
    } else if (strcmp(name, "perm") == 0) {
        c->perm = v;
    } else if (strcmp(name, "scalars") == 0) {
        c->scalars = v;
    } else if (strcmp(name, "operand") == 0) {
        if (c->nflags == NR_MAX_OPERANDS + 1)
            return nd_fail(err, "--operand %s: at most %d operands", v, NR_MAX_OPERANDS);
        for (int i = 1; i < c->nflags; ++i)
            if (strcmp(c->flags[i].name, v) == 0)
                return nd_fail(err, "--operand %s: given twice; put all of its flags after one --operand", v);
        c->flags[c->nflags++] = (nr_operand_flags){.name = v};
    } else {
        int which = nd_dist_flag_index(name);
        if (which < 0 || strcmp(name, "dtype") == 0)
            return 1;
        nd_dist_flags_set(&c->flags[c->nflags - 1].flags, which, v);
    }
    return 0;
}

int nr_parse_option(int argc, char **argv, int *i, nr_case *c, nr_settings *s, nd_error *err)
{
    const char *arg = argv[*i];
    if (strncmp(arg, "--", 2) != 0)
        return 1;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    if (c->nflags == 0)
        c->nflags = 1;
    int dist_flag = nd_dist_flag_index(name);
    bool dist_switch = dist_flag >= 0 && nd_dist_flag_is_switch(dist_flag);
    if (!strcmp(name, "no-jit") || !strcmp(name, "no-probes") || !strcmp(name, "json") || !strcmp(name, "small-pages") ||
        dist_switch) {
        if (strchr(arg, '='))
            return nd_fail(err, "%s: takes no value", arg);
        if (dist_switch)
            nd_dist_flags_set(&c->flags[c->nflags - 1].flags, dist_flag, NULL);
        else if (!strcmp(name, "no-probes"))
            s->probes = false;
        else if (!strcmp(name, "small-pages"))
            s->small_pages = true;
        else if (name[0] == 'n')
            s->jit = false;
        else
            s->json = true;
        return 0;
    }
    bool known = nd_dist_flag_index(name) >= 0 || !strcmp(name, "op") || !strcmp(name, "dtype") ||
                 !strcmp(name, "axes") || !strcmp(name, "perm") || !strcmp(name, "scalars") || !strcmp(name, "operand") ||
                 !strcmp(name, "threads") || !strcmp(name, "repeats") || !strcmp(name, "min-time") ||
                 !strcmp(name, "seed") || !strcmp(name, "cache-dir") || !strcmp(name, "watchdog");
    if (!known)
        return 1;
    const char *v = value_of(argc, argv, i, name, err);
    if (!v)
        return -1;
    int rc = settings_option(name, v, s, err);
    return rc <= 0 ? rc : case_option(name, v, c, err);
}

int nr_case_from_args(const char *label, const char *const *args, int max, nr_case *c, nd_error *err)
{
    char *argv[NR_MAX_CASE_ARGS];
    int argc = 0;
    nr_settings ignored; /* a case's own options are its operands' and op's, never the run's settings */
    nr_settings_init(&ignored);
    *c = (nr_case){.nflags = 1};
    while (argc < max && argc < NR_MAX_CASE_ARGS && args[argc]) {
        argv[argc] = (char *)args[argc];
        ++argc;
    }
    for (int i = 0; i < argc; ++i)
        if (nr_parse_option(argc, argv, &i, c, &ignored, err))
            return -1;
    snprintf(c->label, sizeof c->label, "%s", label);
    return 0;
}

/* ---------------------------------------------------------------- did you mean */

/* Edit distance between a and b counting a swap of two neighbours as one edit (the optimal string
 * alignment distance), each at most 63 bytes (longer: a large distance). */
static int distance(const char *a, const char *b)
{
    size_t m = strlen(a), n = strlen(b);
    int d[64][64];
    if (m > 63 || n > 63)
        return 64;
    for (size_t i = 0; i <= m; ++i)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= n; ++j)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= m; ++i)
        for (size_t j = 1; j <= n; ++j) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            best = d[i - 1][j] + 1 < best ? d[i - 1][j] + 1 : best;
            best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[m][n];
}

void nr_nearest(const char *word, const char *candidate, nr_near *near)
{
    int d = distance(word, candidate), len = (int)strlen(word);
    if (d > 0 && d <= (len < 6 ? 1 : 2) && (!near->name[0] || d < near->d)) {
        snprintf(near->name, sizeof near->name, "%.63s", candidate); /* at most 63: distance() */
        near->d = d;
    }
}

void nr_nearest_option(const char *word, const char *help, nr_near *near)
{
    while (*word == '-')
        ++word;
    for (const char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
        char name[64];
        size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        if (n == 0 || n >= sizeof name)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)n, p + 2);
        nr_nearest(word, name, near);
    }
}
