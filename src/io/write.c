/* io/write.c: collective NILM / PdM file writers (see write.h and
 * docs/data-format.md). */
#define _GNU_SOURCE
#include "io/write.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/fsutil.h"
#include "core/timer.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/shard.h"

#ifndef GT_VERSION
#define GT_VERSION "unknown"
#endif

void gt_write_opts_defaults(gt_write_opts *o) {
    o->chunk_rows = 65536;
    o->deflate = 0;
    o->batch_bytes = (int64_t)256 << 20;
}

static void check_opts(const gt_write_opts *o) {
    GT_CHECK(o->chunk_rows >= 0, GT_EXIT_USAGE, "chunk rows must be >= 0 (got %lld)", (long long)o->chunk_rows);
    GT_CHECK(o->deflate >= 0 && o->deflate <= 9, GT_EXIT_USAGE, "deflate level must be 0..9 (got %d)", o->deflate);
    GT_CHECK(!(o->chunk_rows == 0 && o->deflate > 0), GT_EXIT_USAGE,
             "compression needs a chunked layout: set chunk rows > 0");
}

/* Collective create of a new unique temporary "<path>.tmp.XXXXXX" next to
 * path (rank 0 chooses the name, H5F_ACC_EXCL creates it: never an existing
 * file, nor through a symbolic link planted at the name), so concurrent
 * writers of one output never share a file; the caller closes and calls
 * finish_file. The temporary is removed if the job fails (gt_output_begin). */
static hid_t create_tmp(const char *path, MPI_Comm comm, char *tmp, size_t tmp_bytes) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char name[4096] = "";
    int err = 0;
    if (rank == 0) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) err = EISDIR;
        else if (gt_tmp_name(path, name, sizeof name) != 0) err = errno;
    }
    MPI_CHECK(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
    if (err) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot create the output '%s': %s%s", path, strerror(err),
                 err == EISDIR ? "" : " (is the directory there and writable?)");
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    MPI_CHECK(MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, comm));
    snprintf(tmp, tmp_bytes, "%s", name);
    gt_output_begin(tmp);
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    int ok = f >= 0, all_ok = 0;
    MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
    if (!all_ok) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot create '%s' (is the directory there and writable?)", tmp);
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    return f;
}

