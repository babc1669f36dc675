/* Signals at 1, 2, 4 ranks: SIGUSR1 / SIGTERM set the flag (SA_RESTART, the
 * process keeps running); gt_signal_pending_any sees a signal on every rank
 * when only one rank (rank 1, or 0 alone) got it. */
#define _GNU_SOURCE
#include <signal.h>

#include "ckpt_test_util.h"

int main(int argc, char **argv) {
    int rank, size;
    ct_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    gt_signals_install();

    struct sigaction sa;
    TEST_REQUIRE(sigaction(SIGUSR1, NULL, &sa) == 0);
    TEST_CHECK(sa.sa_flags & SA_RESTART);
    TEST_CHECK(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
    TEST_REQUIRE(sigaction(SIGTERM, NULL, &sa) == 0);
    TEST_CHECK(sa.sa_flags & SA_RESTART);

    TEST_EQ_INT(gt_signal_pending(), 0);
    TEST_EQ_INT(gt_signal_pending_any(comm), 0);

    int victim = size > 1 ? 1 : 0;
    if (rank == victim) {
        TEST_REQUIRE(raise(SIGUSR1) == 0);
        TEST_EQ_INT(gt_signal_pending(), SIGUSR1);
    } else {
        TEST_EQ_INT(gt_signal_pending(), 0);
    }
    TEST_EQ_INT(gt_signal_pending_any(comm), SIGUSR1);
    TEST_EQ_INT(gt_signal_pending_any(comm), SIGUSR1); /* stays until cleared */

    gt_signal_clear();
    TEST_EQ_INT(gt_signal_pending_any(comm), 0);

    /* SIGTERM on the last rank */
    if (rank == size - 1) raise(SIGTERM);
    TEST_EQ_INT(gt_signal_pending_any(comm), SIGTERM);
    gt_signal_clear();

    int failures = gt_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    MPI_Finalize();
    gt_test_failures = rank == 0 ? all : failures;
    TEST_DONE();
}
