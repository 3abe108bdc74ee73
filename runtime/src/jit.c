/*
 * jit.c - on-demand specialization: when no loaded kernel is specialized for a launch's distributions,
 * run ndgen for that one target, compile the result with the system C compiler, and cache the library.
 *
 * Cache layout, in the cache folder:
 *   <key>.manifest        what the entry was built from, and the library's own hash; written last
 *   <key>-<lib>.so        the library, named by its content hash so a name never changes meaning
 *   .lock-<key>           held (flock) by the one process building the entry; removed after
 *   .build-<key>-XXXXXX   that process's private build folder; removed after, or by a later build
 * key hashes the format version, the generator version, spec name and path, op, dtypes, every
 * operand's signature, the generator, template and include folders, the compiler (its words, resolved
 * path and --version output) and its flags, and with flags naming "native" the CPU's model and features
 * (hash_cpu). A partial kernel (a set of NDA_FIXED_SETS past "all")
 * hashes, instead of the signatures, the set's name, each signature with the set's free parameters
 * starred, and which operands share their free parameters: so it is found again for every launch it
 * serves (a new size of a known pattern is a hit), and never for one it does not. The manifest lists every input file (spec, included specs,
 * template, its headers, the ndgen executable, the compiler executable, every file the flags name such
 * as libnd_dist.a) with its hash and size, and ends with a checksum of itself. An entry is loaded only
 * when its manifest is whole, every input is unchanged, and the library's bytes hash to the recorded
 * value; otherwise it is rebuilt, under the entry's lock, so concurrent processes build it once.
 *
 * The cache holds code this process loads, so it must be the user's own: the cache folder must belong
 * to this user and be writable by nobody else, and every folder above it must belong to this user or
 * root and be writable by others only with the sticky bit. Otherwise the JIT refuses it and the caller
 * runs the generic kernel. Without a cache folder, entries go to a private temporary folder (mkdtemp)
 * removed when the JIT is freed.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <grp.h>
#include <pwd.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit_where.h"
#include "nd_files.h"
#include "runtime_internal.h"

extern char **environ;

enum {
    JIT_FORMAT = 2,
    JIT_MAX_ARGS = 256,
    JIT_MAX_CC_WORDS = 32,
    JIT_MAX_DEPS = 128,
    JIT_MANIFEST_BYTES = JIT_MAX_DEPS * 4200,
    JIT_FALLBACK = 1, /* nd_jit_library: no kernel from the JIT; the caller runs the generic one */
    JIT_LOCK_WAIT = 300, /* seconds a process waits for another building the same entry: many builds' time */
};

