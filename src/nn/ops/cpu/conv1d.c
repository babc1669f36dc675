/* nn/ops/cpu/conv1d.c: stride-1 'same' Conv1d: im2col + gt_gemm, or oneDNN's convolution primitives
 * (conv1d_dnnl.h) where the route rule below says they are faster.
 *
 * Samples are processed in chunks of NB: the chunk's im2col matrix
 * col (IC*K, NB*W) holds the NB samples side by side, so each GEMM has an
 * inner or outer dimension of NB*W (good shapes for sgemm even when the
 * channel counts are small), and the chunk's scratch stays cache-resident.
 * Bias and ReLU are fused into the pass that scatters the GEMM result from
 * (OC, NB*W) to the (B,OC,W) layout; the ReLU mask is fused into the pass that
 * gathers dout into (OC, NB*W) for backward.
 *
 * Threads: the chunks are independent tasks of gt_par_for (nn/ops/cpu/parallel.h),
 * each with single-threaded sgemm on its thread's slice of `scratch`. These
 * GEMMs (30-50 x NB*W x 150-300 on the s2p_cnn shapes) are too small for
 * OpenBLAS's own threading. The weight and bias gradients of a chunk are
 * formed in the thread's slice and added to dw/db in chunk order, so the
 * result is the same for any thread count. */
#include <cblas.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/cpu/conv1d_dnnl.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/ops.h"

#ifndef GT_CONV1D_NB
#define GT_CONV1D_NB 4 /* samples per chunk; measured on the s2p_cnn shapes */
#endif

/* One thread's slice: col (IC*K, NB*W) | tmp (OC, NB*W) | pdw (OC, IC*K) | pdb (OC). */
static size_t slice_elems(int IC, int OC, int W, int K) {
    return ((size_t)IC * K + (size_t)OC) * GT_CONV1D_NB * (size_t)W + (size_t)OC * IC * K + (size_t)OC;
}

size_t gt_conv1d_scratch_elems(int IC, int OC, int W, int K) {
    return (size_t)gt_par_max_threads() * slice_elems(IC, OC, W, K);
}

/* col (IC*K, ldc) columns [0, W) <- im2col of one sample inp (IC,W). */
static void im2col(float *col, size_t ldc, const float *inp, int IC, int W, int K) {
    const int pad_l = (K - 1) / 2;
    for (int ic = 0; ic < IC; ic++) {
        const float *src = inp + (size_t)ic * W;
        for (int k = 0; k < K; k++) {
            float *dst = col + ((size_t)ic * K + k) * ldc;
            int s = k - pad_l; // dst[t] = src[t + s]
            int t0 = s < 0 ? -s : 0;
            int t1 = s > 0 ? W - s : W;
            if (t1 < t0) t1 = t0;
            for (int t = 0; t < t0; t++) dst[t] = 0.0f;
            memcpy(dst + t0, src + t0 + s, (size_t)(t1 - t0) * sizeof(float));
            for (int t = t1; t < W; t++) dst[t] = 0.0f;
        }
    }
}

/* dinp (IC,W) = col2im of dcol (IC*K, ldc) columns [0, W) for one sample. */
static void col2im(float *dinp, const float *dcol, size_t ldc, int IC, int W, int K) {
    const int pad_l = (K - 1) / 2;
    for (int ic = 0; ic < IC; ic++) {
        float *dst = dinp + (size_t)ic * W;
        memset(dst, 0, (size_t)W * sizeof(float));
        for (int k = 0; k < K; k++) {
            const float *src = dcol + ((size_t)ic * K + k) * ldc;
            int s = k - pad_l; // dst[t + s] += src[t]
            int t0 = s < 0 ? -s : 0;
            int t1 = s > 0 ? W - s : W;
            float *d = dst + s;
            for (int t = t0; t < t1; t++) d[t] += src[t];
        }
    }
}

typedef struct conv_args {
    float *out, *dinp, *dw, *db, *scratch;
    const float *inp, *w, *b, *dout, *fout;
    int B, IC, OC, W, K;
    gt_act act;
    size_t slice;
    gt_par_ordered order;
} conv_args;

