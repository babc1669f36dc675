/* tests/train/train_test_util.h: helpers for the trainer tests (static):
 * MPI set-up through dist/, a scratch directory shared by the ranks, small
 * synthetic NILM / PdM files, a NILM source wrapper that plants absurd spikes
 * in one household, and tiny trainer configurations. */
#ifndef GT_TESTS_TRAIN_TRAIN_TEST_UTIL_H
#define GT_TESTS_TRAIN_TRAIN_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "dist/comm.h"
#include "synth/synth.h"
#include "synth/synth_source.h"
#include "io/write.h"
#include "nilm/nilm.h"
#include "test.h"
#include "train/trainer.h"

/* A scratch directory (same path on every rank), created by rank 0. */
static inline void tt_scratch(char *dir, size_t n, const char *name, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    char buf[512] = {0};
    if (rank == 0) {
        const char *base = getenv("GT_BINARY_DIR");
        snprintf(buf, sizeof buf, "%s/train-scratch/%s-%d", base && *base ? base : "/tmp", name, (int)getpid());
        char cmd[2 * sizeof buf + 32]; /* both copies of the path fit */
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
        TEST_REQUIRE(system(cmd) == 0);
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, comm);
    snprintf(dir, n, "%s", buf);
}

static inline void tt_nilm_synth(gt_nilm_synth_cfg *c) {
    gt_nilm_synth_defaults(c);
    c->seed = 7;
    c->n_households = 3;
    c->days = 1;
    c->period_s = 6;
    c->lowres_period_s = 0;
    c->spike_rate = 0;
    c->gap_rate = 0;
    c->stuck_rate = 0;
}

/* ---- a source that plants 1e30 W on every `every`-th row of household `h`,
 * in the first `frac` of its rows (the train split) */
typedef struct tt_spike_ctx {
    gt_nilm_source *base;
    gt_nilm_synth_cfg cfg;
    int h, every;
    double frac;
} tt_spike_ctx;
static void tt_spike_info(void *ctx, int h, gt_nilm_item *it, uint8_t *owns) {
    tt_spike_ctx *c = ctx;
    c->base->info(c->base->ctx, h, it, owns);
}
static void tt_spike_generate(void *ctx, int h, float *agg, float *app, uint8_t *faults) {
    tt_spike_ctx *c = ctx;
    c->base->generate(c->base->ctx, h, agg, app, faults);
    if (h != c->h) return;
    struct gt_nilm_household_info info;
    gt_nilm_household_info(&c->cfg, h, &info);
    for (int64_t r = c->every / 2; r < (int64_t)(c->frac * (double)info.n_rows); r += c->every) agg[r] = 1e30f;
}

/* Collective: writes the small NILM file; with spike_h >= 0 household spike_h
 * carries 1e30 W every `every` rows of its first 60%. */
static inline void tt_write_nilm(const char *path, int spike_h, int every, MPI_Comm comm) {
    gt_nilm_synth_cfg c;
    tt_nilm_synth(&c);
    gt_nilm_source *src = gt_synth_nilm_source(&c);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 4096;
    if (spike_h < 0) {
        gt_nilm_write(path, src, &wo, comm, NULL);
    } else {
        tt_spike_ctx sc = {.base = src, .cfg = c, .h = spike_h, .every = every, .frac = 0.6};
        gt_nilm_source wrap = *src;
        wrap.ctx = &sc;
        wrap.info = tt_spike_info;
        wrap.generate = tt_spike_generate;
        gt_nilm_write(path, &wrap, &wo, comm, NULL);
    }
    gt_synth_nilm_source_free(src);
}

/* Collective: a small wind-farm file (2 turbines, ~1.2 h at 1 Hz). */
static inline void tt_write_pdm(const char *path, MPI_Comm comm) {
    gt_pdm_synth_cfg c;
    gt_pdm_synth_defaults(&c);
    c.seed = 11;
    c.n_farms = 1;
    c.turbines_per_farm = 2;
    c.days = 0.05;
    c.rate_hz = 1;
    gt_pdm_source *src = gt_synth_pdm_source(&c);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 4096;
    gt_pdm_write(path, src, &wo, comm, NULL);
    gt_synth_pdm_source_free(src);
}

/* A tiny s2p_cnn on windows of 63 samples (6 s period: 6.3 minutes). */
static inline void tt_cnn_config(gt_train_config *c, const char *file) {
    gt_train_config_defaults(c, GT_MODEL_S2P_CNN);
    c->data_file = file;
    c->data.window = 63;
    c->data.stride = 16;
    gt_nilm_data_cfg_set(&c->data)->spike_min_w = 0; /* the Hampel rule alone: the tests were tuned on its windows */
    c->model.n_layers = 3;
    int ch[3] = {8, 8, 8}, k[3] = {7, 5, 5};
    for (int l = 0; l < 3; l++) c->model.conv_channels[l] = ch[l], c->model.conv_kernels[l] = k[l];
    c->model.hidden = 32;
    c->lr = 2e-3;
    c->lr_min = 1e-4;
    c->warmup = 5;
    c->batch = 32;
    c->micro_batch = 8;
    c->epochs = 0;
    c->max_steps = 20;
    c->log_every = 5;
    c->quiet = 1;
    c->write_outputs = 0;
    c->checkpoint_minutes = 0;
}

static inline double tt_mean(const double *v, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    return n ? s / (double)n : NAN;
}

#endif
