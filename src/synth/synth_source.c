/* synth/synth_source.c: write.h sources over the synthetic generators of synth.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "synth/synth_source.h"

typedef struct {
    gt_nilm_source src;
    gt_nilm_synth_cfg cfg;
    gt_io_appliance meta[GT_NILM_N_APPLIANCES];
    char config[512];
} nilm_ctx;

static void nilm_info(void *ctx, int h, gt_nilm_item *item, uint8_t *owns) {
    nilm_ctx *c = ctx;
    struct gt_nilm_household_info info;
    gt_nilm_household_info(&c->cfg, h, &info);
    item->id = info.id;
    item->n_rows = info.n_rows;
    item->t0_ms = info.t0_ms;
    item->period_s = c->cfg.period_s;
    if (owns) memcpy(owns, info.owns, GT_NILM_N_APPLIANCES);
}
static void nilm_generate(void *ctx, int h, float *aggregate, float *appliances, uint8_t *faults) {
    nilm_ctx *c = ctx;
    gt_nilm_generate_household(&c->cfg, h, aggregate, appliances, faults);
}

gt_nilm_source *gt_synth_nilm_source(const gt_nilm_synth_cfg *cfg) {
    nilm_ctx *c = GT_CALLOC(1, sizeof(nilm_ctx));
    c->cfg = *cfg;
    gt_appliance_meta m[GT_NILM_N_APPLIANCES];
    gt_nilm_appliances(m);
    for (int a = 0; a < GT_NILM_N_APPLIANCES; a++) {
        memcpy(c->meta[a].name, m[a].name, sizeof c->meta[a].name - 1);
        c->meta[a].on_power_w = m[a].on_power_w;
        c->meta[a].on_duration_s = m[a].on_duration_s;
        c->meta[a].max_power_w = m[a].max_power_w;
    }
    snprintf(c->config, sizeof c->config,
             "households=%d; days=%.17g; period_s=%.17g; lowres_period_s=%.17g; start_ms=%lld; "
             "spike_rate=%.17g; gap_rate=%.17g; stuck_rate=%.17g; noise_w=%.17g",
             cfg->n_households, cfg->days, cfg->period_s, cfg->lowres_period_s, (long long)cfg->start_ms,
             cfg->spike_rate, cfg->gap_rate, cfg->stuck_rate, cfg->noise_w);
    gt_nilm_source *s = &c->src;
    s->n_households = cfg->n_households;
    s->n_appliances = GT_NILM_N_APPLIANCES;
    s->meta = c->meta;
    s->has_faults = 1;
    s->lowres_period_s = cfg->lowres_period_s;
    /* the attribute keeps the generator's former path: files stay byte-identical */
    s->generator = "gridtrain synth nilm (synth/synth_nilm.c)";
    s->generator_config = c->config;
    s->seed = cfg->seed;
    s->ctx = c;
    s->info = nilm_info;
    s->generate = nilm_generate;
    return s;
}
void gt_synth_nilm_source_free(gt_nilm_source *s) { free(s); /* src is the first member of nilm_ctx */ }

typedef struct {
    gt_pdm_source src;
    gt_pdm_synth_cfg cfg;
    gt_io_channel channels[GT_PDM_N_CHANNELS];
    const char *mt[GT_PDM_N_MACHINE_TYPES], *cond[GT_PDM_N_CONDITIONS], *ev[GT_PDM_EVENT_SHOCK + 1];
    char config[512];
} pdm_ctx;

