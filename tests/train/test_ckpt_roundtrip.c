/* Checkpoint save + load round trip at 1, 2, 4 ranks: bit-exact parameters,
 * AdamW moments, train state and normalisation statistics; the commit marker
 * holds the file's real xxh64 and size; the configuration text comes back;
 * a checkpoint written with P ranks loads with fewer (sub-communicators of
 * size 1 and 2); replicas that differ between ranks are reported. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <xxhash.h>

#include "ckpt_test_util.h"

static void check_marker(const char *run_dir, long long step) {
    char *h5 = ct_path(run_dir, step, ".h5"), *ok = ct_path(run_dir, step, ".ok");
    FILE *f = fopen(h5, "rb");
    TEST_REQUIRE(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    TEST_REQUIRE(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    char want[128];
    snprintf(want, sizeof want, "xxh64 %016llx size %ld\n", (unsigned long long)XXH64(buf, (size_t)n, 0), n);
    free(buf);
    FILE *g = fopen(ok, "r");
    TEST_REQUIRE(g);
    char got[128] = "";
    size_t k = fread(got, 1, sizeof got - 1, g);
    got[k] = '\0';
    fclose(g);
    if (strcmp(got, want) != 0) fprintf(stderr, "marker '%s' expected '%s'\n", got, want);
    TEST_CHECK(strcmp(got, want) == 0);
    free(h5);
    free(ok);
}

/* Rank 0: turns the checkpoint of `step` into one written before the
 * optional train-state fields existed (lr_factor, plateau_evals deleted) and
 * commits it again (a new marker over the changed bytes). */
