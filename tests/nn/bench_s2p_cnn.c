/* tests/nn/bench_s2p_cnn.c: s2p_cnn training throughput (not a test).
 *   bench_nn_s2p_cnn [B=256] [steps=6] [W=599] [A=15]
 * Times full training steps (zero_grad, forward, loss, backward, clip,
 * AdamW) and the op groups inside one step, and the OpenBLAS sgemm rate on
 * the fc1 shapes and a square shape for reference. Set OPENBLAS_NUM_THREADS. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/timer.h"
#include "nn/model.h"

static double sgemm_rate(int M, int N, int K, int ta, int tb, int reps) {
    float *a = (float *)calloc((size_t)M * K, 4), *b = (float *)calloc((size_t)K * N, 4),
          *c = (float *)calloc((size_t)M * N, 4);
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = 1e-3f * (float)(i % 7);
    for (size_t i = 0; i < (size_t)K * N; i++) b[i] = 1e-3f * (float)(i % 5);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = gt_now();
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f,
                    a, ta ? M : K, b, tb ? K : N, 0.0f, c, N);
        double dt = gt_now() - t0;
        if (dt < best) best = dt;
    }
    free(a); free(b); free(c);
    return 2.0 * M * N * K / best / 1e9;
}

int main(int argc, char **argv) {
    int B = argc > 1 ? atoi(argv[1]) : 256, steps = argc > 2 ? atoi(argv[2]) : 6;
    gt_model_config cfg;
    gt_model_config_default(&cfg, GT_MODEL_S2P_CNN);
    if (argc > 3) cfg.window = atoi(argv[3]);
    if (argc > 4) cfg.n_out = atoi(argv[4]);
    cfg.max_batch = B;
    const int W = cfg.window, F = cfg.conv_channels[cfg.n_layers - 1] * W;

    printf("sgemm GFLOP/s (best of 3): square 2048^3 %.1f | fc1 fwd %dx%dx%d %.1f | fc1 dW %dx%dx%d %.1f | "
           "fc1 dX %dx%dx%d %.1f\n",
           sgemm_rate(2048, 2048, 2048, 0, 0, 3), B, cfg.hidden, F, sgemm_rate(B, cfg.hidden, F, 0, 1, 3),
           cfg.hidden, F, B, sgemm_rate(cfg.hidden, F, B, 1, 0, 3), B, F, cfg.hidden,
           sgemm_rate(B, F, cfg.hidden, 0, 0, 3));

    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 1);
    float *x = (float *)malloc((size_t)B * m->n_x * 4), *y = (float *)malloc((size_t)B * m->n_y * 4);
    gt_rng r;
    gt_rng_init(&r, 3, 0);
    for (size_t i = 0; i < (size_t)B * m->n_x; i++) x[i] = gt_rng_uniform(&r);
    for (size_t i = 0; i < (size_t)B * m->n_y; i++) y[i] = gt_rng_uniform(&r);
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};

    /* forward flops per sample (x3 for training) */
    double fl = 0;
    int ic = cfg.n_in;
    for (int l = 0; l < cfg.n_layers; l++) {
        fl += 2.0 * cfg.conv_channels[l] * ic * cfg.conv_kernels[l] * W;
        ic = cfg.conv_channels[l];
    }
    fl += 2.0 * F * cfg.hidden + 2.0 * cfg.hidden * cfg.n_out;

    double t_fwd = 0, t_bwd = 0, t_opt = 0, t_all = 0, best = 1e30;
    for (int s = 0; s < steps + 1; s++) {
        double t0 = gt_now();
        gt_model_zero_grad(m);
        gt_model_forward(m, x, B);
        gt_model_loss(m, y, NULL);
        double t1 = gt_now();
        gt_model_backward(m, 1.0f);
        double t2 = gt_now();
        gt_clip_grad_norm(m->grads, m->n_params, 1.0f);
        gt_model_adamw_step(m, &opt, 1e-4f, s + 1, 0);
        double t3 = gt_now();
        if (s == 0) continue; // warm-up step (page faults)
        t_fwd += t1 - t0; t_bwd += t2 - t1; t_opt += t3 - t2; t_all += t3 - t0;
        if (t3 - t0 < best) best = t3 - t0;
    }
    printf("s2p_cnn B=%d W=%d A=%d params=%zu: %.1f samples/s (mean of %d steps; best %.1f), "
           "step %.3f s = fwd %.3f + bwd %.3f + clip/adamw %.3f; %.1f GFLOP/s effective (%.1f MFLOP/sample); "
           "peak RSS %.2f GB\n",
           B, W, cfg.n_out, m->n_params, B * steps / t_all, steps, B / best, t_all / steps, t_fwd / steps,
           t_bwd / steps, t_opt / steps, 3 * fl * B * steps / t_all / 1e9, 3 * fl / 1e6,
           (double)gt_peak_rss_bytes() / 1e9);

    /* op breakdown of one step */
    {
        const float *inp = m->x;
        float *scratch = (float *)malloc(gt_conv1d_scratch_elems(50, 50, W, 10) * 4 * 2);
        float *out = (float *)malloc((size_t)B * 50 * W * 4), *dinp = (float *)malloc((size_t)B * 50 * W * 4);
        float *w = (float *)calloc(50 * 50 * 10, 4), *dw = (float *)calloc(50 * 50 * 10, 4), *bb = (float *)calloc(50, 4);
        ic = cfg.n_in;
        float *in2 = (float *)malloc((size_t)B * 50 * W * 4);
        for (size_t i = 0; i < (size_t)B * 50 * W; i++) in2[i] = 0.5f - (float)(i % 3) * 0.3f;
        for (int l = 0; l < cfg.n_layers; l++) {
            int oc = cfg.conv_channels[l], k = cfg.conv_kernels[l];
            const float *src = l ? in2 : inp;
            double t0 = gt_now();
            gt_conv1d_forward(out, scratch, src, w, bb, B, ic, oc, W, k, GT_ACT_RELU);
            double t1 = gt_now();
            gt_conv1d_backward(l ? dinp : NULL, dw, bb, in2, src, w, out, scratch, B, ic, oc, W, k, GT_ACT_RELU);
            double t2 = gt_now();
            double f = 2.0 * oc * ic * k * W * B;
            printf("  conv.%d %2d->%2d k%-2d fwd %.3f s (%.1f GFLOP/s)  bwd %.3f s (%.1f GFLOP/s)\n", l, ic, oc, k,
                   t1 - t0, f / (t1 - t0) / 1e9, t2 - t1, (l ? 2 : 1) * f / (t2 - t1) / 1e9);
            ic = oc;
        }
        free(scratch); free(out); free(dinp); free(w); free(dw); free(bb); free(in2);
    }
    free(x); free(y);
    gt_model_free(m);
    return 0;
}
