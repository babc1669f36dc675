/* tests/io/testgen.h: closed-form test sources for the io/ writers.
 *
 * Every value is a simple formula of (item, row, column), so readers in C and
 * Python (tests/io/test_io_h5py.py) can check each element without the generator. With
 * inject = 1 a few known faults are planted for the inspect tests:
 *   household 1: rows 100..109 NaN (aggregate and all appliances) -> 160 NaN, 1 NaN run
 *   household 2: row 200 aggregate = 1e6                          -> 1 spike
 *   household 3: rows 300..339 aggregate = 7                      -> 1 stuck run, 40 rows
 *   household 0: row 5 appliance 2 = -3                           -> 1 negative
 *   household 4: row 7 appliance 0 = +Inf                         -> 1 Inf
 * Static functions only (included by several test programs). */
#ifndef GT_TESTS_IO_TESTGEN_H
#define GT_TESTS_IO_TESTGEN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/write.h"

#define TG_T0_MS INT64_C(1767571200000)
#define TG_NILM_A 5
#define TG_PDM_C 4

typedef struct {
    int n_households;
    int inject;
    gt_io_appliance meta[TG_NILM_A];
} tg_nilm;

static inline int64_t tg_nilm_rows(int h) { return 500 + 137 * (int64_t)h; }
static inline double tg_nilm_period(int h) { return h % 4 == 3 ? 2.0 : 6.0; }
static inline float tg_agg(int h, int64_t i) { return (float)(h * 1000 + i); }
static inline float tg_app(int h, int64_t i, int a) { return (float)(h * 100 + a) + (float)(i % 7) * 0.5f; }
static inline uint8_t tg_flag(int h, int64_t i) { return (uint8_t)((i + h) % 50 == 0 ? 1 : 0); }

static inline void tg_nilm_info(void *ctx, int h, gt_nilm_item *it, uint8_t *owns) {
    (void)ctx;
    it->id = 1000 + h;
    it->n_rows = tg_nilm_rows(h);
    it->t0_ms = TG_T0_MS + (int64_t)h * 60000;
    it->period_s = tg_nilm_period(h);
    if (owns)
        for (int a = 0; a < TG_NILM_A; a++) owns[a] = (uint8_t)((h + a) % 2);
}
static inline void tg_nilm_generate(void *ctx, int h, float *agg, float *app, uint8_t *faults) {
    tg_nilm *g = ctx;
    int64_t n = tg_nilm_rows(h);
    for (int64_t i = 0; i < n; i++) {
        agg[i] = tg_agg(h, i);
        for (int a = 0; a < TG_NILM_A; a++) app[i * TG_NILM_A + a] = tg_app(h, i, a);
        if (faults) faults[i] = tg_flag(h, i);
    }
    if (!g->inject) return;
    if (h == 1)
        for (int64_t i = 100; i < 110; i++) {
            agg[i] = NAN;
            for (int a = 0; a < TG_NILM_A; a++) app[i * TG_NILM_A + a] = NAN;
        }
    if (h == 2) agg[200] = 1e6f;
    if (h == 3)
        for (int64_t i = 300; i < 340; i++) agg[i] = 7.0f;
    if (h == 0) app[5 * TG_NILM_A + 2] = -3.0f;
    if (h == 4) app[7 * TG_NILM_A + 0] = INFINITY;
}

/* Fills src over the context g (which must outlive src). */
static inline void tg_nilm_source(gt_nilm_source *src, tg_nilm *g, int n_households, int inject, double lowres_s) {
    memset(src, 0, sizeof *src);
    memset(g, 0, sizeof *g);
    g->n_households = n_households;
    g->inject = inject;
    for (int a = 0; a < TG_NILM_A; a++) {
        snprintf(g->meta[a].name, sizeof g->meta[a].name, "app%d", a);
        g->meta[a].on_power_w = 10.0f * (a + 1);
        g->meta[a].on_duration_s = 60.0f * (a + 1);
        g->meta[a].max_power_w = 1000.0f * (a + 1);
    }
    src->n_households = n_households;
    src->n_appliances = TG_NILM_A;
    src->meta = g->meta;
    src->has_faults = 1;
    src->lowres_period_s = lowres_s;
    src->generator = "tests/io/testgen.h";
    src->generator_config = "closed form";
    src->seed = 42;
    src->ctx = g;
    src->info = tg_nilm_info;
    src->generate = tg_nilm_generate;
}

