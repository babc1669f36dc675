// nn/ops/cuda/lstm_cudnn.cu: an LSTM layer stack through cuDNN's v8 RNN API,
// the twin of nn/ops/cpu/lstm.c and nn/ops/cuda/lstm.cu (same maths, state
// reset per window and truncated-BPTT gradient: nn/ops/lstm.h). API and
// contract: nn/ops/cuda/ops_cuda.h; the area's bounds: nn/ops/cuda/sizes.h.
//
// Two ways to cut the stack into cuDNN descriptors ("units"), fixed at
// creation: one descriptor per layer (numLayers 1: every layer's hidden
// sequence comes out, as the kernels give it; gt_lstm_cudnn_forward/backward
// per layer), or one descriptor for the whole stack (numLayers NL: cuDNN can
// overlap the layers' steps, but returns only the top layer's outputs;
// gt_lstm_cudnn_forward/backward_stack). Both are exact: the chunk
// boundaries are the same for every layer, and a layer's input gradient at
// step t only reaches the layer below at step t, in the same chunk.
//
// TBPTT with chunk K, per unit: the forward makes one cudnnRNNForward per
// chunk [jK, jK+L), starting from the previous chunk's (hy, cy), kept in the
// area for the backward; the backward makes, per chunk (last first), one
// cudnnRNNBackwardData_v8 with dhy = dcy = 0 (nothing flows back from the
// next chunk: its initial state is a constant) and dhx = dcx not asked for
// (the flow stops at the chunk start), then one cudnnRNNBackwardWeights_v8
// that adds the chunk's weight gradient (CUDNN_WGRAD_MODE_ADD) given the
// carried hx: exactly the gradient nn/ops/lstm.h defines. K <= 0 or K >= T:
// one chunk, cuDNN reads and writes the caller's (B,T,*) buffers directly
// (CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED); with several chunks, a chunk's
// rows are strided in (B,T,*), which an RNN data descriptor cannot express:
// they are copied to and from (B,L,*) staging buffers (cudaMemcpy2DAsync).
//
// Weights: the caller's parameters are PyTorch's (W_ih (4H,In), W_hh (4H,H),
// b_ih, b_hh, gate order i|f|g|o). cuDNN's LSTM linear layers 0-3 act on the
// input, 4-7 on the recurrent state, in the order input gate, forget gate,
// new memory (g), output gate: the same order, each matrix (H,In) or (H,H)
// row-major, each bias (H). Their addresses come from cudnnGetRNNWeightParams
// at creation and become up to 16 copy pieces per layer (merged where cuDNN
// keeps a tensor's four gates contiguous): the forward copies params into the
// weight space (one kernel), the backward adds the weight-gradient space into
// the caller's gradients (one kernel), so gradients accumulate over
// micro-batches as the project's backward does.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/model_lstm.h" /* GT_LSTM_MAX_LAYERS */
#include "nn/ops/lstm.h"

// Up to 16 (dst, src, n) copies in one launch: dst = src, or dst += src.
#define GT_LSTM_DNN_PIECES 16
struct lstm_pieces {
    float *dst[GT_LSTM_DNN_PIECES];
    const float *src[GT_LSTM_DNN_PIECES];
    int n[GT_LSTM_DNN_PIECES];
};

// grid (x, pieces): piece blockIdx.y, grid-stride over its elements
__global__ void k_lstm_dnn_pieces(lstm_pieces p, int add) {
    const int k = blockIdx.y;
    float *dst = p.dst[k];
    const float *src = p.src[k];
    const int n = p.n[k];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dst[i] = add ? dst[i] + src[i] : src[i];
}

