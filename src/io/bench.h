/* io/bench.h: read benchmark (`gridtrain bench read FILE`). */
#ifndef GT_IO_BENCH_H
#define GT_IO_BENCH_H

#include <mpi.h>
#include <stdio.h>

/* Measures, in one run, on every rank of comm (collective):
 *   - the collective sharded read of the file's big datasets (NILM: timestamps,
 *     aggregate, appliances; PdM: timestamps, signals, labels) with the same plan
 *     and calls as gt_*_shard_read, and
 *   - a plain read(2) of the same file's bytes: each rank reads its 1/P share
 *     of the file in 16 MiB pread calls,
 * each `reps` times (after one warm-up pass of each), and prints on rank 0 to
 * `out` the best and median rates (GiB/s of data delivered, and of file bytes)
 * and the ratio collective/plain. A schema error ends the job (GT_EXIT_DATA).
 * Returns 0 (the same on every rank). */
int gt_io_bench_read(const char *path, int reps, MPI_Comm comm, FILE *out);

#endif
