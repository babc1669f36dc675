// nn/ops/cuda/lstm_cudnn.cu: an LSTM layer stack through cuDNN's v8 RNN API,
// the twin of nn/ops/cpu/lstm.c and nn/ops/cuda/lstm.cu (same maths, state
// reset per window and truncated-BPTT gradient: nn/ops/lstm.h). API and
// contract: nn/ops/cuda/ops_cuda.h; the area's bounds: nn/ops/cuda/sizes.h.
//
// One cuDNN RNN descriptor per layer (numLayers 1), not one for the stack:
// the model reads every layer's hidden sequence (lstm.%d.h) and reports each
// layer's gradients as they are queued, and cuDNN returns only the top
// layer's outputs of a stack.
//
// TBPTT with chunk K, per layer: the forward makes one cudnnRNNForward per
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

extern "C" int gt_lstm_cudnn_available(void) {
#ifdef GT_HAVE_CUDNN
    return 1;
#else
    return 0;
#endif
}

#ifndef GT_HAVE_CUDNN
// Built without cuDNN: no object is ever made; the model keeps the kernels.
struct gt_lstm_cudnn {
    int unused;
};
extern "C" gt_lstm_cudnn *gt_lstm_cudnn_create(int, int, int, int, int, int, gt_cuda_prec, float *, size_t,
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
#else

// Offsets (floats) into a weight space of one tensor's pieces: the four gates
// of W_ih, W_hh, b_ih, b_hh; merged: one piece of 4n when consecutive.
struct dnn_tensor_map {
    size_t off[4];
    int n;      // elements per gate: H*In, H*H or H
    int merged; // off[g] = off[0] + g*n for every g
};

struct dnn_layer {
    int In;
    cudnnRNNDescriptor_t rnn;
    float *w, *dw;           // weight space and its gradient (w_bytes each)
    size_t w_bytes;
    dnn_tensor_map map[4];   // W_ih, W_hh, b_ih, b_hh
    float *states;           // (nch, 2, B, H): hy | cy at the end of chunk j
    float *reserve;          // chunk j < nch-1: reserve + j * r_stride ...
    float *reserve_last;     // ... and the last chunk's
    size_t r_stride, r_bytes, r_last_bytes; // floats between full chunks; bytes bound of a full / the last chunk
};

struct gt_lstm_cudnn {
    int max_batch, T, C, H, NL, K, nch, last, In_max;
    cudaStream_t st;
    cudnnHandle_t dnn;
    dnn_layer layer[GT_LSTM_MAX_LAYERS];
    cudnnRNNDataDescriptor_t xd[2], yd[2]; // [0] a full chunk (K steps), [1] the last chunk
    cudnnTensorDescriptor_t hd;            // (1, B, H) for h and c
    int32_t *seq_dev[2];                   // device lengths (max_batch each): K, last
    int *seq_host[2];
    float *work;
    size_t work_bytes;
    float *xs, *ys, *dys, *dxs; // staging (B,K,In_max) / (B,K,H)
    int bound_B;                // batch the descriptors are set for (0: none yet)
};

// Set the data and state descriptors for batch B (host only, no stream work:
// allowed inside a capture).
static void bind_batch(gt_lstm_cudnn *d, int B) {
    if (d->bound_B == B) return;
    const int len[2] = {d->K, d->last};
    for (int k = 0; k < 2; k++) {
        for (int b = 0; b < B; b++) d->seq_host[k][b] = len[k];
        float zero = 0.0f;
        CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->xd[k], CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                              len[k], B, d->In_max, d->seq_host[k], &zero));
        CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->yd[k], CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                              len[k], B, d->H, d->seq_host[k], &zero));
    }
    int dims[3] = {1, B, d->H}, strides[3] = {B * d->H, d->H, 1};
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(d->hd, CUDNN_DATA_FLOAT, 3, dims, strides));
    d->bound_B = B;
}

// The x descriptor's vector size is the layer's input size: reset per layer
// when the stack's input sizes differ (C != H).
static void bind_input(gt_lstm_cudnn *d, int B, int In) {
    const int len[2] = {d->K, d->last};
    for (int k = 0; k < 2; k++) {
        float zero = 0.0f;
        CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->xd[k], CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                              len[k], B, In, d->seq_host[k], &zero));
    }
}

