/* nn/ops/cpu/gemm.h: the one matrix-product entry point of the CPU ops.
 *
 * gt_gemm has cblas_sgemm's semantics (row-major only):
 *   C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C
 * with fp32 A, B, C and leading dimensions lda, ldb, ldc. What computes it
 * depends on the CPU precision of the calling thread (gt_cpu_set_precision):
 *   GT_CPU_FP32  one-thread products on OpenBLAS sgemm or oneDNN's f32
 *                matmul, by ISA and size (the rule in gemm.c); above one
 *                thread a large product is split over the engine's pool
 *                (Threads, below).
 *   GT_CPU_BF16  a oneDNN matmul primitive: A and B are rounded to bf16
 *                (round to nearest even) into per-thread buffers, products
 *                accumulate in fp32 and C stays fp32 (beta through the sum
 *                post-op, alpha through the output scale). On AMX CPUs it
 *                runs on the tile units (brg:avx512_core_amx), on AVX512-BF16
 *                CPUs on vdpbf16ps, elsewhere oneDNN emulates bf16 on
 *                AVX-512 (slower than fp32). Needs a build with oneDNN
 *                (GT_HAVE_DNNL); without it BF16 computes fp32.
 * Primitives are created once per (shape, transposes, alpha, beta, threads)
 * and cached for the life of the process (creation costs ~100 us); the
 * scratchpad is the calling thread's own, so tasks of the engine's pool may
 * call gt_gemm concurrently. Results are the same run to run for the same
 * thread count.
 *
 * Threads: Debian's libdnnl is built with DNNL_CPU_RUNTIME=OMP, but gt_gemm
 * never lets it start an OpenMP team (omp_set_num_threads(1) before every
 * primitive), nor OpenBLAS its threads: a product of at least 32 MFLOP
 * issued outside the engine's pool is split into blocks of rows or columns
 * (multiples of 32 in bf16, 64 in fp32) that run as tasks of the pool
 * (nn/ops/cpu/parallel.h), each a one-thread product; a smaller product, or
 * one issued inside a task, runs on the calling thread. So the engine's pool
 * owns the cores in both precisions, and the results depend on the thread
 * count only through the block split (fixed for a count; oneDNN's fp32
 * gemm:jit keeps its one-thread bits in the blocks, OpenBLAS does not, as
 * with its own threads before). GT_CPU_GEMM_F32=openblas
 * puts every fp32 product on cblas_sgemm with OpenBLAS's own threads, the
 * route before these rules, GT_CPU_GEMM_F32=no-split only the threads
 * (measurements). Without oneDNN fp32 products are cblas_sgemm as is.
 *
 * Op families: each call names the op it belongs to; gt_gemm_impl() says what
 * ran that family's products (for the log, manifest.json and `bench model`). */
#ifndef GT_NN_OPS_CPU_GEMM_H
#define GT_NN_OPS_CPU_GEMM_H

#include <cblas.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_cpu_prec {
    GT_CPU_FP32 = 0,
    GT_CPU_BF16 = 1,
    GT_CPU_FP32_ONEDNN = 2,   /* fp32 on oneDNN's f32 matmul: gt_gemm_prec only (measured against OpenBLAS) */
    GT_CPU_FP32_OPENBLAS = 3, /* fp32 as cblas_sgemm with OpenBLAS's own threads: gt_gemm_prec only (the same) */
} gt_cpu_prec;

typedef enum gt_gemm_family {
    GT_GEMM_LINEAR = 0,
    GT_GEMM_CONV1D,
    GT_GEMM_LSTM,
    GT_GEMM_ATTENTION,
    GT_GEMM_OTHER,
    GT_GEMM_N_FAMILIES
} gt_gemm_family;

/* Or-ed into gt_gemm's `op` (a gt_gemm_family): A (or B) is a parameter
 * tensor, which does not change between gt_cpu_params_changed() calls. Its
 * bf16 copy is then made once and reused (an LSTM's W_hh by every step, a
 * conv1d's weights by every chunk, a linear layer's by forward and backward)
 * instead of at every product. No effect in fp32. */
#define GT_GEMM_A_PARAM 0x100
#define GT_GEMM_B_PARAM 0x200
/* Or-ed into `op`: A is the same storage (pointer, rows, columns, row
 * stride; either orientation) as A of the previous bf16 product issued on
 * this thread, and has not been written since: its bf16 copy is reused (a
 * linear layer's dout feeds the weight gradient as A^T, then dinp as A).
 * Ignored when the storage differs, and in fp32. */
