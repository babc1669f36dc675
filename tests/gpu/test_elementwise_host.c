/* The per-element math the CUDA kernels run (nn/ops/elementwise.h,
 * fast_exp.h, the LSTM cell of nn/ops/lstm.h), checked on the host against
 * libm / double references. Runs without a GPU (no skip): the kernels call
 * these very functions (GT_HD), so this pins down their arithmetic. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/device.h"
#include "nn/ops/cuda/ops_cuda.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/lstm.h"
#include "test.h"

static double gelu_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double sigm_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

static void check_exp(void) {
    double worst = 0.0, wx = 0.0;
    for (double x = -87.0; x <= 88.0; x += 1.0 / 1024.0) {
        double ref = exp((double)(float)x);
        double rel = fabs(gt_expf_poly((float)x) - ref) / ref;
        if (rel > worst) {
            worst = rel;
            wx = x;
        }
    }
    printf("gt_expf_poly   max rel err %.3e at x=%.5f\n", worst, wx);
    TEST_CHECK(worst < 4.0e-7); /* ~3 ulp */
    TEST_CHECK(gt_expf_poly(-1000.0f) > 0.0f && isfinite(gt_expf_poly(1000.0f))); /* clamped, never 0/inf */
}

static void check_sigmoid_tanh(void) {
    double ws = 0.0, wt = 0.0;
    for (double x = -30.0; x <= 30.0; x += 1.0 / 512.0) {
        float xf = (float)x;
        double es = fabs(gt_sigmoidf(xf) - sigm_ref(xf)), et = fabs(gt_tanhf(xf) - tanh((double)xf));
        ws = es > ws ? es : ws;
        wt = et > wt ? et : wt;
    }
    printf("gt_sigmoidf    max abs err %.3e\ngt_tanhf       max abs err %.3e\n", ws, wt);
    TEST_CHECK(ws < 2.0e-7);
    TEST_CHECK(wt < 3.0e-7);
}

static void check_gelu(void) {
    double wf = 0.0, wg = 0.0;
    for (double x = -12.0; x <= 12.0; x += 1.0 / 256.0) {
        float xf = (float)x;
        double ef = fabs(gt_gelu(xf) - gelu_ref(xf)) / (1.0 + fabs(xf));
        double h = 1e-4, fd = (gelu_ref(xf + h) - gelu_ref(xf - h)) / (2 * h);
        double eg = fabs(gt_gelu_grad(xf) - fd);
        wf = ef > wf ? ef : wf;
        wg = eg > wg ? eg : wg;
    }
    printf("gt_gelu        max err/(1+|x|) %.3e\ngt_gelu_grad   max abs err vs central difference %.3e\n", wf, wg);
    TEST_CHECK(wf < 5.0e-7);
    TEST_CHECK(wg < 5.0e-6);
    TEST_CHECK(gt_relu(-1.0f) == 0.0f && gt_relu(2.5f) == 2.5f);
    TEST_CHECK(gt_relu_grad_from_out(0.0f, 3.0f) == 0.0f && gt_relu_grad_from_out(1.0f, 3.0f) == 3.0f);
}

/* LSTM cell: forward vs double; backward vs central differences of a double
 * cell on the scalar objective J = wh*h + wc*c. */
