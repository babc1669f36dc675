/* data/usage.c: the screening summary, screened.csv and the per-item usage
 * report (data_used.csv) (see dataset.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataset_impl.h"
#include "data/permute.h"
#include "dist/reduce.h"

const char *const gt_ds_reason[R_COUNT] = {"gap", "spike", "event", "spike_found", "spike_repaired"};

void gt_dataset_screen_summary(const gt_dataset *ds, MPI_Comm comm, gt_screen_summary *global) {
    int64_t v[8] = {ds->screen_local.windows_total, ds->screen_local.windows_screened_spike,
                    ds->screen_local.windows_screened_gap, ds->screen_local.windows_screened_event,
                    ds->screen_local.spikes_found, ds->screen_local.samples_repaired,
                    ds->screen_local.windows_filtered, ds->screen_local.samples_imputed};
    gt_dist_allreduce_sum_i64(v, 8, comm);
    const int64_t *g = v;
    global->windows_total = g[0];
    global->windows_screened_spike = g[1];
    global->windows_screened_gap = g[2];
    global->windows_screened_event = g[3];
    global->spikes_found = g[4];
    global->samples_repaired = g[5];
    global->windows_filtered = g[6];
    global->samples_imputed = g[7];
}

static int cmp_rec(const void *pa, const void *pb) {
    const ds_record *a = pa, *b = pb;
    if (a->file_index != b->file_index) return a->file_index < b->file_index ? -1 : 1;
    if (a->start_ms != b->start_ms) return a->start_ms < b->start_ms ? -1 : 1;
    if (a->reason != b->reason) return a->reason < b->reason ? -1 : 1;
    return (a->end_ms > b->end_ms) - (a->end_ms < b->end_ms);
}

void gt_dataset_write_screened(const gt_dataset *ds, MPI_Comm comm, FILE *out) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    GT_CHECK(ds->n_recs <= INT32_MAX / (int64_t)sizeof(ds_record), GT_EXIT_RESOURCE,
             "data: too many screening records to gather (%lld)", (long long)ds->n_recs);
    const int mine_bytes = (int)(ds->n_recs * (int64_t)sizeof(ds_record));
    int64_t total = 0; /* bytes, on rank 0 */
    ds_record *all = gt_dist_gatherv(ds->recs, mine_bytes, MPI_BYTE, &total,
                                     "data: screening report too large to gather", comm);
    if (rank == 0) {
        int64_t n = total / (int64_t)sizeof(ds_record);
        qsort(all, (size_t)n, sizeof(ds_record), cmp_rec);
        for (int64_t i = 0; i < n; i++)
            fprintf(out, "%lld,%lld,%lld,%s\n", (long long)all[i].id, (long long)all[i].start_ms,
                    (long long)all[i].end_ms, gt_ds_reason[all[i].reason]);
        fflush(out);
    }
    free(all);
}

/* ------------------------------------------------------------- usage -- */

const char *gt_dataset_item_name(const gt_dataset *ds) { return ds->t->item; }

static int cmp_usage(const void *pa, const void *pb) {
    const gt_item_usage *a = pa, *b = pb;
    return (a->file_index > b->file_index) - (a->file_index < b->file_index);
}

gt_item_usage *gt_dataset_usage(const gt_dataset *ds, MPI_Comm comm, int *n_items) {
    gt_item_usage *mine = GT_CALLOC((size_t)(ds->n_items > 0 ? ds->n_items : 1), sizeof *mine);
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        gt_item_usage *u = &mine[li];
        u->id = ds->id[li];
        u->file_index = ds->index[li];
        u->holdout = it->holdout;
        u->rows = it->n_rows;
        u->filled = it->filled;
        u->windows_total = it->n_total;
        for (int s = 0; s < GT_SPLIT_COUNT; s++) u->windows_kept += it->sp[s].n_kept;
        u->screened_gap = it->n_gap;
        u->screened_spike = it->n_spike;
        u->screened_event = it->n_event;
        u->filtered = it->n_filtered;
        u->excluded = it->excluded;
    }
    int64_t total = 0;
    gt_item_usage *all = gt_dist_gatherv(mine, ds->n_items * (int)sizeof *mine, MPI_BYTE, &total,
                                         "data: usage table too large to gather", comm);
    free(mine);
    *n_items = (int)(total / (int64_t)sizeof(gt_item_usage));
    if (all) qsort(all, (size_t)*n_items, sizeof *all, cmp_usage);
    return all;
}

