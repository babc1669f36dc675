/* ckpt_tool: driver for the checkpoint script tests.
 *   ckpt_tool write RUN_DIR            save steps 50 and 100 of the test contents
 *                                      (tests/train/ckpt_test_util.h), print the
 *                                      parameter table "name d0,d1,..." per line
 *   ckpt_tool load RUN_DIR HIDDEN [KIND]  load into the test model with fc1 width
 *                                      HIDDEN (8 matches `write`), or into an
 *                                      lstm when KIND is "lstm"; exit 0 when the
 *                                      contents of step 100 come back bit-exact
 * A mismatching table ends the job with GT_EXIT_DATA (the script checks it). */
#define _GNU_SOURCE
#include "ckpt_test_util.h"

int main(int argc, char **argv) {
    int rank, size;
    ct_mpi_init(&argc, &argv, &rank, &size);
    if (argc < 3) {
        fprintf(stderr, "usage: ckpt_tool write|load RUN_DIR [HIDDEN [KIND]]\n");
        return 2;
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    const char *run = argv[2];
    if (strcmp(argv[1], "write") == 0) {
        gt_model *m = ct_model(8);
        TEST_EQ_INT(ct_save(run, m, 50, 5, comm), 0);
        TEST_EQ_INT(ct_save(run, m, 100, 5, comm), 0);
        if (rank == 0) {
            for (int i = 0; i < gt_model_n_tensors(m); i++) {
                const gt_param_tensor *t = gt_model_tensor(m, i);
                printf("%s ", t->name);
                for (int d = 0; d < t->ndim; d++) printf(d ? ",%d" : "%d", t->shape[d]);
                printf(" %zu\n", t->offset);
            }
        }
        gt_model_free(m);
    } else {
        int hidden = argc > 3 ? atoi(argv[3]) : 8;
        gt_model *m;
        if (argc > 4 && strcmp(argv[4], "lstm") == 0) {
            gt_model_config cfg;
            gt_model_config_default(&cfg, GT_MODEL_LSTM);
            cfg.window = 8, cfg.n_in = cfg.n_out = 2, cfg.hidden = 4, cfg.n_layers = 1, cfg.max_batch = 2;
            m = gt_model_create(&cfg);
        } else {
            m = ct_model(hidden);
        }
        gt_train_state ts;
        gt_norm_stats ns;
        TEST_EQ_INT(ct_load(run, m, &ts, &ns, comm), 100);
        ct_check(m, &ts, &ns, 100);
        gt_model_free(m);
    }
    int failures = gt_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    MPI_Finalize();
    gt_test_failures = rank == 0 ? all : failures;
    TEST_DONE();
}
