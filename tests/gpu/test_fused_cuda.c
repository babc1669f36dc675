/* s2p_tf's fused glue ops (nn/ops/cuda/ops_cuda.h: residual add + LayerNorm,
 * bias + GELU, GELU' + bias gradient, LayerNorm backward accumulating into the
 * residual gradient) against
 *   1. the unfused CUDA sequence each replaces: the same bits, element for
 *      element (the fused kernels run the same float operations in the same
 *      order, products and sums kept apart with __fmul_rn / __fadd_rn), with
 *      the aliasing the model uses (sum on a, out on b, pre on out);
 *   2. the CPU ops: sums exact, LayerNorm and GELU at the elementwise
 *      tolerances of test_ops_cuda.c (atol 1e-6 x max, rtol 1e-5), GEMM-based
 *      results at the fp32 GEMM tolerances (1e-5, 1e-4).
 * Shapes: row lengths 1 to 1029 (partial warps, several passes per lane),
 * 1 to 4100 rows, broadcast tables (the positions' add). Skips (77) without a
 * GPU. */
#include "gpu_test_util.h"
#include "nn/ops/ops.h"

static void bits_equal(const char *what, const void *got, const void *ref, size_t n, size_t elem) {
    size_t bad = 0, first = 0;
    const unsigned char *g = (const unsigned char *)got, *r = (const unsigned char *)ref;
    for (size_t i = 0; i < n; i++)
        if (memcmp(g + i * elem, r + i * elem, elem)) {
            if (!bad) first = i;
            bad++;
        }
    printf("  %-46s n=%-8zu %s", what, n, bad ? "" : "bit-identical\n");
    if (bad) {
        printf("%zu differ, first at %zu  FAIL\n", bad, first);
        fprintf(stderr, "%s: %zu of %zu elements differ from the unfused sequence\n", what, bad, n);
        gt_test_failures++;
    }
}

static uint16_t *dev_u16(size_t n) { return (uint16_t *)gt_cuda_alloc_floats(n / 2 + 1); }
static uint16_t *host_u16(const uint16_t *d, size_t n) {
    float *h = gtu_host((const float *)d, n / 2 + 1);
    return (uint16_t *)h;
}

/* sum = a + (b + bb), LayerNorm(sum): b has b_rows rows (N % b_rows == 0);
 * alias: sum written over a, out over b (b_rows == N). */
