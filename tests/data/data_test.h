/* tests/data/data_test.h: helpers for the data/ tests (static functions only).
 * Test files come from the closed-form sources of tests/io/testgen.h, written
 * collectively into the test's working directory under a name that carries
 * the test and the rank count (ctest may run np1/np2/np4 at once). */
#ifndef GT_TESTS_DATA_DATA_TEST_H
#define GT_TESTS_DATA_DATA_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "io/mpi_test.h"
#include "io/read.h"
#include "io/testgen.h"
#include "io/write.h"
#include "test.h"

/* A testgen NILM source with extra planted values: (household, row, value)
 * on the aggregate (col -1) or an appliance (col a). */
typedef struct dt_plant {
    int h;
    int64_t row;
    int col;
    float value;
} dt_plant;
typedef struct dt_nilm {
    tg_nilm tg;
    const dt_plant *plants;
    int n_plants;
} dt_nilm;

static inline void dt_nilm_generate(void *ctx, int h, float *agg, float *app, uint8_t *faults) {
    dt_nilm *d = ctx;
    tg_nilm_generate(&d->tg, h, agg, app, faults);
    for (int i = 0; i < d->n_plants; i++) {
        const dt_plant *p = &d->plants[i];
        if (p->h != h) continue;
        if (p->col < 0) agg[p->row] = p->value;
        else app[p->row * TG_NILM_A + p->col] = p->value;
    }
}

static inline void dt_path(char *buf, size_t n, const char *name, MPI_Comm comm) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    snprintf(buf, n, "%s_np%d.h5", name, size);
}

/* Collective: writes a testgen NILM file with H households (faults planted
 * by testgen when inject, plus plants[n_plants]). */
static inline void dt_write_nilm(const char *path, int H, int inject, const dt_plant *plants, int n_plants,
                                 MPI_Comm comm) {
    gt_nilm_source src;
    dt_nilm d;
    memset(&d, 0, sizeof d);
    tg_nilm_source(&src, &d.tg, H, inject, 0.0);
    d.plants = plants;
    d.n_plants = n_plants;
    src.ctx = &d;
    src.generate = dt_nilm_generate;
    gt_write_opts o;
    gt_write_opts_defaults(&o);
    o.chunk_rows = 4096;
    gt_nilm_write(path, &src, &o, comm, NULL);
}

static inline void dt_write_pdm(const char *path, int T, MPI_Comm comm) {
    gt_pdm_source src;
    tg_pdm g;
    tg_pdm_source(&src, &g, T);
    gt_write_opts o;
    gt_write_opts_defaults(&o);
    o.chunk_rows = 4096;
    gt_pdm_write(path, &src, &o, comm, NULL);
}

/* Split boundaries of an item of n rows (the documented rule). */
static inline void dt_bounds(int64_t n, double tr, double va, int64_t *b1, int64_t *b2) {
    *b1 = llround(tr * (double)n);
    *b2 = llround((tr + va) * (double)n);
    if (*b1 > n) *b1 = n;
    if (*b2 > n) *b2 = n;
}
/* Grid windows [s, s + W) inside [lo, hi) with s a multiple of base. */
static inline int64_t dt_grid(int64_t lo, int64_t hi, int64_t W, int64_t base) {
    int64_t first = (lo + base - 1) / base * base;
    return hi - W >= first ? (hi - W - first) / base + 1 : 0;
}

/* All refs of a split on this rank, in local order (caller frees). */
static inline gt_window_ref *dt_local_refs(const gt_dataset *ds, gt_split s, int64_t *n_out) {
    int64_t n = gt_dataset_n_windows_local(ds, s);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n + 1));
    gt_window_ref *refs = malloc(sizeof(gt_window_ref) * (size_t)(n + 1));
    int64_t nx = gt_dataset_n_x(ds), ny = gt_dataset_n_y(ds);
    float *x = malloc(sizeof(float) * (size_t)(nx + 1));
    float *y = malloc(sizeof(float) * (size_t)(ny + 1)), *m = malloc(sizeof(float) * (size_t)(ny + 1));
    TEST_EQ_INT(gt_dataset_local_range(ds, s, 0, n, idx), n);
    for (int64_t i = 0; i < n; i++) gt_dataset_fill(ds, s, idx + i, 1, x, y, m, refs + i);
    free(idx), free(x), free(y), free(m);
    *n_out = n;
    return refs;
}

/* (file_index, start) as one sortable key */
static inline int64_t dt_key(const gt_window_ref *r) { return ((int64_t)r->file_index << 40) | r->start; }
static inline int dt_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Gathers n int64 from every rank to rank 0 (returns the total there; *all
 * is malloc'd on rank 0, NULL elsewhere). */
static inline int64_t dt_gather_i64(const int64_t *v, int64_t n, int64_t **all, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int mine = (int)n, *rc = malloc(sizeof(int) * (size_t)size), *dp = malloc(sizeof(int) * (size_t)size);
    MPI_Gather(&mine, 1, MPI_INT, rc, 1, MPI_INT, 0, comm);
    int total = 0;
    if (rank == 0)
        for (int r = 0; r < size; r++) dp[r] = total, total += rc[r];
    *all = rank == 0 ? malloc(sizeof(int64_t) * (size_t)(total + 1)) : NULL;
    MPI_Gatherv(v, mine, MPI_INT64_T, *all, rc, dp, MPI_INT64_T, 0, comm);
    free(rc), free(dp);
    return total;
}

#endif
