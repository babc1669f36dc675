/* io/kind_pdm.c: the PdM (turbine) file kind, its row of io/kind.h: the
 * schema checks (with the segment, event, /care_events and /legend tables),
 * the shard reader and the readers of its optional tables, the writer and its
 * part of `inspect` (see kind_pdm.h and docs/data-format.md). Uses io/'s
 * public headers only. */
#define _GNU_SOURCE
#include "io/kind_pdm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/repeat.h"
#include "core/timer.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/inspect.h"
#include "io/kind.h"
#include "io/shard.h"

static const char *const care_cols[GT_CARE_EVENT_K] = {"turbine",         "event_id",       "label",
                                                       "pred_start_row",  "pred_end_row",   "event_start_row",
                                                       "event_end_row",   "train_start_row", "train_end_row"};

/* ------------------------------------------------------------- schema -- */

static gt_pdm_index *px_of(const gt_file_index *ix) { return ix->kind_ix; }

/* Checks a (turbine, start_row, end_row, code) table against the offsets. */
static int check_table(gt_io_check *v, hid_t f, const char *grp, const char *code_name, int64_t n_items,
                       const int64_t *off, int64_t code_max, int64_t *n_out) {
    char nt[96], ns[96], ne[96], nc[96];
    snprintf(nt, sizeof nt, "/%s/turbine", grp);
    snprintf(ns, sizeof ns, "/%s/start_row", grp);
    snprintf(ne, sizeof ne, "/%s/end_row", grp);
    snprintf(nc, sizeof nc, "/%s/%s", grp, code_name);
    int64_t n = -1;
    if (gt_io_check_ds(v, f, nt, GT_IO_I32, 1, &n, NULL, GT_IO_MAX_SPANS)) return -1;
    if (gt_io_check_ds1(v, f, ns, GT_IO_I64, &n) || gt_io_check_ds1(v, f, ne, GT_IO_I64, &n) ||
        gt_io_check_ds1(v, f, nc, GT_IO_I32, &n))
        return -1;
    int32_t *tu = gt_io_read_small(v, f, nt, H5T_NATIVE_INT32, sizeof(int32_t), n);
    int64_t *st = tu ? gt_io_read_small(v, f, ns, H5T_NATIVE_INT64, sizeof(int64_t), n) : NULL;
    int64_t *en = st ? gt_io_read_small(v, f, ne, H5T_NATIVE_INT64, sizeof(int64_t), n) : NULL;
    int32_t *code = en ? gt_io_read_small(v, f, nc, H5T_NATIVE_INT32, sizeof(int32_t), n) : NULL;
    int rc = code ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (tu[i] < 0 || tu[i] >= n_items)
            rc = gt_io_check_fail(v, "%s: entry %lld names turbine %d, file has %lld", nt, (long long)i, tu[i],
                                  (long long)n_items);
        else if (st[i] < 0 || en[i] <= st[i] || en[i] > off[tu[i] + 1] - off[tu[i]])
            rc = gt_io_check_fail(v, "%s: entry %lld has rows [%lld, %lld) outside turbine %d's %lld rows", ns,
                                  (long long)i, (long long)st[i], (long long)en[i], tu[i],
                                  (long long)(off[tu[i] + 1] - off[tu[i]]));
        else if (code[i] < 0 || code[i] > code_max) /* codes index the per-code tables of eval and the legend */
            rc = gt_io_check_fail(v, "%s: entry %lld is code %d (codes are 0..%lld)", nc, (long long)i, code[i],
                                  (long long)code_max);
    }
    free(tu);
    free(st);
    free(en);
    free(code);
    *n_out = n;
    return rc;
}

int gt_io_care_event_ids_check(const int64_t *ids, int64_t n, char *why, size_t why_bytes) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0) {
            snprintf(why, why_bytes, "entry %lld is %lld (event ids are >= 0: datasets/<event_id>.csv)", (long long)i,
                     (long long)ids[i]);
            return -1;
        }
    int64_t e1 = -1, e2 = -1; /* sorted, not pairwise (core/repeat.h): n log n on a crafted table of millions */
    if (gt_repeats_i64(ids, n, &e1, &e2) == 0) return 0;
    snprintf(why, why_bytes, "entries %lld and %lld are both event %lld (an event id names one event dataset)",
             (long long)e1, (long long)e2, (long long)ids[e2]);
    return -1;
}

/* Entry i of a /care_events table (q: its GT_CARE_EVENT_K values) against
 * the turbines' rows. */
static int check_care_entry(gt_io_check *v, const int64_t *q, int64_t i, int n_items, const int64_t *off,
                            const char *turbine_ds, const char *label_ds) {
    int64_t rows = q[0] >= 0 && q[0] < n_items ? off[q[0] + 1] - off[q[0]] : 0;
    if (q[0] < 0 || q[0] >= n_items)
        return gt_io_check_fail(v, "%s: entry %lld names turbine %lld, file has %d", turbine_ds, (long long)i,
                                (long long)q[0], n_items);
    if (q[2] != 0 && q[2] != 1)
        return gt_io_check_fail(v, "%s: entry %lld is %lld (expected 0 normal or 1 anomaly)", label_ds, (long long)i,
                                (long long)q[2]);
    if (q[3] < 0 || q[4] <= q[3] || q[4] > rows || q[5] < 0 || q[6] <= q[5] || q[6] > rows)
        return gt_io_check_fail(v,
                                "/care_events: entry %lld has prediction rows [%lld, %lld) or event rows [%lld, %lld) "
                                "outside turbine %lld's %lld rows",
                                (long long)i, (long long)q[3], (long long)q[4], (long long)q[5], (long long)q[6],
                                (long long)q[0], (long long)rows);
    if (!(q[7] == -1 && q[8] == -1) && (q[7] < 0 || q[8] <= q[7] || q[8] > rows))
        return gt_io_check_fail(v,
                                "/care_events: entry %lld has training rows [%lld, %lld) outside turbine %lld's %lld "
                                "rows (expected a non-empty range, or -1, -1 for none)",
                                (long long)i, (long long)q[7], (long long)q[8], (long long)q[0], (long long)rows);
    return 0;
}

