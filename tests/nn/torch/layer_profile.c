/* tests/nn/torch/layer_profile.c: where a model's train step spends its time,
 * per op call site (layer), measured inside the real model.
 *
 * Linked with -Wl,--wrap=<op> for every public op of nn/ops (see
 * CMakeLists.txt): each call the model makes goes through __wrap_<op>, which
 * times __real_<op> and accumulates by (op, shape). The remainder of the step
 * ("model glue": residual adds, GELU/elementwise inside the model file,
 * copies) is the step time minus the wrapped time. GFLOP/s per row uses the
 * same analytic FLOP convention as nn/bench.c (backward of a GEMM-like op = 2x
 * forward, 1x when dinp is skipped; attention backward counts 2x forward,
 * no recompute credit).
 *
 *   gt_layer_profile --model s2p_cnn|s2p_tf|lstm [--batch B] [--window W]
 *                    [--tbptt K] [--steps N] [--precision fp32|bf16]
 *                    [--clock wall|thread|process]    (OPENBLAS_NUM_THREADS)
 *
 * --clock (cpu: the same as process): what the times are: wall clock (default), the calling thread's CPU
 * time (at 1 thread all of the work, and unaffected by other processes on a
 * loaded machine), or the process's CPU time (all threads, spinning included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/bench.h"
#include "nn/model.h"
#include "nn/ops/attention.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/lstm.h"
#include "nn/ops/ops.h"
#if __has_include("nn/model_lstm.h")
#include "nn/model_lstm.h"
#define HAVE_LSTM 1
#endif

#define MAX_ROWS 256
typedef struct row {
    char key[96];
    double seconds, flops;
    long calls;
} row;
static row g_rows[MAX_ROWS];
static int g_n_rows;
static int g_active; /* only count timed steps */
static void account(const char *key, double dt, double flops) {
    if (!g_active) return;
    for (int i = 0; i < g_n_rows; i++)
        if (strcmp(g_rows[i].key, key) == 0) {
            g_rows[i].seconds += dt;
            g_rows[i].flops += flops;
            g_rows[i].calls++;
            return;
        }
    if (g_n_rows == MAX_ROWS) return;
    row *r = &g_rows[g_n_rows++];
    snprintf(r->key, sizeof r->key, "%s", key);
    r->seconds = dt;
    r->flops = flops;
    r->calls = 1;
}

