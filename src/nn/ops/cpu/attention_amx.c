/* nn/ops/cpu/attention_amx.c: fused flash-style attention in bf16 on AMX tiles
 * (see attention_amx.h; the math is attention.c's, in the same loop orders).
 * The kernels' body is attention_vnni.h, here on the AMX tile registers:
 * TILELOADD, TDPBF16PS, TILESTORED, 16 x 16 x 32 per instruction. */
#include "nn/ops/cpu/attention_amx.h"

#include <stdint.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ok;

static void amx_init(void) {
    /* oneDNN's ISA (it honours ONEDNN_MAX_CPU_ISA), then the kernel's permission for the tile state */
    g_ok = !strcmp(gt_cpu_isa_name(), "avx512_core_amx") &&
           syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

int gt_attn_amx_usable(int hs) {
    pthread_once(&g_once, amx_init);
    return g_ok && hs > 0 && hs <= 64;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16,fma")

typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* every tile 16 rows x 64 bytes; a constant, so that no store to it can be
 * dropped (the compiler does not see ldtilecfg read its operand) */
static const _Alignas(64) tilecfg k_tilecfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

static void tiles_configure(void) { _tile_loadconfig(&k_tilecfg); }

#define VT_BEGIN tiles_configure()
#define VT_END _tile_release()
#define VT_ZERO(t) _tile_zero(t)
#define VT_LOAD(t, p, ld) _tile_loadd(t, p, ld)
#define VT_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define VT_STORE(t, p, ld) _tile_stored(t, p, ld)
#include "nn/ops/cpu/attention_vnni.h"

void gt_attn_amx_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                            int q0, int q1) {
    vnni_forward_bh(out, lse, qkv, b, h, L, C, NH, q0, q1);
}

void gt_attn_amx_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    vnni_backward_bh(dqkv, dout, qkv, out, lse, b, h, L, C, NH, q0, q1);
}

#pragma GCC pop_options

#else /* not x86-64 */

int gt_attn_amx_usable(int hs) {
    (void)hs;
    return 0;
}
void gt_attn_amx_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                            int q0, int q1) {
    (void)out, (void)lse, (void)qkv, (void)b, (void)h, (void)L, (void)C, (void)NH, (void)q0, (void)q1;
    GT_ASSERT(0);
}
void gt_attn_amx_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    (void)dqkv, (void)dout, (void)qkv, (void)out, (void)lse, (void)b, (void)h, (void)L, (void)C, (void)NH,
        (void)q0, (void)q1;
    GT_ASSERT(0);
}

#endif