/* The optional /care_events table: equal lengths, turbines in range, event ids
 * >= 0 and unique (gt_io_care_event_ids_check), the prediction part and the
 * event non-empty row ranges of the turbine, labels 0/1; the optional
 * training part (train_start_row, train_end_row: both or neither) a non-empty
 * range of the turbine, or -1, -1 (no training rows). */
static int check_care_events(gt_io_check *v, hid_t f, int n_items, const int64_t *off, int64_t *n_out) {
    int64_t n = -1;
    char name[9][64];
    for (int c = 0; c < 9; c++) snprintf(name[c], sizeof name[c], "/care_events/%s", care_cols[c]);
    int has_train = gt_io_exists(f, name[7]);
    if (has_train != gt_io_exists(f, name[8]))
        return gt_io_check_fail(v, "%s: present without %s (the training part takes both)", name[has_train ? 7 : 8],
                                name[has_train ? 8 : 7]);
    const int K = has_train ? 9 : 7;
    for (int c = 0; c < K; c++)
        if (gt_io_check_ds1(v, f, name[c], c == 0 || c == 2 ? GT_IO_I32 : GT_IO_I64, &n)) return -1;
    size_t m = (size_t)(n > 0 ? n : 1);
    int64_t *x = GT_MALLOC(m * 9 * sizeof(int64_t)), *col = GT_MALLOC(m * sizeof(int64_t));
    for (int c = 0; c < 9; c++) {
        if (c < K) gt_h5_read_all(f, name[c], H5T_NATIVE_INT64, col);
        for (int64_t i = 0; i < n; i++) x[9 * i + c] = c < K ? col[i] : -1;
    }
    int rc = 0;
    {
        for (int64_t i = 0; i < n; i++) col[i] = x[9 * i + 1];
        char why[256];
        if (gt_io_care_event_ids_check(col, n, why, sizeof why)) rc = gt_io_check_fail(v, "%s: %s", name[1], why);
    }
    for (int64_t i = 0; rc == 0 && i < n; i++) rc = check_care_entry(v, x + 9 * i, i, n_items, off, name[0], name[2]);
    free(x);
    free(col);
    *n_out = n;
    return rc;
}

/* Optional /legend/<name>: names of codes, a small fixed-length string table. */
static int check_legend(gt_io_check *v, hid_t f) {
    if (!gt_io_exists(f, "/legend")) return 0;
    static const char *const names[] = {"/legend/machine_type", "/legend/condition", "/legend/event_kind"};
    for (int k = 0; k < 3; k++) {
        int64_t n = -1;
        if (gt_io_exists(f, names[k]) && gt_io_check_ds(v, f, names[k], GT_IO_STR, 1, &n, NULL, GT_IO_MAX_LEGEND))
            return -1;
    }
    return 0;
}

static int pdm_validate(gt_io_check *v, hid_t f, gt_file_index *ix) {
    int64_t T = -1, T1, C = -1, N = -1;
    ix->kind_ix = GT_CALLOC(1, sizeof(gt_pdm_index));
    if (gt_io_check_ds(v, f, "/turbines/id", GT_IO_I64, 1, &T, NULL, GT_IO_MAX_ITEMS)) return -1;
    if (T < 1) return gt_io_check_fail(v, "/turbines/id: no turbines");
    T1 = T + 1;
    if (gt_io_check_ds1(v, f, "/turbines/farm", GT_IO_I32, &T) ||
        gt_io_check_ds1(v, f, "/turbines/machine_type", GT_IO_I32, &T) ||
        gt_io_check_ds1(v, f, "/turbines/rate_hz", GT_IO_F64, &T) ||
        gt_io_check_ds1(v, f, "/turbines/row_offset", GT_IO_I64, &T1))
        return -1;
    if (gt_io_check_ds1(v, f, "/channels/name", GT_IO_STR, &C)) return -1;
    if (C < 1) return gt_io_check_fail(v, "/channels/name: no channels");
    if (C > GT_IO_MAX_COLS)
        return gt_io_check_fail(v, "/channels/name: %lld channels (at most %d supported)", (long long)C, GT_IO_MAX_COLS);
    if (gt_io_check_ds1(v, f, "/channels/unit", GT_IO_STR, &C)) return -1;
    if (gt_io_exists(f, "/channels/description") && gt_io_check_ds1(v, f, "/channels/description", GT_IO_STR, &C))
        return -1; /* optional */
    if (gt_io_check_ds1(v, f, "/timestamps", GT_IO_I64, &N) || gt_io_check_ds1(v, f, "/labels", GT_IO_U8, &N))
        return -1;
    if (gt_io_check_ds(v, f, "/signals", GT_IO_F32, 2, &N, &C, GT_IO_MAX_ROWS)) return -1;
    if (N < T)
        return gt_io_check_fail(v, "/timestamps: %lld rows for %lld turbines (every turbine has at least one row)",
                                (long long)N, (long long)T);
    ix->n_items = (int)T;
    ix->n_cols = (int)C;
    ix->n_rows = N;
    if (gt_io_check_offsets(v, f, "/turbines/row_offset", T, N, &ix->row_offset)) return -1;
    if (gt_io_check_values(v, f, "/turbines/rate_hz", T, 1.0 / GT_IO_MAX_PERIOD_S, 0, 1.0 / GT_IO_MIN_PERIOD_S, " Hz",
                           "turbine") ||
        gt_io_check_ids(v, f, "/turbines/id", T) || gt_io_check_names(v, f, "/channels/name", C))
        return -1;
    if (check_table(v, f, "segments", "condition", T, ix->row_offset, GT_IO_MAX_LEGEND - 1, &px_of(ix)->n_segments))
        return -1;
    if (check_table(v, f, "events", "kind", T, ix->row_offset, 255, &px_of(ix)->n_events)) return -1; /* /labels are uint8 */
    if (gt_io_check_codes(v, f, "/turbines/farm", T, GT_IO_MAX_LEGEND - 1) ||
        gt_io_check_codes(v, f, "/turbines/machine_type", T, GT_IO_MAX_LEGEND - 1))
        return -1;
    if (gt_io_exists(f, "/care_events") && check_care_events(v, f, (int)T, ix->row_offset, &px_of(ix)->n_care_events))
        return -1;
    if (check_legend(v, f)) return -1;
    return 0;
}

