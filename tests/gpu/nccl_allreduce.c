/* tests/gpu/nccl_allreduce.c (ctest gpu_nccl_allreduce): dist/'s NCCL
 * all-reduce (dist/nccl.h, the code the trainer's gradient all-reduce runs on
 * GPUs) over every visible GPU of this machine from one process
 * (ncclCommInitAll), against the host sum:
 *   - buffers of 1 Mi + 37 floats per device (a different pattern per device),
 *     buckets of 1 MiB (uneven last bucket), of 0 (one call) and of 7 floats
 *     (many tiny buckets) on a short buffer;
 *   - every device ends with the same bits;
 *   - the result is within n_devices x 2^-23 relative (plus 1e-30) of the sum
 *     in double (NCCL adds in its ring/tree order, in float);
 *   - one device: the result is the input, bit for bit.
 * Needs no MPI. Skips (77) without a GPU. */
#include <cuda_runtime_api.h>

#include "dist/nccl.h"
#include "gpu_test_util.h"

#define MAX_DEV 8

static void run_case(void **comms, int nd, size_t n, size_t bucket_bytes) {
    float *host[MAX_DEV], *dev[MAX_DEV];
    cudaStream_t st[MAX_DEV];
    double *ref = calloc(n, sizeof(double));
    for (int d = 0; d < nd; d++) {
        host[d] = malloc(n * sizeof(float));
        for (size_t k = 0; k < n; k++) {
            host[d][k] = (float)sin(1e-3 * (double)k * (d + 1) + d) * (float)(1 + d);
            ref[k] += host[d][k];
        }
        TEST_REQUIRE(cudaSetDevice(d) == cudaSuccess);
        TEST_REQUIRE(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking) == cudaSuccess);
        dev[d] = gtu_dev(host[d], n);
    }
    gt_dist_nccl_group_start(); /* one thread, several devices: one group around their calls */
    for (int d = 0; d < nd; d++) {
        TEST_REQUIRE(cudaSetDevice(d) == cudaSuccess);
        gt_dist_nccl_allreduce_sum(comms[d], dev[d], n, bucket_bytes, (void *)st[d]);
    }
    gt_dist_nccl_group_end();
    float *got0 = NULL;
    size_t bad = 0;
    double worst = 0;
    for (int d = 0; d < nd; d++) {
        TEST_REQUIRE(cudaSetDevice(d) == cudaSuccess);
        TEST_REQUIRE(cudaStreamSynchronize(st[d]) == cudaSuccess);
        float *got = gtu_host(dev[d], n);
        if (d == 0) {
            got0 = got;
            for (size_t k = 0; k < n; k++) {
                double tol = nd * ldexp(1.0, -23) * (fabs(ref[k]) + 1.0) + 1e-30;
                double err = fabs((double)got[k] - ref[k]);
                if (!(err <= tol)) bad++;
                if (err / tol > worst) worst = err / tol;
            }
            if (nd == 1) TEST_CHECK(!memcmp(got, host[0], n * sizeof(float)));
        } else {
            TEST_CHECK(!memcmp(got, got0, n * sizeof(float))); /* the same bits on every device */
            free(got);
        }
        gt_cuda_free(dev[d]);
        cudaStreamDestroy(st[d]);
        free(host[d]);
    }
    printf("  %d device(s), n=%zu, buckets of %zu bytes: max err/tol %.3f%s\n", nd, n, bucket_bytes, worst,
           bad ? "  FAIL" : "");
    TEST_EQ_INT(bad, 0);
    free(got0);
    free(ref);
}

int main(void) {
    GTU_REQUIRE_GPU();
    TEST_EQ_INT(gt_dist_nccl_available(), 1);
    printf("NCCL %s\n", gt_dist_nccl_version());
    TEST_CHECK(gt_dist_nccl_version()[0] != 0);
    int nd = gt_device_gpu_count();
    if (nd > MAX_DEV) nd = MAX_DEV;
    int devs[MAX_DEV];
    void *comms[MAX_DEV];
    for (int d = 0; d < nd; d++) devs[d] = d;
    gt_dist_nccl_comm_init_all(comms, nd, devs);
    for (int d = 0; d < nd; d++) TEST_EQ_INT(gt_dist_nccl_comm_size(comms[d]), nd);
    run_case(comms, nd, ((size_t)1 << 20) + 37, (size_t)1 << 20);
    run_case(comms, nd, 1000, 0);
    run_case(comms, nd, 1000, 7 * sizeof(float));
    for (int d = 0; d < nd; d++) gt_dist_nccl_comm_destroy(comms[d]);
    TEST_DONE();
}
