/*
 * files.c - every file ndgen and ndrun write goes through here: written to a temporary file beside its
 * destination, then renamed over it; the JIT's cache entries, which a compiler writes, are moved into
 * place by ndf_install under the same rule. A failed run leaves no half-written file, and a file whose
 * bytes would not change is not touched, so its timestamp does not trigger rebuilds.
 *
 * What may be replaced: a regular file, or a name that does not exist yet. A device, a folder, a
 * symbolic link or anything else is refused with what it is: renaming over it would replace the node
 * itself (as root, --output /dev/null would remove the device).
 *
 * Temporary files are named ".<name>.ndgen-tmp-<pid>-XXXXXX" beside the destination (mkstemp: a name
 * planted there in advance is never opened). They are removed on every exit path the tool controls, on SIGINT, SIGTERM and SIGHUP too; one that a killed run left (its
 * pid no longer alive) is removed by the next run that writes the same destination.
 */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nd_files.h"

/* ---------------------------------------------------------------- temporary files alive */

enum { MAX_LIVE = 1024 };

/* The temporary files of this process, for the signal handler. Changed only with signals blocked. */
static char *live[MAX_LIVE];
static volatile sig_atomic_t nlive;

static void on_signal(int sig)
{
    for (sig_atomic_t i = 0; i < nlive; ++i)
        if (live[i])
            unlink(live[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void block(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, old);
}

/* Adds tmp to the handler's list; signals are blocked. */
static void track_blocked(char *tmp)
{
    for (int i = 0; i < nlive; ++i)
        if (!live[i]) {
            live[i] = tmp;
            tmp = NULL;
            break;
        }
    if (tmp && nlive < MAX_LIVE) /* beyond, the next run's sweep removes it after a kill */
        live[nlive++] = tmp;
}

/* Creates the temporary file tmp names (mkstemp) and adds it to the handler's list, with every signal
 * blocked from before it exists until it is listed: a SIGTERM in between would otherwise end the
 * process with the file left behind (test_outputs saw it under ASan on a loaded machine). A signal
 * that arrived meanwhile is handled on unblocking, and removes the file. The fd, or -1 with errno. */
static int create_tracked(char *tmp)
{
    static bool installed;
    sigset_t old;
    block(&old);
    if (!installed) {
        static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; ++i)
            sigaction(sigs[i], &sa, NULL);
        installed = true;
    }
    int fd = mkstemp(tmp), e = errno;
    if (fd >= 0)
        track_blocked(tmp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return fd;
}

static void untrack(const char *tmp)
{
    sigset_t old;
    block(&old);
    for (int i = 0; i < nlive; ++i)
        if (live[i] == tmp)
            live[i] = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---------------------------------------------------------------- paths */

/* dir and base of path, into the given buffers. */
static void split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen)
{
    const char *slash = strrchr(path, '/');
    if (slash) {
        snprintf(dir, dlen, "%.*s", (int)(slash > path ? slash - path : 1), path); /* "/x": the root */
        snprintf(base, blen, "%s", slash + 1);
    } else {
        snprintf(dir, dlen, ".");
        snprintf(base, blen, "%s", path);
    }
}

/* Removes the temporary files of base that a run no longer alive left in dir. */
static void sweep(const char *dir, const char *base)
{
    char prefix[NAME_MAX + 32];
    snprintf(prefix, sizeof prefix, ".%s.ndgen-tmp-", base);
    size_t n = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, n) != 0)
            continue;
        long pid = strtol(e->d_name + n, NULL, 10);
        if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char stale[PATH_MAX + NAME_MAX + 2];
            snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
            unlink(stale);
        }
    }
    closedir(d);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a folder" : S_ISLNK(m) ? "a symbolic link" : S_ISCHR(m) ? "a character device" :
           S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a named pipe" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* ---------------------------------------------------------------- outputs against inputs */

/* path with its folder resolved: "<real folder>/<name>"; -1 when the folder does not resolve. */
static int resolved_name(const char *path, char *out, size_t len)
{
    char dir[PATH_MAX], base[NAME_MAX + 1], real[PATH_MAX];
    split_path(path, dir, sizeof dir, base, sizeof base);
    if (!realpath(dir, real))
        return -1;
    snprintf(out, len, "%s/%s", real, base);
    return 0;
}

