// nn/ops/cuda/conv_cudnn.cu: conv1d through cuDNN's convolution API, the twin
// of nn/ops/cpu/conv1d.c and of the im2col kernels in nn/ops/cuda/dense.cu.
// API and contract: nn/ops/cuda/ops_cuda.h; the area: nn/ops/cuda/sizes.h.
//
// A 1-D convolution is a 2-D one of height 1: x (B, IC, 1, W), filter
// (OC, IC, 1, K), y (B, OC, 1, W), cross-correlation (the project's conv1d,
// like PyTorch's, does not flip the kernel), stride and dilation 1.
//
// Padding: 'same' puts pad_l = (K-1)/2 zeros on the left and pad_r = K-1-pad_l
// on the right. For an odd K both are equal and cuDNN's symmetric padding
// pad_l is exact. For an even K pad_r = pad_l + 1, which cuDNN's legacy API
// cannot express: the input is copied into xpad (B, IC, W+1) with one zero
// column on the right, and the convolution of xpad with symmetric padding
// pad_l has width (W+1) + 2 pad_l - K + 1 = W and reads xpad[t + k - pad_l]:
// exactly the CPU's out[t]. The backward runs on xpad too (the data gradient
// comes out (B, IC, W+1); its last column, the gradient of the padding zero,
// is dropped on the copy back).
//
// Determinism: the algorithms are fixed here, never chosen by cudnnFind or
// the heuristics (whose pick may change with the GPU, the library or the
// load): IMPLICIT_PRECOMP_GEMM forward, BWD_DATA_ALGO_1 and BWD_FILTER_ALGO_1,
// which cuDNN documents as deterministic (BWD_DATA_ALGO_0 and BWD_FILTER_ALGO_0
// and _3 add with atomics and are not). The bias gradient is a fixed-order
// block sum per channel. So a backward is bit-identical run to run, and a
// resumed GPU run matches an uninterrupted one.
//
// cuDNN 9 marks this API (cudnn_cnn.h) deprecated in favour of its graph
// API; it still ships and runs. Should it go, the same three operations with
// the same fixed engines are a small cudnn_frontend graph each.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/elementwise.h"

#ifndef GT_HAVE_CUDNN
// Built without cuDNN: no object is ever made; the model keeps the kernels.
struct gt_conv1d_cudnn {
    int unused;
};
extern "C" gt_conv1d_cudnn *gt_conv1d_cudnn_create(int, int, int, int, int, gt_cuda_prec, float *, size_t,
                                                   cudaStream_t) {
    GT_WARN("conv1d: this build has no cuDNN; the convolutions run on the project's kernels");
    return nullptr;
}
extern "C" void gt_conv1d_cudnn_free(gt_conv1d_cudnn *) {}
extern "C" void gt_conv1d_cudnn_forward(gt_conv1d_cudnn *, float *, const float *, const float *, const float *,
                                        int, gt_act) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_conv1d_cudnn_forward: built without cuDNN");
}
extern "C" void gt_conv1d_cudnn_backward(gt_conv1d_cudnn *, float *, float *, float *, const float *,
                                         const float *, const float *, const float *, int, gt_act) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_conv1d_cudnn_backward: built without cuDNN");
}
extern "C" int gt_conv1d_cudnn_fused(const gt_conv1d_cudnn *) { return 0; }
#else

static const cudnnConvolutionFwdAlgo_t FWD_ALGO = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
static const cudnnConvolutionBwdDataAlgo_t BWD_DATA_ALGO = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
static const cudnnConvolutionBwdFilterAlgo_t BWD_FILTER_ALGO = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

struct gt_conv1d_cudnn {
    int max_batch, IC, OC, W, K, Wp, pad_l; // Wp: the input width cuDNN sees (W, or W+1 for an even K)
    int fused;                               // the forward's fused call is in use
    cudaStream_t st;
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t xd, yd, bd; // (B, IC, 1, Wp), (B, OC, 1, W), (1, OC, 1, 1)
    cudnnFilterDescriptor_t wd;         // (OC, IC, 1, K)
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t relu, ident;
    float *dz;         // (max_batch, OC, W)
    float *xpad, *dxp; // (max_batch, IC, W+1) each; even K only
    float *ws;
    size_t ws_bytes;
    int bound_B; // the batch the tensor descriptors are set for (0: none yet)
};

