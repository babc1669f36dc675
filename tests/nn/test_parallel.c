/* tests/nn/test_parallel.c: the engine's parallel-for (nn/ops/cpu/parallel.h)
 * and the ops that use it give the same numbers, bit for bit, at 1 and 2
 * threads.
 *
 *   - gt_par_for: every task runs once, tids are in range, ordered sections run
 *     in task order, a nested call runs serially, OpenBLAS's thread count is
 *     restored afterwards;
 *   - linear: bias gradient and the fused bias + ReLU pass;
 *   - conv1d forward/backward (chunk remainder, ReLU, accumulation into
 *     non-zero dw/db) and attention forward/backward (full and row-range
 *     variants, fp32 and bf16) and layernorm forward/backward: outputs and
 *     gradients at 2 threads == at 1 thread (memcmp).
 * ctest pins OPENBLAS_NUM_THREADS=1; the test raises it to 2 itself before the
 * engine's first query, so the pool and the 2-slice scratch are exercised
 * even on a single core. */
#include <cblas.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/attention.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/ops.h"
#include "nn_test_util.h"
#include "test.h"

static float *falloc(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    TEST_REQUIRE(p != NULL);
    return p;
}

static float *fdup(const float *x, size_t n) {
    float *p = falloc(n);
    memcpy(p, x, n * sizeof(float));
    return p;
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* ------------------------------------------------------------ gt_par_for -- */
#define N_TASKS 97
typedef struct par_ctx {
    atomic_int runs[N_TASKS];
    atomic_int bad_tid;
    int order[N_TASKS], n_order; /* written inside the ordered section only */
    gt_par_ordered ord;
    int threads;
    atomic_int nested_sum;
} par_ctx;

static void nested_task(void *ctx, int task, int tid) {
    par_ctx *c = ctx;
    if (tid != 0) atomic_fetch_add(&c->bad_tid, 1); /* nested calls run serially on the caller */
    atomic_fetch_add(&c->nested_sum, task);
}

static void par_task(void *ctx, int task, int tid) {
    par_ctx *c = ctx;
    atomic_fetch_add(&c->runs[task], 1);
    if (tid < 0 || tid >= c->threads) atomic_fetch_add(&c->bad_tid, 1);
    volatile double x = 0; /* some work, so that both threads take tasks */
    for (int i = 0; i < 2000 * (task % 7 + 1); i++) x += i;
    gt_par_ordered_begin(&c->ord, task);
    c->order[c->n_order++] = task;
    gt_par_ordered_end(&c->ord, task);
    if (task == 5) gt_par_for(4, nested_task, c);
}

static void check_par_for(int threads) {
    openblas_set_num_threads(threads);
    TEST_EQ_INT(gt_par_threads(), threads);
    par_ctx *c = calloc(1, sizeof *c);
    TEST_REQUIRE(c != NULL);
    c->threads = threads;
    gt_par_ordered_init(&c->ord);
    gt_par_for(N_TASKS, par_task, c);
    for (int i = 0; i < N_TASKS; i++) TEST_EQ_INT(atomic_load(&c->runs[i]), 1);
    TEST_EQ_INT(atomic_load(&c->bad_tid), 0);
    TEST_EQ_INT(c->n_order, N_TASKS);
    for (int i = 0; i < c->n_order; i++) TEST_EQ_INT(c->order[i], i);
    TEST_EQ_INT(atomic_load(&c->nested_sum), 0 + 1 + 2 + 3);
    TEST_EQ_INT(openblas_get_num_threads(), threads); /* restored */
    gt_par_for(0, par_task, c);                       /* no tasks: nothing runs */
    free(c);
}

/* ---------------------------------------------------------------- conv1d -- */
static void check_conv(int B, int IC, int OC, int W, int K, gt_act act) {
    const size_t n_in = (size_t)B * IC * W, n_out = (size_t)B * OC * W, n_w = (size_t)OC * IC * K;
    float *inp = falloc(n_in), *w = falloc(n_w), *b = falloc(OC), *dout = falloc(n_out);
    nt_fill(inp, n_in, 1.0f, 1);
    nt_fill(w, n_w, 0.5f, 2);
    nt_fill(b, OC, 0.5f, 3);
    nt_fill(dout, n_out, 1.0f, 4);
    float *dw0 = falloc(n_w), *db0 = falloc(OC); /* gradients accumulate into these */
    nt_fill(dw0, n_w, 0.1f, 5);
    nt_fill(db0, OC, 0.1f, 6);
    float *scratch = falloc(gt_conv1d_scratch_elems(IC, OC, W, K));
    float *out[2], *dinp[2], *dw[2], *db[2];
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r + 1);
        out[r] = falloc(n_out);
        dinp[r] = falloc(n_in);
        dw[r] = fdup(dw0, n_w);
        db[r] = fdup(db0, OC);
        gt_conv1d_forward(out[r], scratch, inp, w, b, B, IC, OC, W, K, act);
        gt_conv1d_backward(dinp[r], dw[r], db[r], dout, inp, w, out[r], scratch, B, IC, OC, W, K, act);
    }
    TEST_CHECK(same(out[0], out[1], n_out));
    TEST_CHECK(same(dinp[0], dinp[1], n_in));
    TEST_CHECK(same(dw[0], dw[1], n_w));
    TEST_CHECK(same(db[0], db[1], OC));
    /* the backward did something: dw moved away from its initial value */
    TEST_CHECK(!same(dw[0], dw0, n_w));
    /* db = db0 + sum over samples and positions of dout' (double reference) */
    for (int oc = 0; oc < OC; oc++) {
        double s = db0[oc];
        for (int n = 0; n < B; n++)
            for (int t = 0; t < W; t++) {
                size_t o = ((size_t)n * OC + oc) * W + t;
                s += (act == GT_ACT_RELU && !(out[0][o] > 0.0f)) ? 0.0 : dout[o];
            }
        TEST_CLOSE(db[1][oc], s, 1e-4, 1e-5);
    }
    for (int r = 0; r < 2; r++) {
        free(out[r]);
        free(dinp[r]);
        free(dw[r]);
        free(db[r]);
    }
    free(inp), free(w), free(b), free(dout), free(dw0), free(db0), free(scratch);
}

