/* io/bench.c: collective read rate vs plain pread of the same file (see bench.h). */
#define _GNU_SOURCE
#include "io/bench.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/timer.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"
#include "io/shard.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t data_bytes, storage, file_bytes;
} bench_sizes;

/* Rank 0: the rates of reps timings (sorted here) of the collective read
 * (t_h5) and of the plain pread (t_plain). */
static void print_rates(FILE *out, const char *path, const char *kind, const char *names_text, int size, int reps,
                        double *t_h5, double *t_plain, const bench_sizes *z) {
    const int64_t data_bytes = z->data_bytes, storage = z->storage, file_bytes = z->file_bytes;
    qsort(t_h5, (size_t)reps, sizeof(double), cmp_d);
    qsort(t_plain, (size_t)reps, sizeof(double), cmp_d);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    double h_best = data_bytes / gib / t_h5[0], h_med = data_bytes / gib / t_h5[reps / 2];
    double p_best = file_bytes / gib / t_plain[0], p_med = file_bytes / gib / t_plain[reps / 2];
    fprintf(out, "bench read %s: kind %s, %d rank%s, %d rep%s, read mode %s\n", path, kind,
            size, size == 1 ? "" : "s", reps, reps == 1 ? "" : "s",
            gt_h5_read_individual() ? "collective HDF5 / individual MPI-IO" : "collective HDF5 / collective MPI-IO");
    fprintf(out, "datasets %s: %.3f GiB of data, %.3f GiB stored (ratio %.2f), file %.3f GiB\n", names_text,
            data_bytes / gib, storage / gib, storage > 0 ? (double)data_bytes / storage : 0.0,
            file_bytes / gib);
    fprintf(out, "hdf5 collective read: best %.2f GiB/s  median %.2f GiB/s  (data bytes / slowest rank)\n", h_best, h_med);
    fprintf(out, "plain pread of file : best %.2f GiB/s  median %.2f GiB/s  (file bytes / slowest rank)\n", p_best, p_med);
    fprintf(out, "ratio hdf5/plain    : best %.3f  median %.3f\n", h_best / p_best, h_med / p_med);
    fflush(out);
}

int gt_io_bench_read(const char *path, int reps, MPI_Comm comm, FILE *out) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    GT_CHECK(reps >= 1, GT_EXIT_USAGE, "reps must be >= 1 (got %d)", reps);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    /* the kind's row-indexed datasets (its row's series) */
    const gt_io_kind_i *K = gt_io_kind_get(ix.kind);
    enum { MAX_SERIES = 8 };
    const int n_ser = K->n_series < MAX_SERIES ? K->n_series : MAX_SERIES;
    const char *names[MAX_SERIES];
    hid_t types[MAX_SERIES];
    size_t row_bytes[MAX_SERIES];
    char names_text[512] = "";
    for (int k = 0; k < n_ser; k++) {
        names[k] = K->series[k].name;
        types[k] = K->series[k].mem_type();
        row_bytes[k] = K->series[k].elem_bytes * (K->series[k].per_col ? (size_t)ix.n_cols : 1);
        size_t at = strlen(names_text);
        snprintf(names_text + at, sizeof names_text - at, "%s%s", k ? " " : "", names[k]);
    }

    int64_t *w = GT_MALLOC(sizeof(int64_t) * (size_t)ix.n_items);
    for (int i = 0; i < ix.n_items; i++) w[i] = ix.row_offset[i + 1] - ix.row_offset[i];
    int *owner = GT_MALLOC(sizeof(int) * (size_t)ix.n_items);
    gt_shard_assign(w, ix.n_items, size, owner);
    gt_row_run *runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)ix.n_items);
    int n_runs = gt_item_runs(ix.row_offset, owner, ix.n_items, rank, runs);
    int64_t my_rows = 0;
    for (int i = 0; i < n_runs; i++) my_rows += runs[i].count;

    hid_t ds[MAX_SERIES];
    void *buf[MAX_SERIES];
    int64_t my_bytes = 0, storage = 0;
    for (int k = 0; k < n_ser; k++) {
        ds[k] = H5_CHECK(H5Dopen2(f, names[k], H5P_DEFAULT));
        buf[k] = GT_MALLOC((size_t)(my_rows > 0 ? my_rows : 1) * row_bytes[k]);
        memset(buf[k], 0, (size_t)(my_rows > 0 ? my_rows : 1) * row_bytes[k]); /* fault the pages in */
        my_bytes += my_rows * (int64_t)row_bytes[k];
        storage += (int64_t)H5Dget_storage_size(ds[k]);
    }
    int64_t data_bytes = 0;
    MPI_CHECK(MPI_Allreduce(&my_bytes, &data_bytes, 1, MPI_INT64_T, MPI_SUM, comm));
    struct stat sb;
    GT_CHECK(stat(path, &sb) == 0, GT_EXIT_DATA, "%s: cannot stat", path);
    const int64_t file_bytes = sb.st_size;
    const int64_t p0 = file_bytes * rank / size, p1 = file_bytes * (rank + 1) / size;
    char *pbuf = GT_MALLOC((size_t)(p1 - p0 > 0 ? p1 - p0 : 1));
    memset(pbuf, 0, (size_t)(p1 - p0 > 0 ? p1 - p0 : 1));
    int fd = open(path, O_RDONLY);
    GT_CHECK(fd >= 0, GT_EXIT_DATA, "%s: cannot open for reading", path);

    hid_t dxpl = gt_h5_dxpl(1);
    double *t_h5 = GT_MALLOC(sizeof(double) * (size_t)reps), *t_plain = GT_MALLOC(sizeof(double) * (size_t)reps);
    for (int rep = -1; rep < reps; rep++) { /* rep -1 warms the cache */
        MPI_CHECK(MPI_Barrier(comm));
        double t0 = gt_now();
        for (int k = 0; k < n_ser; k++) gt_h5_read_runs(ds[k], types[k], runs, n_runs, buf[k], dxpl);
        double dt = gt_now() - t0, mx = 0;
        MPI_CHECK(MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, comm));
        MPI_CHECK(MPI_Barrier(comm));
        t0 = gt_now();
        for (int64_t p = p0; p < p1;) {
            size_t n = (size_t)(p1 - p < (16 << 20) ? p1 - p : (16 << 20));
            ssize_t got = pread(fd, pbuf + (p - p0), n, p);
            GT_CHECK(got > 0, GT_EXIT_DATA, "%s: read failed at byte %lld", path, (long long)p);
            p += got;
        }
        double dp = gt_now() - t0, mp = 0;
        MPI_CHECK(MPI_Allreduce(&dp, &mp, 1, MPI_DOUBLE, MPI_MAX, comm));
        if (rep >= 0) t_h5[rep] = mx, t_plain[rep] = mp;
    }
    close(fd);
    H5Pclose(dxpl);
    if (rank == 0) {
        const bench_sizes z = {data_bytes, storage, file_bytes};
        print_rates(out, path, gt_file_kind_name(ix.kind), names_text, size, reps, t_h5, t_plain, &z);
    }
    for (int k = 0; k < n_ser; k++) {
        H5Dclose(ds[k]);
        free(buf[k]);
    }
    free(pbuf); free(t_h5); free(t_plain); free(w); free(owner); free(runs);
    gt_file_index_free(&ix);
    H5_CHECK(H5Fclose(f));
    return 0;
}
