/* train/checkpoint.c: crash-safe, checksummed checkpoints (see checkpoint.h).
 *
 * File layout (format_version 1), every name readable by h5py:
 *   /                 attrs magic "gridtrain-checkpoint", format_version, step,
 *                     created (ISO-8601 UTC), created_unix, n_ranks, model_kind,
 *                     n_params, n_tensors, params_xxh64, adam_m_xxh64, adam_v_xxh64
 *                     (uint64, XXH64 seed 0 of the float32 buffers in table order)
 *   /model/<name>     float32, PyTorch shape (parameters)
 *   /adam_m/<name>    float32, same shape (AdamW first moment)
 *   /adam_v/<name>    float32, same shape (AdamW second moment)
 *   /train_state      group, one attribute per gt_train_state field
 *   /norm/mean, /norm/std  float64 [n]
 *   /config           scalar fixed-length string: the resolved configuration
 *   /ranks/state      uint64 [P, 4]: rank, and that rank's own XXH64 of its
 *                     params / adam_m / adam_v replica (written collectively,
 *                     each rank its row; replicas that differ are reported)
 *
 * Commit protocol (gt_ckpt_save): a new unique ckpt-<step>.h5.tmp.XXXXXX written collectively,
 * closed, fsynced by every rank; rank 0 removes an old marker of the same step,
 * renames to ckpt-<step>.h5 and fsyncs the directory; after an agreement (all
 * ranks done) rank 0 writes ckpt-<step>.ok.tmp = "xxh64 <16 hex> size <bytes>\n"
 * of the final file, fsyncs, renames to ckpt-<step>.ok, fsyncs the directory.
 * A final name never holds a partial file.
 *
 * Error handling of the save path: no HDF5 or system call there aborts. Every
 * rank makes the same sequence of HDF5 calls whatever failed locally (only
 * rank 0's raw-data writes are rank-specific), records its first failure, and
 * the ranks agree (MPI_Allreduce) after each phase. */
#define _GNU_SOURCE
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "io/h5.h"

#define CKPT_MAGIC "gridtrain-checkpoint"
#define CKPT_VERSION 1
#define CKPT_RANK_COLS 4

/* ------------------------------------------------------------ utilities -- */

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    GT_CHECK(n >= 0 && s, GT_EXIT_RESOURCE, "out of memory");
    return s;
}

static char *ckpt_dir(const char *run_dir) { return str_printf("%s/checkpoints", run_dir); }
static char *ckpt_name(const char *dir, long long step, const char *suffix) {
    return str_printf("%s/ckpt-%09lld%s", dir, step, suffix);
}

/* First failure of a phase on this rank: what failed and errno at that time. */
typedef struct ckpt_err {
    int failed;
    int err_no;
    char what[768];
} ckpt_err;

static void err_set(ckpt_err *e, int err_no, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err_set(ckpt_err *e, int err_no, const char *fmt, ...) {
    if (e->failed) return;
    e->failed = 1;
    e->err_no = err_no;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->what, sizeof e->what, fmt, ap);
    va_end(ap);
}

/* Collective: 1 when no rank failed. */
static int all_ok(const ckpt_err *e, MPI_Comm comm) {
    return gt_dist_min_int(!e->failed, comm);
}

static void err_log(const ckpt_err *e, const char *path) {
    if (!e->failed) return;
    if (e->err_no)
        GT_WARN("checkpoint: cannot write %s: %s: %s; training continues with the previous checkpoint",
                path, e->what, strerror(e->err_no));
    else
        GT_WARN("checkpoint: cannot write %s: %s (disk full, quota or file size limit?); training "
                "continues with the previous checkpoint",
                path, e->what);
}

static int fsync_path(const char *path, int dir) {
    int fd = open(path, O_RDONLY | (dir ? O_DIRECTORY : 0) | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* XXH64 (seed 0) and size of a whole file. 0 or -1 with errno set. */
static int file_hash(const char *path, uint64_t *hash, int64_t *size_bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    XXH64_state_t *st = XXH64_createState();
    GT_CHECK(st != NULL, GT_EXIT_RESOURCE, "out of memory");
    XXH64_reset(st, 0);
    size_t buf_bytes = (size_t)1 << 20;
    char *buf = GT_MALLOC(buf_bytes);
    int64_t total = 0;
    size_t n;
    while ((n = fread(buf, 1, buf_bytes, f)) > 0) {
        XXH64_update(st, buf, n);
        total += (int64_t)n;
    }
    int rc = ferror(f) ? -1 : 0;
    int e = errno;
    fclose(f);
    *hash = XXH64_digest(st);
    *size_bytes = total;
    XXH64_freeState(st);
    free(buf);
    errno = e;
    return rc;
}

/* Writes text to path via path.tmp + fsync + rename + directory fsync. */
static int write_marker(const char *dir, const char *path, const char *text, ckpt_err *e) {
    char *tmp = str_printf("%s.tmp", path);
    int rc = -1;
    /* a leftover (or a planted link) is removed: O_EXCL never follows one */
    if (unlink(tmp) != 0 && errno != ENOENT) err_set(e, errno, "cannot remove %s", tmp);
    int fd = e->failed ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        if (!e->failed) err_set(e, errno, "cannot create the commit marker %s", tmp);
    } else {
        size_t len = strlen(text);
        ssize_t w = write(fd, text, len);
        if (w != (ssize_t)len)
            err_set(e, w < 0 ? errno : ENOSPC, "cannot write the commit marker %s", tmp);
        else if (fsync(fd) != 0)
            err_set(e, errno, "cannot fsync the commit marker %s", tmp);
        if (close(fd) != 0) err_set(e, errno, "cannot close the commit marker %s", tmp);
        if (!e->failed && rename(tmp, path) != 0) err_set(e, errno, "cannot rename %s", tmp);
        if (!e->failed && fsync_path(dir, 1) != 0) err_set(e, errno, "cannot fsync directory %s", dir);
        if (e->failed) unlink(tmp);
        else rc = 0;
    }
    free(tmp);
    return rc;
}

static int read_marker(const char *path, uint64_t *hash, int64_t *size_bytes) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    unsigned long long h = 0;
    long long s = -1;
    int used = 0;
    if (sscanf(buf, "xxh64 %16llx size %lld\n%n", &h, &s, &used) != 2 || used != (int)n || s < 0)
        return -1;
    *hash = (uint64_t)h;
    *size_bytes = (int64_t)s;
    return 0;
}

