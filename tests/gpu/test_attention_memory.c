/* Attention memory is linear in L on the GPU: device memory of an s2p_tf
 * model (create + one training step, measured with cudaMemGetInfo) at
 * L = 1024, 2048, 4096 (B = 4, d = 128, 4 heads, 2 blocks). Quadratic
 * attention would grow the activation part 4x per doubling; we require the
 * growth of the model's own part (the measured growth less its stream
 * context) from 1024 to 4096 to stay below 4.6x (linear: ~4x) and each
 * doubling below 2.3x. Like with like: each gt_cuda_model_create makes its
 * own stream, and with it a cuBLAS handle, its 32 MiB workspace and the
 * reductions' scratch (the previous model's were freed with it), so the
 * planner's figure is gt_model_device_bytes + gt_cuda_stream_ctx_bytes (the
 * two rows `gridtrain plan` prints for them), and it must be within 10% of
 * the measured growth. Skips (77) without a GPU. */
#include "gpu_test_util.h"
#include "nn/cuda_model.h"
#include "nn/model.h"

static double used_mib(void) {
    size_t fr = 0, tot = 0;
    cudaDeviceSynchronize();
    gt_cuda_mem_info(&fr, &tot);
    return (double)(tot - fr) / 1048576.0;
}

int main(void) {
    GTU_REQUIRE_GPU();
    const int Ls[3] = {1024, 2048, 4096};
    double delta[3], planned[3];
    for (int k = -1; k < 3; k++) { /* k = -1: warm-up (cuBLAS handle and workspace) */
        gt_model_config c;
        gt_model_config_default(&c, GT_MODEL_S2P_TF);
        c.window = k < 0 ? 64 : Ls[k];
        c.max_batch = 4;
        c.n_layers = 2;
        gt_model *h = gt_model_create(&c);
        gt_model_init(h, 1);
        float *x = gtu_rand((size_t)4 * h->n_x, 1.0f), *y = gtu_rand((size_t)4 * h->n_y, 1.0f);
        double before = used_mib();
        gt_cuda_model *g = gt_cuda_model_create(h, GT_PREC_BF16);
        gt_cuda_model_forward(g, x, 4, 0);
        gt_cuda_model_loss(g, y, NULL, 0);
        gt_cuda_model_backward(g, 1.0f);
        double after = used_mib();
        if (k >= 0) {
            delta[k] = after - before;
            gt_model_sizes sz;
            gt_model_plan_sizes(&c, &sz);
            planned[k] = (double)(gt_model_device_bytes(&c, &sz) + gt_cuda_stream_ctx_bytes()) / 1048576.0;
            printf("L=%5d: planner %.1f MiB (model %.1f + stream context %.1f), measured %.1f MiB (ratio %.3f)\n",
                   Ls[k], planned[k], gt_model_device_bytes(&c, &sz) / 1048576.0,
                   gt_cuda_stream_ctx_bytes() / 1048576.0, delta[k], planned[k] / delta[k]);
            TEST_CHECK(fabs(planned[k] / delta[k] - 1.0) < 0.10);
            printf("L=%5d: device memory +%.1f MiB (model's own %.1f MiB; a dense L x L score tensor per "
                   "head and sample would be %.1f MiB)\n",
                   Ls[k], delta[k], gt_cuda_model_device_bytes(g) / 1048576.0,
                   4.0 * c.n_heads * (double)c.window * c.window * 4 / 1048576.0);
        }
        gt_cuda_model_free(g);
        gt_model_free(h);
        free(x);
        free(y);
    }
    double own[3]; /* the model's own part: the measured growth less its stream context */
    for (int k = 0; k < 3; k++) own[k] = delta[k] - gt_cuda_stream_ctx_bytes() / 1048576.0;
    printf("model's own growth 1024->2048 %.2fx, 2048->4096 %.2fx, 1024->4096 %.2fx\n", own[1] / own[0],
           own[2] / own[1], own[2] / own[0]);
    TEST_CHECK(own[0] > 0);
    TEST_CHECK(own[1] / own[0] < 2.3);
    TEST_CHECK(own[2] / own[1] < 2.3);
    TEST_CHECK(own[2] / own[0] < 4.6);
    TEST_DONE();
}
