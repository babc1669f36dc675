/* io/kind_nilm.c: the NILM (household) file kind, its row of io/kind.h: the
 * schema checks, the shard reader, the writer and its part of `inspect`
 * (see kind_nilm.h and docs/data-format.md). Uses io/'s public headers only. */
#define _GNU_SOURCE
#include "io/kind_nilm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/timer.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/inspect.h"
#include "io/kind.h"
#include "io/shard.h"

/* ------------------------------------------------------------- schema -- */

static gt_nilm_index *nx_of(const gt_file_index *ix) { return ix->kind_ix; }

static void nilm_index_free(void *kind_ix) {
    gt_nilm_index *nx = kind_ix;
    if (nx) free(nx->lowres_offset);
    free(nx);
}

/* The optional /lowres group: its datasets, period and offsets. */
static int validate_lowres(gt_io_check *v, hid_t f, gt_file_index *ix, int64_t H, int64_t A) {
    int64_t M = -1, H1 = H + 1;
    if (gt_io_check_ds1(v, f, "/lowres/row_offset", GT_IO_I64, &H1) ||
        gt_io_check_ds1(v, f, "/lowres/timestamps", GT_IO_I64, &M) ||
        gt_io_check_ds1(v, f, "/lowres/aggregate", GT_IO_F32, &M) ||
        gt_io_check_ds(v, f, "/lowres/appliances", GT_IO_F32, 2, &M, &A, GT_IO_MAX_ROWS))
        return -1;
    hid_t g = H5Gopen2(f, "/lowres", H5P_DEFAULT);
    int e = g >= 0 ? gt_h5_attr_read_f64(g, "period_s", &nx_of(ix)->lowres_period_s) : -1;
    if (g >= 0) H5Gclose(g);
    if (e < 0 || !isfinite(nx_of(ix)->lowres_period_s) || !(nx_of(ix)->lowres_period_s >= GT_IO_MIN_PERIOD_S) ||
        nx_of(ix)->lowres_period_s > GT_IO_MAX_PERIOD_S)
        return gt_io_check_fail(v, "/lowres: attribute period_s missing, not a number or outside [%g, %g] s",
                                GT_IO_MIN_PERIOD_S, GT_IO_MAX_PERIOD_S);
    if (M < H) return gt_io_check_fail(v, "/lowres/timestamps: %lld rows for %lld households", (long long)M, (long long)H);
    nx_of(ix)->n_lowres_rows = M;
    return gt_io_check_offsets(v, f, "/lowres/row_offset", H, M, &nx_of(ix)->lowres_offset);
}

/* /households/owns holds 0 or 1. */
static int check_flags01(gt_io_check *v, hid_t f, const char *name, int64_t n) {
    uint8_t *x = gt_io_read_small(v, f, name, H5T_NATIVE_UINT8, 1, n);
    if (!x) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (x[i] > 1) rc = gt_io_check_fail(v, "%s: element %lld is %u (0 or 1 expected)", name, (long long)i, x[i]);
    free(x);
    return rc;
}

