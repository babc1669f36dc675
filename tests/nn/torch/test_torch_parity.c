/* tests/nn/torch/test_torch_parity.c: golden parity of the CPU engine's three
 * models against PyTorch (an independent implementation written from the
 * model contract in gtmodels.py).
 *
 * For each case: build the model with gridtrain, init (seed) and perturb the
 * ones/zeros-initialised tensors (so LayerNorm scales/biases are not trivial),
 * draw x, y (and a 0/1 mask for s2p_cnn), run forward + loss + backward and
 * two AdamW steps (gradient g, then -0.5 g). Write weights, inputs and g to
 * <case>.in.bin, run torch_parity.py (float64 forward/backward, float32
 * torch.optim.AdamW), read <case>.out.bin and compare
 *   prediction, loss, EVERY parameter gradient, parameters after AdamW steps 1 and 2
 * with |c - ref| <= atol + rtol*|ref|, atol = a_rel * max|ref| of the tensor.
 * Prints the max errors of every tensor. Exit 77 when python3-torch is absent.
 *
 * Environment: GT_PYTHON (default /usr/bin/python3); fixtures go to the
 * current directory (the test's build dir under ctest). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/rng.h"
#include "nn/model.h"
#if __has_include("nn/model_lstm.h")
#include "nn/model_lstm.h"
#define HAVE_LSTM_HEADER 1
#endif
#include "records.h"
#include "test.h"

#ifndef GT_TORCH_PARITY_SCRIPT
#error "GT_TORCH_PARITY_SCRIPT must name tests/nn/torch/torch_parity.py"
#endif

/* Tolerances (a_rel: atol as a fraction of the tensor's max |ref|). The
 * reference is float64; measured errors are ~10-100x below these. */
#define TOL_PRED_AREL 1e-5
#define TOL_PRED_RTOL 1e-4
#define TOL_GRAD_AREL 1e-5
#define TOL_GRAD_RTOL 1e-3
#define TOL_ADAM_ATOL 1e-6 /* lr = 1e-3: 0.1% of one step */
#define TOL_ADAM_RTOL 1e-6

typedef struct parity_case {
    const char *name;
    gt_model_kind kind;
    int B;
    gt_model_config cfg; /* filled by setup() */
} parity_case;

/* --------------------------------------------------------------- helpers -- */
static double *rec_f64(const gt_rec_file *rf, const char *name, size_t n_expect) {
    const gt_rec *r = gt_rec_find(rf, name);
    if (!r) {
        fprintf(stderr, "reference record %s missing\n", name);
        gt_test_failures++;
        return NULL;
    }
    if (r->n_elem != n_expect || (r->dtype != GT_REC_F64 && r->dtype != GT_REC_F32)) {
        fprintf(stderr, "reference record %s: %zu elements (dtype %d), expected %zu\n", name, r->n_elem,
                r->dtype, n_expect);
        gt_test_failures++;
        return NULL;
    }
    double *out = (double *)malloc(n_expect * sizeof(double));
    for (size_t i = 0; i < n_expect; i++) {
        if (r->dtype == GT_REC_F64) {
            memcpy(&out[i], (const char *)r->data + 8 * i, 8);
        } else {
            float f;
            memcpy(&f, (const char *)r->data + 4 * i, 4);
            out[i] = f;
        }
    }
    return out;
}

typedef struct cmp_stats {
    double worst; /* max over compared tensors of max_i |err_i| / (atol + rtol |ref_i|) */
} cmp_stats;

/* Compare c (n) to ref (n); prints one row; counts a failure if any element
 * is outside atol + rtol*|ref|, atol = a_rel * max|ref| + atol_abs. */
static void compare(cmp_stats *st, const char *what, const float *c, const double *ref, size_t n,
                    double a_rel, double atol_abs, double rtol) {
    if (!ref) return;
    double max_ref = 0.0, max_err = 0.0, max_rel_el = 0.0, worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) max_ref = fmax(max_ref, fabs(ref[i]));
    double atol = a_rel * max_ref + atol_abs;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)c[i] - ref[i]);
        if (!isfinite(c[i])) finite = 0;
        max_err = fmax(max_err, e);
        if (fabs(ref[i]) > 1e-3 * max_ref) max_rel_el = fmax(max_rel_el, e / fabs(ref[i]));
        double r = e / (atol + rtol * fabs(ref[i]) + 1e-300);
        if (r > worst) {
            worst = r;
            worst_i = i;
        }
    }
    int ok = finite && worst <= 1.0;
    printf("  %-34s %9zu  max|ref| %10.3e  max|err| %9.2e  rel(err/max) %8.1e  worst/tol %6.3f %s\n",
           what, n, max_ref, max_err, max_ref > 0 ? max_err / max_ref : max_err, worst, ok ? "" : "FAIL");
    if (!ok) {
        fprintf(stderr, "%s: element %zu: gridtrain %.9g, torch %.9g (atol %.3g rtol %.3g)\n", what,
                worst_i, (double)c[worst_i], ref[worst_i], atol, rtol);
        gt_test_failures++;
    }
    (void)max_rel_el;
    if (worst > st->worst) st->worst = worst;
}

