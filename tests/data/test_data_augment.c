/* NILM activation augmentation (data.augment) at P ranks, on synthetic
 * households (synth/synth_nilm.c: real appliance cycles, gaps of NaN left in).
 *
 * Every training window is filled, then augmented with probability 1 at two
 * epochs, and the change is checked against the rule of gt_dataset_augment:
 *   - only the aggregate channel moves (time features untouched), by a
 *     non-negative amount, over at most W rows;
 *   - at most one target moves; when it does, by the aggregate's change at
 *     the midpoint, for an appliance that was off throughout the window, and
 *     the aggregate's change is exactly that appliance's power over a run of
 *     the same household's training rows (the activation, found by search);
 *   - half the draws cover the midpoint, some of the others too: 30-80 % of
 *     the changed windows move a target;
 *   - the same call twice gives the same bytes, another epoch other draws;
 *   - the sum of a hash of every window's change over all ranks equals the
 *     one rank 0 computes alone from the whole file (rank independence);
 *   - augment 0 changes nothing; the other splits are never augmented by the
 *     loader (checked in test_train_dp through the exact losses). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nilm/nilm.h"
#include "data/dataset.h"
#include "io/mpi_test.h"
#include "io/read.h"
#include "synth/synth.h"
#include "synth/synth_source.h"
#include "io/write.h"
#include "test.h"

#define W 121

typedef struct tally {
    int64_t windows, changed, target_moved, activation_found;
    uint64_t hash; /* sum over windows of a hash of (household, start, change) */
} tally;

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/* the window's change against the rule; the file's rows of the household in sh */
static void check_window(const gt_dataset *ds, const gt_nilm_shard *sh, const gt_window_ref *r, const float *x0,
                         const float *x1, const float *y0, const float *y1, const float *m, int F, tally *t) {
    const int A = sh->n_appliances, C = 1 + F;
    const gt_norm_stats *ns = gt_dataset_norm(ds);
    int h = -1;
    for (int k = 0; k < sh->n_households; k++)
        if (sh->index[k] == r->file_index) h = k;
    TEST_REQUIRE(h >= 0);
    const int64_t base = sh->row_offset[h];
    double d[W];
    int64_t lo = -1, hi = -1, bad_other = 0, negative = 0;
    for (int s = 0; s < W; s++) {
        d[s] = ((double)x1[s] - (double)x0[s]) * ns->std[0]; /* (C, W): channel 0 first */
        if (fabs(d[s]) > 1e-3 * (1 + fabs((double)x0[s] * ns->std[0] + ns->mean[0]))) {
            if (lo < 0) lo = s;
            hi = s;
            negative += d[s] < -1e-2;
        }
        for (int c = 1; c < C; c++) bad_other += x1[c * W + s] != x0[c * W + s];
    }
    TEST_EQ_INT(bad_other, 0);
    TEST_EQ_INT(negative, 0);
    uint64_t hv = mix(mix(0, (uint64_t)r->file_index), (uint64_t)r->start);
    for (int s = lo < 0 ? W : lo; s <= hi; s++) hv = mix(hv, (uint64_t)llround(d[s] * 100));
    t->hash += hv;
    t->windows++;
    if (lo < 0) return;
    t->changed++;
    int moved = -1, n_moved = 0;
    for (int a = 0; a < A; a++)
        if (y1[a] != y0[a]) moved = a, n_moved++;
    TEST_CHECK(n_moved <= 1);
    if (moved < 0) return;
    const int a = moved;
    for (int s = 0; s < W; s++)
        if (!isfinite(x0[s])) return; /* a window over a gap (kept: screening off) */
    t->target_moved++;
    TEST_CHECK(m[a] != 0.0f);
    TEST_CLOSE(((double)y1[a] - (double)y0[a]) * ns->std[1 + a], d[W / 2], 1e-3, 0.05);
    for (int s = 0; s < W; s++) { /* off throughout the window */
        float v = sh->appliances[(base + r->start + s) * A + a];
        TEST_CHECK(!(isfinite(v) && v > sh->meta[a].on_power_w));
    }
    /* the activation: a run of the household's training rows of appliance a equal to the change */
    const int64_t n_rows = sh->row_offset[h + 1] - base, n_train = llround(0.7 * (double)n_rows); /* as data/config.c */
    int found = 0;
    for (int64_t q = 0; q + (hi - lo) < n_train && !found; q++) {
        int ok = 1;
        for (int64_t s = lo; s <= hi && ok; s++)
            ok = fabs((double)sh->appliances[(base + q + s - lo) * A + a] - d[s]) <= 0.05 + 1e-5 * fabs(d[s]);
        found = ok;
    }
    t->activation_found += found;
}

