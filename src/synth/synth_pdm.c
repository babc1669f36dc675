/* synth/synth_pdm.c: deterministic synthetic wind-farm gearbox data (see synth/synth.h).
 *
 * Plan (cheap, gt_pdm_turbine_info): per farm an hourly wind model (AR(1)
 * Gaussian process mapped to a Weibull marginal, diurnal modulation, a
 * turbulence regime, grid-curtailment episodes, wind direction random walk,
 * ambient temperature), shared by the turbines of the farm; from it the hourly
 * operating condition (low_wind, rated, turbulent, curtailed) merged into
 * segments. Per turbine: machine type, wake factor, an optional slow
 * degradation (bearing wear, oil temperature drift, pressure loss) and Poisson
 * transient shocks.
 *
 * Rows (gt_pdm_gen_*): row-by-row physics at rate_hz: turbulence and direction
 * (Ornstein-Uhlenbeck), rotor inertia, power curve with curtailment, pitch and
 * yaw control, first-order thermal states (nacelle, oil, bearings, generator),
 * oil pressure with viscosity, vibration levels driven by speed, load, drive-
 * train resonance, wear and shocks. Noise of row r depends only on
 * (seed, turbine, r): one Philox block per row expanded with splitmix64, so the
 * bytes do not depend on block sizes. No per-row libm calls except sqrtf/floor.
 *
 * Random stream layout: turbine t uses gt_stream(GT_STREAM_SYNTH_PDM, t) with
 * counter = row for per-row noise and counters >= 2^62 for the plan; farm f
 * uses gt_stream(GT_STREAM_SYNTH_PDM, 0x80000000 | f); the choice of faulty
 * turbines gt_stream(GT_STREAM_SYNTH_PDM, 0xFFFFFFFF). The plan of purposes is
 * disjoint, so fault_fraction = 0 or shock_rate = 0 leaves every other value of
 * a turbine unchanged (the tests rely on it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "synth/synth.h"

#define NC GT_PDM_N_CHANNELS

/* channel indices (order of gt_pdm_channels) */
enum {
    C_WIND, C_WDIR, C_YAW, C_PITCH, C_ROTOR, C_GEN, C_POWER, C_REACTIVE, C_AMB, C_NAC, C_OIL_T, C_OIL_P,
    C_FILTER_DP, C_T_HSS, C_T_IMS, C_T_LSS, C_T_GENB, C_T_WIND, C_HSS_RMS, C_HSS_KURT, C_HSS_MESH,
    C_HSS_BEAR, C_IMS_RMS, C_IMS_KURT, C_IMS_BEAR, C_LSS_RMS, C_LSS_KURT, C_LSS_BEAR, C_PL_RMS, C_PL_MESH,
    C_GEN_RMS, C_TOWER
};

static const struct { const char *name, *unit; } k_chan[NC] = {
    {"wind_speed", "m/s"},
    {"wind_direction", "deg"},
    {"yaw_position", "deg"},
    {"pitch_angle", "deg"},
    {"rotor_speed", "rpm"},
    {"generator_speed", "rpm"},
    {"active_power", "kW"},
    {"reactive_power", "kvar"},
    {"ambient_temp", "degC"},
    {"nacelle_temp", "degC"},
    {"gearbox_oil_temp", "degC"},
    {"gearbox_oil_pressure", "bar"},
    {"oil_filter_dp", "bar"},
    {"bearing_temp_hss", "degC"},
    {"bearing_temp_ims", "degC"},
    {"bearing_temp_lss", "degC"},
    {"generator_bearing_temp", "degC"},
    {"generator_winding_temp", "degC"},
    {"vib_gearbox_hss_rms", "mm/s"},
    {"vib_gearbox_hss_kurtosis", "1"},
    {"vib_gearbox_hss_band_mesh", "g2"},
    {"vib_gearbox_hss_band_bearing", "g2"},
    {"vib_gearbox_ims_rms", "mm/s"},
    {"vib_gearbox_ims_kurtosis", "1"},
    {"vib_gearbox_ims_band_bearing", "g2"},
    {"vib_gearbox_lss_rms", "mm/s"},
    {"vib_gearbox_lss_kurtosis", "1"},
    {"vib_gearbox_lss_band_bearing", "g2"},
    {"vib_gearbox_planet_rms", "mm/s"},
    {"vib_gearbox_planet_band_mesh", "g2"},
    {"vib_generator_rms", "mm/s"},
    {"tower_accel_rms", "m/s2"},
};

/* Machine types: rated power, rotor speed range, gearbox ratio, wind speeds,
 * drive-train resonance (rotor rpm, width, gain), vibration scale per point
 * (HSS, IMS, LSS, planet, generator; mm/s at rated), tower frequency (Hz). */
typedef struct pdm_type {
    const char *name;
    float rated_kw, rpm_min, rpm_rated, ratio, cut_in, rated_ws, cut_out;
    float res_rpm, res_width, res_gain;
    float vib[5];
    float oil_bar, tower_hz;
} pdm_type;

