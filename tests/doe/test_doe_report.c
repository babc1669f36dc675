/* tests/doe/test_doe_report.c: report aggregation on hand-made results.
 *
 * A sweep machine_type {0,1} x condition {low_wind, rated} x seed {1,2,3}
 * written by hand (sweep.json, cell.json, eval.json): 7 finished cells, one
 * failed (mt 1, rated, seed 2), the four seed-3 cells missing, one finished
 * cell preempted once. pdm.event.f05 per (mt, condition, seed):
 *   mt0 low_wind .8 .6 | mt0 rated .5 .7 | mt1 low_wind .4 .2 | mt1 rated .9 (failed)
 * Hand-computed: configuration means .7 .6 .3 .9, sds .1414214 (n-1) except
 * the single-seed one (NaN); main effects mt0 .65 (sd .1290994), mt1 .5
 * (sd .3605551), low_wind .5 (sd .2581989), rated .7 (sd .2); grand mean
 * 4.1/7; best mt1/rated, worst mt1/low_wind; CPU-hours 7 x 0.01. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doe/report.h"
#include "eval/eval_task.h"
#include "task/task_registry.h"
#include "test.h"

static char g_dir[256];

static void put(const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    char *slash = strrchr(path, '/');
    *slash = 0;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    TEST_REQUIRE(system(cmd) == 0);
    *slash = '/';
    FILE *f = fopen(path, "w");
    TEST_REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *rel) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The CARE protocol over a sweep with a care_event factor (gt_doe_care_collect):
 * event datasets 1..5 with one cell each, 5 missing. Per event (eval.json):
 *   1 anomaly, turbine 0 (farm 0), detected, coverage .6, earliness .5
 *   2 anomaly, turbine 1 (farm 1), missed,   coverage .2, earliness 0
 *   3 normal,  turbine 0 (farm 0), missed,   accuracy .9
 *   4 normal,  turbine 1 (farm 1), detected, accuracy .7
 * Hand-computed with the authors' final formula: overall coverage .4,
 * accuracy .8, earliness .25, reliability F0.5(tp 1, fp 1, fn 1) = .5, score
 * (.4 + 1.6 + .25 + .5) / 5 = .55; farm 0: reliability 1, score (.6 + 1.8 +
 * .5 + 1) / 5 = .78; farm 1: reliability 0 (one detection: not the zero
 * rule), score (.2 + 1.4 + 0 + 0) / 5 = .32. Event recall (labelled events
 * of the prediction parts 2, 1, 0, 1; detected 1, 0, 0, 0) 1/4; false alarms
 * (1, 2, 0, 3) over turbine-days (10, 10, 5, 5) 6/30 = .2. */
