/* nn/ops/cpu/gelu_avx2.h: the tanh-form GELU of the models' glue in 8 lanes
 * on AVX2 + FMA (nn/ops/cpu/gelu_avx2.c).
 *
 *   gelu(x)  = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 0.044715 x^2)
 * with tanh(u) = 1 - 2 / (e^(2u) + 1) and e^ the Cephes polynomial of
 * nn/ops/fast_exp.h, as the scalar form of nn/model_s2p_tf.c, in 8 lanes with
 * FMA (so the last bits differ from the scalar form; absolute difference to
 * libm's tanh form below 3e-7). The compiler does not vectorise the scalar
 * form (its clamps are branches under -ftrapping-math).
 *
 * Each call returns 0 and does nothing where the route cannot run (not a GCC
 * x86-64 build, or a CPU without AVX2 and FMA: asked at run time); the
 * caller then runs its scalar form. Element i of a result depends only on
 * element i of the inputs. */
#ifndef GT_NN_OPS_CPU_GELU_AVX2_H
#define GT_NN_OPS_CPU_GELU_AVX2_H

#include <stddef.h>

/* out[i] = gelu(inp[i]), i < n */
int gt_gelu_tanh_avx2(float *out, const float *inp, size_t n);

/* out[i] = dout[i] * gelu'(inp[i]), i < n; out may be dout */
int gt_gelu_tanh_grad_avx2(float *out, const float *dout, const float *inp, size_t n);

/* pre (rows, cols) += bias per row, out = gelu(pre) */
int gt_bias_gelu_tanh_avx2(float *out, float *pre, const float *bias, size_t rows, int cols);

#endif
