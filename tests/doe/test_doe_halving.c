/* tests/doe/test_doe_halving.c: successive halving (doe/halving.h, the
 * ladder of doe/run.h): rung budgets, survivors per rung, the compute of the
 * ladder against the grid, the ranking (ties by cell order, NaN last, the
 * direction of the metric, too few results), the data sample (deterministic
 * per seed, nested), the [search] errors with file:line, and 'doe next' on
 * hand-written rung records: the mean over seeds, a failed seed, a
 * configuration without any result, a tie, ladder.json. Serial. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "doe/halving.h"
#include "doe/matrix.h"
#include "doe/run.h"
#include "doe_test_util.h"
#include "task/task_registry.h"
#include "test.h"

static void test_rungs(void) {
    double b[GT_DOE_MAX_RUNGS];
    TEST_EQ_INT(gt_doe_rungs(100, 2700, 3, b, GT_DOE_MAX_RUNGS), 4);
    TEST_CLOSE(b[0], 100, 0, 0);
    TEST_CLOSE(b[1], 300, 0, 0);
    TEST_CLOSE(b[2], 900, 0, 0);
    TEST_CLOSE(b[3], 2700, 0, 0);
    /* max not a power of eta times min: the last rung is max */
    TEST_EQ_INT(gt_doe_rungs(100, 2000, 3, b, GT_DOE_MAX_RUNGS), 4);
    TEST_CLOSE(b[2], 900, 0, 0);
    TEST_CLOSE(b[3], 2000, 0, 0);
    TEST_EQ_INT(gt_doe_rungs(100, 100, 3, b, GT_DOE_MAX_RUNGS), 1);
    TEST_CLOSE(b[0], 100, 0, 0);
    TEST_EQ_INT(gt_doe_rungs(1.0 / 9, 1, 3, b, GT_DOE_MAX_RUNGS), 3);
    TEST_CLOSE(b[1], 1.0 / 3, 1e-12, 0);
    TEST_CLOSE(b[2], 1, 0, 0);
    TEST_EQ_INT(gt_doe_rungs(0.111, 1, 3, b, GT_DOE_MAX_RUNGS), 3); /* 0.999 is the full data */
    TEST_CLOSE(b[2], 1, 0, 0);
    TEST_EQ_INT(gt_doe_rungs(1, 1e9, 2, b, 4), -1); /* more rungs than allowed */
    TEST_EQ_INT(gt_doe_keep(27, 3), 9);
    TEST_EQ_INT(gt_doe_keep(10, 3), 3);
    TEST_EQ_INT(gt_doe_keep(2, 3), 1);
    TEST_EQ_INT(gt_doe_keep(1, 3), 1);
    TEST_EQ_INT(gt_doe_keep(8, 2), 4);
    /* 27 configurations x 1 seed, 100..2700 at eta 3: 27x100 + 9x200 + 3x600 + 1x1800 */
    gt_doe_search s;
    gt_doe_search_init(&s);
    s.strategy = GT_DOE_HALVING;
    s.min_budget = 100;
    TEST_EQ_INT(gt_doe_search_finish(&s, 2700, 100, NULL, 0), 0);
    TEST_EQ_INT(s.n_rungs, 4);
    double grid = 0, lad = gt_doe_ladder_steps(27, 1, &s, &grid);
    TEST_CLOSE(lad, 8100, 0, 0);
    TEST_CLOSE(grid, 72900, 0, 0);
    lad = gt_doe_ladder_steps(9, 2, &s, &grid); /* 9 configs x 2 seeds: 18x100 + 6x200 + 2x600 + 2x1800 */
    TEST_CLOSE(lad, 1800 + 1200 + 1200 + 3600, 0, 0);
    TEST_CLOSE(grid, 9 * 2 * 2700, 0, 0);
}