static void care_protocol_sweep(void) {
    static const struct {
        int anomaly, turbine, detected, n_events, n_detected, n_false;
        double cov, acc, ear, days;
    } ev[4] = {{1, 0, 1, 2, 1, 1, .6, .95, .5, 10}, {1, 1, 0, 1, 0, 2, .2, .99, 0, 10},
               {0, 0, 0, 0, 0, 0, NAN, .9, NAN, 5}, {0, 1, 1, 1, 0, 3, NAN, .7, NAN, 5}};
    char save[256];
    snprintf(save, sizeof save, "%s", g_dir);
    snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "/care");
    char sweep[4096] = "{\"name\":\"care\",\"task\":\"pdm\",\"factors\":[{\"name\":\"care_event\","
                       "\"key\":\"data.care_event\",\"levels\":[\"1\",\"2\",\"3\",\"4\",\"5\"]}],\"cells\":[";
    for (int i = 0; i < 5; i++) {
        char rel[128], txt[2048];
        snprintf(sweep + strlen(sweep), sizeof sweep - strlen(sweep),
                 "%s{\"index\":%d,\"id\":\"e%d\",\"factors\":{\"care_event\":\"%d\"}}", i ? "," : "", i, i + 1, i + 1);
        if (i == 4) continue; /* event 5: missing */
        snprintf(rel, sizeof rel, "cells/e%d/cell.json", i + 1);
        snprintf(txt, sizeof txt, "{\"id\":\"e%d\",\"index\":%d,\"status\":\"done\",\"attempts\":1}", i + 1, i);
        put(rel, txt);
        char cov[32], acc[32], ear[32];
        snprintf(cov, sizeof cov, isnan(ev[i].cov) ? "null" : "%g", ev[i].cov);
        snprintf(acc, sizeof acc, "%g", ev[i].acc);
        snprintf(ear, sizeof ear, isnan(ev[i].ear) ? "null" : "%g", ev[i].ear);
        snprintf(rel, sizeof rel, "cells/e%d/eval.json", i + 1);
        /* the other event datasets are listed as not evaluated, as eval writes them under data.care_event */
        snprintf(txt, sizeof txt,
                 "{\"pdm\":{\"event\":{\"n_events\":%d,\"n_detected\":%d,\"n_false_alarms\":%d,"
                 "\"turbine_days\":%g},\"by_turbine\":[{\"id\":0,\"farm\":0},{\"id\":1,\"farm\":1}],"
                 "\"care_protocol\":{\"events\":[{\"event_id\":%d,\"turbine_id\":0,\"label\":\"normal\","
                 "\"evaluated\":false},{\"event_id\":%d,\"turbine_id\":%d,\"label\":\"%s\",\"evaluated\":true,"
                 "\"detected\":%s,\"max_criticality\":%d,\"coverage\":%s,\"accuracy\":%s,\"earliness\":%s,"
                 "\"rows\":100,\"rows_in_training\":0}]}}}",
                 ev[i].n_events, ev[i].n_detected, ev[i].n_false, ev[i].days, (i + 1) % 4 + 1, i + 1, ev[i].turbine,
                 ev[i].anomaly ? "anomaly" : "normal", ev[i].detected ? "true" : "false", ev[i].detected ? 80 : 10,
                 cov, acc, ear);
        put(rel, txt);
    }
    strcat(sweep, "]}");
    put("sweep.json", sweep);
    gt_doe_sweep sw;
    char err[1024];
    TEST_REQUIRE(gt_doe_sweep_load(g_dir, &sw, err, sizeof err) == 0);
    gt_doe_care c;
    TEST_REQUIRE(gt_doe_care_collect(&sw, &c, err, sizeof err) == 0);
    TEST_EQ_INT(c.factor, 0);
    TEST_EQ_INT(c.n_runs, 1);
    const gt_doe_care_run *R = &c.runs[0];
    TEST_EQ_INT(R->n_cells, 5);
    TEST_EQ_INT(R->n_done, 4);
    TEST_EQ_INT(R->n_events, 4);
    TEST_EQ_INT(R->events[3].event_id, 4);
    TEST_CLOSE(R->overall.p.coverage, .4, 1e-12, 0);
    TEST_CLOSE(R->overall.p.accuracy, .8, 1e-12, 0);
    TEST_CLOSE(R->overall.p.earliness, .25, 1e-12, 0);
    TEST_CLOSE(R->overall.p.reliability, .5, 1e-12, 0);
    TEST_CLOSE(R->overall.p.score, .55, 1e-12, 0);
    TEST_CLOSE(R->overall.recall, .25, 1e-12, 0);
    TEST_CLOSE(R->overall.false_alarms_per_turbine_day, .2, 1e-12, 0);
    TEST_EQ_INT(R->n_farms, 2);
    TEST_EQ_INT(R->farm[0], 0);
    TEST_CLOSE(R->by_farm[0].p.score, .78, 1e-12, 0);
    TEST_CLOSE(R->by_farm[1].p.score, .32, 1e-12, 0);
    TEST_CLOSE(R->by_farm[1].p.reliability, 0, 1e-12, 0);
    gt_doe_summary sum;
    TEST_REQUIRE(gt_doe_summarize(&sw, NULL, NULL, NULL, &sum, err, sizeof err) == 0);
    char out[512];
    snprintf(out, sizeof out, "%s/report", g_dir);
    TEST_REQUIRE(gt_doe_report_write(&sw, &sum, out, 0) == 0);
    const char *md = slurp("report/report.md");
    TEST_REQUIRE(md);
    TEST_CHECK(strstr(md, "### (all): CARE score 0.550 (4 of 5 event datasets finished)") != NULL);
    TEST_CHECK(strstr(md, "| farm | 1 |  | 1/2 |  | 0.2 | 0.7 | 0 | 0 | 0.320 |") != NULL);
    const char *csv = slurp("report/care_protocol.csv");
    TEST_REQUIRE(csv);
    TEST_CHECK(strstr(csv, "(all),overall,,,,,4,2,,0.4,0.8,0.25,0.5,0.55,0.25,0.2,,,") != NULL);
    gt_doe_summary_free(&sum, &sw);
    /* a finished cell whose eval.json lacks its event (not evaluated with data.care_event): an error naming it */
    put("cells/e3/eval.json", "{\"pdm\":{\"care_protocol\":{\"events\":[{\"event_id\":3,\"evaluated\":false}]}}}");
    gt_doe_care_free(&c);
    TEST_CHECK(gt_doe_care_collect(&sw, &c, err, sizeof err) == -1);
    TEST_CHECK(strstr(err, "cells/e3/eval.json: no evaluated CARE event dataset 3 in pdm.care_protocol.events (was "
                           "the cell trained and evaluated with data.care_event = 3?)") != NULL);
    /* a task whose evaluation table has no care_cell reads no event: the error says so */
    snprintf(sw.task, sizeof sw.task, "nilm");
    TEST_CHECK(gt_doe_care_collect(&sw, &c, err, sizeof err) == -1);
    TEST_CHECK(strstr(err, "/eval.json: no evaluated CARE event dataset 1: the sweep's task (nilm) has no CARE to "
                           "Compare protocol") != NULL);
    gt_doe_sweep_free(&sw);
    snprintf(g_dir, sizeof g_dir, "%s", save);
}