static void drop_optional_fields(const char *run_dir, long long step) {
    char *h5 = ct_path(run_dir, step, ".h5"), *ok = ct_path(run_dir, step, ".ok");
    hid_t f = H5Fopen(h5, H5F_ACC_RDWR, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    hid_t g = H5Gopen2(f, "train_state", H5P_DEFAULT);
    TEST_CHECK(H5Adelete(g, "lr_factor") >= 0);
    TEST_CHECK(H5Adelete(g, "plateau_evals") >= 0);
    H5Gclose(g);
    H5Fclose(f);
    FILE *in = fopen(h5, "rb");
    TEST_REQUIRE(in);
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    TEST_REQUIRE(fread(buf, 1, (size_t)n, in) == (size_t)n);
    fclose(in);
    FILE *out = fopen(ok, "w");
    TEST_REQUIRE(out);
    fprintf(out, "xxh64 %016llx size %ld\n", (unsigned long long)XXH64(buf, (size_t)n, 0), n);
    fclose(out);
    free(buf);
    free(h5);
    free(ok);
}

/* Rank 0: the file's n_ranks attribute and /ranks/state [P, 4] rows. */
static void check_ranks(const char *run_dir, long long step, int size) {
    char *h5 = ct_path(run_dir, step, ".h5");
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    int64_t n_ranks = 0;
    hid_t a = H5Aopen(f, "n_ranks", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &n_ranks);
    H5Aclose(a);
    TEST_EQ_INT(n_ranks, size);
    hid_t ds = H5Dopen2(f, "ranks/state", H5P_DEFAULT);
    TEST_REQUIRE(ds >= 0);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[2] = {0, 0};
    TEST_EQ_INT(H5Sget_simple_extent_dims(sp, dims, NULL), 2);
    TEST_EQ_INT(dims[0], size);
    TEST_EQ_INT(dims[1], 4);
    uint64_t *rows = calloc((size_t)size * 4, sizeof *rows);
    H5Dread(ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows);
    for (int r = 0; r < size; r++) {
        TEST_EQ_INT(rows[4 * r], r);
        TEST_CHECK(rows[4 * r + 1] == rows[1]); /* replicas agree */
    }
    free(rows);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(f);
    free(h5);
}

int main(int argc, char **argv) {
    int rank, size;
    ct_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char *run = ct_tmpdir("ckpt-rt", comm);
    gt_model *m = ct_model(8);
    gt_train_state ts;
    gt_norm_stats ns;

    /* nothing yet */
    TEST_EQ_INT(ct_load(run, m, &ts, &ns, comm), -1);
    if (rank == 0) TEST_CHECK(gt_ckpt_read_config(run) == NULL);

    /* step 0 carries best_val = +inf */
    long long steps[3] = {0, 10, 20};
    for (int i = 0; i < 3; i++) TEST_EQ_INT(ct_save(run, m, steps[i], 0, comm), 0);
    MPI_Barrier(comm);
    if (rank == 0) {
        for (int i = 0; i < 3; i++) {
            TEST_CHECK(ct_exists(run, steps[i], ".h5"));
            TEST_CHECK(ct_exists(run, steps[i], ".ok"));
            TEST_CHECK(!ct_exists(run, steps[i], ".h5.tmp"));
            TEST_CHECK(!ct_exists(run, steps[i], ".ok.tmp"));
            check_marker(run, steps[i]);
        }
        TEST_EQ_INT(ct_count_files(run), 6);
        check_ranks(run, 20, size);
        char *cfg = gt_ckpt_read_config(run);
        TEST_REQUIRE(cfg != NULL);
        TEST_CHECK(strcmp(cfg, "[model]\nkind = s2p_cnn\n# saved at step 20\n") == 0);
        free(cfg);
    }

    /* full communicator */
    TEST_EQ_INT(ct_load(run, m, &ts, &ns, comm), 20);
    ct_check(m, &ts, &ns, 20);

    /* fewer ranks than wrote it: 1, and 2 when there are 4 */
    for (int sub = 1; sub < size; sub *= 2) {
        MPI_Comm c;
        MPI_Comm_split(comm, rank < sub ? 0 : MPI_UNDEFINED, rank, &c);
        if (c != MPI_COMM_NULL) {
            gt_model *m2 = ct_model(8);
            TEST_EQ_INT(ct_load(run, m2, &ts, &ns, c), 20);
            ct_check(m2, &ts, &ns, 20);
            gt_model_free(m2);
            MPI_Comm_free(&c);
        }
        MPI_Barrier(comm);
    }

    /* step 0 round trip (inf best_val): keep only it by loading a fresh dir */
    char *run0 = ct_tmpdir("ckpt-rt0", comm);
    TEST_EQ_INT(ct_save(run0, m, 0, 1, comm), 0);
    TEST_EQ_INT(ct_load(run0, m, &ts, &ns, comm), 0);
    ct_check(m, &ts, &ns, 0);
    TEST_CHECK(isinf(ts.best_val));

    /* replicas that differ are reported; the file holds rank 0's copy */
    if (size > 1) {
        ct_capture cap;
        ct_fill(m, 30);
        if (rank == 0) ct_capture_begin(&cap);
        gt_train_state s30;
        gt_norm_stats n30;
        ct_state(&s30, 30);
        ct_norm(&n30, 30);
        if (rank == size - 1) m->params[3] += 1.0f;
        TEST_EQ_INT(gt_ckpt_save(run, m, &s30, &n30, "x", 0, comm, NULL, 0), 0);
        if (rank == 0) {
            char *text = ct_capture_end(&cap);
            TEST_CHECK(strstr(text, "diverged") != NULL);
            free(text);
        }
        TEST_EQ_INT(ct_load(run, m, &ts, &ns, comm), 30);
        ct_check(m, &ts, &ns, 30);
    }

    /* a checkpoint from before the plateau rule: loads with factor 1, counter 0 */
    {
        char *run_old = ct_tmpdir("ckpt-rt-old", comm);
        TEST_EQ_INT(ct_save(run_old, m, 40, 1, comm), 0);
        MPI_Barrier(comm);
        if (rank == 0) drop_optional_fields(run_old, 40);
        MPI_Barrier(comm);
        TEST_EQ_INT(ct_load(run_old, m, &ts, &ns, comm), 40);
        TEST_CHECK(ts.lr_factor == 1.0);
        TEST_EQ_INT(ts.plateau_evals, 0);
        ts.lr_factor = 0.25; /* the rest as written */
        ts.plateau_evals = 1;
        ct_check(m, &ts, &ns, 40);
        MPI_Barrier(comm);
        if (rank == 0) ct_rm_rf(run_old);
        free(run_old);
    }

    gt_model_free(m);
    MPI_Barrier(comm);
    if (rank == 0) {
        ct_rm_rf(run);
        ct_rm_rf(run0);
    }
    free(run);
    free(run0);
    int failures = gt_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    MPI_Finalize();
    gt_test_failures = rank == 0 ? all : failures;
    TEST_DONE();
}
