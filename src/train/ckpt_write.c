/* train/ckpt_write.c: gt_ckpt_save (train/checkpoint.h), the collective
 * write and commit of a checkpoint.
 *
 * Commit protocol (gt_ckpt_save): a new unique ckpt-<step>.h5.tmp.XXXXXX written collectively,
 * closed, fsynced by every rank; rank 0 removes an old marker of the same step,
 * renames to ckpt-<step>.h5 and fsyncs the directory; after an agreement (all
 * ranks done) rank 0 writes ckpt-<step>.ok.tmp = "xxh64 <16 hex> size <bytes>\n"
 * of the final file, fsyncs, renames to ckpt-<step>.ok, fsyncs the directory.
 * A final name never holds a partial file.
 *
 *
 * Error handling of the save path: no HDF5 or system call there aborts. Every
 * rank makes the same sequence of HDF5 calls whatever failed locally (only
 * rank 0's raw-data writes are rank-specific), records its first failure, and
 * the ranks agree (MPI_Allreduce) after each phase. */
#define _GNU_SOURCE
#include "train/ckpt_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "io/h5.h"

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

/* ------------------------------------------------- non-aborting writers -- */

static void w_attr(ckpt_err *e, hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, mtype, v) < 0) gt_ckpt_err_set(e, 0, "HDF5 could not write attribute '%s'", name);
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
    if (g < 0) gt_ckpt_err_set(e, 0, "HDF5 could not create group '%s'", name);
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
    if (ds < 0) gt_ckpt_err_set(e, 0, "HDF5 could not create dataset '%s'", name);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if (ds >= 0 && writer && n > 0) {
        errno = 0;
        if (H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
            gt_ckpt_err_set(e, errno, "HDF5 could not write dataset '%s'", name);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
}

/* -------------------------------------------------------------- saving -- */

/* /model, /adam_m, /adam_v: one dataset per tensor (raw data from the writer rank w). */
static void write_tables(ckpt_err *e, hid_t f, const gt_model *m, int w) {
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
}

/* /ranks/state: each rank writes its own row (rank, its replica's checksums), collectively. */
static void write_rank_state(ckpt_err *e, hid_t f, int rank, int size, const uint64_t own[3]) {
    hid_t g = w_group(e, f, "ranks");
    hsize_t dims[2] = {(hsize_t)size, CKPT_RANK_COLS};
    hid_t fs = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t ds = H5Dcreate2(g, "state", H5T_STD_U64LE, fs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) gt_ckpt_err_set(e, 0, "HDF5 could not create dataset '/ranks/state'");
    if (ds >= 0) {
        w_attr_str(e, ds, "columns", "rank,params_xxh64,adam_m_xxh64,adam_v_xxh64");
        uint64_t row[CKPT_RANK_COLS] = {(uint64_t)rank, own[0], own[1], own[2]};
        hsize_t start[2] = {(hsize_t)rank, 0}, count[2] = {1, CKPT_RANK_COLS};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t ms = H5Screate_simple(2, count, NULL);
        hid_t dxpl = gt_h5_dxpl(0);
        errno = 0;
        if (H5Dwrite(ds, H5T_NATIVE_UINT64, ms, fs, dxpl, row) < 0)
            gt_ckpt_err_set(e, errno, "HDF5 could not write dataset '/ranks/state'");
        H5Pclose(dxpl);
        H5Sclose(ms);
        H5Dclose(ds);
    }
    H5Pclose(dcpl);
    H5Sclose(fs);
    if (g >= 0) H5Gclose(g);
}

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
    uint64_t own[3] = {gt_ckpt_buf_hash(m->params, m->n_params), gt_ckpt_buf_hash(m->adam_m, m->n_params),
                       gt_ckpt_buf_hash(m->adam_v, m->n_params)};
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
    hid_t f = gt_h5_create_file(path, 0, fapl);
    int err_no = errno;
    H5Pclose(fapl);
    if (f < 0) gt_ckpt_err_set(e, err_no, "cannot create the file");
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

    write_tables(e, f, m, w);

    hid_t g = w_group(e, f, "train_state");
    for (int i = 0; i < gt_ckpt_n_state_fields; i++)
        w_attr(e, g, gt_ckpt_state_fields[i].name, gt_ckpt_file_type(gt_ckpt_state_fields[i].type),
               gt_ckpt_mem_type(gt_ckpt_state_fields[i].type), (const char *)ts + gt_ckpt_state_fields[i].offset);
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

    write_rank_state(e, f, rank, size, own);

    errno = 0;
    if (H5Fclose(f) < 0) gt_ckpt_err_set(e, errno, "HDF5 could not flush and close the file");

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

/* Collective, after a failed save: the first failing rank's cause into why
 * on rank 0 (for the trainer's final message). */
static void gather_cause(const ckpt_err *e, int rank, MPI_Comm comm, char *why, size_t why_bytes) {
    char mine[sizeof e->what + 128] = "";
    if (e->failed)
        snprintf(mine, sizeof mine, "%s%s%s", e->what, e->err_no ? ": " : "", e->err_no ? strerror(e->err_no) : "");
    int64_t n_all = 0;
    char *all = gt_dist_gatherv(mine, e->failed ? (int)strlen(mine) + 1 : 0, MPI_CHAR, &n_all,
                                "checkpoint: too many ranks", comm);
    if (rank == 0) {
        if (why && why_bytes) snprintf(why, why_bytes, "%s", n_all > 0 ? all : "unknown cause");
        free(all);
    }
}

/* The last component of a checkpoint path: its name in checkpoints/ */
static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Rank 0, step 1: checkpoints/ opened below the run directory (no component a
 * symbolic link) into *dfd, a new unique temporary created in it and kept open
 * at *fd (its path in tmp[]), space for the whole file reserved through that
 * descriptor. Failures go to e. */
static void create_tmp(const char *run_dir, const char *dir, const char *final, off_t need, int *dfd, int *fd,
                       char *tmp, size_t tmp_bytes, ckpt_err *e) {
    char bad[PATH_MAX + 64], name[PATH_MAX];
    *dfd = gt_out_dir_open(run_dir, "checkpoints", bad, sizeof bad);
    if (*dfd < 0) {
        gt_ckpt_err_set(e, errno, "cannot create directory %s", bad); /* a link there: ELOOP */
        return;
    }
    *fd = gt_tmp_openat(*dfd, base_name(final), name, sizeof name);
    if (*fd < 0) {
        gt_ckpt_err_set(e, errno, "cannot create a temporary file next to %s", final);
        return;
    }
    snprintf(tmp, tmp_bytes, "%s/%s", dir, name);
    int rc = posix_fallocate(*fd, 0, need);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
        gt_ckpt_err_set(e, rc, "cannot reserve %.1f MiB for %s", (double)need / 1048576.0, tmp);
}

/* Rank 0: the temporary's name still names the file created at fd (HDF5
 * opens it by name, collectively). */
static void check_tmp(int fd, int dfd, const char *tmp, ckpt_err *e) {
    if (!e->failed && !gt_fd_is_at(fd, dfd, base_name(tmp)))
        gt_ckpt_err_set(e, errno, "%s is no longer the file created for the checkpoint", tmp);
}

int gt_ckpt_save(const char *run_dir, const gt_model *m, const gt_train_state *ts, const gt_norm_stats *ns,
                 const char *config_text, int keep, MPI_Comm comm, char *why, size_t why_bytes) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    double t0 = MPI_Wtime();
    long long step = (long long)ts->step;
    char *dir = gt_ckpt_dir(run_dir);
    char *final = gt_ckpt_name(dir, step, ".h5");
    char tmp[PATH_MAX + 64] = "";
    char *ok = gt_ckpt_name(dir, step, ".ok");
    ckpt_err e = {0, 0, ""};
    int committed = 0;
    int dfd = -1, fd = -1; /* rank 0: checkpoints/ and the temporary, open from creation to commit */

    /* 1. directory, a new unique temporary ckpt-<step>.h5.tmp.XXXXXX, and
     * space for the whole file reserved once (rank 0): disk full, quota and
     * file size limits show up here as a clean errno, before HDF5 writes
     * anything (HDF5 1.10 handles a failing H5Fclose badly) */
    if (rank == 0) {
        size_t cfg_bytes = config_text ? strlen(config_text) : 0;
        off_t need = (off_t)(3 * m->n_params * sizeof(float) + cfg_bytes + (size_t)m->n_tensors * 3 * 2048 +
                             ((size_t)1 << 20));
        create_tmp(run_dir, dir, final, need, &dfd, &fd, tmp, sizeof tmp, &e);
        check_tmp(fd, dfd, tmp, &e);
    }
    gt_dist_bcast_bytes(tmp, sizeof tmp, comm);
    if (tmp[0]) gt_output_begin(tmp); /* removed if the job fails */
    if (!all_ok(&e, comm)) goto done;

    /* 2. collective write of the temporary file, then every rank fsyncs it
     * (rank 0 through its descriptor, after checking the name still names it) */
    if (write_file(tmp, final, m, ts, ns, config_text, comm, &e) != 0) goto done;
    if (rank == 0) {
        check_tmp(fd, dfd, tmp, &e);
        if (!e.failed && fsync(fd) != 0) gt_ckpt_err_set(&e, errno, "cannot fsync the file");
    } else if (!e.failed && gt_ckpt_fsync(tmp, 0) != 0) {
        gt_ckpt_err_set(&e, errno, "cannot fsync the file");
    }
    if (!all_ok(&e, comm)) goto done;

    /* 3. rename into place (rank 0, in the directory opened in step 1) */
    if (rank == 0) {
        if (unlinkat(dfd, base_name(ok), 0) != 0 && errno != ENOENT)
            gt_ckpt_err_set(&e, errno, "cannot remove the old commit marker %s", ok);
        else if (renameat(dfd, base_name(tmp), dfd, base_name(final)) != 0)
            gt_ckpt_err_set(&e, errno, "cannot rename %s", tmp);
        else if (fsync(dfd) != 0)
            gt_ckpt_err_set(&e, errno, "cannot fsync directory %s", dir);
    }
    if (!all_ok(&e, comm)) goto done; /* also the barrier before the marker */

    /* 4. commit marker (rank 0, after every rank has written): the hash of
     * the file written, read through its descriptor */
    if (rank == 0) {
        uint64_t fh = 0;
        int64_t fbytes = 0;
        if (gt_ckpt_fd_hash(fd, &fh, &fbytes) != 0) {
            gt_ckpt_err_set(&e, errno, "cannot read back %s", final);
        } else {
            char text[128];
            snprintf(text, sizeof text, "xxh64 %016" PRIx64 " size %" PRId64 "\n", fh, fbytes);
            if (gt_ckpt_write_marker(dfd, ok, text, &e) == 0) {
                committed = 1;
                gt_ckpt_prune(dir, step, (long long)ts->best_step, keep);
                GT_INFO("checkpoint: wrote %s (%.1f MiB, %.2f s)", final, fbytes / 1048576.0,
                        MPI_Wtime() - t0);
            }
        }
        if (!committed) unlinkat(dfd, base_name(final), 0); /* complete but uncommitted: free the space */
    }

done:;
    int rc = 0;
    if (e.failed) {
        err_log(&e, final);
        rc = GT_EXIT_RESOURCE;
    }
    rc = gt_dist_max_int(rc, comm);
    if (rc) gather_cause(&e, rank, comm, why, why_bytes); /* the first failing rank's cause */
    if (rc && rank == 0 && !committed && dfd >= 0) {
        if (tmp[0]) unlinkat(dfd, base_name(tmp), 0); /* never leave a partial file behind */
        if (faccessat(dfd, base_name(final), F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
            faccessat(dfd, base_name(ok), F_OK, AT_SYMLINK_NOFOLLOW) != 0)
            unlinkat(dfd, base_name(final), 0);
    }
    if (tmp[0]) gt_output_end(tmp);
    if (fd >= 0) close(fd);
    if (dfd >= 0) close(dfd);
    free(dir);
    free(final);
    free(ok);
    return rc;
}