/* Sizes (issue #37, class 5): a sweep.json of more level combinations than a
 * matrix may have is refused naming the file; a large one finds each cell's
 * level by binary search (the levels listed in reverse, every cell checked). */
static void sizes_sweep(void) {
    char save[256];
    snprintf(save, sizeof save, "%s", g_dir);
    snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "/sizes");
    const int k = 1025, n = 3000;
    size_t cap = (size_t)n * 96 + 4096, len = 0;
    char *js = malloc(cap);
    TEST_REQUIRE(js);
    len += (size_t)snprintf(js, cap, "{\"name\":\"big\",\"task\":\"pdm\",\"factors\":[");
    for (int f = 0; f < 2; f++) {
        len += (size_t)snprintf(js + len, cap - len, "%s{\"name\":\"f%d\",\"key\":\"train.f%d\",\"levels\":[", f ? "," : "", f, f);
        for (int l = 0; l < k; l++) len += (size_t)snprintf(js + len, cap - len, "%s\"%d\"", l ? "," : "", l);
        len += (size_t)snprintf(js + len, cap - len, "]}");
    }
    snprintf(js + len, cap - len, "],\"cells\":[]}");
    put("sweep.json", js);
    gt_doe_sweep sw;
    char err[512] = "";
    TEST_CHECK(gt_doe_sweep_load(g_dir, &sw, err, sizeof err) == -1);
    TEST_CHECK(strstr(err, "sweep.json: more than 1048576 cells or level combinations") != NULL);
    gt_doe_sweep_free(&sw);
    /* one factor of 3000 levels (listed 2999 .. 0) and a cell per level */
    len = (size_t)snprintf(js, cap, "{\"name\":\"big\",\"task\":\"pdm\",\"factors\":[{\"name\":\"seed\",\"key\":\"train.seed\",\"levels\":[");
    for (int l = 0; l < n; l++) len += (size_t)snprintf(js + len, cap - len, "%s\"%d\"", l ? "," : "", n - 1 - l);
    len += (size_t)snprintf(js + len, cap - len, "]}],\"cells\":[");
    for (int c = 0; c < n; c++)
        len += (size_t)snprintf(js + len, cap - len, "%s{\"index\":%d,\"id\":\"c%d\",\"factors\":{\"seed\":\"%d\"}}",
                                c ? "," : "", c, c, c);
    snprintf(js + len, cap - len, "]}");
    put("sweep.json", js);
    free(js);
    TEST_REQUIRE(gt_doe_sweep_load(g_dir, &sw, err, sizeof err) == 0);
    TEST_EQ_INT(sw.n_cells, n);
    int wrong = 0;
    for (int c = 0; c < n; c++) wrong += sw.cells[c].level[0] != n - 1 - c;
    TEST_EQ_INT(wrong, 0);
    gt_doe_sweep_free(&sw);
    snprintf(g_dir, sizeof g_dir, "%s", save);
}

/* The task of a sweep without one in sweep.json: its cells' (eval.json
 * "task"), and what the task's evaluation table gives the report: nilm's
 * headline metric as the primary one and no settings line; pdm's settings
 * (eval_config pdm_level, pdm_margin; the others not recorded). */
