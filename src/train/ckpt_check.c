/* train/ckpt_check.c: a checkpoint is untrusted input (anyone can recompute
 * its marker): every object is checked before it is read (train/ckpt_impl.h).
 * Collective where the caller's comm is (CKPT_CHECK). */
#define _GNU_SOURCE
#include "train/ckpt_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check_h5.h"
#include "io/h5.h"
#include "train/run_json_impl.h"

/* Opens a checkpoint read-only (fapl: H5P_DEFAULT or gt_h5_fapl's; see
 * gt_h5_open_ro): < 0 when HDF5 cannot open it. The commit marker's checksum
 * proves only that the bytes are the ones committed, not who wrote them: a
 * file with a link out of it (soft, external), a virtual dataset or external
 * storage is refused (exit 3) naming the object, never followed. */
hid_t gt_ckpt_open(MPI_Comm comm, const char *path, hid_t fapl) {
    char why[1280];
    hid_t f = gt_h5_open_ro(path, fapl, why, sizeof why);
    CKPT_CHECK(comm, f != GT_H5_REFUSED, "checkpoint %s", why);
    return f;
}

/* Opens path read-only with the serial driver and checks magic and version:
 * 1 good, 0 not a gridtrain checkpoint (why in `why`). A newer format version
 * is a user error. */
int gt_ckpt_check_header(const char *path, char *why, size_t why_bytes) {
    const MPI_Comm comm = MPI_COMM_NULL; /* rank 0 alone */
    hid_t f = gt_ckpt_open(comm, path, H5P_DEFAULT);
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
        CKPT_CHECK(comm, ver >= 1 && ver <= CKPT_VERSION,
                 "checkpoint %s has format version %lld; this gridtrain reads version %d "
                 "(written by a newer gridtrain?)",
                 path, (long long)ver, CKPT_VERSION);
    return good;
}

/* Reads the numeric attribute `name` of obj into out (one value of mtype):
 * it must be a single number of the same class (integer or floating point)
 * as mtype, else a user error naming it (an array attribute would overrun out). */
void gt_ckpt_read_attr(MPI_Comm comm, hid_t obj, const char *file, const char *obj_name, const char *name, hid_t mtype, void *out) {
    CKPT_CHECK(comm, H5Aexists(obj, name) > 0, "checkpoint %s: %s has no attribute '%s'", file,
             obj_name, name);
    hid_t a = H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT));
    hid_t t = H5_CHECK(H5Aget_type(a)), sp = H5_CHECK(H5Aget_space(a));
    const int one = H5Sget_simple_extent_npoints(sp) == 1, same = H5Tget_class(t) == H5Tget_class(mtype);
    H5Tclose(t);
    H5Sclose(sp);
    CKPT_CHECK(comm, one && same, "checkpoint %s: attribute '%s' of %s is not a single %s", file, name, obj_name,
               H5Tget_class(mtype) == H5T_FLOAT ? "floating-point number" : "integer");
    CKPT_CHECK(comm, H5Aread(a, mtype, out) >= 0, "checkpoint %s: attribute '%s' of %s cannot be read", file, name,
               obj_name);
    H5Aclose(a);
}

static void shape_str(char *out, size_t out_bytes, int ndim, const hsize_t *dims) {
    size_t k = 0;
    k += (size_t)snprintf(out + k, out_bytes - k, "(");
    for (int d = 0; d < ndim && k < out_bytes; d++)
        k += (size_t)snprintf(out + k, out_bytes - k, d ? ", %llu" : "%llu", (unsigned long long)dims[d]);
    if (k < out_bytes) snprintf(out + k, out_bytes - k, ")");
}

/* "a s2p_cnn model of 1130 parameters in 8 tensors": the checkpoint's (its root
 * attributes, as written) and the run's, for the one line of a mismatch. */