static double nd_jit_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Writes code and the message into err and returns JIT_FALLBACK. */
__attribute__((format(printf, 3, 4))) static int fallback(nd_error *err, nd_errcode code, const char *fmt, ...)
{
    char msg[ND_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nd_failc(err, code, "%s", msg);
    return JIT_FALLBACK;
}

/* ---------------------------------------------------------------- hashing */

/* nd_hash_bytes (runtime_internal.h) detects corruption and change, and names entries; not a defence
 * against a hostile cache (the folder checks are). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) { return nd_hash_bytes(h, p, n); }

static const uint64_t HASH_SEED = ND_HASH_SEED;

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

/* ---------------------------------------------------------------- running tools */

/* Runs file with argv, input from /dev/null, and fa's other actions; its exit status (128 + signal when
 * killed), or -1 when it cannot be started. */
static int spawn_wait(const char *file, char *const *argv, posix_spawn_file_actions_t *fa)
{
    posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    if (posix_spawnp(&pid, file, fa, NULL, argv, environ) != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs argv with standard output and error appended to log; 0 when it exits with status 0. */
static int run_tool(const char *file, char *const *argv, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = spawn_wait(file, argv, &fa);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? 0 : -1;
}

/* Runs argv and hashes its standard output and error and its exit status into *h; -1 when it cannot be
 * started. */
static int run_hash(const char *file, char *const *argv, uint64_t *h)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, file, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    errno = rc ? rc : errno;
    char buf[4096];
    ssize_t n;
    *h = HASH_SEED;
    while (rc == 0 && ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        *h = hash_bytes(*h, buf, n > 0 ? (size_t)n : 0);
    close(fds[0]);
    int status = 0;
    while (rc == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    *h = hash_bytes(*h, &status, sizeof status);
    errno = rc ? rc : errno;
    return rc == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- the compiler's identity */

struct nd_jit_cc {
    char text[4096];                         /* CC, its words NUL-separated */
    char *argv[JIT_MAX_CC_WORDS + 2];        /* its words; room for --version */
    int nwords;
    char exe[PATH_MAX];                      /* the first word as found through PATH: what runs */
    char real[PATH_MAX];                     /* that, symbolic links resolved: what it is */
    uint64_t version;                        /* hash of `CC --version`'s output and status */
};

/* CC's words: CC itself when it names an executable file (a path may hold blanks), else its
 * blank-separated words ("cc -m64"), no quoting and no shell. */
static int cc_split(const char *cc, nd_jit_cc *c)
{
    snprintf(c->text, sizeof c->text, "%s", cc);
    c->nwords = 0;
    char *save = NULL;
    if (strchr(cc, '/') && access(cc, X_OK) == 0)
        c->argv[c->nwords++] = c->text;
    else
        for (char *t = strtok_r(c->text, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
            if (c->nwords == JIT_MAX_CC_WORDS)
                return -1;
            c->argv[c->nwords++] = t;
        }
    c->argv[c->nwords] = NULL;
    return c->nwords ? 0 : -1;
}

/* word as execvp would find it, into exe, and resolved into real; -1 when no executable file is found. */
static int cc_find(const char *word, char *exe, char *real)
{
    struct stat st;
    if (strchr(word, '/')) {
        snprintf(exe, PATH_MAX, "%s", word);
        return stat(exe, &st) == 0 && S_ISREG(st.st_mode) && access(exe, X_OK) == 0 && realpath(exe, real) ? 0 : -1;
    }
    const char *env = getenv("PATH");
    for (const char *p = env && env[0] ? env : "/usr/local/bin:/usr/bin:/bin";; ++p) {
        size_t n = strcspn(p, ":");
        snprintf(exe, PATH_MAX, "%.*s%s%s", (int)n, p, n ? "/" : "", word);
        if (stat(exe, &st) == 0 && S_ISREG(st.st_mode) && access(exe, X_OK) == 0 && realpath(exe, real))
            return 0;
        p += n;
        if (!*p)
            return -1;
    }
}

/* The compiler's words, path and version, found once. Failing to find or run it is a fallback. */
static int cc_identify(nd_jit *j, const char *op, nd_error *err)
{
    if (j->cc_id)
        return 0;
    nd_jit_cc *c = calloc(1, sizeof *c);
    if (!c)
        return nd_failc(err, ND_ENOMEM, "jit: out of memory");
    const char *why = "no command in it";
    int bad = cc_split(j->cc, c);
    if (!bad && (bad = cc_find(c->argv[0], c->exe, c->real)))
        why = "no such executable file (looked up through PATH)";
    c->argv[c->nwords] = "--version";
    c->argv[c->nwords + 1] = NULL;
    if (!bad && (bad = run_hash(c->exe, c->argv, &c->version)))
        why = strerror(errno);
    c->argv[c->nwords] = NULL;
    if (bad) {
        free(c);
        return fallback(err, ND_ESYS, "jit: op '%s': compiling with %s failed: it could not be started: %s", op, j->cc,
                        why);
    }
    j->cc_id = c;
    return 0;
}

/* ---------------------------------------------------------------- configuration */

void nd_jit_config_init(nd_jit_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const char *cc = getenv("CC");
    cfg->cc = cc && cc[0] ? cc : "cc";
    cfg->cflags = NULL; /* the library's own (nda_kernel_library.cflags), else JIT_DEFAULT_CFLAGS */
    cfg->lock_wait = JIT_LOCK_WAIT;
    const char *w = getenv("NDGEN_JIT_LOCK_WAIT");
    if (w && w[0]) {
        char *end;
        double v = strtod(w, &end);
        cfg->lock_wait = *end || !(v > 0 && v <= 86400) ? NAN : v;
    }
}

/* $NDGEN_CACHE_DIR, $XDG_CACHE_HOME/ndgen or ~/.cache/ndgen; 1 and "" when none is set. */
int nd_jit_default_cache_dir(char *buf, size_t len)
{
    const char *dir = getenv("NDGEN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = dir && dir[0]   ? snprintf(buf, len, "%s", dir)
            : xdg && xdg[0] ? snprintf(buf, len, "%s/ndgen", xdg)
            : home && home[0] ? snprintf(buf, len, "%s/.cache/ndgen", home)
                              : 0;
    if (n == 0 && len)
        buf[0] = '\0';
    return n == 0 ? 1 : n > 0 && (size_t)n < len ? 0 : -1;
}

static int copy_str(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

/* Removes folder dir and what it holds, and folders in it depth levels down. */
static void remove_folder(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) && (errno == EISDIR || errno == EPERM) && depth > 0)
            remove_folder(path, depth - 1);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

void nd_jit_free(nd_jit *j)
{
    if (!j)
        return;
    if (j->private_dir)
        remove_folder(j->private_dir, 1);
    free(j->private_dir);
    free(j->notice);
    free(j->cc_id);
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
    const char *need[] = {cfg->ndgen, cfg->include_dir, cfg->cc};
    const char *names[] = {"ndgen", "include_dir", "cc"};
    for (int i = 0; i < 3; ++i)
        if (!need[i] || !need[i][0])
            return nd_fail(err, "jit: %s is not set", names[i]);
    if (cfg->ntemplate_dirs < 0 || cfg->ntemplate_dirs > ND_JIT_MAX_TEMPLATE_DIRS)
        return nd_fail(err, "jit: %d template folders; give 0 to %d", cfg->ntemplate_dirs, ND_JIT_MAX_TEMPLATE_DIRS);
    if (!(cfg->lock_wait > 0 && cfg->lock_wait <= 86400))
        return nd_fail(err, "jit: lock_wait %g: expected seconds in (0, 86400]%s%s%s", cfg->lock_wait,
                       getenv("NDGEN_JIT_LOCK_WAIT") ? " (NDGEN_JIT_LOCK_WAIT '" : "",
                       getenv("NDGEN_JIT_LOCK_WAIT") ? getenv("NDGEN_JIT_LOCK_WAIT") : "",
                       getenv("NDGEN_JIT_LOCK_WAIT") ? "')" : "");
    nd_jit *j = calloc(1, sizeof *j);
    int bad = !j;
    if (j) {
        bad = copy_str(&j->cache_dir, cfg->cache_dir && cfg->cache_dir[0] ? cfg->cache_dir : NULL) ||
              copy_str(&j->ndgen, cfg->ndgen) || copy_str(&j->spec_dir, cfg->spec_dir) ||
              copy_str(&j->include_dir, cfg->include_dir) || copy_str(&j->cc, cfg->cc) ||
              copy_str(&j->cflags, cfg->cflags) ||
              copy_str(&j->ldflags, cfg->ldflags ? cfg->ldflags : "");
        j->lock_wait = cfg->lock_wait;
        for (int i = 0; i < cfg->ntemplate_dirs && !bad; ++i, ++j->ntemplate_dirs)
            bad = copy_str(&j->template_dirs[i], cfg->template_dirs[i]);
    }
    if (bad) {
        nd_jit_free(j);
        return nd_failc(err, ND_ENOMEM, "jit: out of memory");
    }
    *out = j;
    return 0;
}

const char *nd_jit_notice(const nd_jit *j) { return j ? j->notice : NULL; }

/* ---------------------------------------------------------------- the cache folder */

/* "uid 65534 (nobody)" */
static void user_text(uid_t uid, char *buf, size_t len)
{
    const struct passwd *pw = getpwuid(uid);
    snprintf(buf, len, "uid %u%s%s%s", (unsigned)uid, pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "");
}

/* ND_OK when path is a folder of this user's that nobody else can write; else ND_EIO (it cannot be
 * read, or is no folder) or ND_EREFUSED (another's, or writable by others), and why. above: a folder
 * on the way to the cache, which may also be root's, and writable by others when sticky. */
static nd_errcode folder_unfit(const char *path, bool above, char *why, size_t len)
{
    struct stat st;
    char owner[128], me[128];
    const char *lead = above ? "the folder above it, " : "", *comma = above ? "," : "";
    if (stat(path, &st))
        return snprintf(why, len, "%s: %s", path, strerror(errno)), ND_EIO;
    if (!S_ISDIR(st.st_mode))
        return snprintf(why, len, "%s is not a folder", path), ND_EIO;
    if (st.st_uid != geteuid() && !(above && st.st_uid == 0)) {
        user_text(st.st_uid, owner, sizeof owner);
        user_text(geteuid(), me, sizeof me);
        return snprintf(why, len, "%s%s%s belongs to %s, not to you, %s", lead, path, comma, owner, me), ND_EREFUSED;
    }
    if (!(st.st_mode & 022) || (above && (st.st_mode & S_ISVTX)))
        return ND_OK;
    const char *who = (st.st_mode & 022) == 022 ? "group and others" : st.st_mode & 020 ? "its group" : "others";
    return snprintf(why, len, "%s%s%s is writable by %s (mode %04o)%s", lead, path, comma, who,
                    (unsigned)(st.st_mode & 07777), above ? " without the sticky bit" : ""), ND_EREFUSED;
}

/* Whether gid is this user's private group: the user's own, with nobody else in it (a umask of 002
 * makes files group-writable under that scheme, which lets no other user write them). */
static bool private_group(gid_t gid)
{
    const struct group *g = gid == getegid() ? getgrgid(gid) : NULL;
    const struct passwd *pw = getpwuid(geteuid());
    if (!g || !pw)
        return false;
    for (char *const *m = g->gr_mem; *m; ++m)
        if (strcmp(*m, pw->pw_name) != 0)
            return false;
    return true;
}

/* ND_OK when the input file path (resolved) is root's or this user's, nobody else can write it (its
 * group may, when that is the user's private group), and
 * every folder above it is fit as a folder above the cache is (folder_unfit); else ND_EREFUSED or
 * ND_EIO and why. The JIT compiles what its inputs say and loads it into this process: a spec or
 * template another user can change would run that user's code as this one (ssh's rule for keys). */
static nd_errcode input_unfit(const char *path, char *why, size_t len)
{
    struct stat st;
    char real[PATH_MAX], owner[128], me[128];
    if (!realpath(path, real) || stat(real, &st))
        return snprintf(why, len, "%s: %s", path, strerror(errno)), ND_EIO;
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        user_text(st.st_uid, owner, sizeof owner);
        user_text(geteuid(), me, sizeof me);
        return snprintf(why, len, "%s belongs to %s, not to you, %s, nor to root", real, owner, me), ND_EREFUSED;
    }
    if ((st.st_mode & 002) || ((st.st_mode & 020) && !private_group(st.st_gid)))
        return snprintf(why, len, "%s is writable by %s (mode %04o)", real, st.st_mode & 002 ? "others" : "its group",
                        (unsigned)(st.st_mode & 07777)), ND_EREFUSED;
    for (char *s = strrchr(real, '/'); s; s = strrchr(real, '/')) {
        s[s == real] = '\0'; /* "/a/b" -> "/a" -> "/" */
        nd_errcode code = folder_unfit(real, true, why, len);
        if (code)
            return code;
        if (s == real)
            break;
    }
    return ND_OK;
}

/* dir, resolved into real (PATH_MAX bytes), checked with every folder above it; ND_OK, or folder_unfit's
 * code and why. */
static nd_errcode cache_fit(const char *dir, char *real, char *why, size_t len)
{
    nd_errcode code;
    if (!realpath(dir, real))
        return snprintf(why, len, "%s", strerror(errno)), ND_EIO;
    if ((code = folder_unfit(real, false, why, len)))
        return code;
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", real);
    for (char *s = strrchr(up, '/'); s; s = strrchr(up, '/')) {
        s[s == up] = '\0'; /* "/a/b" -> "/a" -> "/" */
        if ((code = folder_unfit(up, true, why, len)))
            return code;
        if (s == up)
            break;
    }
    return ND_OK;
}

/* mkdir -p, private to this user */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; ++p)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0700) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0700) && errno != EEXIST ? -1 : 0;
}

/* This process's private cache, made once: a new folder in $TMPDIR (else /tmp). */
static int private_folder(nd_jit *j, nd_error *err)
{
    if (j->private_dir)
        return 0;
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], notice[PATH_MAX + 256];
    tmp = tmp && tmp[0] == '/' ? tmp : "/tmp";
    snprintf(dir, sizeof dir, "%s/ndgen-jit-XXXXXX", tmp);
    if (!mkdtemp(dir))
        return fallback(err, ND_EIO, "jit: no cache folder is set, and a private one cannot be made in %s: %s", tmp,
                        strerror(errno));
    snprintf(notice, sizeof notice, "jit: no cache folder ($NDGEN_CACHE_DIR, $XDG_CACHE_HOME and $HOME unset): "
                                    "kernels specialized on demand go to %s, removed at exit", dir);
    if (copy_str(&j->private_dir, dir) || copy_str(&j->notice, notice)) {
        rmdir(dir);
        free(j->private_dir);
        j->private_dir = NULL;
        return nd_failc(err, ND_ENOMEM, "jit: out of memory");
    }
    return 0;
}

/* The cache folder, made when missing, checked and resolved into real (PATH_MAX bytes); 0, or
 * JIT_FALLBACK and err saying why it cannot be used. */
static int cache_ready(nd_jit *j, char *real, nd_error *err)
{
    const char *dir = j->cache_dir;
    char why[PATH_MAX + 256];
    nd_errcode code;
    if (!dir) {
        int rc = private_folder(j, err);
        if (rc)
            return rc;
        dir = j->private_dir;
    } else if (make_dirs(dir)) {
        return fallback(err, ND_EIO, "jit: cannot create the cache folder %s: %s", dir, strerror(errno));
    }
    if ((code = cache_fit(dir, real, why, sizeof why)))
        return fallback(err, code, "jit: cache folder %s refused: %s", dir, why);
    return 0;
}

/* ---------------------------------------------------------------- locks and leftovers */

/* Takes <dir>/.lock-<key> (made when missing) with flock, waiting up to wait seconds; its descriptor, or -1 with errno (EWOULDBLOCK when another process held it all that time, its
 * pid in *holder when it wrote one). The holder writes its pid into the file, and removes the file
 * before unlocking, so a lock taken on a removed file is retried. */
static int lock_take(const char *dir, const char *key, double wait, long *holder)
{
    char path[PATH_MAX + 64];
    struct stat a, b;
    const double until = nd_jit_now() + wait;
    const struct timespec pause = {0, 50 * 1000 * 1000};
    snprintf(path, sizeof path, "%s/.lock-%s", dir, key);
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600), rc = fd < 0 ? -1 : 0;
        while (!rc && (rc = flock(fd, LOCK_EX | LOCK_NB)) && (errno == EINTR || errno == EWOULDBLOCK) &&
               nd_jit_now() < until)
            rc = 0, nanosleep(&pause, NULL);
        if (rc) {
            int e = errno;
            char text[32] = "";
            if (holder && fd >= 0 && pread(fd, text, sizeof text - 1, 0) > 0)
                *holder = strtol(text, NULL, 10);
            if (fd >= 0)
                close(fd);
            errno = e;
            return -1;
        }
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            char text[32];
            int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
            /* the holder's pid, a hint for a waiter's message only: a failed write changes nothing else */
            if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) < 0)
                errno = 0;
            return fd;
        }
        close(fd);
    }
}

