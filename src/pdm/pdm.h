/* pdm/pdm.h: what the PdM task (anomaly detection on wind-farm files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h).
 *
 *   gt_eval_pdm      per-step anomaly scores, calibrated threshold, alarm
 *                    runs, point/event metrics per turbine, machine type and
 *                    operating condition, CARE
 *   gt_predict_pdm   per-row scores and alarms of a whole file -> HDF5
 * Both collective over comm, with the determinism of eval/eval.h. */
#ifndef GT_PDM_PDM_H
#define GT_PDM_PDM_H

#include <mpi.h>
#include <stdint.h>

#include "data/dataset.h"
#include "eval/eval.h"
#include "io/format.h"
#include "pdm/pdm_metrics.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_pdm;            /* pdm.c: the task */
extern const struct gt_data_task_i gt_data_task_pdm; /* dataset_pdm.c: its data side */
extern const struct gt_eval_task_i gt_eval_task_pdm; /* eval_pdm_task.c: its evaluation */

/* data.care_event resolved against a file's /care_events (gt_pdm_care_select). */
typedef struct gt_pdm_care_sel {
    int64_t event_id;           /* -1: no selection */
    int32_t turbine;            /* file index of the event dataset's turbine */
    int anomaly;                /* its label: 1 anomaly, 0 normal */
    int64_t train_lo, train_hi; /* its training part: rows [lo, hi) within the turbine */
    int64_t pred_lo, pred_hi;   /* its prediction part */
} gt_pdm_care_sel;

/* PdM's data settings: its block of gt_data_config (data/dataset.h
 * gt_data_task_config), the data.* keys only PdM reads. Defaults: the data
 * table's config_defaults (dataset_pdm.c). */
typedef struct gt_pdm_data_config {
    /* Subsets (defaults: everything), beside data.items: turbines outside them keep their place in the
     * file's numbering but contribute no window to any split. */
    gt_data_filter farms;         /* data.farms: turbines of these farm indices */
    gt_data_filter machine_types; /* data.machine_types: turbines of these machine type codes */
    gt_data_filter conditions;    /* data.conditions: only windows whose rows all lie in condition segments
                                     with these codes (/segments/condition); rows outside every segment
                                     never pass; the train statistics use the passing rows only */
    gt_data_filter train_conditions; /* data.train_conditions: only the TRAIN and VAL windows, the
                                     normalisation statistics and eval's calibration rows are restricted to
                                     rows in condition segments with these codes (CARE: the train_test flag,
                                     train = 0, train_and_prediction = 2); eval still scores every row */
    int train_normal_only;    /* data.train_normal_only: train/val windows touching a labelled event are
                                 skipped (default 1) */
    int target;               /* data.pdm_target: what the model predicts (gt_pdm_target): next (default) the
                                 next step of every channel from the window; nbm (normal-behaviour model)
                                 the condition channels at every step from the operating channels */
    double row_missing;       /* data.pdm_row_missing: a row with more than this share of its channels
                                 missing (non-finite) is a gap row, a missing record: windows touching it
                                 are screened (gap). Fewer missing samples (a dead sensor, isolated empty
                                 cells, one channel's dropout) keep the window: the model input gets 0
                                 there (the channel's training mean, gt_pdm_impute), the loss and the
                                 anomaly score leave the sample out. Default 0.5; 0: any missing sample
                                 makes a gap row */
    int short_gap;            /* data.pdm_short_gap: a run of at most this many missing records (gap rows)
                                 is imputed like missing samples instead of screening the windows touching
                                 it (default 6; 0: every gap row screens; runs stored without the key) */
    int norm_turbine;         /* data.norm = turbine: every turbine's channels normalised with its own
                                 statistics (gt_pdm_item_norm); 0 (default, global): with those of all */
    double signal_limit;      /* data.signal_limit: a signal value beyond +-this is not a measurement: the
                                 reader makes it missing (gt_read_opts.value_limit; 0 off) */
    char spike_channels[256]; /* data.spike_channels: the channels the spike test screens: "auto"
                                 (condition signals: temperatures, pressures, vibration, ...; not the
                                 operational drivers such as wind speed, power, rotor speed and status,
                                 not angles, not min/max/std aggregates: gt_pdm_channel_kind), "all",
                                 "none", or comma-separated name patterns (fnmatch, e.g. "*temp*,vib_*") */
    char nbm_inputs[256];     /* data.nbm_inputs (target nbm): the model's input channels: "auto"
                                 (gt_pdm_nbm_roles) or comma-separated name patterns (fnmatch) */
    char nbm_targets[256];    /* data.nbm_targets (target nbm): the predicted (target) channels: "auto" or
                                 name patterns; a target channel never enters the input */
    int64_t care_event;       /* data.care_event: -1 (default) none; else the id of one CARE to Compare event
                                 dataset of the file's /care_events: the authors' protocol, one model per
                                 event dataset (its rows: gt_pdm_item_rows) */
    gt_pdm_care_sel care;     /* care_event resolved (by the task's open, gt_pdm_care_select; not a setting):
                                 event_id -1 until then */
} gt_pdm_data_config;
/* PdM's block of dc (ends the job, GT_EXIT_INTERNAL, for a configuration
 * made before PdM's data table was added: data/dataset.h gt_data_task_add). */
