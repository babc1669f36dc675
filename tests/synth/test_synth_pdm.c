/* Synthetic wind-farm gearbox data: plan (segments, events, faulty fraction),
 * determinism, block-size and order independence, labels, shocks and slow
 * degradation visible in the right channels (synth/synth_pdm.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth.h"
#include "test.h"

#define NC GT_PDM_N_CHANNELS

typedef struct run {
    int64_t n;
    float *sig;      /* [n, NC] */
    uint8_t *lab, *cond;
} run;

static int find_channel(const char *name) {
    gt_channel_meta m[NC];
    gt_pdm_channels(m);
    for (int c = 0; c < NC; c++)
        if (!strcmp(m[c].name, name)) return c;
    fprintf(stderr, "no channel %s\n", name);
    exit(1);
}

/* Whole turbine t in blocks of `block` rows (0 = all at once). */
static run gen(const gt_pdm_synth_cfg *cfg, int t, int64_t block) {
    struct gt_pdm_turbine_info in;
    gt_pdm_turbine_info(cfg, t, &in);
    run r = {in.n_rows, malloc((size_t)in.n_rows * NC * 4), malloc((size_t)in.n_rows), malloc((size_t)in.n_rows)};
    TEST_REQUIRE(r.sig && r.lab && r.cond);
    gt_pdm_gen *g = gt_pdm_gen_begin(cfg, t);
    int64_t k = 0, b = block > 0 ? block : in.n_rows;
    while (k < in.n_rows) {
        int64_t got = gt_pdm_gen_next(g, b, r.sig + k * NC, r.lab + k, r.cond + k);
        TEST_REQUIRE(got > 0 && got <= b);
        k += got;
    }
    TEST_EQ_INT(gt_pdm_gen_next(g, 10, r.sig, r.lab, r.cond), 0);
    gt_pdm_gen_end(g);
    gt_pdm_turbine_info_free(&in);
    return r;
}
static void release(run *r) { free(r->sig); free(r->lab); free(r->cond); }
static int same(const run *a, const run *b) {
    return a->n == b->n && !memcmp(a->sig, b->sig, (size_t)a->n * NC * 4) && !memcmp(a->lab, b->lab, (size_t)a->n) &&
           !memcmp(a->cond, b->cond, (size_t)a->n);
}
static double mean_ch(const run *r, int c, int64_t a, int64_t b) {
    double s = 0;
    for (int64_t i = a; i < b; i++) s += r->sig[i * NC + c];
    return s / (double)(b - a);
}

