/* io/schema.c: open + validate a gridtrain HDF5 file (see format.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/repeat.h"
#include "core/check_h5.h"
#include "core/fsutil.h"
#include "io/format.h"
#include "io/h5.h"

const char *gt_file_kind_name(gt_file_kind k) {
    return k == GT_KIND_NILM ? "nilm" : k == GT_KIND_PDM ? "pdm" : "unknown";
}

void gt_file_index_free(gt_file_index *ix) {
    free(ix->row_offset);
    free(ix->lowres_offset);
    memset(ix, 0, sizeof(*ix));
}

_Noreturn void gt_io_fail(MPI_Comm comm, int code, const char *msg) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        fflush(stdout);
        fprintf(stderr, "gridtrain: error: %s\n", msg);
        fflush(stderr);
        gt_abort(code); /* MPI_Abort (handler installed by dist/) ends every rank */
    }
    /* The others wait for rank 0's abort: one MPI_Abort keeps Open MPI's output
     * clean (several at once garble it). The barrier never completes. */
    MPI_Barrier(comm);
    gt_abort(code);
}

#define GT_IO_STR_(x) #x
#define GT_IO_STR(x) GT_IO_STR_(x)

/* Element type expectations. */
typedef enum { T_F32, T_F64, T_I64, T_I32, T_U8, T_STR } want_t;
static const char *want_name(want_t w) {
    static const char *n[] = {"float32", "float64", "int64", "int32", "uint8", "fixed-length string"};
    return n[w];
}
static void type_name(hid_t t, char *out, size_t n) {
    H5T_class_t c = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    if (c == H5T_FLOAT)
        snprintf(out, n, "float%zu", sz * 8);
    else if (c == H5T_INTEGER)
        snprintf(out, n, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", sz * 8);
    else if (c == H5T_STRING)
        snprintf(out, n, "%s string", H5Tis_variable_str(t) > 0 ? "variable-length" : "fixed-length");
    else
        snprintf(out, n, "HDF5 type class %d", (int)c);
}
static int type_ok(hid_t t, want_t w) {
    H5T_class_t c = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    switch (w) {
    case T_F32: return c == H5T_FLOAT && sz == 4;
    case T_F64: return c == H5T_FLOAT && sz == 8;
    case T_I64: return c == H5T_INTEGER && sz == 8 && H5Tget_sign(t) == H5T_SGN_2;
    case T_I32: return c == H5T_INTEGER && sz == 4 && H5Tget_sign(t) == H5T_SGN_2;
    case T_U8: return c == H5T_INTEGER && sz == 1 && H5Tget_sign(t) == H5T_SGN_NONE;
    case T_STR: return c == H5T_STRING && H5Tis_variable_str(t) == 0;
    }
    return 0;
}

typedef struct {
    const char *path;
    char *err;
    size_t err_bytes;
} vctx;

static int fail(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(vctx *v, const char *fmt, ...) {
    int n = snprintf(v->err, v->err_bytes, "%s: ", v->path);
    if (n < 0 || (size_t)n >= v->err_bytes) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->err + n, v->err_bytes - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int exists(hid_t f, const char *name) {
    /* H5Lexists on "/a/b" fails when "/a" is missing: walk the components */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
            if (c == '\0') return 1;
            *p = c;
        }
    }
}

/* NULL when every element of the dataset has storage in the file: all chunks
 * of a chunked layout allocated, the whole extent of a contiguous one. */
static const char *stored_fully(hid_t ds, hid_t space, hid_t type, hid_t dcpl) {
    static char why[160];
    int r = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK] = {0};
    if (r < 0 || r > H5S_MAX_RANK || H5Sget_simple_extent_dims(space, dims, NULL) < 0) return "cannot read its shape";
    hsize_t n = 1;
    for (int d = 0; d < r; d++) n *= dims[d];
    if (n == 0) return NULL;
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout == H5D_CHUNKED) {
        hsize_t cdims[H5S_MAX_RANK] = {0}, want = 1, have = 0;
        if (H5Pget_chunk(dcpl, r, cdims) != r) return "cannot read its chunk shape";
        for (int d = 0; d < r; d++) {
            if (cdims[d] == 0) return "has a chunk dimension of 0";
            want *= (dims[d] + cdims[d] - 1) / cdims[d];
        }
        if (H5Dget_num_chunks(ds, space, &have) < 0) return "cannot count its chunks";
        if (have < want) {
            snprintf(why, sizeof why, "only %llu of its %llu chunks are stored (never completely written, or a "
                     "crafted extent)", (unsigned long long)have, (unsigned long long)want);
            return why;
        }
    } else if (layout == H5D_CONTIGUOUS) {
        hsize_t have = H5Dget_storage_size(ds), want = n * H5Tget_size(type);
        if (have < want) {
            snprintf(why, sizeof why, "only %llu of its %llu bytes are stored (never completely written, or a "
                     "crafted extent)", (unsigned long long)have, (unsigned long long)want);
            return why;
        }
    }
    return NULL;
}