static void lock_drop(const char *dir, const char *key, int fd)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.lock-%s", dir, key);
    unlink(path);
    close(fd);
}

/* Removes what killed builds left in dir: build folders and locks of keys nobody is building now (key
 * is this process's, locked already). */
static void sweep(const char *dir, const char *key)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char k[17], path[PATH_MAX + 256];
    while (d && (e = readdir(d))) {
        bool build = sscanf(e->d_name, ".build-%16[0-9a-f]-", k) == 1;
        if (!build && sscanf(e->d_name, ".lock-%16[0-9a-f]", k) != 1)
            continue;
        bool mine = strcmp(k, key) == 0;
        int fd = mine ? -1 : lock_take(dir, k, 0, NULL);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (build && (mine || fd >= 0))
            remove_folder(path, 0);
        if (fd >= 0)
            lock_drop(dir, k, fd);
    }
    if (d)
        closedir(d);
}

/* Removes key's libraries other than keep: ones replaced, or left by a build killed before its
 * manifest was written. */
static void remove_orphans(const char *dir, const char *key, const char *keep)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    size_t n = strlen(key);
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, key, n) != 0 || e->d_name[n] != '-' || len < 4 || strcmp(e->d_name + len - 3, ".so"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (strcmp(path, keep) != 0)
            unlink(path);
    }
    if (d)
        closedir(d);
}

