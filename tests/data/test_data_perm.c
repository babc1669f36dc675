/* The on-the-fly permutation (data/permute.h): a bijection of [0, n) for every
 * n tried (1 .. 300 and larger sizes around powers of two), a pure function of
 * (seed, stream, counter), different for different counters, and not far from
 * uniform (where element 0 lands over many epochs). */
#include <stdlib.h>
#include <string.h>

#include "data/permute.h"
#include "test.h"

static int is_bijection(uint64_t n, uint64_t seed, uint64_t counter) {
    uint8_t *seen = calloc(n, 1);
    gt_perm p;
    gt_perm_init(&p, n, seed, 7, counter);
    int ok = 1;
    for (uint64_t i = 0; i < n && ok; i++) {
        uint64_t y = gt_perm_at(&p, i);
        if (y >= n || seen[y]) ok = 0;
        else seen[y] = 1;
    }
    free(seen);
    return ok;
}

int main(void) {
    int bad = 0;
    for (uint64_t n = 1; n <= 300; n++) bad += !is_bijection(n, 42, n % 5);
    const uint64_t big[] = {1023, 1024, 1025, 4097, 65535, 65536, 65537, (1u << 20) + 3};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) bad += !is_bijection(big[i], 1, 3);
    TEST_EQ_INT(bad, 0);

    /* pure: same (seed, stream, counter) -> same order; other counter/seed -> other order */
    gt_perm a, b, c, d;
    gt_perm_init(&a, 1000, 5, 2, 0);
    gt_perm_init(&b, 1000, 5, 2, 0);
    gt_perm_init(&c, 1000, 5, 2, 1);
    gt_perm_init(&d, 1000, 6, 2, 0);
    int same_ab = 1, diff_ac = 0, diff_ad = 0, fixed = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t ya = gt_perm_at(&a, i);
        same_ab &= ya == gt_perm_at(&b, i);
        diff_ac += ya != gt_perm_at(&c, i);
        diff_ad += ya != gt_perm_at(&d, i);
        fixed += ya == i;
    }
    TEST_CHECK(same_ab);
    TEST_CHECK(diff_ac > 900);
    TEST_CHECK(diff_ad > 900);
    TEST_CHECK(fixed < 10); /* a random permutation has ~1 fixed point */

    /* uniformity: where entry 0 of a 10-element permutation goes, over 20000 epochs */
    int hist[10] = {0};
    for (uint64_t e = 0; e < 20000; e++) {
        gt_perm p;
        gt_perm_init(&p, 10, 99, 2, e);
        hist[gt_perm_at(&p, 0)]++;
    }
    double chi2 = 0;
    for (int k = 0; k < 10; k++) chi2 += (hist[k] - 2000.0) * (hist[k] - 2000.0) / 2000.0;
    fprintf(stderr, "position of entry 0 over 20000 epochs: chi2 = %.2f (9 dof)\n", chi2);
    TEST_CHECK(chi2 < 40.0); /* p < 1e-5 for a uniform draw */
    TEST_DONE();
}
