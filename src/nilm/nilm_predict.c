/* nilm/nilm_predict.c: NILM per-row prediction to HDF5 (gt_predict_nilm, eval.h). */
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

/* The state filter over household h's rows of pred (filtered in place) and state; NaN rows are breaks. col,
 * brk: scratch of the household's row count. */
static void filter_household_states(const gt_nilm_shard *sh, const nilm_model *em, const out_rule *rule, int h,
                                    float *pred, const float *wraw, uint8_t *state, uint8_t *col, uint8_t *brk) {
    const int A = sh->n_appliances;
    const int64_t r0 = sh->row_offset[h], n = sh->row_offset[h + 1] - r0;
    float *ph = pred + (size_t)r0 * A;
    const int a0 = __builtin_ctz(em->covered); /* an appliance predicted: NaN there = an edge or bad row */
    for (int64_t i = 0; i < n; i++)
        brk[i] = isnan(ph[(size_t)i * A + a0]) || (i > 0 && isnan(ph[(size_t)(i - 1) * A + a0]));
    for (int a = 0; a < A; a++) {
        for (int64_t i = 0; i < n; i++) col[i] = ph[(size_t)i * A + a] > sh->meta[a].on_power_w;
        gt_nilm_state_filter(col, brk, n, sh->period_s[h], rule->fill_s[a], rule->min_on_s[a]);
        for (int64_t i = 0; i < n; i++) {
            float *v = ph + (size_t)i * A + a;
            if (!isnan(*v))
                *v = (float)filtered_w(*v, wraw[(size_t)(r0 + i) * A + a], *v > sh->meta[a].on_power_w, col[i]);
            state[(size_t)(r0 + i) * A + a] = col[i];
        }
    }
}

/* The root attributes of the predictions file: the model(s), the source and the rules applied. */
static void write_prediction_attrs(gt_eval_out *o, const nilm_model *em, const gt_eval_config *ec, const out_rule *rule,
                                   const char *data_file) {
    const gt_model *m = em->m;
    const gt_nilm_data_config *nc = gt_nilm_data_cfg(&em->data);
    const int W = m->cfg.window, F = nc->time_features;
    gt_h5_attr_str(o->f, "kind", "nilm_predictions");
    gt_h5_attr_i64(o->f, "schema_version", 1);
    gt_h5_attr_str(o->f, "model", gt_model_kind_name(m->cfg.kind));
    gt_eval_out_attr_models(o, "model_source", em->ems, em->n, 0); /* the run(s) */
    gt_h5_attr_i64(o->f, "n_models", em->n); /* > 1: the ensemble mean of eval.models */
    gt_h5_attr_str(o->f, "appliances", nc->appliances[0] ? nc->appliances : "all"); /* others: NaN */
    gt_h5_attr_str(o->f, "source", data_file);
    gt_h5_attr_i64(o->f, "window", W);
    gt_h5_attr_str(o->f, "padding",
                   gt_nilm_eval_cfg(ec)->pad_edges ? "edge (first/last sample repeated)" : "nan (edge rows are NaN)");
    gt_h5_attr_str(o->f, "head", m->cfg.gated ? "gated" : "power");
    gt_h5_attr_i64(o->f, "off_below_on", rule->off_below_on);
    gt_h5_attr_i64(o->f, "state_filter", rule->filter); /* 1: /on holds the filtered states */
    gt_h5_attr_i64(o->f, "time_features", F); /* input channels from the local time (data.time_features) */
    gt_h5_attr_str(o->f, "timezone", F && nc->timezone[0] ? nc->timezone : "UTC");
}