/* Checks dataset `name`: present, type, rank 1 or 2, dims (-1: any, filled in),
 * its filters available, and (fixed-length strings) a sane string size. Every
 * dimension must be at most `max0` (rows) and the columns at most GT_IO_MAX_COLS,
 * so that every count read from the file fits its later allocation. */
static int check_ds_max(vctx *v, hid_t f, const char *name, want_t w, int rank, int64_t *d0, int64_t *d1,
                        int64_t max0) {
    if (!exists(f, name)) return fail(v, "%s: missing dataset", name);
    H5O_info_t oi;
    if (H5Oget_info_by_name(f, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
        return fail(v, "%s: is not a dataset", name);
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) return fail(v, "%s: cannot open dataset", name);
    hid_t t = H5Dget_type(ds), s = H5Dget_space(ds), dcpl = H5Dget_create_plist(ds);
    int rc = 0;
    if (t < 0 || s < 0 || dcpl < 0) {
        rc = fail(v, "%s: cannot read the dataset's type or shape", name);
    } else if (!type_ok(t, w)) {
        char tn[64];
        type_name(t, tn, sizeof tn);
        rc = fail(v, "%s: wrong type %s (expected %s)", name, tn, want_name(w));
    } else if (w == T_STR && (H5Tget_size(t) < 1 || H5Tget_size(t) > GT_IO_MAX_STR_BYTES)) {
        rc = fail(v, "%s: strings of %zu bytes (at most %d supported)", name, H5Tget_size(t), GT_IO_MAX_STR_BYTES);
    } else {
        int r = H5Sget_simple_extent_ndims(s);
        hsize_t dims[H5S_MAX_RANK] = {0};
        if (r > 0 && r <= H5S_MAX_RANK) H5Sget_simple_extent_dims(s, dims, NULL);
        char got[64];
        if (r == 1) snprintf(got, sizeof got, "[%llu]", (unsigned long long)dims[0]);
        else if (r == 2) snprintf(got, sizeof got, "[%llu, %llu]", (unsigned long long)dims[0], (unsigned long long)dims[1]);
        else snprintf(got, sizeof got, "of rank %d", r);
        char want[64];
        if (rank == 1) snprintf(want, sizeof want, "[%s]", *d0 < 0 ? "n" : "");
        if (rank == 1 && *d0 >= 0) snprintf(want, sizeof want, "[%lld]", (long long)*d0);
        if (rank == 2) {
            char a[24], b[24];
            if (*d0 < 0) snprintf(a, sizeof a, "n"); else snprintf(a, sizeof a, "%lld", (long long)*d0);
            if (*d1 < 0) snprintf(b, sizeof b, "m"); else snprintf(b, sizeof b, "%lld", (long long)*d1);
            snprintf(want, sizeof want, "[%s, %s]", a, b);
        }
        if (r != rank)
            rc = fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else if (dims[0] > (hsize_t)max0 || (rank == 2 && dims[1] > (hsize_t)GT_IO_MAX_COLS))
            rc = fail(v, "%s: shape %s exceeds the supported size (at most %lld rows%s)", name, got, (long long)max0,
                      rank == 2 ? " and " GT_IO_STR(GT_IO_MAX_COLS) " columns" : "");
        else if ((*d0 >= 0 && (int64_t)dims[0] != *d0) || (rank == 2 && *d1 >= 0 && (int64_t)dims[1] != *d1))
            rc = fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else {
            *d0 = (int64_t)dims[0];
            if (rank == 2) *d1 = (int64_t)dims[1];
        }
    }
    /* storage for every element: a crafted extent (2^32 entries in a small file)
     * or a dataset never completely written reads back fill values */
    if (rc == 0) {
        const char *why = stored_fully(ds, s, t, dcpl);
        if (why) rc = fail(v, "%s: %s", name, why);
    }
    /* a filter this build lacks would only fail at the first read, deep in a collective */
    int nf = rc == 0 ? H5Pget_nfilters(dcpl) : 0;
    for (int k = 0; rc == 0 && k < nf; k++) {
        unsigned flags = 0, cfg = 0;
        size_t n_el = 0;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &n_el, NULL, sizeof fname, fname, &cfg);
        if (id < 0 || H5Zfilter_avail(id) <= 0)
            rc = fail(v, "%s: compressed with HDF5 filter %d (%s), which this build cannot decode", name, (int)id,
                      fname[0] ? fname : "unknown");
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    H5Dclose(ds);
    return rc;
}
static int check_ds(vctx *v, hid_t f, const char *name, want_t w, int rank, int64_t *d0, int64_t *d1) {
    return check_ds_max(v, f, name, w, rank, d0, d1, GT_IO_MAX_ROWS);
}
#define DS1(name, w, d0) check_ds(v, f, name, w, 1, d0, NULL)

/* Reads a whole small 1-D dataset of n elements (n validated against its
 * extent by check_ds) into a new buffer; NULL after fail() when it cannot. */
static void *read_small(vctx *v, hid_t f, const char *name, hid_t mem_type, size_t elem_bytes, int64_t n) {
    void *buf = GT_MALLOC(elem_bytes * (size_t)(n > 0 ? n : 1));
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    herr_t e = ds >= 0 && n > 0 ? H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : ds >= 0 ? 0 : -1;
    if (ds >= 0) H5Dclose(ds);
    if (e < 0) {
        free(buf);
        fail(v, "%s: cannot read (damaged or truncated file?)", name);
        return NULL;
    }
    return buf;
}

/* Reads and checks offsets [n+1]: 0, strictly increasing, last == n_rows. */
static int check_offsets(vctx *v, hid_t f, const char *name, int64_t n, int64_t n_rows, int64_t **out) {
    int64_t *o = read_small(v, f, name, H5T_NATIVE_INT64, sizeof(int64_t), n + 1);
    if (!o) return -1;
    int rc = 0;
    if (o[0] != 0)
        rc = fail(v, "%s: first offset is %lld (expected 0)", name, (long long)o[0]);
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (o[i + 1] <= o[i])
            rc = fail(v, "%s: offsets not increasing at item %lld (%lld then %lld)", name, (long long)i,
                      (long long)o[i], (long long)o[i + 1]);
    if (rc == 0 && o[n] != n_rows)
        rc = fail(v, "%s: last offset %lld does not match the %lld rows of the data", name,
                  (long long)o[n], (long long)n_rows);
    if (rc) free(o);
    else *out = o;
    return rc;
}

/* Per-item or per-column metadata: finite and in [lo, hi] (lo_open: > lo). */
static int check_values(vctx *v, hid_t f, const char *name, int64_t n, double lo, int lo_open, double hi,
                        const char *unit, const char *what) {
    double *x = read_small(v, f, name, H5T_NATIVE_DOUBLE, sizeof(double), n);
    if (!x) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (!isfinite(x[i]) || (lo_open ? !(x[i] > lo) : !(x[i] >= lo)) || x[i] > hi)
            rc = fail(v, "%s: entry %lld (%s) is %g%s; expected a finite value %s %g and <= %g%s", name, (long long)i,
                      what, x[i], unit, lo_open ? ">" : ">=", lo, hi, unit);
    free(x);
    return rc;
}

/* Checks a (turbine, start_row, end_row, code) table against the offsets. */
static int check_table(vctx *v, hid_t f, const char *grp, const char *code_name, int64_t n_items,
                       const int64_t *off, int64_t code_max, int64_t *n_out) {
    char nt[96], ns[96], ne[96], nc[96];
    snprintf(nt, sizeof nt, "/%s/turbine", grp);
    snprintf(ns, sizeof ns, "/%s/start_row", grp);
    snprintf(ne, sizeof ne, "/%s/end_row", grp);
    snprintf(nc, sizeof nc, "/%s/%s", grp, code_name);
    int64_t n = -1;
    if (check_ds_max(v, f, nt, T_I32, 1, &n, NULL, GT_IO_MAX_SPANS)) return -1;
    if (DS1(ns, T_I64, &n) || DS1(ne, T_I64, &n) || DS1(nc, T_I32, &n)) return -1;
    int32_t *tu = read_small(v, f, nt, H5T_NATIVE_INT32, sizeof(int32_t), n);
    int64_t *st = tu ? read_small(v, f, ns, H5T_NATIVE_INT64, sizeof(int64_t), n) : NULL;
    int64_t *en = st ? read_small(v, f, ne, H5T_NATIVE_INT64, sizeof(int64_t), n) : NULL;
    int32_t *code = en ? read_small(v, f, nc, H5T_NATIVE_INT32, sizeof(int32_t), n) : NULL;
    int rc = code ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (tu[i] < 0 || tu[i] >= n_items)
            rc = fail(v, "%s: entry %lld names turbine %d, file has %lld", nt, (long long)i, tu[i], (long long)n_items);
        else if (st[i] < 0 || en[i] <= st[i] || en[i] > off[tu[i] + 1] - off[tu[i]])
            rc = fail(v, "%s: entry %lld has rows [%lld, %lld) outside turbine %d's %lld rows", ns,
                      (long long)i, (long long)st[i], (long long)en[i], tu[i],
                      (long long)(off[tu[i] + 1] - off[tu[i]]));
        else if (code[i] < 0 || code[i] > code_max) /* codes index the per-code tables of eval and the legend */
            rc = fail(v, "%s: entry %lld is code %d (codes are 0..%lld)", nc, (long long)i, code[i],
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

/* The optional /care_events table: equal lengths, turbines in range, event ids
 * >= 0 and unique (gt_io_care_event_ids_check), the
 * prediction part and the event non-empty row ranges of the turbine, labels
 * 0/1; the optional training part (train_start_row, train_end_row: both or
 * neither) a non-empty range of the turbine, or -1, -1 (no training rows). */
static int check_care_events(vctx *v, hid_t f, int n_items, const int64_t *off, int64_t *n_out) {
    static const char *const cols[9] = {"turbine",       "event_id",        "label",
                                        "pred_start_row", "pred_end_row",   "event_start_row",
                                        "event_end_row",  "train_start_row", "train_end_row"};
    int64_t n = -1;
    char name[9][64];
    for (int c = 0; c < 9; c++) snprintf(name[c], sizeof name[c], "/care_events/%s", cols[c]);
    int has_train = exists(f, name[7]);
    if (has_train != exists(f, name[8]))
        return fail(v, "%s: present without %s (the training part takes both)", name[has_train ? 7 : 8],
                    name[has_train ? 8 : 7]);
    const int K = has_train ? 9 : 7;
    for (int c = 0; c < K; c++)
        if (DS1(name[c], c == 0 || c == 2 ? T_I32 : T_I64, &n)) return -1;
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
        if (gt_io_care_event_ids_check(col, n, why, sizeof why)) rc = fail(v, "%s: %s", name[1], why);
    }
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const int64_t *q = x + 9 * i;
        int64_t rows = q[0] >= 0 && q[0] < n_items ? off[q[0] + 1] - off[q[0]] : 0;
        if (q[0] < 0 || q[0] >= n_items)
            rc = fail(v, "%s: entry %lld names turbine %lld, file has %d", name[0], (long long)i, (long long)q[0], n_items);
        else if (q[2] != 0 && q[2] != 1)
            rc = fail(v, "%s: entry %lld is %lld (expected 0 normal or 1 anomaly)", name[2], (long long)i, (long long)q[2]);
        else if (q[3] < 0 || q[4] <= q[3] || q[4] > rows || q[5] < 0 || q[6] <= q[5] || q[6] > rows)
            rc = fail(v, "/care_events: entry %lld has prediction rows [%lld, %lld) or event rows [%lld, %lld) outside "
                         "turbine %lld's %lld rows", (long long)i, (long long)q[3], (long long)q[4], (long long)q[5],
                      (long long)q[6], (long long)q[0], (long long)rows);
        else if (!(q[7] == -1 && q[8] == -1) && (q[7] < 0 || q[8] <= q[7] || q[8] > rows))
            rc = fail(v, "/care_events: entry %lld has training rows [%lld, %lld) outside turbine %lld's %lld rows "
                         "(expected a non-empty range, or -1, -1 for none)",
                      (long long)i, (long long)q[7], (long long)q[8], (long long)q[0], (long long)rows);
    }
    free(x);
    free(col);
    *n_out = n;
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Item ids are unique (reports, filters and predictions name items by id). */
static int check_ids(vctx *v, hid_t f, const char *name, int64_t n) {
    int64_t *id = read_small(v, f, name, H5T_NATIVE_INT64, sizeof(int64_t), n);
    if (!id) return -1;
    qsort(id, (size_t)n, sizeof *id, cmp_i64);
    int rc = 0;
    for (int64_t i = 1; rc == 0 && i < n; i++)
        if (id[i] == id[i - 1]) rc = fail(v, "%s: id %lld appears more than once", name, (long long)id[i]);
    free(id);
    return rc;
}

/* Names of appliances / channels: not empty, no control characters, unique. */
static int check_names(vctx *v, hid_t f, const char *name, int64_t n) {
    hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN);
    char *s = read_small(v, f, name, st, GT_FORMAT_NAME_LEN, n);
    H5Tclose(st);
    if (!s) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        char *p = s + (size_t)i * GT_FORMAT_NAME_LEN;
        p[GT_FORMAT_NAME_LEN - 1] = 0;
        if (!p[0]) rc = fail(v, "%s: entry %lld is empty", name, (long long)i);
        for (const char *q = p; rc == 0 && *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f)
                rc = fail(v, "%s: entry %lld holds a control character", name, (long long)i);
    }
    char **sorted = GT_MALLOC(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) sorted[i] = s + (size_t)i * GT_FORMAT_NAME_LEN;
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    for (int64_t i = 1; rc == 0 && i < n; i++)
        if (!strcmp(sorted[i], sorted[i - 1])) rc = fail(v, "%s: '%s' appears more than once", name, sorted[i]);
    free(sorted);
    free(s);
    return rc;
}