static int nilm_validate(gt_io_check *v, hid_t f, gt_file_index *ix) {
    int64_t H = -1, H1, A = -1, N = -1;
    ix->kind_ix = GT_CALLOC(1, sizeof(gt_nilm_index));
    if (gt_io_check_ds(v, f, "/households/id", GT_IO_I64, 1, &H, NULL, GT_IO_MAX_ITEMS)) return -1;
    if (H < 1) return gt_io_check_fail(v, "/households/id: no households");
    H1 = H + 1;
    if (gt_io_check_ds1(v, f, "/households/row_offset", GT_IO_I64, &H1)) return -1;
    if (gt_io_check_ds1(v, f, "/households/period_s", GT_IO_F64, &H)) return -1;
    if (gt_io_check_ds1(v, f, "/appliance_meta/name", GT_IO_STR, &A)) return -1;
    if (A < 1) return gt_io_check_fail(v, "/appliance_meta/name: no appliances");
    if (A > GT_IO_MAX_COLS)
        return gt_io_check_fail(v, "/appliance_meta/name: %lld appliances (at most %d supported)", (long long)A,
                                GT_IO_MAX_COLS);
    if (gt_io_check_ds1(v, f, "/appliance_meta/on_power_w", GT_IO_F32, &A) ||
        gt_io_check_ds1(v, f, "/appliance_meta/on_duration_s", GT_IO_F32, &A) ||
        gt_io_check_ds1(v, f, "/appliance_meta/max_power_w", GT_IO_F32, &A))
        return -1;
    if (gt_io_check_ds1(v, f, "/timestamps", GT_IO_I64, &N) || gt_io_check_ds1(v, f, "/aggregate", GT_IO_F32, &N))
        return -1;
    if (gt_io_check_ds(v, f, "/appliances", GT_IO_F32, 2, &N, &A, GT_IO_MAX_ROWS)) return -1;
    if (N < H)
        return gt_io_check_fail(v, "/timestamps: %lld rows for %lld households (every household has at least one row)",
                                (long long)N, (long long)H);
    nx_of(ix)->has_owns = gt_io_exists(f, "/households/owns");
    if (nx_of(ix)->has_owns && gt_io_check_ds(v, f, "/households/owns", GT_IO_U8, 2, &H, &A, GT_IO_MAX_ROWS)) return -1;
    nx_of(ix)->has_faults = gt_io_exists(f, "/fault_flags");
    if (nx_of(ix)->has_faults && gt_io_check_ds1(v, f, "/fault_flags", GT_IO_U8, &N)) return -1;
    ix->n_items = (int)H;
    ix->n_cols = (int)A;
    ix->n_rows = N;
    if (gt_io_check_offsets(v, f, "/households/row_offset", H, N, &ix->row_offset)) return -1;
    if (gt_io_check_values(v, f, "/households/period_s", H, GT_IO_MIN_PERIOD_S, 0, GT_IO_MAX_PERIOD_S, " s",
                           "household") ||
        gt_io_check_values(v, f, "/appliance_meta/on_power_w", A, 0, 1, 1e7, " W", "appliance") ||
        gt_io_check_values(v, f, "/appliance_meta/on_duration_s", A, 0, 1, 1e7, " s", "appliance") ||
        gt_io_check_values(v, f, "/appliance_meta/max_power_w", A, 0, 1, 1e7, " W", "appliance") ||
        gt_io_check_ids(v, f, "/households/id", H) || gt_io_check_names(v, f, "/appliance_meta/name", A) ||
        (nx_of(ix)->has_owns && check_flags01(v, f, "/households/owns", H * A)))
        return -1;
    nx_of(ix)->has_lowres = gt_io_exists(f, "/lowres");
    return nx_of(ix)->has_lowres ? validate_lowres(v, f, ix, H, A) : 0;
}

/* ------------------------------------------------------------- reader -- */

/* /appliance_meta: every rank reads it whole. */
static gt_io_appliance *read_meta(hid_t f, int A) {
    gt_io_appliance *meta = GT_CALLOC((size_t)A, sizeof(gt_io_appliance));
    char *names = GT_CALLOC((size_t)A, GT_FORMAT_NAME_LEN);
    float *v = GT_MALLOC(sizeof(float) * 3 * (size_t)A);
    hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN);
    gt_h5_read_all(f, "/appliance_meta/name", st, names);
    H5Tclose(st);
    gt_h5_read_all(f, "/appliance_meta/on_power_w", H5T_NATIVE_FLOAT, v);
    gt_h5_read_all(f, "/appliance_meta/on_duration_s", H5T_NATIVE_FLOAT, v + A);
    gt_h5_read_all(f, "/appliance_meta/max_power_w", H5T_NATIVE_FLOAT, v + 2 * A);
    for (int a = 0; a < A; a++) {
        memcpy(meta[a].name, names + (size_t)a * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN - 1);
        meta[a].on_power_w = v[a];
        meta[a].on_duration_s = v[A + a];
        meta[a].max_power_w = v[2 * A + a];
    }
    free(names);
    free(v);
    return meta;
}

/* /households of the local households (the file's tables read whole). */
static void read_households(hid_t f, const gt_file_index *ix, const gt_io_plan *p, gt_nilm_shard *s) {
    const int H = ix->n_items, A = ix->n_cols, n = p->n_local;
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    double *period = GT_MALLOC(sizeof(double) * (size_t)H);
    uint8_t *owns = nx_of(ix)->has_owns ? GT_MALLOC((size_t)H * (size_t)A) : NULL;
    gt_h5_read_all(f, "/households/id", H5T_NATIVE_INT64, ids);
    gt_h5_read_all(f, "/households/period_s", H5T_NATIVE_DOUBLE, period);
    if (owns) gt_h5_read_all(f, "/households/owns", H5T_NATIVE_UINT8, owns);
    s->n_households = n;
    s->index = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->id = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->period_s = GT_MALLOC(sizeof(double) * (size_t)(n + 1));
    s->row_offset = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->owns = owns ? GT_MALLOC((size_t)(n + 1) * (size_t)A) : NULL;
    s->row_offset[0] = 0;
    for (int k = 0; k < n; k++) {
        int h = p->local[k];
        s->index[k] = h;
        s->id[k] = ids[h];
        s->period_s[k] = period[h];
        s->row_offset[k + 1] = s->row_offset[k] + ix->row_offset[h + 1] - ix->row_offset[h];
        if (owns) memcpy(s->owns + (size_t)k * A, owns + (size_t)h * A, (size_t)A);
    }
    free(ids);
    free(period);
    free(owns);
}

