/* nn/ops/cpu/attention.c: tiled multi-head self-attention (see ops/attention.h).
 *
 * For one (batch b, head h) the matrices are strided views into qkv/out:
 *   Q, K, V  (L,hs) with row stride 3C;  O, dO  (L,hs) with row stride C.
 * Forward, per query tile Qi (br rows), over key tiles Kj, Vj (bc rows):
 *   S = Qi Kj^T / sqrt(hs);  m' = max(m, rowmax S);  P = exp(S - m')
 *   l = l exp(m - m') + rowsum P;  Oi = Oi exp(m - m') + P Vj
 * then Oi /= l and lse = m + log l. Oi itself is the accumulator.
 * Backward (FA-2 order: key tiles outer, query tiles inner), with D = rowsum(dO*O):
 *   P = exp(S - lse);  dVj += P^T dOi;  dP = dOi Vj^T;  dS = P (dP - D) / sqrt(hs)
 *   dQi += dS Kj;  dKj += dS^T Qi
 * which is the exact softmax gradient: dS_ts = P_ts (dP_ts - sum_s' P_ts' dP_ts'),
 * and sum_s' P_ts' dP_ts' = dO_t · O_t = D_t.
 *
 * Threads: the (batch, head) pairs are independent tasks of gt_par_for
 * (nn/ops/cpu/parallel.h): each writes only its own columns of out/dqkv and its
 * own lse row, on its thread's slice of `scratch`, with single-threaded tile
 * GEMMs (64 x 256 x 32 tiles are too small for OpenBLAS's own threading). The
 * numbers do not depend on the thread count. */
#include "nn/ops/attention.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/attention_amx.h"
#include "nn/ops/cpu/attention_avx2.h"
#include "nn/ops/cpu/attention_avx512bf16.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/fast_exp.h"

/* One thread's slice: two (BR,BC) tiles + L. */
static size_t slice_elems(int L) { return 2 * (size_t)GT_ATTN_BR * GT_ATTN_BC + (size_t)L; }

size_t gt_attention_scratch_elems(int L) { return (size_t)gt_par_max_threads() * slice_elems(L); }

typedef struct attn_args {
    float *out, *lse, *dqkv, *scratch;
    const float *qkv, *dout, *fout, *flse;
    int B, L, C, NH, q0, nq;
    int route; /* attn_route */
} attn_args;

/* row max of s[0..n) */
static float row_max(const float *s, int n) {
    float m[16];
    for (int k = 0; k < 16; k++) m[k] = -INFINITY;
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; k++) m[k] = s[j + k] > m[k] ? s[j + k] : m[k];
    float r = -INFINITY;
    for (int k = 0; k < 16; k++) r = m[k] > r ? m[k] : r;
    for (; j < n; j++) r = s[j] > r ? s[j] : r;
    return r;
}

/* s[j] = exp(s[j] - m); returns the sum */
static float row_exp_sum(float *s, int n, float m) {
    for (int j = 0; j < n; j++) s[j] = gt_expf_poly(s[j] - m);
    float a[16] = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; k++) a[k] += s[j + k];
    float r = 0.0f;
    for (int k = 0; k < 16; k++) r += a[k];
    for (; j < n; j++) r += s[j];
    return r;
}

void gt_attention_forward(float *out, float *lse, float *scratch, const float *qkv, int B, int L, int C,
                          int NH) {
    gt_attention_forward_rows(out, lse, scratch, qkv, B, L, C, NH, 0, L);
}

void gt_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                           const float *lse, int B, int L, int C, int NH) {
    gt_attention_backward_rows(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH, 0, L);
}

