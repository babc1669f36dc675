/* The small collectives of dist/reduce.h give the exact values their names
 * promise at any rank count: every rank contributes a value of its rank, and
 * the results are checked against closed forms in the rank count P (sums,
 * extremes, rank 0's value, the concatenation in rank order), on the world
 * communicator and on a split of it (even and odd ranks). */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"
#include "dist/reduce.h"
#include "test.h"

static void check_scalars(MPI_Comm comm, int rank, int size) {
    /* rank r contributes 2^40 + r: the sum needs 64 bits */
    const int64_t big = (int64_t)1 << 40;
    TEST_EQ_INT(gt_dist_sum_i64(big + rank, comm), size * big + (int64_t)size * (size - 1) / 2);
    TEST_EQ_INT(gt_dist_max_i64(-big + rank, comm), -big + size - 1);
    TEST_EQ_INT(gt_dist_min_int(10 - rank, comm), 10 - (size - 1));
    TEST_EQ_INT(gt_dist_max_int(-rank, comm), 0);
    TEST_CHECK(gt_dist_max_f(0.25f * (float)rank - 3.0f, comm) == 0.25f * (float)(size - 1) - 3.0f);
    TEST_CHECK(gt_dist_max_d(-1.5 * rank, comm) == 0.0);
    TEST_CHECK(gt_dist_max_d(1e300 * (rank + 1), comm) == 1e300 * size);
}

static void check_arrays(MPI_Comm comm, int rank, int size) {
    /* element i of rank r: r * 10 + i (sums), i - r (extremes) */
    int64_t s[3];
    double lo[4], hi[4], sd[2];
    for (int i = 0; i < 3; i++) s[i] = (int64_t)rank * 10 + i;
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = (double)i - rank;
    sd[0] = 0.5 * rank, sd[1] = -(double)rank;
    gt_dist_allreduce_sum_i64(s, 3, comm);
    gt_dist_allreduce_min_d(lo, 4, comm);
    gt_dist_allreduce_max_d(hi, 4, comm);
    gt_dist_allreduce_sum_d(sd, 2, comm);
    const int64_t rsum = (int64_t)size * (size - 1) / 2;
    for (int i = 0; i < 3; i++) TEST_EQ_INT(s[i], 10 * rsum + (int64_t)i * size);
    for (int i = 0; i < 4; i++) {
        TEST_CHECK(lo[i] == (double)i - (size - 1));
        TEST_CHECK(hi[i] == (double)i);
    }
    TEST_CHECK(sd[0] == 0.5 * (double)rsum);
    TEST_CHECK(sd[1] == -(double)rsum);
    /* n = 0 is a valid (empty) reduction */
    gt_dist_allreduce_sum_i64(s, 0, comm);
    TEST_EQ_INT(s[0], 10 * rsum);
}

static void check_root(MPI_Comm comm, int rank, int size) {
    const double dmax = gt_dist_reduce_max_d(100.0 - rank * 0.5 + (rank == size - 1 ? 1000.0 : 0.0), comm);
    const int64_t imax = gt_dist_reduce_max_i64(((int64_t)1 << 35) * (rank + 1), comm);
    if (rank == 0) {
        TEST_CHECK(dmax == 100.0 - (size - 1) * 0.5 + 1000.0);
        TEST_EQ_INT(imax, ((int64_t)1 << 35) * size);
    } else { /* the other ranks get 0 */
        TEST_CHECK(dmax == 0.0);
        TEST_EQ_INT(imax, 0);
    }
    /* every rank gets rank 0's value, whatever it passed */
    TEST_CHECK(gt_dist_bcast_d(rank == 0 ? 2.75 : -1.0 - rank, comm) == 2.75);
}

static void check_gathers(MPI_Comm comm, int rank, int size) {
    /* rank r contributes r values 1000 r + j (rank 0: none, NULL) */
    int64_t mine64[8] = {0};
    float minef[8] = {0};
    for (int j = 0; j < rank; j++) mine64[j] = 1000 * (int64_t)rank + j, minef[j] = (float)rank + 0.125f * j;
    int64_t n_all = -1;
    int64_t *all64 = gt_dist_allgatherv(rank ? mine64 : NULL, rank, MPI_INT64_T, &n_all, "too large", comm);
    TEST_EQ_INT(n_all, (int64_t)size * (size - 1) / 2);
    float *allf = gt_dist_allgatherv(minef, rank, MPI_FLOAT, &n_all, "too large", comm);
    TEST_EQ_INT(n_all, (int64_t)size * (size - 1) / 2);
    int64_t k = 0;
    for (int r = 0; r < size; r++)
        for (int j = 0; j < r; j++, k++) {
            TEST_EQ_INT(all64[k], 1000 * (int64_t)r + j);
            TEST_CHECK(allf[k] == (float)r + 0.125f * j);
        }
    free(all64), free(allf);

    /* to rank 0 only: rank r sends r + 1 bytes 'a' + r */
    char bytes[8];
    memset(bytes, 'a' + rank, sizeof bytes);
    int64_t n_bytes = -1;
    char *got = gt_dist_gatherv(bytes, rank + 1, MPI_BYTE, &n_bytes, "too large", comm);
    if (rank == 0) {
        TEST_REQUIRE(got != NULL);
        TEST_EQ_INT(n_bytes, (int64_t)size * (size + 1) / 2);
        int64_t b = 0;
        for (int r = 0; r < size; r++)
            for (int j = 0; j <= r; j++, b++) TEST_EQ_INT(got[b], 'a' + r);
    } else {
        TEST_CHECK(got == NULL);
        TEST_EQ_INT(n_bytes, 0);
    }
    free(got);
    /* empty contributions everywhere */
    double *none = gt_dist_allgatherv(NULL, 0, MPI_DOUBLE, &n_all, "too large", comm);
    TEST_CHECK(none != NULL);
    TEST_EQ_INT(n_all, 0);
    free(none);
}

static void check_all(MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    check_scalars(comm, rank, size);
    check_arrays(comm, rank, size);
    check_root(comm, rank, size);
    check_gathers(comm, rank, size);
    gt_dist_barrier(comm);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_all(MPI_COMM_WORLD);
    /* the communicator argument is honoured: even and odd ranks apart */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    check_all(half);
    int64_t parity_sum = 0; /* sum of the world ranks of my parity */
    for (int r = rank % 2; r < size; r += 2) parity_sum += r;
    TEST_EQ_INT(gt_dist_sum_i64(rank, half), parity_sum);
    MPI_Comm_free(&half);
    /* the test fails on every rank when it failed on one */
    const int ok = gt_dist_all_ok(MPI_COMM_WORLD, gt_test_failures == 0);
    gt_dist_finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