static const pdm_type k_type[GT_PDM_N_MACHINE_TYPES] = {
    {"dfig_1500kw_3stage", 1500, 9.7f, 18.0f, 104.1f, 3.0f, 11.5f, 25.0f, 14.5f, 0.8f, 0.9f,
     {2.2f, 1.4f, 0.9f, 1.1f, 1.8f}, 2.4f, 0.32f},
    {"dfig_2000kw_3stage", 2000, 9.0f, 16.8f, 111.5f, 3.0f, 12.0f, 25.0f, 12.0f, 0.7f, 1.1f,
     {2.5f, 1.5f, 1.0f, 1.2f, 2.0f}, 2.5f, 0.28f},
    {"dfig_2500kw_3stage", 2500, 8.0f, 15.5f, 120.0f, 3.0f, 11.8f, 22.0f, 13.8f, 0.6f, 0.7f,
     {2.8f, 1.7f, 1.1f, 1.4f, 2.1f}, 2.6f, 0.25f},
    {"msg_3000kw_2stage", 3000, 6.0f, 14.0f, 35.0f, 3.5f, 12.5f, 25.0f, 10.5f, 0.9f, 1.3f,
     {1.6f, 1.9f, 1.2f, 1.7f, 1.3f}, 2.8f, 0.22f},
    {"msg_4200kw_2stage", 4200, 5.0f, 12.5f, 28.5f, 3.0f, 12.0f, 25.0f, 9.0f, 0.8f, 1.0f,
     {1.5f, 2.0f, 1.3f, 1.9f, 1.2f}, 3.0f, 0.20f},
};

static const char *k_cond[GT_PDM_N_CONDITIONS] = {"low_wind", "rated", "turbulent", "curtailed"};

void gt_pdm_synth_defaults(gt_pdm_synth_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->n_farms = 2;
    cfg->turbines_per_farm = 5; /* every farm holds all 5 machine types */
    cfg->days = 3.0;
    cfg->rate_hz = 10.0;
    cfg->start_ms = INT64_C(1767571200000); /* 2026-01-05 00:00:00 UTC */
    cfg->shock_rate = 2.0;
    cfg->fault_fraction = 0.3;
}

void gt_pdm_channels(gt_channel_meta meta[GT_PDM_N_CHANNELS]) {
    for (int c = 0; c < NC; c++) {
        memset(&meta[c], 0, sizeof meta[c]);
        strncpy(meta[c].name, k_chan[c].name, GT_NAME_LEN - 1);
        strncpy(meta[c].unit, k_chan[c].unit, sizeof meta[c].unit - 1);
    }
}

