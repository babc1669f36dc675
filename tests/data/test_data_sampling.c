/* Global sampling at P ranks against one rank. Rank 0 also builds the same
 * dataset alone (the file read on MPI_COMM_SELF): for every batch of two
 * epochs of the train split, and the val split including its short last
 * batch, the union of the P ranks' local parts (as (household, start) pairs)
 * equals the one-rank batch exactly; over an epoch every window appears at
 * most once and exactly bpe * g_batch windows are drawn; the local part sizes
 * add up to g_batch; epochs differ in order; repeated calls are identical. */
#include "nilm/nilm.h"
#include "data_test.h"

static gt_dataset *make(const char *path, MPI_Comm comm) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 31;
    cfg.stride = 2;
    cfg.holdout_every = 5;
    cfg.seed = 1234;
    return gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
}

/* keys (file_index, start) of this rank's part of batch k, unsorted */
static int64_t batch_keys(const gt_dataset *ds, gt_split s, uint64_t epoch, int64_t k, int64_t g, int64_t *keys) {
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)g);
    int64_t n = gt_dataset_batch_local(ds, s, epoch, k, g, idx);
    gt_window_ref *r = malloc(sizeof(gt_window_ref) * (size_t)(n + 1));
    float *x = malloc(sizeof(float) * (size_t)(n * gt_dataset_n_x(ds) + 1));
    float *y = malloc(sizeof(float) * (size_t)(n * gt_dataset_n_y(ds) + 1));
    float *m = malloc(sizeof(float) * (size_t)(n * gt_dataset_n_y(ds) + 1));
    gt_dataset_fill(ds, s, idx, n, x, y, m, r);
    for (int64_t i = 0; i < n; i++) keys[i] = dt_key(&r[i]);
    /* same answer on a second call */
    int64_t *idx2 = malloc(sizeof(int64_t) * (size_t)g);
    TEST_EQ_INT(gt_dataset_batch_local(ds, s, epoch, k, g, idx2), n);
    TEST_CHECK(n == 0 || memcmp(idx, idx2, sizeof(int64_t) * (size_t)n) == 0);
    free(idx), free(idx2), free(r), free(x), free(y), free(m);
    return n;
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char path[256];
    dt_path(path, sizeof path, "test_data_sampling", comm);
    dt_write_nilm(path, 9, 0, NULL, 0, comm);
    gt_dataset *ds = make(path, comm);
    gt_dataset *ref = rank == 0 ? make(path, MPI_COMM_SELF) : NULL;

    const int64_t g = 64;
    int64_t *keys = malloc(sizeof(int64_t) * (size_t)g), *rkeys = malloc(sizeof(int64_t) * (size_t)g);
    int64_t first_batch[2][64];
    int64_t n_batches_checked = 0;
    for (int s = GT_SPLIT_TRAIN; s <= GT_SPLIT_VAL; s++) {
        const int64_t N = gt_dataset_n_windows_global(ds, s), bpe = gt_dataset_batches_per_epoch(ds, s, g);
        TEST_EQ_INT(bpe, N / g);
        if (rank == 0) TEST_EQ_INT(gt_dataset_n_windows_global(ref, s), N);
        TEST_REQUIRE(bpe >= 2);
        for (uint64_t epoch = 0; epoch < 2; epoch++) {
            int64_t *epoch_keys = rank == 0 ? malloc(sizeof(int64_t) * (size_t)(N + 1)) : NULL, n_epoch = 0;
            int64_t last = s == GT_SPLIT_VAL ? bpe : bpe - 1; /* val: also the short batch after drop_last */
            for (int64_t k = 0; k <= last; k++) {
                int64_t n = batch_keys(ds, s, epoch, k, g, keys);
                int64_t *all = NULL;
                int64_t tot = dt_gather_i64(keys, n, &all, comm);
                if (rank == 0) {
                    int64_t want = k < bpe ? g : N - bpe * g;
                    TEST_EQ_INT(tot, want);
                    int64_t rn = batch_keys(ref, s, epoch, k, g, rkeys);
                    TEST_EQ_INT(rn, want);
                    if (s == GT_SPLIT_TRAIN && k == 0) memcpy(first_batch[epoch], rkeys, sizeof(int64_t) * 64);
                    qsort(all, (size_t)tot, sizeof(int64_t), dt_cmp_i64);
                    qsort(rkeys, (size_t)rn, sizeof(int64_t), dt_cmp_i64);
                    TEST_CHECK(tot == rn && memcmp(all, rkeys, sizeof(int64_t) * (size_t)rn) == 0);
                    if (k < bpe) memcpy(epoch_keys + n_epoch, all, sizeof(int64_t) * (size_t)tot), n_epoch += tot;
                    n_batches_checked++;
                }
                free(all);
            }
            if (rank == 0) {
                TEST_EQ_INT(n_epoch, bpe * g);
                qsort(epoch_keys, (size_t)n_epoch, sizeof(int64_t), dt_cmp_i64);
                int64_t dup = 0;
                for (int64_t i = 1; i < n_epoch; i++) dup += epoch_keys[i] == epoch_keys[i - 1];
                TEST_EQ_INT(dup, 0);
            }
            free(epoch_keys);
        }
    }
    if (rank == 0) {
        int64_t same = 0;
        for (int i = 0; i < 64; i++) same += first_batch[0][i] == first_batch[1][i];
        TEST_CHECK(same < 8); /* epochs 0 and 1 start differently */
        fprintf(stderr, "sampling: %lld batches compared with the 1-rank dataset at %d rank(s)\n",
                (long long)n_batches_checked, size);
    }
    free(keys), free(rkeys);
    gt_dataset_free(ds);
    if (ref) gt_dataset_free(ref);
    MPI_Barrier(comm);
    if (rank == 0) remove(path);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
