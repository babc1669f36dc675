#include "dist/comm.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/dist_impl.h"

static void mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); _Exit(code); }

void gt_dist_init(int *argc, char ***argv) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    gt_set_rank(rank, size);
    if (size > 1) gt_set_abort_handler(mpi_abort);
}

void gt_dist_finalize(void) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    gt_dist_nccl_release_all();
    MPI_Finalize();
}

int gt_dist_node_shared_key(MPI_Comm comm, const char *key) {
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(node, &rank));
    MPI_CHECK(MPI_Comm_size(node, &size));
    char mine[GT_DIST_KEY_LEN];
    memset(mine, 0, sizeof mine);
    snprintf(mine, sizeof mine, "%s", key);
    char *all = GT_MALLOC((size_t)size * GT_DIST_KEY_LEN);
    MPI_CHECK(MPI_Allgather(mine, GT_DIST_KEY_LEN, MPI_CHAR, all, GT_DIST_KEY_LEN, MPI_CHAR, node));
    int shared = 0;
    for (int r = 0; r < size; r++)
        if (r != rank && !strncmp(all + (size_t)r * GT_DIST_KEY_LEN, mine, GT_DIST_KEY_LEN)) shared++;
    free(all);
    MPI_CHECK(MPI_Comm_free(&node));
    return shared;
}

void gt_dist_node_rank(MPI_Comm comm, int *local_rank, int *local_size) {
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, local_rank));
    MPI_CHECK(MPI_Comm_size(node, local_size));
    MPI_CHECK(MPI_Comm_free(&node));
}

gt_dist_place *gt_dist_placement(MPI_Comm comm, int gpu, int *n_nodes) {
    int size = 1;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    gt_dist_place mine;
    memset(&mine, 0, sizeof mine);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_CHECK(MPI_Get_processor_name(name, &len));
    snprintf(mine.host, sizeof mine.host, "%.*s", len, name);
    gt_dist_node_rank(comm, &mine.local_rank, &mine.local_size);
    mine.gpu = gpu;
    gt_dist_place *all = GT_MALLOC((size_t)size * sizeof *all);
    MPI_CHECK(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, comm));
    int nodes = 0;
    for (int r = 0; r < size; r++) {
        all[r].node = nodes;
        for (int q = 0; q < r; q++)
            if (!strcmp(all[q].host, all[r].host)) {
                all[r].node = all[q].node;
                break;
            }
        if (all[r].node == nodes) nodes++;
    }
    *n_nodes = nodes;
    return all;
}

void gt_dist_placement_describe(const gt_dist_place *p, int n_ranks, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int node = 0; k < len; node++) {
        int first = -1;
        for (int r = 0; r < n_ranks && first < 0; r++)
            if (p[r].node == node) first = r;
        if (first < 0) break;
        k += (size_t)snprintf(buf + k, len - k, "%s%s ranks ", node ? ", " : "", p[first].host);
        /* the node's ranks as ranges: 0-1,4 */
        int sep = 0;
        for (int r = first; r < n_ranks && k < len; r++) {
            if (p[r].node != node) continue;
            int e = r;
            while (e + 1 < n_ranks && p[e + 1].node == node) e++;
            k += e > r ? (size_t)snprintf(buf + k, len - k, "%s%d-%d", sep ? "," : "", r, e)
                       : (size_t)snprintf(buf + k, len - k, "%s%d", sep ? "," : "", r);
            sep = 1;
            r = e;
        }
    }
}

int gt_dist_all_ok(MPI_Comm comm, int local_ok) {
    int ok = local_ok ? 1 : 0, all = 0;
    MPI_CHECK(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
    return all;
}

void gt_dist_event_table(MPI_Comm comm, FILE *out) {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    int n = gt_event_count(), nmax = 0, nmin = 0;
    MPI_CHECK(MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, comm));
    MPI_CHECK(MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, comm));
    GT_ASSERT(nmin == nmax);
    if (n == 0) return;
    double t[GT_MAX_EVENTS], tmin[GT_MAX_EVENTS], tmax[GT_MAX_EVENTS], tsum[GT_MAX_EVENTS];
    double c[GT_MAX_EVENTS], csum[GT_MAX_EVENTS];
    for (int i = 0; i < n; i++) {
        t[i] = gt_event_seconds(i);
        c[i] = (double)gt_event_calls(i);
    }
    MPI_CHECK(MPI_Reduce(t, tmin, n, MPI_DOUBLE, MPI_MIN, 0, comm));
    MPI_CHECK(MPI_Reduce(t, tmax, n, MPI_DOUBLE, MPI_MAX, 0, comm));
    MPI_CHECK(MPI_Reduce(t, tsum, n, MPI_DOUBLE, MPI_SUM, 0, comm));
    MPI_CHECK(MPI_Reduce(c, csum, n, MPI_DOUBLE, MPI_SUM, 0, comm));
    if (rank != 0) return;
    fprintf(out, "\ntiming events over %d rank%s (seconds)\n", size, size == 1 ? "" : "s");
    fprintf(out, "%-20s %10s %10s %10s %8s %10s\n", "event", "min", "max", "mean", "max/mean", "calls/rank");
    for (int i = 0; i < n; i++) {
        double mean = tsum[i] / size;
        fprintf(out, "%-20s %10.4f %10.4f %10.4f %8.2f %10.0f\n", gt_event_name(i), tmin[i], tmax[i],
                mean, mean > 0 ? tmax[i] / mean : 1.0, csum[i] / size);
    }
}
