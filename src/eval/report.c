/* eval/report.c: report.md / report.html with gnuplot plots (see report.h). */
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

/* ------------------------------------------------------------- helpers -- */

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

static cJSON *load_json(const char *dir, const char *name) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char why[160];
    char *s = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, name, NULL, why, sizeof why);
    if (!s) {
        if (errno == EFBIG) GT_WARN("%s: %s: not read", p, why);
        return NULL;
    }
    cJSON *j = cJSON_Parse(s);
    free(s);
    return j;
}

static const cJSON *jget(const cJSON *o, const char *path) { /* "a.b.c" */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = o;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cur;
}
static double jnum(const cJSON *o, const char *path) {
    const cJSON *v = jget(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
static const char *jstr(const cJSON *o, const char *path, const char *def) {
    const cJSON *v = jget(o, path);
    return cJSON_IsString(v) ? v->valuestring : def;
}

static void fmtnum(char *buf, size_t n, double v, const char *fmt) {
    if (isfinite(v)) snprintf(buf, n, fmt, v);
    else snprintf(buf, n, "n/a");
}


static int find_gnuplot(const char *want, char *out, size_t n) {
    const char *g = want && *want ? want : getenv("GT_GNUPLOT");
    if (g && *g) {
        if (strchr(g, '/')) {
            snprintf(out, n, "%s", g);
            return access(g, X_OK) == 0;
        }
    } else {
        g = "gnuplot";
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char *dup = GT_STRDUP(path);
    int found = 0;
    char *save = NULL;
    for (char *d = strtok_r(dup, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, n, "%s/%s", *d ? d : ".", g);
        found = access(out, X_OK) == 0;
    }
    free(dup);
    return found;
}

/* ------------------------------------------------------------- writers -- */

#define GT_REPORT_NAME 64 /* bytes of a name in a plot title (names are < 32) */

typedef struct rep {
    FILE *md, *html;
    const char *dir;
    char gnuplot[PATH_MAX];
    int have_gnuplot;
    int n_plots;
    char plot_note[256];
} rep;

/* Markdown gets every text through gt_esc_md, HTML through gt_esc_html:
 * names, paths and config values are data in both. */
static void heading(rep *r, int level, const char *title) {
    fprintf(r->md, "\n%.*s ", level, "######");
    gt_esc_md(r->md, title);
    fputs("\n\n", r->md);
    fprintf(r->html, "<h%d>", level);
    gt_esc_html(r->html, title);
    fprintf(r->html, "</h%d>\n", level);
}

static void para(rep *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void para(rep *r, const char *fmt, ...) {
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

/* A fenced code block: the fence is longer than any run of backticks in the
 * text, so no line of it (a config value) closes the block early. */
static void fence(FILE *f, int n) {
    for (int i = 0; i < n; i++) fputc('`', f);
    fputc('\n', f);
}
static void pre(rep *r, const char *text) {
    int run = 0, longest = 0;
    for (const char *p = text; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    const int n = longest < 3 ? 3 : longest + 1;
    fence(r->md, n);
    gt_fputs_utf8(r->md, text);
    if (text[0] && text[strlen(text) - 1] != '\n') fputc('\n', r->md);
    fence(r->md, n);
    fputc('\n', r->md);
    fputs("<pre>", r->html);
    gt_esc_html(r->html, text);
    fputs("</pre>\n", r->html);
}

#define MAXC 16
static void trow(rep *r, int header, int nc, char cells[][64]) {
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
static void tend(rep *r) {
    fputc('\n', r->md);
    fputs("</table>\n", r->html);
}

static void image(rep *r, const char *name, const char *alt) {
    fputs("![", r->md);
    gt_esc_md(r->md, alt);
    fprintf(r->md, "](plots/%s)\n\n", name);
    fprintf(r->html, "<p><img src=\"plots/%s\" alt=\"", name);
    gt_esc_html(r->html, alt);
    fputs("\"></p>\n", r->html);
}

/* Runs gnuplot on plots/<name>.gp (body after the terminal/output lines);
 * adds the image when a valid PNG came out. */
static void plot(rep *r, const char *name, const char *alt, const char *body) {
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
    para(r, "(plot %s failed: see plots/gnuplot.log)", name);
}

/* ------------------------------------------------------------ sections -- */

static void sec_config(rep *r, const cJSON *man) {
    heading(r, 2, "Configuration");
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/config.ini", r->dir);
    char why[160];
    char *cfg = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, "a config.ini", NULL, why, sizeof why);
    if (!cfg && errno == EFBIG) GT_WARN("%s: %s: not read", p, why);
    if (man)
        para(r, "gridtrain %s, model %s (%.0f parameters), %s, %.0f rank(s), host %s, CPU %s, started %s, ended %s.",
             jstr(man, "gridtrain_version", "?"), jstr(man, "model_kind", "?"), jnum(man, "n_params"),
             jstr(man, "precision", "fp32"), jnum(man, "ranks"), jstr(man, "host", "?"), jstr(man, "cpu_model", "?"),
             jstr(man, "start_time", "?"), jstr(man, "end_time", "(running)"));
    if (cfg) {
        pre(r, cfg);
        free(cfg);
    } else {
        para(r, "config.ini: not found.");
    }
}

/* data_used.csv of the training run: per household/turbine rows, filled
 * samples, windows kept and screened by reason; every item when there are
 * few, else the GT_REPORT_USAGE_ROWS with the largest screened share. */
#define GT_REPORT_USAGE_ROWS 30
typedef struct usage_row {
    long long id, rows, filled, windows, kept, gap, spike, event, filtered;
    int holdout;
} usage_row;
static int cmp_screened(const void *pa, const void *pb) {
    const usage_row *a = pa, *b = pb;
    double fa = a->windows ? (double)(a->windows - a->kept - a->filtered) / a->windows : 0;
    double fb = b->windows ? (double)(b->windows - b->kept - b->filtered) / b->windows : 0;
    return (fa < fb) - (fa > fb);
}
static void sec_data_used(rep *r) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/data_used.csv", r->dir);
    FILE *f = fopen(p, "r");
    if (!f) return;
    char line[512], item[32] = "item";
    usage_row *u = NULL;
    size_t n = 0, cap = 0;
    long long tot[6] = {0};
    if (fgets(line, sizeof line, f)) sscanf(line, "%31[a-z]_id", item);
    while (fgets(line, sizeof line, f)) {
        usage_row x;
        int fi;
        if (sscanf(line, "%lld,%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &x.id, &fi, &x.holdout, &x.rows,
                   &x.filled, &x.windows, &x.kept, &x.gap, &x.spike, &x.event, &x.filtered) != 11)
            continue;
        if (n == cap) u = realloc(u, (cap = cap ? 2 * cap : 64) * sizeof *u);
        if (!u) break;
        u[n++] = x;
        tot[0] += x.rows, tot[1] += x.filled, tot[2] += x.windows, tot[3] += x.kept, tot[4] += x.gap + x.spike + x.event;
        tot[5] += x.filtered;
    }
    fclose(f);
    if (!n) {
        free(u);
        return;
    }
    long long cand = tot[2] - tot[5];
    para(r, "Data used in training (data_used.csv): %lld rows, %lld samples filled by interpolation, %lld of %lld "
            "windows kept (%.1f%%), %lld screened.", tot[0], tot[1], tot[3], cand,
         cand > 0 ? 100.0 * (double)tot[3] / (double)cand : 100.0, tot[4]);
    if (n > GT_REPORT_USAGE_ROWS) {
        qsort(u, n, sizeof *u, cmp_screened);
        para(r, "The %d %ss that lose the most windows:", GT_REPORT_USAGE_ROWS, item);
    }
    char c[8][64] = {"", "rows", "filled", "windows", "kept", "screened gap", "spike", "event"};
    snprintf(c[0], 64, "%s", item);
    trow(r, 1, 8, c);
    for (size_t i = 0; i < n && i < GT_REPORT_USAGE_ROWS; i++) {
        snprintf(c[0], 64, "%lld%s", u[i].id, u[i].holdout ? " (held out)" : "");
        snprintf(c[1], 64, "%lld", u[i].rows);
        snprintf(c[2], 64, "%lld", u[i].filled);
        snprintf(c[3], 64, "%lld", u[i].windows);
        snprintf(c[4], 64, "%lld (%.1f%%)", u[i].kept,
                 u[i].windows - u[i].filtered > 0 ? 100.0 * (double)u[i].kept / (double)(u[i].windows - u[i].filtered) : 100.0);
        snprintf(c[5], 64, "%lld", u[i].gap);
        snprintf(c[6], 64, "%lld", u[i].spike);
        snprintf(c[7], 64, "%lld", u[i].event);
        trow(r, 0, 8, c);
    }
    tend(r);
    free(u);
}

static void sec_data(rep *r, const cJSON *ev, const cJSON *man) {
    heading(r, 2, "Data");
    const cJSON *d = jget(ev, "data");
    if (d) {
        para(r, "File %s (%s): %.0f %s, %.0f rows, read as %.0f shard(s) (one per rank, whole %s per rank).",
             jstr(d, "file", "?"), jstr(d, "kind", "?"), jnum(d, "items"),
             !strcmp(jstr(d, "kind", ""), "pdm") ? "turbines" : "households", jnum(d, "rows"), jnum(d, "ranks"),
             !strcmp(jstr(d, "kind", ""), "pdm") ? "turbines" : "households");
        const cJSON *w = jget(d, "windows");
        if (w) {
            char c[5][64] = {"split", "train", "val", "test", "holdout"};
            trow(r, 1, 5, c);
            snprintf(c[0], 64, "windows (eval stride %.0f)", jnum(d, "eval_stride"));
            const char *k[4] = {"train", "val", "test", "holdout"};
            for (int i = 0; i < 4; i++) fmtnum(c[i + 1], 64, jnum(w, k[i]), "%.0f");
            trow(r, 0, 5, c);
            tend(r);
        }
        const cJSON *sc = jget(d, "screening.coverage");
        if (sc && cJSON_IsNumber(sc))
            para(r, "Evaluation covers %.1f%% of the windows on its grid; the rest touch gaps longer than "
                    "data.fill_max_s or spikes (per household: eval.json data.usage).", 100.0 * sc->valuedouble);
    } else if (man) {
        para(r, "File %s (no eval.json yet).", jstr(man, "data.path", "?"));
    }
    sec_data_used(r);
    /* screened.csv: counts by reason */
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/screened.csv", r->dir);
    FILE *f = fopen(p, "r");
    if (!f) {
        para(r, "screened.csv: not found.");
        return;
    }
    char line[512], reasons[8][32];
    long counts[8] = {0}, total = 0;
    int nr = 0;
    while (fgets(line, sizeof line, f)) {
        char *c = strrchr(line, ',');
        if (!c) continue;
        c++;
        c[strcspn(c, "\r\n")] = 0;
        int i = 0;
        while (i < nr && strcmp(reasons[i], c)) i++;
        if (i == nr && nr < 8) snprintf(reasons[nr++], 32, "%.31s", c);
        if (i < 8) counts[i]++;
        total++;
    }
    fclose(f);
    if (!total) {
        para(r, "Screening: screened.csv lists no screened windows or spikes.");
        return;
    }
    para(r, "Screening (screened.csv, training configuration): %ld record(s) of screened windows and detected spikes:", total);
    char c[2][64] = {"reason", "records"};
    trow(r, 1, 2, c);
    for (int i = 0; i < nr; i++) {
        snprintf(c[0], 64, "%.31s", reasons[i]);
        snprintf(c[1], 64, "%ld", counts[i]);
        trow(r, 0, 2, c);
    }
    tend(r);
}

static void sec_training(rep *r, const cJSON *ev) {
    heading(r, 2, "Training");
    const cJSON *t = jget(ev, "train");
    if (t) {
        char a[8][64];
        fmtnum(a[0], 64, jnum(t, "steps"), "%.0f");
        fmtnum(a[1], 64, jnum(t, "train_time_s"), "%.1f s");
        fmtnum(a[2], 64, jnum(t, "samples_per_s"), "%.0f");
        fmtnum(a[3], 64, 100 * jnum(t, "data_stall"), "%.1f%%");
        fmtnum(a[4], 64, jnum(t, "final_loss"), "%.5g");
        fmtnum(a[5], 64, jnum(t, "best_val_loss"), "%.5g");
        fmtnum(a[6], 64, jnum(t, "cpu_hours"), "%.3f");
        fmtnum(a[7], 64, jnum(t, "ranks"), "%.0f");
        char h[8][64] = {"steps", "train time", "samples/s", "data stall", "final loss", "best val loss", "CPU hours", "ranks"};
        trow(r, 1, 8, h);
        trow(r, 0, 8, a);
        tend(r);
        const cJSON *es = jget(t, "evaluated_step"), *ec = jget(t, "evaluated_checkpoint");
        if (cJSON_IsNumber(es) && es->valuedouble >= 0 && cJSON_IsString(ec)) {
            para(r, "Evaluated parameters: step %.0f (%s).", es->valuedouble, ec->valuestring);
        }
    }
    /* loss curves from metrics.jsonl (last line per step wins after resumes) */
    char p[PATH_MAX + 64], dat[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/metrics.jsonl", r->dir);
    snprintf(dat, sizeof dat, "%s/plots/loss.dat", r->dir);
    FILE *f = fopen(p, "r");
    if (!f) {
        para(r, "metrics.jsonl: not found.");
        return;
    }
    FILE *o = gt_fopen_atomic(dat, 0);
    if (!o) {
        fclose(f);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    int n_tr = 0, n_val = 0;
    /* two passes: train points (index 0), then validation points (index 1) */
    for (int pass = 0; pass < 2; pass++) {
        rewind(f);
        fprintf(o, "# %s\n", pass ? "step val_loss" : "step loss");
        while (getline(&line, &cap, f) > 0) {
            cJSON *j = cJSON_Parse(line);
            if (!j) continue;
            const char *ty = jstr(j, "type", "");
            double step = jnum(j, "step"), v = jnum(j, pass ? "val_loss" : "loss");
            if (((pass == 0 && !strcmp(ty, "train")) || (pass == 1 && !strcmp(ty, "val"))) && isfinite(v) && v > 0) {
                fprintf(o, "%.0f %.9g\n", step, v);
                if (pass) n_val++;
                else n_tr++;
            }
            cJSON_Delete(j);
        }
        if (pass == 0) fputs("\n\n", o);
    }
    free(line);
    fclose(f);
    fclose(o);
    if (n_tr + n_val == 0) {
        para(r, "metrics.jsonl holds no loss values yet.");
        return;
    }
    char body[1024];
    snprintf(body, sizeof body,
             "set title 'training and validation loss (masked MSE, normalised units)'\nset xlabel 'step'\n"
             "set ylabel 'loss'\nset logscale y\nplot 'loss.dat' index 0 using 1:2 with lines lw 2 title 'train'%s",
             n_val ? ", '' index 1 using 1:2 with linespoints lw 2 title 'validation'" : "");
    plot(r, "loss", "loss curves", body);
}

static void sec_timing(rep *r) {
    heading(r, 2, "Timing across ranks");
    cJSON *t = load_json(r->dir, "timing.json");
    if (!t) {
        para(r, "timing.json: not found (written at the end of a training run).");
        return;
    }
    char a[4][64];
    fmtnum(a[0], 64, jnum(t, "samples_per_s"), "%.0f samples/s");
    fmtnum(a[1], 64, 100 * jnum(t, "data_stall"), "%.1f%%");
    fmtnum(a[2], 64, jnum(t, "train_time_s"), "%.1f s");
    para(r, "Throughput %s (steady state, global), data stall %s (max over ranks of time waiting for a batch / wall), "
            "training time %s over %.0f rank(s).",
         a[0], a[1], a[2], jnum(t, "ranks"));
    char h[6][64] = {"event", "min (s)", "max (s)", "mean (s)", "max/mean", "calls/rank"};
    trow(r, 1, 6, h);
    const cJSON *ev = jget(t, "events"), *e;
    cJSON_ArrayForEach(e, ev) {
        char c[6][64];
        snprintf(c[0], 64, "%s", jstr(e, "name", "?"));
        fmtnum(c[1], 64, jnum(e, "min_s"), "%.3f");
        fmtnum(c[2], 64, jnum(e, "max_s"), "%.3f");
        fmtnum(c[3], 64, jnum(e, "mean_s"), "%.3f");
        fmtnum(c[4], 64, jnum(e, "max_over_mean"), "%.2f");
        fmtnum(c[5], 64, jnum(e, "calls_per_rank"), "%.0f");
        trow(r, 0, 6, c);
    }
    tend(r);
    cJSON_Delete(t);
}

/* An appliance of eval.json's list with rows evaluated: one the run did not
 * train (data.appliances) or without a true value anywhere has 0 samples (an
 * eval.json without the count: every appliance). */
static int nilm_evaluated(const cJSON *e) { return !(jnum(e, "samples") == 0); }

static void nilm_table(rep *r, const cJSON *split, const char *title) {
    heading(r, 3, title);
    if (!split || cJSON_IsNull(split)) {
        para(r, "No windows in this split (none held out: data.holdout_every = 0, or too short).");
        return;
    }
    const cJSON *ov = jget(split, "overall");
    char a[6][64];
    fmtnum(a[0], 64, jnum(ov, "ea"), "%.4f");
    fmtnum(a[1], 64, jnum(ov, "f1"), "%.4f");
    fmtnum(a[2], 64, jnum(ov, "mae_w"), "%.1f W");
    fmtnum(a[3], 64, jnum(ov, "f1_macro"), "%.4f");
    para(r, "Overall over %.0f windows: EA %s, F1 (micro) %s, F1 (macro) %s, MAE %s; %.0f of %.0f appliances with F1 >= 0.8.",
         jnum(split, "windows"), a[0], a[1], a[3], a[2], jnum(ov, "appliances_f1_ge_0_8"),
         jnum(ov, "appliances_f1_defined"));
    char h[10][64] = {"appliance", "MAE (W)", "SAE", "NDE", "precision", "recall", "F1", "EA", "true kWh", "pred kWh"};
    trow(r, 1, 10, h);
    const cJSON *arr = jget(split, "appliances"), *e;
    char skipped[2048] = "";
    cJSON_ArrayForEach(e, arr) {
        char c[10][64];
        if (!nilm_evaluated(e)) {
            size_t n = strlen(skipped);
            snprintf(skipped + n, sizeof skipped - n, "%s%s", n ? ", " : "", jstr(e, "name", "?"));
            continue;
        }
        snprintf(c[0], 64, "%s", jstr(e, "name", "?"));
        fmtnum(c[1], 64, jnum(e, "mae_w"), "%.1f");
        fmtnum(c[2], 64, jnum(e, "sae"), "%.3f");
        fmtnum(c[3], 64, jnum(e, "nde"), "%.3f");
        fmtnum(c[4], 64, jnum(e, "precision"), "%.3f");
        fmtnum(c[5], 64, jnum(e, "recall"), "%.3f");
        fmtnum(c[6], 64, jnum(e, "f1"), "%.3f");
        fmtnum(c[7], 64, jnum(e, "ea"), "%.3f");
        fmtnum(c[8], 64, jnum(e, "energy_true_wh") / 1000, "%.2f");
        fmtnum(c[9], 64, jnum(e, "energy_pred_wh") / 1000, "%.2f");
        trow(r, 0, 10, c);
    }
    snprintf(h[0], 64, "overall");
    fmtnum(h[1], 64, jnum(ov, "mae_w"), "%.1f");
    fmtnum(h[2], 64, jnum(ov, "sae"), "%.3f");
    fmtnum(h[3], 64, jnum(ov, "nde"), "%.3f");
    fmtnum(h[4], 64, jnum(ov, "precision"), "%.3f");
    fmtnum(h[5], 64, jnum(ov, "recall"), "%.3f");
    fmtnum(h[6], 64, jnum(ov, "f1"), "%.3f");
    fmtnum(h[7], 64, jnum(ov, "ea"), "%.3f");
    fmtnum(h[8], 64, jnum(ov, "energy_true_wh") / 1000, "%.2f");
    fmtnum(h[9], 64, jnum(ov, "energy_pred_wh") / 1000, "%.2f");
    trow(r, 0, 10, h);
    tend(r);
    if (skipped[0])
        para(r, "Not evaluated (not among the appliances the run trained, data.appliances, or no true value in "
                "this split): %s.", skipped);
}

static void sec_nilm(rep *r, const cJSON *ev) {
    heading(r, 2, "Disaggregation results");
    para(r, "Per appliance on the later time of the training households (test) and on held-out households. "
            "EA = 1 - sum|yhat - y| / (2 sum y); F1 of the on/off state (on = above the appliance's on-power). "
            "n/a = undefined (no true energy or never on). Definitions: docs/evaluation.md.");
    const cJSON *test = jget(ev, "nilm.test"), *hold = jget(ev, "nilm.holdout");
    const cJSON *models = jget(ev, "data.models");
    if (cJSON_GetArraySize(models) > 1) { /* eval.models: an ensemble */
        char txt[4096] = "";
        size_t len = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, models) {
            if (len < sizeof txt)
                len += (size_t)snprintf(txt + len, sizeof txt - len, "%s%s%s%s%s", len ? ", " : "", jstr(e, "name", "?"),
                                        jget(e, "appliances") ? " (" : "", jstr(e, "appliances", ""),
                                        jget(e, "appliances") ? ")" : "");
        }
        para(r, "Ensemble of %d models (eval.models), outputs averaged per appliance over the members trained on it "
                "(power in W, gated head: on-probability): %s.",
             cJSON_GetArraySize(models), txt);
    }
    const int cal_filter = cJSON_IsTrue(jget(ev, "eval_config.nilm_calibrate_filter"));
    if (!cal_filter && (jnum(ev, "eval_config.nilm_fill_s") > 0 || jnum(ev, "eval_config.nilm_min_on_s") > 0))
        para(r, "States filtered (eval.fill_s, eval.min_on_s): off gaps up to %g s closed, on runs shorter than "
                "%g s removed, every appliance.", jnum(ev, "eval_config.nilm_fill_s"), jnum(ev, "eval_config.nilm_min_on_s"));
    if (cal_filter && test && !cJSON_IsNull(test)) {
        char txt[4096] = "";
        size_t len = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, jget(test, "appliances")) {
            if (len < sizeof txt)
                len += (size_t)snprintf(txt + len, sizeof txt - len, "%s%s %.0f s / %.0f s", len ? ", " : "",
                                        jstr(e, "name", "?"), jnum(e, "fill_s"), jnum(e, "min_on_s"));
        }
        para(r, "States filtered (eval.calibrate_filter): off gaps up to the first duration closed, on runs "
                "shorter than the second removed, durations chosen on the validation split: %s.", txt);
    }
    nilm_table(r, test, "Test split (held-out time)");
    nilm_table(r, hold, "Held-out households");
    /* F1 / EA bars */
    if (test && !cJSON_IsNull(test)) {
        char dat[PATH_MAX + 64];
        snprintf(dat, sizeof dat, "%s/plots/nilm_f1_ea.dat", r->dir);
        FILE *o = gt_fopen_atomic(dat, 0);
        if (o) {
            /* numbers only in the data file; the names are the xtics of the
             * script, as gnuplot single-quoted strings */
            const cJSON *e;
            const cJSON *apps = jget(test, "appliances");
            size_t cap = 1024 + (size_t)cJSON_GetArraySize(apps) * (2 * GT_REPORT_NAME + 16);
            char *body = GT_MALLOC(cap), q[2 * GT_REPORT_NAME];
            size_t len = (size_t)snprintf(body, cap,
                                          "set title 'per-appliance F1 and EA (test split)'\nset style data histograms\n"
                                          "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                                          "set yrange [-1:1.05]\nset ytics 0.1\nset xtics rotate by -45 (");
            int i = 0;
            fputs("# index f1 ea (names: the xtics of nilm_f1_ea.gp)\n", o);
            cJSON_ArrayForEach(e, apps) {
                if (!nilm_evaluated(e)) continue; /* no bars and no name for it */
                double f1 = jnum(e, "f1"), ea = jnum(e, "ea");
                fprintf(o, "%d ", i);
                if (isfinite(f1)) fprintf(o, "%.4f ", f1);
                else fputs("NaN ", o);
                if (isfinite(ea)) fprintf(o, "%.4f\n", ea);
                else fputs("NaN\n", o);
                gt_esc_gnuplot(q, sizeof q, jstr(e, "name", "?"));
                int w = snprintf(body + len, cap - len, "%s'%s' %d", i ? ", " : "", q, i);
                len = w > 0 && len + (size_t)w < cap ? len + (size_t)w : cap - 1;
                i++;
            }
            fclose(o);
            snprintf(body + len, cap - len,
                     ")\nplot 'nilm_f1_ea.dat' using 2 title 'F1', '' using 3 title 'EA', 0.8 with lines dt 2 lc rgb "
                     "'black' title 'F1 target 0.8'");
            plot(r, "nilm_f1_ea", "per-appliance F1 and EA", body);
            free(body);
        }
    }
    /* sample day */
    char csv[PATH_MAX + 64];
    snprintf(csv, sizeof csv, "%s/eval_sample.csv", r->dir);
    FILE *f = fopen(csv, "r");
    if (!f) return;
    char hdr[8192];
    if (!fgets(hdr, sizeof hdr, f)) {
        fclose(f);
        return;
    }
    /* columns: 1 time, 2 aggregate, then true_a pred_a pairs: pick the 3 largest true energies among the
     * appliances this household uses in the sample (an appliance it does not own, or one not evaluated:
     * data.appliances, NaN, has none) */
    double sums[64] = {0}, last_h = 0;
    int ncol = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        char *s = line, *end;
        int c = 0;
        for (;;) {
            double v = strtod(s, &end);
            if (end == s) break;
            if (c == 0 && isfinite(v)) last_h = v;
            if (c >= 2 && (c - 2) % 2 == 0 && (c - 2) / 2 < 64 && isfinite(v)) sums[(c - 2) / 2] += v;
            c++;
            s = end;
        }
        if (c > ncol) ncol = c;
    }
    fclose(f);
    int A = (ncol - 2) / 2, top[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < A && a < 64; a++) {
            if (a == top[0] || a == top[1] || !(sums[a] > 0)) continue;
            if (top[k] < 0 || sums[a] > sums[top[k]]) top[k] = a;
        }
    /* which household and hours: "# household id I (file index N) from ISO; columns: ..." and the last time_h */
    long long hid = -1;
    int file_index = -1;
    char from[32] = "";
    if (sscanf(hdr, "# household id %lld (file index %d) from %31[0-9T:Z-]", &hid, &file_index, from) < 1) hid = -1;
    double span_h = last_h;
    /* names from the header: "# ... time_h aggregate_w true_x pred_x ..." */
    char names[64][48];
    int nn = 0;
    char *save = NULL;
    for (char *tok = strtok_r(hdr, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
        if (!strncmp(tok, "true_", 5) && nn < 64) gt_esc_gnuplot(names[nn++], sizeof names[0], tok + 5);
    char what[160];
    if (span_h >= 23.5)
        snprintf(what, sizeof what, "one day");
    else
        snprintf(what, sizeof what, "%.1f h (the whole test split of this household)", span_h);
    char body[4 * PATH_MAX + 2048];
    int len = snprintf(body, sizeof body,
                       "set title '%s of test household %lld%s%s: true (shaded) vs predicted (line)'\n"
                       "set xlabel 'hours from the start of the sample'\nset ylabel 'W'\nset style fill transparent solid 0.3 noborder\n"
                       "plot '../eval_sample.csv' using 1:2 with lines lc rgb '#bbbbbb' title 'aggregate'",
                       what, hid, *from ? ", from " : "", from);
    const char *col[3] = {"#1f77b4", "#d62728", "#2ca02c"};
    for (int k = 0; k < 3; k++) {
        if (top[k] < 0 || top[k] >= nn) continue;
        len += snprintf(body + len, sizeof body - (size_t)len,
                        ", '' using 1:%d with filledcurves y1=0 lc rgb '%s' title '%s true', '' using 1:%d with lines lw 2 "
                        "lc rgb '%s' title '%s predicted'",
                        3 + 2 * top[k], col[k], names[top[k]], 4 + 2 * top[k], col[k], names[top[k]]);
    }
    plot(r, "nilm_sample", "predicted vs true power of one test household", body);
}

static void pdm_group_table(rep *r, const cJSON *obj, const char *title, const char *keyname) {
    heading(r, 3, title);
    char h[9][64] = {"", "events", "detected", "recall", "false alarms / turbine-day", "delay (s)", "point F0.5",
                     "CARE", "turbine-days"};
    snprintf(h[0], 64, "%s", keyname);
    trow(r, 1, 9, h);
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        char c[9][64];
        if (cJSON_IsNumber(jget(e, "id"))) snprintf(c[0], 64, "%.0f%s", jnum(e, "id"), cJSON_IsTrue(jget(e, "holdout")) ? " (held out)" : "");
        else snprintf(c[0], 64, "%s", e->string ? e->string : "?");
        fmtnum(c[1], 64, jnum(e, "n_events"), "%.0f");
        fmtnum(c[2], 64, jnum(e, "n_detected"), "%.0f");
        fmtnum(c[3], 64, jnum(e, "recall"), "%.3f");
        fmtnum(c[4], 64, jnum(e, "false_alarms_per_turbine_day"), "%.2f");
        fmtnum(c[5], 64, jnum(e, "detection_delay_s_mean"), "%.1f");
        fmtnum(c[6], 64, jnum(e, "point_f05"), "%.3f");
        fmtnum(c[7], 64, jnum(e, "care_score"), "%.3f");
        fmtnum(c[8], 64, jnum(e, "turbine_days"), "%.2f");
        trow(r, 0, 9, c);
    }
    tend(r);
}

static void sec_pdm(rep *r, const cJSON *ev) {
    heading(r, 2, "Anomaly detection results");
    const cJSON *p = jget(ev, "pdm");
    if (!p || cJSON_IsNull(p)) return;
    char a[10][64];
    fmtnum(a[0], 64, jnum(p, "threshold"), "%.5g");
    fmtnum(a[1], 64, jnum(p, "calibration.quantile"), "%g");
    fmtnum(a[2], 64, jnum(p, "calibration.margin"), "%g");
    fmtnum(a[3], 64, jnum(p, "calibration.val_false_alarms_per_turbine_day"), "%g");
    fmtnum(a[4], 64, jnum(p, "calibration.quantile_value"), "%.5g");
    para(r, "Evaluation rows: the test split of the training turbines and all rows of held-out turbines. Threshold %s: "
            "%s x the %s quantile (%s) of the smoothed scores of the calibration rows (%s split, normal operation, "
            "training turbines), raised if needed until those rows raise at most %s alarms per turbine-day.",
         a[0], a[2], a[1], a[4], jstr(p, "calibration.rows", "val"), a[3]);
    fmtnum(a[0], 64, jnum(p, "event.recall"), "%.3f");
    fmtnum(a[1], 64, jnum(p, "event.false_alarms_per_turbine_day"), "%.2f");
    fmtnum(a[2], 64, jnum(p, "event.detection_delay_s_mean"), "%.1f s");
    fmtnum(a[3], 64, jnum(p, "point.precision"), "%.3f");
    fmtnum(a[4], 64, jnum(p, "point.recall"), "%.3f");
    fmtnum(a[5], 64, jnum(p, "point.f05"), "%.3f");
    fmtnum(a[6], 64, jnum(p, "care_score"), "%.3f");
    fmtnum(a[7], 64, jnum(p, "event.precision"), "%.3f");
    para(r, "Events: %.0f of %.0f detected (recall %s), alarm precision %s, %s false alarms per turbine-day over %.2f "
            "turbine-days, mean detection delay %s. Per step: precision %s, recall %s, F0.5 %s. CARE score %s.",
         jnum(p, "event.n_detected"), jnum(p, "event.n_events"), a[0], a[7], a[1], jnum(p, "event.turbine_days"), a[2],
         a[3], a[4], a[5], a[6]);
    if (jnum(p, "event.n_anomaly_events") < jnum(p, "event.n_events")) { /* status periods among the events */
        char ar[64];
        fmtnum(ar, 64, jnum(p, "event.anomaly_recall"), "%.3f");
        para(r, "Of the events, %.0f are anomaly events and %.0f operating-status periods (derated, service, "
                "downtime: /legend/event_kind status_*): anomaly events %.0f of %.0f detected (recall %s).",
             jnum(p, "event.n_anomaly_events"), jnum(p, "event.n_events") - jnum(p, "event.n_anomaly_events"),
             jnum(p, "event.n_anomaly_detected"), jnum(p, "event.n_anomaly_events"), ar);
    }
    pdm_group_table(r, jget(p, "by_turbine"), "Per turbine", "turbine");
    pdm_group_table(r, jget(p, "by_machine_type"), "Per machine type", "machine type");
    pdm_group_table(r, jget(p, "by_condition"), "Per operating condition", "condition");
    char csv[PATH_MAX + 64];
    snprintf(csv, sizeof csv, "%s/eval_scores.csv", r->dir);
    if (access(csv, R_OK) == 0 && isfinite(jnum(p, "threshold"))) {
        char body[1024];
        snprintf(body, sizeof body,
                 "set title 'anomaly score of one evaluation turbine (shaded: labelled events)'\nset xlabel 'hours'\n"
                 "set ylabel 'score'\nset logscale y\nthr = %.9g\nstats '../eval_scores.csv' using 2 nooutput\nymax = STATS_max * 2\n"
                 "set style fill transparent solid 0.3 noborder\n"
                 "plot '../eval_scores.csv' using 1:($3 > 0 ? ymax : 1/0) with impulses lc rgb '#ff9999' title 'event', "
                 "'' using 1:2 with lines lc rgb '#1f77b4' title 'score', thr with lines lw 2 dt 2 lc rgb 'black' title 'threshold'",
                 jnum(p, "threshold"));
        plot(r, "pdm_scores", "anomaly score with threshold and events", body);
    }
}

/* ---------------------------------------------------------------- main -- */

/* GPU runs with NVML telemetry (nn/telemetry.h): the manifest's per-rank
 * summary and the utilisation of each rank's GPU over time (metrics.jsonl
 * "gpu" rows). */
static void sec_gpu(rep *r, const cJSON *man) {
    const cJSON *g = man ? jget(man, "gpu_telemetry") : NULL;
    if (!cJSON_IsArray(g)) return;
    heading(r, 2, "GPU telemetry");
    para(r, "Per rank's GPU over the run (NVML, sampled every train.gpu_telemetry_s): utilisation, peak memory, "
            "temperature, power, SM clock, the share of samples with a clock throttle reason that slows the GPU "
            "(power cap, thermal or hardware slowdown), new uncorrected ECC errors and Xid events.");
    char h[10][64] = {"rank", "samples", "busy % (min)", "memory GiB", "max C", "W (max)", "SM MHz (min)",
                      "throttled", "ECC new", "Xid"};
    trow(r, 1, 10, h);
    const cJSON *e;
    cJSON_ArrayForEach(e, g) {
        char c[10][64];
        fmtnum(c[0], 64, jnum(e, "rank"), "%.0f");
        fmtnum(c[1], 64, jnum(e, "samples"), "%.0f");
        snprintf(c[2], 64, "%.0f (%.0f)", jnum(e, "util_pct"), jnum(e, "util_min_pct"));
        snprintf(c[3], 64, "%.1f of %.1f", jnum(e, "mem_used_bytes") / 1073741824.0,
                 jnum(e, "mem_total_bytes") / 1073741824.0);
        fmtnum(c[4], 64, jnum(e, "temp_max_c"), "%.0f");
        snprintf(c[5], 64, "%.0f (%.0f)", jnum(e, "power_w"), jnum(e, "power_max_w"));
        snprintf(c[6], 64, "%.0f (%.0f)", jnum(e, "sm_clock_mhz"), jnum(e, "sm_clock_min_mhz"));
        snprintf(c[7], 64, "%.0f%%", 100 * jnum(e, "throttled_frac"));
        fmtnum(c[8], 64, jnum(e, "ecc_uncorrected_new"), "%.0f");
        fmtnum(c[9], 64, jnum(e, "xid_events"), "%.0f");
        trow(r, 0, 10, c);
    }
    tend(r);
    /* utilisation over time, one series per rank */
    char p[PATH_MAX + 64], dat[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/metrics.jsonl", r->dir);
    snprintf(dat, sizeof dat, "%s/plots/gpu.dat", r->dir);
    FILE *f = fopen(p, "r"), *o = f ? gt_fopen_atomic(dat, 0) : NULL;
    int ranks = cJSON_GetArraySize(g), n = 0;
    char *line = NULL;
    size_t cap = 0;
    for (int rk = 0; o && rk < ranks; rk++) { /* one gnuplot index per rank */
        rewind(f);
        fprintf(o, "# rank %d: time_s util_pct\n", rk);
        while (getline(&line, &cap, f) > 0) {
            cJSON *j = cJSON_Parse(line);
            if (j && !strcmp(jstr(j, "type", ""), "gpu") && jnum(j, "rank") == rk && isfinite(jnum(j, "util_pct"))) {
                fprintf(o, "%.3f %.3f\n", jnum(j, "time_s"), jnum(j, "util_pct"));
                n++;
            }
            cJSON_Delete(j);
        }
        fputs("\n\n", o);
    }
    free(line);
    if (o) fclose(o);
    if (f) fclose(f);
    if (n == 0) return;
    char body[512];
    snprintf(body, sizeof body,
             "set title 'GPU utilisation per rank'\nset xlabel 'training time (s)'\nset ylabel 'busy %%'\n"
             "set yrange [0:105]\nplot for [i=0:%d] 'gpu.dat' index i using 1:2 with lines lw 2 title sprintf('rank %%d', i)",
             ranks - 1);
    plot(r, "gpu", "GPU utilisation per rank", body);
}

/* A new unique temporary next to path (gt_tmp_open: O_EXCL, never a link) as
 * a stream; NULL with tmp[] empty when it cannot be created. */
static FILE *fopen_tmp(const char *path, char *tmp, size_t tmp_bytes) {
    int fd = gt_tmp_open(path, tmp, tmp_bytes);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd < 0) tmp[0] = 0;
    else if (!f) close(fd);
    return f;
}

int gt_report_write(const char *run_dir, const char *gnuplot) {
    rep r;
    memset(&r, 0, sizeof r);
    r.dir = run_dir;
    char p[PATH_MAX + 64], ph[PATH_MAX + 64], pt[PATH_MAX + 64], pht[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/plots", run_dir);
    if (gt_mkdir_out(p) != 0) { /* plots/ a symbolic link: refused, never followed */
        GT_WARN("report: cannot write into %s: %s", p, gt_out_strerror(errno));
        return -1;
    }
    snprintf(p, sizeof p, "%s/plots/gnuplot.log", run_dir);
    struct stat lst; /* appended with O_NOFOLLOW (gt_run_argv): a link there is removed, not followed */
    if (lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode)) unlink(p);
    r.have_gnuplot = find_gnuplot(gnuplot, r.gnuplot, sizeof r.gnuplot);
    char abs[PATH_MAX]; /* gnuplot runs in plots/: a relative path of it would not be found there */
    if (r.have_gnuplot && r.gnuplot[0] != '/' && realpath(r.gnuplot, abs)) snprintf(r.gnuplot, sizeof r.gnuplot, "%s", abs);
    snprintf(p, sizeof p, "%s/report.md", run_dir);
    snprintf(ph, sizeof ph, "%s/report.html", run_dir);
    /* new unique temporaries: two evaluations of one run never share one */
    pt[0] = pht[0] = 0;
    r.md = fopen_tmp(p, pt, sizeof pt);
    r.html = fopen_tmp(ph, pht, sizeof pht);
    if (!r.md || !r.html) {
        if (r.md) fclose(r.md);
        if (r.html) fclose(r.html);
        if (pt[0]) unlink(pt);
        if (pht[0]) unlink(pht);
        GT_WARN("report: cannot write %s: %s", p, strerror(errno));
        return -1;
    }
    cJSON *man = load_json(run_dir, "manifest.json"), *ev = load_json(run_dir, "eval.json");
    char title[PATH_MAX + 64];
    snprintf(title, sizeof title, "gridtrain run report: %s", run_dir);
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", r.html);
    gt_esc_html(r.html, title);
    fputs("</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}"
          "pre{background:#f6f6f6;padding:6px}img{max-width:100%}</style></head><body>\n",
          r.html);
    fprintf(r.md, "# %s\n", title);
    fputs("<h1>", r.html);
    gt_esc_html(r.html, title);
    fputs("</h1>\n", r.html);
    char now[64];
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    para(&r, "Written %s by gridtrain (eval/report.c) from the files of the run directory.%s", now,
         r.have_gnuplot ? "" : " gnuplot was not found (install gnuplot-nox or set GT_GNUPLOT): no plots.");
    if (ev) {
        para(&r, "Task %s, model %s, evaluated on %s.", jstr(ev, "task", "?"), jstr(ev, "model", "?"),
             jstr(ev, "data_file", "?"));
    } else {
        para(&r, "eval.json: not found (run 'gridtrain eval %s').", run_dir);
    }
    sec_config(&r, man);
    sec_data(&r, ev, man);
    sec_training(&r, ev);
    sec_timing(&r);
    sec_gpu(&r, man);
    if (ev && !strcmp(jstr(ev, "task", ""), "nilm")) sec_nilm(&r, ev);
    if (ev && !strcmp(jstr(ev, "task", ""), "pdm")) sec_pdm(&r, ev);
    fputs("</body></html>\n", r.html);
    int bad = fclose(r.md) != 0;
    bad |= fclose(r.html) != 0;
    bad |= rename(pt, p) != 0;
    bad |= rename(pht, ph) != 0;
    cJSON_Delete(man);
    cJSON_Delete(ev);
    if (bad) {
        unlink(pt), unlink(pht); /* the previous report stays */
        GT_WARN("report: cannot write %s", p);
        return -1;
    }
    return r.n_plots;
}
