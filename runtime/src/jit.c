/*
 * jit.c - on-demand specialization: when no loaded kernel is specialized for a launch's distributions,
 * run ndgen for that one target, compile the result with the system C compiler, and cache the library.
 *
 * Cache layout, in cfg.cache_dir:
 *   <key>.manifest   what the entry was built from, and the library's own hash; written last
 *   <key>-<lib>.so   the library, named by its content hash so a name never changes meaning
 * key hashes the format version, the generator version, spec name, op, dtypes, every operand's
 * signature, the compiler and its flags. The manifest lists every input file (spec, included specs,
 * template, its headers, the ndgen executable) with its hash and size, and ends with a checksum of
 * itself. An entry is loaded only when its manifest is whole, every input is unchanged, and the
 * library's bytes hash to the recorded value; otherwise it is rebuilt. Builds happen in a private
 * folder and reach the cache by rename, so a reader never sees a half-written file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime_internal.h"

extern char **environ;

enum { JIT_FORMAT = 1, JIT_MAX_ARGS = 96, JIT_MAX_DEPS = 64, JIT_MANIFEST_BYTES = JIT_MAX_DEPS * 4200 };

/* ---------------------------------------------------------------- hashing */

/* FNV-1a, 64 bits: detects corruption and names entries; not a defence against a hostile cache. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static const uint64_t HASH_SEED = 0xcbf29ce484222325ull;

static uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }

/* Hash and size of a whole file; -1 when it cannot be read. */
static int hash_file(const char *path, uint64_t *h, int64_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    char buf[1 << 16];
    size_t n;
    *h = HASH_SEED;
    *size = 0;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0) {
        *h = hash_bytes(*h, buf, n);
        *size += (int64_t)n;
    }
    int bad = ferror(fp);
    fclose(fp);
    return bad ? -1 : 0;
}

/* ---------------------------------------------------------------- configuration */

void nd_jit_config_init(nd_jit_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const char *cc = getenv("CC");
    cfg->cc = cc && cc[0] ? cc : "cc";
    cfg->cflags = "-O2";
}

