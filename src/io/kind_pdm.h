/* io/kind_pdm.h: PdM (turbine) files: their layout, the shard reader, the
 * optional tables and the writer (the row of io/kind.h in io/kind_pdm.c).
 *
 *   PdM (root attribute kind = "pdm")
 *     /turbines/{id int64, farm int32, machine_type int32, rate_hz float64 [T],
 *                row_offset int64 [T+1]}
 *     /channels/{name string32 [C], unit string16 [C]}
 *     /timestamps int64 [N], /signals float32 [N,C], /labels uint8 [N]
 *     /segments/{turbine int32, start_row int64, end_row int64, condition int32} [S]
 *     /events/{turbine int32, start_row int64, end_row int64, kind int32} [E]
 *     /legend/{machine_type, condition, event_kind} string32 (optional)
 *     /care_events/{turbine int32, event_id int64, label int32, pred_start_row,
 *                   pred_end_row, event_start_row, event_end_row int64,
 *                   train_start_row, train_end_row int64 (optional pair)} [K]
 *       (optional; `import care`: one entry per CARE event dataset, label 1
 *       anomaly / 0 normal, rows within the turbine, ends exclusive; the
 *       training part -1, -1 in files written before it was stored)
 *
 * The reader and the writer work as NILM's (io/kind_nilm.h), per turbine;
 * the writer generates each turbine in blocks of at most opts->batch_bytes. */
#ifndef GT_IO_KIND_PDM_H
#define GT_IO_KIND_PDM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "io/format.h"
#include "io/kind.h"

#define GT_KIND_PDM 2
/* data.signal_limit's default: a signal beyond +-1e9 (its unit) is not a measurement */
#define GT_PDM_SIGNAL_LIMIT 1e9
/* inspect: PdM's own count of an item (io/inspect.h gt_item_report.own): the
 * /labels values beyond /legend/event_kind (a finding) */
enum { GT_PDM_OWN_BAD_LABELS, GT_PDM_N_OWN };
extern const gt_io_kind_i gt_io_kind_pdm;

#define GT_CARE_EVENT_K 9  /* values per /care_events entry in memory (gt_care_events_read): turbine,
                            * event_id, label, pred_start, pred_end, event_start, event_end, train_start,
                            * train_end (the last two -1 when the file does not have them) */
#define GT_FORMAT_UNIT_LEN 16 /* fixed string length of units */
#define GT_FORMAT_DESC_LEN 64 /* fixed string length of channel descriptions (optional) */
#define GT_IO_MAX_SPANS (1 << 26) /* segments, events */

/* What the schema check learns of a PdM file beyond the shared index
 * (gt_file_index.kind_ix). */
typedef struct gt_pdm_index {
    int64_t n_segments, n_events; /* S, E */
    int64_t n_care_events;        /* /care_events K (0 without the table) */
} gt_pdm_index;
/* The PdM facts of an index; NULL when it is not a PdM file's. */
static inline const gt_pdm_index *gt_pdm_index_of(const gt_file_index *ix) {
    return ix->kind == GT_KIND_PDM ? (const gt_pdm_index *)ix->kind_ix : NULL;
}

/* A row of /channels. */
typedef struct gt_io_channel {
    char name[GT_FORMAT_NAME_LEN]; /* e.g. "vib_gearbox_hss_rms" */
    char unit[GT_FORMAT_UNIT_LEN]; /* e.g. "mm/s" */
    char desc[GT_FORMAT_DESC_LEN]; /* what it measures, e.g. "Ambient temperature" (optional
                                      /channels/description; "" when the file has none) */
} gt_io_channel;
/* Rows [start_row, end_row) within one turbine and a code: the operating
 * condition of a segment or the kind of an event. */
typedef struct gt_io_span {
    int64_t start_row, end_row;
    int32_t code;
} gt_io_span;

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

/* Collective over comm. This rank's share; free with gt_pdm_shard_free.
 * opts->value_limit: the signal limit (data.signal_limit); NULL:
 * GT_PDM_SIGNAL_LIMIT. */