static clockid_t g_clock_id = CLOCK_MONOTONIC;
static double prof_now(void) {
    struct timespec ts;
    clock_gettime(g_clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- wrappers (declarations of the real symbols come from the linker) */
void __real_gt_linear_forward(float *, const float *, const float *, const float *, int, int, int, gt_act);
void __real_gt_linear_backward(float *, float *, float *, const float *, const float *, const float *,
                               const float *, float *, int, int, int, gt_act);
void __real_gt_conv1d_forward(float *, float *, const float *, const float *, const float *, int, int, int,
                              int, int, gt_act);
void __real_gt_conv1d_backward(float *, float *, float *, const float *, const float *, const float *,
                               const float *, float *, int, int, int, int, int, gt_act);
void __real_gt_layernorm_forward(float *, float *, float *, const float *, const float *, const float *, int,
                                 int, float);
void __real_gt_layernorm_backward(float *, float *, float *, const float *, const float *, const float *,
                                  const float *, const float *, int, int);
void __real_gt_attention_forward(float *, float *, float *, const float *, int, int, int, int);
void __real_gt_attention_backward(float *, float *, const float *, const float *, const float *,
                                  const float *, int, int, int, int);
void __real_gt_lstm_forward(float *, float *, float *, const float *, const float *, const float *,
                            const float *, const float *, int, int, int, int);
void __real_gt_lstm_backward(float *, float *, float *, float *, float *, float *, float *, const float *,
                             const float *, const float *, const float *, const float *, const float *,
                             const float *, int, int, int, int, int);
void __real_gt_adamw_update(float *, const float *, float *, float *, size_t, const gt_adamw_scalars *);
void __real_gt_gelu_forward(float *, const float *, size_t);
void __real_gt_gelu_backward(float *, const float *, const float *, size_t);
float __real_gt_mse_masked_forward(const float *, const float *, const float *, size_t);
void __real_gt_mse_masked_backward(float *, const float *, const float *, const float *, size_t, float);

#define TIMED(call) \
    double t0_ = prof_now(); \
    call; \
    double dt_ = prof_now() - t0_
#define KEY(...) \
    char key_[96]; \
    snprintf(key_, sizeof key_, __VA_ARGS__)

void __wrap_gt_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int C, int OC,
                              gt_act act) {
    TIMED(__real_gt_linear_forward(out, inp, w, b, N, C, OC, act));
    KEY("linear fwd N=%d %d->%d%s", N, C, OC, act ? " relu" : "");
    account(key_, dt_, 2.0 * N * C * OC);
}
void __wrap_gt_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *out, float *scratch, int N, int C, int OC, gt_act act) {
    TIMED(__real_gt_linear_backward(dinp, dw, db, dout, inp, w, out, scratch, N, C, OC, act));
    KEY("linear bwd N=%d %d->%d%s", N, C, OC, dinp ? "" : " (no dinp)");
    account(key_, dt_, (dinp ? 4.0 : 2.0) * N * C * OC);
}
void __wrap_gt_conv1d_forward(float *out, float *scratch, const float *inp, const float *w, const float *b, int B,
                              int IC, int OC, int W, int K, gt_act act) {
    TIMED(__real_gt_conv1d_forward(out, scratch, inp, w, b, B, IC, OC, W, K, act));
    KEY("conv1d fwd %d->%d k%d W=%d", IC, OC, K, W);
    account(key_, dt_, 2.0 * B * OC * IC * K * W);
}
void __wrap_gt_conv1d_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *out, float *scratch, int B, int IC, int OC, int W,
                               int K, gt_act act) {
    TIMED(__real_gt_conv1d_backward(dinp, dw, db, dout, inp, w, out, scratch, B, IC, OC, W, K, act));
    KEY("conv1d bwd %d->%d k%d W=%d%s", IC, OC, K, W, dinp ? "" : " (no dinp)");
    account(key_, dt_, (dinp ? 4.0 : 2.0) * B * OC * IC * K * W);
}
void __wrap_gt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                 const float *b, int N, int C, float eps) {
    TIMED(__real_gt_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps));
    KEY("layernorm fwd N=%d C=%d", N, C);
    account(key_, dt_, 0.0);
}
void __wrap_gt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                  const float *w, const float *mean, const float *rstd, int N, int C) {
    TIMED(__real_gt_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C));
    KEY("layernorm bwd N=%d C=%d", N, C);
    account(key_, dt_, 0.0);
}
void __wrap_gt_attention_forward(float *out, float *lse, float *scratch, const float *qkv, int B, int L, int C,
                                 int NH) {
    TIMED(__real_gt_attention_forward(out, lse, scratch, qkv, B, L, C, NH));
    KEY("attention fwd B=%d L=%d C=%d NH=%d", B, L, C, NH);
    account(key_, dt_, 4.0 * B * (double)L * L * C);
}
void __wrap_gt_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                  const float *out, const float *lse, int B, int L, int C, int NH) {
    TIMED(__real_gt_attention_backward(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH));
    KEY("attention bwd B=%d L=%d C=%d NH=%d", B, L, C, NH);
    account(key_, dt_, 8.0 * B * (double)L * L * C);
}
void __wrap_gt_lstm_forward(float *h, float *c, float *gates, const float *x, const float *w_ih,
                            const float *w_hh, const float *b_ih, const float *b_hh, int B, int T, int C, int H) {
    TIMED(__real_gt_lstm_forward(h, c, gates, x, w_ih, w_hh, b_ih, b_hh, B, T, C, H));
    KEY("lstm fwd B=%d T=%d %d->%d", B, T, C, H);
    account(key_, dt_, 2.0 * B * T * 4.0 * H * (C + H));
}
void __wrap_gt_lstm_backward(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh, float *dgates,
                             float *scratch, const float *dh, const float *x, const float *w_ih, const float *w_hh,
                             const float *h, const float *c, const float *gates, int B, int T, int C, int H, int K) {
    TIMED(__real_gt_lstm_backward(dx, dw_ih, dw_hh, db_ih, db_hh, dgates, scratch, dh, x, w_ih, w_hh, h, c, gates,
                                  B, T, C, H, K));
    KEY("lstm bwd B=%d T=%d %d->%d K=%d%s", B, T, C, H, K, dx ? "" : " (no dx)");
    /* dW_ih, dW_hh, dh-recurrence, (dx) */
    account(key_, dt_, 2.0 * B * T * 4.0 * H * (C + 2.0 * H + (dx ? C : 0)));
}
void __wrap_gt_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                            const gt_adamw_scalars *s) {
    TIMED(__real_gt_adamw_update(params, grads, m, v, n, s));
    account("adamw update (all tensors)", dt_, 0.0);
}
void __wrap_gt_gelu_forward(float *out, const float *inp, size_t n) {
    TIMED(__real_gt_gelu_forward(out, inp, n));
    KEY("gelu fwd n=%zu", n);
    account(key_, dt_, 0.0);
}
void __wrap_gt_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    TIMED(__real_gt_gelu_backward(dinp, dout, inp, n));
    KEY("gelu bwd n=%zu", n);
    account(key_, dt_, 0.0);
}
float __wrap_gt_mse_masked_forward(const float *pred, const float *y, const float *mask, size_t n) {
    TIMED(float r = __real_gt_mse_masked_forward(pred, y, mask, n));
    account("mse fwd", dt_, 0.0);
    return r;
}
void __wrap_gt_mse_masked_backward(float *dpred, const float *pred, const float *y, const float *mask, size_t n,
                                   float dloss) {
    TIMED(__real_gt_mse_masked_backward(dpred, pred, y, mask, n, dloss));
    account("mse bwd", dt_, 0.0);
}

static int cmp_rows(const void *a, const void *b) {
    double x = ((const row *)a)->seconds, y = ((const row *)b)->seconds;
    return (x < y) - (x > y);
}

