/* tests/dist/test_dist_grads.c (np 1, 2, 4): the trainer's gradient
 * all-reduce, gt_dist_allreduce_grads. Host buffers (on_device 0) go through
 * gt_dist_allreduce_sum: the same bits as calling it directly, the exact sum
 * of small integers at any bucket size, every rank the same. With
 * GT_TEST_DEVICE_GRADS=1 (tests/gpu: ctest gpu_dist_grads) and a CUDA build,
 * a device buffer of every rank's own GPU (node-local rank) goes through NCCL
 * on a stream and must give the same values as the host path, also through
 * the overlapped exchange of dist/grads.h; fewer GPUs than
 * ranks on the node: that part is skipped (77). */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/grads.h"
#include "nn/device.h"
#include "test.h"
#ifdef GT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* element k of rank r: (k % 97) - 48 + r: small integers, every partial sum exact in float */
static void fill(float *g, size_t n, int rank) {
    for (size_t k = 0; k < n; k++) g[k] = (float)((int)(k % 97) - 48 + rank);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t n = 300007;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) want[k] = (float)(size * ((int)(k % 97) - 48) + size * (size - 1) / 2);
    const size_t buckets[] = {0, 4 << 20, 1 << 16, 4000}; /* 4000: 300 buckets, the last uneven */
    for (int i = 0; i < 4; i++) {
        fill(a, n, rank);
        fill(b, n, rank);
        gt_dist_allreduce_grads(a, n, buckets[i], 0, NULL, comm);
        gt_dist_allreduce_sum(b, n, buckets[i], comm);
        TEST_CHECK(!memcmp(a, b, n * sizeof(float)));
        TEST_CHECK(!memcmp(a, want, n * sizeof(float)));
    }
    TEST_CHECK(gt_dist_replicas_identical(a, n, comm));
    int rc = 0;
    const char *dev_env = getenv("GT_TEST_DEVICE_GRADS");
    if (dev_env && dev_env[0] == '1') {
#ifdef GT_HAVE_CUDA
        int local = 0, local_n = 1;
        gt_dist_node_rank(comm, &local, &local_n);
        int ok = gt_device_gpu_count() >= local_n;
        if (gt_dist_all_ok(comm, ok)) {
            TEST_REQUIRE(cudaSetDevice(local) == cudaSuccess);
            cudaStream_t st;
            TEST_REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
            float *d = NULL;
            TEST_REQUIRE(cudaMalloc((void **)&d, n * sizeof(float)) == cudaSuccess);
            for (int i = 0; i < 4; i++) {
                fill(a, n, rank);
                TEST_REQUIRE(cudaMemcpy(d, a, n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
                gt_dist_allreduce_grads(d, n, buckets[i], 1, (void *)st, comm);
                TEST_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
                TEST_REQUIRE(cudaMemcpy(a, d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
                TEST_CHECK(!memcmp(a, want, n * sizeof(float)));
            }
            /* the overlapped exchange (dist/grads.h): buckets queued on its own
             * stream as readiness is reported, the engine's stream waiting at finish */
            const size_t starts[] = {0, 1000, 50000, 200000, 300000};
            gt_dist_grads *gx = gt_dist_grads_create(starts, 5, n, 64 << 10, 1, (void *)st, comm);
            for (int step = 0; step < 2; step++) {
                fill(a, n, rank);
                TEST_REQUIRE(cudaMemcpyAsync(d, a, n * sizeof(float), cudaMemcpyHostToDevice, st) == cudaSuccess);
                gt_dist_grads_begin(gx, d);
                for (int i = 4; i >= 0; i--) gt_dist_grads_ready(gx, starts[i]);
                gt_dist_grads_finish(gx);
                TEST_REQUIRE(cudaMemcpyAsync(a, d, n * sizeof(float), cudaMemcpyDeviceToHost, st) == cudaSuccess);
                TEST_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
                TEST_CHECK(!memcmp(a, want, n * sizeof(float)));
            }
            gt_dist_grads_free(gx);
            if (rank == 0) printf("device gradients, overlapped buckets on their own stream: exact\n");
            TEST_CHECK(gt_dist_replicas_identical(a, n, comm));
            if (rank == 0) printf("device gradients: NCCL %s over %d rank(s): exact\n", gt_dist_nccl_version_string(), size);
            cudaFree(d);
            cudaStreamDestroy(st);
        } else {
            if (rank == 0) printf("device part skipped: fewer GPUs than ranks on a node\n");
            rc = 77;
        }
#else
        if (rank == 0) printf("device part skipped: a build without CUDA\n");
        rc = 77;
#endif
    }
    free(a), free(b), free(want);
    gt_dist_finalize();
    if (gt_test_failures) TEST_DONE();
    return rc;
}
