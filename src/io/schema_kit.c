/* io/schema_kit.c: the schema checks every kind's validate uses (see
 * io/kind.h) and the job's end on bad input. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"

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

#define GT_IO_QUOTE_(x) #x
#define GT_IO_QUOTE(x) GT_IO_QUOTE_(x)

/* Element type expectations. */
static const char *want_name(gt_io_elem w) {
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
static int type_ok(hid_t t, gt_io_elem w) {
    H5T_class_t c = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    switch (w) {
    case GT_IO_F32: return c == H5T_FLOAT && sz == 4;
    case GT_IO_F64: return c == H5T_FLOAT && sz == 8;
    case GT_IO_I64: return c == H5T_INTEGER && sz == 8 && H5Tget_sign(t) == H5T_SGN_2;
    case GT_IO_I32: return c == H5T_INTEGER && sz == 4 && H5Tget_sign(t) == H5T_SGN_2;
    case GT_IO_U8: return c == H5T_INTEGER && sz == 1 && H5Tget_sign(t) == H5T_SGN_NONE;
    case GT_IO_STR: return c == H5T_STRING && H5Tis_variable_str(t) == 0;
    }
    return 0;
}


int gt_io_check_fail(gt_io_check *v, const char *fmt, ...) {
    int n = snprintf(v->err, v->err_bytes, "%s: ", v->path);
    if (n < 0 || (size_t)n >= v->err_bytes) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->err + n, v->err_bytes - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

int gt_io_exists(hid_t f, const char *name) {
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

int gt_io_check_ds(gt_io_check *v, hid_t f, const char *name, gt_io_elem w, int rank, int64_t *d0, int64_t *d1,
                   int64_t max0) {
    if (!gt_io_exists(f, name)) return gt_io_check_fail(v, "%s: missing dataset", name);
    H5O_info_t oi;
    if (H5Oget_info_by_name(f, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
        return gt_io_check_fail(v, "%s: is not a dataset", name);
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) return gt_io_check_fail(v, "%s: cannot open dataset", name);
    hid_t t = H5Dget_type(ds), s = H5Dget_space(ds), dcpl = H5Dget_create_plist(ds);
    int rc = 0;
    if (t < 0 || s < 0 || dcpl < 0) {
        rc = gt_io_check_fail(v, "%s: cannot read the dataset's type or shape", name);
    } else if (!type_ok(t, w)) {
        char tn[64];
        type_name(t, tn, sizeof tn);
        rc = gt_io_check_fail(v, "%s: wrong type %s (expected %s)", name, tn, want_name(w));
    } else if (w == GT_IO_STR && (H5Tget_size(t) < 1 || H5Tget_size(t) > GT_IO_MAX_STR_BYTES)) {
        rc = gt_io_check_fail(v, "%s: strings of %zu bytes (at most %d supported)", name, H5Tget_size(t), GT_IO_MAX_STR_BYTES);
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
            rc = gt_io_check_fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else if (dims[0] > (hsize_t)max0 || (rank == 2 && dims[1] > (hsize_t)GT_IO_MAX_COLS))
            rc = gt_io_check_fail(v, "%s: shape %s exceeds the supported size (at most %lld rows%s)", name, got, (long long)max0,
                                  rank == 2 ? " and " GT_IO_QUOTE(GT_IO_MAX_COLS) " columns" : "");
        else if ((*d0 >= 0 && (int64_t)dims[0] != *d0) || (rank == 2 && *d1 >= 0 && (int64_t)dims[1] != *d1))
            rc = gt_io_check_fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else {
            *d0 = (int64_t)dims[0];
            if (rank == 2) *d1 = (int64_t)dims[1];
        }
    }
    /* storage for every element: a crafted extent (2^32 entries in a small file)
     * or a dataset never completely written reads back fill values */
    if (rc == 0) {
        const char *why = stored_fully(ds, s, t, dcpl);
        if (why) rc = gt_io_check_fail(v, "%s: %s", name, why);
    }
    /* a filter this build lacks would only fail at the first read, deep in a collective */
    int nf = rc == 0 ? H5Pget_nfilters(dcpl) : 0;
    for (int k = 0; rc == 0 && k < nf; k++) {
        unsigned flags = 0, cfg = 0;
        size_t n_el = 0;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &n_el, NULL, sizeof fname, fname, &cfg);
        if (id < 0 || H5Zfilter_avail(id) <= 0)
            rc = gt_io_check_fail(v, "%s: compressed with HDF5 filter %d (%s), which this build cannot decode", name, (int)id,
                                  fname[0] ? fname : "unknown");
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    H5Dclose(ds);
    return rc;
}
int gt_io_check_ds1(gt_io_check *v, hid_t f, const char *name, gt_io_elem w, int64_t *d0) {
    return gt_io_check_ds(v, f, name, w, 1, d0, NULL, GT_IO_MAX_ROWS);
}

/* Reads a whole small 1-D dataset of n elements (n validated against its
 * extent by gt_io_check_ds) into a new buffer; NULL after gt_io_check_fail. */
void *gt_io_read_small(gt_io_check *v, hid_t f, const char *name, hid_t mem_type, size_t elem_bytes, int64_t n) {
    void *buf = GT_MALLOC(elem_bytes * (size_t)(n > 0 ? n : 1));
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    herr_t e = ds >= 0 && n > 0 ? H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : ds >= 0 ? 0 : -1;
    if (ds >= 0) H5Dclose(ds);
    if (e < 0) {
        free(buf);
        gt_io_check_fail(v, "%s: cannot read (damaged or truncated file?)", name);
        return NULL;
    }
    return buf;
}

/* Reads and checks offsets [n+1]: 0, strictly increasing, last == n_rows. */
int gt_io_check_offsets(gt_io_check *v, hid_t f, const char *name, int64_t n, int64_t n_rows, int64_t **out) {
    int64_t *o = gt_io_read_small(v, f, name, H5T_NATIVE_INT64, sizeof(int64_t), n + 1);
    if (!o) return -1;
    int rc = 0;
    if (o[0] != 0)
        rc = gt_io_check_fail(v, "%s: first offset is %lld (expected 0)", name, (long long)o[0]);
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (o[i + 1] <= o[i])
            rc = gt_io_check_fail(v, "%s: offsets not increasing at item %lld (%lld then %lld)", name, (long long)i,
                                  (long long)o[i], (long long)o[i + 1]);
    if (rc == 0 && o[n] != n_rows)
        rc = gt_io_check_fail(v, "%s: last offset %lld does not match the %lld rows of the data", name,
                              (long long)o[n], (long long)n_rows);
    if (rc) free(o);
    else *out = o;
    return rc;
}

/* Per-item or per-column metadata: finite and in [lo, hi] (lo_open: > lo). */
int gt_io_check_values(gt_io_check *v, hid_t f, const char *name, int64_t n, double lo, int lo_open, double hi,
                        const char *unit, const char *what) {
    double *x = gt_io_read_small(v, f, name, H5T_NATIVE_DOUBLE, sizeof(double), n);
    if (!x) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (!isfinite(x[i]) || (lo_open ? !(x[i] > lo) : !(x[i] >= lo)) || x[i] > hi)
            rc = gt_io_check_fail(v, "%s: entry %lld (%s) is %g%s; expected a finite value %s %g and <= %g%s", name, (long long)i,
                                  what, x[i], unit, lo_open ? ">" : ">=", lo, hi, unit);
    free(x);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Item ids are unique (reports, filters and predictions name items by id). */
int gt_io_check_ids(gt_io_check *v, hid_t f, const char *name, int64_t n) {
    int64_t *id = gt_io_read_small(v, f, name, H5T_NATIVE_INT64, sizeof(int64_t), n);
    if (!id) return -1;
    qsort(id, (size_t)n, sizeof *id, cmp_i64);
    int rc = 0;
    for (int64_t i = 1; rc == 0 && i < n; i++)
        if (id[i] == id[i - 1]) rc = gt_io_check_fail(v, "%s: id %lld appears more than once", name, (long long)id[i]);
    free(id);
    return rc;
}

/* Names of appliances / channels: not empty, no control characters, unique. */
int gt_io_check_names(gt_io_check *v, hid_t f, const char *name, int64_t n) {
    hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN);
    char *s = gt_io_read_small(v, f, name, st, GT_FORMAT_NAME_LEN, n);
    H5Tclose(st);
    if (!s) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        char *p = s + (size_t)i * GT_FORMAT_NAME_LEN;
        p[GT_FORMAT_NAME_LEN - 1] = 0;
        if (!p[0]) rc = gt_io_check_fail(v, "%s: entry %lld is empty", name, (long long)i);
        for (const char *q = p; rc == 0 && *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f)
                rc = gt_io_check_fail(v, "%s: entry %lld holds a control character", name, (long long)i);
    }
    char **sorted = GT_MALLOC(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) sorted[i] = s + (size_t)i * GT_FORMAT_NAME_LEN;
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    for (int64_t i = 1; rc == 0 && i < n; i++)
        if (!strcmp(sorted[i], sorted[i - 1])) rc = gt_io_check_fail(v, "%s: '%s' appears more than once", name, sorted[i]);
    free(sorted);
    free(s);
    return rc;
}

/* Integer codes 0..max (they index per-code tables). */
int gt_io_check_codes(gt_io_check *v, hid_t f, const char *name, int64_t n, int64_t max) {
    int32_t *c = gt_io_read_small(v, f, name, H5T_NATIVE_INT32, sizeof(int32_t), n);
    if (!c) return -1;
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (c[i] < 0 || c[i] > max)
            rc = gt_io_check_fail(v, "%s: entry %lld is code %d (codes are 0..%lld)", name, (long long)i, c[i], (long long)max);
    free(c);
    return rc;
}
