/* The bytes of every dataset do not depend on the number of writing ranks:
 * files are written by sub-communicators of 1, 2, 4 ranks (as many as the run
 * has), with and without compression, and rank 0 compares an xxh64 checksum of
 * every dataset's decoded contents (found by walking the file) across them.
 * Closed-form sources always; the real synthetic generators (synth/synth_*.c)
 * when they are built. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "io/h5.h"
#include "io/mpi_test.h"
#include "io/testgen.h"
#include "test.h"
#ifdef GT_TEST_REAL_SYNTH
#include "synth/synth_source.h"
#endif

#define MAX_DS 64
typedef struct {
    int n;
    char name[MAX_DS][64];
    uint64_t hash[MAX_DS];
    int64_t n_bytes[MAX_DS];
} sums;

static herr_t visit(hid_t obj, const char *name, const H5O_info_t *info, void *op) {
    sums *s = op;
    if (info->type != H5O_TYPE_DATASET || s->n >= MAX_DS) return 0;
    hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT);
    hid_t ft = H5Dget_type(ds), mt = H5Tget_native_type(ft, H5T_DIR_ASCEND), sp = H5Dget_space(ds);
    size_t n = (size_t)H5Sget_simple_extent_npoints(sp), sz = H5Tget_size(mt);
    void *buf = calloc(n ? n : 1, sz);
    if (n) H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    snprintf(s->name[s->n], 64, "%s", name);
    s->hash[s->n] = XXH64(buf, n * sz, 0);
    s->n_bytes[s->n] = (int64_t)(n * sz);
    s->n++;
    free(buf);
    H5Sclose(sp);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Dclose(ds);
    return 0;
}

static void checksum(const char *path, sums *s) {
    memset(s, 0, sizeof *s);
    gt_h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, visit, s);
    H5Fclose(f);
}

static void compare(const sums *a, const sums *b, const char *what) {
    TEST_EQ_INT(a->n, b->n);
    for (int i = 0; i < a->n && i < b->n; i++) {
        TEST_CHECK(!strcmp(a->name[i], b->name[i]));
        if (a->hash[i] != b->hash[i] || a->n_bytes[i] != b->n_bytes[i]) {
            fprintf(stderr, "%s: dataset %s differs\n", what, a->name[i]);
            gt_test_failures++;
        }
    }
}

typedef void (*writer)(const char *path, int deflate, MPI_Comm comm);

static void w_tg_nilm(const char *path, int deflate, MPI_Comm comm) {
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.deflate = deflate;
    wo.chunk_rows = 300;
    wo.batch_bytes = 48 << 10;
    gt_nilm_source s;
    tg_nilm g;
    tg_nilm_source(&s, &g, 9, 1, 60.0);
    gt_nilm_write(path, &s, &wo, comm, NULL);
}
static void w_tg_pdm(const char *path, int deflate, MPI_Comm comm) {
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.deflate = deflate;
    wo.chunk_rows = 300;
    wo.batch_bytes = 48 << 10;
    gt_pdm_source s;
    tg_pdm g;
    tg_pdm_source(&s, &g, 5);
    gt_pdm_write(path, &s, &wo, comm, NULL);
}
#ifdef GT_TEST_REAL_SYNTH
static void w_real_nilm(const char *path, int deflate, MPI_Comm comm) {
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.deflate = deflate;
    wo.chunk_rows = 4096;
    wo.batch_bytes = 1 << 20;
    gt_nilm_synth_cfg c;
    gt_nilm_synth_defaults(&c);
    c.n_households = 5;
    c.days = 0.5;
    gt_nilm_source *s = gt_synth_nilm_source(&c);
    gt_nilm_write(path, s, &wo, comm, NULL);
    gt_synth_nilm_source_free(s);
}
static void w_real_pdm(const char *path, int deflate, MPI_Comm comm) {
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.deflate = deflate;
    wo.chunk_rows = 4096;
    wo.batch_bytes = 1 << 20; /* blocks of ~7.6K rows: several per turbine */
    gt_pdm_synth_cfg c;
    gt_pdm_synth_defaults(&c);
    c.n_farms = 2;
    c.turbines_per_farm = 2;
    c.days = 0.03;
    gt_pdm_source *s = gt_synth_pdm_source(&c);
    gt_pdm_write(path, s, &wo, comm, NULL);
    gt_synth_pdm_source_free(s);
}
#endif

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    struct {
        const char *name;
        writer w;
    } cases[] = {
        {"testgen_nilm", w_tg_nilm},
        {"testgen_pdm", w_tg_pdm},
#ifdef GT_TEST_REAL_SYNTH
        {"synth_nilm", w_real_nilm},
        {"synth_pdm", w_real_pdm},
#endif
    };
    int n_cases = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < n_cases; c++) {
        sums ref, cur;
        int have_ref = 0;
        for (int deflate = 0; deflate <= 1; deflate++)
            for (int k = 1; k <= size; k *= 2) {
                char path[128];
                snprintf(path, sizeof path, "io_pindep_%s_np%d_k%d_d%d.h5", cases[c].name, size, k, deflate);
                MPI_Comm sub;
                MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &sub);
                if (rank < k) {
                    cases[c].w(path, deflate, sub);
                    MPI_Comm_free(&sub);
                }
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == 0) {
                    checksum(path, have_ref ? &cur : &ref);
                    if (have_ref) {
                        char what[160];
                        snprintf(what, sizeof what, "%s written by %d rank(s), deflate %d", cases[c].name, k, deflate);
                        compare(&ref, &cur, what);
                    } else {
                        TEST_CHECK(ref.n >= 10); /* walked the whole file */
                        printf("%s: %d datasets\n", cases[c].name, ref.n);
                    }
                    have_ref = 1;
                    remove(path);
                }
            }
    }
    int ok = tg_all(gt_test_failures == 0, MPI_COMM_WORLD);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
