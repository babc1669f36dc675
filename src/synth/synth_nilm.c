/* synth/synth_nilm.c: deterministic synthetic NILM households (see synth/synth.h).
 *
 * Household h draws everything from one Philox stream
 * gt_stream(GT_STREAM_SYNTH_NILM, h); independent purposes (habits, one
 * appliance, one day of one appliance, faults, noise) live in disjoint counter
 * ranges of that stream (see ctr_base), so adding or changing one appliance
 * model never shifts the draws of another, and household h is the same bytes
 * whoever generates it and whatever was generated before. Weather is shared by
 * all households (one region) and depends on (seed, day) only.
 *
 * Model (per household):
 *   habits      persons, wake-up (weekday/weekend), bedtime, evening peak,
 *               weekday absence (commuters), home office, away days, activity
 *   ownership   per-appliance probabilities (fridge ~0.98, lighting 1)
 *   appliances  event schedules sampled from time-of-day "slots" shaped by the
 *               habits, rendered as multi-phase power signatures; fridge,
 *               freezer and heat pump are row-by-row thermostat simulations
 *   aggregate   base load + unmetered loads (vacuum, hair dryer)
 *               + sum(appliances) + N(0, noise_w)
 *   faults      spikes (20-60 kW, 1-2 samples), gaps (NaN on aggregate and all
 *               appliances, 30 s .. 4 h), stuck aggregate (5 min .. 3 h); Poisson
 *               arrivals at the configured rates per household-day, never
 *               overlapping one another, flagged in `faults`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "synth/synth.h"

#define DAY_S 86400.0
#define NA GT_NILM_N_APPLIANCES

enum {
    A_FRIDGE, A_FREEZER, A_KETTLE, A_MICROWAVE, A_TOASTER, A_OVEN, A_WASHER, A_DISHWASHER,
    A_DRYER, A_SHOWER, A_EV, A_HEATPUMP, A_TV, A_COMPUTER, A_LIGHTING
};

static const struct {
    const char *name;
    float on_power_w, on_duration_s, max_power_w, p_own;
} k_app[NA] = {
    {"fridge", 50.f, 1200.f, 400.f, 0.98f},
    {"freezer", 50.f, 1500.f, 450.f, 0.45f},
    {"kettle", 1000.f, 180.f, 3200.f, 0.85f},
    {"microwave", 300.f, 150.f, 1600.f, 0.80f},
    {"toaster", 400.f, 180.f, 1500.f, 0.50f},
    {"oven", 500.f, 2400.f, 5000.f, 0.85f},
    {"washing_machine", 20.f, 5400.f, 2600.f, 0.90f},
    {"dishwasher", 20.f, 7200.f, 2500.f, 0.55f},
    {"tumble_dryer", 200.f, 3600.f, 3000.f, 0.40f},
    {"electric_shower", 3000.f, 480.f, 11000.f, 0.30f},
    {"ev_charger", 1000.f, 14400.f, 7600.f, 0.20f},
    {"heat_pump", 200.f, 1800.f, 4500.f, 0.35f},
    {"television", 20.f, 7200.f, 300.f, 0.95f},
    {"computer", 20.f, 7200.f, 350.f, 0.80f},
    {"lighting", 15.f, 10800.f, 800.f, 1.00f},
};

void gt_nilm_synth_defaults(gt_nilm_synth_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->n_households = 16;
    cfg->days = 7.0;
    cfg->period_s = 6.0;
    cfg->lowres_period_s = 900.0;
    cfg->start_ms = INT64_C(1767571200000); /* 2026-01-05 00:00:00 UTC, a Monday */
    cfg->spike_rate = 0.5;
    cfg->gap_rate = 0.3;
    cfg->stuck_rate = 0.1;
    cfg->noise_w = 8.0;
}

void gt_nilm_appliances(gt_appliance_meta meta[GT_NILM_N_APPLIANCES]) {
    for (int a = 0; a < NA; a++) {
        memset(&meta[a], 0, sizeof meta[a]);
        strncpy(meta[a].name, k_app[a].name, GT_NAME_LEN - 1);
        meta[a].on_power_w = k_app[a].on_power_w;
        meta[a].on_duration_s = k_app[a].on_duration_s;
        meta[a].max_power_w = k_app[a].max_power_w;
    }
}

/* ------------------------------------------------------------ plumbing -- */

/* Counter ranges inside the household stream: purpose p, day k (relative). */
enum { P_INFO = 1, P_HABITS, P_DAYS, P_FAULTS, P_NOISE, P_OTHER, P_APP0 /* + appliance */ };
static uint64_t ctr_base(int purpose, int64_t k) {
    return ((uint64_t)purpose << 52) | ((uint64_t)k << 30);
}
static void rng_at(gt_rng *r, const gt_nilm_synth_cfg *cfg, int h, int purpose, int64_t k) {
    gt_rng_init(r, cfg->seed, gt_stream(GT_STREAM_SYNTH_NILM, (uint32_t)h));
    gt_rng_seek(r, ctr_base(purpose, k));
}
static double unif(gt_rng *r, double lo, double hi) { return lo + (hi - lo) * gt_rng_uniform_d(r); }
static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
static int poisson(gt_rng *r, double mean) { /* Knuth; means here are small */
    if (mean <= 0) return 0;
    double L = exp(-mean), p = 1.0;
    int k = 0;
    do { k++; p *= gt_rng_uniform_d(r); } while (p > L && k < 1000);
    return k - 1;
}

