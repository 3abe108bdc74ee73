/* libraries.c - the kernel libraries ndrun's commands open: its own files beside its executable, the
 * options that choose libraries and the JIT's folders (--kernels, --spec-dir, --template-dir), and the
 * opening of the libraries with on-demand specialization configured. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/exe_dir.h"
#include "ndrun.h"

/* Appends the ':'-separated folders of text to list (a ':'-separated string of len bytes). */
static int add_dirs(char *list, size_t len, const char *text, const char *what, nd_error *err)
{
    size_t n = strlen(list);
    if (!text || !*text)
        return 0;
    if (n + strlen(text) + 2 > len)
        return nd_fail(err, "%s: the spec folders are longer than %zu bytes altogether", what, len - 1);
    snprintf(list + n, len - n, "%s%s", n ? ":" : "", text);
    return 0;
}

/* ndrun's own files, beside its executable as the install lays them out (NDGEN_REL_*: bin/ndgen,
 * ../lib/libndgen_ops.so, ...), so an installed ndrun needs neither the build nor the source tree. */
typedef struct own_files {
    char ops[PATH_MAX + 64], ndgen[PATH_MAX + 64], specs[PATH_MAX + 64], templates[PATH_MAX + 64],
        include[PATH_MAX + 64], ldflags[PATH_MAX + 256];
} own_files;

static int find_own_files(own_files *f, nd_error *err);

int nr_own_ndgen(char *buf, size_t len, nd_error *err)
{
    own_files *own = calloc(1, sizeof *own);
    int rc = own ? find_own_files(own, err) : nd_failc(err, ND_ENOMEM, "out of memory");
    if (!rc && snprintf(buf, len, "%s", own->ndgen) >= (int)len)
        rc = nd_fail(err, "ndrun: the path of ndgen is longer than %zu bytes", len);
    free(own);
    return rc;
}

static int find_own_files(own_files *f, nd_error *err)
{
    char dist[PATH_MAX + 64];
    if (nd_exe_relative(f->ops, sizeof f->ops, NDGEN_REL_OPS) ||
        nd_exe_relative(f->ndgen, sizeof f->ndgen, "ndgen") ||
        nd_exe_relative(f->specs, sizeof f->specs, NDGEN_REL_SPECS) ||
        nd_exe_relative(f->templates, sizeof f->templates, NDGEN_REL_TEMPLATES) ||
        nd_exe_relative(f->include, sizeof f->include, NDGEN_REL_INCLUDE) ||
        nd_exe_relative(dist, sizeof dist, NDGEN_REL_ND_DIST))
        return nd_fail(err, "ndrun: finding its own files: %s", f->ops);
    snprintf(f->ldflags, sizeof f->ldflags, "%s%s%s", dist, NDRUN_KERNEL_LDFLAGS[0] ? " " : "", NDRUN_KERNEL_LDFLAGS);
    return 0;
}

