/* Synthetic NILM households: determinism, order independence, signatures,
 * fault flags and fault rates (synth/synth_nilm.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth.h"
#include "test.h"

#define NA GT_NILM_N_APPLIANCES
enum { FRIDGE = 0, KETTLE = 2, LIGHTING = 14 };

typedef struct hh_data {
    struct gt_nilm_household_info info;
    float *agg, *app; /* [n], [n, NA] */
    uint8_t *flt;     /* [n] */
} hh_data;

static void gen(const gt_nilm_synth_cfg *cfg, int h, hh_data *d) {
    gt_nilm_household_info(cfg, h, &d->info);
    size_t n = (size_t)d->info.n_rows;
    d->agg = malloc(n * sizeof(float));
    d->app = malloc(n * NA * sizeof(float));
    d->flt = malloc(n);
    TEST_REQUIRE(d->agg && d->app && d->flt);
    gt_nilm_generate_household(cfg, h, d->agg, d->app, d->flt);
}
static void release(hh_data *d) { free(d->agg); free(d->app); free(d->flt); }
static int same(const hh_data *a, const hh_data *b) {
    size_t n = (size_t)a->info.n_rows;
    return a->info.n_rows == b->info.n_rows && !memcmp(a->agg, b->agg, n * 4) &&
           !memcmp(a->app, b->app, n * NA * 4) && !memcmp(a->flt, b->flt, n);
}