#ifndef GT_HAVE_CUDNN
// Built without cuDNN: no object is ever made; the model keeps the kernels.
struct gt_lstm_cudnn {
    int unused;
};
extern "C" gt_lstm_cudnn *gt_lstm_cudnn_create(int, int, int, int, int, int, int, gt_cuda_prec, float *, size_t,
                                               cudaStream_t) {
    GT_WARN("lstm: this build has no cuDNN; the LSTM runs on the project's kernels");
    return nullptr;
}
extern "C" void gt_lstm_cudnn_free(gt_lstm_cudnn *) {}
extern "C" void gt_lstm_cudnn_forward(gt_lstm_cudnn *, int, float *, const float *, const float *, const float *,
                                      const float *, const float *, int) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_lstm_cudnn_forward: built without cuDNN");
}
extern "C" void gt_lstm_cudnn_backward(gt_lstm_cudnn *, int, float *, float *, float *, float *, float *,
                                       const float *, const float *, const float *, int) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_lstm_cudnn_backward: built without cuDNN");
}
extern "C" void gt_lstm_cudnn_forward_stack(gt_lstm_cudnn *, float *, const float *, const float *const *,
                                            const float *const *, const float *const *, const float *const *, int) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_lstm_cudnn_forward_stack: built without cuDNN");
}
extern "C" void gt_lstm_cudnn_backward_stack(gt_lstm_cudnn *, float *, float *const *, float *const *,
                                             float *const *, float *const *, const float *, const float *,
                                             const float *, int) {
    GT_FAIL(GT_EXIT_INTERNAL, "gt_lstm_cudnn_backward_stack: built without cuDNN");
}
#else

// Offsets (floats) into a weight space of one tensor's pieces: the four gates
// of W_ih, W_hh, b_ih, b_hh; merged: one piece of 4n when consecutive.
struct dnn_tensor_map {
    size_t off[4];
    int n;      // elements per gate: H*In, H*H or H
    int merged; // off[g] = off[0] + g*n for every g
};

// One cuDNN descriptor over layers [l0, l0 + n_lay) of the stack.
struct dnn_unit {
    int l0, n_lay, In; // In: the unit's input size (its first layer's)
    cudnnRNNDescriptor_t rnn;
    float *w, *dw; // weight space and its gradient (w_bytes each)
    size_t w_bytes;
    dnn_tensor_map map[GT_LSTM_MAX_LAYERS][4]; // per layer of the unit: W_ih, W_hh, b_ih, b_hh
    float *states;  // (nch, 2, n_lay, B, H): hy | cy at the end of chunk j
    float *reserve; // chunk j < nch-1: reserve + j * r_stride; the last chunk: reserve_last
    float *reserve_last;
    size_t r_stride, r_bytes, r_last_bytes; // floats between full chunks; bytes of a full / the last chunk's
};

struct gt_lstm_cudnn {
    int max_batch, T, C, H, NL, K, nch, last, In_max, stack, n_units;
    cudaStream_t st;
    cudnnHandle_t dnn;
    dnn_unit unit[GT_LSTM_MAX_LAYERS];
    cudnnRNNDataDescriptor_t xd[2], yd[2]; // [0] a full chunk (K steps), [1] the last chunk
    cudnnTensorDescriptor_t hd;            // (n_lay, B, H) for h and c
    int32_t *seq_dev[2];                   // device lengths (max_batch each): K, last
    int *seq_host[2];
    float *work;
    size_t work_bytes;
    float *xs, *ys, *dys, *dxs; // staging (B,K,In_max) / (B,K,H)
    int bound_B, bound_In;      // what the descriptors are set for (0: nothing yet)
};

// Set the data and state descriptors for batch B and input size In (host
// only, no stream work: allowed inside a graph capture).
static void bind(gt_lstm_cudnn *d, int B, int In) {
    if (d->bound_B == B && d->bound_In == In) return;
    const int len[2] = {d->K, d->last};
    static float zero = 0.0f; // padding fill of outputs (none: every sample is full length); static, in
                              // case cuDNN keeps the pointer
    for (int k = 0; k < 2; k++) {
        for (int b = 0; b < B; b++) d->seq_host[k][b] = len[k];
        CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->xd[k], CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                              len[k], B, In, d->seq_host[k], &zero));
        CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->yd[k], CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                              len[k], B, d->H, d->seq_host[k], &zero));
    }
    const int n_lay = d->unit[0].n_lay;
    int dims[3] = {n_lay, B, d->H}, strides[3] = {B * d->H, d->H, 1};
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(d->hd, CUDNN_DATA_FLOAT, 3, dims, strides));
    d->bound_B = B;
    d->bound_In = In;
}

