/* io/format.h: the gridtrain HDF5 dataset format (schema version 1), the
 * part every kind of file shares.
 *
 * The full description (every group, dataset, attribute, type, shape, unit,
 * chunking rule and the version rules) is docs/data-format.md. Every file has
 * the root attributes kind (a registered kind's name, io/kind.h) and
 * schema_version, and row-indexed datasets (/timestamps int64 [N], ms since
 * the Unix epoch, and the kind's) whose items (households, turbines) own
 * consecutive rows. The layout of each kind: io/kind_nilm.h, io/kind_pdm.h.
 */
#ifndef GT_IO_FORMAT_H
#define GT_IO_FORMAT_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define GT_SCHEMA_VERSION 1
#define GT_FORMAT_NAME_LEN 32 /* fixed string length of names */
#define GT_IO_ERR_LEN 512

/* Sane limits of a file's sizes and values (docs/data-format.md, "Limits").
 * gt_io_open checks every count, offset and size read from a file against the
 * dataset extents and these limits, in 64-bit, before anything is allocated. */
#define GT_IO_MAX_ITEMS (1 << 24)                /* households / turbines */
#define GT_IO_MAX_COLS 4096                      /* appliances / channels */
#define GT_IO_MAX_ROWS (INT64_C(1) << 40)        /* rows N (and M) */
#define GT_IO_MAX_LEGEND 65536                   /* names in a /legend dataset, codes 0..65535 */
#define GT_IO_MAX_STR_BYTES 4096                 /* a fixed-length string type */
#define GT_IO_MIN_PERIOD_S 1e-3                  /* sample period: 1 ms .. 1 day */
#define GT_IO_MAX_PERIOD_S 86400.0
#define GT_IO_TS_MIN_MS INT64_C(631152000000)    /* time stamps: 1990-01-01T00:00Z .. */
#define GT_IO_TS_MAX_MS INT64_C(4102444800000)   /* .. 2100-01-01T00:00Z (exclusive) */

/* A file kind: the id of its row (io/kind.h gt_io_kind_i; GT_KIND_NILM in
 * io/kind_nilm.h, ...), GT_KIND_UNKNOWN for none. */
typedef int gt_file_kind;
#define GT_KIND_UNKNOWN 0
/* The kind's name ("nilm"), "unknown" when none is registered under k. */
const char *gt_file_kind_name(gt_file_kind k);

/* What validation learns about a file: sizes and the row offsets, and the
 * kind's own facts (kind_ix: its validate fills them, e.g. io/kind_nilm.h's
 * gt_nilm_index; freed by gt_file_index_free through the kind's row). */
typedef struct gt_file_index {
    gt_file_kind kind;
    int64_t version;
    int n_items;           /* households (H) or turbines (T) */
    int n_cols;            /* appliances (A) or channels (C) */
    int64_t n_rows;        /* N */
    int64_t *row_offset;   /* [n_items + 1], owned */
    void *kind_ix;         /* the kind's own facts or NULL, owned */
} gt_file_index;
void gt_file_index_free(gt_file_index *ix);

/* Opens `path` read-only on comm (collective) and checks the schema: root
 * attributes kind (a registered kind) and schema_version, then the kind's
 * checks (its validate: every required dataset's presence, type class and
 * size, rank and dimensions, row offsets: start at 0, strictly increasing,
 * end at N, and the kind's tables).
 * `expect` is GT_KIND_UNKNOWN to accept any registered kind.
 * On success returns the open file id (close with H5Fclose, collective) and fills
 * *ix. On failure returns -1 and writes a one-line message naming the file and
 * the dataset or attribute to err[err_bytes]; nothing is left open.
 * Every rank reaches the same verdict (same file, same checks). Never writes. */
hid_t gt_io_open(const char *path, MPI_Comm comm, gt_file_kind expect, gt_file_index *ix,
                 char *err, size_t err_bytes);

/* Ends the job with one error line "gridtrain: error: <msg>" printed by rank 0
 * of comm, which then aborts with `code` (MPI_Abort through the abort handler);
 * the other ranks wait to be ended. Collective: every rank of comm must call it
 * (they all reach the same error). */
_Noreturn void gt_io_fail(MPI_Comm comm, int code, const char *msg);

#endif
