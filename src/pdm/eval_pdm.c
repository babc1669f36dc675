/* pdm/eval_pdm.c: alarms and event metrics of the PdM detectors (the LSTM
 * next-step predictor and the normal-behaviour model): per turbine, machine
 * type and condition over the evaluation rows, and the CARE to Compare
 * authors' protocol per /care_events entry (see pdm_impl.h, eval.h,
 * docs/evaluation.md). The scores come from pdm_score.c, the threshold from
 * pdm_calib.c. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "data/dataset.h"
#include "dist/reduce.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"
#include "io/h5.h"
#include "io/read.h"

void gt_pdm_eval_free(gt_pdm_eval *e) {
    if (!e) return;
    free(e->turbines);
    e->turbines = NULL;
    free(e->care_events);
    e->care_events = NULL;
}

/* legend names (rank 0), fallbacks "<what>_<k>" */
static void read_legend(const char *path, const char *ds_name, const char *what, char names[][GT_FORMAT_NAME_LEN],
                        int n) {
    for (int k = 0; k < n; k++) snprintf(names[k], GT_FORMAT_NAME_LEN, "%s_%d", what, k);
    char why[1024];
    hid_t f = gt_h5_open_serial(path, why, sizeof why); /* checked by gt_io_open before */
    if (f < 0) return;
    if (H5Lexists(f, "legend", H5P_DEFAULT) > 0 && H5Lexists(f, ds_name, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, ds_name, H5P_DEFAULT), sp = H5Dget_space(d);
        hssize_t m = H5Sget_simple_extent_npoints(sp);
        char *buf = GT_CALLOC((size_t)(m > 0 ? m : 1), GT_FORMAT_NAME_LEN);
        hid_t st = H5Tcopy(H5T_C_S1);
        H5Tset_size(st, GT_FORMAT_NAME_LEN);
        H5Tset_strpad(st, H5T_STR_NULLTERM);
        if (m > 0 && H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
            for (int k = 0; k < n && k < m; k++)
                if (buf[(size_t)k * GT_FORMAT_NAME_LEN])
                    snprintf(names[k], GT_FORMAT_NAME_LEN, "%.31s", buf + (size_t)k * GT_FORMAT_NAME_LEN);
        H5Tclose(st);
        free(buf);
        H5Sclose(sp);
        H5Dclose(d);
    }
    H5Fclose(f);
}

enum { PACC_K = sizeof(gt_pdm_acc) / sizeof(double) };

/* Collective: which condition codes mark the rows of an event dataset's
 * prediction part (/legend/condition names "prediction" and
 * "train_and_prediction", written by `import care`: the grid rows where a
 * CSV row with train_test = prediction lies). code_in[c] = 1 for those; every
 * code 1 when the legend names neither (every grid row then counts). */
static void care_pred_codes(const char *data_file, MPI_Comm comm, uint8_t code_in[256]) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    memset(code_in, 0, 256);
    if (rank == 0) {
        char(*names)[GT_FORMAT_NAME_LEN] = GT_MALLOC(256 * sizeof *names);
        read_legend(data_file, "legend/condition", "condition", names, 256);
        int any = 0;
        for (int c = 0; c < 256; c++)
            any |= code_in[c] = !strcmp(names[c], "prediction") || !strcmp(names[c], "train_and_prediction");
        if (!any) memset(code_in, 1, 256);
        free(names);
    }
    gt_dist_bcast_bytes(code_in, 256, comm);
}

/* Collective: the authors' CARE protocol (gt_care_event_score) for every
 * /care_events entry: alarm runs over all rows of its turbine, normal_index =
 * rows outside the status spans (/events of a kind other than 1, the
 * anomaly events), every row on Wind Farm A (gt_care_ignores_normal_index);
 * the rows scored are those of the dataset's file (care_pred_codes: a grid row
 * without a prediction row of the CSV is left out, as the reference never
 * sees it); per-event results summed over ranks in file order (each entry is
 * filled by the rank holding its turbine), the same on every rank. */
