/* The device model (nn/cuda_model.h) against the CPU model (nn/model.h) for
 * all three kinds on small shapes:
 *   - loss and EVERY parameter gradient: fp32 per element atol 1e-4*max|g|
 *     + rtol 1e-3 (GEMM summation order, attention/LSTM recurrences); bf16
 *     relative L2 error per tensor <= 5e-2 and loss within 2e-2 relative
 *     (bf16 with the configuration's precision bf16: s2p_tf keeps its
 *     pre-GELU activations in bf16, fewer device bytes than fp32);
 *   - one AdamW step from identical grads: params bit-close (<= 1 ulp);
 *   - global-norm clipping: norm within 1e-6 relative;
 *   - fp16 loss scaling: a scaled backward unscaled matches fp32 loosely; after
 *     a huge scale the device check agrees with a host scan; an injected inf
 *     is detected;
 *   - a 25-step training run: GPU fp32 loss curve within 1e-3 relative of the
 *     CPU's at every step, bf16 within 5e-2, and both decrease.
 *   - s2p_cnn dense-layer dropout: the kernel draws the CPU's masks (same keys:
 *     every dropped element is 0 on both), so the training forward's pred and
 *     every gradient match the CPU's at the fp32 tolerances, and an
 *     evaluation forward after it applies no mask.
 * Skips (77) without a GPU. */
#include "gpu_test_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"
#include "nn/model_lstm.h"
#include "nn/ops/dropout.h"

static void small_config(gt_model_kind kind, gt_model_config *c) {
    gt_model_config_default(c, kind);
    if (kind == GT_MODEL_S2P_CNN) {
        c->window = 64; c->n_in = 1; c->n_out = 3; c->hidden = 32; c->n_layers = 3; c->max_batch = 6;
        int ch[3] = {4, 5, 6}, ks[3] = {5, 4, 3};
        for (int l = 0; l < 3; l++) { c->conv_channels[l] = ch[l]; c->conv_kernels[l] = ks[l]; }
    } else if (kind == GT_MODEL_S2P_TF) {
        c->window = 48; c->n_in = 1; c->n_out = 3; c->d_model = 32; c->n_heads = 2; c->d_ff = 64; c->n_layers = 2;
        c->max_batch = 3;
    } else {
        c->window = 20; c->n_in = 4; c->n_out = 4; c->hidden = 16; c->n_layers = 2; c->tbptt = 7; c->max_batch = 3;
    }
}

typedef struct data {
    int B;
    float *x, *y, *mask;
} data;

static data make_data(const gt_model *m, int B) {
    data d = {B, gtu_rand((size_t)B * m->n_x, 1.0f), gtu_rand((size_t)B * m->n_y, 0.5f), NULL};
    d.mask = malloc((size_t)B * m->n_y * 4);
    for (size_t i = 0; i < (size_t)B * m->n_y; i++) d.mask[i] = (i % 5) ? 1.0f : 0.0f;
    if (m->cfg.kind == GT_MODEL_LSTM) gt_model_lstm_targets(d.y, d.mask, d.x, B, m->cfg.window, m->cfg.n_in);
    return d;
}
static void free_data(data *d) { free(d->x); free(d->y); free(d->mask); }

static float cpu_step(gt_model *m, const data *d, float dloss) {
    gt_model_zero_grad(m);
    gt_model_forward(m, d->x, d->B);
    float l = m->cfg.kind == GT_MODEL_LSTM ? gt_model_lstm_loss(m) : gt_model_loss(m, d->y, d->mask);
    gt_model_backward(m, dloss);
    return l;
}
static float gpu_step(gt_cuda_model *g, const data *d, float dloss) {
    gt_cuda_model_zero_grad(g);
    gt_cuda_model_forward(g, d->x, d->B, 0);
    float l = gt_cuda_model_config(g)->kind == GT_MODEL_LSTM ? gt_cuda_model_lstm_loss(g)
                                                            : gt_cuda_model_loss(g, d->y, d->mask, 0);
    gt_cuda_model_backward(g, dloss);
    return l;
}

static void compare_grads(const gt_model *m, const float *got, int bf16, float scale) {
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        float *gg = gtu_copy(got + t->offset, t->n_elem);
        for (size_t k = 0; k < t->n_elem; k++) gg[k] *= scale;
        char name[96];
        snprintf(name, sizeof name, "grad %s", t->name);
        if (bf16)
            gtu_rel_l2(name, gg, m->grads + t->offset, t->n_elem, 5e-2);
        else
            gtu_close(name, gg, m->grads + t->offset, t->n_elem, 1e-4, 1e-3);
        free(gg);
    }
}