/* ----------------------------------------------------- directory listing -- */

enum { CK_H5 = 1, CK_OK = 2, CK_H5_TMP = 4, CK_OK_TMP = 8 };
typedef struct ckpt_entry {
    long long step;
    int flags;
} ckpt_entry;

static int entry_cmp_desc(const void *a, const void *b) {
    long long x = ((const ckpt_entry *)a)->step, y = ((const ckpt_entry *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Entries of dir by step, newest first; *n_out entries (malloc'd, caller
 * frees). NULL with *n_out = 0 when the directory does not exist. */
static ckpt_entry *list_entries(const char *dir, int *n_out) {
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int n = 0, cap = 16;
    ckpt_entry *v = GT_MALLOC(sizeof *v * (size_t)cap);
    struct dirent *de;
    static const struct {
        const char *suffix;
        int flag;
    } kinds[] = {{".h5", CK_H5}, {".ok", CK_OK}, {".h5.tmp", CK_H5_TMP}, {".ok.tmp", CK_OK_TMP}};
    while ((de = readdir(d)) != NULL) {
        const char *s = de->d_name;
        if (strncmp(s, "ckpt-", 5) != 0) continue;
        const char *p = s + 5, *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if (q == p || q - p > 18) continue;
        int flag = 0;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (strcmp(q, kinds[k].suffix) == 0) flag = kinds[k].flag;
        if (!strncmp(q, ".h5.tmp.", 8)) flag = CK_H5_TMP; /* a unique temporary (gt_tmp_create) */
        if (!flag) continue;
        long long step = strtoll(p, NULL, 10);
        int i = 0;
        while (i < n && v[i].step != step) i++;
        if (i == n) {
            if (n == cap) v = GT_REALLOC(v, sizeof *v * (size_t)(cap *= 2));
            v[n++] = (ckpt_entry){step, 0};
        }
        v[i].flags |= flag;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, entry_cmp_desc);
    *n_out = n;
    return v;
}

/* Removes dir/ckpt-<step>.h5.tmp.XXXXXX leftovers of crashed saves. */
static void remove_unique_tmps(const char *dir, long long step) {
    char *prefix = str_printf("ckpt-%09lld.h5.tmp.", step);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (!strncmp(de->d_name, prefix, strlen(prefix))) {
                if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT)
                    GT_WARN("checkpoint: cannot remove %s/%s: %s", dir, de->d_name, strerror(errno));
                else GT_DEBUG("checkpoint: removed the uncommitted leftover %s/%s", dir, de->d_name);
            }
        closedir(d);
    }
    free(prefix);
}

/* Rank 0 of the save: keep the newest `keep` committed checkpoints (and always
 * `cur` and `best`, the step of the best validation loss), remove uncommitted
 * leftovers older than the newest committed one. Failures are warnings. */
static void prune(const char *dir, long long cur, long long best, int keep) {
    int n = 0;
    ckpt_entry *v = list_entries(dir, &n);
    long long newest_committed = -1;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if ((v[i].flags & (CK_H5 | CK_OK)) != (CK_H5 | CK_OK)) continue;
        if (newest_committed < 0) newest_committed = v[i].step;
        if (v[i].step == best && best != cur) continue; /* kept outside the count */
        if (keep <= 0 || kept < keep || v[i].step == cur) {
            kept++;
            continue;
        }
        /* marker first: a crash in between leaves an uncommitted file */
        char *ok = ckpt_name(dir, v[i].step, ".ok"), *h5 = ckpt_name(dir, v[i].step, ".h5");
        if (unlink(ok) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", ok, strerror(errno));
        else if (unlink(h5) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", h5, strerror(errno));
        else GT_DEBUG("checkpoint: pruned %s", h5);
        v[i].flags = 0;
        free(ok);
        free(h5);
    }
    for (int i = 0; i < n; i++) {
        if (v[i].step >= newest_committed || v[i].step == cur) continue;
        int f = v[i].flags;
        const char *rm[4] = {NULL, NULL, NULL, NULL};
        if (f & CK_H5_TMP) rm[0] = ".h5.tmp";
        if (f & CK_OK_TMP) rm[1] = ".ok.tmp";
        if ((f & CK_H5) && !(f & CK_OK)) rm[2] = ".h5";
        if ((f & CK_OK) && !(f & CK_H5)) rm[3] = ".ok";
        for (int k = 0; k < 4; k++) {
            if (!rm[k]) continue;
            char *p = ckpt_name(dir, v[i].step, rm[k]);
            if (unlink(p) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", p, strerror(errno));
            else GT_DEBUG("checkpoint: removed the uncommitted leftover %s", p);
            free(p);
        }
        if (f & CK_H5_TMP) remove_unique_tmps(dir, v[i].step);
    }
    free(v);
}

/* --------------------------------------------------- train state fields -- */

enum { T_I32, T_I64, T_U64, T_F32, T_F64 };
static const struct {
    const char *name;
    size_t offset;
    int type;
    int optional; /* 1: added later; a checkpoint without it keeps the value set before reading */
} k_state_fields[] = {
    {"step", offsetof(gt_train_state, step), T_I64, 0},
    {"epoch", offsetof(gt_train_state, epoch), T_U64, 0},
    {"batch_k", offsetof(gt_train_state, batch_k), T_I64, 0},
    {"samples", offsetof(gt_train_state, samples), T_I64, 0},
    {"best_val", offsetof(gt_train_state, best_val), T_F64, 0},
    {"best_step", offsetof(gt_train_state, best_step), T_I64, 0},
    {"bad_evals", offsetof(gt_train_state, bad_evals), T_I32, 0},
    {"bad_steps", offsetof(gt_train_state, bad_steps), T_I32, 0},
    {"loss_scale", offsetof(gt_train_state, loss_scale), T_F32, 0},
    {"scale_good_steps", offsetof(gt_train_state, scale_good_steps), T_I64, 0},
    {"skipped_steps", offsetof(gt_train_state, skipped_steps), T_I64, 0},
    {"elapsed_s", offsetof(gt_train_state, elapsed_s), T_F64, 0},
    {"seed", offsetof(gt_train_state, seed), T_U64, 0},
    {"lr_factor", offsetof(gt_train_state, lr_factor), T_F64, 1},
    {"plateau_evals", offsetof(gt_train_state, plateau_evals), T_I32, 1},
};
#define N_STATE_FIELDS ((int)(sizeof k_state_fields / sizeof k_state_fields[0]))

static hid_t mem_type(int t) {
    switch (t) {
    case T_I32: return H5T_NATIVE_INT32;
    case T_I64: return H5T_NATIVE_INT64;
    case T_U64: return H5T_NATIVE_UINT64;
    case T_F32: return H5T_NATIVE_FLOAT;
    default: return H5T_NATIVE_DOUBLE;
    }
}
static hid_t file_type(int t) {
    switch (t) {
    case T_I32: return H5T_STD_I32LE;
    case T_I64: return H5T_STD_I64LE;
    case T_U64: return H5T_STD_U64LE;
    case T_F32: return H5T_IEEE_F32LE;
    default: return H5T_IEEE_F64LE;
    }
}

/* ------------------------------------------------- non-aborting writers -- */

static void w_attr(ckpt_err *e, hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, mtype, v) < 0) err_set(e, 0, "HDF5 could not write attribute '%s'", name);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
}
static void w_attr_str(ckpt_err *e, hid_t obj, const char *name, const char *value) {
    hid_t t = gt_h5_str_type(strlen(value) + 1);
    w_attr(e, obj, name, t, t, value);
    H5Tclose(t);
}
static void w_attr_i64(ckpt_err *e, hid_t obj, const char *name, int64_t v) {
    w_attr(e, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}
static void w_attr_u64(ckpt_err *e, hid_t obj, const char *name, uint64_t v) {
    w_attr(e, obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

static hid_t w_group(ckpt_err *e, hid_t loc, const char *name) {
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) err_set(e, 0, "HDF5 could not create group '%s'", name);
    return g;
}

/* Contiguous dataset (ndim 0: scalar) written by rank 0 alone (independent
 * transfer of unfiltered data); created collectively. */
static void w_dset(ckpt_err *e, hid_t loc, const char *name, hid_t ftype, hid_t mtype, int ndim,
                   const hsize_t *dims, const void *buf, int writer) {
    hid_t sp = ndim == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(ndim, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) err_set(e, 0, "HDF5 could not create dataset '%s'", name);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if (ds >= 0 && writer && n > 0) {
        errno = 0;
        if (H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
            err_set(e, errno, "HDF5 could not write dataset '%s'", name);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
}

/* -------------------------------------------------------------- saving -- */

static uint64_t buf_hash(const float *buf, size_t n) { return XXH64(buf, n * sizeof(float), 0); }

/* Collective: writes the whole checkpoint to `path` (created/truncated). */
/* Returns -1 when the (collective) create failed on some rank (agreed; the
 * failing ranks recorded why in e), else 0 with this rank's failures in e. */
static int write_file(const char *path, const char *final_name, const gt_model *m,
                      const gt_train_state *ts,
                      const gt_norm_stats *ns, const char *config_text, MPI_Comm comm, ckpt_err *e) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int w = rank == 0;

    /* replicated values come from rank 0 (attributes must agree across ranks) */
    uint64_t own[3] = {buf_hash(m->params, m->n_params), buf_hash(m->adam_m, m->n_params),
                       buf_hash(m->adam_v, m->n_params)};
    uint64_t h[3] = {own[0], own[1], own[2]};
    gt_dist_bcast_bytes(h, sizeof h, comm);
    struct {
        int64_t unix_s;
        char iso[40];
    } when = {0, ""};
    if (w) {
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        strftime(when.iso, sizeof when.iso, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        when.unix_s = (int64_t)now;
    }
    gt_dist_bcast_bytes(&when, sizeof when, comm);

    hid_t fapl = gt_h5_fapl(comm);
    errno = 0;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    int err_no = errno;
    H5Pclose(fapl);
    if (f < 0) err_set(e, err_no, "cannot create the file");
    if (!all_ok(e, comm)) return -1; /* MPI_File_open is collective: all failed */

    w_attr_str(e, f, "magic", CKPT_MAGIC);
    w_attr_i64(e, f, "format_version", CKPT_VERSION);
    w_attr_i64(e, f, "step", ts->step);
    w_attr_str(e, f, "created", when.iso);
    w_attr_i64(e, f, "created_unix", when.unix_s);
    w_attr_i64(e, f, "n_ranks", size);
    w_attr_str(e, f, "model_kind", gt_model_kind_name(m->cfg.kind));
    w_attr_i64(e, f, "n_params", (int64_t)m->n_params);
    w_attr_i64(e, f, "n_tensors", m->n_tensors);
    w_attr_u64(e, f, "params_xxh64", h[0]);
    w_attr_u64(e, f, "adam_m_xxh64", h[1]);
    w_attr_u64(e, f, "adam_v_xxh64", h[2]);

    static const char *const groups[3] = {"model", "adam_m", "adam_v"};
    float *bufs[3] = {m->params, m->adam_m, m->adam_v};
    for (int b = 0; b < 3; b++) {
        hid_t g = w_group(e, f, groups[b]);
        for (int i = 0; i < m->n_tensors; i++) {
            const gt_param_tensor *t = &m->tensors[i];
            hsize_t dims[4];
            for (int d = 0; d < t->ndim; d++) dims[d] = (hsize_t)t->shape[d];
            w_dset(e, g, t->name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, t->ndim, dims,
                   bufs[b] + t->offset, w);
        }
        if (g >= 0) H5Gclose(g);
    }

    hid_t g = w_group(e, f, "train_state");
    for (int i = 0; i < N_STATE_FIELDS; i++)
        w_attr(e, g, k_state_fields[i].name, file_type(k_state_fields[i].type),
               mem_type(k_state_fields[i].type), (const char *)ts + k_state_fields[i].offset);
    if (g >= 0) H5Gclose(g);

    g = w_group(e, f, "norm");
    hsize_t nn = ns ? (hsize_t)ns->n : 0;
    w_attr_i64(e, g, "n", (int64_t)nn);
    w_dset(e, g, "mean", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, &nn, ns ? ns->mean : NULL, w);
    w_dset(e, g, "std", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, &nn, ns ? ns->std : NULL, w);
    if (g >= 0) H5Gclose(g);

    const char *cfg = config_text ? config_text : "";
    hid_t st = gt_h5_str_type(strlen(cfg) + 1);
    w_dset(e, f, "config", st, st, 0, NULL, cfg, w);
    H5Tclose(st);

    /* per-rank state: each rank writes its own row, collectively */
    g = w_group(e, f, "ranks");
    hsize_t dims[2] = {(hsize_t)size, CKPT_RANK_COLS};
    hid_t fs = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t ds = H5Dcreate2(g, "state", H5T_STD_U64LE, fs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) err_set(e, 0, "HDF5 could not create dataset '/ranks/state'");
    if (ds >= 0) {
        w_attr_str(e, ds, "columns", "rank,params_xxh64,adam_m_xxh64,adam_v_xxh64");
        uint64_t row[CKPT_RANK_COLS] = {(uint64_t)rank, own[0], own[1], own[2]};
        hsize_t start[2] = {(hsize_t)rank, 0}, count[2] = {1, CKPT_RANK_COLS};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t ms = H5Screate_simple(2, count, NULL);
        hid_t dxpl = gt_h5_dxpl(0);
        errno = 0;
        if (H5Dwrite(ds, H5T_NATIVE_UINT64, ms, fs, dxpl, row) < 0)
            err_set(e, errno, "HDF5 could not write dataset '/ranks/state'");
        H5Pclose(dxpl);
        H5Sclose(ms);
        H5Dclose(ds);
    }
    H5Pclose(dcpl);
    H5Sclose(fs);
    if (g >= 0) H5Gclose(g);

    errno = 0;
    if (H5Fclose(f) < 0) err_set(e, errno, "HDF5 could not flush and close the file");

    /* replicas must agree: a difference is a silent corruption (bit flip, or
     * a rank that skipped an update) */
    int64_t n_all = 0;
    uint64_t *all = gt_dist_gatherv(own, 3, MPI_UINT64_T, &n_all, "checkpoint: too many ranks", comm);
    if (w) {
        for (int r = 1; r < size; r++)
            if (memcmp(all + 3 * r, all, 3 * sizeof(uint64_t)) != 0)
                GT_WARN("checkpoint %s: rank %d's copy of the model/optimizer state differs from rank "
                        "0's (the replicas diverged: memory error or a bug); the checkpoint holds "
                        "rank 0's copy",
                        final_name, r);
        free(all);
    }
    return 0;
}

static char g_last_error[1024];
const char *gt_ckpt_last_error(void) { return g_last_error; }

int gt_ckpt_save(const char *run_dir, const gt_model *m, const gt_train_state *ts,
                 const gt_norm_stats *ns, const char *config_text, int keep, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    double t0 = MPI_Wtime();
    long long step = (long long)ts->step;
    char *dir = ckpt_dir(run_dir);
    char *final = ckpt_name(dir, step, ".h5");
    char tmp[PATH_MAX + 64] = "";
    char *ok = ckpt_name(dir, step, ".ok");
    ckpt_err e = {0, 0, ""};
    int committed = 0;

    /* 1. directory, a new unique temporary ckpt-<step>.h5.tmp.XXXXXX, and
     * space for the whole file reserved once (rank 0): disk full, quota and
     * file size limits show up here as a clean errno, before HDF5 writes
     * anything (HDF5 1.10 handles a failing H5Fclose badly) */
    if (rank == 0) {
        if (gt_mkdir_out(dir) != 0) { /* a symbolic link there is refused (ELOOP) */
            err_set(&e, errno, "cannot create directory %s", dir);
        } else if (gt_tmp_create(final, tmp, sizeof tmp) != 0) {
            err_set(&e, errno, "cannot create a temporary file next to %s", final);
            tmp[0] = 0;
        } else {
            size_t cfg_bytes = config_text ? strlen(config_text) : 0;
            off_t need = (off_t)(3 * m->n_params * sizeof(float) + cfg_bytes +
                                 (size_t)m->n_tensors * 3 * 2048 + ((size_t)1 << 20));
            int fd = open(tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                err_set(&e, errno, "cannot open %s", tmp);
            } else {
                int rc = posix_fallocate(fd, 0, need);
                if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
                    err_set(&e, rc, "cannot reserve %.1f MiB for %s", (double)need / 1048576.0, tmp);
                close(fd);
            }
        }
    }
    gt_dist_bcast_bytes(tmp, sizeof tmp, comm);
    if (tmp[0]) gt_output_begin(tmp); /* removed if the job fails */
    if (!all_ok(&e, comm)) goto done;

    /* 2. collective write of the temporary file, then every rank fsyncs it */
    if (write_file(tmp, final, m, ts, ns, config_text, comm, &e) != 0) goto done;
    if (!e.failed && fsync_path(tmp, 0) != 0) err_set(&e, errno, "cannot fsync the file");
    if (!all_ok(&e, comm)) goto done;

    /* 3. rename into place (rank 0) */
    if (rank == 0) {
        if (unlink(ok) != 0 && errno != ENOENT)
            err_set(&e, errno, "cannot remove the old commit marker %s", ok);
        else if (rename(tmp, final) != 0)
            err_set(&e, errno, "cannot rename %s", tmp);
        else if (fsync_path(dir, 1) != 0)
            err_set(&e, errno, "cannot fsync directory %s", dir);
    }
    if (!all_ok(&e, comm)) goto done; /* also the barrier before the marker */

    /* 4. commit marker (rank 0, after every rank has written) */
    if (rank == 0) {
        uint64_t fh = 0;
        int64_t fbytes = 0;
        if (file_hash(final, &fh, &fbytes) != 0) {
            err_set(&e, errno, "cannot read back %s", final);
        } else {
            char text[128];
            snprintf(text, sizeof text, "xxh64 %016" PRIx64 " size %" PRId64 "\n", fh, fbytes);
            if (write_marker(dir, ok, text, &e) == 0) {
                committed = 1;
                prune(dir, step, (long long)ts->best_step, keep);
                GT_INFO("checkpoint: wrote %s (%.1f MiB, %.2f s)", final, fbytes / 1048576.0,
                        MPI_Wtime() - t0);
            }
        }
        if (!committed) unlink(final); /* complete but uncommitted: free the space */
    }

done:;
    int rc = 0;
    if (e.failed) {
        err_log(&e, final);
        rc = GT_EXIT_RESOURCE;
    }
    rc = gt_dist_max_int(rc, comm);
    if (rc) { /* the cause, for the trainer's final message: the first failing rank's */
        char mine[sizeof e.what + 128] = "";
        if (e.failed)
            snprintf(mine, sizeof mine, "%s%s%s", e.what, e.err_no ? ": " : "", e.err_no ? strerror(e.err_no) : "");
        int64_t n_all = 0;
        char *all = gt_dist_gatherv(mine, e.failed ? (int)strlen(mine) + 1 : 0, MPI_CHAR, &n_all,
                                    "checkpoint: too many ranks", comm);
        if (rank == 0) {
            snprintf(g_last_error, sizeof g_last_error, "%s", n_all > 0 ? all : "unknown cause");
            free(all);
        }
    }
    if (rc && rank == 0 && !committed) {
        if (tmp[0]) unlink(tmp); /* never leave a partial file behind */
        if (access(final, F_OK) == 0 && access(ok, F_OK) != 0) unlink(final);
    }
    if (tmp[0]) gt_output_end(tmp);
    free(dir);
    free(final);
    free(ok);
    return rc;
}

/* ------------------------------------------------------------- loading -- */

/* User errors while loading: every rank sees the same file and model, so all
 * would fail alike; rank 0 reports and aborts the job, the others wait in a
 * barrier for the abort (one message instead of P interleaved ones). */
static MPI_Comm s_load_comm = MPI_COMM_NULL;
#define LOAD_CHECK(cond, ...)                                                      \
    do {                                                                           \
        if (!(cond)) {                                                             \
            int r_ = 0;                                                            \
            if (s_load_comm != MPI_COMM_NULL) MPI_Comm_rank(s_load_comm, &r_);     \
            if (r_ != 0) MPI_Barrier(s_load_comm);                                 \
            gt_fatal(GT_EXIT_DATA, __FILE__, __LINE__, __VA_ARGS__);               \
        }                                                                          \
    } while (0)

/* Opens path read-only with the serial driver and checks magic and version:
 * 1 good, 0 not a gridtrain checkpoint (why in `why`). A newer format version
 * is a user error. */
static int check_header(const char *path, char *why, size_t why_bytes) {
    gt_h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        snprintf(why, why_bytes, "HDF5 cannot open it");
        return 0;
    }
    char magic[64] = "";
    int64_t ver = -1;
    int good = 1;
    if (gt_h5_attr_read_str(f, "magic", magic, sizeof magic) != 0 || strcmp(magic, CKPT_MAGIC) != 0) {
        snprintf(why, why_bytes, "no '%s' magic attribute", CKPT_MAGIC);
        good = 0;
    } else if (gt_h5_attr_read_i64(f, "format_version", &ver) != 0) {
        snprintf(why, why_bytes, "no format_version attribute");
        good = 0;
    }
    H5Fclose(f);
    if (good)
        LOAD_CHECK(ver >= 1 && ver <= CKPT_VERSION,
                 "checkpoint %s has format version %lld; this gridtrain reads version %d "
                 "(written by a newer gridtrain?)",
                 path, (long long)ver, CKPT_VERSION);
    return good;
}

/* Not collective. Newest valid checkpoint of run_dir (want < 0) or the valid
 * checkpoint of step `want`: its path (malloc'd) and step, or NULL. Damaged
 * or uncommitted ones on the way are warned about. */
static char *find_valid_step(const char *run_dir, long long want, long long *step_out) {
    char *dir = ckpt_dir(run_dir);
    int n = 0;
    ckpt_entry *v = list_entries(dir, &n);
    char *found = NULL;
    for (int i = 0; i < n && !found; i++) {
        long long s = v[i].step;
        if (want >= 0 && s != want) continue;
        char *h5 = ckpt_name(dir, s, ".h5"), *ok = ckpt_name(dir, s, ".ok");
        int f = v[i].flags;
        if ((f & CK_H5) && !(f & CK_OK)) {
            GT_WARN("checkpoint %s has no commit marker (its write was interrupted); skipped", h5);
        } else if ((f & CK_OK) && !(f & CK_H5)) {
            GT_WARN("checkpoint %s is missing (its marker %s exists); skipped", h5, ok);
        } else if (f & CK_H5) {
            uint64_t mh = 0, fh = 0;
            int64_t ms = 0, fs = 0;
            char why[128];
            if (read_marker(ok, &mh, &ms) != 0) {
                GT_WARN("checkpoint %s: commit marker %s is unreadable or malformed; trying the previous one", h5, ok);
            } else if (file_hash(h5, &fh, &fs) != 0) {
                GT_WARN("checkpoint %s cannot be read (%s); trying the previous one", h5, strerror(errno));
            } else if (fs != ms || fh != mh) {
                GT_WARN("checkpoint %s is damaged: %lld bytes with xxh64 %016" PRIx64
                        ", its marker says %lld bytes with xxh64 %016" PRIx64 "; trying the previous one",
                        h5, (long long)fs, fh, (long long)ms, mh);
            } else if (!check_header(h5, why, sizeof why)) {
                GT_WARN("checkpoint %s is not a gridtrain checkpoint (%s); trying the previous one", h5, why);
            } else {
                found = h5;
                h5 = NULL;
                *step_out = s;
            }
        }
        free(h5);
        free(ok);
    }
    free(v);
    free(dir);
    return found;
}
static char *find_valid(const char *run_dir, long long *step_out) { return find_valid_step(run_dir, -1, step_out); }

/* Not collective: /train_state best_step of a checkpoint file, or -1. */
static long long read_best_step(const char *path) {
    long long best = -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t g = H5Gopen2(f, "train_state", H5P_DEFAULT);
    if (g >= 0) {
        int64_t v = -1;
        if (H5Aexists(g, "best_step") > 0) {
            hid_t a = H5Aopen(g, "best_step", H5P_DEFAULT);
            if (a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &v) >= 0) best = (long long)v;
            if (a >= 0) H5Aclose(a);
        }
        H5Gclose(g);
    }
    H5Fclose(f);
    return best;
}

/* Rank 0: the checkpoint to load for `which` (see gt_ckpt_load). */
static char *choose(const char *run_dir, gt_ckpt_which which, int64_t step, long long *step_out) {
    if (which == GT_CKPT_STEP) return find_valid_step(run_dir, (long long)step, step_out);
    char *newest = find_valid(run_dir, step_out);
    if (!newest || which == GT_CKPT_LATEST) return newest;
    long long best = read_best_step(newest);
    if (best < 0 || best == *step_out) return newest;
    long long s = -1;
    char *p = find_valid_step(run_dir, best, &s);
    if (!p) {
        GT_WARN("checkpoint: the best validation checkpoint (step %lld) of %s is not available (written before "
                "best checkpoints were kept, or removed); using the newest, step %lld",
                best, run_dir, *step_out);
        return newest;
    }
    free(newest);
    *step_out = s;
    return p;
}

static void r_attr(hid_t obj, const char *file, const char *obj_name, const char *name, hid_t mtype, void *out) {
    LOAD_CHECK(H5Aexists(obj, name) > 0, "checkpoint %s: %s has no attribute '%s'", file,
             obj_name, name);
    hid_t a = H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT));
    H5_CHECK(H5Aread(a, mtype, out));
    H5Aclose(a);
}

static void shape_str(char *out, size_t out_bytes, int ndim, const hsize_t *dims) {
    size_t k = 0;
    k += (size_t)snprintf(out + k, out_bytes - k, "(");
    for (int d = 0; d < ndim && k < out_bytes; d++)
        k += (size_t)snprintf(out + k, out_bytes - k, d ? ", %llu" : "%llu", (unsigned long long)dims[d]);
    if (k < out_bytes) snprintf(out + k, out_bytes - k, ")");
}

/* Collective (metadata). Checks the file's /<group> table against the model's
 * and reads it into buf. */
static void read_table(hid_t f, const char *path, const char *group, const gt_model *m, float *buf) {
    LOAD_CHECK(H5Lexists(f, group, H5P_DEFAULT) > 0, "checkpoint %s has no group '/%s'",
             path, group);
    hid_t g = H5_CHECK(H5Gopen2(f, group, H5P_DEFAULT));
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        LOAD_CHECK(H5Lexists(g, t->name, H5P_DEFAULT) > 0,
                 "checkpoint %s has no tensor '/%s/%s' that this run's %s model needs (the model "
                 "configuration differs from the checkpointed run's)",
                 path, group, t->name, gt_model_kind_name(m->cfg.kind));
        hid_t ds = H5_CHECK(H5Dopen2(g, t->name, H5P_DEFAULT));
        hid_t sp = H5_CHECK(H5Dget_space(ds));
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5_CHECK(H5Sget_simple_extent_dims(sp, dims, NULL));
        hsize_t want[4];
        int same = nd == t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            want[d] = (hsize_t)t->shape[d];
            if (same && dims[d] != want[d]) same = 0;
        }
        if (!same) {
            char a[96], b[96];
            shape_str(a, sizeof a, nd, dims);
            shape_str(b, sizeof b, t->ndim, want);
            LOAD_CHECK(0,
                    "checkpoint %s: tensor '/%s/%s' has shape %s, this run's %s model has %s (the "
                    "model configuration differs from the checkpointed run's)",
                    path, group, t->name, a, gt_model_kind_name(m->cfg.kind), b);
        }
        H5_CHECK(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf + t->offset));
        H5Sclose(sp);
        H5Dclose(ds);
    }
    H5G_info_t gi;
    H5_CHECK(H5Gget_info(g, &gi));
    if (gi.nlinks != (hsize_t)m->n_tensors) {
        for (hsize_t k = 0; k < gi.nlinks; k++) {
            char name[256] = "";
            H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name, H5P_DEFAULT);
            LOAD_CHECK(gt_model_find_tensor(m, name) >= 0,
                     "checkpoint %s has tensor '/%s/%s' that this run's %s model lacks (the model "
                     "configuration differs from the checkpointed run's)",
                     path, group, name, gt_model_kind_name(m->cfg.kind));
        }
    }
    H5Gclose(g);
}

