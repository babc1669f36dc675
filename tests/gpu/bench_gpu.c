/* gt_gpu_bench: training throughput of the device model on one GPU.
 *
 *   gt_gpu_bench [--amp bf16|fp16|fp32|tf32] [--graph] [--steps N] [--warmup N] [--only KIND]
 *
 * For s2p_tf (L=4096, B=8), lstm (B=64, T=512) and s2p_cnn (B=256, W=599),
 * all other hyper-parameters the kinds' defaults, measures one training step
 * (zero_grad, forward, masked-MSE loss, backward, global-norm clip 1.0,
 * AdamW) on device-resident random data: ms/step (median of the timed
 * steps, CUDA events), train samples/s, device memory in use after the steps
 * (no allocation happens inside a step, so this is the peak) and MFU: analytic
 * model FLOPs (gt_model_forward_flops x 3) per second over the H100/H200 SXM
 * dense bf16 peak, 989 TFLOP/s. --graph captures the step into a CUDA graph
 * (one launch per step). Prints one "GT_GPU_BENCH ..." line per model (parsed
 * by tests/gpu/run.sh). Exit 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/bench.h"
#include "nn/cuda_model.h"
#include "nn/device.h"
#include "nn/model.h"

#define BF16_PEAK_FLOPS 989e12

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void step(gt_cuda_model *g, int B, const float *y_dev, int lstm, const gt_adamw_config *opt, long t) {
    gt_cuda_model_zero_grad(g);
    gt_cuda_model_forward(g, gt_cuda_model_x(g), B, 1);
    if (lstm) gt_cuda_model_lstm_loss_async(g);
    else gt_cuda_model_loss_async(g, y_dev, NULL);
    gt_cuda_model_backward(g, 1.0f);
    gt_cuda_model_clip_grad_norm_async(g, 1.0f);
    gt_cuda_model_adamw_step(g, opt, 1e-4f, t, 0);
}

static int run(gt_model_kind kind, int B, int window, gt_cuda_prec prec, int graph, int steps, int warmup) {
    gt_model_config c;
    gt_model_config_default(&c, kind);
    c.window = window;
    c.max_batch = B;
    gt_model *h = gt_model_create(&c);
    gt_model_init(h, 1);
    size_t fr0 = 0, tot = 0;
    cudaDeviceSynchronize();
    gt_cuda_mem_info(&fr0, &tot);
    gt_cuda_model *g = gt_cuda_model_create(h, (int)prec);
    cudaStream_t st = gt_cuda_model_stream(g);
    /* device-resident data */
    size_t nx = (size_t)B * h->n_x, ny = (size_t)B * h->n_y;
    float *xh = malloc(nx * 4), *yh = malloc(ny * 4);
    for (size_t i = 0; i < nx; i++) xh[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < ny; i++) yh[i] = (float)((i * 40503u) % 1000) / 1000.0f;
    gt_cuda_upload(gt_cuda_model_x(g), xh, nx);
    float *y_dev = gt_cuda_alloc_floats(ny);
    gt_cuda_upload(y_dev, yh, ny);
    const int lstm = kind == GT_MODEL_LSTM;
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
    long t = 1;
    for (int w = 0; w < warmup; w++) step(g, B, y_dev, lstm, &opt, t++);
    float loss0 = gt_cuda_model_last_loss(g);
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t gr;
        /* t is baked into the graph: AdamW's bias correction then stays at
         * the captured step (timing is unaffected). */
        if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
            step(g, B, y_dev, lstm, &opt, t);
            if (cudaStreamEndCapture(st, &gr) == cudaSuccess && cudaGraphInstantiate(&exec, gr, 0) == cudaSuccess) {
                cudaGraphDestroy(gr);
            } else {
                exec = NULL;
                (void)cudaGetLastError();
                fprintf(stderr, "gt_gpu_bench: graph capture failed for %s, timing eager steps\n",
                        gt_model_kind_name(kind));
            }
        }
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *ms = malloc(sizeof(float) * steps);
    double sum = 0.0;
    for (int s = 0; s < steps; s++) {
        cudaEventRecord(e0, st);
        if (exec) cudaGraphLaunch(exec, st);
        else step(g, B, y_dev, lstm, &opt, t++);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms[s], e0, e1);
        sum += ms[s];
    }
    float loss1 = gt_cuda_model_last_loss(g);
    size_t fr1 = 0;
    cudaDeviceSynchronize();
    gt_cuda_mem_info(&fr1, &tot);
    qsort(ms, (size_t)steps, sizeof(float), cmp_float);
    double med = ms[steps / 2];
    double sps = B / (med * 1e-3);
    double flops = 3.0 * gt_model_forward_flops(&c);
    double mfu = flops * sps / BF16_PEAK_FLOPS;
    int rc = cudaGetLastError() == cudaSuccess && loss0 == loss0 && loss1 == loss1 ? 0 : 1;
    /* the LSTM on cuDNN (GT_LSTM_IMPL=cudnn or cudnn-stack) and s2p_cnn's convolutions on cuDNN
     * (GT_CONV_IMPL=cudnn) are their own rows: impl=gridtrain-cudnn[-stack] */
    const char *li = gt_cuda_model_lstm_impl(g), *ci = gt_cuda_model_conv_impl(g);
    const char *impl = !strcmp(li, "cudnn") || !strncmp(ci, "cudnn", 5) ? "gridtrain-cudnn"
                       : !strcmp(li, "cudnn-stack")                      ? "gridtrain-cudnn-stack"
                                                                         : "gridtrain";
    printf("GT_GPU_BENCH impl=%s kind=%s B=%d window=%d amp=%s graph=%d ms_step=%.3f ms_mean=%.3f "
           "samples_per_s=%.1f peak_mib=%.1f model_mib=%.1f tflops=%.2f mfu=%.4f loss_first=%.5g loss_last=%.5g\n",
           impl, gt_model_kind_name(kind), B, window, gt_cuda_prec_name(prec), exec != NULL, med, sum / steps, sps,
           (double)(fr0 - fr1) / 1048576.0, gt_cuda_model_device_bytes(g) / 1048576.0, flops * sps * 1e-12, mfu,
           loss0, loss1);
    fflush(stdout);
    if (exec) cudaGraphExecDestroy(exec);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(ms);
    free(xh);
    free(yh);
    gt_cuda_free(y_dev);
    gt_cuda_model_free(g);
    gt_model_free(h);
    return rc;
}

