/* tests/nn/test_attention.c: tiled flash-style attention vs an explicit
 * L x L softmax in double, and its backward vs finite differences.
 * Shapes include L not a multiple of the tile sizes and L > GT_ATTN_BC (several
 * key tiles, so the online-softmax rescaling path runs). Head sizes 4 and 8
 * run the tile route; 16, 32 and 64 the fused AVX2 route where the CPU has it
 * (test_nn_attention_gemm runs them all on the tile route: GT_ATTN_CPU=gemm),
 * with L not a multiple of 16, several key and query tiles of its backward,
 * and the s2p_tf shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/ops/attention.h"
#include "nn/ops/cpu/gemm.h"
#include "test.h"

/* out (B,L,C) in double from qkv (B,L,3C) in double; explicit (L,L) softmax */
static void attn_ref(double *out, const double *qkv, int B, int L, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    double scale = 1.0 / sqrt((double)hs);
    double *att = malloc((size_t)L * L * sizeof(double)); // (L,L)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < L; t++) {
                const double *q = qkv + ((size_t)b * L + t) * C3 + h * hs;
                double mx = -1e300;
                for (int s = 0; s < L; s++) {
                    const double *k = qkv + ((size_t)b * L + s) * C3 + C + h * hs;
                    double a = 0;
                    for (int i = 0; i < hs; i++) a += q[i] * k[i];
                    att[(size_t)t * L + s] = a * scale;
                    if (a * scale > mx) mx = a * scale;
                }
                double sum = 0;
                for (int s = 0; s < L; s++)
                    sum += (att[(size_t)t * L + s] = exp(att[(size_t)t * L + s] - mx));
                for (int s = 0; s < L; s++) att[(size_t)t * L + s] /= sum;
                double *o = out + ((size_t)b * L + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    double acc = 0;
                    for (int s = 0; s < L; s++)
                        acc += att[(size_t)t * L + s] * qkv[((size_t)b * L + s) * C3 + 2 * C + h * hs + i];
                    o[i] = acc;
                }
            }
        }
    free(att);
}

static double dot_d(const double *a, const float *w, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * w[i];
    return s;
}

static void fill(float *x, size_t n, gt_rng *r, float amp) {
    for (size_t i = 0; i < n; i++) x[i] = amp * (float)gt_rng_normal(r);
}

/* forward vs reference; backward vs finite differences of the double
 * reference (tight) and of the float op itself (loose) on sampled coords */
static void check_case(int B, int L, int C, int NH, float amp, int n_fd) {
    size_t n_qkv = (size_t)B * L * 3 * C, n_out = (size_t)B * L * C;
    gt_rng r;
    gt_rng_init(&r, 1234 + L, gt_stream(GT_STREAM_TEST, 1));
    float *qkv = malloc(n_qkv * sizeof(float)); // (B,L,3C)
    float *out = malloc(n_out * sizeof(float)); // (B,L,C)
    float *dout = malloc(n_out * sizeof(float)); // (B,L,C)
    float *dqkv = malloc(n_qkv * sizeof(float)); // (B,L,3C)
    float *lse = malloc((size_t)B * NH * L * sizeof(float)); // (B,NH,L)
    float *scratch = malloc(gt_attention_scratch_elems(L) * sizeof(float));
    double *qkv_d = malloc(n_qkv * sizeof(double)); // (B,L,3C)
    double *ref = malloc(n_out * sizeof(double)); // (B,L,C)
    fill(qkv, n_qkv, &r, amp);
    fill(dout, n_out, &r, 1.0f);
    for (size_t i = 0; i < n_qkv; i++) qkv_d[i] = qkv[i];

    gt_attention_forward(out, lse, scratch, qkv, B, L, C, NH);
    attn_ref(ref, qkv_d, B, L, C, NH);
    double maxerr = 0;
    for (size_t i = 0; i < n_out; i++) {
        double e = fabs(out[i] - ref[i]);
        if (e > maxerr) maxerr = e;
        TEST_CLOSE(out[i], ref[i], 2e-5 * (amp > 1 ? amp : 1), 1e-4);
    }
    printf("attention fwd B=%d L=%d C=%d NH=%d amp=%g: max |err| %.3g\n", B, L, C, NH, amp, maxerr);

    // backward: J = sum(out * dout) -> dJ/dqkv
    gt_attention_backward(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH);
    double maxrel = 0;
    for (int k = 0; k < n_fd; k++) {
        size_t idx = gt_rng_below(&r, (uint32_t)n_qkv);
        double h = 1e-4, save = qkv_d[idx];
        qkv_d[idx] = save + h;
        attn_ref(ref, qkv_d, B, L, C, NH);
        double jp = dot_d(ref, dout, n_out);
        qkv_d[idx] = save - h;
        attn_ref(ref, qkv_d, B, L, C, NH);
        double jm = dot_d(ref, dout, n_out);
        qkv_d[idx] = save;
        double fd = (jp - jm) / (2 * h);
        double rel = fabs(dqkv[idx] - fd) / (1e-3 + fabs(fd));
        if (rel > maxrel) maxrel = rel;
        TEST_CLOSE(dqkv[idx], fd, 2e-4, 2e-3);
    }
    // finite differences of the float op itself (coarser: float rounding)
    for (int k = 0; k < n_fd / 4; k++) {
        size_t idx = gt_rng_below(&r, (uint32_t)n_qkv);
        float h = 1e-2f, save = qkv[idx];
        qkv[idx] = save + h;
        gt_attention_forward(out, lse, scratch, qkv, B, L, C, NH);
        double jp = 0, jm = 0;
        for (size_t i = 0; i < n_out; i++) jp += (double)out[i] * dout[i];
        qkv[idx] = save - h;
        gt_attention_forward(out, lse, scratch, qkv, B, L, C, NH);
        for (size_t i = 0; i < n_out; i++) jm += (double)out[i] * dout[i];
        qkv[idx] = save;
        TEST_CLOSE(dqkv[idx], (jp - jm) / (2.0 * h), 5e-3, 3e-2);
    }
    printf("attention bwd: %d FD coords, max rel err vs double FD %.3g\n", n_fd, maxrel);
    free(qkv);
    free(out);
    free(dout);
    free(dqkv);
    free(lse);
    free(scratch);
    free(qkv_d);
    free(ref);
}

