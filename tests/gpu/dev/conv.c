/* gt_gpu_conv_lab: the conv1d kernel lab (llm.c's dev/cuda model). Runs each
 * variant of the GPU convolution stack of s2p_cnn on one shape, checks it
 * against the CPU reference and times its forward and backward.
 *
 *   gt_gpu_conv_lab [--B 64] [--W 599] [--reps 20] [--warmup 3] [--check-batch 4]
 *                   [--only kernels|cudnn]
 *
 * The stack: the five conv layers of Zhang et al. 2018 as s2p_cnn has them
 * (channels 1 -> 30 -> 30 -> 40 -> 50 -> 50, kernels 10, 8, 6, 5, 5, 'same'
 * padding, bias + ReLU), window W. One forward is the five layers' forward;
 * one backward the five layers' backward from a gradient of the top layer's
 * output, as the device model runs it (no input gradient for layer 0). The
 * dense layers are not included: they are the same for every variant.
 * Variants (one table; add a row to try another):
 *   kernels_fp32  nn/ops/cuda/dense.cu: im2col per chunk of GT_CONV1D_CUDA_NB
 *                 samples + cuBLAS, a bias + ReLU kernel (the default path)
 *   cudnn_fp32    nn/ops/cuda/conv_cudnn.cu (GT_CONV_IMPL=cudnn): cuDNN's
 *                 convolutions with fixed deterministic algorithms, the bias and
 *                 ReLU fused into the forward, FMA math
 *   kernels_tf32  the kernels with cuBLAS on TF32 tensor cores (precision tf32)
 *   cudnn_tf32    cuDNN with tensor-core math allowed (PyTorch's default:
 *                 torch.backends.cudnn.allow_tf32 is on)
 * Check: each variant at batch --check-batch (<= B) against gt_conv1d_forward /
 * gt_conv1d_backward on the CPU: relative L2 error of every layer's output
 * and of every weight and bias gradient within the variant's tolerance
 * (fp32 1e-4, tf32 2e-2). A variant that fails its check makes the exit
 * status 1.
 * Timing: CUDA events around --reps calls after --warmup calls, the median of
 * per-call times, forward and backward apart; step = forward + backward;
 * samples/s = B / step; ratio = the variant's samples/s over kernels_fp32's.
 * Prints one "GT_CONV_BENCH ..." line per variant (parsed by tests/gpu/run.sh).
 * Exit 77 without a GPU; cuDNN variants print check=skip in a build without
 * cuDNN. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lab.h"
#include "nn/ops/ops.h"

#define NL 5
static const int CH[NL + 1] = {1, 30, 30, 40, 50, 50}, KS[NL] = {10, 8, 6, 5, 5};

/* host tensors: inputs and the reference results at the check batch */
typedef struct lab_host {
    float *x, *dtop, *w[NL], *b[NL];
    float *out[NL], *grads; /* grads: every layer's dW | db */
    size_t n_grads;
} lab_host;

/* device buffers sized for the timed batch */
typedef struct lab_dev {
    float *x, *dtop, *w[NL], *b[NL], *out[NL], *dbuf[2], *scratch, *grads, *dw[NL], *db[NL];
    gt_conv1d_cudnn *dnn[NL];
    float *area;
    size_t n_area;
    cudaStream_t st;
} lab_dev;

typedef struct variant {
    const char *name;
    int cudnn;
    gt_cuda_prec prec;
    double tol;
} variant;

static const variant VARIANTS[] = {
    {"kernels_fp32", 0, GT_PREC_FP32, 1e-4},
    {"cudnn_fp32", 1, GT_PREC_FP32, 1e-4},
    {"kernels_tf32", 0, GT_PREC_TF32, 2e-2},
    {"cudnn_tf32", 1, GT_PREC_TF32, 2e-2},
};