// Where cuDNN keeps the eight linear layers (0-3 on the input, 4-7 on the
// recurrent state) of pseudo-layer p of unit U: offsets in floats from the
// weight space's start, checked against the shapes PyTorch's layout implies.
static void weight_offsets(gt_lstm_cudnn *d, dnn_unit *U, int p, cudnnTensorDescriptor_t md,
                           cudnnTensorDescriptor_t bd) {
    const int H = d->H, In = p == 0 ? U->In : H;
    dnn_tensor_map *map = U->map[p];
    for (int id = 0; id < 8; id++) {
        void *ma = nullptr, *ba = nullptr;
        CUDNN_CHECK(cudnnGetRNNWeightParams(d->dnn, U->rnn, p, U->w_bytes, U->w, id, md, &ma, bd, &ba));
        GT_CHECK(ma && ba, GT_EXIT_INTERNAL, "lstm (cuDNN): no matrix or bias for layer %d linear layer %d", p, id);
        cudnnDataType_t t;
        int nd = 0, dm[8], sm[8];
        size_t nm = 1, nb = 1;
        CUDNN_CHECK(cudnnGetTensorNdDescriptor(md, 8, &t, &nd, dm, sm));
        for (int i = 0; i < nd; i++) nm *= (size_t)dm[i];
        CUDNN_CHECK(cudnnGetTensorNdDescriptor(bd, 8, &t, &nd, dm, sm));
        for (int i = 0; i < nd; i++) nb *= (size_t)dm[i];
        const size_t want = (size_t)H * (id < 4 ? In : H);
        GT_CHECK(nm == want && nb == (size_t)H, GT_EXIT_INTERNAL,
                 "lstm (cuDNN): layer %d linear layer %d has %zu weights and %zu biases, expected %zu and %d", p, id,
                 nm, nb, want, H);
        const int g = id & 3, mt = id < 4 ? 0 : 1; // gate i|f|g|o; W_ih or W_hh (b_ih or b_hh)
        map[mt].off[g] = (size_t)((float *)ma - U->w);
        map[2 + mt].off[g] = (size_t)((float *)ba - U->w);
    }
    const int n[4] = {H * In, H * H, H, H};
    for (int k = 0; k < 4; k++) {
        map[k].n = n[k];
        map[k].merged = 1;
        for (int g = 1; g < 4; g++)
            if (map[k].off[g] != map[k].off[0] + (size_t)g * n[k]) map[k].merged = 0;
    }
}

// One launch over the pieces between one layer's four tensors (PyTorch
// layout) and a weight space: to_space copies params in (t4), else adds the
// space into the gradients (g4). A NULL tensor is skipped.
static void move_weights(const gt_lstm_cudnn *d, const dnn_tensor_map *map, float *space, const float *const t4[4],
                         float *const g4[4], int to_space) {
    lstm_pieces p;
    int np = 0, nmax = 0;
    for (int k = 0; k < 4; k++) {
        const dnn_tensor_map *m = &map[k];
        if (!(to_space ? (const void *)t4[k] : (const void *)g4[k])) continue;
        const int parts = m->merged ? 1 : 4, n = m->merged ? 4 * m->n : m->n;
        for (int g = 0; g < parts; g++) {
            float *sp = space + m->off[g];
            if (to_space) {
                p.dst[np] = sp;
                p.src[np] = t4[k] + (size_t)g * m->n;
            } else {
                p.dst[np] = g4[k] + (size_t)g * m->n;
                p.src[np] = sp;
            }
            p.n[np] = n;
            nmax = n > nmax ? n : nmax;
            np++;
        }
    }
    if (!np) return;
    unsigned gx = gt_grid_1d((size_t)nmax, 256);
    dim3 grid(gx < 1024 ? gx : 1024, np);
    k_lstm_dnn_pieces<<<grid, 256, 0, d->st>>>(p, to_space ? 0 : 1);
    GT_CUDA_LAUNCH_CHECK();
}