static inline gt_pdm_shard *gt_pdm_shard_read_opts(const char *path, const gt_read_opts *opts, MPI_Comm comm) {
    return (gt_pdm_shard *)gt_io_read(path, GT_KIND_PDM, opts, comm);
}
static inline gt_pdm_shard *gt_pdm_shard_read(const char *path, MPI_Comm comm) {
    return gt_pdm_shard_read_opts(path, NULL, comm);
}
void gt_pdm_shard_free(gt_pdm_shard *s);
/* Collective. The optional /care_events table of a PdM file (see
 * gt_pdm_source.care_events; GT_CARE_EVENT_K values per entry, malloc'd, on
 * every rank) and its entry count in *n; NULL and *n = 0 when the file has none. */
int64_t *gt_care_events_read(const char *path, MPI_Comm comm, int64_t *n);
/* Not collective (MPI initialised: gt_io_open on MPI_COMM_SELF). The event
 * ids of the PdM file's /care_events in file order (malloc'd, *n of them;
 * NULL and *n = 0 without the table), after the whole schema check (ids >= 0,
 * none twice). NULL with *n = 0 and one line in err when the file fails it;
 * err[0] is 0 otherwise. */
int64_t *gt_care_event_ids_read(const char *path, int64_t *n, char *err, size_t err_bytes);
/* The event ids of a /care_events table (ids[n]): each >= 0 and none twice.
 * Returns 0, or -1 with one line in why ("entries 2 and 5 are both event
 * 10 ..."). The one check of every reader of the ids: gt_io_open, the
 * collective gt_care_events_read and the serial gt_care_event_ids_read. */
int gt_io_care_event_ids_check(const int64_t *ids, int64_t n, char *why, size_t why_bytes);
/* Not collective (a rank reads it alone). The names of /legend/<what>
 * ("condition", "machine_type", "event_kind") of the file at path: a
 * malloc'd table of *n names of GT_FORMAT_NAME_LEN bytes each (nul
 * terminated), name k at k * GT_FORMAT_NAME_LEN; NULL and *n = 0 when the
 * file has no such legend or cannot be read. */
char *gt_legend_read(const char *path, const char *what, int *n);

/* Cheap description of one turbine. */
typedef struct gt_pdm_item {
    int64_t id;      /* stable turbine id */
    int32_t farm, machine_type;
    int64_t n_rows;  /* rows at rate_hz (>= 1) */
    int64_t t0_ms;   /* row i is at t0_ms + llround(i * 1000 / rate_hz) */
    gt_io_span *segments; int n_segments; /* operating conditions, owned by the source */
    gt_io_span *events; int n_events;     /* anomaly events (code = kind), owned by the source */
} gt_pdm_item;

typedef struct gt_pdm_source {
    int n_turbines;
    int n_channels;
    const gt_io_channel *channels; /* [n_channels] */
    double rate_hz;
    const char *const *machine_type_names; int n_machine_types; /* legend (may be NULL/0) */
    const char *const *condition_names; int n_conditions;
    const char *const *event_kind_names; int n_event_kinds;     /* index = kind code */
    const char *generator, *generator_config;
    uint64_t seed;
    /* optional /care_events table (docs/data-format.md; NULL / 0: none):
     * care_events[n_care_events][GT_CARE_EVENT_K] = turbine (file index),
     * event_id, label (1 anomaly, 0 normal), pred_start_row, pred_end_row,
     * event_start_row, event_end_row, train_start_row, train_end_row (rows
     * within the turbine, ends exclusive; the training part -1, -1 when the
     * dataset has no training rows); read on rank 0 */
    const int64_t *care_events;
    int64_t n_care_events;
    void *ctx;
    /* Sizes, events and segments of turbine t; release with info_free.
     * Pure and cheap: called for every turbine on every rank. */
    void (*info)(void *ctx, int t, gt_pdm_item *item);
    void (*info_free)(void *ctx, gt_pdm_item *item);
    /* Streaming generation: next n rows of signals [n, n_channels] and labels [n];
     * returns rows produced. */
    void *(*begin)(void *ctx, int t);
    int64_t (*next)(void *ctx, void *state, int64_t n, float *signals, uint8_t *labels);
    void (*end)(void *ctx, void *state);
} gt_pdm_source;

/* Writes a PdM file, generating each turbine in blocks of at most
 * opts->batch_bytes. Collective over comm (as gt_nilm_write). */
void gt_pdm_write(const char *path, const gt_pdm_source *src, const gt_write_opts *opts, MPI_Comm comm,
                  gt_write_stats *stats);

#endif