void gt_ckpt_model_desc(hid_t f, char *out, size_t out_bytes) {
    char kind[64] = "?";
    int64_t n_params = -1, n_tensors = -1;
    if (gt_h5_attr_read_str(f, "model_kind", kind, sizeof kind) != 0) snprintf(kind, sizeof kind, "?");
    for (char *p = kind; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    gt_h5_attr_read_i64(f, "n_params", &n_params);
    gt_h5_attr_read_i64(f, "n_tensors", &n_tensors);
    snprintf(out, out_bytes, "a %s model of %lld parameters in %lld tensors", kind, (long long)n_params,
             (long long)n_tensors);
}
void gt_ckpt_run_model_desc(const gt_model *m, char *out, size_t out_bytes) {
    snprintf(out, out_bytes, "a %s model of %lld parameters in %d tensors", gt_model_kind_name(m->cfg.kind),
             (long long)m->n_params, m->n_tensors);
}
#define GT_CKPT_MODEL_DIFFERS                                                                                      \
    "; the checkpoint holds %s, this run builds %s (the model configuration differs from the checkpointed " \
    "run's)"

H5O_type_t gt_ckpt_obj_type(hid_t loc, const char *name) {
    H5O_info_t oi;
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0 || H5Oget_info_by_name(loc, name, &oi, H5P_DEFAULT) < 0)
        return H5O_TYPE_UNKNOWN;
    return oi.type;
}

static void type_str(hid_t t, char *out, size_t out_bytes) {
    H5T_class_t c = H5Tget_class(t);
    size_t n = H5Tget_size(t);
    if (c == H5T_FLOAT) snprintf(out, out_bytes, "float%zu", 8 * n);
    else if (c == H5T_INTEGER) snprintf(out, out_bytes, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", 8 * n);
    else if (c == H5T_STRING) snprintf(out, out_bytes, "a string");
    else snprintf(out, out_bytes, "HDF5 type class %d", (int)c);
}

/* Opens dataset `name` of loc (a hard link: gt_ckpt_open refused any other) that
 * must be of floating-point type `bytes` wide, rank `ndim` and, where want is
 * given, exactly the shape want[ndim]; its dims go to dims (H5S_MAX_RANK).
 * Any difference is a user error naming the file and /<where>. Returns the
 * open dataset (caller closes it). */
static hid_t open_float_ds(MPI_Comm comm, hid_t loc, const char *path, const char *where, const char *name, size_t bytes, int ndim,
                           const hsize_t *want, hsize_t *dims, const char *extra) {
    CKPT_CHECK(comm, gt_ckpt_obj_type(loc, name) == H5O_TYPE_DATASET, "checkpoint %s has no dataset '/%s'%s", path, where,
               extra ? extra : "");
    hid_t ds = H5_CHECK(H5Dopen2(loc, name, H5P_DEFAULT));
    hid_t t = H5_CHECK(H5Dget_type(ds)), sp = H5_CHECK(H5Dget_space(ds));
    char tn[48];
    type_str(t, tn, sizeof tn);
    const int type_ok = H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == bytes;
    H5Tclose(t);
    CKPT_CHECK(comm, type_ok, "checkpoint %s: dataset '/%s' is %s, expected float%zu%s", path, where, tn, 8 * bytes,
               extra ? extra : "");
    int nd = H5Sget_simple_extent_ndims(sp);
    CKPT_CHECK(comm, nd >= 0 && nd <= H5S_MAX_RANK && H5Sget_simple_extent_dims(sp, dims, NULL) == nd,
               "checkpoint %s: dataset '/%s' has no readable shape", path, where);
    H5Sclose(sp);
    int same = nd == ndim;
    for (int d = 0; same && want && d < ndim; d++) same = dims[d] == want[d];
    if (!same) {
        char a[96] = "", b[96] = "(n)";
        shape_str(a, sizeof a, nd, dims);
        if (want) shape_str(b, sizeof b, ndim, want);
        CKPT_CHECK(comm, 0, "checkpoint %s: dataset '/%s' has shape %s, expected %s%s", path, where, a, b,
                   extra ? extra : "");
    }
    return ds;
}

/* Collective (metadata). Checks the file's /<group> table against the model's
 * (every tensor a float32 dataset of the model's shape, no other entry)
 * before reading it into buf. */
void gt_ckpt_read_table(MPI_Comm comm, hid_t f, const char *path, const char *group, const gt_model *m, float *buf) {
    char ck[160], run[160], extra[480];
    gt_ckpt_model_desc(f, ck, sizeof ck);
    gt_ckpt_run_model_desc(m, run, sizeof run);
    snprintf(extra, sizeof extra, GT_CKPT_MODEL_DIFFERS, ck, run);
    CKPT_CHECK(comm, gt_ckpt_obj_type(f, group) == H5O_TYPE_GROUP, "checkpoint %s has no group '/%s'", path, group);
    hid_t g = H5_CHECK(H5Gopen2(f, group, H5P_DEFAULT));
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        char where[320];
        snprintf(where, sizeof where, "%s/%s", group, t->name);
        hsize_t want[4], dims[H5S_MAX_RANK];
        for (int d = 0; d < t->ndim; d++) want[d] = (hsize_t)t->shape[d];
        hid_t ds = open_float_ds(comm, g, path, where, t->name, sizeof(float), t->ndim, want, dims, extra);
        CKPT_CHECK(comm, H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf + t->offset) >= 0,
                   "checkpoint %s: dataset '/%s' cannot be read (damaged, or compressed with a filter this build "
                   "lacks)", path, where);
        H5Dclose(ds);
    }
    H5G_info_t gi;
    H5_CHECK(H5Gget_info(g, &gi));
    if (gi.nlinks != (hsize_t)m->n_tensors) {
        for (hsize_t k = 0; k < gi.nlinks; k++) {
            char name[256] = "";
            H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name, H5P_DEFAULT);
            for (char *p = name; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
            CKPT_CHECK(comm, gt_model_find_tensor(m, name) >= 0, "checkpoint %s has tensor '/%s/%s' that this run's model lacks%s",
                       path, group, name, extra);
        }
    }
    H5Gclose(g);
}

