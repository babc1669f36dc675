/* tests/dist/test_dist_overlap.c (np 1, 2, 4): the overlapped gradient
 * exchange of dist/grads.h on host buffers.
 *
 * Bucket plan: runs of whole tensors from the top of the buffer down, each
 * closed at the first tensor start that makes it hold bucket_bytes, covering
 * [0, n) exactly, top first; a tensor larger than the bucket is a bucket of
 * its own; a bucket of 0 bytes gives one bucket per tensor.
 * Exchange: over three steps, ranks that report readiness layer by layer
 * (as backward does), a rank that reports nothing (a step without samples:
 * everything starts in finish) and a rank that reports only 0 give the exact
 * sums of small integers, and bit-identical sums of arbitrary floats with
 * overlap on and off (each bucket is one collective whenever it starts);
 * finish counts the buckets started before it. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/grads.h"
#include "test.h"

/* tensor starts of a model-like table: small biases, one big matrix, n elements */
static const size_t k_starts[] = {0, 3000, 3010, 9000, 9020, 209020, 209100, 212000, 212004};
#define N_STARTS ((int)(sizeof k_starts / sizeof k_starts[0]))
#define N_ELEMS ((size_t)212010)

static void check_plan(size_t bucket_bytes, int want_buckets) {
    gt_dist_grads *g = gt_dist_grads_create(k_starts, N_STARTS, N_ELEMS, bucket_bytes, 0, NULL, MPI_COMM_SELF);
    int nb = gt_dist_grads_n_buckets(g);
    if (want_buckets > 0) TEST_EQ_INT(nb, want_buckets);
    size_t top = N_ELEMS;
    for (int b = 0; b < nb; b++) {
        size_t lo, hi;
        gt_dist_grads_bucket(g, b, &lo, &hi);
        TEST_CHECK(hi == top && lo < hi); /* contiguous, top first */
        int at_start = 0, first_close = -1;
        for (int i = 0; i < N_STARTS; i++) at_start |= k_starts[i] == lo;
        TEST_CHECK(at_start); /* whole tensors */
        /* closed at the first start (from the top) that reaches the size, or at 0 */
        for (int i = N_STARTS - 1; i >= 0 && first_close < 0; i--)
            if (k_starts[i] < hi && ((hi - k_starts[i]) * sizeof(float) >= bucket_bytes || k_starts[i] == 0))
                first_close = i;
        TEST_CHECK(first_close >= 0 && k_starts[first_close] == lo);
        top = lo;
    }
    TEST_CHECK(top == 0);
    gt_dist_grads_free(g);
}

static void fill_int(float *v, size_t n, int rank, int step) {
    for (size_t k = 0; k < n; k++) v[k] = (float)((int)((k + (size_t)step) % 89) - 44 + rank);
}

static void fill_real(float *v, size_t n, int rank, int step) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1) + (uint64_t)step;
    for (size_t k = 0; k < n; k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[k] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) * 1e-3f;
    }
}

/* One step; mode 0: readiness at every tensor start from the top (backward),
 * 1: nothing (no backward on this rank), 2: only 0 (one layer). */
static int run_step(gt_dist_grads *g, float *v, int mode) {
    gt_dist_grads_begin(g, v);
    if (mode == 0)
        for (int i = N_STARTS - 1; i >= 0; i--) gt_dist_grads_ready(g, k_starts[i]);
    if (mode == 2) gt_dist_grads_ready(g, 0);
    return gt_dist_grads_finish(g);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    check_plan(4 << 20, 1);           /* everything fits one bucket */
    check_plan(200000 * 4, 2);        /* the big matrix and what is above it, then the rest */
    check_plan(1000 * 4, 0);
    check_plan(0, N_STARTS);          /* one per tensor */

    const size_t n = N_ELEMS;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    const int mode = size == 1 ? 0 : rank % 3; /* ranks 1 (no samples) and 2 (one layer) differ from 0 */
    const size_t bucket_sizes[] = {4 << 20, 1000 * 4, 0};
    for (int bs = 0; bs < 3; bs++) {
        gt_dist_grads *on = gt_dist_grads_create(k_starts, N_STARTS, n, bucket_sizes[bs], 0, NULL, comm);
        gt_dist_grads *off = gt_dist_grads_create(k_starts, N_STARTS, n, bucket_sizes[bs], 0, NULL, comm);
        gt_dist_grads_set_overlap(off, 0);
        const int nb = gt_dist_grads_n_buckets(on);
        for (int step = 0; step < 3; step++) {
            fill_int(a, n, rank, step);
            int early = run_step(on, a, mode);
            for (size_t k = 0; k < n; k++)
                want[k] = (float)(size * ((int)((k + (size_t)step) % 89) - 44) + size * (size - 1) / 2);
            TEST_CHECK(!memcmp(a, want, n * sizeof(float)));
            /* started before finish: all of them after a full backward, none without one */
            TEST_EQ_INT(early, size == 1 ? 0 : mode == 1 ? 0 : nb);
            fill_real(a, n, rank, step);
            fill_real(b, n, rank, step);
            run_step(on, a, mode);
            TEST_EQ_INT(run_step(off, b, mode), 0);
            TEST_CHECK(!memcmp(a, b, n * sizeof(float)));
            TEST_CHECK(gt_dist_replicas_identical(a, n, comm));
        }
        gt_dist_grads_free(on);
        gt_dist_grads_free(off);
    }
    free(a), free(b), free(want);
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    if (rank == 0 && !any) printf("overlapped gradient exchange: %d ranks, exact and timing-independent\n", size);
    gt_dist_finalize();
    return any ? 1 : 0;
}
