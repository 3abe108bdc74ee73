/*
 * output.c - every file ndgen writes goes through here: written to a temporary file beside its
 * destination, then renamed over it. A failed run leaves no half-written file, and a file whose
 * bytes would not change is not touched, so its timestamp does not trigger rebuilds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ndgen.h"

int ndg_output_open(ndg_output *out, const char *path, nd_error *err)
{
    memset(out, 0, sizeof *out);
    if (!path || strcmp(path, "-") == 0) {
        out->fp = stdout;
        return 0;
    }
    size_t n = strlen(path);
    out->path = strdup(path);
    out->tmp = malloc(n + 16);
    if (!out->path || !out->tmp) {
        ndg_output_abort(out);
        return nd_fail(err, "%s: out of memory", path);
    }
    snprintf(out->tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(out->tmp);
    if (fd >= 0) { /* mkstemp makes 0600; give the file the mode a plain create would */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    if (fd < 0 || !(out->fp = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd), unlink(out->tmp);
        free(out->tmp);
        out->tmp = NULL;
        ndg_output_abort(out);
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

int ndg_output_commit(ndg_output *out, bool *changed, nd_error *err)
{
    if (!out->path) {
        if (changed)
            *changed = true;
        return fflush(stdout) == 0 ? 0 : nd_fail(err, "stdout: write failed: %s", strerror(errno));
    }
    bool failed = ferror(out->fp) != 0;
    failed |= fclose(out->fp) != 0;
    out->fp = NULL;
    if (failed) {
        nd_fail(err, "%s: write failed: %s", out->path, strerror(errno));
        ndg_output_abort(out);
        return -1;
    }
    bool differ = !same_bytes(out->tmp, out->path);
    if (changed)
        *changed = differ;
    if (!differ) {
        ndg_output_abort(out);
        return 0;
    }
    if (rename(out->tmp, out->path) != 0) {
        nd_fail(err, "%s: cannot replace it: %s", out->path, strerror(errno));
        ndg_output_abort(out);
        return -1;
    }
    free(out->tmp);
    free(out->path);
    memset(out, 0, sizeof *out);
    return 0;
}

void ndg_output_abort(ndg_output *out)
{
    if (out->fp && out->fp != stdout)
        fclose(out->fp);
    if (out->tmp)
        unlink(out->tmp);
    free(out->tmp);
    free(out->path);
    memset(out, 0, sizeof *out);
}
