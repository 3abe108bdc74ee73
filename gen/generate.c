/* generate.c - ndgen generate and ndgen registry: the pipeline's command-line entry points. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exe_dir.h"
#include "ndgen.h"

static const char generate_help[] =
    "usage: ndgen generate [options] SPEC.lua...\n"
    "\n"
    "Runs each op spec, parses its templates with libclang (once per run), and writes one C file per\n"
    "spec: for every op its generic kernel, one kernel specialized for each target distribution, and\n"
    "a registry group the runtime reads. Outputs are written whole or not at all, and a file whose\n"
    "content would not change is left untouched.\n"
    "\n"
    "Options:\n"
    "  --output FILE         the C file to write (one SPEC only)\n"
    "  --output-dir DIR      write DIR/<spec name>.c for each SPEC (default: the current folder)\n"
    "  --templates DIR       a folder templates are looked up in; repeat for more (default: templates)\n"
    "  --spec-dir DIR        the folder include() reads from (default: each spec's own folder)\n"
    "  --spec-memory MB      the memory a spec's Lua state may use (default: 1024)\n"
    "  --spec-seconds S      the wall-clock time a spec may run (default: 60)\n"
    "  --include DIR         the folder holding nd_accessor.h (default: " NDGEN_REL_INCLUDE " beside the\n"
    "                        ndgen executable: the installed headers, or in a build tree the source's)\n"
    "  --resource-dir DIR    libclang's resource folder (default: " NDGEN_CLANG_RESOURCE_DIR ")\n"
    "  --parts N             split each spec's output into N files that compile in parallel: FILE.c becomes\n"
    "                        FILE.1.c ... FILE.N.c (kernels dealt in order, balanced by size; the registry\n"
    "                        group in FILE.1.c); a part may hold no kernel. Default 1: FILE.c alone\n"
    "  --depfile FILE        also write make-style dependencies of the output (one SPEC only)\n"
    "  --stamp FILE          touch FILE after every successful run and name it as the depfile's target:\n"
    "                        for build tools without restat (Make), since an unchanged output is not touched\n"
    "  --installed-spec-dir DIR      record the spec's folder once installed, relative to the install prefix\n"
    "                        (the folder above the library's), for on-demand specialization\n"
    "  --installed-template-dir DIR  the same for the template folders, in --templates order; repeat\n"
    "  --relocatable         record only those installed folders, no absolute path of this machine (a\n"
    "                        library to install); needs --installed-spec-dir and --installed-template-dir\n"
    "  --op NAME             generate only op NAME (with --dtypes D,D,..: the op of those operand dtypes)\n"
    "  --target SIG          with --op, one per operand: only the kernel for these distribution signatures\n"
    "  --fixed SET           with --target: the parameters that kernel fixes: all (default), pattern (all but\n"
    "                        the shape), shard (all but the shape and the grid); see docs/partial.md\n"
    "  --library             also write the library's root registry into the output (one SPEC)\n"
    "  --kernel-cflags FLAGS with --library: the flags the kernels are compiled with, recorded for the JIT,\n"
    "                        which compiles specializations of the library's ops with them by default\n"
    "  --specialized-only    leave out the generic kernels: for a library loaded beside one that has\n"
    "                        them, as the JIT's are (they cost most of its compile time)\n"
    "  --no-line             omit the #line directives that point back to the templates\n"
    "  --prefix-map OLD=NEW  write paths that start with OLD as NEW in the generated comments and #line\n"
    "                        directives, as gcc's -ffile-prefix-map (repeat for more; the longest OLD\n"
    "                        wins); with --relocatable the output names no folder of this machine\n"
    "  --stats               print generation time per kernel, on standard error\n"
    "  --help                show this help\n"
    "\n"
    "Errors read FILE:LINE: message, for specs and templates alike. Outputs are all or nothing: every\n"
    "spec's file is prepared first and put in place only when all succeeded (C files, then depfiles,\n"
    "then the stamp), so nothing is written on error. Only regular files or new names are replaced.\n";

static const char registry_help[] =
    "usage: ndgen registry --output FILE [--stamp FILE] [--kernel-cflags FLAGS] SPEC_NAME...\n"
    "\n"
    "Writes the root registry of a kernel library built from the named specs (file names without\n"
    "folder or .lua): the symbol nda_kernel_registry the runtime looks up after dlopen. --stamp FILE\n"
    "is touched after every successful run, as with ndgen generate. --kernel-cflags FLAGS records the\n"
    "flags the library's kernels are compiled with: the JIT compiles specializations of its ops with\n"
    "them unless its caller gives other flags (at most 4096 bytes; they should name no folder of this\n"
    "machine, or the registry would differ wherever the tree lives).\n";

enum { OPT_OUTPUT = 256, OPT_OUTPUT_DIR, OPT_TEMPLATES, OPT_SPEC_DIR, OPT_INCLUDE, OPT_RESOURCE, OPT_DEPFILE,
       OPT_NO_LINE, OPT_STATS, OPT_STAMP, OPT_HELP, OPT_OP, OPT_DTYPES, OPT_TARGET, OPT_LIBRARY, OPT_SPEC_MEMORY, OPT_SPEC_SECONDS,
       OPT_PARTS, OPT_INSTALLED_SPEC_DIR, OPT_INSTALLED_TEMPLATE_DIR, OPT_RELOCATABLE, OPT_FIXED,
       OPT_SPECIALIZED_ONLY, OPT_PREFIX_MAP, OPT_KERNEL_CFLAGS };

static const struct option longopts[] = {
    {"output", required_argument, NULL, OPT_OUTPUT},     {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
    {"templates", required_argument, NULL, OPT_TEMPLATES}, {"spec-dir", required_argument, NULL, OPT_SPEC_DIR},
    {"include", required_argument, NULL, OPT_INCLUDE},   {"resource-dir", required_argument, NULL, OPT_RESOURCE},
    {"depfile", required_argument, NULL, OPT_DEPFILE},   {"no-line", no_argument, NULL, OPT_NO_LINE},
    {"stats", no_argument, NULL, OPT_STATS},             {"help", no_argument, NULL, OPT_HELP},
    {"stamp", required_argument, NULL, OPT_STAMP},       {"op", required_argument, NULL, OPT_OP},
    {"dtypes", required_argument, NULL, OPT_DTYPES},     {"target", required_argument, NULL, OPT_TARGET},
    {"library", no_argument, NULL, OPT_LIBRARY},         {"spec-memory", required_argument, NULL, OPT_SPEC_MEMORY},
    {"spec-seconds", required_argument, NULL, OPT_SPEC_SECONDS},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"installed-spec-dir", required_argument, NULL, OPT_INSTALLED_SPEC_DIR},
    {"installed-template-dir", required_argument, NULL, OPT_INSTALLED_TEMPLATE_DIR},
    {"relocatable", no_argument, NULL, OPT_RELOCATABLE}, {"fixed", required_argument, NULL, OPT_FIXED},
    {"specialized-only", no_argument, NULL, OPT_SPECIALIZED_ONLY},
    {"prefix-map", required_argument, NULL, OPT_PREFIX_MAP},
    {"kernel-cflags", required_argument, NULL, OPT_KERNEL_CFLAGS},
    {NULL, 0, NULL, 0},
};

typedef struct gen_opts {
    const char *output, *output_dir, *include, *resource_dir;
    ndg_spec_env env;
    ndg_emit_options emit;
    bool stats;
    const char *op, *dtypes; /* --op, --dtypes */
    const char *fixed;       /* --fixed, as given */
    nda_fixed fixed_set;
    int ntargets;
    char *targets[NDG_MAX_OPERANDS];
    const char *installed_template_dirs[NDG_MAX_TEMPLATE_DIRS];
    const char *prefix_maps[NDG_MAX_PREFIX_MAPS];
} gen_opts;

