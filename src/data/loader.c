/* data/loader.c: the prefetch thread (see loader.h).
 *
 * Two slots (buffer sets). Batches are filled in sequence order, batch i into
 * slot i % 2, and taken in the same order. A slot goes EMPTY -> FILLING ->
 * READY -> IN_USE (consumer) -> EMPTY (on the consumer's next call). While the
 * trainer works on batch i, the thread fills batch i + 1 into the other slot.
 *
 * The fill of one batch is shared work: whoever claims the batch computes its
 * window list, then both threads take chunks of samples from an atomic counter.
 * So when the trainer asks for a batch the thread has not finished (it did not
 * get a core: more ranks than cores, a busy node), the trainer fills the rest
 * itself instead of waiting for the thread to be scheduled; it only waits for
 * the chunk in flight. The sequence of (epoch, k) is fixed in advance, so the
 * batches are the same with and without the thread. */
#define _GNU_SOURCE
#include "data/loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/check.h"
#include "core/timer.h"
#include "core/trace.h"
#include "dist/balance.h"

enum { SLOT_EMPTY = 0, SLOT_READY = 1, SLOT_IN_USE = 2, SLOT_FILLING = 3 };
#define CHUNK 4 /* samples per grab */

struct gt_loader {
    const gt_dataset *ds;
    gt_split split;
    int64_t g_batch, max_local, n_x, n_y, bpe;
    int prefetch;
    gt_batch slot[2];
    int64_t *idx[2];    /* [max_local] local window numbers of the slot's batch */
    int state[2];
    int listed[2];      /* FILLING: the window list (idx, n) is ready */
    atomic_llong next[2], done[2]; /* FILLING: samples grabbed / finished */
    uint64_t fill_epoch; /* next (epoch, k) to fill */
    int64_t fill_k;
    int64_t n_taken;     /* batches handed to the consumer */
    int64_t n_claimed;   /* batches whose fill has started (by either thread) */
    int held;            /* slot the consumer holds, -1 none */
    int stop;
    int64_t buf_bytes;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static size_t round64(size_t n_bytes) { return (n_bytes + 63) / 64 * 64; }

/* One slot: x | y | mask | refs | idx for max_local samples, each part 64-byte aligned. */
static void slot_layout(int64_t max_local, int64_t n_x, int64_t n_y, size_t *x, size_t *y, size_t *r, size_t *i) {
    *x = round64(sizeof(float) * (size_t)(max_local * n_x));
    *y = round64(sizeof(float) * (size_t)(max_local * (n_y > 0 ? n_y : 1)));
    *r = round64(sizeof(gt_window_ref) * (size_t)max_local);
    *i = round64(sizeof(int64_t) * (size_t)max_local);
}

int64_t gt_loader_bytes_for(int64_t g_batch, int64_t n_x, int64_t n_y) {
    size_t x, y, r, i;
    slot_layout(g_batch, n_x, n_y, &x, &y, &r, &i); /* a rank may own the whole global batch */
    return 2 * (int64_t)(x + 2 * y + r + i);
}

static void advance(gt_loader *l) {
    if (++l->fill_k == l->bpe) {
        l->fill_k = 0;
        l->fill_epoch++;
    }
}

static void fill_range(gt_loader *l, int si, int64_t i, int64_t cnt) {
    gt_batch *b = &l->slot[si];
    const int64_t ny = l->n_y;
    gt_dataset_fill(l->ds, l->split, l->idx[si] + i, cnt, b->x + i * l->n_x, ny ? b->y + i * ny : b->y,
                    ny ? b->mask + i * ny : b->mask, b->refs + i);
    if (l->split == GT_SPLIT_TRAIN && ny) /* nilm activation augmentation (data.augment; 0: nothing) */
        gt_dataset_augment(l->ds, b->epoch, b->refs + i, cnt, b->x + i * l->n_x, b->y + i * ny, b->mask + i * ny);
}

/* Unlocked: take chunks of slot si until none is left. With l->mu NOT held. */
static void help_fill(gt_loader *l, int si) {
    const int64_t n = l->slot[si].n;
    for (;;) {
        int64_t i = atomic_fetch_add(&l->next[si], CHUNK);
        if (i >= n) return;
        int64_t cnt = n - i < CHUNK ? n - i : CHUNK;
        fill_range(l, si, i, cnt);
        if (atomic_fetch_add(&l->done[si], cnt) + cnt == n) {
            pthread_mutex_lock(&l->mu);
            l->state[si] = SLOT_READY;
            pthread_cond_broadcast(&l->cv);
            pthread_mutex_unlock(&l->mu);
        }
    }
}

/* With l->mu held: claim batch n_claimed (its slot must be EMPTY), list its
 * windows, publish the list, fill chunks; returns with l->mu held. */
static void claim_and_fill(gt_loader *l) {
    int si = (int)(l->n_claimed % 2);
    l->n_claimed++;
    l->state[si] = SLOT_FILLING;
    l->listed[si] = 0;
    uint64_t epoch = l->fill_epoch;
    int64_t k = l->fill_k;
    advance(l);
    pthread_mutex_unlock(&l->mu);
    const double t0 = GT_TRACE_ON() ? gt_now() : 0; /* train.trace: the fill on this thread */
    gt_batch *b = &l->slot[si];
    int64_t n = gt_dataset_batch_local(l->ds, l->split, epoch, k, l->g_batch, l->idx[si]);
    GT_ASSERT(n <= l->max_local);
    b->n = n;
    b->epoch = epoch;
    b->k = k;
    atomic_store(&l->next[si], 0);
    atomic_store(&l->done[si], 0);
    pthread_mutex_lock(&l->mu);
    if (n == 0) l->state[si] = SLOT_READY;
    else l->listed[si] = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (n > 0) help_fill(l, si);
    if (t0 > 0 && GT_TRACE_ON()) gt_trace_record("fill batch", t0, gt_now(), "batch", k);
    pthread_mutex_lock(&l->mu);
}

static void *producer(void *arg) {
    gt_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        /* at most one batch ahead of the one the consumer holds */
        while (!l->stop && !(l->n_claimed <= l->n_taken && l->state[l->n_claimed % 2] == SLOT_EMPTY))
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop) break;
        claim_and_fill(l);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

gt_loader *gt_loader_create(const gt_dataset *ds, gt_split s, int64_t g_batch, uint64_t epoch0, int64_t k0,
                            int prefetch) {
    GT_CHECK(g_batch > 0, GT_EXIT_USAGE, "loader: batch size must be > 0");
    int64_t bpe = gt_dataset_batches_per_epoch(ds, s, g_batch);
    GT_CHECK(bpe > 0, GT_EXIT_DATA, "loader: the %s split has %lld windows, fewer than one batch of %lld",
             gt_split_name(s), (long long)gt_dataset_n_windows_global(ds, s), (long long)g_batch);
    GT_CHECK(k0 >= 0 && k0 < bpe, GT_EXIT_USAGE, "loader: start batch %lld outside the epoch's %lld batches",
             (long long)k0, (long long)bpe);
    gt_loader *l = GT_CALLOC(1, sizeof *l);
    l->ds = ds;
    l->split = s;
    l->g_batch = g_batch;
    l->max_local = g_batch; /* a rank may own the whole global batch */
    l->n_x = gt_dataset_n_x(ds);
    l->n_y = gt_dataset_n_y(ds);
    l->bpe = bpe;
    l->prefetch = prefetch;
    l->fill_epoch = epoch0;
    l->fill_k = k0;
    l->held = -1;
    size_t x_bytes, y_bytes, r_bytes, i_bytes;
    slot_layout(l->max_local, l->n_x, l->n_y, &x_bytes, &y_bytes, &r_bytes, &i_bytes);
    for (int si = 0; si < 2; si++) {
        /* one 64-byte-aligned block per slot: x | y | mask | refs | idx */
        char *p = GT_ALIGNED_ALLOC(x_bytes + 2 * y_bytes + r_bytes + i_bytes);
        gt_batch *b = &l->slot[si];
        b->x = (float *)p;                                       // (max_local, n_x)
        b->y = (float *)(p + x_bytes);                           // (max_local, n_y)
        b->mask = (float *)(p + x_bytes + y_bytes);              // (max_local, n_y)
        b->refs = (gt_window_ref *)(p + x_bytes + 2 * y_bytes);  // (max_local)
        l->idx[si] = (int64_t *)(p + x_bytes + 2 * y_bytes + r_bytes);
        b->g_batch = g_batch;
    }
    l->buf_bytes = gt_loader_bytes_for(g_batch, l->n_x, l->n_y);
    if (prefetch) {
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->cv, NULL);
        int rc = pthread_create(&l->thread, NULL, producer, l);
        GT_CHECK(rc == 0, GT_EXIT_RESOURCE, "loader: cannot start the prefetch thread (error %d)", rc);
    }
    return l;
}

