/* tests/gpu/test_graph_fallback.c: a CUDA call that fails inside a graph
 * capture falls back to eager instead of ending the job. For every kind
 * (small shapes, fp32), two device models from the same host model: A with
 * graphs on and an illegal call planted in every capture
 * (gt_cuda_model_plant_capture_error: cudaStreamSynchronize on the capturing
 * stream), B with graphs off. Four training steps each: A's second forward
 * is captured, the planted call fails, CUDA_CHECK records it (the capture
 * is invalidated, every later call in it fails too) and the capture ends;
 * the stream is out of capture mode, graphs are off with one warning (in the
 * run log) naming the planted call, no capture counted, no replay, no
 * pending CUDA error, and A's loss, params and AdamW moments are B's bit for
 * bit (both ran every step eagerly). Skips (77) without a GPU. */
#include <unistd.h>

#include "core/log.h"
#include "gpu_graph_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"

static void small_config(gt_model_kind kind, gt_model_config *c) {
    gt_model_config_default(c, kind);
    c->max_batch = 4;
    if (kind == GT_MODEL_S2P_CNN) {
        c->window = 64; c->n_in = 1; c->n_out = 3; c->hidden = 32; c->n_layers = 3;
        for (int l = 0; l < 3; l++) { c->conv_channels[l] = 4 + l; c->conv_kernels[l] = 5 - l; }
    } else if (kind == GT_MODEL_S2P_TF) {
        c->window = 48; c->n_in = 1; c->n_out = 3; c->d_model = 32; c->n_heads = 2; c->d_ff = 64; c->n_layers = 2;
    } else {
        c->window = 20; c->n_in = 4; c->n_out = 4; c->hidden = 16; c->n_layers = 2; c->tbptt = 7;
    }
}

/* Occurrences of needle in the file at path. */
static int count_in_file(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        for (const char *p = line; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    fclose(f);
    return n;
}

static void test_kind(gt_model_kind kind, const char *log_path) {
    gt_model_config c;
    small_config(kind, &c);
    printf("== %s: a failing call inside the capture -> eager ==\n", gt_model_kind_name(kind));
    gt_model *h = gt_model_create(&c);
    gt_model_init(h, 11);
    const size_t B = (size_t)c.max_batch, np = (size_t)h->n_params;
    gt_cuda_model *a = gt_cuda_model_create(h, GT_PREC_FP32), *b = gt_cuda_model_create(h, GT_PREC_FP32);
    gt_cuda_model_set_graphs(a, 1);
    gt_cuda_model_plant_capture_error(a, 1);
    float *xh = gtu_rand(B * h->n_x, 1.0f), *yh = gtu_rand(B * h->n_y, 0.5f);
    gt_cuda_upload(gt_cuda_model_x(a), xh, B * h->n_x);
    gt_cuda_upload(gt_cuda_model_x(b), xh, B * h->n_x);
    float *y_dev = gtu_dev(yh, B * h->n_y);
    const float *y = kind == GT_MODEL_LSTM ? NULL : y_dev;
    gt_adamw_config opt = {0.9, 0.999, 1e-8, 0.01};
    const int warn0 = count_in_file(log_path, "CUDA graphs off");
    for (int t = 1; t <= 4; t++) {
        gtu_model_step(a, (int)B, y, &opt, t);
        gtu_model_step(b, (int)B, y, &opt, t);
    }
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    TEST_REQUIRE(cudaStreamIsCapturing(gt_cuda_model_stream(a), &st) == cudaSuccess);
    TEST_CHECK(st == cudaStreamCaptureStatusNone);
    TEST_CHECK(cudaGetLastError() == cudaSuccess);
    long captures = -1, replays = -1;
    gt_cuda_model_graph_stats(a, &captures, &replays);
    printf("  graphs %d, captures %ld, replays %ld\n", gt_cuda_model_graphs(a), captures, replays);
    TEST_EQ_INT(gt_cuda_model_graphs(a), 0);
    TEST_EQ_INT(captures, 0);
    TEST_EQ_INT(replays, 0);
    const int warned = count_in_file(log_path, "CUDA graphs off") - warn0;
    printf("  warnings: %d\n", warned);
    TEST_EQ_INT(warned, 1);
    TEST_CHECK(count_in_file(log_path, "cudaStreamSynchronize") > 0);
    gtu_snap sa = {0}, sb = {0};
    gtu_snap_get(a, &sa);
    gtu_snap_get(b, &sb);
    gtu_snap_check("fallback vs eager", np, &sa, &sb, 1);
    gtu_snap_free(&sa), gtu_snap_free(&sb);
    free(xh), free(yh);
    gt_cuda_free(y_dev);
    gt_cuda_model_free(a);
    gt_cuda_model_free(b);
    gt_model_free(h);
}

int main(void) {
    GTU_REQUIRE_GPU();
    char log_path[] = "/tmp/gt_graph_fallback_XXXXXX";
    int fd = mkstemp(log_path);
    TEST_REQUIRE(fd >= 0);
    close(fd);
    TEST_REQUIRE(gt_log_set_file(log_path) == 0);
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++) test_kind((gt_model_kind)k, log_path);
    gt_log_set_file(NULL);
    unlink(log_path);
    TEST_DONE();
}
