/* tests/gpu/gpu_graph_util.h: device-model checks the GPU tests share: every
 * parameter tensor's gradient against a reference, and a training step
 * captured into a CUDA graph against the same step run eagerly
 * (test_graph_cuda.c, test_lstm_cudnn.c, test_conv_cudnn.c,
 * test_graph_fallback.c). */
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

/* Memory nodes (cudaGraphNodeTypeMemAlloc / MemFree) in gr, child graphs
 * included: a captured step must hold none (the cuBLAS workspace is the
 * context's own, set after its stream: nn/ops/cuda/context.cu). */
static inline size_t gtu_graph_mem_nodes(cudaGraph_t gr) {
    size_t n = 0, k = 0;
    TEST_REQUIRE(cudaGraphGetNodes(gr, NULL, &n) == cudaSuccess);
    if (n == 0) return 0;
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)malloc(n * sizeof *nodes);
    TEST_REQUIRE(cudaGraphGetNodes(gr, nodes, &n) == cudaSuccess);
    for (size_t i = 0; i < n; i++) {
        enum cudaGraphNodeType t;
        TEST_REQUIRE(cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess);
        if (t == cudaGraphNodeTypeMemAlloc || t == cudaGraphNodeTypeMemFree) {
            k++;
        } else if (t == cudaGraphNodeTypeGraph) {
            cudaGraph_t child;
            TEST_REQUIRE(cudaGraphChildGraphNodeGetGraph(nodes[i], &child) == cudaSuccess);
            k += gtu_graph_mem_nodes(child);
        }
    }
    free(nodes);
    return k;
}

/* got and ref (n floats) are the same bits; else one line with the first
 * difference and a failure. */
static inline int gtu_same(const char *what, const float *got, const float *ref, size_t n) {
    if (memcmp(got, ref, n * sizeof *got) == 0) {
        printf("  %-40s n=%-8zu bit-identical\n", what, n);
        return 1;
    }
    size_t i = 0, bad = 0;
    while (memcmp(got + i, ref + i, sizeof *got) == 0) i++;
    for (size_t j = i; j < n; j++) bad += memcmp(got + j, ref + j, sizeof *got) != 0;
    printf("  %-40s n=%-8zu %zu differ, first at %zu (got %.9g ref %.9g)  FAIL\n", what, n, bad, i, got[i], ref[i]);
    gt_test_failures++;
    return 0;
}

/* The state after a step: params, both AdamW moments, the loss. */
typedef struct {
    float *p, *m, *v;
    float loss;
} gtu_snap;
static inline void gtu_snap_get(gt_cuda_model *g, gtu_snap *s) {
    const size_t np = gt_cuda_model_n_params(g);
    if (!s->p) s->p = malloc(np * 4), s->m = malloc(np * 4), s->v = malloc(np * 4);
    s->loss = gt_cuda_model_last_loss(g);
    gt_cuda_model_get_state(g, s->p, NULL, s->m, s->v, np);
}
static inline void gtu_snap_free(gtu_snap *s) { free(s->p), free(s->m), free(s->v); }
/* got vs ref: bit for bit (exact) or loss within 1e-6 relative and every
 * element within 1e-6 x max + 1e-5 relative. */
static inline void gtu_snap_check(const char *what, size_t np, const gtu_snap *got, const gtu_snap *ref,
                                   int exact) {
    printf("  %s: loss got %.9g ref %.9g\n", what, got->loss, ref->loss);
    if (exact) {
        gtu_same("loss", &got->loss, &ref->loss, 1);
        gtu_same("params", got->p, ref->p, np);
        gtu_same("adam_m", got->m, ref->m, np);
        gtu_same("adam_v", got->v, ref->v, np);
    } else {
        TEST_CLOSE(got->loss, ref->loss, 0, 1e-6);
        gtu_close("params", got->p, ref->p, np, 1e-6, 1e-5);
        gtu_close("adam_m", got->m, ref->m, np, 1e-6, 1e-5);
        gtu_close("adam_v", got->v, ref->v, np, 1e-6, 1e-5);
    }
}

/* From S0 (the state after one eager step), one eager step and one replay of
 * the captured step. The capture must succeed (no allocation, no host
 * synchronisation inside a step) and hold no memory node. exact: the
 * replay's loss, params and both moments are the eager step's bits (the same
 * kernels in the same order, none with float atomics); else within
 * gtu_snap_check's tolerances. replays > 0: then that many more replays
 * against as many eager steps from the eager result, compared the same way
 * (t stays baked at 2 in the graph, the same on both sides). */
static inline void gtu_check_graph_step(gt_cuda_model *g, int B, const float *y_dev, int replays, int exact) {
    const size_t np = gt_cuda_model_n_params(g);
    cudaStream_t st = gt_cuda_model_stream(g);
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
    gtu_model_step(g, B, y_dev, &opt, 1); /* S0: non-zero moments */
    gtu_snap s0 = {0}, se = {0}, sg = {0};
    gtu_snap_get(g, &s0);
    gtu_model_step(g, B, y_dev, &opt, 2);
    gtu_snap_get(g, &se);
    gt_cuda_model_set_state(g, s0.p, NULL, s0.m, s0.v, np);
    cudaGraph_t gr;
    cudaGraphExec_t exec;
    TEST_REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    gtu_model_step(g, B, y_dev, &opt, 2);
    cudaError_t e = cudaStreamEndCapture(st, &gr);
    printf("  capture: %s\n", cudaGetErrorString(e));
    TEST_REQUIRE(e == cudaSuccess);
    size_t n_nodes = 0, n_mem = gtu_graph_mem_nodes(gr);
    TEST_REQUIRE(cudaGraphGetNodes(gr, NULL, &n_nodes) == cudaSuccess);
    printf("  captured step: %zu nodes, %zu memory nodes\n", n_nodes, n_mem);
    TEST_CHECK(n_nodes > 0);
    TEST_EQ_INT((long)n_mem, 0L);
    TEST_REQUIRE(cudaGraphInstantiate(&exec, gr, 0) == cudaSuccess);
    TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
    gtu_snap_get(g, &sg);
    gtu_snap_check("graph vs eager", np, &sg, &se, exact);
    if (replays > 0) {
        gt_cuda_model_set_state(g, se.p, NULL, se.m, se.v, np);
        for (int i = 0; i < replays; i++) gtu_model_step(g, B, y_dev, &opt, 2);
        gtu_snap e3 = {0}, g3 = {0};
        gtu_snap_get(g, &e3);
        gt_cuda_model_set_state(g, se.p, NULL, se.m, se.v, np);
        for (int i = 0; i < replays; i++) TEST_REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
        gtu_snap_get(g, &g3);
        char what[64];
        snprintf(what, sizeof what, "after %d more steps", replays);
        gtu_snap_check(what, np, &g3, &e3, exact);
        gtu_snap_free(&e3), gtu_snap_free(&g3);
    }
    TEST_CHECK(cudaGetLastError() == cudaSuccess);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(gr);
    gtu_snap_free(&s0), gtu_snap_free(&se), gtu_snap_free(&sg);
}

#endif
