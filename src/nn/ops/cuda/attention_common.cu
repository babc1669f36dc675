// nn/ops/cuda/attention_common.cu: what the three attention variants share
// (the SIMT kernels and dispatcher of attention.cu, the tensor-core kernels of
// attention_tc.cu and attention_mma.cu): the backward's first step and the
// device's limits the kernels are chosen and opted in against. It calls no
// variant, so each variant uses it and attention.cu alone calls the variants.
#include "nn/ops/cuda/common.cuh"

// D[b,h,t] = sum_i dO[b,t,h,i] O[b,t,h,i] for t in [q0, q0+nq)
__global__ void k_attn_d(float *D, const float *dout, const float *out, int B, int L, int C, int NH, int hs,
                         int q0, int nq) {
    const size_t n = (size_t)B * NH * nq;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int t = q0 + (int)(idx % nq);
        size_t bh = idx / nq;
        int h = (int)(bh % NH), b = (int)(bh / NH);
        const float *o = out + ((size_t)b * L + t) * C + (size_t)h * hs,
                    *g = dout + ((size_t)b * L + t) * C + (size_t)h * hs;
        float a = 0.0f;
        for (int i = 0; i < hs; i++) a += o[i] * g[i];
        D[bh * L + t] = a;
    }
}

// zero the q part of dqkv outside [q0, q0+nq)
__global__ void k_zero_dq(float *dqkv, int B, int L, int C, int q0, int nq) {
    const size_t n = (size_t)B * L * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int t = (int)((idx / C) % L);
        if (t >= q0 && t < q0 + nq) continue;
        size_t row = idx / C;
        dqkv[row * 3 * C + idx % C] = 0.0f;
    }
}

// D = rowsum(dO * O) for the rows, and the q part of dqkv zeroed outside them:
// the first launches of every backward path (SIMT, wmma, mma).
void gt_attention_backward_prep_cuda(float *D, float *dqkv, const float *dout, const float *out, int B, int L, int C,
                                     int NH, int q0, int nq, cudaStream_t st) {
    const int hs = C / NH;
    size_t nd = (size_t)B * NH * nq;
    k_attn_d<<<gt_grid_1d(nd, 256), 256, 0, st>>>(D, dout, out, B, L, C, NH, hs, q0, nq);
    GT_CUDA_LAUNCH_CHECK();
    if (nq < L) {
        k_zero_dq<<<gt_grid_1d((size_t)B * L * C, 256), 256, 0, st>>>(dqkv, B, L, C, q0, nq);
        GT_CUDA_LAUNCH_CHECK();
    }
}

#define ATT_MAX_DEVICES 32
void gt_attention_device_limits(int *major, size_t *optin) {
    static int s_major[ATT_MAX_DEVICES], s_optin[ATT_MAX_DEVICES];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    int mj = 0, op = 0;
    if (dev < ATT_MAX_DEVICES && s_major[dev]) {
        mj = s_major[dev];
        op = s_optin[dev];
    } else {
        CUDA_CHECK(cudaDeviceGetAttribute(&mj, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&op, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (dev < ATT_MAX_DEVICES) s_major[dev] = mj, s_optin[dev] = op;
    }
    *major = mj;
    *optin = op > 0 ? (size_t)op : 0;
}

size_t gt_attention_smem_optin(void) {
    int major = 0;
    size_t optin = 0;
    gt_attention_device_limits(&major, &optin);
    return optin;
}
