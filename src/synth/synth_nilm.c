/* synth/synth_nilm.c: deterministic synthetic NILM households (see synth/synth.h;
 * the files of the generator: synth/synth_nilm_impl.h).
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
#include "synth/synth_nilm_impl.h"

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
        strncpy(meta[a].name, gt_nilm_apps[a].name, GT_NAME_LEN - 1);
        meta[a].on_power_w = gt_nilm_apps[a].on_power_w;
        meta[a].on_duration_s = gt_nilm_apps[a].on_duration_s;
        meta[a].max_power_w = gt_nilm_apps[a].max_power_w;
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
            app[i * NA + a] = v < 0.f ? 0.f : v > gt_nilm_apps[a].max_power_w ? gt_nilm_apps[a].max_power_w : v;
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
