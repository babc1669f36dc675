/* io/write.c: what every kind's collective writer shares (see io/kind.h
 * and docs/data-format.md): the options, the temporary file and its rename,
 * the root attributes. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "core/fsutil.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"

#ifndef GT_VERSION
#define GT_VERSION "unknown"
#endif

void gt_write_opts_defaults(gt_write_opts *o) {
    o->chunk_rows = 65536;
    o->deflate = 0;
    o->batch_bytes = (int64_t)256 << 20;
}

static void check_opts(const gt_write_opts *o) {
    GT_CHECK(o->chunk_rows >= 0, GT_EXIT_USAGE, "chunk rows must be >= 0 (got %lld)", (long long)o->chunk_rows);
    GT_CHECK(o->deflate >= 0 && o->deflate <= 9, GT_EXIT_USAGE, "deflate level must be 0..9 (got %d)", o->deflate);
    GT_CHECK(!(o->chunk_rows == 0 && o->deflate > 0), GT_EXIT_USAGE,
             "compression needs a chunked layout: set chunk rows > 0");
}

void gt_io_write_opts_resolve(const gt_write_opts *in, gt_write_opts *out) {
    if (in) *out = *in;
    else gt_write_opts_defaults(out);
    check_opts(out);
}

/* Collective create of a new unique temporary "<path>.tmp.XXXXXX" next to
 * path (rank 0 chooses the name, H5F_ACC_EXCL creates it: never an existing
 * file, nor through a symbolic link planted at the name), so concurrent
 * writers of one output never share a file; the caller closes and calls
 * gt_io_finish_file. The temporary is removed if the job fails (gt_output_begin). */
hid_t gt_io_create_tmp(const char *path, MPI_Comm comm, char *tmp, size_t tmp_bytes) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char name[4096] = "";
    int err = 0;
    if (rank == 0) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) err = EISDIR;
        else if (gt_tmp_name(path, name, sizeof name) != 0) err = errno;
    }
    MPI_CHECK(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
    if (err) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot create the output '%s': %s%s", path, strerror(err),
                 err == EISDIR ? "" : " (is the directory there and writable?)");
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    MPI_CHECK(MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, comm));
    snprintf(tmp, tmp_bytes, "%s", name);
    gt_output_begin(tmp);
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = gt_h5_create_file(tmp, 1, fapl);
    H5Pclose(fapl);
    int ok = f >= 0, all_ok = 0;
    MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
    if (!all_ok) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot create '%s' (is the directory there and writable?)", tmp);
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    return f;
}

/* Close the file collectively, then rank 0 renames it into place. */
void gt_io_finish_file(hid_t f, const char *tmp, const char *path, MPI_Comm comm) {
    H5_CHECK(H5Fclose(f));
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int err = 0;
    if (rank == 0 && rename(tmp, path) != 0) err = errno;
    MPI_CHECK(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
    if (err) {
        char msg[8192];
        snprintf(msg, sizeof msg, "cannot rename '%s' to '%s': %s", tmp, path, strerror(err));
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    gt_output_end(tmp);
}

void gt_io_root_attrs(hid_t f, const char *kind, const char *generator, const char *config, uint64_t seed) {
    gt_h5_attr_str(f, "kind", kind);
    gt_h5_attr_i64(f, "schema_version", GT_SCHEMA_VERSION);
    gt_h5_attr_str(f, "generator", generator ? generator : "");
    gt_h5_attr_str(f, "generator_config", config ? config : "");
    hid_t sp = H5_CHECK(H5Screate(H5S_SCALAR));
    hid_t a = H5_CHECK(H5Acreate2(f, "generator_seed", H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, H5T_NATIVE_UINT64, &seed));
    H5Aclose(a);
    H5Sclose(sp);
    gt_h5_attr_str(f, "gridtrain_version", GT_VERSION);
}

int64_t gt_io_ts_at(int64_t t0_ms, double period_ms, int64_t i) { return t0_ms + llround((double)i * period_ms); }
