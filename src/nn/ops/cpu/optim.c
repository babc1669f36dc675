/* nn/ops/cpu/optim.c: AdamW, gradient-norm clipping, lr schedule. */
#include <math.h>

#include "nn/ops/cpu/parallel.h"
#include "nn/ops/ops.h"

gt_adamw_scalars gt_adamw_scalars_make(const gt_adamw_config *cfg, float lr, long t, int decay) {
    gt_adamw_scalars s;
    s.beta1 = cfg->beta1;
    s.beta2 = cfg->beta2;
    s.one_minus_beta1 = 1.0 - s.beta1;
    s.one_minus_beta2 = 1.0 - s.beta2;
    s.eps = cfg->eps;
    s.decay = decay ? 1.0 - (double)lr * cfg->weight_decay : 1.0;
    s.step_size = (double)lr / (1.0 - pow(s.beta1, (double)t));
    s.bc2_sqrt = sqrt(1.0 - pow(s.beta2, (double)t));
    return s;
}

/* The SIMD bodies evaluate the formula of gt_adamw_element (elementwise.h)
 * with the same double operations in the same order; the compiler cannot
 * vectorise the scalar loop itself because sqrt() may set errno. */
#if defined(__AVX512F__)
#include <immintrin.h>
static size_t adamw_simd(float *params, const float *grads, float *m, float *v, size_t n,
                         const gt_adamw_scalars *s) {
    const __m512d b1 = _mm512_set1_pd(s->beta1), b2 = _mm512_set1_pd(s->beta2);
    const __m512d omb1 = _mm512_set1_pd(s->one_minus_beta1), omb2 = _mm512_set1_pd(s->one_minus_beta2);
    const __m512d eps = _mm512_set1_pd(s->eps), decay = _mm512_set1_pd(s->decay);
    const __m512d step = _mm512_set1_pd(s->step_size), bc2 = _mm512_set1_pd(s->bc2_sqrt);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d g = _mm512_cvtps_pd(_mm256_loadu_ps(grads + i));
        __m512d mm = _mm512_add_pd(_mm512_mul_pd(b1, _mm512_cvtps_pd(_mm256_loadu_ps(m + i))), _mm512_mul_pd(omb1, g));
        __m512d vv = _mm512_add_pd(_mm512_mul_pd(b2, _mm512_cvtps_pd(_mm256_loadu_ps(v + i))),
                                   _mm512_mul_pd(omb2, _mm512_mul_pd(g, g)));
        __m512d denom = _mm512_add_pd(_mm512_div_pd(_mm512_sqrt_pd(vv), bc2), eps);
        __m512d pp = _mm512_sub_pd(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(params + i)), decay),
                                   _mm512_mul_pd(step, _mm512_div_pd(mm, denom)));
        _mm256_storeu_ps(m + i, _mm512_cvtpd_ps(mm));
        _mm256_storeu_ps(v + i, _mm512_cvtpd_ps(vv));
        _mm256_storeu_ps(params + i, _mm512_cvtpd_ps(pp));
    }
    return i;
}
#elif defined(__AVX__)
#include <immintrin.h>
static size_t adamw_simd(float *params, const float *grads, float *m, float *v, size_t n,
                         const gt_adamw_scalars *s) {
    const __m256d b1 = _mm256_set1_pd(s->beta1), b2 = _mm256_set1_pd(s->beta2);
    const __m256d omb1 = _mm256_set1_pd(s->one_minus_beta1), omb2 = _mm256_set1_pd(s->one_minus_beta2);
    const __m256d eps = _mm256_set1_pd(s->eps), decay = _mm256_set1_pd(s->decay);
    const __m256d step = _mm256_set1_pd(s->step_size), bc2 = _mm256_set1_pd(s->bc2_sqrt);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d g = _mm256_cvtps_pd(_mm_loadu_ps(grads + i));
        __m256d mm = _mm256_add_pd(_mm256_mul_pd(b1, _mm256_cvtps_pd(_mm_loadu_ps(m + i))), _mm256_mul_pd(omb1, g));
        __m256d vv = _mm256_add_pd(_mm256_mul_pd(b2, _mm256_cvtps_pd(_mm_loadu_ps(v + i))),
                                   _mm256_mul_pd(omb2, _mm256_mul_pd(g, g)));
        __m256d denom = _mm256_add_pd(_mm256_div_pd(_mm256_sqrt_pd(vv), bc2), eps);
        __m256d pp = _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(params + i)), decay),
                                   _mm256_mul_pd(step, _mm256_div_pd(mm, denom)));
        _mm_storeu_ps(m + i, _mm256_cvtpd_ps(mm));
        _mm_storeu_ps(v + i, _mm256_cvtpd_ps(vv));
        _mm_storeu_ps(params + i, _mm256_cvtpd_ps(pp));
    }
    return i;
}
#else
static size_t adamw_simd(float *params, const float *grads, float *m, float *v, size_t n,
                         const gt_adamw_scalars *s) {
    return 0;
}
#endif