const gt_pdm_data_config *gt_pdm_data_cfg(const gt_data_config *dc);
gt_pdm_data_config *gt_pdm_data_cfg_set(gt_data_config *dc);

/* The data settings' defaults (gt_data_config_defaults, PdM's block added
 * first) with PdM's window and stride resolved (task number GT_TASK_UNSET:
 * for a dataset built directly with gt_dataset_pdm, outside the registry). */
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
/* Collective (reads the file's /care_events on rank 0). Resolves PdM's
 * data.care_event (>= 0) against the PdM file `path` into its block's care;
 * without a selection sets care.event_id = -1. Ends the run with exit 2 and one
 * line naming the file and the id when the file has no /care_events, no
 * entry with that id, or no training part for it (a file imported before
 * /care_events/train_start_row: import it again). */
void gt_pdm_care_select(gt_data_config *cfg, const char *path, MPI_Comm comm);

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
/* 1 when data.spike_channels (cfg's PdM block) selects the channel (name, description, unit) for the spike test. */
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
 * data.nbm_inputs / nbm_targets (cfg's PdM block). "auto" (both defaults): the condition
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

/* ------------------------------------------------------ eval settings -- */

#define GT_PDM_MAX_GROUPS 16 /* machine types / conditions reported */

/* eval.level: what the threshold is eval.margin times (pdm_calib.c). */
typedef enum gt_pdm_level {
    GT_PDM_LEVEL_QUANTILE = 0, /* their eval.quantile quantile (default) */
    GT_PDM_LEVEL_ROBUST = 1,   /* median + GT_PDM_ROBUST_K x 1.4826 MAD of the validation scores */
} gt_pdm_level;
#define GT_PDM_ROBUST_K 3.0
/* eval.score: how the residuals d_c of a row make its anomaly score. */
typedef enum gt_pdm_score {
    GT_PDM_SCORE_AUTO = 0,    /* channel for a normal-behaviour model (data.pdm_target = nbm), else mean */
    GT_PDM_SCORE_MEAN = 1,    /* mean over channels of d_c^2 / v_c (v_c: calibration MSE), then an EWMA */
    GT_PDM_SCORE_CHANNEL = 2, /* an EWMA of each channel's residual m_c, then the max over channels of
                                 m_c^2 / w_c (w_c: calibration mean of m_c^2): a fault of one sensor is
                                 not diluted by the others, and noise averages out while an offset,
                                 drift or stuck sensor stays */
} gt_pdm_score;
int gt_pdm_score_parse(const char *s); /* -1 when unknown */

/* PdM's block of gt_eval_config (the eval.* keys of cli/eval_rules.h). */
typedef struct gt_pdm_eval_config {
    int level;            /* gt_pdm_level: the level of the validation scores the threshold stands on */
    double quantile;      /* eval.level = quantile: quantile of the validation scores (default 0.999) */
    double margin;        /* threshold = margin x quantile (default 1.5), then raised until ... */
    double val_false_alarms; /* ... the validation rows raise at most this many alarms per
                                turbine-day (default 0.5; 0 = quantile x margin only) */
    int calibrate_train;  /* 1: calibrate on the train + validation rows (normal operation of the
                             whole training period), 0: validation rows only (default 0) */
    int turbine_offset;   /* 1: each turbine's mean residual of each channel over its calibration rows
                             (its sensor offset) is subtracted before scoring; 0 (default): not */
    double ewma_s;        /* EWMA span in seconds: alpha = 2 / (span rows + 1); < 0 (default): auto,
                             10 s for rows of 1 s or shorter, else 36 rows (6 h of 10-minute SCADA) */
    int score;            /* gt_pdm_score: how a row's channel residuals make its score */
    double envelope;      /* normal-behaviour models: rows whose inputs leave the training rows' range
                             widened by this share of it on each side are not scored; < 0: off
                             (default 0.1) */
    double channel_quantile; /* score channel: a channel's term is m_c^2 / (this quantile of m_c^2 over the
                                calibration rows); 0: / its calibration mean (default 0.99) */
    int flat_line;        /* 1 (default): the flat-line term of a stuck channel enters the score (pdm_score.c) */
    int nbm_linear;       /* 1: the linear stage of a normal-behaviour model's residual (pdm_linear.c); 0 (default): off */
    double min_duration_s;/* alarm runs shorter than this are dropped (default 0: one row) */
    double merge_gap_s;   /* alarm runs closer than this are merged (default 60) */
    int64_t hop;          /* rows between scoring windows; 0 = window / 2 */
    int64_t max_val;      /* validation scores kept for the quantile (default 2000000, evenly thinned) */
} gt_pdm_eval_config;
/* PdM's settings in ec (registered tasks: gt_eval_task_config). */
const gt_pdm_eval_config *gt_pdm_eval_cfg(const gt_eval_config *ec);
gt_pdm_eval_config *gt_pdm_eval_cfg_set(gt_eval_config *ec);

/* The EWMA span in rows for a turbine of this rate (eval.ewma_s, auto resolved), >= 1. */
double gt_pdm_ewma_span_rows(const gt_eval_config *ec, double rate_hz);

/* ---------------------------------------------------------- evaluation -- */

typedef struct gt_pdm_turbine_eval {
    int64_t id;
    int32_t file_index, farm, machine_type, holdout;
    int32_t skipped;         /* outside the run's data.items / farms / machine_types: not evaluated */
    gt_pdm_acc acc;
} gt_pdm_turbine_eval;

/* One CARE event dataset under the authors' protocol (/care_events). */
typedef struct gt_pdm_care_event {
    int64_t event_id;
    int32_t file_index;      /* turbine */
    int32_t evaluated;       /* 0: its turbine is outside data.items / farms / machine_types */
    int64_t n_rows;          /* rows of its prediction part */
    int64_t rows_in_training;/* of them in the training or validation split of a training turbine */
    gt_care_event_eval r;
} gt_pdm_care_event;

/* eval.envelope: rows not scored because the operating inputs left the
 * training rows' range (normal-behaviour models). */
typedef struct gt_pdm_envelope {
    int64_t rows_out, rows_scored; /* over every row of the file that had a score */
    int channel;                   /* the input channel most often responsible, -1: none */
    char channel_name[GT_FORMAT_NAME_LEN];
} gt_pdm_envelope;

typedef struct gt_pdm_eval {
    double threshold;        /* on the reported score scale */
    gt_pdm_envelope envelope;
    double quantile_value;   /* the validation level before the margin: the quantile, or the robust level */
    int level;               /* the level used (gt_pdm_level; quantile where robust has none) */
    int64_t n_val_scores;
    int n_models;
    int pdm_target;          /* the models' data.pdm_target (gt_pdm_target), -1 when they differ */
    gt_pdm_metrics overall;
    gt_pdm_acc acc;
    int n_turbines;
    gt_pdm_turbine_eval *turbines; /* [n_turbines], file order; malloc'd (gt_pdm_eval_free) */
    int n_types, n_conds;
    char type_names[GT_PDM_MAX_GROUPS][GT_FORMAT_NAME_LEN];
    char cond_names[GT_PDM_MAX_GROUPS][GT_FORMAT_NAME_LEN];
    gt_pdm_acc by_type[GT_PDM_MAX_GROUPS], by_cond[GT_PDM_MAX_GROUPS];
    int n_ranks;
    int64_t n_rows;
    /* the authors' CARE protocol over the file's /care_events (has_care = 0
     * without the table: care_protocol.score NaN, reason set) */
    int has_care;
    int n_care_events;
    gt_pdm_care_event *care_events; /* [n_care_events], file order; malloc'd */
    gt_care_protocol care_protocol;
} gt_pdm_eval;
void gt_pdm_eval_free(gt_pdm_eval *e);

/* Collective. Scores every row with the models (multi-scale when n_models > 1),
 * calibrates the threshold on the validation rows of normal operation of the
 * training turbines, and evaluates alarms on the evaluation rows: the test
 * split of training turbines and all rows of held-out turbines.
 * scores_csv (may be NULL): the rank holding the evaluation turbine with the
 * most events writes its score trace "time_h,score,label" there. */
void gt_eval_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                 const char *scores_csv, MPI_Comm comm, gt_pdm_eval *out);

/* Collective. Writes out_path (HDF5): /timestamps int64 [N], /score float32 [N],
 * /alarm uint8 [N] (1 inside an alarm run), /labels uint8 [N],
 * /turbines/{id, row_offset}; root attributes kind = "pdm_scores",
 * threshold, quantile, margin, models. */
void gt_predict_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out_path, MPI_Comm comm);

#endif