// Tensor descriptors for batch B (host only, no stream work: allowed inside
// a graph capture).
static void bind(gt_conv1d_cudnn *c, int B) {
    if (c->bound_B == B) return;
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, c->IC, 1, c->Wp));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, c->OC, 1, c->W));
    c->bound_B = B;
}

// The largest of the three workspaces at batch B, in bytes; a status other
// than success when cuDNN cannot run one of the algorithms on this shape.
static cudnnStatus_t ws_need(gt_conv1d_cudnn *c, int B, size_t *need) {
    bind(c, B);
    size_t f = 0, d = 0, w = 0;
    cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(c->dnn, c->xd, c->wd, c->cd, c->yd, FWD_ALGO, &f);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnGetConvolutionBackwardDataWorkspaceSize(c->dnn, c->wd, c->yd, c->cd, c->xd, BWD_DATA_ALGO, &d);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnGetConvolutionBackwardFilterWorkspaceSize(c->dnn, c->xd, c->yd, c->cd, c->wd, BWD_FILTER_ALGO, &w);
    const size_t m = f > d ? f : d;
    *need = m > w ? m : w;
    return s;
}

extern "C" void gt_conv1d_cudnn_free(gt_conv1d_cudnn *c) {
    if (!c) return;
    cudnnDestroyTensorDescriptor(c->xd);
    cudnnDestroyTensorDescriptor(c->yd);
    cudnnDestroyTensorDescriptor(c->bd);
    cudnnDestroyFilterDescriptor(c->wd);
    cudnnDestroyConvolutionDescriptor(c->cd);
    cudnnDestroyActivationDescriptor(c->relu);
    cudnnDestroyActivationDescriptor(c->ident);
    free(c);
}

