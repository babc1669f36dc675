/* io/h5.c: small HDF5 helpers (see h5.h). */
#include "io/h5.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/fsutil.h"
#include "core/watchdog.h"

#define GT_IO_READ_INDIVIDUAL_DEFAULT 1

void gt_h5_quiet(void) {
    static int done = 0;
    if (done) return;
    done = 1;
    if (!getenv("GT_DEBUG")) H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

hid_t gt_h5_fapl(MPI_Comm comm) {
    gt_h5_quiet();
    hid_t fapl = H5_CHECK(H5Pcreate(H5P_FILE_ACCESS));
    H5_CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
    H5_CHECK(H5Pset_all_coll_metadata_ops(fapl, 1));
    H5_CHECK(H5Pset_coll_metadata_write(fapl, 1));
    return fapl;
}

/* ------------------------------------------ opening untrusted files -- */

/* The walk over every link of a file opened by gt_h5_open_ro: the first
 * object that would make HDF5 read outside the file stops it (see h5.h). */
typedef struct open_scan {
    const char *path;
    char *err;
    size_t err_bytes;
    long n_links;
} open_scan;

static herr_t scan_refuse(open_scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static herr_t scan_refuse(open_scan *s, const char *fmt, ...) {
    int n = snprintf(s->err, s->err_bytes, "%s: ", s->path);
    if (n >= 0 && (size_t)n < s->err_bytes) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->err + n, s->err_bytes - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1; /* stops H5Lvisit */
}

/* src as printable text in out: control bytes as '?' (names and targets of
 * links reach the terminal). */
static void printable(char *out, size_t out_bytes, const char *src) {
    snprintf(out, out_bytes, "%s", src);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

/* A link's target as text: "FILE:/object" of an external link, the path of
 * a soft link (control bytes shown as '?': the text reaches the terminal). */
static void link_target(hid_t g, const char *name, const H5L_info_t *li, char *out, size_t out_bytes) {
    char val[1024] = "";
    out[0] = 0;
    size_t n = li->u.val_size < sizeof val ? li->u.val_size : sizeof val;
    if (n == 0 || H5Lget_val(g, name, val, n, H5P_DEFAULT) < 0) return;
    val[sizeof val - 1] = 0;
    if (li->type == H5L_TYPE_EXTERNAL) {
        const char *file = NULL, *obj = NULL;
        unsigned flags = 0;
        if (H5Lunpack_elink_val(val, n, &flags, &file, &obj) < 0) return;
        char both[1024];
        snprintf(both, sizeof both, "%.400s:%.400s", file ? file : "?", obj ? obj : "?");
        printable(out, out_bytes, both);
    } else {
        printable(out, out_bytes, val);
    }
}

/* name: the link's path from the root; shown: the same, printable. */
static herr_t scan_dataset(open_scan *s, hid_t g, const char *name, const char *shown) {
    hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
    if (ds < 0) return scan_refuse(s, "/%s: cannot open dataset (damaged file?)", shown);
    hid_t dcpl = H5Dget_create_plist(ds);
    herr_t rc = 0;
    if (dcpl < 0) {
        rc = scan_refuse(s, "/%s: cannot read the dataset's storage properties (damaged file?)", shown);
    } else if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
        rc = scan_refuse(s, "/%s: is a virtual dataset (its data would come from other files); gridtrain reads only "
                            "datasets stored in the file itself",
                         shown);
    } else if (H5Pget_external_count(dcpl) != 0) {
        char raw[256] = "?", file[256];
        off_t off = 0;
        hsize_t size = 0;
        if (H5Pget_external(dcpl, 0, sizeof raw, raw, &off, &size) < 0) snprintf(raw, sizeof raw, "?");
        raw[sizeof raw - 1] = 0;
        printable(file, sizeof file, raw);
        rc = scan_refuse(s, "/%s: keeps its data in external file '%s'; gridtrain reads only datasets stored in the "
                            "file itself",
                         shown, file);
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Dclose(ds);
    return rc;
}

static herr_t scan_link(hid_t g, const char *name, const H5L_info_t *li, void *op) {
    open_scan *s = op;
    if (++s->n_links > GT_H5_MAX_LINKS)
        return scan_refuse(s, "more than %d objects (not a gridtrain file?)", GT_H5_MAX_LINKS);
    char tgt[1024], shown[512];
    printable(shown, sizeof shown, name);
    switch (li->type) {
    case H5L_TYPE_HARD: break;
    case H5L_TYPE_SOFT:
        link_target(g, name, li, tgt, sizeof tgt);
        return scan_refuse(s, "/%s: is a soft link to '%s'; gridtrain reads only objects stored under their own name",
                           shown, tgt);
    case H5L_TYPE_EXTERNAL:
        link_target(g, name, li, tgt, sizeof tgt);
        return scan_refuse(s, "/%s: is an external link to '%s'; links to other files are not followed", shown, tgt);
    default:
        return scan_refuse(s, "/%s: is a user-defined link (type %d); such links are not followed", shown,
                           (int)li->type);
    }
    H5O_info_t oi; /* a hard link: its path holds only hard links (parents are visited first) */
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0)
        return scan_refuse(s, "/%s: cannot read the object (damaged file?)", shown);
    if (oi.type == H5O_TYPE_DATASET) return scan_dataset(s, g, name, shown);
    return 0;
}

hid_t gt_h5_open_ro(const char *path, hid_t fapl, char *err, size_t err_bytes) {
    gt_h5_quiet();
    err[0] = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, err_bytes, "%s: cannot open file: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) { /* a FIFO would block HDF5's open for ever */
        snprintf(err, err_bytes, "%s: not a regular file (%s)", path, gt_file_type_name(sb.st_mode));
        return -1;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (f < 0) {
        snprintf(err, err_bytes, "%s: cannot open as HDF5 (damaged or truncated?)", path);
        return -1;
    }
    /* Every link is looked at before anything is read: H5Lvisit follows hard
     * links only (each group once), so no link it meets has been traversed. */
    open_scan s = {path, err, err_bytes, 0};
    herr_t rc = H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, scan_link, &s);
    if (rc < 0 && !err[0]) snprintf(err, err_bytes, "%s: cannot list its objects (damaged file?)", path);
    if (rc != 0) {
        H5Fclose(f);
        return GT_H5_REFUSED;
    }
    return f;
}

hid_t gt_h5_open_serial(const char *path, char *err, size_t err_bytes) {
    return gt_h5_open_ro(path, H5P_DEFAULT, err, err_bytes);
}

hid_t gt_h5_create_file(const char *path, int excl, hid_t fapl) {
    gt_h5_quiet();
    return H5Fcreate(path, excl ? H5F_ACC_EXCL : H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
}

int gt_h5_read_individual(void) {
    const char *e = getenv("GT_IO_READ_MODE");
    if (e && strcmp(e, "collective") == 0) return 0;
    if (e && strcmp(e, "individual") == 0) return 1;
    return GT_IO_READ_INDIVIDUAL_DEFAULT;
}

hid_t gt_h5_dxpl(int for_read) {
    hid_t dxpl = H5_CHECK(H5Pcreate(H5P_DATASET_XFER));
    H5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
    if (for_read && gt_h5_read_individual())
        H5_CHECK(H5Pset_dxpl_mpio_collective_opt(dxpl, H5FD_MPIO_INDIVIDUAL_IO));
    return dxpl;
}

hid_t gt_h5_create(hid_t loc, const char *name, hid_t type, int64_t n_rows, int64_t n_cols,
                   int64_t chunk_rows, int deflate) {
    GT_ASSERT(n_rows >= 0 && n_cols >= 0 && deflate >= 0 && deflate <= 9);
    int rank = n_cols > 0 ? 2 : 1;
    hsize_t dims[2] = {(hsize_t)n_rows, (hsize_t)n_cols};
    hid_t space = H5_CHECK(H5Screate_simple(rank, dims, NULL));
    hid_t lcpl = H5_CHECK(H5Pcreate(H5P_LINK_CREATE));
    H5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
    hid_t dcpl = H5_CHECK(H5Pcreate(H5P_DATASET_CREATE));
    H5_CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    H5_CHECK(H5Pset_obj_track_times(dcpl, 0)); /* no clock in the file: the same data, the same bytes */
    if (n_rows > 0 && (chunk_rows > 0 || deflate > 0)) {
        int64_t c = chunk_rows > 0 ? chunk_rows : 65536;
        if (c > n_rows) c = n_rows;
        hsize_t cdims[2] = {(hsize_t)c, (hsize_t)n_cols};
        H5_CHECK(H5Pset_chunk(dcpl, rank, cdims));
        if (deflate > 0) {
            H5_CHECK(H5Pset_shuffle(dcpl));
            H5_CHECK(H5Pset_deflate(dcpl, (unsigned)deflate));
        }
    }
    hid_t ds = H5Dcreate2(loc, name, type, space, lcpl, dcpl, H5P_DEFAULT);
    GT_CHECK(ds >= 0, GT_EXIT_LIBRARY, "cannot create dataset '%s'", name);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    H5Sclose(space);
    return ds;
}

void gt_h5_write_table(hid_t loc, const char *name, hid_t type, int64_t n_rows, int64_t n_cols,
                       const void *buf, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    hid_t ds = gt_h5_create(loc, name, type, n_rows, n_cols, 0, 0);
    if (n_rows > 0) {
        gt_row_run run = {0, n_rows};
        hid_t dxpl = gt_h5_dxpl(0);
        gt_h5_write_runs(ds, type, &run, rank == 0 ? 1 : 0, buf, dxpl);
        H5Pclose(dxpl);
    }
    H5Dclose(ds);
}

hid_t gt_h5_str_type(size_t len) {
    hid_t t = H5_CHECK(H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(t, len));
    H5_CHECK(H5Tset_strpad(t, H5T_STR_NULLTERM));
    return t;
}

void gt_h5_write_strings(hid_t loc, const char *name, const char *names, size_t stride, size_t len,
                         int n, MPI_Comm comm) {
    char *packed = GT_CALLOC((size_t)(n > 0 ? n : 1), len);
    for (int i = 0; i < n; i++) {
        strncpy(packed + (size_t)i * len, names + (size_t)i * stride, len - 1);
    }
    hid_t t = gt_h5_str_type(len);
    gt_h5_write_table(loc, name, t, n, 0, packed, comm);
    H5Tclose(t);
    free(packed);
}

static void attr_write(hid_t obj, const char *name, hid_t type, const void *value) {
    hid_t space = H5_CHECK(H5Screate(H5S_SCALAR));
    if (H5Aexists(obj, name) > 0) H5_CHECK(H5Adelete(obj, name));
    hid_t a = H5_CHECK(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, type, value));
    H5Aclose(a);
    H5Sclose(space);
}
void gt_h5_attr_str(hid_t obj, const char *name, const char *value) {
    size_t len = strlen(value) + 1;
    hid_t t = gt_h5_str_type(len);
    attr_write(obj, name, t, value);
    H5Tclose(t);
}
void gt_h5_attr_i64(hid_t obj, const char *name, int64_t value) { attr_write(obj, name, H5T_NATIVE_INT64, &value); }
void gt_h5_attr_f64(hid_t obj, const char *name, double value) { attr_write(obj, name, H5T_NATIVE_DOUBLE, &value); }

static hid_t attr_open_scalar(hid_t obj, const char *name, H5T_class_t want) {
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t t = H5Aget_type(a);
    hid_t s = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t n = H5Sget_simple_extent_npoints(s);
    H5Tclose(t);
    H5Sclose(s);
    int ok = n == 1 && (cls == want || (want == H5T_FLOAT && cls == H5T_INTEGER));
    if (want == H5T_INTEGER && cls != H5T_INTEGER) ok = 0;
    if (!ok) {
        H5Aclose(a);
        return -1;
    }
    return a;
}
int gt_h5_attr_read_str(hid_t obj, const char *name, char *out, size_t out_bytes) {
    hid_t a = attr_open_scalar(obj, name, H5T_STRING);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int rc = -1;
    if (H5Tis_variable_str(ft) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft)); /* h5py writes UTF-8 */
        char *s = NULL;
        if (H5Aread(a, mt, &s) >= 0 && s) {
            snprintf(out, out_bytes, "%s", s);
            hid_t sp = H5Aget_space(a);
            H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &s);
            H5Sclose(sp);
            rc = 0;
        }
        H5Tclose(mt);
    } else {
        size_t len = H5Tget_size(ft);
        if (len < 1 || len > ((size_t)1 << 20)) { /* a crafted size: nothing to allocate for it */
            H5Tclose(ft);
            H5Aclose(a);
            return -1;
        }
        char *buf = GT_CALLOC(len + 1, 1);
        hid_t mt = H5Tcopy(ft);
        if (H5Aread(a, mt, buf) >= 0) {
            snprintf(out, out_bytes, "%s", buf);
            rc = 0;
        }
        H5Tclose(mt);
        free(buf);
    }
    H5Tclose(ft);
    H5Aclose(a);
    return rc;
}
int gt_h5_attr_read_i64(hid_t obj, const char *name, int64_t *out) {
    hid_t a = attr_open_scalar(obj, name, H5T_INTEGER);
    if (a < 0) return -1;
    int rc = H5Aread(a, H5T_NATIVE_INT64, out) >= 0 ? 0 : -1;
    H5Aclose(a);
    return rc;
}
int gt_h5_attr_read_f64(hid_t obj, const char *name, double *out) {
    hid_t a = attr_open_scalar(obj, name, H5T_FLOAT);
    if (a < 0) return -1;
    int rc = H5Aread(a, H5T_NATIVE_DOUBLE, out) >= 0 ? 0 : -1;
    H5Aclose(a);
    return rc;
}

