/* The stored runs of the evaluation tests (tests/eval/eval_runs.h), made once
 * per ctest run by the fixture's setup test test_eval_runs_setup:
 *   make_eval_runs [DIR]   (DIR: GT_EVAL_RUNS, else ./eval_runs; emptied first)
 * writes the two data files, trains the five runs with gt_train_run and runs
 * on the NILM runs and the window-32 PdM run the evaluation `gridtrain train`
 * runs at its end (gt_eval_cli_after_train: eval.json, report.md,
 * timing.json), then DIR/complete. The runs' settings are eval_runs.h's, the
 * trainer's those below (the tests were tuned on these models). Collective;
 * ctest runs it on one rank. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_eval.h"
#include "eval/eval_runs.h"
#include "task/task_registry.h"
#include "train/train_test_util.h"

static void train_nilm(const char *data, const char *run, int variant, MPI_Comm comm) {
    gt_train_config tc;
    tt_cnn_config(&tc, data); /* the trainer's settings: lr, warmup, batch 32 (micro-batch 8), log */
    const float dropout = tc.model.dropout;
    er_nilm_data(&tc.data, variant);
    gt_model_config m;
    er_nilm_model(&m, variant);
    m.window = tc.model.window, m.n_in = tc.model.n_in, m.n_out = tc.model.n_out; /* the task shapes it */
    tc.model = m;
    tc.model.dropout = dropout;
    tc.max_steps = 30;
    tc.write_outputs = 1;
    tc.run_dir = run;
    TEST_REQUIRE(gt_train_run(&tc, comm, NULL) == 0);
    gt_eval_cli_after_train(&tc, NULL, run, comm); /* what `gridtrain train` runs after training */
}

static void train_pdm(const char *data, const char *run, int T, int steps, int evaluate, MPI_Comm comm) {
    gt_train_config c;
    gt_train_config_defaults(&c, GT_MODEL_LSTM);
    c.data_file = data;
    er_pdm_data(&c.data, T);
    gt_model_config m;
    er_pdm_model(&m, T, 0);
    m.window = c.model.window, m.n_in = c.model.n_in, m.n_out = c.model.n_out;
    c.model = m;
    c.lr = 5e-3;
    c.warmup = 5;
    c.batch = 16;
    c.epochs = 0;
    c.max_steps = steps;
    c.log_every = 10;
    c.quiet = 1;
    c.write_outputs = 1;
    c.run_dir = run;
    c.checkpoint_minutes = 0;
    TEST_REQUIRE(gt_train_run(&c, comm, NULL) == 0);
    if (evaluate) gt_eval_cli_after_train(&c, NULL, run, comm);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins();
    MPI_Comm world = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(world, &rank);
    if (argc > 1) setenv("GT_EVAL_RUNS", argv[1], 1);
    char path[1200], run[1200];
    if (rank == 0) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", er_dir(), er_dir());
        TEST_REQUIRE(system(cmd) == 0);
    }
    MPI_Barrier(world);

    /* NILM: 4 households x 0.5 day at 6 s, clean (no spikes/gaps: exact edge checks) */
    er_path(path, sizeof path, "nilm.h5");
    gt_nilm_synth_cfg sc;
    tt_nilm_synth(&sc);
    sc.n_households = 4;
    sc.days = 0.5;
    gt_nilm_source *src = gt_synth_nilm_source(&sc);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 4096;
    gt_nilm_write(path, src, &wo, world, NULL);
    gt_synth_nilm_source_free(src);
    for (int v = ER_POWER; v <= ER_TIME; v++) {
        er_path(run, sizeof run, er_nilm_run_name(v));
        train_nilm(path, run, v, world);
    }

    /* PdM: one farm of 3 turbines, 0.1 day at 1 Hz, ~4 shocks per turbine */
    er_path(path, sizeof path, "farm.h5");
    gt_pdm_synth_cfg pc;
    gt_pdm_synth_defaults(&pc);
    pc.seed = 5;
    pc.n_farms = 1;
    pc.turbines_per_farm = 3;
    pc.days = 0.1;
    pc.rate_hz = 1;
    pc.shock_rate = 40;
    gt_pdm_source *ps = gt_synth_pdm_source(&pc);
    gt_pdm_write(path, ps, &wo, world, NULL);
    gt_synth_pdm_source_free(ps);
    er_path(run, sizeof run, "pdm-32");
    train_pdm(path, run, 32, 40, 1, world);
    er_path(run, sizeof run, "pdm-16");
    train_pdm(path, run, 16, 20, 0, world);

    MPI_Barrier(world);
    if (rank == 0 && !gt_test_failures) {
        er_path(path, sizeof path, "complete");
        FILE *f = fopen(path, "w");
        TEST_REQUIRE(f != NULL);
        fputs("runs of tests/eval/eval_runs.h\n", f);
        fclose(f);
    }
    int fails = gt_test_failures;
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, world);
    gt_dist_finalize();
    return fails ? 1 : 0;
}
