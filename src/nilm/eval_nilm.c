/* nilm/eval_nilm.c: NILM evaluation (see nilm/nilm.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "nilm/nilm_impl.h"
#include "io/read.h"
#include "task/task.h"

void gt_nilm_model_free(nilm_model *em) { free(em->acc); }

void gt_nilm_forward(const nilm_model *em, int k) {
    gt_model *m = em->m;
    gt_engine_forward(em->e, m->x, k);
    if (em->n < 2) return;
    const int no = m->cfg.n_out, A = m->cfg.gated ? no / 2 : no;
    const size_t nx = (size_t)k * (size_t)m->cfg.window * (size_t)m->cfg.n_in, np = (size_t)k * (size_t)no;
    double *acc = em->acc;
    memset(acc, 0, sizeof(double) * np);
    for (int j = 0; j < em->n; j++) {
        gt_engine *ej = em->ems[j].e;
        gt_model *mj = gt_engine_model(ej);
        const int step = j > 0 ? mj->cfg.max_batch : k; /* a member's micro-batch may be smaller */
        for (int b0 = 0; b0 < k; b0 += step) {
            const int kb = k - b0 < step ? k - b0 : step;
            if (j > 0) {
                memcpy(mj->x, m->x + (size_t)b0 * (nx / (size_t)k), sizeof(float) * (nx / (size_t)k) * (size_t)kb);
                gt_engine_forward(ej, mj->x, kb);
            }
            for (size_t i = 0; i < (size_t)kb * (size_t)no; i++) {
                const int o = (int)(i % (size_t)no), a = o < A ? o : o - A;
                if (!(em->cover[j] >> a & 1u)) continue;
                const double v = mj->pred[i];
                acc[(size_t)b0 * (size_t)no + i] += o < A || em->n_cover[a] == 1 ? v : 1.0 / (1.0 + exp(-v));
            }
        }
    }
    for (size_t i = 0; i < np; i++) {
        const int o = (int)(i % (size_t)no), a = o < A ? o : o - A, c = em->n_cover[a];
        if (c == 0) continue; /* no member's: member 0's output, never read */
        double v = acc[i] / c;
        if (o >= A && c > 1) { /* probability -> logit, kept finite */
            v = v < 1e-7 ? 1e-7 : v > 1.0 - 1e-7 ? 1.0 - 1e-7 : v;
            v = log(v / (1.0 - v));
        }
        m->pred[i] = (float)v;
    }
}

/* Gate calibration: logits binned on [-GATE_L, GATE_L] */
#define GATE_BINS 480
#define GATE_L 12.0

static int gate_bin(float logit) {
    double u = ((double)logit + GATE_L) * (GATE_BINS / (2.0 * GATE_L));
    return u < 0 ? 0 : u >= GATE_BINS ? GATE_BINS - 1 : (int)u;
}

/* Collective. The gated head's decision threshold per appliance: the bin edge
 * of the logit at which the on/off F1 over the validation split of ds (the
 * later time of the training households, never evaluated) is largest
 * (ties: the edge nearest 0); 0 (probability 0.5) for an appliance never on
 * there. Counts are integers summed over the ranks: the same thresholds for
 * any rank count. */