/* ---------------------------------------------------------------- linear -- */
/* The GEMMs keep OpenBLAS's threading; the bias/ReLU passes and the bias
 * gradient run on the engine's threads: db must not depend on the count, and
 * the forward output must equal the serial reference of bias + ReLU. */
static void check_linear(int N, int C, int OC) {
    const size_t n_in = (size_t)N * C, n_out = (size_t)N * OC, n_w = (size_t)OC * C;
    float *inp = falloc(n_in), *w = falloc(n_w), *b = falloc(OC), *dout = falloc(n_out);
    float *scratch = falloc(n_out), *dw = falloc(n_w), *nob = falloc(n_out);
    nt_fill(inp, n_in, 1.0f, 21);
    nt_fill(w, n_w, 0.5f, 22);
    nt_fill(b, OC, 0.5f, 23);
    nt_fill(dout, n_out, 1.0f, 24);
    float *out[2], *db[2];
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r + 1);
        out[r] = falloc(n_out);
        db[r] = falloc(OC);
        nt_fill(db[r], OC, 0.1f, 25);
        memset(dw, 0, n_w * sizeof(float));
        gt_linear_forward(out[r], inp, w, b, N, C, OC, GT_ACT_RELU);
        gt_linear_backward(NULL, dw, db[r], dout, inp, w, out[r], scratch, N, C, OC, GT_ACT_RELU);
    }
    TEST_CHECK(same(db[0], db[1], OC));
    gt_linear_forward(nob, inp, w, NULL, N, C, OC, GT_ACT_NONE); /* at 2 threads */
    int bad = 0;
    for (size_t i = 0; i < n_out; i++) {
        float z = nob[i] + b[i % OC];
        bad += out[1][i] != (z > 0.0f ? z : 0.0f);
    }
    TEST_EQ_INT(bad, 0);
    for (int r = 0; r < 2; r++) free(out[r]), free(db[r]);
    free(inp), free(w), free(b), free(dout), free(scratch), free(dw), free(nob);
}

/* ------------------------------------------------------------- attention -- */
static void check_attention(int B, int L, int C, int NH, int q0, int nq) {
    const size_t n_qkv = (size_t)B * L * 3 * C, n_out = (size_t)B * L * C, n_lse = (size_t)B * NH * L;
    float *qkv = falloc(n_qkv), *dout = falloc(n_out);
    nt_fill(qkv, n_qkv, 2.0f, 11);
    nt_fill(dout, n_out, 1.0f, 12);
    float *scratch = falloc(gt_attention_scratch_elems(L));
    float *out[2], *lse[2], *dqkv[2];
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r + 1);
        out[r] = falloc(n_out);
        lse[r] = falloc(n_lse);
        dqkv[r] = falloc(n_qkv);
        memset(out[r], 0, n_out * sizeof(float));
        memset(lse[r], 0, n_lse * sizeof(float));
        gt_attention_forward_rows(out[r], lse[r], scratch, qkv, B, L, C, NH, q0, nq);
        gt_attention_backward_rows(dqkv[r], scratch, dout, qkv, out[r], lse[r], B, L, C, NH, q0, nq);
    }
    TEST_CHECK(same(out[0], out[1], n_out));
    TEST_CHECK(same(lse[0], lse[1], n_lse));
    TEST_CHECK(same(dqkv[0], dqkv[1], n_qkv));
    /* every (batch, head) was computed: a non-zero lse in each one's rows */
    for (int bh = 0; bh < B * NH; bh++) TEST_CHECK(lse[1][(size_t)bh * L + q0] != 0.0f);
    for (int r = 0; r < 2; r++) {
        free(out[r]);
        free(lse[r]);
        free(dqkv[r]);
    }
    free(qkv), free(dout), free(scratch);
}

