/* pdm/pdm.h: what the PdM task (anomaly detection on wind-farm files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h). */
#ifndef GT_PDM_PDM_H
#define GT_PDM_PDM_H

#include "data/dataset.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_pdm;            /* pdm.c: the task */
extern const struct gt_data_task_i gt_data_task_pdm; /* dataset_pdm.c: its data side */

/* The data settings' defaults (gt_data_config_defaults) with PdM's window and
 * stride resolved (task number GT_TASK_UNSET: for a dataset built directly
 * with gt_dataset_pdm, outside the registry). */
void gt_pdm_data_defaults(gt_data_config *cfg);

/* Collective. Takes ownership of the shard; as gt_dataset_nilm (nilm/nilm.h)
 * for a wind-farm file, with the spike channels and NBM roles (dataset_pdm.c). */
gt_dataset *gt_dataset_pdm(gt_pdm_shard *shard, const gt_data_config *cfg, MPI_Comm comm);
/* pdm with data.pdm_target = nbm: the channels' roles ([C], gt_nbm_role) and
 * their counts; NULL (and 0, 0) otherwise. */
const uint8_t *gt_dataset_nbm_roles(const gt_dataset *ds, int *n_inputs, int *n_targets);

/* ---- pdm_rows.c ---- */
/* Collective. The data filters checked against the file before any window
 * is built: an entry of data.items (nilm and pdm), data.farms,
 * data.machine_types, data.conditions or data.train_conditions (pdm) -- a
 * single code or a lo-hi range -- that matches no household/turbine id, farm,
 * machine type or condition code of `file` ends the job with exit 2
 * (GT_EXIT_USAGE) and one line naming the file, the option, the entries that
 * match nothing and the values the file has (at most
 * GT_DATA_FILTER_LIST_MAX, with their /legend names): otherwise the only
 * symptom is an empty split. Condition codes present: those of the file's
 * /segments and the codes 0..n-1 that /legend/condition names. Each rank
 * passes its shard; rank 0 decides on the gathered values and every rank
 * follows. Changes nothing when every entry matches. The one check of train,
 * eval and predict. */
void gt_pdm_check_filters(const char *file, const gt_pdm_shard *sh, const gt_data_config *cfg, MPI_Comm comm);

/* The model input of n normalised samples with every non-finite one set
 * to 0, the channel's training mean (data.pdm_row_missing); returns how many
 * were set. */
int64_t gt_pdm_impute(float *x, int64_t n);

/* ---- pdm_channels.c ---- */
/* What a sensor channel measures, from its name and unit: the spike test
 * suits condition signals only (10-minute SCADA drivers, angles and
 * min/max/std aggregates move by nature). */
typedef enum gt_channel_kind {
    GT_CHANNEL_CONDITION = 0,   /* temperatures, pressures, vibration, levels: screened for spikes */
    GT_CHANNEL_OPERATIONAL = 1, /* wind speed, power, rotor/generator speed, currents, status, counters */
    GT_CHANNEL_ANGLE = 2,       /* pitch, yaw, wind direction, nacelle position (unit deg) */
    GT_CHANNEL_AGGREGATE = 3,   /* the _min, _max, _std statistics of an interval */
} gt_channel_kind;
gt_channel_kind gt_pdm_channel_kind(const char *name, const char *unit);
/* The same reading the words of the channel's description too (desc may be
 * NULL or "": the name alone), e.g. CARE's anonymised "sensor_0_avg" with
 * the description "Ambient temperature". */
gt_channel_kind gt_pdm_channel_kind_desc(const char *name, const char *desc, const char *unit);
const char *gt_pdm_channel_kind_name(gt_channel_kind k);
/* 1 when cfg->spike_channels selects the channel (name, description, unit) for the spike test. */
int gt_pdm_spike_channel(const gt_data_config *cfg, const char *name, const char *desc, const char *unit);
/* data.pdm_target: the PdM objective. */
typedef enum gt_pdm_target {
    GT_PDM_TARGET_NEXT = 0, /* predict step t+1 of every channel from steps 0..t (LSTM prediction detector) */
    GT_PDM_TARGET_NBM = 1   /* normal-behaviour model: the condition channels at step t from the operating
                               channels at steps 0..t */
} gt_pdm_target;
/* "next" | "nbm" -> gt_pdm_target, -1 if unknown; and back. */
int gt_pdm_target_parse(const char *text);
const char *gt_pdm_target_name(int t);
/* A channel's role in a normal-behaviour model. */
typedef enum gt_nbm_role {
    GT_NBM_UNUSED = 0, /* neither input nor target (zero in the input) */
    GT_NBM_INPUT = 1,  /* an operating condition the model sees */
    GT_NBM_TARGET = 2  /* a condition signal the model predicts; zero in the input */
} gt_nbm_role;
/* The role of each of the C channels (ch[C]) into role[C] under
 * cfg->nbm_inputs / nbm_targets. "auto" (both defaults): the condition
 * signals of gt_pdm_channel_kind (temperatures, pressures, vibration, and
 * the min/max/std aggregates of such a signal) are targets, except ambient /
 * outside temperatures (an operating condition: an input); cumulative
 * counters (energy, operating hours) are unused (they only grow: a model
 * would read the calendar from them); every other channel (wind speed,
 * power, rotor speed, status, currents, angles, their aggregates) is an
 * input. Patterns: target = matches nbm_targets; input = not a target and
 * matches nbm_inputs. Counts into *n_inputs, *n_targets. Not collective. */
void gt_pdm_nbm_roles(const gt_data_config *cfg, const gt_io_channel *ch, int C, uint8_t *role, int *n_inputs,
                       int *n_targets);
/* The model input of an nbm window from the normalised window x (n_steps, C):
 * every channel that is not an input set to 0 (its normalised mean), in
 * place. The one rule used by training, validation, eval and predict. */
void gt_pdm_nbm_input(float *x, int64_t n_steps, int C, const uint8_t *role);

#endif
