/* eval/eval_io.c: item gathers and the collective output files of predict
 * (see eval_impl.h). The split of each item is data/'s gt_data_item_split. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/fsutil.h"
#include "dist/reduce.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"

void gt_eval_gather_items(int n_local, const int32_t *fidx, const double *vals, int k, int n_total, double *all,
                          MPI_Comm comm) {
    const int rec = k + 1;
    double *send = GT_MALLOC(sizeof(double) * (size_t)(n_local * rec + 1));
    for (int i = 0; i < n_local; i++) {
        send[i * rec] = fidx[i];
        memcpy(send + i * rec + 1, vals + (size_t)i * k, sizeof(double) * (size_t)k);
    }
    int64_t total = 0;
    double *recv = gt_dist_allgatherv(send, n_local * rec, MPI_DOUBLE, &total,
                                      "eval: per-item records too large to gather", comm);
    memset(all, 0, sizeof(double) * (size_t)n_total * (size_t)k);
    for (int64_t i = 0; i < total / rec; i++) {
        int f = (int)recv[i * rec];
        GT_ASSERT(f >= 0 && f < n_total);
        memcpy(all + (size_t)f * k, recv + i * rec + 1, sizeof(double) * (size_t)k);
    }
    free(send), free(recv);
}

/* ----------------------------------------------------------- out files -- */

static hid_t no_times(hid_t cls) {
    hid_t p = H5_CHECK(H5Pcreate(cls));
    H5_CHECK(H5Pset_obj_track_times(p, 0));
    return p;
}

/* creates the groups of `name` ("a/b/ds" -> a, a/b) that do not exist yet */
static void make_parents(hid_t f, const char *name) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) {
            hid_t gcpl = no_times(H5P_GROUP_CREATE);
            hid_t g = H5Gcreate2(f, buf, H5P_DEFAULT, gcpl, H5P_DEFAULT);
            GT_CHECK(g >= 0, GT_EXIT_LIBRARY, "cannot create group '%s'", buf);
            H5Gclose(g);
            H5Pclose(gcpl);
        }
        *p = '/';
    }
}

static hid_t create_ds(gt_eval_out *o, const char *name, hid_t file_type, int64_t n, int64_t n_cols) {
    make_parents(o->f, name);
    int rk = n_cols > 0 ? 2 : 1;
    hsize_t dims[2] = {(hsize_t)n, (hsize_t)n_cols};
    hid_t space = H5_CHECK(H5Screate_simple(rk, dims, NULL));
    hid_t dcpl = no_times(H5P_DATASET_CREATE);
    H5_CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    hid_t ds = H5Dcreate2(o->f, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    GT_CHECK(ds >= 0, GT_EXIT_LIBRARY, "cannot create dataset '%s' in %s", name, o->tmp);
    H5Pclose(dcpl);
    H5Sclose(space);
    return ds;
}

void gt_eval_out_open(gt_eval_out *o, const char *path, int n_local, const int32_t *fidx, const int64_t *local_rows,
                      int n_total, MPI_Comm comm) {
    memset(o, 0, sizeof *o);
    o->comm = comm;
    MPI_CHECK(MPI_Comm_rank(comm, &o->rank));
    snprintf(o->path, sizeof o->path, "%s", path);
    /* a new unique temporary next to path (named by rank 0, created with H5F_ACC_EXCL below: never an
     * existing file nor through a symbolic link): concurrent writers never share one */
    int err = 0;
    if (o->rank == 0 && gt_tmp_name(path, o->tmp, sizeof o->tmp) != 0) err = errno;
    gt_dist_bcast_bytes(&err, sizeof err, comm);
    GT_CHECK(!err, GT_EXIT_RESOURCE, "cannot create the output '%s': %s (directory missing or not writable?)", path,
             strerror(err));
    gt_dist_bcast_bytes(o->tmp, sizeof o->tmp, comm);
    gt_output_begin(o->tmp); /* removed if the job fails */
    o->n_total = n_total;
    /* global offsets from every rank's (file index, rows) */
    double *rows = GT_MALLOC(sizeof(double) * (size_t)(n_local > 0 ? n_local : 1));
    for (int i = 0; i < n_local; i++) rows[i] = (double)local_rows[i];
    double *all = GT_MALLOC(sizeof(double) * (size_t)(n_total > 0 ? n_total : 1));
    gt_eval_gather_items(n_local, fidx, rows, 1, n_total, all, comm);
    o->goff = GT_CALLOC((size_t)n_total + 1, sizeof(int64_t));
    for (int f = 0; f < n_total; f++) o->goff[f + 1] = o->goff[f] + (int64_t)all[f];
    o->n_rows = o->goff[n_total];
    o->runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)(n_local > 0 ? n_local : 1));
    for (int i = 0; i < n_local; i++) {
        int64_t s = o->goff[fidx[i]], c = local_rows[i];
        if (o->n_runs && o->runs[o->n_runs - 1].start + o->runs[o->n_runs - 1].count == s)
            o->runs[o->n_runs - 1].count += c;
        else o->runs[o->n_runs++] = (gt_row_run){s, c};
    }
    free(rows);
    free(all);
    hid_t fapl = gt_h5_fapl(comm);
    o->f = gt_h5_create_file(o->tmp, 1, fapl);
    GT_CHECK(o->f >= 0, GT_EXIT_RESOURCE, "cannot create '%s' (directory missing or not writable?)", o->tmp);
    H5Pclose(fapl);
    o->dxpl = gt_h5_dxpl(0);
}

void gt_eval_out_rows(gt_eval_out *o, const char *name, hid_t mem_type, hid_t file_type, int64_t n_cols,
                      const void *buf) {
    hid_t ds = create_ds(o, name, file_type, o->n_rows, n_cols);
    gt_h5_write_runs(ds, mem_type, o->runs, o->n_runs, buf, o->dxpl);
    H5Dclose(ds);
}

void gt_eval_out_table(gt_eval_out *o, const char *name, hid_t mem_type, hid_t file_type, int64_t n, int64_t n_cols,
                       const void *buf) {
    hid_t ds = create_ds(o, name, file_type, n, n_cols);
    gt_row_run run = {0, n};
    gt_h5_write_runs(ds, mem_type, &run, o->rank == 0 && n > 0 ? 1 : 0, buf, o->dxpl);
    H5Dclose(ds);
}

void gt_eval_out_attr_models(gt_eval_out *o, const char *attr, const gt_eval_model *ems, int n, int with_window) {
    char names[GT_EVAL_MAX_MODELS * (PATH_MAX + 32)] = "";
    for (int j = 0; j < n; j++) {
        size_t l = strlen(names);
        l += (size_t)snprintf(names + l, sizeof names - l, "%s%s", j ? "," : "", ems[j].name ? ems[j].name : "model");
        if (with_window && l < sizeof names) snprintf(names + l, sizeof names - l, "(window %d)", gt_engine_config(ems[j].e)->window);
    }
    gt_h5_attr_str(o->f, attr, names);
}

void gt_eval_out_close(gt_eval_out *o) {
    H5Pclose(o->dxpl);
    H5_CHECK(H5Fclose(o->f));
    gt_dist_barrier(o->comm);
    if (o->rank == 0)
        GT_CHECK(rename(o->tmp, o->path) == 0, GT_EXIT_RESOURCE, "cannot rename %s to %s", o->tmp, o->path);
    gt_dist_barrier(o->comm);
    gt_output_end(o->tmp);
    free(o->goff);
    free(o->runs);
    o->goff = NULL;
    o->runs = NULL;
}