static void test_search_errors(void) {
    char err[512];
    gt_doe_search s;
    gt_doe_search_init(&s);
    TEST_EQ_INT(gt_doe_search_set(&s, "strategy", "hyperband", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "grid or halving"));
    TEST_EQ_INT(gt_doe_search_set(&s, "eta", "1", err, sizeof err), -1);
    TEST_EQ_INT(gt_doe_search_set(&s, "eta", "2.5", err, sizeof err), -1);
    TEST_EQ_INT(gt_doe_search_set(&s, "metric", "nilm.test.overall.f1", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "train.best_val_loss"));
    TEST_EQ_INT(gt_doe_search_set(&s, "budget", "1", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "unknown [search] key 'budget'"));
    TEST_EQ_INT(gt_doe_search_set(&s, "strategy", "halving", err, sizeof err), 0);
    TEST_EQ_INT(gt_doe_search_set(&s, "min_budget", "150", err, sizeof err), 0);
    TEST_EQ_INT(gt_doe_search_finish(&s, 2700, 0, err, sizeof err), -1);
    TEST_CHECK(strstr(err, "train.eval_every"));
    TEST_EQ_INT(gt_doe_search_finish(&s, 2700, 100, err, sizeof err), -1); /* rung 0 ends at 150 */
    TEST_CHECK(strstr(err, "rung 0 ends at step 150, not a multiple of train.eval_every = 100"));
    TEST_EQ_INT(gt_doe_search_finish(&s, 0, 50, err, sizeof err), -1);
    TEST_CHECK(strstr(err, "train.max_steps"));
    gt_doe_search_init(&s);
    s.strategy = GT_DOE_HALVING;
    s.unit = GT_DOE_UNIT_DATA;
    s.min_budget = 1.5;
    TEST_EQ_INT(gt_doe_search_finish(&s, 0, 0, err, sizeof err), -1);
    TEST_CHECK(strstr(err, "fractions in (0, 1]"));

    /* in a matrix: file and line */
    const char *head = "[doe]\nname = h\n[factors]\nseed = 1,2\n[fixed]\ndata.file = x.h5\ntrain.max_steps = 90\n";
    char text[1024];
    snprintf(text, sizeof text, "%s[search]\nstrategy = halving\nmin_budget = 10\n", head);
    gt_doe_matrix m;
    const char *p = write_file("h.ini", text);
    TEST_EQ_INT(gt_doe_matrix_load(p, train_knows, &m, err, sizeof err), -1);
    char want[600];
    snprintf(want, sizeof want, "%s:8: [search] unit = steps needs a fixed train.eval_every", p);
    TEST_CHECK(strstr(err, want));
    gt_doe_matrix_free(&m);
    snprintf(text, sizeof text, "%s[search]\nstrategy = halving\neta = 0\n", head);
    p = write_file("h.ini", text);
    TEST_EQ_INT(gt_doe_matrix_load(p, train_knows, &m, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:10: [search] eta = '0'", p);
    TEST_CHECK(strstr(err, want));
    gt_doe_matrix_free(&m);
    /* a factor on the budget's key */
    snprintf(text, sizeof text,
             "[doe]\nname = h\n[factors]\ntrain.eval_every = 10,30\n[fixed]\ntrain.max_steps = 90\n"
             "[search]\nstrategy = halving\nmin_budget = 30\n");
    p = write_file("h.ini", text);
    TEST_EQ_INT(gt_doe_matrix_load(p, train_knows, &m, err, sizeof err), -1);
    TEST_CHECK(strstr(err, ":4: factor 'train.eval_every': with [search] strategy = halving, train.eval_every is not a factor"));
    gt_doe_matrix_free(&m);
    /* grid is the default: no [search] checks */
    snprintf(text, sizeof text, "%s", head);
    p = write_file("h.ini", text);
    TEST_EQ_INT(gt_doe_matrix_load(p, train_knows, &m, err, sizeof err), 0);
    TEST_EQ_INT(m.search.strategy, GT_DOE_GRID);
    TEST_EQ_INT(m.search.n_rungs, 0);
    gt_doe_matrix_free(&m);
}

static void test_select(void) {
    int order[6];
    char why[512];
    /* lower is better; 1 and 3 tie at 0.5: the lower first cell (2, config 3) wins; NaN last */
    gt_doe_rank_in in[6] = {
        {0, 0.9, 2, 0, 2}, {4, 0.5, 2, 0, 2}, {8, NAN, 0, 2, 2}, {2, 0.5, 1, 1, 2}, {6, 0.7, 2, 0, 2}, {10, 0.2, 2, 0, 2},
    };
    TEST_EQ_INT(gt_doe_select(in, 6, 2, 0, order, why, sizeof why), 2);
    TEST_EQ_INT(order[0], 5);
    TEST_EQ_INT(order[1], 3); /* tie: first cell 2 before 4 */
    TEST_EQ_INT(order[2], 1);
    TEST_EQ_INT(order[3], 4);
    TEST_EQ_INT(order[4], 0);
    TEST_EQ_INT(order[5], 2); /* no result: last */
    /* higher is better */
    TEST_EQ_INT(gt_doe_select(in, 6, 1, 1, order, why, sizeof why), 1);
    TEST_EQ_INT(order[0], 0);
    TEST_EQ_INT(order[5], 2);
    /* 5 configurations with a value, 5 slots: fine; 6 slots: the ladder stops */
    TEST_EQ_INT(gt_doe_select(in, 6, 5, 0, order, why, sizeof why), 5);
    TEST_EQ_INT(gt_doe_select(in, 6, 6, 0, order, why, sizeof why), -1);
    TEST_CHECK(strstr(why, "5 of 6 configurations have a result at this rung, fewer than the 6 that advance"));
    /* the order does not depend on the input order for equal values */
    gt_doe_rank_in tie[3] = {{9, 1.0, 1, 0, 1}, {3, 1.0, 1, 0, 1}, {5, 1.0, 1, 0, 1}};
    TEST_EQ_INT(gt_doe_select(tie, 3, 1, 0, order, why, sizeof why), 1);
    TEST_EQ_INT(order[0], 1);
    TEST_EQ_INT(order[1], 2);
    TEST_EQ_INT(order[2], 0);
}

static void test_sample(void) {
    int64_t ids[20], a[20], b[20], c[20], d[20];
    for (int i = 0; i < 20; i++) ids[i] = 100 + 3 * i;
    TEST_EQ_INT(gt_doe_data_sample(ids, 20, 0.25, 1, a), 5);
    TEST_EQ_INT(gt_doe_data_sample(ids, 20, 0.25, 1, b), 5);
    TEST_CHECK(!memcmp(a, b, sizeof(int64_t) * 5)); /* deterministic */
    TEST_EQ_INT(gt_doe_data_sample(ids, 20, 0.26, 1, c), 6); /* ceil */
    for (int i = 0, j = 0; i < 5; i++) { /* nested: the smaller sample inside the larger, in file order */
        while (j < 6 && c[j] != a[i]) j++;
        TEST_CHECK(j < 6);
    }
    for (int i = 1; i < 5; i++) TEST_CHECK(a[i] > a[i - 1]);
    int n2 = (int)gt_doe_data_sample(ids, 20, 0.25, 2, d), differ = 0;
    TEST_EQ_INT(n2, 5);
    for (int i = 0; i < 5; i++) differ |= a[i] != d[i];
    TEST_CHECK(differ); /* another seed, another sample */
    TEST_EQ_INT(gt_doe_data_sample(ids, 20, 1e-6, 1, a), 1);
    TEST_EQ_INT(gt_doe_data_sample(ids, 20, 1, 1, a), 20);
    TEST_CHECK(!memcmp(a, ids, sizeof ids));
}

/* rung records of a 3 x 2 (config x seed) matrix, then 'doe next' */
static void record(const gt_doe_matrix *m, int rung, int64_t index, const char *status, double metric) {
    gt_doe_cell c;
    gt_doe_cell_at(m, index, &c);
    char p[1024], text[512];
    snprintf(p, sizeof p, "mkdir -p %s/rungs/%d", m->dir, rung);
    TEST_REQUIRE(system(p) == 0);
    snprintf(p, sizeof p, "%s/rungs/%d/%s.json", m->dir, rung, c.id);
    if (isfinite(metric)) snprintf(text, sizeof text, "{\"status\": \"%s\", \"metric\": %.17g, \"steps\": 10}", status, metric);
    else snprintf(text, sizeof text, "{\"status\": \"%s\", \"metric\": null}", status);
    FILE *f = fopen(p, "w");
    TEST_REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static void test_next(void) {
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "[doe]\nname = nx\ndir = %s/sweep\n[factors]\nmodel.hidden = 8,16,32,64\nseed = 1,2\n"
             "[fixed]\ntrain.max_steps = 40\ntrain.eval_every = 10\n"
             "[search]\nstrategy = halving\neta = 2\nmin_budget = 10\n",
             g_dir);
    const char *p = write_file("nx.ini", text);
    gt_doe_matrix m;
    TEST_REQUIRE(gt_doe_matrix_load(p, train_knows, &m, err, sizeof err) == 0);
    TEST_EQ_INT(m.search.n_rungs, 3); /* 10, 20, 40 */
    TEST_EQ_INT(gt_doe_current_rung(&m), 0);
    int64_t *cells = NULL;
    TEST_EQ_INT(gt_doe_rung_cells(&m, 1, &cells), -1); /* not reached */
    free(cells);
    /* cells: index = hidden x 2 + seed (seed fastest). hidden 8: 0.50, 0.70 (mean 0.60);
     * 16: 0.40 and a failed seed (mean 0.40 of one); 32: 0.55, 0.65 (mean 0.60, ties 8 by cell order);
     * 64: both failed (no result) */
    record(&m, 0, 0, "done", 0.50), record(&m, 0, 1, "done", 0.70);
    record(&m, 0, 2, "done", 0.40), record(&m, 0, 3, "failed", NAN);
    record(&m, 0, 4, "done", 0.55), record(&m, 0, 5, "done", 0.65);
    record(&m, 0, 6, "failed", NAN); /* cell 7: no record at all */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 0, f), 0); /* keep 4 / 2 = 2: hidden 16, then hidden 8 (tie with 32: cell order) */
    fclose(f);
    TEST_CHECK(strstr(out, "2 of 4 configurations advance; best model.hidden=16 (train.best_val_loss 0.4 over 1 seed(s))"));
    TEST_CHECK(strstr(out, "next: rung 1 cells [0,1,2,3]"));
    TEST_CHECK(strstr(out, "cell 3 ("));
    TEST_CHECK(strstr(out, "cell 7 (") && strstr(out, "has no result (not run)"));
    free(out);
    TEST_EQ_INT(gt_doe_current_rung(&m), 1);
    int64_t n = gt_doe_rung_cells(&m, 1, &cells);
    TEST_EQ_INT(n, 4);
    TEST_CHECK(n == 4 && cells[0] == 0 && cells[1] == 1 && cells[2] == 2 && cells[3] == 3);
    free(cells);
    /* the stopped cells are marked as such where they have a directory: none here (records only) */
    snprintf(text, sizeof text, "%s/sweep/ladder.json", g_dir);
    f = fopen(text, "r");
    TEST_REQUIRE(f);
    char buf[8192];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = 0;
    fclose(f);
    TEST_CHECK(strstr(buf, "\"failed_cells\""));
    TEST_CHECK(strstr(buf, "\"advanced\":\ttrue"));
    /* rung 1: the failed seed of hidden 16 fails again, hidden 8's seeds finish: 1 slot, hidden 8 wins (0.3) */
    record(&m, 1, 0, "done", 0.30), record(&m, 1, 1, "done", 0.34);
    record(&m, 1, 2, "done", 0.33), record(&m, 1, 3, "failed", NAN);
    f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 1, f), 0);
    fclose(f);
    TEST_CHECK(strstr(out, "1 of 2 configurations advance; best model.hidden=8 (train.best_val_loss 0.32 over 2 seed(s))"));
    TEST_CHECK(strstr(out, "next: rung 2 cells [0,1]"));
    free(out);
    /* idempotent: the same 'next' again gives the same ladder */
    f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 1, f), 0);
    fclose(f);
    TEST_CHECK(strstr(out, "next: rung 2 cells [0,1]"));
    free(out);
    /* the last rung: both seeds fail -> no configuration has a result: the ladder stops with the rule */
    record(&m, 2, 0, "failed", NAN), record(&m, 2, 1, "failed", NAN);
    f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 2, f), -1);
    fclose(f);
    TEST_CHECK(strstr(out, "0 of 1 configurations have a result at this rung, fewer than the 1 that advance"));
    free(out);
    /* one seed reruns and finishes: the ladder ends with the choice */
    record(&m, 2, 1, "done", 0.2);
    f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 2, f), 1);
    fclose(f);
    TEST_CHECK(strstr(out, "chosen: model.hidden=8"));
    free(out);
    gt_doe_matrix_free(&m);
}