static void check_cfg(const gt_nilm_synth_cfg *cfg, int h) {
    GT_CHECK(cfg->n_households > 0, GT_EXIT_USAGE, "synth nilm: n_households must be > 0 (got %d)",
             cfg->n_households);
    GT_CHECK(h >= 0 && h < cfg->n_households, GT_EXIT_USAGE,
             "synth nilm: household %d out of range [0, %d)", h, cfg->n_households);
    GT_CHECK(cfg->period_s > 0 && cfg->days > 0 && cfg->days * DAY_S / cfg->period_s < 1e9,
             GT_EXIT_USAGE, "synth nilm: need period_s > 0 and days > 0 (got %g s, %g days)",
             cfg->period_s, cfg->days);
    GT_CHECK(cfg->spike_rate >= 0 && cfg->gap_rate >= 0 && cfg->stuck_rate >= 0 && cfg->noise_w >= 0,
             GT_EXIT_USAGE, "synth nilm: fault rates and noise_w must be >= 0");
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
static int doy_of(int64_t day_abs) {
    /* days since 1970-01-01 to day of year, good enough (ignores leap-day drift) */
    double y = (double)day_abs / 365.2425;
    return (int)((y - floor(y)) * 365.2425);
}

static void household_setup(const gt_nilm_synth_cfg *cfg, int h, household *hh, int with_days) {
    check_cfg(cfg, h);
    memset(hh, 0, sizeof *hh);
    hh->cfg = cfg;
    hh->h = h;
    hh->dt = cfg->period_s;
    gt_rng r;
    rng_at(&r, cfg, h, P_INFO, 0);
    double frac = 0.75 + 0.25 * gt_rng_uniform_d(&r);
    int64_t n_nom = (int64_t)floor(cfg->days * DAY_S / cfg->period_s);
    hh->n = (int64_t)floor((double)n_nom * frac);
    if (hh->n < 1) hh->n = 1;
    double step = cfg->period_s;
    if (cfg->lowres_period_s > 0) {
        double q = cfg->lowres_period_s / cfg->period_s;
        if (fabs(q - floor(q + 0.5)) < 1e-9) step = cfg->lowres_period_s;
    }
    int k = (int)gt_rng_below(&r, 4); /* 0, 1, 2 or 3 steps late: 0..45 min at defaults */
    hh->t0_ms = cfg->start_ms + (int64_t)llround(k * step * 1000.0);
    hh->t0_s = (double)hh->t0_ms / 1000.0;
    for (int a = 0; a < NA; a++) hh->owns[a] = gt_rng_uniform_d(&r) < k_app[a].p_own;
    hh->owns[A_LIGHTING] = 1;

    rng_at(&r, cfg, h, P_HABITS, 0);
    double pu = gt_rng_uniform_d(&r);
    hh->persons = pu < 0.28 ? 1 : pu < 0.62 ? 2 : pu < 0.78 ? 3 : pu < 0.94 ? 4 : 5;
    hh->commuters = gt_rng_uniform_d(&r) < 0.6;
    hh->home_office = !hh->commuters && gt_rng_uniform_d(&r) < 0.5;
    hh->wake_wd = unif(&r, 5.8, 8.0);
    hh->wake_we = hh->wake_wd + unif(&r, 0.5, 2.5);
    hh->bed = unif(&r, 21.8, 24.3);
    hh->ret = unif(&r, 16.5, 19.0);
    hh->evening = unif(&r, 17.8, 19.6);
    hh->activity = unif(&r, 0.6, 1.4);
    hh->base_w = unif(&r, 40.0, 180.0);
    if (!hh->owns[A_FREEZER] && !hh->owns[A_FRIDGE]) hh->base_w += 30.0;

    hh->day0 = (int64_t)floor(hh->t0_s / DAY_S);
    double t_end = hh->t0_s + (double)hh->n * hh->dt;
    hh->n_days = (int)((int64_t)floor(t_end / DAY_S) - hh->day0 + 1);
    if (!with_days) return;
    hh->days = GT_MALLOC(sizeof(day_info) * (size_t)hh->n_days);
    for (int d = 0; d < hh->n_days; d++) {
        day_info *di = &hh->days[d];
        int64_t da = hh->day0 + d;
        rng_at(&r, cfg, h, P_DAYS, d);
        di->dow = (int)(((da + 3) % 7 + 7) % 7);
        di->weekend = di->dow >= 5;
        di->away = gt_rng_uniform_d(&r) < 0.03;
        di->wake = (di->weekend ? hh->wake_we : hh->wake_wd) + 0.25 * gt_rng_normal(&r);
        di->bed = hh->bed + (di->dow >= 4 && di->dow <= 5 ? 0.7 : 0.0) + 0.3 * gt_rng_normal(&r);
        int works = !di->weekend && hh->commuters;
        di->leave = works ? di->wake + unif(&r, 0.6, 1.3) : 99.0;
        di->ret = works ? hh->ret + 0.4 * gt_rng_normal(&r) : 0.0;
        di->evening = hh->evening + 0.3 * gt_rng_normal(&r);
        double doy = doy_of(da);
        double len = 12.0 + 4.3 * sin(6.283185307179586 * (doy - 80.0) / 365.0);
        di->sunrise = 12.3 - 0.5 * len;
        di->sunset = 12.3 + 0.5 * len;
    }
}

static void household_free(household *hh) { free(hh->days); }

static int is_home(const day_info *di, double hr) {
    if (di->away) return 0;
    return !(hr > di->leave && hr < di->ret);
}

/* Time-of-day slots: 0 morning, 1 midday, 2 afternoon, 3 evening, 4 late. Picks a
 * slot by weight and a time around its centre; -1 when no time fits (nobody home). */
static double sample_tod(gt_rng *r, const day_info *di, const float w[5]) {
    float ws[5], tot = 0.f;
    for (int s = 0; s < 5; s++) { ws[s] = w[s]; tot += w[s]; }
    if (tot <= 0.f || di->away) return -1.0;
    for (int tries = 0; tries < 6; tries++) {
        float u = gt_rng_uniform(r) * tot;
        int s = 0;
        while (s < 4 && u >= ws[s]) { u -= ws[s]; s++; }
        double c, sd;
        switch (s) {
        case 0: c = di->wake + 0.45; sd = 0.35; break;
        case 1: c = 12.6; sd = 0.8; break;
        case 2: c = 15.5; sd = 1.2; break;
        case 3: c = di->evening; sd = 0.9; break;
        default: c = di->bed - 1.0; sd = 0.6; break;
        }
        double t = c + sd * gt_rng_normal(r);
        if (t < di->wake || t > di->bed - 0.1) continue;
        if (!is_home(di, t)) continue;
        return t;
    }
    return -1.0;
}

/* row of absolute time (seconds since epoch), rounded up */
static int64_t row_at(const household *hh, double t_abs) {
    return (int64_t)ceil((t_abs - hh->t0_s) / hh->dt - 1e-9);
}
static double t_of_day(const household *hh, int d, double hour) {
    return (double)(hh->day0 + d) * DAY_S + hour * 3600.0;
}

/* out[i * NA + a] += p for rows whose time lies in [t, t + dur) */
static void add_span(const household *hh, float *out, int a, double t, double dur, float p) {
    int64_t r0 = row_at(hh, t), r1 = row_at(hh, t + dur);
    if (r1 <= r0) r1 = r0 + 1; /* anything that happens shows up in one sample */
    if (r0 < 0) r0 = 0;
    if (r1 > hh->n) r1 = hh->n;
    for (int64_t i = r0; i < r1; i++) out[i * NA + a] += p;
}

/* Sorted start times (absolute s) of up to `cap` events of one day, pushed apart so
 * that consecutive events start at least `min_gap_s` apart. */
static int day_events(gt_rng *r, const day_info *di, const household *hh, int d, double mean,
                      const float w[5], double min_gap_s, double *t, int cap) {
    int k = poisson(r, mean);
    if (k > cap) k = cap;
    int m = 0;
    for (int i = 0; i < k; i++) {
        double hr = sample_tod(r, di, w);
        if (hr >= 0) t[m++] = t_of_day(hh, d, hr);
    }
    for (int i = 1; i < m; i++) /* insertion sort, m is tiny */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    for (int i = 1; i < m; i++)
        if (t[i] < t[i - 1] + min_gap_s) t[i] = t[i - 1] + min_gap_s;
    return m;
}

/* ------------------------------------------------- thermostat appliances -- */

/* Fridge or freezer compressor: on/off cycles with jitter, start-up surge, slow
 * decline while running, longer runs while people are active, and a periodic
 * defrost heater followed by a long recovery run. */
static void gen_cold(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    int freezer = a == A_FREEZER;
    double p_on = freezer ? unif(&r, 80, 150) : unif(&r, 70, 130);
    double on_s = freezer ? unif(&r, 900, 1800) : unif(&r, 720, 1500);
    double off_s = freezer ? unif(&r, 1800, 3600) : unif(&r, 1500, 3000);
    int has_defrost = gt_rng_uniform_d(&r) < (freezer ? 0.35 : 0.7);
    double defrost_every = unif(&r, 12, 30) * 3600.0, defrost_w = unif(&r, 150, freezer ? 350 : 250);
    double defrost_s = unif(&r, 900, 1800);
    double dt = hh->dt;
    double t = -unif(&r, 0, on_s + off_s); /* random phase, seconds since row 0 */
    double next_defrost = unif(&r, 0.1, 1.0) * defrost_every;
    int recovery = 0;
    while (t < (double)hh->n * dt) {
        /* activity: doors open during the day make runs longer */
        double tabs = hh->t0_s + t;
        int d = (int)(floor(tabs / DAY_S) - hh->day0);
        double hr = fmod(tabs, DAY_S) / 3600.0;
        if (hr < 0) hr += 24.0;
        double act = 1.0;
        if (d >= 0 && d < hh->n_days) {
            const day_info *di = &hh->days[d];
            if (is_home(di, hr) && hr > di->wake && hr < di->bed) act = 1.15;
        }
        double on = on_s * act * unif(&r, 0.85, 1.15) * (recovery ? 1.8 : 1.0);
        double off = off_s / act * unif(&r, 0.85, 1.15);
        recovery = 0;
        double p = p_on * unif(&r, 0.95, 1.05);
        int64_t r0 = (int64_t)ceil(t / dt - 1e-9), r1 = (int64_t)ceil((t + on) / dt - 1e-9);
        for (int64_t i = r0 < 0 ? 0 : r0; i < r1 && i < hh->n; i++) {
            double k = (double)(i - r0);
            double v = p * (1.06 - 0.1 * k * dt / on) + 1.5 * (gt_rng_uniform(&r) - 0.5);
            if (k < 1) v *= 2.4;       /* start-up current surge */
            else if (k < 2) v *= 1.3;
            out[i * NA + a] += (float)v;
        }
        t += on;
        if (has_defrost && t >= next_defrost) {
            add_span(hh, out, a, hh->t0_s + t + 60.0, defrost_s, (float)(defrost_w * unif(&r, 0.97, 1.03)));
            t += 60.0 + defrost_s + 300.0;
            next_defrost += defrost_every * unif(&r, 0.9, 1.1);
            recovery = 1;
        } else {
            t += off;
        }
    }
}

/* Outdoor temperature (degC) at absolute time: season + daily cycle + weather
 * shared by all households (depends on seed and day only). */
static double weather_day(uint64_t seed, int64_t day_abs) {
    gt_rng r;
    gt_rng_init(&r, seed, gt_stream(GT_STREAM_SYNTH_NILM, 0xFFFFFFFFu));
    gt_rng_seek(&r, (uint64_t)day_abs);
    return 3.0 * gt_rng_normal(&r);
}
static double outdoor_temp(uint64_t seed, double tabs) {
    double day = tabs / DAY_S;
    int64_t d = (int64_t)floor(day);
    double f = day - (double)d;
    double w = weather_day(seed, d) * (1.0 - f) + weather_day(seed, d + 1) * f;
    double doy = doy_of(d) + f;
    double hr = f * 24.0;
    return 10.5 - 9.0 * cos(6.283185307179586 * (doy - 15.0) / 365.0) +
           4.0 * cos(6.283185307179586 * (hr - 15.0) / 24.0) + w;
}

/* Heat pump / air conditioner: indoor temperature simulated row by row with a
 * first-order house model; the compressor follows a setpoint schedule (comfort
 * when people are home and awake, setback otherwise) with hysteresis and
 * minimum on/off times; power rises as it gets colder; defrost dips in frost. */
static void gen_heatpump(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p_rated = unif(&r, 1200, 3000);
    double comfort = unif(&r, 19.5, 22.0), setback = comfort - unif(&r, 2.0, 4.0);
    double cool_set = unif(&r, 24.0, 26.5);
    double tau_h = unif(&r, 20, 45);                 /* house time constant, hours */
    double gain = (comfort + 12.0) / tau_h * 1.4;     /* degC/h while heating at full power */
    double t_in = comfort - unif(&r, 0, 1.5);
    double dt_h = hh->dt / 3600.0;
    int on = 0;
    double since = 1e9; /* seconds since last switch */
    double run_s = 0;
    double t_out = outdoor_temp(hh->cfg->seed, hh->t0_s);
    for (int64_t i = 0; i < hh->n; i++) {
        double tabs = hh->t0_s + (double)i * hh->dt;
        if (i % 50 == 0) t_out = outdoor_temp(hh->cfg->seed, tabs); /* every 5 min at 6 s */
        int d = (int)(floor(tabs / DAY_S) - hh->day0);
        double hr = (tabs - (double)(hh->day0 + d) * DAY_S) / 3600.0;
        const day_info *di = &hh->days[d];
        int home = is_home(di, hr) && hr > di->wake - 0.5 && hr < di->bed;
        /* preheat half an hour before coming home */
        if (!di->away && hr > di->ret - 0.5 && hr < di->ret && di->leave < di->ret) home = 1;
        int cooling = t_out > 22.0;
        double set = cooling ? cool_set : (home ? comfort : setback);
        double sign = cooling ? -1.0 : 1.0;
        int want;
        if (!cooling)
            want = on ? t_in < set + 0.5 : t_in < set - 0.5;
        else
            want = on ? t_in > set - 0.5 : t_in > set + 0.5 && home;
        if (want != on && since >= (on ? 360.0 : 300.0)) { on = want; since = 0; if (on) run_s = 0; }
        since += hh->dt;
        double occ_gain = home ? 0.15 : 0.0;
        t_in += dt_h * ((t_out - t_in) / tau_h + occ_gain + (on ? sign * gain : 0.0));
        double p = 8.0; /* controller + crankcase heater */
        if (on) {
            run_s += hh->dt;
            double f = clampd(1.0 + 0.02 * (cooling ? (t_out - 25.0) : (7.0 - t_out)), 0.6, 1.4);
            p = p_rated * f * (run_s < 60.0 ? 0.5 + 0.5 * run_s / 60.0 : 1.0);
            if (!cooling && t_out < 3.0 && fmod(run_s, 3600.0) > 3300.0) p = 0.3 * p_rated; /* defrost */
            p *= 1.0 + 0.01 * (gt_rng_uniform(&r) - 0.5);
        }
        out[i * NA + a] += (float)p;
    }
}

/* ------------------------------------------------------ event appliances -- */

static void gen_kettle(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = unif(&r, 2000, 3000);
    static const float w[5] = {1.0f, 0.5f, 0.6f, 0.8f, 0.35f};
    double rate = (1.2 + 0.7 * hh->persons) * hh->activity;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        double t[16];
        int m = day_events(&r, &hh->days[d], hh, d, rate, w, 900.0, t, 16);
        for (int i = 0; i < m; i++) {
            double dur = unif(&r, 100, 280);
            int64_t r0 = row_at(hh, t[i]), len = (int64_t)ceil(dur / hh->dt);
            for (int64_t k = 0; k < len; k++) {
                int64_t j = r0 + k;
                if (j < 0 || j >= hh->n) continue;
                out[j * NA + a] += (float)(p * (1.0 - 0.03 * (double)k / (double)len));
            }
        }
    }
}

