/* tests/nn/test_train_toy.c: end-to-end training of a small s2p_cnn on a
 * learnable toy problem (targets are fixed linear functionals of the window
 * plus a rectified one), with clipping, warmup + cosine schedule and AdamW.
 * The loss on a held-out batch must drop by a large factor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/model.h"
#include "test.h"

enum { W = 32, A = 3, B = 32 };

static void make_batch(float *x, float *y, int n, uint32_t stream) {
    gt_rng r;
    gt_rng_init(&r, 5, gt_stream(GT_STREAM_TEST, stream));
    for (int b = 0; b < n; b++) {
        float *xb = x + b * W;
        for (int t = 0; t < W; t++) xb[t] = 2.0f * gt_rng_uniform(&r) - 1.0f;
        float mid = 0;
        for (int t = 12; t < 20; t++) mid += xb[t];
        y[b * A + 0] = mid / 8.0f;                          // local mean around the midpoint
        y[b * A + 1] = 0.5f * xb[16] - 0.25f * xb[10];      // point values
        y[b * A + 2] = xb[15] > 0.0f ? xb[15] : 0.0f;       // an "appliance on" power
    }
}

int main(void) {
    gt_model_config cfg;
    gt_model_config_default(&cfg, GT_MODEL_S2P_CNN);
    cfg.window = W;
    cfg.n_out = A;
    cfg.hidden = 64;
    cfg.n_layers = 2;
    cfg.conv_channels[0] = 8; cfg.conv_kernels[0] = 5;
    cfg.conv_channels[1] = 8; cfg.conv_kernels[1] = 4;
    cfg.max_batch = B;
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 1);
    gt_adamw_config opt = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};

    float x[B * W], y[B * A], xv[B * W], yv[B * A];
    make_batch(xv, yv, B, 100000); // held out
    gt_model_forward(m, xv, B);
    float loss0 = gt_model_loss(m, yv, NULL);
    const long steps = 400;
    for (long s = 0; s < steps; s++) {
        make_batch(x, y, B, (uint32_t)s);
        gt_model_zero_grad(m);
        gt_model_forward(m, x, B);
        float l = gt_model_loss(m, y, NULL);
        TEST_REQUIRE(isfinite(l));
        gt_model_backward(m, 1.0f);
        gt_clip_grad_norm(m->grads, m->n_params, 1.0f);
        gt_model_adamw_step(m, &opt, gt_lr_schedule(s, 20, steps, 3e-3f, 1e-4f), s + 1, 0);
    }
    gt_model_forward(m, xv, B);
    float loss1 = gt_model_loss(m, yv, NULL);
    fprintf(stderr, "toy s2p_cnn: held-out loss %.5f -> %.6f (x%.0f)\n", loss0, loss1, loss0 / loss1);
    TEST_CHECK(loss1 < loss0 / 20.0f);
    gt_model_free(m);
    TEST_DONE();
}
