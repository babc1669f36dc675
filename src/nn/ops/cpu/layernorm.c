/* nn/ops/cpu/layernorm.c: LayerNorm over the last dimension (llm.c form).
 * Row reductions use 16 partial sums so GCC vectorises them (a single float
 * accumulator is a serial dependency chain without -ffast-math).
 *
 * Threads: the forward and the backward's dinp are per row, split in row
 * blocks over the engine's threads (nn/ops/cpu/parallel.h); the weight and
 * bias gradients are summed over the rows in a second pass split in column
 * blocks, each column in row order: the same bits as one thread. */
#include <math.h>

#include "nn/ops/cpu/parallel.h"
#include "nn/ops/ops.h"

#define LN_LANES 16

/* sum_i a[i] */
static inline float row_sum(const float *a, int C) {
    float acc[LN_LANES] = {0};
    int i = 0;
    for (; i + LN_LANES <= C; i += LN_LANES)
        for (int j = 0; j < LN_LANES; j++) acc[j] += a[i + j];
    float s = 0.0f;
    for (; i < C; i++) s += a[i];
    for (int j = 0; j < LN_LANES; j++) s += acc[j];
    return s;
}

/* sum_i (a[i] - m)^2 */
static inline float row_sqdev(const float *a, float m, int C) {
    float acc[LN_LANES] = {0};
    int i = 0;
    for (; i + LN_LANES <= C; i += LN_LANES)
        for (int j = 0; j < LN_LANES; j++) {
            float d = a[i + j] - m;
            acc[j] += d * d;
        }
    float s = 0.0f;
    for (; i < C; i++) s += (a[i] - m) * (a[i] - m);
    for (int j = 0; j < LN_LANES; j++) s += acc[j];
    return s;
}

/* Rows per task (about 32 Ki elements); columns per task of the parameter-gradient sums. */
#define LN_TASK_ELEMS 32768
#define LN_DW_COLS 32

typedef struct ln_args {
    float *out, *mean, *rstd, *dinp, *dw, *db;
    const float *inp, *w, *b, *dout, *cmean, *crstd;
    int N, C, rows;
    float eps;
} ln_args;

static int ln_rows_per_task(int C) {
    int r = LN_TASK_ELEMS / (C > 0 ? C : 1);
    return r < 1 ? 1 : r;
}

static void ln_forward_task(void *ctx, int task, int tid) {
    (void)tid;
    const ln_args *a = ctx;
    const int C = a->C, n0 = task * a->rows, n1 = n0 + a->rows < a->N ? n0 + a->rows : a->N;
    for (int n = n0; n < n1; n++) {
        const float *x = a->inp + (size_t)n * C; // (C)
        float *o = a->out + (size_t)n * C;        // (C)
        float m = row_sum(x, C) / (float)C;
        float v = row_sqdev(x, m, C) / (float)C; // biased variance, as PyTorch
        float s = 1.0f / sqrtf(v + a->eps);
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * a->w[i] + a->b[i];
        a->mean[n] = m;
        a->rstd[n] = s;
    }
}

void gt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C, float eps) {
    ln_args a = {.out = out, .mean = mean, .rstd = rstd, .inp = inp, .w = w, .b = b, .N = N, .C = C,
                 .rows = ln_rows_per_task(C), .eps = eps};
    gt_par_for((N + a.rows - 1) / a.rows, ln_forward_task, &a);
}

/* dinp rows n0..n1 */
static void ln_dinp_task(void *ctx, int task, int tid) {
    (void)tid;
    const ln_args *a = ctx;
    const int C = a->C, n0 = task * a->rows, n1 = n0 + a->rows < a->N ? n0 + a->rows : a->N;
    const float *w = a->w;
    for (int n = n0; n < n1; n++) {
        const float *x = a->inp + (size_t)n * C;  // (C)
        const float *g = a->dout + (size_t)n * C; // (C)
        const float m = a->cmean[n], s = a->crstd[n];
        // dnorm = g * w; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
        float a1[LN_LANES] = {0}, a2[LN_LANES] = {0};
        float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
        int i = 0;
        for (; i + LN_LANES <= C; i += LN_LANES)
            for (int j = 0; j < LN_LANES; j++) {
                float xhat = (x[i + j] - m) * s;
                float dnorm = g[i + j] * w[i + j];
                a1[j] += dnorm;
                a2[j] += dnorm * xhat;
            }
        for (; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dnorm = g[i] * w[i];
            dnorm_mean += dnorm;
            dnorm_xhat_mean += dnorm * xhat;
        }
        for (int j = 0; j < LN_LANES; j++) {
            dnorm_mean += a1[j];
            dnorm_xhat_mean += a2[j];
        }
        dnorm_mean /= (float)C;
        dnorm_xhat_mean /= (float)C;
        float *dx = a->dinp + (size_t)n * C;
        for (i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] = s * (g[i] * w[i] - dnorm_mean - xhat * dnorm_xhat_mean);
        }
    }
}

/* dw, db columns j0..j1 += over all rows, in row order */
static void ln_dw_task(void *ctx, int task, int tid) {
    (void)tid;
    const ln_args *a = ctx;
    const int C = a->C, j0 = task * LN_DW_COLS, j1 = j0 + LN_DW_COLS < C ? j0 + LN_DW_COLS : C;
    float *dw = a->dw, *db = a->db;
    for (int n = 0; n < a->N; n++) {
        const float *x = a->inp + (size_t)n * C, *g = a->dout + (size_t)n * C;
        const float m = a->cmean[n], s = a->crstd[n];
        for (int i = j0; i < j1; i++) {
            float xhat = (x[i] - m) * s;
            db[i] += g[i];
            dw[i] += g[i] * xhat;
        }
    }
}

void gt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C) {
    ln_args a = {.dinp = dinp, .dw = dw, .db = db, .dout = dout, .inp = inp, .w = w, .cmean = mean,
                 .crstd = rstd, .N = N, .C = C, .rows = ln_rows_per_task(C)};
    gt_par_for((C + LN_DW_COLS - 1) / LN_DW_COLS, ln_dw_task, &a);
    if (dinp) gt_par_for((N + a.rows - 1) / a.rows, ln_dinp_task, &a);
}
