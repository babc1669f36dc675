/* synth/synth.h: deterministic synthetic NILM households and wind farms.
 *
 * Pure generators: no MPI, no HDF5, no globals. Every value is a function of
 * (cfg.seed, household or turbine index) through core/rng.h, so any rank can
 * generate any household/turbine and the bytes never depend on the number of
 * ranks. synth/synth_source.c wraps them as io/write.h sources, which
 * io/write.c lays out in an HDF5 file collectively.
 *
 * Units: power in W, time stamps in int64 milliseconds since the Unix epoch. */
#ifndef GT_SYNTH_SYNTH_H
#define GT_SYNTH_SYNTH_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- NILM -- */

#define GT_NILM_N_APPLIANCES 15
#define GT_NAME_LEN 32

/* Per-appliance metadata, also stored in the file (schema: /appliances). */
typedef struct gt_appliance_meta {
    char name[GT_NAME_LEN]; /* canonical name, e.g. "fridge", "kettle" */
    float on_power_w;       /* above this the appliance counts as on */
    float on_duration_s;    /* typical length of one on period */
    float max_power_w;      /* clip limit for predictions */
} gt_appliance_meta;

typedef struct gt_nilm_synth_cfg {
    uint64_t seed;
    int n_households;
    double days;           /* nominal length; each household gets 0.75..1.0 of it */
    double period_s;       /* sample period of the high-resolution channel (default 6) */
    double lowres_period_s;/* period of the low-resolution channel (default 900 = 15 min) */
    int64_t start_ms;      /* first time stamp (default 2026-01-05 00:00 UTC, a Monday) */
    /* faults per household-day (expected counts) */
    double spike_rate;     /* isolated huge spikes (e.g. 50 kW glitches) on the aggregate */
    double gap_rate;       /* dropouts: NaN runs on aggregate and appliances */
    double stuck_rate;     /* stuck meter: aggregate repeats one value for a while */
    double noise_w;        /* meter noise sigma (W) */
} gt_nilm_synth_cfg;

void gt_nilm_synth_defaults(gt_nilm_synth_cfg *cfg);

/* Fills meta[GT_NILM_N_APPLIANCES] in the canonical order used by every file. */
void gt_nilm_appliances(gt_appliance_meta meta[GT_NILM_N_APPLIANCES]);

/* Cheap: only the sizes and ownership of household h (0 <= h < n_households).
 * The struct is used by its tag (like POSIX `struct stat` / stat()): a typedef
 * of the same name would clash with the function name in C. */
struct gt_nilm_household_info {
    int64_t id;            /* household id stored in the file (stable, 1-based) */
    int64_t n_rows;        /* rows at period_s */
    int64_t t0_ms;         /* time stamp of row 0 */
    uint8_t owns[GT_NILM_N_APPLIANCES];
};
void gt_nilm_household_info(const gt_nilm_synth_cfg *cfg, int h, struct gt_nilm_household_info *info);

/* Fault flags per row (bitmask), stored as /fault_flags for tests and inspect. */
enum { GT_FAULT_SPIKE = 1, GT_FAULT_GAP = 2, GT_FAULT_STUCK = 4 };

/* Generates the whole household h.
 *   aggregate  [n_rows]                       W, NaN inside gaps
 *   appliances [n_rows, GT_NILM_N_APPLIANCES] W (row-major), NaN inside gaps
 *   faults     [n_rows]                       GT_FAULT_* bits (may be NULL)
 * Time stamps are t0_ms + i * period_s * 1000. */
void gt_nilm_generate_household(const gt_nilm_synth_cfg *cfg, int h, float *aggregate,
                                 float *appliances, uint8_t *faults);

/* ----------------------------------------------------------------- PdM -- */

#define GT_PDM_N_CHANNELS 32
#define GT_PDM_N_MACHINE_TYPES 5
#define GT_PDM_N_CONDITIONS 4

typedef struct gt_channel_meta {
    char name[GT_NAME_LEN]; /* e.g. "vib_gearbox_hss_rms" */
    char unit[16];          /* e.g. "mm/s", "degC", "bar", "rpm", "kW", "m/s", "deg" */
} gt_channel_meta;

typedef struct gt_pdm_synth_cfg {
    uint64_t seed;
    int n_farms;
    int turbines_per_farm;
    double days;
    double rate_hz;        /* default 10 */
    int64_t start_ms;
    double shock_rate;     /* transient shocks per turbine-day */
    double fault_fraction; /* fraction of turbines that develop a slow degradation fault */
} gt_pdm_synth_cfg;

void gt_pdm_synth_defaults(gt_pdm_synth_cfg *cfg);
void gt_pdm_channels(gt_channel_meta meta[GT_PDM_N_CHANNELS]);
const char *gt_pdm_machine_type_name(int type);   /* 0..4 */
const char *gt_pdm_condition_name(int condition); /* 0 low_wind, 1 rated, 2 turbulent, 3 curtailed */

enum { GT_PDM_EVENT_BEARING_WEAR = 1, GT_PDM_EVENT_OIL_TEMP_DRIFT = 2,
       GT_PDM_EVENT_PRESSURE_LOSS = 3, GT_PDM_EVENT_SHOCK = 4 };
const char *gt_pdm_event_name(int kind);

typedef struct gt_pdm_event {
    int64_t start_row, end_row; /* [start, end) rows within the turbine */
    int32_t kind;               /* GT_PDM_EVENT_* */
} gt_pdm_event;

typedef struct gt_pdm_segment {  /* operating condition segment */
    int64_t start_row, end_row;
    int32_t condition;
} gt_pdm_segment;

/* Cheap: sizes, type, planned events and condition segments of turbine t
 * (0 <= t < n_farms * turbines_per_farm). Arrays are allocated by the callee and
 * released with gt_pdm_turbine_info_free. Used by its tag, as above. */
struct gt_pdm_turbine_info {
    int64_t id;       /* stable, 1-based */
    int32_t farm;     /* 0..n_farms-1 */
    int32_t machine_type;
    int64_t n_rows;
    int64_t t0_ms;
    gt_pdm_event *events; int n_events;
    gt_pdm_segment *segments; int n_segments;
};
void gt_pdm_turbine_info(const gt_pdm_synth_cfg *cfg, int t, struct gt_pdm_turbine_info *info);
void gt_pdm_turbine_info_free(struct gt_pdm_turbine_info *info);

/* Streaming generation of one turbine in blocks (a 30-day turbine at 10 Hz is
 * 26M rows x 32 channels, too big to hold at once). The state carries the
 * physics (temperatures, wear) across blocks; the output is identical whatever
 * the block sizes. */
typedef struct gt_pdm_gen gt_pdm_gen;
gt_pdm_gen *gt_pdm_gen_begin(const gt_pdm_synth_cfg *cfg, int t);
/* Next n rows: signals [n, GT_PDM_N_CHANNELS] float32 row-major,
 * label [n] (0 normal, else GT_PDM_EVENT_* of the active event),
 * condition [n] (0..3). Returns rows produced (< n only at the end). */
int64_t gt_pdm_gen_next(gt_pdm_gen *g, int64_t n, float *signals, uint8_t *label, uint8_t *condition);
void gt_pdm_gen_end(gt_pdm_gen *g);

#endif
