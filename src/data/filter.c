/* data/filter.c: the item filters (data.items, farms, machine types) checked
 * against the file: one line naming what matches nothing (see dataset.h). */
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

static int i64_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One data filter option checked against the values the file has: `mine`
 * [n_mine] are this rank's (its items' ids, farms, ... or its segments'
 * condition codes); codes 0..n_legend-1 of a legend count as present too. */
typedef struct {
    const char *key;        /* "data.farms" */
    const char *what;       /* "farm": the message says "no farm 7 in the file" */
    const gt_data_filter *f;
    const int64_t *mine;
    int n_mine;
    const char *legend;     /* rank 0: names [n_legend][GT_FORMAT_NAME_LEN] or NULL */
    int n_legend;
    int legend_counts;      /* 1: a code of the legend is present even without a value */
} filter_check;

/* Collective. Gathers the values to rank 0, which decides; every rank learns
 * the verdict and, when an entry matches nothing, all end the job together. */
static void filter_check_run(const char *file, const filter_check *c, MPI_Comm comm) {
    if (c->f->n == 0) return;
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int64_t n_all = 0;
    int64_t *all = gt_dist_gatherv(c->mine, c->n_mine, MPI_INT64_T, &n_all, "data: too many items to gather", comm);
    char msg[1400] = "";
    int bad = 0;
    if (rank == 0) {
        const int64_t n_leg = c->legend_counts ? c->n_legend : 0;
        all = GT_REALLOC(all, sizeof(int64_t) * (size_t)(n_all + n_leg + 1));
        for (int64_t k = 0; k < n_leg; k++) all[n_all++] = k;
        qsort(all, (size_t)n_all, sizeof *all, i64_cmp);
        int64_t u = 0; /* sorted, unique */
        for (int64_t i = 0; i < n_all; i++)
            if (u == 0 || all[i] != all[u - 1]) all[u++] = all[i];
        char missing[512] = "", have[640] = "";
        for (int r = 0; r < c->f->n; r++) {
            int64_t lo = 0, hi = u; /* first value >= the range's low end */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (all[mid] < c->f->lo[r]) lo = mid + 1;
                else hi = mid;
            }
            if (lo < u && all[lo] <= c->f->hi[r]) continue;
            size_t l = strlen(missing);
            if (l + 48 >= sizeof missing) {
                if (!strstr(missing, ", ...")) snprintf(missing + l, sizeof missing - l, ", ...");
            } else if (c->f->lo[r] == c->f->hi[r]) {
                snprintf(missing + l, sizeof missing - l, "%s%lld", bad ? ", " : "", (long long)c->f->lo[r]);
            } else {
                snprintf(missing + l, sizeof missing - l, "%s%lld-%lld", bad ? ", " : "", (long long)c->f->lo[r],
                         (long long)c->f->hi[r]);
            }
            bad++;
        }
        if (bad) { /* the values the file has: the first GT_DATA_FILTER_LIST_MAX, with their legend names */
            size_t l = 0;
            for (int64_t i = 0; i < u; i++) {
                if (i == GT_DATA_FILTER_LIST_MAX || l + 64 >= sizeof have) {
                    snprintf(have + l, sizeof have - l, ", ... (%lld in all)", (long long)u);
                    break;
                }
                const char *nm = c->legend && all[i] >= 0 && all[i] < c->n_legend
                                     ? c->legend + (size_t)all[i] * GT_FORMAT_NAME_LEN : "";
                l += (size_t)snprintf(have + l, sizeof have - l, "%s%lld", i ? ", " : "", (long long)all[i]);
                if (nm[0] && l < sizeof have) l += (size_t)snprintf(have + l, sizeof have - l, " (%s)", nm);
            }
            if (u == 0) snprintf(have, sizeof have, "none");
            snprintf(msg, sizeof msg, "%s: %s: no %s %s in the file (it has: %s)", file, c->key, c->what, missing,
                     have);
        }
    }
    free(all);
    if (gt_dist_max_int(bad, comm)) gt_io_fail(comm, GT_EXIT_USAGE, msg); /* rank 0 prints its message */
}

void gt_data_check_filters_nilm(const char *file, const gt_nilm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    filter_check c = {"data.items", "household with id", &cfg->items, sh->id, sh->n_households, NULL, 0, 0};
    filter_check_run(file, &c, comm);
}

void gt_data_check_filters_pdm(const char *file, const gt_pdm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    const int nt = sh->n_turbines;
    int64_t *v = GT_MALLOC(sizeof(int64_t) * (size_t)((nt > sh->n_segments ? nt : sh->n_segments) + 1));
    filter_check c = {"data.items", "turbine with id", &cfg->items, sh->id, nt, NULL, 0, 0};
    filter_check_run(file, &c, comm);
    for (int k = 0; k < nt; k++) v[k] = sh->farm[k];
    c = (filter_check){"data.farms", "farm", &cfg->farms, v, nt, NULL, 0, 0};
    filter_check_run(file, &c, comm);
    if (cfg->machine_types.n > 0) {
        int n_leg = 0; /* names for the message only: a type no turbine has selects nothing */
        char *leg = rank == 0 ? gt_legend_read(file, "machine_type", &n_leg) : NULL;
        for (int k = 0; k < nt; k++) v[k] = sh->machine_type[k];
        c = (filter_check){"data.machine_types", "machine type", &cfg->machine_types, v, nt, leg, n_leg, 0};
        filter_check_run(file, &c, comm);
        free(leg);
    }
    if (cfg->conditions.n > 0 || cfg->train_conditions.n > 0) {
        /* the codes of the turbines' segments, and those /legend/condition names (a CARE file names
         * train_and_prediction whether or not a farm has such rows: 0,2 stays a valid selection) */
        int n_leg = 0;
        char *leg = rank == 0 ? gt_legend_read(file, "condition", &n_leg) : NULL;
        for (int i = 0; i < sh->n_segments; i++) v[i] = sh->segments[i].code;
        static const char *const keys[2] = {"data.conditions", "data.train_conditions"};
        const gt_data_filter *fs[2] = {&cfg->conditions, &cfg->train_conditions};
        for (int j = 0; j < 2; j++) {
            c = (filter_check){keys[j], "condition code", fs[j], v, sh->n_segments, leg, n_leg, 1};
            filter_check_run(file, &c, comm);
        }
        free(leg);
    }
    free(v);
}

void gt_data_pdm_rows_in(const gt_pdm_shard *sh, int k, const gt_data_filter *f, uint8_t *in) {
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
