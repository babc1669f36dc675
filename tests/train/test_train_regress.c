/* tests/train/test_train_regress.c: the throughput regression detector
 * (train/regress.h) on recorded runs written here: manifest.json and
 * timing.json files with chosen samples/s and phase times, so every verdict,
 * ratio, median and phase is asserted exactly, whatever the machine's load
 * (issue #37, class 8: a live slowed run measured 0.939 on a busy machine
 * and the test failed). Which runs count as the baseline (same hashes,
 * finished with exit 0, ended before, long enough, the newest 10), the
 * threshold on both sides, the phase that grew most, the one-line text. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "train/regress.h"

static char g_dir[256];

typedef struct {
    const char *cfg, *hw, *end; /* hashes (16 hex digits), end_time */
    int exit_code;
    double sps, train_s;
    double phase[5]; /* seconds per step: data_wait, forward, backward, allreduce, optimizer */
} rec;

/* a recorded run dir/name: 100 steps, each phase's mean_s = its seconds per step x 100 */
static void write_run(const char *dir, const char *name, const rec *r) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(dir, 0755);
    TEST_REQUIRE(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/%s/manifest.json", dir, name);
    FILE *f = fopen(path, "w");
    TEST_REQUIRE(f);
    fprintf(f, "{\"config_hash\":\"%s\",\"hardware_hash\":\"%s\",\"end_time\":\"%s\",\"exit_code\":%d}\n", r->cfg,
            r->hw, r->end, r->exit_code);
    fclose(f);
    snprintf(path, sizeof path, "%s/%s/timing.json", dir, name);
    f = fopen(path, "w");
    TEST_REQUIRE(f);
    static const char *const ph[5] = {"data_wait", "forward", "backward", "allreduce", "optimizer"};
    fprintf(f, "{\"samples_per_s\":%.17g,\"train_time_s\":%.17g,\"steps\":100,\"events\":[", r->sps, r->train_s);
    for (int k = 0; k < 5; k++) fprintf(f, "%s{\"name\":\"%s\",\"mean_s\":%.17g}", k ? "," : "", ph[k], 100 * r->phase[k]);
    fprintf(f, "]}\n");
    fclose(f);
}

static const char *CFG = "00000000000000c1", *HW = "00000000000000a1";

static rec base_rec(const char *end, double sps) {
    rec r = {CFG, HW, end, 0, sps, 30, {0.001, 0.010, 0.020, 0.002, 0.0005}};
    return r;
}

