/* The tensor-core attention (nn/ops/cuda/attention_tc.cu), bf16 and fp16 tiles, against the
 * CPU reference (nn/ops/cpu/attention.c), forward (out, lse) and backward
 * (dq, dk, dv checked as three tensors), B = 2, head sizes 5 to 128 (zero
 * padded to 16/32/64/128; 5 takes the scalar staging path), L from 1 to 4096
 * with partial tiles, a query row range. Two input kinds per shape:
 *   raw    fp32 qkv and dout: the kernel rounds them to bf16. Tolerances of
 *          bf16 products (test_ops_cuda.c's convention, relative L2 error):
 *          out 1.5e-2, each of dq / dk / dv 3e-2 (dS = P (dP - D) cancels,
 *          which doubles the relative error of the gradient); lse per element
 *          |err| <= 2e-2 + 1e-2 |lse| (an error in the scores, not relative to
 *          the sum).
 *   exact  qkv and dout already bf16 values: only the bf16 P and dS tiles and
 *          the summation order differ from the CPU (~1e-3 relative expected),
 *          so every bound is 4x tighter (out 3.75e-3, grads 7.5e-3, lse
 *          5e-3 + 2.5e-3 |lse|); a wrong mask, tile offset or padding fails.
 * fp16 tiles (3 more mantissa bits, fp32 inputs rounded by the kernel): the
 * exact kind's bounds, on raw inputs.
 * Also: the backward is bit-identical run to run (no atomics); in GT_PREC_BF16
 * and GT_PREC_FP16 the gt_attention_*_cuda entry points give the tensor-core
 * results of their tile type bit for bit for a full call and the fp32 SIMT
 * results for a one-row call; the kernels they pick are attention_plan.h's
 * choice at the device's shared-memory limit, and where the head-size class
 * 128 backward does not fit (sm_86 / sm_89) they run the SIMT backward.
 * Skips (77) without a GPU or on a device below compute capability 8.0. */
#include "attn_test_util.h"
#include "gpu_test_util.h"
#include "nn/ops/attention.h"

static void test_tc_type(gt_attention_tc_type type, int B, int L, int C, int NH, int q0, int nq, int exact) {
    /* a class whose shared memory the device does not allow (hs > 64 on sm_86 / sm_89: the entry
     * points fall back, test_fallback) is not run directly */
    const int fwd_ok = gt_attention_cuda_fits(GT_ATTN_WMMA, GT_ATTN_FWD, C / NH),
              bwd_ok = gt_attention_cuda_fits(GT_ATTN_WMMA, GT_ATTN_BWD, C / NH);
    if (!fwd_ok || !bwd_ok)
        printf("tc hs%d: %s%s%s do not fit this device's shared memory: not run\n", C / NH, fwd_ok ? "" : "forward",
               !fwd_ok && !bwd_ok ? " and " : "", bwd_ok ? "" : "backward");
    if (!fwd_ok) return;
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    const double k = exact || type == GT_ATTENTION_TC_FP16 ? 0.25 : 1.0; /* tolerance factor */
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
    float *dscr = gt_cuda_alloc_floats(gt_attention_cuda_scratch_elems(B, L, NH));
    gt_attention_tc_forward_rows_cuda(type, dout, dlse, dqkv, B, L, C, NH, q0, nq, 0);
    float *ho = gtu_host(dout, no), *hl = gtu_host(dlse, nl);
    char name[128];
    snprintf(name, sizeof name, "tc %s fwd %s B%d L%d hs%d NH%d rows[%d,%d)",
             type == GT_ATTENTION_TC_FP16 ? "fp16" : "bf16", exact ? "exact" : "raw", B, L, C / NH, NH, q0, q0 + nq);
    printf("%s\n", name);
    /* only the rows [q0, q0+nq) are outputs: compare those (others stay 0 on both sides) */
    gtu_rel_l2("out", ho, out, no, 1.5e-2 * k);
    check_lse("lse", hl, lse, nl, 2e-2 * k, 1e-2 * k);

    /* backward from the CPU forward's out and lse, so only the backward differs */
    float *dg = gtu_dev(g, no), *dgq = gt_cuda_alloc_floats(nqkv);
    if (!bwd_ok) {
        free(qkv); free(g); free(out); free(lse); free(gq); free(scr); free(ho); free(hl);
        gt_cuda_free(dqkv); gt_cuda_free(dout); gt_cuda_free(dlse); gt_cuda_free(dscr); gt_cuda_free(dg);
        gt_cuda_free(dgq);
        return;
    }
    float *dref_o = gtu_dev(out, no), *dref_l = gtu_dev(lse, nl);
    gt_cuda_upload(dgq, g, no < nqkv ? no : nqkv); /* garbage: the op must assign every element */
    gt_attention_tc_backward_rows_cuda(type, dgq, dscr, dg, dqkv, dref_o, dref_l, B, L, C, NH, q0, nq, 0);
    float *hgq = gtu_host(dgq, nqkv);
    check_attn_backward(hgq, gq, B, L, C, q0, nq, k);
    /* deterministic: a second backward is bit-identical */
    gt_attention_tc_backward_rows_cuda(type, dgq, dscr, dg, dqkv, dref_o, dref_l, B, L, C, NH, q0, nq, 0);
    float *hgq2 = gtu_host(dgq, nqkv);
    TEST_CHECK(memcmp(hgq, hgq2, nqkv * 4) == 0);
    free(qkv); free(g); free(out); free(lse); free(gq); free(scr); free(ho); free(hl); free(hgq); free(hgq2);
    gt_cuda_free(dqkv); gt_cuda_free(dout); gt_cuda_free(dlse); gt_cuda_free(dscr); gt_cuda_free(dg);
    gt_cuda_free(dgq); gt_cuda_free(dref_o); gt_cuda_free(dref_l);
}