static void calibrate_gates(gt_dataset *ds, const nilm_model *em, const gt_io_appliance *meta, int A,
                            MPI_Comm comm, float *gate) {
    gt_model *m = em->m;
    const gt_norm_stats *ns = &em->ns;
    const int B = m->cfg.max_batch;
    int64_t *cnt = GT_CALLOC((size_t)A * 2 * GATE_BINS, sizeof(int64_t)); /* [a][z][bin] */
    int64_t nloc = gt_dataset_n_windows_local(ds, GT_SPLIT_VAL);
    int64_t *idx = GT_MALLOC(sizeof(int64_t) * (size_t)B);
    float *y = GT_MALLOC(sizeof(float) * (size_t)B * (size_t)A), *mask = GT_MALLOC(sizeof(float) * (size_t)B * (size_t)A);
    for (int64_t first = 0; first < nloc;) {
        int64_t want = nloc - first < B ? nloc - first : B;
        int64_t n = gt_dataset_local_range(ds, GT_SPLIT_VAL, first, want, idx);
        GT_ASSERT(n > 0);
        gt_dataset_fill(ds, GT_SPLIT_VAL, idx, n, m->x, y, mask, NULL);
        gt_nilm_forward(em, (int)n);
        for (int64_t b = 0; b < n; b++)
            for (int a = 0; a < A; a++) {
                size_t j = (size_t)b * A + a;
                if (mask[j] == 0.0f) continue;
                double yt = (double)y[j] * ns->std[1 + a] + ns->mean[1 + a];
                int z = yt > meta[a].on_power_w;
                cnt[((size_t)a * 2 + z) * GATE_BINS + gate_bin(m->pred[(size_t)b * m->cfg.n_out + A + a])]++;
            }
        first += n;
    }
    gt_dist_allreduce_sum_i64(cnt, A * 2 * GATE_BINS, comm);
    for (int a = 0; a < A; a++) {
        const int64_t *neg = cnt + (size_t)a * 2 * GATE_BINS, *pos = neg + GATE_BINS;
        int64_t P = 0;
        for (int k = 0; k < GATE_BINS; k++) P += pos[k];
        gate[a] = 0.0f;
        if (P == 0) continue;
        /* threshold at the lower edge of bin k: on = bins >= k */
        int64_t tp = 0, fp = 0;
        double best = -1;
        for (int k = GATE_BINS - 1; k >= 0; k--) {
            tp += pos[k], fp += neg[k];
            double f1 = 2.0 * (double)tp / (double)(2 * tp + fp + (P - tp));
            double edge = -GATE_L + (2.0 * GATE_L) * k / GATE_BINS;
            if (f1 > best + 1e-12 || (fabs(f1 - best) <= 1e-12 && fabs(edge) < fabs((double)gate[a]))) {
                best = f1;
                gate[a] = (float)edge;
            }
        }
    }
    free(cnt), free(idx), free(y), free(mask);
}

/* Collective: the run's splits and screening over sh (owned by the result) on
 * the window grid `stride`, normalised with the run's frozen statistics. */
static gt_dataset *eval_dataset(gt_nilm_shard *sh, const nilm_model *em, int64_t stride, MPI_Comm comm) {
    gt_data_config dcfg = em->data;
    dcfg.window = em->m->cfg.window; /* member 0's host model */
    dcfg.stride = stride;
    dcfg.x_channels_last = gt_model_input_channels_last(em->m->cfg.kind);
    gt_dataset *ds = gt_dataset_nilm(sh, &dcfg, comm);
    gt_dataset_set_norm(ds, &em->ns);
    return ds;
}

/* eval.stride, or auto: at most eval.max_windows windows over `rows` rows */
int64_t gt_nilm_eval_stride(const gt_eval_config *ec, int64_t rows) {
    const gt_nilm_eval_config *ncfg = gt_nilm_eval_cfg(ec);
    int64_t stride = ncfg->stride;
    if (stride <= 0) {
        int64_t mw = ncfg->max_windows > 0 ? ncfg->max_windows : 1000000;
        stride = (rows + mw - 1) / mw;
        if (stride < 1) stride = 1;
    }
    return stride;
}

static void check_model(const gt_eval_model *em, int A) {
    const gt_model_config *mc = gt_engine_config(em->e);
    gt_task_nilm.check_model(mc, em->name ? em->name : "model");
    const int per = mc->gated ? 2 : 1;
    GT_CHECK(mc->n_out == per * A, GT_EXIT_DATA, "%s: the model predicts %d appliances, the file has %d",
             em->name ? em->name : "model", mc->n_out / per, A);
    GT_CHECK(em->ns.n == 1 + A, GT_EXIT_DATA, "%s: normalisation statistics for %d features, the file needs %d",
             em->name ? em->name : "model", em->ns.n, 1 + A);
}

static int same_filter(const gt_data_filter *a, const gt_data_filter *b) {
    if (a->n != b->n) return 0;
    for (int r = 0; r < a->n; r++)
        if (a->lo[r] != b->lo[r] || a->hi[r] != b->hi[r]) return 0;
    return 1;
}

/* ems[0 .. n-1] as one model (an ensemble when n > 1): every member fits the
 * file's A appliances and matches member 0 in what the shared input windows,
 * outputs and splits depend on; a user error naming the member otherwise.
 * Members may be trained on different appliances (data.appliances): each
 * counts for its own. Free with nilm_model_free. */