static void compare(const char *dir, const char *name, double threshold, double min_s, gt_regress_result *g) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    TEST_REQUIRE(gt_regress_compare(path, threshold, min_s, g) == 0);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/gt_regress_XXXXXX");
    TEST_REQUIRE(mkdtemp(g_dir));
    char P[300];
    gt_regress_result g;
    char line[1024];

    /* ---- 3 earlier runs at 900, 1000, 1100 samples/s (median 1000); the new run at 500 with forward x3 */
    snprintf(P, sizeof P, "%s/a", g_dir);
    rec r = base_rec("2026-12-01T10:00:00Z", 900);
    write_run(P, "r1", &r);
    r = base_rec("2026-12-01T11:00:00Z", 1100);
    write_run(P, "r2", &r);
    r = base_rec("2026-12-01T12:00:00Z", 1000);
    write_run(P, "r3", &r);
    /* not the baseline: another configuration, other hardware, a failed run, a later one, a short one */
    r = base_rec("2026-12-01T09:00:00Z", 10);
    r.cfg = "00000000000000c2";
    write_run(P, "other_cfg", &r);
    r = base_rec("2026-12-01T09:00:00Z", 10);
    r.hw = "00000000000000a2";
    write_run(P, "other_hw", &r);
    r = base_rec("2026-12-01T09:00:00Z", 10);
    r.exit_code = 1;
    write_run(P, "failed", &r);
    r = base_rec("2026-12-02T09:00:00Z", 10);
    write_run(P, "later", &r);
    r = base_rec("2026-12-01T09:30:00Z", 10);
    r.train_s = 1.5;
    write_run(P, "short", &r);
    rec me = base_rec("2026-12-01T13:00:00Z", 500);
    me.phase[1] = 0.030;  /* forward: 10 -> 30 ms per step, the most */
    me.phase[2] = 0.025;  /* backward: 20 -> 25 ms */
    me.phase[0] = 0.0005; /* data_wait shrank */
    write_run(P, "me", &me);
    compare(P, "me", 0.2, 2.0, &g);
    TEST_EQ_INT(g.n_base, 3);
    TEST_CLOSE(g.base_samples_per_s, 1000, 0, 1e-12);
    TEST_CLOSE(g.samples_per_s, 500, 0, 1e-12);
    TEST_CLOSE(g.ratio, 0.5, 0, 1e-12);
    TEST_EQ_INT(g.slower, 1);
    TEST_CHECK(!strcmp(g.phase, "forward"));
    TEST_CLOSE(g.phase_s, 0.030, 0, 1e-9);
    TEST_CLOSE(g.base_phase_s, 0.010, 0, 1e-9);
    TEST_CHECK(!strcmp(g.newest_base, "r3"));
    gt_regress_describe(&g, line, sizeof line);
    TEST_CHECK(strstr(line, "throughput regression: 500 samples/s, 50% of the median 1000 of 3 earlier runs") != NULL);
    TEST_CHECK(strstr(line, "the phase that slowed most: forward 30 ms per step (was 10 ms, +200%)") != NULL);
    TEST_CHECK(strstr(line, "(newest: r3)") != NULL);
    printf("%s\n", line);
    /* the short run counts when the minimum allows it: 4 runs, median (900 + 1000) / 2 */
    compare(P, "me", 0.2, 1.0, &g);
    TEST_EQ_INT(g.n_base, 4);
    TEST_CLOSE(g.base_samples_per_s, 950, 0, 1e-12);
    /* off: never slower */
    compare(P, "me", 0, 2.0, &g);
    TEST_EQ_INT(g.slower, 0);
    /* the run itself too short to compare: -1 */
    me.train_s = 1.0;
    write_run(P, "me_short", &me);
    char path[600];
    snprintf(path, sizeof path, "%s/me_short", P);
    TEST_EQ_INT(gt_regress_compare(path, 0.2, 2.0, &g), -1);
    TEST_EQ_INT(gt_regress_compare(path, 0.2, 0.5, &g), 0);

    /* ---- the threshold on both sides: 790 is a regression at 0.2, 810 is not; 810 is one at 0.1 */
    snprintf(P, sizeof P, "%s/b", g_dir);
    r = base_rec("2026-12-01T10:00:00Z", 1000);
    write_run(P, "r1", &r);
    me = base_rec("2026-12-01T11:00:00Z", 790);
    write_run(P, "m790", &me);
    compare(P, "m790", 0.2, 2.0, &g);
    TEST_EQ_INT(g.n_base, 1);
    TEST_EQ_INT(g.slower, 1);
    snprintf(P, sizeof P, "%s/b2", g_dir);
    write_run(P, "r1", &r);
    me = base_rec("2026-12-01T11:00:00Z", 810);
    write_run(P, "m810", &me);
    compare(P, "m810", 0.2, 2.0, &g);
    TEST_EQ_INT(g.n_base, 1);
    TEST_EQ_INT(g.slower, 0);
    TEST_CHECK(g.phase[0] == 0); /* no phase grew */
    gt_regress_describe(&g, line, sizeof line);
    TEST_CHECK(!strncmp(line, "throughput: 810 samples/s, 81% of the median 1000 of 1 earlier run of", 68));
    TEST_CHECK(strstr(line, "phase") == NULL);
    compare(P, "m810", 0.1, 2.0, &g);
    TEST_EQ_INT(g.slower, 1);
    /* faster than the baseline: no regression at any threshold */
    me = base_rec("2026-12-01T12:00:00Z", 5000);
    write_run(P, "fast", &me);
    compare(P, "fast", 0.9, 2.0, &g);
    TEST_EQ_INT(g.n_base, 2);
    TEST_CLOSE(g.base_samples_per_s, 905, 0, 1e-12);
    TEST_EQ_INT(g.slower, 0);

    /* ---- at most the newest GT_REGRESS_MAX_BASE earlier runs: two old slow ones fall out */
    snprintf(P, sizeof P, "%s/c", g_dir);
    for (int i = 0; i < GT_REGRESS_MAX_BASE + 2; i++) {
        char end[32], name[16];
        snprintf(end, sizeof end, "2026-12-01T%02d:00:00Z", i);
        snprintf(name, sizeof name, "r%02d", i);
        r = base_rec(end, i < 2 ? 1 : 1000 + i);
        write_run(P, name, &r);
    }
    me = base_rec("2026-12-01T23:00:00Z", 1000);
    write_run(P, "me", &me);
    compare(P, "me", 0.2, 2.0, &g);
    TEST_EQ_INT(g.n_base, GT_REGRESS_MAX_BASE);
    TEST_CLOSE(g.base_samples_per_s, 1006.5, 0, 1e-12); /* the median of 1002..1011 */
    TEST_CHECK(!strcmp(g.newest_base, "r11"));
    TEST_EQ_INT(g.slower, 0);

    /* ---- the first run: nothing to compare with; a directory without timing.json: -1 */
    snprintf(P, sizeof P, "%s/d", g_dir);
    me = base_rec("2026-12-01T10:00:00Z", 1000);
    write_run(P, "only", &me);
    compare(P, "only", 0.2, 2.0, &g);
    TEST_EQ_INT(g.n_base, 0);
    TEST_EQ_INT(g.slower, 0);
    snprintf(path, sizeof path, "%s/only/timing.json", P);
    unlink(path);
    snprintf(path, sizeof path, "%s/only", P);
    TEST_EQ_INT(gt_regress_compare(path, 0.2, 2.0, &g), -1);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (getenv("KEEP") == NULL && system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    TEST_DONE();
}