// Where cuDNN keeps linear layer `id` (0-7) of layer l's weight space: the
// matrix and bias offsets in floats from the space's start, checked against
// the shapes PyTorch's layout implies.
static void weight_offsets(gt_lstm_cudnn *d, dnn_layer *L, cudnnTensorDescriptor_t md, cudnnTensorDescriptor_t bd) {
    const int H = d->H;
    for (int id = 0; id < 8; id++) {
        void *ma = nullptr, *ba = nullptr;
        CUDNN_CHECK(cudnnGetRNNWeightParams(d->dnn, L->rnn, 0, L->w_bytes, L->w, id, md, &ma, bd, &ba));
        GT_CHECK(ma && ba, GT_EXIT_INTERNAL, "lstm (cuDNN): no matrix or bias for linear layer %d", id);
        cudnnDataType_t t;
        int nd = 0, dm[8], sm[8];
        size_t nm = 1, nb = 1;
        CUDNN_CHECK(cudnnGetTensorNdDescriptor(md, 8, &t, &nd, dm, sm));
        for (int i = 0; i < nd; i++) nm *= (size_t)dm[i];
        CUDNN_CHECK(cudnnGetTensorNdDescriptor(bd, 8, &t, &nd, dm, sm));
        for (int i = 0; i < nd; i++) nb *= (size_t)dm[i];
        const size_t want = (size_t)H * (id < 4 ? L->In : H);
        GT_CHECK(nm == want && nb == (size_t)H, GT_EXIT_INTERNAL,
                 "lstm (cuDNN): linear layer %d has %zu weights and %zu biases, expected %zu and %d", id, nm, nb, want,
                 H);
        const int g = id & 3, mt = id < 4 ? 0 : 1; // gate; W_ih or W_hh (b_ih or b_hh)
        L->map[mt].off[g] = (size_t)((float *)ma - L->w);
        L->map[2 + mt].off[g] = (size_t)((float *)ba - L->w);
    }
    const int n[4] = {H * L->In, H * H, H, H};
    for (int k = 0; k < 4; k++) {
        L->map[k].n = n[k];
        L->map[k].merged = 1;
        for (int g = 1; g < 4; g++)
            if (L->map[k].off[g] != L->map[k].off[0] + (size_t)g * n[k]) L->map[k].merged = 0;
    }
}

