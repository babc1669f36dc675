/* io/schema.c: open + validate a gridtrain HDF5 file (see format.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/check_h5.h"
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

/* Checks dataset `name`: present, type, rank 1 or 2, dims (-1: any, filled in). */
static int check_ds(vctx *v, hid_t f, const char *name, want_t w, int rank, int64_t *d0, int64_t *d1) {
    if (!exists(f, name)) return fail(v, "%s: missing dataset", name);
    H5O_info_t oi;
    if (H5Oget_info_by_name(f, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
        return fail(v, "%s: is not a dataset", name);
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) return fail(v, "%s: cannot open dataset", name);
    hid_t t = H5Dget_type(ds), s = H5Dget_space(ds);
    int rc = 0;
    if (!type_ok(t, w)) {
        char tn[64];
        type_name(t, tn, sizeof tn);
        rc = fail(v, "%s: wrong type %s (expected %s)", name, tn, want_name(w));
    } else {
        int r = H5Sget_simple_extent_ndims(s);
        hsize_t dims[8] = {0};
        if (r > 0 && r <= 8) H5Sget_simple_extent_dims(s, dims, NULL);
        char got[64];
        if (r == 1) snprintf(got, sizeof got, "[%llu]", (unsigned long long)dims[0]);
        else if (r == 2) snprintf(got, sizeof got, "[%llu, %llu]", (unsigned long long)dims[0], (unsigned long long)dims[1]);
        else snprintf(got, sizeof got, "of rank %d", r);
        char want[64];
        if (rank == 1) snprintf(want, sizeof want, "[%s]", *d0 < 0 ? "n" : "");
        if (rank == 1 && *d0 >= 0) snprintf(want, sizeof want, "[%lld]", (long long)*d0);
        if (rank == 2)
            snprintf(want, sizeof want, "[%s, %s]", *d0 < 0 ? "n" : "", "");
        if (rank == 2) {
            char a[24], b[24];
            if (*d0 < 0) snprintf(a, sizeof a, "n"); else snprintf(a, sizeof a, "%lld", (long long)*d0);
            if (*d1 < 0) snprintf(b, sizeof b, "m"); else snprintf(b, sizeof b, "%lld", (long long)*d1);
            snprintf(want, sizeof want, "[%s, %s]", a, b);
        }
        if (r != rank)
            rc = fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else if ((*d0 >= 0 && (int64_t)dims[0] != *d0) || (rank == 2 && *d1 >= 0 && (int64_t)dims[1] != *d1))
            rc = fail(v, "%s: wrong shape %s (expected %s)", name, got, want);
        else {
            *d0 = (int64_t)dims[0];
            if (rank == 2) *d1 = (int64_t)dims[1];
        }
    }
    H5Tclose(t);
    H5Sclose(s);
    H5Dclose(ds);
    return rc;
}
#define DS1(name, w, d0) check_ds(v, f, name, w, 1, d0, NULL)

/* Reads and checks offsets [n+1]: 0, strictly increasing, last == n_rows. */
static int check_offsets(vctx *v, hid_t f, const char *name, int n, int64_t n_rows, int64_t **out) {
    int64_t *o = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    herr_t e = ds >= 0 ? H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, o) : -1;
    if (ds >= 0) H5Dclose(ds);
    if (e < 0) {
        free(o);
        return fail(v, "%s: cannot read", name);
    }
    int rc = 0;
    if (o[0] != 0)
        rc = fail(v, "%s: first offset is %lld (expected 0)", name, (long long)o[0]);
    for (int i = 0; rc == 0 && i < n; i++)
        if (o[i + 1] <= o[i])
            rc = fail(v, "%s: offsets not increasing at item %d (%lld then %lld)", name, i,
                      (long long)o[i], (long long)o[i + 1]);
    if (rc == 0 && o[n] != n_rows)
        rc = fail(v, "%s: last offset %lld does not match the %lld rows of the data", name,
                  (long long)o[n], (long long)n_rows);
    if (rc) free(o);
    else *out = o;
    return rc;
}

