/* tests/gpu/test_graph_cuda.c: a training step captured into a CUDA graph
 * and replayed gives the step's eager result. For every kind (small shapes,
 * fp32): from the same state S0 (params, AdamW moments), one eager step
 * (zero_grad, forward on device x, masked loss, backward, clip 1.0, AdamW)
 * and one replay of the captured step; loss within 1e-6 relative, every
 * parameter and moment within 1e-6 x max + 1e-5 relative (float atomics in
 * bias and LayerNorm gradients make two eager steps differ in the last bits
 * too). Then 3 replays in a row move the loss like 3 eager steps (1e-4).
 * The capture itself must succeed (no allocation, no host synchronisation
 * inside a step). Skips (77) without a GPU. */
#include "gpu_test_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"

static void small_config(gt_model_kind kind, gt_model_config *c) {
    gt_model_config_default(c, kind);
    c->max_batch = 4;
    if (kind == GT_MODEL_S2P_CNN) {
        c->window = 64; c->n_in = 1; c->n_out = 3; c->hidden = 32; c->n_layers = 3;
        for (int l = 0; l < 3; l++) { c->conv_channels[l] = 4 + l; c->conv_kernels[l] = 5 - l; }
    } else if (kind == GT_MODEL_S2P_TF) {
        c->window = 48; c->n_in = 1; c->n_out = 3; c->d_model = 32; c->n_heads = 2; c->d_ff = 64; c->n_layers = 2;
    } else {
        c->window = 20; c->n_in = 4; c->n_out = 4; c->hidden = 16; c->n_layers = 2; c->tbptt = 7;
    }
}

static void step(gt_cuda_model *g, int B, const float *y_dev, int lstm, const gt_adamw_config *opt, long t) {
    gt_cuda_model_zero_grad(g);
    gt_cuda_model_forward(g, gt_cuda_model_x(g), B, 1);
    if (lstm) gt_cuda_model_lstm_loss_async(g);
    else gt_cuda_model_loss_async(g, y_dev, NULL);
    gt_cuda_model_backward(g, 1.0f);
    gt_cuda_model_clip_grad_norm_async(g, 1.0f);
    gt_cuda_model_adamw_step(g, opt, 1e-3f, t, 0);
}

static void test_kind(gt_model_kind kind) {
    gt_model_config c;
    small_config(kind, &c);
    printf("== %s: graph replay vs eager ==\n", gt_model_kind_name(kind));
    gt_model *h = gt_model_create(&c);
    gt_model_init(h, 7);
    const size_t np = h->n_params, B = (size_t)c.max_batch;
    gt_cuda_model *g = gt_cuda_model_create(h, GT_PREC_FP32);
    cudaStream_t st = gt_cuda_model_stream(g);
    float *xh = gtu_rand(B * h->n_x, 1.0f), *yh = gtu_rand(B * h->n_y, 0.5f);
    gt_cuda_upload(gt_cuda_model_x(g), xh, B * h->n_x);
    float *y_dev = gtu_dev(yh, B * h->n_y);
    const int lstm = kind == GT_MODEL_LSTM;
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
    /* S0: a state after one eager step (non-zero moments) */
    step(g, (int)B, y_dev, lstm, &opt, 1);
    float *p0 = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4);
    float *pe = malloc(np * 4), *me = malloc(np * 4), *ve = malloc(np * 4);
    float *pg = malloc(np * 4), *mg = malloc(np * 4), *vg = malloc(np * 4);
    gt_cuda_model_get_state(g, p0, NULL, m0, v0, np);
    /* eager step 2 */
    step(g, (int)B, y_dev, lstm, &opt, 2);
    float le = gt_cuda_model_last_loss(g);
    gt_cuda_model_get_state(g, pe, NULL, me, ve, np);
    /* back to S0, capture step 2, replay it */
    gt_cuda_model_set_state(g, p0, NULL, m0, v0, np);
    cudaGraph_t gr;
    cudaGraphExec_t exec;
    TEST_REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    step(g, (int)B, y_dev, lstm, &opt, 2);
    TEST_REQUIRE(cudaStreamEndCapture(st, &gr) == cudaSuccess);
    TEST_REQUIRE(cudaGraphInstantiate(&exec, gr, 0) == cudaSuccess);
    TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
    float lg = gt_cuda_model_last_loss(g);
    gt_cuda_model_get_state(g, pg, NULL, mg, vg, np);
    printf("  loss eager %.9g graph %.9g\n", le, lg);
    TEST_CLOSE(lg, le, 0, 1e-6);
    gtu_close("params", pg, pe, np, 1e-6, 1e-5);
    gtu_close("adam_m", mg, me, np, 1e-6, 1e-5);
    gtu_close("adam_v", vg, ve, np, 1e-6, 1e-5);
    /* three more: replays vs eager steps (t stays baked at 2 in the graph: the same on both sides) */
    gt_cuda_model_set_state(g, pe, NULL, me, ve, np);
    for (int i = 0; i < 3; i++) step(g, (int)B, y_dev, lstm, &opt, 2);
    float le3 = gt_cuda_model_last_loss(g);
    gt_cuda_model_set_state(g, pe, NULL, me, ve, np);
    for (int i = 0; i < 3; i++) TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
    float lg3 = gt_cuda_model_last_loss(g);
    printf("  after 3 more steps: loss eager %.9g graph %.9g\n", le3, lg3);
    TEST_CLOSE(lg3, le3, 0, 1e-4);
    TEST_CHECK(cudaGetLastError() == cudaSuccess);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(gr);
    free(p0), free(m0), free(v0), free(pe), free(me), free(ve), free(pg), free(mg), free(vg), free(xh), free(yh);
    gt_cuda_free(y_dev);
    gt_cuda_model_free(g);
    gt_model_free(h);
}

int main(void) {
    GTU_REQUIRE_GPU();
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++) test_kind((gt_model_kind)k);
    TEST_DONE();
}