int main(int argc, char **argv) {
    gt_nn_bench_config bc;
    gt_nn_bench_config_default(&bc, GT_MODEL_S2P_CNN);
    int kind = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--model")) kind = gt_model_kind_parse(v);
        else if (!strcmp(a, "--batch")) bc.batch = atoi(v);
        else if (!strcmp(a, "--window")) bc.window = atoi(v);
        else if (!strcmp(a, "--tbptt")) bc.tbptt = atoi(v);
        else if (!strcmp(a, "--steps")) bc.steps = atoi(v);
        else if (!strcmp(a, "--precision")) bc.precision = !strcmp(v, "bf16") ? GT_PRECISION_BF16 : GT_PRECISION_FP32;
        else if (!strcmp(a, "--clock") && (!strcmp(v, "wall") || !strcmp(v, "thread") || !strcmp(v, "process") ||
                                         !strcmp(v, "cpu")))
            g_clock_id = !strcmp(v, "thread")                          ? CLOCK_THREAD_CPUTIME_ID
                         : !strcmp(v, "process") || !strcmp(v, "cpu") ? CLOCK_PROCESS_CPUTIME_ID
                                                 : CLOCK_MONOTONIC;
        else {
            fprintf(stderr, "usage: gt_layer_profile --model M [--batch B] [--window W] [--tbptt K] [--steps N] "
                            "[--precision fp32|bf16] [--clock wall|thread|process]\n");
            return 2;
        }
    }
    if (kind < 0 || !gt_model_kind_available((gt_model_kind)kind)) {
        fprintf(stderr, "gt_layer_profile: --model s2p_cnn|s2p_tf|lstm (built into gt_nn) required\n");
        return 2;
    }
    bc.kind = (gt_model_kind)kind;
    gt_model_config mc;
    gt_nn_bench_model_config(&bc, &mc);
    mc.precision = bc.precision; /* the model's own: its forward and backward set the ops' precision */
    gt_model *m = gt_model_create(&mc);
    gt_model_init(m, 1);
    const int B = bc.batch;
    float *x = (float *)malloc((size_t)B * m->n_x * sizeof(float));
    float *y = (float *)calloc((size_t)B * m->n_y, sizeof(float));
    for (size_t i = 0; i < (size_t)B * m->n_x; i++) x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.01f};
    double t_fwd = 0, t_loss = 0, t_bwd = 0, t_opt = 0;
    for (int s = -1; s < bc.steps; s++) { /* step -1: warm-up, not counted */
        g_active = s >= 0;
        double t0 = prof_now();
        gt_model_zero_grad(m);
        gt_model_forward(m, x, B);
        double t1 = prof_now();
#ifdef HAVE_LSTM
        if (kind == GT_MODEL_LSTM) gt_model_lstm_loss(m);
        else
#endif
            gt_model_loss(m, y, NULL);
        double t2 = prof_now();
        gt_model_backward(m, 1.0f);
        double t3 = prof_now();
        gt_model_adamw_step(m, &opt, 1e-4f, s + 2, 0);
        double t4 = prof_now();
        if (g_active) {
            t_fwd += t1 - t0;
            t_loss += t2 - t1;
            t_bwd += t3 - t2;
            t_opt += t4 - t3;
        }
    }
    double n = bc.steps, total = (t_fwd + t_loss + t_bwd + t_opt) / n, wrapped = 0;
    qsort(g_rows, (size_t)g_n_rows, sizeof(row), cmp_rows);
    printf("layer profile %s B=%d window=%d tbptt=%d threads (OPENBLAS_NUM_THREADS) %s, %d steps, %s time\n",
           gt_model_kind_name(mc.kind), B, mc.window, mc.tbptt, getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "?",
           bc.steps, g_clock_id == CLOCK_THREAD_CPUTIME_ID ? "thread CPU" : g_clock_id == CLOCK_PROCESS_CPUTIME_ID ? "process CPU" : "wall");
    printf("step %.1f ms: zero_grad+forward %.1f, loss %.1f, backward %.1f, AdamW %.1f; sgemm peak %.1f GFLOP/s\n",
           1e3 * total, 1e3 * t_fwd / n, 1e3 * t_loss / n, 1e3 * t_bwd / n, 1e3 * t_opt / n,
           gt_nn_bench_sgemm_gflops(2048, 2));
    printf("%-48s %6s %10s %6s %9s\n", "op (call site shape)", "calls", "ms/step", "%", "GFLOP/s");
    for (int i = 0; i < g_n_rows; i++) {
        row *r = &g_rows[i];
        wrapped += r->seconds / n;
        char gf[16] = "-";
        if (r->flops > 0) snprintf(gf, sizeof gf, "%.1f", r->flops / r->seconds * 1e-9);
        printf("%-48s %6ld %10.2f %6.1f %9s\n", r->key, r->calls / (long)n, 1e3 * r->seconds / n,
               100.0 * r->seconds / n / total, gf);
    }
    printf("%-48s %6s %10.2f %6.1f\n", "model glue (not in a wrapped op)", "", 1e3 * (total - wrapped),
           100.0 * (total - wrapped) / total);
    free(x);
    free(y);
    gt_model_free(m);
    return 0;
}