static void adamw_range(float *params, const float *grads, float *m, float *v, size_t n,
                        const gt_adamw_scalars *s) {
    const gt_adamw_scalars sc = *s; // local copy: lets the compiler keep it in registers
    size_t i = adamw_simd(params, grads, m, v, n, &sc);
    for (; i < n; i++) gt_adamw_element(&params[i], &m[i], &v[i], grads[i], &sc);
}

typedef struct {
    float *params, *m, *v;
    const float *grads;
    size_t n, chunk;
    const gt_adamw_scalars *s;
} adamw_task;

static void adamw_task_fn(void *ctx, int task, int tid) {
    (void)tid;
    const adamw_task *t = ctx;
    size_t off = (size_t)task * t->chunk;
    if (off >= t->n) return;
    size_t cnt = t->n - off < t->chunk ? t->n - off : t->chunk;
    adamw_range(t->params + off, t->grads + off, t->m + off, t->v + off, cnt, t->s);
}

/* Elementwise, so any split gives the same bits (the SIMD and scalar paths
 * compute the same per-element formula); large buffers are split over the
 * engine threads in 64-element-aligned chunks. */
void gt_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                     const gt_adamw_scalars *s) {
    int threads = gt_par_threads();
    if (threads <= 1 || n < ((size_t)1 << 16)) {
        adamw_range(params, grads, m, v, n, s);
        return;
    }
    int n_tasks = 4 * threads;
    size_t chunk = (n + (size_t)n_tasks - 1) / (size_t)n_tasks;
    chunk = (chunk + 63) / 64 * 64;
    adamw_task t = {params, m, v, grads, n, chunk, s};
    gt_par_for((int)((n + chunk - 1) / chunk), adamw_task_fn, &t);
}

double gt_grad_norm(const float *grads, size_t n) {
    // four partial sums in double: vectorises and keeps the error small
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a0 += (double)grads[i] * grads[i];
        a1 += (double)grads[i + 1] * grads[i + 1];
        a2 += (double)grads[i + 2] * grads[i + 2];
        a3 += (double)grads[i + 3] * grads[i + 3];
    }
    for (; i < n; i++) a0 += (double)grads[i] * grads[i];
    return sqrt((a0 + a1) + (a2 + a3));
}

void gt_scale(float *x, size_t n, float coef) {
    for (size_t i = 0; i < n; i++) x[i] *= coef;
}

int gt_unscale_check(float *grads, size_t n, float inv) {
    int finite = 1;
    if (inv != 1.0f)
        for (size_t i = 0; i < n; i++) {
            grads[i] *= inv;
            finite &= isfinite(grads[i]) != 0;
        }
    else
        for (size_t i = 0; i < n; i++) finite &= isfinite(grads[i]) != 0;
    return finite;
}

double gt_clip_grad_norm(float *grads, size_t n, float max_norm) {
    double norm = gt_grad_norm(grads, n);
    if (max_norm > 0.0f) {
        double coef = (double)max_norm / (norm + 1e-6);
        if (coef < 1.0) gt_scale(grads, n, (float)coef);
    }
    return norm;
}

float gt_lr_schedule(long s, long warmup, long total, float lr_max, float lr_min) {
    if (warmup > 0 && s < warmup) return (float)((double)lr_max * (double)(s + 1) / (double)warmup);
    if (total <= 0) return lr_max;
    if (s >= total) return lr_min;
    long span = total - warmup > 1 ? total - warmup : 1;
    double p = (double)(s - (warmup > 0 ? warmup : 0)) / (double)span;
    return (float)((double)lr_min + 0.5 * ((double)lr_max - (double)lr_min) * (1.0 + cos(M_PI * p)));
}
