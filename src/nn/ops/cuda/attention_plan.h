/* nn/ops/cuda/attention_plan.h: which attention kernels a call runs, and how
 * much dynamic shared memory each of them asks for, as plain C (no CUDA
 * headers). One function, two users: attention.cu picks the kernels of every
 * call with gt_attn_choose (and opts in only the classes that fit), and the
 * shared-memory fit test (tests/gpu/smem_fit.c, ctest gpu_smem_fit) checks,
 * for every architecture of the build, that each kernel gt_attn_choose picks
 * fits that architecture's limit with its static shared memory (cuobjdump)
 * added; tests/nn/test_attention_plan.c checks the choices themselves. The
 * kernels' shared-memory plans (tc_shape in attention_tc.cu, mm_shape in
 * attention_mma.cu) are these macros.
 *
 * Variants:
 *   GT_ATTN_SIMT  fp32 SIMT kernels (attention.cu): static shared memory only
 *                 (at most 2 x 32 x 128 floats + 256 B), any device
 *   GT_ATTN_WMMA  bf16 or fp16 tiles on nvcuda::wmma (attention_tc.cu)
 *   GT_ATTN_MMA   bf16 tiles on mma.sync (attention_mma.cu), asked for with
 *                 GT_ATTN_IMPL=mma
 * The tensor-core variants need compute capability 8.0 and, per block, more
 * than the 48 KiB default of dynamic shared memory: up to 123392 B (wmma) and
 * 140288 B (mma) at head sizes 65..128. sm_80 and sm_87 allow 166912 B per
 * block, sm_90 232448 B, but sm_86 and sm_89 (RTX A5000/A6000, RTX 4090, L4,
 * L40S) 101376 B: there a pass whose kernels do not fit the device's opt-in
 * limit (cudaDevAttrMaxSharedMemoryPerBlockOptin) falls back, mma -> wmma ->
 * SIMT, pass by pass (forward; backward = dQ and dK/dV together). Every
 * variant writes the same layouts and lse convention, so a forward on one and
 * a backward on another agree (docs/gpu.md). */
#ifndef GT_NN_OPS_CUDA_ATTENTION_PLAN_H
#define GT_NN_OPS_CUDA_ATTENTION_PLAN_H

#include <stddef.h>

typedef enum gt_attn_variant { GT_ATTN_SIMT = 0, GT_ATTN_WMMA = 1, GT_ATTN_MMA = 2 } gt_attn_variant;
/* the pass of a call: forward (one kernel), or backward (dQ kernel 0, dK/dV kernel 1) */
enum { GT_ATTN_FWD = 0, GT_ATTN_BWD = 1 };
/* the tile type the precision asks for: none (fp32, tf32: SIMT), bf16 or fp16 */
enum { GT_ATTN_TILES_NONE = 0, GT_ATTN_TILES_BF16 = 1, GT_ATTN_TILES_FP16 = 2 };
/* calls of fewer query rows run on SIMT (s2p_tf's midpoint row would fill one tile row in 64) */
#define GT_ATTN_TC_MIN_ROWS 64

/* ---- attention_tc.cu (wmma): 4 warps, tiles of 64 rows x HSP, element size 2 ---- */
#define GT_ATTN_TC_WARPS 4
#define GT_ATTN_TC_ROWS 64                      /* rows of every staged tile; 16 per warp */
#define GT_ATTN_TC_SLD (GT_ATTN_TC_ROWS + 4)    /* fp32 score tile row stride (floats) */
#define GT_ATTN_TC_PLD (GT_ATTN_TC_ROWS + 8)    /* 16-bit P / dS tile row stride (elements) */
#define GT_ATTN_TC_LDH(h) ((h) + 8)             /* 16-bit row stride of a staged (64, HSP) tile */
#define GT_ATTN_TC_TILE(h) (GT_ATTN_TC_ROWS * GT_ATTN_TC_LDH(h))
/* per-warp fp32 buffer: forward a 16 x 64 score tile, then the 16 x HSP P V; backward S and dP */
#define GT_ATTN_TC_WF_FWD(h) (16 * (GT_ATTN_TC_SLD > (h) ? GT_ATTN_TC_SLD : (h)))
#define GT_ATTN_TC_WF_BWD (2 * 16 * GT_ATTN_TC_SLD)
#define GT_ATTN_TC_FWD_BYTES(h)                                                                       \
    (3 * (size_t)GT_ATTN_TC_TILE(h) * 2 + (size_t)GT_ATTN_TC_ROWS * GT_ATTN_TC_PLD * 2 +            \
     (size_t)GT_ATTN_TC_WARPS * GT_ATTN_TC_WF_FWD(h) * 4 + 2 * GT_ATTN_TC_ROWS * 4)
#define GT_ATTN_TC_DQ_BYTES(h)                                                                        \
    (4 * (size_t)GT_ATTN_TC_TILE(h) * 2 + (size_t)GT_ATTN_TC_ROWS * GT_ATTN_TC_PLD * 2 +            \
     (size_t)GT_ATTN_TC_WARPS * GT_ATTN_TC_WF_BWD * 4)