/* The trainer state's values as the trainer can use them: counts not
 * negative (best_step -1: none yet), the floats finite (best_val may be
 * +inf: no validation yet), the loss scale > 0 and the learning-rate factor
 * in (0, 1]. A user error naming the attribute otherwise. */
void gt_ckpt_check_state(MPI_Comm comm, const gt_train_state *st, const char *path) {
    const struct {
        int ok;
        const char *name;
    } c[] = {
        {st->step >= 0, "step"},
        {st->batch_k >= 0, "batch_k"},
        {st->samples >= 0, "samples"},
        {st->best_step >= -1, "best_step"},
        {st->bad_evals >= 0, "bad_evals"},
        {st->bad_steps >= 0, "bad_steps"},
        {st->scale_good_steps >= 0, "scale_good_steps"},
        {st->skipped_steps >= 0, "skipped_steps"},
        {st->plateau_evals >= 0, "plateau_evals"},
        {!isnan(st->best_val) && st->best_val > -INFINITY, "best_val"},
        {isfinite(st->loss_scale) && st->loss_scale > 0, "loss_scale"},
        {isfinite(st->elapsed_s) && st->elapsed_s >= 0, "elapsed_s"},
        {isfinite(st->lr_factor) && st->lr_factor > 0 && st->lr_factor <= 1, "lr_factor"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CKPT_CHECK(comm, c[i].ok, "checkpoint %s: attribute '%s' of /train_state is out of range", path, c[i].name);
}

/* Collective (metadata). /norm/mean and /norm/std: float64 [n] each, the same
 * n, at most the capacity of ns, exactly `expect` when that is > 0 (the
 * features the run normalises), every value finite and every std > 0 (a zero
 * or NaN statistic would turn every metric into NaN). Then read into ns. */
void gt_ckpt_read_norm(MPI_Comm comm, hid_t f, const char *path, gt_norm_stats *ns, int expect) {
    const int cap = (int)(sizeof ns->mean / sizeof ns->mean[0]);
    hsize_t dm[H5S_MAX_RANK], dsd[H5S_MAX_RANK];
    CKPT_CHECK(comm, gt_ckpt_obj_type(f, "norm") == H5O_TYPE_GROUP, "checkpoint %s has no group '/norm'", path);
    hid_t m = open_float_ds(comm, f, path, "norm/mean", "norm/mean", sizeof(double), 1, NULL, dm, NULL);
    hid_t s = open_float_ds(comm, f, path, "norm/std", "norm/std", sizeof(double), 1, NULL, dsd, NULL);
    CKPT_CHECK(comm, dm[0] == dsd[0], "checkpoint %s: /norm/std has %llu values, /norm/mean %llu (one per feature each)",
               path, (unsigned long long)dsd[0], (unsigned long long)dm[0]);
    CKPT_CHECK(comm, dm[0] <= (hsize_t)cap, "checkpoint %s: /norm/mean has %llu features, at most %d are supported", path,
               (unsigned long long)dm[0], cap);
    CKPT_CHECK(comm, expect <= 0 || dm[0] == (hsize_t)expect,
               "checkpoint %s: /norm/mean has %llu features, this run normalises %d (a checkpoint of another run?)",
               path, (unsigned long long)dm[0], expect);
    gt_norm_stats in;
    memset(&in, 0, sizeof in);
    in.n = (int)dm[0];
    CKPT_CHECK(comm, in.n == 0 || (H5Dread(m, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, in.mean) >= 0 &&
                             H5Dread(s, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, in.std) >= 0),
               "checkpoint %s: /norm cannot be read (damaged?)", path);
    H5Dclose(m);
    H5Dclose(s);
    for (int i = 0; i < in.n; i++) {
        CKPT_CHECK(comm, isfinite(in.mean[i]), "checkpoint %s: /norm/mean[%d] is %g (not a finite number)", path, i,
                   in.mean[i]);
        CKPT_CHECK(comm, isfinite(in.std[i]) && in.std[i] > 0,
                   "checkpoint %s: /norm/std[%d] is %g (a standard deviation must be finite and > 0)", path, i,
                   in.std[i]);
    }
    *ns = in;
}

/* Rank 0, not collective. The chosen checkpoint against the run it lies in:
 * RUN_DIR/manifest.json (written by the run's trainer after it loaded or
 * built its model) names the model kind, its parameter count and the task.
 * A checkpoint of another model (one copied from another run, with a marker
 * recomputed) is a user error naming both; a run without a manifest (the C
 * API, a run that never started) is not checked. */
void gt_ckpt_check_run_identity(const char *run_dir, const char *path) {
    const MPI_Comm comm = MPI_COMM_NULL; /* rank 0 alone */
    cJSON *j = gt_run_json_load(run_dir, "manifest.json");
    const char *kind = j ? gt_run_json_str(j, "model_kind") : NULL, *task = j ? gt_run_json_str(j, "task") : NULL;
    const double np = j ? gt_run_json_num(j, "n_params") : NAN;
    if (kind && isfinite(np)) {
        hid_t f = gt_ckpt_open(comm, path, H5P_DEFAULT);
        if (f >= 0) {
            char ck_kind[64] = "", ck[160];
            int64_t ck_np = -1;
            gt_h5_attr_read_str(f, "model_kind", ck_kind, sizeof ck_kind);
            gt_h5_attr_read_i64(f, "n_params", &ck_np);
            gt_ckpt_model_desc(f, ck, sizeof ck);
            H5Fclose(f);
            CKPT_CHECK(comm, strcmp(ck_kind, kind) == 0 && (double)ck_np == np,
                       "checkpoint %s holds %s; the run %s trained a %.40s model of %.0f parameters (task %.16s, its "
                       "manifest.json): a checkpoint of another run?",
                       path, ck, run_dir, kind, np, task ? task : "?");
        }
    }
    cJSON_Delete(j);
}
