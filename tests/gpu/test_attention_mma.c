/* The mma.sync attention (nn/ops/cuda/attention_mma.cu, the lab variant
 * mma_bf16) against the CPU reference (nn/ops/cpu/attention.c), forward
 * (out, lse) and backward (dq, dk, dv checked as three tensors), with the
 * tolerances of the bf16 wmma path (test_attention_tc.c):
 *   raw    fp32 qkv and dout (the conversion kernel rounds them to bf16):
 *          out 1.5e-2, each of dq / dk / dv 3e-2 relative L2; lse per element
 *          |err| <= 2e-2 + 1e-2 |lse|
 *   exact  qkv and dout already bf16 values: every bound 4x tighter (a wrong
 *          fragment map, mask, tile offset or padding fails)
 * Head sizes 5, 8, 16, 24, 32, 64, 100, 128 (HSP 16 to 128); L from 1 to
 * 4096 with partial tiles, several heads, a query row range over two query
 * tiles.
 * Also: the backward is bit-identical run to run (no atomics), dq is zero
 * outside the rows; with gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA) in
 * GT_PREC_BF16 the gt_attention_*_cuda entry points give these kernels'
 * results bit for bit, and with the default (GT_ATTENTION_TC_WMMA) the wmma
 * kernels' (the default path unchanged).
 * Skips (77) without a GPU or on a device below compute capability 8.0. */
#include "attn_test_util.h"
#include "gpu_test_util.h"
#include "nn/ops/attention.h"

static void test_mma(int B, int L, int C, int NH, int q0, int nq, int exact) {
    /* hs > 64 does not fit sm_86 / sm_89's shared memory (the entry points fall back there) */
    if (!gt_attention_cuda_fits(GT_ATTN_MMA, GT_ATTN_FWD, C / NH) ||
        !gt_attention_cuda_fits(GT_ATTN_MMA, GT_ATTN_BWD, C / NH)) {
        printf("mma hs%d: the kernels do not fit this device's shared memory: not run\n", C / NH);
        return;
    }
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    const double k = exact ? 0.25 : 1.0; /* tolerance factor */
    float *qkv = gtu_rand(nqkv, 1.5f), *g = gtu_rand(no, 1.0f);
    if (exact) {
        for (size_t i = 0; i < nqkv; i++) qkv[i] = to_bf16(qkv[i]);
        for (size_t i = 0; i < no; i++) g[i] = to_bf16(g[i]);
    }
    float *out = calloc(no, 4), *lse = calloc(nl, 4), *gq = malloc(nqkv * 4);
    float *scr = malloc(gt_attention_scratch_elems(L) * 4);
    gt_attention_forward_rows(out, lse, scr, qkv, B, L, C, NH, q0, nq);
    gt_attention_backward_rows(gq, scr, g, qkv, out, lse, B, L, C, NH, q0, nq);

    float *dqkv = gtu_dev(qkv, nqkv), *dout = gt_cuda_alloc_floats(no), *dlse = gt_cuda_alloc_floats(nl);
    float *dscr = gt_cuda_alloc_floats(gt_attention_mma_scratch_elems(B, L, C, NH));
    gt_attention_mma_forward_rows_cuda(dout, dlse, dscr, dqkv, B, L, C, NH, q0, nq, 0);
    float *ho = gtu_host(dout, no), *hl = gtu_host(dlse, nl);
    printf("mma fwd %s B%d L%d hs%d NH%d rows[%d,%d)\n", exact ? "exact" : "raw", B, L, C / NH, NH, q0, q0 + nq);
    gtu_rel_l2("out", ho, out, no, 1.5e-2 * k);
    check_lse("lse", hl, lse, nl, 2e-2 * k, 1e-2 * k);

    /* backward from the CPU forward's out and lse, so only the backward differs */
    float *dg = gtu_dev(g, no), *dgq = gt_cuda_alloc_floats(nqkv);
    float *dref_o = gtu_dev(out, no), *dref_l = gtu_dev(lse, nl);
    gt_cuda_upload(dgq, g, no < nqkv ? no : nqkv); /* garbage: the op must assign every element */
    gt_attention_mma_backward_rows_cuda(dgq, dscr, dg, dqkv, dref_o, dref_l, B, L, C, NH, q0, nq, 0);
    float *hgq = gtu_host(dgq, nqkv);
    check_attn_backward(hgq, gq, B, L, C, q0, nq, k);
    /* deterministic: a second backward is bit-identical */
    gt_attention_mma_backward_rows_cuda(dgq, dscr, dg, dqkv, dref_o, dref_l, B, L, C, NH, q0, nq, 0);
    float *hgq2 = gtu_host(dgq, nqkv);
    TEST_CHECK(memcmp(hgq, hgq2, nqkv * 4) == 0);
    free(qkv); free(g); free(out); free(lse); free(gq); free(scr); free(ho); free(hl); free(hgq); free(hgq2);
    gt_cuda_free(dqkv); gt_cuda_free(dout); gt_cuda_free(dlse); gt_cuda_free(dscr); gt_cuda_free(dg);
    gt_cuda_free(dgq); gt_cuda_free(dref_o); gt_cuda_free(dref_l);
}

/* A forward and a backward through each of two paths: bit-identical out, lse and dqkv. */
typedef void (*attn_path)(float *o, float *l, float *gq, float *scr, const float *qkv, const float *g, int B, int L,
                          int C, int NH);