int main(void) {
    gt_pdm_synth_cfg cfg;
    gt_pdm_synth_defaults(&cfg);
    cfg.n_farms = 2;
    cfg.turbines_per_farm = 6;
    cfg.days = 0.02; /* 17280 rows */
    cfg.shock_rate = 200;
    int N = cfg.n_farms * cfg.turbines_per_farm;

    gt_channel_meta meta[NC];
    gt_pdm_channels(meta);
    for (int c = 0; c < NC; c++) {
        TEST_CHECK(meta[c].name[0] && meta[c].unit[0]);
        for (int d = 0; d < c; d++) TEST_CHECK(strcmp(meta[c].name, meta[d].name) != 0);
    }
    for (int k = 0; k < GT_PDM_N_MACHINE_TYPES; k++) TEST_CHECK(strcmp(gt_pdm_machine_type_name(k), "unknown"));
    TEST_CHECK(!strcmp(gt_pdm_condition_name(3), "curtailed"));

    /* block-size independence, determinism, order independence */
    run all = gen(&cfg, 3, 0);
    int64_t blocks[] = {1, 7, 1000, 4096};
    for (int k = 0; k < 4; k++) {
        run b = gen(&cfg, 3, blocks[k]);
        TEST_CHECK(same(&all, &b));
        release(&b);
    }
    for (int t = 0; t < 3; t++) { run o = gen(&cfg, t, 333); release(&o); }
    run again = gen(&cfg, 3, 0);
    TEST_CHECK(same(&all, &again));
    release(&again);
    gt_pdm_synth_cfg cfg2 = cfg;
    cfg2.seed++;
    run other = gen(&cfg2, 3, 0);
    TEST_CHECK(memcmp(all.sig, other.sig, (size_t)all.n * NC * 4) != 0);
    release(&other);
    release(&all);

    /* plan: sizes, types, segments cover all rows, events sorted and in range,
     * labels and conditions per row match the tables */
    int types_seen[GT_PDM_N_MACHINE_TYPES] = {0};
    int n_faulty = 0, n_shocks = 0;
    for (int t = 0; t < N; t++) {
        struct gt_pdm_turbine_info in;
        gt_pdm_turbine_info(&cfg, t, &in);
        TEST_EQ_INT(in.id, t + 1);
        TEST_EQ_INT(in.farm, t / cfg.turbines_per_farm);
        TEST_EQ_INT(in.n_rows, (int64_t)llround(cfg.days * 86400 * cfg.rate_hz));
        TEST_CHECK(in.machine_type >= 0 && in.machine_type < GT_PDM_N_MACHINE_TYPES);
        if (in.farm == 0) types_seen[in.machine_type]++;
        TEST_REQUIRE(in.n_segments >= 1);
        TEST_EQ_INT(in.segments[0].start_row, 0);
        TEST_EQ_INT(in.segments[in.n_segments - 1].end_row, in.n_rows);
        for (int s = 0; s < in.n_segments; s++) {
            TEST_CHECK(in.segments[s].end_row > in.segments[s].start_row);
            TEST_CHECK(in.segments[s].condition >= 0 && in.segments[s].condition < GT_PDM_N_CONDITIONS);
            if (s) TEST_EQ_INT(in.segments[s].start_row, in.segments[s - 1].end_row);
        }
        int deg = 0;
        for (int e = 0; e < in.n_events; e++) {
            const gt_pdm_event *ev = &in.events[e];
            TEST_CHECK(ev->start_row >= 0 && ev->end_row > ev->start_row && ev->end_row <= in.n_rows);
            TEST_CHECK(ev->kind >= GT_PDM_EVENT_BEARING_WEAR && ev->kind <= GT_PDM_EVENT_SHOCK);
            if (e) TEST_CHECK(ev->start_row >= in.events[e - 1].start_row);
            deg += ev->kind != GT_PDM_EVENT_SHOCK;
            n_shocks += ev->kind == GT_PDM_EVENT_SHOCK;
        }
        TEST_CHECK(deg <= 1);
        n_faulty += deg;
        run r = gen(&cfg, t, 1000);
        uint8_t *want = calloc((size_t)r.n, 1);
        for (int e = 0; e < in.n_events; e++) /* degradation first, shocks take priority */
            if (in.events[e].kind != GT_PDM_EVENT_SHOCK)
                for (int64_t i = in.events[e].start_row; i < in.events[e].end_row; i++) want[i] = (uint8_t)in.events[e].kind;
        for (int e = 0; e < in.n_events; e++)
            if (in.events[e].kind == GT_PDM_EVENT_SHOCK)
                for (int64_t i = in.events[e].start_row; i < in.events[e].end_row; i++) want[i] = GT_PDM_EVENT_SHOCK;
        long bad_lab = 0, bad_cond = 0, bad_val = 0;
        for (int64_t i = 0; i < r.n; i++) bad_lab += r.lab[i] != want[i];
        for (int s = 0; s < in.n_segments; s++)
            for (int64_t i = in.segments[s].start_row; i < in.segments[s].end_row; i++)
                bad_cond += r.cond[i] != in.segments[s].condition;
        for (int64_t i = 0; i < r.n * NC; i++) bad_val += !isfinite(r.sig[i]);
        TEST_EQ_INT(bad_lab, 0);
        TEST_EQ_INT(bad_cond, 0);
        TEST_EQ_INT(bad_val, 0);
        free(want);
        release(&r);
        gt_pdm_turbine_info_free(&in);
    }
    for (int k = 0; k < GT_PDM_N_MACHINE_TYPES; k++) TEST_CHECK(types_seen[k] >= 1);
    TEST_EQ_INT(n_faulty, (int)floor(cfg.fault_fraction * N + 0.5));
    double expect_shocks = cfg.shock_rate * cfg.days * N;
    TEST_CLOSE(n_shocks, expect_shocks, 0, 0.3);

    /* shocks: against the same turbine without shocks, rows outside shocks are
     * identical and the vibration channels jump inside them */
    int vib[] = {find_channel("vib_gearbox_hss_rms"), find_channel("vib_gearbox_ims_rms"),
                 find_channel("vib_gearbox_lss_rms"), find_channel("vib_gearbox_planet_rms"),
                 find_channel("vib_generator_rms")};
    int kurt = find_channel("vib_gearbox_hss_kurtosis");
    gt_pdm_synth_cfg calm = cfg;
    calm.shock_rate = 0;
    for (int t = 0; t < 2; t++) {
        run s = gen(&cfg, t, 0), c = gen(&calm, t, 0);
        long outside_diff = 0, shocks = 0, visible = 0;
        for (int64_t i = 0; i < s.n; i++) {
            if (s.lab[i] != GT_PDM_EVENT_SHOCK) {
                outside_diff += memcmp(s.sig + i * NC, c.sig + i * NC, NC * 4) != 0;
                continue;
            }
            if (i > 0 && s.lab[i - 1] == GT_PDM_EVENT_SHOCK) continue;
            shocks++; /* first row of a shock: the largest rms ratio and kurtosis */
            double best = 0;
            for (int k = 0; k < 5; k++) {
                double ratio = s.sig[i * NC + vib[k]] / c.sig[i * NC + vib[k]];
                if (ratio > best) best = ratio;
            }
            visible += best > 3.0 && s.sig[i * NC + kurt] > 3.5;
        }
        TEST_EQ_INT(outside_diff, 0);
        TEST_CHECK(shocks > 0);
        TEST_EQ_INT(visible, shocks);
        release(&s);
        release(&c);
    }

    /* slow degradation: all turbines faulty vs none, half a day */
    gt_pdm_synth_cfg sick = cfg, healthy = cfg;
    sick.days = healthy.days = 0.5;
    sick.shock_rate = healthy.shock_rate = 0;
    sick.n_farms = healthy.n_farms = 1;
    sick.turbines_per_farm = healthy.turbines_per_farm = 12;
    sick.fault_fraction = 1.0;
    healthy.fault_fraction = 0.0;
    int kinds_seen[4] = {0};
    int bear_band[3] = {find_channel("vib_gearbox_hss_band_bearing"), find_channel("vib_gearbox_ims_band_bearing"),
                        find_channel("vib_gearbox_lss_band_bearing")};
    int bear_temp[3] = {find_channel("bearing_temp_hss"), find_channel("bearing_temp_ims"),
                        find_channel("bearing_temp_lss")};
    int oil_t = find_channel("gearbox_oil_temp"), oil_p = find_channel("gearbox_oil_pressure");
    for (int t = 0; t < sick.turbines_per_farm; t++) {
        struct gt_pdm_turbine_info in;
        gt_pdm_turbine_info(&sick, t, &in);
        TEST_REQUIRE(in.n_events == 1);
        gt_pdm_event ev = in.events[0];
        gt_pdm_turbine_info_free(&in);
        kinds_seen[ev.kind]++;
        run s = gen(&sick, t, 4096), h = gen(&healthy, t, 4096);
        TEST_CHECK(!memcmp(s.sig, h.sig, (size_t)ev.start_row * NC * 4)); /* identical before the fault */
        int64_t a = ev.end_row - (ev.end_row - ev.start_row) / 10, b = ev.end_row; /* last 10% of the event */
        if (ev.kind == GT_PDM_EVENT_BEARING_WEAR) {
            double band = 0, temp = 0;
            for (int k = 0; k < 3; k++) {
                double rb = mean_ch(&s, bear_band[k], a, b) / mean_ch(&h, bear_band[k], a, b);
                double dt = mean_ch(&s, bear_temp[k], a, b) - mean_ch(&h, bear_temp[k], a, b);
                if (rb > band) band = rb;
                if (dt > temp) temp = dt;
            }
            printf("turbine %d bearing wear: band x%.1f, temperature +%.1f degC\n", t, band, temp);
            TEST_CHECK(band > 5.0);
            TEST_CHECK(temp > 3.0);
        } else if (ev.kind == GT_PDM_EVENT_OIL_TEMP_DRIFT) {
            double dt = mean_ch(&s, oil_t, a, b) - mean_ch(&h, oil_t, a, b);
            printf("turbine %d oil drift: +%.1f degC\n", t, dt);
            TEST_CHECK(dt > 4.0);
        } else {
            double dp = mean_ch(&h, oil_p, a, b) - mean_ch(&s, oil_p, a, b);
            printf("turbine %d pressure loss: -%.2f bar\n", t, dp);
            TEST_CHECK(dp > 0.4);
        }
        release(&s);
        release(&h);
    }
    TEST_CHECK(kinds_seen[1] + kinds_seen[2] + kinds_seen[3] == sick.turbines_per_farm);
    TEST_CHECK(kinds_seen[1] > 0 && kinds_seen[2] > 0 && kinds_seen[3] > 0);
    TEST_DONE();
}
