/* io/read.h: collective sharded readers for the training pipeline.
 *
 * gt_*_shard_read opens a file read-only on comm, validates it (io/format.h),
 * assigns households/turbines to ranks with gt_shard_assign (balanced by rows,
 * deterministic), and reads each rank's rows with collective H5Dread calls on
 * the union of its hyperslabs. A rank that gets no items still takes part (it
 * selects nothing). Items keep file order within a rank. A schema error ends
 * the job with one line printed by rank 0 (GT_EXIT_DATA). */
#ifndef GT_IO_READ_H
#define GT_IO_READ_H

#include <mpi.h>
#include <stdint.h>

#include "io/format.h"

typedef struct gt_read_stats {
    int64_t n_bytes;  /* bytes of data this rank read (in memory types) */
    double read_s;    /* seconds in the collective reads on this rank */
    double imbalance; /* max/mean rows over ranks of the plan */
} gt_read_stats;

typedef struct gt_nilm_shard {
    int n_households_total; /* H in the file */
    int n_appliances;       /* A */
    gt_io_appliance *meta;  /* [A] (names, thresholds) */
    int n_households;       /* local count */
    int32_t *index;         /* [n_households] position in the file's /households */
    int64_t *id;            /* [n_households] */
    double *period_s;       /* [n_households] */
    uint8_t *owns;          /* [n_households, A] or NULL when the file has none */
    int64_t n_rows;         /* local rows */
    int64_t *row_offset;    /* [n_households + 1] local offsets into the arrays below */
    int64_t *timestamps;    /* [n_rows] ms since the Unix epoch */
    float *aggregate;       /* [n_rows] W */
    float *appliances;      /* [n_rows, A] W, row-major */
    uint8_t *fault_flags;   /* [n_rows] GT_FAULT_* bits, or NULL when absent */
    int has_lowres;
    double lowres_period_s;
    int64_t n_lowres_rows;
    int64_t *lowres_offset;    /* [n_households + 1] or NULL */
    int64_t *lowres_timestamps;/* [n_lowres_rows] */
    float *lowres_aggregate;   /* [n_lowres_rows] */
    float *lowres_appliances;  /* [n_lowres_rows, A] */
    gt_read_stats stats;
} gt_nilm_shard;

typedef struct gt_pdm_shard {
    int n_turbines_total;   /* T in the file */
    int n_channels;         /* C */
    gt_io_channel *channels;    /* [C] */
    int n_turbines;         /* local count */
    int32_t *index;         /* [n_turbines] position in the file's /turbines */
    int64_t *id;            /* [n_turbines] */
    int32_t *farm;          /* [n_turbines] */
    int32_t *machine_type;  /* [n_turbines] */
    double *rate_hz;        /* [n_turbines] */
    int64_t n_rows;         /* local rows */
    int64_t *row_offset;    /* [n_turbines + 1] local offsets */
    int64_t *timestamps;    /* [n_rows] */
    float *signals;         /* [n_rows, C] */
    uint8_t *labels;        /* [n_rows] 0 normal, else event kind */
    /* condition segments (code = condition) and events (code = kind) of the
     * local turbines; rows within the turbine, *_turbine = local turbine index */
    int n_segments;
    gt_io_span *segments; int32_t *segment_turbine;   /* [n_segments] */
    int n_events;
    gt_io_span *events; int32_t *event_turbine;       /* [n_events] */
    gt_read_stats stats;
} gt_pdm_shard;

/* Physical ranges of the values read (checked where they enter): a finite
 * NILM power (aggregate, appliances, their low-resolution means) with
 * |P| > power_limit_w, or a PdM signal with |x| > signal_limit, is not a
 * measurement (a 3e38 W sample trained and evaluated to MAE 3e38): it becomes
 * NaN (missing: screened like a dropout) and rank 0 warns once per dataset with
 * the count and the first such value's item and row. <= 0 turns a check off.
 * Defaults GT_READ_POWER_LIMIT_W and GT_READ_SIGNAL_LIMIT; the CLI sets them
 * from data.power_limit_w / data.signal_limit. Process-wide, not collective. */
#define GT_READ_POWER_LIMIT_W 1e8
#define GT_READ_SIGNAL_LIMIT 1e9
void gt_read_set_value_limits(double power_limit_w, double signal_limit);

/* Collective over comm. Returns this rank's share; free with *_free. */
gt_nilm_shard *gt_nilm_shard_read(const char *path, MPI_Comm comm);
void gt_nilm_shard_free(gt_nilm_shard *s);
gt_pdm_shard *gt_pdm_shard_read(const char *path, MPI_Comm comm);
/* Collective. The optional /care_events table of a PdM file (see
 * gt_care_events_write; GT_CARE_EVENT_K values per entry, malloc'd, on every
 * rank) and its entry count in *n; NULL and *n = 0 when the file has none. */
int64_t *gt_care_events_read(const char *path, MPI_Comm comm, int64_t *n);
/* Not collective (MPI initialised: gt_io_open on MPI_COMM_SELF). The event
 * ids of the PdM file's /care_events in file order (malloc'd, *n of them;
 * NULL and *n = 0 without the table), after the whole schema check (ids >= 0,
 * none twice). NULL with *n = 0 and one line in err when the file fails it;
 * err[0] is 0 otherwise. */
int64_t *gt_care_event_ids_read(const char *path, int64_t *n, char *err, size_t err_bytes);
void gt_pdm_shard_free(gt_pdm_shard *s);
/* Not collective (a rank reads it alone). The names of /legend/<what>
 * ("condition", "machine_type", "event_kind") of the file at path: a
 * malloc'd table of *n names of GT_FORMAT_NAME_LEN bytes each (nul
 * terminated), name k at k * GT_FORMAT_NAME_LEN; NULL and *n = 0 when the
 * file has no such legend or cannot be read. */
char *gt_legend_read(const char *path, const char *what, int *n);

#endif