// One launch over the pieces between the caller's four tensors (PyTorch
// layout) and a weight space: to_space copies params in, else adds the
// space into the gradients.
static void move_weights(const gt_lstm_cudnn *d, const dnn_layer *L, float *space, const float *t4[4],
                         float *g4[4], int to_space) {
    lstm_pieces p;
    int np = 0, nmax = 0;
    for (int k = 0; k < 4; k++) {
        const dnn_tensor_map *m = &L->map[k];
        if (!(to_space ? (const void *)t4[k] : (const void *)g4[k])) continue; // a NULL bias (gradient)
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
    dim3 grid(gt_grid_1d((size_t)nmax, 256) < 1024 ? gt_grid_1d((size_t)nmax, 256) : 1024, np);
    k_lstm_dnn_pieces<<<grid, 256, 0, d->st>>>(p, to_space ? 0 : 1);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" gt_lstm_cudnn *gt_lstm_cudnn_create(int max_batch, int T, int C, int H, int NL, int K, gt_cuda_prec prec,
                                               float *area, size_t n_area, cudaStream_t st) {
    GT_CHECK(max_batch > 0 && T > 0 && C > 0 && H > 0 && NL > 0 && NL <= GT_LSTM_MAX_LAYERS, GT_EXIT_USAGE,
             "lstm (cuDNN): bad shape B=%d T=%d C=%d H=%d layers=%d", max_batch, T, C, H, NL);
    GT_CHECK(n_area >= gt_lstm_cudnn_area_elems(max_batch, T, C, H, NL, K), GT_EXIT_INTERNAL,
             "lstm (cuDNN): area of %zu floats, %zu needed", n_area,
             gt_lstm_cudnn_area_elems(max_batch, T, C, H, NL, K));
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
    d->st = st;
    d->dnn = gt_cuda_cudnn(st);
    // the math: plain fp32 FMA for FP32; TF32 tensor cores allowed otherwise
    const cudnnMathType_t math = prec == GT_PREC_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;

    // carve the area in the order of gt_lstm_cudnn_area_elems
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
    bind_batch(d, B);
    size_t work_need = 0;
    for (int l = 0; l < NL; l++) {
        dnn_layer *L = &d->layer[l];
        L->In = l == 0 ? C : H;
        CUDNN_CHECK(cudnnCreateRNNDescriptor(&L->rnn));
        CUDNN_CHECK(cudnnSetRNNDescriptor_v8(L->rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                             CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
                                             CUDNN_DATA_FLOAT, math, L->In, H, H, 1, gt_cuda_cudnn_no_dropout(st),
                                             CUDNN_RNN_PADDED_IO_ENABLED));
        const size_t wb = gt_lstm_cudnn_weight_elems(L->In, H);
        CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(d->dnn, L->rnn, &L->w_bytes));
        if (L->w_bytes > wb * sizeof(float) && !why[0])
            snprintf(why, sizeof why, "layer %d weight space %zu bytes > bound %zu", l, L->w_bytes, wb * sizeof(float));
        L->w = p;
        p += wb;
        L->dw = p;
        p += wb;
        L->states = p;
        p += gt_lstm_cudnn_al(2 * (size_t)d->nch * B * H);
        // reserve and workspace for a full chunk and for the last one, at max_batch
        bind_input(d, B, L->In);
        const int len[2] = {d->K, d->last};
        size_t rs[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            size_t ws = 0;
            CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(d->dnn, L->rnn, CUDNN_FWD_MODE_TRAINING, d->xd[k], &ws, &rs[k]));
            work_need = ws > work_need ? ws : work_need;
            const size_t rb = gt_lstm_cudnn_reserve_elems(B, len[k], L->In, H) * sizeof(float);
            if (rs[k] > rb && !why[0])
                snprintf(why, sizeof why, "layer %d reserve space %zu bytes for %d steps > bound %zu", l, rs[k],
                         len[k], rb);
        }
        L->r_stride = gt_lstm_cudnn_reserve_elems(B, d->K, L->In, H);
        L->r_bytes = L->r_stride * sizeof(float);
        L->reserve = p;
        p += (size_t)(d->nch - 1) * L->r_stride;
        L->reserve_last = p;
        L->r_last_bytes = gt_lstm_cudnn_reserve_elems(B, d->last, L->In, H) * sizeof(float);
        p += gt_lstm_cudnn_reserve_elems(B, d->last, L->In, H);
        weight_offsets(d, L, md, bd);
    }
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
    GT_CHECK((size_t)(p - area) == gt_lstm_cudnn_area_elems(B, T, C, H, NL, K), GT_EXIT_INTERNAL,
             "lstm (cuDNN): carved %zu floats, the area formula says %zu", (size_t)(p - area),
             gt_lstm_cudnn_area_elems(B, T, C, H, NL, K));
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
    for (int k = 0; k < 2; k++)
        CUDA_CHECK(cudaMemcpyAsync(d->seq_dev[k], d->seq_host[k], (size_t)B * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, st));
    CUDA_CHECK(cudaStreamSynchronize(st)); // the host arrays stay, but the copy must land before any call
    return d;
}

