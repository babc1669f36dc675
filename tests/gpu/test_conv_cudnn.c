/* conv1d on cuDNN (nn/ops/cuda/conv_cudnn.cu) against the CPU reference
 * (nn/ops/cpu/conv1d.c):
 *   - op level, every layer shape of s2p_cnn (C_in 1 -> 30 -> 30 -> 40 -> 50
 *     -> 50, kernels 10, 8, 6, 5, 5: even kernels take the padded-input way)
 *     at W in {99, 599} and B in {1, 7, 64}, plus small odd and even kernels
 *     1..4 and a layer without bias or activation: out, dinput, dweight and
 *     dbias at the fp32 tolerances of test_ops_cuda.c (per element atol 1e-5
 *     x max|ref| + rtol 1e-4; dbias 1e-6, 1e-5);
 *   - determinism: two backwards from zeroed gradients are bit-identical (the
 *     fixed algorithms IMPLICIT_PRECOMP_GEMM, BWD_DATA_ALGO_1,
 *     BWD_FILTER_ALGO_1, the bias sums without atomics);
 *   - accumulation: a second backward without zeroing gives twice the
 *     reference weight and bias gradients (+=), the input gradient unchanged (=);
 *   - device model s2p_cnn (GT_CONV_IMPL=cudnn): it runs on cuDNN, its device
 *     bytes equal the planner's (checked by gt_cuda_model_create), loss, pred
 *     and every gradient vs the CPU model (test_model_cuda.c's tolerances),
 *     also at a batch below max_batch; a second step is bit-identical;
 *   - CUDA graph: a captured step (forward, loss, backward, clip, AdamW) on
 *     the cuDNN path replays to the eager step's result bit for bit (its
 *     algorithms are deterministic) and holds no memory node.
 * Skips (77) without a GPU or without cuDNN in the build. */
#include "gpu_graph_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"
#include "nn/ops/ops.h"

static cudaStream_t g_stream; /* every op-level case: its cuBLAS and cuDNN handles are made once */
static float *g_area;         /* one cuDNN area for every op-level case (the largest) */
static size_t g_n_area;

