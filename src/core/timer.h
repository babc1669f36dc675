/* core/timer.h: wall clock and named timing events (PETSc -log_view style).
 *
 * Register an event once by name, then bracket work with begin/end. Each rank
 * accumulates total seconds and counts locally; dist/ gathers them into the
 * end-of-run table of min/max/mean/ratio across ranks. Events nest freely.
 * Not thread-safe: time on one thread (the prefetch thread keeps its own). */
#ifndef GT_CORE_TIMER_H
#define GT_CORE_TIMER_H

#include <stdint.h>

#define GT_MAX_EVENTS 64

double gt_now(void); /* seconds, monotonic */

int gt_event_register(const char *name); /* idempotent: same name -> same id */
void gt_event_begin(int id);
void gt_event_end(int id);
/* Add time measured elsewhere (e.g. by the prefetch thread). */
void gt_event_add(int id, double seconds, int64_t count);

int gt_event_count(void);
const char *gt_event_name(int id);
double gt_event_seconds(int id);
int64_t gt_event_calls(int id);
void gt_events_reset(void);

/* Peak resident set size of this process in bytes (from getrusage). */
int64_t gt_peak_rss_bytes(void);
/* Current resident set size in bytes (from /proc/self/statm; 0 if unknown). */
int64_t gt_current_rss_bytes(void);
/* Memory this process may still use, bytes: MemAvailable of /proc/meminfo,
 * lowered to the room left under a cgroup (v2 memory.max - memory.current, or
 * v1 limit - usage: Slurm's --mem). -1 if unknown. */
int64_t gt_mem_available_bytes(void);
/* Address space this process may still map, bytes: RLIMIT_AS ('ulimit -v')
 * less the current virtual size (/proc/self/statm); -1 when unlimited. */
int64_t gt_address_space_left_bytes(void);

#endif
