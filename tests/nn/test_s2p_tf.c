/* tests/nn/test_s2p_tf.c: the seq2point Transformer through the generic model
 * API: full backward vs central finite differences on a small model (every
 * parameter, five-point stencil), deterministic repeated forward, activation memory linear in L,
 * and a short training run on a learnable toy problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/model.h"
#include "nn/model_s2p_tf.h"
#include "nn_test_util.h"
#include "test.h"

static gt_model_config small_cfg(int L, int d, int NH, int ff, int N, int A, int B) {
    gt_model_config c;
    gt_model_config_default(&c, GT_MODEL_S2P_TF);
    c.window = L;
    c.d_model = d;
    c.n_heads = NH;
    c.d_ff = ff;
    c.n_layers = N;
    c.n_out = A;
    c.max_batch = B;
    return c;
}

typedef struct {
    gt_model *m;
    const float *x, *y;
    int B;
} fd_ctx;

/* loss in double from a float forward: mean (pred - y)^2 */
static double loss_d(void *p) {
    fd_ctx *c = p;
    gt_model_forward(c->m, c->x, c->B);
    size_t n = (size_t)c->B * c->m->n_y;
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)c->m->pred[i] - c->y[i];
        s += e * e;
    }
    return s / (double)n;
}

/* Five-point central difference (truncation O(h^4)), so h can be large
 * enough that float rounding of the loss stays small: restores x[i]. */
static double fd5(double (*f)(void *), void *ctx, float *x, size_t i, float h) {
    float x0 = x[i];
    double v[4];
    const float off[4] = {2.0f * h, h, -h, -2.0f * h};
    for (int k = 0; k < 4; k++) {
        x[i] = x0 + off[k];
        v[k] = f(ctx);
    }
    x[i] = x0;
    return (8.0 * (v[1] - v[2]) - (v[0] - v[3])) / (12.0 * h);
}

static void test_grad_fd(int L, int n_in, int N) {
    const int B = 2, A = 3;
    gt_model_config cfg = small_cfg(L, 8, 2, 16, N, A, B);
    cfg.n_in = n_in;
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 42);
    // give LayerNorm affine params and biases non-trivial values, as after training
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = gt_model_tensor(m, i);
        if (t->ndim == 1) {
            float *p = m->params + t->offset;
            nt_fill(p, t->n_elem, 0.3f, 100 + i);
            if (strstr(t->name, "ln") && strstr(t->name, "weight"))
                for (size_t k = 0; k < t->n_elem; k++) p[k] += 1.0f;
        }
    }
    size_t nx = (size_t)B * m->n_x, ny = (size_t)B * m->n_y;
    float *x = malloc(nx * sizeof(float)), *y = malloc(ny * sizeof(float));
    nt_fill(x, nx, 2.0f, 3);
    nt_fill(y, ny, 1.0f, 4);
    gt_model_forward(m, x, B);
    gt_model_zero_grad(m);
    float loss = gt_model_loss(m, y, NULL);
    gt_model_backward(m, 1.0f);
    fd_ctx ctx = {m, x, y, B};
    TEST_CLOSE(loss, loss_d(&ctx), 1e-6, 1e-5);

    double maxrel = 0;
    int n_checked = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = gt_model_tensor(m, i);
        for (size_t k = 0; k < t->n_elem; k++) {
            size_t idx = t->offset + k;
            double fd = fd5(loss_d, &ctx, m->params, idx, 4e-2f);
            double g = m->grads[idx];
            double rel = fabs(g - fd) / (1e-3 + fabs(fd));
            if (rel > maxrel) maxrel = rel;
            if (!(fabs(g - fd) <= 1e-5 + 2e-3 * fabs(fd)))
                fprintf(stderr, "  %s[%zu]: grad %.6g fd %.6g\n", t->name, k, g, fd);
            TEST_CLOSE(g, fd, 1e-5, 2e-3);
            n_checked++;
        }
    }
    printf("s2p_tf L=%d n_in=%d N=%d: %d params vs FD, max rel err %.3g (loss %.5f)\n", L, n_in, N, n_checked,
           maxrel, loss);
    // a second forward of the same batch gives bit-identical predictions (no hidden state)
    float *p1 = malloc(ny * sizeof(float));
    gt_model_forward(m, x, B);
    memcpy(p1, m->pred, ny * sizeof(float));
    float *z = malloc(m->n_x * sizeof(float)); // some other batch in between
    nt_fill(z, m->n_x, 1.5f, 5);
    gt_model_forward(m, z, 1);
    free(z);
    gt_model_forward(m, x, B);
    TEST_CHECK(memcmp(p1, m->pred, ny * sizeof(float)) == 0);
    free(p1);
    free(x);
    free(y);
    gt_model_free(m);
}

/* planned activation bytes at B = 1 for windows L, 2L, 4L: second difference
 * zero up to alignment padding, i.e. memory is affine in L (no L^2 term) */
static void test_memory_linear(void) {
    size_t bytes[3];
    int Ls[3] = {256, 512, 1024};
    for (int i = 0; i < 3; i++) {
        gt_model_config cfg = small_cfg(Ls[i], 16, 2, 32, 1, 2, 1);
        gt_model *m = gt_model_create(&cfg);
        bytes[i] = gt_model_act_bytes(m);
        gt_model_free(m);
    }
    long long d1 = (long long)bytes[1] - (long long)bytes[0], d2 = (long long)bytes[2] - (long long)bytes[1];
    printf("s2p_tf act bytes L=256/512/1024: %zu %zu %zu\n", bytes[0], bytes[1], bytes[2]);
    // d2 == 2 d1 for affine memory; an L^2 term would make d2 ~ 4 d1
    TEST_CHECK(llabs(d2 - 2 * d1) <= 64 * 64);
}

/* toy problem: y_a = x[mid - 2a] (copy earlier window points): learnable by
 * attention with positional embeddings */
static void test_train_toy(void) {
    const int B = 16, L = 16, A = 3, steps = 250;
    gt_model_config cfg = small_cfg(L, 32, 4, 64, 2, A, B);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 7);
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.0f};
    float *x = malloc((size_t)B * L * sizeof(float)), *y = malloc((size_t)B * A * sizeof(float));
    gt_rng r;
    gt_rng_init(&r, 99, gt_stream(GT_STREAM_TEST, 5));
    double first = 0, last = 0;
    for (int step = 0; step < steps; step++) {
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < L; t++) x[b * L + t] = (float)gt_rng_normal(&r);
            for (int a = 0; a < A; a++) y[b * A + a] = x[b * L + L / 2 - 2 * a];
        }
        gt_model_zero_grad(m);
        gt_model_forward(m, x, B);
        float loss = gt_model_loss(m, y, NULL);
        gt_model_backward(m, 1.0f);
        gt_clip_grad_norm(m->grads, m->n_params, 1.0f);
        gt_model_adamw_step(m, &opt, 3e-3f, step + 1, 0);
        if (step < 10) first += loss / 10;
        if (step >= steps - 10) last += loss / 10;
    }
    printf("s2p_tf toy training: loss %.4f -> %.4f\n", first, last);
    TEST_CHECK(last < 0.1 * first);
    free(x);
    free(y);
    gt_model_free(m);
}

int main(void) {
    TEST_REQUIRE(gt_model_kind_available(GT_MODEL_S2P_TF));
    test_grad_fd(9, 1, 2);
    test_grad_fd(6, 2, 2);
    test_grad_fd(8, 1, 1); // the last block alone
    test_memory_linear();
    test_train_toy();
    TEST_DONE();
}
