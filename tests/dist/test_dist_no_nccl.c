/* tests/dist/test_dist_no_nccl.c (np 2, builds without NCCL): a job of
 * several ranks on GPUs ends at the set-up of its gradient exchange
 * (gt_dist_grads_create with device gradients), on every rank, with the one
 * line saying it needs NCCL, not at the first bucket of its first backward.
 * No device is touched before the check (the stream is never used), so this
 * runs on any machine. ctest passes on that line (PASS_REGULAR_EXPRESSION);
 * a set-up that returns prints something else and exits 1. */
#include <mpi.h>
#include <stdio.h>

#include "dist/comm.h"
#include "dist/grads.h"

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "test_dist_no_nccl: needs 2 ranks\n");
        return 1;
    }
    const size_t starts[2] = {0, 1000};
    gt_dist_grads *g = gt_dist_grads_create(starts, 2, 3000, 1024, 1, NULL, MPI_COMM_WORLD);
    fprintf(stderr, "test_dist_no_nccl: the set-up of a device exchange over %d ranks returned (%p)\n", size,
            (void *)g);
    return 1;
}
