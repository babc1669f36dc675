/* tests/nn/test_attention_plan.c: the choice of attention kernels
 * (nn/ops/cuda/attention_plan.h, gt_attn_choose: what attention.cu runs at
 * every call) and their dynamic shared memory, on the CPU (no GPU needed).
 *
 * The byte counts are those of the kernels' layouts, counted by hand from
 * attention_tc.cu (3 or 4 staged 64 x (HSP + 8) 16-bit tiles, the P / dS
 * tiles, four per-warp fp32 buffers, lse and D) and attention_mma.cu (128 +
 * 4 x 64 or 256 + 4 x 64 rows of HSP + 8 bf16, lse and D of two
 * 64-query tiles), and the choices at
 * the opt-in limits of the architectures gridtrain builds: sm_80 166912 B,
 * sm_86 / sm_89 101376 B, sm_90 232448 B (CUDA C Programming Guide, "Technical
 * Specifications per Compute Capability"). On sm_86 / sm_89 the head-size
 * class 128 (hs 65..128) must fall back: the wmma backward and the mma
 * forward and backward do not fit, the wmma forward does. tests/gpu/smem_fit.c
 * (ctest gpu_smem_fit) checks the same choices against the static shared
 * memory of the built kernels. */
#include "nn/ops/cuda/attention_plan.h"
#include "test.h"

#define SM80 166912
#define SM86 101376
#define SM90 232448

static void test_bytes(void) {
    static const int hsp[4] = {16, 32, 64, 128};
    static const size_t tc_fwd[4] = {36352, 42496, 54784, 94720}, tc_dq[4] = {56320, 64512, 80896, 113664},
                        tc_dkv[4] = {66048, 74240, 90624, 123392};
    static const size_t mm_fwd[4] = {18432, 30720, 55296, 104448}, mm_dq[4] = {24576, 40960, 73728, 139264},
                        mm_dkv[4] = {25600, 41984, 74752, 140288};
    for (int i = 0; i < 4; i++) {
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_WMMA, GT_ATTN_FWD, 0, hsp[i]), tc_fwd[i]);
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_WMMA, GT_ATTN_FWD, 1, hsp[i]), 0); /* one forward kernel */
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_WMMA, GT_ATTN_BWD, 0, hsp[i]), tc_dq[i]);
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_WMMA, GT_ATTN_BWD, 1, hsp[i]), tc_dkv[i]);
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_MMA, GT_ATTN_FWD, 0, hsp[i]), mm_fwd[i]);
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_MMA, GT_ATTN_BWD, 0, hsp[i]), mm_dq[i]);
        TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_MMA, GT_ATTN_BWD, 1, hsp[i]), mm_dkv[i]);
        TEST_EQ_INT(gt_attn_pass_smem(GT_ATTN_WMMA, GT_ATTN_BWD, hsp[i]), tc_dkv[i]);
        for (int pass = GT_ATTN_FWD; pass <= GT_ATTN_BWD; pass++)
            for (int k = 0; k < 2; k++) TEST_EQ_INT(gt_attn_smem_bytes(GT_ATTN_SIMT, pass, k, hsp[i]), 0);
    }
    /* the largest: 2 x 128 + 4 x 64 rows of 136 bf16, and lse and D of two 64-query tiles */
    TEST_EQ_INT(gt_attn_pass_smem(GT_ATTN_MMA, GT_ATTN_BWD, 128), 512 * 136 * 2 + 2 * 2 * 64 * 4);
    TEST_EQ_INT(gt_attn_pass_smem(GT_ATTN_MMA, GT_ATTN_BWD, 128), 140288);
}

static void test_hsp(void) {
    TEST_EQ_INT(gt_attn_hsp(GT_ATTN_SIMT, 5), 8);
    TEST_EQ_INT(gt_attn_hsp(GT_ATTN_WMMA, 5), 16);
    TEST_EQ_INT(gt_attn_hsp(GT_ATTN_MMA, 24), 32);
    TEST_EQ_INT(gt_attn_hsp(GT_ATTN_WMMA, 100), 128);
    TEST_EQ_INT(gt_attn_hsp(GT_ATTN_SIMT, 64), 64);
}

/* the variant gt_attn_choose picks (and that its bytes are the variant's) */
static gt_attn_variant pick(int pass, int tiles, int mma, int hs, int nq, int cc, size_t optin) {
    const gt_attn_choice c = gt_attn_choose(pass, tiles, mma, hs, nq, cc, optin);
    TEST_EQ_INT(c.hsp, gt_attn_hsp(c.variant, hs));
    TEST_EQ_INT(c.smem[0], gt_attn_smem_bytes(c.variant, pass, 0, c.hsp));
    TEST_EQ_INT(c.smem[1], gt_attn_smem_bytes(c.variant, pass, 1, c.hsp));
    TEST_CHECK(c.smem[0] <= optin && c.smem[1] <= optin); /* never more than the device allows */
    return c.variant;
}