/* query-row subset: forward rows equal the full forward's; backward equals
 * the full backward with dout zeroed outside the rows */
static void check_rows(int B, int L, int C, int NH, int q0, int nq) {
    size_t n_qkv = (size_t)B * L * 3 * C, n_out = (size_t)B * L * C;
    gt_rng r;
    gt_rng_init(&r, 77 + L, gt_stream(GT_STREAM_TEST, 3));
    float *qkv = malloc(n_qkv * sizeof(float)), *out = malloc(n_out * sizeof(float));
    float *out_r = malloc(n_out * sizeof(float)), *dout = malloc(n_out * sizeof(float));
    float *dq = malloc(n_qkv * sizeof(float)), *dq_r = malloc(n_qkv * sizeof(float));
    float *lse = malloc((size_t)B * NH * L * sizeof(float)),
          *lse_r = malloc((size_t)B * NH * L * sizeof(float));
    float *scratch = malloc(gt_attention_scratch_elems(L) * sizeof(float));
    fill(qkv, n_qkv, &r, 1.0f);
    fill(dout, n_out, &r, 1.0f);
    gt_attention_forward(out, lse, scratch, qkv, B, L, C, NH);
    gt_attention_forward_rows(out_r, lse_r, scratch, qkv, B, L, C, NH, q0, nq);
    gt_attention_backward_rows(dq_r, scratch, dout, qkv, out_r, lse_r, B, L, C, NH, q0, nq);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < L; t++)
            for (int i = 0; i < C; i++) {
                size_t k = ((size_t)b * L + t) * C + i;
                if (t >= q0 && t < q0 + nq)
                    TEST_CLOSE(out_r[k], out[k], 1e-6, 1e-5);
                else
                    dout[k] = 0.0f;
            }
    gt_attention_backward(dq, scratch, dout, qkv, out, lse, B, L, C, NH);
    for (size_t k = 0; k < n_qkv; k++) TEST_CLOSE(dq_r[k], dq[k], 1e-6, 1e-4);
    printf("attention rows [%d,%d) of L=%d: forward and backward match the full op\n", q0, q0 + nq, L);
    free(qkv);
    free(out);
    free(out_r);
    free(dout);
    free(dq);
    free(dq_r);
    free(lse);
    free(lse_r);
    free(scratch);
}

int main(void) {
    check_case(2, 5, 8, 2, 1.0f, 60); // tiny: one partial tile
    check_case(2, 37, 16, 4, 1.0f, 100); // L not a multiple of BR
    check_case(1, 300, 16, 2, 1.0f, 60); // 5 query tiles, 2 key tiles (BC = 256)
    check_case(1, 300, 8, 1, 4.0f, 40); // large scores: online-softmax stability
    check_case(2, GT_ATTN_BC + GT_ATTN_BR, 8, 2, 1.0f, 30); // exact multiples
    check_rows(2, 37, 16, 4, 18, 1); // the seq2point midpoint
    check_rows(1, 300, 8, 2, 50, 100); // a span over a tile boundary
    printf("attention route, head sizes 4, 8: %s\n", gt_gemm_impl(GT_GEMM_ATTENTION));
    check_case(2, 37, 64, 4, 1.0f, 60); // head size 16, L not a multiple of 16
    check_case(1, 300, 64, 2, 1.0f, 60); // head size 32: 5 key tiles, 5 query tiles of the backward
    check_case(1, 150, 128, 2, 3.0f, 40); // head size 64, large scores
    check_case(1, 512, 128, 4, 1.0f, 12); // the s2p_tf shape (one sample)
    check_rows(2, 300, 64, 2, 150, 1); // the seq2point midpoint, head size 32
    check_rows(1, 300, 128, 4, 50, 100); // a span over tile boundaries, head size 32
    printf("attention route, head sizes 16, 32, 64: %s\n", gt_gemm_impl(GT_GEMM_ATTENTION));
    TEST_DONE();
}
