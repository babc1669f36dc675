/* tests/nn/torch/records.h: the parity record file shared with PyTorch
 * (tests/nn/torch/gtrecords.py has the Python twin).
 *
 * Layout (little endian):
 *   magic "GTPARITY" (8 bytes), u32 version (1), u32 count,
 *   count x { u32 name_len, name, u32 dtype (0 f32, 1 i32, 2 f64),
 *             u32 ndim, u64 dims[ndim], data (row-major) }.
 * Test-only code: errors end the program with a message. */
#ifndef GT_TESTS_NN_TORCH_RECORDS_H
#define GT_TESTS_NN_TORCH_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GT_REC_F32 0
#define GT_REC_I32 1
#define GT_REC_F64 2
#define GT_REC_MAX_DIMS 8

/* ---- writer: open, add records, close (patches the count). */
typedef struct gt_rec_writer {
    FILE *f;
    uint32_t count;
} gt_rec_writer;

void gt_rec_open(gt_rec_writer *w, const char *path);
/* dims (ndim) in elements; data holds prod(dims) elements of dtype. */
void gt_rec_add(gt_rec_writer *w, const char *name, int dtype, int ndim, const size_t *dims,
                const void *data);
void gt_rec_add_f32(gt_rec_writer *w, const char *name, const float *data, size_t n);
void gt_rec_add_i32(gt_rec_writer *w, const char *name, const int32_t *data, size_t n);
void gt_rec_add_f64(gt_rec_writer *w, const char *name, const double *data, size_t n);
void gt_rec_close(gt_rec_writer *w);

/* ---- reader: the whole file in memory; records point into it. */
typedef struct gt_rec {
    char *name;
    int dtype, ndim;
    size_t dims[GT_REC_MAX_DIMS];
    size_t n_elem;
    const void *data;
} gt_rec;

typedef struct gt_rec_file {
    unsigned char *buf;
    size_t n_bytes;
    int n_recs;
    gt_rec *recs;
} gt_rec_file;

/* Returns 0 on success, -1 (with a message on stderr) if the file is missing or malformed. */
int gt_rec_load(gt_rec_file *rf, const char *path);
void gt_rec_free(gt_rec_file *rf);
/* The record with this name or NULL. */
const gt_rec *gt_rec_find(const gt_rec_file *rf, const char *name);

#endif
