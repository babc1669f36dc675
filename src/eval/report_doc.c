/* eval/report_doc.c: the report's writers (headings, paragraphs, tables,
 * plots, eval.json lookups) that the report and each task's section use
 * (eval/report_section.h). */
#define _GNU_SOURCE
#include "eval/report.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "eval/eval_task.h"
#include "eval/report_section.h"

static void image(gt_rep *r, const char *name, const char *alt) {
    fputs("![", r->md);
    gt_esc_md(r->md, alt);
    fprintf(r->md, "](plots/%s)\n\n", name);
    fprintf(r->html, "<p><img src=\"plots/%s\" alt=\"", name);
    gt_esc_html(r->html, alt);
    fputs("\"></p>\n", r->html);
}

const cJSON *gt_rep_jget(const cJSON *o, const char *path) { /* "a.b.c" */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = o;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cur;
}

double gt_rep_jnum(const cJSON *o, const char *path) {
    const cJSON *v = gt_rep_jget(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *gt_rep_jstr(const cJSON *o, const char *path, const char *def) {
    const cJSON *v = gt_rep_jget(o, path);
    return cJSON_IsString(v) ? v->valuestring : def;
}

void gt_rep_fmtnum(char *buf, size_t n, double v, const char *fmt) {
    if (isfinite(v)) snprintf(buf, n, fmt, v);
    else snprintf(buf, n, "n/a");
}

/* Markdown gets every text through gt_esc_md, HTML through gt_esc_html:
 * names, paths and config values are data in both. */
void gt_rep_heading(gt_rep *r, int level, const char *title) {
    fprintf(r->md, "\n%.*s ", level, "######");
    gt_esc_md(r->md, title);
    fputs("\n\n", r->md);
    fprintf(r->html, "<h%d>", level);
    gt_esc_html(r->html, title);
    fprintf(r->html, "</h%d>\n", level);
}

void gt_rep_para(gt_rep *r, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gt_esc_md(r->md, buf);
    fputs("\n\n", r->md);
    fputs("<p>", r->html);
    gt_esc_html(r->html, buf);
    fputs("</p>\n", r->html);
}

void gt_rep_row(gt_rep *r, int header, int nc, char cells[][64]) {
    fputc('|', r->md);
    for (int i = 0; i < nc; i++) {
        fputc(' ', r->md);
        gt_esc_md(r->md, cells[i]); /* a | in a name stays in its cell */
        fputs(" |", r->md);
    }
    fputc('\n', r->md);
    if (header) {
        fputc('|', r->md);
        for (int i = 0; i < nc; i++) fputs(i ? "---:|" : "---|", r->md);
        fputc('\n', r->md);
        fputs("<table>\n", r->html);
    }
    fputs("<tr>", r->html);
    for (int i = 0; i < nc; i++) {
        fputs(header ? "<th>" : "<td>", r->html);
        gt_esc_html(r->html, cells[i]);
        fputs(header ? "</th>" : "</td>", r->html);
    }
    fputs("</tr>\n", r->html);
}

void gt_rep_end(gt_rep *r) {
    fputc('\n', r->md);
    fputs("</table>\n", r->html);
}

/* Runs gnuplot on plots/<name>.gp (body after the terminal/output lines);
 * adds the image when a valid PNG came out. */
void gt_rep_plot(gt_rep *r, const char *name, const char *alt, const char *body) {
    if (!r->have_gnuplot) return;
    const char *terms[2] = {"pngcairo size 960,480 font 'Sans,10'", "png size 960,480"};
    char gp[PATH_MAX + 64], png[PATH_MAX + 64], log[PATH_MAX + 64];
    snprintf(gp, sizeof gp, "%s/plots/%s.gp", r->dir, name);
    snprintf(png, sizeof png, "%s/plots/%s.png", r->dir, name);
    snprintf(log, sizeof log, "%s/plots/gnuplot.log", r->dir);
    for (int k = 0; k < 2; k++) {
        FILE *f = gt_fopen_atomic(gp, 0); /* a link there is replaced, never followed */
        if (!f) return;
        /* gnuplot runs in plots/: the scripts name their files relative to
         * it (name is one of the report's own), never by the run directory */
        fprintf(f, "set terminal %s\nset termoption noenhanced\nset output '%s.png'\nset datafile missing 'NaN'\n"
                   "set key outside right top\n"
                   "set grid\n%s\nunset output\n",
                terms[k], name, body);
        if (fclose(f) != 0) return; /* the script was not renamed into place: no plot from a stale one */
        remove(png);
        /* no shell between gridtrain and gnuplot: paths and names are data */
        char plots[PATH_MAX + 64], script[128];
        snprintf(plots, sizeof plots, "%s/plots", r->dir);
        snprintf(script, sizeof script, "%s.gp", name);
        const char *argv[] = {r->gnuplot, script, NULL};
        int st = gt_run_argv(plots, argv, log);
        if (st == 0 && gt_png_valid(png, 1000)) {
            char file[128];
            snprintf(file, sizeof file, "%s.png", name);
            image(r, file, alt);
            r->n_plots++;
            return;
        }
    }
    gt_rep_para(r, "(plot %s failed: see plots/gnuplot.log)", name);
}

int gt_png_valid(const char *path, long min_bytes) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char h[16];
    size_t n = fread(h, 1, sizeof h, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return n == sizeof h && !memcmp(h, sig, 8) && !memcmp(h + 12, "IHDR", 4) && size >= min_bytes;
}