/* The optional /lowres channel of the local households. */
static void read_lowres(hid_t f, const gt_file_index *ix, const gt_io_plan *p, const gt_io_local *L,
                        const gt_read_opts *o, hid_t dxpl, gt_nilm_shard *s) {
    const int H = ix->n_items, A = ix->n_cols;
    s->has_lowres = 1;
    s->lowres_period_s = nx_of(ix)->lowres_period_s;
    s->lowres_offset = gt_io_plan_offsets(p, nx_of(ix)->lowres_offset);
    const int64_t M = s->lowres_offset[p->n_local];
    s->n_lowres_rows = M;
    gt_row_run *lr = GT_MALLOC(sizeof(gt_row_run) * (size_t)(H > 0 ? H : 1));
    int rank = 0;
    MPI_Comm_rank(L->comm, &rank);
    int n_lr = gt_item_runs(nx_of(ix)->lowres_offset, p->owner, H, rank, lr);
    s->lowres_timestamps = gt_io_alloc_rows(M, 8);
    s->lowres_aggregate = gt_io_alloc_rows(M, 4);
    s->lowres_appliances = gt_io_alloc_rows(M, 4 * (size_t)A);
    gt_io_read_rows(f, "/lowres/timestamps", H5T_NATIVE_INT64, lr, n_lr, s->lowres_timestamps, dxpl, &s->stats, 8, M);
    gt_io_check_times(L, "/lowres/timestamps", s->lowres_timestamps, s->lowres_offset);
    gt_io_read_rows(f, "/lowres/aggregate", H5T_NATIVE_FLOAT, lr, n_lr, s->lowres_aggregate, dxpl, &s->stats, 4, M);
    gt_io_read_rows(f, "/lowres/appliances", H5T_NATIVE_FLOAT, lr, n_lr, s->lowres_appliances, dxpl, &s->stats,
                    4 * (size_t)A, M);
    const char *key = gt_io_kind_nilm.limit_key;
    gt_io_check_range(L, "/lowres/aggregate", " W", key, o->value_limit, s->lowres_aggregate, 1, s->lowres_offset);
    gt_io_check_range(L, "/lowres/appliances", " W", key, o->value_limit, s->lowres_appliances, A, s->lowres_offset);
    free(lr);
}

static void *nilm_read(hid_t f, const gt_file_index *ix, const char *path, const gt_read_opts *o, MPI_Comm comm) {
    gt_nilm_shard *s = GT_CALLOC(1, sizeof(gt_nilm_shard));
    const int H = ix->n_items, A = ix->n_cols;
    s->n_households_total = H;
    s->n_appliances = A;
    s->meta = read_meta(f, A);
    gt_io_plan p;
    gt_io_plan_make(&p, ix->row_offset, H, comm);
    read_households(f, ix, &p, s);
    s->n_rows = p.n_rows;
    s->stats.imbalance = p.imbalance;
    const gt_io_local L = {path, "household", s->index, s->id, s->n_households, comm};

    /* the big arrays: one collective read per dataset over this rank's runs */
    hid_t dxpl = gt_h5_dxpl(1);
    const int64_t R = p.n_rows;
    s->timestamps = gt_io_alloc_rows(R, 8);
    s->aggregate = gt_io_alloc_rows(R, 4);
    s->appliances = gt_io_alloc_rows(R, 4 * (size_t)A);
    gt_io_read_rows(f, "/timestamps", H5T_NATIVE_INT64, p.runs, p.n_runs, s->timestamps, dxpl, &s->stats, 8, R);
    gt_io_check_times(&L, "/timestamps", s->timestamps, s->row_offset);
    gt_io_read_rows(f, "/aggregate", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->aggregate, dxpl, &s->stats, 4, R);
    gt_io_read_rows(f, "/appliances", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->appliances, dxpl, &s->stats,
                    4 * (size_t)A, R);
    const char *key = gt_io_kind_nilm.limit_key;
    gt_io_check_range(&L, "/aggregate", " W", key, o->value_limit, s->aggregate, 1, s->row_offset);
    gt_io_check_range(&L, "/appliances", " W", key, o->value_limit, s->appliances, A, s->row_offset);
    if (nx_of(ix)->has_faults) {
        s->fault_flags = gt_io_alloc_rows(R, 1);
        gt_io_read_rows(f, "/fault_flags", H5T_NATIVE_UINT8, p.runs, p.n_runs, s->fault_flags, dxpl, &s->stats, 1, R);
    }
    if (nx_of(ix)->has_lowres) read_lowres(f, ix, &p, &L, o, dxpl, s);
    H5Pclose(dxpl);
    gt_io_plan_free(&p);
    return s;
}

