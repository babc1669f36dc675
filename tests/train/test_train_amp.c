/* tests/train/test_train_amp.c: the dynamic loss scaler (train/amp.h) with an
 * injected overflow: skip + backoff x0.5, growth x2 after N good steps,
 * exact unscaling, disabled scaler = scale 1. */
#include <math.h>
#include <string.h>

#include "test.h"
#include "train/amp.h"

int main(void) {
    gt_amp_scaler s;
    gt_amp_init(&s, 1, 1024.0f, 3);
    TEST_CLOSE(gt_amp_loss_scale(&s), 1024.0, 0, 0);

    float g[4] = {1024.0f * 0.5f, -1024.0f * 3.0f, 1024.0f * 1e-3f, 0.0f};
    TEST_CHECK(gt_amp_unscale(&s, g, 4) == 1);
    TEST_CHECK(g[0] == 0.5f && g[1] == -3.0f && g[3] == 0.0f);
    TEST_CHECK(g[2] == 1e-3f * 1024.0f / 1024.0f); /* power-of-two scaling is exact */

    /* good steps: growth after 3 */
    TEST_CHECK(gt_amp_update(&s, 0) == 1);
    TEST_CHECK(gt_amp_update(&s, 0) == 1);
    TEST_CLOSE(s.scale, 1024.0, 0, 0);
    TEST_CHECK(gt_amp_update(&s, 0) == 1);
    TEST_CLOSE(s.scale, 2048.0, 0, 0);
    TEST_EQ_INT(s.good_steps, 0);

    /* injected overflow: non-finite gradient -> skip, backoff, growth counter reset */
    TEST_CHECK(gt_amp_update(&s, 0) == 1);
    TEST_EQ_INT(s.good_steps, 1);
    float bad[3] = {1.0f, INFINITY, 2.0f};
    int finite = gt_amp_unscale(&s, bad, 3);
    TEST_CHECK(finite == 0);
    TEST_CHECK(gt_amp_update(&s, !finite) == 0);
    TEST_CLOSE(s.scale, 1024.0, 0, 0);
    TEST_EQ_INT(s.good_steps, 0);
    TEST_EQ_INT(s.skipped, 1);
    float nanv[2] = {NAN, 1.0f};
    TEST_CHECK(gt_amp_unscale(&s, nanv, 2) == 0);
    TEST_CHECK(gt_amp_update(&s, 1) == 0);
    TEST_CLOSE(s.scale, 512.0, 0, 0);
    TEST_EQ_INT(s.skipped, 2);
    /* growth needs 3 consecutive good steps again */
    gt_amp_update(&s, 0);
    gt_amp_update(&s, 0);
    TEST_CLOSE(s.scale, 512.0, 0, 0);
    gt_amp_update(&s, 0);
    TEST_CLOSE(s.scale, 1024.0, 0, 0);

    /* a scale that would overflow to inf does not grow */
    gt_amp_scaler big;
    gt_amp_init(&big, 1, 3e38f, 1);
    gt_amp_update(&big, 0);
    TEST_CHECK(isfinite(big.scale));
    /* backoff floor */
    gt_amp_scaler tiny;
    gt_amp_init(&tiny, 1, 1.0f, 10);
    for (int i = 0; i < 40; i++) gt_amp_update(&tiny, 1);
    TEST_CHECK(tiny.scale == tiny.min_scale);

    /* default init matches GradScaler (2^16, interval 2000) */
    gt_amp_scaler d;
    gt_amp_init(&d, 1, 0, 0);
    TEST_CLOSE(d.scale, 65536.0, 0, 0);
    TEST_EQ_INT(d.growth_interval, 2000);

    /* disabled: scale 1, gradients untouched, still reports non-finite */
    gt_amp_scaler off;
    gt_amp_init(&off, 0, 1024.0f, 3);
    TEST_CLOSE(gt_amp_loss_scale(&off), 1.0, 0, 0);
    float h[2] = {3.0f, 5.0f};
    TEST_CHECK(gt_amp_unscale(&off, h, 2) == 1 && h[0] == 3.0f && h[1] == 5.0f);
    TEST_CHECK(gt_amp_update(&off, 1) == 0);
    TEST_CLOSE(off.scale, 1.0, 0, 0);
    for (int i = 0; i < 5; i++) gt_amp_update(&off, 0);
    TEST_CLOSE(off.scale, 1.0, 0, 0);
    TEST_DONE();
}