#define GT_GEMM_A_AGAIN 0x400

/* The parameters may have been written (a forward starts: after an optimizer
 * step, a checkpoint load, a broadcast, an init): the bf16 copies of
 * parameter operands are made afresh from here on. nn/model.c calls it at the
 * start of every forward; not while products are running. */
void gt_cpu_params_changed(void);

/* The products' precision of the calling thread and of the tasks of the
 * gt_par_for calls it issues (nn/ops/cpu/parallel.h carries it to them):
 * not process-wide state. nn/model.c sets it from the model's own
 * cfg.precision around each forward and backward (and restores the previous
 * one after), so models of different precisions can run in one process; tests
 * and benchmarks that call ops directly set it around their calls. Default
 * GT_CPU_FP32. GT_CPU_BF16 in a build without oneDNN stays GT_CPU_FP32
 * (gt_cpu_bf16_available). Returns the previous precision. */
gt_cpu_prec gt_cpu_set_precision(gt_cpu_prec p);
gt_cpu_prec gt_cpu_get_precision(void);

/* 1 when this build has oneDNN (bf16 products possible at all). */
int gt_cpu_bf16_available(void);
/* 1 when oneDNN will use bf16 instructions (AVX512-BF16 or AMX) here: the
 * CPU has them and ONEDNN_MAX_CPU_ISA does not exclude them. 0 otherwise
 * (bf16 would be emulated) or without oneDNN. */
int gt_cpu_has_bf16_units(void);
/* oneDNN's effective ISA: "avx512_core_amx", "avx512_core_bf16",
 * "avx512_core", "avx2", ... ("none" without oneDNN). */
const char *gt_cpu_isa_name(void);
/* The CPU's flags that matter here, from /proc/cpuinfo, space separated:
 * e.g. "avx2 avx512f avx512_bf16 amx_bf16 amx_tile" ("?" when unreadable). */
const char *gt_cpu_flags(void);

/* cblas_sgemm semantics, row-major; precision gt_cpu_get_precision().
 * op: the gt_gemm_family, or-ed with GT_GEMM_A_PARAM / GT_GEMM_B_PARAM. */
void gt_gemm(int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* The same in an explicit precision (tests, bench; GT_CPU_FP32_ONEDNN and
 * GT_CPU_FP32_OPENBLAS force one library for fp32, with its own threads). */
void gt_gemm_prec(gt_cpu_prec p, int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N,
                  int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                  int ldc);

/* What ran family fam's products since the process started, e.g.
 * "onednn brg:avx512_core_amx" or "openblas sgemm (fp32)"; "" when the family
 * has run none. The string lives as long as the process. */
const char *gt_gemm_impl(gt_gemm_family fam);
const char *gt_gemm_family_name(gt_gemm_family fam);
/* Records that s (e.g. "onednn brgconv:avx512_core_amx_bf16") ran products
 * of family fam, for gt_gemm_impl: for ops that call oneDNN primitives other
 * than matmul or compute products themselves (nn/ops/cpu/conv1d_dnnl.c,
 * lstm_onednn.c, attention_amx.c). The string s is copied. */
void gt_gemm_note_impl(gt_gemm_family fam, const char *s);

/* Round x to bf16 and back (nearest even): the rounding gt_gemm applies to A and B. */
float gt_bf16_round(float x);

#ifdef GT_HAVE_DNNL
#include <dnnl.h>
/* The process's one oneDNN CPU engine (gt_gemm's), created on first use. */
dnnl_engine_t gt_cpu_dnnl_engine(void);
/* The calling thread's oneDNN stream on that engine, created on first use
 * (every oneDNN user of the CPU ops runs its primitives on it). */
dnnl_stream_t gt_cpu_dnnl_stream(void);
/* A oneDNN call that must succeed (needs core/check.h): an internal error otherwise. */
#define DNNL_CHECK(call)                                                                              \
    do {                                                                                              \
        dnnl_status_t st_ = (call);                                                                   \
        if (st_ != dnnl_success)                                                                      \
            gt_fatal(GT_EXIT_INTERNAL, __FILE__, __LINE__, "oneDNN: %s failed (status %d)", #call, (int)st_); \
    } while (0)
/* dst (n) <- the bf16 bits of src (n): nearest even, NaN kept quiet (gt_gemm's rounding). */
void gt_to_bf16(unsigned short *dst, const float *src, size_t n);
#endif

#ifdef __cplusplus
}
#endif
#endif