static void stack_forward(lab_dev *d, const variant *v, int B, int W) {
    const float *inp = d->x;
    for (int l = 0; l < NL; l++) {
        if (v->cudnn) gt_conv1d_cudnn_forward(d->dnn[l], d->out[l], inp, d->w[l], d->b[l], B, GT_ACT_RELU);
        else
            gt_conv1d_forward_cuda(d->out[l], d->scratch, inp, d->w[l], d->b[l], B, CH[l], CH[l + 1], W, KS[l],
                                   GT_ACT_RELU, d->st);
        inp = d->out[l];
    }
}

static void stack_backward(lab_dev *d, const variant *v, int B, int W) {
    const float *dcur = d->dtop;
    for (int l = NL - 1; l >= 0; l--) {
        float *dnext = l > 0 ? d->dbuf[l & 1] : NULL;
        const float *inp = l > 0 ? d->out[l - 1] : d->x;
        if (v->cudnn)
            gt_conv1d_cudnn_backward(d->dnn[l], dnext, d->dw[l], d->db[l], dcur, inp, d->w[l], d->out[l], B,
                                     GT_ACT_RELU);
        else
            gt_conv1d_backward_cuda(dnext, d->dw[l], d->db[l], dcur, inp, d->w[l], d->out[l], d->scratch, B, CH[l],
                                    CH[l + 1], W, KS[l], GT_ACT_RELU, d->st);
        dcur = dnext;
    }
}

/* median ms of reps forwards (which = 0) or backwards (which = 1) at the full batch */
typedef struct lab_call {
    lab_dev *d;
    const variant *v;
    int which, B, W;
} lab_call;
static void run_call(void *ctx) {
    const lab_call *c = ctx;
    if (c->which == 0) stack_forward(c->d, c->v, c->B, c->W);
    else stack_backward(c->d, c->v, c->B, c->W);
}
static float time_calls(lab_dev *d, const variant *v, int which, int B, int W, int reps, int warmup) {
    stack_forward(d, v, B, W); /* the backward reads a forward of the same batch */
    lab_call c = {d, v, which, B, W};
    return lab_median_ms(run_call, &c, d->st, reps, warmup);
}

/* CPU reference at batch Bc (the first Bc samples of x and dtop) */
static void cpu_reference(lab_host *h, int Bc, int W) {
    h->grads = calloc(h->n_grads, 4);
    size_t scr = 0;
    for (int l = 0; l < NL; l++) {
        size_t s = gt_conv1d_scratch_elems(CH[l], CH[l + 1], W, KS[l]);
        scr = s > scr ? s : scr;
    }
    float *scratch = malloc(scr * 4);
    const float *inp = h->x;
    for (int l = 0; l < NL; l++) {
        h->out[l] = malloc((size_t)Bc * CH[l + 1] * W * 4);
        gt_conv1d_forward(h->out[l], scratch, inp, h->w[l], h->b[l], Bc, CH[l], CH[l + 1], W, KS[l], GT_ACT_RELU);
        inp = h->out[l];
    }
    size_t off[NL], o = 0;
    for (int l = 0; l < NL; l++) off[l] = o, o += (size_t)CH[l + 1] * (CH[l] * KS[l] + 1);
    float *dcur = gtu_copy(h->dtop, (size_t)Bc * CH[NL] * W);
    for (int l = NL - 1; l >= 0; l--) {
        float *dnext = l > 0 ? malloc((size_t)Bc * CH[l] * W * 4) : NULL, *g = h->grads + off[l];
        gt_conv1d_backward(dnext, g, g + (size_t)CH[l + 1] * CH[l] * KS[l], dcur, l > 0 ? h->out[l - 1] : h->x,
                           h->w[l], h->out[l], scratch, Bc, CH[l], CH[l + 1], W, KS[l], GT_ACT_RELU);
        free(dcur);
        dcur = dnext;
    }
    free(scratch);
}

