/* layout.c - page-domain placement: strides, rank squeezing and the per-core page iterator. */
#include "nd_dist.h"
#include "dist_internal.h"

void nd_layout_finish(nd_layout *l)
{
    int64_t gs = 1, ss = 1, ps = 1;
    for (int i = l->rank - 1; i >= 0; --i) {
        l->grid[i] = ceil_div(l->pages[i], l->shard[i]);
        l->grid_stride[i] = gs;
        l->shard_stride[i] = ss;
        l->page_stride[i] = ps;
        gs *= l->grid[i];
        ss *= l->shard[i];
        ps *= l->pages[i];
    }
    l->num_shards = gs;
    l->shard_pages = ss;
    l->num_pages = ps;
    l->shards_per_core = ceil_div(l->num_shards, l->ncores);
}

/*
 * Can outer dim o and inner dim j merge into one dim without moving any page? With c = c_o*T_j + c_j:
 *   S_j == T_j:             the shard spans j whole, so S = S_o*S_j keeps shard and in-shard index;
 *   S_o == 1, S_j | T_j:    shards tile j exactly, so S = S_j and shard ids run on across o;
 *   S_o == 1, T_o == 1:     o has one coordinate and contributes nothing.
 * vol(S) is unchanged in every case, so offsets (slot * vol(S) + in) are unchanged too.
 */
static bool merge_dims(int64_t *T_o, int64_t *S_o, int64_t T_j, int64_t S_j)
{
    if (S_j == T_j) {
        *S_o *= S_j;
    } else if (*S_o == 1 && (T_j % S_j == 0 || *T_o == 1)) {
        *S_o = S_j;
    } else {
        return false;
    }
    *T_o *= T_j;
    return true;
}

void nd_layout_squeeze(const nd_layout *in, nd_layout *out)
{
    *out = *in;
    int r = 0;
    for (int j = 1; j < in->rank; ++j) {
        if (!merge_dims(&out->pages[r], &out->shard[r], in->pages[j], in->shard[j])) {
            ++r;
            out->pages[r] = in->pages[j];
            out->shard[r] = in->shard[j];
        }
    }
    out->rank = r + 1;
    for (int i = out->rank; i < ND_MAX_RANK; ++i)
        out->pages[i] = out->shard[i] = out->grid[i] = 0;
    nd_layout_finish(out);
}

/* ---------------------------------------------------------------- iterator */

static void iter_enter_shard(nd_page_iter *it)
{
    const nd_layout *l = it->l;
    int64_t s = nd_layout_core_shard(l, it->core, it->slot);
    it->page_id = 0;
    for (int i = 0; i < l->rank; ++i) {
        int64_t q = s / l->grid_stride[i] % l->grid[i];
        it->origin[i] = q * l->shard[i];
        int64_t left = l->pages[i] - it->origin[i];
        it->extent[i] = left < l->shard[i] ? left : l->shard[i];
        it->c[i] = 0;
        it->page_id += it->origin[i] * l->page_stride[i];
    }
    it->offset = it->slot * l->shard_pages;
}

nd_page_iter nd_page_iter_begin(const nd_layout *l, int64_t core)
{
    nd_page_iter it = {.l = l, .core = core, .slot = 0};
    it.nslots = nd_layout_core_shards(l, core);
    it.valid = it.nslots > 0;
    if (it.valid)
        iter_enter_shard(&it);
    return it;
}

void nd_page_iter_carry(nd_page_iter *it)
{
    const nd_layout *l = it->l;
    int i = l->rank - 1;
    while (i >= 0 && it->c[i] >= it->extent[i] - (i == l->rank - 1 ? 0 : 1)) {
        it->c[i] = 0;
        --i;
    }
    if (i < 0) { /* every page of this shard done; every held shard has at least one real page */
        if (++it->slot < it->nslots)
            iter_enter_shard(it);
        else
            it->valid = false;
        return;
    }
    ++it->c[i];
    it->page_id = 0;
    it->offset = it->slot * l->shard_pages;
    for (int k = 0; k < l->rank; ++k) {
        it->page_id += (it->origin[k] + it->c[k]) * l->page_stride[k];
        it->offset += it->c[k] * l->shard_stride[k];
    }
}
