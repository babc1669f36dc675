/* tests/eval/eval_runs.h: the stored runs the evaluation tests load.
 *
 * The ctest fixture `eval_runs` (test test_eval_runs_setup: gt_eval_make_runs,
 * make_eval_runs.c) trains them once into ER_DIR (the build tree's
 * tests/eval/eval_runs/) with gt_train_run and the evaluation `gridtrain
 * train` runs at its end; the tests that require the fixture (test_eval_nilm*,
 * test_eval_pdm*) load them from there and never train:
 *   nilm.h5                 4 households x 0.5 day at 6 s, clean (no spikes or gaps)
 *   nilm-power/             s2p_cnn, 30 steps (er_nilm_* variant ER_POWER)
 *   nilm-gated/             the same with the gated head (ER_GATED)
 *   nilm-time/              gated, with time-of-day/week input channels (ER_TIME)
 *   farm.h5                 1 farm x 3 turbines x 0.1 day at 1 Hz, frequent shocks
 *   pdm-32/, pdm-16/        lstm of window 32 (40 steps) and 16 (20 steps)
 * Each run's data and model settings are the functions below, used by the
 * maker to train and by the tests to evaluate, so both agree by construction.
 * A run's model is read from its newest committed checkpoint by er_load
 * (the format of train/ckpt_impl.h, read here with HDF5 alone: the tests link
 * only their folder's libraries, and train/ is not one of them); the bytes
 * read are checked against the checkpoint's params_xxh64. */
#ifndef GT_TESTS_EVAL_EVAL_RUNS_H
#define GT_TESTS_EVAL_EVAL_RUNS_H

#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/dataset.h"
#include "nilm/nilm.h"
#include "nn/model.h"
#include "test.h"

enum { ER_POWER = 0, ER_GATED = 1, ER_TIME = 2 };

/* ER_DIR: GT_EVAL_RUNS in the environment (ctest sets it), else argv-less default */
static inline const char *er_dir(void) {
    const char *d = getenv("GT_EVAL_RUNS");
    return d && *d ? d : "eval_runs";
}
static inline void er_path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", er_dir(), name); }
static inline const char *er_nilm_run_name(int variant) {
    return variant == ER_TIME ? "nilm-time" : variant == ER_GATED ? "nilm-gated" : "nilm-power";
}

/* ---------------------------------------------------------------- NILM -- */
static inline int er_nilm_time_features(int variant) { return variant == ER_TIME ? 4 : 0; } /* day+week */

static inline void er_nilm_data(gt_data_config *d, int variant) {
    gt_data_config_defaults(d);
    d->window = 63;
    d->stride = 16;
    gt_nilm_data_cfg_set(d)->spike_min_w = 0;     /* the Hampel rule alone */
    d->holdout_every = 4;   /* household 3 held out */
    d->screen = GT_SCREEN_OFF;
    gt_nilm_data_cfg_set(d)->time_features = er_nilm_time_features(variant);
}

/* the model as trained (window, inputs and outputs of the file: 15 appliances) */
static inline void er_nilm_model(gt_model_config *m, int variant) {
    gt_model_config_default(m, GT_MODEL_S2P_CNN);
    m->n_layers = 3;
    const int ch[3] = {8, 8, 8}, k[3] = {7, 5, 5};
    for (int l = 0; l < 3; l++) m->conv_channels[l] = ch[l], m->conv_kernels[l] = k[l];
    m->hidden = 32;
    m->gated = variant != ER_POWER;
    m->window = 63;
    m->n_in = 1 + er_nilm_time_features(variant);
    m->n_out = m->gated ? 30 : 15;
}

/* ----------------------------------------------------------------- PdM -- */
static inline void er_pdm_data(gt_data_config *d, int T) {
    gt_data_config_defaults(d);
    d->window = T;
    d->stride = T / 2;
    d->holdout_every = 3; /* turbine 2 held out */
}

static inline void er_pdm_model(gt_model_config *m, int T, int C) {
    gt_model_config_default(m, GT_MODEL_LSTM);
    m->hidden = 16;
    m->n_layers = 1;
    m->window = T;
    m->n_in = m->n_out = C;
}

/* ------------------------------------------------------------- loading -- */
static inline int er_attr_u64(hid_t f, const char *name, unsigned long long *v) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0) return -1;
    herr_t r = H5Aread(a, H5T_NATIVE_ULLONG, v);
    H5Aclose(a);
    return r < 0 ? -1 : 0;
}

/* The newest committed checkpoint (ckpt-<step>.h5 with its ckpt-<step>.ok
 * marker) of run_dir into m's parameters and ns; returns its step. Fails the
 * test when there is none, a tensor is missing or of another size, or the
 * parameters do not hash to the file's params_xxh64. */
static inline long long er_load(const char *run_dir, gt_model *m, gt_norm_stats *ns) {
    char dir[1200], path[1400];
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    DIR *dp = opendir(dir);
    TEST_REQUIRE(dp != NULL);
    long long best = -1;
    for (struct dirent *de; (de = readdir(dp));) {
        long long s;
        char tail[8];
        if (sscanf(de->d_name, "ckpt-%lld.%7s", &s, tail) != 2 || strcmp(tail, "h5") || s <= best) continue;
        snprintf(path, sizeof path, "%s/ckpt-%09lld.ok", dir, s);
        if (access(path, R_OK) == 0) best = s;
    }
    closedir(dp);
    TEST_REQUIRE(best >= 0);
    snprintf(path, sizeof path, "%s/ckpt-%09lld.h5", dir, best);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    unsigned long long n_params = 0, want = 0;
    TEST_REQUIRE(er_attr_u64(f, "n_params", &n_params) == 0 && n_params == m->n_params);
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        char name[200];
        snprintf(name, sizeof name, "model/%s", t->name);
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
        TEST_REQUIRE(d >= 0);
        hid_t sp = H5Dget_space(d);
        TEST_REQUIRE((size_t)H5Sget_simple_extent_npoints(sp) == t->n_elem);
        TEST_REQUIRE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->params + t->offset) >= 0);
        H5Sclose(sp), H5Dclose(d);
    }
    TEST_REQUIRE(er_attr_u64(f, "params_xxh64", &want) == 0);
    TEST_REQUIRE(XXH64(m->params, sizeof(float) * m->n_params, 0) == (XXH64_hash_t)want);
    memset(ns, 0, sizeof *ns);
    hid_t dm = H5Dopen2(f, "norm/mean", H5P_DEFAULT), ds = H5Dopen2(f, "norm/std", H5P_DEFAULT);
    TEST_REQUIRE(dm >= 0 && ds >= 0);
    hid_t sp = H5Dget_space(dm);
    ns->n = (int)H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    TEST_REQUIRE(ns->n > 0 && ns->n <= 1 + GT_DATA_MAX_CHANNELS);
    TEST_REQUIRE(H5Dread(dm, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ns->mean) >= 0 &&
                 H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ns->std) >= 0);
    H5Dclose(dm), H5Dclose(ds), H5Fclose(f);
    return best;
}

#endif
