/* core/rng.h: counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
 *
 * A draw is a pure function of (seed, stream, counter): results never depend on
 * thread scheduling, on the number of ranks or on which rank drew first. Use one
 * stream per independent purpose (e.g. stream = household index, or
 * a GT_STREAM_* tag combined with an index) and advance the counter.
 * All functions are static inline and usable from host and device code. */
#ifndef GT_CORE_RNG_H
#define GT_CORE_RNG_H

#include <math.h>
#include <stdint.h>

#include "core/hd.h" /* GT_HD */

/* out = Philox4x32-10(ctr, key) */
static inline GT_HD void gt_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0;
        uint32_t n1 = lo1;
        uint32_t n2 = hi0 ^ c3 ^ k1;
        uint32_t n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Four 32-bit words at block `counter` of (seed, stream). */
static inline GT_HD void gt_rand4(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)stream,
                       (uint32_t)(stream >> 32)};
    gt_philox4x32(ctr, key, out);
}

/* uniform in [0,1) from the top 24 bits (exactly representable as float) */
static inline GT_HD float gt_u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
/* uniform in (0,1] from 53 bits, for double-precision sampling */
static inline GT_HD double gt_u64_to_unit_open(uint32_t hi, uint32_t lo) {
    uint64_t x = ((uint64_t)hi << 21) ^ (uint64_t)(lo >> 11);
    return ((double)(x & ((1ull << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
}

/* Sequential generator over one (seed, stream): buffers one Philox block. */
typedef struct gt_rng {
    uint64_t seed, stream, counter; /* counter = next block to draw */
    uint32_t buf[4];
    int idx; /* next word in buf; 4 = empty */
} gt_rng;

static inline GT_HD void gt_rng_init(gt_rng *r, uint64_t seed, uint64_t stream) {
    r->seed = seed; r->stream = stream; r->counter = 0; r->idx = 4;
}
/* Jump to block `counter` (each block yields four 32-bit words). */
static inline GT_HD void gt_rng_seek(gt_rng *r, uint64_t counter) { r->counter = counter; r->idx = 4; }
static inline GT_HD uint32_t gt_rng_u32(gt_rng *r) {
    if (r->idx >= 4) { gt_rand4(r->seed, r->stream, r->counter++, r->buf); r->idx = 0; }
    return r->buf[r->idx++];
}
static inline GT_HD uint64_t gt_rng_u64(gt_rng *r) {
    uint64_t hi = gt_rng_u32(r);
    return (hi << 32) | gt_rng_u32(r);
}
/* uniform float in [0,1) */
static inline GT_HD float gt_rng_uniform(gt_rng *r) { return gt_u32_to_unit(gt_rng_u32(r)); }
/* uniform double in (0,1] */
static inline GT_HD double gt_rng_uniform_d(gt_rng *r) {
    uint32_t hi = gt_rng_u32(r), lo = gt_rng_u32(r);
    return gt_u64_to_unit_open(hi, lo);
}
/* uniform integer in [0, n) (Lemire's multiply-shift; bias < 2^-32 * n) */
static inline GT_HD uint32_t gt_rng_below(gt_rng *r, uint32_t n) {
    return (uint32_t)(((uint64_t)gt_rng_u32(r) * n) >> 32);
}
/* standard normal (Box-Muller on two fresh uniforms; no cached second value so
 * the stream position stays a simple function of the number of draws) */
static inline GT_HD double gt_rng_normal(gt_rng *r) {
    double u1 = gt_rng_uniform_d(r), u2 = gt_rng_uniform_d(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
/* exponential with the given mean */
static inline GT_HD double gt_rng_exponential(gt_rng *r, double mean) { return -mean * log(gt_rng_uniform_d(r)); }

/* Stream tags: combine with an index as gt_stream(GT_STREAM_X, i). */
enum {
    GT_STREAM_INIT = 1,      /* parameter initialisation */
    GT_STREAM_SHUFFLE = 2,   /* per-epoch window order */
    GT_STREAM_DROPOUT = 3,
    GT_STREAM_AUGMENT = 4,   /* nilm activation augmentation, per household (file index) */
    GT_STREAM_SYNTH_NILM = 16,
    GT_STREAM_SYNTH_PDM = 17,
    GT_STREAM_TEST = 255
};
static inline GT_HD uint64_t gt_stream(uint32_t tag, uint32_t index) { return ((uint64_t)tag << 32) | index; }

#endif
