/* tests/gpu/test_graph_cuda.c: a training step captured into a CUDA graph
 * and replayed gives the step's eager result, bit for bit. For every kind
 * (small shapes, fp32): from the same state S0 (params, AdamW moments), one
 * eager step (zero_grad, forward on device x, masked loss, backward, clip
 * 1.0, AdamW) and one replay of the captured step: loss, every parameter and
 * both moments compared with memcmp (the same kernels in the same order; the
 * gradient reductions use no float atomics, the loss and norm sums are
 * double). Then 3 replays in a row against 3 eager steps, bit for bit too.
 * The capture itself must succeed (no allocation, no host synchronisation
 * inside a step) and the captured step must hold no memory-allocation node
 * (cudaGraphGetNodes, cudaGraphNodeTypeMemAlloc: cuBLAS uses the context's
 * workspace, not a pool of its own). Skips (77) without a GPU. */
#include "gpu_graph_util.h"
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

static void test_kind(gt_model_kind kind) {
    gt_model_config c;
    small_config(kind, &c);
    printf("== %s: graph replay vs eager ==\n", gt_model_kind_name(kind));
    gt_model *h = gt_model_create(&c);
    gt_model_init(h, 7);
    const size_t B = (size_t)c.max_batch;
    gt_cuda_model *g = gt_cuda_model_create(h, GT_PREC_FP32);
    float *xh = gtu_rand(B * h->n_x, 1.0f), *yh = gtu_rand(B * h->n_y, 0.5f);
    gt_cuda_upload(gt_cuda_model_x(g), xh, B * h->n_x);
    float *y_dev = gtu_dev(yh, B * h->n_y);
    gtu_check_graph_step(g, (int)B, kind == GT_MODEL_LSTM ? NULL : y_dev, 3, 1);
    free(xh), free(yh);
    gt_cuda_free(y_dev);
    gt_cuda_model_free(g);
    gt_model_free(h);
}

int main(void) {
    GTU_REQUIRE_GPU();
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++) test_kind((gt_model_kind)k);
    TEST_DONE();
}
