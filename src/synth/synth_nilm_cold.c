/* synth/synth_nilm_cold.c: thermostat appliances of a synthetic household:
 * fridge and freezer compressors, the heat pump and the weather it follows
 * (synth/synth_nilm_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "synth/synth.h"
#include "synth/synth_nilm_impl.h"

/* Fridge or freezer compressor: on/off cycles with jitter, start-up surge, slow
 * decline while running, longer runs while people are active, and a periodic
 * defrost heater followed by a long recovery run. */
void gen_cold(const household *hh, float *out, int a) {
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
void gen_heatpump(const household *hh, float *out, int a) {
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
