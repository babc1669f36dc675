/* Checkpoint write failures at 1, 2, 4 ranks: they return GT_EXIT_RESOURCE on
 * every rank (no abort), log the path and the system error, leave no file
 * under a final name (and no temporary file), and keep the previous
 * checkpoint loadable; the next save after the cause is gone succeeds.
 *   - unwritable location (a regular file where a directory must be; also a
 *     read-only directory when not running as root)
 *   - disk full, simulated with RLIMIT_FSIZE (writes fail with EFBIG) on every
 *     rank and on rank 0 only. (A limit on another rank alone is not
 *     tested: HDF5 1.10 fails the collective close and crashes at exit.) */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/resource.h>

#include "ckpt_test_util.h"

/* Rank 0 captures stderr around a save; returns the result and checks that
 * every rank got the same one and that the log names `want` (if not NULL). */
static int save_expect(const char *run, gt_model *m, long long step, int want_rc, const char *want,
                       MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    ct_capture cap;
    if (rank == 0) ct_capture_begin(&cap);
    int rc = ct_save(run, m, step, 2, comm);
    if (rank == 0) {
        char *text = ct_capture_end(&cap);
        if (want && !strstr(text, want)) fprintf(stderr, "expected the log to contain '%s'\n", want);
        if (want) TEST_CHECK(strstr(text, want) != NULL);
        free(text);
    }
    int lo = 0, hi = 0;
    MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, comm);
    TEST_EQ_INT(lo, hi); /* agreed on every rank */
    if (want_rc >= 0) TEST_EQ_INT(rc, want_rc);
    return rc;
}

static void set_fsize(rlim_t bytes) {
    struct rlimit rl;
    TEST_REQUIRE(getrlimit(RLIMIT_FSIZE, &rl) == 0);
    rl.rlim_cur = bytes;
    TEST_REQUIRE(setrlimit(RLIMIT_FSIZE, &rl) == 0);
}

/* No trace of `step` may remain after a failed save. */
static void check_no_trace(const char *run, long long step) {
    TEST_CHECK(!ct_exists(run, step, ".h5"));
    TEST_CHECK(!ct_exists(run, step, ".ok"));
    TEST_CHECK(!ct_exists_prefix(run, step, ".h5.tmp")); /* the old fixed name and the unique temporaries */
    TEST_CHECK(!ct_exists(run, step, ".ok.tmp"));
}

static void load_expect(const char *run, gt_model *m, long long step, MPI_Comm comm) {
    gt_train_state ts;
    gt_norm_stats ns;
    int64_t got = ct_load(run, m, &ts, &ns, comm);
    TEST_EQ_INT(got, step);
    if (got == step) ct_check(m, &ts, &ns, step);
}

int main(int argc, char **argv) {
    int rank, size;
    ct_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char *base = ct_tmpdir("ckpt-err", comm);
    gt_model *m = ct_model(64); /* ~50 KiB of params + moments */

    /* 1. a regular file where the run directory must be */
    char blocker[600], bad_run[700];
    snprintf(blocker, sizeof blocker, "%s/not-a-dir", base);
    snprintf(bad_run, sizeof bad_run, "%s/run", blocker);
    if (rank == 0) {
        FILE *f = fopen(blocker, "w");
        TEST_REQUIRE(f);
        fclose(f);
    }
    MPI_Barrier(comm);
    save_expect(bad_run, m, 100, GT_EXIT_RESOURCE, "Not a directory", comm);

    /* 2. a regular file where the checkpoints directory must be */
    char run2[700], cdir[800];
    snprintf(run2, sizeof run2, "%s/run2", base);
    snprintf(cdir, sizeof cdir, "%s/checkpoints", run2);
    if (rank == 0) {
        TEST_REQUIRE(mkdir(run2, 0777) == 0);
        FILE *f = fopen(cdir, "w");
        TEST_REQUIRE(f);
        fclose(f);
    }
    MPI_Barrier(comm);
    save_expect(run2, m, 100, GT_EXIT_RESOURCE, "checkpoints", comm);

    /* 3. a read-only directory (permissions do not stop root) */
    if (geteuid() != 0) {
        char run3[700];
        snprintf(run3, sizeof run3, "%s/run3", base);
        if (rank == 0) TEST_REQUIRE(mkdir(run3, 0500) == 0);
        MPI_Barrier(comm);
        save_expect(run3, m, 100, GT_EXIT_RESOURCE, "Permission denied", comm);
    }

    /* 4. disk full while writing */
    char run4[700];
    snprintf(run4, sizeof run4, "%s/run4", base);
    signal(SIGXFSZ, SIG_IGN);
    save_expect(run4, m, 100, 0, NULL, comm);
    set_fsize(16384);
    save_expect(run4, m, 200, GT_EXIT_RESOURCE, "ckpt-000000200.h5", comm);
    set_fsize(RLIM_INFINITY);
    MPI_Barrier(comm);
    if (rank == 0) check_no_trace(run4, 200);
    load_expect(run4, m, 100, comm);

    /* 5. only rank 0 hits the limit: all ranks agree on the outcome, and it
     * is either a committed, loadable checkpoint or no trace at all */
    int victims[1] = {0};
    for (int v = 0; v < 1; v++) {
        long long step = 300 + 100 * v;
        if (rank == victims[v]) set_fsize(16384);
        int rc = save_expect(run4, m, step, -1, NULL, comm);
        if (rank == victims[v]) set_fsize(RLIM_INFINITY);
        TEST_CHECK(rc == 0 || rc == GT_EXIT_RESOURCE);
        MPI_Barrier(comm);
        if (rc != 0) {
            if (rank == 0) check_no_trace(run4, step);
        } else {
            load_expect(run4, m, step, comm);
        }
        if (rank == 0) fprintf(stderr, "limit on rank %d: save returned %d\n", victims[v], rc);
    }

    /* 6. the cause is gone: saving works again and is the newest */
    save_expect(run4, m, 600, 0, NULL, comm);
    load_expect(run4, m, 600, comm);

    gt_model_free(m);
    MPI_Barrier(comm);
    if (rank == 0) ct_rm_rf(base);
    free(base);
    int failures = gt_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    MPI_Finalize();
    gt_test_failures = rank == 0 ? all : failures;
    TEST_DONE();
}