/* ---------------------------------------------------------------- one request */

/* The compile flags of a library that records none, when the caller gives none either: GCC 12 at -O2
 * leaves most of the templates' loops scalar. */
#define JIT_DEFAULT_CFLAGS "-O3"

enum { JIT_MAX_DIRS = 2 * ND_JIT_MAX_TEMPLATE_DIRS };

typedef struct jit_request {
    int ntdirs;                      /* template folders: the library's, then the configuration's */
    const char *tdirs[JIT_MAX_DIRS];
    const nda_kernel_entry *generic; /* the op's generic entry: name, dtypes, operands */
    const char *spec;                /* the spec file's name, from the entry's registry group */
    char (*sigs)[ND_SIGNATURE_LEN];              /* one per operand */
    int fixed;                       /* the set the kernel fixes: NDA_FIXED_ALL, or a partial set */
    char spec_path[PATH_MAX];
    char dir[PATH_MAX];              /* the cache folder, resolved and checked */
    char dtypes[256];
    const char *cflags;              /* the compile flags: the caller's, else the library's, else the default */
    char key[17];
    struct timespec started;         /* of the build: an input changed since is not cached */
} jit_request;

/* A partial kernel's part of the key: its set, each operand's fixed parameters, and for each operand
 * the first operand sharing its free ones (the classes ndgen records for the kernel). */
static uint64_t hash_pattern(uint64_t h, const jit_request *r)
{
    unsigned free = ndreg_fixed_free(r->fixed);
    char fixed[ND_SIGNATURE_LEN], var[ND_SIGNATURE_LEN], other[ND_SIGNATURE_LEN];
    h = hash_str(h, ndreg_fixed_name(r->fixed));
    for (int i = 0; i < r->generic->noperands; ++i) {
        ndreg_split_signature(r->sigs[i], free, fixed, sizeof fixed, var, sizeof var);
        int cls = i;
        for (int k = 0; k < i && cls == i; ++k) {
            ndreg_split_signature(r->sigs[k], free, NULL, 0, other, sizeof other);
            cls = strcmp(var, other) == 0 ? k : i;
        }
        h = hash_bytes(hash_str(h, fixed), &cls, sizeof cls);
    }
    return h;
}

/* What -march=native and the like mean on this machine: the first processor's model and feature
 * lines of /proc/cpuinfo (x86's "model name" and "flags", Arm's "CPU implementer", "CPU part" and
 * "Features"). Hashed into the key when the flags name "native", so a cache folder shared by machines
 * of other CPUs (a home directory over NFS) never serves one a kernel built for another's instructions. */
static uint64_t hash_cpu(uint64_t h)
{
    static const char *const keys[] = {"model name", "flags", "CPU implementer", "CPU part", "Features"};
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[8192];
    bool seen[5] = {false};
    while (fp && fgets(line, sizeof line, fp) && line[0] != '\n') /* the first processor's block */
        for (int k = 0; k < 5; ++k)
            if (!seen[k] && strncmp(line, keys[k], strlen(keys[k])) == 0) {
                seen[k] = true;
                h = hash_str(h, line);
            }
    if (fp)
        fclose(fp);
    return hash_str(h, fp ? "cpuinfo" : "\x01no cpuinfo");
}