/* Checks a (turbine, start_row, end_row, code) table against the offsets. */
static int check_table(vctx *v, hid_t f, const char *grp, const char *code_name, int n_items,
                       const int64_t *off, int64_t *n_out) {
    char nt[96], ns[96], ne[96], nc[96];
    snprintf(nt, sizeof nt, "/%s/turbine", grp);
    snprintf(ns, sizeof ns, "/%s/start_row", grp);
    snprintf(ne, sizeof ne, "/%s/end_row", grp);
    snprintf(nc, sizeof nc, "/%s/%s", grp, code_name);
    int64_t n = -1;
    if (DS1(nt, T_I32, &n)) return -1;
    if (DS1(ns, T_I64, &n) || DS1(ne, T_I64, &n) || DS1(nc, T_I32, &n)) return -1;
    size_t m = (size_t)(n > 0 ? n : 1);
    int32_t *tu = GT_MALLOC(m * sizeof(int32_t));
    int64_t *st = GT_MALLOC(m * sizeof(int64_t)), *en = GT_MALLOC(m * sizeof(int64_t));
    gt_h5_read_all(f, nt, H5T_NATIVE_INT32, tu);
    gt_h5_read_all(f, ns, H5T_NATIVE_INT64, st);
    gt_h5_read_all(f, ne, H5T_NATIVE_INT64, en);
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (tu[i] < 0 || tu[i] >= n_items)
            rc = fail(v, "%s: entry %lld names turbine %d, file has %d", nt, (long long)i, tu[i], n_items);
        else if (st[i] < 0 || en[i] <= st[i] || en[i] > off[tu[i] + 1] - off[tu[i]])
            rc = fail(v, "%s: entry %lld has rows [%lld, %lld) outside turbine %d's %lld rows", ns,
                      (long long)i, (long long)st[i], (long long)en[i], tu[i],
                      (long long)(off[tu[i] + 1] - off[tu[i]]));
    }
    free(tu);
    free(st);
    free(en);
    *n_out = n;
    return rc;
}

/* The optional /care_events table: equal lengths, turbines in range, the
 * prediction part and the event non-empty row ranges of the turbine, labels 0/1. */
static int check_care_events(vctx *v, hid_t f, int n_items, const int64_t *off, int64_t *n_out) {
    static const char *const cols[7] = {"turbine", "event_id", "label", "pred_start_row", "pred_end_row",
                                        "event_start_row", "event_end_row"};
    int64_t n = -1;
    char name[7][64];
    for (int c = 0; c < 7; c++) {
        snprintf(name[c], sizeof name[c], "/care_events/%s", cols[c]);
        if (DS1(name[c], c == 0 || c == 2 ? T_I32 : T_I64, &n)) return -1;
    }
    size_t m = (size_t)(n > 0 ? n : 1);
    int64_t *x = GT_MALLOC(m * 7 * sizeof(int64_t)), *col = GT_MALLOC(m * sizeof(int64_t));
    for (int c = 0; c < 7; c++) {
        gt_h5_read_all(f, name[c], H5T_NATIVE_INT64, col);
        for (int64_t i = 0; i < n; i++) x[7 * i + c] = col[i];
    }
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const int64_t *q = x + 7 * i;
        int64_t rows = q[0] >= 0 && q[0] < n_items ? off[q[0] + 1] - off[q[0]] : 0;
        if (q[0] < 0 || q[0] >= n_items)
            rc = fail(v, "%s: entry %lld names turbine %lld, file has %d", name[0], (long long)i, (long long)q[0], n_items);
        else if (q[2] != 0 && q[2] != 1)
            rc = fail(v, "%s: entry %lld is %lld (expected 0 normal or 1 anomaly)", name[2], (long long)i, (long long)q[2]);
        else if (q[3] < 0 || q[4] <= q[3] || q[4] > rows || q[5] < 0 || q[6] <= q[5] || q[6] > rows)
            rc = fail(v, "/care_events: entry %lld has prediction rows [%lld, %lld) or event rows [%lld, %lld) outside "
                         "turbine %lld's %lld rows", (long long)i, (long long)q[3], (long long)q[4], (long long)q[5],
                      (long long)q[6], (long long)q[0], (long long)rows);
    }
    free(x);
    free(col);
    *n_out = n;
    return rc;
}

