/* tests/train/ckpt_test_util.h: helpers for the checkpoint tests (static):
 * MPI set-up, a run directory shared by the ranks, a small model with
 * step-dependent exactly representable contents, and file helpers. */
#ifndef GT_TESTS_TRAIN_CKPT_TEST_UTIL_H
#define GT_TESTS_TRAIN_CKPT_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "test.h"
#include "train/checkpoint.h"

static inline void ct_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static inline void ct_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    gt_set_rank(*rank, *size);
    if (*size > 1) gt_set_abort_handler(ct_abort);
}

/* 1 on every rank when cond held on every rank. */
static inline int ct_all(int cond, MPI_Comm comm) {
    int all = 0;
    MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* A fresh directory made by rank 0 under /tmp, same path on every rank
 * (caller frees). */
static inline char *ct_tmpdir(const char *tag, MPI_Comm comm) {
    char buf[512] = "";
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        snprintf(buf, sizeof buf, "/tmp/gt-%s-XXXXXX", tag);
        TEST_REQUIRE(mkdtemp(buf) != NULL);
    }
    MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, 0, comm);
    return strdup(buf);
}

static int ct_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}
static inline void ct_rm_rf(const char *path) { nftw(path, ct_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static inline int ct_exists(const char *fmt_dir, long long step, const char *suffix) {
    char p[1024];
    snprintf(p, sizeof p, "%s/checkpoints/ckpt-%09lld%s", fmt_dir, step, suffix);
    return access(p, F_OK) == 0;
}
/* Whether RUN_DIR/checkpoints holds a name starting with ckpt-<step><prefix>
 * (the unique temporaries ckpt-<step>.h5.tmp.XXXXXX). */
static inline int ct_exists_prefix(const char *run_dir, long long step, const char *prefix) {
    char p[1024], want[128];
    snprintf(p, sizeof p, "%s/checkpoints", run_dir);
    snprintf(want, sizeof want, "ckpt-%09lld%s", step, prefix);
    DIR *d = opendir(p);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, want, strlen(want))) found = 1;
    closedir(d);
    return found;
}
static inline char *ct_path(const char *run_dir, long long step, const char *suffix) {
    char *p = NULL;
    TEST_REQUIRE(asprintf(&p, "%s/checkpoints/ckpt-%09lld%s", run_dir, step, suffix) > 0);
    return p;
}
/* Number of entries in RUN_DIR/checkpoints (excluding . and ..). */
static inline int ct_count_files(const char *run_dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s/checkpoints", run_dir);
    int n = 0;
    DIR *d = opendir(p);
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* A small s2p_cnn: conv 3x(k3), 4x(k3), fc1 `hidden`, 2 outputs. */
static inline gt_model *ct_model(int hidden) {
    gt_model_config cfg;
    gt_model_config_default(&cfg, GT_MODEL_S2P_CNN);
    cfg.window = 16;
    cfg.n_in = 1;
    cfg.n_out = 2;
    cfg.max_batch = 2;
    cfg.n_layers = 2;
    cfg.conv_channels[0] = 3;
    cfg.conv_kernels[0] = 3;
    cfg.conv_channels[1] = 4;
    cfg.conv_kernels[1] = 3;
    cfg.hidden = hidden;
    return gt_model_create(&cfg);
}

/* Contents that depend on `step`, exactly representable (the h5py test
 * recomputes them): params[i] = ((i * 7 + step) % 1001 - 500) / 64,
 * adam_m[i] = ((i + step) % 513) / 256 - 1, adam_v[i] = ((i * 3 + step) % 97) / 8. */
static inline void ct_fill(gt_model *m, long long step) {
    for (size_t i = 0; i < m->n_params; i++) {
        long long k = (long long)i;
        m->params[i] = (float)(((k * 7 + step) % 1001) - 500) / 64.0f;
        m->adam_m[i] = (float)((k + step) % 513) / 256.0f - 1.0f;
        m->adam_v[i] = (float)((k * 3 + step) % 97) / 8.0f;
    }
}
static inline void ct_state(gt_train_state *ts, long long step) {
    memset(ts, 0, sizeof *ts);
    ts->step = step;
    ts->epoch = 3 + (uint64_t)step / 10;
    ts->batch_k = step % 10;
    ts->samples = step * 256;
    ts->best_val = step == 0 ? INFINITY : 0.125 + 1.0 / (double)(step + 3); /* not exact in decimal */
    ts->best_step = step > 0 ? step - 1 : -1;
    ts->bad_evals = 2;
    ts->bad_steps = 1;
    ts->loss_scale = 32768.0f / (float)(1 + step % 4);
    ts->scale_good_steps = 77 + step;
    ts->skipped_steps = 5;
    ts->elapsed_s = 3600.25 + step * 1.0 / 3.0;
    ts->seed = 0xfeedbeefcafe1234ull;
    ts->lr_factor = 0.25;
    ts->plateau_evals = 1;
}
static inline void ct_norm(gt_norm_stats *ns, long long step) {
    memset(ns, 0, sizeof *ns);
    ns->n = 4;
    for (int i = 0; i < ns->n; i++) {
        ns->mean[i] = 100.0 / 3.0 * (i + 1) + step;
        ns->std[i] = sqrt(2.0 + i) + step;
    }
}

/* Bit-exact comparisons against the contents of `step`; returns failures. */
static inline int ct_check(const gt_model *m, const gt_train_state *ts, const gt_norm_stats *ns,
                           long long step) {
    gt_model *ref = ct_model(m->cfg.hidden);
    ct_fill(ref, step);
    gt_train_state rts;
    gt_norm_stats rns;
    ct_state(&rts, step);
    ct_norm(&rns, step);
    int bad = 0;
    size_t bytes = m->n_params * sizeof(float);
    if (memcmp(m->params, ref->params, bytes)) { fprintf(stderr, "params differ (step %lld)\n", step); bad++; }
    if (memcmp(m->adam_m, ref->adam_m, bytes)) { fprintf(stderr, "adam_m differs (step %lld)\n", step); bad++; }
    if (memcmp(m->adam_v, ref->adam_v, bytes)) { fprintf(stderr, "adam_v differs (step %lld)\n", step); bad++; }
#define CT_FIELD(f)                                                                    \
    if (memcmp(&ts->f, &rts.f, sizeof rts.f)) {                                        \
        fprintf(stderr, "train state field %s differs (step %lld)\n", #f, step);       \
        bad++;                                                                         \
    }
    CT_FIELD(step) CT_FIELD(epoch) CT_FIELD(batch_k) CT_FIELD(samples) CT_FIELD(best_val)
    CT_FIELD(best_step) CT_FIELD(bad_evals) CT_FIELD(bad_steps) CT_FIELD(loss_scale)
    CT_FIELD(scale_good_steps) CT_FIELD(skipped_steps) CT_FIELD(elapsed_s) CT_FIELD(seed)
    CT_FIELD(lr_factor) CT_FIELD(plateau_evals)
#undef CT_FIELD
    if (ns->n != rns.n || memcmp(ns->mean, rns.mean, sizeof(double) * (size_t)rns.n) ||
        memcmp(ns->std, rns.std, sizeof(double) * (size_t)rns.n)) {
        fprintf(stderr, "norm stats differ (step %lld)\n", step);
        bad++;
    }
    gt_model_free(ref);
    gt_test_failures += bad;
    return bad;
}

/* Save the step's contents; returns gt_ckpt_save's result. */
static inline int ct_save(const char *run_dir, gt_model *m, long long step, int keep, MPI_Comm comm) {
    gt_train_state ts;
    gt_norm_stats ns;
    ct_fill(m, step);
    ct_state(&ts, step);
    ct_norm(&ns, step);
    char cfg[128];
    snprintf(cfg, sizeof cfg, "[model]\nkind = s2p_cnn\n# saved at step %lld\n", step);
    return gt_ckpt_save(run_dir, m, &ts, &ns, cfg, keep, comm, NULL, 0);
}

/* Load into a scrambled model; returns the step. */
static inline int64_t ct_load(const char *run_dir, gt_model *m, gt_train_state *ts, gt_norm_stats *ns,
                              MPI_Comm comm) {
    ct_fill(m, 999983);
    memset(ts, 0xab, sizeof *ts);
    memset(ns, 0xcd, sizeof *ns);
    return gt_ckpt_load_latest(run_dir, m, ts, ns, comm);
}

/* Rank 0: capture stderr into a file while running the load. */
typedef struct ct_capture {
    int saved_fd;
    char path[256];
} ct_capture;
static inline void ct_capture_begin(ct_capture *c) {
    fflush(stderr);
    snprintf(c->path, sizeof c->path, "/tmp/gt-ckpt-stderr-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(c->path);
    TEST_REQUIRE(fd >= 0);
    c->saved_fd = dup(2);
    dup2(fd, 2);
    close(fd);
}
/* Ends the capture, echoes the text to stderr and returns it (caller frees). */
static inline char *ct_capture_end(ct_capture *c) {
    fflush(stderr);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    FILE *f = fopen(c->path, "r");
    TEST_REQUIRE(f);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    unlink(c->path);
    fputs(text, stderr);
    return text;
}

#endif