static void gen_microwave(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = unif(&r, 900, 1400);
    static const float w[5] = {0.4f, 1.0f, 0.3f, 1.0f, 0.4f};
    double rate = (0.5 + 0.4 * hh->persons) * hh->activity;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        double t[12];
        int m = day_events(&r, &hh->days[d], hh, d, rate, w, 400.0, t, 12);
        for (int i = 0; i < m; i++) {
            double dur = unif(&r, 30, 360);
            if (gt_rng_uniform_d(&r) < 0.25) { /* defrost: 12 s on / 18 s off */
                for (double s = 0; s < dur; s += 30.0) add_span(hh, out, a, t[i] + s, 12.0, (float)p);
            } else {
                add_span(hh, out, a, t[i], dur, (float)(p * unif(&r, 0.97, 1.03)));
            }
        }
    }
}

static void gen_toaster(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = unif(&r, 800, 1400);
    static const float w[5] = {1.0f, 0.25f, 0.1f, 0.15f, 0.0f};
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        double t[4];
        double rate = (hh->days[d].weekend ? 0.9 : 0.5) * hh->activity;
        int m = day_events(&r, &hh->days[d], hh, d, rate, w, 900.0, t, 4);
        for (int i = 0; i < m; i++) {
            double dur = unif(&r, 120, 240);
            add_span(hh, out, a, t[i], dur, (float)p);
            if (gt_rng_uniform_d(&r) < 0.3) add_span(hh, out, a, t[i] + dur + unif(&r, 20, 60), dur * 0.8, (float)p);
        }
    }
}

