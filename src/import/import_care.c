/* import/import_care.c: CARE to Compare (wind SCADA anomaly benchmark), one wind
 * farm directory into a PdM file: one turbine per asset, all of the asset's
 * event datasets merged on one 10-minute clock. See docs/importers.md. The
 * plan of the folder: import_care_plan.c; a turbine's rows: import_care_rows.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/format.h"
#include "import/import_care_impl.h"
#include "io/shard.h"

_Static_assert(GT_IMPORT_MAX_COLS == GT_IO_MAX_COLS, "the importers' channel bound is the format's");

static const char *const kind_names[N_KINDS] = {"normal", "anomaly_event", "status_derated", "status_service",
                                                "status_downtime", "status_other"};
static const char *const cond_names[N_CONDS] = {"train", "prediction", "train_and_prediction", "no_data"};

/* ------------------------------------------------------------ the source --- */

typedef struct {
    int t;
    int64_t pos;
} stream;

static void src_info(void *ctx, int t, gt_pdm_item *item) {
    care_plan *P = ctx;
    item->id = P->t[t].asset;
    item->farm = P->farm;
    item->machine_type = 0;
    item->n_rows = P->n_rows[t];
    item->t0_ms = P->t0[t];
    item->segments = P->seg[t];
    item->n_segments = (int)P->n_seg[t];
    item->events = P->evs[t];
    item->n_events = (int)P->n_evt[t];
}
static void src_info_free(void *ctx, gt_pdm_item *item) { (void)ctx, (void)item; /* owned by the plan */ }
static void *src_begin(void *ctx, int t) {
    stream *s = GT_MALLOC(sizeof *s);
    s->t = t;
    s->pos = 0;
    GT_ASSERT(((care_plan *)ctx)->blob[t] != NULL);
    return s;
}
static int64_t src_next(void *ctx, void *state, int64_t k, float *signals, uint8_t *labels) {
    care_plan *P = ctx;
    stream *s = state;
    int64_t n = P->n_rows[s->t];
    if (k > n - s->pos) k = n - s->pos;
    const float *sig = P->blob[s->t];
    const uint8_t *lab = (const uint8_t *)(sig + (size_t)n * P->C);
    memcpy(signals, sig + (size_t)s->pos * P->C, sizeof(float) * (size_t)k * P->C);
    memcpy(labels, lab + s->pos, (size_t)k);
    s->pos += k;
    return k;
}
static void src_end(void *ctx, void *state) {
    care_plan *P = ctx;
    stream *s = state;
    free(P->blob[s->t]);
    P->blob[s->t] = NULL;
    free(s);
}

/* Collective: the CARE event datasets of every turbine to every rank, in
 * file order (turbine, then event id): *n_out entries of CE_K values (malloc'd). */
static int64_t *share_care_events(const care_plan *P, const int *from, int rank, MPI_Comm comm, int64_t *n_out) {
    const int T = P->T;
    int64_t n_ce_tot = 0;
    for (int i = 0; i < T; i++) n_ce_tot += P->n_ce[i];
    int64_t *ce_all = GT_CALLOC((size_t)(CE_K * n_ce_tot + 1), 8);
    {
        int64_t off = 0;
        for (int i = 0; i < T; i++) {
            if (from[i] == rank) memcpy(ce_all + CE_K * off, P->ce[i], sizeof(int64_t) * CE_K * (size_t)P->n_ce[i]);
            off += P->n_ce[i];
        }
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, ce_all, (int)(CE_K * n_ce_tot), MPI_INT64_T, MPI_SUM, comm));
    }
    *n_out = n_ce_tot;
    return ce_all;
}

/* Collective: the segments and events of every turbine to every rank
 * ([start, end, code] triples at global offsets, summed). */
static void share_spans(care_plan *P, const int *from, int rank, MPI_Comm comm) {
    const int T = P->T;
    for (int pass = 0; pass < 2; pass++) {
        int64_t *cnt = pass ? P->n_evt : P->n_seg;
        gt_io_span **sp = pass ? P->evs : P->seg;
        int64_t tot = 0;
        for (int i = 0; i < T; i++) tot += cnt[i];
        int64_t *buf = GT_CALLOC((size_t)(3 * tot + 1), 8);
        int64_t off = 0;
        for (int i = 0; i < T; i++) {
            if (from[i] == rank)
                for (int64_t k = 0; k < cnt[i]; k++) {
                    buf[3 * (off + k)] = sp[i][k].start_row;
                    buf[3 * (off + k) + 1] = sp[i][k].end_row;
                    buf[3 * (off + k) + 2] = sp[i][k].code;
                }
            off += cnt[i];
        }
        for (int64_t s = 0; s < 3 * tot; s += 1 << 28) {
            int k = (int)(3 * tot - s < (1 << 28) ? 3 * tot - s : (1 << 28));
            MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + s, k, MPI_INT64_T, MPI_SUM, comm));
        }
        off = 0;
        for (int i = 0; i < T; i++) {
            free(sp[i]);
            sp[i] = GT_MALLOC(sizeof(gt_io_span) * (size_t)(cnt[i] + 1));
            for (int64_t k = 0; k < cnt[i]; k++)
                sp[i][k] = (gt_io_span){buf[3 * (off + k)], buf[3 * (off + k) + 1], (int32_t)buf[3 * (off + k) + 2]};
            off += cnt[i];
        }
        free(buf);
    }
}