void gt_nilm_shard_free(gt_nilm_shard *s) {
    if (!s) return;
    free(s->meta); free(s->index); free(s->id); free(s->period_s); free(s->owns); free(s->row_offset);
    free(s->timestamps); free(s->aggregate); free(s->appliances); free(s->fault_flags);
    free(s->lowres_offset); free(s->lowres_timestamps); free(s->lowres_aggregate); free(s->lowres_appliances);
    free(s);
}
static void nilm_shard_free(void *s) { gt_nilm_shard_free(s); }

/* ------------------------------------------------------------- writer -- */

/* Sizes and offsets of every household, identical on every rank, and the
 * households' owners. */
typedef struct {
    int H, A;
    gt_nilm_item *items; /* [H] */
    uint8_t *owns;       /* [H, A] */
    int64_t *n_rows, *off, *loff, *ids; /* [H], [H+1], [H+1], [H] */
    double *period;      /* [H] */
    int lowres;
    int64_t low_ms;      /* lowres bin width */
    int64_t N, M;
    int *owner;          /* [H] */
} nilm_layout;

static void layout_make(nilm_layout *L, const gt_nilm_source *src, int n_ranks) {
    const int H = src->n_households, A = src->n_appliances;
    L->H = H;
    L->A = A;
    L->items = GT_MALLOC(sizeof(gt_nilm_item) * (size_t)H);
    L->owns = GT_CALLOC((size_t)H * (size_t)A, 1);
    L->n_rows = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    L->off = GT_MALLOC(sizeof(int64_t) * (size_t)(H + 1));
    L->loff = GT_MALLOC(sizeof(int64_t) * (size_t)(H + 1));
    L->ids = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    L->period = GT_MALLOC(sizeof(double) * (size_t)H);
    L->lowres = src->lowres_period_s > 0;
    L->low_ms = L->lowres ? llround(src->lowres_period_s * 1000.0) : 0;
    L->off[0] = L->loff[0] = 0;
    for (int h = 0; h < H; h++) {
        gt_nilm_item *it = &L->items[h];
        src->info(src->ctx, h, it, L->owns + (size_t)h * A);
        GT_CHECK(it->n_rows >= 1 && it->period_s > 0, GT_EXIT_USAGE,
                 "household %d has %lld rows at period %g s: nothing to write", h, (long long)it->n_rows,
                 it->period_s);
        L->n_rows[h] = it->n_rows;
        L->ids[h] = it->id;
        L->period[h] = it->period_s;
        L->off[h + 1] = L->off[h] + L->n_rows[h];
        int64_t last = gt_io_ts_at(0, it->period_s * 1000.0, L->n_rows[h] - 1);
        L->loff[h + 1] = L->loff[h] + (L->lowres ? last / L->low_ms + 1 : 0);
    }
    L->N = L->off[H];
    L->M = L->loff[H];
    L->owner = GT_MALLOC(sizeof(int) * (size_t)H);
    gt_shard_assign(L->n_rows, H, n_ranks, L->owner);
}
static void layout_free(nilm_layout *L) {
    free(L->items); free(L->owns); free(L->n_rows); free(L->off); free(L->loff); free(L->ids); free(L->period);
    free(L->owner);
}

/* This rank's households in batches of consecutive ones within the buffer
 * budget: batch b is local[start[b] .. start[b+1]). */
typedef struct {
    int *local, n_local;
    int *start, n_batches;
    int64_t max_rows, max_low_rows, my_rows;
    int n_rounds; /* collective write rounds (the most batches of any rank) */
} nilm_batches;

