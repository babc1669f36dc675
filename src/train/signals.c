/* train/signals.c: SIGTERM / SIGUSR1 set a flag; the trainer polls it at step
 * boundaries (see checkpoint.h). The handler only stores the signal number in
 * a volatile sig_atomic_t (async-signal-safe); SA_RESTART keeps interrupted
 * reads/writes going. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <string.h>

#include "core/check_mpi.h"
#include "dist/reduce.h"
#include "train/checkpoint.h"

static volatile sig_atomic_t g_pending = 0;

static void on_signal(int sig) { g_pending = sig; }

/* Not collective. Idempotent; installs the handler for SIGTERM and SIGUSR1. */
void gt_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    GT_CHECK(sigaction(SIGTERM, &sa, NULL) == 0, GT_EXIT_INTERNAL, "cannot install the SIGTERM handler");
    GT_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, GT_EXIT_INTERNAL, "cannot install the SIGUSR1 handler");
}

int gt_signal_pending(void) { return (int)g_pending; }
void gt_signal_clear(void) { g_pending = 0; }

/* Collective over comm. */
int gt_signal_pending_any(MPI_Comm comm) {
    int any = gt_dist_max_int((int)g_pending, comm);
    return any;
}
