/* Unit test of the item-to-rank assignment (io/shard.h): every item assigned
 * exactly once, the list-scheduling bound, near-perfect balance on many
 * similar items, contiguity when it costs nothing, LPT when contiguity would be
 * poor, determinism, more ranks than items. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "io/shard.h"
#include "test.h"

static void check_plan(const int64_t *w, int n, int P, const int *owner, double max_imb) {
    int64_t *load = calloc((size_t)P, sizeof(int64_t));
    int64_t total = 0, wmax = 0;
    for (int i = 0; i < n; i++) {
        TEST_CHECK(owner[i] >= 0 && owner[i] < P);
        total += w[i];
        if (w[i] > wmax) wmax = w[i];
    }
    double imb = gt_shard_imbalance(w, owner, n, P, load);
    int64_t sum = 0, mx = 0;
    for (int r = 0; r < P; r++) {
        sum += load[r];
        if (load[r] > mx) mx = load[r];
    }
    TEST_EQ_INT(sum, total); /* each item counted once */
    TEST_CHECK((double)mx <= (double)total / P + (double)wmax + 1e-9);
    if (max_imb > 0) TEST_CHECK(imb <= max_imb);
    if (max_imb > 0 && imb > max_imb) fprintf(stderr, "n=%d P=%d imbalance %.4f > %.4f\n", n, P, imb, max_imb);
    free(load);
}

int main(void) {
    enum { N = 1200 };
    int64_t w[N];
    int owner[N], owner2[N];
    gt_rng r;
    gt_rng_init(&r, 123, gt_stream(GT_STREAM_TEST, 1));
    /* households of 0.75..1.0 x nominal rows, as the NILM generator makes them */
    for (int i = 0; i < N; i++) w[i] = 10800 + (int64_t)gt_rng_below(&r, 3600);
    for (int P = 1; P <= 16; P *= 2) {
        gt_shard_assign(w, N, P, owner);
        check_plan(w, N, P, owner, 1.0 + 1.0 / (N / P) + 1e-9); /* within one item of perfect */
        gt_shard_assign(w, N, P, owner2);
        TEST_CHECK(memcmp(owner, owner2, sizeof owner) == 0); /* deterministic */
    }
    /* similar items: the contiguous plan is within 2% and is chosen (owner non-decreasing) */
    gt_shard_assign(w, N, 4, owner);
    int monotone = 1;
    for (int i = 1; i < N; i++) monotone &= owner[i] >= owner[i - 1];
    TEST_CHECK(monotone);

    /* skewed sizes where contiguity is poor: 4 big items first, then many small */
    int64_t s[40];
    for (int i = 0; i < 40; i++) s[i] = i < 4 ? 1000 : 100;
    int os[40];
    int64_t m = gt_shard_assign(s, 40, 4, os);
    int64_t m_lpt = gt_shard_assign_lpt(s, 40, 4, owner2);
    TEST_EQ_INT(m_lpt, 1900); /* 4000 + 3600 = 7600 over 4 ranks */
    TEST_CHECK(m <= m_lpt * 1.02);
    check_plan(s, 40, 4, os, 1.0 + 1e-9);

    /* a case where LPT beats the best contiguous split by far */
    int64_t z[8] = {10, 1, 10, 1, 10, 1, 10, 1};
    int64_t mc = gt_shard_assign_contiguous(z, 8, 4, owner);
    int64_t ml = gt_shard_assign_lpt(z, 8, 4, owner2);
    TEST_EQ_INT(ml, 11);
    TEST_CHECK(mc >= 11);
    int oz[8];
    TEST_EQ_INT(gt_shard_assign(z, 8, 4, oz), 11);
    check_plan(z, 8, 4, oz, 0);

    /* LPT ties: equal weights go round-robin from rank 0, lower index first */
    int64_t e[6] = {5, 5, 5, 5, 5, 5};
    gt_shard_assign_lpt(e, 6, 4, owner);
    int want[6] = {0, 1, 2, 3, 0, 1};
    for (int i = 0; i < 6; i++) TEST_EQ_INT(owner[i], want[i]);

    /* more ranks than items: every item once, some ranks empty, max = largest item */
    int64_t few[3] = {7, 9, 8};
    int of[3];
    TEST_EQ_INT(gt_shard_assign(few, 3, 8, of), 9);
    TEST_CHECK(of[0] != of[1] && of[1] != of[2] && of[0] != of[2]);
    check_plan(few, 3, 8, of, 0);

    /* the contiguous optimum is optimal: compare with brute force on small cases */
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)gt_rng_below(&r, 9), P = 1 + (int)gt_rng_below(&r, 4);
        int64_t ww[9];
        for (int i = 0; i < n; i++) ww[i] = 1 + gt_rng_below(&r, 50);
        int oc[9];
        int64_t got = gt_shard_assign_contiguous(ww, n, P, oc);
        int64_t best = INT64_MAX; /* all ways to cut n items into <= P pieces: bitmask of cuts */
        for (int mask = 0; mask < (1 << (n - 1)); mask++) {
            if (__builtin_popcount(mask) > P - 1) continue;
            int64_t cur = 0, mx = 0;
            for (int i = 0; i < n; i++) {
                cur += ww[i];
                if (cur > mx) mx = cur;
                if (i < n - 1 && (mask >> i & 1)) cur = 0;
            }
            if (mx < best) best = mx;
        }
        TEST_EQ_INT(got, best);
        for (int i = 1; i < n; i++) TEST_CHECK(oc[i] >= oc[i - 1]);
        check_plan(ww, n, P, oc, 0);
    }
    TEST_DONE();
}
