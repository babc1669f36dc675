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
#include "eval/eval_task.h"
#include "eval/report_section.h"

/* ------------------------------------------------------------- helpers -- */

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

/* A fenced code block: the fence is longer than any run of backticks in the
 * text, so no line of it (a config value) closes the block early. */
static void fence(FILE *f, int n) {
    for (int i = 0; i < n; i++) fputc('`', f);
    fputc('\n', f);
}
static void rep_pre(gt_rep *r, const char *text) {
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


/* ------------------------------------------------------------ sections -- */

static void sec_config(gt_rep *r, const cJSON *man) {
    gt_rep_heading(r, 2, "Configuration");
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/config.ini", r->dir);
    char why[160];
    char *cfg = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, "a config.ini", NULL, why, sizeof why);
    if (!cfg && errno == EFBIG) GT_WARN("%s: %s: not read", p, why);
    if (man)
        gt_rep_para(
            r, "gridtrain %s, model %s (%.0f parameters), %s, %.0f rank(s), host %s, CPU %s, started %s, ended %s.",
            gt_rep_jstr(man, "gridtrain_version", "?"), gt_rep_jstr(man, "model_kind", "?"),
            gt_rep_jnum(man, "n_params"), gt_rep_jstr(man, "precision", "fp32"), gt_rep_jnum(man, "ranks"),
            gt_rep_jstr(man, "host", "?"), gt_rep_jstr(man, "cpu_model", "?"), gt_rep_jstr(man, "start_time", "?"),
            gt_rep_jstr(man, "end_time", "(running)"));
    if (cfg) {
        rep_pre(r, cfg);
        free(cfg);
    } else {
        gt_rep_para(r, "config.ini: not found.");
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
static void sec_data_used(gt_rep *r) {
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
    gt_rep_para(r,
                "Data used in training (data_used.csv): %lld rows, %lld samples filled by interpolation, %lld of %lld "
                "windows kept (%.1f%%), %lld screened.",
                tot[0], tot[1], tot[3], cand, cand > 0 ? 100.0 * (double)tot[3] / (double)cand : 100.0, tot[4]);
    if (n > GT_REPORT_USAGE_ROWS) {
        qsort(u, n, sizeof *u, cmp_screened);
        gt_rep_para(r, "The %d %ss that lose the most windows:", GT_REPORT_USAGE_ROWS, item);
    }
    char c[8][64] = {"", "rows", "filled", "windows", "kept", "screened gap", "spike", "event"};
    snprintf(c[0], 64, "%s", item);
    gt_rep_row(r, 1, 8, c);
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
        gt_rep_row(r, 0, 8, c);
    }
    gt_rep_end(r);
    free(u);
}

static void sec_data(gt_rep *r, const cJSON *ev, const cJSON *man) {
    gt_rep_heading(r, 2, "Data");
    const cJSON *d = gt_rep_jget(ev, "data");
    if (d) {
        const gt_eval_task_i *t = gt_eval_task_by_name(gt_rep_jstr(d, "kind", ""));
        const char *items = t ? t->items : "items";
        gt_rep_para(r, "File %s (%s): %.0f %s, %.0f rows, read as %.0f shard(s) (one per rank, whole %s per rank).",
                    gt_rep_jstr(d, "file", "?"), gt_rep_jstr(d, "kind", "?"), gt_rep_jnum(d, "items"), items,
                    gt_rep_jnum(d, "rows"), gt_rep_jnum(d, "ranks"), items);
        const cJSON *w = gt_rep_jget(d, "windows");
        if (w) {
            char c[5][64] = {"split", "train", "val", "test", "holdout"};
            gt_rep_row(r, 1, 5, c);
            snprintf(c[0], 64, "windows (eval stride %.0f)", gt_rep_jnum(d, "eval_stride"));
            const char *k[4] = {"train", "val", "test", "holdout"};
            for (int i = 0; i < 4; i++) gt_rep_fmtnum(c[i + 1], 64, gt_rep_jnum(w, k[i]), "%.0f");
            gt_rep_row(r, 0, 5, c);
            gt_rep_end(r);
        }
        const cJSON *sc = gt_rep_jget(d, "screening.coverage");
        if (sc && cJSON_IsNumber(sc))
            gt_rep_para(r,
                        "Evaluation covers %.1f%% of the windows on its grid; the rest touch gaps longer than "
                        "data.fill_max_s or spikes (per household: eval.json data.usage).",
                        100.0 * sc->valuedouble);
    } else if (man) {
        gt_rep_para(r, "File %s (no eval.json yet).", gt_rep_jstr(man, "data.path", "?"));
    }
    sec_data_used(r);
    /* screened.csv: counts by reason */
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/screened.csv", r->dir);
    FILE *f = fopen(p, "r");
    if (!f) {
        gt_rep_para(r, "screened.csv: not found.");
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
        gt_rep_para(r, "Screening: screened.csv lists no screened windows or spikes.");
        return;
    }
    gt_rep_para(
        r, "Screening (screened.csv, training configuration): %ld record(s) of screened windows and detected spikes:",
        total);
    char c[2][64] = {"reason", "records"};
    gt_rep_row(r, 1, 2, c);
    for (int i = 0; i < nr; i++) {
        snprintf(c[0], 64, "%.31s", reasons[i]);
        snprintf(c[1], 64, "%ld", counts[i]);
        gt_rep_row(r, 0, 2, c);
    }
    gt_rep_end(r);
}

static void sec_training(gt_rep *r, const cJSON *ev) {
    gt_rep_heading(r, 2, "Training");
    const cJSON *t = gt_rep_jget(ev, "train");
    if (t) {
        char a[8][64];
        gt_rep_fmtnum(a[0], 64, gt_rep_jnum(t, "steps"), "%.0f");
        gt_rep_fmtnum(a[1], 64, gt_rep_jnum(t, "train_time_s"), "%.1f s");
        gt_rep_fmtnum(a[2], 64, gt_rep_jnum(t, "samples_per_s"), "%.0f");
        gt_rep_fmtnum(a[3], 64, 100 * gt_rep_jnum(t, "data_stall"), "%.1f%%");
        gt_rep_fmtnum(a[4], 64, gt_rep_jnum(t, "final_loss"), "%.5g");
        gt_rep_fmtnum(a[5], 64, gt_rep_jnum(t, "best_val_loss"), "%.5g");
        gt_rep_fmtnum(a[6], 64, gt_rep_jnum(t, "cpu_hours"), "%.3f");
        gt_rep_fmtnum(a[7], 64, gt_rep_jnum(t, "ranks"), "%.0f");
        char h[8][64] = {"steps", "train time", "samples/s", "data stall", "final loss", "best val loss", "CPU hours", "ranks"};
        gt_rep_row(r, 1, 8, h);
        gt_rep_row(r, 0, 8, a);
        gt_rep_end(r);
        const cJSON *es = gt_rep_jget(t, "evaluated_step"), *ec = gt_rep_jget(t, "evaluated_checkpoint");
        if (cJSON_IsNumber(es) && es->valuedouble >= 0 && cJSON_IsString(ec)) {
            gt_rep_para(r, "Evaluated parameters: step %.0f (%s).", es->valuedouble, ec->valuestring);
        }
    }
    /* loss curves from metrics.jsonl (last line per step wins after resumes) */
    char p[PATH_MAX + 64], dat[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/metrics.jsonl", r->dir);
    snprintf(dat, sizeof dat, "%s/plots/loss.dat", r->dir);
    FILE *f = fopen(p, "r");
    if (!f) {
        gt_rep_para(r, "metrics.jsonl: not found.");
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
        long long ln = 0;
        while (gt_jsonl_getline(&line, &cap, f, p, &ln) > 0) {
            cJSON *j = cJSON_Parse(line);
            if (!j) continue;
            const char *ty = gt_rep_jstr(j, "type", "");
            double step = gt_rep_jnum(j, "step"), v = gt_rep_jnum(j, pass ? "val_loss" : "loss");
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
        gt_rep_para(r, "metrics.jsonl holds no loss values yet.");
        return;
    }
    char body[1024];
    snprintf(body, sizeof body,
             "set title 'training and validation loss (masked MSE, normalised units)'\nset xlabel 'step'\n"
             "set ylabel 'loss'\nset logscale y\nplot 'loss.dat' index 0 using 1:2 with lines lw 2 title 'train'%s",
             n_val ? ", '' index 1 using 1:2 with linespoints lw 2 title 'validation'" : "");
    gt_rep_plot(r, "loss", "loss curves", body);
}

static void sec_timing(gt_rep *r) {
    gt_rep_heading(r, 2, "Timing across ranks");
    cJSON *t = load_json(r->dir, "timing.json");
    if (!t) {
        gt_rep_para(r, "timing.json: not found (written at the end of a training run).");
        return;
    }
    char a[4][64];
    gt_rep_fmtnum(a[0], 64, gt_rep_jnum(t, "samples_per_s"), "%.0f samples/s");
    gt_rep_fmtnum(a[1], 64, 100 * gt_rep_jnum(t, "data_stall"), "%.1f%%");
    gt_rep_fmtnum(a[2], 64, gt_rep_jnum(t, "train_time_s"), "%.1f s");
    gt_rep_para(
        r,
        "Throughput %s (steady state, global), data stall %s (max over ranks of time waiting for a batch / wall), "
        "training time %s over %.0f rank(s).",
        a[0], a[1], a[2], gt_rep_jnum(t, "ranks"));
    char h[6][64] = {"event", "min (s)", "max (s)", "mean (s)", "max/mean", "calls/rank"};
    gt_rep_row(r, 1, 6, h);
    const cJSON *ev = gt_rep_jget(t, "events"), *e;
    cJSON_ArrayForEach(e, ev) {
        char c[6][64];
        snprintf(c[0], 64, "%s", gt_rep_jstr(e, "name", "?"));
        gt_rep_fmtnum(c[1], 64, gt_rep_jnum(e, "min_s"), "%.3f");
        gt_rep_fmtnum(c[2], 64, gt_rep_jnum(e, "max_s"), "%.3f");
        gt_rep_fmtnum(c[3], 64, gt_rep_jnum(e, "mean_s"), "%.3f");
        gt_rep_fmtnum(c[4], 64, gt_rep_jnum(e, "max_over_mean"), "%.2f");
        gt_rep_fmtnum(c[5], 64, gt_rep_jnum(e, "calls_per_rank"), "%.0f");
        gt_rep_row(r, 0, 6, c);
    }
    gt_rep_end(r);
    cJSON_Delete(t);
}

/* ---------------------------------------------------------------- main -- */

/* GPU runs with NVML telemetry (nn/telemetry.h): the manifest's per-rank
 * summary and the utilisation of each rank's GPU over time (metrics.jsonl
 * "gpu" rows). */
static void sec_gpu(gt_rep *r, const cJSON *man) {
    const cJSON *g = man ? gt_rep_jget(man, "gpu_telemetry") : NULL;
    if (!cJSON_IsArray(g)) return;
    gt_rep_heading(r, 2, "GPU telemetry");
    gt_rep_para(r, "Per rank's GPU over the run (NVML, sampled every train.gpu_telemetry_s): utilisation, peak memory, "
                   "temperature, power, SM clock, the share of samples with a clock throttle reason that slows the GPU "
                   "(power cap, thermal or hardware slowdown), new uncorrected ECC errors and Xid events.");
    char h[10][64] = {"rank", "samples", "busy % (min)", "memory GiB", "max C", "W (max)", "SM MHz (min)",
                      "throttled", "ECC new", "Xid"};
    gt_rep_row(r, 1, 10, h);
    const cJSON *e;
    cJSON_ArrayForEach(e, g) {
        char c[10][64];
        gt_rep_fmtnum(c[0], 64, gt_rep_jnum(e, "rank"), "%.0f");
        gt_rep_fmtnum(c[1], 64, gt_rep_jnum(e, "samples"), "%.0f");
        snprintf(c[2], 64, "%.0f (%.0f)", gt_rep_jnum(e, "util_pct"), gt_rep_jnum(e, "util_min_pct"));
        snprintf(c[3], 64, "%.1f of %.1f", gt_rep_jnum(e, "mem_used_bytes") / 1073741824.0,
                 gt_rep_jnum(e, "mem_total_bytes") / 1073741824.0);
        gt_rep_fmtnum(c[4], 64, gt_rep_jnum(e, "temp_max_c"), "%.0f");
        snprintf(c[5], 64, "%.0f (%.0f)", gt_rep_jnum(e, "power_w"), gt_rep_jnum(e, "power_max_w"));
        snprintf(c[6], 64, "%.0f (%.0f)", gt_rep_jnum(e, "sm_clock_mhz"), gt_rep_jnum(e, "sm_clock_min_mhz"));
        snprintf(c[7], 64, "%.0f%%", 100 * gt_rep_jnum(e, "throttled_frac"));
        gt_rep_fmtnum(c[8], 64, gt_rep_jnum(e, "ecc_uncorrected_new"), "%.0f");
        gt_rep_fmtnum(c[9], 64, gt_rep_jnum(e, "xid_events"), "%.0f");
        gt_rep_row(r, 0, 10, c);
    }
    gt_rep_end(r);
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
        long long ln = 0;
        while (gt_jsonl_getline(&line, &cap, f, p, &ln) > 0) {
            cJSON *j = cJSON_Parse(line);
            if (j && !strcmp(gt_rep_jstr(j, "type", ""), "gpu") && gt_rep_jnum(j, "rank") == rk &&
                isfinite(gt_rep_jnum(j, "util_pct"))) {
                fprintf(o, "%.3f %.3f\n", gt_rep_jnum(j, "time_s"), gt_rep_jnum(j, "util_pct"));
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
    gt_rep_plot(r, "gpu", "GPU utilisation per rank", body);
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
    gt_rep r;
    memset(&r, 0, sizeof r);
    r.dir = run_dir;
    char p[PATH_MAX + 64], ph[PATH_MAX + 64], pt[PATH_MAX + 64], pht[PATH_MAX + 64];
    if (gt_mkdir_out_below(run_dir, "plots", p, sizeof p) != 0) { /* plots/ a symbolic link: refused, never followed */
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
    gt_rep_para(&r, "Written %s by gridtrain (eval/report.c) from the files of the run directory.%s", now,
                r.have_gnuplot ? "" : " gnuplot was not found (install gnuplot-nox or set GT_GNUPLOT): no plots.");
    if (ev) {
        gt_rep_para(&r, "Task %s, model %s, evaluated on %s.", gt_rep_jstr(ev, "task", "?"),
                    gt_rep_jstr(ev, "model", "?"), gt_rep_jstr(ev, "data_file", "?"));
    } else {
        gt_rep_para(&r, "eval.json: not found (run 'gridtrain eval %s').", run_dir);
    }
    sec_config(&r, man);
    sec_data(&r, ev, man);
    sec_training(&r, ev);
    sec_timing(&r);
    sec_gpu(&r, man);
    const gt_eval_task_i *task = ev ? gt_eval_task_by_name(gt_rep_jstr(ev, "task", "")) : NULL;
    if (task) task->report(&r, ev); /* the task's results */
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
