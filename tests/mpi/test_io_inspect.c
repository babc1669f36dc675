/* inspect finds exactly the faults planted by the closed-form source
 * (tests/io/testgen.h, inject = 1), whatever the number of ranks and the read
 * block size; a clean PdM file has no findings; strict mode turns findings
 * into GT_EXIT_DATA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "core/check.h"
#include "io/inspect.h"
#include "io/kind_nilm.h"
#include "io/kind_pdm.h"
#include "io/mpi_test.h"
#include "io/testgen.h"
#include "test.h"

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    char pn[64], pp[64];
    snprintf(pn, sizeof pn, "io_insp_nilm_np%d.h5", size);
    snprintf(pp, sizeof pp, "io_insp_pdm_np%d.h5", size);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 128;
    gt_nilm_source ns;
    tg_nilm ng;
    tg_nilm_source(&ns, &ng, 6, 1, 0.0); /* no low-resolution channel */
    gt_nilm_write(pn, &ns, &wo, MPI_COMM_WORLD, NULL);
    gt_pdm_source ps;
    tg_pdm pg;
    tg_pdm_source(&ps, &pg, 4);
    gt_pdm_write(pp, &ps, &wo, MPI_COMM_WORLD, NULL);

    FILE *null = fopen("/dev/null", "w");
    for (int small = 0; small <= 1; small++) {
        gt_inspect_opts o;
        gt_inspect_opts_defaults(&o);
        if (small) o.block_bytes = 1; /* floor of 1024 rows: blocks split items, state carries over */
        gt_item_report *r = NULL;
        int n = 0;
        int rc = gt_io_inspect(pn, &o, MPI_COMM_WORLD, rank == 0 ? stdout : null, &r, &n);
        TEST_EQ_INT(rc, 0);
        if (rank == 0) {
            TEST_EQ_INT(n, 6);
            for (int h = 0; h < n; h++) {
                TEST_EQ_INT(r[h].index, h);
                TEST_EQ_INT(r[h].id, 1000 + h);
                TEST_EQ_INT(r[h].rows, tg_nilm_rows(h));
                TEST_EQ_INT(r[h].ts_gaps, 0);
                TEST_EQ_INT(r[h].ts_backward, 0);
                TEST_EQ_INT(r[h].nan, h == 1 ? 10 * (1 + TG_NILM_A) : 0);
                TEST_EQ_INT(r[h].nan_runs, h == 1 ? 1 : 0);
                TEST_EQ_INT(r[h].spikes, h == 2 ? 1 : 0);
                TEST_EQ_INT(r[h].stuck_runs, h == 3 ? 1 : 0);
                TEST_EQ_INT(r[h].stuck_rows, h == 3 ? 40 : 0);
                TEST_EQ_INT(r[h].negative, h == 0 ? 1 : 0);
                TEST_EQ_INT(r[h].inf, h == 4 ? 1 : 0);
                int64_t flagged = 0;
                for (int64_t i = 0; i < tg_nilm_rows(h); i++) flagged += tg_flag(h, i);
                TEST_EQ_INT(r[h].own[GT_NILM_OWN_FLAGGED_SPIKE], flagged);
            }
        } else {
            TEST_CHECK(r == NULL && n == 0);
        }
        free(r);
        o.fail_on_data = 1;
        TEST_EQ_INT(gt_io_inspect(pn, &o, MPI_COMM_WORLD, null, NULL, NULL), GT_EXIT_DATA);
        r = NULL;
        rc = gt_io_inspect(pp, &o, MPI_COMM_WORLD, rank == 0 ? stdout : null, &r, &n);
        TEST_EQ_INT(rc, 0); /* clean file, even in strict mode */
        if (rank == 0) {
            TEST_EQ_INT(n, 4);
            for (int t = 0; t < n; t++) {
                TEST_EQ_INT(r[t].rows, tg_pdm_rows(t));
                TEST_EQ_INT(r[t].nan + r[t].inf + r[t].spikes + r[t].stuck_runs + r[t].ts_gaps + r[t].own[GT_PDM_OWN_BAD_LABELS], 0);
            }
        }
        free(r);
    }
    /* a label beyond /legend/event_kind (2 kinds): PdM's own count, a finding */
    if (rank == 0) {
        hid_t f = H5Fopen(pp, H5F_ACC_RDWR, H5P_DEFAULT);
        TEST_REQUIRE(f >= 0);
        hid_t d = H5Dopen2(f, "/labels", H5P_DEFAULT), fs = H5Dget_space(d);
        hsize_t at = (hsize_t)tg_pdm_rows(0) + 7, one = 1; /* row 7 of turbine 1 */
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &one, NULL);
        hid_t ms = H5Screate_simple(1, &one, NULL);
        const uint8_t bad = 5;
        TEST_CHECK(H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, &bad) >= 0);
        H5Sclose(ms), H5Sclose(fs), H5Dclose(d), H5Fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    {
        gt_inspect_opts o;
        gt_inspect_opts_defaults(&o);
        gt_item_report *r = NULL;
        int n = 0;
        TEST_EQ_INT(gt_io_inspect(pp, &o, MPI_COMM_WORLD, null, &r, &n), 0);
        if (rank == 0) {
            TEST_EQ_INT(n, 4);
            for (int t = 0; t < n; t++) TEST_EQ_INT(r[t].own[GT_PDM_OWN_BAD_LABELS], t == 1 ? 1 : 0);
        }
        free(r);
        o.fail_on_data = 1;
        TEST_EQ_INT(gt_io_inspect(pp, &o, MPI_COMM_WORLD, null, NULL, NULL), GT_EXIT_DATA);
    }
    fclose(null);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        remove(pn);
        remove(pp);
    }
    int ok = tg_all(gt_test_failures == 0, MPI_COMM_WORLD);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