/* Oven (preheat then thermostat cycling) and/or hob (full power then simmer). */
static void gen_oven(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p_oven = unif(&r, 2000, 2800), p_hob = unif(&r, 1200, 2000);
    double p_cook = unif(&r, 0.45, 0.9);
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        const day_info *di = &hh->days[d];
        int n_meals = (gt_rng_uniform_d(&r) < p_cook) + (di->weekend && gt_rng_uniform_d(&r) < 0.4);
        for (int mi = 0; mi < n_meals; mi++) {
            static const float w_dinner[5] = {0, 0, 0, 1, 0}, w_lunch[5] = {0, 1, 0, 0, 0};
            double hr = sample_tod(&r, di, mi == 0 ? w_dinner : w_lunch);
            if (hr < 0) continue;
            double t = t_of_day(hh, d, hr - 0.6);
            double u = gt_rng_uniform_d(&r);
            int oven = u < 0.6, hob = u >= 0.4;
            if (oven) {
                double pre = unif(&r, 480, 900), total = unif(&r, 1500, 4200);
                add_span(hh, out, a, t, pre, (float)p_oven);
                double on_s = unif(&r, 40, 90), off_s = unif(&r, 60, 150);
                for (double s = pre + off_s; s < total; s += on_s + off_s)
                    add_span(hh, out, a, t + s, on_s, (float)p_oven);
            }
            if (hob) {
                double t1 = t + (oven ? unif(&r, 600, 1800) : 0.0);
                double full = unif(&r, 300, 600), sim = unif(&r, 600, 1800);
                add_span(hh, out, a, t1, full, (float)p_hob);
                double on_s = unif(&r, 20, 40), off_s = unif(&r, 30, 60);
                for (double s = full; s < full + sim; s += on_s + off_s)
                    add_span(hh, out, a, t1 + s, on_s, (float)(p_hob * 0.9));
            }
        }
    }
}