static void test_add_ln(int N, int C, int b_rows, int with_bias, int alias) {
    const size_t n = (size_t)N * C, nb = (size_t)b_rows * C;
    const float eps = 1e-5f;
    float *a = gtu_rand(n, 2.0f), *b = gtu_rand(nb, 1.0f), *bb = gtu_rand(C, 0.5f);
    float *w = gtu_rand(C, 1.0f), *bias = gtu_rand(C, 0.5f);
    for (size_t i = 0; i < n; i++) a[i] += 0.75f; /* non-zero mean */
    float *da = gtu_dev(a, n), *db = gtu_dev(b, nb), *dbb = gtu_dev(bb, C), *dw = gtu_dev(w, C),
          *dbias = gtu_dev(bias, C);
    /* unfused: bias (k_add_bcast = k_bias_act's add), residual add, LayerNorm */
    float *bsum = gtu_dev(b, nb), *s1 = gt_cuda_alloc_floats(n), *o1 = gt_cuda_alloc_floats(n);
    float *m1 = gt_cuda_alloc_floats(N), *r1 = gt_cuda_alloc_floats(N);
    if (with_bias) gt_add_bcast_cuda(bsum, bsum, dbb, (size_t)b_rows, (size_t)C, 0);
    if (b_rows == N) gt_add_cuda(s1, da, bsum, n, 0);
    else gt_add_bcast_cuda(s1, da, bsum, (size_t)(N / b_rows), nb, 0);
    gt_layernorm_forward_cuda(o1, m1, r1, s1, dw, dbias, N, C, eps, 0);
    /* fused */
    float *s2 = alias ? gtu_dev(a, n) : gt_cuda_alloc_floats(n), *a2 = alias ? s2 : da;
    float *o2 = alias ? gtu_dev(b, nb) : gt_cuda_alloc_floats(n), *b2 = alias ? o2 : db;
    float *m2 = gt_cuda_alloc_floats(N), *r2 = gt_cuda_alloc_floats(N);
    gt_add_layernorm_forward_cuda(s2, o2, m2, r2, a2, b2, b_rows, with_bias ? dbb : NULL, dw, dbias, N, C, eps, 0);
    char what[96];
    float *hs1 = gtu_host(s1, n), *hs2 = gtu_host(s2, n), *ho1 = gtu_host(o1, n), *ho2 = gtu_host(o2, n);
    float *hm1 = gtu_host(m1, N), *hm2 = gtu_host(m2, N), *hr1 = gtu_host(r1, N), *hr2 = gtu_host(r2, N);
    snprintf(what, sizeof what, "add+ln N%d C%d rows%d%s%s sum", N, C, b_rows, with_bias ? " bias" : "",
             alias ? " alias" : "");
    bits_equal(what, hs2, hs1, n, 4);
    snprintf(what, sizeof what, "add+ln N%d C%d rows%d out", N, C, b_rows);
    bits_equal(what, ho2, ho1, n, 4);
    snprintf(what, sizeof what, "add+ln N%d C%d rows%d mean, rstd", N, C, b_rows);
    bits_equal(what, hm2, hm1, N, 4);
    bits_equal(what, hr2, hr1, N, 4);
    /* the CPU: the same sums, LayerNorm at elementwise tolerance */
    float *sref = malloc(n * 4), *oref = malloc(n * 4), *mref = malloc(N * 4), *rref = malloc(N * 4);
    for (size_t i = 0; i < n; i++) {
        size_t j = i % nb;
        float v = with_bias ? b[j] + bb[j % C] : b[j];
        sref[i] = a[i] + v;
    }
    gt_layernorm_forward(oref, mref, rref, sref, w, bias, N, C, eps);
    snprintf(what, sizeof what, "add+ln N%d C%d sum vs CPU", N, C);
    bits_equal(what, hs2, sref, n, 4);
    gtu_close("add+ln out vs CPU", ho2, oref, n, 1e-6, 1e-5);
    gtu_close("add+ln rstd vs CPU", hr2, rref, N, 1e-6, 1e-5);
    free(a); free(b); free(bb); free(w); free(bias); free(hs1); free(hs2); free(ho1); free(ho2); free(hm1);
    free(hm2); free(hr1); free(hr2); free(sref); free(oref); free(mref); free(rref);
    gt_cuda_free(da); gt_cuda_free(db); gt_cuda_free(dbb); gt_cuda_free(dw); gt_cuda_free(dbias);
    gt_cuda_free(bsum); gt_cuda_free(s1); gt_cuda_free(o1); gt_cuda_free(m1); gt_cuda_free(r1);
    gt_cuda_free(s2); gt_cuda_free(o2); gt_cuda_free(m2); gt_cuda_free(r2);
}