static void make_key(const nd_jit *j, jit_request *r)
{
    const nd_jit_cc *c = j->cc_id;
    uint64_t h = hash_bytes(HASH_SEED, &(int){JIT_FORMAT}, sizeof(int));
    h = hash_str(hash_str(hash_str(h, NDGEN_VERSION), r->spec), r->generic->op);
    h = hash_str(hash_str(h, r->dtypes), r->spec_path);
    if (r->fixed == NDA_FIXED_ALL)
        for (int i = 0; i < r->generic->noperands; ++i)
            h = hash_str(h, r->sigs[i]);
    else
        h = hash_pattern(h, r);
    h = hash_str(hash_str(h, j->ndgen), j->include_dir);
    for (int i = 0; i < r->ntdirs; ++i)
        h = hash_str(h, r->tdirs[i]);
    for (int i = 0; i < c->nwords; ++i)
        h = hash_str(h, c->argv[i]);
    h = hash_bytes(hash_str(h, c->real), &c->version, sizeof c->version);
    h = hash_str(hash_str(h, r->cflags), j->ldflags);
    if (strstr(r->cflags, "native"))
        h = hash_cpu(h);
    /* what the environment changes in the compiler's or the generator's output */
    static const char *const env[] = {"CPATH", "C_INCLUDE_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH",
                                      "CCC_OVERRIDE_OPTIONS", "NDGEN_FAULT_SKIP_CALL"};
    for (size_t i = 0; i < sizeof env / sizeof *env; ++i) {
        const char *v = getenv(env[i]);
        h = hash_str(hash_str(h, env[i]), v ? v : "\x01unset");
    }
    snprintf(r->key, sizeof r->key, "%016" PRIx64, h);
}

/* ---------------------------------------------------------------- manifests */

typedef struct jit_dep {
    char path[PATH_MAX];
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

/* Why a cache entry cannot be loaded: code ND_OK when it can; ND_ENOENT no entry; ND_ESTALE an entry
 * that no longer matches (inputs changed, damaged, half-written, another key's); ND_EREFUSED a file not
 * the user's own; ND_ENOMEM. why words it for the JIT's note. */
typedef struct jit_check {
    nd_errcode code;
    const char *why;
} jit_check;

static int check_fails(jit_check *c, nd_errcode code, const char *why)
{
    *c = (jit_check){code, why};
    return -1;
}

/* Parses and checks a manifest's own integrity; c says what is wrong. */
static int manifest_parse(char *text, jit_manifest *m, jit_check *c);

/* 0 when path is a regular file of this user's that nobody else can write. */
static int file_fit(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) ? 0 : -1;
}

static int manifest_read(const char *path, jit_manifest *m, jit_check *c)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return check_fails(c, ND_ENOENT, "no entry");
    char *text = NULL;
    int rc = file_fit(path) ? check_fails(c, ND_EREFUSED, "manifest not a file of yours that only you can write")
             : !(text = malloc(JIT_MANIFEST_BYTES)) ? check_fails(c, ND_ENOMEM, "out of memory")
                                                    : 0;
    if (!rc) {
        size_t n = fread(text, 1, JIT_MANIFEST_BYTES - 1, fp);
        text[n] = '\0';
        rc = manifest_parse(text, m, c);
    }
    fclose(fp);
    free(text);
    return rc;
}

