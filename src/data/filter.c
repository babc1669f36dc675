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

/* Collective. Gathers the values to rank 0, which decides; every rank learns
 * the verdict and, when an entry matches nothing, all end the job together. */
void gt_data_filter_check_run(const char *file, const gt_data_filter_check *c, MPI_Comm comm) {
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