/* An installed location is relative to the install prefix: no leading '/', no "..", one line. */
static int installed_path(const char *flag, const char *v, int *status)
{
    if (v[0] && v[0] != '/' && !strstr(v, "..") && !strpbrk(v, "\n\r"))
        return 0;
    fprintf(stderr, "ndgen generate: %s %s: expected a folder relative to the install prefix, such as "
                    "share/ndgen/specs\n", flag, v);
    *status = 2;
    return -1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Parses options; returns -1 to exit with *status. */
static int parse_options(int argc, char **argv, gen_opts *o, int *status)
{
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_OUTPUT: o->output = optarg; break;
        case OPT_OUTPUT_DIR: o->output_dir = optarg; break;
        case OPT_SPEC_DIR: o->env.spec_dir = optarg; break;
        case OPT_INCLUDE: o->include = optarg; break;
        case OPT_RESOURCE: o->resource_dir = optarg; break;
        case OPT_DEPFILE: o->emit.depfile = optarg; break;
        case OPT_STAMP: o->emit.stamp = optarg; break;
        case OPT_NO_LINE: o->emit.line_directives = false; break;
        case OPT_STATS: o->stats = true; break;
        case OPT_OP: o->op = optarg; break;
        case OPT_DTYPES: o->dtypes = optarg; break;
        case OPT_FIXED: {
            nd_error why;
            if (ndg_fixed_parse(optarg, &o->fixed_set, &why)) {
                fprintf(stderr, "ndgen generate: --fixed: %s\n", why.msg);
                *status = 2;
                return -1;
            }
            o->fixed = optarg;
            break;
        }
        case OPT_LIBRARY: o->emit.library = true; break;
        case OPT_KERNEL_CFLAGS:
            if (strlen(optarg) > NDG_MAX_CFLAGS) {
                fprintf(stderr, "ndgen generate: --kernel-cflags: %zu bytes, more than %d\n", strlen(optarg),
                        NDG_MAX_CFLAGS);
                *status = 2;
                return -1;
            }
            o->emit.kernel_cflags = optarg;
            break;
        case OPT_SPECIALIZED_ONLY: o->emit.specialized_only = true; break;
        case OPT_PREFIX_MAP:
            if (!strchr(optarg, '=') || optarg[0] == '=' || o->emit.nprefix_maps == NDG_MAX_PREFIX_MAPS) {
                fprintf(stderr, "ndgen generate: --prefix-map %s: %s\n", optarg,
                        o->emit.nprefix_maps == NDG_MAX_PREFIX_MAPS ? "too many (at most 16)"
                                                                    : "expected OLD=NEW, OLD a path prefix");
                *status = 2;
                return -1;
            }
            o->prefix_maps[o->emit.nprefix_maps++] = optarg;
            o->emit.prefix_maps = o->prefix_maps;
            break;
        case OPT_SPEC_MEMORY: {
            char *end;
            long mb = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || mb < 1 || mb > 1L << 20) {
                fprintf(stderr, "ndgen generate: --spec-memory %s: expected megabytes from 1 to %ld\n", optarg, 1L << 20);
                *status = 2;
                return -1;
            }
            o->env.memory_limit = (size_t)mb << 20;
            break;
        }
        case OPT_SPEC_SECONDS: {
            char *end;
            double v = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(v > 0 && v <= NDG_SPEC_SECONDS_MAX)) { /* NaN and inf fail */
                fprintf(stderr, "ndgen generate: --spec-seconds %s: expected seconds above 0, at most %d\n", optarg,
                        NDG_SPEC_SECONDS_MAX);
                *status = 2;
                return -1;
            }
            o->env.seconds = v;
            break;
        }
        case OPT_PARTS: {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || n < 1 || n > NDG_MAX_PARTS) {
                fprintf(stderr, "ndgen generate: --parts %s: expected a number of files from 1 to %d\n", optarg,
                        NDG_MAX_PARTS);
                *status = 2;
                return -1;
            }
            o->emit.parts = (int)n;
            break;
        }
        case OPT_TARGET:
            if (o->ntargets == NDG_MAX_OPERANDS) {
                fprintf(stderr, "ndgen generate: --target: at most %d, one per operand\n", NDG_MAX_OPERANDS);
                *status = 2;
                return -1;
            }
            o->targets[o->ntargets++] = optarg;
            break;
        case OPT_INSTALLED_SPEC_DIR:
            if (installed_path("--installed-spec-dir", optarg, status))
                return -1;
            o->emit.installed_spec_dir = optarg;
            break;
        case OPT_INSTALLED_TEMPLATE_DIR:
            if (installed_path("--installed-template-dir", optarg, status))
                return -1;
            if (o->emit.ninstalled_template_dirs == NDG_MAX_TEMPLATE_DIRS) {
                fprintf(stderr, "ndgen generate: --installed-template-dir %s: at most %d\n", optarg,
                        NDG_MAX_TEMPLATE_DIRS);
                *status = 2;
                return -1;
            }
            o->installed_template_dirs[o->emit.ninstalled_template_dirs++] = optarg;
            break;
        case OPT_RELOCATABLE:
            o->emit.relocatable = true;
            break;
        case OPT_TEMPLATES:
            if (o->env.ntemplate_dirs == NDG_MAX_TEMPLATE_DIRS) {
                fprintf(stderr, "ndgen generate: --templates %s: at most %d template folders\n", optarg,
                        NDG_MAX_TEMPLATE_DIRS);
                *status = 2;
                return -1;
            }
            o->env.template_dirs[o->env.ntemplate_dirs++] = optarg;
            break;
        case OPT_HELP:
            fputs(generate_help, stdout);
            *status = 0;
            return -1;
        default:
            fprintf(stderr, "ndgen generate: %s: unknown option or missing value; see ndgen generate --help\n",
                    argv[optind - 1]);
            *status = 2;
            return -1;
        }
    }
    return 0;
}

