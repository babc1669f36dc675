/* dist/balance.c: equal shares of a global batch (see balance.h). */
#include "dist/balance.h"

#include <limits.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/check_mpi.h"

int64_t gt_dist_balance_rows(int64_t *n, int64_t cap, void *const *bufs, const size_t *row_bytes, int n_arrays,
                             MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    if (size == 1) return 0;
    int64_t *cnt = GT_MALLOC(2 * (size_t)size * sizeof(int64_t)), *tgt = cnt + size;
    MPI_CHECK(MPI_Allgather(n, 1, MPI_INT64_T, cnt, 1, MPI_INT64_T, comm));
    int64_t total = 0;
    for (int r = 0; r < size; r++) total += cnt[r];
    for (int r = 0; r < size; r++) tgt[r] = total / size + (r < total % size);
    GT_CHECK(tgt[rank] <= cap, GT_EXIT_INTERNAL, "batch balance: share %lld above the buffer's %lld rows",
             (long long)tgt[rank], (long long)cap);
    int max_req = 0;
    for (int r = 0; r < size; r++) max_req += cnt[r] != tgt[r];
    MPI_Request *req = GT_MALLOC(((size_t)max_req * (size_t)n_arrays + 1) * sizeof(MPI_Request));
    int n_req = 0;
    int64_t moved = 0;
    /* two cursors: senders (above their share) and receivers (below), both in rank order */
    int i = 0, j = 0;
    int64_t i_off = 0, j_off = 0; /* rows already sent by i / received by j */
    for (;;) {
        while (i < size && cnt[i] - tgt[i] <= i_off) i++, i_off = 0;
        while (j < size && tgt[j] - cnt[j] <= j_off) j++, j_off = 0;
        if (i >= size || j >= size) break;
        int64_t k = cnt[i] - tgt[i] - i_off, want = tgt[j] - cnt[j] - j_off;
        if (want < k) k = want;
        const int64_t src = tgt[i] + i_off, dst = cnt[j] + j_off; /* first row on each side */
        if (rank == i || rank == j) {
            for (int a = 0; a < n_arrays; a++) {
                size_t bytes = (size_t)k * row_bytes[a];
                if (bytes == 0) continue;
                GT_CHECK(bytes <= INT_MAX, GT_EXIT_INTERNAL, "batch balance: %zu bytes in one message", bytes);
                char *base = bufs[a];
                if (rank == i)
                    MPI_CHECK(MPI_Isend(base + (size_t)src * row_bytes[a], (int)bytes, MPI_BYTE, j, a, comm,
                                        &req[n_req++]));
                else
                    MPI_CHECK(MPI_Irecv(base + (size_t)dst * row_bytes[a], (int)bytes, MPI_BYTE, i, a, comm,
                                        &req[n_req++]));
            }
            moved += rank == i ? -k : k;
        }
        i_off += k;
        j_off += k;
    }
    MPI_CHECK(MPI_Waitall(n_req, req, MPI_STATUSES_IGNORE));
    *n = tgt[rank];
    free(req);
    free(cnt);
    return moved;
}