static bool same_inode(const struct stat *a, const char *path)
{
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int ndf_check_clobber(const char *const *outputs, const char *const *what, int n, char *const *inputs, int ninputs,
                      nd_error *err)
{
    char ri[PATH_MAX + NAME_MAX + 2], rj[PATH_MAX + NAME_MAX + 2];
    for (int i = 0; i < n; ++i) {
        if (!outputs[i])
            continue;
        struct stat so;
        bool exists = stat(outputs[i], &so) == 0, named = resolved_name(outputs[i], ri, sizeof ri) == 0;
        for (int k = 0; exists && k < ninputs; ++k)
            if (same_inode(&so, inputs[k]))
                return nd_fail(err, "%s %s: it is %s, which this run reads; %s never writes over its inputs", what[i],
                               outputs[i], inputs[k], program_invocation_short_name);
        for (int j = 0; j < i; ++j)
            if (outputs[j] && ((named && resolved_name(outputs[j], rj, sizeof rj) == 0 && strcmp(ri, rj) == 0) ||
                               (exists && same_inode(&so, outputs[j]))))
                return nd_fail(err, "%s %s: it is also %s %s; each output must be a file of its own", what[i],
                               outputs[i], what[j], outputs[j]);
    }
    return 0;
}

/* ---------------------------------------------------------------- one output */

int ndf_open(ndf_output *out, const char *path, nd_error *err)
{
    struct stat st;
    char dir[PATH_MAX], base[NAME_MAX + 1];
    memset(out, 0, sizeof *out);
    if (!path || strcmp(path, "-") == 0) {
        out->fp = stdout;
        return 0;
    }
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return nd_fail(err, "%s: it is %s; %s writes only regular files or new names", path, kind_of(st.st_mode), program_invocation_short_name);
    split_path(path, dir, sizeof dir, base, sizeof base);
    sweep(dir, base);
    size_t n = strlen(dir) + strlen(base) + 64;
    out->path = strdup(path);
    out->tmp = malloc(n);
    if (!out->path || !out->tmp) {
        ndf_abort(out);
        return nd_fail(err, "%s: out of memory", path);
    }
    snprintf(out->tmp, n, "%s/.%s.ndgen-tmp-%ld-XXXXXX", dir, base, (long)getpid());
    int fd = create_tracked(out->tmp);
    if (fd >= 0) { /* mkstemp makes 0600; give the file the mode a plain create would */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    if (fd < 0 || !(out->fp = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        ndf_abort(out);
        return nd_fail(err, "%s: cannot create a temporary file beside it: %s", path, strerror(e));
    }
    return 0;
}

/* Whether files a and b hold the same bytes; false when either cannot be read. */
static bool same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    char ba[8192], bb[8192];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && memcmp(ba, bb, na) == 0;
        if (na == 0 || na < sizeof ba)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

int ndf_close(ndf_output *out, nd_error *err)
{
    if (!out->path)
        return fflush(stdout) == 0 ? 0 : nd_fail(err, "stdout: write failed: %s", strerror(errno));
    bool failed = ferror(out->fp) != 0;
    failed |= fclose(out->fp) != 0;
    out->fp = NULL;
    if (failed) {
        nd_fail(err, "%s: write failed: %s", out->path, strerror(errno));
        ndf_abort(out);
        return -1;
    }
    return 0;
}

int ndf_rename(ndf_output *out, bool *changed, nd_error *err)
{
    struct stat st;
    if (!out->path) {
        if (changed)
            *changed = true;
        return 0;
    }
    if (lstat(out->path, &st) == 0 && !S_ISREG(st.st_mode)) { /* it changed since the output was opened */
        nd_fail(err, "%s: it is %s; %s writes only regular files or new names", out->path, kind_of(st.st_mode),
                program_invocation_short_name);
        ndf_abort(out);
        return -1;
    }
    bool differ = !same_bytes(out->tmp, out->path);
    if (changed)
        *changed = differ;
    if (!differ) {
        ndf_abort(out);
        return 0;
    }
    if (rename(out->tmp, out->path) != 0) {
        nd_fail(err, "%s: cannot replace it: %s", out->path, strerror(errno));
        ndf_abort(out);
        return -1;
    }
    untrack(out->tmp);
    free(out->tmp);
    free(out->path);
    memset(out, 0, sizeof *out);
    return 0;
}

int ndf_commit(ndf_output *out, bool *changed, nd_error *err)
{
    return ndf_close(out, err) || ndf_rename(out, changed, err) ? -1 : 0;
}

void ndf_abort(ndf_output *out)
{
    if (out->fp && out->fp != stdout)
        fclose(out->fp);
    if (out->tmp) {
        unlink(out->tmp);
        untrack(out->tmp);
    }
    free(out->tmp);
    free(out->path);
    memset(out, 0, sizeof *out);
}

int ndf_install(const char *tmp, const char *path, nd_error *err)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        unlink(tmp);
        return nd_fail(err, "%s: it is %s; %s writes only regular files or new names", path, kind_of(st.st_mode),
                       program_invocation_short_name);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return nd_failc(err, ND_EIO, "%s: cannot replace it: %s", path, strerror(e));
    }
    return 0;
}

/* ---------------------------------------------------------------- stamps */

int ndf_touch(const char *path, nd_error *err)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return nd_fail(err, "%s: the stamp file is not a regular file; %s writes only regular files or new names",
                       path, program_invocation_short_name);
    /* O_NOFOLLOW and O_NONBLOCK: a symbolic link or named pipe put there since is refused, not followed
     * or waited on; checked again once open */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0)
        return nd_fail(err, "%s: cannot write the stamp file: %s", path, strerror(errno));
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    int rc = regular && futimens(fd, NULL) == 0 ? 0 : -1;
    int e = errno;
    if (close(fd) != 0 && rc == 0)
        rc = -1, e = errno;
    if (!regular)
        return nd_fail(err, "%s: the stamp file is not a regular file; %s writes only regular files or new names",
                       path, program_invocation_short_name);
    return rc ? nd_fail(err, "%s: cannot update the stamp file: %s", path, strerror(e)) : 0;
}
