/* pdm/pdm_rows.c: the rows of a turbine the PdM task works with: its item
 * filters checked against the file, the rows in condition segments, the rows
 * a fit leaves out, a turbine's own statistics, the imputation of missing
 * samples and the CARE event dataset's parts (data.care_event; see pdm.h,
 * pdm_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "data/dataset_impl.h"
#include "io/kind_pdm.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"

void gt_pdm_check_filters(const char *file, const gt_pdm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    const int nt = sh->n_turbines;
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
    int64_t *v = GT_MALLOC(sizeof(int64_t) * (size_t)((nt > sh->n_segments ? nt : sh->n_segments) + 1));
    gt_data_filter_check c = {"data.items", "turbine with id", &cfg->items, sh->id, nt, NULL, 0, 0};
    gt_data_filter_check_run(file, &c, comm);
    for (int k = 0; k < nt; k++) v[k] = sh->farm[k];
    c = (gt_data_filter_check){"data.farms", "farm", &pc->farms, v, nt, NULL, 0, 0};
    gt_data_filter_check_run(file, &c, comm);
    if (pc->machine_types.n > 0) {
        int n_leg = 0; /* names for the message only: a type no turbine has selects nothing */
        char *leg = rank == 0 ? gt_legend_read(file, "machine_type", &n_leg) : NULL;
        for (int k = 0; k < nt; k++) v[k] = sh->machine_type[k];
        c = (gt_data_filter_check){"data.machine_types", "machine type", &pc->machine_types, v, nt, leg, n_leg, 0};
        gt_data_filter_check_run(file, &c, comm);
        free(leg);
    }
    if (pc->conditions.n > 0 || pc->train_conditions.n > 0) {
        /* the codes of the turbines' segments, and those /legend/condition names (a CARE file names
         * train_and_prediction whether or not a farm has such rows: 0,2 stays a valid selection) */
        int n_leg = 0;
        char *leg = rank == 0 ? gt_legend_read(file, "condition", &n_leg) : NULL;
        for (int i = 0; i < sh->n_segments; i++) v[i] = sh->segments[i].code;
        static const char *const keys[2] = {"data.conditions", "data.train_conditions"};
        const gt_data_filter *fs[2] = {&pc->conditions, &pc->train_conditions};
        for (int j = 0; j < 2; j++) {
            c = (gt_data_filter_check){keys[j], "condition code", fs[j], v, sh->n_segments, leg, n_leg, 1};
            gt_data_filter_check_run(file, &c, comm);
        }
        free(leg);
    }
    free(v);
}

void gt_pdm_rows_in(const gt_pdm_shard *sh, int k, const gt_data_filter *f, uint8_t *in) {
    const int64_t n = sh->row_offset[k + 1] - sh->row_offset[k];
    memset(in, f->n == 0, (size_t)n);
    if (f->n == 0) return;
    for (int i = 0; i < sh->n_segments; i++) {
        if (sh->segment_turbine[i] != k || !gt_data_filter_has(f, sh->segments[i].code)) continue;
        int64_t a = sh->segments[i].start_row < 0 ? 0 : sh->segments[i].start_row;
        int64_t b = sh->segments[i].end_row > n ? n : sh->segments[i].end_row;
        if (b > a) memset(in + a, 1, (size_t)(b - a));
    }
}

void gt_pdm_fit_skip(const gt_pdm_shard *sh, int k, const gt_data_config *cfg, uint8_t *skip) {
    const int64_t r0 = sh->row_offset[k], n = sh->row_offset[k + 1] - r0;
    uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
    for (int64_t r = 0; r < n; r++) skip[r] = pc->train_normal_only && sh->labels[r0 + r];
    const gt_data_filter *f[2] = {&pc->conditions, &pc->train_conditions};
    for (int j = 0; j < 2; j++) {
        if (f[j]->n == 0) continue;
        gt_pdm_rows_in(sh, k, f[j], in);
        for (int64_t r = 0; r < n; r++) skip[r] |= !in[r];
    }
    free(in);
}