enum { CE_REC = 9 };
static void care_protocol(const char *data_file, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const float *score,
                          const int64_t *ce, int64_t n_ce, int64_t only_event, const gt_eval_config *ec, double thr,
                          MPI_Comm comm, gt_pdm_eval *out) {
    out->has_care = ce != NULL;
    if (!ce) {
        gt_care_protocol_final(NULL, 0, &out->care_protocol);
        out->care_protocol.reason = "the file has no /care_events (import a CARE to Compare farm with `import care`)";
        return;
    }
    uint8_t code_in[256];
    care_pred_codes(data_file, comm, code_in);
    double *rec = GT_CALLOC((size_t)(CE_REC * n_ce + 1), sizeof(double));
    for (int k = 0; k < sh->n_turbines; k++) {
        int64_t n = ti[k].n;
        uint8_t *pred = NULL, *normal = NULL, *in_file = NULL;
        for (int64_t i = 0; i < n_ce; i++) {
            const int64_t *q = ce + GT_CARE_EVENT_K * i;
            if (q[0] != sh->index[k] || ti[k].skip || n <= 0) continue;
            if (only_event >= 0 && q[1] != only_event) continue; /* data.care_event: that event dataset only */
            if (!pred) {
                pred = GT_CALLOC((size_t)n, 1);
                normal = GT_MALLOC((size_t)n);
                memset(normal, 1, (size_t)n);
                gt_pdm_alarm_mask(score + ti[k].r0, n, thr, ec, ti[k].rate, pred);
                for (int e = 0; e < sh->n_events; e++) {
                    if (sh->event_turbine[e] != k || sh->events[e].code == 1) continue;
                    int64_t a = sh->events[e].start_row, z = sh->events[e].end_row > n ? n : sh->events[e].end_row;
                    for (int64_t r = a < 0 ? 0 : a; r < z; r++) normal[r] = 0;
                }
                if (gt_care_ignores_normal_index(sh->farm[k])) memset(normal, 1, (size_t)n); /* Wind Farm A */
                in_file = GT_MALLOC((size_t)n);
                memset(in_file, 1, (size_t)n);
                for (int s = 0; s < sh->n_segments; s++) {
                    if (sh->segment_turbine[s] != k) continue;
                    const int32_t code = sh->segments[s].code;
                    int64_t a = sh->segments[s].start_row, z = sh->segments[s].end_row > n ? n : sh->segments[s].end_row;
                    for (int64_t r = a < 0 ? 0 : a; r < z; r++) in_file[r] = code >= 0 && code < 256 && code_in[code];
                }
            }
            int64_t ps = q[3], pe = q[4] > n ? n : q[4];
            if (ps < 0) ps = 0;
            if (pe <= ps) continue;
            /* the dataset's own rows, in order: pred, normal and the event bounds on them */
            uint8_t *p1 = GT_MALLOC((size_t)(pe - ps)), *n1 = GT_MALLOC((size_t)(pe - ps));
            int64_t m = 0, es = 0, ee = 0, in_train = 0; /* in_train: its rows inside the training or validation split */
            for (int64_t r = ps; r < pe; r++) {
                if (r == q[5]) es = m;
                if (r == q[6]) ee = m;
                if (!in_file[r]) continue;
                if (!ti[k].holdout && r >= ti[k].a0 && r < ti[k].b2) in_train++;
                p1[m] = pred[r], n1[m] = normal[r], m++;
            }
            if (q[5] >= pe) es = m;
            if (q[6] >= pe) ee = m;
            if (q[5] < ps) es = q[5] - ps; /* an event starting before the prediction part: clipped by the score */
            if (q[6] < ps) ee = q[6] - ps;
            gt_care_event_eval r;
            gt_care_event_score(p1, n1, m, es, ee, q[2] == 1, GT_CARE_CRITICALITY_THRESHOLD, &r);
            free(p1), free(n1);
            double *d = rec + CE_REC * i;
            d[0] = 1, d[1] = r.detected, d[2] = r.max_criticality, d[3] = r.coverage, d[4] = r.accuracy;
            d[5] = r.earliness, d[6] = (double)in_train, d[7] = (double)m, d[8] = r.anomaly;
        }
        free(pred), free(normal), free(in_file);
    }
    gt_dist_allreduce_sum_d(rec, (int)(CE_REC * n_ce), comm);
    out->n_care_events = (int)n_ce;
    out->care_events = GT_CALLOC((size_t)n_ce, sizeof(gt_pdm_care_event));
    gt_care_event_eval *ev = GT_CALLOC((size_t)n_ce, sizeof(gt_care_event_eval));
    int m = 0;
    for (int64_t i = 0; i < n_ce; i++) {
        const int64_t *q = ce + GT_CARE_EVENT_K * i;
        const double *d = rec + CE_REC * i;
        gt_pdm_care_event *c = &out->care_events[i];
        c->event_id = q[1];
        c->file_index = (int32_t)q[0];
        c->evaluated = d[0] > 0;
        c->n_rows = (int64_t)d[7];
        c->rows_in_training = (int64_t)d[6];
        c->r.anomaly = q[2] == 1;
        c->r.coverage = c->r.accuracy = c->r.earliness = c->r.max_criticality = NAN;
        if (!c->evaluated) continue;
        c->r.detected = d[1] > 0, c->r.max_criticality = d[2], c->r.coverage = d[3], c->r.accuracy = d[4];
        c->r.earliness = d[5];
        ev[m++] = c->r;
    }
    gt_care_protocol_final(ev, m, &out->care_protocol);
    free(ev), free(rec);
}