static void batches_make(nilm_batches *B, const nilm_layout *L, int rank, int64_t batch_bytes, MPI_Comm comm) {
    const int H = L->H;
    const int64_t row_bytes = 8 + 4 + 4 * (int64_t)L->A + 1;
    memset(B, 0, sizeof *B);
    B->local = GT_MALLOC(sizeof(int) * (size_t)H);
    B->start = GT_MALLOC(sizeof(int) * (size_t)(H + 1));
    int64_t cur = 0;
    for (int h = 0; h < H; h++) {
        if (L->owner[h] != rank) continue;
        if (B->n_local == 0 || (cur + L->n_rows[h]) * row_bytes > batch_bytes) {
            if (B->n_local > 0 && cur > B->max_rows) B->max_rows = cur;
            B->start[B->n_batches++] = B->n_local;
            cur = 0;
        }
        B->local[B->n_local++] = h;
        cur += L->n_rows[h];
        B->my_rows += L->n_rows[h];
    }
    if (cur > B->max_rows) B->max_rows = cur;
    B->start[B->n_batches] = B->n_local;
    for (int b = 0; b < B->n_batches; b++) {
        int64_t m = 0;
        for (int k = B->start[b]; k < B->start[b + 1]; k++) m += L->loff[B->local[k] + 1] - L->loff[B->local[k]];
        if (m > B->max_low_rows) B->max_low_rows = m;
    }
    MPI_CHECK(MPI_Allreduce(&B->n_batches, &B->n_rounds, 1, MPI_INT, MPI_MAX, comm));
}

/* The datasets of the file, in the order they are created. */
typedef struct {
    hid_t ts, agg, app, flt; /* high resolution */
    hid_t lts, lagg, lapp;   /* low resolution (or -1) */
} nilm_dsets;

/* The small tables: /households, /appliance_meta. Collective. */
static void write_tables(hid_t f, const gt_nilm_source *src, const nilm_layout *L, MPI_Comm comm) {
    const int H = L->H, A = L->A;
    gt_h5_write_table(f, "/households/id", H5T_NATIVE_INT64, H, 0, L->ids, comm);
    gt_h5_write_table(f, "/households/row_offset", H5T_NATIVE_INT64, H + 1, 0, L->off, comm);
    gt_h5_write_table(f, "/households/period_s", H5T_NATIVE_DOUBLE, H, 0, L->period, comm);
    gt_h5_write_table(f, "/households/owns", H5T_NATIVE_UINT8, H, A, L->owns, comm);
    float *v = GT_MALLOC(sizeof(float) * (size_t)A * 3);
    for (int a = 0; a < A; a++) {
        v[a] = src->meta[a].on_power_w;
        v[A + a] = src->meta[a].on_duration_s;
        v[2 * A + a] = src->meta[a].max_power_w;
    }
    gt_h5_write_strings(f, "/appliance_meta/name", src->meta[0].name, sizeof(gt_io_appliance), GT_FORMAT_NAME_LEN, A,
                        comm);
    gt_h5_write_table(f, "/appliance_meta/on_power_w", H5T_NATIVE_FLOAT, A, 0, v, comm);
    gt_h5_write_table(f, "/appliance_meta/on_duration_s", H5T_NATIVE_FLOAT, A, 0, v + A, comm);
    gt_h5_write_table(f, "/appliance_meta/max_power_w", H5T_NATIVE_FLOAT, A, 0, v + 2 * A, comm);
    free(v);
}

/* The row-indexed datasets (and /lowres' offsets and attributes). Collective. */
static nilm_dsets create_series(hid_t f, const gt_nilm_source *src, const nilm_layout *L, const gt_write_opts *o,
                                MPI_Comm comm) {
    const int64_t N = L->N, M = L->M;
    nilm_dsets d = {-1, -1, -1, -1, -1, -1, -1};
    d.ts = gt_h5_create(f, "/timestamps", H5T_STD_I64LE, N, 0, o->chunk_rows, o->deflate);
    d.agg = gt_h5_create(f, "/aggregate", H5T_IEEE_F32LE, N, 0, o->chunk_rows, o->deflate);
    d.app = gt_h5_create(f, "/appliances", H5T_IEEE_F32LE, N, L->A, o->chunk_rows, o->deflate);
    gt_h5_attr_str(d.ts, "units", "ms since 1970-01-01T00:00:00Z");
    gt_h5_attr_str(d.agg, "units", "W");
    gt_h5_attr_str(d.app, "units", "W");
    if (src->has_faults) {
        d.flt = gt_h5_create(f, "/fault_flags", H5T_STD_U8LE, N, 0, o->chunk_rows, o->deflate);
        gt_h5_attr_str(d.flt, "bits", "1 spike, 2 gap, 4 stuck");
    }
    if (L->lowres) {
        gt_h5_write_table(f, "/lowres/row_offset", H5T_NATIVE_INT64, L->H + 1, 0, L->loff, comm);
        hid_t g = H5_CHECK(H5Gopen2(f, "/lowres", H5P_DEFAULT));
        gt_h5_attr_f64(g, "period_s", src->lowres_period_s);
        gt_h5_attr_str(g, "method", "mean of the finite high-resolution samples in each bin; NaN if none");
        H5Gclose(g);
        int64_t lc = o->chunk_rows > 0 ? (o->chunk_rows + 63) / 64 : 0;
        d.lts = gt_h5_create(f, "/lowres/timestamps", H5T_STD_I64LE, M, 0, lc, o->deflate);
        d.lagg = gt_h5_create(f, "/lowres/aggregate", H5T_IEEE_F32LE, M, 0, lc, o->deflate);
        d.lapp = gt_h5_create(f, "/lowres/appliances", H5T_IEEE_F32LE, M, L->A, lc, o->deflate);
    }
    return d;
}