/* The per-household and per-appliance tables (rank 0 holds the global offsets). */
static void write_prediction_tables(gt_eval_out *o, const gt_nilm_shard *sh, int gated, const out_rule *rule,
                                    MPI_Comm comm) {
    const int A = sh->n_appliances, n_local = sh->n_households;
    const int H = sh->n_households_total;
    int64_t *ids_local = GT_MALLOC(sizeof(int64_t) * (size_t)(n_local > 0 ? n_local : 1));
    for (int h = 0; h < n_local; h++) ids_local[h] = sh->id[h];
    double *idl = GT_MALLOC(sizeof(double) * (size_t)(n_local > 0 ? n_local : 1)), *ida = GT_MALLOC(sizeof(double) * (size_t)H + 8);
    for (int h = 0; h < n_local; h++) idl[h] = (double)ids_local[h];
    gt_eval_gather_items(n_local, sh->index, idl, 1, H, ida, comm);
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)H + 8);
    for (int f = 0; f < H; f++) ids[f] = (int64_t)ida[f];
    gt_eval_out_table(o, "households/id", H5T_NATIVE_INT64, H5T_STD_I64LE, H, 0, ids);
    gt_eval_out_table(o, "households/row_offset", H5T_NATIVE_INT64, H5T_STD_I64LE, H + 1, 0, o->goff);
    if (gated) /* the on-logit thresholds used (0: probability 0.5) */
        gt_eval_out_table(o, "appliance_meta/gate_logit", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, 0, rule->gate);
    if (rule->filter) { /* the state filter's calibrated durations (eval.calibrate_filter) */
        gt_eval_out_table(o, "appliance_meta/fill_s", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, 0, rule->fill_s);
        gt_eval_out_table(o, "appliance_meta/min_on_s", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, 0, rule->min_on_s);
    }
    char *names = GT_CALLOC((size_t)A, GT_FORMAT_NAME_LEN);
    float *onp = GT_MALLOC(sizeof(float) * (size_t)A), *maxp = GT_MALLOC(sizeof(float) * (size_t)A);
    for (int a = 0; a < A; a++) {
        snprintf(names + (size_t)a * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN, "%s", sh->meta[a].name);
        onp[a] = sh->meta[a].on_power_w;
        maxp[a] = sh->meta[a].max_power_w;
    }
    hid_t st = gt_h5_str_type(GT_FORMAT_NAME_LEN);
    gt_eval_out_table(o, "appliance_meta/name", st, st, A, 0, names);
    H5Tclose(st);
    gt_eval_out_table(o, "appliance_meta/on_power_w", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, 0, onp);
    gt_eval_out_table(o, "appliance_meta/max_power_w", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, 0, maxp);
    free(names), free(onp), free(maxp), free(ids), free(ida), free(idl), free(ids_local);
}