/* Collective: event kinds that are operating-status periods (/legend/event_kind "status_*", CARE's derated,
 * service, downtime, other): labelled rows, not anomalies; anomaly_recall leaves them out */
static void read_status_kinds(const char *data_file, MPI_Comm comm, uint8_t status_kind[256]) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    memset(status_kind, 0, 256);
    if (rank == 0) {
        char(*kinds)[GT_FORMAT_NAME_LEN] = GT_MALLOC(256 * sizeof *kinds);
        read_legend(data_file, "legend/event_kind", "kind", kinds, 256);
        for (int c = 1; c < 256; c++) status_kind[c] = strncmp(kinds[c], "status_", 7) == 0;
        free(kinds);
    }
    gt_dist_bcast_bytes(status_kind, 256, comm);
}

/* Collective: the number of condition codes seen in the segments (1..GT_PDM_MAX_GROUPS) */
static int count_conditions(const gt_pdm_shard *sh, MPI_Comm comm) {
    int ncond = 0;
    for (int i = 0; i < sh->n_segments; i++)
        if (sh->segments[i].code + 1 > ncond) ncond = sh->segments[i].code + 1;
    ncond = gt_dist_max_int(ncond, comm);
    if (ncond > GT_PDM_MAX_GROUPS) ncond = GT_PDM_MAX_GROUPS;
    if (ncond < 1) ncond = 1;
    return ncond;
}

/* turbine k's alarms and event metrics over its evaluation rows into rk + 4 (overall, then per condition);
 * returns 0 when it has none (skipped, or no evaluation row) */
