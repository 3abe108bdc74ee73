/* ndgen.h - the generator's internal interface: one section per source file. */
#ifndef NDGEN_H
#define NDGEN_H

#include <stdbool.h>
#include <stdio.h>

#include "nd_dist.h"

/* ---- dist_flags.c: a distribution from command-line flags, shared by every subcommand. */
typedef struct ndg_dist_flags {
    const char *shape, *shard, *grid, *page, *tile, *orientation, *strategy, *dtype, *cores, *buffer,
        *banks, *l1_size, *dram_bank_size;
    bool interleaved;
} ndg_dist_flags;

/* Validates every flag and the resulting distribution, including that it fits its memory. */
int ndg_dist_from_flags(const ndg_dist_flags *f, nd_dist *out, nd_error *err);
/* The --help lines for the flags above. */
extern const char ndg_dist_flags_help[];

/* ---- output.c: files written whole or not at all. */
typedef struct ndg_output {
    char *path;  /* final path; NULL for stdout */
    char *tmp;   /* temporary file beside it */
    FILE *fp;
} ndg_output;

/* Opens a temporary file beside path (or stdout when path is NULL or "-"). */
int ndg_output_open(ndg_output *out, const char *path, nd_error *err);
/* Renames the temporary file over path, unless path already holds the same bytes: then the
 * temporary file is removed and path keeps its timestamp. Sets *changed when given. */
int ndg_output_commit(ndg_output *out, bool *changed, nd_error *err);
/* Removes the temporary file; path is untouched. */
void ndg_output_abort(ndg_output *out);

/* ---- show.c and show_svg.c: ndgen show. */
int ndg_show_main(int argc, char **argv);
void ndg_show_text(FILE *fp, const nd_dist *d);
void ndg_show_json(FILE *fp, const nd_dist *d);
int ndg_show_svg(FILE *fp, const nd_dist *d, nd_error *err);

#endif