int64_t gt_h5_n_cols(hid_t dset) {
    hid_t s = H5_CHECK(H5Dget_space(dset));
    hsize_t dims[2] = {0, 1};
    int r = H5Sget_simple_extent_ndims(s);
    H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    return r == 2 ? (int64_t)dims[1] : 1;
}

hid_t gt_h5_select_runs(hid_t dset, const gt_row_run *runs, int n_runs, int64_t *n_sel) {
    hid_t space = H5_CHECK(H5Dget_space(dset));
    int rank = H5Sget_simple_extent_ndims(space);
    int64_t n_cols = gt_h5_n_cols(dset);
    int64_t total = 0;
    H5_CHECK(H5Sselect_none(space));
    for (int i = 0; i < n_runs; i++) {
        if (runs[i].count <= 0) continue;
        hsize_t start[2] = {(hsize_t)runs[i].start, 0};
        hsize_t count[2] = {(hsize_t)runs[i].count, (hsize_t)n_cols};
        H5_CHECK(H5Sselect_hyperslab(space, total == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start,
                                     NULL, count, NULL));
        total += runs[i].count;
    }
    (void)rank;
    if (n_sel) *n_sel = total;
    return space;
}

/* Memory space of the same rank as the dataset: a rank mismatch makes HDF5
 * walk the selection element by element (measured 50x slower). */
