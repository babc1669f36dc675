/* synth/synth_nilm_events.c: event appliances of a synthetic household
 * (kettle ... lighting) and the unmetered loads (synth/synth_nilm_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "synth/synth.h"
#include "synth/synth_nilm_impl.h"

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

void gen_kettle(const household *hh, float *out, int a) {
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

void gen_microwave(const household *hh, float *out, int a) {
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

void gen_toaster(const household *hh, float *out, int a) {
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
void gen_oven(const household *hh, float *out, int a) {
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
void gen_laundry(const household *hh, float *out) {
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

void gen_dishwasher(const household *hh, float *out, int a) {
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

void gen_shower(const household *hh, float *out, int a) {
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
void gen_ev(const household *hh, float *out, int a) {
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

void gen_tv(const household *hh, float *out, int a) {
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

void gen_computer(const household *hh, float *out, int a) {
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

void gen_lighting(const household *hh, float *out, int a) {
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
void gen_unmetered(const household *hh, float *agg) {
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