static void test_tc(int B, int L, int C, int NH, int q0, int nq, int exact) {
    test_tc_type(GT_ATTENTION_TC_BF16, B, L, C, NH, q0, nq, exact);
    if (!exact) test_tc_type(GT_ATTENTION_TC_FP16, B, L, C, NH, q0, nq, 0);
}

/* In GT_PREC_BF16 / GT_PREC_FP16 the public entry points use the tensor cores
 * of that tile type for a full call (bit for bit the same as calling them
 * directly) and the fp32 SIMT kernels for a one-row call (same as in
 * GT_PREC_FP32). */
static void test_dispatch(gt_cuda_prec prec) {
    const gt_attention_tc_type type = prec == GT_PREC_FP16 ? GT_ATTENTION_TC_FP16 : GT_ATTENTION_TC_BF16;
    const int B = 2, L = 130, C = 64, NH = 2, mid = L / 2;
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    float *qkv = gtu_rand(nqkv, 1.5f), *g = gtu_rand(no, 1.0f);
    float *dqkv = gtu_dev(qkv, nqkv), *dg = gtu_dev(g, no);
    float *scr = gt_cuda_alloc_floats(gt_attention_cuda_scratch_elems(B, L, NH));
    float *o1 = gt_cuda_alloc_floats(no), *o2 = gt_cuda_alloc_floats(no), *l1 = gt_cuda_alloc_floats(nl),
          *l2 = gt_cuda_alloc_floats(nl), *g1 = gt_cuda_alloc_floats(nqkv), *g2 = gt_cuda_alloc_floats(nqkv);
    printf("dispatch in %s precision\n", prec == GT_PREC_FP16 ? "fp16" : "bf16");
    gt_cuda_set_precision(prec);
    gt_attention_forward_cuda(o1, l1, scr, dqkv, B, L, C, NH, 0);
    gt_attention_backward_cuda(g1, scr, dg, dqkv, o1, l1, B, L, C, NH, 0);
    gt_attention_tc_forward_rows_cuda(type, o2, l2, dqkv, B, L, C, NH, 0, L, 0);
    gt_attention_tc_backward_rows_cuda(type, g2, scr, dg, dqkv, o2, l2, B, L, C, NH, 0, L, 0);
    float *a = gtu_host(o1, no), *b = gtu_host(o2, no), *ga = gtu_host(g1, nqkv), *gb = gtu_host(g2, nqkv);
    TEST_CHECK(memcmp(a, b, no * 4) == 0);
    TEST_CHECK(memcmp(ga, gb, nqkv * 4) == 0);
    printf("  full call: tensor-core results bit for bit\n");
    free(a); free(b); free(ga); free(gb);
    /* one row: SIMT in both precisions */
    gt_attention_forward_rows_cuda(o1, l1, scr, dqkv, B, L, C, NH, mid, 1, 0);
    gt_attention_backward_rows_cuda(g1, scr, dg, dqkv, o1, l1, B, L, C, NH, mid, 1, 0);
    gt_cuda_set_precision(GT_PREC_FP32);
    gt_attention_forward_rows_cuda(o2, l2, scr, dqkv, B, L, C, NH, mid, 1, 0);
    gt_attention_backward_rows_cuda(g2, scr, dg, dqkv, o2, l2, B, L, C, NH, mid, 1, 0);
    a = gtu_host(o1, no); b = gtu_host(o2, no); ga = gtu_host(g1, nqkv); gb = gtu_host(g2, nqkv);
    TEST_CHECK(memcmp(a, b, no * 4) == 0);
    TEST_CHECK(memcmp(ga, gb, nqkv * 4) == 0);
    printf("  one-row call: the fp32 SIMT results bit for bit\n");
    free(a); free(b); free(ga); free(gb); free(qkv); free(g);
    gt_cuda_free(dqkv); gt_cuda_free(dg); gt_cuda_free(scr); gt_cuda_free(o1); gt_cuda_free(o2); gt_cuda_free(l1);
    gt_cuda_free(l2); gt_cuda_free(g1); gt_cuda_free(g2);
}

