/* eval/report.h: the run report (report.md + report.html + plots/).
 *
 * Built only from the files of a run directory, so it can be regenerated at
 * any time: config.ini, manifest.json, metrics.jsonl, screened.csv,
 * eval.json, timing.json, eval_sample.csv (NILM) / eval_scores.csv (PdM).
 * Missing files leave their section with a note. Plots are drawn by gnuplot
 * (pngcairo, else png terminal) run as a child process on a generated script
 * (plots/<name>.gp, data in plots/<name>.dat); without gnuplot the report says
 * so and is still written. */
#ifndef GT_EVAL_REPORT_H
#define GT_EVAL_REPORT_H

#include <stddef.h>

/* Not collective (call on one rank). gnuplot: program to run, NULL = $GT_GNUPLOT
 * or "gnuplot" from PATH. Returns the number of plots written as valid PNGs,
 * or -1 when report.md / report.html could not be written. */
int gt_report_write(const char *run_dir, const char *gnuplot);

/* 1 when `path` is a PNG (8-byte signature and an IHDR chunk) of at least
 * min_bytes bytes. */
int gt_png_valid(const char *path, long min_bytes);

#endif