static int run_python(const char *in, const char *out) {
    const char *py = getenv("GT_PYTHON");
    if (!py || !*py) py = "/usr/bin/python3";
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 '%s' '%s' '%s' '%s'", py,
             GT_TORCH_PARITY_SCRIPT, in, out);
    fflush(stdout);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static void fill_normal(gt_rng *r, float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * (float)gt_rng_normal(r);
}

/* ------------------------------------------------------------ one case -- */
/* Returns 77 if torch is missing, 0 otherwise (failures counted). */
static int run_case(parity_case *pc) {
    const gt_model_config *cfg = &pc->cfg;
    gt_model *m = gt_model_create(cfg);
    gt_model_init(m, 1234);
    const int B = pc->B;
    size_t n_params = gt_model_n_params(m), n_x = m->n_x, n_y = m->n_y;
    gt_rng r;
    gt_rng_init(&r, 99, gt_stream(GT_STREAM_TEST, (uint32_t)cfg->kind));
    /* Perturb constant-initialised tensors (LayerNorm ones/zeros, zero biases). */
    for (int i = 0; i < gt_model_n_tensors(m); i++) {
        const gt_param_tensor *t = gt_model_tensor(m, i);
        if (t->init == GT_INIT_ONES || t->init == GT_INIT_ZEROS) {
            float *p = gt_model_param_ptr(m, m->params, i);
            for (size_t k = 0; k < t->n_elem; k++) p[k] += 0.1f * (2.0f * gt_rng_uniform(&r) - 1.0f);
        }
    }
    float *x = (float *)malloc((size_t)B * n_x * sizeof(float));
    float *y = (float *)malloc((size_t)B * n_y * sizeof(float));
    float *mask = (float *)malloc((size_t)B * n_y * sizeof(float));
    fill_normal(&r, x, (size_t)B * n_x, 1.0f);
    int loss_kind = 0, use_mask = 0;
    if (cfg->kind == GT_MODEL_LSTM) {
        /* Next-step prediction: pred (B,T,C) at t vs x at t+1 (T-1 targets);
         * torch computes it from x alone (loss_kind 1). */
        loss_kind = 1;
    } else {
        fill_normal(&r, y, (size_t)B * n_y, 1.0f);
        if (cfg->kind == GT_MODEL_S2P_CNN) { /* a 0/1 mask exercises the masked MSE */
            use_mask = 1;
            for (size_t i = 0; i < (size_t)B * n_y; i++) mask[i] = gt_rng_uniform(&r) < 0.7f ? 1.0f : 0.0f;
        }
    }
    float *p0 = (float *)malloc(n_params * sizeof(float));
    gt_model_get_params(m, p0, n_params);

    /* ---- gridtrain: forward, loss, backward */
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    float loss;
    if (loss_kind == 1) {
#ifdef HAVE_LSTM_HEADER
        /* gt_model_loss with gt_model_lstm_targets must equal gt_model_lstm_loss */
        gt_model_lstm_targets(y, mask, x, B, cfg->window, cfg->n_in);
        float loss_t = gt_model_loss(m, y, mask);
        loss = gt_model_lstm_loss(m);
        TEST_CLOSE(loss_t, loss, 0.0, 1e-6);
#else
        TEST_REQUIRE(!"lstm kind available without nn/model_lstm.h");
        loss = 0.0f;
#endif
    } else {
        loss = gt_model_loss(m, y, use_mask ? mask : NULL);
    }
    gt_model_backward(m, 1.0f);
    float *pred = (float *)malloc((size_t)B * n_y * sizeof(float));
    float *g = (float *)malloc(n_params * sizeof(float));
    memcpy(pred, m->pred, (size_t)B * n_y * sizeof(float));
    memcpy(g, m->grads, n_params * sizeof(float));

    /* ---- gridtrain: AdamW steps with g and -0.5 g */
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.1f};
    const float lr = 1e-3f;
    gt_model_adamw_step(m, &opt, lr, 1, 0);
    float *p1 = (float *)malloc(n_params * sizeof(float));
    gt_model_get_params(m, p1, n_params);
    for (size_t i = 0; i < n_params; i++) m->grads[i] = -0.5f * g[i];
    gt_model_adamw_step(m, &opt, lr, 2, 0);
    float *p2 = (float *)malloc(n_params * sizeof(float));
    gt_model_get_params(m, p2, n_params);

    /* ---- fixture for PyTorch */
    char in_path[256], out_path[256], key[128];
    snprintf(in_path, sizeof in_path, "torch_parity_%s.in.bin", pc->name);
    snprintf(out_path, sizeof out_path, "torch_parity_%s.out.bin", pc->name);
    remove(out_path);
    gt_rec_writer w;
    gt_rec_open(&w, in_path);
    int32_t v;
