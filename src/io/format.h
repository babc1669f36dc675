/* io/format.h: the gridtrain HDF5 dataset format (schema version 1).
 *
 * The full description (every group, dataset, attribute, type, shape, unit,
 * chunking rule and the version rules) is docs/data-format.md. In short:
 *
 *   NILM (root attribute kind = "nilm")
 *     /households/{id int64 [H], row_offset int64 [H+1], period_s float64 [H],
 *                  owns uint8 [H,A] (optional)}
 *     /appliance_meta/{name string32 [A], on_power_w, on_duration_s, max_power_w float32 [A]}
 *     /timestamps int64 [N] (ms since the Unix epoch), /aggregate float32 [N] (W),
 *     /appliances float32 [N,A] (W), /fault_flags uint8 [N] (optional)
 *     /lowres/{row_offset int64 [H+1], timestamps int64 [M], aggregate float32 [M],
 *              appliances float32 [M,A]} (optional; attribute period_s)
 *   PdM (kind = "pdm")
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
 */
#ifndef GT_IO_FORMAT_H
#define GT_IO_FORMAT_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define GT_SCHEMA_VERSION 1
#define GT_CARE_EVENT_K 9  /* values per /care_events entry in memory (gt_care_events_read): turbine,
                            * event_id, label, pred_start, pred_end, event_start, event_end, train_start,
                            * train_end (the last two -1 when the file does not have them) */
#define GT_FORMAT_NAME_LEN 32 /* fixed string length of names */
#define GT_FORMAT_UNIT_LEN 16 /* fixed string length of units */
#define GT_FORMAT_DESC_LEN 64 /* fixed string length of channel descriptions (optional) */
#define GT_IO_ERR_LEN 512

/* Sane limits of a file's sizes and values (docs/data-format.md, "Limits").
 * gt_io_open checks every count, offset and size read from a file against the
 * dataset extents and these limits, in 64-bit, before anything is allocated. */
#define GT_IO_MAX_ITEMS (1 << 24)                /* households / turbines */
#define GT_IO_MAX_COLS 4096                      /* appliances / channels */
#define GT_IO_MAX_ROWS (INT64_C(1) << 40)        /* rows N (and M) */
#define GT_IO_MAX_SPANS (1 << 26)                /* segments, events */
#define GT_IO_MAX_LEGEND 65536                   /* names in a /legend dataset */
#define GT_IO_MAX_STR_BYTES 4096                 /* a fixed-length string type */
#define GT_IO_MIN_PERIOD_S 1e-3                  /* sample period: 1 ms .. 1 day */
#define GT_IO_MAX_PERIOD_S 86400.0
#define GT_IO_TS_MIN_MS INT64_C(631152000000)    /* time stamps: 1990-01-01T00:00Z .. */
#define GT_IO_TS_MAX_MS INT64_C(4102444800000)   /* .. 2100-01-01T00:00Z (exclusive) */

/* Row types of the metadata tables, independent of any generator. */
typedef struct gt_io_appliance {
    char name[GT_FORMAT_NAME_LEN]; /* canonical name, e.g. "fridge" */
    float on_power_w;              /* above this the appliance counts as on (W) */
    float on_duration_s;           /* typical length of one on period (s) */
    float max_power_w;             /* largest plausible power (W) */
} gt_io_appliance;
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

typedef enum gt_file_kind { GT_KIND_UNKNOWN = 0, GT_KIND_NILM = 1, GT_KIND_PDM = 2 } gt_file_kind;
const char *gt_file_kind_name(gt_file_kind k);

/* What validation learns about a file: sizes and the row offsets. */
typedef struct gt_file_index {
    gt_file_kind kind;
    int64_t version;
    int n_items;           /* households (H) or turbines (T) */
    int n_cols;            /* appliances (A) or channels (C) */
    int64_t n_rows;        /* N */
    int64_t *row_offset;   /* [n_items + 1], owned */
    int has_faults;        /* NILM /fault_flags present */
    int has_owns;          /* NILM /households/owns present */
    int has_lowres;        /* NILM /lowres present */
    double lowres_period_s;
    int64_t n_lowres_rows; /* M */
    int64_t *lowres_offset;/* [n_items + 1] or NULL, owned */
    int64_t n_segments, n_events; /* PdM S, E */
    int64_t n_care_events;        /* PdM /care_events K (0 without the table) */
} gt_file_index;
void gt_file_index_free(gt_file_index *ix);

/* Opens `path` read-only on comm (collective) and checks the schema: root
 * attributes kind and schema_version, every required dataset's presence, type
 * class and size, rank and dimensions, row offsets (start at 0, strictly
 * increasing, end at N), and the segment/event tables' bounds.
 * `expect` is GT_KIND_UNKNOWN to accept either kind.
 * On success returns the open file id (close with H5Fclose, collective) and fills
 * *ix. On failure returns -1 and writes a one-line message naming the file and
 * the dataset or attribute to err[err_bytes]; nothing is left open.
 * Every rank reaches the same verdict (same file, same checks). Never writes. */
hid_t gt_io_open(const char *path, MPI_Comm comm, gt_file_kind expect, gt_file_index *ix,
                 char *err, size_t err_bytes);

/* The event ids of a /care_events table (ids[n]): each >= 0 and none twice.
 * Returns 0, or -1 with one line in why ("entries 2 and 5 are both event
 * 10 ..."). The one check of every reader of the ids: gt_io_open, the
 * collective gt_care_events_read and the serial gt_care_event_ids_read. */
int gt_io_care_event_ids_check(const int64_t *ids, int64_t n, char *why, size_t why_bytes);

/* Ends the job with one error line "gridtrain: error: <msg>" printed by rank 0
 * of comm, which then aborts with `code` (MPI_Abort through the abort handler);
 * the other ranks wait to be ended. Collective: every rank of comm must call it
 * (they all reach the same error). */
_Noreturn void gt_io_fail(MPI_Comm comm, int code, const char *msg);

#endif
