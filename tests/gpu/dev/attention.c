/* gt_gpu_attn_lab: the attention kernel lab (llm.c's dev/cuda model). Runs
 * each variant of the CUDA attention on one shape, checks it against the CPU
 * reference and times its forward and backward.
 *
 *   gt_gpu_attn_lab [--B 8] [--L 4096] [--C 256] [--NH 8] [--reps 20] [--warmup 3]
 *                   [--check-batches 1] [--only simt|tc|mma]
 *
 * Default shape: s2p_tf's attention at the benchmark's batch (tests/gpu/
 * bench_gpu.c: B = 8, L = 4096, d_model 256, 8 heads, hs 32); one call is one
 * layer of the 8-layer model.
 * Variants (one table; add a row to try another):
 *   simt_fp32  attention.cu: fp32 SIMT kernels (FP32 and TF32 precision)
 *   tc_bf16    attention_tc.cu: bf16 tensor cores (BF16 precision)
 *   tc_fp16    attention_tc.cu: fp16 tensor cores (FP16 precision)
 *   mma_bf16   attention_mma.cu: bf16 mma.sync m16n8k16, scores in registers,
 *              cp.async double buffer (BF16 precision with
 *              gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA), GT_ATTN_IMPL=mma)
 * Check: the first --check-batches batch elements (batches are independent)
 * against gt_attention_forward / gt_attention_backward on the CPU: relative
 * L2 error of out and of dqkv within the variant's tolerance (those of
 * tests/gpu/test_ops_cuda.c and test_attention_tc.c). A variant that fails
 * its check makes the exit status 1.
 * Timing: CUDA events around --reps calls after --warmup calls, the median
 * of per-call times. FLOPs (the FlashAttention convention, defined once here
 * and in docs/benchmarks.md): forward 4 B NH L^2 hs (Q K^T and P V), backward
 * 2.5x forward (S recomputed, dP, dV, dQ, dK). Both backward paths do more:
 * the dQ and dK/dV passes each recompute S and dP, 3.5x forward in all; the
 * figure counts the algorithm's work, not the implementation's. Share of peak:
 * over the H100/H200 SXM dense bf16 peak, 989 TFLOP/s, for every variant.
 * Prints one "GT_ATTN_BENCH ..." line per variant (parsed by tests/gpu/run.sh).
 * Exit 77 without a GPU. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lab.h"
#include "nn/ops/attention.h"

#define BF16_PEAK_FLOPS 989e12

typedef struct lab_shape {
    int B, L, C, NH;
} lab_shape;

typedef struct variant {
    const char *name;
    gt_cuda_prec prec; /* the precision mode that selects it in the model */
    void (*fwd)(float *out, float *lse, float *scratch, const float *qkv, const lab_shape *s);
    void (*bwd)(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out, const float *lse,
                const lab_shape *s);
    double tol_out, tol_grad; /* relative L2 vs the CPU */
} variant;

static void simt_fwd(float *out, float *lse, float *scratch, const float *qkv, const lab_shape *s) {
    gt_cuda_set_precision(GT_PREC_FP32); /* the entry point takes the SIMT kernels outside BF16 */
    gt_attention_forward_cuda(out, lse, scratch, qkv, s->B, s->L, s->C, s->NH, 0);
}
static void simt_bwd(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                     const float *lse, const lab_shape *s) {
    gt_cuda_set_precision(GT_PREC_FP32);
    gt_attention_backward_cuda(dqkv, scratch, dout, qkv, out, lse, s->B, s->L, s->C, s->NH, 0);
}
static void tc_run(gt_attention_tc_type type, int bwd, float *out, float *lse, float *scratch, const float *qkv,
                   float *dqkv, const float *dout, const lab_shape *s) {
    if (bwd) gt_attention_tc_backward_rows_cuda(type, dqkv, scratch, dout, qkv, out, lse, s->B, s->L, s->C, s->NH, 0,
                                                s->L, 0);
    else gt_attention_tc_forward_rows_cuda(type, out, lse, qkv, s->B, s->L, s->C, s->NH, 0, s->L, 0);
}
static void tc_fwd(float *out, float *lse, float *scratch, const float *qkv, const lab_shape *s) {
    tc_run(GT_ATTENTION_TC_BF16, 0, out, lse, scratch, qkv, NULL, NULL, s);
}
static void tc_bwd(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                   const float *lse, const lab_shape *s) {
    tc_run(GT_ATTENTION_TC_BF16, 1, (float *)out, (float *)lse, scratch, qkv, dqkv, dout, s);
}
static void tc16_fwd(float *out, float *lse, float *scratch, const float *qkv, const lab_shape *s) {
    tc_run(GT_ATTENTION_TC_FP16, 0, out, lse, scratch, qkv, NULL, NULL, s);
}
static void tc16_bwd(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                     const float *lse, const lab_shape *s) {
    tc_run(GT_ATTENTION_TC_FP16, 1, (float *)out, (float *)lse, scratch, qkv, dqkv, dout, s);
}

