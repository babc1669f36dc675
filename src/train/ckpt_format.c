/* train/ckpt_format.c: the checkpoint file format's tables (train/ckpt_impl.h):
 * the fields of /train_state and their HDF5 types, the buffers' checksum.
 * Serial: no MPI. */
#include "train/ckpt_impl.h"

#include <xxhash.h>

const gt_ckpt_state_field gt_ckpt_state_fields[] = {
    {"step", offsetof(gt_train_state, step), T_I64, 0},
    {"epoch", offsetof(gt_train_state, epoch), T_U64, 0},
    {"batch_k", offsetof(gt_train_state, batch_k), T_I64, 0},
    {"samples", offsetof(gt_train_state, samples), T_I64, 0},
    {"best_val", offsetof(gt_train_state, best_val), T_F64, 0},
    {"best_step", offsetof(gt_train_state, best_step), T_I64, 0},
    {"bad_evals", offsetof(gt_train_state, bad_evals), T_I32, 0},
    {"bad_steps", offsetof(gt_train_state, bad_steps), T_I32, 0},
    {"loss_scale", offsetof(gt_train_state, loss_scale), T_F32, 0},
    {"scale_good_steps", offsetof(gt_train_state, scale_good_steps), T_I64, 0},
    {"skipped_steps", offsetof(gt_train_state, skipped_steps), T_I64, 0},
    {"elapsed_s", offsetof(gt_train_state, elapsed_s), T_F64, 0},
    {"seed", offsetof(gt_train_state, seed), T_U64, 0},
    {"lr_factor", offsetof(gt_train_state, lr_factor), T_F64, 1},
    {"plateau_evals", offsetof(gt_train_state, plateau_evals), T_I32, 1},
};
const int gt_ckpt_n_state_fields = (int)(sizeof gt_ckpt_state_fields / sizeof gt_ckpt_state_fields[0]);

hid_t gt_ckpt_mem_type(int t) {
    switch (t) {
    case T_I32: return H5T_NATIVE_INT32;
    case T_I64: return H5T_NATIVE_INT64;
    case T_U64: return H5T_NATIVE_UINT64;
    case T_F32: return H5T_NATIVE_FLOAT;
    default: return H5T_NATIVE_DOUBLE;
    }
}
hid_t gt_ckpt_file_type(int t) {
    switch (t) {
    case T_I32: return H5T_STD_I32LE;
    case T_I64: return H5T_STD_I64LE;
    case T_U64: return H5T_STD_U64LE;
    case T_F32: return H5T_IEEE_F32LE;
    default: return H5T_IEEE_F64LE;
    }
}

uint64_t gt_ckpt_buf_hash(const float *buf, size_t n) { return XXH64(buf, n * sizeof(float), 0); }
