/* nn/ops/elementwise.h: the per-element math of the ops, written once.
 *
 * Every function here is static inline and marked GT_HD so the CPU ops
 * (nn/ops/cpu/) and their CUDA twins (nn/ops/cuda/) run the same arithmetic,
 * and the CPU tests exercise what the GPU computes. Float arithmetic except
 * the AdamW element (double, see below);
 * the only libm call is sqrt (exists on the device). */
#ifndef GT_NN_OPS_ELEMENTWISE_H
#define GT_NN_OPS_ELEMENTWISE_H

#include <math.h>

#include "nn/ops/fast_exp.h" /* gt_tanhf: vectorisable tanh */

#include "core/hd.h" /* GT_HD */

/* ---------------------------------------------------------------- ReLU -- */
static inline GT_HD float gt_relu(float x) { return x > 0.0f ? x : 0.0f; }
/* d relu / dx given the *output* y = relu(x) (x > 0 <=> y > 0). */
static inline GT_HD float gt_relu_grad_from_out(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

/* ------------------------------------------------------ GELU (tanh form) --
 * gelu(x) = 0.5 x (1 + tanh(s (x + 0.044715 x^3))), s = sqrt(2/pi);
 * torch.nn.functional.gelu(x, approximate="tanh") to ~2e-7 absolute. tanh is
 * gt_tanhf (fast_exp.h): libm's tanhf is a scalar call (~12 ns/element here)
 * that keeps GCC from vectorising the loops; gt_tanhf vectorises. */
#define GT_GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
static inline GT_HD float gt_gelu(float x) {
    float cube = 0.044715f * x * x * x;
    return 0.5f * x * (1.0f + gt_tanhf(GT_GELU_SCALE * (x + cube)));
}
/* d gelu / dx at x. */
static inline GT_HD float gt_gelu_grad(float x) {
    float cube = 0.044715f * x * x * x;
    float u = GT_GELU_SCALE * (x + cube);
    float th = gt_tanhf(u);
    float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * GT_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

/* ------------------------------------------------------- loss elements --
 * The training losses on d = pred - y (kind: gt_loss_kind in ops.h):
 *   GT_LOSS_MSE (0)  term d^2,  d term / d d = 2 d
 *   GT_LOSS_L1  (1)  term |d|,  d term / d d = sign(d)  (0 at d = 0, as torch)
 *   GT_LOSS_MSE_L1 (2) term d^2 + |d|, derivative 2 d + sign(d)
 * Terms are summed in double; the gradient is float. */
static inline GT_HD float gt_sign(float d) { return d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f; }
static inline GT_HD double gt_loss_term(int kind, double d) {
    return kind == 1 ? fabs(d) : kind == 2 ? d * d + fabs(d) : d * d;
}
static inline GT_HD float gt_loss_grad(int kind, float d) {
    return kind == 1 ? gt_sign(d) : kind == 2 ? 2.0f * d + gt_sign(d) : 2.0f * d;
}

/* --------------------------------------------------------------- AdamW --
 * One element of torch.optim.AdamW (decoupled weight decay, bias correction).
 * The reference formula, evaluated in double from the stored float values and
 * rounded to float once per stored result (so a straightforward double
 * implementation reproduces it bit for bit):
 *   m' = beta1 * m + (1 - beta1) * g
 *   v' = beta2 * v + (1 - beta2) * g * g
 *   p' = p * decay - step_size * m' / (sqrt(v') / bc2_sqrt + eps)
 *   store m = (float)m', v = (float)v', p = (float)p'
 * with the per-step scalars (gt_adamw_scalars_make in ops.h, all double)
 *   decay     = 1 - lr * weight_decay   (1 for tensors without decay)
 *   step_size = lr / (1 - beta1^t)
 *   bc2_sqrt  = sqrt(1 - beta2^t)
 * This is the order of torch 1.13's single-tensor AdamW (decay first, then
 * the moments, then addcdiv with denom = sqrt(v)/sqrt(bc2) + eps); torch
 * rounds to float after every operation, so the two agree to ~1 ulp.
 * The step is memory-bound, so double arithmetic costs nothing measurable.
 * The CPU loop (ops/cpu/optim.c) runs this formula with AVX/AVX-512
 * intrinsics (GCC does not vectorise sqrt() under errno semantics) and this
 * function for the tail; tests/nn/test_optim.c checks both bit for bit. */
typedef struct gt_adamw_scalars {
    double beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
    double decay;     /* 1 - lr * weight_decay (1 for tensors without decay) */
    double step_size; /* lr / (1 - beta1^t) */
    double bc2_sqrt;  /* sqrt(1 - beta2^t) */
} gt_adamw_scalars;

static inline GT_HD void gt_adamw_element(float *p, float *m, float *v, float g, const gt_adamw_scalars *s) {
    double gd = (double)g;
    double mm = s->beta1 * (double)*m + s->one_minus_beta1 * gd;
    double vv = s->beta2 * (double)*v + s->one_minus_beta2 * (gd * gd);
    double pp = (double)*p * s->decay - s->step_size * (mm / (sqrt(vv) / s->bc2_sqrt + s->eps));
    *m = (float)mm;
    *v = (float)vv;
    *p = (float)pp;
}

#endif