int main(void) {
    gt_nilm_synth_cfg cfg;
    gt_nilm_synth_defaults(&cfg);
    cfg.n_households = 400;
    gt_appliance_meta meta[NA];
    gt_nilm_appliances(meta);
    TEST_CHECK(!strcmp(meta[FRIDGE].name, "fridge") && !strcmp(meta[KETTLE].name, "kettle"));
    for (int a = 0; a < NA; a++) {
        TEST_CHECK(meta[a].on_power_w > 0 && meta[a].on_duration_s > 0 && meta[a].max_power_w > meta[a].on_power_w);
        for (int b = 0; b < a; b++) TEST_CHECK(strcmp(meta[a].name, meta[b].name) != 0);
    }

    /* determinism and generation-order independence: household 3 alone == after 0..2 */
    hh_data ref, d, other;
    gen(&cfg, 3, &ref);
    for (int h = 0; h < 3; h++) { gen(&cfg, h, &d); release(&d); }
    gen(&cfg, 3, &d);
    TEST_CHECK(same(&ref, &d));
    release(&d);
    /* the number of households does not change a household */
    gt_nilm_synth_cfg cfg_small = cfg;
    cfg_small.n_households = 4;
    gen(&cfg_small, 3, &d);
    TEST_CHECK(same(&ref, &d));
    release(&d);
    gt_nilm_synth_cfg cfg2 = cfg;
    cfg2.seed = cfg.seed + 1;
    gen(&cfg2, 3, &other);
    size_t nmin = (size_t)(ref.info.n_rows < other.info.n_rows ? ref.info.n_rows : other.info.n_rows);
    TEST_CHECK(memcmp(ref.agg, other.agg, nmin * 4) != 0);
    release(&other);
    release(&ref);

    /* signatures, flags and rates over many households */
    double nominal = cfg.days * 86400.0 / cfg.period_s;
    double hh_days = 0, n_spike = 0, n_gap = 0, n_stuck = 0;
    int fridge_owners = 0, fridge_ok = 0, kettle_owners = 0, kettle_runs = 0, own_fridge = 0;
    double light_evening = 0, light_midday = 0;
    long n_light_e = 0, n_light_m = 0;
    int H = 150;
    for (int h = 0; h < H; h++) {
        gen(&cfg, h, &d);
        const struct gt_nilm_household_info *in = &d.info;
        int64_t n = in->n_rows;
        TEST_EQ_INT(in->id, h + 1);
        TEST_CHECK(n >= (int64_t)(0.75 * nominal) - 1 && n <= (int64_t)nominal);
        TEST_CHECK(in->t0_ms >= cfg.start_ms && in->t0_ms < cfg.start_ms + 3600 * 1000);
        TEST_CHECK((in->t0_ms - cfg.start_ms) % (int64_t)(cfg.period_s * 1000) == 0);
        own_fridge += in->owns[FRIDGE];
        hh_days += (double)n * cfg.period_s / 86400.0;
        long bad_neg = 0, bad_nan = 0, bad_own = 0, bad_max = 0, bad_sum = 0, fridge_on = 0, fridge_n = 0;
        int prev_kettle = 0;
        long kettle_len = 0, kettle_bad = 0;
        double resid_sum = 0;
        long resid_n = 0;
        for (int64_t i = 0; i < n; i++) {
            uint8_t f = d.flt[i];
            const float *ap = d.app + i * NA;
            int gap = (f & GT_FAULT_GAP) != 0;
            TEST_CHECK(f == 0 || f == GT_FAULT_GAP || f == GT_FAULT_SPIKE || f == GT_FAULT_STUCK);
            if (isnan(d.agg[i]) != gap) bad_nan++;
            double s = 0;
            for (int a = 0; a < NA; a++) {
                if (isnan(ap[a]) != gap) bad_nan++;
                if (gap) continue;
                if (ap[a] < 0) bad_neg++;
                if (ap[a] > meta[a].max_power_w) bad_max++;
                if (!in->owns[a] && ap[a] != 0) bad_own++;
                s += ap[a];
            }
            if (f) { prev_kettle = 0; kettle_len = 0; continue; }
            if (d.agg[i] < s - 5 * cfg.noise_w) bad_sum++;
            resid_sum += d.agg[i] - s;
            resid_n++;
            if (in->owns[FRIDGE]) { fridge_n++; fridge_on += ap[FRIDGE] > meta[FRIDGE].on_power_w; }
            int k_on = ap[KETTLE] > meta[KETTLE].on_power_w;
            if (k_on) {
                if (ap[KETTLE] < 1800 || ap[KETTLE] > 3100) kettle_bad++;
                kettle_len++;
            }
            if (!k_on && prev_kettle) {
                if (kettle_len * cfg.period_s > 300) kettle_bad++;
                kettle_runs++;
                kettle_len = 0;
            }
            prev_kettle = k_on;
            double hr = fmod((double)(in->t0_ms / 1000) + (double)i * cfg.period_s, 86400.0) / 3600.0;
            if (hr >= 19 && hr < 22) { light_evening += ap[LIGHTING]; n_light_e++; }
            if (hr >= 11 && hr < 14) { light_midday += ap[LIGHTING]; n_light_m++; }
        }
        TEST_EQ_INT(bad_nan, 0);
        TEST_EQ_INT(bad_neg, 0);
        TEST_EQ_INT(bad_max, 0);
        TEST_EQ_INT(bad_own, 0);
        TEST_EQ_INT(bad_sum, 0);
        TEST_EQ_INT(kettle_bad, 0);
        /* aggregate - appliances = base load + unmetered loads + noise: 40..180 W base */
        double resid = resid_sum / (double)(resid_n ? resid_n : 1);
        TEST_CHECK(resid > 30 && resid < 450);
        if (in->owns[FRIDGE] && fridge_n) {
            double duty = (double)fridge_on / (double)fridge_n;
            fridge_owners++;
            fridge_ok += duty > 0.15 && duty < 0.7;
        }
        if (in->owns[KETTLE]) kettle_owners++;
        /* faults: count runs; runs of one kind never touch another fault */
        for (int64_t i = 0; i < n; i++) {
            uint8_t f = d.flt[i];
            if (!f || (i > 0 && d.flt[i - 1] == f)) continue;
            if (i > 0) TEST_CHECK(d.flt[i - 1] == 0);
            if (f == GT_FAULT_SPIKE) { n_spike++; TEST_CHECK(d.agg[i] >= 20000 && d.agg[i] <= 60000); }
            if (f == GT_FAULT_GAP) n_gap++;
            if (f == GT_FAULT_STUCK) {
                n_stuck++;
                int64_t j = i;
                while (j < n && d.flt[j] == GT_FAULT_STUCK) { TEST_CHECK(d.agg[j] == d.agg[i]); j++; }
                TEST_CHECK(j - i >= 2);
            }
        }
        release(&d);
    }
    printf("fridge owners %d/%d duty ok %d, kettle owners %d runs %d\n", own_fridge, H, fridge_ok, kettle_owners,
           kettle_runs);
    TEST_CHECK(own_fridge >= H * 9 / 10);
    TEST_CHECK(fridge_ok == fridge_owners);
    TEST_CHECK(kettle_runs > kettle_owners * 5); /* several boils a week */
    TEST_CHECK(light_evening / (double)n_light_e > 3.0 * light_midday / (double)n_light_m);
    printf("per household-day: spikes %.3f (cfg %.2f) gaps %.3f (cfg %.2f) stuck %.3f (cfg %.2f) over %.0f days\n",
           n_spike / hh_days, cfg.spike_rate, n_gap / hh_days, cfg.gap_rate, n_stuck / hh_days, cfg.stuck_rate,
           hh_days);
    TEST_CLOSE(n_spike / hh_days, cfg.spike_rate, 0, 0.15);
    TEST_CLOSE(n_gap / hh_days, cfg.gap_rate, 0, 0.2);
    TEST_CLOSE(n_stuck / hh_days, cfg.stuck_rate, 0, 0.35);

    /* rates are configurable: no faults at all */
    gt_nilm_synth_cfg clean = cfg;
    clean.spike_rate = clean.gap_rate = clean.stuck_rate = 0;
    gen(&clean, 5, &d);
    long nf = 0;
    for (int64_t i = 0; i < d.info.n_rows; i++) nf += d.flt[i] != 0 || isnan(d.agg[i]);
    TEST_EQ_INT(nf, 0);
    release(&d);
    TEST_DONE();
}