int main(int argc, char **argv) {
    gt_cuda_prec prec = GT_PREC_BF16;
    int graph = 0, steps = 10, warmup = 3;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--amp") && i + 1 < argc) {
            const char *a = argv[++i];
            prec = !strcmp(a, "fp32") ? GT_PREC_FP32 : !strcmp(a, "fp16") ? GT_PREC_FP16
                 : !strcmp(a, "tf32") ? GT_PREC_TF32 : GT_PREC_BF16;
        } else if (!strcmp(argv[i], "--graph")) {
            graph = 1;
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
            warmup = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--amp bf16|fp16|fp32|tf32] [--graph] [--steps N] [--warmup N] [--only KIND]\n",
                    argv[0]);
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    if (warmup < 1) warmup = 1;
    if (gt_device_gpu_count() == 0) {
        fprintf(stderr, "gt_gpu_bench: no CUDA device present\n");
        return 77;
    }
    char desc[256];
    printf("gt_gpu_bench: %s, amp %s%s\n", gt_device_describe(0, desc, sizeof desc), gt_cuda_prec_name(prec),
           graph ? ", CUDA graph" : "");
    int rc = 0;
    if (!only || !strcmp(only, "s2p_tf")) rc |= run(GT_MODEL_S2P_TF, 8, 4096, prec, graph, steps, warmup);
    if (!only || !strcmp(only, "lstm")) rc |= run(GT_MODEL_LSTM, 64, 512, prec, graph, steps, warmup);
    if (!only || !strcmp(only, "s2p_cnn")) rc |= run(GT_MODEL_S2P_CNN, 256, 599, prec, graph, steps, warmup);
    return rc;
}
