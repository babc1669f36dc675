/* data/loader.c: the prefetch thread (see loader.h).
 *
 * Two slots (buffer sets). The producer fills batches in sequence order, batch i
 * into slot i % 2; the consumer takes them in the same order. A slot goes
 * EMPTY -> READY (producer) -> IN_USE (consumer) -> EMPTY (on the consumer's
 * next call). So while the trainer works on batch i, the thread fills batch
 * i + 1 into the other slot, and never touches a slot the trainer holds. The
 * sequence of (epoch, k) is fixed in advance, so the batches are the same with
 * and without the thread. */
#include "data/loader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"

enum { SLOT_EMPTY = 0, SLOT_READY = 1, SLOT_IN_USE = 2 };

struct gt_loader {
    const gt_dataset *ds;
    gt_split split;
    int64_t g_batch, max_local, n_x, n_y, bpe;
    int prefetch;
    gt_batch slot[2];
    int64_t *idx[2];    /* [max_local] local window numbers of the slot's batch */
    int state[2];
    uint64_t fill_epoch; /* next (epoch, k) to fill */
    int64_t fill_k;
    int64_t n_taken;     /* batches handed to the consumer */
    int held;            /* slot the consumer holds, -1 none */
    int stop;
    int64_t buf_bytes;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static size_t round64(size_t n_bytes) { return (n_bytes + 63) / 64 * 64; }

static void fill_slot(gt_loader *l, int si, uint64_t epoch, int64_t k) {
    gt_batch *b = &l->slot[si];
    int64_t n = gt_dataset_batch_local(l->ds, l->split, epoch, k, l->g_batch, l->idx[si]);
    GT_ASSERT(n <= l->max_local);
    gt_dataset_fill(l->ds, l->split, l->idx[si], n, b->x, b->y, b->mask, b->refs);
    b->n = n;
    b->epoch = epoch;
    b->k = k;
}

static void advance(gt_loader *l) {
    if (++l->fill_k == l->bpe) {
        l->fill_k = 0;
        l->fill_epoch++;
    }
}

static void *producer(void *arg) {
    gt_loader *l = arg;
    int64_t seq = 0;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        int si = (int)(seq % 2);
        while (!l->stop && l->state[si] != SLOT_EMPTY) pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop) break;
        uint64_t epoch = l->fill_epoch;
        int64_t k = l->fill_k;
        advance(l);
        pthread_mutex_unlock(&l->mu);
        fill_slot(l, si, epoch, k); /* the slot is ours: the consumer waits for READY */
        pthread_mutex_lock(&l->mu);
        l->state[si] = SLOT_READY;
        pthread_cond_broadcast(&l->cv);
        seq++;
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
    size_t x_bytes = round64(sizeof(float) * (size_t)(l->max_local * l->n_x));
    size_t y_bytes = round64(sizeof(float) * (size_t)(l->max_local * (l->n_y > 0 ? l->n_y : 1)));
    size_t r_bytes = round64(sizeof(gt_window_ref) * (size_t)l->max_local);
    size_t i_bytes = round64(sizeof(int64_t) * (size_t)l->max_local);
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
    l->buf_bytes = 2 * (int64_t)(x_bytes + 2 * y_bytes + r_bytes + i_bytes);
    if (prefetch) {
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->cv, NULL);
        int rc = pthread_create(&l->thread, NULL, producer, l);
        GT_CHECK(rc == 0, GT_EXIT_RESOURCE, "loader: cannot start the prefetch thread (error %d)", rc);
    }
    return l;
}

double gt_loader_next(gt_loader *l, const gt_batch **out) {
    double t0 = gt_now();
    if (!l->prefetch) {
        int si = (int)(l->n_taken % 2);
        uint64_t epoch = l->fill_epoch;
        int64_t k = l->fill_k;
        advance(l);
        fill_slot(l, si, epoch, k);
        l->n_taken++;
        *out = &l->slot[si];
        return gt_now() - t0;
    }
    pthread_mutex_lock(&l->mu);
    if (l->held >= 0) {
        l->state[l->held] = SLOT_EMPTY;
        l->held = -1;
        pthread_cond_broadcast(&l->cv);
    }
    int si = (int)(l->n_taken % 2);
    while (l->state[si] != SLOT_READY) pthread_cond_wait(&l->cv, &l->mu);
    l->state[si] = SLOT_IN_USE;
    l->held = si;
    l->n_taken++;
    pthread_mutex_unlock(&l->mu);
    *out = &l->slot[si];
    return gt_now() - t0;
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
