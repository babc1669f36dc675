/* tests/gpu/attn_test_util.h: helpers of the tensor-core attention tests
 * (test_attention_tc.c, test_attention_mma.c): bf16 rounding of inputs, the
 * lse check, q/k/v gathering. Header-only (static functions, C). */
#ifndef GT_ATTN_TEST_UTIL_H
#define GT_ATTN_TEST_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "nn/ops/cuda/mma_frag.h"

/* round to the nearest bf16 (ties to even), as __float2bfloat16 does */
static inline float to_bf16(float x) { return gt_bf16_round(x); }

static inline void check_lse(const char *what, const float *got, const float *ref, size_t n, double atol, double rtol) {
    size_t bad = 0, worst = 0;
    double wr = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]), lim = atol + rtol * fabs((double)ref[i]);
        if (!(err <= lim)) bad++;
        if (!(err / lim <= wr)) {
            wr = err / lim;
            worst = i;
        }
    }
    printf("  %-40s n=%-8zu max err/tol %.3f at %zu (got %.7g ref %.7g)%s\n", what, n, wr, worst, got[worst],
           ref[worst], bad ? "  FAIL" : "");
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu elements outside atol %.3g rtol %.3g\n", what, bad, n, atol, rtol);
        gt_test_failures++;
    }
}

/* q, k, v parts of a (B,L,3C) tensor, each gathered into (B*L*C) */
static inline void split_qkv(float *part[3], const float *x, int B, int L, int C) {
    for (int p = 0; p < 3; p++) {
        part[p] = malloc((size_t)B * L * C * sizeof(float));
        for (size_t row = 0; row < (size_t)B * L; row++)
            memcpy(part[p] + row * C, x + row * 3 * C + (size_t)p * C, (size_t)C * sizeof(float));
    }
}

/* The backward's dqkv (B,L,3C) against the CPU's: dq, dk, dv within 3e-2 x k
 * (relative L2), and dq exactly 0 outside the query rows [q0, q0 + nq). */
static inline void check_attn_backward(const float *hgq, const float *gq, int B, int L, int C, int q0, int nq, double k) {
    const size_t no = (size_t)B * L * C;
    float *got[3], *ref[3];
    split_qkv(got, hgq, B, L, C);
    split_qkv(ref, gq, B, L, C);
    gtu_rel_l2("bwd dq", got[0], ref[0], no, 3e-2 * k);
    gtu_rel_l2("bwd dk", got[1], ref[1], no, 3e-2 * k);
    gtu_rel_l2("bwd dv", got[2], ref[2], no, 3e-2 * k);
    if (nq < L) { /* dq outside the rows: exactly zero */
        size_t nz = 0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < L; t++)
                if (t < q0 || t >= q0 + nq)
                    for (int c = 0; c < C; c++) nz += got[0][((size_t)b * L + t) * C + c] != 0.0f;
        TEST_EQ_INT(nz, 0);
    }
    for (int p = 0; p < 3; p++) {
        free(got[p]);
        free(ref[p]);
    }
}

#endif
