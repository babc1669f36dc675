/* io/h5.h: small HDF5 helpers of io/, public: eval/ (predictions) and train/
 * (checkpoints) write their HDF5 files with them too (cmake/layers.cmake).
 *
 * All files are opened through the MPI-IO driver on a communicator; "collective"
 * below means every rank of that communicator calls the function with the same
 * arguments except where a per-rank selection is named. */
#ifndef GT_IO_H5_H
#define GT_IO_H5_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* A run of consecutive rows [start, start + count) of a dataset. */
typedef struct gt_row_run {
    int64_t start, count;
} gt_row_run;

/* Silences the HDF5 error stack so that io/ reports its own one-line errors
 * (GT_DEBUG=1 in the environment keeps the library's stack). Idempotent. */
void gt_h5_quiet(void);

/* File access list for the MPI-IO driver over comm with collective metadata
 * reads and writes. Caller closes it with H5Pclose. Not collective. */
hid_t gt_h5_fapl(MPI_Comm comm);
/* Opens an HDF5 file that may come from anyone (a data file, a checkpoint)
 * read-only with fapl (H5P_DEFAULT: the serial driver; gt_h5_fapl: MPI-IO,
 * then collective over its communicator) and checks, before anything else is
 * read, that nothing in it makes HDF5 read outside it or block: it must be a
 * regular file (a FIFO blocks), and every link in it a hard link (no soft
 * link, no external link: one to a FIFO blocks, one to any file reads it;
 * no user-defined link), every dataset stored in the file itself (no virtual
 * dataset, no external raw storage), at most GT_H5_MAX_LINKS links. Returns
 * the file; -1 when it is not a regular HDF5 file HDF5 can open, or
 * GT_H5_REFUSED when it opened but holds such an object; err then has one line
 * naming the file and the object ("PATH: /model/fc1.weight: is an external
 * link to 'x.h5:/y'; ..."). Every
 * other HDF5 open of such a file in gridtrain goes through it, so later
 * H5Dopen2 / H5Gopen2 calls with default lists meet only hard links. */
#define GT_H5_MAX_LINKS 100000
#define GT_H5_REFUSED ((hid_t)-2)
hid_t gt_h5_open_ro(const char *path, hid_t fapl, char *err, size_t err_bytes);
/* gt_h5_open_ro with the serial driver. Not collective. */
hid_t gt_h5_open_serial(const char *path, char *err, size_t err_bytes);
/* Creates a new HDF5 file at path with fapl (gt_h5_fapl: collective over its
 * communicator) and the default creation list: excl 1 fails when path
 * exists (H5F_ACC_EXCL), 0 truncates it. Returns the file, or < 0 with errno
 * as the failure left it. With gt_h5_open_ro the one way gridtrain opens HDF5
 * files: cmake/check_layering.cmake refuses H5Fopen and H5Fcreate outside io/. */
hid_t gt_h5_create_file(const char *path, int excl, hid_t fapl);
/* Transfer list for collective data transfer (H5Dread/H5Dwrite are collective).
 * Caller closes it. For reads (for_read = 1) of unfiltered data the MPI layer may
 * do individual I/O under the collective call: GT_IO_READ_MODE=individual
 * selects it, =collective forces two-phase MPI-IO; the default is chosen in
 * h5.c from the benchmark (see docs/data-format.md). Writes are always
 * collective at both layers (required with filters). */
hid_t gt_h5_dxpl(int for_read);
/* 1 when reads use individual MPI-IO under collective HDF5 calls. */
int gt_h5_read_individual(void);

/* Creates dataset `name` (intermediate groups created) of `type` with rank 1
 * ([n_rows]) or 2 ([n_rows, n_cols]; n_cols > 0). Rows are chunked by
 * chunk_rows (0: contiguous layout, only without compression), deflate 1-9 adds
 * shuffle + deflate. Collective. Returns the dataset id; caller closes it. */
hid_t gt_h5_create(hid_t loc, const char *name, hid_t type, int64_t n_rows, int64_t n_cols,
                   int64_t chunk_rows, int deflate);
/* Small table dataset [n] (contiguous) written by rank 0 of comm, everyone else
 * selects nothing. Collective. buf is read on rank 0 only. */
void gt_h5_write_table(hid_t loc, const char *name, hid_t type, int64_t n_rows, int64_t n_cols,
                       const void *buf, MPI_Comm comm);
/* Fixed-length, nul-terminated string type of `len` bytes; caller closes it. */
hid_t gt_h5_str_type(size_t len);
/* Writes names[n] (each nul-terminated, at most len-1 chars, stride len bytes)
 * as a fixed-length string dataset [n]. Collective. */
void gt_h5_write_strings(hid_t loc, const char *name, const char *names, size_t stride, size_t len,
                         int n, MPI_Comm comm);

/* Scalar attributes on an object. Collective (metadata). */
void gt_h5_attr_str(hid_t obj, const char *name, const char *value);
void gt_h5_attr_i64(hid_t obj, const char *name, int64_t value);
void gt_h5_attr_f64(hid_t obj, const char *name, double value);
/* Reads a scalar string attribute (fixed or variable length) into out (truncated
 * to out_bytes - 1). Returns 0, or -1 when missing or not a string. */
int gt_h5_attr_read_str(hid_t obj, const char *name, char *out, size_t out_bytes);
/* Reads a scalar numeric attribute converted to int64 / double. 0 or -1. */
int gt_h5_attr_read_i64(hid_t obj, const char *name, int64_t *out);
int gt_h5_attr_read_f64(hid_t obj, const char *name, double *out);

/* Selects the union of runs (rows; all n_cols columns) in a dataset's file
 * space: n_runs == 0 selects none. Returns the space (caller closes it) and the
 * total number of rows selected in *n_sel. Not collective. */
hid_t gt_h5_select_runs(hid_t dset, const gt_row_run *runs, int n_runs, int64_t *n_sel);

/* Writes / reads the rows in runs (in increasing order) from / into the packed
 * buffer buf (rows of n_cols elements of mem_type, in run order). A rank with no
 * runs still calls and selects none on both spaces. Collective. */
void gt_h5_write_runs(hid_t dset, hid_t mem_type, const gt_row_run *runs, int n_runs,
                      const void *buf, hid_t dxpl);
void gt_h5_read_runs(hid_t dset, hid_t mem_type, const gt_row_run *runs, int n_runs, void *buf,
                     hid_t dxpl);

/* Whole small dataset read by every rank (independent transfer). Not collective
 * beyond the file's metadata. */
void gt_h5_read_all(hid_t loc, const char *name, hid_t mem_type, void *buf);

/* Runs of global rows of the items owned by `rank` under owner[n_items], with
 * row_offset[n_items + 1]; adjacent items are merged. runs has room for
 * n_items entries. Returns the number of runs. Pure. */
int gt_item_runs(const int64_t *row_offset, const int *owner, int n_items, int rank, gt_row_run *runs);

/* Number of columns of a rank-2 dataset (1 for rank 1). */
int64_t gt_h5_n_cols(hid_t dset);

#endif
