/*
 * oracle.h - an independent statement of ND-sharded placement, element by element, from first
 * principles, for checking the model. It shares no code with runtime/dist: it reads only the spec
 * as a user states it.
 */
#ifndef ND_ORACLE_H
#define ND_ORACLE_H

#include "nd_dist.h"

typedef struct oracle {
    int rank;
    int64_t shape[ND_MAX_RANK], page[ND_MAX_RANK], shard[ND_MAX_RANK], grid[ND_MAX_RANK];
    int64_t esize, page_elems, pages_per_shard, nshards, ncores;
    nd_core *cores; /* the core list in assignment order */
    nd_strategy strategy;
} oracle;

/* Where one element lives: its core (index in the core list and coordinates) and its byte offset in
 * that core's buffer. */
typedef struct oracle_place {
    int64_t core;
    nd_core xy;
    int64_t byte;
} oracle_place;

void oracle_init(oracle *o, const nd_dist_spec *spec, int grid_x, int grid_y);
void oracle_free(oracle *o);
oracle_place oracle_element(const oracle *o, const int64_t *x);
/* The shard id that holds element x. */
int64_t oracle_shard(const oracle *o, const int64_t *x);
int64_t oracle_shard_core(const oracle *o, int64_t shard);
int64_t oracle_elements(const oracle *o);

/* A random valid case: ranks 1..max_rank, uneven edges, every page kind, both orientations and
 * strategies, L1 and DRAM, whole grids and core-range lists. desc receives the equivalent
 * 'ndgen show' flags, to reproduce a failure by hand. */
void oracle_random_spec(uint64_t *rng, int max_rank, int64_t max_elems, nd_dist_spec *spec, int *grid_x,
                        int *grid_y, char *desc, size_t desc_len);

#endif
