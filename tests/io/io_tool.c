/* tests/io/io_tool.c: driver for the io script tests (run alone or under mpiexec).
 *   gt_io_tool write-nilm FILE [deflate=0] [inject=0] [chunk_rows=256] [households=6] [lowres_s=60]
 *   gt_io_tool write-pdm FILE [deflate=0] [turbines=6] [chunk_rows=256]
 *   gt_io_tool inspect FILE [strict=0]   exit code of gt_io_inspect
 *   gt_io_tool inspect-many FILE...      inspects each file; rank 0 prints "RESULT rc FILE"
 *   gt_io_tool read FILE                 reads the shards, prints per-rank counts */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/format.h"
#include "io/inspect.h"
#include "io/read.h"
#include "io/mpi_test.h"
#include "io/testgen.h"

static const char *arg(int argc, char **argv, int i, const char *def) { return i < argc ? argv[i] : def; }

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    if (argc < 3) {
        fprintf(stderr, "usage: gt_io_tool write-nilm|write-pdm|inspect|read FILE ...\n");
        MPI_Finalize();
        return 2;
    }
    const char *cmd = argv[1], *path = argv[2];
    int rc = 0;
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.batch_bytes = 64 << 10; /* several collective rounds even on small files */
    if (!strcmp(cmd, "write-nilm")) {
        wo.deflate = atoi(arg(argc, argv, 3, "0"));
        wo.chunk_rows = atoi(arg(argc, argv, 5, "256"));
        gt_nilm_source src;
        tg_nilm g;
        tg_nilm_source(&src, &g, atoi(arg(argc, argv, 6, "6")), atoi(arg(argc, argv, 4, "0")),
                       atof(arg(argc, argv, 7, "60")));
        gt_nilm_write(path, &src, &wo, MPI_COMM_WORLD, NULL);
    } else if (!strcmp(cmd, "write-pdm")) {
        wo.deflate = atoi(arg(argc, argv, 3, "0"));
        wo.chunk_rows = atoi(arg(argc, argv, 5, "256"));
        gt_pdm_source src;
        tg_pdm g;
        tg_pdm_source(&src, &g, atoi(arg(argc, argv, 4, "6")));
        gt_pdm_write(path, &src, &wo, MPI_COMM_WORLD, NULL);
    } else if (!strcmp(cmd, "inspect")) {
        gt_inspect_opts o;
        gt_inspect_opts_defaults(&o);
        o.fail_on_data = atoi(arg(argc, argv, 3, "0"));
        rc = gt_io_inspect(path, &o, MPI_COMM_WORLD, stdout, NULL, NULL);
    } else if (!strcmp(cmd, "inspect-many")) {
        FILE *null = fopen("/dev/null", "w");
        for (int i = 2; i < argc; i++) {
            int r = gt_io_inspect(argv[i], NULL, MPI_COMM_WORLD, null, NULL, NULL);
            if (rank == 0) printf("RESULT %d %s\n", r, argv[i]);
        }
        fclose(null);
    } else if (!strcmp(cmd, "read")) {
        gt_file_index ix;
        char err[GT_IO_ERR_LEN];
        hid_t f = gt_io_open(path, MPI_COMM_WORLD, GT_KIND_UNKNOWN, &ix, err, sizeof err);
        if (f < 0) gt_io_fail(MPI_COMM_WORLD, GT_EXIT_DATA, err);
        H5Fclose(f);
        if (ix.kind == GT_KIND_NILM) {
            gt_nilm_shard *s = gt_nilm_shard_read(path, MPI_COMM_WORLD);
            printf("rank %d: households %d rows %lld\n", rank, s->n_households, (long long)s->n_rows);
            gt_nilm_shard_free(s);
        } else {
            gt_pdm_shard *s = gt_pdm_shard_read(path, MPI_COMM_WORLD);
            printf("rank %d: turbines %d rows %lld\n", rank, s->n_turbines, (long long)s->n_rows);
            gt_pdm_shard_free(s);
        }
        gt_file_index_free(&ix);
    } else {
        fprintf(stderr, "unknown command %s\n", cmd);
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
