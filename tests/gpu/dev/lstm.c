/* gt_gpu_lstm_lab: the LSTM kernel lab (llm.c's dev/cuda model). Runs each
 * variant of the GPU LSTM layer stack on one shape, checks it against the CPU
 * reference and times its forward and backward.
 *
 *   gt_gpu_lstm_lab [--B 64] [--T 512] [--C 32] [--H 128] [--layers 2] [--K 0]
 *                   [--reps 20] [--warmup 3] [--check-batch 4] [--only kernels|cudnn|cudnn_stack]
 *
 * Default shape: the benchmark's LSTM (tests/gpu/bench_gpu.c and
 * peer_torch.py: B = 64, T = 512, 32 channels, hidden 128, 2 layers, full
 * BPTT); --K sets the TBPTT chunk. One forward is the stack's forward, one
 * backward the stack's backward from dL/dh of the top layer (the head's
 * linear layer is not included: it is the same for every variant).
 * Variants (one table; add a row to try another):
 *   kernels_fp32  nn/ops/cuda/lstm.cu: one cuBLAS GEMM + one cell kernel per step
 *   cudnn_fp32    nn/ops/cuda/lstm_cudnn.cu: cuDNN's RNN API, one call per
 *                 layer (GT_LSTM_IMPL=cudnn), FMA math
 *   cudnn_stack_fp32  one cuDNN call for the whole stack, as PyTorch makes it
 *                 (GT_LSTM_IMPL=cudnn-stack): cuDNN may overlap the layers
 *   kernels_tf32  the kernels with cuBLAS on TF32 tensor cores (precision tf32)
 *   cudnn_tf32, cudnn_stack_tf32  cuDNN with tensor-core math allowed
 *                 (PyTorch's default: torch.backends.cudnn.allow_tf32 is on)
 * Check: each variant at batch --check-batch (<= B; the objects take any
 * batch up to the timed one) against gt_lstm_forward / gt_lstm_backward on
 * the CPU: relative L2 error of every layer's h, of the input gradient and of
 * every parameter gradient within the variant's tolerance (fp32 1e-4, tf32
 * 2e-2). A variant that fails its check makes the exit status 1.
 * Timing: CUDA events around --reps calls after --warmup calls, the median of
 * per-call times, forward and backward apart; step = forward + backward;
 * samples/s = B / step; ratio = the variant's samples/s over kernels_fp32's.
 * Prints one "GT_LSTM_BENCH ..." line per variant (parsed by tests/gpu/run.sh).
 * Exit 77 without a GPU; cuDNN variants print check=skip in a build without
 * cuDNN. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lab.h"
#include "nn/ops/lstm.h"

#define LAB_MAX_LAYERS 4

typedef struct lab_shape {
    int B, T, C, H, NL, K;
} lab_shape;

static int in_size(const lab_shape *s, int l) { return l == 0 ? s->C : s->H; }

/* host tensors: inputs and the reference results at the check batch */
typedef struct lab_host {
    float *x, *dh, *w_ih[LAB_MAX_LAYERS], *w_hh[LAB_MAX_LAYERS], *b_ih[LAB_MAX_LAYERS], *b_hh[LAB_MAX_LAYERS];
    float *h[LAB_MAX_LAYERS], *dx, *grads; /* grads: every layer's dW_ih | dW_hh | db_ih | db_hh */
    size_t n_grads;
} lab_host;

/* device buffers sized for the timed batch */
typedef struct lab_dev {
    float *x, *dh, *w_ih[LAB_MAX_LAYERS], *w_hh[LAB_MAX_LAYERS], *b_ih[LAB_MAX_LAYERS], *b_hh[LAB_MAX_LAYERS];
    float *h[LAB_MAX_LAYERS], *c[LAB_MAX_LAYERS], *gates[LAB_MAX_LAYERS], *dgates, *scratch, *dbuf[2];
    float *grads; /* same layout as lab_host.grads */
    float *dw_ih[LAB_MAX_LAYERS], *dw_hh[LAB_MAX_LAYERS], *db_ih[LAB_MAX_LAYERS], *db_hh[LAB_MAX_LAYERS];
    gt_lstm_cudnn *dnn;
    float *area;
    cudaStream_t st;
} lab_dev;

typedef struct variant {
    const char *name;
    int cudnn; /* 0 kernels, 1 cuDNN layer by layer, 2 cuDNN one call for the stack */
    gt_cuda_prec prec;
    double tol;
} variant;

static const variant VARIANTS[] = {
    {"kernels_fp32", 0, GT_PREC_FP32, 1e-4},
    {"cudnn_fp32", 1, GT_PREC_FP32, 1e-4},
    {"cudnn_stack_fp32", 2, GT_PREC_FP32, 1e-4},
    {"kernels_tf32", 0, GT_PREC_TF32, 2e-2},
    {"cudnn_tf32", 1, GT_PREC_TF32, 2e-2},
    {"cudnn_stack_tf32", 2, GT_PREC_TF32, 2e-2},
};

