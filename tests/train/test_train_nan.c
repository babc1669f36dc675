/* tests/train/test_train_nan.c (np 2): the NaN/Inf guard and its forensics.
 *
 * Scenario: a model trained on a clean export (statistics frozen in its
 * checkpoint) continues on a new export of the same meters in which household
 * 2 carries absurd 1e30 W glitches. With data.screen=off the spike windows
 * reach the model, the gradients overflow, every such step is skipped, and
 * after train.nan_max_bad consecutive bad steps the run ends with
 * GT_EXIT_NUMERIC; forensics.jsonl names exactly that household, with time
 * ranges that contain a spike. With data.screen=drop the same resume trains
 * cleanly. (With screen=off from the start, the spike enters the train-split
 * moments and only squashes the normalised data: finite, see docs/training.md.) */
#include <cjson/cJSON.h>

#include "io/read.h"
#include "synth/synth.h"
#include "train_test_util.h"
#include "task/task_registry.h"

enum { SPIKE_H = 2, EVERY = 40 };

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], clean[600], spiky[600], run_off[600], run_drop[600];
    tt_scratch(dir, sizeof dir, "nan", comm);
    snprintf(clean, sizeof clean, "%s/clean.h5", dir);
    snprintf(spiky, sizeof spiky, "%s/spiky.h5", dir);
    snprintf(run_off, sizeof run_off, "%s/run-off", dir);
    snprintf(run_drop, sizeof run_drop, "%s/run-drop", dir);
    tt_write_nilm(clean, -1, 0, comm);
    tt_write_nilm(spiky, SPIKE_H, EVERY, comm);

    gt_train_config c;
    tt_cnn_config(&c, clean);
    /* the planted 1e30 W samples must reach the trainer (the NaN guard is what is tested here), not be
     * dropped as non-measurements where data enters (data.power_limit_w, tested in test_io_crafted) */
    gt_nilm_data_cfg_set(&c.data)->power_limit_w = 0;
    c.write_outputs = 1;
    c.nan_max_bad = 3;
    c.max_steps = 12;
    c.stop_after = 2;
    gt_train_result r;

    /* screen=off */
    c.data.screen = GT_SCREEN_OFF;
    c.run_dir = run_off;
    TEST_EQ_INT(gt_train_run(&c, comm, &r), GT_EXIT_PREEMPTED);
    gt_train_result_free(&r);
    c.stop_after = 0;
    c.resume = 1;
    c.data_file = spiky;
    TEST_EQ_INT(gt_train_run(&c, comm, &r), GT_EXIT_NUMERIC);
    TEST_EQ_INT(r.steps, 2);   /* no update after the checkpoint */
    TEST_EQ_INT(r.skipped, 3); /* exactly nan_max_bad steps skipped */
    gt_train_result_free(&r);

    if (rank == 0) {
        gt_nilm_synth_cfg sc;
        tt_nilm_synth(&sc);
        struct gt_nilm_household_info info;
        gt_nilm_household_info(&sc, SPIKE_H, &info);
        char p[700];
        snprintf(p, sizeof p, "%s/forensics.jsonl", run_off);
        FILE *f = fopen(p, "r");
        TEST_REQUIRE(f);
        char line[4096];
        int n = 0, named = 0, covered = 0;
        while (fgets(line, sizeof line, f)) {
            cJSON *j = cJSON_Parse(line);
            TEST_REQUIRE(j);
            n++;
            cJSON *id = cJSON_GetObjectItem(j, "household_id");
            cJSON *t0 = cJSON_GetObjectItem(j, "t_start_ms"), *t1 = cJSON_GetObjectItem(j, "t_end_ms");
            cJSON *fi = cJSON_GetObjectItem(j, "file_index");
            if (id && cJSON_IsNumber(id) && (int64_t)id->valuedouble == info.id && fi &&
                (int)fi->valuedouble == SPIKE_H)
                named++;
            if (t0 && t1) {
                /* a spike row r = EVERY/2 + k*EVERY at t0 + r*6000 ms inside [t_start, t_end] */
                int64_t a = (int64_t)t0->valuedouble, b = (int64_t)t1->valuedouble;
                for (int64_t row = EVERY / 2; row < info.n_rows; row += EVERY) {
                    int64_t t = info.t0_ms + row * 6000;
                    if (t >= a && t <= b) {
                        covered++;
                        break;
                    }
                }
            }
            cJSON_Delete(j);
        }
        fclose(f);
        fprintf(stderr, "nan: %d forensics lines, %d name household %lld, %d contain a spike\n", n, named,
                (long long)info.id, covered);
        TEST_CHECK(n >= 3);
        TEST_EQ_INT(named, n);
        TEST_EQ_INT(covered, n);
    }

    /* screen=drop: the same continuation trains cleanly */
    c.data.screen = GT_SCREEN_DROP;
    c.data_file = clean;
    c.resume = 0;
    c.stop_after = 2;
    c.run_dir = run_drop;
    TEST_EQ_INT(gt_train_run(&c, comm, &r), GT_EXIT_PREEMPTED);
    gt_train_result_free(&r);
    c.stop_after = 0;
    c.resume = 1;
    c.data_file = spiky;
    TEST_EQ_INT(gt_train_run(&c, comm, &r), 0);
    TEST_EQ_INT(r.steps, 12);
    TEST_EQ_INT(r.skipped, 0);
    TEST_CHECK(isfinite(r.last_loss) && isfinite(r.last_val));
    gt_train_result_free(&r);
    if (rank == 0) {
        char p[700];
        snprintf(p, sizeof p, "%s/forensics.jsonl", run_drop);
        struct stat st;
        TEST_CHECK(stat(p, &st) != 0);
    }
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
