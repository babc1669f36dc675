// nn/ops/cuda/reduce.cu: masked MSE, AdamW, gradient norm and clipping, and
// the loss-scaling helpers on the GPU (twins of nn/ops/cpu/loss.c, optim.c).
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/elementwise.h"

// s[0] += sum mask term(pred-y), s[1] += sum mask, in double
__global__ void k_loss_sums(double *s, int kind, const float *pred, const float *y, const float *mask, size_t n) {
    double acc = 0.0, cnt = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double mk = mask ? (double)mask[i] : 1.0;
        acc += mk * gt_loss_term(kind, (double)pred[i] - (double)y[i]);
        cnt += mk;
    }
    acc = gt_block_sum(acc);
    cnt = gt_block_sum(cnt);
    if (threadIdx.x == 0) {
        atomicAdd(s, acc);
        atomicAdd(s + 1, cnt);
    }
}

__global__ void k_loss_grad(float *loss_dev, float *dpred, int kind, const double *s, const float *pred,
                            const float *y, const float *mask, size_t n, float dloss) {
    const double cnt = s[1] > 1.0 ? s[1] : 1.0;
    const float scale = (float)((double)dloss / cnt);
    if (loss_dev && blockIdx.x == 0 && threadIdx.x == 0) *loss_dev = (float)(s[0] / cnt);
    if (!dpred) return;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float d = scale * gt_loss_grad(kind, pred[i] - y[i]);
        dpred[i] = mask ? d * mask[i] : d;
    }
}

static unsigned red_grid(size_t n) {
    unsigned g = gt_grid_1d(n, 256);
    return g > 1056 ? 1056 : g; // a few blocks per SM: few atomics
}

static void loss_sums(double *s, gt_loss_kind kind, const float *pred, const float *y, const float *mask, size_t n,
                      cudaStream_t st) {
    CUDA_CHECK(cudaMemsetAsync(s, 0, 2 * sizeof(double), st));
    if (n) {
        k_loss_sums<<<red_grid(n), 256, 0, st>>>(s, (int)kind, pred, y, mask, n);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" float gt_loss_masked_forward_cuda(gt_loss_kind kind, const float *pred, const float *y,
                                             const float *mask, size_t n, cudaStream_t st) {
    double *s = gt_cuda_dscratch(st);
    loss_sums(s, kind, pred, y, mask, n, st);
    double h[2];
    CUDA_CHECK(cudaMemcpyAsync(h, s, sizeof h, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return (float)(h[0] / (h[1] > 1.0 ? h[1] : 1.0));
}

extern "C" void gt_loss_masked_cuda(gt_loss_kind kind, float *loss_dev, float *dpred, const float *pred,
                                    const float *y, const float *mask, size_t n, float dloss, cudaStream_t st) {
    double *s = gt_cuda_dscratch(st);
    loss_sums(s, kind, pred, y, mask, n, st);
    k_loss_grad<<<gt_grid_1d(n ? n : 1, 256), 256, 0, st>>>(loss_dev, dpred, (int)kind, s, pred, y, mask, n, dloss);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" float gt_mse_masked_forward_cuda(const float *pred, const float *y, const float *mask, size_t n,
                                            cudaStream_t st) {
    return gt_loss_masked_forward_cuda(GT_LOSS_MSE, pred, y, mask, n, st);
}

extern "C" void gt_mse_masked_backward_cuda(float *dpred, const float *pred, const float *y, const float *mask,
                                            size_t n, float dloss, cudaStream_t st) {
    gt_loss_masked_cuda(GT_LOSS_MSE, nullptr, dpred, pred, y, mask, n, dloss, st);
}

extern "C" void gt_mse_masked_cuda(float *loss_dev, float *dpred, const float *pred, const float *y,
                                   const float *mask, size_t n, float dloss, cudaStream_t st) {
    gt_loss_masked_cuda(GT_LOSS_MSE, loss_dev, dpred, pred, y, mask, n, dloss, st);
}

// ------------------------------------------------------------------- AdamW --
__global__ void k_adamw(float *p, const float *g, float *m, float *v, size_t n, gt_adamw_scalars s) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        gt_adamw_element(&p[i], &m[i], &v[i], g[i], &s);
}
__global__ void k_adamw_flags(float *p, const float *g, float *m, float *v, const uint8_t *flags, size_t n,
                              gt_adamw_scalars sd, gt_adamw_scalars sp) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        gt_adamw_element(&p[i], &m[i], &v[i], g[i], flags[i] ? &sd : &sp);
}

extern "C" void gt_adamw_update_cuda(float *params, const float *grads, float *m, float *v, size_t n,
                                     const gt_adamw_scalars *s, cudaStream_t st) {
    if (!n) return;
    k_adamw<<<gt_grid_1d(n, 256), 256, 0, st>>>(params, grads, m, v, n, *s);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_adamw_update_flags_cuda(float *params, const float *grads, float *m, float *v,
                                           const uint8_t *decay_flags, size_t n, const gt_adamw_scalars *s_decay,
                                           const gt_adamw_scalars *s_plain, cudaStream_t st) {
    if (!n) return;
    k_adamw_flags<<<gt_grid_1d(n, 256), 256, 0, st>>>(params, grads, m, v, decay_flags, n, *s_decay, *s_plain);
    GT_CUDA_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- clipping --
// Sum of squares in a fixed order (no atomics): every block writes its
// partial, one block adds the partials. The same gradients give the same
// bits on every rank and every run, so the clipping factor (and the replica
// checksum after the update) never depends on scheduling.
__global__ void k_sumsq_part(double *part, const float *g, size_t n) {
    double acc = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += (double)g[i] * (double)g[i];
    acc = gt_block_sum(acc);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}
__global__ void k_sum_parts(double *s, const double *part, int n_part) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < n_part; i += blockDim.x) acc += part[i];
    acc = gt_block_sum(acc);
    if (threadIdx.x == 0) *s = acc;
}

// torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied when < 1
__global__ void k_clip(float *g, size_t n, float max_norm, const double *sumsq) {
    const double coef = (double)max_norm / (sqrt(*sumsq) + 1e-6);
    if (!(coef < 1.0)) return;
    const float c = (float)coef;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        g[i] *= c;
}

__global__ void k_scale(float *x, size_t n, float coef) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= coef;
}

