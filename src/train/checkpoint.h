/* train/checkpoint.h: checkpoints that survive crashes, preemption and bit flips.
 *
 * A checkpoint is one HDF5 file RUN_DIR/checkpoints/ckpt-<step 9 digits>.h5
 * (readable by h5py) holding the model parameters and AdamW moments (by
 * tensor name, PyTorch layouts), the trainer state, the frozen normalisation
 * statistics, the resolved configuration text, and each rank's own state
 * (collective write). It is written to a temporary name, fsynced, renamed into
 * place; then rank 0 writes the commit marker ckpt-<step>.ok holding the xxh64
 * checksum of the whole file, after every rank has finished. A checkpoint
 * without a marker, or whose bytes do not match the marker, is damaged and
 * skipped on resume (the previous one is used). The last `keep` committed
 * checkpoints are kept, and the one of the best validation loss so far
 * (ts.best_step: the trainer writes a checkpoint whenever validation
 * improves), which evaluation loads by default (model selection on the
 * validation split; resume always continues from the newest). The file layout is documented at the top of
 * train/ckpt_impl.h (root attributes magic/format_version/step/..., /model/<name>,
 * /adam_m/<name>, /adam_v/<name>, /train_state attributes, /norm/mean,
 * /norm/std, /config, /ranks/state). */
#ifndef GT_TRAIN_CHECKPOINT_H
#define GT_TRAIN_CHECKPOINT_H

#include <mpi.h>
#include <stdint.h>

#include "data/dataset.h"
#include "nn/model.h"

/* Everything besides the model needed to continue bit-exactly. */
typedef struct gt_train_state {
    int64_t step;        /* optimizer steps done */
    uint64_t epoch;      /* current epoch */
    int64_t batch_k;     /* next global batch within the epoch */
    int64_t samples;     /* training samples seen (global) */
    double best_val;     /* best validation loss so far (early stopping) */
    int64_t best_step;
    int32_t bad_evals;   /* validations without improvement */
    int32_t bad_steps;   /* consecutive non-finite steps */
    float loss_scale;    /* AMP dynamic loss scale (1 on CPU fp32) */
    int64_t scale_good_steps;
    int64_t skipped_steps;
    double elapsed_s;    /* training wall time before this run segment */
    uint64_t seed;
    /* learning-rate reduction on plateau (train.lr_plateau); optional in the
     * file: a checkpoint written before it loads as factor 1, counter 0 */
    double lr_factor;       /* multiplies the warmup + cosine schedule (1 = none) */
    int32_t plateau_evals;  /* validations without improvement since the last improvement or reduction */
} gt_train_state;

/* Collective. Writes the checkpoint of `ts.step`, commits it and prunes to
 * the newest `keep` (keep <= 0: keep all; the one just written is never
 * removed). Returns 0, or GT_EXIT_RESOURCE after logging why (disk full,
 * permissions): the run continues with the previous checkpoint. The same value
 * is returned on every rank; no partial file is left under a final name. The
 * model buffers are written from rank 0 (replicated model); each rank's own
 * checksums go to /ranks/state and a divergence between replicas is warned
 * about. ns and config_text may be NULL (empty /norm, empty /config).
 * why (why_bytes; may be NULL): on rank 0, when the save failed, why (the
 * first failing rank's first error: "cannot reserve 12.0 MiB for ...: No
 * space left on device"); left as it is otherwise. */
int gt_ckpt_save(const char *run_dir, const gt_model *m, const gt_train_state *ts, const gt_norm_stats *ns,
                 const char *config_text, int keep, MPI_Comm comm, char *why, size_t why_bytes);

/* Collective. Loads the newest valid checkpoint of run_dir into m (which must
 * have the same parameter table; a mismatch is a user error naming the
 * tensor and both models), ts and ns. Damaged ones are skipped with a
 * warning. A checkpoint is untrusted input (anyone can recompute its marker):
 * a link out of the file, a virtual or externally stored dataset, a tensor
 * that is not float32 of the model's shape, a train state out of range, or
 * /norm/mean and /norm/std of different lengths, with a value that is not
 * finite or a std <= 0, is a user error (exit 3) naming the file and the
 * dataset or attribute, checked before it is read; so is a checkpoint whose
 * model is not the one RUN_DIR/manifest.json records (another run's). Returns
 * the step loaded, or -1 when there is none. */
int64_t gt_ckpt_load_latest(const char *run_dir, gt_model *m, gt_train_state *ts, gt_norm_stats *ns,
                            MPI_Comm comm);

/* Which checkpoint gt_ckpt_load reads. */
typedef enum gt_ckpt_which {
    GT_CKPT_LATEST = 0, /* the newest valid one (resume) */
    GT_CKPT_BEST = 1,   /* the best_step recorded in the newest valid one; the newest when that one is gone
                           (warning) */
    GT_CKPT_STEP = 2    /* exactly step `want` (valid), else none */
} gt_ckpt_which;
/* Collective. As gt_ckpt_load_latest for the chosen checkpoint; -1 when none. */
int64_t gt_ckpt_load(const char *run_dir, gt_ckpt_which which, int64_t want, gt_model *m, gt_train_state *ts,
                     gt_norm_stats *ns, MPI_Comm comm);
/* Collective. gt_ckpt_load for a run that normalises n_features features
 * (the trainer's dataset, eval's data file; 0: not known): /norm with another
 * count is refused (exit 3) naming the checkpoint. */
int64_t gt_ckpt_load_expect(const char *run_dir, gt_ckpt_which which, int64_t want, gt_model *m, gt_train_state *ts,
                            gt_norm_stats *ns, int n_features, MPI_Comm comm);

/* Not collective: the resolved configuration text stored in the newest valid
 * checkpoint (malloc'd, caller frees), or NULL. Used by --resume RUN_DIR to
 * rebuild the run without the original config file. */
char *gt_ckpt_read_config(const char *run_dir);

/* Signals: SIGTERM and SIGUSR1 (Slurm's warning before a time limit or
 * preemption) set a flag; the trainer checks it at every step boundary
 * (collectively: any rank's flag stops every rank), checkpoints and exits
 * with GT_EXIT_PREEMPTED. */
void gt_signals_install(void);
int gt_signal_pending(void); /* signal number or 0 */
/* Forget a pending signal (after handling it; tests). Not collective. */
void gt_signal_clear(void);
/* Collective: the max over ranks of gt_signal_pending(). */
int gt_signal_pending_any(MPI_Comm comm);

#endif
