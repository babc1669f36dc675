/* nn/ops/cpu/parallel.c: persistent pthread pool behind gt_par_for (see parallel.h).
 *
 * One job at a time: the caller publishes (fn, ctx, n_tasks) under the pool
 * mutex with a new generation number and wakes the workers; everyone,
 * the caller included, takes task indices from one atomic counter tagged with
 * the generation; the caller then sleeps until every task is finished. A
 * worker that wakes up after the tasks are gone (a busy machine) takes none
 * and is not waited for. A caller that finds
 * the pool held (another user thread) or is itself inside a task runs the
 * tasks serially. */
#include "nn/ops/cpu/parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "core/watchdog.h"

static atomic_int g_max_threads; /* 0 until the first query */

int gt_par_max_threads(void) {
    int m = atomic_load_explicit(&g_max_threads, memory_order_acquire);
    if (m > 0) return m;
    int t = openblas_get_num_threads();
    if (t < 1) t = 1;
    if (t > GT_PAR_MAX_THREADS) t = GT_PAR_MAX_THREADS;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_max_threads, &expected, t)) t = expected;
    return t;
}

int gt_par_threads(void) {
    int m = gt_par_max_threads();
    int t = openblas_get_num_threads();
    if (t < 1) t = 1;
    return t < m ? t : m;
}

static struct {
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    int n_workers;                               /* workers started: tids 1..n_workers */
    unsigned long start_gen[GT_PAR_MAX_THREADS]; /* gen when worker tid was created */
    unsigned long gen;                           /* job generation */
    int job_threads;                             /* threads of the current job, caller included */
    gt_par_fn fn;
    void *ctx;
    int n_tasks;
    int ctx_word; /* the caller's gt_par_ctx(), for the job's tasks */
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .start = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* (generation mod 2^32) << 32 | next task index: a worker that wakes up late
 * cannot take a task of a later job with the arguments of its own. */
static _Atomic unsigned long long g_next;
static atomic_int g_done; /* tasks of the current job finished */

static pthread_mutex_t g_busy = PTHREAD_MUTEX_INITIALIZER; /* held by the caller of the running job */
static _Thread_local int t_in_pool; /* set in workers and in a caller running a job */

int gt_par_in_task(void) { return t_in_pool; }

static _Thread_local int t_ctx_word;
int gt_par_ctx(void) { return t_ctx_word; }
int gt_par_set_ctx(int word) {
    const int prev = t_ctx_word;
    t_ctx_word = word;
    return prev;
}

static void run_tasks(gt_par_fn fn, void *ctx, int n_tasks, unsigned gen32, int tid) {
    unsigned long long cur = atomic_load_explicit(&g_next, memory_order_acquire);
    for (;;) {
        if ((unsigned)(cur >> 32) != gen32 || (unsigned)cur >= (unsigned)n_tasks) return;
        if (!atomic_compare_exchange_weak_explicit(&g_next, &cur, cur + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        fn(ctx, (int)(unsigned)cur, tid);
        gt_watchdog_beat("a task of the engine's thread pool (nn/ops/cpu/parallel.c)");
        if (atomic_fetch_add_explicit(&g_done, 1, memory_order_acq_rel) + 1 == n_tasks) {
            pthread_mutex_lock(&g_pool.mu); /* the caller checks g_done under mu */
            pthread_cond_signal(&g_pool.done);
            pthread_mutex_unlock(&g_pool.mu);
        }
        cur = atomic_load_explicit(&g_next, memory_order_acquire);
    }
}

static void *worker_main(void *arg) {
    const int tid = (int)(long)arg;
    t_in_pool = 1;
    pthread_mutex_lock(&g_pool.mu);
    unsigned long seen = g_pool.start_gen[tid]; /* the generation before the worker's first job */
    for (;;) {
        while (g_pool.gen == seen) pthread_cond_wait(&g_pool.start, &g_pool.mu);
        seen = g_pool.gen;
        if (tid >= g_pool.job_threads) continue;
        gt_par_fn fn = g_pool.fn;
        void *ctx = g_pool.ctx;
        int n = g_pool.n_tasks;
        t_ctx_word = g_pool.ctx_word;
        pthread_mutex_unlock(&g_pool.mu);
        run_tasks(fn, ctx, n, (unsigned)seen, tid);
        pthread_mutex_lock(&g_pool.mu);
    }
    return NULL;
}

/* Start workers up to tid want-1 (under g_busy); returns the threads available. */
static int ensure_workers(int want) {
    pthread_mutex_lock(&g_pool.mu);
    while (g_pool.n_workers < want - 1) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        g_pool.start_gen[g_pool.n_workers + 1] = g_pool.gen;
        int rc = pthread_create(&th, &at, worker_main, (void *)(long)(g_pool.n_workers + 1));
        pthread_attr_destroy(&at);
        if (rc != 0) break; /* run with the workers we have */
        g_pool.n_workers++;
    }
    int have = g_pool.n_workers + 1;
    pthread_mutex_unlock(&g_pool.mu);
    return have < want ? have : want;
}

void gt_par_for(int n_tasks, gt_par_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    int T = gt_par_threads();
    if (T > n_tasks) T = n_tasks;
    if (T <= 1 || t_in_pool || pthread_mutex_trylock(&g_busy) != 0) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        return;
    }
    T = ensure_workers(T);
    if (T <= 1) {
        pthread_mutex_unlock(&g_busy);
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        return;
    }
    const int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);

    pthread_mutex_lock(&g_pool.mu);
    g_pool.fn = fn;
    g_pool.ctx = ctx;
    g_pool.n_tasks = n_tasks;
    g_pool.ctx_word = t_ctx_word;
    g_pool.job_threads = T;
    g_pool.gen++;
    const unsigned gen32 = (unsigned)g_pool.gen;
    atomic_store_explicit(&g_done, 0, memory_order_relaxed);
    atomic_store_explicit(&g_next, (unsigned long long)gen32 << 32, memory_order_release);
    pthread_cond_broadcast(&g_pool.start);
    pthread_mutex_unlock(&g_pool.mu);

    t_in_pool = 1;
    run_tasks(fn, ctx, n_tasks, gen32, 0);
    t_in_pool = 0;

    /* wait for the tasks other threads took (not for workers that woke too late to take any) */
    if (atomic_load_explicit(&g_done, memory_order_acquire) < n_tasks) {
        pthread_mutex_lock(&g_pool.mu);
        while (atomic_load_explicit(&g_done, memory_order_acquire) < n_tasks)
            pthread_cond_wait(&g_pool.done, &g_pool.mu);
        pthread_mutex_unlock(&g_pool.mu);
    }

    openblas_set_num_threads(blas_threads);
    pthread_mutex_unlock(&g_busy);
}

void gt_par_ordered_init(gt_par_ordered *o) { atomic_init(&o->next, 0); }

/* Waits for task-1's ordered part: spins briefly, then yields, then sleeps
 * (a predecessor stuck in a library call must not burn every core). The wait
 * makes no progress of its own: if the predecessor never finishes, no task
 * completes and the watchdog (core/watchdog.h) ends the job with a message. */
void gt_par_ordered_begin(gt_par_ordered *o, int task) {
    int spins = 0;
    while (atomic_load_explicit(&o->next, memory_order_acquire) != task) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else if (spins < 4096) {
            sched_yield();
        } else {
            struct timespec d = {0, 50000};
            nanosleep(&d, NULL);
        }
    }
}

void gt_par_ordered_end(gt_par_ordered *o, int task) {
    atomic_store_explicit(&o->next, task + 1, memory_order_release);
}
