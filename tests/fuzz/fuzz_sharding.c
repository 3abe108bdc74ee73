/*
 * fuzz_sharding.c - libFuzzer target for the sharding parsers (einshard, mesh, PartitionSpec,
 * placements) and the placement of what they accept.
 *
 * Input: byte 0 picks the notation, byte 1 the rank, byte 2 the core count, the rest is the text
 * (for PartitionSpec and placements, "mesh|spec"). Beyond not crashing, every accepted sharding must
 * survive the round trip through each notation that can express it, and its placement must put every
 * shard of every copy on a distinct core; a violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_dist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(bool ok, const char *what, const char *text)
{
    if (!ok) {
        fprintf(stderr, "fuzz_sharding: %s: %s\n", what, text);
        abort();
    }
}

/* Each notation that prints the sharding parses back to it. */
static void round_trip(const nd_sharding *sh)
{
    char text[1024], mesh[512];
    nd_sharding back;
    nd_error err;
    nd_mesh_format(sh, mesh, sizeof mesh);
    if (nd_einshard_format(sh, text, sizeof text, &err) >= 0)
        require(nd_einshard_parse(text, sh->rank, nd_sharding_devices(sh), &back, &err) == 0 &&
                    nd_sharding_equal(sh, &back), "einshard round trip", text);
    if (nd_pspec_format(sh, text, sizeof text, &err) >= 0)
        require(nd_mesh_parse(mesh, &back, &err) == 0 && nd_pspec_parse(text, sh->rank, &back, &err) == 0 &&
                    nd_sharding_equal(sh, &back), "PartitionSpec round trip", text);
    if (nd_placements_format(sh, text, sizeof text, &err) >= 0)
        require(nd_mesh_parse(mesh, &back, &err) == 0 && nd_placements_parse(text, sh->rank, &back, &err) == 0 &&
                    nd_sharding_equal(sh, &back), "placements round trip", text);
}

/* Places the sharding on a row of cores over a small shape; no core may appear twice. */
static void place(const nd_sharding *sh, int rank)
{
    int64_t devices = nd_sharding_devices(sh);
    if (devices > ND_MAX_GRID)
        return;
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    s.rank = rank;
    for (int i = 0; i < rank; ++i)
        s.shape[i] = 3 + i;
    if (nd_sharding_dist(sh, &s, (int)devices, 1, false, &d, &err))
        return;
    require(d.list_cores <= devices && d.list_cores == d.spec.replicas * d.layout.ncores, "core count", "");
    require(d.layout.num_shards == d.layout.ncores, "one shard per core", "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size > 512)
        return 0;
    int which = data[0] % 4, rank = 1 + data[1] % ND_MAX_RANK;
    int64_t devices = 1 + data[2];
    char text[512];
    memcpy(text, data + 3, size - 3);
    text[size - 3] = '\0';
    nd_sharding sh;
    nd_error err;
    int rc;
    char *bar = strchr(text, '|');
    if (which == 0) {
        rc = nd_einshard_parse(text, rank, devices, &sh, &err);
    } else if (which == 1) {
        rc = nd_mesh_parse(text, &sh, &err);
        sh.rank = rank; /* a bare mesh: every axis replicates */
    } else if (!bar) {
        return 0;
    } else {
        *bar = '\0';
        rc = nd_mesh_parse(text, &sh, &err);
        if (rc == 0)
            rc = which == 2 ? nd_pspec_parse(bar + 1, rank, &sh, &err) : nd_placements_parse(bar + 1, rank, &sh, &err);
    }
    if (rc == 0) {
        require(nd_sharding_check(&sh, &err) == 0, "accepted an invalid sharding", err.msg);
        round_trip(&sh);
        place(&sh, rank);
    } else {
        require(err.msg[0] != '\0', "failed without a message", text);
    }
    return 0;
}
