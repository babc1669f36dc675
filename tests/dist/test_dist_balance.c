/* tests/dist/test_dist_balance.c (np 1, 2, 4): gt_dist_balance_rows.
 * For uneven shares (one rank holding everything, one holding nothing,
 * random counts, already even): every rank ends with total/P (+1 for the
 * first total % P ranks); no row is lost or duplicated (the union of the row
 * ids over the ranks is the same set); every row arrives whole (two arrays
 * of different row sizes stay paired with their id); a rank keeps its first
 * rows in place and appends what it receives; the result is the same when
 * run again (a function of the counts only); the return value is the rows
 * received minus sent. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/balance.h"
#include "dist/comm.h"
#include "test.h"

#define CAP 64
#define XW 5 /* floats per row of the first array */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void run_case(int64_t mine, int rank, int size, MPI_Comm comm) {
    float x[CAP * XW], x2[CAP * XW];
    int64_t id[CAP], id2[CAP];
    for (int64_t i = 0; i < mine; i++) {
        id[i] = (int64_t)rank * 1000 + i;
        for (int c = 0; c < XW; c++) x[i * XW + c] = (float)(id[i] * 10 + c);
    }
    int64_t total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    void *bufs[2] = {x, id};
    const size_t rows[2] = {XW * sizeof(float), sizeof(int64_t)};
    int64_t n = mine;
    memcpy(x2, x, sizeof x2);
    memcpy(id2, id, sizeof id2);
    int64_t moved = gt_dist_balance_rows(&n, CAP, bufs, rows, 2, comm);
    TEST_EQ_INT(n, total / size + (rank < total % size));
    TEST_EQ_INT(moved, n - mine);
    for (int64_t i = 0; i < (mine < n ? mine : n); i++) TEST_EQ_INT(id[i], (int64_t)rank * 1000 + i); /* kept in place */
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < XW; c++) TEST_CHECK(x[i * XW + c] == (float)(id[i] * 10 + c)); /* rows whole */
    /* the same set of rows over the ranks */
    int *cnts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int ni = (int)n;
    MPI_Allgather(&ni, 1, MPI_INT, cnts, 1, MPI_INT, comm);
    int all = 0;
    for (int r = 0; r < size; r++) displs[r] = all, all += cnts[r];
    TEST_EQ_INT(all, total);
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)(all + 1));
    MPI_Allgatherv(id, ni, MPI_INT64_T, ids, cnts, displs, MPI_INT64_T, comm);
    qsort(ids, (size_t)all, sizeof *ids, cmp_i64);
    int64_t *before = malloc(sizeof(int64_t) * (size_t)(all + 1));
    int m0 = (int)mine;
    MPI_Allgather(&m0, 1, MPI_INT, cnts, 1, MPI_INT, comm);
    all = 0;
    for (int r = 0; r < size; r++) displs[r] = all, all += cnts[r];
    MPI_Allgatherv(id2, m0, MPI_INT64_T, before, cnts, displs, MPI_INT64_T, comm);
    qsort(before, (size_t)all, sizeof *before, cmp_i64);
    TEST_CHECK(!memcmp(ids, before, sizeof(int64_t) * (size_t)all));
    /* again from the same counts: the same layout */
    int64_t n2 = mine;
    void *bufs2[2] = {x2, id2};
    gt_dist_balance_rows(&n2, CAP, bufs2, rows, 2, comm);
    TEST_EQ_INT(n2, n);
    TEST_CHECK(!memcmp(id, id2, sizeof(int64_t) * (size_t)n));
    free(ids), free(before), free(cnts), free(displs);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    run_case(rank == 0 ? 40 : 0, rank, size, comm);           /* one rank drew everything */
    run_case(rank == size - 1 ? 0 : 17, rank, size, comm);    /* one rank drew nothing */
    run_case((rank * 7 + 3) % 13 + 1, rank, size, comm);      /* uneven */
    run_case(9, rank, size, comm);                            /* already even */
    run_case(0, rank, size, comm);                            /* an empty batch */
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    if (rank == 0 && !any) printf("batch balance: %d ranks, even shares, nothing lost\n", size);
    gt_dist_finalize();
    return any ? 1 : 0;
}