/* [search] per = appliances: one ladder per appliance group (their losses are not comparable) */
static void test_per(void) {
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "[doe]\nname = per\ndir = %s/sweep-per\n[factors]\nmodel.hidden = 8,16\nappliances = fridge,kettle\n"
             "[fixed]\ntrain.max_steps = 20\ntrain.eval_every = 10\n"
             "[search]\nstrategy = halving\neta = 2\nmin_budget = 10\nper = appliances\n",
             g_dir);
    gt_doe_matrix m;
    TEST_REQUIRE(gt_doe_matrix_load(write_file("per.ini", text), train_knows, &m, err, sizeof err) == 0);
    /* cells: hidden x 2 + appliances; the kettle losses are lower than every fridge loss */
    record(&m, 0, 0, "done", 0.5), record(&m, 0, 1, "done", 0.1);
    record(&m, 0, 2, "done", 0.4), record(&m, 0, 3, "done", 0.2);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 0, f), 0);
    fclose(f);
    TEST_CHECK(strstr(out, "next: rung 1 cells [1,2]")); /* each group's best, not the two kettle ones */
    free(out);
    record(&m, 1, 1, "done", 0.05), record(&m, 1, 2, "done", 0.3);
    f = open_memstream(&out, &len);
    TEST_EQ_INT(gt_doe_next(&m, 1, f), 1);
    fclose(f);
    TEST_CHECK(strstr(out, "chosen: model.hidden=16 appliances=fridge"));
    TEST_CHECK(strstr(out, "chosen: model.hidden=8 appliances=kettle"));
    free(out);
    gt_doe_matrix_free(&m);
    snprintf(text, sizeof text,
             "[doe]\nname = per\n[factors]\nseed = 1,2\n[fixed]\ntrain.max_steps = 20\ntrain.eval_every = 10\n"
             "[search]\nstrategy = halving\nmin_budget = 10\nper = seed\n");
    TEST_EQ_INT(gt_doe_matrix_load(write_file("per.ini", text), train_knows, &m, err, sizeof err), -1);
    TEST_CHECK(strstr(err, ":8: [search] per = seed: the seed is averaged over"));
    gt_doe_matrix_free(&m);
}

int main(void) {
    gt_task_register_builtins(); /* task/task_registry.h */
    snprintf(g_dir, sizeof g_dir, "/tmp/gt_test_halving_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", g_dir, g_dir);
    TEST_REQUIRE(system(cmd) == 0);
    test_rungs();
    test_search_errors();
    test_select();
    test_sample();
    test_next();
    test_per();
    if (gt_test_failures == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
        if (system(cmd)) fprintf(stderr, "cannot remove %s\n", g_dir);
    }
    TEST_DONE();
}
