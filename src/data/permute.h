/* data/permute.h: a pseudo-random permutation of [0, n) evaluated one entry at
 * a time, in O(1) memory (internal to data/, exposed for tests).
 *
 * A balanced 8-round Feistel network on the smallest even number of bits b with
 * 2^b >= n, restricted to [0, n) by cycle walking (apply again while the value
 * is >= n; since 2^b < 4n, on average fewer than 4 applications). Every
 * Feistel network is a bijection of [0, 2^b) whatever its round function, and
 * cycle walking keeps the restriction a bijection of [0, n). (8 rounds rather
 * than 4: on tiny domains 4 rounds of 2-bit halves were measurably non-uniform.)
 * The eight round keys come from Philox (core/rng.h) at (seed, stream,
 * 4*counter .. 4*counter+3),
 * so the permutation is a pure function of (n, seed, stream, counter): the same
 * on every rank, thread and run. The round function is the splitmix64
 * finaliser of (R xor key). */
#ifndef GT_DATA_PERMUTE_H
#define GT_DATA_PERMUTE_H

#include <stdint.h>

#include "core/rng.h"

typedef struct gt_perm {
    uint64_t n;      /* domain size */
    int half_bits;   /* bits of each Feistel half */
    uint64_t mask;   /* (1 << half_bits) - 1 */
    uint64_t key[8]; /* round keys */
} gt_perm;

static inline void gt_perm_init(gt_perm *p, uint64_t n, uint64_t seed, uint64_t stream, uint64_t counter) {
    int bits = 2;
    while (bits < 62 && (UINT64_C(1) << bits) < n) bits++;
    if (bits & 1) bits++;
    p->n = n;
    p->half_bits = bits / 2;
    p->mask = (UINT64_C(1) << p->half_bits) - 1;
    uint32_t r[16];
    for (int i = 0; i < 4; i++) gt_rand4(seed, stream, 4 * counter + (uint64_t)i, r + 4 * i);
    for (int i = 0; i < 8; i++) p->key[i] = ((uint64_t)r[2 * i] << 32) | r[2 * i + 1];
}

static inline uint64_t gt_perm_mix(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* One pass of the Feistel network over [0, 2^(2*half_bits)). */
static inline uint64_t gt_perm_feistel(const gt_perm *p, uint64_t x) {
    uint64_t l = x >> p->half_bits, r = x & p->mask;
    for (int i = 0; i < 8; i++) {
        uint64_t nl = r;
        r = l ^ (gt_perm_mix(r ^ p->key[i]) & p->mask);
        l = nl;
    }
    return (l << p->half_bits) | r;
}

/* The i-th entry of the permutation, 0 <= i < n. */
static inline uint64_t gt_perm_at(const gt_perm *p, uint64_t i) {
    uint64_t y = i;
    do y = gt_perm_feistel(p, y);
    while (y >= p->n);
    return y;
}

#endif
