/* synth/synth_nilm_impl.h: what the files of the synthetic NILM generator
 * share (synth/synth.h is its interface). Private to synth/.
 *
 *   synth_nilm.c         defaults, faults, the household API
 *   synth_nilm_table.c   the appliance models
 *   synth_nilm_home.c    a household's habits and days, time-of-day sampling
 *   synth_nilm_cold.c    thermostat appliances (fridge, freezer, heat pump), weather
 *   synth_nilm_events.c  event appliances (kettle ... lighting) and unmetered loads
 *
 * Determinism: every purpose draws from its own counter range of the
 * household's Philox stream (ctr_base), so the bytes of a household do not
 * depend on which file a model lives in. The small helpers below are static
 * inline, as they were inlined where they are used. */
#ifndef GT_SYNTH_SYNTH_NILM_IMPL_H
#define GT_SYNTH_SYNTH_NILM_IMPL_H

#include <math.h>
#include <stdint.h>

#include "core/rng.h"
#include "synth/synth.h"

#define DAY_S 86400.0
#define NA GT_NILM_N_APPLIANCES

enum {
    A_FRIDGE, A_FREEZER, A_KETTLE, A_MICROWAVE, A_TOASTER, A_OVEN, A_WASHER, A_DISHWASHER,
    A_DRYER, A_SHOWER, A_EV, A_HEATPUMP, A_TV, A_COMPUTER, A_LIGHTING
};

typedef struct gt_nilm_app_model {
    const char *name;
    float on_power_w, on_duration_s, max_power_w, p_own;
} gt_nilm_app_model;
extern const gt_nilm_app_model gt_nilm_apps[NA]; /* synth_nilm_table.c */

/* ------------------------------------------------------------ plumbing -- */

/* Counter ranges inside the household stream: purpose p, day k (relative). */
enum { P_INFO = 1, P_HABITS, P_DAYS, P_FAULTS, P_NOISE, P_OTHER, P_APP0 /* + appliance */ };
static inline uint64_t ctr_base(int purpose, int64_t k) {
    return ((uint64_t)purpose << 52) | ((uint64_t)k << 30);
}
static inline void rng_at(gt_rng *r, const gt_nilm_synth_cfg *cfg, int h, int purpose, int64_t k) {
    gt_rng_init(r, cfg->seed, gt_stream(GT_STREAM_SYNTH_NILM, (uint32_t)h));
    gt_rng_seek(r, ctr_base(purpose, k));
}
static inline double unif(gt_rng *r, double lo, double hi) { return lo + (hi - lo) * gt_rng_uniform_d(r); }
static inline double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
static inline int poisson(gt_rng *r, double mean) { /* Knuth; means here are small */
    if (mean <= 0) return 0;
    double L = exp(-mean), p = 1.0;
    int k = 0;
    do { k++; p *= gt_rng_uniform_d(r); } while (p > L && k < 1000);
    return k - 1;
}

/* ------------------------------------------------------------- habits -- */

typedef struct day_info {
    int dow, weekend, away;        /* dow 0 = Monday; away = nobody home all day */
    double wake, bed;              /* hours of day (bed may exceed 24) */
    double leave, ret;             /* absence window (hours), leave >= ret if none */
    double evening;                /* centre of the evening peak */
    double sunrise, sunset;
} day_info;

typedef struct household {
    const gt_nilm_synth_cfg *cfg;
    int h;
    int64_t n;        /* rows */
    int64_t t0_ms;    /* time stamp of row 0 */
    double t0_s;      /* seconds since epoch of row 0 */
    double dt;        /* period_s */
    int64_t day0;     /* absolute day (since epoch) of row 0 */
    int n_days;       /* days touched by the rows */
    uint8_t owns[NA];
    int persons, commuters, home_office;
    double wake_wd, wake_we, bed, evening, ret, activity, base_w;
    day_info *days;   /* [n_days] */
} household;

/* Rough latitude-50N day length; doy from an absolute day number. */
static inline int doy_of(int64_t day_abs) {
    /* days since 1970-01-01 to day of year, good enough (ignores leap-day drift) */
    double y = (double)day_abs / 365.2425;
    return (int)((y - floor(y)) * 365.2425);
}

/* synth_nilm_home.c */
void household_setup(const gt_nilm_synth_cfg *cfg, int h, household *hh, int with_days);
void household_free(household *hh);
/* Time-of-day slots: 0 morning, 1 midday, 2 afternoon, 3 evening, 4 late. Picks a
 * slot by weight and a time around its centre; -1 when no time fits (nobody home). */
double sample_tod(gt_rng *r, const day_info *di, const float w[5]);
/* out[i * NA + a] += p for rows whose time lies in [t, t + dur) */
void add_span(const household *hh, float *out, int a, double t, double dur, float p);

static inline int is_home(const day_info *di, double hr) {
    if (di->away) return 0;
    return !(hr > di->leave && hr < di->ret);
}

/* row of absolute time (seconds since epoch), rounded up */
static inline int64_t row_at(const household *hh, double t_abs) {
    return (int64_t)ceil((t_abs - hh->t0_s) / hh->dt - 1e-9);
}
static inline double t_of_day(const household *hh, int d, double hour) {
    return (double)(hh->day0 + d) * DAY_S + hour * 3600.0;
}

/* synth_nilm_cold.c */
void gen_cold(const household *hh, float *out, int a);
void gen_heatpump(const household *hh, float *out, int a);

/* synth_nilm_events.c */
void gen_kettle(const household *hh, float *out, int a);
void gen_microwave(const household *hh, float *out, int a);
void gen_toaster(const household *hh, float *out, int a);
void gen_oven(const household *hh, float *out, int a);
void gen_laundry(const household *hh, float *out);
void gen_dishwasher(const household *hh, float *out, int a);
void gen_shower(const household *hh, float *out, int a);
void gen_ev(const household *hh, float *out, int a);
void gen_tv(const household *hh, float *out, int a);
void gen_computer(const household *hh, float *out, int a);
void gen_lighting(const household *hh, float *out, int a);
void gen_unmetered(const household *hh, float *agg);

#endif
