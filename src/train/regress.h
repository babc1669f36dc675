/* train/regress.h: throughput regression between runs (docs/training.md,
 * Throughput regressions).
 *
 * A run's manifest.json carries two hashes: config_hash (the resolved
 * configuration without run.dir and data.file, plus the data file's xxh64:
 * the same work) and hardware_hash (CPU model, ranks, nodes, OpenBLAS threads,
 * engine, GPU model and count: the same machines). At the end of a run that
 * finished, its steady samples/s (timing.json) is compared with the earlier
 * finished runs of the same two hashes in the same parent directory (runs/, a
 * sweep's cells/): below the median of the (up to GT_REGRESS_MAX_BASE newest)
 * earlier ones by more than the threshold, the run warns and names the phase
 * of the step that slowed most (seconds per step of data_wait, forward,
 * backward, allreduce, optimizer against the same median). Runs that trained
 * less than min_train_s seconds (default GT_REGRESS_MIN_TRAIN_S,
 * train.regression_min_s) are not compared. Not collective: plain file reads,
 * so the detector is a function of the recorded files alone: tests feed it
 * recorded timing.json files, never a live ratio. */
#ifndef GT_TRAIN_REGRESS_H
#define GT_TRAIN_REGRESS_H

#include <stddef.h>
#include <stdint.h>

#define GT_REGRESS_MAX_BASE 10
#define GT_REGRESS_DEFAULT_THRESHOLD 0.2 /* 20 % fewer samples/s */
#define GT_REGRESS_MIN_TRAIN_S 2.0       /* shorter runs (timing.json train_time_s) are too noisy to compare */

/* 16 hex digits each. cpu_model, device_name may be "". */
void gt_regress_config_hash(const char *config_text, const char *data_xxh64, char out[17]);
void gt_regress_hardware_hash(const char *cpu_model, int ranks, int nodes, const char *openblas_threads,
                              const char *engine, const char *device_name, int gpus, char out[17]);

typedef struct gt_regress_result {
    int n_base;                  /* earlier runs of the same configuration and hardware found */
    double samples_per_s;        /* this run's steady rate */
    double base_samples_per_s;   /* median of the earlier runs' */
    double ratio;                /* samples_per_s / base_samples_per_s */
    int slower;                  /* ratio < 1 - threshold */
    char phase[32];              /* the phase whose seconds per step grew most ("" when none grew) */
    double phase_s, base_phase_s;/* its seconds per step: this run, the median of the earlier runs */
    char newest_base[256];       /* the newest earlier run's directory name */
} gt_regress_result;

/* Compares run_dir (its manifest.json with the hashes, its timing.json) with
 * its siblings. Returns 0 with *r filled (n_base may be 0: nothing to compare),
 * or -1 when run_dir's own files lack what is needed. */
int gt_regress_compare(const char *run_dir, double threshold, double min_train_s, gt_regress_result *r);
/* One line: "throughput regression: ..." or "throughput: ... (no regression)". */
void gt_regress_describe(const gt_regress_result *r, char *buf, size_t n);

#endif