extern "C" gt_conv1d_cudnn *gt_conv1d_cudnn_create(int max_batch, int IC, int OC, int W, int K, gt_cuda_prec prec,
                                                   float *area, size_t n_area, cudaStream_t st) {
    GT_CHECK(max_batch > 0 && IC > 0 && OC > 0 && W > 0 && K > 0, GT_EXIT_USAGE,
             "conv1d (cuDNN): bad shape B=%d IC=%d OC=%d W=%d K=%d", max_batch, IC, OC, W, K);
    const size_t n_need = gt_conv1d_cudnn_area_elems(max_batch, IC, OC, W, K);
    GT_CHECK(n_area >= n_need, GT_EXIT_INTERNAL, "conv1d (cuDNN): area of %zu floats, %zu needed", n_area, n_need);
    gt_conv1d_cudnn *c = (gt_conv1d_cudnn *)GT_CALLOC(1, sizeof *c);
    c->max_batch = max_batch;
    c->IC = IC;
    c->OC = OC;
    c->W = W;
    c->K = K;
    c->pad_l = (K - 1) / 2;
    c->Wp = K % 2 == 0 ? W + 1 : W;
    c->fused = 1;
    c->st = st;
    c->dnn = gt_cuda_cudnn(st);
    // carve the area: the pieces of gt_conv1d_cudnn_area_elems, in its order
    float *p = area;
    c->dz = p;
    p += gt_conv1d_cudnn_al((size_t)max_batch * OC * W);
    if (K % 2 == 0) {
        c->xpad = p;
        p += gt_conv1d_cudnn_al((size_t)max_batch * IC * c->Wp);
        c->dxp = p;
        p += gt_conv1d_cudnn_al((size_t)max_batch * IC * c->Wp);
    }
    c->ws = p;
    c->ws_bytes = GT_CONV1D_CUDNN_WS_ELEMS * sizeof(float);
    p += GT_CONV1D_CUDNN_WS_ELEMS;
    GT_CHECK((size_t)(p - area) == n_need, GT_EXIT_INTERNAL,
             "conv1d (cuDNN): carved %zu floats, the area formula says %zu", (size_t)(p - area), n_need);

    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->xd));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->yd));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->bd));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&c->wd));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c->cd));
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&c->relu));
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&c->ident));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, OC, 1, 1));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, OC, IC, 1, K));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c->cd, 0, c->pad_l, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    // the math: plain fp32 FMA for FP32; TF32 tensor cores allowed otherwise
    CUDNN_CHECK(cudnnSetConvolutionMathType(c->cd, prec == GT_PREC_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
    CUDNN_CHECK(cudnnSetActivationDescriptor(c->relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    CUDNN_CHECK(cudnnSetActivationDescriptor(c->ident, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0));

    // the output shape cuDNN derives must be the layer's (B, OC, 1, W)
    bind(c, max_batch);
    int n = 0, oc = 0, h = 0, w = 0;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(c->cd, c->xd, c->wd, &n, &oc, &h, &w));
    GT_CHECK(n == max_batch && oc == OC && h == 1 && w == W, GT_EXIT_INTERNAL,
             "conv1d (cuDNN): output (%d, %d, %d, %d), expected (%d, %d, 1, %d)", n, oc, h, w, max_batch, OC, W);
    // every batch a step may run: the workspace must fit its bound at each
    // (cuDNN's sizes need not grow with the batch)
    for (int B = 1; B <= max_batch; B++) {
        size_t need = 0;
        const cudnnStatus_t s = ws_need(c, B, &need);
        if (s != CUDNN_STATUS_SUCCESS) {
            GT_WARN("conv1d (cuDNN): layer IC=%d OC=%d W=%d K=%d at batch %d: the fixed algorithms are refused (%s); "
                    "the convolutions run on the project's kernels",
                    IC, OC, W, K, B, cudnnGetErrorString(s));
            gt_conv1d_cudnn_free(c);
            return nullptr;
        }
        if (need > c->ws_bytes) {
            GT_WARN("conv1d (cuDNN): layer IC=%d OC=%d W=%d K=%d at batch %d asks for a %zu-byte workspace, more "
                    "than the planned %zu; the convolutions run on the project's kernels",
                    IC, OC, W, K, B, need, c->ws_bytes);
            gt_conv1d_cudnn_free(c);
            return nullptr;
        }
    }
    return c;
}

extern "C" int gt_conv1d_cudnn_fused(const gt_conv1d_cudnn *c) { return c ? c->fused : 0; }

// xpad (B, IC, W+1) <- x (B, IC, W) and a zero column on the right
__global__ void k_conv_pad_right(float *xpad, const float *x, size_t rows, int W) {
    const size_t n = rows * (size_t)(W + 1);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / (W + 1);
        const int t = (int)(i % (W + 1));
        xpad[i] = t < W ? x[r * W + t] : 0.0f;
    }
}
// dx (B, IC, W) <- dxpad (B, IC, W+1) without its last column
__global__ void k_conv_unpad_right(float *dx, const float *dxpad, size_t rows, int W) {
    const size_t n = rows * (size_t)W;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / W;
        dx[i] = dxpad[r * (W + 1) + i % W];
    }
}
// out (B, OC, W) += b per channel, then the activation (the unfused forward)
__global__ void k_conv_dnn_bias_act(float *out, const float *b, size_t n, int OC, int W, int relu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = out[i] + (b ? b[(i / W) % OC] : 0.0f);
        out[i] = relu ? gt_relu(v) : v;
    }
}
// One block per output channel oc: dz[b, oc, t] = dout masked by relu(out)
// (dz NULL: not written, the plain dout is used as is), db[oc] += the sum
// over (b, t) in a fixed order (per thread, then gt_block_sum): no atomics.
__global__ void k_conv_dnn_dz(float *dz, float *db, const float *dout, const float *out, int B, int OC, int W) {
    const int oc = blockIdx.x;
    const size_t n = (size_t)B * W;
    float acc = 0.0f;
    for (size_t c = threadIdx.x; c < n; c += blockDim.x) {
        const size_t o = ((c / W) * OC + oc) * W + c % W;
        const float v = out ? gt_relu_grad_from_out(out[o], dout[o]) : dout[o];
        if (dz) dz[o] = v;
        acc += v;
    }
    acc = gt_block_sum(acc);
    if (threadIdx.x == 0 && db) db[oc] += acc;
}

// The input cuDNN reads: x itself, or x padded into xpad (even K).
static const float *input_view(gt_conv1d_cudnn *c, const float *inp, int B) {
    if (!c->xpad) return inp;
    const size_t rows = (size_t)B * c->IC;
    k_conv_pad_right<<<gt_grid_1d(rows * (c->W + 1), 256), 256, 0, c->st>>>(c->xpad, inp, rows, c->W);
    GT_CUDA_LAUNCH_CHECK();
    return c->xpad;
}