nilm_model gt_nilm_model_of(const gt_eval_model *ems, int n, const gt_io_appliance *meta, int A) {
    GT_CHECK(n >= 1 && n <= GT_EVAL_MAX_MODELS, GT_EXIT_USAGE, "eval: 1..%d models", GT_EVAL_MAX_MODELS);
    const gt_eval_model *e0 = &ems[0];
    for (int j = 0; j < n; j++) {
        const gt_eval_model *e = &ems[j];
        check_model(e, A);
        if (j == 0) continue;
        const char *nm = e->name ? e->name : "model", *n0 = e0->name ? e0->name : "model 0";
        const gt_model_config *c = gt_engine_config(e->e), *c0 = gt_engine_config(e0->e);
        GT_CHECK(c->window == c0->window && c->n_in == c0->n_in && c->gated == c0->gated &&
                     gt_model_input_channels_last(c->kind) == gt_model_input_channels_last(c0->kind) &&
                     !strcmp(gt_nilm_data_cfg(&e->data)->timezone, gt_nilm_data_cfg(&e0->data)->timezone),
                 GT_EXIT_USAGE,
                 "eval.models: %s (%s, window %d, %d input channels, %s head) cannot join the ensemble of %s (%s, window %d, "
                 "%d input channels, %s head): members need the same window, inputs (data.time_features, data.timezone), "
                 "input layout and head",
                 nm, gt_model_kind_name(c->kind), c->window, c->n_in, c->gated ? "gated" : "power", n0,
                 gt_model_kind_name(c0->kind), c0->window, c0->n_in, c0->gated ? "gated" : "power");
        GT_CHECK(e->data.split_train == e0->data.split_train && e->data.split_val == e0->data.split_val &&
                     e->data.holdout_every == e0->data.holdout_every && same_filter(&e->data.items, &e0->data.items),
                 GT_EXIT_USAGE,
                 "eval.models: %s was trained with other splits than %s (data.split_train, data.split_val, "
                 "data.holdout_every, data.items): its training rows could be %s's test rows",
                 nm, n0, n0);
        int same = e->ns.n == e0->ns.n;
        for (int i = 0; same && i < e0->ns.n; i++)
            same = fabs(e->ns.mean[i] - e0->ns.mean[i]) <= 1e-6 * (fabs(e0->ns.mean[i]) + e0->ns.std[i]) &&
                   fabs(e->ns.std[i] - e0->ns.std[i]) <= 1e-6 * e0->ns.std[i];
        GT_CHECK(same, GT_EXIT_USAGE,
                 "eval.models: %s's normalisation statistics differ from %s's: members must be trained on the same data",
                 nm, n0);
    }
    nilm_model em = {.e = e0->e, .m = gt_engine_model(e0->e), .ns = e0->ns, .data = e0->data, .name = e0->name, .ems = ems, .n = n};
    for (int j = 0; j < n; j++) {
        const char *apps = gt_nilm_data_cfg(&ems[j].data)->appliances;
        em.cover[j] = gt_nilm_appliance_mask(apps, meta, A);
        GT_CHECK(em.cover[j], GT_EXIT_USAGE, "%s: data.appliances '%s' names no appliance",
                 ems[j].name ? ems[j].name : "model", apps);
        em.covered |= em.cover[j];
        for (int a = 0; a < A; a++) em.n_cover[a] += (int)(em.cover[j] >> a & 1u);
    }
    /* the evaluated appliances: the union ("" = all) */
    const uint32_t all = A >= 32 ? 0xffffffffu : (1u << A) - 1u;
    char *uni = gt_nilm_data_cfg_set(&em.data)->appliances;
    const size_t cap = sizeof gt_nilm_data_cfg(&em.data)->appliances;
    uni[0] = '\0';
    for (int a = 0; a < A && em.covered != all; a++)
        if (em.covered >> a & 1u) {
            size_t l = strlen(uni);
            GT_CHECK(l + strlen(meta[a].name) + 2 < cap, GT_EXIT_USAGE,
                     "eval.models: the members' appliances do not fit in %zu characters", cap);
            snprintf(uni + l, cap - l, "%s%s", l ? "+" : "", meta[a].name);
        }
    if (n > 1) em.acc = GT_MALLOC(sizeof(double) * (size_t)em.m->cfg.max_batch * (size_t)em.m->cfg.n_out);
    return em;
}

/* one day of (time, aggregate, true, pred) of the first item of a split */
typedef struct sample_buf {
    int32_t file_index; /* -1: none */
    int64_t id;         /* the household's id */
    int64_t n, cap;
    int64_t t0_ms;
    double *rows; /* (n, 2 + 2A) */
} sample_buf;