static void mma_fwd(float *out, float *lse, float *scratch, const float *qkv, const lab_shape *s) {
    gt_attention_mma_forward_rows_cuda(out, lse, scratch, qkv, s->B, s->L, s->C, s->NH, 0, s->L, 0);
}
static void mma_bwd(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                    const float *lse, const lab_shape *s) {
    gt_attention_mma_backward_rows_cuda(dqkv, scratch, dout, qkv, out, lse, s->B, s->L, s->C, s->NH, 0, s->L, 0);
}

static const variant VARIANTS[] = {
    {"simt_fp32", GT_PREC_FP32, simt_fwd, simt_bwd, 1e-4, 1e-4},
    {"tc_bf16", GT_PREC_BF16, tc_fwd, tc_bwd, 1.5e-2, 3e-2},
    /* fp16 tiles: 3 more mantissa bits than bf16, so 8x tighter than bf16 would be; 4x allows for dS */
    {"tc_fp16", GT_PREC_FP16, tc16_fwd, tc16_bwd, 4e-3, 8e-3},
    /* the bf16 tensor cores' bounds, as tc_bf16 (tests/gpu/test_attention_mma.c) */
    {"mma_bf16", GT_PREC_BF16, mma_fwd, mma_bwd, 1.5e-2, 3e-2},
};

/* median ms of reps calls of fwd (which = 0) or bwd (which = 1) */
typedef struct lab_bufs {
    float *qkv, *out, *lse, *dout, *dqkv, *scratch;
} lab_bufs;
typedef struct lab_call {
    const variant *v;
    const lab_bufs *d;
    const lab_shape *s;
    int which;
} lab_call;
static void run_call(void *ctx) {
    const lab_call *c = ctx;
    if (c->which == 0) c->v->fwd(c->d->out, c->d->lse, c->d->scratch, c->d->qkv, c->s);
    else c->v->bwd(c->d->dqkv, c->d->scratch, c->d->dout, c->d->qkv, c->d->out, c->d->lse, c->s);
}
static float time_calls(const variant *v, const lab_bufs *d, const lab_shape *s, int which, int reps, int warmup) {
    lab_call c = {v, d, s, which};
    return lab_median_ms(run_call, &c, 0, reps, warmup);
}