static hid_t mem_space(int64_t n_rows, hid_t dset) {
    hid_t fs = H5_CHECK(H5Dget_space(dset));
    int rank = H5Sget_simple_extent_ndims(fs);
    H5Sclose(fs);
    int64_t n_cols = gt_h5_n_cols(dset);
    hsize_t dims[2] = {(hsize_t)(n_rows > 0 ? n_rows : 1), (hsize_t)n_cols};
    hid_t ms = H5_CHECK(H5Screate_simple(rank, dims, NULL));
    if (n_rows == 0) H5_CHECK(H5Sselect_none(ms));
    return ms;
}

void gt_h5_write_runs(hid_t dset, hid_t mem_type, const gt_row_run *runs, int n_runs,
                      const void *buf, hid_t dxpl) {
    int64_t n = 0;
    hid_t fs = gt_h5_select_runs(dset, runs, n_runs, &n);
    hid_t ms = mem_space(n, dset);
    static const char dummy[16];
    gt_watchdog_beat("entered a collective HDF5 write (io/h5.c gt_h5_write_runs)");
    H5_CHECK(H5Dwrite(dset, mem_type, ms, fs, dxpl, n > 0 ? buf : dummy));
    gt_watchdog_beat("returned from a collective HDF5 write (io/h5.c gt_h5_write_runs)");
    H5Sclose(ms);
    H5Sclose(fs);
}