/* /households/owns holds 0 or 1. */
static int check_flags01(vctx *v, hid_t f, const char *name, int64_t n) {
    uint8_t *x = read_small(v, f, name, H5T_NATIVE_UINT8, 1, n);
    if (!x) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (x[i] > 1) rc = fail(v, "%s: element %lld is %u (0 or 1 expected)", name, (long long)i, x[i]);
    free(x);
    return rc;
}

/* Farm and machine type codes: 0..GT_IO_MAX_LEGEND-1 (they index per-code tables). */
static int check_codes(vctx *v, hid_t f, const char *name, int64_t n) {
    int32_t *c = read_small(v, f, name, H5T_NATIVE_INT32, sizeof(int32_t), n);
    if (!c) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (c[i] < 0 || c[i] >= GT_IO_MAX_LEGEND)
            rc = fail(v, "%s: entry %lld is code %d (codes are 0..%d)", name, (long long)i, c[i], GT_IO_MAX_LEGEND - 1);
    free(c);
    return rc;
}

/* Optional /legend/<name>: names of codes, a small fixed-length string table. */
static int check_legend(vctx *v, hid_t f) {
    if (!exists(f, "/legend")) return 0;
    static const char *const names[] = {"/legend/machine_type", "/legend/condition", "/legend/event_kind"};
    for (int k = 0; k < 3; k++) {
        int64_t n = -1;
        if (exists(f, names[k]) && check_ds_max(v, f, names[k], T_STR, 1, &n, NULL, GT_IO_MAX_LEGEND)) return -1;
    }
    return 0;
}