// Per unit: its RNN descriptor, its weight space, gradient, states and
// reserve carved from p (returned past them), the reserve and workspace sizes
// cuDNN asks for checked against the bounds (the first excess into why), and
// the weight offsets; *work_need: the largest workspace asked for.
static float *create_units(gt_lstm_cudnn *d, float *p, cudnnMathType_t math, cudnnTensorDescriptor_t md,
                           cudnnTensorDescriptor_t bd, char *why, size_t why_n, size_t *work_need_out) {
    const int B = d->max_batch, C = d->C, H = d->H, NL = d->NL, stack = d->stack;
    const int len[2] = {d->K, d->last};
    cudaStream_t st = d->st;
    size_t work_need = 0;
    for (int u = 0; u < d->n_units; u++) {
        dnn_unit *U = &d->unit[u];
        U->l0 = stack ? 0 : u;
        U->n_lay = stack ? NL : 1;
        U->In = U->l0 == 0 ? C : H;
        size_t wb = 0, sb = 0, rb[2] = {0, 0};
        for (int l = U->l0; l < U->l0 + U->n_lay; l++) {
            const int In = l == 0 ? C : H;
            wb += gt_lstm_cudnn_weight_elems(In, H);
            sb += gt_lstm_cudnn_al(2 * (size_t)d->nch * B * H);
            for (int k = 0; k < 2; k++) rb[k] += gt_lstm_cudnn_reserve_elems(B, len[k], In, H);
        }
        CUDNN_CHECK(cudnnCreateRNNDescriptor(&U->rnn));
        CUDNN_CHECK(cudnnSetRNNDescriptor_v8(U->rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                             CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
                                             CUDNN_DATA_FLOAT, math, U->In, H, H, U->n_lay,
                                             gt_cuda_cudnn_no_dropout(st), CUDNN_RNN_PADDED_IO_ENABLED));
        CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(d->dnn, U->rnn, &U->w_bytes));
        if (U->w_bytes > wb * sizeof(float) && !why[0])
            snprintf(why, why_n, "unit %d weight space %zu bytes > bound %zu", u, U->w_bytes, wb * sizeof(float));
        U->w = p;
        p += wb;
        U->dw = p;
        p += wb;
        U->states = p;
        p += sb;
        // reserve and workspace for a full chunk and for the last one, at max_batch
        d->bound_B = 0;
        bind(d, B, U->In);
        for (int k = 0; k < 2; k++) {
            size_t ws = 0, rs = 0;
            CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(d->dnn, U->rnn, CUDNN_FWD_MODE_TRAINING, d->xd[k], &ws, &rs));
            work_need = ws > work_need ? ws : work_need;
            if (rs > rb[k] * sizeof(float) && !why[0])
                snprintf(why, why_n, "unit %d reserve space %zu bytes for %d steps > bound %zu", u, rs, len[k],
                         rb[k] * sizeof(float));
        }
        U->r_stride = rb[0];
        U->r_bytes = rb[0] * sizeof(float);
        U->reserve = p;
        p += (size_t)(d->nch - 1) * rb[0];
        U->reserve_last = p;
        U->r_last_bytes = rb[1] * sizeof(float);
        p += rb[1];
        for (int q = 0; q < U->n_lay; q++) weight_offsets(d, U, q, md, bd);
    }
    *work_need_out = work_need;
    return p;
}

