/* notation.c - a sharding from whichever notation a user gave (einshard, a PartitionSpec or DTensor
 * placements over a mesh): the one entry point the front ends call, above the notations' parsers. */
#include "dist_internal.h"

int nd_sharding_parse(const char *einshard, const char *pspec, const char *placements, const char *mesh, int rank,
                      int64_t devices, nd_sharding *out, nd_error *err)
{
    if (!!einshard + !!pspec + !!placements != 1)
        return nd_fail(err, "sharding: give one of einshard, pspec and placements");
    if (einshard && mesh)
        return nd_fail(err, "mesh %s: an einshard expression states its own mesh", mesh);
    if (einshard)
        return nd_einshard_parse(einshard, rank, devices, out, err);
    if (!mesh)
        return nd_fail(err, "%s: a %s needs a mesh, such as dp=2,tp=4", pspec ? pspec : placements,
                       pspec ? "PartitionSpec" : "placements list");
    if (nd_mesh_parse(mesh, out, err))
        return -1;
    return pspec ? nd_pspec_parse(pspec, rank, out, err) : nd_placements_parse(placements, rank, out, err);
}