static int validate_nilm(vctx *v, hid_t f, gt_file_index *ix) {
    int64_t H = -1, H1, A = -1, N = -1;
    if (check_ds_max(v, f, "/households/id", T_I64, 1, &H, NULL, GT_IO_MAX_ITEMS)) return -1;
    if (H < 1) return fail(v, "/households/id: no households");
    H1 = H + 1;
    if (DS1("/households/row_offset", T_I64, &H1)) return -1;
    if (DS1("/households/period_s", T_F64, &H)) return -1;
    if (DS1("/appliance_meta/name", T_STR, &A)) return -1;
    if (A < 1) return fail(v, "/appliance_meta/name: no appliances");
    if (A > GT_IO_MAX_COLS) return fail(v, "/appliance_meta/name: %lld appliances (at most %d supported)", (long long)A, GT_IO_MAX_COLS);
    if (DS1("/appliance_meta/on_power_w", T_F32, &A) || DS1("/appliance_meta/on_duration_s", T_F32, &A) ||
        DS1("/appliance_meta/max_power_w", T_F32, &A))
        return -1;
    if (DS1("/timestamps", T_I64, &N) || DS1("/aggregate", T_F32, &N)) return -1;
    if (check_ds(v, f, "/appliances", T_F32, 2, &N, &A)) return -1;
    if (N < H) return fail(v, "/timestamps: %lld rows for %lld households (every household has at least one row)",
                           (long long)N, (long long)H);
    ix->has_owns = exists(f, "/households/owns");
    if (ix->has_owns && check_ds(v, f, "/households/owns", T_U8, 2, &H, &A)) return -1;
    ix->has_faults = exists(f, "/fault_flags");
    if (ix->has_faults && DS1("/fault_flags", T_U8, &N)) return -1;
    ix->n_items = (int)H;
    ix->n_cols = (int)A;
    ix->n_rows = N;
    if (check_offsets(v, f, "/households/row_offset", H, N, &ix->row_offset)) return -1;
    if (check_values(v, f, "/households/period_s", H, GT_IO_MIN_PERIOD_S, 0, GT_IO_MAX_PERIOD_S, " s", "household") ||
        check_values(v, f, "/appliance_meta/on_power_w", A, 0, 1, 1e7, " W", "appliance") ||
        check_values(v, f, "/appliance_meta/on_duration_s", A, 0, 1, 1e7, " s", "appliance") ||
        check_values(v, f, "/appliance_meta/max_power_w", A, 0, 1, 1e7, " W", "appliance") ||
        check_ids(v, f, "/households/id", H) || check_names(v, f, "/appliance_meta/name", A) ||
        (ix->has_owns && check_flags01(v, f, "/households/owns", H * A)))
        return -1;
    ix->has_lowres = exists(f, "/lowres");
    if (ix->has_lowres) {
        int64_t M = -1;
        if (DS1("/lowres/row_offset", T_I64, &H1) || DS1("/lowres/timestamps", T_I64, &M) ||
            DS1("/lowres/aggregate", T_F32, &M) || check_ds(v, f, "/lowres/appliances", T_F32, 2, &M, &A))
            return -1;
        hid_t g = H5Gopen2(f, "/lowres", H5P_DEFAULT);
        int e = g >= 0 ? gt_h5_attr_read_f64(g, "period_s", &ix->lowres_period_s) : -1;
        if (g >= 0) H5Gclose(g);
        if (e < 0 || !isfinite(ix->lowres_period_s) || !(ix->lowres_period_s >= GT_IO_MIN_PERIOD_S) ||
            ix->lowres_period_s > GT_IO_MAX_PERIOD_S)
            return fail(v, "/lowres: attribute period_s missing, not a number or outside [%g, %g] s", GT_IO_MIN_PERIOD_S,
                        GT_IO_MAX_PERIOD_S);
        if (M < H) return fail(v, "/lowres/timestamps: %lld rows for %lld households", (long long)M, (long long)H);
        ix->n_lowres_rows = M;
        if (check_offsets(v, f, "/lowres/row_offset", H, M, &ix->lowres_offset)) return -1;
    }
    return 0;
}

