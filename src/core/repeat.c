/* core/repeat.c: gt_repeats_i64 (core/repeat.h). */
#include "core/repeat.h"

#include <stdlib.h>

#include "core/check.h"

typedef struct {
    int64_t v, i;
} pair;

static int pair_cmp(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int64_t gt_repeats_i64(const int64_t *v, int64_t n, int64_t *first, int64_t *again) {
    if (n < 2) return 0;
    pair *p = GT_ALLOC_ARRAY(n, sizeof *p, "ids to check for repeats");
    for (int64_t i = 0; i < n; i++) p[i] = (pair){v[i], i};
    qsort(p, (size_t)n, sizeof *p, pair_cmp);
    /* within a run of equal values the indices ascend: the run's second entry is
     * its first repeat, the one with the smallest index over all runs is the earliest */
    int64_t n_rep = 0, best_first = -1, best_again = -1;
    for (int64_t k = 1; k < n; k++) {
        if (p[k].v != p[k - 1].v) continue;
        n_rep++;
        if (k >= 2 && p[k - 2].v == p[k].v) continue; /* not the run's second entry */
        if (best_again < 0 || p[k].i < best_again) best_again = p[k].i, best_first = p[k - 1].i;
    }
    free(p);
    if (first) *first = best_first;
    if (again) *again = best_again;
    return n_rep;
}