/* Seconds since t0; the span is the trainer's data wait on the timeline (train.trace). */
static double waited(double t0) {
    double t1 = gt_now();
    if (GT_TRACE_ON()) gt_trace_record("data_wait", t0, t1, NULL, 0);
    return t1 - t0;
}

double gt_loader_next(gt_loader *l, const gt_batch **out) {
    double t0 = gt_now();
    if (!l->prefetch) {
        int si = (int)(l->n_taken % 2);
        gt_batch *b = &l->slot[si];
        b->epoch = l->fill_epoch;
        b->k = l->fill_k;
        advance(l);
        b->n = gt_dataset_batch_local(l->ds, l->split, b->epoch, b->k, l->g_batch, l->idx[si]);
        GT_ASSERT(b->n <= l->max_local);
        if (b->n > 0) fill_range(l, si, 0, b->n);
        l->n_taken++;
        l->n_claimed++;
        *out = b;
        return waited(t0);
    }
    pthread_mutex_lock(&l->mu);
    if (l->held >= 0) {
        l->state[l->held] = SLOT_EMPTY;
        l->held = -1;
        pthread_cond_broadcast(&l->cv);
    }
    int si = (int)(l->n_taken % 2);
    if (l->n_claimed == l->n_taken && l->state[si] == SLOT_EMPTY) claim_and_fill(l); /* not started: do it here */
    while (l->state[si] != SLOT_READY) {
        if (l->state[si] == SLOT_FILLING && l->listed[si] &&
            atomic_load(&l->next[si]) < l->slot[si].n) { /* unfinished: help */
            pthread_mutex_unlock(&l->mu);
            help_fill(l, si);
            pthread_mutex_lock(&l->mu);
            continue;
        }
        pthread_cond_wait(&l->cv, &l->mu);
    }
    l->state[si] = SLOT_IN_USE;
    l->held = si;
    l->n_taken++;
    pthread_cond_broadcast(&l->cv); /* the thread may start the next batch */
    pthread_mutex_unlock(&l->mu);
    *out = &l->slot[si];
    return waited(t0);
}