/* ------------------------------------------------------------- reader -- */

/* /channels: every rank reads it whole. */
static gt_io_channel *read_channels(hid_t f, int C) {
    gt_io_channel *ch = GT_CALLOC((size_t)C, sizeof(gt_io_channel));
    const size_t ul = sizeof ch[0].unit;
    char *names = GT_CALLOC((size_t)C, GT_FORMAT_NAME_LEN), *units = GT_CALLOC((size_t)C, ul);
    hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN), su = gt_h5_str_type(ul);
    gt_h5_read_all(f, "/channels/name", st, names);
    gt_h5_read_all(f, "/channels/unit", su, units);
    H5Tclose(st);
    H5Tclose(su);
    for (int c = 0; c < C; c++) {
        memcpy(ch[c].name, names + (size_t)c * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN - 1);
        memcpy(ch[c].unit, units + (size_t)c * ul, ul - 1);
    }
    free(names);
    free(units);
    if (H5Lexists(f, "/channels/description", H5P_DEFAULT) > 0) { /* optional (schema-checked) */
        char *desc = GT_CALLOC((size_t)C, GT_FORMAT_DESC_LEN);
        hid_t sd = gt_h5_str_type(GT_FORMAT_DESC_LEN);
        gt_h5_read_all(f, "/channels/description", sd, desc);
        H5Tclose(sd);
        for (int c = 0; c < C; c++)
            memcpy(ch[c].desc, desc + (size_t)c * GT_FORMAT_DESC_LEN, GT_FORMAT_DESC_LEN - 1);
        free(desc);
    }
    return ch;
}

/* /turbines of the local turbines (the file's tables read whole). */
static void read_turbines(hid_t f, const gt_file_index *ix, const gt_io_plan *p, gt_pdm_shard *s) {
    const int T = ix->n_items, n = p->n_local;
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    int32_t *farm = GT_MALLOC(sizeof(int32_t) * (size_t)T), *mt = GT_MALLOC(sizeof(int32_t) * (size_t)T);
    double *rate = GT_MALLOC(sizeof(double) * (size_t)T);
    gt_h5_read_all(f, "/turbines/id", H5T_NATIVE_INT64, ids);
    gt_h5_read_all(f, "/turbines/farm", H5T_NATIVE_INT32, farm);
    gt_h5_read_all(f, "/turbines/machine_type", H5T_NATIVE_INT32, mt);
    gt_h5_read_all(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, rate);
    s->n_turbines = n;
    s->index = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->id = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    s->farm = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->machine_type = GT_MALLOC(sizeof(int32_t) * (size_t)(n + 1));
    s->rate_hz = GT_MALLOC(sizeof(double) * (size_t)(n + 1));
    s->row_offset = gt_io_plan_offsets(p, ix->row_offset);
    for (int k = 0; k < n; k++) {
        int t = p->local[k];
        s->index[k] = t;
        s->id[k] = ids[t];
        s->farm[k] = farm[t];
        s->machine_type[k] = mt[t];
        s->rate_hz[k] = rate[t];
    }
    free(ids); free(farm); free(mt); free(rate);
}

/* The /segments or /events table (which 0 or 1), read whole: the local
 * turbines' entries, *turbine = their local turbine index. */
