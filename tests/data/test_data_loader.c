/* The prefetch loader at P ranks:
 *   - prefetch = 1 yields exactly the batches of prefetch = 0 (n, epoch, k,
 *     x, y, mask, refs), starting mid-epoch (resume) and rolling over two
 *     epoch boundaries (drop_last: k runs 0 .. bpe-1);
 *   - the batch equals gt_dataset_batch_local + gt_dataset_fill directly;
 *   - buffers are 64-byte aligned; the local parts add up to g_batch;
 *   - gt_loader_free mid-epoch joins the thread (the test would hang otherwise);
 *   - with a consumer that sleeps 2 ms per batch (a trainer waiting for the
 *     device), the prefetching loader's
 *     total wait is reported next to the synchronous fill time. */
#include <stdint.h>
#include <time.h>

#include "nilm/nilm.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data_test.h"

/* the trainer's step: the CPU mostly waits for the device, so sleep */
static void work(double s) {
    struct timespec ts = {0, (long)(s * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char path[256];
    dt_path(path, sizeof path, "test_data_loader", comm);
    dt_write_nilm(path, 8, 0, NULL, 0, comm);
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 301;
    cfg.stride = 1;
    gt_dataset *ds = gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
    const int64_t g = 48, nx = gt_dataset_n_x(ds), ny = gt_dataset_n_y(ds);
    const int64_t bpe = gt_dataset_batches_per_epoch(ds, GT_SPLIT_TRAIN, g);
    TEST_REQUIRE(bpe >= 3);
    const int64_t k0 = bpe - 2, n_steps = 2 * bpe + 1;
    const uint64_t e0 = 3;

    gt_loader *a = gt_loader_create(ds, GT_SPLIT_TRAIN, g, e0, k0, 0);
    gt_loader *b = gt_loader_create(ds, GT_SPLIT_TRAIN, g, e0, k0, 1);
    TEST_CHECK(gt_loader_bytes(a) >= 2 * g * (nx + 2 * ny) * (int64_t)sizeof(float));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)g);
    float *x = malloc(sizeof(float) * (size_t)(g * nx)), *y = malloc(sizeof(float) * (size_t)(g * ny)),
          *m = malloc(sizeof(float) * (size_t)(g * ny));
    gt_window_ref *r = malloc(sizeof(gt_window_ref) * (size_t)g);
    int64_t bad = 0, bad_direct = 0, misaligned = 0, bad_sum = 0;
    uint64_t ep = e0;
    int64_t k = k0;
    for (int64_t step = 0; step < n_steps; step++) {
        const gt_batch *ba, *bb;
        double wa = gt_loader_next(a, &ba), wb = gt_loader_next(b, &bb);
        TEST_CHECK(wa >= 0 && wb >= 0);
        bad += ba->n != bb->n || ba->epoch != bb->epoch || ba->k != bb->k || ba->g_batch != g || bb->g_batch != g;
        bad += ba->epoch != ep || ba->k != k;
        int64_t n = ba->n < bb->n ? ba->n : bb->n;
        bad += memcmp(ba->x, bb->x, sizeof(float) * (size_t)(n * nx)) != 0;
        bad += memcmp(ba->y, bb->y, sizeof(float) * (size_t)(n * ny)) != 0;
        bad += memcmp(ba->mask, bb->mask, sizeof(float) * (size_t)(n * ny)) != 0;
        bad += memcmp(ba->refs, bb->refs, sizeof(gt_window_ref) * (size_t)n) != 0;
        misaligned += ((uintptr_t)bb->x | (uintptr_t)bb->y | (uintptr_t)bb->mask) % 64 != 0;
        /* direct */
        int64_t nd = gt_dataset_batch_local(ds, GT_SPLIT_TRAIN, ep, k, g, idx);
        gt_dataset_fill(ds, GT_SPLIT_TRAIN, idx, nd, x, y, m, r);
        bad_direct += nd != bb->n || memcmp(x, bb->x, sizeof(float) * (size_t)(nd * nx)) != 0 ||
                      memcmp(r, bb->refs, sizeof(gt_window_ref) * (size_t)nd) != 0;
        int64_t tot = 0;
        MPI_Allreduce(&bb->n, &tot, 1, MPI_INT64_T, MPI_SUM, comm);
        bad_sum += tot != g;
        if (++k == bpe) k = 0, ep++;
    }
    TEST_EQ_INT(bad, 0);
    TEST_EQ_INT(bad_direct, 0);
    TEST_EQ_INT(misaligned, 0);
    TEST_EQ_INT(bad_sum, 0);
    TEST_CHECK(ep == e0 + 2); /* two roll-overs */
    gt_loader_free(a);
    gt_loader_free(b); /* mid-epoch: the thread has batches in flight */

    /* data stall with a 1 ms consumer: synchronous vs prefetching */
    double wait[2] = {0, 0};
    const int steps = 40;
    const int64_t g2 = gt_dataset_n_windows_global(ds, GT_SPLIT_TRAIN) / 4;
    for (int pf = 0; pf < 2; pf++) {
        gt_loader *l = gt_loader_create(ds, GT_SPLIT_TRAIN, g2, 0, 0, pf);
        const gt_batch *bt;
        gt_loader_next(l, &bt); /* first batch: nothing to overlap with */
        for (int i = 0; i < steps; i++) {
            work(2e-3);
            wait[pf] += gt_loader_next(l, &bt);
        }
        gt_loader_free(l);
    }
    if (rank == 0)
        fprintf(stderr, "loader: %d steps of %lld x %lld floats, consumer 2 ms/step (sleeping): wait %.3f ms synchronous, "
                        "%.3f ms with prefetch\n",
                steps, (long long)g2, (long long)nx, wait[0] * 1e3, wait[1] * 1e3);

    free(idx), free(x), free(y), free(m), free(r);
    gt_dataset_free(ds);
    MPI_Barrier(comm);
    if (rank == 0) remove(path);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
