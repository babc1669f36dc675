/* tests/train/test_train_dp.c (np 1, 2, 4): data parallelism is exact.
 * On one small NILM file, a P-rank run and a 1-rank run (rank 0 alone on a
 * sub-communicator) with the same GLOBAL batch, micro-batching on, must give
 * the same loss at every step to float summation order: the P-rank sum of
 * micro-batch gradients is rounded in another order than the 1-rank
 * accumulation, and training amplifies that rounding step by step (about
 * 10x per 15 steps here: 1e-10 at step 0, 1e-4 at step 90 with OpenBLAS's
 * Haswell kernels, 1e-7 with its SkylakeX kernels), so the first 20 steps
 * agree to 1e-6 and all 120 to 2e-3, while a dropped or double-counted
 * shard moves the loss by percents from the first updates; identical replicas
 * on every rank, and a loss that goes down; for the MSE and the L1 training
 * loss (model.loss), and the L1 run really optimises L1: its first-step loss
 * (mean |d| over the same first batch from the same initial model) is below
 * the square root of the MSE run's (Cauchy-Schwarz, strict unless all |d|
 * are equal). The gated head (power + on/off logit per appliance) passes the
 * same data-parallel checks, also with time-of-day/week input channels
 * (data.time_features) on s2p_cnn ((C, W) input, with activation
 * augmentation, data.augment) and on s2p_tf ((W, C) input, local time of
 * Europe/London). The overlapped gradient exchange (train.overlap) gives
 * the same bits as the exchange after backward. */
#include "train_test_util.h"
#include "task/task_registry.h"

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char dir[512], file[600];
    tt_scratch(dir, sizeof dir, "dp", comm);
    snprintf(file, sizeof file, "%s/nilm.h5", dir);
    tt_write_nilm(file, -1, 0, comm);

    static const char *const names[5] = {"mse", "l1", "gated", "gated, s2p_cnn, day+week, augment 0.5", "gated, s2p_tf, day"};
    double first[5] = {0, 0, 0, 0, 0};
    for (int kind = 0; kind < 5; kind++) {
        gt_train_config c;
        tt_cnn_config(&c, file);
        c.max_steps = 120;
        c.lr = 3e-3;
        c.model.loss = kind == 1 ? GT_LOSS_L1 : GT_LOSS_MSE;
        c.model.gated = kind >= 2;
        if (kind == 3) {
            gt_nilm_data_config *nc = gt_nilm_data_cfg_set(&c.data);
            nc->time_features = 4, nc->augment = 0.5;
        }
        if (kind == 4) {
            gt_model_config_default(&c.model, GT_MODEL_S2P_TF);
            c.model.d_model = 16, c.model.n_heads = 2, c.model.d_ff = 32, c.model.n_layers = 1;
            c.model.gated = 1;
            gt_nilm_data_config *nc = gt_nilm_data_cfg_set(&c.data);
            nc->time_features = 2;
            snprintf(nc->timezone, sizeof nc->timezone, "Europe/London");
        }

        gt_train_result rp;
        int rc = gt_train_run(&c, comm, &rp);
        TEST_EQ_INT(rc, 0);
        TEST_EQ_INT(rp.steps, 120);
        TEST_EQ_INT(rp.skipped, 0);
        TEST_CHECK(rp.replicas_identical);

        gt_train_result r1 = {0};
        MPI_Comm solo;
        MPI_Comm_split(comm, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
        if (rank == 0) {
            TEST_EQ_INT(gt_train_run(&c, solo, &r1), 0);
            MPI_Comm_free(&solo);
            TEST_EQ_INT(r1.n_losses, rp.n_losses);
            double worst = 0, worst20 = 0;
            for (int64_t i = 0; i < r1.n_losses && i < rp.n_losses; i++) {
                double rel = fabs(rp.losses[i] - r1.losses[i]) / fabs(r1.losses[i]);
                if (rel > worst) worst = rel;
                if (i < 20 && rel > worst20) worst20 = rel;
                TEST_CLOSE(rp.losses[i], r1.losses[i], 0, i < 20 ? 1e-6 : 2e-3);
            }
            double f5 = tt_mean(rp.losses, 10), l5 = tt_mean(rp.losses + rp.n_losses - 10, 10);
            fprintf(stderr,
                    "dp (%s): %d ranks vs 1 rank over %lld steps: max relative loss difference %.3g (first 20 steps %.3g); "
                    "loss %.4f -> %.4f, val %.4f; params %016llx vs %016llx\n",
                    names[kind], size, (long long)rp.n_losses, worst, worst20, f5, l5, rp.last_val,
                    (unsigned long long)rp.params_checksum, (unsigned long long)r1.params_checksum);
            if (size == 1) TEST_CHECK(rp.params_checksum == r1.params_checksum); /* same program, same bits */
            TEST_CHECK(l5 < 0.75 * f5);                                            /* it learns */
            TEST_CHECK(isfinite(rp.last_val));
        }
        first[kind] = rp.first_loss;
        gt_train_result_free(&r1);
        gt_train_result_free(&rp);
    }
    TEST_CHECK(first[1] > 0 && first[1] < sqrt(first[0]) * (1 - 1e-3));

    /* the overlapped gradient exchange (train.overlap, dist/grads.h) with small
     * buckets (several per step, started during the last micro-batch's
     * backward) gives the same bits as starting them all after backward */
    uint64_t sum[2] = {0, 0};
    for (int ov = 0; ov < 2; ov++) {
        gt_train_config c;
        tt_cnn_config(&c, file);
        c.max_steps = 30;
        c.overlap = ov;
        c.bucket_bytes = 2048;
        gt_train_result r;
        TEST_EQ_INT(gt_train_run(&c, comm, &r), 0);
        TEST_CHECK(r.replicas_identical);
        sum[ov] = r.params_checksum;
        gt_train_result_free(&r);
    }
    TEST_CHECK(sum[0] == sum[1]);
    if (rank == 0)
        fprintf(stderr, "overlap on/off, 2 KiB buckets: params %016llx / %016llx\n", (unsigned long long)sum[1],
                (unsigned long long)sum[0]);
    if (rank == 0) fprintf(stderr, "first-step loss: mse %.6g, l1 %.6g (sqrt(mse) %.6g)\n", first[0], first[1],
                           sqrt(first[0]));
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