/* ------------------------------------------------------------------- PdM -- */

typedef struct {
    gt_io_channel ch[TG_PDM_C];
} tg_pdm;
typedef struct {
    int t;
    int64_t next;
} tg_pdm_state;

static inline int64_t tg_pdm_rows(int t) { return 3000 + 1000 * (int64_t)t; }
static inline float tg_sig(int t, int64_t i, int c) { return (float)(t * 10000 + i) + 0.25f * c; }
static inline uint8_t tg_label(int t, int64_t i) { return (uint8_t)(t % 2 == 0 && i >= 100 && i < 200 ? 1 : 0); }

static inline void tg_pdm_info(void *ctx, int t, gt_pdm_item *it) {
    (void)ctx;
    it->id = 500 + t;
    it->farm = t / 3;
    it->machine_type = t % 2;
    it->n_rows = tg_pdm_rows(t);
    it->t0_ms = TG_T0_MS + t * 1000;
    it->n_segments = 2;
    it->segments = malloc(sizeof(gt_io_span) * 2);
    it->segments[0] = (gt_io_span){0, it->n_rows / 2, 0};
    it->segments[1] = (gt_io_span){it->n_rows / 2, it->n_rows, 1};
    it->n_events = t % 2 == 0 ? 1 : 0;
    it->events = malloc(sizeof(gt_io_span));
    it->events[0] = (gt_io_span){100, 200, 1};
}
static inline void tg_pdm_info_free(void *ctx, gt_pdm_item *it) {
    (void)ctx;
    free(it->segments);
    free(it->events);
}
static inline void *tg_pdm_begin(void *ctx, int t) {
    (void)ctx;
    tg_pdm_state *s = malloc(sizeof *s);
    s->t = t;
    s->next = 0;
    return s;
}
static inline int64_t tg_pdm_next(void *ctx, void *state, int64_t n, float *sig, uint8_t *lab) {
    (void)ctx;
    tg_pdm_state *s = state;
    int64_t left = tg_pdm_rows(s->t) - s->next;
    if (n > left) n = left;
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < TG_PDM_C; c++) sig[i * TG_PDM_C + c] = tg_sig(s->t, s->next + i, c);
        lab[i] = tg_label(s->t, s->next + i);
    }
    s->next += n;
    return n;
}
static inline void tg_pdm_end(void *ctx, void *state) {
    (void)ctx;
    free(state);
}

static const char *const tg_mt[] = {"type_a", "type_b"};
static const char *const tg_cond[] = {"low_wind", "rated"};
static const char *const tg_ev[] = {"normal", "bearing_wear"};

static inline void tg_pdm_source(gt_pdm_source *src, tg_pdm *g, int n_turbines) {
    memset(src, 0, sizeof *src);
    memset(g, 0, sizeof *g);
    static const char *units[TG_PDM_C] = {"kW", "degC", "mm/s", "bar"};
    for (int c = 0; c < TG_PDM_C; c++) {
        snprintf(g->ch[c].name, sizeof g->ch[c].name, "ch%d", c);
        snprintf(g->ch[c].unit, sizeof g->ch[c].unit, "%s", units[c]);
    }
    src->n_turbines = n_turbines;
    src->n_channels = TG_PDM_C;
    src->channels = g->ch;
    src->rate_hz = 10.0;
    src->machine_type_names = tg_mt;
    src->n_machine_types = 2;
    src->condition_names = tg_cond;
    src->n_conditions = 2;
    src->event_kind_names = tg_ev;
    src->n_event_kinds = 2;
    src->generator = "tests/io/testgen.h";
    src->generator_config = "closed form";
    src->seed = 7;
    src->ctx = g;
    src->info = tg_pdm_info;
    src->info_free = tg_pdm_info_free;
    src->begin = tg_pdm_begin;
    src->next = tg_pdm_next;
    src->end = tg_pdm_end;
}

#endif
