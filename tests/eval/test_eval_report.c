/* The run report from the files of a run directory: report.md and
 * report.html with every section, and valid non-empty PNGs (signature, IHDR,
 * size) for the loss curves, per-appliance F1/EA bars, the sample day, and
 * (PdM) the anomaly score with threshold and events. Without gnuplot the
 * report is still written and says so. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/report.h"
#include "task/task_registry.h"
#include "test.h"

static void put(const char *dir, const char *name, const char *text) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    TEST_REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *dir, const char *name) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc((size_t)n + 1, 1);
    TEST_REQUIRE(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    return b;
}

static int png_ok(const char *dir, const char *name) {
    char p[700];
    snprintf(p, sizeof p, "%s/plots/%s", dir, name);
    return gt_png_valid(p, 1000);
}

static void common_files(const char *dir) {
    put(dir, "config.ini", "[data]\nfile = x.h5\nwindow = 63\n[model]\nkind = s2p_cnn\n");
    put(dir, "manifest.json",
        "{\"gridtrain_version\":\"0.1\",\"model_kind\":\"s2p_cnn\",\"n_params\":1234,\"ranks\":2,\"host\":\"h\","
        "\"cpu_model\":\"c\",\"start_time\":\"2026-01-01T00:00:00Z\",\"end_time\":\"2026-01-01T00:10:00Z\","
        "\"data\":{\"path\":\"x.h5\"}}\n");
    FILE *f;
    char p[700];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    TEST_REQUIRE((f = fopen(p, "w")));
    for (int s = 10; s <= 200; s += 10) {
        fprintf(f, "{\"type\":\"train\",\"step\":%d,\"loss\":%g,\"samples_per_s\":1000,\"data_stall\":0.01,\"time_s\":%d}\n",
                s, 1.0 / s, s);
        if (s % 50 == 0) fprintf(f, "{\"type\":\"val\",\"step\":%d,\"val_loss\":%g,\"best_val\":%g}\n", s, 1.5 / s, 1.5 / s);
    }
    fclose(f);
    put(dir, "screened.csv", "1,0,1000,spike\n1,5000,9000,gap\n2,100,200,spike\n");
    put(dir, "timing.json",
        "{\"ranks\":2,\"train_time_s\":200,\"samples_per_s\":1000,\"data_stall\":0.01,\"events\":["
        "{\"name\":\"forward\",\"min_s\":1,\"max_s\":1.2,\"mean_s\":1.1,\"max_over_mean\":1.09,\"calls_per_rank\":200}]}\n");
}

int main(void) {
    gt_task_register_builtins(); /* task/task_registry.h */
    const char *base = getenv("GT_BINARY_DIR");
    char dir[400], dir2[420], cmd[2000];
    snprintf(dir, sizeof dir, "%s/eval-scratch/report-%d", base && *base ? base : "/tmp", (int)getpid());
    snprintf(dir2, sizeof dir2, "%s-pdm", dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' && mkdir -p '%s' '%s'", dir, dir2, dir, dir2);
    TEST_REQUIRE(system(cmd) == 0);

    /* ---- NILM run directory */
    common_files(dir);
    put(dir, "eval.json",
        "{\"task\":\"nilm\",\"model\":\"s2p_cnn\",\"data_file\":\"x.h5\",\"data\":{\"file\":\"x.h5\",\"kind\":\"nilm\","
        "\"items\":4,\"rows\":1000,\"ranks\":2,\"eval_stride\":1,\"windows\":{\"train\":10,\"val\":2,\"test\":3,\"holdout\":0}},"
        "\"nilm\":{\"test\":{\"windows\":3,\"overall\":{\"mae_w\":10,\"sae\":0.1,\"nde\":0.3,\"precision\":0.9,\"recall\":0.8,"
        "\"f1\":0.85,\"ea\":0.88,\"f1_macro\":0.8,\"appliances_f1_ge_0_8\":1,\"appliances_f1_defined\":1},"
        "\"appliances\":[{\"name\":\"fridge\",\"mae_w\":5,\"sae\":0.1,\"nde\":0.2,\"precision\":0.9,\"recall\":0.9,\"f1\":0.9,"
        "\"ea\":0.9,\"energy_true_wh\":1000,\"energy_pred_wh\":1100},{\"name\":\"kettle\",\"mae_w\":15,\"sae\":null,\"nde\":null,"
        "\"precision\":null,\"recall\":null,\"f1\":null,\"ea\":null,\"energy_true_wh\":0,\"energy_pred_wh\":0,\"samples\":3},"
        "{\"name\":\"toaster\",\"mae_w\":null,\"sae\":null,\"nde\":null,\"precision\":null,\"recall\":null,\"f1\":null,"
        "\"ea\":null,\"energy_true_wh\":0,\"energy_pred_wh\":0,\"samples\":0}]},"
        "\"holdout\":null},\"pdm\":null,\"train\":{\"steps\":200,\"train_time_s\":200,\"samples_per_s\":1000,\"ranks\":2,"
        "\"cpu_hours\":0.1,\"gpu_hours\":0,\"final_loss\":0.005,\"best_val_loss\":0.0075}}\n");
    FILE *f;
    char p[700];
    snprintf(p, sizeof p, "%s/eval_sample.csv", dir);
    TEST_REQUIRE((f = fopen(p, "w")));
    fputs("# household id 7 (file index 0) from 2026-01-05T06:00:00Z; columns: time_h aggregate_w true_fridge pred_fridge true_kettle "
          "pred_kettle\n", f);
    for (int i = 0; i < 200; i++)
        fprintf(f, "%.4f %.1f %.1f %.1f %s\n", i * 0.1, 300.0 + 100 * (i % 7), 80.0 * (i % 3 == 0), 75.0 * (i % 3 == 0),
                i % 50 == 0 ? "NaN NaN" : "0 1.5");
    fclose(f);

    /* without gnuplot: still written, says so */
    int np = gt_report_write(dir, "/nonexistent/gnuplot");
    TEST_EQ_INT(np, 0);
    char *md = slurp(dir, "report.md");
    TEST_REQUIRE(md);
    TEST_CHECK(strstr(md, "gnuplot was not found") != NULL);
    /* an appliance without evaluated rows (data.appliances of the run): named once below the table, no row */
    TEST_CHECK(strstr(md, "| kettle |") != NULL && strstr(md, "| toaster |") == NULL);
    TEST_CHECK(strstr(md, "Not evaluated (not among the appliances the run trained, data.appliances, or no true "
                          "value in this split): toaster.") != NULL);
    free(md);

    char gp[600];
    const char *path = getenv("PATH");
    int have = 0;
    if (path) {
        char *dup = strdup(path);
        for (char *d = strtok(dup, ":"); d && !have; d = strtok(NULL, ":")) {
            snprintf(gp, sizeof gp, "%s/gnuplot", d);
            have = access(gp, X_OK) == 0;
        }
        free(dup);
    }
    if (!have) TEST_SKIP("gnuplot not installed (apt-get install gnuplot-nox); report without plots checked");

    np = gt_report_write(dir, NULL);
    TEST_EQ_INT(np, 3);
    TEST_CHECK(png_ok(dir, "loss.png"));
    TEST_CHECK(png_ok(dir, "nilm_f1_ea.png"));
    TEST_CHECK(png_ok(dir, "nilm_sample.png"));
    /* the sample plot says which household and which hours it shows (19.9 h: not a day) */
    char *sgp = slurp(dir, "plots/nilm_sample.gp");
    TEST_REQUIRE(sgp);
    TEST_CHECK(strstr(sgp, "19.9 h (the whole test split of this household) of test household 7, from 2026-01-05T06:00:00Z")
               != NULL);
    TEST_CHECK(strstr(sgp, "filledcurves") != NULL); /* truth shaded, prediction a line: distinct even where equal */
    /* only appliances with energy in the sample: the fridge; not the kettle (0 W) */
    TEST_CHECK(strstr(sgp, "'fridge true'") != NULL && strstr(sgp, "kettle") == NULL);
    free(sgp);
    char *fgp = slurp(dir, "plots/nilm_f1_ea.gp"); /* bars of the evaluated appliances only */
    TEST_REQUIRE(fgp);
    TEST_CHECK(strstr(fgp, "'kettle' 1") != NULL && strstr(fgp, "toaster") == NULL);
    free(fgp);
    md = slurp(dir, "report.md");
    char *html = slurp(dir, "report.html");
    TEST_REQUIRE(md && html);
    const char *sections[] = {"## Configuration", "## Data", "## Training", "## Timing across ranks",
                              "## Disaggregation results", "fridge", "kettle", "n/a", "plots/loss.png",
                              "plots/nilm_f1_ea.png", "plots/nilm_sample.png", "spike", "forward"};
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        if (!strstr(md, sections[i])) fprintf(stderr, "report.md lacks '%s'\n", sections[i]), gt_test_failures++;
    TEST_CHECK(strstr(html, "<img src=\"plots/nilm_f1_ea.png\"") != NULL);
    TEST_CHECK(strstr(html, "<table>") != NULL && strstr(html, "</html>") != NULL);
    free(md), free(html);

    /* ---- PdM run directory */
    common_files(dir2);
    put(dir2, "eval.json",
        "{\"task\":\"pdm\",\"model\":\"lstm\",\"data_file\":\"f.h5\",\"nilm\":null,\"pdm\":{\"threshold\":5,"
        "\"calibration\":{\"quantile\":0.999,\"margin\":1.5},\"point\":{\"precision\":0.5,\"recall\":0.4,\"f05\":0.47},"
        "\"event\":{\"n_events\":3,\"n_detected\":2,\"recall\":0.667,\"precision\":0.5,\"f05\":0.53,"
        "\"false_alarms_per_turbine_day\":1.2,\"detection_delay_s_mean\":12,\"turbine_days\":2},"
        "\"by_turbine\":[{\"id\":1,\"holdout\":false,\"n_events\":3,\"n_detected\":2,\"recall\":0.667}],"
        "\"by_machine_type\":{\"type_a\":{\"n_events\":3}},\"by_condition\":{\"rated\":{\"n_events\":3}},\"care_score\":0.6},"
        "\"train\":{\"steps\":200}}\n");
    snprintf(p, sizeof p, "%s/eval_scores.csv", dir2);
    TEST_REQUIRE((f = fopen(p, "w")));
    fputs("# turbine: time_h score label\n", f);
    for (int i = 0; i < 500; i++) fprintf(f, "%.4f %.4f %d\n", i * 0.01, 1.0 + (i % 97 == 0 ? 20 : (i % 5)), i % 97 < 3);
    fclose(f);
    np = gt_report_write(dir2, NULL);
    TEST_EQ_INT(np, 2);
    TEST_CHECK(png_ok(dir2, "pdm_scores.png"));
    TEST_CHECK(png_ok(dir2, "loss.png"));
    md = slurp(dir2, "report.md");
    TEST_REQUIRE(md);
    TEST_CHECK(strstr(md, "## Anomaly detection results") && strstr(md, "Per machine type") &&
               strstr(md, "Per operating condition") && strstr(md, "type_a") && strstr(md, "plots/pdm_scores.png"));
    free(md);

    /* a PNG check that fails: a truncated file */
    snprintf(p, sizeof p, "%s/plots/bad.png", dir2);
    TEST_REQUIRE((f = fopen(p, "wb")));
    fputs("\x89PNG\r\n", f);
    fclose(f);
    TEST_CHECK(!gt_png_valid(p, 1000));
    if (!gt_test_failures) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, dir2);
        if (system(cmd)) fprintf(stderr, "cannot clean up\n");
    }
    TEST_DONE();
}
