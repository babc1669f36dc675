/* tests/train/test_train_resume.c (np 1, 2): bit-exact resume.
 * Run N steps straight; run again stopping after M < N steps (train.stop_after:
 * checkpoint, exit 75), resume from the run directory to N: the final
 * parameters (xxh64) and every loss of the resumed segment are bit-identical
 * to the uninterrupted run. Prefetching and micro-batching are on. */
#include "train_test_util.h"

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], file[600], run_a[600], run_b[600];
    tt_scratch(dir, sizeof dir, "resume", comm);
    snprintf(file, sizeof file, "%s/nilm.h5", dir);
    snprintf(run_a, sizeof run_a, "%s/run-a", dir);
    snprintf(run_b, sizeof run_b, "%s/run-b", dir);
    tt_write_nilm(file, -1, 0, comm);

    const int N = 24, M = 9;
    gt_train_config c;
    tt_cnn_config(&c, file);
    c.max_steps = N;
    c.write_outputs = 1;
    c.eval_every = 8;
    c.checkpoint_every = 4;
    c.keep = 2;

    c.run_dir = run_a;
    gt_train_result ra, rb1, rb2;
    TEST_EQ_INT(gt_train_run(&c, comm, &ra), 0);
    TEST_EQ_INT(ra.steps, N);

    c.run_dir = run_b;
    c.stop_after = M;
    TEST_EQ_INT(gt_train_run(&c, comm, &rb1), GT_EXIT_PREEMPTED);
    TEST_EQ_INT(rb1.steps, M);

    c.stop_after = 0;
    c.resume = 1;
    TEST_EQ_INT(gt_train_run(&c, comm, &rb2), 0);
    TEST_EQ_INT(rb2.steps, N);
    TEST_EQ_INT(rb2.n_losses, N - M);
    if (rank == 0) {
        fprintf(stderr, "resume: straight %016llx, stopped at %d + resumed %016llx\n",
                (unsigned long long)ra.params_checksum, M, (unsigned long long)rb2.params_checksum);
        TEST_CHECK(ra.params_checksum == rb2.params_checksum);
        for (int i = 0; i < M && i < rb1.n_losses; i++) TEST_CHECK(rb1.losses[i] == ra.losses[i]);
        for (int i = 0; i < N - M && i < rb2.n_losses; i++) TEST_CHECK(rb2.losses[i] == ra.losses[M + i]);
        TEST_CLOSE(rb2.best_val, ra.best_val, 0, 0);
        /* outputs of the run directory */
        const char *names[] = {"config.ini", "manifest.json", "metrics.jsonl", "screened.csv"};
        for (int i = 0; i < 4; i++) {
            char p[700];
            snprintf(p, sizeof p, "%s/%s", run_b, names[i]);
            struct stat st;
            TEST_CHECK(stat(p, &st) == 0);
        }
        char p[700];
        snprintf(p, sizeof p, "%s/checkpoints/ckpt-%09d.ok", run_b, N);
        struct stat st;
        TEST_CHECK(stat(p, &st) == 0);
        snprintf(p, sizeof p, "%s/forensics.jsonl", run_b);
        TEST_CHECK(stat(p, &st) != 0); /* clean data: no forensics */
    }
    gt_train_result_free(&ra);
    gt_train_result_free(&rb1);
    gt_train_result_free(&rb2);
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