#define PUT_CFG(field, value)                       \
    do {                                            \
        v = (int32_t)(value);                       \
        gt_rec_add_i32(&w, "cfg." field, &v, 1);    \
    } while (0)
    PUT_CFG("kind", cfg->kind);
    PUT_CFG("window", cfg->window);
    PUT_CFG("n_in", cfg->n_in);
    PUT_CFG("n_out", cfg->n_out);
    PUT_CFG("batch", B);
    PUT_CFG("d_model", cfg->d_model);
    PUT_CFG("n_heads", cfg->n_heads);
    PUT_CFG("d_ff", cfg->d_ff);
    PUT_CFG("n_layers", cfg->n_layers);
    PUT_CFG("hidden", cfg->hidden);
    PUT_CFG("tbptt", cfg->tbptt);
#undef PUT_CFG
    gt_rec_add_i32(&w, "loss_kind", &(int32_t){loss_kind}, 1);
    gt_rec_add_i32(&w, "cfg.conv_channels", (const int32_t *)cfg->conv_channels, GT_MODEL_MAX_CONV);
    gt_rec_add_i32(&w, "cfg.conv_kernels", (const int32_t *)cfg->conv_kernels, GT_MODEL_MAX_CONV);
    int n_t = gt_model_n_tensors(m);
    int32_t *decay = (int32_t *)malloc((size_t)n_t * sizeof(int32_t));
    for (int i = 0; i < n_t; i++) {
        const gt_param_tensor *t = gt_model_tensor(m, i);
        size_t dims[4];
        for (int d = 0; d < t->ndim; d++) dims[d] = (size_t)t->shape[d];
        snprintf(key, sizeof key, "param.%s", t->name);
        gt_rec_add(&w, key, GT_REC_F32, t->ndim, dims, p0 + t->offset);
        snprintf(key, sizeof key, "cgrad.%s", t->name);
        gt_rec_add(&w, key, GT_REC_F32, t->ndim, dims, g + t->offset);
        decay[i] = t->decay;
    }
    gt_rec_add_i32(&w, "decay", decay, (size_t)n_t);
    /* x: s2p_cnn (B, n_in, W); s2p_tf (B, L, n_in); lstm (B, T, C) */
    size_t xdims[3] = {(size_t)B, (size_t)cfg->window, (size_t)cfg->n_in}, ydims[2] = {(size_t)B, n_y};
    if (cfg->kind == GT_MODEL_S2P_CNN) {
        xdims[1] = (size_t)cfg->n_in;
        xdims[2] = (size_t)cfg->window;
    }
    TEST_REQUIRE(xdims[1] * xdims[2] == n_x);
    gt_rec_add(&w, "x", GT_REC_F32, 3, xdims, x);
    if (loss_kind == 0) {
        gt_rec_add(&w, "y", GT_REC_F32, 2, ydims, y);
        if (use_mask) gt_rec_add(&w, "mask", GT_REC_F32, 2, ydims, mask);
    }
    double adam[5] = {lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay};
    gt_rec_add_f64(&w, "adamw", adam, 5);
    gt_rec_close(&w);

    int rc = run_python(in_path, out_path);
    if (rc == 77) {
        printf("torch not importable: skipping\n");
    } else if (rc != 0) {
        fprintf(stderr, "%s: torch_parity.py failed (exit %d)\n", pc->name, rc);
        gt_test_failures++;
    } else {
        gt_rec_file rf;
        if (gt_rec_load(&rf, out_path) != 0) {
            gt_test_failures++;
        } else {
            cmp_stats st_fwd = {0}, st_grad = {0}, st_adam = {0};
            printf("%s: B=%d, %zu parameters in %d tensors, loss gridtrain %.9g\n", pc->name, B, n_params,
                   n_t, (double)loss);
            double *ref = rec_f64(&rf, "pred", (size_t)B * n_y);
            compare(&st_fwd, "pred", pred, ref, (size_t)B * n_y, TOL_PRED_AREL, 0.0, TOL_PRED_RTOL);
            free(ref);
            ref = rec_f64(&rf, "loss", 1);
            compare(&st_fwd, "loss", &loss, ref, 1, 0.0, 0.0, TOL_PRED_RTOL);
            free(ref);
            for (int i = 0; i < n_t; i++) {
                const gt_param_tensor *t = gt_model_tensor(m, i);
                snprintf(key, sizeof key, "grad.%s", t->name);
                ref = rec_f64(&rf, key, t->n_elem);
                compare(&st_grad, key, g + t->offset, ref, t->n_elem, TOL_GRAD_AREL, 0.0, TOL_GRAD_RTOL);
                free(ref);
            }
            for (int step = 1; step <= 2; step++) {
                const float *pc_step = step == 1 ? p1 : p2;
                double worst = 0.0, max_err = 0.0;
                cmp_stats st = {0};
                for (int i = 0; i < n_t; i++) {
                    const gt_param_tensor *t = gt_model_tensor(m, i);
                    snprintf(key, sizeof key, "adam%d.%s", step, t->name);
                    ref = rec_f64(&rf, key, t->n_elem);
                    if (!ref) continue;
                    /* quiet per-tensor check; one summary row per step */
                    for (size_t k = 0; k < t->n_elem; k++) {
                        double e = fabs((double)pc_step[t->offset + k] - ref[k]);
                        double rr = e / (TOL_ADAM_ATOL + TOL_ADAM_RTOL * fabs(ref[k]));
                        max_err = fmax(max_err, e);
                        if (!(rr <= worst)) worst = rr;
                    }
                    free(ref);
                }
                st.worst = worst;
                int ok = worst <= 1.0;
                printf("  %-34s %9zu  max|err| %9.2e (atol %.0e, rtol %.0e)  worst/tol %6.3f %s\n",
                       step == 1 ? "AdamW step 1 (all params)" : "AdamW step 2 (all params)", n_params,
                       max_err, TOL_ADAM_ATOL, TOL_ADAM_RTOL, worst, ok ? "" : "FAIL");
                if (!ok) gt_test_failures++;
                if (st.worst > st_adam.worst) st_adam.worst = st.worst;
            }
            printf("  summary %-10s worst/tol: forward %.3f, gradients %.3f, AdamW %.3f\n", pc->name,
                   st_fwd.worst, st_grad.worst, st_adam.worst);
            gt_rec_free(&rf);
        }
    }
    free(decay);
    free(x);
    free(y);
    free(mask);
    free(p0);
    free(p1);
    free(p2);
    free(pred);
    free(g);
    gt_model_free(m);
    return rc == 77 ? 77 : 0;
}