static int check_outputs(const gen_opts *o, int nspecs, nd_error *err)
{
    if (nspecs == 0)
        return nd_fail(err, "no spec given; see ndgen generate --help");
    if (o->output && o->output_dir)
        return nd_fail(err, "--output %s: give either --output or --output-dir", o->output);
    if ((o->output || o->emit.depfile || o->emit.stamp || o->op) && nspecs != 1)
        return nd_fail(err, "%s names one file, but %d specs were given",
                       o->output ? "--output" : o->emit.depfile ? "--depfile" : o->op ? "--op" : "--stamp", nspecs);
    if (!o->op && (o->dtypes || o->ntargets))
        return nd_fail(err, "%s: needs --op NAME", o->dtypes ? "--dtypes" : "--target");
    if (o->fixed && !o->ntargets)
        return nd_fail(err, "--fixed %s: needs --target, one per operand", o->fixed);
    if (o->emit.kernel_cflags && !o->emit.library)
        return nd_fail(err, "--kernel-cflags: needs --library (the flags are recorded in the library's root)");
    return 0;
}

typedef struct spec_run {
    const char *path;
    ndg_emitted out;
    double ms;
} spec_run;

/* Runs one spec and prepares its outputs, not yet in place. */
static int generate_one(spec_run *r, const gen_opts *o, ndg_analyzer *a, nd_error *err)
{
    ndg_spec spec;
    double t0 = now_ms();
    if (ndg_spec_load(r->path, &o->env, &spec, err))
        return -1;
    if (o->op && ndg_spec_select(&spec, o->op, o->dtypes, o->targets, o->ntargets, o->fixed_set, err)) {
        ndg_spec_free(&spec);
        return -1;
    }
    char out[4096];
    if (o->output)
        snprintf(out, sizeof out, "%s", o->output);
    else
        snprintf(out, sizeof out, "%s/%s.c", o->output_dir ? o->output_dir : ".", spec.name);
    int rc = ndg_emit_spec(&spec, a, out, &o->emit, &r->out, err);
    r->ms = now_ms() - t0;
    ndg_spec_free(&spec);
    return rc;
}

