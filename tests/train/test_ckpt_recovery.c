/* Checkpoint recovery and retention at 1, 2, 4 ranks:
 *   keep = 3 prunes to the newest three committed checkpoints;
 *   a flipped byte in the newest file: load warns (naming it) and falls back;
 *   a missing commit marker (crash between rename and marker): skipped;
 *   a truncated file: skipped;
 *   the next save removes uncommitted leftovers older than it and keeps newer
 *   ones and the damaged-but-committed one within `keep`;
 *   the checkpoint of the best validation loss (train_state best_step) is kept
 *   beyond `keep`; GT_CKPT_BEST loads it, GT_CKPT_LATEST the newest,
 *   GT_CKPT_STEP exactly one step (or none); a damaged best checkpoint falls
 *   back to the newest with a warning naming its step. */
#define _GNU_SOURCE
#include <fcntl.h>

#include "ckpt_test_util.h"

static void flip_middle_byte(const char *path) {
    int fd = open(path, O_RDWR);
    TEST_REQUIRE(fd >= 0);
    off_t n = lseek(fd, 0, SEEK_END);
    unsigned char b = 0;
    TEST_REQUIRE(pread(fd, &b, 1, n / 2) == 1);
    b ^= 0x10;
    TEST_REQUIRE(pwrite(fd, &b, 1, n / 2) == 1);
    close(fd);
}

static void touch(const char *path) {
    FILE *f = fopen(path, "w");
    TEST_REQUIRE(f);
    fputs("partial", f);
    fclose(f);
}

/* Loads (rank 0 captures stderr), expects `step` and, when `warn` is not NULL,
 * a warning containing it. */
static void load_expect(const char *run, gt_model *m, long long step, const char *warn, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    gt_train_state ts;
    gt_norm_stats ns;
    ct_capture cap;
    if (rank == 0) ct_capture_begin(&cap);
    int64_t got = ct_load(run, m, &ts, &ns, comm);
    if (rank == 0) {
        char *text = ct_capture_end(&cap);
        if (warn && !strstr(text, warn)) fprintf(stderr, "expected a warning naming %s\n", warn);
        if (warn) TEST_CHECK(strstr(text, warn) != NULL && strstr(text, "warning") != NULL);
        free(text);
    }
    TEST_EQ_INT(got, step);
    if (got == step) ct_check(m, &ts, &ns, step);
}

