#define _GNU_SOURCE
#include "core/timer.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/trace.h"

typedef struct {
    char name[48];
    double total, started;
    int64_t calls;
    int depth;
} gt_event;

static gt_event g_ev[GT_MAX_EVENTS];
static int g_nev = 0;

double gt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gt_event_register(const char *name) {
    for (int i = 0; i < g_nev; i++)
        if (!strcmp(g_ev[i].name, name)) return i;
    GT_ASSERT(g_nev < GT_MAX_EVENTS);
    gt_event *e = &g_ev[g_nev];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    return g_nev++;
}

void gt_event_begin(int id) {
    GT_ASSERT(id >= 0 && id < g_nev);
    gt_event *e = &g_ev[id];
    if (e->depth++ == 0) e->started = gt_now();
}

void gt_event_end(int id) {
    GT_ASSERT(id >= 0 && id < g_nev);
    gt_event *e = &g_ev[id];
    GT_ASSERT(e->depth > 0);
    if (--e->depth == 0) {
        double now = gt_now();
        e->total += now - e->started;
        e->calls++;
        if (GT_TRACE_ON()) gt_trace_record(e->name, e->started, now, NULL, 0); /* train.trace: core/trace.h */
    }
}

void gt_event_add(int id, double seconds, int64_t count) {
    GT_ASSERT(id >= 0 && id < g_nev);
    g_ev[id].total += seconds;
    g_ev[id].calls += count;
}

int gt_event_count(void) { return g_nev; }
const char *gt_event_name(int id) { return g_ev[id].name; }
double gt_event_seconds(int id) { return g_ev[id].total; }
int64_t gt_event_calls(int id) { return g_ev[id].calls; }
void gt_events_reset(void) {
    for (int i = 0; i < g_nev; i++) { g_ev[i].total = 0; g_ev[i].calls = 0; g_ev[i].depth = 0; }
}

int64_t gt_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (int64_t)ru.ru_maxrss * 1024;
}

int64_t gt_current_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    long pages_total = 0, pages_res = 0;
    int ok = fscanf(f, "%ld %ld", &pages_total, &pages_res) == 2;
    fclose(f);
    return ok ? (int64_t)pages_res * (int64_t)sysconf(_SC_PAGESIZE) : 0;
}

int64_t gt_address_space_left_bytes(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
    FILE *f = fopen("/proc/self/statm", "r");
    long pages_total = 0;
    int ok = f && fscanf(f, "%ld", &pages_total) == 1;
    if (f) fclose(f);
    int64_t used = ok ? (int64_t)pages_total * (int64_t)sysconf(_SC_PAGESIZE) : 0;
    int64_t lim = rl.rlim_cur > (rlim_t)INT64_MAX ? INT64_MAX : (int64_t)rl.rlim_cur;
    return lim > used ? lim - used : 0;
}

/* a number from a one-line file, -1 if absent or "max" */
static int64_t read_i64_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long v = -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return (int64_t)v;
}

int64_t gt_mem_available_bytes(void) {
    int64_t avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char key[64];
        long long kb;
        while (fscanf(f, "%63s %lld kB\n", key, &kb) == 2)
            if (!strcmp(key, "MemAvailable:")) avail = (int64_t)kb * 1024;
        fclose(f);
    }
    /* this process's cgroup (the first v2 line "0::/path", else the v1 memory controller) */
    char line[512], v2[512] = "", v1[512] = "";
    f = fopen("/proc/self/cgroup", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
            char *c = strstr(line, ":memory:");
            if (c) snprintf(v1, sizeof v1, "%s", c + 8);
        }
        fclose(f);
    }
    char p1[700], p2[700];
    int64_t lim = -1, use = -1;
    if (v2[0]) {
        snprintf(p1, sizeof p1, "/sys/fs/cgroup%s/memory.max", v2);
        snprintf(p2, sizeof p2, "/sys/fs/cgroup%s/memory.current", v2);
        lim = read_i64_file(p1), use = read_i64_file(p2);
    }
    if (lim < 0 && v1[0]) {
        snprintf(p1, sizeof p1, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", v1);
        snprintf(p2, sizeof p2, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", v1);
        lim = read_i64_file(p1), use = read_i64_file(p2);
        if (lim >= ((int64_t)1 << 60)) lim = -1; /* v1 "no limit" */
    }
    if (lim > 0 && use >= 0) {
        int64_t room = lim > use ? lim - use : 0;
        if (avail < 0 || room < avail) avail = room;
    }
    return avail;
}