/* Refuses, before any output is in place, an output that is an input of the run (a spec, an included
 * file, a template or header, a reference source) or another output (--depfile naming --output, two
 * specs of one name in --output-dir). */
static int check_clobber(spec_run *runs, int n, const gen_opts *o, nd_error *err)
{
    int nout = 1, nin = 0;
    for (int i = 0; i < n; ++i)
        nout += runs[i].out.nparts + 1, nin += runs[i].out.ninputs;
    const char **outs = ndg_calloc((size_t)nout, sizeof *outs), **what = ndg_calloc((size_t)nout, sizeof *what);
    char **ins = ndg_calloc((size_t)nin + 1, sizeof *ins);
    int k = 0, m = 0;
    for (int i = 0; i < n; ++i) {
        for (int p = 0; p < runs[i].out.nparts; ++p, ++k) {
            outs[k] = runs[i].out.c[p].path;
            what[k] = o->output ? "--output" : "the output";
        }
        outs[k] = runs[i].out.has_depfile ? runs[i].out.depfile.path : NULL;
        what[k++] = "--depfile";
        for (int q = 0; q < runs[i].out.ninputs; ++q)
            ins[m++] = runs[i].out.inputs[q];
    }
    outs[k] = o->emit.stamp;
    what[k++] = "--stamp";
    int rc = ndf_check_clobber(outs, what, k, ins, m, err);
    free(outs), free(what), free(ins);
    return rc;
}

/* Every prepared output in place: the C files, then the depfiles, then the stamp. Each step is a
 * rename, so a run killed between them leaves whole files only, and the stamp, last, is older than
 * what it covers: the build tool runs ndgen again. */
static int put_in_place(spec_run *runs, int n, const gen_opts *o, nd_error *err)
{
    int rc = check_clobber(runs, n, o, err);
    for (int i = 0; i < n && !rc; ++i) {
        int changed = 0;
        for (int p = 0; p < runs[i].out.nparts && !rc; ++p) {
            bool c;
            rc = ndf_rename(&runs[i].out.c[p], &c, err);
            changed += c;
        }
        if (!rc && o->stats)
            fprintf(stderr, "ndgen: %s: %d kernels in %.2f ms, %.3f ms per kernel%s\n", runs[i].path,
                    runs[i].out.kernels, runs[i].ms, runs[i].ms / runs[i].out.kernels,
                    changed ? "" : " (output unchanged, not rewritten)");
    }
    for (int i = 0; i < n && !rc; ++i)
        if (runs[i].out.has_depfile)
            rc = ndf_rename(&runs[i].out.depfile, NULL, err);
    if (!rc && o->emit.stamp)
        rc = ndf_touch(o->emit.stamp, err);
    return rc;
}

