/* The LSTM on cuDNN (nn/ops/cuda/lstm_cudnn.cu) against the CPU reference
 * (nn/ops/cpu/lstm.c) and the project's LSTM kernels (nn/ops/cuda/lstm.cu):
 *   - op level, a stack of 1 or 2 layers, input size 3 != hidden 32, for
 *     every T in {7, 64, 512}, TBPTT chunk K in {0 (whole window), 7, 64},
 *     batch B in {1, 5, 64}: h of every layer, the input gradient and every
 *     parameter gradient at the fp32 tolerances of test_model_cuda.c (per
 *     element atol 1e-4 x max|ref| + rtol 1e-3); the kernels' results checked
 *     against the same reference in the same run;
 *   - determinism: two backwards from zeroed gradients are bit-identical
 *     (CUDNN_RNN_ALGO_STANDARD, fixed call order, no atomics in our pieces);
 *   - accumulation: a second forward + backward without zeroing gives twice
 *     the reference gradients (backward adds, +=);
 *   - the same with one cuDNN call for the stack (stack = 1; h of the top
 *     layer only: cuDNN returns no other);
 *   - device model (GT_LSTM_IMPL=cudnn and cudnn-stack): it runs on cuDNN, its device bytes
 *     equal the planner's (checked by gt_cuda_model_create), loss, pred and
 *     every gradient vs the CPU model, also at a batch below max_batch;
 *   - CUDA graph: a captured step (forward, loss, backward, clip, AdamW) on
 *     the cuDNN path replays to the eager step's result (loss 1e-6, params
 *     and moments 1e-6 x max + 1e-5 relative: cuDNN documents no run-to-run
 *     determinism for its RNNs) and holds no memory node.
 * Skips (77) without a GPU or without cuDNN in the build. */
#include "gpu_graph_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"
#include "nn/model_lstm.h"
#include "nn/ops/lstm.h"

#define NL_MAX 2

typedef struct stack_host {
    int B, T, C, H, NL, K;
    float *x, *dh_top;                                    /* (B,T,C), (B,T,H) */
    float *w_ih[NL_MAX], *w_hh[NL_MAX], *b_ih[NL_MAX], *b_hh[NL_MAX];
    float *h[NL_MAX], *dx;                                /* reference outputs, dx of layer 0 */
    float *dw_ih[NL_MAX], *dw_hh[NL_MAX], *db_ih[NL_MAX], *db_hh[NL_MAX];
} stack_host;

static int in_size(const stack_host *s, int l) { return l == 0 ? s->C : s->H; }

/* CPU reference: forward of the stack, backward from dh_top, gradients once */
static void cpu_reference(stack_host *s) {
    const size_t BT = (size_t)s->B * s->T;
    const int H = s->H, G = 4 * H;
    float *c[NL_MAX], *gates[NL_MAX];
    const float *inp = s->x;
    for (int l = 0; l < s->NL; l++) {
        s->h[l] = calloc(BT * H, 4);
        c[l] = calloc(BT * H, 4);
        gates[l] = calloc(BT * G, 4);
        gt_lstm_forward(s->h[l], c[l], gates[l], inp, s->w_ih[l], s->w_hh[l], s->b_ih[l], s->b_hh[l], s->B, s->T,
                        in_size(s, l), H);
        inp = s->h[l];
    }
    float *dgates = calloc(BT * G, 4), *scratch = calloc(gt_lstm_scratch_elems(s->B, H), 4);
    float *dcur = gtu_copy(s->dh_top, BT * H);
    for (int l = s->NL - 1; l >= 0; l--) {
        const int In = in_size(s, l);
        float *dnext = calloc(BT * In, 4);
        s->dw_ih[l] = calloc((size_t)G * In, 4);
        s->dw_hh[l] = calloc((size_t)G * H, 4);
        s->db_ih[l] = calloc(G, 4);
        s->db_hh[l] = calloc(G, 4);
        gt_lstm_backward(dnext, s->dw_ih[l], s->dw_hh[l], s->db_ih[l], s->db_hh[l], dgates, scratch, dcur,
                         l > 0 ? s->h[l - 1] : s->x, s->w_ih[l], s->w_hh[l], s->h[l], c[l], gates[l], s->B, s->T, In,
                         H, s->K);
        free(dcur);
        dcur = dnext;
    }
    s->dx = dcur;
    for (int l = 0; l < s->NL; l++) free(c[l]), free(gates[l]);
    free(dgates);
    free(scratch);
}