extern "C" gt_lstm_cudnn *gt_lstm_cudnn_create(int max_batch, int T, int C, int H, int NL, int K, int stack,
                                               gt_cuda_prec prec, float *area, size_t n_area, cudaStream_t st) {
    GT_CHECK(max_batch > 0 && T > 0 && C > 0 && H > 0 && NL > 0 && NL <= GT_LSTM_MAX_LAYERS, GT_EXIT_USAGE,
             "lstm (cuDNN): bad shape B=%d T=%d C=%d H=%d layers=%d", max_batch, T, C, H, NL);
    const size_t n_need = gt_lstm_cudnn_area_elems(max_batch, T, C, H, NL, K);
    GT_CHECK(n_area >= n_need, GT_EXIT_INTERNAL, "lstm (cuDNN): area of %zu floats, %zu needed", n_area, n_need);
    gt_lstm_cudnn *d = (gt_lstm_cudnn *)GT_CALLOC(1, sizeof *d);
    const int B = max_batch;
    d->max_batch = B;
    d->T = T;
    d->C = C;
    d->H = H;
    d->NL = NL;
    d->K = gt_lstm_cudnn_chunk(T, K);
    d->nch = (T + d->K - 1) / d->K;
    d->last = T - (d->nch - 1) * d->K;
    d->In_max = C > H ? C : H;
    d->stack = stack ? 1 : 0;
    d->n_units = stack ? 1 : NL;
    d->st = st;
    d->dnn = gt_cuda_cudnn(st);
    // the math: plain fp32 FMA for FP32; TF32 tensor cores allowed otherwise
    const cudnnMathType_t math = prec == GT_PREC_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    const int len[2] = {d->K, d->last};

    // Carve the area: the pieces of gt_lstm_cudnn_area_elems, a unit's pieces
    // the sums of its layers' (same total in both ways of cutting the stack).
    float *p = area;
    d->seq_dev[0] = (int32_t *)p;
    d->seq_dev[1] = (int32_t *)p + B;
    p += gt_lstm_cudnn_al(2 * (size_t)B);
    char why[256] = "";
    cudnnTensorDescriptor_t md, bd;
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&md));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&bd));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d->hd));
    for (int k = 0; k < 2; k++) {
        CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&d->xd[k]));
        CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&d->yd[k]));
        d->seq_host[k] = (int *)GT_CALLOC((size_t)B, sizeof(int));
    }
    size_t work_need = 0;
    p = create_units(d, p, math, md, bd, why, sizeof why, &work_need);
    const size_t wkb = gt_lstm_cudnn_workspace_elems(B, d->K, d->In_max, H);
    if (work_need > wkb * sizeof(float) && !why[0])
        snprintf(why, sizeof why, "workspace %zu bytes > bound %zu", work_need, wkb * sizeof(float));
    d->work = p;
    d->work_bytes = wkb * sizeof(float);
    p += wkb;
    d->xs = p;
    p += gt_lstm_cudnn_al((size_t)B * d->K * d->In_max);
    d->dxs = p;
    p += gt_lstm_cudnn_al((size_t)B * d->K * d->In_max);
    d->ys = p;
    p += gt_lstm_cudnn_al((size_t)B * d->K * H);
    d->dys = p;
    p += gt_lstm_cudnn_al((size_t)B * d->K * H);
    GT_CHECK((size_t)(p - area) == n_need, GT_EXIT_INTERNAL,
             "lstm (cuDNN): carved %zu floats, the area formula says %zu", (size_t)(p - area), n_need);
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(md));
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(bd));
    if (why[0]) {
        GT_WARN("lstm: cuDNN asks for more than planned (%s; nn/ops/cuda/sizes.h): the LSTM runs on the project's "
                "kernels",
                why);
        gt_lstm_cudnn_free(d);
        return nullptr;
    }
    // the device sequence lengths: every sample is a full chunk
    for (int k = 0; k < 2; k++) {
        for (int b = 0; b < B; b++) d->seq_host[k][b] = len[k];
        CUDA_CHECK(cudaMemcpyAsync(d->seq_dev[k], d->seq_host[k], (size_t)B * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, st));
    }
    CUDA_CHECK(cudaStreamSynchronize(st)); // landed before any call; the host arrays are rewritten by bind()
    return d;
}

extern "C" void gt_lstm_cudnn_free(gt_lstm_cudnn *d) {
    if (!d) return;
    for (int u = 0; u < d->n_units; u++)
        if (d->unit[u].rnn) CUDNN_CHECK(cudnnDestroyRNNDescriptor(d->unit[u].rnn));
    for (int k = 0; k < 2; k++) {
        if (d->xd[k]) CUDNN_CHECK(cudnnDestroyRNNDataDescriptor(d->xd[k]));
        if (d->yd[k]) CUDNN_CHECK(cudnnDestroyRNNDataDescriptor(d->yd[k]));
        free(d->seq_host[k]);
    }
    if (d->hd) CUDNN_CHECK(cudnnDestroyTensorDescriptor(d->hd));
    free(d);
}

// Copy chunk rows [t0, t0+L) of a (B,T,n) buffer into (B,L,n), or back.
static void chunk_copy(float *dst, size_t dpitch, const float *src, size_t spitch, int B, int L, int n,
                       cudaStream_t st) {
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch * sizeof(float), src, spitch * sizeof(float),
                                 (size_t)L * n * sizeof(float), (size_t)B, cudaMemcpyDeviceToDevice, st));
}

static float *chunk_reserve(const gt_lstm_cudnn *d, const dnn_unit *U, int j, size_t *bytes) {
    if (j == d->nch - 1) {
        *bytes = U->r_last_bytes;
        return U->reserve_last;
    }
    *bytes = U->r_bytes;
    return U->reserve + (size_t)j * U->r_stride;
}