static void forward_bh(void *ctx, int task, int tid) {
    const attn_args *a = ctx;
    const int L = a->L, C = a->C, NH = a->NH, q0 = a->q0, q1 = a->q0 + a->nq;
    const int b = task / NH, h = task % NH;
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    float *s = a->scratch + (size_t)tid * slice_elems(L); // (BR,BC) score / probability tile
    float m[GT_ATTN_BR], l[GT_ATTN_BR];

    const float *q = a->qkv + (size_t)b * L * C3 + h * hs; // (L,hs) stride 3C
    const float *k = q + C;
    const float *v = q + 2 * C;
    float *o = a->out + (size_t)b * L * C + h * hs; // (L,hs) stride C
    float *lse_bh = a->lse + ((size_t)b * NH + h) * L; // (L)
    for (int i0 = q0; i0 < q1; i0 += GT_ATTN_BR) {
        const int br = q1 - i0 < GT_ATTN_BR ? q1 - i0 : GT_ATTN_BR;
        float *oi = o + (size_t)i0 * C;
        for (int r = 0; r < br; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        for (int j0 = 0; j0 < L; j0 += GT_ATTN_BC) {
            const int bc = L - j0 < GT_ATTN_BC ? L - j0 : GT_ATTN_BC;
            // S = scale * Qi Kj^T  (br,bc)
            gt_gemm(GT_GEMM_ATTENTION, CblasNoTrans, CblasTrans, br, bc, hs, scale, q + (size_t)i0 * C3, C3,
                        k + (size_t)j0 * C3, C3, 0.0f, s, bc);
            for (int r = 0; r < br; r++) {
                float *sr = s + (size_t)r * bc;
                float mt = row_max(sr, bc);
                float mnew = mt > m[r] ? mt : m[r];
                float sum = row_exp_sum(sr, bc, mnew);
                if (j0 == 0) {
                    l[r] = sum;
                } else { // rescale the running sum and accumulator
                    float alpha = expf(m[r] - mnew);
                    l[r] = l[r] * alpha + sum;
                    float *orow = oi + (size_t)r * C;
                    for (int i = 0; i < hs; i++) orow[i] *= alpha;
                }
                m[r] = mnew;
            }
            // Oi (+)= P Vj  (br,hs)
            gt_gemm(GT_GEMM_ATTENTION, CblasNoTrans, CblasNoTrans, br, hs, bc, 1.0f, s, bc, v + (size_t)j0 * C3,
                        C3, j0 == 0 ? 0.0f : 1.0f, oi, C);
        }
        for (int r = 0; r < br; r++) {
            float inv = 1.0f / l[r];
            float *orow = oi + (size_t)r * C;
            for (int i = 0; i < hs; i++) orow[i] *= inv;
            lse_bh[i0 + r] = m[r] + logf(l[r]);
        }
    }
}

/* The route, decided here for forward and backward alike (one task per
 * (batch, head) pair in each):
 *   bf16 on a CPU with AMX          the fused kernels of attention_amx.c
 *   bf16 on AVX512-BF16 without AMX the same kernels on AVX-512
 *                                   (attention_avx512bf16.c)
 *   fp32 on a CPU with AVX2 + FMA   the fused kernels of attention_avx2.c
 *                                   (head size a multiple of 16, <= 128)
 *   otherwise                       the tile products through gt_gemm above */
static const char k_amx_impl[] = "gridtrain fused attention amx_bf16 (tdpbf16ps 16x16x32, fp32 softmax)";
static const char k_vdp_impl[] = "gridtrain fused attention avx512_bf16 (vdpbf16ps 16x16x32 tiles, fp32 softmax)";
static const char k_avx2_impl[] = "gridtrain fused attention avx2_fma fp32 (6x16 register blocks)";

typedef enum attn_route { ROUTE_GEMM, ROUTE_AMX, ROUTE_VDP, ROUTE_AVX2 } attn_route;

static attn_route route(int C, int NH) {
    const gt_cpu_prec p = gt_cpu_get_precision();
    if (p == GT_CPU_BF16 && gt_attn_amx_usable(C / NH)) {
        gt_gemm_note_impl(GT_GEMM_ATTENTION, k_amx_impl);
        return ROUTE_AMX;
    }
    if (p == GT_CPU_BF16 && gt_attn_avx512bf16_usable(C / NH)) {
        gt_gemm_note_impl(GT_GEMM_ATTENTION, k_vdp_impl);
        return ROUTE_VDP;
    }
    if (p != GT_CPU_BF16 && gt_attn_avx2_usable(C / NH)) {
        gt_gemm_note_impl(GT_GEMM_ATTENTION, k_avx2_impl);
        return ROUTE_AVX2;
    }
    return ROUTE_GEMM;
}

/* the fused routes' kernels, one (batch, head) pair per call */
static const struct {
    void (*forward)(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH, int q0, int q1);
    void (*backward)(float *dqkv, const float *dout, const float *qkv, const float *out, const float *lse, int b,
                     int h, int L, int C, int NH, int q0, int q1);
} k_fused[] = {
    [ROUTE_AMX] = {gt_attn_amx_forward_bh, gt_attn_amx_backward_bh},
    [ROUTE_VDP] = {gt_attn_avx512bf16_forward_bh, gt_attn_avx512bf16_backward_bh},
    [ROUTE_AVX2] = {gt_attn_avx2_forward_bh, gt_attn_avx2_backward_bh},
};

static void forward_fused(void *ctx, int task, int tid) {
    (void)tid;
    const attn_args *a = ctx;
    k_fused[a->route].forward(a->out, a->lse, a->qkv, task / a->NH, task % a->NH, a->L, a->C, a->NH, a->q0,
                              a->q0 + a->nq);
}

static void backward_fused(void *ctx, int task, int tid) {
    (void)tid;
    const attn_args *a = ctx;
    k_fused[a->route].backward(a->dqkv, a->dout, a->qkv, a->fout, a->flse, task / a->NH, task % a->NH, a->L,
                               a->C, a->NH, a->q0, a->q0 + a->nq);
}

void gt_attention_forward_rows(float *out, float *lse, float *scratch, const float *qkv, int B, int L, int C,
                               int NH, int q0, int nq) {
    GT_ASSERT(NH > 0 && C % NH == 0 && L > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L);
    attn_args a = {.out = out, .lse = lse, .scratch = scratch, .qkv = qkv, .B = B, .L = L, .C = C, .NH = NH,
                   .q0 = q0, .nq = nq};
    a.route = (int)route(C, NH);
    gt_par_for(B * NH, a.route == ROUTE_GEMM ? forward_bh : forward_fused, &a);
}

static void backward_bh(void *ctx, int task, int tid) {
    const attn_args *a = ctx;
    const int L = a->L, C = a->C, NH = a->NH, q0 = a->q0, q1 = a->q0 + a->nq;
    const int b = task / NH, h = task % NH;
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    float *p = a->scratch + (size_t)tid * slice_elems(L); // (BR,BC) probabilities
    float *dp = p + (size_t)GT_ATTN_BR * GT_ATTN_BC;        // (BR,BC)
    float *dd = dp + (size_t)GT_ATTN_BR * GT_ATTN_BC;       // (L) D = rowsum(dO * O)

    const float *q = a->qkv + (size_t)b * L * C3 + h * hs; // (L,hs) stride 3C
    const float *k = q + C;
    const float *v = q + 2 * C;
    float *dq = a->dqkv + (size_t)b * L * C3 + h * hs; // (L,hs) stride 3C
    float *dk = dq + C;
    float *dv = dq + 2 * C;
    const float *o = a->fout + (size_t)b * L * C + h * hs; // (L,hs) stride C
    const float *dob = a->dout + (size_t)b * L * C + h * hs;
    const float *lse_bh = a->flse + ((size_t)b * NH + h) * L;
    for (int t = q0; t < q1; t++) {
        const float *ot = o + (size_t)t * C, *dot = dob + (size_t)t * C;
        float acc = 0.0f;
        for (int i = 0; i < hs; i++) acc += ot[i] * dot[i];
        dd[t] = acc;
    }
    for (int t = 0; t < L; t++) {
        memset(dq + (size_t)t * C3, 0, hs * sizeof(float));
        memset(dk + (size_t)t * C3, 0, hs * sizeof(float));
        memset(dv + (size_t)t * C3, 0, hs * sizeof(float));
    }
    for (int j0 = 0; j0 < L; j0 += GT_ATTN_BC) {
        const int bc = L - j0 < GT_ATTN_BC ? L - j0 : GT_ATTN_BC;
        const float *kj = k + (size_t)j0 * C3, *vj = v + (size_t)j0 * C3;
        float *dkj = dk + (size_t)j0 * C3, *dvj = dv + (size_t)j0 * C3;
        for (int i0 = q0; i0 < q1; i0 += GT_ATTN_BR) {
            const int br = q1 - i0 < GT_ATTN_BR ? q1 - i0 : GT_ATTN_BR;
            const float *qi = q + (size_t)i0 * C3, *doi = dob + (size_t)i0 * C;
            // P = exp(scale * Qi Kj^T - lse)  (br,bc)
            gt_gemm(GT_GEMM_ATTENTION, CblasNoTrans, CblasTrans, br, bc, hs, scale, qi, C3, kj, C3, 0.0f, p, bc);
            for (int r = 0; r < br; r++) {
                float *pr = p + (size_t)r * bc;
                const float lr = lse_bh[i0 + r];
                for (int j = 0; j < bc; j++) pr[j] = gt_expf_poly(pr[j] - lr);
            }
            // dVj += P^T dOi  (bc,hs)
            gt_gemm(GT_GEMM_ATTENTION, CblasTrans, CblasNoTrans, bc, hs, br, 1.0f, p, bc, doi, C, 1.0f, dvj, C3);
            // dP = dOi Vj^T  (br,bc)
            gt_gemm(GT_GEMM_ATTENTION, CblasNoTrans, CblasTrans, br, bc, hs, 1.0f, doi, C, vj, C3, 0.0f, dp, bc);
            // dS = P (dP - D) * scale, in dp
            for (int r = 0; r < br; r++) {
                float *dpr = dp + (size_t)r * bc;
                const float *pr = p + (size_t)r * bc;
                const float dr = dd[i0 + r];
                for (int j = 0; j < bc; j++) dpr[j] = pr[j] * (dpr[j] - dr) * scale;
            }
            // dQi += dS Kj  (br,hs);  dKj += dS^T Qi  (bc,hs)
            gt_gemm(GT_GEMM_ATTENTION, CblasNoTrans, CblasNoTrans, br, hs, bc, 1.0f, dp, bc, kj, C3, 1.0f,
                        dq + (size_t)i0 * C3, C3);
            gt_gemm(GT_GEMM_ATTENTION, CblasTrans, CblasNoTrans, bc, hs, br, 1.0f, dp, bc, qi, C3, 1.0f, dkj, C3);
        }
    }
}

void gt_attention_backward_rows(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *out, const float *lse, int B, int L, int C, int NH, int q0,
                                int nq) {
    GT_ASSERT(NH > 0 && C % NH == 0 && L > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L);
    attn_args a = {.dqkv = dqkv, .scratch = scratch, .qkv = qkv, .dout = dout, .fout = out, .flse = lse,
                   .B = B, .L = L, .C = C, .NH = NH, .q0 = q0, .nq = nq};
    a.route = (int)route(C, NH);
    gt_par_for(B * NH, a.route == ROUTE_GEMM ? backward_bh : backward_fused, &a);
}