static void task_from_cells(void) {
    char save[256];
    snprintf(save, sizeof save, "%s", g_dir);
    static const char *const tasks[2] = {"nilm", "pdm"};
    for (int t = 0; t < 2; t++) {
        snprintf(g_dir, sizeof g_dir, "%s", save);
        snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "/task-%s", tasks[t]);
        put("sweep.json", "{\"name\":\"t\",\"factors\":[{\"name\":\"seed\",\"key\":\"train.seed\","
                          "\"levels\":[\"1\",\"2\"]}],\"cells\":[{\"index\":0,\"id\":\"a\",\"factors\":"
                          "{\"seed\":\"1\"}},{\"index\":1,\"id\":\"b\",\"factors\":{\"seed\":\"2\"}}]}");
        for (int c = 0; c < 2; c++) {
            char rel[64], txt[512];
            snprintf(rel, sizeof rel, "cells/%s/eval.json", c ? "b" : "a");
            if (t == 0)
                snprintf(txt, sizeof txt, "{\"task\":\"nilm\",\"nilm\":{\"test\":{\"overall\":{\"f1\":%g}}},"
                         "\"pdm\":null,\"eval_config\":{\"nilm_stride\":1},\"train\":{\"best_val_loss\":0.5}}",
                         0.25 + 0.5 * c);
            else
                snprintf(txt, sizeof txt, "{\"task\":\"pdm\",\"nilm\":null,\"pdm\":{\"event\":{\"f05\":0.5}},"
                         "\"eval_config\":{\"pdm_level\":\"robust\",\"pdm_margin\":%g},\"train\":{}}",
                         c ? 2.0 : 1.5);
            put(rel, txt);
        }
        gt_doe_sweep sw;
        gt_doe_summary sum;
        char err[512];
        TEST_REQUIRE(gt_doe_sweep_load(g_dir, &sw, err, sizeof err) == 0);
        TEST_CHECK(!strcmp(sw.task, tasks[t]));
        TEST_REQUIRE(gt_doe_summarize(&sw, NULL, NULL, NULL, &sum, err, sizeof err) == 0);
        TEST_EQ_INT(sum.primary, gt_doe_metric_find(t == 0 ? "nilm.test.overall.f1" : "pdm.event.f05"));
        if (t == 0) {
            TEST_CHECK(sw.eval_settings[0] == 0);
            TEST_CLOSE(sum.grand[sum.primary].mean, 0.5, 1e-12, 1e-12);
        } else {
            TEST_CHECK(strstr(sw.eval_settings, "eval.level = robust, eval.flat_line = not recorded, "
                                "eval.quantile = not recorded, eval.margin = 1.5, ") == sw.eval_settings);
            TEST_EQ_INT(sw.n_eval_settings_differ, 1); /* cell b: eval.margin = 2 */
        }
        gt_doe_summary_free(&sum, &sw);
        gt_doe_sweep_free(&sw);
    }
    snprintf(g_dir, sizeof g_dir, "%s", save);
}

/* The metric table is the tasks' columns (eval/eval_task.h report_metrics,
 * keys relative to the task's section), the last registered task's first,
 * then training's: the column order of cells.csv. */
static void metric_table(void) {
    int n = 0;
    const gt_doe_metric_def *t = gt_doe_metrics(&n);
    TEST_EQ_INT(n, 22);
    TEST_CHECK(!strcmp(t[0].name, "pdm.event.recall") && !strcmp(t[0].label, "event recall"));
    TEST_CHECK(!strcmp(t[7].name, "pdm.care_protocol.score"));
    TEST_CHECK(!strcmp(t[8].name, "nilm.test.overall.mae_w") && !t[8].higher_better && t[8].quality);
    TEST_CHECK(!strcmp(t[15].name, "train.best_val_loss") && t[15].quality);
    TEST_CHECK(!strcmp(t[21].name, "train.gpu_hours") && !t[21].quality);
    TEST_EQ_INT(gt_doe_metric_find("nilm.test.overall.f1"), 13);
    TEST_EQ_INT(gt_doe_metric_find("test.overall.f1"), -1);
    int rows = 0;
    for (int i = 0; gt_eval_task_at(i); i++) {
        const gt_eval_task_i *et = gt_eval_task_at(i);
        for (const gt_eval_report_metric *r = et->report_metrics; r && r->key; r++, rows++) {
            char name[128];
            snprintf(name, sizeof name, "%s.%s", et->name, r->key);
            const int m = gt_doe_metric_find(name);
            TEST_REQUIRE(m >= 0);
            TEST_CHECK(!strcmp(t[m].label, r->label) && t[m].higher_better == r->higher_better &&
                       t[m].quality == r->quality);
        }
        if (et->headline_metric) TEST_CHECK(gt_doe_metric_find(et->headline_metric) >= 0);
    }
    TEST_EQ_INT(rows, 15);
}