int64_t gt_loader_balance(gt_loader *l, const gt_batch *b, MPI_Comm comm) {
    int si = b == &l->slot[0] ? 0 : 1;
    GT_CHECK(b == &l->slot[si], GT_EXIT_INTERNAL, "gt_loader_balance: not this loader's batch");
    gt_batch *s = &l->slot[si];
    void *bufs[4] = {s->x, s->refs, s->y, s->mask};
    const size_t rows[4] = {sizeof(float) * (size_t)l->n_x, sizeof(gt_window_ref), sizeof(float) * (size_t)l->n_y,
                            sizeof(float) * (size_t)l->n_y};
    const int64_t n0 = s->n;
    int64_t moved = gt_dist_balance_rows(&s->n, l->max_local, bufs, rows, l->n_y > 0 ? 4 : 2, comm);
    for (int64_t i = n0; i < s->n; i++) s->refs[i].item = -1; /* from another rank's items */
    return moved;
}

void gt_loader_free(gt_loader *l) {
    if (!l) return;
    if (l->prefetch) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL); /* a fill in progress finishes first (bounded: one batch) */
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
    }
    for (int si = 0; si < 2; si++) free(l->slot[si].x);
    free(l);
}

int64_t gt_loader_bytes(const gt_loader *l) { return l->buf_bytes; }