static int read_spans(hid_t f, int which, int64_t m, const int *local_of, gt_io_span **spans, int32_t **turbine) {
    const char *g = which == 0 ? "segments" : "events";
    size_t mm = (size_t)(m > 0 ? m : 1);
    int32_t *tu = GT_MALLOC(mm * 4), *code = GT_MALLOC(mm * 4);
    int64_t *st = GT_MALLOC(mm * 8), *en = GT_MALLOC(mm * 8);
    char name[64];
    snprintf(name, sizeof name, "/%s/turbine", g);
    gt_h5_read_all(f, name, H5T_NATIVE_INT32, tu);
    snprintf(name, sizeof name, "/%s/start_row", g);
    gt_h5_read_all(f, name, H5T_NATIVE_INT64, st);
    snprintf(name, sizeof name, "/%s/end_row", g);
    gt_h5_read_all(f, name, H5T_NATIVE_INT64, en);
    snprintf(name, sizeof name, "/%s/%s", g, which == 0 ? "condition" : "kind");
    gt_h5_read_all(f, name, H5T_NATIVE_INT32, code);
    int cnt = 0;
    for (int64_t i = 0; i < m; i++) cnt += local_of[tu[i]] >= 0;
    int32_t *lt = GT_MALLOC(sizeof(int32_t) * (size_t)(cnt + 1));
    gt_io_span *sp = GT_MALLOC(sizeof(gt_io_span) * (size_t)(cnt + 1));
    int j = 0;
    for (int64_t i = 0; i < m; i++) {
        if (local_of[tu[i]] < 0) continue;
        lt[j] = local_of[tu[i]];
        sp[j++] = (gt_io_span){st[i], en[i], code[i]};
    }
    free(tu); free(code); free(st); free(en);
    *spans = sp;
    *turbine = lt;
    return cnt;
}

static void *pdm_read(hid_t f, const gt_file_index *ix, const char *path, const gt_read_opts *o, MPI_Comm comm) {
    gt_pdm_shard *s = GT_CALLOC(1, sizeof(gt_pdm_shard));
    const int T = ix->n_items, C = ix->n_cols;
    s->n_turbines_total = T;
    s->n_channels = C;
    s->channels = read_channels(f, C);
    gt_io_plan p;
    gt_io_plan_make(&p, ix->row_offset, T, comm);
    read_turbines(f, ix, &p, s);
    s->n_rows = p.n_rows;
    s->stats.imbalance = p.imbalance;

    /* segment and event tables: read whole, keep the local turbines' rows */
    int *local_of = GT_MALLOC(sizeof(int) * (size_t)T); /* global -> local index or -1 */
    for (int t = 0; t < T; t++) local_of[t] = -1;
    for (int k = 0; k < p.n_local; k++) local_of[p.local[k]] = k;
    s->n_segments = read_spans(f, 0, px_of(ix)->n_segments, local_of, &s->segments, &s->segment_turbine);
    s->n_events = read_spans(f, 1, px_of(ix)->n_events, local_of, &s->events, &s->event_turbine);
    free(local_of);

    const gt_io_local L = {path, "turbine", s->index, s->id, s->n_turbines, comm};
    hid_t dxpl = gt_h5_dxpl(1);
    const int64_t R = p.n_rows;
    s->timestamps = gt_io_alloc_rows(R, 8);
    s->signals = gt_io_alloc_rows(R, 4 * (size_t)C);
    s->labels = gt_io_alloc_rows(R, 1);
    gt_io_read_rows(f, "/timestamps", H5T_NATIVE_INT64, p.runs, p.n_runs, s->timestamps, dxpl, &s->stats, 8, R);
    gt_io_check_times(&L, "/timestamps", s->timestamps, s->row_offset);
    gt_io_read_rows(f, "/signals", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->signals, dxpl, &s->stats, 4 * (size_t)C, R);
    gt_io_check_range(&L, "/signals", "", gt_io_kind_pdm.limit_key, o->value_limit, s->signals, C, s->row_offset);
    gt_io_read_rows(f, "/labels", H5T_NATIVE_UINT8, p.runs, p.n_runs, s->labels, dxpl, &s->stats, 1, R);
    H5Pclose(dxpl);
    gt_io_plan_free(&p);
    return s;
}

void gt_pdm_shard_free(gt_pdm_shard *s) {
    if (!s) return;
    free(s->channels); free(s->index); free(s->id); free(s->farm); free(s->machine_type); free(s->rate_hz);
    free(s->row_offset); free(s->timestamps); free(s->signals); free(s->labels);
    free(s->segments); free(s->segment_turbine); free(s->events); free(s->event_turbine);
    free(s);
}
static void pdm_shard_free(void *s) { gt_pdm_shard_free(s); }

/* ----------------------------------------------------- optional tables -- */

/* Rank 0: the /care_events table of path (GT_CARE_EVENT_K values per entry),
 * *k entries; NULL and 0 without it. */
static int64_t *care_rows_serial(const char *path, int64_t *k) {
    char why[1024];
    int64_t *rows = NULL;
    *k = 0;
    hid_t f = gt_h5_open_serial(path, why, sizeof why); /* read by gt_io_open before: < 0 only if replaced */
    if (f >= 0 && H5Lexists(f, "care_events", H5P_DEFAULT) > 0 &&
        H5Lexists(f, "/care_events/turbine", H5P_DEFAULT) > 0) {
        hid_t ds = H5Dopen2(f, "/care_events/turbine", H5P_DEFAULT), sp = H5Dget_space(ds);
        *k = (int64_t)H5Sget_simple_extent_npoints(sp);
        H5Sclose(sp);
        H5Dclose(ds);
        const int64_t n = *k;
        rows = GT_MALLOC(sizeof(int64_t) * GT_CARE_EVENT_K * (size_t)(n > 0 ? n : 1));
        int64_t *col = GT_MALLOC(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        char name[64];
        for (int c = 0; c < GT_CARE_EVENT_K; c++) {
            snprintf(name, sizeof name, "/care_events/%s", care_cols[c]);
            if (c >= 7 && H5Lexists(f, name, H5P_DEFAULT) <= 0) { /* the training part: optional */
                for (int64_t i = 0; i < n; i++) rows[GT_CARE_EVENT_K * i + c] = -1;
                continue;
            }
            gt_h5_read_all(f, name, H5T_NATIVE_INT64, col);
            for (int64_t i = 0; i < n; i++) rows[GT_CARE_EVENT_K * i + c] = col[i];
        }
        free(col);
    }
    if (f >= 0) H5Fclose(f);
    return rows;
}

int64_t *gt_care_events_read(const char *path, MPI_Comm comm, int64_t *n) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int64_t k = 0;
    int64_t *rows = NULL;
    if (rank == 0) rows = care_rows_serial(path, &k); /* a small table: rank 0 reads it, everyone gets a copy */
    /* the ids checked as gt_io_open checks them: a crafted table named one event twice */
    char why[512] = "";
    if (rank == 0 && k > 0) {
        int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)k);
        for (int64_t i = 0; i < k; i++) ids[i] = rows[GT_CARE_EVENT_K * i + 1];
        char w[256];
        if (gt_io_care_event_ids_check(ids, k, w, sizeof w))
            snprintf(why, sizeof why, "%s: /care_events/event_id: %s", path, w);
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
    char why[1024];
    hid_t f = gt_h5_open_serial(path, why, sizeof why);
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