// Forward of unit U over B samples: y (B,T,H) its top layer's h, x (B,T,In);
// params: per layer of the unit, PyTorch's four tensors.
static void unit_forward(gt_lstm_cudnn *d, dnn_unit *U, float *y, const float *x, const float *const *w_ih,
                         const float *const *w_hh, const float *const *b_ih, const float *const *b_hh, int B) {
    const int T = d->T, H = d->H, In = U->In, K = d->K, nch = d->nch;
    cudaStream_t st = d->st;
    bind(d, B, In);
    int null_bias = 0;
    for (int q = 0; q < U->n_lay; q++) null_bias |= !b_ih[q] || !b_hh[q];
    if (null_bias) CUDA_CHECK(cudaMemsetAsync(U->w, 0, U->w_bytes, st)); // a NULL bias is a zero bias
    for (int q = 0; q < U->n_lay; q++) {
        const float *t4[4] = {w_ih[q], w_hh[q], b_ih[q], b_hh[q]};
        float *const g4[4] = {nullptr, nullptr, nullptr, nullptr};
        move_weights(d, U->map[q], U->w, t4, g4, 1);
    }
    const size_t SH = (size_t)U->n_lay * B * H; // one state tensor (n_lay, B, H)
    for (int j = 0; j < nch; j++) {
        const int t0 = j * K, len = j == nch - 1 ? d->last : K, k = j == nch - 1 && nch > 1 ? 1 : 0;
        const float *xp = x;
        float *yp = y;
        if (nch > 1) {
            chunk_copy(d->xs, (size_t)len * In, x + (size_t)t0 * In, (size_t)T * In, B, len, In, st);
            xp = d->xs;
            yp = d->ys;
        }
        // state entering the chunk: the previous chunk's (hy, cy); zero at t = 0
        const float *hx = j > 0 ? U->states + (size_t)(j - 1) * 2 * SH : nullptr;
        const float *cx = j > 0 ? hx + SH : nullptr;
        float *hy = U->states + (size_t)j * 2 * SH, *cy = hy + SH;
        size_t rbytes = 0;
        float *rs = chunk_reserve(d, U, j, &rbytes);
        CUDNN_CHECK(cudnnRNNForward(d->dnn, U->rnn, CUDNN_FWD_MODE_TRAINING, d->seq_dev[k], d->xd[k], xp, d->yd[k],
                                    yp, d->hd, hx, hy, d->hd, cx, cy, U->w_bytes, U->w, d->work_bytes, d->work,
                                    rbytes, rs));
        if (nch > 1) chunk_copy(y + (size_t)t0 * H, (size_t)T * H, d->ys, (size_t)len * H, B, len, H, st);
    }
}