int main(int argc, char **argv) {
    int rank, size;
    ct_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char *run = ct_tmpdir("ckpt-rec", comm);
    gt_model *m = ct_model(6);

    /* retention */
    for (long long s = 1; s <= 6; s++) TEST_EQ_INT(ct_save(run, m, s * 100, 3, comm), 0);
    MPI_Barrier(comm);
    if (rank == 0) {
        for (long long s = 1; s <= 6; s++) {
            int want = s >= 4;
            TEST_EQ_INT(ct_exists(run, s * 100, ".h5"), want);
            TEST_EQ_INT(ct_exists(run, s * 100, ".ok"), want);
        }
        TEST_EQ_INT(ct_count_files(run), 6);
    }
    load_expect(run, m, 600, NULL, comm);

    /* bit flip in the newest file */
    char *h600 = ct_path(run, 600, ".h5"), *ok500 = ct_path(run, 500, ".ok"), *h500 = ct_path(run, 500, ".h5");
    if (rank == 0) flip_middle_byte(h600);
    MPI_Barrier(comm);
    load_expect(run, m, 500, "ckpt-000000600.h5 is damaged", comm);

    /* a crash between rename and marker: 500 has no marker */
    if (rank == 0) TEST_REQUIRE(unlink(ok500) == 0);
    MPI_Barrier(comm);
    load_expect(run, m, 400, "ckpt-000000500.h5 has no commit marker", comm);
    if (rank == 0) {
        char *text = gt_ckpt_read_config(run);
        TEST_REQUIRE(text);
        TEST_CHECK(strstr(text, "step 400") != NULL);
        free(text);
    }

    /* leftovers: an older temp file, a newer temp file (kept) */
    char *t300 = ct_path(run, 300, ".h5.tmp"), *o200 = ct_path(run, 200, ".ok.tmp"),
         *t900 = ct_path(run, 900, ".h5.tmp"), *u300 = ct_path(run, 300, ".h5.tmp.Ab3xYz");
    if (rank == 0) {
        touch(t300);
        touch(o200);
        touch(t900);
        touch(u300); /* a unique temporary of a crashed save */
    }
    MPI_Barrier(comm);
    TEST_EQ_INT(ct_save(run, m, 700, 3, comm), 0);
    MPI_Barrier(comm);
    if (rank == 0) {
        TEST_CHECK(ct_exists(run, 700, ".h5") && ct_exists(run, 700, ".ok"));
        TEST_CHECK(ct_exists(run, 600, ".h5") && ct_exists(run, 600, ".ok")); /* committed, in keep */
        TEST_CHECK(ct_exists(run, 400, ".h5") && ct_exists(run, 400, ".ok"));
        TEST_CHECK(!ct_exists(run, 500, ".h5")); /* uncommitted, older than 700 */
        TEST_CHECK(access(t300, F_OK) != 0);
        TEST_CHECK(access(u300, F_OK) != 0);
        TEST_CHECK(access(o200, F_OK) != 0);
        TEST_CHECK(access(t900, F_OK) == 0); /* newer than the newest committed: left alone */
        TEST_EQ_INT(ct_count_files(run), 7);
    }
    load_expect(run, m, 700, NULL, comm);

    /* truncated newest file (size mismatch), then every file damaged -> -1 */
    char *h700 = ct_path(run, 700, ".h5"), *h400 = ct_path(run, 400, ".h5");
    if (rank == 0) TEST_REQUIRE(truncate(h700, 4096) == 0);
    MPI_Barrier(comm);
    load_expect(run, m, 400, "ckpt-000000700.h5 is damaged", comm);
    if (rank == 0) flip_middle_byte(h400);
    MPI_Barrier(comm);
    TEST_EQ_INT(ct_load(run, m, &(gt_train_state){0}, &(gt_norm_stats){0}, comm), -1);
    if (rank == 0) TEST_CHECK(gt_ckpt_read_config(run) == NULL);

    /* a new save at the same step as a damaged one replaces it */
    TEST_EQ_INT(ct_save(run, m, 700, 3, comm), 0);
    load_expect(run, m, 700, NULL, comm);

    /* best-validation retention and selection: best_step 200 from step 200 on, keep = 2 */
    char *run2 = ct_tmpdir("ckpt-best", comm);
    for (long long st = 100; st <= 600; st += 100) {
        gt_train_state ts;
        gt_norm_stats ns;
        ct_fill(m, st);
        ct_state(&ts, st);
        ts.best_step = st >= 200 ? 200 : 100;
        ct_norm(&ns, st);
        TEST_EQ_INT(gt_ckpt_save(run2, m, &ts, &ns, "[model]\nkind = s2p_cnn\n", 2, comm, NULL, 0), 0);
    }
    MPI_Barrier(comm);
    if (rank == 0) {
        for (long long st = 100; st <= 600; st += 100)
            TEST_EQ_INT(ct_exists(run2, st, ".h5"), st == 200 || st >= 500);
        TEST_EQ_INT(ct_count_files(run2), 6);
    }
    struct { gt_ckpt_which which; int64_t want, expect; } cases[] = {
        {GT_CKPT_BEST, -1, 200}, {GT_CKPT_LATEST, -1, 600}, {GT_CKPT_STEP, 500, 500}, {GT_CKPT_STEP, 300, -1}};
    for (int c = 0; c < 4; c++) {
        gt_train_state ts;
        gt_norm_stats ns;
        ct_fill(m, 999983);
        int64_t got = gt_ckpt_load(run2, cases[c].which, cases[c].want, m, &ts, &ns, comm);
        TEST_EQ_INT(got, cases[c].expect);
        if (got >= 0) {
            int bad = 0;
            for (size_t i = 0; i < m->n_params; i++)
                bad += m->params[i] != (float)((((long long)i * 7 + got) % 1001) - 500) / 64.0f;
            TEST_EQ_INT(bad, 0);
            TEST_EQ_INT(ts.step, got);
        }
    }
    char *h200 = ct_path(run2, 200, ".h5");
    if (rank == 0) flip_middle_byte(h200);
    MPI_Barrier(comm);
    {
        gt_train_state ts;
        gt_norm_stats ns;
        ct_capture cap;
        if (rank == 0) ct_capture_begin(&cap);
        int64_t got = gt_ckpt_load(run2, GT_CKPT_BEST, -1, m, &ts, &ns, comm);
        if (rank == 0) {
            char *text = ct_capture_end(&cap);
            TEST_CHECK(strstr(text, "best validation checkpoint (step 200)") != NULL);
            TEST_CHECK(strstr(text, "ckpt-000000200.h5 is damaged") != NULL);
            free(text);
        }
        TEST_EQ_INT(got, 600);
    }
    free(h200);
    MPI_Barrier(comm);
    if (rank == 0) ct_rm_rf(run2);
    free(run2);

    free(h600), free(ok500), free(h500), free(t300), free(o200), free(t900), free(u300), free(h700), free(h400);
    gt_model_free(m);
    MPI_Barrier(comm);
    if (rank == 0) ct_rm_rf(run);
    free(run);
    int failures = gt_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    MPI_Finalize();
    gt_test_failures = rank == 0 ? all : failures;
    TEST_DONE();
}
