/* dist/grads.c: the overlapped gradient exchange (see grads.h). */
#include "dist/grads.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/timer.h"
#include "core/trace.h"
#include "dist/dist_impl.h"
#ifdef GT_HAVE_NCCL
#include "dist/nccl.h"
#endif

#define GT_GRADS_MAX_COUNT ((size_t)1 << 30) /* MPI counts are int: a bucket is cut into calls of this */

typedef struct bucket {
    size_t lo, hi;
    int req0, n_req; /* its MPI requests: req[req0 .. req0 + n_req) */
    int started;
    double t_start; /* train.trace: start time, and when its completion was seen */
    double t_done;
} bucket;

struct gt_dist_grads {
    MPI_Comm comm;
    int size;
    size_t n;
    int on_device;
    void *stream;          /* the engine's (device) */
    void *xstream, *event; /* the exchange's stream and its ordering event (device) */
    int overlap;
    float *grads;
    int n_buckets, next; /* buckets [0, next) have started (top first) */
    bucket *b;
    int n_req;
    MPI_Request *req;
};

gt_dist_grads *gt_dist_grads_create(const size_t *starts, int n_starts, size_t n, size_t bucket_bytes,
                                    int on_device, void *stream, MPI_Comm comm) {
    GT_CHECK(n_starts >= 1 && starts[0] == 0, GT_EXIT_INTERNAL, "gradient buckets: the table must start at 0");
    gt_dist_grads *g = GT_CALLOC(1, sizeof *g);
    g->comm = comm;
    MPI_CHECK(MPI_Comm_size(comm, &g->size));
    g->n = n;
    g->on_device = on_device;
    g->stream = stream;
    g->overlap = 1;
    g->b = GT_CALLOC((size_t)n_starts, sizeof *g->b);
    /* from the top down: a bucket closes at the first tensor start that makes it >= bucket_bytes */
    size_t per = bucket_bytes / sizeof(float), hi = n;
    for (int i = n_starts - 1; i >= 0 && hi > 0; i--) {
        GT_CHECK(starts[i] < hi || (starts[i] == hi && i == n_starts - 1), GT_EXIT_INTERNAL,
                 "gradient buckets: tensor starts must ascend below %zu", n);
        if (starts[i] == hi) continue; /* an empty last tensor */
        if (hi - starts[i] >= per || i == 0) {
            g->b[g->n_buckets++] = (bucket){.lo = starts[i], .hi = hi};
            hi = starts[i];
        }
    }
    for (int k = 0; k < g->n_buckets; k++) {
        bucket *bk = &g->b[k];
        bk->req0 = g->n_req;
        bk->n_req = (int)((bk->hi - bk->lo + GT_GRADS_MAX_COUNT - 1) / GT_GRADS_MAX_COUNT);
        g->n_req += bk->n_req;
    }
    g->req = GT_MALLOC((size_t)(g->n_req ? g->n_req : 1) * sizeof(MPI_Request));
    for (int r = 0; r < g->n_req; r++) g->req[r] = MPI_REQUEST_NULL;
    if (on_device && g->size > 1) {
#ifdef GT_HAVE_NCCL
        g->xstream = gt_dist_nccl_stream_create();
        g->event = gt_dist_nccl_event_create();
        (void)gt_dist_nccl_comm_for(comm); /* collective: made here, not inside a backward */
#else
        gt_dist_fail_no_nccl(g->size); /* at set-up, on every rank: not at the first bucket */
#endif
    }
    return g;
}

void gt_dist_grads_free(gt_dist_grads *g) {
    if (!g) return;
#ifdef GT_HAVE_NCCL
    gt_dist_nccl_event_destroy(g->event);
    gt_dist_nccl_stream_destroy(g->xstream);
#endif
    free(g->req);
    free(g->b);
    free(g);
}

void gt_dist_grads_set_overlap(gt_dist_grads *g, int on) { g->overlap = on != 0; }
int gt_dist_grads_n_buckets(const gt_dist_grads *g) { return g->n_buckets; }
void gt_dist_grads_bucket(const gt_dist_grads *g, int b, size_t *lo, size_t *hi) {
    *lo = g->b[b].lo;
    *hi = g->b[b].hi;
}

