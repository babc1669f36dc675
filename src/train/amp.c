/* train/amp.c: dynamic loss scaler (see amp.h). */
#include "train/amp.h"

#include <math.h>

#include "nn/ops/ops.h"

void gt_amp_init(gt_amp_scaler *s, int enabled, float init_scale, int64_t growth_interval) {
    s->enabled = enabled != 0;
    s->scale = s->enabled ? (init_scale > 0 ? init_scale : 65536.0f) : 1.0f;
    s->growth_factor = 2.0f;
    s->backoff_factor = 0.5f;
    s->growth_interval = growth_interval > 0 ? growth_interval : 2000;
    s->good_steps = 0;
    s->skipped = 0;
    s->min_scale = 1.0f / 16777216.0f;
}

float gt_amp_loss_scale(const gt_amp_scaler *s) { return s->enabled ? s->scale : 1.0f; }

float gt_amp_inv_scale(const gt_amp_scaler *s) {
    return s->enabled ? 1.0f / s->scale : 1.0f; /* exact: scale is a power of two */
}

int gt_amp_unscale(const gt_amp_scaler *s, float *grads, size_t n) {
    return gt_unscale_check(grads, n, gt_amp_inv_scale(s));
}

int gt_amp_update(gt_amp_scaler *s, int found_inf) {
    if (found_inf) {
        s->skipped++;
        s->good_steps = 0;
        if (s->enabled) {
            s->scale *= s->backoff_factor;
            if (s->scale < s->min_scale) s->scale = s->min_scale;
        }
        return 0;
    }
    if (s->enabled && ++s->good_steps >= s->growth_interval) {
        float next = s->scale * s->growth_factor;
        if (isfinite(next)) s->scale = next;
        s->good_steps = 0;
    }
    return 1;
}
