/* tests/io/mpi_test.h: MPI set-up for the io test programs (static helpers). */
#ifndef GT_TESTS_IO_MPI_TEST_H
#define GT_TESTS_IO_MPI_TEST_H

#include <mpi.h>

#include "core/check.h"

static inline void tg_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

/* MPI_Init plus the project's rank prefix and MPI_Abort handler. */
static inline void tg_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    gt_set_rank(*rank, *size);
    if (*size > 1) gt_set_abort_handler(tg_abort);
}

/* 1 on every rank when cond held on every rank. */
static inline int tg_all(int cond, MPI_Comm comm) {
    int all = 0;
    MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

#endif