/* ------------------------------------------------------------- writer -- */

/* Sizes, offsets, metadata and span tables of every turbine, identical on
 * every rank, and the turbines' owners. */
typedef struct {
    int T, C;
    gt_pdm_item *info;              /* [T], released with src->info_free */
    int64_t *n_rows, *off, *ids;    /* [T], [T+1], [T] */
    int32_t *farm, *mtype;          /* [T] */
    double *rate;                   /* [T] */
    int64_t N, n_seg, n_ev;
    int32_t *seg_t, *seg_c, *ev_t, *ev_k; /* the span tables, by turbine then as generated */
    int64_t *seg_s, *seg_e, *ev_s, *ev_e;
    int *owner;                     /* [T] */
} pdm_layout;

/* The segment and event tables of L->info, in file order. */
static void layout_spans(pdm_layout *L) {
    size_t ns = (size_t)(L->n_seg > 0 ? L->n_seg : 1), ne = (size_t)(L->n_ev > 0 ? L->n_ev : 1);
    L->seg_t = GT_MALLOC(ns * 4), L->seg_c = GT_MALLOC(ns * 4);
    L->seg_s = GT_MALLOC(ns * 8), L->seg_e = GT_MALLOC(ns * 8);
    L->ev_t = GT_MALLOC(ne * 4), L->ev_k = GT_MALLOC(ne * 4);
    L->ev_s = GT_MALLOC(ne * 8), L->ev_e = GT_MALLOC(ne * 8);
    int64_t is = 0, ie = 0;
    for (int t = 0; t < L->T; t++) {
        for (int k = 0; k < L->info[t].n_segments; k++, is++) {
            L->seg_t[is] = t;
            L->seg_s[is] = L->info[t].segments[k].start_row;
            L->seg_e[is] = L->info[t].segments[k].end_row;
            L->seg_c[is] = L->info[t].segments[k].code;
        }
        for (int k = 0; k < L->info[t].n_events; k++, ie++) {
            L->ev_t[ie] = t;
            L->ev_s[ie] = L->info[t].events[k].start_row;
            L->ev_e[ie] = L->info[t].events[k].end_row;
            L->ev_k[ie] = L->info[t].events[k].code;
        }
    }
}

static void layout_make(pdm_layout *L, const gt_pdm_source *src, int n_ranks) {
    const int T = src->n_turbines;
    memset(L, 0, sizeof *L);
    L->T = T;
    L->C = src->n_channels;
    L->info = GT_CALLOC((size_t)T, sizeof(gt_pdm_item));
    L->n_rows = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    L->off = GT_MALLOC(sizeof(int64_t) * (size_t)(T + 1));
    L->ids = GT_MALLOC(sizeof(int64_t) * (size_t)T);
    L->farm = GT_MALLOC(sizeof(int32_t) * (size_t)T), L->mtype = GT_MALLOC(sizeof(int32_t) * (size_t)T);
    L->rate = GT_MALLOC(sizeof(double) * (size_t)T);
    L->off[0] = 0;
    for (int t = 0; t < T; t++) {
        src->info(src->ctx, t, &L->info[t]);
        GT_CHECK(L->info[t].n_rows >= 1, GT_EXIT_USAGE, "turbine %d has no rows: nothing to write", t);
        L->n_rows[t] = L->info[t].n_rows;
        L->off[t + 1] = L->off[t] + L->n_rows[t];
        L->ids[t] = L->info[t].id;
        L->farm[t] = L->info[t].farm;
        L->mtype[t] = L->info[t].machine_type;
        L->rate[t] = src->rate_hz;
        L->n_seg += L->info[t].n_segments;
        L->n_ev += L->info[t].n_events;
    }
    L->N = L->off[T];
    layout_spans(L);
    L->owner = GT_MALLOC(sizeof(int) * (size_t)T);
    gt_shard_assign(L->n_rows, T, n_ranks, L->owner);
}
static void layout_free(pdm_layout *L, const gt_pdm_source *src) {
    for (int t = 0; t < L->T; t++) src->info_free(src->ctx, &L->info[t]);
    free(L->info); free(L->n_rows); free(L->off); free(L->ids); free(L->farm); free(L->mtype); free(L->rate);
    free(L->seg_t); free(L->seg_c); free(L->seg_s); free(L->seg_e);
    free(L->ev_t); free(L->ev_k); free(L->ev_s); free(L->ev_e);
    free(L->owner);
}

typedef struct {
    int t;
    int64_t start, count; /* rows within the turbine */
} pdm_piece;