static void stack_forward(const lab_shape *s, lab_dev *d, const variant *v, int B) {
    if (v->cudnn == 2) {
        gt_lstm_cudnn_forward_stack(d->dnn, d->h[s->NL - 1], d->x, (const float *const *)d->w_ih,
                                    (const float *const *)d->w_hh, (const float *const *)d->b_ih,
                                    (const float *const *)d->b_hh, B);
        return;
    }
    const float *inp = d->x;
    for (int l = 0; l < s->NL; l++) {
        if (v->cudnn)
            gt_lstm_cudnn_forward(d->dnn, l, d->h[l], inp, d->w_ih[l], d->w_hh[l], d->b_ih[l], d->b_hh[l], B);
        else
            gt_lstm_forward_cuda(d->h[l], d->c[l], d->gates[l], inp, d->w_ih[l], d->w_hh[l], d->b_ih[l], d->b_hh[l], B,
                                 s->T, in_size(s, l), s->H, d->st);
        inp = d->h[l];
    }
}

static float *stack_backward(const lab_shape *s, lab_dev *d, const variant *v, int B) {
    if (v->cudnn == 2) {
        gt_lstm_cudnn_backward_stack(d->dnn, d->dbuf[0], d->dw_ih, d->dw_hh, d->db_ih, d->db_hh, d->dh, d->x,
                                     d->h[s->NL - 1], B);
        return d->dbuf[0];
    }
    const float *dcur = d->dh;
    float *dnext = NULL;
    for (int l = s->NL - 1; l >= 0; l--) {
        dnext = d->dbuf[l & 1];
        const float *x = l > 0 ? d->h[l - 1] : d->x;
        if (v->cudnn)
            gt_lstm_cudnn_backward(d->dnn, l, dnext, d->dw_ih[l], d->dw_hh[l], d->db_ih[l], d->db_hh[l], dcur, x,
                                   d->h[l], B);
        else
            gt_lstm_backward_cuda(dnext, d->dw_ih[l], d->dw_hh[l], d->db_ih[l], d->db_hh[l], d->dgates, d->scratch,
                                  dcur, x, d->w_ih[l], d->w_hh[l], d->h[l], d->c[l], d->gates[l], B, s->T,
                                  in_size(s, l), s->H, s->K, d->st);
        dcur = dnext;
    }
    return dnext;
}

/* median ms of reps forwards (which = 0) or backwards (which = 1) at the full batch */
typedef struct lab_call {
    const lab_shape *s;
    lab_dev *d;
    const variant *v;
    int which;
} lab_call;
static void run_call(void *ctx) {
    const lab_call *c = ctx;
    if (c->which == 0) stack_forward(c->s, c->d, c->v, c->s->B);
    else stack_backward(c->s, c->d, c->v, c->s->B);
}
static float time_calls(const lab_shape *s, lab_dev *d, const variant *v, int which, int reps, int warmup) {
    stack_forward(s, d, v, s->B); /* the backward reads a forward of the same batch */
    lab_call c = {s, d, v, which};
    return lab_median_ms(run_call, &c, d->st, reps, warmup);
}

/* CPU reference at batch Bc (the first Bc samples of x and dh) */
static void cpu_reference(const lab_shape *s, lab_host *h, int Bc) {
    const size_t BT = (size_t)Bc * s->T;
    const int H = s->H, G = 4 * H;
    float *c[LAB_MAX_LAYERS], *gates[LAB_MAX_LAYERS];
    const float *inp = h->x;
    for (int l = 0; l < s->NL; l++) {
        h->h[l] = calloc(BT * H, 4);
        c[l] = calloc(BT * H, 4);
        gates[l] = calloc(BT * G, 4);
        gt_lstm_forward(h->h[l], c[l], gates[l], inp, h->w_ih[l], h->w_hh[l], h->b_ih[l], h->b_hh[l], Bc, s->T,
                        in_size(s, l), H);
        inp = h->h[l];
    }
    h->grads = calloc(h->n_grads, 4);
    float *dgates = calloc(BT * G, 4), *scratch = calloc(gt_lstm_scratch_elems(Bc, H), 4);
    float *dcur = gtu_copy(h->dh, BT * H);
    size_t off[LAB_MAX_LAYERS], o = 0;
    for (int l = 0; l < s->NL; l++) off[l] = o, o += (size_t)G * (in_size(s, l) + H + 2);
    for (int l = s->NL - 1; l >= 0; l--) {
        const int In = in_size(s, l);
        float *dnext = calloc(BT * In, 4), *g = h->grads + off[l];
        gt_lstm_backward(dnext, g, g + (size_t)G * In, g + (size_t)G * (In + H), g + (size_t)G * (In + H) + G, dgates,
                         scratch, dcur, l > 0 ? h->h[l - 1] : h->x, h->w_ih[l], h->w_hh[l], h->h[l], c[l], gates[l],
                         Bc, s->T, In, H, s->K);
        free(dcur);
        dcur = dnext;
    }
    h->dx = dcur;
    for (int l = 0; l < s->NL; l++) free(c[l]), free(gates[l]);
    free(dgates);
    free(scratch);
}

