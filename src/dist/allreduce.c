#include "dist/allreduce.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "core/trace.h"
#include "dist/dist_impl.h"
#ifdef GT_HAVE_NCCL
#include "dist/nccl.h"
#endif

void gt_dist_allreduce_sum(float *grads, size_t n, size_t bucket_bytes, MPI_Comm comm) {
    int size = 1;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    if (size == 1 || n == 0) return;
    size_t per = bucket_bytes ? bucket_bytes / sizeof(float) : n;
    if (per == 0) per = 1;
    /* MPI counts are int: also cap buckets below 2^30 elements */
    if (per > ((size_t)1 << 30)) per = (size_t)1 << 30;
    size_t n_buckets = (n + per - 1) / per;
    MPI_Request stack_req[64];
    MPI_Request *req = n_buckets <= 64 ? stack_req : GT_MALLOC(n_buckets * sizeof(MPI_Request));
    for (size_t b = 0; b < n_buckets; b++) {
        size_t off = b * per, cnt = n - off < per ? n - off : per;
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, grads + off, (int)cnt, MPI_FLOAT, MPI_SUM, comm, &req[b]));
    }
    if (GT_TRACE_ON()) { /* train.trace: one span per bucket, up to its completion (same sums) */
        double t = gt_now();
        for (size_t b = 0; b < n_buckets; b++) {
            MPI_CHECK(MPI_Wait(&req[b], MPI_STATUS_IGNORE));
            double t1 = gt_now();
            size_t cnt = n - b * per < per ? n - b * per : per;
            gt_trace_record("allreduce bucket", t, t1, "bytes", (int64_t)(cnt * sizeof(float)));
            t = t1;
        }
    } else {
        MPI_CHECK(MPI_Waitall((int)n_buckets, req, MPI_STATUSES_IGNORE));
    }
    if (req != stack_req) free(req);
}

/* ---- NCCL communicators: one per communicator the gradients travel on
 * (usually the job's), made on first use, destroyed by gt_dist_finalize. */
#ifdef GT_HAVE_NCCL
#define GT_NCCL_MAX_COMMS 8
static struct {
    MPI_Comm mpi; /* a duplicate of the caller's communicator (ours to compare and free) */
    void *nccl;
} g_nccl[GT_NCCL_MAX_COMMS];
static int g_n_nccl = 0;

void *gt_dist_nccl_comm_for(MPI_Comm comm) {
    for (int i = 0; i < g_n_nccl; i++) {
        int cmp = MPI_UNEQUAL;
        MPI_CHECK(MPI_Comm_compare(g_nccl[i].mpi, comm, &cmp));
        if (cmp == MPI_IDENT || cmp == MPI_CONGRUENT) return g_nccl[i].nccl;
    }
    /* collective: every rank's table holds the same communicators, so every
     * rank takes this branch for the same call */
    GT_CHECK(g_n_nccl < GT_NCCL_MAX_COMMS, GT_EXIT_INTERNAL, "more than %d NCCL communicators", GT_NCCL_MAX_COMMS);
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    unsigned char id[GT_DIST_NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    if (rank == 0) gt_dist_nccl_unique_id(id);
    MPI_CHECK(MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, comm));
    MPI_CHECK(MPI_Comm_dup(comm, &g_nccl[g_n_nccl].mpi));
    g_nccl[g_n_nccl].nccl = gt_dist_nccl_comm_init(size, id, rank);
    if (rank == 0) GT_INFO("dist: NCCL %s communicator over %d ranks", gt_dist_nccl_version(), size);
    return g_nccl[g_n_nccl++].nccl;
}

void gt_dist_nccl_release_all(void) {
    for (int i = 0; i < g_n_nccl; i++) {
        gt_dist_nccl_comm_destroy(g_nccl[i].nccl);
        MPI_Comm_free(&g_nccl[i].mpi);
    }
    g_n_nccl = 0;
}

const char *gt_dist_nccl_version_string(void) { return gt_dist_nccl_version(); }
#else
void gt_dist_nccl_release_all(void) {}
const char *gt_dist_nccl_version_string(void) { return ""; }
#endif

void gt_dist_allreduce_grads(float *grads, size_t n, size_t bucket_bytes, int on_device, void *stream,
                             MPI_Comm comm) {
    if (!on_device) {
        gt_dist_allreduce_sum(grads, n, bucket_bytes, comm);
        return;
    }
    int size = 1;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    if (size == 1 || n == 0) return;
#ifdef GT_HAVE_NCCL
    gt_dist_nccl_allreduce_sum(gt_dist_nccl_comm_for(comm), grads, n, bucket_bytes, stream);
#else
    (void)stream;
    gt_dist_fail_no_nccl(size);
#endif
}

#ifndef GT_HAVE_NCCL
void gt_dist_fail_no_nccl(int size) {
    GT_FAIL(GT_EXIT_DEVICE,
            "%d ranks on GPUs need NCCL, and this gridtrain was built without it: install NCCL (or the nvidia-nccl "
            "wheel), reconfigure with NCCL_ROOT=DIR, or train on one GPU (1 rank) or with train.device=cpu",
            size);
}
#endif

void gt_dist_broadcast(float *params, size_t n, MPI_Comm comm) {
    const size_t chunk = (size_t)1 << 30;
    for (size_t off = 0; off < n; off += chunk) {
        size_t cnt = n - off < chunk ? n - off : chunk;
        MPI_CHECK(MPI_Bcast(params + off, (int)cnt, MPI_FLOAT, 0, comm));
    }
}

uint64_t gt_dist_checksum(const float *x, size_t n) { return (uint64_t)XXH64(x, n * sizeof(float), 0); }

int gt_dist_replicas_identical(const float *params, size_t n, MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    unsigned long long mine = gt_dist_checksum(params, n);
    unsigned long long *all = GT_MALLOC(sizeof(unsigned long long) * (size_t)size);
    MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, comm));
    int ok = 1;
    for (int r = 1; r < size; r++)
        if (all[r] != all[0]) {
            ok = 0;
            if (rank == 0)
                GT_WARN("model replicas differ: rank %d checksum %016llx, rank 0 %016llx", r, all[r], all[0]);
        }
    free(all);
    return ok;
}
