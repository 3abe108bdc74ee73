/* layout.c - page-domain placement: strides, rank squeezing, the per-core page iterator and the
 * closed forms of data pages per core. */
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- data pages, in closed form */

/*
 * Along dim i a shard position q holds e_i(q) pages of data: S_i for the g_i - 1 full positions,
 * and r_i = T_i - (g_i - 1) S_i at the edge. A shard holds prod_i e_i(q_i). Every partial sum below
 * counts data pages of some set of shards, so it is at most vol(T) and never overflows.
 */
static int64_t edge_pages(const nd_layout *l, int i) { return l->pages[i] - (l->grid[i] - 1) * l->shard[i]; }

int64_t nd_layout_data_prefix(const nd_layout *l, int64_t n)
{
    if (n <= 0)
        return 0;
    if (n >= l->num_shards)
        return l->num_pages;
    /* Shards [0, n) split by n's digits q_i: for each i, the shards whose digits agree with n above i
     * and are below q_i at i form a box of q_i full positions (all full: q_i < g_i) times whole dims
     * below i, inside the data the agreeing prefix digits hold. */
    int64_t total = 0, pre = 1;
    for (int i = 0; i < l->rank; ++i) {
        int64_t q = n / l->grid_stride[i] % l->grid[i];
        total += pre * (q * l->shard[i]) * l->page_stride[i];
        pre *= q == l->grid[i] - 1 ? edge_pages(l, i) : l->shard[i];
    }
    return total;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/*
 * One dim of the round-robin recurrence over residues x = shard id mod n (w = gs_i mod n, L = g_i - 1):
 *   out[x] = S * sum_{q < L} in[x - q w] + r * in[x - L w].
 * x - q w walks a cycle of p = n / gcd(w, n) residues; the L-term sum is L / p whole cycles plus a
 * window of L % p, read from the cycle's prefix sums pre[0..p].
 */
static void residue_dim(const int64_t *in, int64_t *out, int64_t *pre, int64_t n, int64_t w, int64_t L, int64_t S,
                        int64_t r)
{
    int64_t h = gcd64(w, n), p = n / h, full = L / p, rem = L % p;
    for (int64_t x0 = 0; x0 < h; ++x0) {
        int64_t x = x0;
        pre[0] = 0;
        for (int64_t j = 0; j < p; ++j, x = x >= w ? x - w : x + n - w)
            pre[j + 1] = pre[j] + in[x];
        x = x0;
        for (int64_t j = 0; j < p; ++j, x = x >= w ? x - w : x + n - w) {
            int64_t e = j + rem, k = e < p ? e : e - p; /* k: the cycle position of x - L w */
            int64_t window = e <= p ? pre[e] - pre[j] : pre[p] - pre[j] + pre[e - p];
            out[x] = S * (full * pre[p] + window) + r * (pre[k + 1] - pre[k]);
        }
    }
}

/* in[x]: data pages of the shards over dims > i whose id (times their stride) is x mod n. */
static void data_round_robin(const nd_layout *l, int64_t *v, int64_t *tmp, int64_t *pre)
{
    int64_t n = l->ncores;
    memset(v, 0, (size_t)n * sizeof *v);
    v[0] = 1;
    for (int i = l->rank - 1; i >= 0; --i) {
        residue_dim(v, tmp, pre, n, l->grid_stride[i] % n, l->grid[i] - 1, l->shard[i], edge_pages(l, i));
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

int nd_layout_data_pages(const nd_layout *l, int64_t *per_core)
{
    int64_t n = l->ncores;
    if (l->strategy == ND_CONTIGUOUS) {
        for (int64_t c = 0; c < n; ++c) {
            int64_t lo = c * l->shards_per_core, k = nd_layout_core_shards(l, c);
            per_core[c] = k ? nd_layout_data_prefix(l, lo + k) - nd_layout_data_prefix(l, lo) : 0;
        }
        return 0;
    }
    int64_t *tmp = malloc((size_t)n * sizeof *tmp), *pre = malloc((size_t)(n + 1) * sizeof *pre);
    if (tmp && pre)
        data_round_robin(l, per_core, tmp, pre);
    int rc = tmp && pre ? 0 : -1;
    free(tmp);
    free(pre);
    return rc;
}
