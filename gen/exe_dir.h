/* exe_dir.h - the folders an installed ndgen or ndrun finds beside its own executable.
 *
 * The build gives each path relative to the executable's folder (bin/), as the install lays them out:
 * ../include/ndgen, ../share/ndgen/templates, ... The build tree mirrors that layout around its bin/
 * with links into the source tree, so one rule serves both, and no path of the build or source tree is
 * compiled into the executables. */
#ifndef NDGEN_EXE_DIR_H
#define NDGEN_EXE_DIR_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* out = the folder of the running executable (links resolved), then "/" and rel; rel NULL or "" for the
 * folder alone. 0 on success; -1 when /proc/self/exe cannot be read or the result does not fit (out is
 * then a message saying so). */
static inline int nd_exe_relative(char *out, size_t len, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof exe - 1) {
        snprintf(out, len, "cannot read /proc/self/exe to find the executable's folder");
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) {
        snprintf(out, len, "/proc/self/exe is not a path: %s", exe);
        return -1;
    }
    *slash = '\0';
    int m = rel && *rel ? snprintf(out, len, "%s/%s", exe[0] ? exe : "", rel) : snprintf(out, len, "%s", exe[0] ? exe : "/");
    if (m < 0 || (size_t)m >= len) {
        snprintf(out, len, "the executable's folder %s is too long a path", exe);
        return -1;
    }
    return 0;
}

#endif
