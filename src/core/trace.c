/* core/trace.c: the bounded span buffer of core/trace.h. */
#include "core/trace.h"

#include "core/check.h"

#include <stdlib.h>

atomic_int gt_trace_active = 0;

static gt_trace_span *g_spans;
static int64_t g_cap, g_first, g_every = 1;
static atomic_llong g_next, g_dropped;
static atomic_int g_next_tid;
static int g_enabled, g_sampled;
static _Thread_local int tl_tid = -1;

int gt_trace_start(int64_t capacity, int64_t first_steps, int64_t every) {
    gt_trace_stop();
    if (capacity < 1 || first_steps < 0 || every < 1) return -1;
    size_t n_bytes = 0; /* a capacity whose size wraps is refused, never allocated short */
    if (!gt_array_bytes(capacity, sizeof *g_spans, &n_bytes)) return -1;
    g_spans = malloc(n_bytes);
    if (!g_spans) return -1;
    g_cap = capacity;
    g_first = first_steps;
    g_every = every;
    atomic_store(&g_next, 0);
    atomic_store(&g_dropped, 0);
    atomic_store(&g_next_tid, 1);
    tl_tid = 0; /* the starting thread is thread 0 of the trace */
    g_enabled = g_sampled = 1;
    atomic_store(&gt_trace_active, 1);
    return 0;
}

void gt_trace_stop(void) {
    atomic_store(&gt_trace_active, 0);
    g_enabled = g_sampled = 0;
    free(g_spans);
    g_spans = NULL;
    g_cap = 0;
    atomic_store(&g_next, 0);
}

int gt_trace_enabled(void) { return g_enabled; }

int gt_trace_step(int64_t step) {
    if (!g_enabled) return 0;
    g_sampled = step < g_first || step % g_every == 0;
    atomic_store_explicit(&gt_trace_active, g_sampled, memory_order_relaxed);
    return g_sampled;
}

int gt_trace_sample(int on) {
    if (!g_enabled) return 0;
    int was = g_sampled;
    g_sampled = on != 0;
    atomic_store_explicit(&gt_trace_active, g_sampled, memory_order_relaxed);
    return was;
}

void gt_trace_record_tid(int tid, const char *name, double t0, double t1, const char *arg_name, int64_t arg) {
    if (!g_spans) return;
    int64_t i = atomic_fetch_add(&g_next, 1);
    if (i >= g_cap) {
        atomic_fetch_add(&g_dropped, 1);
        return;
    }
    g_spans[i] = (gt_trace_span){.name = name, .t0 = t0, .t1 = t1 < t0 ? t0 : t1, .arg_name = arg_name, .arg = arg, .tid = tid};
}

void gt_trace_record(const char *name, double t0, double t1, const char *arg_name, int64_t arg) {
    if (!g_spans) return;
    if (tl_tid < 0) tl_tid = atomic_fetch_add(&g_next_tid, 1);
    gt_trace_record_tid(tl_tid, name, t0, t1, arg_name, arg);
}

int64_t gt_trace_count(void) {
    int64_t n = atomic_load(&g_next);
    return n < g_cap ? n : g_cap;
}
const gt_trace_span *gt_trace_spans(void) { return g_spans; }
int64_t gt_trace_dropped(void) { return atomic_load(&g_dropped); }
int64_t gt_trace_capacity(void) { return g_cap; }
int64_t gt_trace_first_steps(void) { return g_first; }
int64_t gt_trace_every(void) { return g_every; }