extern "C" void gt_conv1d_cudnn_forward(gt_conv1d_cudnn *c, float *out, const float *inp, const float *w,
                                        const float *b, int B, gt_act act) {
    GT_CHECK(B > 0 && B <= c->max_batch, GT_EXIT_INTERNAL, "conv1d (cuDNN): batch %d outside [1, %d]", B,
             c->max_batch);
    bind(c, B);
    const float *x = input_view(c, inp, B);
    const float one = 1.0f, zero = 0.0f;
    if (c->fused && b) {
        // y = act(1 * conv(x, w) + 0 * z + b) with z = y (read with weight 0)
        cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
            c->dnn, &one, c->xd, x, c->wd, w, c->cd, FWD_ALGO, c->ws, c->ws_bytes, &zero, c->yd, out, c->bd, b,
            act == GT_ACT_RELU ? c->relu : c->ident, c->yd, out);
        if (s == CUDNN_STATUS_SUCCESS) return;
        // cuDNN 9 splits NOT_SUPPORTED into reasons 3000-3099 (shape, layout, pattern, ...); any other
        // failure ends the job as CUDNN_CHECK would (or, inside a graph capture, is recorded: core/check.h)
        if ((int)s / 100 != (int)CUDNN_STATUS_NOT_SUPPORTED / 100) {
            gt_lib_failed("cuDNN", "cudnnConvolutionBiasActivationForward", cudnnGetErrorString(s),
                          "set CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr for details", __FILE__, __LINE__);
            return;
        }
        GT_WARN("conv1d (cuDNN): the fused bias + activation forward is not supported here (IC=%d OC=%d W=%d "
                "K=%d); convolution and a bias + activation kernel instead",
                c->IC, c->OC, c->W, c->K);
        c->fused = 0;
    }
    CUDNN_CHECK(cudnnConvolutionForward(c->dnn, &one, c->xd, x, c->wd, w, c->cd, FWD_ALGO, c->ws, c->ws_bytes,
                                        &zero, c->yd, out));
    if (b || act == GT_ACT_RELU) {
        const size_t n = (size_t)B * c->OC * c->W;
        k_conv_dnn_bias_act<<<gt_grid_1d(n, 256), 256, 0, c->st>>>(out, b, n, c->OC, c->W, act == GT_ACT_RELU);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" void gt_conv1d_cudnn_backward(gt_conv1d_cudnn *c, float *dinp, float *dw, float *db, const float *dout,
                                         const float *inp, const float *w, const float *out, int B, gt_act act) {
    GT_CHECK(B > 0 && B <= c->max_batch, GT_EXIT_INTERNAL, "conv1d (cuDNN): batch %d outside [1, %d]", B,
             c->max_batch);
    bind(c, B);
    const int relu = act == GT_ACT_RELU;
    const float *dz = relu ? c->dz : dout; // (B, OC, W)
    if (relu || db) {
        k_conv_dnn_dz<<<c->OC, 256, 0, c->st>>>(relu ? c->dz : nullptr, db, dout, relu ? out : nullptr, B, c->OC,
                                                c->W);
        GT_CUDA_LAUNCH_CHECK();
    }
    const float *x = input_view(c, inp, B);
    const float one = 1.0f, zero = 0.0f;
    // dw += conv's filter gradient (beta = 1: gradients accumulate over micro-batches)
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(c->dnn, &one, c->xd, x, c->yd, dz, c->cd, BWD_FILTER_ALGO, c->ws,
                                               c->ws_bytes, &one, c->wd, dw));
    if (!dinp) return;
    float *dx = c->dxp ? c->dxp : dinp; // (B, IC, Wp)
    CUDNN_CHECK(cudnnConvolutionBackwardData(c->dnn, &one, c->wd, w, c->yd, dz, c->cd, BWD_DATA_ALGO, c->ws,
                                             c->ws_bytes, &zero, c->xd, dx));
    if (c->dxp) {
        const size_t rows = (size_t)B * c->IC;
        k_conv_unpad_right<<<gt_grid_1d(rows * c->W, 256), 256, 0, c->st>>>(dinp, c->dxp, rows, c->W);
        GT_CUDA_LAUNCH_CHECK();
    }
}
#endif
