/* nn/ops/dropout.h: the dropout mask, written once for the CPU ops and the
 * CUDA kernels.
 *
 * Inverted dropout with probability p: in training an element is kept with
 * probability 1 - p and multiplied by scale = 1 / (1 - p), else set to 0; at
 * evaluation nothing is applied (the expected activation is unchanged).
 *
 * The mask is a pure function of integers, never a generator's state:
 *
 *   keep(seed, step, sample, elem) = top 24 bits of
 *       splitmix64(base + (elem + 1) * golden)  >=  threshold
 *   base = mix(mix(mix(seed) ^ step) ^ sample)
 *
 * seed the run's train.seed, step the optimizer step the mask belongs to,
 * sample a stable id of the training window (its household's position in the
 * file and its first row: the same on any number of ranks, in any
 * micro-batch), elem the element within the sample's activation row. So a
 * resumed run draws the masks an uninterrupted one draws, P ranks draw the
 * masks one rank draws, and the CUDA kernel (nn/ops/cuda/dense.cu) draws the
 * masks the CPU draws (tests/nn/test_s2p_cnn.c checks the statistics and the
 * determinism; the same functions run on the device).
 *
 * threshold = round(p * 2^24) as an integer: the comparison is exact integer
 * math on every device. scale is computed once on the host (gt_dropout_scale)
 * and passed to the kernels, so the product is the same float multiply. */
#ifndef GT_NN_OPS_DROPOUT_H
#define GT_NN_OPS_DROPOUT_H

#include <stdint.h>

#include "core/hd.h" /* GT_HD */

#define GT_DROPOUT_GOLDEN 0x9E3779B97F4A7C15ull

/* splitmix64's output function (Steele, Lea, Flood 2014): a bijection with
 * full avalanche. */
static inline GT_HD uint64_t gt_dropout_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The per-sample key of one training step: everything but the element. */
static inline GT_HD uint64_t gt_dropout_base(uint64_t seed, uint64_t step, uint64_t sample) {
    uint64_t h = gt_dropout_mix(seed + GT_DROPOUT_GOLDEN);
    h = gt_dropout_mix(h ^ step);
    return gt_dropout_mix(h ^ sample);
}

/* A stable id of a window: its item's position in the file and its first row. */
static inline GT_HD uint64_t gt_dropout_sample_id(int64_t file_index, int64_t start_row) {
    return gt_dropout_mix(((uint64_t)file_index << 40) ^ (uint64_t)start_row);
}

/* p in [0, 1) -> the integer threshold on 24 uniform bits. */
static inline uint32_t gt_dropout_threshold(float p) {
    if (!(p > 0.0f)) return 0;
    double t = (double)p * 16777216.0 + 0.5;
    return t >= 16777216.0 ? 16777215u : (uint32_t)t;
}
static inline float gt_dropout_scale(float p) { return p > 0.0f ? 1.0f / (1.0f - p) : 1.0f; }

/* 1: element elem of the sample with key `base` is kept. */
static inline GT_HD int gt_dropout_keep(uint64_t base, uint64_t elem, uint32_t threshold) {
    uint64_t h = gt_dropout_mix(base + (elem + 1) * GT_DROPOUT_GOLDEN);
    return (uint32_t)(h >> 40) >= threshold;
}

/* The factor an element is multiplied by: scale or 0 (forward and backward). */
static inline GT_HD float gt_dropout_factor(uint64_t base, uint64_t elem, uint32_t threshold, float scale) {
    return gt_dropout_keep(base, elem, threshold) ? scale : 0.0f;
}

#endif
