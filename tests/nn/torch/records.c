/* tests/nn/torch/records.c: see records.h. */
#include "records.h"

#include <stdlib.h>
#include <string.h>

static const char kMagic[8] = {'G', 'T', 'P', 'A', 'R', 'I', 'T', 'Y'};
static const uint32_t kVersion = 1;

static void die(const char *msg, const char *what) {
    fprintf(stderr, "records: %s: %s\n", msg, what);
    exit(1);
}

static size_t dtype_size(int dtype) {
    return dtype == GT_REC_F64 ? 8 : 4;
}

static void put(gt_rec_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->f) != n) die("write failed", "");
}

void gt_rec_open(gt_rec_writer *w, const char *path) {
    w->f = fopen(path, "wb");
    if (!w->f) die("cannot create", path);
    w->count = 0;
    put(w, kMagic, 8);
    put(w, &kVersion, 4);
    put(w, &w->count, 4);
}

void gt_rec_add(gt_rec_writer *w, const char *name, int dtype, int ndim, const size_t *dims,
                const void *data) {
    uint32_t len = (uint32_t)strlen(name), dt = (uint32_t)dtype, nd = (uint32_t)ndim;
    size_t n = 1;
    put(w, &len, 4);
    put(w, name, len);
    put(w, &dt, 4);
    put(w, &nd, 4);
    for (int d = 0; d < ndim; d++) {
        uint64_t v = dims[d];
        put(w, &v, 8);
        n *= dims[d];
    }
    put(w, data, n * dtype_size(dtype));
    w->count++;
}

void gt_rec_add_f32(gt_rec_writer *w, const char *name, const float *data, size_t n) {
    gt_rec_add(w, name, GT_REC_F32, 1, &n, data);
}
void gt_rec_add_i32(gt_rec_writer *w, const char *name, const int32_t *data, size_t n) {
    gt_rec_add(w, name, GT_REC_I32, 1, &n, data);
}
void gt_rec_add_f64(gt_rec_writer *w, const char *name, const double *data, size_t n) {
    gt_rec_add(w, name, GT_REC_F64, 1, &n, data);
}

void gt_rec_close(gt_rec_writer *w) {
    if (fseek(w->f, 12, SEEK_SET) != 0) die("seek failed", "");
    put(w, &w->count, 4);
    if (fclose(w->f) != 0) die("close failed", "");
    w->f = NULL;
}

int gt_rec_load(gt_rec_file *rf, const char *path) {
    memset(rf, 0, sizeof *rf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "records: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    rf->n_bytes = sz > 0 ? (size_t)sz : 0;
    rf->buf = (unsigned char *)malloc(rf->n_bytes + 1);
    if (!rf->buf || fread(rf->buf, 1, rf->n_bytes, f) != rf->n_bytes) {
        fclose(f);
        fprintf(stderr, "records: cannot read %s\n", path);
        return -1;
    }
    fclose(f);
    const unsigned char *p = rf->buf, *end = rf->buf + rf->n_bytes;
    uint32_t version, count;
    if (rf->n_bytes < 16 || memcmp(p, kMagic, 8) != 0) goto bad;
    memcpy(&version, p + 8, 4);
    memcpy(&count, p + 12, 4);
    if (version != kVersion) goto bad;
    p += 16;
    rf->recs = (gt_rec *)calloc(count ? count : 1, sizeof(gt_rec));
    for (uint32_t i = 0; i < count; i++) {
        gt_rec *r = &rf->recs[i];
        uint32_t len, dt, nd;
        if (end - p < 4) goto bad;
        memcpy(&len, p, 4);
        p += 4;
        if ((size_t)(end - p) < (size_t)len + 8) goto bad;
        r->name = (char *)malloc(len + 1);
        memcpy(r->name, p, len);
        r->name[len] = 0;
        rf->n_recs = (int)i + 1; /* owns r->name from here on */
        p += len;
        memcpy(&dt, p, 4);
        memcpy(&nd, p + 4, 4);
        p += 8;
        if (dt > 2 || nd > GT_REC_MAX_DIMS || (size_t)(end - p) < 8 * (size_t)nd) goto bad;
        r->dtype = (int)dt;
        r->ndim = (int)nd;
        r->n_elem = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v;
            memcpy(&v, p, 8);
            p += 8;
            r->dims[d] = (size_t)v;
            r->n_elem *= (size_t)v;
        }
        size_t nb = r->n_elem * dtype_size(r->dtype);
        if ((size_t)(end - p) < nb) goto bad;
        r->data = p;
        p += nb;
    }
    if (p != end) goto bad;
    return 0;
bad:
    fprintf(stderr, "records: %s is malformed (magic/version/sizes)\n", path);
    gt_rec_free(rf);
    return -1;
}

void gt_rec_free(gt_rec_file *rf) {
    for (int i = 0; i < rf->n_recs; i++) free(rf->recs[i].name);
    free(rf->recs);
    free(rf->buf);
    memset(rf, 0, sizeof *rf);
}

const gt_rec *gt_rec_find(const gt_rec_file *rf, const char *name) {
    for (int i = 0; i < rf->n_recs; i++)
        if (strcmp(rf->recs[i].name, name) == 0) return &rf->recs[i];
    return NULL;
}
