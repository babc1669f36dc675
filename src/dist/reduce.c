#include "dist/reduce.h"

#include <limits.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/check_mpi.h"

int64_t gt_dist_sum_i64(int64_t x, MPI_Comm comm) {
    int64_t r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_INT64_T, MPI_SUM, comm));
    return r;
}

int64_t gt_dist_max_i64(int64_t x, MPI_Comm comm) {
    int64_t r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_INT64_T, MPI_MAX, comm));
    return r;
}

int gt_dist_min_int(int x, MPI_Comm comm) {
    int r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_INT, MPI_MIN, comm));
    return r;
}

int gt_dist_max_int(int x, MPI_Comm comm) {
    int r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_INT, MPI_MAX, comm));
    return r;
}

float gt_dist_max_f(float x, MPI_Comm comm) {
    float r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_FLOAT, MPI_MAX, comm));
    return r;
}

double gt_dist_max_d(double x, MPI_Comm comm) {
    double r = 0;
    MPI_CHECK(MPI_Allreduce(&x, &r, 1, MPI_DOUBLE, MPI_MAX, comm));
    return r;
}

void gt_dist_allreduce_sum_d(double *v, int n, MPI_Comm comm) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm));
}

void gt_dist_allreduce_sum_i64(int64_t *v, int n, MPI_Comm comm) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, comm));
}

void gt_dist_allreduce_min_d(double *v, int n, MPI_Comm comm) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MIN, comm));
}

void gt_dist_allreduce_max_d(double *v, int n, MPI_Comm comm) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm));
}

double gt_dist_reduce_max_d(double x, MPI_Comm comm) {
    double r = 0; /* left as is on the other ranks */
    MPI_CHECK(MPI_Reduce(&x, &r, 1, MPI_DOUBLE, MPI_MAX, 0, comm));
    return r;
}

int64_t gt_dist_reduce_max_i64(int64_t x, MPI_Comm comm) {
    int64_t r = 0; /* left as is on the other ranks */
    MPI_CHECK(MPI_Reduce(&x, &r, 1, MPI_INT64_T, MPI_MAX, 0, comm));
    return r;
}

double gt_dist_bcast_d(double x, MPI_Comm comm) {
    MPI_CHECK(MPI_Bcast(&x, 1, MPI_DOUBLE, 0, comm));
    return x;
}

/* Displacements (in elements) of the counts cnt[size]; the total, or -1
 * when it does not fit an MPI count. */
static int64_t displacements(const int *cnt, int size, int *displ) {
    int64_t total = 0;
    for (int r = 0; r < size; r++) {
        if (total + cnt[r] > INT_MAX) return -1;
        displ[r] = (int)total;
        total += cnt[r];
    }
    return total;
}

void *gt_dist_allgatherv(const void *mine, int n_mine, MPI_Datatype type, int64_t *n_all, const char *too_large,
                         MPI_Comm comm) {
    int size = 1, type_bytes = 0;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Type_size(type, &type_bytes));
    int *cnt = GT_MALLOC(sizeof(int) * (size_t)size), *displ = GT_MALLOC(sizeof(int) * (size_t)size);
    MPI_CHECK(MPI_Allgather(&n_mine, 1, MPI_INT, cnt, 1, MPI_INT, comm));
    int64_t total = displacements(cnt, size, displ);
    GT_CHECK(total >= 0, GT_EXIT_RESOURCE, "%s", too_large);
    void *all = GT_MALLOC((size_t)type_bytes * (size_t)(total + 1));
    /* a valid address even for an empty contribution */
    const void *send = mine ? mine : (const void *)&n_mine;
    MPI_CHECK(MPI_Allgatherv(send, n_mine, type, all, cnt, displ, type, comm));
    free(cnt), free(displ);
    *n_all = total;
    return all;
}

void *gt_dist_gatherv(const void *mine, int n_mine, MPI_Datatype type, int64_t *n_all, const char *too_large,
                      MPI_Comm comm) {
    int rank = 0, size = 1, type_bytes = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Type_size(type, &type_bytes));
    int *cnt = NULL, *displ = NULL; /* significant at the root only */
    if (rank == 0) {
        cnt = GT_MALLOC(sizeof(int) * (size_t)size);
        displ = GT_MALLOC(sizeof(int) * (size_t)size);
    }
    MPI_CHECK(MPI_Gather(&n_mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, comm));
    int64_t total = 0;
    void *all = NULL;
    if (rank == 0) {
        total = displacements(cnt, size, displ);
        GT_CHECK(total >= 0, GT_EXIT_RESOURCE, "%s", too_large);
        all = GT_MALLOC((size_t)type_bytes * (size_t)(total + 1));
    }
    const void *send = mine ? mine : (const void *)&n_mine;
    MPI_CHECK(MPI_Gatherv(send, n_mine, type, all, cnt, displ, type, 0, comm));
    free(cnt), free(displ);
    *n_all = total;
    return all;
}

void gt_dist_barrier(MPI_Comm comm) { MPI_CHECK(MPI_Barrier(comm)); }

void gt_dist_allreduce_max_i64(int64_t *v, int n, MPI_Comm comm) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, comm));
}

void gt_dist_bcast_bytes(void *buf, size_t n_bytes, MPI_Comm comm) {
    GT_ASSERT(n_bytes <= (size_t)INT_MAX);
    MPI_CHECK(MPI_Bcast(buf, (int)n_bytes, MPI_BYTE, 0, comm));
}
