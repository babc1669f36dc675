/* io/inspect.h: schema + data validation report (`gridtrain inspect FILE`). */
#ifndef GT_IO_INSPECT_H
#define GT_IO_INSPECT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gt_inspect_opts {
    int max_report;        /* item lines printed (the rest summarised), default 50 */
    double spike_k;        /* spike: isolated sample further than k robust sigmas of the
                              first differences from both neighbours, default 20 */
    int64_t stuck_rows;    /* stuck run: at least this many identical finite values, default 20 */
    double gap_factor;     /* time stamp gap: step > gap_factor * period, default 1.5 */
    int64_t block_bytes;   /* per-rank read buffer per collective round, default 64 MiB */
    int fail_on_data;      /* 1: data findings (not only schema errors) exit GT_EXIT_DATA */
} gt_inspect_opts;
void gt_inspect_opts_defaults(gt_inspect_opts *o);

/* Counts of one item a kind keeps of its own (gt_item_report.own): their
 * meaning, which are findings and how the summary line shows them are the
 * kind's (io/kind.h gt_io_inspect_i: n_own, own_finding, summary), e.g. PdM's
 * labels beyond the legend, NILM's /fault_flags rows (kind_pdm.h,
 * kind_nilm.h name their indices). */
#define GT_ITEM_OWN_MAX 4

/* Findings for one household/turbine (all counts in rows or runs). Value
 * counts are summed over the columns (and the kind's extra one). */
typedef struct gt_item_report {
    int64_t index, id, rows;
    int64_t ts_gaps;       /* steps longer than gap_factor * period */
    int64_t ts_backward;   /* steps <= 0 (duplicate or decreasing time stamps) */
    int64_t nan, nan_runs; /* NaN values; runs of NaN rows in the main signal */
    int64_t inf;
    int64_t negative;      /* negative values of the columns the kind checks (GT_IO_COL_NEGATIVE) */
    int64_t spikes;        /* robust isolated spikes (columns with GT_IO_COL_SPIKE) */
    int64_t stuck_runs, stuck_rows;
    int64_t own[GT_ITEM_OWN_MAX]; /* the kind's own counts (above) */
    int64_t ts_range;      /* time stamps outside [GT_IO_TS_MIN_MS, GT_IO_TS_MAX_MS) (io/format.h):
                              training, eval and predict refuse such a file */
} gt_item_report;

/* Collective over comm. Opens `path` read-only (never modifies it), validates
 * the schema, prints on rank 0 to `out`: each rank's share (items, rows, bytes)
 * and the imbalance (max/mean rows), then per-item findings and a summary line
 * "summary: key=value ...". Reads in bounded blocks (memory does not grow with
 * the file). On a schema error prints one line "gridtrain: error: FILE: /dataset:
 * ..." on rank 0 (stderr) and returns GT_EXIT_DATA on every rank. Returns 0, or
 * GT_EXIT_DATA when opts->fail_on_data and there are findings. If reports is not
 * NULL, rank 0 gets a malloc'ed array of every item's report (*n_reports items,
 * in file order); other ranks get NULL/0. */
int gt_io_inspect(const char *path, const gt_inspect_opts *opts, MPI_Comm comm, FILE *out,
                  gt_item_report **reports, int *n_reports);

#endif