int main(void) {
    parity_case cases[8];
    int n_cases = 0;
    gt_model_config c;
    if (gt_model_kind_available(GT_MODEL_S2P_CNN)) {
        gt_model_config_default(&c, GT_MODEL_S2P_CNN);
        c.window = 99;
        c.max_batch = 4;
        cases[n_cases++] = (parity_case){"s2p_cnn_W99", GT_MODEL_S2P_CNN, 4, c};
    } else {
        printf("s2p_cnn not built into gt_nn: not compared\n");
    }
    if (gt_model_kind_available(GT_MODEL_S2P_TF)) {
        gt_model_config_default(&c, GT_MODEL_S2P_TF);
        c.window = 64;
        c.n_layers = 2;
        c.max_batch = 3;
        cases[n_cases++] = (parity_case){"s2p_tf_L64_N2", GT_MODEL_S2P_TF, 3, c};
    } else {
        printf("s2p_tf not built into gt_nn yet: not compared\n");
    }
    if (gt_model_kind_available(GT_MODEL_LSTM)) {
        gt_model_config_default(&c, GT_MODEL_LSTM);
        c.window = 32;
        c.max_batch = 3;
        c.tbptt = 0;
        cases[n_cases++] = (parity_case){"lstm_T32", GT_MODEL_LSTM, 3, c};
        c.tbptt = 8;
        cases[n_cases++] = (parity_case){"lstm_T32_K8", GT_MODEL_LSTM, 3, c};
    } else {
        printf("lstm not built into gt_nn yet: not compared\n");
    }
    if (n_cases == 0) TEST_SKIP("no model kind built into gt_nn");
    printf("tolerances: |c-ref| <= atol + rtol*|ref|, atol = a_rel*max|ref| (per tensor)\n"
           "  pred/loss a_rel %.0e rtol %.0e; gradients a_rel %.0e rtol %.0e; AdamW atol %.0e rtol %.0e\n",
           TOL_PRED_AREL, TOL_PRED_RTOL, TOL_GRAD_AREL, TOL_GRAD_RTOL, TOL_ADAM_ATOL, TOL_ADAM_RTOL);
    for (int i = 0; i < n_cases; i++)
        if (run_case(&cases[i]) == 77) TEST_SKIP("python3-torch not importable");
    TEST_DONE();
}
