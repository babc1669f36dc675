/* import/import.h: importers of public datasets into the gridtrain HDF5 format
 * (`gridtrain import ukdale|redd|refit|care SRC -o OUT.h5`). docs/importers.md
 * describes the accepted layouts, the resampling and gap rules, the label
 * mapping (datasets/appliance_map.ini) and every message.
 *
 * Parallel plan: every rank lists the items (houses / turbines) and reads the
 * small side files (labels.dat, event_info.csv, the CSV headers), so all ranks
 * know the column set. Items are assigned to ranks by text bytes
 * (gt_shard_assign); each rank parses and resamples its own items. Row counts,
 * time origins and ownership are shared with MPI_Allreduce; items are then moved
 * (point to point) to the rank the writer (io/write.h) assigns them by rows, and
 * written collectively. The output does not depend on the number of ranks.
 * Errors agree across ranks: the error of the lowest item index is reported by
 * rank 0 and the job ends with its exit code (GT_EXIT_DATA for bad input). */
#ifndef GT_IMPORT_IMPORT_H
#define GT_IMPORT_IMPORT_H

#include <mpi.h>
#include <stdint.h>

#include "io/write.h"

typedef enum gt_import_format {
    GT_IMPORT_UKDALE = 0,
    GT_IMPORT_REDD = 1,
    GT_IMPORT_REFIT = 2,
    GT_IMPORT_CARE = 3,
} gt_import_format;
/* "ukdale" ... ; -1 when unknown. */
int gt_import_format_parse(const char *name);
const char *gt_import_format_name(gt_import_format f);
/* Default period of a format, s (UK-DALE 6, REDD 3, REFIT 8, CARE 600). */
double gt_import_default_period(gt_import_format f);

/* Default of --max-bad-lines: a truncated last line or a few stray lines of a
 * real export are skipped (one warning per file names the first), a file that
 * is wrong throughout still fails by its 11th line. */
#define GT_IMPORT_MAX_BAD_LINES 10

typedef enum { GT_UKDALE_AGG_AUTO = 0, GT_UKDALE_AGG_CHANNEL = 1, GT_UKDALE_AGG_MAINS = 2 } gt_ukdale_agg;

typedef struct gt_import_opts {
    gt_import_format format;
    const char *src;          /* dataset directory */
    const char *out;          /* output HDF5 file */
    const int *houses;        /* [n_houses] house numbers to import (NILM); NULL: all found */
    int n_houses;
    double period_s;          /* output period, s (whole ms); <= 0: the format's default */
    const char *map_path;     /* appliance map (INI); NULL or "": the default one, if found */
    double max_gap_s;         /* holes in the aggregate longer than this are gaps; <= 0: 5 periods */
    double backward_tol_s;    /* a time stamp going back more than this is a warning */
    int strict;               /* warnings are errors (exit GT_EXIT_DATA) */
    int max_bad_lines;        /* bad data lines skipped per file with a warning (default
                               * GT_IMPORT_MAX_BAD_LINES); one more is the error; 0: the first is */
    gt_ukdale_agg ukdale_agg; /* UK-DALE aggregate: mains.dat when present (auto), channel 1, mains.dat */
    double lowres_period_s;   /* NILM /lowres channel period; 0: none */
    int farm;                 /* CARE /turbines/farm code; -1 (default): the folder name's last letter (A -> 0) */
    gt_write_opts write;
} gt_import_opts;
void gt_import_opts_defaults(gt_import_opts *o);

/* Totals over all ranks (same on every rank). */
typedef struct gt_import_stats {
    int n_items;
    int n_cols;               /* appliances / channels */
    int64_t n_rows;
    int64_t text_bytes;       /* bytes of text parsed */
    int64_t n_lines, n_samples, n_exact_dup, n_conflict, n_backward, n_backward_far;
    int64_t n_outside;        /* samples outside the item's span (dropped) */
    int64_t n_gap_rows;       /* rows flagged as gaps (NILM) */
    int64_t n_issues;         /* REFIT rows with Issues = 1 */
    int64_t n_warnings;
    int64_t n_bad_lines;      /* bad data lines skipped (--max-bad-lines) */
    int64_t n_bridged;        /* NILM appliance cells of several channels where a channel's short hole was
                               * bridged in the sum (gt_sum_legs) */
    double parse_s_max;       /* slowest rank's parse + resample time */
    double parse_s_sum;       /* summed over ranks (MB/s per core = text_bytes / parse_s_sum) */
    double total_s;
} gt_import_stats;

/* Imports opts->src into opts->out. Collective over comm; every rank passes the
 * same options. Bad input ends the job with one message naming the file and
 * line (GT_EXIT_DATA); the output is written as OUT.tmp and renamed when
 * complete, so an existing OUT is never half overwritten. st may be NULL. */
void gt_import_run(const gt_import_opts *o, MPI_Comm comm, gt_import_stats *st);

#endif