/* The kernels the entry points pick on this device are attention_plan.h's
 * choice at the limits the device reports; where the head-size class 128
 * backward does not fit (sm_86 / sm_89), the BF16 and FP16 entry points run
 * the SIMT backward: bit for bit the FP32 precision's. */
static void test_fallback(void) {
    int dev = 0, major = 0, optin = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    printf("shared memory per block (opt-in): %d B\n", optin);
    TEST_CHECK(optin >= 101376); /* every sm_80+ device */
    const gt_cuda_prec precs[2] = {GT_PREC_BF16, GT_PREC_FP16};
    for (int p = 0; p < 2; p++) {
        gt_cuda_set_precision(precs[p]);
        const int tiles = precs[p] == GT_PREC_FP16 ? GT_ATTN_TILES_FP16 : GT_ATTN_TILES_BF16;
        for (int hs = 16; hs <= 128; hs *= 2)
            for (int pass = GT_ATTN_FWD; pass <= GT_ATTN_BWD; pass++)
                TEST_EQ_INT(gt_attention_cuda_variant(pass, hs, 64),
                            gt_attn_choose(pass, tiles, 0, hs, 64, major, (size_t)optin).variant);
    }
    gt_cuda_set_precision(GT_PREC_BF16);
    if (gt_attention_cuda_variant(GT_ATTN_BWD, 128, 64) != GT_ATTN_SIMT) {
        gt_cuda_set_precision(GT_PREC_FP32);
        printf("  every head-size class fits this device: no fallback to exercise\n");
        return;
    }
    const int B = 2, L = 80, C = 256, NH = 2; /* hs 128 */
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    float *qkv = gtu_rand(nqkv, 1.5f), *g = gtu_rand(no, 1.0f);
    float *dqkv = gtu_dev(qkv, nqkv), *dg = gtu_dev(g, no), *o = gtu_dev(g, no);
    float *lse = gt_cuda_alloc_floats(nl), *scr = gt_cuda_alloc_floats(gt_attention_cuda_scratch_elems(B, L, NH));
    float *g1 = gt_cuda_alloc_floats(nqkv), *g2 = gt_cuda_alloc_floats(nqkv);
    gt_cuda_set_precision(GT_PREC_FP32);
    gt_attention_forward_cuda(o, lse, scr, dqkv, B, L, C, NH, 0);
    gt_attention_backward_cuda(g1, scr, dg, dqkv, o, lse, B, L, C, NH, 0);
    gt_cuda_set_precision(GT_PREC_BF16);
    gt_attention_backward_cuda(g2, scr, dg, dqkv, o, lse, B, L, C, NH, 0);
    gt_cuda_set_precision(GT_PREC_FP32);
    float *a = gtu_host(g1, nqkv), *b = gtu_host(g2, nqkv);
    TEST_CHECK(memcmp(a, b, nqkv * 4) == 0);
    printf("  hs 128 backward in bf16 precision: the SIMT kernels (the wmma ones do not fit), bit for bit\n");
    free(a); free(b); free(qkv); free(g);
    gt_cuda_free(dqkv); gt_cuda_free(dg); gt_cuda_free(o); gt_cuda_free(lse); gt_cuda_free(scr);
    gt_cuda_free(g1); gt_cuda_free(g2);
}

int main(void) {
    GTU_REQUIRE_GPU();
    char desc[256];
    printf("device: %s\n", gt_device_describe(0, desc, sizeof desc));
    if (!gt_attention_tc_usable()) TEST_SKIP_NO_GPU("device below compute capability 8.0: no bf16 tensor cores");
    for (int exact = 1; exact >= 0; exact--) {
        test_tc(2, 17, 16, 2, 0, 17, exact);    /* hs 8 -> 16: one partial tile */
        test_tc(2, 64, 64, 4, 0, 64, exact);    /* hs 16: exactly one tile */
        test_tc(2, 300, 72, 3, 0, 300, exact);  /* hs 24 -> 32: 5 tiles, the last partial */
        test_tc(2, 300, 256, 8, 0, 300, exact); /* hs 32, 8 heads (the s2p_tf head size) */
        test_tc(2, 130, 128, 2, 0, 130, exact); /* hs 64 */
        test_tc(2, 75, 256, 2, 0, 75, exact);   /* hs 128 */
        test_tc(2, 64, 200, 2, 0, 64, exact);   /* hs 100 -> 128 */
        test_tc(2, 40, 20, 4, 0, 40, exact);    /* hs 5 -> 16: scalar staging */
        test_tc(2, 1, 64, 2, 0, 1, exact);      /* L 1 */
        test_tc(2, 200, 256, 4, 10, 100, exact); /* hs 64, a row range over two query tiles */
    }
    test_tc(2, 4096, 64, 2, 0, 4096, 0); /* L 4096, hs 32: 64 key tiles per row */
    test_dispatch(GT_PREC_BF16);
    test_dispatch(GT_PREC_FP16);
    test_fallback();
    gt_cuda_set_precision(GT_PREC_FP32);
    TEST_DONE();
}