// Backward of unit U after its forward: dx (B,T,In) assigned (NULL: not
// needed), per layer of the unit the four gradients accumulated (+=);
// dy (B,T,H) dL/dh of its top layer from outside; x, y as in the forward.
static void unit_backward(gt_lstm_cudnn *d, dnn_unit *U, float *dx, float *const *dw_ih, float *const *dw_hh,
                          float *const *db_ih, float *const *db_hh, const float *dy, const float *x, const float *y,
                          int B) {
    const int T = d->T, H = d->H, In = U->In, K = d->K, nch = d->nch;
    cudaStream_t st = d->st;
    bind(d, B, In);
    // the chunks add into a zeroed gradient space; it is added to the caller's at the end
    CUDA_CHECK(cudaMemsetAsync(U->dw, 0, U->w_bytes, st));
    const size_t SH = (size_t)U->n_lay * B * H;
    for (int j = nch - 1; j >= 0; j--) {
        const int t0 = j * K, len = j == nch - 1 ? d->last : K, k = j == nch - 1 && nch > 1 ? 1 : 0;
        const float *xp = x, *yp = y, *dyp = dy;
        float *dxp = dx ? dx : d->dxs; // cuDNN always writes dx: the first layer's goes to staging
        if (nch > 1) {
            chunk_copy(d->xs, (size_t)len * In, x + (size_t)t0 * In, (size_t)T * In, B, len, In, st);
            chunk_copy(d->ys, (size_t)len * H, y + (size_t)t0 * H, (size_t)T * H, B, len, H, st);
            chunk_copy(d->dys, (size_t)len * H, dy + (size_t)t0 * H, (size_t)T * H, B, len, H, st);
            xp = d->xs;
            yp = d->ys;
            dyp = d->dys;
            dxp = d->dxs;
        }
        const float *hx = j > 0 ? U->states + (size_t)(j - 1) * 2 * SH : nullptr;
        const float *cx = j > 0 ? hx + SH : nullptr;
        size_t rbytes = 0;
        float *rs = chunk_reserve(d, U, j, &rbytes);
        // dhy = dcy = NULL: zero at the chunk's end; dhx = dcx = NULL: the flow stops at its start
        CUDNN_CHECK(cudnnRNNBackwardData_v8(d->dnn, U->rnn, d->seq_dev[k], d->yd[k], yp, dyp, d->xd[k], dxp, d->hd,
                                            hx, nullptr, nullptr, d->hd, cx, nullptr, nullptr, U->w_bytes, U->w,
                                            d->work_bytes, d->work, rbytes, rs));
        if (dx && nch > 1) chunk_copy(dx + (size_t)t0 * In, (size_t)T * In, d->dxs, (size_t)len * In, B, len, In, st);
        CUDNN_CHECK(cudnnRNNBackwardWeights_v8(d->dnn, U->rnn, CUDNN_WGRAD_MODE_ADD, d->seq_dev[k], d->xd[k], xp, d->hd,
                                               hx, d->yd[k], yp, U->w_bytes, U->dw, d->work_bytes, d->work, rbytes,
                                               rs));
    }
    for (int q = 0; q < U->n_lay; q++) {
        const float *const t4[4] = {nullptr, nullptr, nullptr, nullptr};
        float *const g4[4] = {dw_ih[q], dw_hh[q], db_ih[q], db_hh[q]};
        move_weights(d, U->map[q], U->dw, t4, g4, 0);
    }
}

static void check_call(const gt_lstm_cudnn *d, int l, int B, int stack) {
    GT_CHECK(d && d->stack == stack && l >= 0 && l < d->NL && B > 0 && B <= d->max_batch, GT_EXIT_INTERNAL,
             "lstm (cuDNN): %s call, layer %d, batch %d on an object of %s, %d layers, max batch %d",
             stack ? "stack" : "layer", l, B, d && d->stack ? "one stack" : "single layers", d ? d->NL : 0,
             d ? d->max_batch : 0);
}

extern "C" void gt_lstm_cudnn_forward(gt_lstm_cudnn *d, int l, float *h, const float *x, const float *w_ih,
                                      const float *w_hh, const float *b_ih, const float *b_hh, int B) {
    check_call(d, l, B, 0);
    unit_forward(d, &d->unit[l], h, x, &w_ih, &w_hh, &b_ih, &b_hh, B);
}

extern "C" void gt_lstm_cudnn_backward(gt_lstm_cudnn *d, int l, float *dx, float *dw_ih, float *dw_hh, float *db_ih,
                                       float *db_hh, const float *dh, const float *x, const float *h, int B) {
    check_call(d, l, B, 0);
    unit_backward(d, &d->unit[l], dx, &dw_ih, &dw_hh, &db_ih, &db_hh, dh, x, h, B);
}

extern "C" void gt_lstm_cudnn_forward_stack(gt_lstm_cudnn *d, float *h_top, const float *x,
                                            const float *const *w_ih, const float *const *w_hh,
                                            const float *const *b_ih, const float *const *b_hh, int B) {
    check_call(d, 0, B, 1);
    unit_forward(d, &d->unit[0], h_top, x, w_ih, w_hh, b_ih, b_hh, B);
}

extern "C" void gt_lstm_cudnn_backward_stack(gt_lstm_cudnn *d, float *dx, float *const *dw_ih, float *const *dw_hh,
                                             float *const *db_ih, float *const *db_hh, const float *dh_top,
                                             const float *x, const float *h_top, int B) {
    check_call(d, 0, B, 1);
    unit_backward(d, &d->unit[0], dx, dw_ih, dw_hh, db_ih, db_hh, dh_top, x, h_top, B);
}
#endif
