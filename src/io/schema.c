/* io/schema.c: open + validate a gridtrain HDF5 file (see format.h): the
 * shared part (the file, its root attributes), then the kind's own checks
 * through its row (io/kind.h); and the generic read through the row. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/fsutil.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"

void gt_file_index_free(gt_file_index *ix) {
    free(ix->row_offset);
    const gt_io_kind_i *k = ix->kind_ix ? gt_io_kind_get(ix->kind) : NULL;
    if (k && k->index_free) k->index_free(ix->kind_ix);
    else free(ix->kind_ix);
    memset(ix, 0, sizeof(*ix));
}

hid_t gt_io_open(const char *path, MPI_Comm comm, gt_file_kind expect, gt_file_index *ix, char *err,
                 size_t err_bytes) {
    gt_h5_quiet();
    memset(ix, 0, sizeof(*ix));
    gt_io_check vv = {path, err, err_bytes}, *v = &vv;
    err[0] = '\0';
    struct stat sb;
    if (stat(path, &sb) != 0 || access(path, R_OK) != 0) {
        gt_io_check_fail(v, "cannot open file: %s", strerror(errno));
        return -1;
    }
    /* a FIFO or device would block HDF5's open forever, a directory is a mistake */
    if (!S_ISREG(sb.st_mode)) {
        gt_io_check_fail(v, "not a regular file (%s)", gt_file_type_name(sb.st_mode));
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        gt_io_check_fail(v, "not an HDF5 file");
        return -1;
    }
    hid_t fapl = gt_h5_fapl(comm);
    hid_t f = gt_h5_open_ro(path, fapl, err, err_bytes); /* links, virtual and external storage refused */
    H5Pclose(fapl);
    if (f < 0) return -1;
    char kind[64], known[256];
    int rc = 0;
    const gt_io_kind_i *k = NULL;
    if (gt_h5_attr_read_str(f, "kind", kind, sizeof kind) < 0) {
        rc = gt_io_check_fail(v, "root attribute 'kind' missing or not a string (not a gridtrain file?)");
    } else if ((k = gt_io_kind_by_name(kind)) != NULL) {
        ix->kind = k->id;
    } else {
        gt_io_kinds_text(known, sizeof known);
        rc = gt_io_check_fail(v, "root attribute 'kind': unknown kind '%s' (expected %s)", kind, known);
    }
    if (rc == 0 && gt_h5_attr_read_i64(f, "schema_version", &ix->version) < 0)
        rc = gt_io_check_fail(v, "root attribute 'schema_version' missing or not an integer");
    if (rc == 0 && ix->version != GT_SCHEMA_VERSION)
        rc = gt_io_check_fail(v, "root attribute 'schema_version': version %lld is not supported (this build reads %d)",
                              (long long)ix->version, GT_SCHEMA_VERSION);
    if (rc == 0 && expect != GT_KIND_UNKNOWN && ix->kind != expect)
        rc = gt_io_check_fail(v, "root attribute 'kind': file holds '%s' data, expected '%s'",
                              gt_file_kind_name(ix->kind), gt_file_kind_name(expect));
    if (rc == 0) rc = k->validate(v, f, ix);
    if (rc != 0) {
        gt_file_index_free(ix);
        H5Fclose(f);
        return -1;
    }
    return f;
}

void *gt_io_read(const char *path, gt_file_kind kind, const gt_read_opts *opts, MPI_Comm comm) {
    const gt_io_kind_i *k = gt_io_kind_get(kind);
    GT_CHECK(k && k->read, GT_EXIT_INTERNAL, "%s: no reader of file kind %d", path, (int)kind);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, kind, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    const gt_read_opts defaults = {k->value_limit};
    void *shard = k->read(f, &ix, path, opts ? opts : &defaults, comm);
    gt_file_index_free(&ix);
    H5_CHECK(H5Fclose(f));
    return shard;
}