/* pre += bias, out = GELU(pre) (keep: the pre-activation in bf16, out over pre) */
static void test_bias_gelu(int N, int OC, int keep) {
    const size_t n = (size_t)N * OC;
    float *p = gtu_rand(n, 6.0f), *bias = gtu_rand(OC, 1.0f);
    float *dbias = gtu_dev(bias, OC);
    float *p1 = gtu_dev(p, n), *o1 = gt_cuda_alloc_floats(n);
    uint16_t *k1 = dev_u16(n), *k2 = dev_u16(n);
    gt_add_bcast_cuda(p1, p1, dbias, (size_t)N, (size_t)OC, 0);
    if (keep) gt_gelu_forward_keep_bf16_cuda(o1, k1, p1, n, 0);
    else gt_gelu_forward_cuda(o1, p1, n, 0);
    float *p2 = gtu_dev(p, n), *o2 = keep ? p2 : gt_cuda_alloc_floats(n);
    gt_bias_gelu_forward_cuda(o2, p2, keep ? k2 : NULL, dbias, (size_t)N, OC, 0);
    char what[96];
    float *ho1 = gtu_host(o1, n), *ho2 = gtu_host(o2, n), *hp1 = gtu_host(p1, n);
    snprintf(what, sizeof what, "bias+gelu N%d OC%d%s out", N, OC, keep ? " keep-bf16" : "");
    bits_equal(what, ho2, ho1, n, 4);
    if (keep) {
        uint16_t *hk1 = host_u16(k1, n), *hk2 = host_u16(k2, n);
        bits_equal("bias+gelu kept bf16 pre-activation", hk2, hk1, n, 2);
        free(hk1); free(hk2);
    } else {
        float *hp2 = gtu_host(p2, n);
        bits_equal("bias+gelu pre-activation", hp2, hp1, n, 4);
        free(hp2);
    }
    float *pref = malloc(n * 4), *oref = malloc(n * 4);
    for (size_t i = 0; i < n; i++) pref[i] = p[i] + bias[i % OC];
    gt_gelu_forward(oref, pref, n);
    gtu_close("bias+gelu out vs CPU", ho2, oref, n, 1e-6, 1e-5);
    free(p); free(bias); free(ho1); free(ho2); free(hp1); free(pref); free(oref);
    gt_cuda_free(dbias); gt_cuda_free(p1); gt_cuda_free(o1); gt_cuda_free((float *)k1); gt_cuda_free((float *)k2);
    gt_cuda_free(p2);
    if (!keep) gt_cuda_free(o2);
}