/* the variant at the check batch vs the CPU: worst relative L2 of h, dx and the gradients */
static double check_variant(const lab_shape *s, lab_dev *d, const lab_host *h, const variant *v, int Bc, double *e_h,
                            double *e_g) {
    const size_t BT = (size_t)Bc * s->T;
    cudaStreamSynchronize(d->st);
    cudaMemset(d->grads, 0, h->n_grads * 4);
    cudaDeviceSynchronize();
    stack_forward(s, d, v, Bc);
    float *dx_dev = stack_backward(s, d, v, Bc);
    cudaStreamSynchronize(d->st);
    *e_h = 0.0;
    for (int l = v->cudnn == 2 ? s->NL - 1 : 0; l < s->NL; l++) { /* the stack call gives the top h only */
        float *got = gtu_host(d->h[l], BT * s->H);
        double e = lab_rel_l2(got, h->h[l], BT * s->H);
        *e_h = e > *e_h ? e : *e_h;
        free(got);
    }
    float *dx = gtu_host(dx_dev, BT * s->C), *g = gtu_host(d->grads, h->n_grads);
    double edx = lab_rel_l2(dx, h->dx, BT * s->C);
    *e_g = edx;
    size_t o = 0;
    const int G = 4 * s->H;
    for (int l = 0; l < s->NL; l++) {
        const size_t n[4] = {(size_t)G * in_size(s, l), (size_t)G * s->H, G, G};
        for (int k = 0; k < 4; k++) {
            double e = lab_rel_l2(g + o, h->grads + o, n[k]);
            *e_g = e > *e_g ? e : *e_g;
            o += n[k];
        }
    }
    free(dx);
    free(g);
    return *e_h > *e_g ? *e_h : *e_g;
}