int main(int argc, char **argv) {
    lab_shape s = {8, 4096, 256, 8};
    int reps = 20, warmup = 3, nb_check = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "--B") && has) s.B = atoi(argv[++i]);
        else if (!strcmp(a, "--L") && has) s.L = atoi(argv[++i]);
        else if (!strcmp(a, "--C") && has) s.C = atoi(argv[++i]);
        else if (!strcmp(a, "--NH") && has) s.NH = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && has) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--check-batches") && has) nb_check = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && has) only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--B N] [--L N] [--C N] [--NH N] [--reps N] [--warmup N] [--check-batches N] "
                    "[--only simt|tc|mma]\n",
                    argv[0]);
            return 2;
        }
    }
    if (s.B < 1 || s.L < 1 || s.NH < 1 || s.C % s.NH != 0 || s.C / s.NH > 128 || s.C / s.NH < 1) {
        fprintf(stderr, "gt_gpu_attn_lab: bad shape B=%d L=%d C=%d NH=%d (C a multiple of NH, head size <= 128)\n",
                s.B, s.L, s.C, s.NH);
        return 2;
    }
    if (reps < 1) reps = 1;
    if (warmup < 0) warmup = 0;
    if (nb_check < 0) nb_check = 0;
    if (nb_check > s.B) nb_check = s.B;
    if (gt_device_gpu_count() == 0) {
        fprintf(stderr, "gt_gpu_attn_lab: no CUDA device present (skipped)\n");
        return 77;
    }
    char desc[256];
    const int hs = s.C / s.NH;
    printf("gt_gpu_attn_lab: %s; B=%d L=%d C=%d NH=%d hs=%d, %d reps after %d warm-up, CPU check on %d batch(es)\n",
           gt_device_describe(0, desc, sizeof desc), s.B, s.L, s.C, s.NH, hs, reps, warmup, nb_check);
    const size_t nqkv = (size_t)s.B * s.L * 3 * s.C, no = (size_t)s.B * s.L * s.C, nl = (size_t)s.B * s.NH * s.L;
    float *qkv = gtu_rand(nqkv, 1.5f), *g = gtu_rand(no, 1.0f);

    /* CPU reference on the first nb_check batch elements (a prefix of every tensor) */
    const size_t cqkv = (size_t)nb_check * s.L * 3 * s.C, co = (size_t)nb_check * s.L * s.C,
                 cl = (size_t)nb_check * s.NH * s.L;
    float *ref_o = calloc(co ? co : 1, 4), *ref_l = calloc(cl ? cl : 1, 4), *ref_g = calloc(cqkv ? cqkv : 1, 4);
    if (nb_check > 0) {
        float *scr = malloc(gt_attention_scratch_elems(s.L) * 4);
        gt_attention_forward(ref_o, ref_l, scr, qkv, nb_check, s.L, s.C, s.NH);
        gt_attention_backward(ref_g, scr, g, qkv, ref_o, ref_l, nb_check, s.L, s.C, s.NH);
        free(scr);
    }

    /* scratch: D for the SIMT and wmma paths; D and the bf16 copies for mma_bf16 (the larger) */
    const size_t n_scr_tc = gt_attention_cuda_scratch_elems(s.B, s.L, s.NH),
                 n_scr_mma = gt_attention_mma_scratch_elems(s.B, s.L, s.C, s.NH);
    lab_bufs d = {gtu_dev(qkv, nqkv), gt_cuda_alloc_floats(no), gt_cuda_alloc_floats(nl), gtu_dev(g, no),
                  gt_cuda_alloc_floats(nqkv), gt_cuda_alloc_floats(n_scr_mma > n_scr_tc ? n_scr_mma : n_scr_tc)};
    const double fwd_flops = 4.0 * s.B * s.NH * (double)s.L * s.L * hs, bwd_flops = 2.5 * fwd_flops;
    int rc = 0;
    for (size_t k = 0; k < sizeof VARIANTS / sizeof VARIANTS[0]; k++) {
        const variant *v = &VARIANTS[k];
        if (only && strncmp(v->name, only, strlen(only)) != 0) continue;
        if ((v->prec == GT_PREC_BF16 || v->prec == GT_PREC_FP16) && !gt_attention_tc_usable()) {
            printf("GT_ATTN_BENCH variant=%s check=skip (device below compute capability 8.0)\n", v->name);
            continue;
        }
        const gt_attn_variant kv = v->fwd == mma_fwd ? GT_ATTN_MMA : v->prec == GT_PREC_FP32 ? GT_ATTN_SIMT
                                                                                             : GT_ATTN_WMMA;
        if (!gt_attention_cuda_fits(kv, GT_ATTN_FWD, hs) || !gt_attention_cuda_fits(kv, GT_ATTN_BWD, hs)) {
            printf("GT_ATTN_BENCH variant=%s check=skip (its shared memory at hs %d does not fit this device)\n",
                   v->name, hs);
            continue;
        }
        /* check: forward, then the backward from this variant's own out and lse (as in training) */
        v->fwd(d.out, d.lse, d.scratch, d.qkv, &s);
        v->bwd(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, &s);
        double e_out = 0.0, e_grad = 0.0;
        int ok = 1;
        if (nb_check > 0) {
            float *ho = gtu_host(d.out, co), *hg = gtu_host(d.dqkv, cqkv);
            e_out = lab_rel_l2(ho, ref_o, co);
            e_grad = lab_rel_l2(hg, ref_g, cqkv);
            ok = e_out <= v->tol_out && e_grad <= v->tol_grad;
            free(ho);
            free(hg);
        }
        const float fms = time_calls(v, &d, &s, 0, reps, warmup), bms = time_calls(v, &d, &s, 1, reps, warmup);
        const double ftf = fwd_flops / (fms * 1e-3) * 1e-12, btf = bwd_flops / (bms * 1e-3) * 1e-12;
        const double ttf = (fwd_flops + bwd_flops) / ((fms + bms) * 1e-3) * 1e-12;
        printf("GT_ATTN_BENCH variant=%s B=%d L=%d C=%d NH=%d hs=%d fwd_ms=%.3f fwd_tflops=%.1f fwd_peak=%.3f "
               "bwd_ms=%.3f bwd_tflops=%.1f bwd_peak=%.3f total_tflops=%.1f total_peak=%.3f err_out=%.2e "
               "err_dqkv=%.2e check=%s\n",
               v->name, s.B, s.L, s.C, s.NH, hs, fms, ftf, ftf * 1e12 / BF16_PEAK_FLOPS, bms, btf,
               btf * 1e12 / BF16_PEAK_FLOPS, ttf, ttf * 1e12 / BF16_PEAK_FLOPS, e_out, e_grad,
               nb_check == 0 ? "none" : ok ? "ok" : "FAIL");
        fflush(stdout);
        if (!ok) {
            fprintf(stderr, "gt_gpu_attn_lab: %s outside its tolerance (out %.2e > %.1e or dqkv %.2e > %.1e)\n",
                    v->name, e_out, v->tol_out, e_grad, v->tol_grad);
            rc = 1;
        }
    }
    gt_cuda_set_precision(GT_PREC_FP32);
    free(qkv); free(g); free(ref_o); free(ref_l); free(ref_g);
    gt_cuda_free(d.qkv); gt_cuda_free(d.out); gt_cuda_free(d.lse); gt_cuda_free(d.dout); gt_cuda_free(d.dqkv);
    gt_cuda_free(d.scratch);
    return rc;
}
