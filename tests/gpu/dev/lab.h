/* tests/gpu/dev/lab.h: what the kernel labs (attention.c, lstm.c, conv.c)
 * share: the relative L2 error against the CPU reference and the median time
 * of a call measured with CUDA events (llm.c's dev/cuda is the model). */
#ifndef GT_TESTS_GPU_DEV_LAB_H
#define GT_TESTS_GPU_DEV_LAB_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>

/* ||got - ref|| / ||ref|| (the absolute norm when ref is 0) */
static inline double lab_rel_l2(const float *got, const float *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static inline int lab_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of reps calls of fn(ctx) on stream st, after warmup
 * untimed calls; each call timed alone (events around it, synchronised). */
static inline float lab_median_ms(void (*fn)(void *ctx), void *ctx, cudaStream_t st, int reps, int warmup) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *ms = (float *)malloc(sizeof(float) * (size_t)(reps > 0 ? reps : 1));
    for (int i = -warmup; i < reps; i++) {
        cudaEventRecord(e0, st);
        fn(ctx);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        if (i >= 0) cudaEventElapsedTime(&ms[i], e0, e1);
    }
    qsort(ms, (size_t)reps, sizeof(float), lab_cmp_float);
    float med = reps > 0 ? ms[reps / 2] : 0.0f;
    free(ms);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return med;
}

#endif