extern "C" void gt_lstm_cudnn_free(gt_lstm_cudnn *d) {
    if (!d) return;
    for (int l = 0; l < d->NL; l++)
        if (d->layer[l].rnn) CUDNN_CHECK(cudnnDestroyRNNDescriptor(d->layer[l].rnn));
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

static float *chunk_reserve(const dnn_layer *L, int j, int nch, size_t *bytes) {
    if (j == nch - 1) {
        *bytes = L->r_last_bytes;
        return L->reserve_last;
    }
    *bytes = L->r_bytes;
    return L->reserve + (size_t)j * L->r_stride;
}

static void check_call(const gt_lstm_cudnn *d, int l, int B) {
    GT_CHECK(d && l >= 0 && l < d->NL && B > 0 && B <= d->max_batch, GT_EXIT_INTERNAL,
             "lstm (cuDNN): layer %d, batch %d outside the object's %d layers, max batch %d", l, B, d ? d->NL : 0,
             d ? d->max_batch : 0);
}

extern "C" void gt_lstm_cudnn_forward(gt_lstm_cudnn *d, int l, float *h, const float *x, const float *w_ih,
                                      const float *w_hh, const float *b_ih, const float *b_hh, int B) {
    check_call(d, l, B);
    dnn_layer *L = &d->layer[l];
    const int T = d->T, H = d->H, In = L->In, K = d->K, nch = d->nch;
    cudaStream_t st = d->st;
    bind_batch(d, B);
    bind_input(d, B, In);
    const float *t4[4] = {w_ih, w_hh, b_ih, b_hh};
    float *g4[4] = {nullptr, nullptr, nullptr, nullptr};
    // a NULL bias is a zero bias: cuDNN always has both
    if (!b_ih || !b_hh) CUDA_CHECK(cudaMemsetAsync(L->w, 0, L->w_bytes, st));
    move_weights(d, L, L->w, t4, g4, 1);
    const size_t BH = (size_t)B * H;
    for (int j = 0; j < nch; j++) {
        const int t0 = j * K, len = j == nch - 1 ? d->last : K, k = j == nch - 1 && nch > 1 ? 1 : 0;
        const float *xp = x;
        float *yp = h;
        if (nch > 1) {
            chunk_copy(d->xs, (size_t)len * In, x + (size_t)t0 * In, (size_t)T * In, B, len, In, st);
            xp = d->xs;
            yp = d->ys;
        }
        // state entering the chunk: the previous chunk's (hy, cy); zero at t = 0
        const float *hx = j > 0 ? L->states + (size_t)(j - 1) * 2 * BH : nullptr;
        const float *cx = j > 0 ? hx + BH : nullptr;
        float *hy = L->states + (size_t)j * 2 * BH, *cy = hy + BH;
        size_t rbytes = 0;
        float *rs = chunk_reserve(L, j, nch, &rbytes);
        CUDNN_CHECK(cudnnRNNForward(d->dnn, L->rnn, CUDNN_FWD_MODE_TRAINING, d->seq_dev[k], d->xd[k], xp, d->yd[k],
                                    yp, d->hd, hx, hy, d->hd, cx, cy, L->w_bytes, L->w, d->work_bytes, d->work,
                                    rbytes, rs));
        if (nch > 1) chunk_copy(h + (size_t)t0 * H, (size_t)T * H, d->ys, (size_t)len * H, B, len, H, st);
    }
}

extern "C" void gt_lstm_cudnn_backward(gt_lstm_cudnn *d, int l, float *dx, float *dw_ih, float *dw_hh, float *db_ih,
                                       float *db_hh, const float *dh, const float *x, const float *h, int B) {
    check_call(d, l, B);
    dnn_layer *L = &d->layer[l];
    const int T = d->T, H = d->H, In = L->In, K = d->K, nch = d->nch;
    cudaStream_t st = d->st;
    bind_batch(d, B);
    bind_input(d, B, In);
    // the chunks add into a zeroed gradient space; it is added to the caller's at the end
    CUDA_CHECK(cudaMemsetAsync(L->dw, 0, L->w_bytes, st));
    const size_t BH = (size_t)B * H;
    for (int j = nch - 1; j >= 0; j--) {
        const int t0 = j * K, len = j == nch - 1 ? d->last : K, k = j == nch - 1 && nch > 1 ? 1 : 0;
        const float *xp = x, *yp = h, *dyp = dh;
        float *dxp = dx ? dx : d->dxs; // cuDNN always writes dx: the first layer's goes to staging
        if (nch > 1) {
            chunk_copy(d->xs, (size_t)len * In, x + (size_t)t0 * In, (size_t)T * In, B, len, In, st);
            chunk_copy(d->ys, (size_t)len * H, h + (size_t)t0 * H, (size_t)T * H, B, len, H, st);
            chunk_copy(d->dys, (size_t)len * H, dh + (size_t)t0 * H, (size_t)T * H, B, len, H, st);
            xp = d->xs;
            yp = d->ys;
            dyp = d->dys;
            dxp = d->dxs;
        }
        const float *hx = j > 0 ? L->states + (size_t)(j - 1) * 2 * BH : nullptr;
        const float *cx = j > 0 ? hx + BH : nullptr;
        size_t rbytes = 0;
        float *rs = chunk_reserve(L, j, nch, &rbytes);
        // dhy = dcy = NULL: zero at the chunk's end; dhx = dcx = NULL: the flow stops at its start
        CUDNN_CHECK(cudnnRNNBackwardData_v8(d->dnn, L->rnn, d->seq_dev[k], d->yd[k], yp, dyp, d->xd[k], dxp, d->hd,
                                            hx, nullptr, nullptr, d->hd, cx, nullptr, nullptr, L->w_bytes, L->w,
                                            d->work_bytes, d->work, rbytes, rs));
        if (dx && nch > 1) chunk_copy(dx + (size_t)t0 * In, (size_t)T * In, d->dxs, (size_t)len * In, B, len, In, st);
        CUDNN_CHECK(cudnnRNNBackwardWeights_v8(d->dnn, L->rnn, CUDNN_WGRAD_MODE_ADD, d->seq_dev[k], d->xd[k], xp, d->hd,
                                               hx, d->yd[k], yp, L->w_bytes, L->dw, d->work_bytes, d->work, rbytes,
                                               rs));
    }
    const float *t4[4] = {nullptr, nullptr, nullptr, nullptr};
    float *g4[4] = {dw_ih, dw_hh, db_ih, db_hh};
    move_weights(d, L, L->dw, t4, g4, 0);
}
#endif