/* A read that HDF5 refuses (a damaged chunk, a truncated file, an I/O error)
 * is bad input: one line naming the file and the dataset, exit 3. */
static _Noreturn void read_fail(hid_t obj, const char *name) {
    char file[1024] = "?", dset[256] = "";
    if (H5Fget_name(obj, file, sizeof file) < 0) snprintf(file, sizeof file, "?");
    if (!name && H5Iget_name(obj, dset, sizeof dset) > 0) name = dset;
    GT_FAIL(GT_EXIT_DATA, "%s: %s: cannot read (damaged or truncated file, or an I/O error)", file,
            name ? name : "?");
}

void gt_h5_read_runs(hid_t dset, hid_t mem_type, const gt_row_run *runs, int n_runs, void *buf,
                     hid_t dxpl) {
    int64_t n = 0;
    hid_t fs = gt_h5_select_runs(dset, runs, n_runs, &n);
    hid_t ms = mem_space(n, dset);
    char dummy[16];
    gt_watchdog_beat("entered a collective HDF5 read (io/h5.c gt_h5_read_runs)");
    if (H5Dread(dset, mem_type, ms, fs, dxpl, n > 0 ? buf : dummy) < 0) read_fail(dset, NULL);
    gt_watchdog_beat("returned from a collective HDF5 read (io/h5.c gt_h5_read_runs)");
    H5Sclose(ms);
    H5Sclose(fs);
}

void gt_h5_read_all(hid_t loc, const char *name, hid_t mem_type, void *buf) {
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
    if (ds < 0) read_fail(loc, name);
    hid_t s = H5_CHECK(H5Dget_space(ds));
    hssize_t n = H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    if (n > 0 && H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) read_fail(loc, name);
    H5Dclose(ds);
}

int gt_item_runs(const int64_t *row_offset, const int *owner, int n_items, int rank, gt_row_run *runs) {
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        if (owner[i] != rank) continue;
        int64_t len = row_offset[i + 1] - row_offset[i];
        if (n > 0 && runs[n - 1].start + runs[n - 1].count == row_offset[i])
            runs[n - 1].count += len;
        else
            runs[n++] = (gt_row_run){row_offset[i], len};
    }
    return n;
}
