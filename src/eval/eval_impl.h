/* eval/eval_impl.h: helpers shared by the eval/ files (internal). */
#ifndef GT_EVAL_EVAL_IMPL_H
#define GT_EVAL_EVAL_IMPL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>

#include "io/h5.h"

struct gt_eval_model;

/* eval.json helpers (run_eval.c) for the tasks' rows (eval_<task>_task.c):
 * v as a number, null when not finite; the "data" object every task starts
 * from; its "models" array (the run(s) evaluated). */
void gt_eval_num(cJSON *o, const char *key, double v);
cJSON *gt_eval_data_json(const char *file, const char *kind, int items, int64_t rows, int ranks);
void gt_eval_models_json(cJSON *d, const struct gt_eval_model *ems, int n_models);

/* Collective: per-item records of k doubles (vals[n_local, k], item file
 * indices fidx[n_local]) gathered on every rank into all[n_total, k] by file
 * index (rows of items nobody owns stay 0). Callers then add rows in file
 * order, so sums do not depend on the number of ranks. */
void gt_eval_gather_items(int n_local, const int32_t *fidx, const double *vals, int k, int n_total, double *all,
                          MPI_Comm comm);

/* A collectively written output file (HDF5 through MPI-IO). Datasets and
 * groups are created without time stamps, so files written by 1 or P ranks
 * hold the same bytes. */
typedef struct gt_eval_out {
    hid_t f, dxpl;
    char path[4096], tmp[4200];
    MPI_Comm comm;
    int rank;
    int n_total;         /* items in the file */
    int64_t n_rows;      /* rows in the file */
    int64_t *goff;       /* [n_total + 1] global row offsets */
    gt_row_run *runs;    /* this rank's rows, merged runs, in local order */
    int n_runs;
} gt_eval_out;

/* Collective: creates path.tmp; local items fidx[n_local] (file order) with
 * local_rows[n_local] rows each, n_total items in all. */
void gt_eval_out_open(gt_eval_out *o, const char *path, int n_local, const int32_t *fidx, const int64_t *local_rows,
                      int n_total, MPI_Comm comm);
/* Collective: dataset [n_rows] (n_cols 0) or [n_rows, n_cols] of this rank's
 * rows, buf packed in local row order. */
void gt_eval_out_rows(gt_eval_out *o, const char *name, hid_t mem_type, hid_t file_type, int64_t n_cols,
                      const void *buf);
/* Collective: a small table [n] / [n, n_cols] written by rank 0 (buf read there). */
void gt_eval_out_table(gt_eval_out *o, const char *name, hid_t mem_type, hid_t file_type, int64_t n,
                       int64_t n_cols, const void *buf);
/* The root attribute `attr`: the runs of models ems[n] comma-separated (an
 * ensemble's members), each followed by "(window W)" when with_window. */
void gt_eval_out_attr_models(gt_eval_out *o, const char *attr, const struct gt_eval_model *ems, int n, int with_window);
/* Collective: closes, renames path.tmp to path (rank 0) after every rank is done. */
void gt_eval_out_close(gt_eval_out *o);

#endif