static void test_layer(int B, int IC, int OC, int W, int K, gt_act act, int bias) {
    printf("== conv1d cuDNN: B=%d IC=%d OC=%d W=%d K=%d act=%s bias=%d ==\n", B, IC, OC, W, K,
           act == GT_ACT_RELU ? "relu" : "none", bias);
    const size_t ni = (size_t)B * IC * W, no = (size_t)B * OC * W, nw = (size_t)OC * IC * K;
    const float ws = 1.0f / sqrtf((float)(IC * K));
    float *x = gtu_rand(ni, 1.0f), *w = gtu_rand(nw, ws), *b = bias ? gtu_rand(OC, 0.1f) : NULL;
    float *out = malloc(no * 4), *scr = malloc(gt_conv1d_scratch_elems(IC, OC, W, K) * 4);
    gt_conv1d_forward(out, scr, x, w, b, B, IC, OC, W, K, act);
    float *g = gtu_rand(no, 1.0f), *gx = malloc(ni * 4), *gw = calloc(nw, 4), *gb = calloc(OC, 4);
    gt_conv1d_backward(gx, gw, bias ? gb : NULL, g, x, w, out, scr, B, IC, OC, W, K, act);

    gt_conv1d_cudnn *c = gt_conv1d_cudnn_create(64, IC, OC, W, K, GT_PREC_FP32, g_area, g_n_area, g_stream);
    TEST_REQUIRE(c != NULL);
    float *dx = gtu_dev(x, ni), *dw = gtu_dev(w, nw), *db = bias ? gtu_dev(b, OC) : NULL;
    float *dout = gt_cuda_alloc_floats(no), *dg = gtu_dev(g, no), *dgx = gt_cuda_alloc_floats(ni);
    float *dgw = gt_cuda_alloc_floats(nw), *dgb = gt_cuda_alloc_floats(OC);
    gt_conv1d_cudnn_forward(c, dout, dx, dw, db, B, act);
    TEST_CHECK(cudaStreamSynchronize(g_stream) == cudaSuccess);
    float *hout = gtu_host(dout, no);
    gtu_close("fwd out", hout, out, no, 1e-5, 1e-4);
    printf("  forward %s\n", gt_conv1d_cudnn_fused(c) ? "fused (cudnnConvolutionBiasActivationForward)" : "unfused");

    float *hx[2], *hw[2], *hb[2];
    for (int rep = 0; rep < 2; rep++) { /* from zeroed gradients, twice: bit-identical */
        TEST_CHECK(cudaMemsetAsync(dgw, 0, nw * 4, g_stream) == cudaSuccess);
        TEST_CHECK(cudaMemsetAsync(dgb, 0, OC * 4, g_stream) == cudaSuccess);
        gt_conv1d_cudnn_backward(c, dgx, dgw, bias ? dgb : NULL, dg, dx, dw, dout, B, act);
        TEST_CHECK(cudaStreamSynchronize(g_stream) == cudaSuccess);
        hx[rep] = gtu_host(dgx, ni), hw[rep] = gtu_host(dgw, nw), hb[rep] = gtu_host(dgb, OC);
    }
    gtu_close("bwd dinput", hx[0], gx, ni, 1e-5, 1e-4);
    gtu_close("bwd dweight", hw[0], gw, nw, 1e-5, 1e-4);
    if (bias) gtu_close("bwd dbias", hb[0], gb, OC, 1e-6, 1e-5);
    TEST_CHECK(memcmp(hx[0], hx[1], ni * 4) == 0);
    TEST_CHECK(memcmp(hw[0], hw[1], nw * 4) == 0);
    TEST_CHECK(memcmp(hb[0], hb[1], OC * 4) == 0);
    /* a second backward without zeroing: weight and bias gradients add up */
    gt_conv1d_cudnn_backward(c, dgx, dgw, bias ? dgb : NULL, dg, dx, dw, dout, B, act);
    TEST_CHECK(cudaStreamSynchronize(g_stream) == cudaSuccess);
    float *hw2 = gtu_host(dgw, nw), *hb2 = gtu_host(dgb, OC), *hx2 = gtu_host(dgx, ni);
    for (size_t i = 0; i < nw; i++) gw[i] *= 2.0f;
    for (int i = 0; i < OC; i++) gb[i] *= 2.0f;
    gtu_close("bwd dweight twice (+=)", hw2, gw, nw, 1e-5, 1e-4);
    if (bias) gtu_close("bwd dbias twice (+=)", hb2, gb, OC, 1e-6, 1e-5);
    TEST_CHECK(memcmp(hx2, hx[0], ni * 4) == 0); /* dinput assigned, not accumulated */
    gt_conv1d_cudnn_free(c);
    free(x), free(w), free(b), free(out), free(scr), free(g), free(gx), free(gw), free(gb), free(hout);
    for (int rep = 0; rep < 2; rep++) free(hx[rep]), free(hw[rep]), free(hb[rep]);
    free(hw2), free(hb2), free(hx2);
    gt_cuda_free(dx), gt_cuda_free(dw), gt_cuda_free(db), gt_cuda_free(dout), gt_cuda_free(dg);
    gt_cuda_free(dgx), gt_cuda_free(dgw), gt_cuda_free(dgb);
}

/* ------------------------------------------------------------ the model -- */
static void cnn_config(gt_model_config *c, int W, int max_batch) {
    gt_model_config_default(c, GT_MODEL_S2P_CNN); /* conv layers of Zhang et al. 2018 */
    c->window = W;
    c->hidden = 64; /* fc1 narrower than the paper's 1024: the CPU reference stays quick */
    c->max_batch = max_batch;
}

