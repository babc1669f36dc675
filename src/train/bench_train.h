/* train/bench_train.h: `gridtrain bench train CONFIG` (run under mpirun -n P).
 *
 * On the same data and model, in one run: samples/s of 1 rank x 1 BLAS thread
 * (rank 0 alone on a sub-communicator; the other ranks wait at a barrier) and
 * of P ranks x 1 thread with the same PER-RANK batch (weak scaling: the P-rank
 * global batch is P x train.batch). Prints both, the weak-scaling efficiency
 * rate_P / (P rate_1) (target >= 0.9) and the data stall (time waiting for
 * the loader / wall time, max over ranks; target < 2%); with train.overlap
 * and train.balance on (the defaults), also P ranks with the gradient
 * all-reduce after backward and P ranks with neither, the variants
 * interleaved in each repetition. Steps: train.max_steps
 * (default 30 when unset), of which the first 3 are warm-up and not measured;
 * no run directory, checkpoints or validation-driven stopping. */
#ifndef GT_TRAIN_BENCH_TRAIN_H
#define GT_TRAIN_BENCH_TRAIN_H

#include <mpi.h>
#include <stdio.h>

#include "train/trainer.h"

/* Collective over comm. cfg->batch is the per-rank batch. reps >= 1: best
 * rate of reps runs per configuration. Rank 0 prints to out. Returns 0. */
int gt_train_bench_run(const gt_train_config *cfg, int reps, MPI_Comm comm, FILE *out);

/* CLI entry (defined in cli/cmd_train.c, which owns the option table):
 * a is the bench command's arguments, a->pos[1] the CONFIG file (train keys);
 * bench.reps is honoured when present. Collective. Wire it in cmd_bench.c as
 *   if (!strcmp(what, "train")) return gt_bench_train(a, comm); */
struct gt_args;
int gt_bench_train(const struct gt_args *a, MPI_Comm comm);

#endif