static int validate_nilm(vctx *v, hid_t f, gt_file_index *ix) {
    int64_t H = -1, H1, A = -1, N = -1, one = -1;
    if (DS1("/households/id", T_I64, &H)) return -1;
    if (H < 1) return fail(v, "/households/id: no households");
    H1 = H + 1;
    if (DS1("/households/row_offset", T_I64, &H1)) return -1;
    if (DS1("/households/period_s", T_F64, &H)) return -1;
    if (DS1("/appliance_meta/name", T_STR, &A)) return -1;
    if (A < 1) return fail(v, "/appliance_meta/name: no appliances");
    if (DS1("/appliance_meta/on_power_w", T_F32, &A) || DS1("/appliance_meta/on_duration_s", T_F32, &A) ||
        DS1("/appliance_meta/max_power_w", T_F32, &A))
        return -1;
    if (DS1("/timestamps", T_I64, &N) || DS1("/aggregate", T_F32, &N)) return -1;
    if (check_ds(v, f, "/appliances", T_F32, 2, &N, &A)) return -1;
    ix->has_owns = exists(f, "/households/owns");
    if (ix->has_owns && check_ds(v, f, "/households/owns", T_U8, 2, &H, &A)) return -1;
    ix->has_faults = exists(f, "/fault_flags");
    if (ix->has_faults && DS1("/fault_flags", T_U8, &N)) return -1;
    ix->n_items = (int)H;
    ix->n_cols = (int)A;
    ix->n_rows = N;
    if (check_offsets(v, f, "/households/row_offset", (int)H, N, &ix->row_offset)) return -1;
    ix->has_lowres = exists(f, "/lowres");
    if (ix->has_lowres) {
        int64_t M = -1;
        if (DS1("/lowres/row_offset", T_I64, &H1) || DS1("/lowres/timestamps", T_I64, &M) ||
            DS1("/lowres/aggregate", T_F32, &M) || check_ds(v, f, "/lowres/appliances", T_F32, 2, &M, &A))
            return -1;
        hid_t g = H5Gopen2(f, "/lowres", H5P_DEFAULT);
        int e = gt_h5_attr_read_f64(g, "period_s", &ix->lowres_period_s);
        H5Gclose(g);
        if (e < 0 || !(ix->lowres_period_s > 0)) return fail(v, "/lowres: attribute period_s missing or not positive");
        ix->n_lowres_rows = M;
        if (check_offsets(v, f, "/lowres/row_offset", (int)H, M, &ix->lowres_offset)) return -1;
    }
    (void)one;
    return 0;
}

static int validate_pdm(vctx *v, hid_t f, gt_file_index *ix) {
    int64_t T = -1, T1, C = -1, N = -1;
    if (DS1("/turbines/id", T_I64, &T)) return -1;
    if (T < 1) return fail(v, "/turbines/id: no turbines");
    T1 = T + 1;
    if (DS1("/turbines/farm", T_I32, &T) || DS1("/turbines/machine_type", T_I32, &T) ||
        DS1("/turbines/rate_hz", T_F64, &T) || DS1("/turbines/row_offset", T_I64, &T1))
        return -1;
    if (DS1("/channels/name", T_STR, &C)) return -1;
    if (C < 1) return fail(v, "/channels/name: no channels");
    if (DS1("/channels/unit", T_STR, &C)) return -1;
    if (DS1("/timestamps", T_I64, &N) || DS1("/labels", T_U8, &N)) return -1;
    if (check_ds(v, f, "/signals", T_F32, 2, &N, &C)) return -1;
    ix->n_items = (int)T;
    ix->n_cols = (int)C;
    ix->n_rows = N;
    if (check_offsets(v, f, "/turbines/row_offset", (int)T, N, &ix->row_offset)) return -1;
    if (check_table(v, f, "segments", "condition", (int)T, ix->row_offset, &ix->n_segments)) return -1;
    if (check_table(v, f, "events", "kind", (int)T, ix->row_offset, &ix->n_events)) return -1;
    if (exists(f, "/care_events")) return check_care_events(v, f, (int)T, ix->row_offset, &ix->n_care_events);
    return 0;
}

hid_t gt_io_open(const char *path, MPI_Comm comm, gt_file_kind expect, gt_file_index *ix, char *err,
                 size_t err_bytes) {
    gt_h5_quiet();
    memset(ix, 0, sizeof(*ix));
    vctx vv = {path, err, err_bytes}, *v = &vv;
    err[0] = '\0';
    if (access(path, R_OK) != 0) {
        fail(v, "cannot open file: %s", strerror(errno));
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        fail(v, "not an HDF5 file");
        return -1;
    }
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0) {
        fail(v, "cannot open as HDF5 (damaged or truncated?)");
        return -1;
    }
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
