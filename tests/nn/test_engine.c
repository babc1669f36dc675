/* tests/nn/test_engine.c: the host engine (nn/engine.h) runs exactly the
 * model framework it wraps: for every model kind, forward, backward, the
 * gradient norm, loss-scale removal, clipping and AdamW through the engine
 * give bit-identical results to the same calls on a gt_model of the same
 * configuration and seed; the host side of forward/backward is the host
 * model's x/pred/dpred; memory matches the model's own byte counts; an
 * unknown engine kind is refused by name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/engine.h"
#include "test.h"

static void fill(float *p, size_t n, double f) {
    for (size_t i = 0; i < n; i++) p[i] = (float)sin(f * (double)(i + 1));
}

static void check_kind(gt_model_kind kind) {
    gt_model_config cfg;
    gt_model_config_default(&cfg, kind);
    cfg.window = kind == GT_MODEL_LSTM ? 12 : 33;
    cfg.n_in = kind == GT_MODEL_LSTM ? 3 : 1;
    cfg.n_out = 3;
    cfg.max_batch = 4;
    cfg.hidden = 16;
    cfg.n_layers = 2;
    cfg.d_model = 16, cfg.n_heads = 2, cfg.d_ff = 32;
    for (int l = 0; l < cfg.n_layers && kind == GT_MODEL_S2P_CNN; l++) cfg.conv_channels[l] = 4, cfg.conv_kernels[l] = 3;
    gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &cfg);
    gt_model *ref = gt_model_create(&cfg);
    gt_engine_init(e, 42);
    gt_model_init(ref, 42);
    gt_model *m = gt_engine_model(e);
    TEST_EQ_INT((int)gt_engine_n_params(e), (int)ref->n_params);
    TEST_CHECK(!memcmp(m->params, ref->params, sizeof(float) * ref->n_params));
    TEST_CHECK(gt_engine_input(e) == m->x && gt_engine_dpred(e) == m->dpred && !e->grads_on_device);
    TEST_CHECK(!strcmp(e->i->name, "host"));

    const int B = 3;
    const size_t nx = (size_t)B * ref->n_x, ny = (size_t)B * ref->n_y;
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * ny);
    fill(x, nx, 0.7);
    fill(dy, ny, 0.3);
    gt_adamw_config opt = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    for (int step = 1; step <= 3; step++) {
        gt_engine_zero_grad(e);
        gt_model_zero_grad(ref);
        const float *pe = gt_engine_forward(e, x, B);
        const float *pr = gt_model_forward(ref, x, B);
        TEST_CHECK(pe == m->pred);
        TEST_CHECK(!memcmp(pe, pr, sizeof(float) * ny));
        memcpy(gt_engine_dpred(e), dy, sizeof(float) * ny);
        memcpy(ref->dpred, dy, sizeof(float) * ny);
        gt_engine_backward(e, 1.0f);
        gt_model_backward(ref, 1.0f);
        TEST_CHECK(!memcmp(gt_engine_grads(e), ref->grads, sizeof(float) * ref->n_params));
        /* loss scale 4: grads *= 1/4 exactly; a NaN makes it report non-finite */
        TEST_EQ_INT(gt_engine_unscale(e, 0.25f), 1);
        for (size_t i = 0; i < ref->n_params; i++) ref->grads[i] *= 0.25f;
        TEST_CHECK(!memcmp(gt_engine_grads(e), ref->grads, sizeof(float) * ref->n_params));
        double ne = gt_engine_grad_norm(e), nr = gt_grad_norm(ref->grads, ref->n_params);
        TEST_CHECK(ne == nr && ne > 0);
        gt_engine_scale_grads(e, 0.5f);
        gt_scale(ref->grads, ref->n_params, 0.5f);
        gt_engine_adamw_step(e, &opt, 1e-2f, step, 0);
        gt_model_adamw_step(ref, &opt, 1e-2f, step, 0);
        gt_engine_pull_state(e);
        TEST_CHECK(!memcmp(m->params, ref->params, sizeof(float) * ref->n_params));
        TEST_CHECK(!memcmp(m->adam_v, ref->adam_v, sizeof(float) * ref->n_params));
    }
    gt_engine_grads(e)[0] = NAN;
    TEST_EQ_INT(gt_engine_unscale(e, 1.0f), 0);
    gt_engine_mem mem;
    gt_engine_memory(e, &mem);
    TEST_EQ_INT((int)mem.state_bytes, (int)gt_model_state_bytes(ref));
    TEST_EQ_INT((int)mem.act_bytes, (int)gt_model_act_bytes(ref));
    TEST_EQ_INT((int)mem.device_bytes, 0);
    free(x), free(dy);
    gt_model_free(ref);
    gt_engine_free(e);
}

int main(void) {
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++)
        if (gt_model_kind_available((gt_model_kind)k)) check_kind((gt_model_kind)k);
    TEST_EQ_INT(gt_engine_kind_parse("host"), GT_ENGINE_HOST);
    TEST_EQ_INT(gt_engine_kind_parse("tpu"), -1);
    TEST_CHECK(!strcmp(gt_engine_kind_name(GT_ENGINE_HOST), "host"));
    TEST_DONE();
}