/* dz = dout * GELU'(pre), db += colsum(dz), dw += dz^T inp, dinp = dz w */
static void test_linear_gelu_bwd(int N, int C, int OC, int bf16) {
    const size_t no = (size_t)N * OC, ni = (size_t)N * C, nw = (size_t)OC * C;
    float *inp = gtu_rand(ni, 1.0f), *w = gtu_rand(nw, 0.2f), *pre = gtu_rand(no, 5.0f), *g = gtu_rand(no, 1.0f);
    float *gw0 = gtu_rand(nw, 0.1f), *gb0 = gtu_rand(OC, 0.1f);
    float *dinp = gtu_dev(inp, ni), *dw = gtu_dev(w, nw), *dpre = gtu_dev(pre, no);
    uint16_t *keep = dev_u16(no);
    float *scratch = gt_cuda_alloc_floats(no);
    if (bf16) gt_gelu_forward_keep_bf16_cuda(scratch, keep, dpre, no, 0); /* the kept bits */
    /* unfused */
    float *dz1 = gt_cuda_alloc_floats(no), *dg = gtu_dev(g, no);
    float *gw1 = gtu_dev(gw0, nw), *gb1 = gtu_dev(gb0, OC), *gx1 = gt_cuda_alloc_floats(ni);
    if (bf16) gt_gelu_backward_from_bf16_cuda(dz1, dg, keep, no, 0);
    else gt_gelu_backward_cuda(dz1, dg, dpre, no, 0);
    gt_linear_backward_cuda(gx1, gw1, gb1, dz1, dinp, dw, NULL, NULL, N, C, OC, GT_ACT_NONE, 0);
    /* fused, in place on a copy of dout */
    float *dz2 = gtu_dev(g, no), *gw2 = gtu_dev(gw0, nw), *gb2 = gtu_dev(gb0, OC), *gx2 = gt_cuda_alloc_floats(ni);
    gt_linear_backward_gelu_cuda(gx2, gw2, gb2, dz2, dinp, dw, bf16 ? NULL : dpre, bf16 ? keep : NULL, N, C, OC, 0);
    char what[96];
    float *h1 = gtu_host(dz1, no), *h2 = gtu_host(dz2, no);
    snprintf(what, sizeof what, "gelu'+linear bwd N%d C%d OC%d%s dz", N, C, OC, bf16 ? " bf16-kept" : "");
    bits_equal(what, h2, h1, no, 4);
    float *hb1 = gtu_host(gb1, OC), *hb2 = gtu_host(gb2, OC);
    bits_equal("gelu'+linear bwd db (+=)", hb2, hb1, OC, 4);
    float *hw1 = gtu_host(gw1, nw), *hw2 = gtu_host(gw2, nw);
    bits_equal("gelu'+linear bwd dw (+=)", hw2, hw1, nw, 4);
    float *hx1 = gtu_host(gx1, ni), *hx2 = gtu_host(gx2, ni);
    bits_equal("gelu'+linear bwd dinp", hx2, hx1, ni, 4);
    /* the CPU (fp32 pre-activation only: the bf16 values are the GPU's rounding) */
    if (!bf16) {
        float *dz = malloc(no * 4), *gw = gtu_copy(gw0, nw), *gb = gtu_copy(gb0, OC), *gx = malloc(ni * 4);
        gt_gelu_backward(dz, g, pre, no);
        gt_linear_backward(gx, gw, gb, dz, inp, w, NULL, NULL, N, C, OC, GT_ACT_NONE);
        gtu_close("gelu'+linear dz vs CPU", h2, dz, no, 1e-6, 1e-5);
        gtu_close("gelu'+linear db vs CPU", hb2, gb, OC, 1e-5, 1e-4);
        gtu_close("gelu'+linear dw vs CPU", hw2, gw, nw, 1e-5, 1e-4);
        gtu_close("gelu'+linear dinp vs CPU", hx2, gx, ni, 1e-5, 1e-4);
        free(dz); free(gw); free(gb); free(gx);
    }
    free(inp); free(w); free(pre); free(g); free(gw0); free(gb0); free(h1); free(h2); free(hb1); free(hb2);
    free(hw1); free(hw2); free(hx1); free(hx2);
    gt_cuda_free(dinp); gt_cuda_free(dw); gt_cuda_free(dpre); gt_cuda_free((float *)keep); gt_cuda_free(scratch);
    gt_cuda_free(dz1); gt_cuda_free(dg); gt_cuda_free(gw1); gt_cuda_free(gb1); gt_cuda_free(gx1);
    gt_cuda_free(dz2); gt_cuda_free(gw2); gt_cuda_free(gb2); gt_cuda_free(gx2);
}