/* The default --include: NDGEN_REL_INCLUDE beside the executable, when nd_accessor.h is there. */
static int default_include(char *out, size_t len)
{
    if (nd_exe_relative(out, len, NDGEN_REL_INCLUDE)) {
        fprintf(stderr, "ndgen generate: %s; give --include DIR, the folder holding nd_accessor.h\n", out);
        return -1;
    }
    char probe[PATH_MAX + 96];
    snprintf(probe, sizeof probe, "%s/nd_accessor.h", out);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "ndgen generate: no nd_accessor.h in %s, where ndgen looks beside its executable; give "
                        "--include DIR, the folder holding nd_accessor.h (the installed include/ndgen)\n", out);
        return -1;
    }
    return 0;
}

int ndg_generate_main(int argc, char **argv)
{
    gen_opts o = {.include = NULL, .resource_dir = NDGEN_CLANG_RESOURCE_DIR};
    o.emit.line_directives = true;
    int status = 0;
    nd_error err;
    ndg_analyzer *a = NULL;
    if (parse_options(argc, argv, &o, &status))
        return status;
    if (o.env.ntemplate_dirs == 0)
        o.env.template_dirs[o.env.ntemplate_dirs++] = "templates";
    if (o.emit.relocatable && (!o.emit.installed_spec_dir || o.emit.ninstalled_template_dirs == 0)) {
        fprintf(stderr, "ndgen generate: --relocatable needs --installed-spec-dir and --installed-template-dir: "
                        "without them the library could not find its spec and templates once installed\n");
        return 2;
    }
    char include[PATH_MAX + 64];
    if (!o.include && default_include(include, sizeof include))
        return 1;
    if (!o.include)
        o.include = include;
    o.emit.ntemplate_dirs = o.env.ntemplate_dirs;
    o.emit.template_dirs = o.env.template_dirs;
    o.emit.installed_template_dirs = o.installed_template_dirs;
    int nspecs = argc - optind;
    double t0 = now_ms();
    spec_run *runs = ndg_calloc((size_t)(nspecs > 0 ? nspecs : 1), sizeof *runs);
    int rc = check_outputs(&o, nspecs, &err) ||
             ndg_analyzer_open(o.include, o.resource_dir[0] ? o.resource_dir : NULL, o.env.ntemplate_dirs,
                               o.env.template_dirs, &a, &err);
    for (int i = 0; i < nspecs && !rc; ++i) {
        runs[i].path = argv[optind + i];
        rc = generate_one(&runs[i], &o, a, &err);
    }
    ndg_analyzer_close(a);
    if (!rc) /* all or nothing: only when every spec succeeded */
        rc = put_in_place(runs, nspecs, &o, &err);
    for (int i = 0; i < nspecs; ++i)
        ndg_emitted_abort(&runs[i].out); /* whatever is not in place */
    free(runs);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (o.stats)
        fprintf(stderr, "ndgen: %d spec(s) in %.2f ms\n", nspecs, now_ms() - t0);
    return 0;
}

int ndg_registry_main(int argc, char **argv)
{
    const char *output = NULL, *stamp = NULL, *cflags = NULL;
    nd_error err;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt == OPT_HELP) {
            fputs(registry_help, stdout);
            return 0;
        }
        if (opt == OPT_STAMP) {
            stamp = optarg;
            continue;
        }
        if (opt == OPT_KERNEL_CFLAGS) {
            if (strlen(optarg) > NDG_MAX_CFLAGS) {
                fprintf(stderr, "ndgen registry: --kernel-cflags: %zu bytes, more than %d\n", strlen(optarg),
                        NDG_MAX_CFLAGS);
                return 2;
            }
            cflags = optarg;
            continue;
        }
        if (opt != OPT_OUTPUT) {
            fprintf(stderr, "ndgen registry: %s: unknown option; see ndgen registry --help\n", argv[optind - 1]);
            return 2;
        }
        output = optarg;
    }
    if (!output || optind == argc) {
        fprintf(stderr, "ndgen registry: needs --output FILE and at least one spec name\n");
        return 2;
    }
    const char *outs[] = {output, stamp}, *what[] = {"--output", "--stamp"};
    if (ndf_check_clobber(outs, what, 2, NULL, 0, &err) || ndg_emit_registry(output, argv + optind, argc - optind, cflags, &err) ||
        (stamp && ndf_touch(stamp, &err))) {
        fprintf(stderr, "ndgen registry: %s\n", err.msg);
        return 1;
    }
    return 0;
}
