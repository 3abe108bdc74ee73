/*
 * nd_dist.h - the public header of library nd_dist: the ND distribution model and the ways users state
 * distributions. Three parts, each of which includes the one before it:
 *
 *   nd_dist/model.h     the model: where every page lives (docs/distribution.md), errors, op contracts;
 *                       all a kernel needs, so nd_accessor.h includes only this part
 *   nd_dist/sharding.h  mesh-level shardings: einshard, JAX PartitionSpec, DTensor placements
 *   nd_dist/flags.h     a distribution from command-line flags or a spec's table (ND_DIST_FLAGS)
 */
#ifndef ND_DIST_H
#define ND_DIST_H

#include "nd_dist/flags.h"

#endif