/* The folder the cache defaults to: $NDGEN_CACHE_DIR, $XDG_CACHE_HOME/ndgen or ~/.cache/ndgen. */
int nd_jit_default_cache_dir(char *buf, size_t len)
{
    const char *dir = getenv("NDGEN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = dir && dir[0]   ? snprintf(buf, len, "%s", dir)
            : xdg && xdg[0] ? snprintf(buf, len, "%s/ndgen", xdg)
            : home && home[0] ? snprintf(buf, len, "%s/.cache/ndgen", home)
                              : snprintf(buf, len, "/tmp/ndgen-cache-%d", (int)getuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int copy_str(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

void nd_jit_free(nd_jit *j)
{
    if (!j)
        return;
    free(j->cache_dir);
    free(j->ndgen);
    free(j->spec_dir);
    free(j->include_dir);
    free(j->cc);
    free(j->cflags);
    free(j->ldflags);
    for (int i = 0; i < j->ntemplate_dirs; ++i)
        free(j->template_dirs[i]);
    free(j);
}

int nd_jit_create(const nd_jit_config *cfg, nd_jit **out, nd_error *err)
{
    const char *need[] = {cfg->cache_dir, cfg->ndgen, cfg->spec_dir, cfg->include_dir, cfg->cc};
    const char *names[] = {"cache_dir", "ndgen", "spec_dir", "include_dir", "cc"};
    for (int i = 0; i < 5; ++i)
        if (!need[i] || !need[i][0])
            return nd_fail(err, "jit: %s is not set", names[i]);
    if (cfg->ntemplate_dirs < 1 || cfg->ntemplate_dirs > ND_JIT_MAX_TEMPLATE_DIRS)
        return nd_fail(err, "jit: %d template folders; give 1 to %d", cfg->ntemplate_dirs, ND_JIT_MAX_TEMPLATE_DIRS);
    nd_jit *j = calloc(1, sizeof *j);
    int bad = !j;
    if (j) {
        bad = copy_str(&j->cache_dir, cfg->cache_dir) || copy_str(&j->ndgen, cfg->ndgen) ||
              copy_str(&j->spec_dir, cfg->spec_dir) || copy_str(&j->include_dir, cfg->include_dir) ||
              copy_str(&j->cc, cfg->cc) || copy_str(&j->cflags, cfg->cflags ? cfg->cflags : "") ||
              copy_str(&j->ldflags, cfg->ldflags ? cfg->ldflags : "");
        for (int i = 0; i < cfg->ntemplate_dirs && !bad; ++i, ++j->ntemplate_dirs)
            bad = copy_str(&j->template_dirs[i], cfg->template_dirs[i]);
    }
    if (bad) {
        nd_jit_free(j);
        return nd_fail(err, "jit: out of memory");
    }
    *out = j;
    return 0;
}

/* ---------------------------------------------------------------- one request */

typedef struct jit_request {
    const nda_kernel_entry *generic; /* the op's generic entry: name, dtypes, operands */
    const char *spec;                /* the spec file's name, from the entry's registry group */
    char (*sigs)[2048];              /* one per operand */
    char spec_path[4096];
    char dtypes[256];
    char key[17];
} jit_request;

static void make_key(const nd_jit *j, jit_request *r)
{
    uint64_t h = hash_bytes(HASH_SEED, &(int){JIT_FORMAT}, sizeof(int));
    h = hash_str(hash_str(hash_str(h, NDGEN_VERSION), r->spec), r->generic->op);
    h = hash_str(h, r->dtypes);
    for (int i = 0; i < r->generic->noperands; ++i)
        h = hash_str(h, r->sigs[i]);
    h = hash_str(hash_str(hash_str(h, j->cc), j->cflags), j->ldflags);
    snprintf(r->key, sizeof r->key, "%016" PRIx64, h);
}

/* ---------------------------------------------------------------- manifests */

typedef struct jit_dep {
    char path[4096];
    uint64_t hash;
    int64_t size;
} jit_dep;

typedef struct jit_manifest {
    char key[17];
    uint64_t lib_hash;
    int64_t lib_size;
    int ndeps;
    jit_dep deps[JIT_MAX_DEPS];
} jit_manifest;

static void manifest_text(const jit_manifest *m, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "ndgen-jit-manifest %d\nkey %s\nlibrary %016" PRIx64 " %" PRId64 "\n",
                                JIT_FORMAT, m->key, m->lib_hash, m->lib_size);
    for (int i = 0; i < m->ndeps && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, "dep %016" PRIx64 " %" PRId64 " %s\n", m->deps[i].hash,
                              m->deps[i].size, m->deps[i].path);
    if (n < len)
        snprintf(buf + n, len - n, "end %016" PRIx64 "\n", hash_bytes(HASH_SEED, buf, n));
}

/* Parses and checks a manifest's own integrity; why says what is wrong. */
static int manifest_parse(char *text, jit_manifest *m, const char **why);

static int manifest_read(const char *path, jit_manifest *m, const char **why)
{
    FILE *fp = fopen(path, "rb");
    char *text = malloc(JIT_MANIFEST_BYTES);
    *why = fp ? "out of memory" : "no entry";
    if (!fp || !text) {
        if (fp)
            fclose(fp);
        free(text);
        return -1;
    }
    size_t n = fread(text, 1, JIT_MANIFEST_BYTES - 1, fp);
    fclose(fp);
    text[n] = '\0';
    int rc = manifest_parse(text, m, why);
    free(text);
    return rc;
}

/* text: a whole manifest, NUL-terminated; modified. */
static int manifest_parse(char *text, jit_manifest *m, const char **why)
{
    char *end = strstr(text, "\nend ");
    uint64_t sum;
    *why = "manifest damaged or incomplete";
    if (!end || sscanf(end + 5, "%" SCNx64, &sum) != 1 || hash_bytes(HASH_SEED, text, (size_t)(end + 1 - text)) != sum)
        return -1;
    int format;
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    if (!line || sscanf(line, "ndgen-jit-manifest %d", &format) != 1 || format != JIT_FORMAT)
        return -1;
    memset(m, 0, sizeof *m);
    while ((line = strtok_r(NULL, "\n", &save)) && strncmp(line, "end ", 4) != 0) {
        jit_dep *d = &m->deps[m->ndeps];
        int pos = 0;
        if (sscanf(line, "key %16s", m->key) == 1 ||
            sscanf(line, "library %" SCNx64 " %" SCNd64, &m->lib_hash, &m->lib_size) == 2)
            continue;
        if (m->ndeps == JIT_MAX_DEPS || sscanf(line, "dep %" SCNx64 " %" SCNd64 " %n", &d->hash, &d->size, &pos) != 2 ||
            !pos)
            return -1;
        snprintf(d->path, sizeof d->path, "%s", line + pos);
        m->ndeps++;
    }
    return 0;
}

static void lib_path(const nd_jit *j, const char *key, uint64_t lib_hash, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s-%016" PRIx64 ".so", j->cache_dir, key, lib_hash);
}

/* Whether the cached entry may be loaded: whole, for this key, inputs unchanged, library intact. */
static bool entry_valid(const nd_jit *j, const jit_request *r, jit_manifest *m, const char **why)
{
    char path[4096];
    uint64_t h;
    int64_t size;
    snprintf(path, sizeof path, "%s/%s.manifest", j->cache_dir, r->key);
    if (manifest_read(path, m, why))
        return false;
    *why = "manifest of another key";
    if (strcmp(m->key, r->key) != 0)
        return false;
    for (int i = 0; i < m->ndeps; ++i) {
        *why = "stale: an input file changed";
        if (hash_file(m->deps[i].path, &h, &size) || h != m->deps[i].hash || size != m->deps[i].size)
            return false;
    }
    lib_path(j, r->key, m->lib_hash, path, sizeof path);
    *why = "library damaged or missing";
    return hash_file(path, &h, &size) == 0 && h == m->lib_hash && size == m->lib_size;
}

/* ---------------------------------------------------------------- building */

/* Runs argv with standard output and error appended to log; 0 when it exits with status 0. */
static int run_tool(char *const *argv, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The line of a tool's log that says what went wrong, for an error message: the first that mentions
 * "error" (a compiler's first line often only names the function), else the first. The build folder
 * dir is removed afterwards, so its path is cut from the line. */
static void log_head(const char *log, const char *dir, char *buf, size_t len)
{
    FILE *fp = fopen(log, "r");
    char line[512];
    buf[0] = '\0';
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        bool error = strstr(line, "error") != NULL;
        if (!buf[0] || error)
            snprintf(buf, len, "%s", line);
        if (error)
            break;
    }
    if (fp)
        fclose(fp);
    size_t n = strlen(dir);
    for (char *p = strstr(buf, dir); p && p[n] == '/'; p = strstr(p, dir))
        memmove(p, p + n + 1, strlen(p + n + 1) + 1);
    if (!buf[0])
        snprintf(buf, len, "it could not be started or exited without a message");
}

static void ndgen_argv(const nd_jit *j, const jit_request *r, char *const *store, char **argv)
{
    int n = 0;
    argv[n++] = j->ndgen;
    argv[n++] = "generate";
    argv[n++] = "--op";
    argv[n++] = (char *)r->generic->op;
    argv[n++] = "--dtypes";
    argv[n++] = (char *)r->dtypes;
    for (int i = 0; i < r->generic->noperands; ++i) {
        argv[n++] = "--target";
        argv[n++] = r->sigs[i];
    }
    for (int i = 0; i < j->ntemplate_dirs; ++i) {
        argv[n++] = "--templates";
        argv[n++] = j->template_dirs[i];
    }
    argv[n++] = "--include";
    argv[n++] = j->include_dir;
    argv[n++] = "--library";
    argv[n++] = "--output";
    argv[n++] = store[0];
    argv[n++] = "--depfile";
    argv[n++] = store[1];
    argv[n++] = (char *)r->spec_path;
    argv[n] = NULL;
}

/* Appends the blank-separated words of text (modified in place) to argv, leaving room for more. Drops
 * -Werror and -Werror=...: a warning never stops a specialization (its code is the generic kernel's,
 * with the sizes made constants, which a compiler may warn about in ways the generic code never shows). */
static int split_words(char *text, char **argv, int n)
{
    char *save = NULL;
    for (char *t = strtok_r(text, " \t", &save); t && n < JIT_MAX_ARGS - 24; t = strtok_r(NULL, " \t", &save))
        if (strcmp(t, "-Werror") != 0 && strncmp(t, "-Werror=", 8) != 0)
            argv[n++] = t;
    return n;
}

/* cc CFLAGS -shared -fPIC -std=c17 -I.. -o lib src LDFLAGS -lm; flags split at blanks (no quoting). */
static void cc_argv(const nd_jit *j, char *flags, char *ldflags, char *const *store, char **argv, char *incs)
{
    int n = 0;
    argv[n++] = j->cc;
    n = split_words(flags, argv, n);
    argv[n++] = "-shared";
    argv[n++] = "-fPIC";
    argv[n++] = "-std=c17";
    size_t off = 0;
    const char *dirs[ND_JIT_MAX_TEMPLATE_DIRS + 1] = {j->include_dir};
    for (int i = 0; i < j->ntemplate_dirs; ++i)
        dirs[i + 1] = j->template_dirs[i];
    for (int i = 0; i <= j->ntemplate_dirs; ++i) {
        argv[n++] = incs + off;
        off += (size_t)sprintf(incs + off, "-I%s", dirs[i]) + 1;
    }
    argv[n++] = "-o";
    argv[n++] = store[2];
    argv[n++] = store[0];
    n = split_words(ldflags, argv, n);
    argv[n++] = "-lm";
    argv[n] = NULL;
}

/* Every file after the first ':' of a make-style depfile, plus the generator itself. */
static int read_deps(const nd_jit *j, const char *depfile, jit_manifest *m)
{
    FILE *fp = fopen(depfile, "r");
    if (!fp)
        return -1;
    char word[4096];
    bool target = true;
    m->ndeps = 0;
    while (fscanf(fp, "%4095s", word) == 1) {
        if (target) {
            target = word[strlen(word) - 1] != ':';
            continue;
        }
        if (strcmp(word, "\\") == 0)
            continue;
        if (m->ndeps == JIT_MAX_DEPS - 1)
            break;
        snprintf(m->deps[m->ndeps++].path, sizeof m->deps[0].path, "%s", word);
    }
    fclose(fp);
    snprintf(m->deps[m->ndeps++].path, sizeof m->deps[0].path, "%s", j->ndgen);
    for (int i = 0; i < m->ndeps; ++i)
        if (hash_file(m->deps[i].path, &m->deps[i].hash, &m->deps[i].size))
            return -1;
    return 0;
}

static int write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, fp) != n;
    bad |= fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    return fclose(fp) != 0 || bad ? -1 : 0;
}

static void remove_build_dir(const char *dir, char *const *store)
{
    for (int i = 0; store[i]; ++i)
        unlink(store[i]);
    rmdir(dir);
}

/* Generates and compiles into dir, then moves the library and (last) the manifest into the cache.
 * Returns 1 when the compiler fails (or cannot be run), -1 on any other failure. */
static int build_in(const nd_jit *j, const jit_request *r, const char *dir, char *const *store, nd_error *err)
{
    char *argv[JIT_MAX_ARGS], flags[2048], ldflags[2048], incs[(ND_JIT_MAX_TEMPLATE_DIRS + 1) * 4100], head[512];
    jit_manifest m;
    ndgen_argv(j, r, store, argv);
    if (run_tool(argv, store[4])) {
        log_head(store[4], dir, head, sizeof head);
        return nd_fail(err, "jit: op '%s': %s generate failed: %s", r->generic->op, j->ndgen, head);
    }
    snprintf(flags, sizeof flags, "%s", j->cflags);
    snprintf(ldflags, sizeof ldflags, "%s", j->ldflags);
    cc_argv(j, flags, ldflags, store, argv, incs);
    unlink(store[4]); /* the log holds the compiler's output alone */
    if (run_tool(argv, store[4])) {
        log_head(store[4], dir, head, sizeof head);
        nd_fail(err, "jit: op '%s': compiling with %s failed: %s", r->generic->op, j->cc, head);
        return 1;
    }
    memset(&m, 0, sizeof m);
    snprintf(m.key, sizeof m.key, "%s", r->key);
    if (read_deps(j, store[1], &m) || hash_file(store[2], &m.lib_hash, &m.lib_size))
        return nd_fail(err, "jit: op '%s': cannot read back what was built in %s", r->generic->op, dir);
    char lib[4096], manifest[4096], *text = malloc(JIT_MANIFEST_BYTES);
    if (!text)
        return nd_fail(err, "jit: out of memory");
    manifest_text(&m, text, JIT_MANIFEST_BYTES);
    lib_path(j, r->key, m.lib_hash, lib, sizeof lib);
    snprintf(manifest, sizeof manifest, "%s/%s.manifest", j->cache_dir, r->key);
    int bad = write_file(store[3], text) || rename(store[2], lib) || rename(store[3], manifest);
    free(text);
    if (bad)
        return nd_fail(err, "jit: cannot write the cache entry %s: %s", manifest, strerror(errno));
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; ++p)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int build(const nd_jit *j, const jit_request *r, nd_error *err)
{
    char dir[4096], files[5][4200];
    char *store[6];
    if (make_dirs(j->cache_dir))
        return nd_fail(err, "jit: cannot create the cache folder %s: %s", j->cache_dir, strerror(errno));
    snprintf(dir, sizeof dir, "%s/.build-%s-XXXXXX", j->cache_dir, r->key);
    if (!mkdtemp(dir))
        return nd_fail(err, "jit: cannot create a build folder in %s: %s", j->cache_dir, strerror(errno));
    const char *names[] = {"kernel.c", "kernel.d", "kernel.so", "manifest", "log"};
    for (int i = 0; i < 5; ++i) {
        snprintf(files[i], sizeof files[i], "%s/%s", dir, names[i]);
        store[i] = files[i];
    }
    store[5] = NULL;
    int rc = build_in(j, r, dir, store, err);
    remove_build_dir(dir, store);
    return rc;
}

/* ---------------------------------------------------------------- entry point */

int nd_jit_library(const nd_jit *j, const nda_kernel_entry *generic, const char *spec, char (*sigs)[2048],
                   char *path, size_t len, nd_jit_outcome *outcome, char *why_buf, size_t why_len, nd_error *err)
{
    jit_request r = {.generic = generic, .spec = spec, .sigs = sigs};
    jit_manifest m;
    const char *why;
    for (int i = 0; i < generic->noperands; ++i)
        snprintf(r.dtypes + strlen(r.dtypes), sizeof r.dtypes - strlen(r.dtypes), "%s%s", i ? "," : "",
                 generic->dtypes[i]);
    snprintf(r.spec_path, sizeof r.spec_path, "%s/%s.lua", j->spec_dir, spec);
    make_key(j, &r);
    if (entry_valid(j, &r, &m, &why)) {
        lib_path(j, r.key, m.lib_hash, path, len);
        *outcome = ND_JIT_HIT;
        snprintf(why_buf, why_len, "cache hit %s", r.key);
        return 0;
    }
    bool had_entry = strcmp(why, "no entry") != 0;
    char old[4096] = "";
    if (had_entry && m.lib_hash) /* the library a damaged or stale entry named, removed once replaced */
        lib_path(j, r.key, m.lib_hash, old, sizeof old);
    int rc = build(j, &r, err);
    if (rc)
        return rc; /* 1: the compiler failed; nothing was cached, so a later call tries again */
    const char *why_built;
    if (!entry_valid(j, &r, &m, &why_built))
        return nd_fail(err, "jit: entry %s in %s is not valid right after building it: %s", r.key, j->cache_dir,
                       why_built);
    lib_path(j, r.key, m.lib_hash, path, len);
    if (old[0] && strcmp(old, path) != 0)
        unlink(old);
    *outcome = had_entry ? ND_JIT_REBUILT : ND_JIT_BUILT;
    snprintf(why_buf, why_len, "%s %s%s%s", had_entry ? "rebuilt" : "built", r.key, had_entry ? ": " : "",
             had_entry ? why : "");
    return 0;
}