/* Tumbling motor: 12 s on, 6 s off (at 6 s sampling: 2 rows on, 1 row off). */
static void tumble(const household *hh, float *out, int a, double t, double dur, float p_mot, float p_idle) {
    add_span(hh, out, a, t, dur, p_idle);
    for (double s = 0; s < dur; s += 18.0) add_span(hh, out, a, t + s, s + 12.0 <= dur ? 12.0 : dur - s, p_mot - p_idle);
}

/* Washing machine program; returns the end time (absolute s). */
static double wash_program(gt_rng *r, const household *hh, float *out, int a, double t, double p_heat,
                           double p_mot, double p_spin) {
    double u = gt_rng_uniform_d(r);
    double heat_s = u < 0.35 ? unif(r, 360, 600) : u < 0.8 ? unif(r, 720, 1080) : unif(r, 1200, 1680);
    float idle = 25.f; /* door lock, controller and pump between tumbles */
    double fill = unif(r, 120, 240);
    add_span(hh, out, a, t, fill, 30.f); t += fill;
    tumble(hh, out, a, t, heat_s, (float)p_mot, idle);
    add_span(hh, out, a, t, heat_s, (float)p_heat); t += heat_s;
    double wash = unif(r, 1500, 2700);
    tumble(hh, out, a, t, wash, (float)p_mot, idle); t += wash;
    int rinses = 2 + (gt_rng_uniform_d(r) < 0.5);
    for (int k = 0; k < rinses; k++) {
        add_span(hh, out, a, t, 60, 55.f); t += 60;                  /* drain pump */
        add_span(hh, out, a, t, 120, 30.f); t += 120;                /* fill */
        tumble(hh, out, a, t, 240, (float)p_mot, idle); t += 240;
        add_span(hh, out, a, t, 120, (float)(0.5 * p_spin)); t += 120; /* short spin */
    }
    add_span(hh, out, a, t, 60, 55.f); t += 60;
    double spin = unif(r, 420, 720);
    for (double s = 0; s < 120; s += hh->dt) /* ramp up */
        add_span(hh, out, a, t + s, hh->dt, (float)(150.0 + (p_spin - 150.0) * s / 120.0));
    t += 120;
    add_span(hh, out, a, t, spin, (float)p_spin); t += spin;
    add_span(hh, out, a, t, 60, (float)(0.3 * p_spin)); t += 60;
    add_span(hh, out, a, t, 60, 55.f); t += 60;
    return t;
}

/* Washing machine plus the tumble dryer that often follows it. */
static void gen_laundry(const household *hh, float *out) {
    gt_rng r, rd;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + A_WASHER, 0);
    rng_at(&rd, hh->cfg, hh->h, P_APP0 + A_DRYER, 0);
    double p_heat = unif(&r, 1900, 2200), p_mot = unif(&r, 150, 250), p_spin = unif(&r, 450, 700);
    double p_dry_heat = unif(&rd, 1800, 2500), p_dry_mot = unif(&rd, 150, 300);
    double p_use_dryer = unif(&rd, 0.4, 0.9);
    static const float w[5] = {1.0f, 0.8f, 0.6f, 1.0f, 0.2f};
    double busy_until = -1e18;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + A_WASHER, d + 1));
        gt_rng_seek(&rd, ctr_base(P_APP0 + A_DRYER, d + 1));
        double rate = (0.1 + 0.15 * hh->persons) * (hh->days[d].weekend ? 1.6 : 1.0);
        double t[4];
        int m = day_events(&r, &hh->days[d], hh, d, rate, w, 7200.0, t, 4);
        for (int i = 0; i < m; i++) {
            double start = t[i] > busy_until ? t[i] : busy_until + 300.0;
            double end = start;
            if (hh->owns[A_WASHER]) end = wash_program(&r, hh, out, A_WASHER, start, p_heat, p_mot, p_spin);
            else end = start + 5400.0;
            busy_until = end;
            if (!hh->owns[A_DRYER] || gt_rng_uniform_d(&rd) >= p_use_dryer) continue;
            double ts = end + unif(&rd, 120, 2400), dur = unif(&rd, 2700, 6000);
            add_span(hh, out, A_DRYER, ts, dur + 600.0, (float)p_dry_mot);
            double on_s = unif(&rd, 300, 540), off_s = unif(&rd, 60, 120);
            for (double s = 0; s < dur; s += on_s + off_s)
                add_span(hh, out, A_DRYER, ts + s, s + on_s <= dur ? on_s : dur - s, (float)p_dry_heat);
        }
    }
}