/* text: a whole manifest, NUL-terminated; modified. */
static int manifest_parse(char *text, jit_manifest *m, jit_check *c)
{
    char *end = strstr(text, "\nend ");
    uint64_t sum;
    check_fails(c, ND_ESTALE, "manifest damaged or incomplete");
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

static void lib_path(const jit_request *r, uint64_t lib_hash, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s-%016" PRIx64 ".so", r->dir, r->key, lib_hash);
}

/* Whether the cached entry may be loaded: whole, for this key, inputs unchanged, library intact and
 * only the user's to write. c says why not. */
static bool entry_valid(const jit_request *r, jit_manifest *m, jit_check *c)
{
    char path[PATH_MAX + 64];
    uint64_t h;
    int64_t size;
    snprintf(path, sizeof path, "%s/%s.manifest", r->dir, r->key);
    if (manifest_read(path, m, c))
        return false;
    if (strcmp(m->key, r->key) != 0)
        return check_fails(c, ND_ESTALE, "manifest of another key"), false;
    for (int i = 0; i < m->ndeps; ++i)
        if (hash_file(m->deps[i].path, &h, &size) || h != m->deps[i].hash || size != m->deps[i].size)
            return check_fails(c, ND_ESTALE, "stale: an input file changed"), false;
    lib_path(r, m->lib_hash, path, sizeof path);
    if (file_fit(path))
        return check_fails(c, ND_EREFUSED, "library not a file of yours that only you can write"), false;
    if (hash_file(path, &h, &size) || h != m->lib_hash || size != m->lib_size)
        return check_fails(c, ND_ESTALE, "library damaged or missing"), false;
    *c = (jit_check){ND_OK, NULL};
    return true;
}

/* ---------------------------------------------------------------- building */

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
    struct statvfs fs;
    if (!buf[0] && statvfs(dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < ((uint64_t)1 << 20))
        snprintf(buf, len, "the disk of the cache folder is full (%" PRIu64 " KiB free) and it wrote no message",
                 (uint64_t)fs.f_bavail * fs.f_frsize >> 10);
    else if (!buf[0])
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
    for (int i = 0; i < r->ntdirs; ++i) {
        argv[n++] = "--templates";
        argv[n++] = (char *)r->tdirs[i];
    }
    if (r->fixed != NDA_FIXED_ALL) {
        argv[n++] = "--fixed";
        argv[n++] = (char *)ndreg_fixed_name(r->fixed);
    }
    argv[n++] = "--include";
    argv[n++] = j->include_dir;
    argv[n++] = "--library";
    argv[n++] = "--specialized-only"; /* the generic kernel is the loaded library's */
    argv[n++] = "--output";
    argv[n++] = store[0];
    argv[n++] = "--depfile";
    argv[n++] = store[1];
    argv[n++] = (char *)r->spec_path;
    argv[n] = NULL;
}

#ifndef NDGEN_KERNEL_ERRORS
#define NDGEN_KERNEL_ERRORS "" /* set by the build: cmake/NdgenKernels.cmake */
#endif

/* Whether flag is one of NDGEN_KERNEL_ERRORS, the warnings that are always bugs. */
static bool always_error(const char *flag)
{
    static const char list[] = NDGEN_KERNEL_ERRORS;
    const size_t n = strlen(flag);
    for (const char *p = list; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* Appends the blank-separated words of text (modified in place) to argv, leaving room for more; -1
 * when they do not fit. Drops -Werror and -Werror=..., but for the warnings that are always bugs
 * (NDGEN_KERNEL_ERRORS, such as a call to an undeclared function): a style warning never stops a
 * specialization (its code is the generic kernel's, with the sizes made constants, which a compiler may
 * warn about in ways the generic code never shows), and one of those does, so the generic kernel runs. */
static int split_words(char *text, char **argv, int *n)
{
    char *save = NULL;
    for (char *t = strtok_r(text, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (*n >= JIT_MAX_ARGS - 24)
            return -1;
        if (strcmp(t, "-Werror") != 0 && (strncmp(t, "-Werror=", 8) != 0 || always_error(t)))
            argv[(*n)++] = t;
    }
    return 0;
}

/* CC CFLAGS -shared -fPIC -std=c17 -I.. -o lib src LDFLAGS -lm; flags split at blanks (no quoting). */
static int cc_argv(const nd_jit *j, const jit_request *r, char *flags, char *ldflags, char *const *store, char **argv,
                   char *incs)
{
    int n = 0;
    for (int i = 0; i < j->cc_id->nwords; ++i)
        argv[n++] = j->cc_id->argv[i];
    if (split_words(flags, argv, &n))
        return -1;
    argv[n++] = "-shared";
    argv[n++] = "-fPIC";
    argv[n++] = "-std=c17";
    size_t off = 0;
    const char *dirs[JIT_MAX_DIRS + 1] = {j->include_dir};
    for (int i = 0; i < r->ntdirs; ++i) /* every template folder: a template may include another's header */
        dirs[i + 1] = r->tdirs[i];
    for (int i = 0; i <= r->ntdirs; ++i) {
        argv[n++] = incs + off;
        off += (size_t)sprintf(incs + off, "-I%s", dirs[i]) + 1;
    }
    argv[n++] = "-o";
    argv[n++] = store[2];
    argv[n++] = store[0];
    if (split_words(ldflags, argv, &n))
        return -1;
    argv[n++] = "-lm";
    argv[n] = NULL;
    return 0;
}

static int add_dep(jit_manifest *m, const char *path)
{
    if (m->ndeps == JIT_MAX_DEPS || strlen(path) >= sizeof m->deps[0].path)
        return -1;
    snprintf(m->deps[m->ndeps++].path, sizeof m->deps[0].path, "%s", path);
    return 0;
}

/* s without make's escapes ("\ " and "$$"), into out (PATH_MAX bytes). */
static void unescape(const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k < PATH_MAX - 1; ++i) {
        i += (s[i] == '\\' && (s[i + 1] == ' ' || s[i + 1] == '\t')) || (s[i] == '$' && s[i + 1] == '$');
        out[k++] = s[i];
    }
    out[k] = '\0';
}

/* The files of one depfile line, continuation cut: the whole line when it names a file (ndgen writes
 * one path a line, blanks and all), else its words separated by unescaped blanks. */
static int line_deps(const char *s, jit_manifest *m)
{
    char name[PATH_MAX];
    struct stat st;
    unescape(s, strlen(s), name);
    if (stat(name, &st) == 0)
        return add_dep(m, name);
    while (*s) {
        size_t n = 0;
        while (s[n] && !((s[n] == ' ' || s[n] == '\t') && (n == 0 || s[n - 1] != '\\')))
            ++n;
        unescape(s, n, name);
        if (n && add_dep(m, name))
            return -1;
        s += n + (s[n] != '\0');
    }
    return 0;
}

/* Every file of a make-style depfile after its target (target: the path it starts with). */
static int depfile_deps(const char *depfile, const char *target, jit_manifest *m)
{
    FILE *fp = fopen(depfile, "r");
    char line[PATH_MAX + 64];
    size_t tn = strlen(target);
    bool bad = !fp, first = true;
    while (!bad && fgets(line, sizeof line, fp)) {
        char *s = line, *e;
        if (first) {
            first = false;
            s = strncmp(line, target, tn) == 0 && line[tn] == ':' ? line + tn : strchr(line, ':');
            if (!s)
                continue;
            ++s;
        }
        s += strspn(s, " \t");
        for (e = s + strlen(s); e > s && strchr(" \t\r\n\\", e[-1]); --e)
            continue;
        *e = '\0';
        bad = *s && line_deps(s, m);
    }
    if (fp)
        fclose(fp);
    return bad ? -1 : 0;
}

/* Every file the flags name: archives and objects linked in, -include files, ... Any word, or part of
 * a comma-separated -Wl, list, that names a regular file. */
static int flag_deps(const char *flags, jit_manifest *m)
{
    char buf[4096];
    struct stat st;
    snprintf(buf, sizeof buf, "%s", flags);
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        char *part = strncmp(t, "-Wl,", 4) == 0 ? t + 4 : t, *save2 = NULL;
        for (char *p = strtok_r(part, ",", &save2); p; p = strtok_r(NULL, ",", &save2))
            if (stat(p[0] == '@' ? p + 1 : p, &st) == 0 && S_ISREG(st.st_mode) && add_dep(m, p[0] == '@' ? p + 1 : p))
                return -1;
    }
    return 0;
}

/* The manifest's inputs: the depfile's files, the generator, the compiler, the files the flags name. */
static int read_deps(const nd_jit *j, const jit_request *r, char *const *store, jit_manifest *m)
{
    m->ndeps = 0;
    if (depfile_deps(store[1], store[0], m) || add_dep(m, j->ndgen) || add_dep(m, j->cc_id->real) ||
        flag_deps(r->cflags, m) || flag_deps(j->ldflags, m))
        return -1;
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

/* Every file the generator read (its depfile, store[1]: the spec, what it included, the templates and
 * their headers) passes input_unfit, before anything of it is compiled; else the fallback, with why. */
static int inputs_trusted(const jit_request *r, char *const *store, nd_error *err)
{
    jit_manifest *m = calloc(1, sizeof *m);
    char why[2 * PATH_MAX + 512];
    nd_errcode code = ND_OK;
    if (!m || depfile_deps(store[1], store[0], m))
        code = ND_EIO, snprintf(why, sizeof why, "cannot read the generator's list of inputs %s", store[1]);
    for (int i = 0; m && !code && i < m->ndeps; ++i)
        code = input_unfit(m->deps[i].path, why, sizeof why);
    free(m);
    return code ? fallback(err, code, "jit: op '%s': not compiling what the generator read: %s", r->generic->op, why)
                : 0;
}

/* Whether the file at path was modified (or its inode changed) at or after t, or cannot be read. */
static bool changed_since(const char *path, const struct timespec *t)
{
    struct stat st;
    if (stat(path, &st))
        return true;
    const struct timespec *m = &st.st_mtim, *c = &st.st_ctim;
    return m->tv_sec > t->tv_sec || (m->tv_sec == t->tv_sec && m->tv_nsec >= t->tv_nsec) || c->tv_sec > t->tv_sec ||
           (c->tv_sec == t->tv_sec && c->tv_nsec >= t->tv_nsec);
}

/* Moves the library built in store[2], and then its manifest, into the cache. An input that changed
 * during the build (its hash now is not what the build read) is not cached: the next run builds again. */
static int publish(const nd_jit *j, const jit_request *r, char *const *store, nd_error *err)
{
    jit_manifest *m = calloc(1, sizeof *m);
    char lib[PATH_MAX + 64], manifest[PATH_MAX + 64], *text = malloc(JIT_MANIFEST_BYTES);
    int rc = m && text ? 0 : nd_failc(err, ND_ENOMEM, "jit: out of memory");
    if (!rc) {
        snprintf(m->key, sizeof m->key, "%s", r->key);
        if (read_deps(j, r, store, m) || hash_file(store[2], &m->lib_hash, &m->lib_size))
            rc = fallback(err, ND_EIO, "jit: op '%s': cannot read back the inputs of what was built (more than %d, or "
                                       "one unreadable)", r->generic->op, JIT_MAX_DEPS);
    }
    for (int i = 0; !rc && i < m->ndeps; ++i) /* hashed now, but maybe not what the build read */
        if (changed_since(m->deps[i].path, &r->started))
            rc = fallback(err, ND_ESTALE, "jit: op '%s': %s changed while its kernel was built; not caching it",
                          r->generic->op, m->deps[i].path);
    if (!rc) {
        manifest_text(m, text, JIT_MANIFEST_BYTES);
        lib_path(r, m->lib_hash, lib, sizeof lib);
        snprintf(manifest, sizeof manifest, "%s/%s.manifest", r->dir, r->key);
        nd_error why = {0};
        if (chmod(store[2], 0755) || write_file(store[3], text) || chmod(store[3], 0644))
            rc = fallback(err, ND_EIO, "jit: cannot write the cache entry %s: %s", manifest, strerror(errno));
        else if (ndf_install(store[2], lib, &why) || ndf_install(store[3], manifest, &why)) /* the library first:
                                                               a manifest always names a library that is there */
            rc = fallback(err, ND_EIO, "jit: cannot write the cache entry: %s", why.msg);
    }
    free(m);
    free(text);
    return rc;
}

/* Generates and compiles into dir, then publishes. Returns JIT_FALLBACK when the generator or the
 * compiler fails (or cannot be run) or the entry cannot be written: the generic kernel is right for
 * every distribution, so a specialization that cannot be had is a slower launch, not a failed one. */
static int build_in(const nd_jit *j, const jit_request *r, const char *dir, char *const *store, nd_error *err)
{
    char *argv[JIT_MAX_ARGS], flags[4096], ldflags[4096], incs[(JIT_MAX_DIRS + 1) * (PATH_MAX + 4)];
    char head[512];
    ndgen_argv(j, r, store, argv);
    if (run_tool(j->ndgen, argv, store[4])) {
        log_head(store[4], dir, head, sizeof head);
        return fallback(err, ND_ESYS, "jit: op '%s': %s generate failed: %s", r->generic->op, j->ndgen, head);
    }
    if (inputs_trusted(r, store, err))
        return JIT_FALLBACK;
    snprintf(flags, sizeof flags, "%s", r->cflags);
    snprintf(ldflags, sizeof ldflags, "%s", j->ldflags);
    if (cc_argv(j, r, flags, ldflags, store, argv, incs))
        return fallback(err, ND_EINVAL, "jit: op '%s': more than %d compiler words in CC, cflags and ldflags",
                        r->generic->op, JIT_MAX_ARGS - 24);
    unlink(store[4]); /* the log holds the compiler's output alone */
    if (run_tool(j->cc_id->exe, argv, store[4])) {
        log_head(store[4], dir, head, sizeof head);
        return fallback(err, ND_ESYS, "jit: op '%s': compiling with %s failed: %s", r->generic->op, j->cc, head);
    }
    return publish(j, r, store, err);
}

/* Builds the entry in a private folder of the cache, removed after. */
static int build(const nd_jit *j, const jit_request *r, nd_error *err)
{
    char dir[PATH_MAX + 32], files[5][PATH_MAX + 48];
    char *store[6];
    snprintf(dir, sizeof dir, "%s/.build-%s-XXXXXX", r->dir, r->key);
    if (!mkdtemp(dir))
        return fallback(err, ND_EIO, "jit: cannot create a build folder in %s: %s", r->dir, strerror(errno));
    const char *names[] = {"kernel.c", "kernel.d", "kernel.so", "manifest", "log"};
    for (int i = 0; i < 5; ++i) {
        snprintf(files[i], sizeof files[i], "%s/%s", dir, names[i]);
        store[i] = files[i];
    }
    store[5] = NULL;
    int rc = build_in(j, r, dir, store, err);
    remove_folder(dir, 0);
    return rc;
}

/* ---------------------------------------------------------------- entry point */

/* The entry, built unless another process built it while this one waited for the lock. before: why
 * the entry could not be loaded before the lock was taken. */
static int build_locked(const nd_jit *j, const jit_request *r, const jit_check *before, char *path, size_t len,
                        nd_jit_outcome *outcome, char *note, size_t note_len, nd_error *err)
{
    jit_manifest *m = malloc(sizeof *m);
    jit_check now;
    if (!m)
        return nd_failc(err, ND_ENOMEM, "jit: out of memory");
    assert(before->code != ND_OK && before->why);
    int rc = 0;
    const char *why = before->why;
    bool had_entry = before->code != ND_ENOENT, hit = entry_valid(r, m, &now);
    if (!hit) {
        sweep(r->dir, r->key);
        rc = build(j, r, err);
        if (!rc && !entry_valid(r, m, &now))
            rc = fallback(err, now.code, "jit: entry %s in %s is not valid right after building it: %s", r->key,
                          r->dir, now.why);
    }
    if (!rc) {
        lib_path(r, m->lib_hash, path, len);
        if (!hit)
            remove_orphans(r->dir, r->key, path);
        *outcome = hit ? ND_JIT_HIT : had_entry ? ND_JIT_REBUILT : ND_JIT_BUILT;
        snprintf(note, note_len, "%s %s%s%s", hit ? "cache hit" : had_entry ? "rebuilt" : "built", r->key,
                 had_entry && !hit ? ": " : "", had_entry && !hit ? why : "");
    }
    free(m);
    return rc;
}

static bool readable_file(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* The spec: <spec>.lua in a folder of the configuration's spec_dir (folders separated by ':'), which
 * the user gave, else where the library says it is. */
static int find_spec(const nd_jit *j, const char *spec, const nd_jit_where *where, char *out, size_t len, nd_error *err)
{
    for (const char *d = j->spec_dir; d && *d;) {
        size_t n = strcspn(d, ":");
        snprintf(out, len, "%.*s/%s.lua", (int)n, d, spec);
        if (n && readable_file(out))
            return 0;
        d += n + (d[n] == ':');
    }
    if (where && readable_file(where->spec_path)) {
        snprintf(out, len, "%s", where->spec_path);
        return 0;
    }
    const char *recorded = where && where->spec_path ? where->spec_path : "(not recorded)";
    return nd_failc(err, ND_ENOENT, "jit: the spec %s.lua of the kernel library is neither where the library "
                                    "records it, %s, nor in the spec folders (%s); give its folder with ndrun "
                                    "--spec-dir DIR or NDGEN_SPEC_PATH", spec, recorded,
                    j->spec_dir && *j->spec_dir ? j->spec_dir : "none given");
}

static void add_tdir(jit_request *r, const char *d)
{
    for (int i = 0; i < r->ntdirs; ++i)
        if (strcmp(r->tdirs[i], d) == 0)
            return;
    if (r->ntdirs < JIT_MAX_DIRS)
        r->tdirs[r->ntdirs++] = d;
}

int nd_jit_library(nd_jit *j, const nda_kernel_entry *generic, const char *spec, char (*sigs)[ND_SIGNATURE_LEN], char *path,
                   size_t len, nd_jit_outcome *outcome, char *note, size_t note_len, nd_error *err)
{
    return nd_jit_library_at(j, generic, spec, NULL, sigs, NDA_FIXED_ALL, path, len, outcome, note, note_len, err);
}

int nd_jit_library_at(nd_jit *j, const nda_kernel_entry *generic, const char *spec, const nd_jit_where *where,
                      char (*sigs)[ND_SIGNATURE_LEN], int fixed, char *path, size_t len, nd_jit_outcome *outcome, char *note,
                      size_t note_len, nd_error *err)
{
    jit_request *r = calloc(1, sizeof *r);
    jit_manifest *m = malloc(sizeof *m);
    jit_check check;
    int rc = r && m ? 0 : nd_failc(err, ND_ENOMEM, "jit: out of memory");
    if (!rc) {
        *r = (jit_request){.generic = generic, .spec = spec, .sigs = sigs, .fixed = fixed};
        r->cflags = j->cflags ? j->cflags : where && where->cflags ? where->cflags : JIT_DEFAULT_CFLAGS;
        for (int i = 0; i < generic->noperands; ++i)
            snprintf(r->dtypes + strlen(r->dtypes), sizeof r->dtypes - strlen(r->dtypes), "%s%s", i ? "," : "",
                     generic->dtypes[i]);
        for (int i = 0; i < j->ntemplate_dirs; ++i) /* the user's first, then the library's */
            add_tdir(r, j->template_dirs[i]);
        for (int i = 0; where && i < where->ntemplate_dirs; ++i)
            add_tdir(r, where->template_dirs[i]);
        rc = find_spec(j, spec, where, r->spec_path, sizeof r->spec_path, err) || cache_ready(j, r->dir, err);
    }
    if (!rc && !(rc = cc_identify(j, generic->op, err))) {
        make_key(j, r);
        if (entry_valid(r, m, &check)) {
            lib_path(r, m->lib_hash, path, len);
            *outcome = ND_JIT_HIT;
            snprintf(note, note_len, "cache hit %s", r->key);
        } else {
            long holder = 0;
            clock_gettime(CLOCK_REALTIME, &r->started); /* as file times are: an input newer is not cached */
            int fd = lock_take(r->dir, r->key, j->lock_wait, &holder);
            if (fd < 0 && errno == EWOULDBLOCK)
                rc = fallback(err, ND_ESYS, "jit: cache folder %s: entry %s has been locked by process %ld for more "
                                            "than %g s (building it, or stopped); not waiting longer", r->dir, r->key,
                              holder, j->lock_wait);
            else
                rc = fd < 0 ? fallback(err, ND_ESYS, "jit: cache folder %s: cannot lock entry %s to %s it (%s): %s",
                                       r->dir, r->key, check.code == ND_ENOENT ? "build" : "rebuild", check.why,
                                       strerror(errno))
                            : build_locked(j, r, &check, path, len, outcome, note, note_len, err);
            if (fd >= 0)
                lock_drop(r->dir, r->key, fd);
        }
    }
    free(r);
    free(m);
    return rc;
}
