/* train/checkpoint.c: choosing and loading a checkpoint (see checkpoint.h):
 * the newest valid one, the best validation one or one step, every object
 * checked before it is read (ckpt_check.c); the configuration stored with it.
 * The format, the directory protocol and the write: train/ckpt_impl.h. */
#define _GNU_SOURCE
#include "train/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "io/h5.h"
#include "train/ckpt_impl.h"

/* Not collective. Newest valid checkpoint of run_dir (want < 0) or the valid
 * checkpoint of step `want`: its path (malloc'd) and step, or NULL. Damaged
 * or uncommitted ones on the way are warned about. */
static char *find_valid_step(const char *run_dir, long long want, long long *step_out) {
    char *dir = gt_ckpt_dir(run_dir);
    int n = 0;
    ckpt_entry *v = gt_ckpt_list(dir, &n);
    char *found = NULL;
    for (int i = 0; i < n && !found; i++) {
        long long s = v[i].step;
        if (want >= 0 && s != want) continue;
        char *h5 = gt_ckpt_name(dir, s, ".h5"), *ok = gt_ckpt_name(dir, s, ".ok");
        int f = v[i].flags;
        if ((f & CK_H5) && !(f & CK_OK)) {
            GT_WARN("checkpoint %s has no commit marker (its write was interrupted); skipped", h5);
        } else if ((f & CK_OK) && !(f & CK_H5)) {
            GT_WARN("checkpoint %s is missing (its marker %s exists); skipped", h5, ok);
        } else if (f & CK_H5) {
            uint64_t mh = 0, fh = 0;
            int64_t ms = 0, fs = 0;
            char why[128];
            if (gt_ckpt_read_marker(ok, &mh, &ms, why) != 0) {
                GT_WARN("checkpoint %s: commit marker %s is unreadable or malformed (%s); trying the previous one", h5,
                        ok, why);
            } else if (gt_ckpt_file_hash(h5, &fh, &fs, why) != 0) {
                GT_WARN("checkpoint %s cannot be read (%s); trying the previous one", h5, why);
            } else if (fs != ms || fh != mh) {
                GT_WARN("checkpoint %s is damaged: %lld bytes with xxh64 %016" PRIx64
                        ", its marker says %lld bytes with xxh64 %016" PRIx64 "; trying the previous one",
                        h5, (long long)fs, fh, (long long)ms, mh);
            } else if (!gt_ckpt_check_header(h5, why, sizeof why)) {
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
    hid_t f = gt_ckpt_open(MPI_COMM_NULL, path, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t g = H5Gopen2(f, "train_state", H5P_DEFAULT);
    if (g >= 0) {
        int64_t v = -1;
        if (gt_h5_attr_read_i64(g, "best_step", &v) == 0 && v >= 0) best = (long long)v; /* scalar only */
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

int64_t gt_ckpt_load_latest(const char *run_dir, gt_model *m, gt_train_state *ts, gt_norm_stats *ns,
                            MPI_Comm comm) {
    return gt_ckpt_load(run_dir, GT_CKPT_LATEST, -1, m, ts, ns, comm);
}

int64_t gt_ckpt_load(const char *run_dir, gt_ckpt_which which, int64_t want, gt_model *m, gt_train_state *ts,
                     gt_norm_stats *ns, MPI_Comm comm) {
    return gt_ckpt_load_expect(run_dir, which, want, m, ts, ns, 0, comm);
}

int64_t gt_ckpt_load_expect(const char *run_dir, gt_ckpt_which which, int64_t want, gt_model *m, gt_train_state *ts,
                            gt_norm_stats *ns, int n_features, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    long long step = -1;
    char *path = NULL;
    int len = 0;
    if (rank == 0) {
        path = choose(run_dir, which, want, &step);
        if (path) gt_ckpt_check_run_identity(run_dir, path);
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

    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = gt_ckpt_open(comm, path, fapl);
    H5Pclose(fapl);
    CKPT_CHECK(comm, f >= 0, "cannot open checkpoint %s", path);

    char kind[64] = "", ck[160], run[160];
    CKPT_CHECK(comm, gt_h5_attr_read_str(f, "model_kind", kind, sizeof kind) == 0,
             "checkpoint %s has no model_kind attribute", path);
    gt_ckpt_model_desc(f, ck, sizeof ck);
    gt_ckpt_run_model_desc(m, run, sizeof run);
    CKPT_CHECK(comm, strcmp(kind, gt_model_kind_name(m->cfg.kind)) == 0,
             "checkpoint %s holds %s, this run builds %s (resume with the checkpointed run's configuration)", path,
             ck, run);

    gt_ckpt_read_table(comm, f, path, "model", m, m->params);
    gt_ckpt_read_table(comm, f, path, "adam_m", m, m->adam_m);
    gt_ckpt_read_table(comm, f, path, "adam_v", m, m->adam_v);
    int64_t np = -1, nt = -1; /* the tables matched: attributes that disagree were edited */
    CKPT_CHECK(comm, gt_h5_attr_read_i64(f, "n_params", &np) == 0 && gt_h5_attr_read_i64(f, "n_tensors", &nt) == 0 &&
                   np == (int64_t)m->n_params && nt == m->n_tensors,
               "checkpoint %s: root attributes n_params and n_tensors (%s) do not describe its tables (%s)", path, ck,
               run);

    /* the bytes passed the marker's checksum; this catches a bad conversion or
     * memory error on the way in */
    static const char *const hnames[3] = {"params_xxh64", "adam_m_xxh64", "adam_v_xxh64"};
    const float *bufs[3] = {m->params, m->adam_m, m->adam_v};
    for (int b = 0; b < 3; b++) {
        uint64_t want = 0;
        gt_ckpt_read_attr(comm, f, path, "/", hnames[b], H5T_NATIVE_UINT64, &want);
        uint64_t got = gt_ckpt_buf_hash(bufs[b], m->n_params);
        GT_CHECK(got == want, GT_EXIT_DATA, /* may differ by rank: any rank aborts */
                 "checkpoint %s: the loaded %s do not match their checksum (xxh64 %016" PRIx64
                 ", stored %016" PRIx64 ")",
                 path, hnames[b], got, want);
    }

    gt_train_state st;
    memset(&st, 0, sizeof st);
    CKPT_CHECK(comm, gt_ckpt_obj_type(f, "train_state") == H5O_TYPE_GROUP, "checkpoint %s has no group '/train_state'", path);
    hid_t g = H5_CHECK(H5Gopen2(f, "train_state", H5P_DEFAULT));
    st.lr_factor = 1.0; /* the values of a run from before the optional fields */
    st.plateau_evals = 0;
    for (int i = 0; i < gt_ckpt_n_state_fields; i++) {
        if (gt_ckpt_state_fields[i].optional && H5Aexists(g, gt_ckpt_state_fields[i].name) <= 0) continue;
        gt_ckpt_read_attr(comm, g, path, "/train_state", gt_ckpt_state_fields[i].name, gt_ckpt_mem_type(gt_ckpt_state_fields[i].type),
               (char *)&st + gt_ckpt_state_fields[i].offset);
    }
    H5Gclose(g);
    CKPT_CHECK(comm, st.step == step, "checkpoint %s holds step %lld, its name says %lld", path,
             (long long)st.step, step);
    gt_ckpt_check_state(comm, &st, path);
    if (ts) *ts = st;

    if (ns) gt_ckpt_read_norm(comm, f, path, ns, n_features);
    H5_CHECK(H5Fclose(f));
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
    gt_ckpt_check_run_identity(run_dir, path); /* the run is rebuilt from this text: it must be the run's */
    hid_t f = gt_ckpt_open(MPI_COMM_NULL, path, H5P_DEFAULT);
    GT_CHECK(f >= 0, GT_EXIT_DATA, "cannot open checkpoint %s", path);
    GT_CHECK(gt_ckpt_obj_type(f, "config") == H5O_TYPE_DATASET, GT_EXIT_DATA, "checkpoint %s has no dataset '/config'", path);
    hid_t ds = H5_CHECK(H5Dopen2(f, "config", H5P_DEFAULT));
    hid_t t = H5_CHECK(H5Dget_type(ds)), sp = H5_CHECK(H5Dget_space(ds));
    const hssize_t n_el = H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    GT_CHECK(H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) <= 0 && n_el == 1, GT_EXIT_DATA,
             "checkpoint %s: '/config' is not one fixed-length string", path);
    size_t n = H5Tget_size(t);
    GT_CHECK(n >= 1 && n <= CKPT_MAX_CONFIG_BYTES, GT_EXIT_DATA,
             "checkpoint %s: '/config' is a string of %zu bytes (at most %d)", path, n, CKPT_MAX_CONFIG_BYTES);
    char *text = GT_CALLOC(n + 1, 1);
    GT_CHECK(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0, GT_EXIT_DATA,
             "checkpoint %s: '/config' cannot be read (damaged?)", path);
    H5Tclose(t);
    H5Dclose(ds);
    H5Fclose(f);
    free(path);
    return text;
}
