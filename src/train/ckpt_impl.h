/* train/ckpt_impl.h: the pieces of the checkpoint code (train/checkpoint.h)
 * its files share. Private to train/.
 *
 *   ckpt_format.c  the file format: the train-state fields and their HDF5 types
 *   ckpt_dir.c     the directory protocol (POSIX only): names, commit
 *                  markers, listing, pruning
 *   ckpt_check.c   validation of an untrusted checkpoint while it is read
 *   ckpt_write.c   gt_ckpt_save: the collective write and commit
 *   checkpoint.c   choosing and loading a checkpoint, its stored configuration
 *
 * File layout (format_version 1), every name readable by h5py:
 * File layout (format_version 1), every name readable by h5py:
 *   /                 attrs magic "gridtrain-checkpoint", format_version, step,
 *                     created (ISO-8601 UTC), created_unix, n_ranks, model_kind,
 *                     n_params, n_tensors, params_xxh64, adam_m_xxh64, adam_v_xxh64
 *                     (uint64, XXH64 seed 0 of the float32 buffers in table order)
 *   /model/<name>     float32, PyTorch shape (parameters)
 *   /adam_m/<name>    float32, same shape (AdamW first moment)
 *   /adam_v/<name>    float32, same shape (AdamW second moment)
 *   /train_state      group, one attribute per gt_train_state field
 *   /norm/mean, /norm/std  float64 [n]
 *   /config           scalar fixed-length string: the resolved configuration
 *   /ranks/state      uint64 [P, 4]: rank, and that rank's own XXH64 of its
 *                     params / adam_m / adam_v replica (written collectively,
 *                     each rank its row; replicas that differ are reported)
 * */
#ifndef GT_TRAIN_CKPT_IMPL_H
#define GT_TRAIN_CKPT_IMPL_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "dist/reduce.h"
#include "train/checkpoint.h"

#define CKPT_MAGIC "gridtrain-checkpoint"
#define CKPT_VERSION 1
#define CKPT_RANK_COLS 4
#define CKPT_MAX_CONFIG_BYTES (1 << 20) /* a resolved configuration is a few KiB */

/* ---------------------------------------------------- ckpt_format.c -- */

enum { T_I32, T_I64, T_U64, T_F32, T_F64 };
typedef struct gt_ckpt_state_field {
    const char *name;
    size_t offset;
    int type;
    int optional; /* 1: added later; a checkpoint without it keeps the value set before reading */
} gt_ckpt_state_field;
/* one attribute of /train_state per field of gt_train_state */
extern const gt_ckpt_state_field gt_ckpt_state_fields[];
extern const int gt_ckpt_n_state_fields;
hid_t gt_ckpt_mem_type(int t);
hid_t gt_ckpt_file_type(int t);
/* XXH64 (seed 0) of n floats: the root attributes params_xxh64 etc. */
uint64_t gt_ckpt_buf_hash(const float *buf, size_t n);

/* ------------------------------------------------------- ckpt_dir.c --
 * Commit protocol (gt_ckpt_save): a new unique ckpt-<step>.h5.tmp.XXXXXX written collectively,
 * closed, fsynced by every rank; rank 0 removes an old marker of the same step,
 * renames to ckpt-<step>.h5 and fsyncs the directory; after an agreement (all
 * ranks done) rank 0 writes ckpt-<step>.ok.tmp = "xxh64 <16 hex> size <bytes>\n"
 * of the final file, fsyncs, renames to ckpt-<step>.ok, fsyncs the directory.
 * A final name never holds a partial file.
 * */

char *gt_ckpt_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *gt_ckpt_dir(const char *run_dir);                                  /* RUN_DIR/checkpoints */
char *gt_ckpt_name(const char *dir, long long step, const char *suffix); /* DIR/ckpt-<step><suffix> */

/* First failure of a phase on this rank: what failed and errno at that time. */
typedef struct ckpt_err {
    int failed;
    int err_no;
    char what[768];
} ckpt_err;
void gt_ckpt_err_set(ckpt_err *e, int err_no, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int gt_ckpt_fsync(const char *path, int dir);
/* XXH64 (seed 0) and size of a whole regular file (a FIFO is refused, not
 * waited on). 0, or -1 with errno set and, when why is not NULL, the reason
 * in why[128]. */
int gt_ckpt_file_hash(const char *path, uint64_t *hash, int64_t *size_bytes, char *why);
/* The same of the file open at fd, read from its start (pread): 0, or -1
 * with errno set. */
int gt_ckpt_fd_hash(int fd, uint64_t *hash, int64_t *size_bytes);
/* Writes text to path (in dir, open at dirfd) via path.tmp + fsync + rename
 * + directory fsync, every step relative to dirfd. */
int gt_ckpt_write_marker(int dirfd, const char *path, const char *text, ckpt_err *e);
int gt_ckpt_read_marker(const char *path, uint64_t *hash, int64_t *size_bytes, char *why);

enum { CK_H5 = 1, CK_OK = 2, CK_H5_TMP = 4, CK_OK_TMP = 8 };
typedef struct ckpt_entry {
    long long step;
    int flags;
} ckpt_entry;
/* Entries of dir by step, newest first; *n_out entries (malloc'd, caller
 * frees). NULL with *n_out = 0 when the directory does not exist. */
ckpt_entry *gt_ckpt_list(const char *dir, int *n_out);
/* Keeps the `keep` newest committed checkpoints (and always `cur` and `best`),
 * removes uncommitted leftovers older than the newest committed one. */
void gt_ckpt_prune(const char *dir, long long cur, long long best, int keep);

/* ----------------------------------------------------- ckpt_check.c --
 * User errors while loading: every rank sees the same file and model, so all
 * would fail alike; rank 0 reports and aborts the job, the others of comm
 * wait in a barrier for the abort (one message instead of P interleaved
 * ones). comm is MPI_COMM_NULL where rank 0 reads alone. */
#define CKPT_CHECK(comm, cond, ...)                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            int r_ = 0;                                                            \
            if ((comm) != MPI_COMM_NULL) MPI_Comm_rank((comm), &r_);               \
            if (r_ != 0) gt_dist_barrier(comm);                                    \
            gt_fatal(GT_EXIT_DATA, __FILE__, __LINE__, __VA_ARGS__);               \
        }                                                                          \
    } while (0)

/* Opens a checkpoint read-only (fapl: H5P_DEFAULT or gt_h5_fapl's): < 0 when
 * HDF5 cannot open it; a link out of it, a virtual or external dataset is a
 * user error. */
hid_t gt_ckpt_open(MPI_Comm comm, const char *path, hid_t fapl);
/* Rank 0: magic and version; 1 good, 0 not a gridtrain checkpoint (why). */
int gt_ckpt_check_header(const char *path, char *why, size_t why_bytes);
void gt_ckpt_read_attr(MPI_Comm comm, hid_t obj, const char *file, const char *obj_name, const char *name,
                       hid_t mtype, void *out);
void gt_ckpt_model_desc(hid_t f, char *out, size_t out_bytes);
void gt_ckpt_run_model_desc(const gt_model *m, char *out, size_t out_bytes);
H5O_type_t gt_ckpt_obj_type(hid_t loc, const char *name);
void gt_ckpt_read_table(MPI_Comm comm, hid_t f, const char *path, const char *group, const gt_model *m, float *buf);
void gt_ckpt_check_state(MPI_Comm comm, const gt_train_state *st, const char *path);
void gt_ckpt_read_norm(MPI_Comm comm, hid_t f, const char *path, gt_norm_stats *ns, int expect);
void gt_ckpt_check_run_identity(const char *run_dir, const char *path);

#endif