static int validate_pdm(vctx *v, hid_t f, gt_file_index *ix) {
    int64_t T = -1, T1, C = -1, N = -1;
    if (check_ds_max(v, f, "/turbines/id", T_I64, 1, &T, NULL, GT_IO_MAX_ITEMS)) return -1;
    if (T < 1) return fail(v, "/turbines/id: no turbines");
    T1 = T + 1;
    if (DS1("/turbines/farm", T_I32, &T) || DS1("/turbines/machine_type", T_I32, &T) ||
        DS1("/turbines/rate_hz", T_F64, &T) || DS1("/turbines/row_offset", T_I64, &T1))
        return -1;
    if (DS1("/channels/name", T_STR, &C)) return -1;
    if (C < 1) return fail(v, "/channels/name: no channels");
    if (C > GT_IO_MAX_COLS) return fail(v, "/channels/name: %lld channels (at most %d supported)", (long long)C, GT_IO_MAX_COLS);
    if (DS1("/channels/unit", T_STR, &C)) return -1;
    if (exists(f, "/channels/description") && DS1("/channels/description", T_STR, &C)) return -1; /* optional */
    if (DS1("/timestamps", T_I64, &N) || DS1("/labels", T_U8, &N)) return -1;
    if (check_ds(v, f, "/signals", T_F32, 2, &N, &C)) return -1;
    if (N < T) return fail(v, "/timestamps: %lld rows for %lld turbines (every turbine has at least one row)",
                           (long long)N, (long long)T);
    ix->n_items = (int)T;
    ix->n_cols = (int)C;
    ix->n_rows = N;
    if (check_offsets(v, f, "/turbines/row_offset", T, N, &ix->row_offset)) return -1;
    if (check_values(v, f, "/turbines/rate_hz", T, 1.0 / GT_IO_MAX_PERIOD_S, 0, 1.0 / GT_IO_MIN_PERIOD_S, " Hz",
                     "turbine") ||
        check_ids(v, f, "/turbines/id", T) || check_names(v, f, "/channels/name", C))
        return -1;
    if (check_table(v, f, "segments", "condition", T, ix->row_offset, GT_IO_MAX_LEGEND - 1, &ix->n_segments)) return -1;
    if (check_table(v, f, "events", "kind", T, ix->row_offset, 255, &ix->n_events)) return -1; /* /labels are uint8 */
    if (check_codes(v, f, "/turbines/farm", T) || check_codes(v, f, "/turbines/machine_type", T)) return -1;
    if (exists(f, "/care_events") && check_care_events(v, f, (int)T, ix->row_offset, &ix->n_care_events)) return -1;
    if (check_legend(v, f)) return -1;
    return 0;
}