enum { ACC_K = sizeof(gt_nilm_acc) / sizeof(double) };

/* One item's windows of a split in time order as the output rule sees them
 * (the state filter runs over such a sequence). */
typedef struct item_seq {
    int item;              /* local item */
    int32_t file_index;
    int64_t id;            /* household id */
    int64_t n, cap;
    double step_s;         /* seconds between grid points (period x stride) */
    int64_t *t_ms;         /* (n) window midpoints */
    uint8_t *brk;          /* (n) 1: grid points (screened windows) missing before this one */
    double *agg, *hours;   /* (n) aggregate W at the midpoint; the hours one sample stands for */
    double *yt;            /* (n, A) true W, NaN where the target does not count */
    double *yhat, *wraw;   /* (n, A) W by the rule; raw clipped W of the power output */
    uint8_t *on;           /* (n, A) state by the rule (yhat > on-power), before any filter */
} item_seq;
typedef void (*item_fn)(item_seq *q, int A, void *ctx);

static void seq_grow(item_seq *q, int A) {
    if (q->n < q->cap) return;
    q->cap = q->cap ? 2 * q->cap : 1024;
    const size_t c = (size_t)q->cap, cA = c * (size_t)A;
    q->t_ms = GT_REALLOC(q->t_ms, sizeof(int64_t) * c);
    q->brk = GT_REALLOC(q->brk, c);
    q->agg = GT_REALLOC(q->agg, sizeof(double) * c);
    q->hours = GT_REALLOC(q->hours, sizeof(double) * c);
    q->yt = GT_REALLOC(q->yt, sizeof(double) * cA);
    q->yhat = GT_REALLOC(q->yhat, sizeof(double) * cA);
    q->wraw = GT_REALLOC(q->wraw, sizeof(double) * cA);
    q->on = GT_REALLOC(q->on, cA);
}

/* This rank's windows of split s through the model, handed to fn one item at
 * a time (items in local order, windows in time order). */
static void walk_split(gt_dataset *ds, const nilm_model *em, const gt_io_appliance *meta, int A, gt_split s,
                       int64_t stride, const out_rule *rule, item_fn fn, void *ctx) {
    gt_model *m = em->m;
    const gt_norm_stats *ns = &em->ns;
    const int W = m->cfg.window, B = m->cfg.max_batch, C = m->cfg.n_in;
    const int last = gt_model_input_channels_last(m->cfg.kind);
    int64_t nloc = gt_dataset_n_windows_local(ds, s);
    int64_t *idx = GT_MALLOC(sizeof(int64_t) * (size_t)B);
    float *y = GT_MALLOC(sizeof(float) * (size_t)B * (size_t)A), *mask = GT_MALLOC(sizeof(float) * (size_t)B * (size_t)A);
    gt_window_ref *refs = GT_MALLOC(sizeof(gt_window_ref) * (size_t)B);
    item_seq q = {.item = -1};
    for (int64_t first = 0; first < nloc;) {
        int64_t want = nloc - first < B ? nloc - first : B;
        int64_t n = gt_dataset_local_range(ds, s, first, want, idx);
        GT_ASSERT(n > 0);
        gt_dataset_fill(ds, s, idx, n, m->x, y, mask, refs);
        /* a micro-batch never crosses an item: the same batches for any rank count */
        int64_t k = 1;
        while (k < n && refs[k].item == refs[0].item) k++;
        if (refs[0].item != q.item) {
            if (q.n) fn(&q, A, ctx);
            q.n = 0, q.item = refs[0].item, q.file_index = refs[0].file_index, q.id = refs[0].id;
        }
        gt_nilm_forward(em, (int)k);
        for (int64_t b = 0; b < k; b++) {
            const gt_window_ref *r = &refs[b];
            double period_ms = W > 1 ? (double)(r->t_end_ms - r->t_start_ms) / (W - 1) : 0;
            seq_grow(&q, A);
            const int64_t i = q.n++;
            q.step_s = period_ms * (double)stride / 1e3;
            q.hours[i] = period_ms * (double)stride / 3.6e6;
            q.t_ms[i] = r->t_start_ms + (int64_t)llround(period_ms * (W / 2));
            q.brk[i] = i > 0 && (double)(q.t_ms[i] - q.t_ms[i - 1]) > 1.5 * period_ms * (double)stride;
            q.agg[i] = (double)m->x[b * W * C + gt_nilm_x_offset(last, W, C, W / 2, 0)] * ns->std[0] + ns->mean[0];
            for (int a = 0; a < A; a++) {
                const size_t j = (size_t)b * A + a, qj = (size_t)i * A + a;
                double yt = NAN;
                if (mask[j] != 0.0f) {
                    yt = (double)y[j] * ns->std[1 + a] + ns->mean[1 + a];
                    if (fabs(yt) < 1e-3) yt = 0; /* undo the float rounding of an exact 0 W */
                }
                q.yt[qj] = yt;
                q.yhat[qj] = predict_w(m, ns, meta, A, (int)b, a, rule);
                q.wraw[qj] = raw_w(m, ns, meta, (int)b, a);
                q.on[qj] = q.yhat[qj] > meta[a].on_power_w;
            }
        }
        first += k;
    }
    if (q.n) fn(&q, A, ctx);
    free(q.t_ms), free(q.brk), free(q.agg), free(q.hours), free(q.yt), free(q.yhat), free(q.wraw), free(q.on);
    free(idx), free(y), free(mask), free(refs);
}

