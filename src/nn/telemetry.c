/* nn/telemetry.c: GPU telemetry through NVML loaded with dlopen (nn/telemetry.h).
 *
 * The NVML types and functions below are declared here from NVML's C ABI
 * (nvml.h, stable since CUDA 5): no NVML header or library is needed to build. */
#define _GNU_SOURCE
#include "nn/telemetry.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the statistics: plain functions of samples ---- */

void gt_gpu_stats_reset(gt_gpu_stats *s) {
    memset(s, 0, sizeof *s);
    s->util_min = s->sm_clock_min_mhz = INFINITY;
    s->ecc_corrected = s->ecc_uncorrected = -1;
}

static void add_mean(double *mean, double x, int n) { /* running mean over n values, x the n-th */
    if (isfinite(x)) *mean += (x - *mean) / n;
}

void gt_gpu_stats_add(gt_gpu_stats *s, const gt_gpu_sample *x) {
    s->n++;
    if (isfinite(x->util_pct)) {
        add_mean(&s->util_mean, x->util_pct, s->n);
        if (x->util_pct < s->util_min) s->util_min = x->util_pct;
        if (x->util_pct > s->util_max) s->util_max = x->util_pct;
    }
    if (x->mem_used_bytes > s->mem_used_max_bytes) s->mem_used_max_bytes = x->mem_used_bytes;
    if (isfinite(x->mem_total_bytes)) s->mem_total_bytes = x->mem_total_bytes;
    if (x->temp_c > s->temp_max_c) s->temp_max_c = x->temp_c;
    add_mean(&s->power_mean_w, x->power_w, s->n);
    if (x->power_w > s->power_max_w) s->power_max_w = x->power_w;
    add_mean(&s->sm_clock_mean_mhz, x->sm_clock_mhz, s->n);
    if (x->sm_clock_mhz < s->sm_clock_min_mhz) s->sm_clock_min_mhz = x->sm_clock_mhz;
    add_mean(&s->mem_clock_mean_mhz, x->mem_clock_mhz, s->n);
    const int slowed = (x->throttle & GT_GPU_THROTTLE_SLOWING) != 0;
    s->throttled_frac += (slowed - s->throttled_frac) / s->n;
    s->throttle_seen |= x->throttle;
    if (x->ecc_corrected >= 0) {
        if (s->ecc_corrected >= 0 && x->ecc_corrected > s->ecc_corrected)
            s->ecc_corrected_new += x->ecc_corrected - s->ecc_corrected;
        s->ecc_corrected = x->ecc_corrected;
    }
    if (x->ecc_uncorrected >= 0) {
        if (s->ecc_uncorrected >= 0 && x->ecc_uncorrected > s->ecc_uncorrected)
            s->ecc_uncorrected_new += x->ecc_uncorrected - s->ecc_uncorrected;
        s->ecc_uncorrected = x->ecc_uncorrected;
    }
    if (x->xid_events > s->xid_events) s->xid_events = x->xid_events;
    if (x->last_xid) s->last_xid = x->last_xid;
}