static void sumsq(double *s, const float *g, size_t n, cudaStream_t st) {
    if (!n) {
        CUDA_CHECK(cudaMemsetAsync(s, 0, sizeof(double), st));
        return;
    }
    const unsigned grid = red_grid(n);
    double *part = gt_cuda_dpartials(st);
    k_sumsq_part<<<grid, 256, 0, st>>>(part, g, n);
    GT_CUDA_LAUNCH_CHECK();
    k_sum_parts<<<1, 256, 0, st>>>(s, part, (int)grid);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" double gt_grad_norm_cuda(const float *grads, size_t n, cudaStream_t st) {
    double *s = gt_cuda_dscratch(st) + 2;
    sumsq(s, grads, n, st);
    double h = 0.0;
    CUDA_CHECK(cudaMemcpyAsync(&h, s, sizeof h, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return sqrt(h);
}

extern "C" void gt_clip_grad_norm_async_cuda(float *grads, size_t n, float max_norm, double *sumsq_dev,
                                             cudaStream_t st) {
    sumsq(sumsq_dev, grads, n, st);
    if (max_norm > 0.0f && n) {
        k_clip<<<gt_grid_1d(n, 256), 256, 0, st>>>(grads, n, max_norm, sumsq_dev);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" double gt_clip_grad_norm_cuda(float *grads, size_t n, float max_norm, cudaStream_t st) {
    double *s = gt_cuda_dscratch(st) + 2;
    gt_clip_grad_norm_async_cuda(grads, n, max_norm, s, st);
    double h = 0.0;
    CUDA_CHECK(cudaMemcpyAsync(&h, s, sizeof h, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return sqrt(h);
}

extern "C" void gt_scale_cuda(float *x, size_t n, float coef, cudaStream_t st) {
    if (!n) return;
    k_scale<<<gt_grid_1d(n, 256), 256, 0, st>>>(x, n, coef);
    GT_CUDA_LAUNCH_CHECK();
}

// ------------------------------------------------------------ loss scaling --
__global__ void k_unscale_check(float *g, size_t n, float inv_scale, int do_scale, int *found) {
    int bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = g[i];
        bad |= !isfinite(x);
        if (do_scale) g[i] = x * inv_scale;
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) atomicOr(found, 1);
}

static int unscale_check(float *g, size_t n, float inv_scale, int do_scale, cudaStream_t st) {
    int *found = (int *)(gt_cuda_dscratch(st) + 4);
    CUDA_CHECK(cudaMemsetAsync(found, 0, sizeof(int), st));
    if (n) {
        k_unscale_check<<<gt_grid_1d(n, 256), 256, 0, st>>>(g, n, inv_scale, do_scale, found);
        GT_CUDA_LAUNCH_CHECK();
    }
    int h = 0;
    CUDA_CHECK(cudaMemcpyAsync(&h, found, sizeof h, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return h != 0;
}

extern "C" int gt_cuda_grads_nonfinite(const float *g, size_t n, cudaStream_t st) {
    return unscale_check((float *)g, n, 1.0f, 0, st);
}

extern "C" int gt_cuda_unscale_check(float *g, size_t n, float inv_scale, cudaStream_t st) {
    return unscale_check(g, n, inv_scale, 1, st);
}