/* State filter calibration: durations tried (seconds), every pair */
static const double k_fill_s[] = {0, 60, 120, 300, 600, 1200, 2400, 3600, 7200};
static const double k_min_on_s[] = {0, 60, 120, 300, 600, 900, 1800, 3600};
enum { N_FILL = sizeof k_fill_s / sizeof k_fill_s[0], N_MIN_ON = sizeof k_min_on_s / sizeof k_min_on_s[0] };

typedef struct filter_ctx {
    const gt_io_appliance *meta;
    int64_t *cnt; /* [a][fill][min_on][tp, fp, fn] */
    uint8_t *col, *truth; /* one appliance: filtered states; true state (0/1, 2 = not evaluated) */
    int64_t col_cap, truth_cap;
} filter_ctx;

static uint8_t *state_column(const item_seq *q, int A, int a, uint8_t **col, int64_t *cap) {
    if (*cap < q->n) {
        *cap = q->n;
        *col = GT_REALLOC(*col, (size_t)q->n);
    }
    for (int64_t i = 0; i < q->n; i++) (*col)[i] = q->on[(size_t)i * A + a];
    return *col;
}

static void filter_item(item_seq *q, int A, void *vctx) {
    filter_ctx *c = vctx;
    if (c->truth_cap < q->n) {
        c->truth_cap = q->n;
        c->truth = GT_REALLOC(c->truth, (size_t)q->n);
    }
    for (int a = 0; a < A; a++) {
        for (int64_t i = 0; i < q->n; i++) {
            double yt = q->yt[(size_t)i * A + a];
            c->truth[i] = !isfinite(yt) ? 2 : yt > c->meta[a].on_power_w;
        }
        for (int f = 0; f < N_FILL; f++)
            for (int g = 0; g < N_MIN_ON; g++) {
                uint8_t *col = state_column(q, A, a, &c->col, &c->col_cap);
                gt_nilm_state_filter(col, q->brk, q->n, q->step_s, k_fill_s[f], k_min_on_s[g]);
                int64_t *k = c->cnt + (((size_t)a * N_FILL + f) * N_MIN_ON + g) * 3;
                for (int64_t i = 0; i < q->n; i++) {
                    const int on = c->truth[i];
                    if (on == 2) continue;
                    k[0] += on && col[i], k[1] += !on && col[i], k[2] += on && !col[i];
                }
            }
    }
}

/* Collective. The state filter's durations per appliance: the pair of the
 * grid above whose filtered on/off F1 over the validation split of ds is
 * largest (ties: the shorter durations, so no filter unless it helps). Counts
 * are integers summed over the ranks: the same durations for any rank count. */
