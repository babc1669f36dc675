/* core/watchdog.c: see watchdog.h. */
#define _GNU_SOURCE
#include "core/watchdog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/log.h"

static _Atomic int64_t g_last_ns;         /* CLOCK_MONOTONIC of the last beat */
static _Atomic(const char *) g_what;      /* what the last beat started */
static _Atomic int64_t g_limit_ns;        /* 0: off */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void gt_watchdog_beat(const char *what) {
    atomic_store_explicit(&g_last_ns, now_ns(), memory_order_relaxed);
    if (what) atomic_store_explicit(&g_what, what, memory_order_relaxed);
}

double gt_watchdog_limit(void) { return (double)atomic_load(&g_limit_ns) / 1e9; }

static _Noreturn void fire(double idle_s, double limit_s) {
    const char *what = atomic_load(&g_what);
    char line[1024];
    int n;
    if (gt_nranks() > 1)
        n = snprintf(line, sizeof line, "gridtrain[rank %d]: error: ", gt_rank());
    else
        n = snprintf(line, sizeof line, "gridtrain: error: ");
    snprintf(line + n, sizeof line - (size_t)n,
             "watchdog: no progress for %.0f s (limit %.0f s; since: %s): a stalled collective (another rank "
             "stopped, died or waits elsewhere), a file system that does not answer, or a library call that never "
             "returns (out of address space? 'ulimit -v'); the job is ended. Raise or turn off the limit with "
             "run.watchdog_s (GT_WATCHDOG_S for other commands)\n",
             idle_s, limit_s, what ? what : "start");
    /* write(2), not stdio: the stuck thread may hold a stream's lock */
    ssize_t w = write(2, line, strlen(line));
    (void)w;
    gt_log_file_write(line, strlen(line)); /* the run log, if any (write(2) as well) */
    /* if the abort hook itself never returns, SIGALRM (default action) ends the process */
    alarm(30);
    gt_abort_nolock(GT_EXIT_LIBRARY);
}

static void *watch(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec d = {0, 250000000}; /* 4 looks a second */
        nanosleep(&d, NULL);
        int64_t limit = atomic_load(&g_limit_ns);
        if (limit <= 0) continue;
        int64_t idle = now_ns() - atomic_load_explicit(&g_last_ns, memory_order_relaxed);
        if (idle > limit) fire((double)idle / 1e9, (double)limit / 1e9);
    }
    return NULL;
}

static void start_thread(void) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, watch, NULL) != 0)
        fprintf(stderr, "gridtrain: warning: cannot start the watchdog thread: a hang will not be reported\n");
    pthread_attr_destroy(&at);
}

void gt_watchdog_start(double limit_s) {
    gt_watchdog_beat(NULL);
    atomic_store(&g_limit_ns, limit_s > 0 ? (int64_t)(limit_s * 1e9) : 0);
    if (limit_s > 0) pthread_once(&g_once, start_thread);
}

void gt_watchdog_stop(void) { atomic_store(&g_limit_ns, 0); }