static int turbine_events(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, int k, const float *score,
                          const gt_eval_config *ec, const uint8_t *status_kind, double thr, int ncond, double *rk) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    int64_t lo = ti[k].e0, n = ti[k].skip ? 0 : ti[k].e1 - lo;
    if (n <= 0) return 0;
    int32_t *cond = GT_MALLOC(sizeof(int32_t) * (size_t)n);
    for (int64_t r = 0; r < n; r++) cond[r] = -1;
    for (int i = 0; i < sh->n_segments; i++) {
        if (sh->segment_turbine[i] != k) continue;
        int64_t a = sh->segments[i].start_row - lo, z = sh->segments[i].end_row - lo;
        if (a < 0) a = 0;
        if (z > n) z = n;
        for (int64_t r = a; r < z; r++) cond[r] = sh->segments[i].code;
    }
    gt_alarm_run *ev = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(sh->n_events + 1));
    int ne = 0;
    for (int i = 0; i < sh->n_events; i++)
        if (sh->event_turbine[i] == k && sh->events[i].end_row > lo && sh->events[i].start_row < lo + n) {
            const int32_t code = sh->events[i].code;
            ev[ne++] = (gt_alarm_run){sh->events[i].start_row - lo,
                                      (sh->events[i].end_row < lo + n ? sh->events[i].end_row : lo + n) - lo,
                                      code >= 0 && code < 256 ? status_kind[code] : 0};
        }
    double rate = ti[k].rate;
    int64_t min_len = (int64_t)llround(pcfg->min_duration_s * rate),
            gap = (int64_t)llround(pcfg->merge_gap_s * rate);
    gt_pdm_score_rows(score + ti[k].r0 + lo, sh->labels + ti[k].r0 + lo, cond, n, ev, ne, thr, min_len, gap, rate,
                      (gt_pdm_acc *)(rk + 4), (gt_pdm_acc *)(rk + 4 + PACC_K), ncond, NULL);
    free(cond), free(ev);
    return 1;
}

/* the gathered turbine records all [NT][REC] into out's turbines, overall, per machine type and per condition
 * sums; returns the number of machine types */
static int merge_turbines(const double *all, int REC, int NT, int ncond, const gt_eval_model *ems, gt_pdm_eval *out) {
    int ntype = 1;
    const gt_data_filter *conds = &gt_pdm_data_cfg(&ems[0].data)->conditions;
    for (int f = 0; f < NT; f++) {
        const double *rf = all + (size_t)f * REC;
        gt_pdm_turbine_eval *te = &out->turbines[f];
        te->id = (int64_t)rf[0], te->file_index = f, te->farm = (int32_t)rf[1], te->machine_type = (int32_t)rf[2];
        te->holdout = (int32_t)rf[3] & 1;
        te->skipped = ((int32_t)rf[3] & 2) != 0;
        memcpy(&te->acc, rf + 4, sizeof(gt_pdm_acc));
        if (conds->n > 0) { /* data.conditions: only the selected conditions count */
            memset(&te->acc, 0, sizeof te->acc);
            for (int c = 0; c < ncond; c++)
                if (gt_data_filter_has(conds, c))
                    gt_pdm_acc_merge(&te->acc, (const gt_pdm_acc *)(rf + 4 + PACC_K * (1 + c)));
        }
        gt_pdm_acc_merge(&out->acc, &te->acc);
        int ty = te->machine_type;
        if (ty >= 0 && ty < GT_PDM_MAX_GROUPS) {
            gt_pdm_acc_merge(&out->by_type[ty], &te->acc);
            if (ty + 1 > ntype) ntype = ty + 1;
        }
        for (int c = 0; c < ncond; c++)
            gt_pdm_acc_merge(&out->by_cond[c], (const gt_pdm_acc *)(rf + 4 + PACC_K * (1 + c)));
    }
    return ntype;
}