static void gen_dishwasher(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p_heat = unif(&r, 1800, 2200), p_pump = unif(&r, 60, 110);
    int night_timer = gt_rng_uniform_d(&r) < 0.2;
    static const float w[5] = {0.2f, 0.3f, 0.1f, 0.6f, 1.2f};
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        double rate = 0.2 + 0.15 * hh->persons;
        double t[2];
        int m = day_events(&r, &hh->days[d], hh, d, rate > 1.0 ? 1.0 : rate, w, 9000.0, t, 2);
        for (int i = 0; i < m; i++) {
            double s = t[i];
            if (night_timer) s = t_of_day(hh, d, 24.0 + unif(&r, 1.0, 3.0));
            float idle = 3.f;
            double x = unif(&r, 360, 600);
            add_span(hh, out, a, s, x, (float)p_pump); s += x;
            x = unif(&r, 720, 1200);
            add_span(hh, out, a, s, x, (float)(p_pump + p_heat)); s += x;
            x = unif(&r, 1200, 1800);
            add_span(hh, out, a, s, x, (float)p_pump); s += x;
            add_span(hh, out, a, s, 60, 40.f); s += 60;
            x = unif(&r, 360, 600);
            add_span(hh, out, a, s, x, (float)p_pump); s += x;
            x = unif(&r, 480, 840);
            add_span(hh, out, a, s, x, (float)(p_pump + p_heat)); s += x;
            add_span(hh, out, a, s, 60, 40.f); s += 60;
            x = unif(&r, 1500, 2400);
            add_span(hh, out, a, s, x, idle + 22.f); /* drying fan */
        }
    }
}

static void gen_shower(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = unif(&r, 7500, 10500);
    static const float w_m[5] = {1, 0, 0, 0, 0}, w_e[5] = {0, 0, 0, 0.3f, 1};
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        double t[8];
        int m = 0;
        for (int k = 0; k < hh->persons; k++) {
            if (gt_rng_uniform_d(&r) > 0.75) continue;
            double hr = sample_tod(&r, &hh->days[d], gt_rng_uniform_d(&r) < 0.7 ? w_m : w_e);
            if (hr >= 0) t[m++] = t_of_day(hh, d, hr);
        }
        for (int i = 1; i < m; i++)
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
        double prev_end = -1e18;
        for (int i = 0; i < m; i++) {
            double s = t[i] < prev_end + 180.0 ? prev_end + 180.0 : t[i];
            double dur = unif(&r, 240, 720), split = unif(&r, 0.2, 0.8);
            add_span(hh, out, a, s, dur * split, (float)(p * unif(&r, 0.85, 1.0)));
            add_span(hh, out, a, s + dur * split, dur * (1.0 - split), (float)(p * unif(&r, 0.85, 1.0)));
            prev_end = s + dur;
        }
    }
}

/* EV charging: long constant-power sessions at arrival or on a night timer,
 * energy-limited, with a short ramp-up and a taper at the end. */
static void gen_ev(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = (gt_rng_uniform_d(&r) < 0.4 ? 3680.0 : 7360.0) * unif(&r, 0.95, 1.0);
    int night = gt_rng_uniform_d(&r) < 0.5;
    double p_day = unif(&r, 0.25, 0.6);
    double prev_end = -1e18;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        const day_info *di = &hh->days[d];
        if (di->away || gt_rng_uniform_d(&r) >= p_day) continue;
        double hr = night ? unif(&r, 23.0, 25.5)
                          : (di->leave < di->ret ? di->ret : di->evening - 1.0) + unif(&r, 0.0, 0.5);
        double s = t_of_day(hh, d, hr);
        if (s < prev_end + 1800.0) continue;
        double kwh = unif(&r, 4, 30);
        double dur = kwh * 3.6e6 / p;
        if (dur > 10 * 3600.0) dur = 10 * 3600.0;
        double taper = unif(&r, 1200, 2400);
        if (taper > 0.5 * dur) taper = 0.5 * dur;
        int64_t r0 = row_at(hh, s), r1 = row_at(hh, s + dur);
        for (int64_t i = r0 < 0 ? 0 : r0; i < r1 && i < hh->n; i++) {
            double x = (double)(i - r0) * hh->dt;
            double f = x < 60.0 ? 0.3 + 0.7 * x / 60.0 : 1.0;
            double tail = dur - x;
            if (tail < taper) f *= 0.3 + 0.7 * tail / taper;
            out[i * NA + a] += (float)(p * f);
        }
        prev_end = s + dur;
    }
}

/* Level process for media devices: piecewise-constant level redrawn every 30-120 s. */
static void media_session(gt_rng *r, const household *hh, float *out, int a, double t, double dur,
                          double p_lo, double p_hi) {
    for (double s = 0; s < dur;) {
        double seg = unif(r, 30, 120);
        if (s + seg > dur) seg = dur - s;
        add_span(hh, out, a, t + s, seg, (float)unif(r, p_lo, p_hi));
        s += seg;
    }
}

static void gen_tv(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double p = unif(&r, 50, 200), standby = unif(&r, 0.5, 1.5);
    for (int64_t i = 0; i < hh->n; i++) out[i * NA + a] += (float)standby;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        const day_info *di = &hh->days[d];
        if (di->away) continue;
        if (gt_rng_uniform_d(&r) < 0.85) { /* evening */
            double s = fmax(di->evening + unif(&r, -0.5, 1.0), di->ret);
            double e = di->bed - unif(&r, 0, 0.8);
            if (e > s + 0.3) media_session(&r, hh, out, a, t_of_day(hh, d, s), (e - s) * 3600.0, 0.85 * p - standby, 1.1 * p - standby);
        }
        if (gt_rng_uniform_d(&r) < 0.2) { /* morning news */
            double s = di->wake + unif(&r, 0.1, 0.5);
            if (is_home(di, s + 0.5)) media_session(&r, hh, out, a, t_of_day(hh, d, s), unif(&r, 1200, 3600), 0.85 * p - standby, 1.1 * p - standby);
        }
        if ((di->weekend || !hh->commuters) && gt_rng_uniform_d(&r) < 0.4) {
            double s = unif(&r, 13.0, 16.0);
            media_session(&r, hh, out, a, t_of_day(hh, d, s), unif(&r, 3600, 10800), 0.85 * p - standby, 1.1 * p - standby);
        }
    }
}

