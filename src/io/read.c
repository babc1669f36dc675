/* io/read.c: collective sharded NILM / PdM readers (see read.h). */
#define _GNU_SOURCE
#include "io/read.h"

#include <stdio.h>
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
#include "io/shard.h"

static int comm_rank(MPI_Comm comm) {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
}

/* Plan shared by both kinds: owner of every item, this rank's items and runs. */
typedef struct {
    int *owner;       /* [n_items] */
    int n_local;
    int32_t *local;   /* [n_local] global item indices, ascending */
    gt_row_run *runs; /* [n_runs] */
    int n_runs;
    int64_t n_rows;   /* local rows */
    double imbalance;
} plan;

static void plan_make(plan *p, const int64_t *off, int n_items, MPI_Comm comm) {
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
static void plan_free(plan *p) {
    free(p->owner);
    free(p->local);
    free(p->runs);
}

static hid_t open_or_fail(const char *path, MPI_Comm comm, gt_file_kind kind, gt_file_index *ix) {
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, kind, ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    return f;
}

/* Collective read of rows `runs` of dataset `name` into buf (n_rows x n_cols). */
static void read_rows(hid_t f, const char *name, hid_t mem_type, const gt_row_run *runs, int n_runs,
                      void *buf, hid_t dxpl, gt_read_stats *st, size_t row_bytes, int64_t n_rows) {
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

/* Collective. Time stamps of each local item ts[loff[k], loff[k+1]) lie in
 * [GT_IO_TS_MIN_MS, GT_IO_TS_MAX_MS) and strictly increase (the windows, the
 * time features, the splits and the evaluation's durations all assume it).
 * The offender of the lowest file index over all ranks ends the job: one line
 * naming the file, the dataset, the item and the row, exit 3. */
static void check_times(const char *path, const char *dset, const char *what, const int64_t *ts,
                        const int64_t *loff, const int32_t *index, const int64_t *id, int n, MPI_Comm comm) {
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

static double g_power_limit_w = GT_READ_POWER_LIMIT_W, g_signal_limit = GT_READ_SIGNAL_LIMIT;
void gt_read_set_value_limits(double power_limit_w, double signal_limit) {
    g_power_limit_w = power_limit_w;
    g_signal_limit = signal_limit;
}

/* Collective. Values of x[loff[k]*cols, loff[k+1]*cols) beyond +-limit become
 * NaN; rank 0 warns once with the total and the first (lowest file index)
 * offender. */
static void check_range(const char *path, const char *dset, const char *what, const char *unit, const char *key,
                        double limit, float *x, int64_t cols, const int64_t *loff, const int32_t *index,
                        const int64_t *id, int n, MPI_Comm comm) {
    if (!(limit > 0)) return;
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

static void *alloc_rows(int64_t n_rows, size_t row_bytes) {
    return GT_MALLOC((size_t)(n_rows > 0 ? n_rows : 1) * row_bytes);
}

gt_nilm_shard *gt_nilm_shard_read(const char *path, MPI_Comm comm) {
    gt_file_index ix;
    hid_t f = open_or_fail(path, comm, GT_KIND_NILM, &ix);
    gt_nilm_shard *s = GT_CALLOC(1, sizeof(gt_nilm_shard));
    const int H = ix.n_items, A = ix.n_cols;
    s->n_households_total = H;
    s->n_appliances = A;

    /* small tables: every rank reads them whole */
    s->meta = GT_CALLOC((size_t)A, sizeof(gt_io_appliance));
    {
        char *names = GT_CALLOC((size_t)A, GT_FORMAT_NAME_LEN);
        float *v = GT_MALLOC(sizeof(float) * 3 * (size_t)A);
        hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN);
        gt_h5_read_all(f, "/appliance_meta/name", st, names);
        H5Tclose(st);
        gt_h5_read_all(f, "/appliance_meta/on_power_w", H5T_NATIVE_FLOAT, v);
        gt_h5_read_all(f, "/appliance_meta/on_duration_s", H5T_NATIVE_FLOAT, v + A);
        gt_h5_read_all(f, "/appliance_meta/max_power_w", H5T_NATIVE_FLOAT, v + 2 * A);
        for (int a = 0; a < A; a++) {
            memcpy(s->meta[a].name, names + (size_t)a * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN - 1);
            s->meta[a].on_power_w = v[a];
            s->meta[a].on_duration_s = v[A + a];
            s->meta[a].max_power_w = v[2 * A + a];
        }
        free(names);
        free(v);
    }
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    double *period = GT_MALLOC(sizeof(double) * (size_t)H);
    uint8_t *owns = ix.has_owns ? GT_MALLOC((size_t)H * (size_t)A) : NULL;
    gt_h5_read_all(f, "/households/id", H5T_NATIVE_INT64, ids);
    gt_h5_read_all(f, "/households/period_s", H5T_NATIVE_DOUBLE, period);
    if (owns) gt_h5_read_all(f, "/households/owns", H5T_NATIVE_UINT8, owns);

    plan p;
    plan_make(&p, ix.row_offset, H, comm);
    const int n = p.n_local;
    s->n_households = n;
    s->index = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->id = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->period_s = GT_MALLOC(sizeof(double) * (size_t)(n + 1));
    s->row_offset = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->owns = owns ? GT_MALLOC((size_t)(n + 1) * (size_t)A) : NULL;
    s->row_offset[0] = 0;
    for (int k = 0; k < n; k++) {
        int h = p.local[k];
        s->index[k] = h;
        s->id[k] = ids[h];
        s->period_s[k] = period[h];
        s->row_offset[k + 1] = s->row_offset[k] + ix.row_offset[h + 1] - ix.row_offset[h];
        if (owns) memcpy(s->owns + (size_t)k * A, owns + (size_t)h * A, (size_t)A);
    }
    free(ids);
    free(period);
    free(owns);
    s->n_rows = p.n_rows;
    s->stats.imbalance = p.imbalance;

    /* the big arrays: one collective read per dataset over this rank's runs */
    hid_t dxpl = gt_h5_dxpl(1);
    const int64_t R = p.n_rows;
    s->timestamps = alloc_rows(R, 8);
    s->aggregate = alloc_rows(R, 4);
    s->appliances = alloc_rows(R, 4 * (size_t)A);
    read_rows(f, "/timestamps", H5T_NATIVE_INT64, p.runs, p.n_runs, s->timestamps, dxpl, &s->stats, 8, R);
    check_times(path, "/timestamps", "household", s->timestamps, s->row_offset, s->index, s->id, n, comm);
    read_rows(f, "/aggregate", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->aggregate, dxpl, &s->stats, 4, R);
    read_rows(f, "/appliances", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->appliances, dxpl, &s->stats, 4 * (size_t)A, R);
    check_range(path, "/aggregate", "household", " W", "data.power_limit_w", g_power_limit_w, s->aggregate, 1,
                s->row_offset, s->index, s->id, n, comm);
    check_range(path, "/appliances", "household", " W", "data.power_limit_w", g_power_limit_w, s->appliances, A,
                s->row_offset, s->index, s->id, n, comm);
    if (ix.has_faults) {
        s->fault_flags = alloc_rows(R, 1);
        read_rows(f, "/fault_flags", H5T_NATIVE_UINT8, p.runs, p.n_runs, s->fault_flags, dxpl, &s->stats, 1, R);
    }
    if (ix.has_lowres) {
        s->has_lowres = 1;
        s->lowres_period_s = ix.lowres_period_s;
        s->lowres_offset = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
        s->lowres_offset[0] = 0;
        for (int k = 0; k < n; k++) {
            int h = p.local[k];
            s->lowres_offset[k + 1] = s->lowres_offset[k] + ix.lowres_offset[h + 1] - ix.lowres_offset[h];
        }
        const int64_t M = s->lowres_offset[n];
        s->n_lowres_rows = M;
        gt_row_run *lr = GT_MALLOC(sizeof(gt_row_run) * (size_t)(H > 0 ? H : 1));
        int n_lr = gt_item_runs(ix.lowres_offset, p.owner, H, comm_rank(comm), lr);
        s->lowres_timestamps = alloc_rows(M, 8);
        s->lowres_aggregate = alloc_rows(M, 4);
        s->lowres_appliances = alloc_rows(M, 4 * (size_t)A);
        read_rows(f, "/lowres/timestamps", H5T_NATIVE_INT64, lr, n_lr, s->lowres_timestamps, dxpl, &s->stats, 8, M);
        check_times(path, "/lowres/timestamps", "household", s->lowres_timestamps, s->lowres_offset, s->index, s->id,
                    n, comm);
        read_rows(f, "/lowres/aggregate", H5T_NATIVE_FLOAT, lr, n_lr, s->lowres_aggregate, dxpl, &s->stats, 4, M);
        read_rows(f, "/lowres/appliances", H5T_NATIVE_FLOAT, lr, n_lr, s->lowres_appliances, dxpl, &s->stats, 4 * (size_t)A, M);
        check_range(path, "/lowres/aggregate", "household", " W", "data.power_limit_w", g_power_limit_w,
                    s->lowres_aggregate, 1, s->lowres_offset, s->index, s->id, n, comm);
        check_range(path, "/lowres/appliances", "household", " W", "data.power_limit_w", g_power_limit_w,
                    s->lowres_appliances, A, s->lowres_offset, s->index, s->id, n, comm);
        free(lr);
    }
    H5Pclose(dxpl);
    plan_free(&p);
    gt_file_index_free(&ix);
    H5_CHECK(H5Fclose(f));
    return s;
}

void gt_nilm_shard_free(gt_nilm_shard *s) {
    if (!s) return;
    free(s->meta); free(s->index); free(s->id); free(s->period_s); free(s->owns); free(s->row_offset);
    free(s->timestamps); free(s->aggregate); free(s->appliances); free(s->fault_flags);
    free(s->lowres_offset); free(s->lowres_timestamps); free(s->lowres_aggregate); free(s->lowres_appliances);
    free(s);
}

gt_pdm_shard *gt_pdm_shard_read(const char *path, MPI_Comm comm) {
    gt_file_index ix;
    hid_t f = open_or_fail(path, comm, GT_KIND_PDM, &ix);
    gt_pdm_shard *s = GT_CALLOC(1, sizeof(gt_pdm_shard));
    const int T = ix.n_items, C = ix.n_cols;
    s->n_turbines_total = T;
    s->n_channels = C;
    s->channels = GT_CALLOC((size_t)C, sizeof(gt_io_channel));
    {
        char *names = GT_CALLOC((size_t)C, GT_FORMAT_NAME_LEN), *units = GT_CALLOC((size_t)C, sizeof s->channels[0].unit);
        hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN), su = gt_h5_str_type(sizeof s->channels[0].unit);
        gt_h5_read_all(f, "/channels/name", st, names);
        gt_h5_read_all(f, "/channels/unit", su, units);
        H5Tclose(st);
        H5Tclose(su);
        for (int c = 0; c < C; c++) {
            memcpy(s->channels[c].name, names + (size_t)c * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN - 1);
            memcpy(s->channels[c].unit, units + (size_t)c * sizeof s->channels[0].unit, sizeof s->channels[0].unit - 1);
        }
        free(names);
        free(units);
        if (H5Lexists(f, "/channels/description", H5P_DEFAULT) > 0) { /* optional (schema-checked) */
            char *desc = GT_CALLOC((size_t)C, GT_FORMAT_DESC_LEN);
            hid_t sd = gt_h5_str_type(GT_FORMAT_DESC_LEN);
            gt_h5_read_all(f, "/channels/description", sd, desc);
            H5Tclose(sd);
            for (int c = 0; c < C; c++)
                memcpy(s->channels[c].desc, desc + (size_t)c * GT_FORMAT_DESC_LEN, GT_FORMAT_DESC_LEN - 1);
            free(desc);
        }
    }
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    int32_t *farm = GT_MALLOC(sizeof(int32_t) * (size_t)T), *mt = GT_MALLOC(sizeof(int32_t) * (size_t)T);
    double *rate = GT_MALLOC(sizeof(double) * (size_t)T);
    gt_h5_read_all(f, "/turbines/id", H5T_NATIVE_INT64, ids);
    gt_h5_read_all(f, "/turbines/farm", H5T_NATIVE_INT32, farm);
    gt_h5_read_all(f, "/turbines/machine_type", H5T_NATIVE_INT32, mt);
    gt_h5_read_all(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, rate);

    plan p;
    plan_make(&p, ix.row_offset, T, comm);
    const int n = p.n_local;
    s->n_turbines = n;
    s->index = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->id = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->farm = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->machine_type = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->rate_hz = GT_MALLOC(sizeof(double) * (size_t)(n + 1));
    s->row_offset = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    int *local_of = GT_MALLOC(sizeof(int) * (size_t)T); /* global -> local index or -1 */
    for (int t = 0; t < T; t++) local_of[t] = -1;
    s->row_offset[0] = 0;
    for (int k = 0; k < n; k++) {
        int t = p.local[k];
        local_of[t] = k;
        s->index[k] = t;
        s->id[k] = ids[t];
        s->farm[k] = farm[t];
        s->machine_type[k] = mt[t];
        s->rate_hz[k] = rate[t];
        s->row_offset[k + 1] = s->row_offset[k] + ix.row_offset[t + 1] - ix.row_offset[t];
    }
    free(ids); free(farm); free(mt); free(rate);
    s->n_rows = p.n_rows;
    s->stats.imbalance = p.imbalance;

    /* segment and event tables: read whole, keep the local turbines' rows */
    for (int which = 0; which < 2; which++) {
        const char *g = which == 0 ? "segments" : "events";
        int64_t m = which == 0 ? ix.n_segments : ix.n_events;
        size_t mm = (size_t)(m > 0 ? m : 1);
        int32_t *tu = GT_MALLOC(mm * 4), *code = GT_MALLOC(mm * 4);
        int64_t *st = GT_MALLOC(mm * 8), *en = GT_MALLOC(mm * 8);
        char name[64];
        snprintf(name, sizeof name, "/%s/turbine", g); gt_h5_read_all(f, name, H5T_NATIVE_INT32, tu);
        snprintf(name, sizeof name, "/%s/start_row", g); gt_h5_read_all(f, name, H5T_NATIVE_INT64, st);
        snprintf(name, sizeof name, "/%s/end_row", g); gt_h5_read_all(f, name, H5T_NATIVE_INT64, en);
        snprintf(name, sizeof name, "/%s/%s", g, which == 0 ? "condition" : "kind");
        gt_h5_read_all(f, name, H5T_NATIVE_INT32, code);
        int cnt = 0;
        for (int64_t i = 0; i < m; i++) cnt += local_of[tu[i]] >= 0;
        int32_t *lt = GT_MALLOC(sizeof(int32_t) * (size_t)(cnt + 1));
        if (which == 0) s->segments = GT_MALLOC(sizeof(gt_io_span) * (size_t)(cnt + 1));
        else s->events = GT_MALLOC(sizeof(gt_io_span) * (size_t)(cnt + 1));
        int j = 0;
        for (int64_t i = 0; i < m; i++) {
            if (local_of[tu[i]] < 0) continue;
            lt[j] = local_of[tu[i]];
            if (which == 0) s->segments[j] = (gt_io_span){st[i], en[i], code[i]};
            else s->events[j] = (gt_io_span){st[i], en[i], code[i]};
            j++;
        }
        if (which == 0) { s->n_segments = cnt; s->segment_turbine = lt; }
        else { s->n_events = cnt; s->event_turbine = lt; }
        free(tu); free(code); free(st); free(en);
    }
    free(local_of);

    hid_t dxpl = gt_h5_dxpl(1);
    const int64_t R = p.n_rows;
    s->timestamps = alloc_rows(R, 8);
    s->signals = alloc_rows(R, 4 * (size_t)C);
    s->labels = alloc_rows(R, 1);
    read_rows(f, "/timestamps", H5T_NATIVE_INT64, p.runs, p.n_runs, s->timestamps, dxpl, &s->stats, 8, R);
    check_times(path, "/timestamps", "turbine", s->timestamps, s->row_offset, s->index, s->id, n, comm);
    read_rows(f, "/signals", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->signals, dxpl, &s->stats, 4 * (size_t)C, R);
    check_range(path, "/signals", "turbine", "", "data.signal_limit", g_signal_limit, s->signals, C, s->row_offset,
                s->index, s->id, n, comm);
    read_rows(f, "/labels", H5T_NATIVE_UINT8, p.runs, p.n_runs, s->labels, dxpl, &s->stats, 1, R);
    H5Pclose(dxpl);
    plan_free(&p);
    gt_file_index_free(&ix);
    H5_CHECK(H5Fclose(f));
    return s;
}

void gt_pdm_shard_free(gt_pdm_shard *s) {
    if (!s) return;
    free(s->channels); free(s->index); free(s->id); free(s->farm); free(s->machine_type); free(s->rate_hz);
    free(s->row_offset); free(s->timestamps); free(s->signals); free(s->labels);
    free(s->segments); free(s->segment_turbine); free(s->events); free(s->event_turbine);
    free(s);
}

int64_t *gt_care_events_read(const char *path, MPI_Comm comm, int64_t *n) {
    static const char *const cols[GT_CARE_EVENT_K] = {"turbine",         "event_id",      "label",
                                                      "pred_start_row",  "pred_end_row",  "event_start_row",
                                                      "event_end_row",   "train_start_row", "train_end_row"};
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int64_t k = 0;
    int64_t *rows = NULL;
    if (rank == 0) { /* a small table: rank 0 reads it serially, everyone gets a copy */
        gt_h5_quiet();
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f >= 0 && H5Lexists(f, "care_events", H5P_DEFAULT) > 0 &&
            H5Lexists(f, "/care_events/turbine", H5P_DEFAULT) > 0) {
            hid_t ds = H5Dopen2(f, "/care_events/turbine", H5P_DEFAULT), sp = H5Dget_space(ds);
            k = (int64_t)H5Sget_simple_extent_npoints(sp);
            H5Sclose(sp);
            H5Dclose(ds);
            rows = GT_MALLOC(sizeof(int64_t) * GT_CARE_EVENT_K * (size_t)(k > 0 ? k : 1));
            int64_t *col = GT_MALLOC(sizeof(int64_t) * (size_t)(k > 0 ? k : 1));
            char name[64];
            for (int c = 0; c < GT_CARE_EVENT_K; c++) {
                snprintf(name, sizeof name, "/care_events/%s", cols[c]);
                if (c >= 7 && H5Lexists(f, name, H5P_DEFAULT) <= 0) { /* the training part: optional */
                    for (int64_t i = 0; i < k; i++) rows[GT_CARE_EVENT_K * i + c] = -1;
                    continue;
                }
                gt_h5_read_all(f, name, H5T_NATIVE_INT64, col);
                for (int64_t i = 0; i < k; i++) rows[GT_CARE_EVENT_K * i + c] = col[i];
            }
            free(col);
        }
        if (f >= 0) H5Fclose(f);
    }
    /* the ids checked as gt_io_open checks them: a crafted table named one event twice */
    char why[512] = "";
    if (rank == 0 && k > 0) {
        int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)k);
        for (int64_t i = 0; i < k; i++) ids[i] = rows[GT_CARE_EVENT_K * i + 1];
        char w[256];
        if (gt_io_care_event_ids_check(ids, k, w, sizeof w)) snprintf(why, sizeof why, "%s: /care_events/event_id: %s", path, w);
        free(ids);
    }
    int bad = why[0] != 0;
    MPI_CHECK(MPI_Bcast(&bad, 1, MPI_INT, 0, comm));
    if (bad) gt_io_fail(comm, GT_EXIT_DATA, why);
    MPI_CHECK(MPI_Bcast(&k, 1, MPI_INT64_T, 0, comm));
    if (k <= 0) {
        free(rows);
        *n = 0;
        return NULL;
    }
    if (rank != 0) rows = GT_MALLOC(sizeof(int64_t) * GT_CARE_EVENT_K * (size_t)k);
    MPI_CHECK(MPI_Bcast(rows, (int)(GT_CARE_EVENT_K * k), MPI_INT64_T, 0, comm));
    *n = k;
    return rows;
}