static void cell_ref(const double a[4], double cp, double *c, double *h) {
    double i = sigm_ref(a[0]), f = sigm_ref(a[1]), g = tanh(a[2]), o = sigm_ref(a[3]);
    *c = f * cp + i * g;
    *h = o * tanh(*c);
}
static void check_lstm_cell(void) {
    double wfwd = 0.0, wbwd = 0.0;
    for (int trial = 0; trial < 2000; trial++) {
        double a[4], cp = sin(trial * 0.37) * 2.0;
        for (int k = 0; k < 4; k++) a[k] = 3.0 * sin(trial * (0.11 + 0.07 * k) + k);
        float ai = (float)a[0], af = (float)a[1], ag = (float)a[2], ao = (float)a[3], c, h;
        double ad[4] = {ai, af, ag, ao}, cr, hr;
        cell_ref(ad, (float)cp, &cr, &hr);
        gt_lstm_cell_forward(&ai, &af, &ag, &ao, (float)cp, &c, &h);
        double e = fmax(fabs(c - cr), fabs(h - hr));
        wfwd = e > wfwd ? e : wfwd;
        /* backward: dh = wh, dc (from t+1) = wc */
        const double wh = 0.7, wc = -0.3;
        float da[4], dc = (float)wc;
        gt_lstm_cell_backward(&da[0], &da[1], &da[2], &da[3], &dc, ai, af, ag, ao, c, (float)cp, (float)wh);
        for (int k = 0; k <= 4; k++) {
            double p[4] = {ad[0], ad[1], ad[2], ad[3]}, cpp = (float)cp, cm, hm, cpl, hpl, hstep = 1e-5;
            if (k < 4) p[k] += hstep; else cpp += hstep;
            cell_ref(p, cpp, &cpl, &hpl);
            if (k < 4) p[k] -= 2 * hstep; else cpp -= 2 * hstep;
            cell_ref(p, cpp, &cm, &hm);
            double fd = (wh * (hpl - hm) + wc * (cpl - cm)) / (2 * hstep);
            double got = k < 4 ? da[k] : dc; /* dc out = dJ/dc_prev */
            double eb = fabs(got - fd);
            wbwd = eb > wbwd ? eb : wbwd;
        }
    }
    printf("lstm cell      fwd max abs err %.3e, bwd max abs err vs central difference %.3e\n", wfwd, wbwd);
    TEST_CHECK(wfwd < 1.0e-6);
    TEST_CHECK(wbwd < 1.0e-5);
}

/* AdamW element: the double formula of elementwise.h vs a long double
 * evaluation, rounded to float: at most 1 ulp apart (the GPU test then
 * compares the device to this same host function). */
static void check_adamw(void) {
    gt_adamw_config cfg = {0.9, 0.999, 1e-8, 0.01};
    int worst = 0;
    for (int t = 1; t <= 5; t++) {
        gt_adamw_scalars s = gt_adamw_scalars_make(&cfg, 1e-3f, t, t & 1);
        for (int k = 0; k < 5000; k++) {
            float p = sinf(k * 0.1f), m = 0.01f * cosf(k * 0.3f), v = 1e-4f * (1.0f + sinf(k * 0.7f)),
                  g = 0.05f * sinf(k * 1.3f);
            long double mm = (long double)s.beta1 * m + (long double)s.one_minus_beta1 * g;
            long double vv = (long double)s.beta2 * v + (long double)s.one_minus_beta2 * ((long double)g * g);
            long double pp = (long double)p * s.decay - (long double)s.step_size * (mm / (sqrtl(vv) / s.bc2_sqrt + s.eps));
            gt_adamw_element(&p, &m, &v, g, &s);
            float rp = (float)pp, rm = (float)mm, rv = (float)vv;
            int d = 0;
            if (p != rp) d = d > 1 ? d : (nextafterf(p, rp) == rp ? 1 : 2);
            if (m != rm) d = d > 1 ? d : (nextafterf(m, rm) == rm ? 1 : 2);
            if (v != rv) d = d > 1 ? d : (nextafterf(v, rv) == rv ? 1 : 2);
            worst = d > worst ? d : worst;
        }
    }
    printf("adamw element  max distance to the long double reference: %s\n", worst == 0 ? "0 ulp" : worst == 1 ? "1 ulp" : ">1 ulp");
    TEST_CHECK(worst <= 1);
}

int main(void) {
    check_exp();
    check_sigmoid_tanh();
    check_gelu();
    check_lstm_cell();
    check_adamw();
    /* The CUDA build links and starts without a driver; the header is C. */
    TEST_CHECK(gt_device_built_with_cuda() == 1);
    TEST_CHECK(strcmp(gt_cuda_prec_name(GT_PREC_BF16), "bf16") == 0);
    TEST_CHECK(gt_attention_cuda_scratch_elems(2, 4096, 4) == 2u * 4 * 4096); /* linear in L */
    TEST_CHECK(gt_lstm_cuda_scratch_elems(64, 512, 128) == 2u * 64 * 128 + 64u * 512 * 128);
    printf("GPUs visible: %d\n", gt_device_gpu_count());
    TEST_DONE();
}