void gt_gpu_throttle_names(uint64_t bits, char *buf, size_t n) {
    static const struct {
        uint64_t bit;
        const char *name;
    } k[] = {{GT_GPU_THROTTLE_IDLE, "idle"},
             {GT_GPU_THROTTLE_APP_CLOCKS, "application clocks"},
             {GT_GPU_THROTTLE_SW_POWER_CAP, "SW power cap"},
             {GT_GPU_THROTTLE_HW_SLOWDOWN, "HW slowdown"},
             {GT_GPU_THROTTLE_SYNC_BOOST, "sync boost"},
             {GT_GPU_THROTTLE_SW_THERMAL, "SW thermal slowdown"},
             {GT_GPU_THROTTLE_HW_THERMAL, "HW thermal slowdown"},
             {GT_GPU_THROTTLE_HW_POWER_BRAKE, "HW power brake"}};
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (bits & k[i].bit) {
            int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", k[i].name);
            if (w < 0 || (size_t)w >= n - used) break;
            used += (size_t)w;
        }
    if (!used) snprintf(buf, n, "none");
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int gt_gpu_warnings(const gt_gpu_stats *st, int n_ranks, char *buf, size_t n) {
    int count = 0;
    size_t used = 0;
    buf[0] = 0;
    double *others = malloc(sizeof(double) * (size_t)(n_ranks > 0 ? n_ranks : 1));
    for (int r = 0; r < n_ranks && others; r++) {
        const gt_gpu_stats *s = &st[r];
        if (s->n == 0) continue;
        char line[512] = "";
        if (s->throttled_frac > GT_GPU_WARN_THROTTLED) {
            char names[160];
            gt_gpu_throttle_names(s->throttle_seen & GT_GPU_THROTTLE_SLOWING, names, sizeof names);
            snprintf(line, sizeof line,
                     "gpu: rank %d's GPU is throttling (%s) in %.0f%% of the samples: SM clock %.0f MHz (min %.0f), "
                     "%.0f C, %.0f W",
                     r, names, 100 * s->throttled_frac, s->sm_clock_mean_mhz, s->sm_clock_min_mhz, s->temp_max_c,
                     s->power_mean_w);
        } else {
            int m = 0;
            for (int q = 0; q < n_ranks; q++)
                if (q != r && st[q].n > 0) others[m++] = st[q].util_mean;
            if (m > 0) {
                qsort(others, (size_t)m, sizeof *others, cmp_d);
                double med = m % 2 ? others[m / 2] : 0.5 * (others[m / 2 - 1] + others[m / 2]);
                if (s->util_mean < GT_GPU_WARN_IDLE_PCT && med > GT_GPU_WARN_BUSY_PCT)
                    snprintf(line, sizeof line,
                             "gpu: rank %d's GPU is idle (%.0f%% busy) while the others work (median %.0f%%): its "
                             "data loader or its share of the data (see 'gridtrain doctor' and the timeline)",
                             r, s->util_mean, med);
            }
        }
        for (int k = 0; k < 3; k++) {
            if (k == 1 && s->ecc_uncorrected_new > 0)
                snprintf(line, sizeof line, "gpu: rank %d's GPU counted %lld new uncorrected ECC errors", r,
                         (long long)s->ecc_uncorrected_new);
            else if (k == 2 && s->xid_events > 0)
                snprintf(line, sizeof line, "gpu: rank %d's GPU reported %lld Xid event(s), the last Xid %d", r,
                         (long long)s->xid_events, s->last_xid);
            else if (k > 0)
                continue;
            if (!line[0]) continue;
            int w = snprintf(buf + used, n - used, "%s\n", line);
            if (w > 0 && (size_t)w < n - used) used += (size_t)w;
            count++;
            line[0] = 0;
        }
    }
    free(others);
    return count;
}

/* ---- NVML, declared from its ABI ---- */

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0 };
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull

typedef struct nvml_api {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *); /* milliwatts */
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
    nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
    nvmlReturn_t (*driver_version)(char *, unsigned int);
} nvml_api;

struct gt_gpu_telemetry {
    nvml_api api;
    nvmlDevice_t dev;
    nvmlEventSet_t events;
    double period_s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, started;
    gt_gpu_stats interval, run;
    int64_t xid_events;
    int last_xid;
    char driver[96];
};

static int load_api(nvml_api *a, char *why, size_t n) {
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(why, n, "libnvidia-ml.so.1 not found (no NVIDIA driver on this host)");
        return -1;
    }