void gt_import_care(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st) {
    (void)map;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gt_diag d = {0};
    d.strict = o->strict;
    d.max_bad_lines = o->max_bad_lines;
    d.quiet = rank != 0; /* plan warnings are the same on every rank: rank 0 prints them */
    care_plan P;
    gt_care_plan_build(&P, o, &d);
    gt_diag_item_end(&d, o->src, NULL, 0);
    gt_import_agree(comm, &d, 0);
    d.quiet = 0;
    const int T = P.T, C = P.C;
    P.n_rows = GT_CALLOC((size_t)T, 8);
    P.t0 = GT_CALLOC((size_t)T, 8);
    P.n_seg = GT_CALLOC((size_t)T, 8);
    P.n_evt = GT_CALLOC((size_t)T, 8);
    P.n_ce = GT_CALLOC((size_t)T, 8);
    P.ce = GT_CALLOC((size_t)T, sizeof(void *));
    P.seg = GT_CALLOC((size_t)T, sizeof(void *));
    P.evs = GT_CALLOC((size_t)T, sizeof(void *));
    P.blob = GT_CALLOC((size_t)T, sizeof(void *));
    int64_t *w = GT_MALLOC(8 * (size_t)T);
    for (int i = 0; i < T; i++) w[i] = P.t[i].bytes > 0 ? P.t[i].bytes : 1;
    int *from = GT_MALLOC(sizeof(int) * (size_t)T), *to = GT_MALLOC(sizeof(int) * (size_t)T);
    gt_shard_assign(w, T, size, from);
    double tp = gt_now();
    care_stats cs;
    memset(&cs, 0, sizeof cs);
    int err_item = INT_MAX;
    for (int i = 0; i < T; i++) {
        if (from[i] != rank) continue;
        int rc = gt_care_build_turbine(&P, i, o, &d, &cs);
        char item[64]; /* the warnings past the first few of the asset, by kind: one line */
        snprintf(item, sizeof item, "asset %lld", (long long)P.t[i].asset);
        gt_diag_item_end(&d, item, NULL, 0);
        if (rc) {
            err_item = i;
            break;
        }
    }
    double parse_s = gt_now() - tp;
    gt_import_agree(comm, &d, err_item);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_rows, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.t0, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_seg, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_evt, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_ce, T, MPI_INT64_T, MPI_SUM, comm));
    int64_t n_ce_tot = 0;
    int64_t *ce_all = share_care_events(&P, from, rank, comm, &n_ce_tot);
    share_spans(&P, from, rank, comm);
    int64_t loc[9] = {cs.bytes, cs.s.n_lines, cs.s.n_samples, cs.s.n_exact_dup, cs.s.n_conflict, cs.s.n_backward,
                      cs.s.n_backward_far, d.n_warn, cs.s.n_bad_lines};
    int64_t tot[9];
    MPI_CHECK(MPI_Allreduce(loc, tot, 9, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_max, 1, MPI_DOUBLE, MPI_MAX, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_sum, 1, MPI_DOUBLE, MPI_SUM, comm));
    gt_shard_assign(P.n_rows, T, size, to);
    int64_t *bb = GT_MALLOC(8 * (size_t)T);
    for (int i = 0; i < T; i++) bb[i] = P.n_rows[i] * (4 * (int64_t)C + 1);
    gt_import_move(P.blob, bb, from, to, T, comm);

    snprintf(P.config, sizeof P.config,
             "format=care; src=%s; farm=%d; turbines=%d; files=%d; period_s=%.17g; backward_tolerance_s=%.17g; strict=%d; "
             "max_bad_lines=%d; labels: status 0,2 normal, 1 derated, 3 service, 4 downtime, 5 other, anomaly events "
             "win; segments: train_test flag",
             o->src, P.farm, T, P.F, o->period_s, o->backward_tol_s, o->strict, o->max_bad_lines);
    gt_pdm_source src = {
        .n_turbines = T, .n_channels = C, .channels = P.ch, .rate_hz = 1.0 / o->period_s,
        .machine_type_names = NULL, .n_machine_types = 0,
        .condition_names = cond_names, .n_conditions = N_CONDS,
        .event_kind_names = kind_names, .n_event_kinds = N_KINDS,
        /* the generator attribute keeps the file's former path: files stay byte-identical */
        .generator = "gridtrain import care (import/import_care.c)", .generator_config = P.config, .seed = 0,
        .care_events = ce_all, .n_care_events = n_ce_tot,
        .ctx = &P, .info = src_info, .info_free = src_info_free, .begin = src_begin, .next = src_next, .end = src_end,
    };
    gt_write_stats ws;
    gt_pdm_write(o->out, &src, &o->write, comm, &ws);
    free(ce_all);
    st->n_items = T;
    st->n_cols = C;
    st->n_rows = ws.n_rows_total;
    st->text_bytes = tot[0];
    st->n_lines = tot[1], st->n_samples = tot[2], st->n_exact_dup = tot[3], st->n_conflict = tot[4];
    st->n_backward = tot[5], st->n_backward_far = tot[6], st->n_warnings = tot[7], st->n_bad_lines = tot[8];
    free(w);
    free(from);
    free(to);
    free(bb);
    gt_care_plan_free(&P);
}