/* This rank's pieces: blocks of each local turbine, at most batch_bytes each,
 * rounded to whole chunks so compressed chunks are rarely written twice. */
typedef struct {
    pdm_piece *pieces;
    int n_pieces, n_local, n_rounds;
    int64_t my_rows, max_piece;
} pdm_pieces;

static void pieces_make(pdm_pieces *P, const pdm_layout *L, int rank, const gt_write_opts *o, MPI_Comm comm) {
    const int64_t row_bytes = 4 * (int64_t)L->C + 1 + 8;
    int64_t block = o->batch_bytes / row_bytes;
    if (o->chunk_rows > 0 && block > o->chunk_rows) block = block / o->chunk_rows * o->chunk_rows;
    if (block < 1) block = 1;
    int cap = 16;
    memset(P, 0, sizeof *P);
    P->pieces = GT_MALLOC(sizeof(pdm_piece) * (size_t)cap);
    for (int t = 0; t < L->T; t++) {
        if (L->owner[t] != rank) continue;
        P->n_local++;
        P->my_rows += L->n_rows[t];
        for (int64_t s = 0; s < L->n_rows[t]; s += block) {
            if (P->n_pieces == cap) P->pieces = GT_REALLOC(P->pieces, sizeof(pdm_piece) * (size_t)(cap *= 2));
            P->pieces[P->n_pieces++] = (pdm_piece){t, s, L->n_rows[t] - s < block ? L->n_rows[t] - s : block};
        }
    }
    MPI_CHECK(MPI_Allreduce(&P->n_pieces, &P->n_rounds, 1, MPI_INT, MPI_MAX, comm));
    P->max_piece = 1;
    for (int p = 0; p < P->n_pieces; p++)
        if (P->pieces[p].count > P->max_piece) P->max_piece = P->pieces[p].count;
}

static void write_names(hid_t f, const char *name, const char *const *names, int n, MPI_Comm comm) {
    char *buf = GT_CALLOC((size_t)(n > 0 ? n : 1), GT_FORMAT_NAME_LEN);
    for (int i = 0; i < n; i++)
        snprintf(buf + (size_t)i * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN, "%s", names[i] ? names[i] : "");
    gt_h5_write_strings(f, name, buf, GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN, n, comm);
    free(buf);
}