/* Close the file collectively, then rank 0 renames it into place. */
static void finish_file(hid_t f, const char *tmp, const char *path, MPI_Comm comm) {
    H5_CHECK(H5Fclose(f));
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int err = 0;
    if (rank == 0 && rename(tmp, path) != 0) err = errno;
    MPI_CHECK(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
    if (err) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot rename '%s' to '%s': %s", tmp, path, strerror(err));
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    gt_output_end(tmp);
}

static void root_attrs(hid_t f, const char *kind, const char *generator, const char *config, uint64_t seed) {
    gt_h5_attr_str(f, "kind", kind);
    gt_h5_attr_i64(f, "schema_version", GT_SCHEMA_VERSION);
    gt_h5_attr_str(f, "generator", generator ? generator : "");
    gt_h5_attr_str(f, "generator_config", config ? config : "");
    hid_t sp = H5_CHECK(H5Screate(H5S_SCALAR));
    hid_t a = H5_CHECK(H5Acreate2(f, "generator_seed", H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, H5T_NATIVE_UINT64, &seed));
    H5Aclose(a);
    H5Sclose(sp);
    gt_h5_attr_str(f, "gridtrain_version", GT_VERSION);
}

static int64_t ts_at(int64_t t0_ms, double period_ms, int64_t i) { return t0_ms + llround((double)i * period_ms); }

/* -------------------------------------------------------------------- NILM -- */

typedef struct {
    hid_t ts, agg, app, flt;        /* high resolution */
    hid_t lts, lagg, lapp;          /* low resolution (or -1) */
} nilm_dsets;

void gt_nilm_write(const char *path, const gt_nilm_source *src, const gt_write_opts *opts_in,
                   MPI_Comm comm, gt_write_stats *stats) {
    double t_start = gt_now();
    gt_write_opts opts;
    if (opts_in) opts = *opts_in;
    else gt_write_opts_defaults(&opts);
    check_opts(&opts);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int H = src->n_households, A = src->n_appliances;
    GT_CHECK(H >= 1 && A >= 1, GT_EXIT_USAGE, "nothing to write: %d households, %d appliances", H, A);

    /* sizes and offsets of every household, identical on every rank */
    gt_nilm_item *items = GT_MALLOC(sizeof(gt_nilm_item) * (size_t)H);
    uint8_t *owns = GT_CALLOC((size_t)H * (size_t)A, 1); /* (H,A) */
    int64_t *n_rows = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    int64_t *off = GT_MALLOC(sizeof(int64_t) * (size_t)(H + 1));
    int64_t *loff = GT_MALLOC(sizeof(int64_t) * (size_t)(H + 1));
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    double *period = GT_MALLOC(sizeof(double) * (size_t)H);
    const int lowres = src->lowres_period_s > 0;
    const int64_t low_ms = lowres ? llround(src->lowres_period_s * 1000.0) : 0;
    off[0] = loff[0] = 0;
    for (int h = 0; h < H; h++) {
        src->info(src->ctx, h, &items[h], owns + (size_t)h * A);
        GT_CHECK(items[h].n_rows >= 1 && items[h].period_s > 0, GT_EXIT_USAGE,
                 "household %d has %lld rows at period %g s: nothing to write", h,
                 (long long)items[h].n_rows, items[h].period_s);
        n_rows[h] = items[h].n_rows;
        ids[h] = items[h].id;
        period[h] = items[h].period_s;
        off[h + 1] = off[h] + n_rows[h];
        int64_t last = ts_at(0, items[h].period_s * 1000.0, n_rows[h] - 1);
        loff[h + 1] = loff[h] + (lowres ? last / low_ms + 1 : 0);
    }
    const int64_t N = off[H], M = loff[H];
    int *owner = GT_MALLOC(sizeof(int) * (size_t)H);
    gt_shard_assign(n_rows, H, size, owner);

    /* batches of consecutive local households within the buffer budget */
    const int64_t row_bytes = 8 + 4 + 4 * (int64_t)A + 1;
    int *local = GT_MALLOC(sizeof(int) * (size_t)H);
    int n_local = 0;
    int64_t max_batch_rows = 0, my_rows = 0;
    int *batch_start = GT_MALLOC(sizeof(int) * (size_t)(H + 1));
    int n_batches = 0;
    {
        int64_t cur = 0;
        for (int h = 0; h < H; h++) {
            if (owner[h] != rank) continue;
            if (n_local == 0 || (cur + n_rows[h]) * row_bytes > opts.batch_bytes) {
                if (n_local > 0 && cur > max_batch_rows) max_batch_rows = cur;
                batch_start[n_batches++] = n_local;
                cur = 0;
            }
            local[n_local++] = h;
            cur += n_rows[h];
            my_rows += n_rows[h];
        }
        if (cur > max_batch_rows) max_batch_rows = cur;
        batch_start[n_batches] = n_local;
    }
    int n_rounds = 0;
    MPI_CHECK(MPI_Allreduce(&n_batches, &n_rounds, 1, MPI_INT, MPI_MAX, comm));

    /* file, attributes, tables */
    char tmp[4096];
    hid_t f = create_tmp(path, comm, tmp, sizeof tmp);
    root_attrs(f, "nilm", src->generator, src->generator_config, src->seed);
    gt_h5_write_table(f, "/households/id", H5T_NATIVE_INT64, H, 0, ids, comm);
    gt_h5_write_table(f, "/households/row_offset", H5T_NATIVE_INT64, H + 1, 0, off, comm);
    gt_h5_write_table(f, "/households/period_s", H5T_NATIVE_DOUBLE, H, 0, period, comm);
    gt_h5_write_table(f, "/households/owns", H5T_NATIVE_UINT8, H, A, owns, comm);
    {
        float *v = GT_MALLOC(sizeof(float) * (size_t)A * 3);
        for (int a = 0; a < A; a++) {
            v[a] = src->meta[a].on_power_w;
            v[A + a] = src->meta[a].on_duration_s;
            v[2 * A + a] = src->meta[a].max_power_w;
        }
        gt_h5_write_strings(f, "/appliance_meta/name", src->meta[0].name, sizeof(gt_io_appliance),
                            GT_FORMAT_NAME_LEN, A, comm);
        gt_h5_write_table(f, "/appliance_meta/on_power_w", H5T_NATIVE_FLOAT, A, 0, v, comm);
        gt_h5_write_table(f, "/appliance_meta/on_duration_s", H5T_NATIVE_FLOAT, A, 0, v + A, comm);
        gt_h5_write_table(f, "/appliance_meta/max_power_w", H5T_NATIVE_FLOAT, A, 0, v + 2 * A, comm);
        free(v);
    }
    nilm_dsets d = {-1, -1, -1, -1, -1, -1, -1};
    d.ts = gt_h5_create(f, "/timestamps", H5T_STD_I64LE, N, 0, opts.chunk_rows, opts.deflate);
    d.agg = gt_h5_create(f, "/aggregate", H5T_IEEE_F32LE, N, 0, opts.chunk_rows, opts.deflate);
    d.app = gt_h5_create(f, "/appliances", H5T_IEEE_F32LE, N, A, opts.chunk_rows, opts.deflate);
    gt_h5_attr_str(d.ts, "units", "ms since 1970-01-01T00:00:00Z");
    gt_h5_attr_str(d.agg, "units", "W");
    gt_h5_attr_str(d.app, "units", "W");
    if (src->has_faults) {
        d.flt = gt_h5_create(f, "/fault_flags", H5T_STD_U8LE, N, 0, opts.chunk_rows, opts.deflate);
        gt_h5_attr_str(d.flt, "bits", "1 spike, 2 gap, 4 stuck");
    }
    if (lowres) {
        gt_h5_write_table(f, "/lowres/row_offset", H5T_NATIVE_INT64, H + 1, 0, loff, comm);
        hid_t g = H5_CHECK(H5Gopen2(f, "/lowres", H5P_DEFAULT));
        gt_h5_attr_f64(g, "period_s", src->lowres_period_s);
        gt_h5_attr_str(g, "method", "mean of the finite high-resolution samples in each bin; NaN if none");
        H5Gclose(g);
        int64_t lc = opts.chunk_rows > 0 ? (opts.chunk_rows + 63) / 64 : 0;
        d.lts = gt_h5_create(f, "/lowres/timestamps", H5T_STD_I64LE, M, 0, lc, opts.deflate);
        d.lagg = gt_h5_create(f, "/lowres/aggregate", H5T_IEEE_F32LE, M, 0, lc, opts.deflate);
        d.lapp = gt_h5_create(f, "/lowres/appliances", H5T_IEEE_F32LE, M, A, lc, opts.deflate);
    }

    /* buffers for one batch */
    size_t mb = (size_t)(max_batch_rows > 0 ? max_batch_rows : 1);
    int64_t *ts = GT_MALLOC(mb * sizeof(int64_t));        /* (rows) */
    float *agg = GT_MALLOC(mb * sizeof(float));           /* (rows) */
    float *app = GT_MALLOC(mb * (size_t)A * sizeof(float)); /* (rows, A) */
    uint8_t *flt = src->has_faults ? GT_MALLOC(mb) : NULL; /* (rows) */
    int64_t max_low = 0;
    for (int b = 0; b < n_batches; b++) {
        int64_t m = 0;
        for (int k = batch_start[b]; k < batch_start[b + 1]; k++) m += loff[local[k] + 1] - loff[local[k]];
        if (m > max_low) max_low = m;
    }
    size_t ml = (size_t)(max_low > 0 ? max_low : 1);
    int64_t *lts = lowres ? GT_MALLOC(ml * sizeof(int64_t)) : NULL;
    float *lagg = lowres ? GT_MALLOC(ml * sizeof(float)) : NULL;
    float *lapp = lowres ? GT_MALLOC(ml * (size_t)A * sizeof(float)) : NULL;
    double *acc = GT_MALLOC(sizeof(double) * (size_t)(A + 1));
    int64_t *cnt = GT_MALLOC(sizeof(int64_t) * (size_t)(A + 1));
    gt_row_run *runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)(H + 1));
    gt_row_run *lruns = GT_MALLOC(sizeof(gt_row_run) * (size_t)(H + 1));
    hid_t dxpl = gt_h5_dxpl(0);
    double gen_s = 0, write_s = 0;

    for (int r = 0; r < n_rounds; r++) {
        int n_runs = 0, n_lruns = 0;
        double t0 = gt_now();
        if (r < n_batches) {
            int64_t pos = 0, lpos = 0;
            for (int k = batch_start[r]; k < batch_start[r + 1]; k++) {
                int h = local[k];
                int64_t n = n_rows[h];
                src->generate(src->ctx, h, agg + pos, app + pos * A, flt ? flt + pos : NULL);
                double pms = items[h].period_s * 1000.0;
                for (int64_t i = 0; i < n; i++) ts[pos + i] = ts_at(items[h].t0_ms, pms, i);
                if (n_runs > 0 && runs[n_runs - 1].start + runs[n_runs - 1].count == off[h])
                    runs[n_runs - 1].count += n;
                else
                    runs[n_runs++] = (gt_row_run){off[h], n};
                if (lowres) {
                    int64_t nl = loff[h + 1] - loff[h];
                    int64_t i = 0;
                    for (int64_t k2 = 0; k2 < nl; k2++) {
                        for (int c = 0; c <= A; c++) acc[c] = 0, cnt[c] = 0;
                        int64_t bin_end = (k2 + 1) * low_ms; /* relative to t0 */
                        for (; i < n && ts[pos + i] - items[h].t0_ms < bin_end; i++) {
                            float x = agg[pos + i];
                            if (isfinite(x)) acc[A] += x, cnt[A]++;
                            const float *row = app + (pos + i) * A;
                            for (int c = 0; c < A; c++)
                                if (isfinite(row[c])) acc[c] += row[c], cnt[c]++;
                        }
                        lts[lpos + k2] = items[h].t0_ms + k2 * low_ms;
                        lagg[lpos + k2] = cnt[A] ? (float)(acc[A] / cnt[A]) : NAN;
                        for (int c = 0; c < A; c++)
                            lapp[(lpos + k2) * A + c] = cnt[c] ? (float)(acc[c] / cnt[c]) : NAN;
                    }
                    if (n_lruns > 0 && lruns[n_lruns - 1].start + lruns[n_lruns - 1].count == loff[h])
                        lruns[n_lruns - 1].count += nl;
                    else
                        lruns[n_lruns++] = (gt_row_run){loff[h], nl};
                    lpos += nl;
                }
                pos += n;
            }
        }
        double t1 = gt_now();
        gt_h5_write_runs(d.ts, H5T_NATIVE_INT64, runs, n_runs, ts, dxpl);
        gt_h5_write_runs(d.agg, H5T_NATIVE_FLOAT, runs, n_runs, agg, dxpl);
        gt_h5_write_runs(d.app, H5T_NATIVE_FLOAT, runs, n_runs, app, dxpl);
        if (flt) gt_h5_write_runs(d.flt, H5T_NATIVE_UINT8, runs, n_runs, flt, dxpl);
        if (lowres) {
            gt_h5_write_runs(d.lts, H5T_NATIVE_INT64, lruns, n_lruns, lts, dxpl);
            gt_h5_write_runs(d.lagg, H5T_NATIVE_FLOAT, lruns, n_lruns, lagg, dxpl);
            gt_h5_write_runs(d.lapp, H5T_NATIVE_FLOAT, lruns, n_lruns, lapp, dxpl);
        }
        gen_s += t1 - t0;
        write_s += gt_now() - t1;
    }
    H5Pclose(dxpl);
    hid_t all[] = {d.ts, d.agg, d.app, d.flt, d.lts, d.lagg, d.lapp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] >= 0) H5Dclose(all[i]);
    finish_file(f, tmp, path, comm);

    if (stats) {
        stats->n_items = n_local;
        stats->n_rows = my_rows;
        stats->n_rows_total = N;
        stats->n_rounds = n_rounds;
        stats->gen_s = gen_s;
        stats->write_s = write_s;
        stats->total_s = gt_now() - t_start;
    }
    free(ts); free(agg); free(app); free(flt); free(lts); free(lagg); free(lapp);
    free(acc); free(cnt); free(runs); free(lruns);
    free(items); free(owns); free(n_rows); free(off); free(loff); free(ids); free(period);
    free(owner); free(local); free(batch_start);
}