typedef struct stack_dev {
    float *x, *dh_top, *w_ih[NL_MAX], *w_hh[NL_MAX], *b_ih[NL_MAX], *b_hh[NL_MAX];
    float *h[NL_MAX], *c[NL_MAX], *gates[NL_MAX], *dgates, *scratch, *dbuf[2];
    float *dw_ih[NL_MAX], *dw_hh[NL_MAX], *db_ih[NL_MAX], *db_hh[NL_MAX];
} stack_dev;

/* one forward + backward of the stack on the device: the kernels (d NULL),
 * cuDNN layer by layer, or cuDNN in one call for the stack (stack);
 * gradients accumulate; returns dx of layer 0 in dbuf */
static float *dev_pass(const stack_host *s, stack_dev *v, gt_lstm_cudnn *d, int stack, cudaStream_t st) {
    if (stack) {
        const int top = s->NL - 1;
        gt_lstm_cudnn_forward_stack(d, v->h[top], v->x, (const float *const *)v->w_ih, (const float *const *)v->w_hh,
                                    (const float *const *)v->b_ih, (const float *const *)v->b_hh, s->B);
        gt_lstm_cudnn_backward_stack(d, v->dbuf[0], v->dw_ih, v->dw_hh, v->db_ih, v->db_hh, v->dh_top, v->x, v->h[top],
                                     s->B);
        TEST_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
        return v->dbuf[0];
    }
    const float *inp = v->x;
    for (int l = 0; l < s->NL; l++) {
        if (d) gt_lstm_cudnn_forward(d, l, v->h[l], inp, v->w_ih[l], v->w_hh[l], v->b_ih[l], v->b_hh[l], s->B);
        else
            gt_lstm_forward_cuda(v->h[l], v->c[l], v->gates[l], inp, v->w_ih[l], v->w_hh[l], v->b_ih[l], v->b_hh[l],
                                 s->B, s->T, in_size(s, l), s->H, st);
        inp = v->h[l];
    }
    const float *dcur = v->dh_top;
    float *dnext = NULL;
    for (int l = s->NL - 1; l >= 0; l--) {
        dnext = v->dbuf[l & 1];
        const float *x = l > 0 ? v->h[l - 1] : v->x;
        if (d)
            gt_lstm_cudnn_backward(d, l, dnext, v->dw_ih[l], v->dw_hh[l], v->db_ih[l], v->db_hh[l], dcur, x, v->h[l],
                                   s->B);
        else
            gt_lstm_backward_cuda(dnext, v->dw_ih[l], v->dw_hh[l], v->db_ih[l], v->db_hh[l], v->dgates, v->scratch,
                                  dcur, x, v->w_ih[l], v->w_hh[l], v->h[l], v->c[l], v->gates[l], s->B, s->T,
                                  in_size(s, l), s->H, s->K, st);
        dcur = dnext;
    }
    TEST_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    return dnext;
}

static void zero_grads(const stack_host *s, stack_dev *v) {
    const int G = 4 * s->H;
    for (int l = 0; l < s->NL; l++) {
        cudaMemset(v->dw_ih[l], 0, (size_t)G * in_size(s, l) * 4);
        cudaMemset(v->dw_hh[l], 0, (size_t)G * s->H * 4);
        cudaMemset(v->db_ih[l], 0, (size_t)G * 4);
        cudaMemset(v->db_hh[l], 0, (size_t)G * 4);
    }
    cudaDeviceSynchronize();
}

/* all gradients of the stack, host copy, concatenated */
static float *grads_host(const stack_host *s, const stack_dev *v, size_t *n_out) {
    const int G = 4 * s->H;
    size_t n = 0;
    for (int l = 0; l < s->NL; l++) n += (size_t)G * (in_size(s, l) + s->H + 2);
    float *g = malloc(n * 4), *p = g;
    for (int l = 0; l < s->NL; l++) {
        const size_t ni = (size_t)G * in_size(s, l), nh = (size_t)G * s->H;
        gt_cuda_download(p, v->dw_ih[l], ni), p += ni;
        gt_cuda_download(p, v->dw_hh[l], nh), p += nh;
        gt_cuda_download(p, v->db_ih[l], G), p += G;
        gt_cuda_download(p, v->db_hh[l], G), p += G;
    }
    *n_out = n;
    return g;
}