/* the variant at the check batch vs the CPU: worst relative L2 of the outputs and the gradients */
static double check_variant(lab_dev *d, const lab_host *h, const variant *v, int Bc, int W, double *e_out,
                            double *e_g) {
    cudaStreamSynchronize(d->st);
    cudaMemset(d->grads, 0, h->n_grads * 4);
    cudaDeviceSynchronize();
    stack_forward(d, v, Bc, W);
    stack_backward(d, v, Bc, W);
    cudaStreamSynchronize(d->st);
    *e_out = 0.0;
    for (int l = 0; l < NL; l++) {
        const size_t n = (size_t)Bc * CH[l + 1] * W;
        float *got = gtu_host(d->out[l], n);
        double e = lab_rel_l2(got, h->out[l], n);
        *e_out = e > *e_out ? e : *e_out;
        free(got);
    }
    float *g = gtu_host(d->grads, h->n_grads);
    *e_g = 0.0;
    size_t o = 0;
    for (int l = 0; l < NL; l++) {
        const size_t n[2] = {(size_t)CH[l + 1] * CH[l] * KS[l], (size_t)CH[l + 1]};
        for (int k = 0; k < 2; k++) {
            double e = lab_rel_l2(g + o, h->grads + o, n[k]);
            *e_g = e > *e_g ? e : *e_g;
            o += n[k];
        }
    }
    free(g);
    return *e_out > *e_g ? *e_out : *e_g;
}