void gt_predict_nilm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                     const char *out_path, MPI_Comm comm) {
    const double power_limit_w = gt_nilm_data_cfg(&ems[0].data)->power_limit_w;
    gt_nilm_shard *sh = gt_nilm_shard_read_opts(data_file, &(gt_read_opts){power_limit_w}, comm);
    const int A = sh->n_appliances;
    GT_CHECK(A <= GT_DATA_MAX_TARGETS, GT_EXIT_DATA, "%s: %d appliances (at most %d)", data_file, A,
             GT_DATA_MAX_TARGETS);
    nilm_model ens = gt_nilm_model_of(ems, n_models, sh->meta, A);
    const nilm_model *em = &ens;
    gt_nilm_check_filters(data_file, sh, &em->data, comm); /* the run's data.items on this file */
    int64_t rows = gt_dist_sum_i64(sh->n_rows, comm);
    const int pad_edges = gt_nilm_eval_cfg(ec)->pad_edges;
    out_rule rule; /* the gated head's thresholds as `eval` calibrates them on this file */
    gt_nilm_make_rule(data_file, em, ec, gt_nilm_eval_stride(ec, rows), comm, &rule);
    gt_model *m = em->m;
    const gt_norm_stats *ns = &em->ns;
    const int W = m->cfg.window, B = m->cfg.max_batch, half = W / 2;
    const double m0 = ns->mean[0], inv0 = 1.0 / ns->std[0];
    const int n_local = sh->n_households;
    /* inputs as gt_dataset_fill lays them out: aggregate [+ time features], (C, W) or (W, C) */
    const int F = gt_nilm_data_cfg(&em->data)->time_features, C = 1 + F, last = gt_model_input_channels_last(m->cfg.kind);
    GT_CHECK(m->cfg.n_in == C, GT_EXIT_INTERNAL, "predict: the model has %d input channels, the data %d", m->cfg.n_in, C);
    float *tfeat = NULL;
    if (F) {
        tfeat = GT_MALLOC(sizeof(float) * (size_t)(sh->n_rows > 0 ? sh->n_rows : 1) * (size_t)F);
        gt_nilm_time_features(sh->timestamps, sh->n_rows, F, gt_nilm_data_cfg(&em->data)->timezone, tfeat);
    }
    float *pred = GT_MALLOC(sizeof(float) * (size_t)(sh->n_rows > 0 ? sh->n_rows : 1) * (size_t)A);
    /* the state filter: raw power per row, one appliance's states of a household */
    float *wraw = rule.filter ? GT_MALLOC(sizeof(float) * (size_t)(sh->n_rows > 0 ? sh->n_rows : 1) * (size_t)A) : NULL;
    uint8_t *col = NULL, *brk = NULL, *state = rule.filter ? GT_CALLOC((size_t)(sh->n_rows > 0 ? sh->n_rows : 1) * (size_t)A, 1) : NULL;
    uint8_t *bad = GT_MALLOC((size_t)B);
    int64_t *nrows = GT_MALLOC(sizeof(int64_t) * (size_t)(n_local > 0 ? n_local : 1));
    float *aggf = NULL; /* one household's aggregate with its short holes filled */
    for (int h = 0; h < n_local; h++) {
        const int64_t r0 = sh->row_offset[h], n = sh->row_offset[h + 1] - r0;
        nrows[h] = n;
        /* the model input as in train and eval: short holes filled (data.fill_max_s); /aggregate stays raw */
        aggf = GT_REALLOC(aggf, sizeof(float) * (size_t)(n > 0 ? n : 1));
        memcpy(aggf, sh->aggregate + r0, sizeof(float) * (size_t)n);
        gt_nilm_fill_holes(aggf, n, gt_nilm_fill_max_rows(&em->data, sh->period_s[h]));
        const float *agg = aggf;
        /* rows i0 .. i0 + nb - 1 in one micro-batch, always starting at the household's row 0 */
        for (int64_t i0 = 0; i0 < n; i0 += B) {
            int nb = (int)(n - i0 < B ? n - i0 : B);
            for (int b = 0; b < nb; b++) {
                int64_t st = i0 + b - half;
                float *xb = m->x + (size_t)b * W * C;
                bad[b] = 0;
                for (int t = 0; t < W; t++) {
                    int64_t j = st + t;
                    if (j < 0 || j >= n) {
                        if (!pad_edges) {
                            bad[b] = 1;
                            break;
                        }
                        j = j < 0 ? 0 : n - 1;
                    }
                    float v = agg[j];
                    if (!isfinite(v)) {
                        bad[b] = 1;
                        break;
                    }
                    xb[gt_nilm_x_offset(last, W, C, t, 0)] = (float)(((double)v - m0) * inv0);
                    for (int f = 0; f < F; f++) xb[gt_nilm_x_offset(last, W, C, t, 1 + f)] = tfeat[(r0 + j) * F + f];
                }
                if (bad[b]) memset(xb, 0, sizeof(float) * (size_t)W * C);
            }
            gt_nilm_forward(em, nb);
            for (int b = 0; b < nb; b++)
                for (int a = 0; a < A; a++) {
                    const int none = bad[b] || !(em->covered >> a & 1u); /* no member trained on a: NaN */
                    pred[(size_t)(r0 + i0 + b) * A + a] = none ? NAN : (float)predict_w(m, ns, sh->meta, A, b, a, &rule);
                    if (wraw) wraw[(size_t)(r0 + i0 + b) * A + a] = none ? NAN : (float)raw_w(m, ns, sh->meta, b, a);
                }
        }
        if (!wraw || n == 0) continue;
        /* the state filter over the household's rows; NaN rows are breaks */
        col = GT_REALLOC(col, (size_t)n), brk = GT_REALLOC(brk, (size_t)n);
        filter_household_states(sh, em, &rule, h, pred, wraw, state, col, brk);
    }
    gt_eval_out o;
    gt_eval_out_open(&o, out_path, n_local, sh->index, nrows, sh->n_households_total, comm);
    write_prediction_attrs(&o, em, ec, &rule, data_file);
    gt_eval_out_rows(&o, "timestamps", H5T_NATIVE_INT64, H5T_STD_I64LE, 0, sh->timestamps);
    gt_eval_out_rows(&o, "aggregate", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, 0, sh->aggregate);
    gt_eval_out_rows(&o, "predictions", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, A, pred);
    if (state) gt_eval_out_rows(&o, "on", H5T_NATIVE_UINT8, H5T_STD_U8LE, A, state);
    write_prediction_tables(&o, sh, m->cfg.gated, &rule, comm);
    const int H = sh->n_households_total;
    gt_eval_out_close(&o);
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    if (rank == 0)
        GT_INFO("predict: wrote %s: %d households, %d appliances, window %d (%s edges)", out_path, H, A, W,
                pad_edges ? "replicated" : "NaN");
    free(pred), free(wraw), free(state), free(col), free(brk), free(bad), free(nrows), free(tfeat), free(aggf);
    gt_nilm_shard_free(sh);
    gt_nilm_model_free(&ens);
}
