/* eval/report_section.h: the report's writers, for a task's results section
 * (gt_eval_task_i.report, in the task's folder) and the report itself
 * (report.c): both write through them, so that report.md and report.html
 * stay one document. See report.h. */
#ifndef GT_EVAL_REPORT_SECTION_H
#define GT_EVAL_REPORT_SECTION_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>

#define GT_REPORT_NAME 64 /* bytes of a name in a plot title (names are < 32) */

/* The report being written: report.md and report.html side by side. */
typedef struct gt_rep {
    FILE *md, *html;
    const char *dir; /* the run directory: the task's files (plot data) are read from there */
    char gnuplot[PATH_MAX];
    int have_gnuplot;
    int n_plots;
    char plot_note[256];
} gt_rep;

/* Markdown gets every text through gt_esc_md, HTML through gt_esc_html:
 * names, paths and config values are data in both. */
void gt_rep_heading(gt_rep *r, int level, const char *title);
void gt_rep_para(gt_rep *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A table row of nc cells (header: the first row, which opens the table);
 * gt_rep_end closes the table. */
void gt_rep_row(gt_rep *r, int header, int nc, char cells[][64]);
void gt_rep_end(gt_rep *r);
/* Runs gnuplot on plots/<name>.gp (body after the terminal/output lines);
 * adds the image when a valid PNG came out, else a note. */
void gt_rep_plot(gt_rep *r, const char *name, const char *alt, const char *body);

/* eval.json / manifest.json access: o at "a.b.c" (NULL when absent), its
 * number (NaN when not one), its string (def when not one). */
const cJSON *gt_rep_jget(const cJSON *o, const char *path);
double gt_rep_jnum(const cJSON *o, const char *path);
const char *gt_rep_jstr(const cJSON *o, const char *path, const char *def);
/* v with fmt, or "n/a" when not finite. */
void gt_rep_fmtnum(char *buf, size_t n, double v, const char *fmt);

#endif