/* dres += LayerNorm backward's input gradient (dw, db accumulate as before) */
static void test_ln_bwd_acc(int N, int C) {
    const size_t n = (size_t)N * C;
    float *x = gtu_rand(n, 2.0f), *w = gtu_rand(C, 1.0f), *b = gtu_rand(C, 0.5f), *g = gtu_rand(n, 1.0f);
    float *res = gtu_rand(n, 1.0f), *gw0 = gtu_rand(C, 0.1f), *gb0 = gtu_rand(C, 0.1f);
    float *mu = malloc(N * 4), *rs = malloc(N * 4), *o = malloc(n * 4);
    gt_layernorm_forward(o, mu, rs, x, w, b, N, C, 1e-5f);
    float *dx = gtu_dev(x, n), *dw = gtu_dev(w, C), *dg = gtu_dev(g, n), *dmu = gtu_dev(mu, N), *drs = gtu_dev(rs, N);
    float *tmp = gt_cuda_alloc_floats(n), *acc1 = gtu_dev(res, n), *gw1 = gtu_dev(gw0, C), *gb1 = gtu_dev(gb0, C);
    gt_layernorm_backward_cuda(tmp, gw1, gb1, dg, dx, dw, dmu, drs, N, C, 0);
    gt_add_cuda(acc1, acc1, tmp, n, 0);
    float *acc2 = gtu_dev(res, n), *gw2 = gtu_dev(gw0, C), *gb2 = gtu_dev(gb0, C);
    gt_layernorm_backward_acc_cuda(acc2, gw2, gb2, dg, dx, dw, dmu, drs, N, C, 0);
    char what[96];
    float *h1 = gtu_host(acc1, n), *h2 = gtu_host(acc2, n);
    snprintf(what, sizeof what, "ln bwd acc N%d C%d dinp (+=)", N, C);
    bits_equal(what, h2, h1, n, 4);
    float *hw1 = gtu_host(gw1, C), *hw2 = gtu_host(gw2, C), *hb1 = gtu_host(gb1, C), *hb2 = gtu_host(gb2, C);
    bits_equal("ln bwd acc dw (+=)", hw2, hw1, C, 4);
    bits_equal("ln bwd acc db (+=)", hb2, hb1, C, 4);
    float *gx = malloc(n * 4), *gw = gtu_copy(gw0, C), *gb = gtu_copy(gb0, C);
    gt_layernorm_backward(gx, gw, gb, g, x, w, mu, rs, N, C);
    for (size_t i = 0; i < n; i++) gx[i] += res[i];
    gtu_close("ln bwd acc dinp vs CPU", h2, gx, n, 1e-5, 1e-4);
    gtu_close("ln bwd acc dw vs CPU", hw2, gw, C, 1e-5, 1e-4);
    free(x); free(w); free(b); free(g); free(res); free(gw0); free(gb0); free(mu); free(rs); free(o); free(h1);
    free(h2); free(hw1); free(hw2); free(hb1); free(hb2); free(gx); free(gw); free(gb);
    gt_cuda_free(dx); gt_cuda_free(dw); gt_cuda_free(dg); gt_cuda_free(dmu); gt_cuda_free(drs); gt_cuda_free(tmp);
    gt_cuda_free(acc1); gt_cuda_free(gw1); gt_cuda_free(gb1); gt_cuda_free(acc2); gt_cuda_free(gw2);
    gt_cuda_free(gb2);
}

int main(void) {
    GTU_REQUIRE_GPU();
    char desc[256];
    printf("device: %s\n", gt_device_describe(0, desc, sizeof desc));
    gt_cuda_set_precision(GT_PREC_FP32);
    printf("== residual add + LayerNorm ==\n");
    const int shapes[][2] = {{1, 1}, {5, 7}, {300, 32}, {301, 33}, {64, 256}, {4100, 96}, {9, 1029}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], C = shapes[k][1];
        test_add_ln(N, C, N, 1, 0);
        test_add_ln(N, C, N, 1, 1); /* the model's aliasing */
        test_add_ln(N, C, N, 0, 1);
    }
    test_add_ln(6 * 50, 64, 50, 0, 0); /* positions (L, d) broadcast over 6 batches */
    test_add_ln(3 * 1023, 32, 1023, 0, 0);
    printf("== bias + GELU ==\n");
    test_bias_gelu(1, 1, 0);
    test_bias_gelu(300, 1024, 0);
    test_bias_gelu(77, 333, 1);
    test_bias_gelu(300, 1024, 1);
    printf("== GELU' + linear backward ==\n");
    test_linear_gelu_bwd(67, 45, 133, 0);
    test_linear_gelu_bwd(1000, 64, 256, 0); /* several row stripes in the column sums */
    test_linear_gelu_bwd(1000, 64, 256, 1);
    test_linear_gelu_bwd(3, 5, 7, 1);
    printf("== LayerNorm backward, accumulating ==\n");
    test_ln_bwd_acc(1, 1);
    test_ln_bwd_acc(300, 96);
    test_ln_bwd_acc(4100, 33);
    test_ln_bwd_acc(7, 1029);
    TEST_DONE();
}