static void test_model(int W, int B) {
    gt_model_config cfg;
    cnn_config(&cfg, W, 7);
    printf("== device model s2p_cnn on %s vs CPU: W %d, batch %d of max %d ==\n", getenv("GT_CONV_IMPL"), W, B,
           cfg.max_batch);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 1234);
    const size_t np = m->n_params, ny = (size_t)B * m->n_y;
    float *x = gtu_rand((size_t)B * m->n_x, 1.0f), *y = gtu_rand(ny, 0.5f), *mask = malloc(ny * 4);
    for (size_t i = 0; i < ny; i++) mask[i] = (i % 5) ? 1.0f : 0.0f;
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    float lc = gt_model_loss(m, y, mask);
    gt_model_backward(m, 1.0f);

    gt_cuda_model *g = gt_cuda_model_create(m, GT_PREC_FP32);
    printf("  impl %s, device bytes %zu\n", gt_cuda_model_conv_impl(g), gt_cuda_model_device_bytes(g));
    TEST_REQUIRE(strncmp(gt_cuda_model_conv_impl(g), "cudnn", 5) == 0);
    float *got = malloc(np * 4), *first = malloc(np * 4);
    for (int rep = 0; rep < 2; rep++) {
        gt_cuda_model_zero_grad(g);
        gt_cuda_model_forward(g, x, B, 0);
        float lg = gt_cuda_model_loss(g, y, mask, 0);
        gt_cuda_model_backward(g, 1.0f);
        gt_cuda_model_get_grads(g, got, np);
        if (rep == 0) {
            printf("  loss gpu %.8g cpu %.8g\n", lg, lc);
            TEST_CLOSE(lg, lc, 0.0, 1e-5);
            float *pred = malloc(ny * 4);
            gt_cuda_model_get_pred(g, pred);
            gtu_close("pred", pred, m->pred, ny, 1e-5, 1e-4);
            free(pred);
            gtu_close_grads(m, got, m->grads, 1e-4, 1e-3);
            memcpy(first, got, np * 4);
        } else {
            TEST_CHECK(memcmp(first, got, np * 4) == 0); /* deterministic step */
        }
    }
    free(got), free(first), free(x), free(y), free(mask);
    gt_cuda_model_free(g);
    gt_model_free(m);
}

static void test_graph(void) {
    gt_model_config cfg;
    cnn_config(&cfg, 99, 7);
    printf("== device model s2p_cnn on %s: graph replay vs eager ==\n", getenv("GT_CONV_IMPL"));
    gt_model *h = gt_model_create(&cfg);
    gt_model_init(h, 7);
    const size_t B = (size_t)cfg.max_batch, ny = B * h->n_y;
    gt_cuda_model *g = gt_cuda_model_create(h, GT_PREC_FP32);
    TEST_REQUIRE(strncmp(gt_cuda_model_conv_impl(g), "cudnn", 5) == 0);
    float *xh = gtu_rand(B * h->n_x, 1.0f), *yh = gtu_rand(ny, 0.5f);
    gt_cuda_upload(gt_cuda_model_x(g), xh, B * h->n_x);
    float *y = gtu_dev(yh, ny);
    gtu_check_graph_step(g, (int)B, y, 0, 1); /* deterministic algorithms (conv_cudnn.cu): bit for bit */
    free(xh), free(yh);
    gt_cuda_free(y);
    gt_cuda_model_free(g);
    gt_model_free(h);
}

int main(void) {
    GTU_REQUIRE_GPU();
    if (!gt_cuda_cudnn_available()) TEST_SKIP("built without cuDNN: the convolutions run on the project's kernels");
    TEST_REQUIRE(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) == cudaSuccess);
    const int IC[5] = {1, 30, 30, 40, 50}, OC[5] = {30, 30, 40, 50, 50}, K[5] = {10, 8, 6, 5, 5};
    const int Ws[2] = {99, 599}, Bs[3] = {1, 7, 64};
    for (int l = 0; l < 5; l++) { /* the largest layer at W = 599 covers the small cases too */
        const size_t n = gt_conv1d_cudnn_area_elems(64, IC[l], OC[l], 599, K[l]);
        g_n_area = n > g_n_area ? n : g_n_area;
    }
    g_area = gt_cuda_alloc_floats(g_n_area);
    for (int k = 1; k <= 4; k++) test_layer(5, 3, 4, 17, k, GT_ACT_RELU, 1); /* padding rule, odd and even */
    test_layer(5, 3, 4, 17, 6, GT_ACT_NONE, 0);
    test_layer(5, 3, 4, 17, 5, GT_ACT_NONE, 1);
    for (int l = 0; l < 5; l++)
        for (int i = 0; i < 2; i++)
            for (int b = 0; b < 3; b++) test_layer(Bs[b], IC[l], OC[l], Ws[i], K[l], GT_ACT_RELU, 1);
    gt_cuda_free(g_area);
    setenv("GT_CONV_IMPL", "cudnn", 1); /* the device model's choice (gt_model_conv_cudnn) */
    test_model(99, 7);
    test_model(99, 3);
    test_model(599, 2);
    test_graph();
    TEST_DONE();
}
