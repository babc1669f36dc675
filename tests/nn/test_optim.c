/* tests/nn/test_optim.c: AdamW vs the documented reference formula (bit for
 * bit), clipping, and the warmup + cosine schedule. */
#include <math.h>
#include <string.h>

#include "nn/ops/ops.h"
#include "nn_test_util.h"
#include "test.h"

/* The reference formula of nn/ops/elementwise.h, written out in double:
 * scalars from (beta1, beta2, eps, wd, lr, t), then per element
 *   m' = b1 m + (1-b1) g;  v' = b2 v + (1-b2) g g;
 *   p' = p (1 - lr wd) - lr/(1-b1^t) * m' / (sqrt(v')/sqrt(1-b2^t) + eps)
 * and each stored value rounded to float once. */
static void ref_adamw(float *p, float *m, float *v, const float *g, int n, double lr, double b1, double b2,
                      double eps, double wd, long t) {
    double step_size = lr / (1.0 - pow(b1, (double)t));
    double bc2_sqrt = sqrt(1.0 - pow(b2, (double)t));
    for (int i = 0; i < n; i++) {
        double mm = b1 * m[i] + (1.0 - b1) * (double)g[i];
        double vv = b2 * v[i] + (1.0 - b2) * ((double)g[i] * g[i]);
        double pp = (double)p[i] * (1.0 - lr * wd) - step_size * (mm / (sqrt(vv) / bc2_sqrt + eps));
        m[i] = (float)mm;
        v[i] = (float)vv;
        p[i] = (float)pp;
    }
}

static void test_adamw(void) {
    enum { N = 6 };
    gt_adamw_config cfg = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    float p[N] = {0.5f, -1.25f, 3.0f, 0.0f, 1e-3f, -7.0f}, m[N] = {0}, v[N] = {0};
    float rp[N], rm[N], rv[N];
    memcpy(rp, p, sizeof p);
    memcpy(rm, m, sizeof m);
    memcpy(rv, v, sizeof v);
    const float grads[3][N] = {{0.1f, -0.2f, 0.0f, 1.0f, -1e-4f, 5.0f},
                               {-0.3f, 0.25f, 1e-6f, -1.0f, 2e-4f, 4.0f},
                               {0.05f, 0.0f, -2.0f, 0.5f, 0.0f, -3.0f}};
    const float lrs[3] = {1e-3f, 3e-3f, 5e-4f};
    for (long t = 1; t <= 3; t++) {
        gt_adamw_scalars s = gt_adamw_scalars_make(&cfg, lrs[t - 1], t, 1);
        gt_adamw_update(p, grads[t - 1], m, v, N, &s);
        ref_adamw(rp, rm, rv, grads[t - 1], N, lrs[t - 1], 0.9, 0.999, 1e-8, 0.01, t);
        TEST_CHECK(memcmp(p, rp, sizeof p) == 0);
        TEST_CHECK(memcmp(m, rm, sizeof m) == 0);
        TEST_CHECK(memcmp(v, rv, sizeof v) == 0);
    }
    // a longer vector, so the SIMD body (8 or 4 lanes) and the scalar tail are both covered
    enum { L = 37 };
    float lp[L], lm[L], lv[L], lg[L], rlp[L], rlm[L], rlv[L];
    nt_fill(lp, L, 2.0f, 1);
    nt_fill(lm, L, 0.01f, 2);
    nt_fill(lv, L, 1e-4f, 3);
    for (int i = 0; i < L; i++) lv[i] = fabsf(lv[i]);
    memcpy(rlp, lp, sizeof lp);
    memcpy(rlm, lm, sizeof lm);
    memcpy(rlv, lv, sizeof lv);
    for (long t = 1; t <= 4; t++) {
        nt_fill(lg, L, 0.1f, 10 + (uint32_t)t);
        gt_adamw_scalars s = gt_adamw_scalars_make(&cfg, 2e-3f, t, 1);
        gt_adamw_update(lp, lg, lm, lv, L, &s);
        ref_adamw(rlp, rlm, rlv, lg, L, 2e-3f, 0.9, 0.999, 1e-8, 0.01, t);
    }
    TEST_CHECK(memcmp(lp, rlp, sizeof lp) == 0);
    TEST_CHECK(memcmp(lm, rlm, sizeof lm) == 0);
    TEST_CHECK(memcmp(lv, rlv, sizeof lv) == 0);
    // hand-computed first step: m = 0.1 g, v = 0.001 g^2, mhat/sqrt(vhat) = sign(g)
    // => p1 = p0 (1 - lr wd) - lr sign(g) (up to eps); p0 = 0.5, g = 0.1, lr = 1e-3
    float q = 0.5f, qm = 0, qv = 0;
    gt_adamw_scalars s1 = gt_adamw_scalars_make(&cfg, 1e-3f, 1, 1);
    gt_adamw_update(&q, (const float[]){0.1f}, &qm, &qv, 1, &s1);
    TEST_CLOSE(q, 0.5 * (1 - 1e-3 * 0.01) - 1e-3, 1e-9, 1e-6);
    // no decay for decay = 0 tensors
    float r = 0.5f, rmm = 0, rvv = 0;
    gt_adamw_scalars s0 = gt_adamw_scalars_make(&cfg, 1e-3f, 1, 0);
    gt_adamw_update(&r, (const float[]){0.1f}, &rmm, &rvv, 1, &s0);
    TEST_CLOSE(r, 0.5 - 1e-3, 1e-9, 1e-6);
    // zero gradient and zero state: the parameter only decays
    float z = 2.0f, zm = 0, zv = 0;
    gt_adamw_update(&z, (const float[]){0.0f}, &zm, &zv, 1, &s1);
    TEST_CHECK(z == (float)(2.0 * (1.0 - 1e-3 * 0.01)));
}