static void gen_computer(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double idle = unif(&r, 30, 80), load = unif(&r, 20, 150), standby = unif(&r, 1, 4);
    for (int64_t i = 0; i < hh->n; i++) out[i * NA + a] += (float)standby;
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        const day_info *di = &hh->days[d];
        if (di->away) continue;
        if (hh->home_office && !di->weekend) {
            double s1 = 8.8 + 0.3 * gt_rng_normal(&r), e1 = 12.4 + 0.2 * gt_rng_normal(&r);
            double s2 = 13.3 + 0.2 * gt_rng_normal(&r), e2 = 17.3 + 0.4 * gt_rng_normal(&r);
            media_session(&r, hh, out, a, t_of_day(hh, d, s1), (e1 - s1) * 3600.0, idle - standby, idle + load - standby);
            media_session(&r, hh, out, a, t_of_day(hh, d, s2), (e2 - s2) * 3600.0, idle - standby, idle + load - standby);
        }
        if (gt_rng_uniform_d(&r) < 0.3 + 0.1 * hh->persons) {
            double s = fmax(di->evening + unif(&r, 0.5, 2.0), di->ret);
            double dur = unif(&r, 1800, 10800);
            if (s + dur / 3600.0 > di->bed + 0.5) dur = (di->bed + 0.5 - s) * 3600.0;
            if (dur > 300) media_session(&r, hh, out, a, t_of_day(hh, d, s), dur, idle - standby, idle + load - standby);
        }
        if (di->weekend && gt_rng_uniform_d(&r) < 0.4)
            media_session(&r, hh, out, a, t_of_day(hh, d, unif(&r, 10, 16)), unif(&r, 1800, 14400), idle - standby, idle + load - standby);
    }
}

/* Lighting: lit while people are home and awake and it is dark; rooms switch on
 * and off (subset of the household's lamps redrawn every ~10 min). */
static void lit_period(gt_rng *r, const household *hh, float *out, int a, double t, double dur,
                       const double *lamp, int n_lamps) {
    for (double s = 0; s < dur;) {
        double seg = gt_rng_exponential(r, 600.0) + 30.0;
        if (s + seg > dur) seg = dur - s;
        double p = 0;
        int any = 0;
        for (int k = 0; k < n_lamps; k++)
            if (gt_rng_uniform_d(r) < 0.4) { p += lamp[k]; any = 1; }
        if (!any) p = lamp[gt_rng_below(r, (uint32_t)n_lamps)];
        add_span(hh, out, a, t + s, seg, (float)p);
        s += seg;
    }
}

static void gen_lighting(const household *hh, float *out, int a) {
    gt_rng r;
    rng_at(&r, hh->cfg, hh->h, P_APP0 + a, 0);
    double lamp[12];
    int n_lamps = 3 + (int)gt_rng_below(&r, 9);
    double halogen = unif(&r, 0, 0.4);
    for (int k = 0; k < n_lamps; k++) lamp[k] = gt_rng_uniform_d(&r) < halogen ? unif(&r, 35, 60) : unif(&r, 5, 14);
    for (int d = 0; d < hh->n_days; d++) {
        gt_rng_seek(&r, ctr_base(P_APP0 + a, d + 1));
        const day_info *di = &hh->days[d];
        if (di->away) continue;
        double dusk = di->sunset - unif(&r, 0.2, 0.8);
        double dawn = di->sunrise + unif(&r, 0.0, 0.5);
        /* morning */
        double ms = di->wake, me = fmin(dawn, fmin(di->leave, di->wake + 2.0));
        if (me > ms + 0.05) lit_period(&r, hh, out, a, t_of_day(hh, d, ms), (me - ms) * 3600.0, lamp, n_lamps);
        /* evening */
        double es = fmax(dusk, di->leave < di->ret ? di->ret : 0.0), ee = di->bed + unif(&r, 0, 0.3);
        if (ee > es + 0.05) lit_period(&r, hh, out, a, t_of_day(hh, d, es), (ee - es) * 3600.0, lamp, n_lamps);
        /* a night trip */
        if (gt_rng_uniform_d(&r) < 0.3)
            add_span(hh, out, a, t_of_day(hh, d, unif(&r, 1.5, 5.0)), unif(&r, 60, 300), (float)lamp[0]);
    }
}

/* Loads that are not among the 15 outputs (vacuum, hair dryer): only in the aggregate. */
static void gen_unmetered(const household *hh, float *agg) {
    gt_rng r;
    for (int d = 0; d < hh->n_days; d++) {
        rng_at(&r, hh->cfg, hh->h, P_OTHER, d);
        const day_info *di = &hh->days[d];
        static const float w_v[5] = {0.2f, 1, 1, 0.5f, 0}, w_h[5] = {1, 0, 0, 0.2f, 0};
        if (gt_rng_uniform_d(&r) < (di->weekend ? 0.4 : 0.15)) {
            double hr = sample_tod(&r, di, w_v);
            if (hr >= 0) {
                double p = unif(&r, 900, 1600), dur = unif(&r, 600, 1500);
                int64_t r0 = row_at(hh, t_of_day(hh, d, hr)), r1 = r0 + (int64_t)(dur / hh->dt);
                for (int64_t i = r0 < 0 ? 0 : r0; i < r1 && i < hh->n; i++) agg[i] += (float)p;
            }
        }
        if (gt_rng_uniform_d(&r) < 0.1 * hh->persons) {
            double hr = sample_tod(&r, di, w_h);
            if (hr >= 0) {
                double p = unif(&r, 1200, 2000), dur = unif(&r, 180, 480);
                int64_t r0 = row_at(hh, t_of_day(hh, d, hr)), r1 = r0 + (int64_t)(dur / hh->dt);
                for (int64_t i = r0 < 0 ? 0 : r0; i < r1 && i < hh->n; i++) agg[i] += (float)p;
            }
        }
    }
}

/* ------------------------------------------------------------- faults -- */

typedef struct span { int64_t a, b; } span;

/* Places Poisson(rate * household days) non-overlapping runs (1 free row kept
 * between runs so that flagged runs never merge). Length in rows from lens(). */