const char *gt_pdm_machine_type_name(int type) {
    return type >= 0 && type < GT_PDM_N_MACHINE_TYPES ? k_type[type].name : "unknown";
}
const char *gt_pdm_condition_name(int condition) {
    return condition >= 0 && condition < GT_PDM_N_CONDITIONS ? k_cond[condition] : "unknown";
}
const char *gt_pdm_event_name(int kind) {
    switch (kind) {
    case 0: return "normal";
    case GT_PDM_EVENT_BEARING_WEAR: return "bearing_wear";
    case GT_PDM_EVENT_OIL_TEMP_DRIFT: return "oil_temp_drift";
    case GT_PDM_EVENT_PRESSURE_LOSS: return "pressure_loss";
    case GT_PDM_EVENT_SHOCK: return "shock";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------- plan -- */

#define PLAN_CTR(purpose) ((UINT64_C(1) << 62) | ((uint64_t)(purpose) << 48))
enum { PP_FARM = 0, PP_TURBINE = 1, PP_FAULT = 2, PP_SHOCK = 3 };

typedef struct shock_param {
    float amp, decay;  /* envelope at the first row, factor per row */
    float w[6];        /* weight per point: HSS, IMS, LSS, planet, generator, tower */
} shock_param;

typedef struct pdm_plan {
    int t, farm, type;
    int64_t n_rows;
    double rows_per_hour;
    int n_hours;                           /* hourly arrays hold n_hours + 2 values */
    float *U, *TI, *cap, *D, *amb;          /* hourly: wind (m/s, farm), turbulence
                                              intensity, power cap (fraction of rated),
                                              direction (deg, unwrapped), ambient (degC) */
    float wake, dir_off, vib_jit[5];
    gt_pdm_event *events; int n_events;    /* sorted by start_row */
    gt_pdm_segment *segs; int n_segs;
    shock_param *shock;                    /* [n_events], used where kind == SHOCK */
    int deg_kind, wear_loc;                /* 0 none; wear_loc 0 HSS, 1 IMS, 2 LSS */
    int64_t deg_start, deg_end;
    double deg_inv_horizon;                /* 1 / rows until failure */
} pdm_plan;

static double unif(gt_rng *r, double lo, double hi) { return lo + (hi - lo) * gt_rng_uniform_d(r); }

static void check_cfg(const gt_pdm_synth_cfg *cfg, int t) {
    GT_CHECK(cfg->n_farms > 0 && cfg->turbines_per_farm > 0, GT_EXIT_USAGE,
             "synth pdm: need n_farms > 0 and turbines_per_farm > 0 (got %d, %d)", cfg->n_farms,
             cfg->turbines_per_farm);
    GT_CHECK(t >= 0 && (int64_t)t < (int64_t)cfg->n_farms * cfg->turbines_per_farm, GT_EXIT_USAGE,
             "synth pdm: turbine %d out of range [0, %d)", t, cfg->n_farms * cfg->turbines_per_farm);
    GT_CHECK(cfg->rate_hz > 0 && cfg->days > 0 && cfg->days * 86400.0 * cfg->rate_hz < 4e12, GT_EXIT_USAGE,
             "synth pdm: need rate_hz > 0 and days > 0 (got %g Hz, %g days)", cfg->rate_hz, cfg->days);
    GT_CHECK(cfg->shock_rate >= 0 && cfg->fault_fraction >= 0 && cfg->fault_fraction <= 1, GT_EXIT_USAGE,
             "synth pdm: need shock_rate >= 0 and 0 <= fault_fraction <= 1");
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
    while (b) { uint64_t r = a % b; a = b; b = r; }
    return a;
}

/* Exactly round(fault_fraction * N) faulty turbines, chosen by a seed-dependent
 * affine permutation of the turbine indices. */
static int turbine_is_faulty(const gt_pdm_synth_cfg *cfg, int t) {
    uint64_t N = (uint64_t)cfg->n_farms * (uint64_t)cfg->turbines_per_farm;
    uint64_t K = (uint64_t)floor(cfg->fault_fraction * (double)N + 0.5);
    if (K == 0) return 0;
    gt_rng r;
    gt_rng_init(&r, cfg->seed, gt_stream(GT_STREAM_SYNTH_PDM, 0xFFFFFFFFu));
    uint64_t a = 1 + gt_rng_u64(&r) % N, b = gt_rng_u64(&r) % N;
    while (gcd_u64(a, N) != 1) a = a % N + 1;
    uint64_t p = (a * (uint64_t)t + b) % N;
    return p < K;
}

static void plan_free(pdm_plan *p) {
    free(p->U); free(p->TI); free(p->cap); free(p->D); free(p->amb);
    free(p->events); free(p->segs); free(p->shock);
    memset(p, 0, sizeof *p);
}

/* The farm's weather, hour by hour (nh hours): wind speed, turbulence,
 * curtailment, direction, ambient temperature. */
static void plan_weather(const gt_pdm_synth_cfg *cfg, pdm_plan *p, int nh) {
    gt_rng r;
    gt_rng_init(&r, cfg->seed, gt_stream(GT_STREAM_SYNTH_PDM, 0x80000000u | (uint32_t)p->farm));
    gt_rng_seek(&r, PLAN_CTR(PP_FARM));
    double c_weib = unif(&r, 8.0, 10.5), diurnal = unif(&r, 0.0, 0.15);
    double z = gt_rng_normal(&r), s = gt_rng_normal(&r), dir = unif(&r, 0, 360), weather = 2.0 * gt_rng_normal(&r);
    int curt = 0;
    double curt_cap = 1.0;
    const double phi = 0.93, phi_s = 0.85;
    double t0_h = (double)cfg->start_ms / 3.6e6;
    for (int h = 0; h < nh; h++) {
        z = phi * z + sqrt(1 - phi * phi) * gt_rng_normal(&r);
        s = phi_s * s + sqrt(1 - phi_s * phi_s) * gt_rng_normal(&r);
        dir += 8.0 * gt_rng_normal(&r);
        weather = 0.98 * weather + 0.4 * gt_rng_normal(&r);
        double hod = fmod(t0_h + h, 24.0);
        double doy = fmod((t0_h + h) / 24.0, 365.2425);
        double u = c_weib * sqrt(-log(0.5 * erfc(z / sqrt(2.0))));
        u *= 1.0 + diurnal * cos(2 * M_PI * (hod - 15.0) / 24.0);
        double uc = gt_rng_uniform_d(&r), ucap = unif(&r, 0.35, 0.7), uti = gt_rng_uniform_d(&r);
        if (!curt && u > 7.0 && uc < 0.05) { curt = 1; curt_cap = ucap; }
        else if (curt && uc < 0.15) curt = 0;
        int turb = s > 0.8;
        p->U[h] = (float)u;
        p->TI[h] = (float)(turb ? 0.22 + 0.08 * uti : 0.07 + 0.05 * uti);
        p->cap[h] = (float)(curt ? curt_cap : 1.0);
        p->D[h] = (float)dir;
        p->amb[h] = (float)(8.0 - 10.0 * cos(2 * M_PI * (doy - 15.0) / 365.0) +
                            3.0 * cos(2 * M_PI * (hod - 15.0) / 24.0) + weather);
    }
}

/* The operating-condition segments of the turbine's hours. */
static void plan_segments(pdm_plan *p, const pdm_type *ty) {
    p->segs = GT_MALLOC(sizeof(gt_pdm_segment) * (size_t)(p->n_hours + 2));
    for (int h = 0; h < p->n_hours; h++) {
        int64_t a = llround(h * p->rows_per_hour), b = llround((h + 1) * p->rows_per_hour);
        if (b > p->n_rows) b = p->n_rows;
        if (b <= a) continue;
        double u = p->U[h] * p->wake;
        int c;
        if (p->cap[h] < 1.0f && u >= 0.55 * ty->rated_ws) c = 3;
        else if (p->TI[h] > 0.2f && u >= ty->cut_in) c = 2;
        else if (u < 0.65 * ty->rated_ws) c = 0;
        else c = 1;
        if (p->n_segs > 0 && p->segs[p->n_segs - 1].condition == c) {
            p->segs[p->n_segs - 1].end_row = b;
        } else {
            p->segs[p->n_segs].start_row = a;
            p->segs[p->n_segs].end_row = b;
            p->segs[p->n_segs].condition = c;
            p->n_segs++;
        }
    }
}

/* Events: at most one slow degradation (a faulty turbine) and Poisson
 * shocks, from the turbine's stream r. */
static void plan_events(const gt_pdm_synth_cfg *cfg, int t, pdm_plan *p, gt_rng *r) {
    int cap_ev = 16;
    p->events = GT_MALLOC(sizeof(gt_pdm_event) * (size_t)cap_ev);
    p->shock = GT_MALLOC(sizeof(shock_param) * (size_t)cap_ev);
    gt_pdm_event deg = {0, 0, 0};
    if (turbine_is_faulty(cfg, t)) {
        gt_rng_seek(r, PLAN_CTR(PP_FAULT));
        double u = gt_rng_uniform_d(r);
        p->deg_kind = u < 0.5 ? GT_PDM_EVENT_BEARING_WEAR : u < 0.75 ? GT_PDM_EVENT_OIL_TEMP_DRIFT
                                                                     : GT_PDM_EVENT_PRESSURE_LOSS;
        double ul = gt_rng_uniform_d(r);
        p->wear_loc = ul < 0.55 ? 0 : ul < 0.8 ? 1 : 2;
        p->deg_start = (int64_t)(unif(r, 0.15, 0.6) * (double)p->n_rows);
        int repaired = gt_rng_uniform_d(r) < 0.25;
        double frac = unif(r, 0.6, 0.9);
        p->deg_end = repaired ? p->deg_start + (int64_t)(frac * (double)(p->n_rows - p->deg_start)) : p->n_rows;
        if (p->deg_end <= p->deg_start) p->deg_end = p->deg_start + 1;
        double horizon = (double)(p->deg_end - p->deg_start) * (repaired ? 1.0 : unif(r, 1.0, 1.3));
        p->deg_inv_horizon = 1.0 / horizon;
        deg.start_row = p->deg_start; deg.end_row = p->deg_end; deg.kind = p->deg_kind;
    }
    gt_rng_seek(r, PLAN_CTR(PP_SHOCK));
    double days = (double)p->n_rows / (86400.0 * cfg->rate_hz), tday = 0.0;
    int64_t prev_end = -1;
    int deg_placed = deg.kind == 0;
    while (cfg->shock_rate > 0) {
        tday += gt_rng_exponential(r, 1.0 / cfg->shock_rate);
        if (tday >= days) break;
        int64_t a = (int64_t)(tday / days * (double)p->n_rows);
        int64_t len = (int64_t)ceil(unif(r, 0.5, 4.0) * cfg->rate_hz);
        if (len < 1) len = 1;
        shock_param sp;
        sp.amp = (float)unif(r, 4, 12);
        sp.decay = (float)exp(-1.0 / (unif(r, 0.2, 1.0) * cfg->rate_hz));
        int dom = (int)gt_rng_below(r, 5);
        for (int k = 0; k < 6; k++) sp.w[k] = k == dom ? 1.0f : 0.3f;
        sp.w[5] = 0.5f;
        if (a <= prev_end) a = prev_end + 1; /* shocks never overlap */
        if (a >= p->n_rows) break;
        int64_t b = a + len > p->n_rows ? p->n_rows : a + len;
        if (p->n_events + 2 > cap_ev) {
            cap_ev *= 2;
            p->events = GT_REALLOC(p->events, sizeof(gt_pdm_event) * (size_t)cap_ev);
            p->shock = GT_REALLOC(p->shock, sizeof(shock_param) * (size_t)cap_ev);
        }
        if (!deg_placed && deg.start_row <= a) {
            memset(&p->shock[p->n_events], 0, sizeof(shock_param));
            p->events[p->n_events++] = deg;
            deg_placed = 1;
        }
        p->events[p->n_events].start_row = a;
        p->events[p->n_events].end_row = b;
        p->events[p->n_events].kind = GT_PDM_EVENT_SHOCK;
        p->shock[p->n_events] = sp;
        p->n_events++;
        prev_end = b;
    }
    if (!deg_placed) {
        if (p->n_events + 1 > cap_ev) {
            cap_ev += 1;
            p->events = GT_REALLOC(p->events, sizeof(gt_pdm_event) * (size_t)cap_ev);
            p->shock = GT_REALLOC(p->shock, sizeof(shock_param) * (size_t)cap_ev);
        }
        memset(&p->shock[p->n_events], 0, sizeof(shock_param));
        p->events[p->n_events++] = deg;
    }
}

static void plan_turbine(const gt_pdm_synth_cfg *cfg, int t, pdm_plan *p) {
    check_cfg(cfg, t);
    memset(p, 0, sizeof *p);
    p->t = t;
    p->farm = t / cfg->turbines_per_farm;
    p->type = (p->farm + t % cfg->turbines_per_farm) % GT_PDM_N_MACHINE_TYPES;
    const pdm_type *ty = &k_type[p->type];
    p->n_rows = (int64_t)llround(cfg->days * 86400.0 * cfg->rate_hz);
    if (p->n_rows < 1) p->n_rows = 1;
    p->rows_per_hour = 3600.0 * cfg->rate_hz;
    p->n_hours = (int)ceil((double)p->n_rows / p->rows_per_hour);
    int nh = p->n_hours + 2;
    p->U = GT_MALLOC(sizeof(float) * (size_t)nh);
    p->TI = GT_MALLOC(sizeof(float) * (size_t)nh);
    p->cap = GT_MALLOC(sizeof(float) * (size_t)nh);
    p->D = GT_MALLOC(sizeof(float) * (size_t)nh);
    p->amb = GT_MALLOC(sizeof(float) * (size_t)nh);

    plan_weather(cfg, p, nh);

    /* turbine constants */
    gt_rng r;
    gt_rng_init(&r, cfg->seed, gt_stream(GT_STREAM_SYNTH_PDM, (uint32_t)t));
    gt_rng_seek(&r, PLAN_CTR(PP_TURBINE));
    p->wake = (float)unif(&r, 0.88, 1.0);
    p->dir_off = (float)unif(&r, -5, 5);
    for (int k = 0; k < 5; k++) p->vib_jit[k] = (float)unif(&r, 0.85, 1.15);

    plan_segments(p, ty);

    plan_events(cfg, t, p, &r);
}

void gt_pdm_turbine_info(const gt_pdm_synth_cfg *cfg, int t, struct gt_pdm_turbine_info *info) {
    pdm_plan p;
    plan_turbine(cfg, t, &p);
    memset(info, 0, sizeof *info);
    info->id = (int64_t)t + 1;
    info->farm = p.farm;
    info->machine_type = p.type;
    info->n_rows = p.n_rows;
    info->t0_ms = cfg->start_ms;
    info->n_events = p.n_events;
    info->events = GT_MALLOC(sizeof(gt_pdm_event) * (size_t)(p.n_events > 0 ? p.n_events : 1));
    if (p.n_events) memcpy(info->events, p.events, sizeof(gt_pdm_event) * (size_t)p.n_events);
    info->n_segments = p.n_segs;
    info->segments = GT_MALLOC(sizeof(gt_pdm_segment) * (size_t)(p.n_segs > 0 ? p.n_segs : 1));
    memcpy(info->segments, p.segs, sizeof(gt_pdm_segment) * (size_t)p.n_segs);
    plan_free(&p);
}

void gt_pdm_turbine_info_free(struct gt_pdm_turbine_info *info) {
    free(info->events);
    free(info->segments);
    info->events = NULL;
    info->segments = NULL;
    info->n_events = info->n_segments = 0;
}

/* ------------------------------------------------------------ streaming -- */

struct gt_pdm_gen {
    gt_pdm_synth_cfg cfg;
    pdm_plan p;
    uint64_t stream;
    int64_t row;
    int seg_i, ev_deg, ev_shock; /* next/current segment, degradation event index, next shock */
    /* filter coefficients (per row) */
    float a_turb, b_turb, a_dir, b_dir, c_rot, c_pow, c_pitch, c_uf, yaw_step;
    double c_nac, c_oil, c_hss, c_ims, c_lss, c_genb, c_wind;
    double hours_per_row;
    /* physics state */
    float x_turb, d_dir, uf, omega, power, pitch, yaw, env;
    int stopped, yawing, shock_cur;
    double nac, oil, b_hss, b_ims, b_lss, genb, wind_t;
};

gt_pdm_gen *gt_pdm_gen_begin(const gt_pdm_synth_cfg *cfg, int t) {
    gt_pdm_gen *g = GT_CALLOC(1, sizeof *g);
    g->cfg = *cfg;
    plan_turbine(cfg, t, &g->p);
    g->stream = gt_stream(GT_STREAM_SYNTH_PDM, (uint32_t)t);
    double dt = 1.0 / cfg->rate_hz;
    g->a_turb = (float)exp(-dt / 5.0);
    g->b_turb = sqrtf(1.0f - g->a_turb * g->a_turb);
    g->a_dir = (float)exp(-dt / 120.0);
    g->b_dir = 6.0f * sqrtf(1.0f - g->a_dir * g->a_dir);
    g->c_rot = (float)(1.0 - exp(-dt / 6.0));
    g->c_pow = (float)(1.0 - exp(-dt / 2.0));
    g->c_pitch = (float)(1.0 - exp(-dt / 1.5));
    g->c_uf = (float)(1.0 - exp(-dt / 30.0));
    g->yaw_step = (float)(0.3 * dt);
    g->c_nac = 1.0 - exp(-dt / 2400.0);
    g->c_oil = 1.0 - exp(-dt / 1800.0);
    g->c_hss = 1.0 - exp(-dt / 600.0);
    g->c_ims = 1.0 - exp(-dt / 900.0);
    g->c_lss = 1.0 - exp(-dt / 1800.0);
    g->c_genb = 1.0 - exp(-dt / 1200.0);
    g->c_wind = 1.0 - exp(-dt / 900.0);
    g->hours_per_row = 1.0 / g->p.rows_per_hour;
    g->ev_deg = -1;
    for (int k = 0; k < g->p.n_events; k++)
        if (g->p.events[k].kind != GT_PDM_EVENT_SHOCK) g->ev_deg = k;
    g->ev_shock = 0;
    while (g->ev_shock < g->p.n_events && g->p.events[g->ev_shock].kind != GT_PDM_EVENT_SHOCK) g->ev_shock++;
    g->shock_cur = 0;

    /* start in the steady state of the first hour */
    const pdm_type *ty = &k_type[g->p.type];
    float u = g->p.U[0] * g->p.wake;
    g->uf = u;
    g->stopped = u > ty->cut_out;
    int run = !g->stopped && u > ty->cut_in;
    float rpm = ty->rpm_rated * u / (0.85f * ty->rated_ws);
    g->omega = run ? (rpm < ty->rpm_min ? ty->rpm_min : rpm > ty->rpm_rated ? ty->rpm_rated : rpm) : 1.0f;
    g->pitch = run ? 0.0f : 80.0f;
    g->yaw = g->p.D[0] + g->p.dir_off;
    double amb = g->p.amb[0];
    g->nac = amb + 12.0;
    g->oil = g->nac + 25.0;
    g->b_hss = g->oil + 10.0;
    g->b_ims = g->oil + 6.0;
    g->b_lss = g->oil;
    g->genb = g->nac + 25.0;
    g->wind_t = g->nac + 35.0;
    return g;
}

void gt_pdm_gen_end(gt_pdm_gen *g) {
    if (!g) return;
    plan_free(&g->p);
    free(g);
}

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#define N_NOISE 36
/* N_NOISE approximately standard normal values for row `row`: one Philox block
 * keyed by (seed, stream, row), expanded with splitmix64; each normal is the
 * centred, scaled sum of four uniform bytes (Irwin-Hall, |x| <= 3.45). */
static inline void row_noise(uint64_t seed, uint64_t stream, int64_t row, float *nz) {
    uint32_t w[4];
    gt_rand4(seed, stream, (uint64_t)row, w);
    uint64_t x = ((uint64_t)w[0] << 32) | w[1], y = ((uint64_t)w[2] << 32) | w[3];
    const uint64_t M = UINT64_C(0x00FF00FF00FF00FF);
    const float k = 1.0f / 147.8006f;
    for (int i = 0; i < N_NOISE / 2; i++) {
        uint64_t z = mix64(x + (uint64_t)(i + 1) * UINT64_C(0x9E3779B97F4A7C15)) ^ y;
        uint64_t l = (z & M) + ((z >> 8) & M); /* 4 lanes of 16 bits, each a sum of 2 bytes */
        nz[2 * i] = (float)((int)(l & 0xFFFF) + (int)((l >> 16) & 0xFFFF) - 510) * k;
        nz[2 * i + 1] = (float)((int)((l >> 32) & 0xFFFF) + (int)((l >> 48) & 0xFFFF) - 510) * k;
    }
}

static inline float clampf(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }
static inline float wrap360(float d) { return d - 360.0f * floorf(d * (1.0f / 360.0f)); }
static inline float wrap180(float d) { return d - 360.0f * floorf(d * (1.0f / 360.0f) + 0.5f); }

/* Row r's condition segment and events: its condition and label, the
 * degradation's severity in *sev, the shock in progress (NULL: none) and
 * its envelope in *env. */
static const shock_param *row_events(gt_pdm_gen *g, const pdm_plan *p, const gt_pdm_event *deg, int64_t r,
                                     uint8_t *condition, uint8_t *label, float *sev, float *env) {
    while (g->seg_i < p->n_segs - 1 && r >= p->segs[g->seg_i].end_row) g->seg_i++;
    *condition = (uint8_t)p->segs[g->seg_i].condition;
    *sev = 0.0f;
    int lab = 0;
    if (deg && r >= deg->start_row && r < deg->end_row) {
        float x = (float)((double)(r - deg->start_row) * p->deg_inv_horizon);
        *sev = x * x;
        lab = deg->kind;
    }
    while (g->ev_shock < p->n_events &&
           (p->events[g->ev_shock].kind != GT_PDM_EVENT_SHOCK || r >= p->events[g->ev_shock].end_row)) {
        if (p->events[g->ev_shock].kind == GT_PDM_EVENT_SHOCK) g->env = 0.0f;
        g->ev_shock++;
        g->shock_cur = 0;
    }
    const shock_param *sp = NULL;
    if (g->ev_shock < p->n_events && r >= p->events[g->ev_shock].start_row) {
        sp = &p->shock[g->ev_shock];
        if (!g->shock_cur) { g->env = sp->amp; g->shock_cur = 1; }
        else g->env *= sp->decay;
        lab = GT_PDM_EVENT_SHOCK;
    }
    *label = (uint8_t)lab;
    *env = sp ? g->env : 0.0f;
    return sp;
}

/* The turbine's constants the drive uses per row. */
typedef struct {
    float rated, inv_rated, ci3, inv_span3, k_tsr, inv_rpm;
} drive_k;

/* Wind, yaw, rotor, power and pitch of one row (hourly inputs U, TI, cap,
 * Dm): the wind speed; the measured direction, the load and the speed
 * fraction in *dir_meas, *load_out, *sf. */
static float row_drive(gt_pdm_gen *g, const pdm_type *ty, const drive_k *k, float U, float TI, float cap, float Dm,
                       const float *nz, float *dir_meas, float *load_out, float *sf) {
    const float rated = k->rated, inv_rated = k->inv_rated, ci3 = k->ci3, inv_span3 = k->inv_span3,
                k_tsr = k->k_tsr, inv_rpm = k->inv_rpm;
    /* wind */
    g->x_turb = g->a_turb * g->x_turb + g->b_turb * nz[0];
    float u = U * (1.0f + TI * g->x_turb);
    if (u < 0.0f) u = 0.0f;
    g->uf += (u - g->uf) * g->c_uf;
    g->d_dir = g->a_dir * g->d_dir + g->b_dir * nz[1];
    float dir_slow = Dm + g->d_dir;
    *dir_meas = dir_slow + 3.0f * nz[2];

    /* yaw: start when misaligned by > 10 deg, stop within 2 deg */
    float err = wrap180(dir_slow - g->yaw);
    if (!g->yawing && (err > 10.0f || err < -10.0f)) g->yawing = 1;
    if (g->yawing) {
        if (err > 2.0f) g->yaw += g->yaw_step;
        else if (err < -2.0f) g->yaw -= g->yaw_step;
        else g->yawing = 0;
    }
    float cosmis = 1.0f - 0.5f * (err * 0.01745f) * (err * 0.01745f); /* cos(yaw error) */
    if (cosmis < 0.5f) cosmis = 0.5f;

    /* rotor, power, pitch */
    if (!g->stopped && g->uf > ty->cut_out) g->stopped = 1;
    else if (g->stopped && g->uf < ty->cut_out - 3.0f) g->stopped = 0;
    int run = !g->stopped && g->uf > ty->cut_in;
    float ue = u * cosmis;
    float target = run ? clampf(k_tsr * ue, ty->rpm_min, ty->rpm_rated) : 1.0f;
    g->omega += (target - g->omega) * g->c_rot;
    float pa = 0.0f;
    if (run) pa = rated * clampf((ue * ue * ue - ci3) * inv_span3, 0.0f, 1.0f);
    float pcap = cap * rated;
    float pt = pa < pcap ? pa : pcap;
    g->power += (pt - g->power) * g->c_pow;
    float pitch_t = 80.0f;
    if (run) {
        pitch_t = ue > ty->rated_ws ? 1.6f * (ue - ty->rated_ws) : 0.0f;
        if (pa > pcap) pitch_t += 15.0f * (pa - pcap) * inv_rated;
    }
    g->pitch += (pitch_t - g->pitch) * g->c_pitch;
    float load = g->power * inv_rated;
    if (load < 0.0f) load = 0.0f;
    *load_out = load;
    *sf = g->omega * inv_rpm;
    return u;
}

/* The thermal states (double: tiny per-row steps) and the oil pressure and
 * filter pressure drop of one row. */
static void row_thermal(gt_pdm_gen *g, const pdm_plan *p, const pdm_type *ty, float amb, float load, float sf,
                        float sev, const float *nz, float *oil_p, float *dp) {
    double heat_oil = (p->deg_kind == GT_PDM_EVENT_OIL_TEMP_DRIFT ? 14.0 : 0.0) * sev +
                      (p->deg_kind == GT_PDM_EVENT_PRESSURE_LOSS ? 4.0 : 0.0) * sev;
    g->nac += (amb + 8.0 + 10.0 * load - g->nac) * g->c_nac;
    double oil_t = g->nac + 18.0 + 24.0 * load * sf;
    if (oil_t > 58.0) oil_t = 58.0 + 0.3 * (oil_t - 58.0); /* oil cooler */
    g->oil += (oil_t + heat_oil - g->oil) * g->c_oil;
    int bw = p->deg_kind == GT_PDM_EVENT_BEARING_WEAR;
    g->b_hss += (g->oil + 6.0 + 10.0 * sf * sf + (bw && p->wear_loc == 0 ? 18.0 * sev : 0.0) - g->b_hss) * g->c_hss;
    g->b_ims += (g->oil + 3.0 + 6.0 * sf + (bw && p->wear_loc == 1 ? 15.0 * sev : 0.0) - g->b_ims) * g->c_ims;
    g->b_lss += (g->oil - 2.0 + 3.0 * load + (bw && p->wear_loc == 2 ? 12.0 * sev : 0.0) - g->b_lss) * g->c_lss;
    g->genb += (g->nac + 15.0 + 20.0 * sf - g->genb) * g->c_genb;
    g->wind_t += (g->nac + 20.0 + 55.0 * load * load - g->wind_t) * g->c_wind;

    /* oil pressure: electric pump, viscosity falls with temperature */
    float ploss = p->deg_kind == GT_PDM_EVENT_PRESSURE_LOSS ? 1.2f * sev : 0.0f;
    *oil_p = ty->oil_bar * (0.85f + 0.15f * sf) - 0.015f * (float)(g->oil - 45.0) - ploss + 0.03f * nz[3];
    float dp_ = 0.8f - 0.01f * (float)(g->oil - 45.0) - 0.25f * ploss;
    if (dp_ < 0.15f) dp_ = 0.15f;
    *dp = dp_;
}

int64_t gt_pdm_gen_next(gt_pdm_gen *g, int64_t n, float *signals, uint8_t *label, uint8_t *condition) {
    const pdm_plan *p = &g->p;
    const pdm_type *ty = &k_type[p->type];
    if (n > p->n_rows - g->row) n = p->n_rows - g->row;
    if (n <= 0) return 0;
    const float rated = ty->rated_kw, inv_rated = 1.0f / rated;
    const float ci3 = ty->cut_in * ty->cut_in * ty->cut_in;
    const float inv_span3 = 1.0f / (ty->rated_ws * ty->rated_ws * ty->rated_ws - ci3);
    const float k_tsr = ty->rpm_rated / (0.85f * ty->rated_ws), inv_rpm = 1.0f / ty->rpm_rated;
    const float inv_res_w = 1.0f / ty->res_width;
    const drive_k dk = {rated, inv_rated, ci3, inv_span3, k_tsr, inv_rpm};
    float vib[5];
    for (int k = 0; k < 5; k++) vib[k] = ty->vib[k] * p->vib_jit[k];
    const gt_pdm_event *deg = g->ev_deg >= 0 ? &p->events[g->ev_deg] : NULL;
    float nz[N_NOISE];

    for (int64_t i = 0; i < n; i++) {
        const int64_t r = g->row + i;
        float *out = signals + i * NC;
        row_noise(g->cfg.seed, g->stream, r, nz);

        /* hourly inputs, linearly interpolated */
        double hp = (double)r * g->hours_per_row;
        int h = (int)hp;
        float f = (float)(hp - h);
        float U = (p->U[h] + (p->U[h + 1] - p->U[h]) * f) * p->wake;
        float TI = p->TI[h], cap = p->cap[h];
        float Dm = p->D[h] + (p->D[h + 1] - p->D[h]) * f + p->dir_off;
        float amb = p->amb[h] + (p->amb[h + 1] - p->amb[h]) * f;

        /* condition segment and events */
        float sev, env;
        const shock_param *sp = row_events(g, p, deg, r, &condition[i], &label[i], &sev, &env);

        /* wind, yaw, rotor, power, pitch */
        float dir_meas, load, sf;
        float u = row_drive(g, ty, &dk, U, TI, cap, Dm, nz, &dir_meas, &load, &sf);

        /* thermal states, oil */
        float oil_p, dp;
        row_thermal(g, p, ty, amb, load, sf, sev, nz, &oil_p, &dp);
        const int bw = p->deg_kind == GT_PDM_EVENT_BEARING_WEAR;

        /* vibration */
        float dres = (g->omega - ty->res_rpm) * inv_res_w;
        float res = 1.0f + ty->res_gain / (1.0f + dres * dres);
        float base = (0.08f + sf * sf * (0.4f + 0.6f * load)) * res * (1.0f + 0.8f * TI * fabsf(g->x_turb));
        float wear[3] = {0, 0, 0};
        if (bw) wear[p->wear_loc] = sev;
        float sw[6] = {0, 0, 0, 0, 0, 0};
        if (sp) for (int k = 0; k < 6; k++) sw[k] = env * sp->w[k];
        float rms_hss = vib[0] * (base * (1.0f + 2.0f * wear[0]) * (1.0f + 0.08f * nz[4]) + sw[0]);
        float rms_ims = vib[1] * (base * (1.0f + 2.0f * wear[1]) * (1.0f + 0.08f * nz[5]) + sw[1]);
        float rms_lss = vib[2] * (base * (1.0f + 2.0f * wear[2]) * (1.0f + 0.08f * nz[6]) + sw[2]);
        float rms_pl = vib[3] * (base * (1.0f + 0.08f * nz[7]) + sw[3]);
        float rms_gen = vib[4] * (base * (1.0f + 0.08f * nz[8]) + sw[4]);
        float mesh = load * sf * sf * res;
        float f3p = 3.0f * g->omega * (1.0f / 60.0f) - ty->tower_hz;
        float tower_res = 1.0f + 2.0f / (1.0f + f3p * f3p * 1000.0f);
        float tower = (0.02f + 0.006f * u + 0.15f * TI * fabsf(g->x_turb)) * tower_res * (1.0f + 0.1f * nz[9]) +
                      0.05f * sw[5];

        out[C_WIND] = u * (1.0f + 0.02f * nz[10]);
        out[C_WDIR] = wrap360(dir_meas);
        out[C_YAW] = wrap360(g->yaw);
        out[C_PITCH] = g->pitch + 0.05f * nz[11];
        out[C_ROTOR] = g->omega + 0.03f * nz[12];
        out[C_GEN] = g->omega * ty->ratio * (1.0f + 0.002f * nz[13]);
        out[C_POWER] = g->power + 0.005f * rated * nz[14];
        out[C_REACTIVE] = 0.05f * g->power + 0.01f * rated * nz[15];
        out[C_AMB] = amb + 0.1f * nz[16];
        out[C_NAC] = (float)g->nac + 0.1f * nz[17];
        out[C_OIL_T] = (float)g->oil + 0.1f * nz[18];
        out[C_OIL_P] = oil_p;
        out[C_FILTER_DP] = dp + 0.01f * nz[19];
        out[C_T_HSS] = (float)g->b_hss + 0.1f * nz[20];
        out[C_T_IMS] = (float)g->b_ims + 0.1f * nz[21];
        out[C_T_LSS] = (float)g->b_lss + 0.1f * nz[22];
        out[C_T_GENB] = (float)g->genb + 0.1f * nz[23];
        out[C_T_WIND] = (float)g->wind_t + 0.15f * nz[24];
        out[C_HSS_RMS] = rms_hss;
        out[C_HSS_KURT] = 3.0f + 0.15f * nz[25] + 6.0f * wear[0] + 2.0f * sw[0];
        out[C_HSS_MESH] = 0.02f * mesh * (1.0f + 0.1f * nz[26]) + 0.01f * sw[0] + 1e-4f * (1.0f + 0.25f * nz[26]); /* + sensor noise floor */
        out[C_HSS_BEAR] = 0.001f * (0.1f + sf * sf) * (1.0f + 60.0f * wear[0] * wear[0]) * (1.0f + 0.15f * nz[27]) + 0.005f * sw[0];
        out[C_IMS_RMS] = rms_ims;
        out[C_IMS_KURT] = 3.0f + 0.15f * nz[28] + 6.0f * wear[1] + 2.0f * sw[1];
        out[C_IMS_BEAR] = 0.0008f * (0.1f + sf * sf) * (1.0f + 60.0f * wear[1] * wear[1]) * (1.0f + 0.15f * nz[29]) + 0.004f * sw[1];
        out[C_LSS_RMS] = rms_lss;
        out[C_LSS_KURT] = 3.0f + 0.15f * nz[30] + 6.0f * wear[2] + 2.0f * sw[2];
        out[C_LSS_BEAR] = 0.0005f * (0.1f + sf * sf) * (1.0f + 60.0f * wear[2] * wear[2]) * (1.0f + 0.15f * nz[31]) + 0.003f * sw[2];
        out[C_PL_RMS] = rms_pl;
        out[C_PL_MESH] = 0.03f * mesh * (1.0f + 0.1f * nz[32]) + 0.01f * sw[3] + 1e-4f * (1.0f + 0.25f * nz[32]); /* + sensor noise floor */
        out[C_GEN_RMS] = rms_gen;
        out[C_TOWER] = tower;
    }
    g->row += n;
    return n;
}