/* the optional /care_events table (gt_pdm_source.care_events); collective */
static void write_care_events(hid_t f, const int64_t *rows, int64_t n, MPI_Comm comm) {
    int64_t *col = GT_MALLOC(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    int32_t *c32 = GT_MALLOC(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    char name[64];
    for (int k = 0; k < GT_CARE_EVENT_K; k++) {
        snprintf(name, sizeof name, "/care_events/%s", care_cols[k]);
        for (int64_t i = 0; i < n; i++) col[i] = rows[GT_CARE_EVENT_K * i + k], c32[i] = (int32_t)col[i];
        int narrow = k == 0 || k == 2;
        gt_h5_write_table(f, name, narrow ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, n, 0,
                          narrow ? (const void *)c32 : (const void *)col, comm);
    }
    free(col);
    free(c32);
}

/* /turbines, /channels, /segments, /events, /legend, /care_events. Collective. */
static void write_tables(hid_t f, const gt_pdm_source *src, const pdm_layout *L, MPI_Comm comm) {
    const int T = L->T, C = L->C;
    gt_h5_write_table(f, "/turbines/id", H5T_NATIVE_INT64, T, 0, L->ids, comm);
    gt_h5_write_table(f, "/turbines/farm", H5T_NATIVE_INT32, T, 0, L->farm, comm);
    gt_h5_write_table(f, "/turbines/machine_type", H5T_NATIVE_INT32, T, 0, L->mtype, comm);
    gt_h5_write_table(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, T, 0, L->rate, comm);
    gt_h5_write_table(f, "/turbines/row_offset", H5T_NATIVE_INT64, T + 1, 0, L->off, comm);
    gt_h5_write_strings(f, "/channels/name", src->channels[0].name, sizeof(gt_io_channel), GT_FORMAT_NAME_LEN, C, comm);
    gt_h5_write_strings(f, "/channels/unit", src->channels[0].unit, sizeof(gt_io_channel), GT_FORMAT_UNIT_LEN, C, comm);
    int have_desc = 0; /* /channels/description: only when a channel has one (CARE's feature descriptions) */
    for (int c = 0; c < C; c++) have_desc |= src->channels[c].desc[0] != 0;
    if (have_desc)
        gt_h5_write_strings(f, "/channels/description", src->channels[0].desc, sizeof(gt_io_channel),
                            GT_FORMAT_DESC_LEN, C, comm);
    gt_h5_write_table(f, "/segments/turbine", H5T_NATIVE_INT32, L->n_seg, 0, L->seg_t, comm);
    gt_h5_write_table(f, "/segments/start_row", H5T_NATIVE_INT64, L->n_seg, 0, L->seg_s, comm);
    gt_h5_write_table(f, "/segments/end_row", H5T_NATIVE_INT64, L->n_seg, 0, L->seg_e, comm);
    gt_h5_write_table(f, "/segments/condition", H5T_NATIVE_INT32, L->n_seg, 0, L->seg_c, comm);
    gt_h5_write_table(f, "/events/turbine", H5T_NATIVE_INT32, L->n_ev, 0, L->ev_t, comm);
    gt_h5_write_table(f, "/events/start_row", H5T_NATIVE_INT64, L->n_ev, 0, L->ev_s, comm);
    gt_h5_write_table(f, "/events/end_row", H5T_NATIVE_INT64, L->n_ev, 0, L->ev_e, comm);
    gt_h5_write_table(f, "/events/kind", H5T_NATIVE_INT32, L->n_ev, 0, L->ev_k, comm);
    if (src->n_machine_types > 0)
        write_names(f, "/legend/machine_type", src->machine_type_names, src->n_machine_types, comm);
    if (src->n_conditions > 0) write_names(f, "/legend/condition", src->condition_names, src->n_conditions, comm);
    if (src->n_event_kinds > 0) write_names(f, "/legend/event_kind", src->event_kind_names, src->n_event_kinds, comm);
    if (src->n_care_events > 0) write_care_events(f, src->care_events, src->n_care_events, comm);
}

/* The rows of every piece, one collective write round each (a rank out of
 * pieces writes nothing); the seconds generating and writing in *gen_s,
 * *write_s. */
static void write_rows(hid_t f, const gt_pdm_source *src, const pdm_layout *L, const pdm_pieces *P,
                       const gt_write_opts *o, double *gen_s, double *write_s) {
    const int64_t N = L->N;
    hid_t d_ts = gt_h5_create(f, "/timestamps", H5T_STD_I64LE, N, 0, o->chunk_rows, o->deflate);
    hid_t d_sig = gt_h5_create(f, "/signals", H5T_IEEE_F32LE, N, L->C, o->chunk_rows, o->deflate);
    hid_t d_lab = gt_h5_create(f, "/labels", H5T_STD_U8LE, N, 0, o->chunk_rows, o->deflate);
    gt_h5_attr_str(d_ts, "units", "ms since 1970-01-01T00:00:00Z");
    gt_h5_attr_str(d_sig, "units", "see /channels/unit");
    gt_h5_attr_str(d_lab, "meaning", "0 normal, else the event kind active at that row (see /legend/event_kind)");
    int64_t *ts = GT_MALLOC((size_t)P->max_piece * 8);               /* (rows) */
    float *sig = GT_MALLOC((size_t)P->max_piece * (size_t)L->C * 4); /* (rows, C) */
    uint8_t *lab = GT_MALLOC((size_t)P->max_piece);                  /* (rows) */
    hid_t dxpl = gt_h5_dxpl(0);
    void *state = NULL;
    for (int r = 0; r < P->n_rounds; r++) {
        gt_row_run run = {0, 0};
        int n_runs = 0;
        double t0 = gt_now();
        if (r < P->n_pieces) {
            pdm_piece p = P->pieces[r];
            if (p.start == 0) state = src->begin(src->ctx, p.t);
            int64_t got = src->next(src->ctx, state, p.count, sig, lab);
            GT_CHECK(got == p.count, GT_EXIT_INTERNAL, "generator of turbine %d gave %lld rows, expected %lld", p.t,
                     (long long)got, (long long)p.count);
            double pms = 1000.0 / src->rate_hz;
            for (int64_t i = 0; i < p.count; i++) ts[i] = gt_io_ts_at(L->info[p.t].t0_ms, pms, p.start + i);
            if (p.start + p.count == L->n_rows[p.t]) {
                src->end(src->ctx, state);
                state = NULL;
            }
            run = (gt_row_run){L->off[p.t] + p.start, p.count};
            n_runs = 1;
        }
        double t1 = gt_now();
        gt_h5_write_runs(d_ts, H5T_NATIVE_INT64, &run, n_runs, ts, dxpl);
        gt_h5_write_runs(d_sig, H5T_NATIVE_FLOAT, &run, n_runs, sig, dxpl);
        gt_h5_write_runs(d_lab, H5T_NATIVE_UINT8, &run, n_runs, lab, dxpl);
        *gen_s += t1 - t0;
        *write_s += gt_now() - t1;
    }
    H5Pclose(dxpl);
    H5Dclose(d_ts);
    H5Dclose(d_sig);
    H5Dclose(d_lab);
    free(ts);
    free(sig);
    free(lab);
}

void gt_pdm_write(const char *path, const gt_pdm_source *src, const gt_write_opts *opts_in, MPI_Comm comm,
                  gt_write_stats *stats) {
    double t_start = gt_now();
    gt_write_opts opts;
    gt_io_write_opts_resolve(opts_in, &opts);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    GT_CHECK(src->n_turbines >= 1 && src->n_channels >= 1, GT_EXIT_USAGE, "nothing to write: %d turbines, %d channels",
             src->n_turbines, src->n_channels);
    GT_CHECK(src->rate_hz > 0, GT_EXIT_USAGE, "rate must be > 0 Hz (got %g)", src->rate_hz);
    pdm_layout L;
    layout_make(&L, src, size);
    pdm_pieces P;
    pieces_make(&P, &L, rank, &opts, comm);

    char tmp[4096];
    hid_t f = gt_io_create_tmp(path, comm, tmp, sizeof tmp);
    gt_io_root_attrs(f, gt_io_kind_pdm.name, src->generator, src->generator_config, src->seed);
    write_tables(f, src, &L, comm);
    double gen_s = 0, write_s = 0;
    write_rows(f, src, &L, &P, &opts, &gen_s, &write_s);
    gt_io_finish_file(f, tmp, path, comm);
    if (stats) *stats = (gt_write_stats){P.n_local, P.my_rows, L.N, P.n_rounds, gen_s, write_s, gt_now() - t_start};
    layout_free(&L, src);
    free(P.pieces);
}

static void pdm_write_any(const char *path, const void *src, const gt_write_opts *o, MPI_Comm comm,
                          gt_write_stats *st) {
    gt_pdm_write(path, src, o, comm, st);
}

/* ------------------------------------------------------------ inspect -- */

static const char *pdm_u8(const gt_file_index *ix) {
    (void)ix;
    return "/labels";
}

static void pdm_period_ms(hid_t f, const gt_file_index *ix, double *period_ms) {
    gt_h5_read_all(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, period_ms);
    for (int i = 0; i < ix->n_items; i++) period_ms[i] = 1000.0 / period_ms[i];
}

/* The number of event kinds of /legend/event_kind: labels at or above are bad. */
typedef struct {
    int n_event_kinds;
} pdm_inspect_state;

/* Every channel gets the spike and stuck checks; only physically
 * non-negative magnitudes (speeds, vibration levels, pressures) the negative
 * one: power is legitimately negative when a turbine idles on grid power,
 * temperatures and angles may be negative. */
static void *pdm_inspect_begin(hid_t f, const gt_file_index *ix, uint8_t *col) {
    const int C = ix->n_cols;
    pdm_inspect_state *s = GT_CALLOC(1, sizeof *s);
    s->n_event_kinds = 256;
    char *units = GT_CALLOC((size_t)C, GT_FORMAT_UNIT_LEN);
    hid_t st = gt_h5_str_type(GT_FORMAT_UNIT_LEN);
    gt_h5_read_all(f, "/channels/unit", st, units);
    H5Tclose(st);
    for (int c = 0; c < C; c++) {
        const char *u = units + (size_t)c * GT_FORMAT_UNIT_LEN;
        static const char *nonneg[] = {"rpm", "mm/s", "m/s", "m/s2", "g", "g2", "bar"};
        col[c] = GT_IO_COL_SPIKE | GT_IO_COL_STUCK;
        for (size_t k = 0; k < sizeof nonneg / sizeof nonneg[0]; k++)
            if (!strcmp(u, nonneg[k])) col[c] |= GT_IO_COL_NEGATIVE;
    }
    free(units);
    if (H5Lexists(f, "/legend", H5P_DEFAULT) > 0 && H5Lexists(f, "/legend/event_kind", H5P_DEFAULT) > 0) {
        hid_t ds = H5_CHECK(H5Dopen2(f, "/legend/event_kind", H5P_DEFAULT));
        hid_t sp = H5Dget_space(ds);
        hssize_t nk = H5Sget_simple_extent_npoints(sp); /* validated: at most GT_IO_MAX_LEGEND */
        s->n_event_kinds = nk < 0 ? 0 : nk > GT_IO_MAX_LEGEND ? GT_IO_MAX_LEGEND : (int)nk;
        H5Sclose(sp);
        H5Dclose(ds);
    }
    return s;
}

/* Runs of rows with a missing channel; labels beyond the legend. */
static void pdm_inspect_rows(const void *state, int64_t n, int C, const float *x, const float *extra,
                             const uint8_t *u8, int *in_nan, gt_item_report *rep) {
    const pdm_inspect_state *s = state;
    (void)extra;
    for (int64_t j = 0; j < n; j++) {
        int is_nan = 0;
        for (int ch = 0; ch < C && !is_nan; ch++) is_nan = isnan(x[j * C + ch]);
        if (is_nan && !*in_nan) rep->nan_runs++;
        *in_nan = is_nan;
        if (u8[j] >= s->n_event_kinds) rep->own[GT_PDM_OWN_BAD_LABELS]++;
    }
}

static void pdm_inspect_header(FILE *out, const gt_file_index *ix) {
    fprintf(out, "\nsegments: %lld  events: %lld\n", (long long)px_of(ix)->n_segments, (long long)px_of(ix)->n_events);
}

static void pdm_inspect_summary(FILE *out, const gt_file_index *ix, const gt_item_report *tot) {
    (void)ix;
    fprintf(out, " bad_labels=%lld", (long long)tot->own[GT_PDM_OWN_BAD_LABELS]);
}

static const gt_io_inspect_i pdm_inspect = {
    .id_dataset = "/turbines/id",
    .main = "/signals",
    .extra = NULL,
    .u8 = pdm_u8,
    .period_ms = pdm_period_ms,
    .begin = pdm_inspect_begin,
    .rows = pdm_inspect_rows,
    .n_own = GT_PDM_N_OWN,
    .own_finding = 1u << GT_PDM_OWN_BAD_LABELS,
    .header = pdm_inspect_header,
    .summary = pdm_inspect_summary,
};

/* ---------------------------------------------------------------- row -- */

static hid_t mem_i64(void) { return H5T_NATIVE_INT64; }
static hid_t mem_f32(void) { return H5T_NATIVE_FLOAT; }
static hid_t mem_u8(void) { return H5T_NATIVE_UINT8; }

static const gt_io_series pdm_series[] = {
    {"/timestamps", mem_i64, 8, 0},
    {"/signals", mem_f32, 4, 1},
    {"/labels", mem_u8, 1, 0},
};

const gt_io_kind_i gt_io_kind_pdm = {
    .id = GT_KIND_PDM,
    .name = "pdm",
    .item = "turbine",
    .items = "turbines",
    .cols = "channels",
    .validate = pdm_validate,
    .read = pdm_read,
    .shard_free = pdm_shard_free,
    .value_limit = GT_PDM_SIGNAL_LIMIT,
    .limit_key = "data.signal_limit",
    .write = pdm_write_any,
    .inspect = &pdm_inspect,
    .series = pdm_series,
    .n_series = 3,
};
