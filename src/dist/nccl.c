/* dist/nccl.c: NCCL calls of the gradient all-reduce (see dist/nccl.h).
 * The only file of src/ that talks to NCCL. */
#include "dist/nccl.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/check_cuda.h" /* CUDA_CHECK */
#include "core/check_nccl.h" /* NCCL_CHECK */

int gt_dist_nccl_available(void) { return 1; }

void gt_dist_nccl_unique_id(void *id) {
    ncclUniqueId u;
    NCCL_CHECK(ncclGetUniqueId(&u));
    _Static_assert(sizeof u == GT_DIST_NCCL_ID_BYTES, "NCCL_UNIQUE_ID_BYTES changed");
    memcpy(id, &u, sizeof u);
}

void *gt_dist_nccl_comm_init(int nranks, const void *id, int rank) {
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclComm_t c = NULL;
    NCCL_CHECK(ncclCommInitRank(&c, nranks, u, rank));
    return c;
}

void gt_dist_nccl_comm_init_all(void **comms, int n, const int *devs) {
    ncclComm_t c[64];
    GT_CHECK(n >= 1 && n <= 64, GT_EXIT_USAGE, "NCCL: %d devices (1..64)", n);
    NCCL_CHECK(ncclCommInitAll(c, n, devs));
    for (int i = 0; i < n; i++) comms[i] = c[i];
}

void gt_dist_nccl_comm_destroy(void *comm) {
    if (comm) NCCL_CHECK(ncclCommDestroy((ncclComm_t)comm));
}

int gt_dist_nccl_comm_size(void *comm) {
    int n = 0;
    NCCL_CHECK(ncclCommCount((ncclComm_t)comm, &n));
    return n;
}

void gt_dist_nccl_group_start(void) { NCCL_CHECK(ncclGroupStart()); }
void gt_dist_nccl_group_end(void) { NCCL_CHECK(ncclGroupEnd()); }

void gt_dist_nccl_allreduce_sum(void *comm, float *dev, size_t n, size_t bucket_bytes, void *stream) {
    if (n == 0) return;
    size_t per = bucket_bytes ? bucket_bytes / sizeof(float) : n;
    if (per == 0) per = 1;
    /* buckets: a large buffer is cut so NCCL pipelines the pieces; one group
     * launches them together (nested groups are allowed: a single-process
     * multi-device caller may wrap the calls of every device in its own group) */
    NCCL_CHECK(ncclGroupStart());
    for (size_t off = 0; off < n; off += per) {
        size_t cnt = n - off < per ? n - off : per;
        NCCL_CHECK(ncclAllReduce(dev + off, dev + off, cnt, ncclFloat, ncclSum, (ncclComm_t)comm,
                                 (cudaStream_t)stream));
    }
    NCCL_CHECK(ncclGroupEnd());
}

void *gt_dist_nccl_stream_create(void) {
    cudaStream_t st = NULL;
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    return st;
}

void gt_dist_nccl_stream_destroy(void *stream) {
    if (stream) CUDA_CHECK(cudaStreamDestroy((cudaStream_t)stream));
}

void *gt_dist_nccl_event_create(void) {
    cudaEvent_t ev = NULL;
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    return ev;
}

void gt_dist_nccl_event_destroy(void *ev) {
    if (ev) CUDA_CHECK(cudaEventDestroy((cudaEvent_t)ev));
}

void gt_dist_nccl_stream_after(void *waiter, void *signaller, void *ev) {
    CUDA_CHECK(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)signaller));
    CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)waiter, (cudaEvent_t)ev, 0));
}

const char *gt_dist_nccl_version(void) {
    static char buf[32];
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "";
    /* NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9 */
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    return buf;
}
