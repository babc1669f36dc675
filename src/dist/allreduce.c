#include "dist/allreduce.h"

#include <stdlib.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"

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
    MPI_CHECK(MPI_Waitall((int)n_buckets, req, MPI_STATUSES_IGNORE));
    if (req != stack_req) free(req);
}

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
