/* tests/gpu/gpu_graph_util.h: device-model checks the GPU tests share: every
 * parameter tensor's gradient against a reference, and a training step
 * captured into a CUDA graph against the same step run eagerly
 * (test_graph_cuda.c, test_lstm_cudnn.c, test_conv_cudnn.c). */
#ifndef GT_TESTS_GPU_GRAPH_UTIL_H
#define GT_TESTS_GPU_GRAPH_UTIL_H

#include "gpu_test_util.h"
#include "nn/cuda_model.h"

/* got vs ref (n_params each) tensor by tensor of m's table, gtu_close's
 * tolerances, named "grad <tensor>". */
static inline void gtu_close_grads(const gt_model *m, const float *got, const float *ref, double atol_frac,
                                   double rtol) {
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        char name[96];
        snprintf(name, sizeof name, "grad %s", t->name);
        gtu_close(name, got + t->offset, ref + t->offset, t->n_elem, atol_frac, rtol);
    }
}

/* One step at AdamW step t: zero_grad, forward on the model's own input
 * buffer, the loss (masked MSE against y_dev (mask NULL) or, y_dev NULL,
 * the LSTM's next-step loss), backward, clipping at 1, AdamW lr 1e-3. */
static inline void gtu_model_step(gt_cuda_model *g, int B, const float *y_dev, const gt_adamw_config *opt, long t) {
    gt_cuda_model_zero_grad(g);
    gt_cuda_model_forward(g, gt_cuda_model_x(g), B, 1);
    if (y_dev) gt_cuda_model_loss_async(g, y_dev, NULL);
    else gt_cuda_model_lstm_loss_async(g);
    gt_cuda_model_backward(g, 1.0f);
    gt_cuda_model_clip_grad_norm_async(g, 1.0f);
    gt_cuda_model_adamw_step(g, opt, 1e-3f, t, 0);
}

/* From S0 (the state after one eager step), one eager step and one replay of
 * the captured step: loss within 1e-6 relative, params and both moments within
 * 1e-6 x max + 1e-5 relative. The capture must succeed (no allocation, no
 * host synchronisation inside a step). replays > 0: then that many more
 * replays against as many eager steps from the eager result (loss within
 * 1e-4; t stays baked at 2 in the graph, the same on both sides). */
static inline void gtu_check_graph_step(gt_cuda_model *g, int B, const float *y_dev, int replays) {
    const size_t np = gt_cuda_model_n_params(g);
    cudaStream_t st = gt_cuda_model_stream(g);
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
    gtu_model_step(g, B, y_dev, &opt, 1); /* S0: non-zero moments */
    float *p0 = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4);
    float *pe = malloc(np * 4), *me = malloc(np * 4), *ve = malloc(np * 4);
    float *pg = malloc(np * 4), *mg = malloc(np * 4), *vg = malloc(np * 4);
    gt_cuda_model_get_state(g, p0, NULL, m0, v0, np);
    gtu_model_step(g, B, y_dev, &opt, 2);
    float le = gt_cuda_model_last_loss(g);
    gt_cuda_model_get_state(g, pe, NULL, me, ve, np);
    gt_cuda_model_set_state(g, p0, NULL, m0, v0, np);
    cudaGraph_t gr;
    cudaGraphExec_t exec;
    TEST_REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    gtu_model_step(g, B, y_dev, &opt, 2);
    cudaError_t e = cudaStreamEndCapture(st, &gr);
    printf("  capture: %s\n", cudaGetErrorString(e));
    TEST_REQUIRE(e == cudaSuccess);
    TEST_REQUIRE(cudaGraphInstantiate(&exec, gr, 0) == cudaSuccess);
    TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
    float lg = gt_cuda_model_last_loss(g);
    gt_cuda_model_get_state(g, pg, NULL, mg, vg, np);
    printf("  loss eager %.9g graph %.9g\n", le, lg);
    TEST_CLOSE(lg, le, 0, 1e-6);
    gtu_close("params", pg, pe, np, 1e-6, 1e-5);
    gtu_close("adam_m", mg, me, np, 1e-6, 1e-5);
    gtu_close("adam_v", vg, ve, np, 1e-6, 1e-5);
    if (replays > 0) {
        gt_cuda_model_set_state(g, pe, NULL, me, ve, np);
        for (int i = 0; i < replays; i++) gtu_model_step(g, B, y_dev, &opt, 2);
        float le3 = gt_cuda_model_last_loss(g);
        gt_cuda_model_set_state(g, pe, NULL, me, ve, np);
        for (int i = 0; i < replays; i++) TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
        float lg3 = gt_cuda_model_last_loss(g);
        printf("  after %d more steps: loss eager %.9g graph %.9g\n", replays, le3, lg3);
        TEST_CLOSE(lg3, le3, 0, 1e-4);
    }
    TEST_CHECK(cudaGetLastError() == cudaSuccess);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(gr);
    free(p0), free(m0), free(v0), free(pe), free(me), free(ve), free(pg), free(mg), free(vg);
}

#endif