static void calibrate_filter(gt_dataset *ds, const nilm_model *em, const gt_io_appliance *meta, int A,
                             int64_t stride, MPI_Comm comm, out_rule *rule) {
    const size_t n_cnt = (size_t)A * N_FILL * N_MIN_ON * 3;
    filter_ctx c = {.meta = meta, .cnt = GT_CALLOC(n_cnt, sizeof(int64_t))};
    walk_split(ds, em, meta, A, GT_SPLIT_VAL, stride, rule, filter_item, &c);
    gt_dist_allreduce_sum_i64(c.cnt, (int)n_cnt, comm);
    rule->filter = 1;
    for (int a = 0; a < A; a++) {
        double best = -1;
        rule->fill_s[a] = rule->min_on_s[a] = 0;
        for (int f = 0; f < N_FILL; f++)
            for (int g = 0; g < N_MIN_ON; g++) {
                const int64_t *k = c.cnt + (((size_t)a * N_FILL + f) * N_MIN_ON + g) * 3;
                if (k[0] + k[2] == 0) continue; /* never on: no filter */
                double f1 = 2.0 * (double)k[0] / (double)(2 * k[0] + k[1] + k[2]);
                if (f1 > best + 1e-12) {
                    best = f1;
                    rule->fill_s[a] = (float)k_fill_s[f], rule->min_on_s[a] = (float)k_min_on_s[g];
                }
            }
    }
    free(c.cnt), free(c.col), free(c.truth);
}

typedef struct split_ctx {
    const gt_io_appliance *meta;
    const out_rule *rule;
    gt_nilm_acc *acc; /* (local items, A) */
    sample_buf *smp;
    uint8_t *col;
    int64_t col_cap;
} split_ctx;

static void split_item(item_seq *q, int A, void *vctx) {
    split_ctx *c = vctx;
    for (int a = 0; a < A; a++) {
        uint8_t *col = state_column(q, A, a, &c->col, &c->col_cap);
        if (c->rule->filter)
            gt_nilm_state_filter(col, q->brk, q->n, q->step_s, c->rule->fill_s[a], c->rule->min_on_s[a]);
        gt_nilm_acc *acc = &c->acc[(size_t)q->item * A + a];
        for (int64_t i = 0; i < q->n; i++) {
            const size_t j = (size_t)i * A + a;
            q->yhat[j] = filtered_w(q->yhat[j], q->wraw[j], q->on[j], col[i]);
            if (isfinite(q->yt[j])) gt_nilm_acc_add_state(acc, q->yt[j], q->yhat[j], col[i], c->meta[a].on_power_w, q->hours[i]);
        }
    }
    sample_buf *smp = c->smp;
    if (!smp || (smp->file_index >= 0 && smp->file_index != q->file_index)) return;
    for (int64_t i = 0; i < q->n; i++) {
        if (smp->file_index < 0) smp->file_index = q->file_index, smp->id = q->id, smp->t0_ms = q->t_ms[i];
        if (q->t_ms[i] - smp->t0_ms >= 86400000LL) break;
        if (smp->n == smp->cap) {
            smp->cap = smp->cap ? 2 * smp->cap : 1024;
            smp->rows = GT_REALLOC(smp->rows, sizeof(double) * (size_t)smp->cap * (size_t)(2 + 2 * A));
        }
        double *row = smp->rows + (size_t)smp->n++ * (size_t)(2 + 2 * A);
        row[0] = (double)(q->t_ms[i] - smp->t0_ms) / 3.6e6;
        row[1] = q->agg[i];
        for (int a = 0; a < A; a++) row[2 + 2 * a] = q->yt[(size_t)i * A + a], row[3 + 2 * a] = q->yhat[(size_t)i * A + a];
    }
}

static void eval_split(gt_dataset *ds, const nilm_model *em, const gt_io_appliance *meta, int A, gt_split s,
                       int64_t stride, const out_rule *rule, int n_local, const int32_t *fidx, int n_total,
                       sample_buf *smp, MPI_Comm comm, gt_nilm_split_eval *out) {
    memset(out, 0, sizeof *out);
    out->n_windows = gt_dataset_n_windows_global(ds, s);
    out->present = out->n_windows > 0;
    if (!out->present) {
        gt_nilm_metrics nanm = {0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, 0};
        out->overall = nanm;
        for (int a = 0; a < A; a++) out->app[a] = nanm;
        return;
    }
    gt_nilm_acc *acc = GT_CALLOC((size_t)(n_local > 0 ? n_local : 1) * (size_t)A, sizeof(gt_nilm_acc));
    split_ctx c = {.meta = meta, .rule = rule, .acc = acc, .smp = smp};
    walk_split(ds, em, meta, A, s, stride, rule, split_item, &c);
    free(c.col);
    /* per household sums -> every rank, added in file order */
    double *all = GT_MALLOC(sizeof(double) * (size_t)n_total * A * ACC_K + 1);
    gt_eval_gather_items(n_local, fidx, (const double *)acc, A * ACC_K, n_total, all, comm);
    gt_nilm_acc tot[GT_DATA_MAX_TARGETS], overall;
    memset(tot, 0, sizeof tot);
    memset(&overall, 0, sizeof overall);
    for (int f = 0; f < n_total; f++)
        for (int a = 0; a < A; a++) gt_nilm_acc_merge(&tot[a], (const gt_nilm_acc *)(all + ((size_t)f * A + a) * ACC_K));
    for (int a = 0; a < A; a++) {
        gt_nilm_metrics_from_acc(&tot[a], &out->app[a]);
        gt_nilm_acc_merge(&overall, &tot[a]);
    }
    gt_nilm_metrics_from_acc(&overall, &out->overall);
    free(all), free(acc);
}