/* One batch's rows in memory (high and low resolution) and their runs. */
typedef struct {
    int64_t *ts; float *agg, *app; uint8_t *flt;   /* (rows), (rows), (rows, A), (rows) or NULL */
    int64_t *lts; float *lagg, *lapp;              /* low resolution (or NULL) */
    double *acc; int64_t *cnt;                     /* [A + 1] bin sums and counts */
    gt_row_run *runs, *lruns;                      /* [H + 1] */
    int n_runs, n_lruns;
} nilm_buf;

static void buf_make(nilm_buf *b, const gt_nilm_source *src, const nilm_layout *L, const nilm_batches *B) {
    const int A = L->A;
    size_t mb = (size_t)(B->max_rows > 0 ? B->max_rows : 1), ml = (size_t)(B->max_low_rows > 0 ? B->max_low_rows : 1);
    b->ts = GT_MALLOC(mb * sizeof(int64_t));
    b->agg = GT_MALLOC(mb * sizeof(float));
    b->app = GT_MALLOC(mb * (size_t)A * sizeof(float));
    b->flt = src->has_faults ? GT_MALLOC(mb) : NULL;
    b->lts = L->lowres ? GT_MALLOC(ml * sizeof(int64_t)) : NULL;
    b->lagg = L->lowres ? GT_MALLOC(ml * sizeof(float)) : NULL;
    b->lapp = L->lowres ? GT_MALLOC(ml * (size_t)A * sizeof(float)) : NULL;
    b->acc = GT_MALLOC(sizeof(double) * (size_t)(A + 1));
    b->cnt = GT_MALLOC(sizeof(int64_t) * (size_t)(A + 1));
    b->runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)(L->H + 1));
    b->lruns = GT_MALLOC(sizeof(gt_row_run) * (size_t)(L->H + 1));
}
static void buf_free(nilm_buf *b) {
    free(b->ts); free(b->agg); free(b->app); free(b->flt); free(b->lts); free(b->lagg); free(b->lapp);
    free(b->acc); free(b->cnt); free(b->runs); free(b->lruns);
}

static void run_add(gt_row_run *runs, int *n_runs, int64_t start, int64_t count) {
    if (*n_runs > 0 && runs[*n_runs - 1].start + runs[*n_runs - 1].count == start) runs[*n_runs - 1].count += count;
    else runs[(*n_runs)++] = (gt_row_run){start, count};
}

/* The low-resolution bin means of household h (its n rows at b->ts/agg/app
 * + pos) into the low-resolution buffers at lpos. */
static void lowres_bins(nilm_buf *b, const nilm_layout *L, int h, int64_t pos, int64_t lpos) {
    const int A = L->A;
    const int64_t n = L->n_rows[h], nl = L->loff[h + 1] - L->loff[h], t0 = L->items[h].t0_ms;
    double *acc = b->acc;
    int64_t *cnt = b->cnt, i = 0;
    for (int64_t k2 = 0; k2 < nl; k2++) {
        for (int c = 0; c <= A; c++) acc[c] = 0, cnt[c] = 0;
        int64_t bin_end = (k2 + 1) * L->low_ms; /* relative to t0 */
        for (; i < n && b->ts[pos + i] - t0 < bin_end; i++) {
            float x = b->agg[pos + i];
            if (isfinite(x)) acc[A] += x, cnt[A]++;
            const float *row = b->app + (pos + i) * A;
            for (int c = 0; c < A; c++)
                if (isfinite(row[c])) acc[c] += row[c], cnt[c]++;
        }
        b->lts[lpos + k2] = t0 + k2 * L->low_ms;
        b->lagg[lpos + k2] = cnt[A] ? (float)(acc[A] / cnt[A]) : NAN;
        for (int c = 0; c < A; c++) b->lapp[(lpos + k2) * A + c] = cnt[c] ? (float)(acc[c] / cnt[c]) : NAN;
    }
}