hid_t gt_io_open(const char *path, MPI_Comm comm, gt_file_kind expect, gt_file_index *ix, char *err,
                 size_t err_bytes) {
    gt_h5_quiet();
    memset(ix, 0, sizeof(*ix));
    vctx vv = {path, err, err_bytes}, *v = &vv;
    err[0] = '\0';
    struct stat sb;
    if (stat(path, &sb) != 0 || access(path, R_OK) != 0) {
        fail(v, "cannot open file: %s", strerror(errno));
        return -1;
    }
    /* a FIFO or device would block HDF5's open forever, a directory is a mistake */
    if (!S_ISREG(sb.st_mode)) {
        fail(v, "not a regular file (%s)", gt_file_type_name(sb.st_mode));
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        fail(v, "not an HDF5 file");
        return -1;
    }
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = gt_h5_open_ro(path, fapl, err, err_bytes); /* links, virtual and external storage refused */
    H5Pclose(fapl);
    if (f < 0) return -1;
    char kind[64];
    int rc = 0;
    if (gt_h5_attr_read_str(f, "kind", kind, sizeof kind) < 0)
        rc = fail(v, "root attribute 'kind' missing or not a string (not a gridtrain file?)");
    else if (strcmp(kind, "nilm") == 0)
        ix->kind = GT_KIND_NILM;
    else if (strcmp(kind, "pdm") == 0)
        ix->kind = GT_KIND_PDM;
    else
        rc = fail(v, "root attribute 'kind': unknown kind '%s' (expected nilm or pdm)", kind);
    if (rc == 0 && gt_h5_attr_read_i64(f, "schema_version", &ix->version) < 0)
        rc = fail(v, "root attribute 'schema_version' missing or not an integer");
    if (rc == 0 && ix->version != GT_SCHEMA_VERSION)
        rc = fail(v, "root attribute 'schema_version': version %lld is not supported (this build reads %d)",
                  (long long)ix->version, GT_SCHEMA_VERSION);
    if (rc == 0 && expect != GT_KIND_UNKNOWN && ix->kind != expect)
        rc = fail(v, "root attribute 'kind': file holds '%s' data, expected '%s'", gt_file_kind_name(ix->kind),
                  gt_file_kind_name(expect));
    if (rc == 0) rc = ix->kind == GT_KIND_NILM ? validate_nilm(v, f, ix) : validate_pdm(v, f, ix);
    if (rc != 0) {
        gt_file_index_free(ix);
        H5Fclose(f);
        return -1;
    }
    return f;
}