/* 1 when the output rule needs the validation windows (a calibration) */
static int rule_calibrates(const nilm_model *em, const gt_eval_config *ec) {
    const gt_nilm_eval_config *ncfg = gt_nilm_eval_cfg(ec);
    return (em->m->cfg.gated && ncfg->calibrate_gate) || ncfg->calibrate_filter;
}

/* Collective: the output rule of em; ds (the evaluation's windows on the grid
 * `stride`) only when rule_calibrates. The gates first, then the state filter
 * on the states those gates give. */
static void rule_init(gt_dataset *ds, const nilm_model *em, const gt_eval_config *ec,
                      const gt_io_appliance *meta, int A, int64_t stride, MPI_Comm comm, out_rule *rule) {
    const gt_nilm_eval_config *ncfg = gt_nilm_eval_cfg(ec);
    memset(rule, 0, sizeof *rule);
    rule->off_below_on = ncfg->off_below_on;
    if (em->m->cfg.gated && ncfg->calibrate_gate) calibrate_gates(ds, em, meta, A, comm, rule->gate);
    if (ncfg->calibrate_filter) calibrate_filter(ds, em, meta, A, stride, comm, rule);
    else if (ncfg->fill_s > 0 || ncfg->min_on_s > 0) {
        rule->filter = 1;
        for (int a = 0; a < GT_DATA_MAX_TARGETS; a++)
            rule->fill_s[a] = (float)ncfg->fill_s, rule->min_on_s[a] = (float)ncfg->min_on_s;
    }
}

/* Collective: the output rule of em on data_file for predict (reads the file
 * again for the calibration windows at the evaluation's grid). */
void gt_nilm_make_rule(const char *data_file, const nilm_model *em, const gt_eval_config *ec, int64_t stride,
                      MPI_Comm comm, out_rule *rule) {
    if (!rule_calibrates(em, ec)) {
        rule_init(NULL, em, ec, NULL, 0, stride, comm, rule);
        return;
    }
    const double power_limit_w = gt_nilm_data_cfg(&em->data)->power_limit_w;
    gt_nilm_shard *sh = gt_nilm_shard_read_opts(data_file, &(gt_read_opts){power_limit_w}, comm);
    const int A = sh->n_appliances;
    gt_io_appliance meta[GT_DATA_MAX_TARGETS];
    memcpy(meta, sh->meta, sizeof(gt_io_appliance) * (size_t)A);
    gt_dataset *ds = eval_dataset(sh, em, stride, comm);
    rule_init(ds, em, ec, meta, A, stride, comm, rule);
    gt_dataset_free(ds);
}

