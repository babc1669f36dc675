/* nilm/nilm.h: what the NILM task (disaggregation on household files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h). */
#ifndef GT_NILM_NILM_H
#define GT_NILM_NILM_H

#include "data/dataset.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_nilm;            /* nilm.c: the task */
extern const struct gt_data_task_i gt_data_task_nilm; /* dataset_nilm.c: its data side */

/* The data settings' defaults (gt_data_config_defaults) with NILM's window
 * and stride resolved (task number GT_TASK_UNSET: for a dataset built
 * directly with gt_dataset_nilm, outside the registry). */
void gt_nilm_data_defaults(gt_data_config *cfg);

/* Collective. Takes ownership of the shard. Splits, screens and indexes the
 * windows, exchanges per-item window counts (global numbering), computes the
 * train-split moments, reduces them over comm and freezes the statistics.
 * Logs (rank 0) windows per split and the screening summary (dataset_nilm.c). */
gt_dataset *gt_dataset_nilm(gt_nilm_shard *shard, const gt_data_config *cfg, MPI_Comm comm);
/* nilm: appliance a's on-power threshold in the normalised target units,
 * (on_power_w - mean) / std (the gated head's on/off target is y > this). */
float gt_dataset_on_threshold(const gt_dataset *ds, int a);
/* Activations found for the augmentation (all local items and appliances). */
int64_t gt_dataset_n_activations(const gt_dataset *ds);

/* Collective. The data filters checked against the file before any window
 * is built: an entry of data.items -- a single code or a lo-hi range --
 * that matches no household id of `file` ends the job with exit 2
 * (GT_EXIT_USAGE) and one line naming the file, the option, the entries that
 * match nothing and the values the file has (at most
 * GT_DATA_FILTER_LIST_MAX, with their /legend names): otherwise the only
 * symptom is an empty split. Each rank
 * passes its shard; rank 0 decides on the gathered values and every rank
 * follows. Changes nothing when every entry matches. The one check of train,
 * eval and predict. */
void gt_nilm_check_filters(const char *file, const gt_nilm_shard *sh, const gt_data_config *cfg, MPI_Comm comm);

/* "none" | "day" | "day+week" -> 0 | 2 | 4 channels, -1 if unknown. */
int gt_nilm_time_features_parse(const char *text);
/* The F time-feature channels (sin, cos of the local time of day [, of the
 * week]) of n_rows time stamps (ms since the epoch) into out[n_rows, F]. Sets
 * and restores TZ for a zone other than UTC: not thread-safe. */
void gt_nilm_time_features(const int64_t *ts, int64_t n_rows, int F, const char *zone, float *out);

#endif