char *gt_legend_read(const char *path, const char *what, int *n) {
    *n = 0;
    char name[64];
    snprintf(name, sizeof name, "/legend/%s", what);
    gt_h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return NULL;
    char *names = NULL;
    if (H5Lexists(f, "legend", H5P_DEFAULT) > 0 && H5Lexists(f, name, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d >= 0 ? H5Dget_space(d) : -1;
        hssize_t m = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
        if (m > 0 && m <= GT_IO_MAX_LEGEND) {
            names = GT_CALLOC((size_t)m, GT_FORMAT_NAME_LEN);
            hid_t st = H5Tcopy(H5T_C_S1);
            H5Tset_size(st, GT_FORMAT_NAME_LEN);
            H5Tset_strpad(st, H5T_STR_NULLTERM);
            if (H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, names) >= 0) {
                for (hssize_t k = 0; k < m; k++) names[(size_t)k * GT_FORMAT_NAME_LEN + GT_FORMAT_NAME_LEN - 1] = 0;
                *n = (int)m;
            } else {
                free(names);
                names = NULL;
            }
            H5Tclose(st);
        }
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
    }
    H5Fclose(f);
    return names;
}

int64_t *gt_care_event_ids_read(const char *path, int64_t *n, char *err, size_t err_bytes) {
    *n = 0;
    gt_file_index ix;
    hid_t f = gt_io_open(path, MPI_COMM_SELF, GT_KIND_PDM, &ix, err, err_bytes); /* the schema, ids included */
    if (f < 0) return NULL;
    int64_t k = ix.n_care_events, *ids = NULL;
    if (k > 0) {
        ids = GT_MALLOC(sizeof(int64_t) * (size_t)k);
        gt_h5_read_all(f, "/care_events/event_id", H5T_NATIVE_INT64, ids);
    }
    gt_file_index_free(&ix);
    H5Fclose(f);
    *n = k;
    return ids;
}