#define SYM(field, name)                                                                  \
    do {                                                                                  \
        *(void **)&a->field = dlsym(a->lib, name);                                        \
        if (!a->field) {                                                                  \
            snprintf(why, n, "libnvidia-ml.so.1 lacks %s (a driver too old)", name);      \
            dlclose(a->lib);                                                              \
            a->lib = NULL;                                                                \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(error_string, "nvmlErrorString");
    SYM(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
    SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
    SYM(utilization, "nvmlDeviceGetUtilizationRates");
    SYM(memory, "nvmlDeviceGetMemoryInfo");
    SYM(temperature, "nvmlDeviceGetTemperature");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(ecc, "nvmlDeviceGetTotalEccErrors");
    SYM(event_set_create, "nvmlEventSetCreate");
    SYM(register_events, "nvmlDeviceRegisterEvents");
    SYM(event_set_free, "nvmlEventSetFree");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    *(void **)&a->event_wait = dlsym(a->lib, "nvmlEventSetWait_v2");
    if (!a->event_wait) *(void **)&a->event_wait = dlsym(a->lib, "nvmlEventSetWait");
#undef SYM
    return 0;
}

int gt_gpu_telemetry_read(gt_gpu_telemetry *g, gt_gpu_sample *x) {
    const nvml_api *a = &g->api;
    memset(x, 0, sizeof *x);
    x->util_pct = x->mem_util_pct = x->mem_used_bytes = x->mem_total_bytes = NAN;
    x->temp_c = x->power_w = x->sm_clock_mhz = x->mem_clock_mhz = NAN;
    x->ecc_corrected = x->ecc_uncorrected = -1;
    nvmlUtilization_t u;
    if (a->utilization(g->dev, &u) == 0) x->util_pct = u.gpu, x->mem_util_pct = u.memory;
    nvmlMemory_t m;
    if (a->memory(g->dev, &m) == 0) x->mem_used_bytes = (double)m.used, x->mem_total_bytes = (double)m.total;
    unsigned int v = 0;
    if (a->temperature(g->dev, NVML_TEMPERATURE_GPU, &v) == 0) x->temp_c = v;
    if (a->power(g->dev, &v) == 0) x->power_w = v / 1000.0;
    if (a->clock(g->dev, NVML_CLOCK_SM, &v) == 0) x->sm_clock_mhz = v;
    if (a->clock(g->dev, NVML_CLOCK_MEM, &v) == 0) x->mem_clock_mhz = v;
    unsigned long long t = 0, e = 0;
    if (a->throttle(g->dev, &t) == 0) x->throttle = t;
    if (a->ecc(g->dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &e) == 0) x->ecc_corrected = (int64_t)e;
    if (a->ecc(g->dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &e) == 0) x->ecc_uncorrected = (int64_t)e;
    /* Xid events since the last reading (no wait) */
    nvmlEventData_t ev;
    while (g->events && a->event_wait && a->event_wait(g->events, &ev, 0) == 0)
        if (ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) {
            g->xid_events++;
            g->last_xid = (int)ev.eventData;
        }
    x->xid_events = g->xid_events;
    x->last_xid = g->last_xid;
    return isfinite(x->util_pct) || isfinite(x->mem_used_bytes) ? 0 : -1;
}

static void *sampler(void *arg) {
    gt_gpu_telemetry *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        pthread_mutex_unlock(&g->mu);
        gt_gpu_sample x;
        int ok = gt_gpu_telemetry_read(g, &x) == 0;
        pthread_mutex_lock(&g->mu);
        if (ok) {
            gt_gpu_stats_add(&g->interval, &x);
            gt_gpu_stats_add(&g->run, &x);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double s = g->period_s;
        until.tv_sec += (time_t)s;
        until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

gt_gpu_telemetry *gt_gpu_telemetry_start(const char *pci_bus_id, const char *uuid, double period_s, char *why,
                                         size_t why_bytes) {
    gt_gpu_telemetry *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, why_bytes, "out of memory");
        return NULL;
    }
    if (load_api(&g->api, why, why_bytes)) {
        free(g);
        return NULL;
    }
    nvmlReturn_t rc = g->api.init();
    if (rc != 0) {
        snprintf(why, why_bytes, "nvmlInit failed: %s", g->api.error_string(rc));
        dlclose(g->api.lib);
        free(g);
        return NULL;
    }
    const int named = (pci_bus_id && *pci_bus_id) || (uuid && *uuid);
    rc = pci_bus_id && *pci_bus_id ? g->api.by_pci(pci_bus_id, &g->dev) : -1;
    if (rc != 0 && uuid && *uuid) rc = g->api.by_uuid(uuid, &g->dev);
    if (!named) rc = g->api.by_index(0, &g->dev); /* neither given: the first GPU (tests) */
    if (rc != 0) {
        snprintf(why, why_bytes, "NVML does not know the GPU %s (%s)", pci_bus_id ? pci_bus_id : "?",
                 rc > 0 ? g->api.error_string(rc) : "no PCI bus id");
        g->api.shutdown();
        dlclose(g->api.lib);
        free(g);
        return NULL;
    }
    if (g->api.driver_version(g->driver, sizeof g->driver) != 0) g->driver[0] = 0;
    /* Xid events: optional (not every GPU or user may register them) */
    if (g->api.event_set_create(&g->events) == 0 &&
        g->api.register_events(g->dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, g->events) != 0) {
        g->api.event_set_free(g->events);
        g->events = NULL;
    }
    g->period_s = period_s > 0.05 ? period_s : 0.05;
    gt_gpu_stats_reset(&g->interval);
    gt_gpu_stats_reset(&g->run);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->thread, NULL, sampler, g) == 0) g->started = 1;
    return g;
}

void gt_gpu_telemetry_take(gt_gpu_telemetry *g, gt_gpu_stats *interval) {
    pthread_mutex_lock(&g->mu);
    *interval = g->interval;
    gt_gpu_stats_reset(&g->interval);
    /* the counters carry over: growth is counted from the last reading */
    g->interval.ecc_corrected = interval->ecc_corrected;
    g->interval.ecc_uncorrected = interval->ecc_uncorrected;
    pthread_mutex_unlock(&g->mu);
}

void gt_gpu_telemetry_run_stats(gt_gpu_telemetry *g, gt_gpu_stats *run) {
    pthread_mutex_lock(&g->mu);
    *run = g->run;
    pthread_mutex_unlock(&g->mu);
}

const char *gt_gpu_telemetry_driver(gt_gpu_telemetry *g) { return g ? g->driver : ""; }

void gt_gpu_telemetry_stop(gt_gpu_telemetry *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->started) pthread_join(g->thread, NULL);
    if (g->events) g->api.event_set_free(g->events);
    g->api.shutdown();
    dlclose(g->api.lib);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}