static void test_choices(void) {
    const int F = GT_ATTN_FWD, Bw = GT_ATTN_BWD, BF = GT_ATTN_TILES_BF16, FP = GT_ATTN_TILES_FP16,
              NO = GT_ATTN_TILES_NONE;
    /* fp32 / tf32, short row ranges, devices below sm_80: SIMT */
    TEST_EQ_INT(pick(F, NO, 0, 32, 4096, 9, SM90), GT_ATTN_SIMT);
    TEST_EQ_INT(pick(F, BF, 0, 32, 63, 9, SM90), GT_ATTN_SIMT);
    TEST_EQ_INT(pick(Bw, BF, 1, 32, 1, 8, SM80), GT_ATTN_SIMT); /* s2p_tf's midpoint row */
    TEST_EQ_INT(pick(F, BF, 0, 32, 4096, 7, 65536), GT_ATTN_SIMT);
    TEST_EQ_INT(pick(F, BF, 0, 32, 4096, 8, 0), GT_ATTN_SIMT); /* no opt-in limit read: nothing fits */
    /* sm_80, sm_90: every class on the variant asked for */
    const int hs[5] = {8, 32, 64, 100, 128};
    const size_t big[2] = {SM80, SM90};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 5; i++)
            for (int pass = F; pass <= Bw; pass++) {
                TEST_EQ_INT(pick(pass, BF, 0, hs[i], 64, 9, big[d]), GT_ATTN_WMMA);
                TEST_EQ_INT(pick(pass, FP, 0, hs[i], 64, 9, big[d]), GT_ATTN_WMMA);
                TEST_EQ_INT(pick(pass, BF, 1, hs[i], 64, 9, big[d]), GT_ATTN_MMA);
                TEST_EQ_INT(pick(pass, FP, 1, hs[i], 64, 9, big[d]), GT_ATTN_WMMA); /* mma: bf16 only */
            }
    /* sm_86 / sm_89: up to hs 64 as asked */
    for (int i = 0; i < 3; i++)
        for (int pass = F; pass <= Bw; pass++) {
            TEST_EQ_INT(pick(pass, BF, 0, hs[i], 4096, 8, SM86), GT_ATTN_WMMA);
            TEST_EQ_INT(pick(pass, FP, 0, hs[i], 4096, 8, SM86), GT_ATTN_WMMA);
            TEST_EQ_INT(pick(pass, BF, 1, hs[i], 4096, 8, SM86), GT_ATTN_MMA);
        }
    /* ... and the class 128 falls back pass by pass */
    for (int i = 3; i < 5; i++) {
        TEST_EQ_INT(pick(F, BF, 0, hs[i], 4096, 8, SM86), GT_ATTN_WMMA);  /* 94720 B fits */
        TEST_EQ_INT(pick(F, FP, 0, hs[i], 4096, 8, SM86), GT_ATTN_WMMA);
        TEST_EQ_INT(pick(F, BF, 1, hs[i], 4096, 8, SM86), GT_ATTN_WMMA);  /* mma 104448 B does not */
        TEST_EQ_INT(pick(Bw, BF, 0, hs[i], 4096, 8, SM86), GT_ATTN_SIMT); /* wmma dK/dV 123392 B does not */
        TEST_EQ_INT(pick(Bw, FP, 0, hs[i], 4096, 8, SM86), GT_ATTN_SIMT);
        TEST_EQ_INT(pick(Bw, BF, 1, hs[i], 4096, 8, SM86), GT_ATTN_SIMT); /* mma 140288 B neither */
    }
    /* the edges: a limit one byte short of a kernel's need refuses it */
    TEST_EQ_INT(pick(Bw, BF, 0, 128, 64, 8, 123392), GT_ATTN_WMMA);
    TEST_EQ_INT(pick(Bw, BF, 0, 128, 64, 8, 123391), GT_ATTN_SIMT);
    TEST_EQ_INT(pick(F, BF, 1, 128, 64, 8, 104448), GT_ATTN_MMA);
    TEST_EQ_INT(pick(F, BF, 1, 128, 64, 8, 104447), GT_ATTN_WMMA);
}

int main(void) {
    test_bytes();
    test_hsp();
    test_choices();
    TEST_DONE();
}