static void test_kind(gt_model_kind kind) {
    gt_model_config cfg;
    small_config(kind, &cfg);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 1234);
    const size_t np = m->n_params;
    data d = make_data(m, cfg.max_batch);
    float lc = cpu_step(m, &d, 1.0f);
    float *got = malloc(np * 4);
    size_t dev_bytes[2] = {0, 0};
    for (int amp = 0; amp <= 1; amp++) {
        printf("== %s, %s: loss and every gradient vs CPU ==\n", gt_model_kind_name(kind), amp ? "bf16" : "fp32");
        /* the configuration's precision decides the device's activation storage
         * (s2p_tf keeps its pre-GELU activations in bf16 under bf16) */
        m->cfg.precision = amp ? GT_PRECISION_BF16 : GT_PRECISION_FP32;
        gt_cuda_model *g = gt_cuda_model_create(m, amp ? GT_PREC_BF16 : GT_PREC_FP32);
        m->cfg.precision = GT_PRECISION_FP32;
        dev_bytes[amp] = gt_cuda_model_device_bytes(g);
        float lg = gpu_step(g, &d, 1.0f);
        printf("  loss gpu %.8g cpu %.8g\n", lg, lc);
        TEST_CLOSE(lg, lc, 0.0, amp ? 2e-2 : 1e-5);
        float *pred = malloc((size_t)d.B * m->n_y * 4);
        gt_cuda_model_get_pred(g, pred);
        if (amp) gtu_rel_l2("pred", pred, m->pred, (size_t)d.B * m->n_y, 2e-2);
        else gtu_close("pred", pred, m->pred, (size_t)d.B * m->n_y, 1e-5, 1e-4);
        free(pred);
        gt_cuda_model_get_grads(g, got, np);
        compare_grads(m, got, amp, 1.0f);
        gt_cuda_model_free(g);
    }
    printf("  device bytes fp32 %zu, bf16 %zu\n", dev_bytes[0], dev_bytes[1]);
    if (kind == GT_MODEL_S2P_TF) TEST_CHECK(dev_bytes[1] < dev_bytes[0]); /* bf16 activation storage saves memory */
    else TEST_CHECK(dev_bytes[1] == dev_bytes[0]);
    /* AdamW from identical grads, and clipping */
    {
        gt_cuda_model *g = gt_cuda_model_create(m, GT_PREC_FP32);
        gt_cuda_model_set_state(g, m->params, m->grads, m->adam_m, m->adam_v, np);
        double nc = gt_grad_norm(m->grads, np), ng = gt_cuda_model_clip_grad_norm(g, 0.0f);
        printf("  grad norm gpu %.10g cpu %.10g\n", ng, nc);
        TEST_CLOSE(ng, nc, 0.0, 1e-6);
        gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
        float *p0 = gtu_copy(m->params, np), *g0 = gtu_copy(m->grads, np);
        gt_model_adamw_step(m, &opt, 1e-3f, 1, 0);
        gt_cuda_model_adamw_step(g, &opt, 1e-3f, 1, 0);
        gt_cuda_model_get_params(g, got, np);
        int64_t worst = 0;
        for (size_t i = 0; i < np; i++) {
            int64_t u = gtu_ulps(got[i], m->params[i]);
            worst = u > worst ? u : worst;
        }
        printf("  adamw step: max %lld ulp from the CPU\n", (long long)worst);
        TEST_CHECK(worst <= 1);
        /* restore the CPU model */
        memcpy(m->params, p0, np * 4);
        memcpy(m->grads, g0, np * 4);
        memset(m->adam_m, 0, np * 4);
        memset(m->adam_v, 0, np * 4);
        free(p0);
        free(g0);
        gt_cuda_model_free(g);
    }
    /* fp16 with loss scaling */
    {
        printf("== %s, fp16 loss scaling ==\n", gt_model_kind_name(kind));
        gt_cuda_model *g = gt_cuda_model_create(m, GT_PREC_FP16);
        const float S = 1024.0f;
        gpu_step(g, &d, S);
        int bad = gt_cuda_model_unscale_check(g, 1.0f / S);
        TEST_EQ_INT(bad, 0);
        gt_cuda_model_get_grads(g, got, np);
        compare_grads(m, got, 1, 1.0f);
        /* A huge scale overflows fp16 (max 65504) wherever cuBLAS down-converts
         * (it may pick fp32 kernels for tiny shapes): whatever happened, the
         * device check must agree with the host's view of the gradients. */
        gpu_step(g, &d, 1e30f);
        gt_cuda_model_get_grads(g, got, np);
        int host_bad = 0;
        for (size_t i = 0; i < np; i++) host_bad |= !isfinite(got[i]);
        bad = gt_cuda_model_unscale_check(g, 1e-30f);
        printf("  scale 1e30: non-finite gradients: device check %d, host scan %d\n", bad, host_bad);
        TEST_EQ_INT(bad, host_bad);
        gpu_step(g, &d, S);
        gt_cuda_model_get_grads(g, got, np);
        got[np / 2] = INFINITY; /* injected overflow */
        gt_cuda_model_set_state(g, NULL, got, NULL, NULL, np);
        TEST_EQ_INT(gt_cuda_model_unscale_check(g, 1.0f / S), 1);
        gt_cuda_model_free(g);
    }
    /* short training run: the loss curves */
    for (int amp = 0; amp <= 1; amp++) {
        gt_model *mc = gt_model_create(&cfg);
        gt_model_init(mc, 99);
        gt_cuda_model *g = gt_cuda_model_create(mc, amp ? GT_PREC_BF16 : GT_PREC_FP32);
        gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
        data batches[5];
        for (int k = 0; k < 5; k++) batches[k] = make_data(mc, cfg.max_batch);
        float first_c = 0, first_g = 0, last_c = 0, last_g = 0, worst = 0;
        const int steps = 25;
        for (int s = 0; s < steps; s++) {
            const data *b = &batches[s % 5];
            float lc2 = cpu_step(mc, b, 1.0f), lg2 = gpu_step(g, b, 1.0f);
            gt_clip_grad_norm(mc->grads, mc->n_params, 1.0f);
            gt_cuda_model_clip_grad_norm(g, 1.0f);
            gt_model_adamw_step(mc, &opt, 3e-3f, s + 1, 0);
            gt_cuda_model_adamw_step(g, &opt, 3e-3f, s + 1, 0);
            float rel = fabsf(lg2 - lc2) / fabsf(lc2);
            worst = rel > worst ? rel : worst;
            if (s == 0) { first_c = lc2; first_g = lg2; }
            last_c = lc2;
            last_g = lg2;
        }
        printf("  train %s %s: cpu %.5f -> %.5f, gpu %.5f -> %.5f, max rel diff %.2e\n", gt_model_kind_name(kind),
               amp ? "bf16" : "fp32", first_c, last_c, first_g, last_g, worst);
        TEST_CHECK(worst <= (amp ? 5e-2 : 1e-3));
        TEST_CHECK(last_c < first_c && last_g < first_g);
        for (int k = 0; k < 5; k++) free_data(&batches[k]);
        gt_cuda_model_free(g);
        gt_model_free(mc);
    }
    free(got);
    free_data(&d);
    gt_model_free(m);
}