static int place_faults(gt_rng *r, const household *hh, double rate, int kind, span *sp, int n_sp, int cap,
                        span *out_sp) {
    double days_h = (double)hh->n * hh->dt / DAY_S;
    int m = 0;
    double t = 0.0;
    while (m < cap) {
        if (rate <= 0) break;
        t += gt_rng_exponential(r, 1.0 / rate);
        if (t >= days_h) break;
        int64_t len;
        double u = gt_rng_uniform_d(r);
        if (kind == GT_FAULT_SPIKE) len = u < 0.7 ? 1 : 2;
        else if (kind == GT_FAULT_GAP) len = (int64_t)ceil(30.0 * pow(480.0, u) / hh->dt);   /* 30 s .. 4 h */
        else len = (int64_t)ceil(300.0 * pow(36.0, u) / hh->dt);                             /* 5 min .. 3 h */
        int64_t a = (int64_t)(t / days_h * (double)hh->n);
        int ok = 0;
        for (int tries = 0; tries < 8 && !ok; tries++) {
            if (tries) a = (int64_t)(gt_rng_uniform_d(r) * (double)hh->n);
            int64_t b = a + len > hh->n ? hh->n : a + len;
            ok = 1;
            for (int k = 0; k < n_sp + m && ok; k++) {
                const span *s = k < n_sp ? &sp[k] : &out_sp[k - n_sp];
                if (a <= s->b && b >= s->a) ok = 0; /* keeps >= 1 row between runs */
            }
            if (ok) { out_sp[m].a = a; out_sp[m].b = b; }
        }
        if (ok) m++;
    }
    return m;
}

/* ---------------------------------------------------------------- API -- */

void gt_nilm_household_info(const gt_nilm_synth_cfg *cfg, int h, struct gt_nilm_household_info *info) {
    household hh;
    household_setup(cfg, h, &hh, 0);
    memset(info, 0, sizeof *info);
    info->id = (int64_t)h + 1;
    info->n_rows = hh.n;
    info->t0_ms = hh.t0_ms;
    memcpy(info->owns, hh.owns, NA);
}

void gt_nilm_generate_household(const gt_nilm_synth_cfg *cfg, int h, float *aggregate, float *appliances,
                                uint8_t *faults) {
    household hh;
    household_setup(cfg, h, &hh, 1);
    int64_t n = hh.n;
    memset(appliances, 0, sizeof(float) * (size_t)n * NA);
    float *app = appliances;

    if (hh.owns[A_FRIDGE]) gen_cold(&hh, app, A_FRIDGE);
    if (hh.owns[A_FREEZER]) gen_cold(&hh, app, A_FREEZER);
    if (hh.owns[A_KETTLE]) gen_kettle(&hh, app, A_KETTLE);
    if (hh.owns[A_MICROWAVE]) gen_microwave(&hh, app, A_MICROWAVE);
    if (hh.owns[A_TOASTER]) gen_toaster(&hh, app, A_TOASTER);
    if (hh.owns[A_OVEN]) gen_oven(&hh, app, A_OVEN);
    if (hh.owns[A_WASHER] || hh.owns[A_DRYER]) gen_laundry(&hh, app);
    if (hh.owns[A_DISHWASHER]) gen_dishwasher(&hh, app, A_DISHWASHER);
    if (hh.owns[A_SHOWER]) gen_shower(&hh, app, A_SHOWER);
    if (hh.owns[A_EV]) gen_ev(&hh, app, A_EV);
    if (hh.owns[A_HEATPUMP]) gen_heatpump(&hh, app, A_HEATPUMP);
    if (hh.owns[A_TV]) gen_tv(&hh, app, A_TV);
    if (hh.owns[A_COMPUTER]) gen_computer(&hh, app, A_COMPUTER);
    gen_lighting(&hh, app, A_LIGHTING);

    /* clip to each appliance's physical limit, keep >= 0 */
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < NA; a++) {
            float v = app[i * NA + a];
            app[i * NA + a] = v < 0.f ? 0.f : v > k_app[a].max_power_w ? k_app[a].max_power_w : v;
        }

    /* aggregate = base + unmetered + sum(appliances) + noise */
    for (int64_t i = 0; i < n; i++) aggregate[i] = 0.f;
    gen_unmetered(&hh, aggregate);
    gt_rng r;
    rng_at(&r, cfg, h, P_NOISE, 0);
    for (int64_t i = 0; i < n; i++) {
        double s = hh.base_w + aggregate[i];
        for (int a = 0; a < NA; a++) s += app[i * NA + a];
        s += cfg->noise_w * gt_rng_normal(&r);
        aggregate[i] = (float)(s < 0 ? 0 : s);
    }

    /* faults: gaps, then stuck runs, then spikes, never overlapping */
    rng_at(&r, cfg, h, P_FAULTS, 0);
    enum { CAP = 4096 };
    span *sp = GT_MALLOC(sizeof(span) * 3 * CAP);
    int n_gap = place_faults(&r, &hh, cfg->gap_rate, GT_FAULT_GAP, sp, 0, CAP, sp);
    int n_stuck = place_faults(&r, &hh, cfg->stuck_rate, GT_FAULT_STUCK, sp, n_gap, CAP, sp + n_gap);
    int n_spike = place_faults(&r, &hh, cfg->spike_rate, GT_FAULT_SPIKE, sp, n_gap + n_stuck, CAP,
                               sp + n_gap + n_stuck);
    if (faults) memset(faults, 0, (size_t)n);
    for (int k = 0; k < n_stuck; k++) {
        span s = sp[n_gap + k];
        float v = s.a > 0 ? aggregate[s.a - 1] : aggregate[s.a];
        for (int64_t i = s.a; i < s.b; i++) {
            aggregate[i] = v;
            if (faults) faults[i] |= GT_FAULT_STUCK;
        }
    }
    for (int k = 0; k < n_spike; k++) {
        span s = sp[n_gap + n_stuck + k];
        for (int64_t i = s.a; i < s.b; i++) {
            aggregate[i] = (float)unif(&r, 20000, 60000);
            if (faults) faults[i] |= GT_FAULT_SPIKE;
        }
    }
    for (int k = 0; k < n_gap; k++) {
        span s = sp[k];
        for (int64_t i = s.a; i < s.b; i++) {
            aggregate[i] = NAN;
            for (int a = 0; a < NA; a++) app[i * NA + a] = NAN;
            if (faults) faults[i] |= GT_FAULT_GAP;
        }
    }
    free(sp);
    household_free(&hh);
}