/* --------------------------------------------------------------------- PdM -- */

static void write_names(hid_t f, const char *name, const char *const *names, int n, MPI_Comm comm) {
    char *buf = GT_CALLOC((size_t)(n > 0 ? n : 1), GT_FORMAT_NAME_LEN);
    for (int i = 0; i < n; i++) snprintf(buf + (size_t)i * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN, "%s", names[i] ? names[i] : "");
    gt_h5_write_strings(f, name, buf, GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN, n, comm);
    free(buf);
}

typedef struct {
    int t;
    int64_t start, count; /* rows within the turbine */
} pdm_piece;

/* the optional /care_events table (gt_pdm_source.care_events); collective */
static void write_care_events(hid_t f, const int64_t *rows, int64_t n, MPI_Comm comm) {
    static const char *const cols[GT_CARE_EVENT_K] = {"turbine",         "event_id",      "label",
                                                      "pred_start_row",  "pred_end_row",  "event_start_row",
                                                      "event_end_row",   "train_start_row", "train_end_row"};
    int64_t *col = GT_MALLOC(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    int32_t *c32 = GT_MALLOC(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    char name[64];
    for (int k = 0; k < GT_CARE_EVENT_K; k++) {
        snprintf(name, sizeof name, "/care_events/%s", cols[k]);
        for (int64_t i = 0; i < n; i++) col[i] = rows[GT_CARE_EVENT_K * i + k], c32[i] = (int32_t)col[i];
        int narrow = k == 0 || k == 2;
        gt_h5_write_table(f, name, narrow ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, n, 0,
                          narrow ? (const void *)c32 : (const void *)col, comm);
    }
    free(col);
    free(c32);
}

void gt_pdm_write(const char *path, const gt_pdm_source *src, const gt_write_opts *opts_in,
                  MPI_Comm comm, gt_write_stats *stats) {
    double t_start = gt_now();
    gt_write_opts opts;
    if (opts_in) opts = *opts_in;
    else gt_write_opts_defaults(&opts);
    check_opts(&opts);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int T = src->n_turbines, C = src->n_channels;
    GT_CHECK(T >= 1 && C >= 1, GT_EXIT_USAGE, "nothing to write: %d turbines, %d channels", T, C);
    GT_CHECK(src->rate_hz > 0, GT_EXIT_USAGE, "rate must be > 0 Hz (got %g)", src->rate_hz);

    gt_pdm_item *info = GT_CALLOC((size_t)T, sizeof(gt_pdm_item));
    int64_t *n_rows = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    int64_t *off = GT_MALLOC(sizeof(int64_t) * (size_t)(T + 1));
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    int32_t *farm = GT_MALLOC(sizeof(int32_t) * (size_t)T), *mtype = GT_MALLOC(sizeof(int32_t) * (size_t)T);
    double *rate = GT_MALLOC(sizeof(double) * (size_t)T);
    int64_t n_seg = 0, n_ev = 0;
    off[0] = 0;
    for (int t = 0; t < T; t++) {
        src->info(src->ctx, t, &info[t]);
        GT_CHECK(info[t].n_rows >= 1, GT_EXIT_USAGE, "turbine %d has no rows: nothing to write", t);
        n_rows[t] = info[t].n_rows;
        off[t + 1] = off[t] + n_rows[t];
        ids[t] = info[t].id;
        farm[t] = info[t].farm;
        mtype[t] = info[t].machine_type;
        rate[t] = src->rate_hz;
        n_seg += info[t].n_segments;
        n_ev += info[t].n_events;
    }
    const int64_t N = off[T];
    /* segment and event tables, sorted by turbine then as generated */
    size_t ns = (size_t)(n_seg > 0 ? n_seg : 1), ne = (size_t)(n_ev > 0 ? n_ev : 1);
    int32_t *seg_t = GT_MALLOC(ns * 4), *seg_c = GT_MALLOC(ns * 4);
    int64_t *seg_s = GT_MALLOC(ns * 8), *seg_e = GT_MALLOC(ns * 8);
    int32_t *ev_t = GT_MALLOC(ne * 4), *ev_k = GT_MALLOC(ne * 4);
    int64_t *ev_s = GT_MALLOC(ne * 8), *ev_e = GT_MALLOC(ne * 8);
    {
        int64_t is = 0, ie = 0;
        for (int t = 0; t < T; t++) {
            for (int k = 0; k < info[t].n_segments; k++, is++) {
                seg_t[is] = t;
                seg_s[is] = info[t].segments[k].start_row;
                seg_e[is] = info[t].segments[k].end_row;
                seg_c[is] = info[t].segments[k].code;
            }
            for (int k = 0; k < info[t].n_events; k++, ie++) {
                ev_t[ie] = t;
                ev_s[ie] = info[t].events[k].start_row;
                ev_e[ie] = info[t].events[k].end_row;
                ev_k[ie] = info[t].events[k].code;
            }
        }
    }
    int *owner = GT_MALLOC(sizeof(int) * (size_t)T);
    gt_shard_assign(n_rows, T, size, owner);

    /* pieces: blocks of each local turbine, at most batch_bytes each, rounded
     * to whole chunks so compressed chunks are rarely written twice */
    const int64_t row_bytes = 4 * (int64_t)C + 1 + 8;
    int64_t block = opts.batch_bytes / row_bytes;
    if (opts.chunk_rows > 0 && block > opts.chunk_rows) block = block / opts.chunk_rows * opts.chunk_rows;
    if (block < 1) block = 1;
    int n_pieces = 0, cap = 16;
    pdm_piece *pieces = GT_MALLOC(sizeof(pdm_piece) * (size_t)cap);
    int n_local = 0;
    int64_t my_rows = 0;
    for (int t = 0; t < T; t++) {
        if (owner[t] != rank) continue;
        n_local++;
        my_rows += n_rows[t];
        for (int64_t s = 0; s < n_rows[t]; s += block) {
            if (n_pieces == cap) pieces = GT_REALLOC(pieces, sizeof(pdm_piece) * (size_t)(cap *= 2));
            pieces[n_pieces++] = (pdm_piece){t, s, n_rows[t] - s < block ? n_rows[t] - s : block};
        }
    }
    int n_rounds = 0;
    MPI_CHECK(MPI_Allreduce(&n_pieces, &n_rounds, 1, MPI_INT, MPI_MAX, comm));
    int64_t max_piece = 1;
    for (int p = 0; p < n_pieces; p++)
        if (pieces[p].count > max_piece) max_piece = pieces[p].count;

    char tmp[4096];
    hid_t f = create_tmp(path, comm, tmp, sizeof tmp);
    root_attrs(f, "pdm", src->generator, src->generator_config, src->seed);
    gt_h5_write_table(f, "/turbines/id", H5T_NATIVE_INT64, T, 0, ids, comm);
    gt_h5_write_table(f, "/turbines/farm", H5T_NATIVE_INT32, T, 0, farm, comm);
    gt_h5_write_table(f, "/turbines/machine_type", H5T_NATIVE_INT32, T, 0, mtype, comm);
    gt_h5_write_table(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, T, 0, rate, comm);
    gt_h5_write_table(f, "/turbines/row_offset", H5T_NATIVE_INT64, T + 1, 0, off, comm);
    gt_h5_write_strings(f, "/channels/name", src->channels[0].name, sizeof(gt_io_channel), GT_FORMAT_NAME_LEN, C, comm);
    gt_h5_write_strings(f, "/channels/unit", src->channels[0].unit, sizeof(gt_io_channel), GT_FORMAT_UNIT_LEN, C, comm);
    int have_desc = 0; /* /channels/description: only when a channel has one (CARE's feature descriptions) */
    for (int c = 0; c < C; c++) have_desc |= src->channels[c].desc[0] != 0;
    if (have_desc)
        gt_h5_write_strings(f, "/channels/description", src->channels[0].desc, sizeof(gt_io_channel),
                            GT_FORMAT_DESC_LEN, C, comm);
    gt_h5_write_table(f, "/segments/turbine", H5T_NATIVE_INT32, n_seg, 0, seg_t, comm);
    gt_h5_write_table(f, "/segments/start_row", H5T_NATIVE_INT64, n_seg, 0, seg_s, comm);
    gt_h5_write_table(f, "/segments/end_row", H5T_NATIVE_INT64, n_seg, 0, seg_e, comm);
    gt_h5_write_table(f, "/segments/condition", H5T_NATIVE_INT32, n_seg, 0, seg_c, comm);
    gt_h5_write_table(f, "/events/turbine", H5T_NATIVE_INT32, n_ev, 0, ev_t, comm);
    gt_h5_write_table(f, "/events/start_row", H5T_NATIVE_INT64, n_ev, 0, ev_s, comm);
    gt_h5_write_table(f, "/events/end_row", H5T_NATIVE_INT64, n_ev, 0, ev_e, comm);
    gt_h5_write_table(f, "/events/kind", H5T_NATIVE_INT32, n_ev, 0, ev_k, comm);
    if (src->n_machine_types > 0) write_names(f, "/legend/machine_type", src->machine_type_names, src->n_machine_types, comm);
    if (src->n_conditions > 0) write_names(f, "/legend/condition", src->condition_names, src->n_conditions, comm);
    if (src->n_event_kinds > 0) write_names(f, "/legend/event_kind", src->event_kind_names, src->n_event_kinds, comm);
    if (src->n_care_events > 0) write_care_events(f, src->care_events, src->n_care_events, comm);

    hid_t d_ts = gt_h5_create(f, "/timestamps", H5T_STD_I64LE, N, 0, opts.chunk_rows, opts.deflate);
    hid_t d_sig = gt_h5_create(f, "/signals", H5T_IEEE_F32LE, N, C, opts.chunk_rows, opts.deflate);
    hid_t d_lab = gt_h5_create(f, "/labels", H5T_STD_U8LE, N, 0, opts.chunk_rows, opts.deflate);
    gt_h5_attr_str(d_ts, "units", "ms since 1970-01-01T00:00:00Z");
    gt_h5_attr_str(d_sig, "units", "see /channels/unit");
    gt_h5_attr_str(d_lab, "meaning", "0 normal, else the event kind active at that row (see /legend/event_kind)");

    int64_t *ts = GT_MALLOC((size_t)max_piece * 8);              /* (rows) */
    float *sig = GT_MALLOC((size_t)max_piece * (size_t)C * 4);   /* (rows, C) */
    uint8_t *lab = GT_MALLOC((size_t)max_piece);                 /* (rows) */
    hid_t dxpl = gt_h5_dxpl(0);
    void *state = NULL;
    double gen_s = 0, write_s = 0;
    for (int r = 0; r < n_rounds; r++) {
        gt_row_run run = {0, 0};
        int n_runs = 0;
        double t0 = gt_now();
        if (r < n_pieces) {
            pdm_piece p = pieces[r];
            if (p.start == 0) state = src->begin(src->ctx, p.t);
            int64_t got = src->next(src->ctx, state, p.count, sig, lab);
            GT_CHECK(got == p.count, GT_EXIT_INTERNAL, "generator of turbine %d gave %lld rows, expected %lld",
                     p.t, (long long)got, (long long)p.count);
            double pms = 1000.0 / src->rate_hz;
            for (int64_t i = 0; i < p.count; i++) ts[i] = ts_at(info[p.t].t0_ms, pms, p.start + i);
            if (p.start + p.count == n_rows[p.t]) {
                src->end(src->ctx, state);
                state = NULL;
            }
            run = (gt_row_run){off[p.t] + p.start, p.count};
            n_runs = 1;
        }
        double t1 = gt_now();
        gt_h5_write_runs(d_ts, H5T_NATIVE_INT64, &run, n_runs, ts, dxpl);
        gt_h5_write_runs(d_sig, H5T_NATIVE_FLOAT, &run, n_runs, sig, dxpl);
        gt_h5_write_runs(d_lab, H5T_NATIVE_UINT8, &run, n_runs, lab, dxpl);
        gen_s += t1 - t0;
        write_s += gt_now() - t1;
    }
    H5Pclose(dxpl);
    H5Dclose(d_ts);
    H5Dclose(d_sig);
    H5Dclose(d_lab);
    finish_file(f, tmp, path, comm);
    if (stats) {
        stats->n_items = n_local;
        stats->n_rows = my_rows;
        stats->n_rows_total = N;
        stats->n_rounds = n_rounds;
        stats->gen_s = gen_s;
        stats->write_s = write_s;
        stats->total_s = gt_now() - t_start;
    }
    for (int t = 0; t < T; t++) src->info_free(src->ctx, &info[t]);
    free(info); free(n_rows); free(off); free(ids); free(farm); free(mtype); free(rate);
    free(seg_t); free(seg_c); free(seg_s); free(seg_e); free(ev_t); free(ev_k); free(ev_s); free(ev_e);
    free(owner); free(pieces); free(ts); free(sig); free(lab);
}