static void pdm_info(void *ctx, int t, gt_pdm_item *item) {
    pdm_ctx *c = ctx;
    struct gt_pdm_turbine_info info;
    gt_pdm_turbine_info(&c->cfg, t, &info);
    item->id = info.id;
    item->farm = info.farm;
    item->machine_type = info.machine_type;
    item->n_rows = info.n_rows;
    item->t0_ms = info.t0_ms;
    item->n_segments = info.n_segments;
    item->n_events = info.n_events;
    item->segments = GT_MALLOC(sizeof(gt_io_span) * (size_t)(info.n_segments + 1));
    item->events = GT_MALLOC(sizeof(gt_io_span) * (size_t)(info.n_events + 1));
    for (int k = 0; k < info.n_segments; k++)
        item->segments[k] = (gt_io_span){info.segments[k].start_row, info.segments[k].end_row, info.segments[k].condition};
    for (int k = 0; k < info.n_events; k++)
        item->events[k] = (gt_io_span){info.events[k].start_row, info.events[k].end_row, info.events[k].kind};
    gt_pdm_turbine_info_free(&info);
}
static void pdm_info_free(void *ctx, gt_pdm_item *item) {
    (void)ctx;
    free(item->segments);
    free(item->events);
    item->segments = item->events = NULL;
}
static void *pdm_begin(void *ctx, int t) {
    pdm_ctx *c = ctx;
    return gt_pdm_gen_begin(&c->cfg, t);
}
static int64_t pdm_next(void *ctx, void *state, int64_t n, float *signals, uint8_t *labels) {
    (void)ctx;
    /* the per-row condition is not stored: /segments holds it */
    uint8_t cond[4096];
    int64_t done = 0;
    while (done < n) {
        int64_t k = n - done < 4096 ? n - done : 4096;
        int64_t got = gt_pdm_gen_next(state, k, signals + done * GT_PDM_N_CHANNELS, labels + done, cond);
        done += got;
        if (got < k) break;
    }
    return done;
}
static void pdm_end(void *ctx, void *state) { (void)ctx; gt_pdm_gen_end(state); }

gt_pdm_source *gt_synth_pdm_source(const gt_pdm_synth_cfg *cfg) {
    pdm_ctx *c = GT_CALLOC(1, sizeof(pdm_ctx));
    c->cfg = *cfg;
    gt_channel_meta ch[GT_PDM_N_CHANNELS];
    gt_pdm_channels(ch);
    for (int i = 0; i < GT_PDM_N_CHANNELS; i++) {
        memcpy(c->channels[i].name, ch[i].name, sizeof c->channels[i].name - 1);
        memcpy(c->channels[i].unit, ch[i].unit, sizeof c->channels[i].unit - 1);
    }
    for (int i = 0; i < GT_PDM_N_MACHINE_TYPES; i++) c->mt[i] = gt_pdm_machine_type_name(i);
    for (int i = 0; i < GT_PDM_N_CONDITIONS; i++) c->cond[i] = gt_pdm_condition_name(i);
    c->ev[0] = "normal";
    for (int i = 1; i <= GT_PDM_EVENT_SHOCK; i++) c->ev[i] = gt_pdm_event_name(i);
    snprintf(c->config, sizeof c->config,
             "farms=%d; turbines_per_farm=%d; days=%.17g; rate_hz=%.17g; start_ms=%lld; shock_rate=%.17g; "
             "fault_fraction=%.17g",
             cfg->n_farms, cfg->turbines_per_farm, cfg->days, cfg->rate_hz, (long long)cfg->start_ms,
             cfg->shock_rate, cfg->fault_fraction);
    gt_pdm_source *s = &c->src;
    s->n_turbines = cfg->n_farms * cfg->turbines_per_farm;
    s->n_channels = GT_PDM_N_CHANNELS;
    s->channels = c->channels;
    s->rate_hz = cfg->rate_hz;
    s->machine_type_names = c->mt;
    s->n_machine_types = GT_PDM_N_MACHINE_TYPES;
    s->condition_names = c->cond;
    s->n_conditions = GT_PDM_N_CONDITIONS;
    s->event_kind_names = c->ev;
    s->n_event_kinds = GT_PDM_EVENT_SHOCK + 1;
    /* the attribute keeps the generator's former path: files stay byte-identical */
    s->generator = "gridtrain synth pdm (synth/synth_pdm.c)";
    s->generator_config = c->config;
    s->seed = cfg->seed;
    s->ctx = c;
    s->info = pdm_info;
    s->info_free = pdm_info_free;
    s->begin = pdm_begin;
    s->next = pdm_next;
    s->end = pdm_end;
    return s;
}
void gt_synth_pdm_source_free(gt_pdm_source *s) { free(s); }