int nr_open_kernels(const nr_settings *s, nd_kernels **out, nd_error *err)
{
    nr_watchdog_set(s->watchdog); /* every command opens its kernels before it launches one */
    nd_kernels *k;
    own_files *own = calloc(1, sizeof *own);
    if (!own)
        return nd_failc(err, ND_ENOMEM, "ndrun: out of memory");
    if (find_own_files(own, err) || nd_kernels_open(&k, err)) {
        free(own);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < s->nkernels && !rc; ++i)
        rc = nd_kernels_load(k, s->kernels[i], err);
    if (!rc && s->nkernels == 0 && (rc = nd_kernels_load(k, own->ops, err)) && err->code == ND_ENOENT)
        snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                 " (the bundled kernel library, looked for beside ndrun; give one with --kernels FILE)");
    if (!rc && s->jit && access(own->ndgen, X_OK) != 0)
        rc = nd_fail(err, "ndrun: on-demand specialization runs ndgen, looked for beside ndrun as %s: %s; install "
                          "them together, or give --no-jit", own->ndgen, strerror(errno));
    if (!rc && !s->jit && strcmp(s->fixed, "all") != 0 && s->nkernels == 0)
        rc = nd_fail(err, "--fixed %s with --no-jit: the bundled library has no partial kernels; give a library "
                          "that has (--kernels FILE), or let the JIT build one", s->fixed);
    if (!rc && s->jit) {
        nd_jit_config cfg;
        nd_jit_config_init(&cfg);
        cfg.cache_dir = s->cache_dir;
        cfg.ndgen = own->ndgen;
        char specs[sizeof s->spec_dirs], env[4096];
        snprintf(specs, sizeof specs, "%s", s->spec_dirs);
        rc = add_dirs(specs, sizeof specs, getenv("NDGEN_SPEC_PATH"), "NDGEN_SPEC_PATH", err) ||
             add_dirs(specs, sizeof specs, s->nkernels ? NULL : own->specs, "the bundled specs", err);
        cfg.spec_dir = specs;
        cfg.ntemplate_dirs = 0;
        for (int i = 0; i < s->ntemplate_dirs; ++i)
            cfg.template_dirs[cfg.ntemplate_dirs++] = s->template_dirs[i];
        snprintf(env, sizeof env, "%s", getenv("NDGEN_TEMPLATE_PATH") ? getenv("NDGEN_TEMPLATE_PATH") : "");
        char *save = NULL;
        for (char *d = strtok_r(env, ":", &save); d && !rc; d = strtok_r(NULL, ":", &save))
            rc = cfg.ntemplate_dirs == ND_JIT_MAX_TEMPLATE_DIRS - 1
                     ? nd_fail(err, "NDGEN_TEMPLATE_PATH: at most %d template folders with --template-dir",
                               ND_JIT_MAX_TEMPLATE_DIRS - 1)
                     : (cfg.template_dirs[cfg.ntemplate_dirs++] = d, 0);
        if (!s->nkernels) /* the bundled library's; another records its own */
            cfg.template_dirs[cfg.ntemplate_dirs++] = own->templates;
        cfg.include_dir = own->include;
        cfg.cflags = NDRUN_KERNEL_CFLAGS;
        cfg.ldflags = own->ldflags;
        rc = rc ? rc : nd_kernels_set_jit(k, &cfg, err);
    }
    rc = rc ? rc : nd_kernels_set_fixed(k, s->fixed, err);
    free(own);
    if (rc) {
        nd_kernels_close(k);
        return -1;
    }
    *out = k;
    return 0;
}

/* The options every command takes besides those of options.c; 1 when not one of them. */
int nr_parse_common(int argc, char **argv, int *i, nr_case *c, nr_settings *s, nd_error *err)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "--kernels") == 0 || strcmp(arg, "--spec-dir") == 0 || strcmp(arg, "--template-dir") == 0) {
        if (*i + 1 >= argc)
            return nd_fail(err, "%s: needs a value", arg);
        if (arg[2] != 'k' && strchr(argv[*i + 1], ':'))
            return nd_fail(err, "%s %s: a folder name with ':' cannot be searched", arg, argv[*i + 1]);
        if (arg[2] == 's') {
            return add_dirs(s->spec_dirs, sizeof s->spec_dirs, argv[++*i], "--spec-dir", err);
        } else if (arg[2] == 't') {
            if (s->ntemplate_dirs == ND_JIT_MAX_TEMPLATE_DIRS / 2)
                return nd_fail(err, "--template-dir: at most %d", ND_JIT_MAX_TEMPLATE_DIRS / 2);
            s->template_dirs[s->ntemplate_dirs++] = argv[++*i];
        } else if (s->nkernels == NR_MAX_LIBRARIES) {
            return nd_fail(err, "--kernels: at most %d libraries", NR_MAX_LIBRARIES);
        } else {
            s->kernels[s->nkernels++] = argv[++*i];
        }
        return 0;
    }
    return nr_parse_option(argc, argv, i, c, s, err);
}
