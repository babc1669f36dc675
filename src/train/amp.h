/* train/amp.h: dynamic loss scaling for mixed precision (torch.cuda.amp.GradScaler
 * semantics).
 *
 *   loss' = loss * scale            (the trainer multiplies d loss / d pred by scale)
 *   grads /= scale                  (gt_amp_unscale: also reports non-finite grads)
 *   gt_amp_update(found_inf):
 *     found_inf: the step is SKIPPED, scale *= backoff (0.5), good-step count = 0
 *     otherwise: the step is applied, good steps += 1; after growth_interval
 *                consecutive good steps scale *= growth (2) and the count restarts
 *
 * The scale is a power of two, so scaling and unscaling are exact in fp32 unless
 * they overflow or underflow. A disabled scaler keeps scale 1 and never skips on
 * its own (the trainer's NaN guard still does). Not collective: the trainer
 * unscales the all-reduced gradients, which are identical on every rank, so every
 * rank takes the same decision. Plain data, no allocation. */
#ifndef GT_TRAIN_AMP_H
#define GT_TRAIN_AMP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gt_amp_scaler {
    int enabled;
    float scale;             /* current loss scale (1 when disabled) */
    float growth_factor;     /* 2 */
    float backoff_factor;    /* 0.5 */
    int64_t growth_interval; /* 2000 good steps before the scale grows */
    int64_t good_steps;      /* consecutive finite steps since the last change */
    int64_t skipped;         /* steps skipped for non-finite gradients */
    float min_scale;         /* floor of the backoff (2^-24) */
} gt_amp_scaler;

/* enabled = 0: scale 1. init_scale <= 0 takes 65536 (2^16); growth_interval <= 0 takes 2000. */
void gt_amp_init(gt_amp_scaler *s, int enabled, float init_scale, int64_t growth_interval);
/* The factor to multiply the loss (or d loss / d pred) by: scale, or 1 when disabled. */
float gt_amp_loss_scale(const gt_amp_scaler *s);
/* 1/scale, or 1 when disabled (what an engine's unscale multiplies by). */
float gt_amp_inv_scale(const gt_amp_scaler *s);
/* grads (n) *= 1/scale (when enabled); returns 1 if every element is finite. */
int gt_amp_unscale(const gt_amp_scaler *s, float *grads, size_t n);
/* Record the step's outcome; returns 1 when the optimizer step must be applied,
 * 0 when it must be skipped (found_inf). */
int gt_amp_update(gt_amp_scaler *s, int found_inf);

#endif
