/* tests/train/test_train_resume.c (np 1, 2): bit-exact resume.
 * Run N steps straight; run again stopping after M < N steps (train.stop_after:
 * checkpoint, exit 75), resume from the run directory to N: the final
 * parameters (xxh64) and every loss of the resumed segment are bit-identical
 * to the uninterrupted run. Prefetching and micro-batching are on.
 * Two cases: the plain configuration (no dropout, no plateau rule), and
 * s2p_cnn dropout 0.5 with the learning-rate plateau rule reducing the lr
 * before and after the interruption (the masks are keyed by step and window,
 * the plateau factor and counter come back from the checkpoint). And
 * model.dropout = auto: off for a one-epoch run, on for a four-epoch one. */
#include "train_test_util.h"
#include "task/task_registry.h"

/* One straight run and one stopped + resumed run of c in dir/run-<tag>-{a,b};
 * returns the straight run's checksum and plateau reductions. */
static uint64_t resume_case(gt_train_config c, const char *dir, const char *tag, int N, int M, int rank,
                            int64_t *reductions_before_stop, int64_t *reductions_total) {
    char run_a[600], run_b[600];
    snprintf(run_a, sizeof run_a, "%s/run-%s-a", dir, tag);
    snprintf(run_b, sizeof run_b, "%s/run-%s-b", dir, tag);
    c.max_steps = N;
    c.write_outputs = 1;
    c.checkpoint_every = 4;
    c.keep = 2;

    c.run_dir = run_a;
    gt_train_result ra, rb1, rb2;
    TEST_EQ_INT(gt_train_run(&c, MPI_COMM_WORLD, &ra), 0);
    TEST_EQ_INT(ra.steps, N);

    c.run_dir = run_b;
    c.stop_after = M;
    TEST_EQ_INT(gt_train_run(&c, MPI_COMM_WORLD, &rb1), GT_EXIT_PREEMPTED);
    TEST_EQ_INT(rb1.steps, M);

    c.stop_after = 0;
    c.resume = 1;
    TEST_EQ_INT(gt_train_run(&c, MPI_COMM_WORLD, &rb2), 0);
    TEST_EQ_INT(rb2.steps, N);
    TEST_EQ_INT(rb2.n_losses, N - M);
    *reductions_before_stop = rb1.lr_reductions;
    *reductions_total = ra.lr_reductions;
    if (rank == 0) {
        fprintf(stderr, "resume %s: straight %016llx, stopped at %d + resumed %016llx; lr reductions %lld straight "
                "(%lld before step %d, %lld after the resume), final factor %g / %g\n",
                tag, (unsigned long long)ra.params_checksum, M, (unsigned long long)rb2.params_checksum,
                (long long)ra.lr_reductions, (long long)rb1.lr_reductions, M, (long long)rb2.lr_reductions,
                ra.lr_factor, rb2.lr_factor);
        TEST_CHECK(ra.params_checksum == rb2.params_checksum);
        for (int i = 0; i < M && i < rb1.n_losses; i++) TEST_CHECK(rb1.losses[i] == ra.losses[i]);
        for (int i = 0; i < N - M && i < rb2.n_losses; i++) TEST_CHECK(rb2.losses[i] == ra.losses[M + i]);
        TEST_CLOSE(rb2.best_val, ra.best_val, 0, 0);
        TEST_CHECK(rb2.lr_factor == ra.lr_factor);
        TEST_EQ_INT(rb1.lr_reductions + rb2.lr_reductions, ra.lr_reductions);
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
    uint64_t sum = ra.params_checksum;
    gt_train_result_free(&ra);
    gt_train_result_free(&rb1);
    gt_train_result_free(&rb2);
    return sum;
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], file[600];
    tt_scratch(dir, sizeof dir, "resume", comm);
    snprintf(file, sizeof file, "%s/nilm.h5", dir);
    tt_write_nilm(file, -1, 0, comm);

    const int N = 24, M = 9;
    gt_train_config c;
    tt_cnn_config(&c, file);
    c.eval_every = 8;
    c.model.dropout = 0;
    c.lr_plateau = 0;
    int64_t red_stop = 0, red_total = 0;
    uint64_t plain = resume_case(c, dir, "plain", N, M, rank, &red_stop, &red_total);
    TEST_EQ_INT(red_total, 0);

    /* dropout + plateau: a validation every 2 steps at a high lr, one validation
     * without improvement halves the lr; reductions before and after step M */
    c.model.dropout = 0.5f;
    c.dropout_auto = 0; /* always on (auto would turn it off for a run this short) */
    c.lr = 2e-2;
    c.eval_every = 2;
    c.lr_plateau = 0.5;
    c.plateau_patience = 1;
    c.patience = 0;
    uint64_t drop = resume_case(c, dir, "dropout", N, M, rank, &red_stop, &red_total);
    TEST_CHECK(red_stop >= 1);             /* the factor had to come back from the checkpoint */
    TEST_CHECK(red_total > red_stop);      /* and the rule kept working after the resume */
    TEST_CHECK(drop != plain);

    /* model.dropout = auto: off for a run of 1 pass over the train split (the
     * same bits as dropout 0), on for one of 4 passes */
    for (int epochs = 1; epochs <= 4; epochs += 3) {
        gt_train_config a;
        tt_cnn_config(&a, file);
        a.max_steps = 0;
        a.epochs = epochs;
        a.model.dropout = 0.5f;
        a.dropout_auto = 1;
        gt_train_result r_auto, r_off;
        TEST_EQ_INT(gt_train_run(&a, comm, &r_auto), 0);
        a.model.dropout = 0;
        TEST_EQ_INT(gt_train_run(&a, comm, &r_off), 0);
        if (rank == 0)
            fprintf(stderr, "dropout auto, %d epoch(s), %lld steps: %016llx, without dropout %016llx\n", epochs,
                    (long long)r_auto.steps, (unsigned long long)r_auto.params_checksum,
                    (unsigned long long)r_off.params_checksum);
        TEST_CHECK(epochs == 1 ? r_auto.params_checksum == r_off.params_checksum
                               : r_auto.params_checksum != r_off.params_checksum);
        gt_train_result_free(&r_auto);
        gt_train_result_free(&r_off);
    }

    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
