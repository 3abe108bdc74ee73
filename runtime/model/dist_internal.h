/* dist_internal.h - helpers shared by the distribution model's sources; not installed. */
#ifndef ND_DIST_INTERNAL_H
#define ND_DIST_INTERNAL_H

#include "nd_dist.h"

/* For a >= 0, b > 0; cannot overflow, unlike (a + b - 1) / b. */
static inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* a * b into *out; false on int64 overflow. */
static inline bool mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Computes grid, strides and totals from rank, pages[], shard[], ncores and strategy. */
void nd_layout_finish(nd_layout *l);

/* "3,7,5" into buf (always terminated). */
const char *nd_format_dims(char *buf, size_t len, const int64_t *dims, int rank);

/* snprintf at buf + *n, keeping *n the length the whole text would have (snprintf's convention). */
__attribute__((format(printf, 4, 5))) void nd_appendf(char *buf, size_t len, int *n, const char *fmt, ...);

/* The key of a stated distribution's fields (nd_dist_key_of without the checked nd_dist). */
void nd_dist_key_of_spec(const nd_dist_spec *s, nd_dist_key *key);

/* Bytes of the name character at p, or 0: an ASCII letter, '_', or a Unicode letter in well-formed
 * UTF-8 (einshard's rule; mesh and PartitionSpec names take the same characters, plus ASCII digits
 * after the first, so that every name one notation prints the others parse). */
int nd_name_char_len(const char *p);
/* Bytes of the character at p, for messages: a well-formed UTF-8 sequence whole, else 1 (0 at the end). */
int nd_char_len(const char *p);
/* The column of at in text, counted in characters from 1 (what an error message names). */
int nd_column(const char *text, const char *at);
/* Whether s is a name einshard takes: one or more letters (Unicode, UTF-8) and '_' (einshard.c). */
bool nd_einshard_name(const char *s);

#endif