static void forward_chunk(void *ctx, int task, int tid) {
    const conv_args *a = ctx;
    const int IC = a->IC, OC = a->OC, W = a->W, K = a->K, CK = IC * K;
    const int b0 = task * GT_CONV1D_NB;
    const int nb = (a->B - b0) < GT_CONV1D_NB ? (a->B - b0) : GT_CONV1D_NB;
    const size_t ld = (size_t)nb * W;
    float *col = a->scratch + (size_t)tid * a->slice; // (CK, nb*W)
    float *tmp = col + (size_t)CK * ld;               // (OC, nb*W)
    for (int j = 0; j < nb; j++) im2col(col + (size_t)j * W, ld, a->inp + (size_t)(b0 + j) * IC * W, IC, W, K);
    // tmp (OC, nb*W) = w (OC, CK) @ col (CK, nb*W)
    gt_gemm(GT_GEMM_CONV1D | GT_GEMM_A_PARAM, CblasNoTrans, CblasNoTrans, OC, (int)ld, CK, 1.0f, a->w, CK, col, (int)ld, 0.0f,
                tmp, (int)ld);
    for (int j = 0; j < nb; j++) {
        for (int oc = 0; oc < OC; oc++) {
            const float *src = tmp + (size_t)oc * ld + (size_t)j * W;
            float *dst = a->out + ((size_t)(b0 + j) * OC + oc) * W; // (B,OC,W)
            const float bias = a->b ? a->b[oc] : 0.0f;
            if (a->act == GT_ACT_RELU)
                for (int t = 0; t < W; t++) dst[t] = gt_relu(src[t] + bias);
            else
                for (int t = 0; t < W; t++) dst[t] = src[t] + bias;
        }
    }
}

/* ------------------------------------------------------------- route --
 * The one place that decides, per layer shape, pass, precision and ISA,
 * whether the im2col route above or oneDNN's convolution primitives
 * (conv1d_dnnl.h) compute a layer. Measured op by op on the s2p_cnn shapes
 * (B=256 W=599, one thread, docs/benchmarks.md):
 *   bf16 on AMX: oneDNN (brgconv/jit amx) 1.7-3.0x faster from 30 input
 *     channels on, both passes; im2col 1.3-1.6x faster on the 1-channel
 *     first layer (the layout reorders dominate there).
 *   bf16 emulated (AVX-512 without bf16 units): im2col as fast or faster.
 *   fp32 on AVX-512: oneDNN (brgconv/jit avx512_core) 1.1-1.7x faster from
 *     30 input channels on, both passes; im2col faster on 1 channel.
 *   fp32 on AVX2 (a Zen 3 CPU; gt_gemm_lab --conv, im2col with its
 *     products on oneDNN's matmul by gemm.c's AVX2 rule): im2col faster in
 *     every pass: forward 0.75-1.05 (im2col / oneDNN's jit:avx2 time, 1 on
 *     the 30->30 layer within noise), weight gradient 0.40-0.55 (oneDNN's
 *     is gemm-based there), input gradient 0.63-1.07: never oneDNN. (The
 *     ISA-capped emulation on an AMX machine, with OpenBLAS products in
 *     im2col, had put oneDNN's forward 1.1-1.5x ahead.)
 * So: at least GT_CONV1D_DNNL_MIN_IC input channels and the ISA above, and
 * oneDNN has a real kernel (not its reference one) for the shape.
 * GT_CPU_CONV1D=im2col|onednn overrides the rule (measurements, tests;
 * onednn where oneDNN has no kernel still runs im2col). */
#ifndef GT_CONV1D_DNNL_MIN_IC
#define GT_CONV1D_DNNL_MIN_IC 16
#endif

#ifdef GT_HAVE_DNNL
static int use_dnnl(int B, int IC, int OC, int W, int K) {
    static atomic_int forced = -2; /* -2: not read yet, -1: no override, 0: im2col, 1: onednn */
    int f = atomic_load(&forced);
    if (f == -2) {
        const char *v = getenv("GT_CPU_CONV1D");
        f = !v || !*v ? -1 : !strcmp(v, "im2col") ? 0 : 1;
        atomic_store(&forced, f);
    }
    const gt_cpu_prec p = gt_cpu_get_precision();
    if (f == 0 || (p != GT_CPU_BF16 && p != GT_CPU_FP32)) return 0;
    if (f == -1) {
        const int avx512 = !strncmp(gt_cpu_isa_name(), "avx512", 6);
        if (IC < GT_CONV1D_DNNL_MIN_IC) return 0;
        if (p == GT_CPU_BF16 && !gt_cpu_has_bf16_units()) return 0;
        if (p == GT_CPU_FP32 && !avx512) return 0;
    }
    return gt_conv1d_dnnl_usable(p, B, IC, OC, W, K);
}
#endif

