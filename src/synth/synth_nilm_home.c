/* synth/synth_nilm_home.c: a synthetic household's habits and days, and
 * time-of-day sampling (synth/synth_nilm_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "synth/synth.h"
#include "synth/synth_nilm_impl.h"

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

void household_setup(const gt_nilm_synth_cfg *cfg, int h, household *hh, int with_days) {
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
    for (int a = 0; a < NA; a++) hh->owns[a] = gt_rng_uniform_d(&r) < gt_nilm_apps[a].p_own;
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

void household_free(household *hh) { free(hh->days); }

double sample_tod(gt_rng *r, const day_info *di, const float w[5]) {
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

void add_span(const household *hh, float *out, int a, double t, double dur, float p) {
    int64_t r0 = row_at(hh, t), r1 = row_at(hh, t + dur);
    if (r1 <= r0) r1 = r0 + 1; /* anything that happens shows up in one sample */
    if (r0 < 0) r0 = 0;
    if (r1 > hh->n) r1 = hh->n;
    for (int64_t i = r0; i < r1; i++) out[i * NA + a] += p;
}