/* LayerNorm forward and backward over enough rows for several row blocks and
 * C not a multiple of the column blocks; parameter gradients accumulated into
 * non-zero dw/db: the same bits at 1 and 2 threads. Then the attention of the
 * bf16 route (the fused AMX kernels where the CPU has them). */
static void check_layernorm(int N, int C) {
    const size_t n = (size_t)N * C;
    float *x = falloc(n), *g = falloc(n), *w = falloc(C), *b = falloc(C);
    nt_fill(x, n, 2.0f, 21);
    nt_fill(g, n, 1.0f, 22);
    nt_fill(w, C, 1.0f, 23);
    nt_fill(b, C, 1.0f, 24);
    float *out[2], *mean[2], *rstd[2], *dx[2], *dw[2], *db[2];
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r + 1);
        out[r] = falloc(n), mean[r] = falloc(N), rstd[r] = falloc(N), dx[r] = falloc(n);
        dw[r] = falloc(C), db[r] = falloc(C);
        nt_fill(dw[r], C, 1.0f, 25);
        nt_fill(db[r], C, 1.0f, 26);
        gt_layernorm_forward(out[r], mean[r], rstd[r], x, w, b, N, C, 1e-5f);
        gt_layernorm_backward(dx[r], dw[r], db[r], g, x, w, mean[r], rstd[r], N, C);
    }
    TEST_CHECK(same(out[0], out[1], n) && same(mean[0], mean[1], N) && same(rstd[0], rstd[1], N));
    TEST_CHECK(same(dx[0], dx[1], n) && same(dw[0], dw[1], C) && same(db[0], db[1], C));
    for (int r = 0; r < 2; r++) free(out[r]), free(mean[r]), free(rstd[r]), free(dx[r]), free(dw[r]), free(db[r]);
    free(x), free(g), free(w), free(b);
}

/* AdamW over a buffer large enough to be split over the threads, with an odd
 * length (tail): the same bits at 1 and 2 threads. */
static void check_adamw(size_t n) {
    float *p[2], *m[2], *v[2];
    float *g = falloc(n);
    nt_fill(g, n, 0.1f, 7);
    gt_adamw_config cfg = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r + 1);
        p[r] = falloc(n), m[r] = falloc(n), v[r] = falloc(n);
        nt_fill(p[r], n, 1.0f, 8);
        memset(m[r], 0, n * sizeof(float));
        memset(v[r], 0, n * sizeof(float));
        for (long t = 1; t <= 3; t++) {
            gt_adamw_scalars sc = gt_adamw_scalars_make(&cfg, 1e-3f, t, 1);
            gt_adamw_update(p[r], g, m[r], v[r], n, &sc);
        }
    }
    TEST_CHECK(memcmp(p[0], p[1], n * sizeof(float)) == 0);
    TEST_CHECK(memcmp(m[0], m[1], n * sizeof(float)) == 0);
    TEST_CHECK(memcmp(v[0], v[1], n * sizeof(float)) == 0);
    for (int r = 0; r < 2; r++) free(p[r]), free(m[r]), free(v[r]);
    free(g);
}

int main(void) {
    /* before anything queries the engine: 2 scratch slices, a pool of 2 */
    openblas_set_num_threads(2);
    TEST_REQUIRE(openblas_get_num_threads() == 2);
    TEST_EQ_INT(gt_par_max_threads(), 2);
    openblas_set_num_threads(5); /* above the planned slices: capped */
    TEST_EQ_INT(gt_par_threads(), 2);
    TEST_EQ_INT(gt_par_max_threads(), 2);

    check_par_for(2);
    check_par_for(1);
    check_par_for(2);

    check_conv(9, 3, 5, 37, 4, GT_ACT_RELU); /* 3 chunks, the last one short */
    check_conv(16, 30, 40, 99, 6, GT_ACT_RELU);
    check_conv(7, 1, 8, 50, 10, GT_ACT_NONE);
    check_conv(1, 4, 4, 20, 3, GT_ACT_RELU); /* one chunk: serial path */

    check_linear(2000, 24, 200); /* 4 column blocks, several row blocks */
    check_linear(7, 5, 3);       /* inline path */

    check_attention(3, 300, 16, 4, 0, 300);  /* partial tiles in both directions */
    check_attention(2, 512, 128, 4, 0, 512); /* the s2p_tf shape, B = 2 */
    check_attention(3, 300, 16, 4, 150, 1);  /* the seq2point midpoint row */
    check_adamw((1 << 18) + 37);
    check_layernorm(1000, 100); /* 4 row blocks, a short column block */
    check_layernorm(3, 7);      /* one task each */
    gt_cpu_set_precision(GT_CPU_BF16); /* no effect in a build without oneDNN */
    check_attention(2, 512, 128, 4, 0, 512);
    check_attention(3, 300, 16, 4, 150, 1);
    gt_cpu_set_precision(GT_CPU_FP32);

    openblas_set_num_threads(1);
    if (!gt_test_failures) fprintf(stderr, "parallel: conv1d, attention (fp32, bf16), layernorm and AdamW identical at 1 and 2 threads\n");
    TEST_DONE();
}