void gt_dist_grads_begin(gt_dist_grads *g, float *grads) {
    GT_CHECK(g->next == 0 || g->next == g->n_buckets, GT_EXIT_INTERNAL,
             "gradient exchange: a step began before the last one finished");
    g->grads = grads;
    g->next = 0;
    for (int k = 0; k < g->n_buckets; k++) g->b[k].started = 0, g->b[k].t_done = 0;
}

/* Start buckets [next, upto), top first. */
static void start_buckets(gt_dist_grads *g, int upto) {
    if (g->next >= upto) return;
    if (g->on_device) {
#ifdef GT_HAVE_NCCL
        void *comm = gt_dist_nccl_comm_for(g->comm);
        gt_dist_nccl_stream_after(g->xstream, g->stream, g->event); /* after the layers' kernels */
        for (int k = g->next; k < upto; k++) {
            bucket *bk = &g->b[k];
            gt_dist_nccl_allreduce_sum(comm, g->grads + bk->lo, bk->hi - bk->lo, 0, g->xstream);
            bk->started = 1;
        }
#else
        gt_dist_fail_no_nccl(g->size); /* not reached: gt_dist_grads_create ends such a job */
#endif
        g->next = upto;
        return;
    }
    for (int k = g->next; k < upto; k++) {
        bucket *bk = &g->b[k];
        bk->t_start = GT_TRACE_ON() ? gt_now() : 0;
        for (int r = 0; r < bk->n_req; r++) {
            size_t off = bk->lo + (size_t)r * GT_GRADS_MAX_COUNT;
            size_t cnt = bk->hi - off < GT_GRADS_MAX_COUNT ? bk->hi - off : GT_GRADS_MAX_COUNT;
            MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, g->grads + off, (int)cnt, MPI_FLOAT, MPI_SUM, g->comm,
                                     &g->req[bk->req0 + r]));
        }
        bk->started = 1;
    }
    g->next = upto;
}

/* Host: drive the started collectives (Open MPI progresses non-blocking
 * collectives inside MPI calls) and note completions for the trace. */
static void progress(gt_dist_grads *g) {
    if (g->on_device || g->next == 0) return;
    if (!GT_TRACE_ON()) {
        int n = g->b[g->next - 1].req0 + g->b[g->next - 1].n_req, flag = 0;
        MPI_CHECK(MPI_Testall(n, g->req, &flag, MPI_STATUSES_IGNORE));
        return;
    }
    for (int k = 0; k < g->next; k++) { /* per bucket, to note when each completed */
        bucket *bk = &g->b[k];
        int flag = 0;
        if (bk->t_done > 0) continue;
        MPI_CHECK(MPI_Testall(bk->n_req, g->req + bk->req0, &flag, MPI_STATUSES_IGNORE));
        if (flag) bk->t_done = gt_now();
    }
}

void gt_dist_grads_ready(void *ctx, size_t lo) {
    gt_dist_grads *g = ctx;
    if (g->size == 1 || !g->overlap) return;
    int upto = g->next;
    while (upto < g->n_buckets && g->b[upto].lo >= lo) upto++;
    start_buckets(g, upto);
    progress(g);
}

int gt_dist_grads_finish(gt_dist_grads *g) {
    int early = g->next;
    if (g->size == 1 || g->n == 0) {
        g->next = g->n_buckets;
        return early;
    }
    start_buckets(g, g->n_buckets);
    if (g->on_device) {
#ifdef GT_HAVE_NCCL
        gt_dist_nccl_stream_after(g->stream, g->xstream, g->event); /* the optimizer after the sums */
#endif
        return early;
    }
    if (GT_TRACE_ON()) { /* train.trace: one span per bucket, from its start to its completion */
        for (int k = 0; k < g->n_buckets; k++) {
            bucket *bk = &g->b[k];
            MPI_CHECK(MPI_Waitall(bk->n_req, g->req + bk->req0, MPI_STATUSES_IGNORE));
            if (bk->t_done <= 0) bk->t_done = gt_now();
            gt_trace_record_tid(GT_TRACE_TID_COMM, "allreduce bucket", bk->t_start,
                            bk->t_done, "bytes", (int64_t)((bk->hi - bk->lo) * sizeof(float)));
        }
    } else {
        MPI_CHECK(MPI_Waitall(g->n_req, g->req, MPI_STATUSES_IGNORE));
    }
    return early;
}