#define GT_ATTN_TC_DKV_BYTES(h)                                                                       \
    (4 * (size_t)GT_ATTN_TC_TILE(h) * 2 + 2 * (size_t)GT_ATTN_TC_ROWS * GT_ATTN_TC_PLD * 2 +        \
     (size_t)GT_ATTN_TC_WARPS * GT_ATTN_TC_WF_BWD * 4 + 2 * GT_ATTN_TC_ROWS * 4)

/* ---- attention_mma.cu: blocks of GT_ATTN_MMA_WARPS warps own GT_ATTN_MMA_OWN rows (16 per warp)
 * and stream tiles of GT_ATTN_MMA_STR rows; bf16 tiles of rows HSP + 8 elements apart, double
 * buffered (nn/ops/cuda/mma_frag.h) ---- */
#define GT_ATTN_MMA_WARPS 8
#define GT_ATTN_MMA_OWN (16 * GT_ATTN_MMA_WARPS)
#define GT_ATTN_MMA_STR 64
#define GT_ATTN_MMA_FWD_BYTES(h) ((size_t)(GT_ATTN_MMA_OWN + 4 * GT_ATTN_MMA_STR) * ((h) + 8) * 2)
#define GT_ATTN_MMA_DQ_BYTES(h) ((size_t)(2 * GT_ATTN_MMA_OWN + 4 * GT_ATTN_MMA_STR) * ((h) + 8) * 2)
#define GT_ATTN_MMA_DKV_BYTES(h) (GT_ATTN_MMA_DQ_BYTES(h) + 2 * 2 * GT_ATTN_MMA_STR * sizeof(float))

/* the padded head size of each variant: SIMT 8, 16, 32, 64, 128; tensor cores 16, 32, 64, 128 */
static inline int gt_attn_hsp(gt_attn_variant v, int hs) {
    if (v == GT_ATTN_SIMT && hs <= 8) return 8;
    return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : 128;
}

/* Dynamic shared memory, bytes, of kernel k (forward: 0; backward: 0 dQ, 1
 * dK/dV) of variant v at padded head size hsp; 0 for a kernel the pass does
 * not have and for every SIMT kernel. */
static inline size_t gt_attn_smem_bytes(gt_attn_variant v, int pass, int k, int hsp) {
    if (v == GT_ATTN_SIMT || (pass == GT_ATTN_FWD && k != 0) || k < 0 || k > 1) return 0;
    if (v == GT_ATTN_WMMA)
        return pass == GT_ATTN_FWD ? GT_ATTN_TC_FWD_BYTES(hsp) : k == 0 ? GT_ATTN_TC_DQ_BYTES(hsp)
                                                                        : GT_ATTN_TC_DKV_BYTES(hsp);
    return pass == GT_ATTN_FWD ? GT_ATTN_MMA_FWD_BYTES(hsp) : k == 0 ? GT_ATTN_MMA_DQ_BYTES(hsp)
                                                                     : GT_ATTN_MMA_DKV_BYTES(hsp);
}

/* the most dynamic shared memory any kernel of the pass asks for */
static inline size_t gt_attn_pass_smem(gt_attn_variant v, int pass, int hsp) {
    const size_t a = gt_attn_smem_bytes(v, pass, 0, hsp), b = gt_attn_smem_bytes(v, pass, 1, hsp);
    return a > b ? a : b;
}
/* 1 when every kernel of the pass fits `optin` bytes of dynamic shared memory per block */
static inline int gt_attn_fits(gt_attn_variant v, int pass, int hsp, size_t optin) {
    return gt_attn_pass_smem(v, pass, hsp) <= optin;
}

typedef struct gt_attn_choice {
    gt_attn_variant variant;
    int hsp;        /* the variant's padded head size */
    size_t smem[2]; /* dynamic shared memory of the pass's kernels (gt_attn_smem_bytes) */
} gt_attn_choice;

/* The kernels of one call: pass (GT_ATTN_FWD, GT_ATTN_BWD), tiles (GT_ATTN_TILES_*,
 * from the precision), want_mma (bf16 on the mma kernels asked for), head size
 * hs, nq query rows, on a device of compute capability cc_major with `optin`
 * bytes of dynamic shared memory per block at most
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin). The first of mma (when asked,
 * bf16 only), wmma, SIMT whose kernels fit. */
static inline gt_attn_choice gt_attn_choose(int pass, int tiles, int want_mma, int hs, int nq, int cc_major,
                                            size_t optin) {
    gt_attn_choice c;
    c.variant = GT_ATTN_SIMT;
    if (tiles != GT_ATTN_TILES_NONE && nq >= GT_ATTN_TC_MIN_ROWS && cc_major >= 8) {
        const int hsp = gt_attn_hsp(GT_ATTN_WMMA, hs);
        if (tiles == GT_ATTN_TILES_BF16 && want_mma && gt_attn_fits(GT_ATTN_MMA, pass, hsp, optin))
            c.variant = GT_ATTN_MMA;
        else if (gt_attn_fits(GT_ATTN_WMMA, pass, hsp, optin))
            c.variant = GT_ATTN_WMMA;
    }
    c.hsp = gt_attn_hsp(c.variant, hs);
    c.smem[0] = gt_attn_smem_bytes(c.variant, pass, 0, c.hsp);
    c.smem[1] = gt_attn_smem_bytes(c.variant, pass, 1, c.hsp);
    return c;
}

#endif