int main(void) {
    gt_task_register_builtins(); /* task/task_registry.h */
    metric_table();
    snprintf(g_dir, sizeof g_dir, "%s/doe-report-XXXXXX", getenv("GT_BINARY_DIR") ? getenv("GT_BINARY_DIR") : "/tmp");
    TEST_REQUIRE(mkdtemp(g_dir));
    const char *mt[2] = {"0", "1"}, *cond[2] = {"low_wind", "rated"}, *seed[3] = {"1", "2", "3"};
    const double f05[2][2][2] = {{{.8, .6}, {.5, .7}}, {{.4, .2}, {.9, NAN}}};
    char sweep[8192] = "{\"name\":\"hand\",\"task\":\"pdm\",\"factors\":["
                       "{\"name\":\"machine_type\",\"key\":\"data.machine_types\",\"levels\":[\"0\",\"1\"]},"
                       "{\"name\":\"condition\",\"key\":\"data.conditions\",\"levels\":[\"low_wind\",\"rated\"]},"
                       "{\"name\":\"seed\",\"key\":\"train.seed\",\"levels\":[\"1\",\"2\",\"3\"]}],\"cells\":[";
    int idx = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int s = 0; s < 3; s++, idx++) {
                char id[16], rel[128], txt[2048];
                snprintf(id, sizeof id, "c%02d", idx);
                snprintf(sweep + strlen(sweep), sizeof sweep - strlen(sweep),
                         "%s{\"index\":%d,\"id\":\"%s\",\"factors\":{\"machine_type\":\"%s\",\"condition\":\"%s\",\"seed\":\"%s\"}}",
                         idx ? "," : "", idx, id, mt[a], cond[b], seed[s]);
                if (s == 2) continue; /* seed 3: missing */
                int failed = isnan(f05[a][b][s]);
                int pre = a == 0 && b == 0 && s == 0;
                snprintf(rel, sizeof rel, "cells/%s/cell.json", id);
                snprintf(txt, sizeof txt,
                         "{\"id\":\"%s\",\"index\":%d,\"status\":\"%s\",\"attempts\":%d,\"preemptions\":%d,"
                         "\"failures\":%d,\"exit_code\":%d,\"wall_s\":36}",
                         id, idx, failed ? "failed" : "done", pre ? 2 : 1, pre, failed, failed ? 3 : 0);
                put(rel, txt);
                if (failed) continue;
                snprintf(rel, sizeof rel, "cells/%s/eval.json", id);
                snprintf(txt, sizeof txt,
                         "{\"task\":\"pdm\",\"model\":\"lstm\",\"data_file\":\"x.h5\",\"nilm\":null,"
                         "\"pdm\":{\"threshold\":1.5,\"point\":{\"precision\":0.5,\"recall\":0.5,\"f05\":0.5},"
                         "\"event\":{\"n_events\":4,\"n_detected\":3,\"recall\":%g,\"precision\":0.9,\"f05\":%g,"
                         "\"false_alarms_per_turbine_day\":%g,\"detection_delay_s_mean\":120,\"turbine_days\":10},"
                         "\"care_score\":0.7},"
                         "\"train\":{\"steps\":20,\"train_time_s\":30,\"samples_per_s\":%g,\"ranks\":1,"
                         "\"cpu_hours\":0.01,\"gpu_hours\":0,\"final_loss\":0.5,\"best_val_loss\":0.4}}",
                         0.5 + 0.1 * a, f05[a][b][s], 1.0 + s, 100.0 * (1 + b));
                put(rel, txt);
            }
    strcat(sweep, "]}");
    put("sweep.json", sweep);

    gt_doe_sweep sw;
    char err[512];
    TEST_REQUIRE(gt_doe_sweep_load(g_dir, &sw, err, sizeof err) == 0);
    TEST_EQ_INT(sw.n_cells, 12);
    TEST_EQ_INT(sw.seed_factor, 2);
    gt_doe_summary sum;
    TEST_REQUIRE(gt_doe_summarize(&sw, NULL, NULL, NULL, &sum, err, sizeof err) == 0);
    const int F = gt_doe_metric_find("pdm.event.f05"), FA = gt_doe_metric_find("pdm.event.false_alarms_per_turbine_day"),
              SPS = gt_doe_metric_find("train.samples_per_s");
    int nm = 0;
    gt_doe_metrics(&nm);
    TEST_EQ_INT(sum.primary, F); /* default for pdm sweeps with results */
    TEST_EQ_INT(sum.n_status[GT_DOE_DONE], 7);
    TEST_EQ_INT(sum.n_status[GT_DOE_FAILED], 1);
    TEST_EQ_INT(sum.n_status[GT_DOE_MISSING], 4);
    TEST_EQ_INT(sum.n_requeued, 1);
    TEST_CLOSE(sum.cpu_hours, 0.07, 1e-12, 1e-9);
    TEST_CLOSE(sum.train_time_s, 210, 1e-9, 1e-12);
    /* configurations in first-seen order: (0,lw) (0,rated) (1,lw) (1,rated) */
    TEST_EQ_INT(sum.n_configs, 4);
    const double cm[4] = {.7, .6, .3, .9};
    for (int c = 0; c < 4; c++) {
        TEST_EQ_INT(sum.configs[c].n_cells, 3);
        TEST_CLOSE(sum.configs[c].stat[F].mean, cm[c], 1e-12, 1e-9);
        if (c < 3) TEST_CLOSE(sum.configs[c].stat[F].sd, 0.1414213562373095, 1e-12, 1e-9);
    }
    TEST_EQ_INT(sum.configs[3].n_done, 1);
    TEST_CHECK(isnan(sum.configs[3].stat[F].sd));
    /* false alarms = 1 + seed index: seeds 1, 2 -> mean 1.5, sd 0.7071 */
    TEST_CLOSE(sum.configs[0].stat[FA].mean, 1.5, 1e-12, 1e-9);
    TEST_CLOSE(sum.configs[0].stat[FA].sd, 0.7071067811865476, 1e-12, 1e-9);
    /* grand mean and main effects */
    TEST_CLOSE(sum.grand[F].mean, 4.1 / 7, 1e-12, 1e-9);
    TEST_EQ_INT(sum.grand[F].n, 7);
    TEST_REQUIRE(sum.effect[0] && sum.effect[1] && !sum.effect[2]);
    TEST_CLOSE(sum.effect[0][0 * nm + F].mean, .65, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[0][0 * nm + F].sd, 0.1290994448735806, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[0][1 * nm + F].mean, .5, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[0][1 * nm + F].sd, 0.3605551275463989, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[1][0 * nm + F].mean, .5, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[1][0 * nm + F].sd, 0.2581988897471611, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[1][1 * nm + F].mean, .7, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[1][1 * nm + F].sd, .2, 1e-12, 1e-9);
    TEST_EQ_INT(sum.effect[1][1 * nm + F].n, 3);
    /* throughput by condition: low_wind 100, rated 200 */
    TEST_CLOSE(sum.effect[1][0 * nm + SPS].mean, 100, 1e-12, 1e-9);
    TEST_CLOSE(sum.effect[1][1 * nm + SPS].mean, 200, 1e-12, 1e-9);
    /* two-way machine_type x condition (found by key), best and worst */
    TEST_EQ_INT(sum.row_factor, 0);
    TEST_EQ_INT(sum.col_factor, 1);
    TEST_CLOSE(sum.two_way[0 * 2 + 0].mean, .7, 1e-12, 1e-9);
    TEST_CLOSE(sum.two_way[1 * 2 + 1].mean, .9, 1e-12, 1e-9);
    TEST_EQ_INT(sum.two_way[1 * 2 + 1].n, 1);
    TEST_EQ_INT(sum.best, 3);
    TEST_EQ_INT(sum.worst, 2);

    /* lower-is-better primary metric flips best/worst */
    gt_doe_summary s2;
    TEST_REQUIRE(gt_doe_summarize(&sw, "pdm.event.false_alarms_per_turbine_day", "condition", "machine_type", &s2, err,
                                  sizeof err) == 0);
    TEST_EQ_INT(s2.row_factor, 1);
    TEST_EQ_INT(s2.best, 3);  /* mt1/rated: only seed 1 -> 1.0 */
    gt_doe_summary_free(&s2, &sw);
    TEST_CHECK(gt_doe_summarize(&sw, "no.such.metric", NULL, NULL, &s2, err, sizeof err) == -1 &&
               strstr(err, "unknown metric"));

    /* report files */
    char out[300];
    snprintf(out, sizeof out, "%s/report", g_dir);
    TEST_REQUIRE(gt_doe_report_write(&sw, &sum, out, 1) == 0);
    char *md = slurp("report/report.md");
    TEST_REQUIRE(md);
    TEST_CHECK(strstr(md, "12 cells (7 done, 1 failed, 0 preempted, 0 running, 4 missing)") != NULL);
    TEST_CHECK(strstr(md, "1 requeued") != NULL);
    TEST_CHECK(strstr(md, "Best configuration: machine_type=1 condition=rated") != NULL);
    TEST_CHECK(strstr(md, "Worst configuration: machine_type=1 condition=low_wind") != NULL);
    TEST_CHECK(strstr(md, "| 0 | low_wind | 2/3 |") != NULL);
    TEST_CHECK(strstr(md, "0.7 ± 0.1414") != NULL);
    TEST_CHECK(strstr(md, "| c11 |") != NULL && strstr(md, "| missing |") != NULL && strstr(md, "| failed |") != NULL);
    char *csv = slurp("report/effects.csv");
    TEST_REQUIRE(csv);
    TEST_CHECK(strstr(csv, "machine_type,0,pdm.event.f05,4,0.65,0.1290994449,0.06454972244,0.06428571429") != NULL);
    csv = slurp("report/cells.csv");
    TEST_REQUIRE(csv);
    int lines = 0;
    for (char *p = csv; *p; p++) lines += *p == '\n';
    TEST_EQ_INT(lines, 13);
    TEST_CHECK(slurp("report/report.html") && strstr(slurp("report/report.html"), "<table>"));
    if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
        char *svg = slurp("report/heatmap.svg");
        TEST_CHECK(svg && strstr(svg, "<svg"));
        svg = slurp("report/effects.svg");
        TEST_CHECK(svg && strstr(svg, "<svg"));
        TEST_CHECK(strstr(slurp("report/report.md"), "heatmap.svg") != NULL);
    } else {
        fprintf(stderr, "note: gnuplot not installed: plots not checked\n");
    }
    /* cells slower than their siblings (same configuration, other seeds): none, then c00 at half its sibling's rate */
    TEST_CHECK(strstr(md, "No finished cell trained more than 20% slower") != NULL);
    gt_doe_slow slow[4];
    TEST_EQ_INT(gt_doe_slow_cells(&sw, slow, 4), 0);
    sw.cells[0].value[SPS] = 50; /* c00: machine_type 0, low_wind, seed 1; its sibling c01 ran at 100 */
    TEST_EQ_INT(gt_doe_slow_cells(&sw, slow, 4), 1);
    TEST_EQ_INT(slow[0].cell, 0);
    TEST_EQ_INT(slow[0].n_siblings, 1);
    TEST_CLOSE(slow[0].siblings_median, 100, 0, 1e-12);
    sw.cells[0].value[SPS] = 81; /* within 20 %: not flagged */
    TEST_EQ_INT(gt_doe_slow_cells(&sw, slow, 4), 0);
    sw.cells[0].value[SPS] = 50;
    snprintf(out, sizeof out, "%s/report2", g_dir);
    TEST_REQUIRE(gt_doe_report_write(&sw, &sum, out, 0) == 0);
    md = slurp("report2/report.md");
    TEST_REQUIRE(md);
    TEST_CHECK(strstr(md, "## Cells slower than their siblings") != NULL);
    TEST_CHECK(strstr(md, "| c00 | 50 | 100 | 1 | 0.50 |") != NULL);
    gt_doe_summary_free(&sum, &sw);
    gt_doe_sweep_free(&sw);
    care_protocol_sweep();
    sizes_sweep();
    task_from_cells();
    if (!gt_test_failures) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd)) fprintf(stderr, "cannot remove %s\n", g_dir);
    }
    TEST_DONE();
}