static void test_clip(void) {
    float g[4] = {3, 0, -4, 0}; // norm 5
    TEST_CLOSE(gt_grad_norm(g, 4), 5.0, 0, 1e-12);
    double n = gt_clip_grad_norm(g, 4, 1.0f);
    TEST_CLOSE(n, 5.0, 0, 1e-12);
    TEST_CLOSE(g[0], 3.0 / (5.0 + 1e-6), 1e-7, 1e-6);
    TEST_CLOSE(g[2], -4.0 / (5.0 + 1e-6), 1e-7, 1e-6);
    TEST_CLOSE(gt_grad_norm(g, 4), 1.0, 1e-6, 0);
    float h[3] = {0.1f, 0.2f, -0.2f}; // norm 0.3 < 1: unchanged
    TEST_CLOSE(gt_clip_grad_norm(h, 3, 1.0f), 0.3, 1e-7, 0);
    TEST_CHECK(h[0] == 0.1f && h[1] == 0.2f && h[2] == -0.2f);
    float k[2] = {30, 40}; // max_norm <= 0: report only
    TEST_CLOSE(gt_clip_grad_norm(k, 2, 0.0f), 50.0, 0, 1e-12);
    TEST_CHECK(k[0] == 30.0f && k[1] == 40.0f);
    // a long vector: sum of 1000 elements of 0.5 -> sqrt(250)
    float big[1000];
    for (int i = 0; i < 1000; i++) big[i] = 0.5f;
    TEST_CLOSE(gt_grad_norm(big, 1000), sqrt(250.0), 0, 1e-12);
}

static void test_schedule(void) {
    const float lmax = 1e-3f, lmin = 1e-5f;
    TEST_CLOSE(gt_lr_schedule(0, 10, 110, lmax, lmin), 1e-4, 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(4, 10, 110, lmax, lmin), 5e-4, 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(9, 10, 110, lmax, lmin), 1e-3, 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(10, 10, 110, lmax, lmin), 1e-3, 0, 1e-6);               // cosine starts at max
    TEST_CLOSE(gt_lr_schedule(60, 10, 110, lmax, lmin), 0.5 * (1e-3 + 1e-5), 0, 1e-6); // halfway
    TEST_CLOSE(gt_lr_schedule(35, 10, 110, lmax, lmin), 1e-5 + 0.5 * (1e-3 - 1e-5) * (1 + cos(M_PI * 0.25)), 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(110, 10, 110, lmax, lmin), 1e-5, 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(500, 10, 110, lmax, lmin), 1e-5, 0, 1e-6);
    TEST_CLOSE(gt_lr_schedule(0, 0, 100, lmax, lmin), 1e-3, 0, 1e-6); // no warmup
    TEST_CLOSE(gt_lr_schedule(50, 0, 0, lmax, lmin), 1e-3, 0, 1e-6);  // no decay
    for (long s = 11; s < 110; s++) // monotone non-increasing after warmup
        TEST_CHECK(gt_lr_schedule(s, 10, 110, lmax, lmin) <= gt_lr_schedule(s - 1, 10, 110, lmax, lmin));
}

int main(void) {
    test_adamw();
    test_clip();
    test_schedule();
    TEST_DONE();
}