/* Generates batch r's households into b (their runs included). */
static void generate_batch(nilm_buf *b, const gt_nilm_source *src, const nilm_layout *L, const nilm_batches *B,
                           int r) {
    int64_t pos = 0, lpos = 0;
    b->n_runs = b->n_lruns = 0;
    for (int k = B->start[r]; k < B->start[r + 1]; k++) {
        int h = B->local[k];
        int64_t n = L->n_rows[h];
        src->generate(src->ctx, h, b->agg + pos, b->app + pos * L->A, b->flt ? b->flt + pos : NULL);
        double pms = L->items[h].period_s * 1000.0;
        for (int64_t i = 0; i < n; i++) b->ts[pos + i] = gt_io_ts_at(L->items[h].t0_ms, pms, i);
        run_add(b->runs, &b->n_runs, L->off[h], n);
        if (L->lowres) {
            int64_t nl = L->loff[h + 1] - L->loff[h];
            lowres_bins(b, L, h, pos, lpos);
            run_add(b->lruns, &b->n_lruns, L->loff[h], nl);
            lpos += nl;
        }
        pos += n;
    }
}

/* One collective write round of b's runs (none on a rank without a batch). */
static void write_batch(const nilm_dsets *d, const nilm_buf *b, int lowres, hid_t dxpl) {
    gt_h5_write_runs(d->ts, H5T_NATIVE_INT64, b->runs, b->n_runs, b->ts, dxpl);
    gt_h5_write_runs(d->agg, H5T_NATIVE_FLOAT, b->runs, b->n_runs, b->agg, dxpl);
    gt_h5_write_runs(d->app, H5T_NATIVE_FLOAT, b->runs, b->n_runs, b->app, dxpl);
    if (b->flt) gt_h5_write_runs(d->flt, H5T_NATIVE_UINT8, b->runs, b->n_runs, b->flt, dxpl);
    if (lowres) {
        gt_h5_write_runs(d->lts, H5T_NATIVE_INT64, b->lruns, b->n_lruns, b->lts, dxpl);
        gt_h5_write_runs(d->lagg, H5T_NATIVE_FLOAT, b->lruns, b->n_lruns, b->lagg, dxpl);
        gt_h5_write_runs(d->lapp, H5T_NATIVE_FLOAT, b->lruns, b->n_lruns, b->lapp, dxpl);
    }
}

void gt_nilm_write(const char *path, const gt_nilm_source *src, const gt_write_opts *opts_in, MPI_Comm comm,
                   gt_write_stats *stats) {
    double t_start = gt_now();
    gt_write_opts opts;
    gt_io_write_opts_resolve(opts_in, &opts);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    GT_CHECK(src->n_households >= 1 && src->n_appliances >= 1, GT_EXIT_USAGE,
             "nothing to write: %d households, %d appliances", src->n_households, src->n_appliances);
    nilm_layout L;
    layout_make(&L, src, size);
    nilm_batches B;
    batches_make(&B, &L, rank, opts.batch_bytes, comm);

    char tmp[4096];
    hid_t f = gt_io_create_tmp(path, comm, tmp, sizeof tmp);
    gt_io_root_attrs(f, gt_io_kind_nilm.name, src->generator, src->generator_config, src->seed);
    write_tables(f, src, &L, comm);
    nilm_dsets d = create_series(f, src, &L, &opts, comm);

    nilm_buf b;
    buf_make(&b, src, &L, &B);
    hid_t dxpl = gt_h5_dxpl(0);
    double gen_s = 0, write_s = 0;
    for (int r = 0; r < B.n_rounds; r++) {
        double t0 = gt_now();
        b.n_runs = b.n_lruns = 0;
        if (r < B.n_batches) generate_batch(&b, src, &L, &B, r);
        double t1 = gt_now();
        write_batch(&d, &b, L.lowres, dxpl);
        gen_s += t1 - t0;
        write_s += gt_now() - t1;
    }
    H5Pclose(dxpl);
    hid_t all[] = {d.ts, d.agg, d.app, d.flt, d.lts, d.lagg, d.lapp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] >= 0) H5Dclose(all[i]);
    gt_io_finish_file(f, tmp, path, comm);

    if (stats) *stats = (gt_write_stats){B.n_local, B.my_rows, L.N, B.n_rounds, gen_s, write_s, gt_now() - t_start};
    buf_free(&b);
    layout_free(&L);
    free(B.local);
    free(B.start);
}