int main(int argc, char **argv) {
    int B = 64, W = 599, reps = 20, warmup = 3, Bc = 4;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "--B") && has) B = atoi(argv[++i]);
        else if (!strcmp(a, "--W") && has) W = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && has) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--check-batch") && has) Bc = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && has) only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--B N] [--W N] [--reps N] [--warmup N] [--check-batch N] [--only kernels|cudnn]\n",
                    argv[0]);
            return 2;
        }
    }
    if (B < 1 || W < 1) {
        fprintf(stderr, "gt_gpu_conv_lab: bad shape B=%d W=%d\n", B, W);
        return 2;
    }
    if (reps < 1) reps = 1;
    if (warmup < 0) warmup = 0;
    if (Bc < 0) Bc = 0;
    if (Bc > B) Bc = B;
    if (gt_device_gpu_count() == 0) {
        fprintf(stderr, "gt_gpu_conv_lab: no CUDA device present (skipped)\n");
        return 77;
    }
    char desc[256];
    printf("gt_gpu_conv_lab: %s; s2p_cnn conv stack B=%d W=%d, %d reps after %d warm-up, CPU check at batch %d\n",
           gt_device_describe(0, desc, sizeof desc), B, W, reps, warmup, Bc);
    lab_host h;
    memset(&h, 0, sizeof h);
    h.x = gtu_rand((size_t)B * CH[0] * W, 1.0f);
    h.dtop = gtu_rand((size_t)B * CH[NL] * W, 0.1f);
    for (int l = 0; l < NL; l++) {
        const size_t nw = (size_t)CH[l + 1] * CH[l] * KS[l];
        const float ws = 1.0f / sqrtf((float)(CH[l] * KS[l])); /* PyTorch's init range: outputs of unit scale */
        h.w[l] = gtu_rand(nw, ws);
        h.b[l] = gtu_rand(CH[l + 1], ws);
        h.n_grads += nw + CH[l + 1];
    }
    if (Bc > 0) cpu_reference(&h, Bc, W);

    lab_dev d;
    memset(&d, 0, sizeof d);
    cudaStreamCreateWithFlags(&d.st, cudaStreamNonBlocking);
    d.x = gtu_dev(h.x, (size_t)B * CH[0] * W);
    d.dtop = gtu_dev(h.dtop, (size_t)B * CH[NL] * W);
    d.grads = gt_cuda_alloc_floats(h.n_grads);
    size_t o = 0, scr = 0, cmax = 0;
    for (int l = 0; l < NL; l++) {
        const size_t nw = (size_t)CH[l + 1] * CH[l] * KS[l];
        d.w[l] = gtu_dev(h.w[l], nw);
        d.b[l] = gtu_dev(h.b[l], CH[l + 1]);
        d.out[l] = gt_cuda_alloc_floats((size_t)B * CH[l + 1] * W);
        d.dw[l] = d.grads + o, o += nw;
        d.db[l] = d.grads + o, o += CH[l + 1];
        size_t s = gt_conv1d_cuda_scratch_elems(CH[l], CH[l + 1], W, KS[l]);
        scr = s > scr ? s : scr;
        s = gt_conv1d_cudnn_area_elems(B, CH[l], CH[l + 1], W, KS[l]);
        d.n_area = s > d.n_area ? s : d.n_area;
        cmax = (size_t)CH[l + 1] > cmax ? (size_t)CH[l + 1] : cmax;
    }
    d.scratch = gt_cuda_alloc_floats(scr);
    d.dbuf[0] = gt_cuda_alloc_floats((size_t)B * cmax * W);
    d.dbuf[1] = gt_cuda_alloc_floats((size_t)B * cmax * W);
    if (gt_cuda_cudnn_available()) d.area = gt_cuda_alloc_floats(d.n_area);

    int rc = 0;
    double base_sps = 0.0;
    for (size_t k = 0; k < sizeof VARIANTS / sizeof VARIANTS[0]; k++) {
        const variant *v = &VARIANTS[k];
        if (only && strncmp(v->name, only, strlen(only)) != 0) continue;
        gt_cuda_set_precision(v->prec); /* the kernels' cuBLAS math */
        if (v->cudnn) {
            if (!gt_cuda_cudnn_available()) {
                printf("GT_CONV_BENCH variant=%s check=skip (built without cuDNN)\n", v->name);
                continue;
            }
            int made = 1;
            for (int l = 0; l < NL && made; l++) {
                d.dnn[l] = gt_conv1d_cudnn_create(B, CH[l], CH[l + 1], W, KS[l], v->prec, d.area, d.n_area, d.st);
                made = d.dnn[l] != NULL;
            }
            if (!made) {
                printf("GT_CONV_BENCH variant=%s check=FAIL (cuDNN refused a layer: see the warning)\n", v->name);
                for (int l = 0; l < NL; l++) gt_conv1d_cudnn_free(d.dnn[l]), d.dnn[l] = NULL;
                rc = 1;
                continue;
            }
        }
        double e_out = 0.0, e_g = 0.0;
        int ok = 1;
        if (Bc > 0) ok = check_variant(&d, &h, v, Bc, W, &e_out, &e_g) <= v->tol;
        const float fms = time_calls(&d, v, 0, B, W, reps, warmup), bms = time_calls(&d, v, 1, B, W, reps, warmup);
        const double sps = B / ((fms + bms) * 1e-3);
        if (!strcmp(v->name, "kernels_fp32")) base_sps = sps;
        printf("GT_CONV_BENCH variant=%s B=%d W=%d fwd_ms=%.3f bwd_ms=%.3f step_ms=%.3f samples_per_s=%.1f "
               "ratio=%.3f fused=%d err_out=%.2e err_grad=%.2e check=%s\n",
               v->name, B, W, fms, bms, fms + bms, sps, base_sps > 0 ? sps / base_sps : 0.0,
               v->cudnn ? gt_conv1d_cudnn_fused(d.dnn[0]) : 0, e_out, e_g, Bc == 0 ? "none" : ok ? "ok" : "FAIL");
        fflush(stdout);
        if (!ok) {
            fprintf(stderr, "gt_gpu_conv_lab: %s outside its tolerance (outputs %.2e, gradients %.2e > %.1e)\n",
                    v->name, e_out, e_g, v->tol);
            rc = 1;
        }
        for (int l = 0; l < NL; l++) gt_conv1d_cudnn_free(d.dnn[l]), d.dnn[l] = NULL;
    }
    gt_cuda_set_precision(GT_PREC_FP32);
    return rc;
}
