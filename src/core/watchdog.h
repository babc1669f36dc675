/* core/watchdog.h: no hang without a message.
 *
 * A thread that ends the job when nothing has made progress for a set time:
 * a collective one rank never reaches (another rank stopped, died or waits in
 * a different collective), a file system that stopped answering, a library
 * call that never returns (OpenBLAS looping on an allocation under a tight
 * address-space limit). The layers mark progress with gt_watchdog_beat() at
 * cheap points: every MPI collective of dist/ (before and after), every
 * collective HDF5 read and write of io/, every engine forward and backward and
 * every task of the engine's thread pool (nn/), every training step.
 *
 * When no beat came for the limit, the watchdog prints one line
 *   gridtrain[rank R]: error: watchdog: no progress for 600 s (since: entered
 *   an MPI collective); ...
 * and ends the job with GT_EXIT_LIBRARY through the abort hook (MPI_Abort
 * with more than one rank), then _exit; every stalled rank's watchdog fires on
 * its own as well. Pure pthreads: core/ stays free of MPI. */
#ifndef GT_CORE_WATCHDOG_H
#define GT_CORE_WATCHDOG_H

#define GT_WATCHDOG_DEFAULT_S 1800.0 /* run.watchdog_s's default: 30 minutes */

/* Starts the watchdog with a limit of limit_s seconds without progress, or
 * changes the limit of a running one; limit_s <= 0 stops watching (the thread
 * stays, idle). The time counts from this call. Not collective; thread-safe. */
void gt_watchdog_start(double limit_s);
void gt_watchdog_stop(void);
/* Progress. `what` is a string literal naming what starts now (it is shown
 * when the job is ended). Async-signal-safe, lock-free; any thread. */
void gt_watchdog_beat(const char *what);
/* The current limit in seconds (0: off). */
double gt_watchdog_limit(void);

#endif