int main(int argc, char **argv) {
    lab_shape s = {64, 512, 32, 128, 2, 0};
    int reps = 20, warmup = 3, Bc = 4;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "--B") && has) s.B = atoi(argv[++i]);
        else if (!strcmp(a, "--T") && has) s.T = atoi(argv[++i]);
        else if (!strcmp(a, "--C") && has) s.C = atoi(argv[++i]);
        else if (!strcmp(a, "--H") && has) s.H = atoi(argv[++i]);
        else if (!strcmp(a, "--layers") && has) s.NL = atoi(argv[++i]);
        else if (!strcmp(a, "--K") && has) s.K = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && has) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--check-batch") && has) Bc = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && has) only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--B N] [--T N] [--C N] [--H N] [--layers N] [--K N] [--reps N] [--warmup N] "
                    "[--check-batch N] [--only kernels|cudnn|cudnn_stack]\n",
                    argv[0]);
            return 2;
        }
    }
    if (s.B < 1 || s.T < 1 || s.C < 1 || s.H < 1 || s.NL < 1 || s.NL > LAB_MAX_LAYERS || s.K < 0) {
        fprintf(stderr, "gt_gpu_lstm_lab: bad shape B=%d T=%d C=%d H=%d layers=%d (1..%d) K=%d\n", s.B, s.T, s.C, s.H,
                s.NL, LAB_MAX_LAYERS, s.K);
        return 2;
    }
    if (reps < 1) reps = 1;
    if (warmup < 0) warmup = 0;
    if (Bc < 0) Bc = 0;
    if (Bc > s.B) Bc = s.B;
    if (gt_device_gpu_count() == 0) {
        fprintf(stderr, "gt_gpu_lstm_lab: no CUDA device present (skipped)\n");
        return 77;
    }
    char desc[256];
    printf("gt_gpu_lstm_lab: %s; B=%d T=%d C=%d H=%d layers=%d K=%d, %d reps after %d warm-up, CPU check at batch %d\n",
           gt_device_describe(0, desc, sizeof desc), s.B, s.T, s.C, s.H, s.NL, s.K, reps, warmup, Bc);
    const int H = s.H, G = 4 * H, In_max = s.C > H ? s.C : H;
    const size_t BT = (size_t)s.B * s.T;
    const float ws = 1.0f / sqrtf((float)H);
    lab_host h;
    memset(&h, 0, sizeof h);
    h.x = gtu_rand(BT * s.C, 1.0f);
    h.dh = gtu_rand(BT * H, 0.1f);
    for (int l = 0; l < s.NL; l++) {
        h.w_ih[l] = gtu_rand((size_t)G * in_size(&s, l), ws);
        h.w_hh[l] = gtu_rand((size_t)G * H, ws);
        h.b_ih[l] = gtu_rand(G, ws);
        h.b_hh[l] = gtu_rand(G, ws);
        h.n_grads += (size_t)G * (in_size(&s, l) + H + 2);
    }
    if (Bc > 0) cpu_reference(&s, &h, Bc);

    lab_dev d;
    memset(&d, 0, sizeof d);
    cudaStreamCreateWithFlags(&d.st, cudaStreamNonBlocking);
    d.x = gtu_dev(h.x, BT * s.C);
    d.dh = gtu_dev(h.dh, BT * H);
    d.grads = gt_cuda_alloc_floats(h.n_grads);
    size_t o = 0;
    for (int l = 0; l < s.NL; l++) {
        const int In = in_size(&s, l);
        d.w_ih[l] = gtu_dev(h.w_ih[l], (size_t)G * In);
        d.w_hh[l] = gtu_dev(h.w_hh[l], (size_t)G * H);
        d.b_ih[l] = gtu_dev(h.b_ih[l], G);
        d.b_hh[l] = gtu_dev(h.b_hh[l], G);
        d.h[l] = gt_cuda_alloc_floats(BT * H);
        d.c[l] = gt_cuda_alloc_floats(BT * H);
        d.gates[l] = gt_cuda_alloc_floats(BT * G);
        d.dw_ih[l] = d.grads + o, o += (size_t)G * In;
        d.dw_hh[l] = d.grads + o, o += (size_t)G * H;
        d.db_ih[l] = d.grads + o, o += G;
        d.db_hh[l] = d.grads + o, o += G;
    }
    d.dgates = gt_cuda_alloc_floats(BT * G);
    d.scratch = gt_cuda_alloc_floats(gt_lstm_cuda_scratch_elems(s.B, s.T, H));
    d.dbuf[0] = gt_cuda_alloc_floats(BT * In_max);
    d.dbuf[1] = gt_cuda_alloc_floats(BT * In_max);
    const size_t n_area = gt_lstm_cudnn_area_elems(s.B, s.T, s.C, H, s.NL, s.K);
    if (gt_cuda_cudnn_available()) d.area = gt_cuda_alloc_floats(n_area);

    int rc = 0;
    double base_sps = 0.0;
    for (size_t k = 0; k < sizeof VARIANTS / sizeof VARIANTS[0]; k++) {
        const variant *v = &VARIANTS[k];
        if (only && strncmp(v->name, only, strlen(only)) != 0) continue;
        gt_cuda_set_precision(v->prec); /* the kernels' cuBLAS math */
        if (v->cudnn) {
            if (!gt_cuda_cudnn_available()) {
                printf("GT_LSTM_BENCH variant=%s check=skip (built without cuDNN)\n", v->name);
                continue;
            }
            d.dnn = gt_lstm_cudnn_create(s.B, s.T, s.C, H, s.NL, s.K, v->cudnn == 2, v->prec, d.area, n_area, d.st);
            if (!d.dnn) {
                printf("GT_LSTM_BENCH variant=%s check=FAIL (cuDNN sizes over their bounds: see the warning)\n",
                       v->name);
                rc = 1;
                continue;
            }
        }
        double e_h = 0.0, e_g = 0.0;
        int ok = 1;
        if (Bc > 0) ok = check_variant(&s, &d, &h, v, Bc, &e_h, &e_g) <= v->tol;
        const float fms = time_calls(&s, &d, v, 0, reps, warmup), bms = time_calls(&s, &d, v, 1, reps, warmup);
        const double sps = s.B / ((fms + bms) * 1e-3);
        if (!strcmp(v->name, "kernels_fp32")) base_sps = sps;
        printf("GT_LSTM_BENCH variant=%s B=%d T=%d C=%d H=%d layers=%d K=%d fwd_ms=%.3f bwd_ms=%.3f step_ms=%.3f "
               "samples_per_s=%.1f ratio=%.3f err_h=%.2e err_grad=%.2e check=%s\n",
               v->name, s.B, s.T, s.C, H, s.NL, s.K, fms, bms, fms + bms, sps, base_sps > 0 ? sps / base_sps : 0.0,
               e_h, e_g, Bc == 0 ? "none" : ok ? "ok" : "FAIL");
        fflush(stdout);
        if (!ok) {
            fprintf(stderr, "gt_gpu_lstm_lab: %s outside its tolerance (h %.2e, gradients %.2e > %.1e)\n", v->name,
                    e_h, e_g, v->tol);
            rc = 1;
        }
        if (d.dnn) gt_lstm_cudnn_free(d.dnn);
        d.dnn = NULL;
    }
    gt_cuda_set_precision(GT_PREC_FP32);
    return rc;
}