void gt_pdm_item_norm(const float *sig, const uint8_t *skip, int64_t b1, int C, const gt_norm_stats *glob,
                       gt_norm_stats *out) {
    out->n = C;
    for (int c = 0; c < C; c++) {
        int64_t cnt = 0;
        double sum = 0, m2 = 0;
        for (int64_t i = 0; i < b1; i++) { /* pass 0: the mean */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            cnt++;
            sum += v;
        }
        if (cnt < GT_PDM_ITEM_NORM_MIN) { /* no rows of its own: the statistics of all turbines */
            out->mean[c] = glob->mean[c];
            out->std[c] = glob->std[c];
            continue;
        }
        const double mean = sum / (double)cnt;
        for (int64_t i = 0; i < b1; i++) { /* pass 1: squared deviations (no cancellation) */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            m2 += ((double)v - mean) * ((double)v - mean);
        }
        const double sd = sqrt(m2 / (double)cnt), floor_ = 1e-3 * fabs(mean) + 1e-6;
        out->mean[c] = mean;
        out->std[c] = sd > floor_ ? sd : floor_;
    }
}

int64_t gt_pdm_impute(float *x, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) x[i] = 0.0f, k++;
    return k;
}

void gt_pdm_care_select(gt_data_config *dc, const char *path, MPI_Comm comm) {
    gt_pdm_data_config *cfg = gt_pdm_data_cfg_set(dc);
    memset(&cfg->care, 0, sizeof cfg->care);
    cfg->care.event_id = -1;
    if (cfg->care_event < 0) return;
    int64_t n = 0;
    int64_t *ce = gt_care_events_read(path, comm, &n); /* the same table on every rank: the same verdict */
    GT_CHECK(ce != NULL, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: the file has no /care_events (import a CARE to Compare farm with "
             "`gridtrain import care`)", path, (long long)cfg->care_event);
    const int64_t *q = NULL;
    for (int64_t i = 0; i < n && !q; i++)
        if (ce[GT_CARE_EVENT_K * i + 1] == cfg->care_event) q = ce + GT_CARE_EVENT_K * i;
    if (!q) {
        char ids[256] = "";
        size_t l = 0;
        for (int64_t i = 0; i < n && l + 24 < sizeof ids; i++)
            l += (size_t)snprintf(ids + l, sizeof ids - l, "%s%lld", i ? ", " : "",
                                  (long long)ce[GT_CARE_EVENT_K * i + 1]);
        if (l + 24 >= sizeof ids) snprintf(ids + l, sizeof ids - l, ", ...");
        free(ce);
        GT_FAIL(GT_EXIT_USAGE, "%s: data.care_event = %lld: no such event dataset in /care_events (it has %s)", path,
                (long long)cfg->care_event, ids);
    }
    gt_pdm_care_sel s = {q[1], (int32_t)q[0], q[2] == 1, q[7], q[8], q[3], q[4]};
    free(ce);
    GT_CHECK(s.train_lo >= 0 && s.train_hi > s.train_lo, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: /care_events has no training part for it (a file imported before "
             "train_start_row was stored: import the farm again)", path, (long long)cfg->care_event);
    cfg->care = s;
}

int gt_pdm_item_rows(const gt_data_config *dc, int64_t n_rows, int32_t file_index, gt_data_item_rows *r) {
    const gt_pdm_care_sel *cs = &gt_pdm_data_cfg(dc)->care;
    if (cs->event_id < 0) return 0;
    /* the authors' protocol: one event dataset's training and prediction parts */
    r->excluded = file_index != cs->turbine;
    if (r->excluded) return 1;
    int64_t lo = cs->train_lo < 0 ? 0 : cs->train_lo, hi = cs->train_hi > n_rows ? n_rows : cs->train_hi;
    if (hi < lo) hi = lo;
    double f = dc->split_train / (dc->split_train + dc->split_val);
    int64_t b1 = lo + llround(f * (double)(hi - lo));
    if (b1 > hi) b1 = hi;
    r->lo[GT_SPLIT_TRAIN] = lo, r->hi[GT_SPLIT_TRAIN] = b1;
    r->lo[GT_SPLIT_VAL] = b1, r->hi[GT_SPLIT_VAL] = hi;
    r->lo[GT_SPLIT_TEST] = cs->pred_lo < 0 ? 0 : cs->pred_lo;
    r->hi[GT_SPLIT_TEST] = cs->pred_hi > n_rows ? n_rows : cs->pred_hi;
    if (r->hi[GT_SPLIT_TEST] < r->lo[GT_SPLIT_TEST]) r->hi[GT_SPLIT_TEST] = r->lo[GT_SPLIT_TEST];
    return 1;
}
