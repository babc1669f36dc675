/* io/read.c: what every kind's collective sharded reader shares (see
 * io/kind.h): this rank's plan, the collective row reads, and the checks of
 * the values where they enter (time stamps, value limits). */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/timer.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"
#include "io/shard.h"

static int comm_rank(MPI_Comm comm) {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
}

void gt_io_plan_make(gt_io_plan *p, const int64_t *off, int n_items, MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int64_t *w = GT_MALLOC(sizeof(int64_t) * (size_t)n_items);
    for (int i = 0; i < n_items; i++) w[i] = off[i + 1] - off[i];
    p->owner = GT_MALLOC(sizeof(int) * (size_t)n_items);
    gt_shard_assign(w, n_items, size, p->owner);
    int64_t *load = GT_MALLOC(sizeof(int64_t) * (size_t)size);
    p->imbalance = gt_shard_imbalance(w, p->owner, n_items, size, load);
    free(load);
    free(w);
    p->local = GT_MALLOC(sizeof(int32_t) * (size_t)n_items);
    p->n_local = 0;
    p->n_rows = 0;
    for (int i = 0; i < n_items; i++)
        if (p->owner[i] == rank) {
            p->local[p->n_local++] = i;
            p->n_rows += off[i + 1] - off[i];
        }
    p->runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)n_items);
    p->n_runs = gt_item_runs(off, p->owner, n_items, rank, p->runs);
}
void gt_io_plan_free(gt_io_plan *p) {
    free(p->owner);
    free(p->local);
    free(p->runs);
}

int64_t *gt_io_plan_offsets(const gt_io_plan *p, const int64_t *off) {
    int64_t *o = GT_MALLOC(sizeof(int64_t) * (size_t)(p->n_local + 1));
    o[0] = 0;
    for (int k = 0; k < p->n_local; k++) o[k + 1] = o[k] + off[p->local[k] + 1] - off[p->local[k]];
    return o;
}

void *gt_io_alloc_rows(int64_t n_rows, size_t row_bytes) {
    return GT_MALLOC((size_t)(n_rows > 0 ? n_rows : 1) * row_bytes);
}

void gt_io_read_rows(hid_t f, const char *name, hid_t mem_type, const gt_row_run *runs, int n_runs, void *buf,
                     hid_t dxpl, gt_read_stats *st, size_t row_bytes, int64_t n_rows) {
    hid_t ds = H5_CHECK(H5Dopen2(f, name, H5P_DEFAULT));
    double t0 = gt_now();
    gt_h5_read_runs(ds, mem_type, runs, n_runs, buf, dxpl);
    st->read_s += gt_now() - t0;
    st->n_bytes += (int64_t)row_bytes * n_rows;
    H5Dclose(ds);
}

/* "2013-04-01T00:00:00Z (1364774400000 ms)", or just the ms when out of any calendar */
static void ms_text(int64_t ms, char *buf, size_t n) {
    time_t s = (time_t)(ms / 1000 - (ms % 1000 < 0));
    struct tm tm;
    char iso[40] = "";
    if (ms > INT64_MIN / 2 && ms < INT64_MAX / 2 && gmtime_r(&s, &tm) && tm.tm_year > -1900 && tm.tm_year < 100000)
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    snprintf(buf, n, "%s(%lld ms)", iso, (long long)ms);
}

void gt_io_check_times(const gt_io_local *L, const char *dset, const int64_t *ts, const int64_t *loff) {
    const char *path = L->path, *what = L->item;
    const int32_t *index = L->index;
    const int64_t *id = L->id;
    const int n = L->n;
    MPI_Comm comm = L->comm;
    char msg[GT_IO_ERR_LEN] = "";
    struct {
        int item, rank;
    } mine = {INT_MAX, comm_rank(comm)}, first;
    for (int k = 0; k < n && mine.item == INT_MAX; k++) {
        for (int64_t r = loff[k]; r < loff[k + 1]; r++) {
            int64_t t = ts[r];
            char a[64], b[64];
            if (t < GT_IO_TS_MIN_MS || t >= GT_IO_TS_MAX_MS) {
                ms_text(t, a, sizeof a);
                snprintf(msg, sizeof msg,
                         "%s: %s: %s %d (id %lld), row %lld of its rows: time stamp %s outside "
                         "1990-01-01..2100-01-01 (ms since the Unix epoch expected)",
                         path, dset, what, index[k], (long long)id[k], (long long)(r - loff[k]), a);
            } else if (r > loff[k] && t <= ts[r - 1]) {
                ms_text(ts[r - 1], a, sizeof a);
                ms_text(t, b, sizeof b);
                snprintf(msg, sizeof msg,
                         "%s: %s: %s %d (id %lld), row %lld of its rows: time stamps not increasing (%s then %s); "
                         "'gridtrain inspect' counts them (ts_back)",
                         path, dset, what, index[k], (long long)id[k], (long long)(r - loff[k]), a, b);
            } else {
                continue;
            }
            mine.item = index[k];
            break;
        }
    }
    MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, comm));
    if (first.item == INT_MAX) return;
    MPI_CHECK(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first.rank, comm));
    msg[sizeof msg - 1] = 0;
    gt_io_fail(comm, GT_EXIT_DATA, msg);
}

void gt_io_check_range(const gt_io_local *L, const char *dset, const char *unit, const char *key, double limit,
                       float *x, int64_t cols, const int64_t *loff) {
    if (!(limit > 0)) return;
    const char *path = L->path, *what = L->item;
    const int32_t *index = L->index;
    const int64_t *id = L->id;
    const int n = L->n;
    MPI_Comm comm = L->comm;
    int64_t count = 0;
    char msg[GT_IO_ERR_LEN] = "";
    struct {
        int item, rank;
    } mine = {INT_MAX, comm_rank(comm)}, first;
    for (int k = 0; k < n; k++)
        for (int64_t i = loff[k] * cols; i < loff[k + 1] * cols; i++) {
            float v = x[i];
            if (!isfinite(v) || fabs((double)v) <= limit) continue;
            if (count++ == 0) {
                mine.item = index[k];
                if (cols > 1)
                    snprintf(msg, sizeof msg, "%s %d (id %lld), its row %lld, column %lld: %g%s", what, index[k],
                             (long long)id[k], (long long)(i / cols - loff[k]), (long long)(i % cols), (double)v, unit);
                else
                    snprintf(msg, sizeof msg, "%s %d (id %lld), its row %lld: %g%s", what, index[k], (long long)id[k],
                             (long long)(i - loff[k]), (double)v, unit);
            }
            x[i] = NAN;
        }
    int64_t total = count;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM, comm));
    if (total == 0) return;
    MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, comm));
    MPI_CHECK(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first.rank, comm));
    msg[sizeof msg - 1] = 0;
    if (comm_rank(comm) == 0) {
        fflush(stdout);
        fprintf(stderr,
                "gridtrain: warning: %s: %s: %lld value%s beyond +-%g%s are not measurements and are treated as "
                "missing (first: %s); %s sets the limit\n",
                path, dset, (long long)total, total == 1 ? "" : "s", limit, unit, msg, key);
        fflush(stderr);
    }
}