void gt_conv1d_forward(float *out, float *scratch, const float *inp, const float *w, const float *b,
                       int B, int IC, int OC, int W, int K, gt_act act) {
    if (B <= 0) return;
#ifdef GT_HAVE_DNNL
    if (use_dnnl(B, IC, OC, W, K)) {
        gt_conv1d_dnnl_forward(gt_cpu_get_precision(), out, inp, w, b, B, IC, OC, W, K, act);
        return;
    }
#endif
    conv_args a = {.out = out, .scratch = scratch, .inp = inp, .w = w, .b = b, .B = B, .IC = IC, .OC = OC,
                   .W = W, .K = K, .act = act, .slice = slice_elems(IC, OC, W, K)};
    gt_par_for((B + GT_CONV1D_NB - 1) / GT_CONV1D_NB, forward_chunk, &a);
}

static void backward_chunk(void *ctx, int task, int tid) {
    conv_args *a = ctx;
    const int IC = a->IC, OC = a->OC, W = a->W, K = a->K, CK = IC * K;
    const int b0 = task * GT_CONV1D_NB;
    const int nb = (a->B - b0) < GT_CONV1D_NB ? (a->B - b0) : GT_CONV1D_NB;
    const size_t ld = (size_t)nb * W;
    float *col = a->scratch + (size_t)tid * a->slice; // (CK, nb*W)
    float *dz = col + (size_t)CK * GT_CONV1D_NB * W;  // (OC, nb*W) gradient wrt the pre-activation
    float *pdw = dz + (size_t)OC * GT_CONV1D_NB * W;  // (OC, CK) this chunk's part of dw
    float *pdb = pdw + (size_t)OC * CK;               // (OC) this chunk's part of db
    for (int oc = 0; oc < OC; oc++) pdb[oc] = 0.0f;
    for (int j = 0; j < nb; j++) {
        for (int oc = 0; oc < OC; oc++) {
            size_t o = ((size_t)(b0 + j) * OC + oc) * W;
            const float *g = a->dout + o;
            float *d = dz + (size_t)oc * ld + (size_t)j * W;
            float acc = 0.0f;
            if (a->act == GT_ACT_RELU) {
                const float *y = a->fout + o;
                for (int t = 0; t < W; t++) {
                    d[t] = gt_relu_grad_from_out(y[t], g[t]);
                    acc += d[t];
                }
            } else {
                for (int t = 0; t < W; t++) {
                    d[t] = g[t];
                    acc += d[t];
                }
            }
            pdb[oc] += acc;
        }
    }
    for (int j = 0; j < nb; j++) im2col(col + (size_t)j * W, ld, a->inp + (size_t)(b0 + j) * IC * W, IC, W, K);
    // pdw (OC, CK) = dz (OC, nb*W) @ col^T (nb*W, CK)
    gt_gemm(GT_GEMM_CONV1D, CblasNoTrans, CblasTrans, OC, CK, (int)ld, 1.0f, dz, (int)ld, col, (int)ld, 0.0f,
                pdw, CK);
    if (a->dinp) {
        // dcol (CK, nb*W) = w^T (CK, OC) @ dz (OC, nb*W); reuses col's space
        gt_gemm(GT_GEMM_CONV1D | GT_GEMM_A_PARAM, CblasTrans, CblasNoTrans, CK, (int)ld, OC, 1.0f, a->w, CK, dz, (int)ld, 0.0f,
                    col, (int)ld);
        for (int j = 0; j < nb; j++)
            col2im(a->dinp + (size_t)(b0 + j) * IC * W, col + (size_t)j * W, ld, IC, W, K);
    }
    // dw += pdw, db += pdb, in chunk order
    gt_par_ordered_begin(&a->order, task);
    const size_t n_w = (size_t)OC * CK;
    float *dw = a->dw;
    for (size_t i = 0; i < n_w; i++) dw[i] += pdw[i];
    if (a->db)
        for (int oc = 0; oc < OC; oc++) a->db[oc] += pdb[oc];
    gt_par_ordered_end(&a->order, task);
}

void gt_conv1d_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *out, float *scratch, int B, int IC, int OC,
                        int W, int K, gt_act act) {
    if (B <= 0) return;
#ifdef GT_HAVE_DNNL
    if (use_dnnl(B, IC, OC, W, K)) {
        gt_conv1d_dnnl_backward(gt_cpu_get_precision(), dinp, dw, db, dout, inp, w, out, B, IC, OC, W, K, act);
        return;
    }
#endif
    conv_args a = {.dinp = dinp, .dw = dw, .db = db, .scratch = scratch, .inp = inp, .w = w, .dout = dout,
                   .fout = out, .B = B, .IC = IC, .OC = OC, .W = W, .K = K, .act = act,
                   .slice = slice_elems(IC, OC, W, K)};
    gt_par_ordered_init(&a.order);
    gt_par_for((B + GT_CONV1D_NB - 1) / GT_CONV1D_NB, backward_chunk, &a);
}
