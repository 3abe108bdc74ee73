/*
 * nd_files.h - the one way ndgen and ndrun write files: whole or not at all, never over an input,
 * never into anything but a regular file (files.c says how).
 */
#ifndef ND_FILES_H
#define ND_FILES_H

#include <stdbool.h>
#include <stdio.h>

#include "nd_dist.h" /* nd_error */

/* A file being written: a temporary file beside path until it is renamed over path. */
typedef struct ndf_output {
    char *path; /* final path; NULL for stdout */
    char *tmp;  /* temporary file beside it */
    FILE *fp;
} ndf_output;

/* Opens a temporary file beside path (or stdout when path is NULL or "-"); refuses a path that exists
 * and is not a regular file. */
int ndf_open(ndf_output *out, const char *path, nd_error *err);
/* Finishes writing: the temporary file is complete, path still untouched. */
int ndf_close(ndf_output *out, nd_error *err);
/* Renames the closed temporary file over path, unless path already holds the same bytes: then the
 * temporary file is removed and path keeps its timestamp. Sets *changed when given. */
int ndf_rename(ndf_output *out, bool *changed, nd_error *err);
/* Close, then rename. */
int ndf_commit(ndf_output *out, bool *changed, nd_error *err);
/* Removes the temporary file; path is untouched. */
void ndf_abort(ndf_output *out);

/* Moves the finished file tmp, which another program wrote in path's folder (a compiler's output), over
 * path: refused when path exists and is not a regular file; on any failure path is untouched and tmp
 * removed. No signal handler is installed: a library may call it inside its user's program. */
int ndf_install(const char *tmp, const char *path, nd_error *err);

/* Creates a stamp file or updates its time; refuses one that is not a regular file (a symbolic link,
 * a named pipe, a device), without following or opening it. */
int ndf_touch(const char *path, nd_error *err);
/* Refuses outputs that are inputs or each other: each of the n outputs (NULL entries skipped) that is
 * one of the inputs (same file: device and inode, so hard links and symbolic links count) or the same
 * file as an earlier output (same folder, resolved, and name). what[i] says which option named it. */
int ndf_check_clobber(const char *const *outputs, const char *const *what, int n, char *const *inputs, int ninputs,
                      nd_error *err);

#endif