void gt_dataset_write_usage(const gt_dataset *ds, MPI_Comm comm, FILE *out) {
    int n = 0;
    gt_item_usage *u = gt_dataset_usage(ds, comm, &n);
    if (u && out) {
        fprintf(out, "%s_id,file_index,holdout,rows,filled,windows,kept,screened_gap,screened_spike,screened_event,"
                     "filtered\n", gt_dataset_item_name(ds));
        for (int i = 0; i < n; i++)
            fprintf(out, "%lld,%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", (long long)u[i].id, u[i].file_index,
                    u[i].holdout, (long long)u[i].rows, (long long)u[i].filled, (long long)u[i].windows_total,
                    (long long)u[i].windows_kept, (long long)u[i].screened_gap, (long long)u[i].screened_spike,
                    (long long)u[i].screened_event, (long long)u[i].filtered);
        fflush(out);
    }
    free(u);
}

/* Rank 0: the per-item table in the log (every item when there are few, else
 * the ones that lose the most), and a warning naming the main reason and the
 * setting to change when more than GT_DATA_SCREEN_WARN of the windows are
 * screened. */
#define GT_DATA_SCREEN_WARN 0.20
#define GT_DATA_USAGE_LOG_ITEMS 16
void gt_ds_log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g) {
    const char *item = gt_dataset_item_name(ds);
    if (ds->t->log_usage) ds->t->log_usage(ds, u, n); /* the task's own lines */
    /* the items to show: all when few, else the GT_DATA_USAGE_LOG_ITEMS with the largest screened share */
    int *order = GT_MALLOC(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) order[i] = i;
    if (n > GT_DATA_USAGE_LOG_ITEMS)
        for (int i = 0; i < GT_DATA_USAGE_LOG_ITEMS; i++) { /* partial selection: n x 16 */
            int best = i;
            for (int j = i + 1; j < n; j++) {
                const gt_item_usage *a = &u[order[j]], *b = &u[order[best]];
                double fa = a->windows_total ? (double)(a->windows_total - a->windows_kept - a->filtered) / a->windows_total : 0;
                double fb = b->windows_total ? (double)(b->windows_total - b->windows_kept - b->filtered) / b->windows_total : 0;
                if (fa > fb) best = j;
            }
            int tmp = order[i];
            order[i] = order[best], order[best] = tmp;
        }
    int shown = n < GT_DATA_USAGE_LOG_ITEMS ? n : GT_DATA_USAGE_LOG_ITEMS;
    GT_INFO("data used per %s%s: id rows filled windows kept screened(gap/spike/event)", item,
            n > shown ? " (the most screened)" : "");
    for (int k = 0; k < shown; k++) {
        const gt_item_usage *x = &u[order[k]];
        GT_INFO("  %s %lld%s: %lld rows, %lld filled, %lld windows, %lld kept (%.1f%%), screened %lld/%lld/%lld",
                item, (long long)x->id, x->holdout ? " (held out)" : x->excluded ? " (not selected)" : "",
                (long long)x->rows, (long long)x->filled, (long long)x->windows_total, (long long)x->windows_kept,
                x->windows_total ? 100.0 * (double)x->windows_kept / (double)x->windows_total : 0.0,
                (long long)x->screened_gap, (long long)x->screened_spike, (long long)x->screened_event);
    }
    free(order);
    /* the task's lines after the table, and the channels with the most spikes and gaps */
    char top_spike[256] = "", top_gap[256] = "";
    if (ds->t->log_channels) ds->t->log_channels(ds, u, n, g, top_spike, top_gap, sizeof top_spike);
    const int64_t scr = g->windows_screened_gap + g->windows_screened_spike + g->windows_screened_event;
    const int64_t cand = g->windows_total - g->windows_filtered;
    if (cand <= 0 || (double)scr <= GT_DATA_SCREEN_WARN * (double)cand) return;
    const char *why, *fix;
    char whybuf[400];
    if (g->windows_screened_gap >= g->windows_screened_spike && g->windows_screened_gap >= g->windows_screened_event) {
        why = "gaps (missing or non-finite samples)";
        if (top_gap[0]) {
            snprintf(whybuf, sizeof whybuf, "gaps (missing or non-finite samples; most on %s)", top_gap);
            why = whybuf;
        }
        fix = ds->t->gap_hint;
    } else if (g->windows_screened_spike >= g->windows_screened_event) {
        why = "spikes (Hampel test, data.spike_k)";
        if (top_spike[0]) {
            snprintf(whybuf, sizeof whybuf, "spikes (Hampel test, data.spike_k; most on %s)", top_spike);
            why = whybuf;
        }
        fix = ds->t->spike_hint;
    } else {
        why = "labelled events (data.train_normal_only)";
        fix = "set data.train_normal_only = false to train on event rows as well";
    }
    GT_WARN("data: %lld of %lld windows (%.1f%%) screened, mostly for %s: %s; see data_used.csv / screened.csv of "
            "the run", (long long)scr, (long long)cand, 100.0 * (double)scr / (double)cand, why, fix);
}