/* every local training window: fill, augment at `epoch`, check; returns the tally (local) */
static tally run(const gt_dataset *ds, const gt_nilm_shard *sh, uint64_t epoch, int F, int check) {
    tally t;
    memset(&t, 0, sizeof t);
    const int A = sh->n_appliances;
    const int64_t nx = gt_dataset_n_x(ds), n = gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN);
    float *x0 = malloc(sizeof(float) * (size_t)nx), *x1 = malloc(sizeof(float) * (size_t)nx), *x2 = malloc(sizeof(float) * (size_t)nx);
    float y0[GT_DATA_MAX_TARGETS], y1[GT_DATA_MAX_TARGETS], y2[GT_DATA_MAX_TARGETS], m[GT_DATA_MAX_TARGETS];
    for (int64_t i = 0; i < n; i++) {
        gt_window_ref r;
        gt_dataset_fill(ds, GT_SPLIT_TRAIN, &i, 1, x0, y0, m, &r);
        memcpy(x1, x0, sizeof(float) * (size_t)nx), memcpy(y1, y0, sizeof(float) * (size_t)A);
        memcpy(x2, x0, sizeof(float) * (size_t)nx), memcpy(y2, y0, sizeof(float) * (size_t)A);
        gt_dataset_augment(ds, epoch, &r, 1, x1, y1, m);
        gt_dataset_augment(ds, epoch, &r, 1, x2, y2, m);
        TEST_CHECK(!memcmp(x1, x2, sizeof(float) * (size_t)nx) && !memcmp(y1, y2, sizeof(float) * (size_t)A));
        if (check) check_window(ds, sh, &r, x0, x1, y0, y1, m, F, &t);
    }
    free(x0), free(x1), free(x2);
    return t;
}

static gt_dataset *make(const char *path, double p, int F, MPI_Comm comm, gt_nilm_shard **sh_out) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = W;
    cfg.stride = 5;
    gt_nilm_data_cfg_set(&cfg)->augment = p;
    gt_nilm_data_cfg_set(&cfg)->time_features = F;
    cfg.screen = GT_SCREEN_OFF; /* windows over gaps too: NaN rows never enter an activation */
    *sh_out = gt_nilm_shard_read(path, comm);
    return gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm world = MPI_COMM_WORLD;
    char path[256];
    snprintf(path, sizeof path, "test_data_augment_np%d.h5", size);
    gt_nilm_synth_cfg sc;
    gt_nilm_synth_defaults(&sc);
    sc.seed = 5;
    sc.n_households = 4;
    sc.days = 2;
    sc.lowres_period_s = 0;
    sc.spike_rate = 0; /* gaps stay: NaN appliance rows */
    gt_nilm_source *src = gt_synth_nilm_source(&sc);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 4096;
    gt_nilm_write(path, src, &wo, world, NULL);
    gt_synth_nilm_source_free(src);

    const int F = 2;
    gt_nilm_shard *sh;
    gt_dataset *ds = make(path, 1.0, F, world, &sh);
    int64_t n_act = gt_dataset_n_activations(ds), g_act = 0;
    MPI_Allreduce(&n_act, &g_act, 1, MPI_INT64_T, MPI_SUM, world);
    tally t = run(ds, sh, 3, F, 1), g;
    int64_t lv[4] = {t.windows, t.changed, t.target_moved, t.activation_found}, gv[4];
    MPI_Allreduce(lv, gv, 4, MPI_INT64_T, MPI_SUM, world);
    uint64_t hash = 0;
    MPI_Allreduce(&t.hash, &hash, 1, MPI_UINT64_T, MPI_SUM, world);
    g.windows = gv[0], g.changed = gv[1], g.target_moved = gv[2], g.activation_found = gv[3];
    if (rank == 0)
        fprintf(stderr, "augment: %lld activations; %lld train windows, %lld changed, %lld with a target moved, "
                        "%lld activations found in the household's rows\n",
                (long long)g_act, (long long)g.windows, (long long)g.changed, (long long)g.target_moved,
                (long long)g.activation_found);
    TEST_CHECK(g_act >= 20); /* activations up to W rows (12 minutes) */
    TEST_CHECK(g.changed > g.windows * 8 / 10);  /* an appliance off in the window is almost always there */
    TEST_CHECK(g.target_moved > g.changed * 3 / 10 && g.target_moved < g.changed * 8 / 10);
    TEST_EQ_INT(g.activation_found, g.target_moved);

    /* another epoch: other draws for most windows */
    tally t4 = run(ds, sh, 4, F, 1);
    uint64_t hash4 = 0;
    MPI_Allreduce(&t4.hash, &hash4, 1, MPI_UINT64_T, MPI_SUM, world);
    TEST_CHECK(hash4 != hash);

    /* rank independence: rank 0 alone over the whole file */
    MPI_Comm self;
    MPI_Comm_split(world, rank == 0 ? 0 : MPI_UNDEFINED, 0, &self);
    if (rank == 0) {
        gt_nilm_shard *sh1;
        gt_dataset *d1 = make(path, 1.0, F, self, &sh1);
        tally t1 = run(d1, sh1, 3, F, 1);
        TEST_EQ_INT(t1.windows, g.windows);
        TEST_CHECK(t1.hash == hash);
        gt_dataset_free(d1);
        gt_nilm_shard_free(sh1);

        /* augment 0: nothing moves */
        gt_nilm_shard *sh0;
        gt_dataset *d0 = make(path, 0.0, F, self, &sh0);
        TEST_EQ_INT(gt_dataset_n_activations(d0), 0);
        tally t0 = run(d0, sh0, 3, F, 1);
        TEST_EQ_INT(t0.changed, 0);
        gt_dataset_free(d0);
        gt_nilm_shard_free(sh0);
        MPI_Comm_free(&self);
    }
    gt_dataset_free(ds);
    gt_nilm_shard_free(sh);
    MPI_Barrier(world);
    if (rank == 0) remove(path);
    int ok = tg_all(gt_test_failures == 0, world);
    MPI_Finalize();
    return ok ? 0 : 1;
}
