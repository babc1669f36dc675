/* nn/telemetry.h: GPU telemetry through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is opened with dlopen when a run uses a GPU (never a
 * link-time dependency: a binary without it, or a node without a driver,
 * simply has no telemetry). A sampling thread reads this process's GPU every
 * `period_s` seconds: utilisation, memory used, temperature, power, SM and
 * memory clocks, clock throttle reasons, ECC error counts, and Xid events
 * (NVML's critical-Xid event set). The trainer takes the interval's summary
 * at each log interval (gt_gpu_telemetry_take) and writes it as a "gpu" row of
 * metrics.jsonl; the run's summary goes to manifest.json.
 *
 * The statistics and the warnings (gt_gpu_stats_*, gt_gpu_warnings) are
 * plain functions of samples, tested with fake samples on any machine. */
#ifndef GT_NN_TELEMETRY_H
#define GT_NN_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

/* NVML's clock throttle reasons (nvmlClocksThrottleReason*). */
#define GT_GPU_THROTTLE_IDLE 0x1ull
#define GT_GPU_THROTTLE_APP_CLOCKS 0x2ull
#define GT_GPU_THROTTLE_SW_POWER_CAP 0x4ull
#define GT_GPU_THROTTLE_HW_SLOWDOWN 0x8ull
#define GT_GPU_THROTTLE_SYNC_BOOST 0x10ull
#define GT_GPU_THROTTLE_SW_THERMAL 0x20ull
#define GT_GPU_THROTTLE_HW_THERMAL 0x40ull
#define GT_GPU_THROTTLE_HW_POWER_BRAKE 0x80ull
/* The reasons that slow a busy GPU down (idle, application clocks and sync
 * boost are not a problem of the GPU). */
#define GT_GPU_THROTTLE_SLOWING                                                                        \
    (GT_GPU_THROTTLE_SW_POWER_CAP | GT_GPU_THROTTLE_HW_SLOWDOWN | GT_GPU_THROTTLE_SW_THERMAL |          \
     GT_GPU_THROTTLE_HW_THERMAL | GT_GPU_THROTTLE_HW_POWER_BRAKE)

/* One reading; a field NVML could not read is NaN (counters: -1). */
typedef struct gt_gpu_sample {
    double util_pct, mem_util_pct; /* % of the interval the GPU / its memory was busy */
    double mem_used_bytes, mem_total_bytes;
    double temp_c, power_w, sm_clock_mhz, mem_clock_mhz;
    uint64_t throttle;             /* GT_GPU_THROTTLE_* bits */
    int64_t ecc_corrected, ecc_uncorrected; /* volatile (since the driver loaded) */
    int64_t xid_events;            /* critical Xid events seen so far by this sampler */
    int last_xid;                  /* the newest Xid number (0: none) */
} gt_gpu_sample;

/* Summary of the samples of an interval or a run (plain numbers: gathered
 * over MPI as bytes by the trainer). */
typedef struct gt_gpu_stats {
    int n;                               /* samples */
    double util_mean, util_min, util_max;
    double mem_used_max_bytes, mem_total_bytes;
    double temp_max_c, power_mean_w, power_max_w;
    double sm_clock_mean_mhz, sm_clock_min_mhz, mem_clock_mean_mhz;
    double throttled_frac;               /* samples with a GT_GPU_THROTTLE_SLOWING reason / n */
    uint64_t throttle_seen;              /* OR of every sample's reasons */
    int64_t ecc_corrected, ecc_uncorrected; /* the last counts */
    int64_t ecc_corrected_new, ecc_uncorrected_new; /* growth over the samples */
    int64_t xid_events;                  /* Xid events in the samples */
    int last_xid;
} gt_gpu_stats;

void gt_gpu_stats_reset(gt_gpu_stats *s);
void gt_gpu_stats_add(gt_gpu_stats *s, const gt_gpu_sample *x);
/* "SW power cap, HW thermal slowdown" for the reasons in bits ("none" for 0). */
void gt_gpu_throttle_names(uint64_t bits, char *buf, size_t n);

/* Warnings over the ranks' stats of one interval (stats[r] for rank r;
 * n == 0 for a rank without telemetry): a GPU throttled in more than
 * GT_GPU_WARN_THROTTLED of the samples; a GPU idle (mean utilisation below
 * GT_GPU_WARN_IDLE_PCT) while the others are busy (median of the others above
 * GT_GPU_WARN_BUSY_PCT); uncorrected ECC errors that grew; Xid events.
 * Writes one line per finding into buf (separated by '\n'); returns the count. */
#define GT_GPU_WARN_THROTTLED 0.2
#define GT_GPU_WARN_IDLE_PCT 20.0
#define GT_GPU_WARN_BUSY_PCT 50.0
int gt_gpu_warnings(const gt_gpu_stats *stats, int n_ranks, char *buf, size_t n);

/* The sampler. gt_gpu_telemetry_start: loads NVML, finds the GPU with this
 * PCI bus id (else uuid; neither given: NVML's GPU 0), starts the thread; NULL (why in `why`) when NVML or
 * the GPU is not there. take: the summary since the last take (resets it) and
 * adds it into *run (the whole run's). stop: ends the thread, frees. */
typedef struct gt_gpu_telemetry gt_gpu_telemetry;
gt_gpu_telemetry *gt_gpu_telemetry_start(const char *pci_bus_id, const char *uuid, double period_s, char *why,
                                         size_t why_bytes);
void gt_gpu_telemetry_take(gt_gpu_telemetry *g, gt_gpu_stats *interval);
void gt_gpu_telemetry_run_stats(gt_gpu_telemetry *g, gt_gpu_stats *run);
void gt_gpu_telemetry_stop(gt_gpu_telemetry *g);
/* One reading now (tests). 0, or -1. */
int gt_gpu_telemetry_read(gt_gpu_telemetry *g, gt_gpu_sample *x);
/* NVML's driver version ("550.54.15"), or "" . */
const char *gt_gpu_telemetry_driver(gt_gpu_telemetry *g);

#endif
