/* tests/train/test_train_lstm.c (np 2): the LSTM anomaly model trains on a
 * small wind-farm file: next-step loss goes down, validation is finite,
 * replicas identical. */
#include "train_test_util.h"
#include "task/task_registry.h"

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], file[600];
    tt_scratch(dir, sizeof dir, "lstm", comm);
    snprintf(file, sizeof file, "%s/pdm.h5", dir);
    tt_write_pdm(file, comm);

    gt_train_config c;
    gt_train_config_defaults(&c, GT_MODEL_LSTM);
    c.data_file = file;
    c.data.window = 48;
    c.data.stride = 24;
    c.model.hidden = 16;
    c.model.n_layers = 1;
    c.model.tbptt = 0;
    c.lr = 1e-2;
    c.warmup = 5;
    c.batch = 16;
    c.micro_batch = 8;
    c.epochs = 0;
    c.max_steps = 60;
    c.quiet = 1;
    c.write_outputs = 0;
    c.checkpoint_minutes = 0;
    gt_train_result r;
    TEST_EQ_INT(gt_train_run(&c, comm, &r), 0);
    TEST_EQ_INT(r.steps, 60);
    TEST_CHECK(r.replicas_identical);
    if (rank == 0) {
        double f5 = tt_mean(r.losses, 5), l5 = tt_mean(r.losses + r.n_losses - 5, 5);
        fprintf(stderr, "lstm: loss %.4f -> %.4f, val %.4f\n", f5, l5, r.last_val);
        TEST_CHECK(l5 < 0.7 * f5);
        TEST_CHECK(isfinite(r.last_val) && r.last_val < f5);
    }
    gt_train_result_free(&r);
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
