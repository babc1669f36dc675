/* doe/report_int.h: what the report's files share (not an interface of
 * doe/: report.h is). The metric table, number and CSV formatting, and the
 * writers report.c calls. */
#ifndef GT_DOE_REPORT_INT_H
#define GT_DOE_REPORT_INT_H

#include <math.h>
#include <stdio.h>

#include "core/escape.h"
#include "doe/report.h"

/* metric m of the table (gt_doe_metrics) and the table's size */
static inline const gt_doe_metric_def *metric_def(int m) { return &gt_doe_metrics(NULL)[m]; }
static inline int n_metrics(void) {
    int n;
    gt_doe_metrics(&n);
    return n;
}

static inline void fmt_num(char *b, size_t n, double v) {
    if (!isfinite(v)) snprintf(b, n, "-");
    else if (v != 0 && (fabs(v) >= 1e5 || fabs(v) < 1e-3)) snprintf(b, n, "%.3g", v);
    else snprintf(b, n, "%.4g", v);
}
static inline void fmt_stat(char *b, size_t n, gt_doe_stat st) {
    char m[32], s[32];
    fmt_num(m, sizeof m, st.mean);
    if (!isfinite(st.mean)) snprintf(b, n, "-");
    else if (!isfinite(st.sd)) snprintf(b, n, "%s", m);
    else {
        fmt_num(s, sizeof s, st.sd);
        snprintf(b, n, "%s ± %s", m, s);
    }
}
static inline void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.10g", v);
    else fputs(",", f);
}
/* CSV field (gt_esc_csv: quoted, no formula), after a comma unless first */
static inline void csv_str(FILE *f, const char *s, int first) {
    if (!first) fputc(',', f);
    gt_esc_csv(f, s);
}

/* metrics with at least one value among finished cells */
static inline int shown_metrics(const gt_doe_summary *o, int *idx, int quality_only) {
    int n = 0;
    for (int m = 0, nm = n_metrics(); m < nm; m++)
        if (o->grand[m].n > 0 && (!quality_only || metric_def(m)->quality)) idx[n++] = m;
    return n;
}

/* OUT_DIR/name for writing, renamed into place at fclose (a warning and NULL
 * when it cannot be opened) */
FILE *gt_doe_report_open(const char *dir, const char *name);
/* report.md (html 0) or report.html (html 1) into f */
void gt_doe_doc_write(FILE *f, int html, const gt_doe_sweep *s, const gt_doe_summary *o, int have_plots,
                      const gt_doe_care *care, const char *care_err);
/* heatmap.svg, effects.svg (and their .dat/.gp) into dir; 0 or -1 */
int gt_doe_plots_write(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir);
/* "factor=level ..." of a configuration (every factor but the seed), "(all)" without any */
void gt_doe_config_label(const gt_doe_sweep *s, const gt_doe_config *c, char *b, size_t n);
/* SWEEP_DIR/ladder.json and the rung records into s->ladder (none: left NULL); 0 */
int gt_doe_ladder_load(gt_doe_sweep *s);
void gt_doe_ladder_free(gt_doe_sweep *s);
/* 1 when gnuplot is on PATH */
int gt_doe_have_gnuplot(void);

#endif
