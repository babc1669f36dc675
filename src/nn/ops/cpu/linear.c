/* nn/ops/cpu/linear.c: fully connected layer via OpenBLAS sgemm.
 *
 * The GEMMs are large (N = B*L rows in s2p_tf, K = 29950 in s2p_cnn's fc1) and
 * keep OpenBLAS's own threading. The passes around them (bias + activation,
 * ReLU mask, bias gradient) are memory-bound loops over N*OC elements that
 * would otherwise run on one thread: they are split across the engine's
 * threads (nn/ops/cpu/parallel.h) in row blocks, or column blocks for the bias
 * gradient, whose sums therefore keep their serial order (row 0, 1, ...) and
 * their value for any thread count. */
#include <cblas.h>
#include <string.h>

#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/ops.h"

/* Elements per task of the elementwise passes; below one task's worth they run inline. */
#define LINEAR_TASK_ELEMS ((size_t)1 << 16)
/* Columns per task of the bias-gradient sum (64 floats: one 256-byte segment per row). */
#define LINEAR_DB_COLS 64

typedef struct lin_args {
    float *out, *db, *dz;
    const float *b, *dout, *fout;
    int N, OC, rows_per_task;
    gt_act act;
} lin_args;

/* Rows per task so that a task covers about LINEAR_TASK_ELEMS elements. */
static int rows_per_task(int N, int OC) {
    size_t r = LINEAR_TASK_ELEMS / (OC > 0 ? (size_t)OC : 1);
    if (r < 1) r = 1;
    return r > (size_t)N ? N : (int)r;
}

/* out (n0..n1, OC) = act(out + b) row by row. */
static void bias_act_rows(float *out, const float *b, int n0, int n1, int OC, gt_act act) {
    for (int n = n0; n < n1; n++) {
        float *o = out + (size_t)n * OC;
        if (b && act == GT_ACT_RELU)
            for (int j = 0; j < OC; j++) o[j] = gt_relu(o[j] + b[j]);
        else if (b)
            for (int j = 0; j < OC; j++) o[j] += b[j];
        else if (act == GT_ACT_RELU)
            for (int j = 0; j < OC; j++) o[j] = gt_relu(o[j]);
    }
}

static void bias_act_task(void *ctx, int task, int tid) {
    const lin_args *a = ctx;
    int n0 = task * a->rows_per_task, n1 = n0 + a->rows_per_task;
    if (n1 > a->N) n1 = a->N;
    bias_act_rows(a->out, a->b, n0, n1, a->OC, a->act);
}

void gt_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                       int OC, gt_act act) {
    // out (N,OC) = inp (N,C) @ w^T (C,OC)
    gt_gemm(GT_GEMM_LINEAR | GT_GEMM_B_PARAM, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
    if (!b && act != GT_ACT_RELU) return;
    lin_args a = {.out = out, .b = b, .N = N, .OC = OC, .act = act, .rows_per_task = rows_per_task(N, OC)};
    gt_par_for((N + a.rows_per_task - 1) / a.rows_per_task, bias_act_task, &a);
}

/* dz (rows, OC) = dout * (out > 0) */
static void relu_grad_task(void *ctx, int task, int tid) {
    const lin_args *a = ctx;
    int n0 = task * a->rows_per_task, n1 = n0 + a->rows_per_task;
    if (n1 > a->N) n1 = a->N;
    size_t i0 = (size_t)n0 * a->OC, i1 = (size_t)n1 * a->OC;
    for (size_t i = i0; i < i1; i++) a->dz[i] = gt_relu_grad_from_out(a->fout[i], a->dout[i]);
}

/* db[j0..j1) += sum over rows of dz, rows in order */
static void bias_grad_task(void *ctx, int task, int tid) {
    const lin_args *a = ctx;
    const int j0 = task * LINEAR_DB_COLS;
    const int j1 = j0 + LINEAR_DB_COLS < a->OC ? j0 + LINEAR_DB_COLS : a->OC;
    float *db = a->db;
    for (int n = 0; n < a->N; n++) {
        const float *d = a->dz + (size_t)n * a->OC;
        for (int j = j0; j < j1; j++) db[j] += d[j];
    }
}

void gt_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *out, float *scratch, int N, int C, int OC,
                        gt_act act) {
    const float *dz = dout; // (N,OC) gradient wrt the pre-activation
    lin_args a = {.db = db, .dout = dout, .fout = out, .N = N, .OC = OC, .act = act,
                  .rows_per_task = rows_per_task(N, OC)};
    if (act == GT_ACT_RELU) {
        a.dz = scratch;
        gt_par_for((N + a.rows_per_task - 1) / a.rows_per_task, relu_grad_task, &a);
        dz = scratch;
    }
    if (db) {
        a.dz = (float *)dz; /* read only */
        if ((size_t)N * OC < LINEAR_TASK_ELEMS) {
            bias_grad_task(&a, 0, 0);
            for (int t = 1; t * LINEAR_DB_COLS < OC; t++) bias_grad_task(&a, t, 0);
        } else {
            gt_par_for((OC + LINEAR_DB_COLS - 1) / LINEAR_DB_COLS, bias_grad_task, &a);
        }
    }
    // dw (OC,C) += dz^T (OC,N) @ inp (N,C)
    gt_gemm(GT_GEMM_LINEAR, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dz, OC, inp, C, 1.0f, dw, C);
    // dinp (N,C) = dz (N,OC) @ w (OC,C)
    if (dinp)
        gt_gemm(GT_GEMM_LINEAR | GT_GEMM_B_PARAM | GT_GEMM_A_AGAIN, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dz,
                OC, w, C, 0.0f, dinp, C);
}
