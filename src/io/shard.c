/* io/shard.c: balanced deterministic item-to-rank assignment (see shard.h). */
#include "io/shard.h"

#include <stdlib.h>

#include "core/check.h"

typedef struct {
    int64_t w;
    int i;
} item_w;

static int by_weight_desc(const void *a, const void *b) {
    const item_w *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return x->i - y->i;
}

int64_t gt_shard_assign_lpt(const int64_t *weight, int n_items, int n_ranks, int *owner) {
    GT_ASSERT(n_ranks > 0 && n_items >= 0);
    item_w *it = GT_MALLOC(sizeof(item_w) * (size_t)(n_items > 0 ? n_items : 1));
    for (int i = 0; i < n_items; i++) it[i] = (item_w){weight[i], i};
    qsort(it, (size_t)n_items, sizeof(item_w), by_weight_desc);
    int64_t *load = GT_CALLOC((size_t)n_ranks, sizeof(int64_t));
    /* linear scan for the least loaded rank: n_ranks is small (processes) */
    for (int k = 0; k < n_items; k++) {
        int best = 0;
        for (int r = 1; r < n_ranks; r++)
            if (load[r] < load[best]) best = r;
        owner[it[k].i] = best;
        load[best] += it[k].w;
    }
    int64_t mx = 0;
    for (int r = 0; r < n_ranks; r++)
        if (load[r] > mx) mx = load[r];
    free(load);
    free(it);
    return mx;
}

/* Greedy left-to-right fill with capacity cap: number of ranks needed. */
static int ranks_needed(const int64_t *w, int n, int64_t cap) {
    int ranks = 1;
    int64_t cur = 0;
    for (int i = 0; i < n; i++) {
        if (cur + w[i] > cap && cur > 0) {
            ranks++;
            cur = 0;
        }
        cur += w[i];
    }
    return ranks;
}

int64_t gt_shard_assign_contiguous(const int64_t *weight, int n_items, int n_ranks, int *owner) {
    GT_ASSERT(n_ranks > 0 && n_items >= 0);
    if (n_items == 0) return 0;
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < n_items; i++) {
        if (weight[i] > lo) lo = weight[i];
        hi += weight[i];
    }
    while (lo < hi) { /* smallest cap that fits in n_ranks */
        int64_t mid = lo + (hi - lo) / 2;
        if (ranks_needed(weight, n_items, mid) <= n_ranks)
            hi = mid;
        else
            lo = mid + 1;
    }
    /* Fill with cap = lo, but never leave later ranks without items when there
     * are items left for them: a rank also closes when the items remaining equal
     * the ranks remaining. */
    int r = 0;
    int64_t cur = 0, mx = 0;
    for (int i = 0; i < n_items; i++) {
        int items_left = n_items - i, ranks_left = n_ranks - r - 1;
        if (cur > 0 && r < n_ranks - 1 && (cur + weight[i] > lo || items_left <= ranks_left)) {
            r++;
            cur = 0;
        }
        owner[i] = r;
        cur += weight[i];
        if (cur > mx) mx = cur;
    }
    return mx;
}

int64_t gt_shard_assign(const int64_t *weight, int n_items, int n_ranks, int *owner) {
    if (n_items == 0) return 0;
    int *alt = GT_MALLOC(sizeof(int) * (size_t)n_items);
    int64_t m_lpt = gt_shard_assign_lpt(weight, n_items, n_ranks, alt);
    int64_t m_con = gt_shard_assign_contiguous(weight, n_items, n_ranks, owner);
    int64_t m = m_con;
    if ((double)m_con > 1.02 * (double)m_lpt) {
        for (int i = 0; i < n_items; i++) owner[i] = alt[i];
        m = m_lpt;
    }
    free(alt);
    return m;
}

double gt_shard_imbalance(const int64_t *weight, const int *owner, int n_items, int n_ranks,
                          int64_t *load) {
    int64_t total = 0, mx = 0;
    for (int r = 0; r < n_ranks; r++) load[r] = 0;
    for (int i = 0; i < n_items; i++) {
        GT_ASSERT(owner[i] >= 0 && owner[i] < n_ranks);
        load[owner[i]] += weight[i];
        total += weight[i];
    }
    for (int r = 0; r < n_ranks; r++)
        if (load[r] > mx) mx = load[r];
    if (total == 0) return 1.0;
    return (double)mx / ((double)total / n_ranks);
}