int64_t gt_ckpt_load_latest(const char *run_dir, gt_model *m, gt_train_state *ts, gt_norm_stats *ns,
                            MPI_Comm comm) {
    return gt_ckpt_load(run_dir, GT_CKPT_LATEST, -1, m, ts, ns, comm);
}

int64_t gt_ckpt_load(const char *run_dir, gt_ckpt_which which, int64_t want, gt_model *m, gt_train_state *ts,
                     gt_norm_stats *ns, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    long long step = -1;
    char *path = NULL;
    int len = 0;
    if (rank == 0) {
        path = choose(run_dir, which, want, &step);
        len = path ? (int)strlen(path) + 1 : 0;
    }
    gt_dist_bcast_bytes(&len, sizeof len, comm);
    if (len == 0) {
        if (rank == 0) {
            if (which == GT_CKPT_STEP)
                GT_INFO("checkpoint: no valid checkpoint of step %lld in %s/checkpoints", (long long)want, run_dir);
            else
                GT_INFO("checkpoint: none found in %s/checkpoints", run_dir);
        }
        return -1;
    }
    if (rank != 0) path = GT_MALLOC((size_t)len);
    gt_dist_bcast_bytes(path, (size_t)len, comm);
    gt_dist_bcast_bytes(&step, sizeof step, comm);

    s_load_comm = comm;
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    LOAD_CHECK(f >= 0, "cannot open checkpoint %s", path);

    char kind[64] = "";
    LOAD_CHECK(gt_h5_attr_read_str(f, "model_kind", kind, sizeof kind) == 0,
             "checkpoint %s has no model_kind attribute", path);
    LOAD_CHECK(strcmp(kind, gt_model_kind_name(m->cfg.kind)) == 0,
             "checkpoint %s holds a %s model, this run builds a %s model (resume with the "
             "checkpointed run's configuration)",
             path, kind, gt_model_kind_name(m->cfg.kind));

    read_table(f, path, "model", m, m->params);
    read_table(f, path, "adam_m", m, m->adam_m);
    read_table(f, path, "adam_v", m, m->adam_v);

    /* the bytes passed the marker's checksum; this catches a bad conversion or
     * memory error on the way in */
    static const char *const hnames[3] = {"params_xxh64", "adam_m_xxh64", "adam_v_xxh64"};
    const float *bufs[3] = {m->params, m->adam_m, m->adam_v};
    for (int b = 0; b < 3; b++) {
        uint64_t want = 0;
        r_attr(f, path, "/", hnames[b], H5T_NATIVE_UINT64, &want);
        uint64_t got = buf_hash(bufs[b], m->n_params);
        GT_CHECK(got == want, GT_EXIT_DATA, /* may differ by rank: any rank aborts */
                 "checkpoint %s: the loaded %s do not match their checksum (xxh64 %016" PRIx64
                 ", stored %016" PRIx64 ")",
                 path, hnames[b], got, want);
    }

    gt_train_state st;
    memset(&st, 0, sizeof st);
    hid_t g = H5Gopen2(f, "train_state", H5P_DEFAULT);
    LOAD_CHECK(g >= 0, "checkpoint %s has no group '/train_state'", path);
    st.lr_factor = 1.0; /* the values of a run from before the optional fields */
    st.plateau_evals = 0;
    for (int i = 0; i < N_STATE_FIELDS; i++) {
        if (k_state_fields[i].optional && H5Aexists(g, k_state_fields[i].name) <= 0) continue;
        r_attr(g, path, "/train_state", k_state_fields[i].name, mem_type(k_state_fields[i].type),
               (char *)&st + k_state_fields[i].offset);
    }
    H5Gclose(g);
    LOAD_CHECK(st.step == step, "checkpoint %s holds step %lld, its name says %lld", path,
             (long long)st.step, step);
    if (ts) *ts = st;

    if (ns) {
        hid_t ds = H5Dopen2(f, "norm/mean", H5P_DEFAULT);
        LOAD_CHECK(ds >= 0, "checkpoint %s has no dataset '/norm/mean'", path);
        hid_t sp = H5_CHECK(H5Dget_space(ds));
        hssize_t n = H5Sget_simple_extent_npoints(sp);
        H5Sclose(sp);
        H5Dclose(ds);
        int cap = (int)(sizeof ns->mean / sizeof ns->mean[0]);
        LOAD_CHECK(n >= 0 && n <= cap,
                 "checkpoint %s: /norm/mean has %lld features, at most %d are supported", path,
                 (long long)n, cap);
        memset(ns, 0, sizeof *ns);
        ns->n = (int)n;
        gt_h5_read_all(f, "norm/mean", H5T_NATIVE_DOUBLE, ns->mean);
        gt_h5_read_all(f, "norm/std", H5T_NATIVE_DOUBLE, ns->std);
    }
    H5_CHECK(H5Fclose(f));
    s_load_comm = MPI_COMM_NULL;
    if (rank == 0)
        GT_INFO("checkpoint: %s %s (step %lld%s)", which == GT_CKPT_LATEST ? "resumed from" : "loaded", path, step,
                which == GT_CKPT_BEST && st.best_step == st.step ? ", best validation loss" : "");
    free(path);
    return (int64_t)step;
}

char *gt_ckpt_read_config(const char *run_dir) {
    long long step = -1;
    char *path = find_valid(run_dir, &step);
    if (!path) return NULL;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    GT_CHECK(f >= 0, GT_EXIT_DATA, "cannot open checkpoint %s", path);
    hid_t ds = H5Dopen2(f, "config", H5P_DEFAULT);
    GT_CHECK(ds >= 0, GT_EXIT_DATA, "checkpoint %s has no dataset '/config'", path);
    hid_t t = H5_CHECK(H5Dget_type(ds));
    GT_CHECK(H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) <= 0, GT_EXIT_DATA,
             "checkpoint %s: '/config' is not a fixed-length string", path);
    size_t n = H5Tget_size(t);
    char *text = GT_CALLOC(n + 1, 1);
    H5_CHECK(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text));
    H5Tclose(t);
    H5Dclose(ds);
    H5Fclose(f);
    free(path);
    return text;
}