/* compare h of every layer (the top one only: top_only), dx and every
 * gradient (scaled by `times`) with the reference */
static void compare(const char *who, const stack_host *s, const stack_dev *v, const float *dx_dev, int times,
                    int top_only) {
    const size_t BT = (size_t)s->B * s->T;
    const int G = 4 * s->H;
    char what[128];
    for (int l = top_only ? s->NL - 1 : 0; l < s->NL; l++) {
        float *h = gtu_host(v->h[l], BT * s->H);
        snprintf(what, sizeof what, "%s h layer %d", who, l);
        gtu_close(what, h, s->h[l], BT * s->H, 1e-4, 1e-3);
        free(h);
    }
    float *dx = gtu_host(dx_dev, BT * s->C);
    snprintf(what, sizeof what, "%s dx", who);
    gtu_close(what, dx, s->dx, BT * s->C, 1e-4, 1e-3);
    free(dx);
    for (int l = 0; l < s->NL; l++) {
        const float *ref[4] = {s->dw_ih[l], s->dw_hh[l], s->db_ih[l], s->db_hh[l]};
        const float *got_d[4] = {v->dw_ih[l], v->dw_hh[l], v->db_ih[l], v->db_hh[l]};
        const size_t n[4] = {(size_t)G * in_size(s, l), (size_t)G * s->H, G, G};
        const char *nm[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
        for (int k = 0; k < 4; k++) {
            float *got = gtu_host(got_d[k], n[k]), *want = gtu_copy(ref[k], n[k]);
            for (size_t i = 0; i < n[k]; i++) want[i] *= (float)times;
            snprintf(what, sizeof what, "%s grad %s_l%d (x%d)", who, nm[k], l, times);
            gtu_close(what, got, want, n[k], 1e-4, 1e-3);
            free(got);
            free(want);
        }
    }
}

static cudaStream_t g_stream; /* one stream for every op-level case: its cuBLAS and cuDNN handles are made once */

static void test_stack(int T, int K, int B, int NL) {
    stack_host s;
    memset(&s, 0, sizeof s);
    s.B = B, s.T = T, s.C = 3, s.H = 32, s.NL = NL, s.K = K;
    const int C = s.C, H = s.H, G = 4 * H;
    const size_t BT = (size_t)B * T;
    const float ws = 1.0f / sqrtf((float)H); /* PyTorch's init range: stable recurrences at T = 512 */
    printf("== lstm stack: T=%d K=%d B=%d layers=%d C=%d H=%d ==\n", T, K, B, NL, C, H);
    s.x = gtu_rand(BT * C, 1.0f);
    s.dh_top = gtu_rand(BT * H, 0.1f);
    for (int l = 0; l < NL; l++) {
        s.w_ih[l] = gtu_rand((size_t)G * in_size(&s, l), ws);
        s.w_hh[l] = gtu_rand((size_t)G * H, ws);
        s.b_ih[l] = gtu_rand(G, ws);
        s.b_hh[l] = gtu_rand(G, ws);
    }
    cpu_reference(&s);

    cudaStream_t st = g_stream;
    stack_dev v;
    memset(&v, 0, sizeof v);
    v.x = gtu_dev(s.x, BT * C);
    v.dh_top = gtu_dev(s.dh_top, BT * H);
    for (int l = 0; l < NL; l++) {
        const int In = in_size(&s, l);
        v.w_ih[l] = gtu_dev(s.w_ih[l], (size_t)G * In);
        v.w_hh[l] = gtu_dev(s.w_hh[l], (size_t)G * H);
        v.b_ih[l] = gtu_dev(s.b_ih[l], G);
        v.b_hh[l] = gtu_dev(s.b_hh[l], G);
        v.h[l] = gt_cuda_alloc_floats(BT * H);
        v.c[l] = gt_cuda_alloc_floats(BT * H);
        v.gates[l] = gt_cuda_alloc_floats(BT * G);
        v.dw_ih[l] = gt_cuda_alloc_floats((size_t)G * In);
        v.dw_hh[l] = gt_cuda_alloc_floats((size_t)G * H);
        v.db_ih[l] = gt_cuda_alloc_floats(G);
        v.db_hh[l] = gt_cuda_alloc_floats(G);
    }
    v.dgates = gt_cuda_alloc_floats(BT * G);
    v.scratch = gt_cuda_alloc_floats(gt_lstm_cuda_scratch_elems(B, T, H));
    v.dbuf[0] = gt_cuda_alloc_floats(BT * (H > C ? H : C));
    v.dbuf[1] = gt_cuda_alloc_floats(BT * (H > C ? H : C));

    /* the project's kernels, for the same reference */
    zero_grads(&s, &v);
    float *dx = dev_pass(&s, &v, NULL, 0, st);
    compare("kernels", &s, &v, dx, 1, 0);

    /* cuDNN, layer by layer and as one stack: two passes from zero
     * bit-identical, then a third accumulates */
    const size_t n_area = gt_lstm_cudnn_area_elems(B, T, C, H, NL, K);
    float *area = gt_cuda_alloc_floats(n_area);
    for (int stack = 0; stack <= 1; stack++) {
        const char *who = stack ? "cudnn-stack" : "cudnn";
        for (int l = 0; l < NL; l++) cudaMemset(v.h[l], 0, BT * H * 4); /* a stale h cannot pass for a result */
        gt_lstm_cudnn *d = gt_lstm_cudnn_create(B, T, C, H, NL, K, stack, GT_PREC_FP32, area, n_area, st);
        TEST_REQUIRE(d != NULL);
        zero_grads(&s, &v);
        dx = dev_pass(&s, &v, d, stack, st);
        compare(who, &s, &v, dx, 1, stack);
        size_t ng = 0;
        float *g1 = grads_host(&s, &v, &ng), *dx1 = gtu_host(dx, BT * C);
        zero_grads(&s, &v);
        dx = dev_pass(&s, &v, d, stack, st);
        float *g2 = grads_host(&s, &v, &ng), *dx2 = gtu_host(dx, BT * C);
        const int same = memcmp(g1, g2, ng * 4) == 0 && memcmp(dx1, dx2, BT * C * 4) == 0;
        printf("  %s: two backwards bit-identical: %s\n", who, same ? "yes" : "NO");
        TEST_CHECK(same);
        dx = dev_pass(&s, &v, d, stack, st);
        compare(who, &s, &v, dx, 2, stack);
        gt_lstm_cudnn_free(d);
        free(g1), free(g2), free(dx1), free(dx2);
    }
    gt_cuda_free(area);
    gt_cuda_free(v.x), gt_cuda_free(v.dh_top), gt_cuda_free(v.dgates), gt_cuda_free(v.scratch);
    gt_cuda_free(v.dbuf[0]), gt_cuda_free(v.dbuf[1]);
    for (int l = 0; l < NL; l++) {
        gt_cuda_free(v.w_ih[l]), gt_cuda_free(v.w_hh[l]), gt_cuda_free(v.b_ih[l]), gt_cuda_free(v.b_hh[l]);
        gt_cuda_free(v.h[l]), gt_cuda_free(v.c[l]), gt_cuda_free(v.gates[l]);
        gt_cuda_free(v.dw_ih[l]), gt_cuda_free(v.dw_hh[l]), gt_cuda_free(v.db_ih[l]), gt_cuda_free(v.db_hh[l]);
        free(s.w_ih[l]), free(s.w_hh[l]), free(s.b_ih[l]), free(s.b_hh[l]), free(s.h[l]);
        free(s.dw_ih[l]), free(s.dw_hh[l]), free(s.db_ih[l]), free(s.db_hh[l]);
    }
    free(s.x), free(s.dh_top), free(s.dx);
}

/* ------------------------------------------------------------ the model -- */
static void lstm_config(gt_model_config *c, int tbptt) {
    gt_model_config_default(c, GT_MODEL_LSTM);
    c->window = 20; c->n_in = 4; c->n_out = 4; c->hidden = 16; c->n_layers = 2; c->tbptt = tbptt; c->max_batch = 3;
}

static void test_model(int tbptt, int B) {
    gt_model_config cfg;
    lstm_config(&cfg, tbptt);
    printf("== device model on %s vs CPU: tbptt %d, batch %d of max %d ==\n", getenv("GT_LSTM_IMPL"), tbptt, B,
           cfg.max_batch);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 1234);
    const size_t np = m->n_params;
    float *x = gtu_rand((size_t)B * m->n_x, 1.0f);
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    float lc = gt_model_lstm_loss(m);
    gt_model_backward(m, 1.0f);

    gt_cuda_model *g = gt_cuda_model_create(m, GT_PREC_FP32);
    printf("  impl %s, device bytes %zu\n", gt_cuda_model_lstm_impl(g), gt_cuda_model_device_bytes(g));
    TEST_REQUIRE(strcmp(gt_cuda_model_lstm_impl(g), getenv("GT_LSTM_IMPL")) == 0);
    float *got = malloc(np * 4), *first = malloc(np * 4);
    for (int rep = 0; rep < 2; rep++) {
        gt_cuda_model_zero_grad(g);
        gt_cuda_model_forward(g, x, B, 0);
        float lg = gt_cuda_model_lstm_loss(g);
        gt_cuda_model_backward(g, 1.0f);
        gt_cuda_model_get_grads(g, got, np);
        if (rep == 0) {
            printf("  loss gpu %.8g cpu %.8g\n", lg, lc);
            TEST_CLOSE(lg, lc, 0.0, 1e-5);
            float *pred = malloc((size_t)B * m->n_y * 4);
            gt_cuda_model_get_pred(g, pred);
            gtu_close("pred", pred, m->pred, (size_t)B * m->n_y, 1e-5, 1e-4);
            free(pred);
            gtu_close_grads(m, got, m->grads, 1e-4, 1e-3);
            memcpy(first, got, np * 4);
        } else {
            TEST_CHECK(memcmp(first, got, np * 4) == 0); /* deterministic step */
        }
    }
    free(got);
    free(first);
    free(x);
    gt_cuda_model_free(g);
    gt_model_free(m);
}