static void write_sample(const char *path, const sample_buf *smp, const gt_io_appliance *meta, int A, MPI_Comm comm) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int mine = smp->file_index >= 0 && smp->n > 0 ? smp->file_index : INT32_MAX;
    int best = gt_dist_min_int(mine, comm);
    if (best == INT32_MAX || mine != best) return;
    FILE *f = gt_fopen_atomic(path, 0); /* a link there is replaced, never followed */
    if (!f) {
        GT_WARN("eval: cannot write %s: %s", path, gt_out_strerror(errno));
        return;
    }
    /* the start (UTC) and the household: the report's plot title says which
     * hours of which household it shows */
    time_t t0 = (time_t)(smp->t0_ms / 1000);
    struct tm tm;
    char from[32] = "?";
    if (gmtime_r(&t0, &tm)) strftime(from, sizeof from, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "# household id %lld (file index %d) from %s; columns: time_h aggregate_w", (long long)smp->id, best, from);
    for (int a = 0; a < A; a++) { /* one whitespace-free token per name: the header stays one comment line */
        char tok[3 * GT_FORMAT_NAME_LEN];
        gt_esc_token(tok, sizeof tok, meta[a].name);
        fprintf(f, " true_%s pred_%s", tok, tok);
    }
    fputc('\n', f);
    /* a blank line where windows were skipped (screened gaps or spikes): the
     * plot breaks its lines there instead of drawing across the hole */
    double step = INFINITY;
    for (int64_t i = 1; i < smp->n; i++) {
        double d = smp->rows[(size_t)i * (2 + 2 * A)] - smp->rows[(size_t)(i - 1) * (2 + 2 * A)];
        if (d > 0 && d < step) step = d;
    }
    for (int64_t i = 0; i < smp->n; i++) {
        const double *r = smp->rows + (size_t)i * (2 + 2 * A);
        if (i > 0 && r[0] - r[-(2 + 2 * A)] > 1.5 * step) fputc('\n', f);
        fprintf(f, "%.6f %.3f", r[0], r[1]);
        for (int a = 0; a < 2 * A; a++) {
            if (isfinite(r[2 + a])) fprintf(f, " %.3f", r[2 + a]);
            else fputs(" NaN", f);
        }
        fputc('\n', f);
    }
    fclose(f);
}

void gt_eval_nilm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                  const char *sample_csv, MPI_Comm comm, gt_nilm_eval *out) {
    memset(out, 0, sizeof *out);
    MPI_CHECK(MPI_Comm_size(comm, &out->n_ranks));
    const double power_limit_w = gt_nilm_data_cfg(&ems[0].data)->power_limit_w;
    gt_nilm_shard *sh = gt_nilm_shard_read_opts(data_file, &(gt_read_opts){power_limit_w}, comm);
    const int A = sh->n_appliances;
    GT_CHECK(A <= GT_DATA_MAX_TARGETS, GT_EXIT_DATA, "%s: %d appliances (at most %d)", data_file, A,
             GT_DATA_MAX_TARGETS);
    nilm_model ens = gt_nilm_model_of(ems, n_models, sh->meta, A);
    const nilm_model *em = &ens;
    gt_nilm_check_filters(data_file, sh, &em->data, comm); /* the run's data.items on this file */
    out->n_appliances = A;
    out->n_models = n_models;
    memcpy(out->meta, sh->meta, sizeof(gt_io_appliance) * (size_t)A);
    const int n_local = sh->n_households, n_total = sh->n_households_total;
    int32_t *fidx = GT_MALLOC(sizeof(int32_t) * (size_t)(n_local > 0 ? n_local : 1));
    memcpy(fidx, sh->index, sizeof(int32_t) * (size_t)n_local);
    int64_t rows = gt_dist_sum_i64(sh->n_rows, comm);
    out->n_rows = rows;
    out->n_items = n_total;
    int64_t stride = gt_nilm_eval_stride(ec, rows);
    out->stride = stride;
    gt_dataset *ds = eval_dataset(sh, em, stride, comm);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) out->windows[s] = gt_dataset_n_windows_global(ds, (gt_split)s);
    gt_dataset_screen_summary(ds, comm, &out->screen);
    if (gt_nilm_eval_cfg(ec)->usage) {
        int n_usage = 0;
        out->usage = gt_dataset_usage(ds, comm, &n_usage);
    }

    out_rule rule;
    rule_init(ds, em, ec, out->meta, A, stride, comm, &rule);
    memcpy(out->gate, rule.gate, sizeof out->gate);
    out->gated = em->m->cfg.gated;
    out->filtered = rule.filter;
    memcpy(out->fill_s, rule.fill_s, sizeof out->fill_s);
    memcpy(out->min_on_s, rule.min_on_s, sizeof out->min_on_s);
    sample_buf smp = {.file_index = -1};
    eval_split(ds, em, out->meta, A, GT_SPLIT_TEST, stride, &rule, n_local, fidx, n_total, sample_csv ? &smp : NULL,
               comm, &out->test);
    eval_split(ds, em, out->meta, A, GT_SPLIT_HOLDOUT, stride, &rule, n_local, fidx, n_total, NULL, comm, &out->holdout);
    if (sample_csv) write_sample(sample_csv, &smp, out->meta, A, comm);
    free(smp.rows);
    gt_dataset_free(ds);
    free(fidx);
    gt_nilm_model_free(&ens);
}

void gt_nilm_eval_free(gt_nilm_eval *e) {
    free(e->usage);
    e->usage = NULL;
}