static void path_mma(float *o, float *l, float *gq, float *scr, const float *qkv, const float *g, int B, int L, int C,
                     int NH) {
    gt_attention_mma_forward_rows_cuda(o, l, scr, qkv, B, L, C, NH, 0, L, 0);
    gt_attention_mma_backward_rows_cuda(gq, scr, g, qkv, o, l, B, L, C, NH, 0, L, 0);
}
static void path_wmma(float *o, float *l, float *gq, float *scr, const float *qkv, const float *g, int B, int L, int C,
                      int NH) {
    gt_attention_tc_forward_rows_cuda(GT_ATTENTION_TC_BF16, o, l, qkv, B, L, C, NH, 0, L, 0);
    gt_attention_tc_backward_rows_cuda(GT_ATTENTION_TC_BF16, gq, scr, g, qkv, o, l, B, L, C, NH, 0, L, 0);
}
static void path_public(float *o, float *l, float *gq, float *scr, const float *qkv, const float *g, int B, int L,
                        int C, int NH) {
    gt_attention_forward_cuda(o, l, scr, qkv, B, L, C, NH, 0);
    gt_attention_backward_cuda(gq, scr, g, qkv, o, l, B, L, C, NH, 0);
}
static void same_bits(const char *what, attn_path pa, attn_path pb, int B, int L, int C, int NH) {
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    float *qkv = gtu_rand(nqkv, 1.5f), *g = gtu_rand(no, 1.0f);
    float *dqkv = gtu_dev(qkv, nqkv), *dg = gtu_dev(g, no);
    float *scr = gt_cuda_alloc_floats(gt_attention_mma_scratch_elems(B, L, C, NH));
    float *o[2], *l[2], *gq[2], *h[2][3];
    for (int k = 0; k < 2; k++) {
        o[k] = gt_cuda_alloc_floats(no);
        l[k] = gt_cuda_alloc_floats(nl);
        gq[k] = gt_cuda_alloc_floats(nqkv);
        (k ? pb : pa)(o[k], l[k], gq[k], scr, dqkv, dg, B, L, C, NH);
        h[k][0] = gtu_host(o[k], no);
        h[k][1] = gtu_host(l[k], nl);
        h[k][2] = gtu_host(gq[k], nqkv);
    }
    const int ok = !memcmp(h[0][0], h[1][0], no * 4) && !memcmp(h[0][1], h[1][1], nl * 4) &&
                   !memcmp(h[0][2], h[1][2], nqkv * 4);
    printf("  %s (B%d L%d hs%d): %s\n", what, B, L, C / NH, ok ? "bit for bit" : "DIFFERENT  FAIL");
    TEST_CHECK(ok);
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 3; j++) free(h[k][j]);
        gt_cuda_free(o[k]); gt_cuda_free(l[k]); gt_cuda_free(gq[k]);
    }
    free(qkv); free(g);
    gt_cuda_free(dqkv); gt_cuda_free(dg); gt_cuda_free(scr);
}

int main(void) {
    GTU_REQUIRE_GPU();
    char desc[256];
    printf("device: %s\n", gt_device_describe(0, desc, sizeof desc));
    if (!gt_attention_tc_usable()) TEST_SKIP_NO_GPU("device below compute capability 8.0: no bf16 tensor cores");
    TEST_CHECK(gt_attention_tc_get_kernel() == GT_ATTENTION_TC_WMMA); /* the default */
    for (int exact = 1; exact >= 0; exact--) {
        test_mma(2, 17, 16, 2, 0, 17, exact);     /* hs 8 -> 16: one partial tile */
        test_mma(2, 64, 64, 4, 0, 64, exact);     /* hs 16: exactly one key tile */
        test_mma(2, 300, 72, 3, 0, 300, exact);   /* hs 24 -> 32: 5 key tiles, the last partial; 3 query tiles */
        test_mma(2, 300, 256, 8, 0, 300, exact);  /* hs 32, 8 heads (the s2p_tf head size) */
        test_mma(2, 130, 128, 2, 0, 130, exact);  /* hs 64 */
        test_mma(2, 75, 256, 2, 0, 75, exact);    /* hs 128 */
        test_mma(2, 64, 200, 2, 0, 64, exact);    /* hs 100 -> 128 */
        test_mma(2, 40, 20, 4, 0, 40, exact);     /* hs 5 -> 16 */
        test_mma(2, 1, 64, 2, 0, 1, exact);       /* L 1 */
        test_mma(2, 200, 256, 4, 10, 150, exact); /* hs 64, a row range over two query tiles (128 rows each) */
    }
    test_mma(2, 4096, 64, 2, 0, 4096, 0); /* L 4096, hs 32: 64 key tiles per row */
    test_mma(1, 4096, 128, 2, 0, 4096, 0); /* L 4096, hs 64 */
    printf("dispatch\n");
    gt_cuda_set_precision(GT_PREC_BF16);
    gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA);
    same_bits("bf16, kernel mma: the entry points", path_public, path_mma, 2, 130, 64, 2);
    gt_attention_tc_set_kernel(GT_ATTENTION_TC_WMMA);
    same_bits("bf16, kernel wmma (default): the entry points", path_public, path_wmma, 2, 130, 64, 2);
    gt_cuda_set_precision(GT_PREC_FP32);
    TEST_DONE();
}