static void test_graph(void) {
    gt_model_config cfg;
    lstm_config(&cfg, 7);
    printf("== device model on %s: graph replay vs eager ==\n", getenv("GT_LSTM_IMPL"));
    gt_model *h = gt_model_create(&cfg);
    gt_model_init(h, 7);
    const size_t B = (size_t)cfg.max_batch;
    gt_cuda_model *g = gt_cuda_model_create(h, GT_PREC_FP32);
    TEST_REQUIRE(strcmp(gt_cuda_model_lstm_impl(g), getenv("GT_LSTM_IMPL")) == 0);
    float *xh = gtu_rand(B * h->n_x, 1.0f);
    gt_cuda_upload(gt_cuda_model_x(g), xh, B * h->n_x);
    gtu_check_graph_step(g, (int)B, NULL, 0, 0); /* cuDNN documents no run-to-run determinism for RNNs */
    free(xh);
    gt_cuda_model_free(g);
    gt_model_free(h);
}

int main(void) {
    GTU_REQUIRE_GPU();
    if (!gt_cuda_cudnn_available()) TEST_SKIP("built without cuDNN: the LSTM runs on the project's kernels only");
    TEST_REQUIRE(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) == cudaSuccess);
    const int Ts[3] = {7, 64, 512}, Ks[3] = {0, 7, 64}, Bs[3] = {1, 5, 64};
    for (int nl = 1; nl <= NL_MAX; nl++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++)
                for (int b = 0; b < 3; b++) test_stack(Ts[i], Ks[k], Bs[b], nl);
    const char *impls[2] = {"cudnn", "cudnn-stack"};
    for (int i = 0; i < 2; i++) {
        setenv("GT_LSTM_IMPL", impls[i], 1); /* the device model's choice (gt_model_lstm_cudnn) */
        test_model(7, 3);
        test_model(0, 3);
        test_model(7, 2);
        test_graph();
    }
    TEST_DONE();
}