static void test_dropout(void) {
    gt_model_config cfg;
    small_config(GT_MODEL_S2P_CNN, &cfg);
    cfg.dropout = 0.5f;
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 99);
    data d = make_data(m, cfg.max_batch);
    uint64_t ids[6];
    for (int b = 0; b < 6; b++) ids[b] = gt_dropout_sample_id(b % 2, 100 + b);
    const gt_dropout_key key = {.seed = 3, .step = 7, .ids = ids};
    printf("== s2p_cnn dropout 0.5: masks, pred and every gradient vs CPU ==\n");
    gt_model_zero_grad(m);
    gt_model_forward_train(m, d.x, d.B, &key);
    float lc = gt_model_loss(m, d.y, d.mask);
    gt_model_backward(m, 1.0f);
    gt_cuda_model *g = gt_cuda_model_create(m, GT_PREC_FP32);
    gt_cuda_model_zero_grad(g);
    gt_cuda_model_set_dropout(g, m->drop_base, d.B); /* the host's keys, as the CUDA engine passes them */
    gt_cuda_model_forward(g, d.x, d.B, 0);
    float lg = gt_cuda_model_loss(g, d.y, d.mask, 0);
    gt_cuda_model_backward(g, 1.0f);
    printf("  loss gpu %.8g cpu %.8g\n", lg, lc);
    TEST_CLOSE(lg, lc, 0.0, 1e-5);
    float *pred = malloc((size_t)d.B * m->n_y * 4);
    gt_cuda_model_get_pred(g, pred);
    gtu_close("pred (dropout)", pred, m->pred, (size_t)d.B * m->n_y, 1e-5, 1e-4);
    float *got = malloc(m->n_params * 4);
    gt_cuda_model_get_grads(g, got, m->n_params);
    compare_grads(m, got, 0, 1.0f);
    /* evaluation: no mask on either */
    gt_cuda_model_set_dropout(g, NULL, d.B);
    gt_cuda_model_forward(g, d.x, d.B, 0);
    gt_cuda_model_get_pred(g, pred);
    gt_model_forward(m, d.x, d.B);
    gtu_close("pred (evaluation)", pred, m->pred, (size_t)d.B * m->n_y, 1e-5, 1e-4);
    free(pred);
    free(got);
    gt_cuda_model_free(g);
    free_data(&d);
    gt_model_free(m);
}

int main(void) {
    GTU_REQUIRE_GPU();
    test_kind(GT_MODEL_S2P_CNN);
    test_dropout();
    test_kind(GT_MODEL_S2P_TF);
    test_kind(GT_MODEL_LSTM);
    TEST_DONE();
}
