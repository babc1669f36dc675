/* nn/bench.h: model benchmark of the CPU engine (`gridtrain bench model`).
 *
 * For one model configuration, measures on this process, single model, no MPI:
 *   train      samples/s and ms/step of zero_grad + forward + loss + backward
 *              + AdamW (no clipping), after `warmup` untimed steps;
 *   inference  samples/s and ms/batch of forward only (same B);
 *   memory     peak RSS of the process (getrusage), activation and state
 *              bytes of the model;
 *   precision  cfg->precision: fp32, or bf16 products through oneDNN (the
 *              result names what ran each op family and, for bf16, the bf16
 *              matmul peak of gt_gemm in the same run: 2*n^3 / best time);
 *   efficiency model FLOP/s, counted analytically per sample (2*M*N*K per
 *              GEMM-like product; training = 3x forward: backward ~2x), as a
 *              fraction of the sgemm rate OpenBLAS reaches in the same run on
 *              a large square problem (sgemm_n^3, best of a few calls);
 *   s2p_tf     optionally the memory-vs-L check: activation bytes
 *              (gt_model_act_bytes) and the RSS growth of creating the model
 *              and running one train step, for L = 1024, 2048, 4096 at B = 4.
 * Times are the median over the timed steps (samples/s = B / median), which
 * is robust on a shared machine; the mean is reported too.
 * BLAS threads come from OPENBLAS_NUM_THREADS (read, not set, here).
 * Not collective, not thread-safe. Allocates and frees its own model. */
#ifndef GT_NN_BENCH_H
#define GT_NN_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Plain configuration; 0 in a model field means "the kind's default". */
typedef struct gt_nn_bench_config {
    gt_model_kind kind;
    int batch;  /* B, also the model's max_batch (required > 0) */
    int window; /* W (s2p_cnn), L (s2p_tf), T (lstm); 0 = default */
    int tbptt;  /* lstm: truncated-BPTT chunk K (0 = whole window) */
    int n_in, n_out, d_model, n_heads, d_ff, n_layers, hidden; /* 0 = default */
    int steps;       /* timed train steps (>= 1) */
    int warmup;      /* untimed train steps before timing (>= 0) */
    int infer_steps; /* timed forward-only batches; 0 = same as steps, < 0 = skip */
    int sgemm_n;     /* square sgemm size for the peak; 0 = 2048, < 0 = skip */
    int mem_check;   /* run the memory-vs-L check (kinds with bench_mem_check: s2p_tf) */
    gt_precision precision; /* products: FP32 (default), BF16 or AUTO (nn/ops/cpu/gemm.h) */
    uint64_t seed;   /* parameter init and data */
} gt_nn_bench_config;

#define GT_NN_BENCH_MAX_MEM 3

typedef struct gt_nn_bench_result {
    gt_model_config model; /* the resolved model configuration */
    int threads;           /* OpenBLAS threads */
    const char *blas_core; /* OpenBLAS kernel name (static string) */
    size_t n_params;
    size_t act_bytes, state_bytes; /* gt_model_act_bytes / gt_model_state_bytes */
    double fwd_flops_per_sample;   /* analytic model FLOPs of one forward */
    double train_flops_per_sample; /* 3 x forward */
    /* train */
    double train_ms_median, train_ms_mean, train_samples_per_s, train_gflops;
    double first_loss, last_loss; /* loss of the first warm-up and last timed step */
    /* inference (0 when skipped) */
    double infer_ms_median, infer_samples_per_s, infer_gflops;
    /* peaks */
    int64_t peak_rss_bytes; /* process peak after the train and inference runs */
    double sgemm_gflops;    /* 0 when skipped */
    double train_frac_sgemm, infer_frac_sgemm;
    /* bf16 runs: the bf16 matmul rate of gt_gemm in the same run (sgemm_n^3) and the fractions of it */
    double bf16_gflops, train_frac_bf16, infer_frac_bf16;
    char products[320]; /* what ran each op family's products: "linear: onednn brg:...; conv1d: ..." */
    /* s2p_tf memory-vs-L check (n_mem = 0 when not run) */
    int n_mem;
    int mem_L[GT_NN_BENCH_MAX_MEM];
    int mem_B;
    size_t mem_act_bytes[GT_NN_BENCH_MAX_MEM];
    int64_t mem_rss_delta_bytes[GT_NN_BENCH_MAX_MEM]; /* RSS growth: create + one train step */
} gt_nn_bench_result;

/* The bf16 matmul rate of gt_gemm (bf16 products, fp32 accumulation, the
 * conversion of A and B included) on n^3, best of reps calls; 0 without oneDNN. */
double gt_nn_bench_bf16_gflops(int n, int reps);

/* Defaults: batch 32, steps 10, warmup 2, infer_steps 0 (= steps), sgemm_n 0
 * (= 2048), mem_check 0, seed 1, model fields 0 (kind defaults). */
void gt_nn_bench_config_default(gt_nn_bench_config *cfg, gt_model_kind kind);

/* The model configuration the bench builds (kind defaults overridden by the
 * non-zero fields of `cfg`, max_batch = batch). Invalid values end the job
 * with GT_EXIT_USAGE (through gt_model_create). */
void gt_nn_bench_model_config(const gt_nn_bench_config *cfg, gt_model_config *out);

/* Analytic FLOPs of one forward pass of one sample (multiply-adds count 2;
 * GEMM-like products only, elementwise work not counted). Attention counts
 * QK^T and PV (4 L^2 d per block); LSTM counts both gate GEMMs per step. */
double gt_model_forward_flops(const gt_model_config *cfg);
/* `bench model`'s batch when none is given: the kind's (256 / 32 / 64 for
 * s2p_cnn / s2p_tf / lstm; nn/model.h bench_batch), else 32. */
int gt_nn_bench_default_batch(gt_model_kind kind);

/* Best sgemm rate (GFLOP/s) over `reps` calls of C = A B, n x n, after one
 * untimed call. Allocates and frees 3 n^2 floats. */
double gt_nn_bench_sgemm_gflops(int n, int reps);

/* Run the benchmark; fills `res`. Prints nothing. */
void gt_nn_bench_model(const gt_nn_bench_config *cfg, gt_nn_bench_result *res);

/* Human-readable table of `res` to `f`. */
void gt_nn_bench_print(FILE *f, const gt_nn_bench_config *cfg, const gt_nn_bench_result *res);
/* One line "GT_BENCH_JSON {...}" with every result field (for scripts). */
void gt_nn_bench_print_json(FILE *f, const gt_nn_bench_config *cfg, const gt_nn_bench_result *res);

#ifdef __cplusplus
}
#endif
#endif
