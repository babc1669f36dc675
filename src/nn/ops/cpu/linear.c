/* nn/ops/cpu/linear.c: fully connected layer via OpenBLAS sgemm. */
#include <cblas.h>
#include <string.h>

#include "nn/ops/ops.h"

/* out (N,OC) = act(out + b) row by row. */
static void bias_act(float *out, const float *b, int N, int OC, gt_act act) {
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * OC;
        if (b && act == GT_ACT_RELU)
            for (int j = 0; j < OC; j++) o[j] = gt_relu(o[j] + b[j]);
        else if (b)
            for (int j = 0; j < OC; j++) o[j] += b[j];
        else if (act == GT_ACT_RELU)
            for (int j = 0; j < OC; j++) o[j] = gt_relu(o[j]);
    }
}

void gt_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                       int OC, gt_act act) {
    // out (N,OC) = inp (N,C) @ w^T (C,OC)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
    bias_act(out, b, N, OC, act);
}

void gt_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *out, float *scratch, int N, int C, int OC,
                        gt_act act) {
    const float *dz = dout; // (N,OC) gradient wrt the pre-activation
    if (act == GT_ACT_RELU) {
        size_t n = (size_t)N * OC;
        for (size_t i = 0; i < n; i++) scratch[i] = gt_relu_grad_from_out(out[i], dout[i]);
        dz = scratch;
    }
    if (db) {
        for (int n = 0; n < N; n++) {
            const float *d = dz + (size_t)n * OC;
            for (int j = 0; j < OC; j++) db[j] += d[j];
        }
    }
    // dw (OC,C) += dz^T (OC,N) @ inp (N,C)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dz, OC, inp, C, 1.0f, dw, C);
    // dinp (N,C) = dz (N,OC) @ w (OC,C)
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dz, OC, w, C, 0.0f, dinp, C);
}