static void nilm_write_any(const char *path, const void *src, const gt_write_opts *o, MPI_Comm comm,
                           gt_write_stats *st) {
    gt_nilm_write(path, src, o, comm, st);
}

/* ------------------------------------------------------------ inspect -- */

static const char *nilm_u8(const gt_file_index *ix) { return nx_of(ix)->has_faults ? "/fault_flags" : NULL; }

static void nilm_period_ms(hid_t f, const gt_file_index *ix, double *period_ms) {
    gt_h5_read_all(f, "/households/period_s", H5T_NATIVE_DOUBLE, period_ms);
    for (int i = 0; i < ix->n_items; i++) period_ms[i] = period_ms[i] * 1000.0;
}

/* Appliances: the negative check; the aggregate (column A): every check. */
static void *nilm_inspect_begin(hid_t f, const gt_file_index *ix, uint8_t *col) {
    (void)f;
    for (int c = 0; c < ix->n_cols; c++) col[c] = GT_IO_COL_NEGATIVE;
    col[ix->n_cols] = GT_IO_COL_NEGATIVE | GT_IO_COL_SPIKE | GT_IO_COL_STUCK;
    return NULL;
}

/* Runs of missing aggregate samples; the /fault_flags bits. */
static void nilm_inspect_rows(const void *st, int64_t n, int C, const float *x, const float *agg, const uint8_t *u8,
                              int *in_nan, gt_item_report *rep) {
    (void)st, (void)C, (void)x;
    for (int64_t j = 0; j < n; j++) {
        int is_nan = isnan(agg[j]);
        if (is_nan && !*in_nan) rep->nan_runs++;
        *in_nan = is_nan;
        if (u8) {
            uint8_t b = u8[j];
            rep->own[GT_NILM_OWN_FLAGGED_SPIKE] += (b & 1) != 0;
            rep->own[GT_NILM_OWN_FLAGGED_GAP] += (b & 2) != 0;
            rep->own[GT_NILM_OWN_FLAGGED_STUCK] += (b & 4) != 0;
        }
    }
}

static void nilm_inspect_header(FILE *out, const gt_file_index *ix) {
    fprintf(out, "%s%s\n", nx_of(ix)->has_lowres ? "  lowres: yes" : "", nx_of(ix)->has_faults ? "  fault_flags: yes" : "");
}

/* bad_labels=0: the summary line of every kind has had the key since the
 * first format (NILM files have no labels), so a parser of the line finds it */
static void nilm_inspect_summary(FILE *out, const gt_file_index *ix, const gt_item_report *tot) {
    fputs(" bad_labels=0", out);
    if (nx_of(ix)->has_faults)
        fprintf(out, " flagged_spike=%lld flagged_gap=%lld flagged_stuck=%lld",
                (long long)tot->own[GT_NILM_OWN_FLAGGED_SPIKE], (long long)tot->own[GT_NILM_OWN_FLAGGED_GAP],
                (long long)tot->own[GT_NILM_OWN_FLAGGED_STUCK]);
}

static const gt_io_inspect_i nilm_inspect = {
    .id_dataset = "/households/id",
    .main = "/appliances",
    .extra = "/aggregate",
    .u8 = nilm_u8,
    .period_ms = nilm_period_ms,
    .begin = nilm_inspect_begin,
    .rows = nilm_inspect_rows,
    .n_own = GT_NILM_N_OWN,
    .own_finding = 0,
    .header = nilm_inspect_header,
    .summary = nilm_inspect_summary,
};

/* ---------------------------------------------------------------- row -- */

static hid_t mem_i64(void) { return H5T_NATIVE_INT64; }
static hid_t mem_f32(void) { return H5T_NATIVE_FLOAT; }

static const gt_io_series nilm_series[] = {
    {"/timestamps", mem_i64, 8, 0},
    {"/aggregate", mem_f32, 4, 0},
    {"/appliances", mem_f32, 4, 1},
};

const gt_io_kind_i gt_io_kind_nilm = {
    .id = GT_KIND_NILM,
    .name = "nilm",
    .item = "household",
    .items = "households",
    .cols = "appliances",
    .validate = nilm_validate,
    .index_free = nilm_index_free,
    .read = nilm_read,
    .shard_free = nilm_shard_free,
    .value_limit = GT_NILM_POWER_LIMIT_W,
    .limit_key = "data.power_limit_w",
    .write = nilm_write_any,
    .inspect = &nilm_inspect,
    .series = nilm_series,
    .n_series = 3,
};