void gt_eval_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                 const char *scores_csv, MPI_Comm comm, gt_pdm_eval *out) {
    memset(out, 0, sizeof *out);
    GT_CHECK(n_models >= 1 && n_models <= GT_EVAL_MAX_MODELS, GT_EXIT_USAGE, "eval: 1..%d models", GT_EVAL_MAX_MODELS);
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &out->n_ranks));
    out->n_models = n_models;
    out->pdm_target = gt_pdm_data_cfg(&ems[0].data)->target;
    for (int j = 1; j < n_models; j++)
        if (gt_pdm_data_cfg(&ems[j].data)->target != out->pdm_target) out->pdm_target = -1;
    const double signal_limit = gt_pdm_data_cfg(&ems[0].data)->signal_limit;
    gt_pdm_shard *sh = gt_pdm_shard_read_opts(data_file, &(gt_read_opts){signal_limit}, comm);
    gt_pdm_check_filters(data_file, sh, &ems[0].data, comm); /* the run's filters on this file */
    const int nt = sh->n_turbines, NT = sh->n_turbines_total;
    int64_t rows = gt_dist_sum_i64(sh->n_rows, comm);
    out->n_rows = rows;
    gt_data_config dsel = ems[0].data; /* data.care_event: one event dataset's parts (the authors' protocol) */
    gt_pdm_care_select(&dsel, data_file, comm);
    gt_pdm_tinfo *ti = gt_pdm_plan_turbines(sh, &dsel, ec, gt_pdm_max_window(ems, n_models));
    int64_t n_ce = 0;
    int64_t *ce = gt_care_events_read(data_file, comm, &n_ce);
    /* the CARE protocol scores every event dataset's prediction part, wherever it lies: every row gets a score */
    int16_t *top;
    gt_pdm_env_out env;
    float *score = gt_pdm_scores(data_file, sh, ti, ems, n_models, ec, ce != NULL, comm, &out->threshold,
                                 &out->quantile_value, &out->n_val_scores, &out->level, &top, &env);
    gt_pdm_envelope_summary(&env, sh, comm, &out->envelope, rank == 0 ? "eval" : NULL);

    /* conditions: codes seen in the segments */
    const int ncond = count_conditions(sh, comm);
    out->n_conds = ncond;

    /* per turbine: [id, farm, type, holdout, acc, by_cond[ncond]] */
    const int REC = 4 + PACC_K * (1 + ncond);
    double *rec = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * REC, sizeof(double));
    double best_key = -1; /* plot turbine: most events, then lowest file index */
    int best_k = -1;
    uint8_t status_kind[256];
    read_status_kinds(data_file, comm, status_kind);
    for (int k = 0; k < nt; k++) {
        double *rk = rec + (size_t)k * REC;
        rk[0] = (double)sh->id[k], rk[1] = sh->farm[k], rk[2] = sh->machine_type[k];
        rk[3] = ti[k].holdout_split + 2 * ti[k].skip;
        if (!turbine_events(sh, ti, k, score, ec, status_kind, out->threshold, ncond, rk)) continue;
        double key = ((gt_pdm_acc *)(rk + 4))->n_events * 1e7 + (1e7 - 1 - sh->index[k]);
        if (key > best_key) best_key = key, best_k = k;
    }
    double *all = GT_MALLOC(sizeof(double) * (size_t)NT * REC + 8);
    gt_eval_gather_items(nt, sh->index, rec, REC, NT, all, comm);
    out->n_turbines = NT;
    out->turbines = GT_CALLOC((size_t)(NT > 0 ? NT : 1), sizeof(gt_pdm_turbine_eval));
    const int ntype = merge_turbines(all, REC, NT, ncond, ems, out);
    out->n_types = ntype;
    gt_pdm_metrics_from_acc(&out->acc, &out->overall);
    const int64_t care_id = gt_pdm_data_cfg(&dsel)->care.event_id;
    care_protocol(data_file, sh, ti, score, ce, n_ce, care_id, ec, out->threshold, comm, out);
    free(ce);
    if (rank == 0) {
        read_legend(data_file, "legend/machine_type", "type", out->type_names, ntype);
        read_legend(data_file, "legend/condition", "condition", out->cond_names, ncond);
    }

    /* score trace of one evaluation turbine for the report */
    if (scores_csv) {
        double g = gt_dist_max_d(best_key, comm);
        if (g >= 0 && best_k >= 0 && g == best_key)
            gt_pdm_write_trace(scores_csv, sh, ti, best_k, score, top, out->threshold);
    }
    free(rec), free(all), free(score), free(top), free(ti);
    gt_pdm_shard_free(sh);
}

