/* nn/bench.c: model benchmark of the CPU engine, see nn/bench.h. */
#include "nn/bench.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/engine.h"
#include "nn/ops/cpu/gemm.h"

void gt_nn_bench_config_default(gt_nn_bench_config *cfg, gt_model_kind kind) {
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->batch = 32;
    cfg->steps = 10;
    cfg->warmup = 2;
    cfg->seed = 1;
}

void gt_nn_bench_model_config(const gt_nn_bench_config *cfg, gt_model_config *out) {
    gt_model_config_default(out, cfg->kind);
#define OVERRIDE(field) \
    if (cfg->field > 0) out->field = cfg->field
    OVERRIDE(window);
    OVERRIDE(n_in);
    OVERRIDE(n_out);
    OVERRIDE(d_model);
    OVERRIDE(n_heads);
    OVERRIDE(d_ff);
    OVERRIDE(n_layers);
    OVERRIDE(hidden);
#undef OVERRIDE
    out->tbptt = cfg->tbptt > 0 ? cfg->tbptt : 0;
    out->max_batch = cfg->batch;
}

double gt_model_forward_flops(const gt_model_config *c) {
    const gt_model_vtable *vt = gt_model_kind_table(c->kind);
    return vt && vt->forward_flops ? vt->forward_flops(c) : 0.0;
}

int gt_nn_bench_default_batch(gt_model_kind kind) {
    const gt_model_vtable *vt = gt_model_kind_table(kind);
    return vt && vt->bench_batch > 0 ? vt->bench_batch : 32;
}

/* The best GFLOP/s of reps square n x n products (one untimed first: the
 * warm-up, and for oneDNN the primitive's creation): OpenBLAS's sgemm, or
 * the engine's bf16 route (nn/ops/cpu/gemm.h). */
static double square_gflops(int n, int reps, int bf16) {
    size_t nn = (size_t)n * (size_t)n;
    float *a = (float *)GT_ALIGNED_ALLOC(nn * sizeof(float));
    float *b = (float *)GT_ALIGNED_ALLOC(nn * sizeof(float));
    float *c = (float *)GT_ALIGNED_ALLOC(nn * sizeof(float));
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)((i * 7) % 13) * 0.01f;
        b[i] = (float)((i * 5) % 11) * 0.01f;
        c[i] = 0.0f;
    }
    double best = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = gt_now();
        if (bf16)
            gt_gemm_prec(GT_CPU_BF16, GT_GEMM_OTHER, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                         n);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = gt_now() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * (double)n * n * n / best * 1e-9;
}

double gt_nn_bench_sgemm_gflops(int n, int reps) { return square_gflops(n, reps, 0); }

double gt_nn_bench_bf16_gflops(int n, int reps) { return gt_cpu_bf16_available() ? square_gflops(n, reps, 1) : 0.0; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill_normal(gt_rng *r, float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)gt_rng_normal(r);
}

/* One training step on (x, y) of B samples; returns the loss. */
static float train_step(gt_model *m, const gt_adamw_config *opt, const float *x, const float *y, int B,
                        long t) {
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    /* a kind predicting its own input (lstm: next-step MSE on x) leaves y unused */
    float loss = m->vt->self_loss ? m->vt->self_loss(m) : gt_model_loss(m, y, NULL);
    gt_model_backward(m, 1.0f);
    gt_model_adamw_step(m, opt, 1e-4f, t, 0);
    return loss;
}

static void mem_check(const gt_nn_bench_config *cfg, gt_nn_bench_result *res) {
    static const int Ls[GT_NN_BENCH_MAX_MEM] = {1024, 2048, 4096};
    const int B = 4;
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.01f};
    res->mem_B = B;
    for (int i = 0; i < GT_NN_BENCH_MAX_MEM; i++) {
        gt_nn_bench_config c = *cfg;
        c.batch = B;
        c.window = Ls[i];
        gt_model_config mc;
        gt_nn_bench_model_config(&c, &mc);
        int64_t rss0 = gt_current_rss_bytes();
        gt_model *m = gt_model_create(&mc);
        gt_model_init(m, cfg->seed);
        float *x = (float *)GT_MALLOC((size_t)B * m->n_x * sizeof(float));
        float *y = (float *)GT_MALLOC((size_t)B * m->n_y * sizeof(float));
        gt_rng r;
        gt_rng_init(&r, cfg->seed, gt_stream(GT_STREAM_TEST, 7));
        fill_normal(&r, x, (size_t)B * m->n_x);
        fill_normal(&r, y, (size_t)B * m->n_y);
        train_step(m, &opt, x, y, B, 1);
        int64_t rss1 = gt_current_rss_bytes();
        res->mem_L[i] = Ls[i];
        res->mem_act_bytes[i] = gt_model_act_bytes(m);
        res->mem_rss_delta_bytes[i] = rss1 - rss0;
        free(x);
        free(y);
        gt_model_free(m);
    }
    res->n_mem = GT_NN_BENCH_MAX_MEM;
}

void gt_nn_bench_model(const gt_nn_bench_config *cfg, gt_nn_bench_result *res) {
    GT_CHECK(cfg->batch > 0, GT_EXIT_USAGE, "bench model: batch must be > 0 (got %d)", cfg->batch);
    GT_CHECK(cfg->steps >= 1 && cfg->warmup >= 0, GT_EXIT_USAGE,
             "bench model: steps must be >= 1 and warmup >= 0 (got %d, %d)", cfg->steps, cfg->warmup);
    memset(res, 0, sizeof *res);
    gt_nn_bench_model_config(cfg, &res->model);
    res->threads = openblas_get_num_threads();
    res->blas_core = openblas_get_corename();

    gt_precision prec = cfg->precision;
    if (prec == GT_PRECISION_AUTO) prec = gt_engine_auto_precision(GT_ENGINE_HOST, 0, NULL);
    GT_CHECK(prec == GT_PRECISION_FP32 || (prec == GT_PRECISION_BF16 && gt_cpu_bf16_available()), GT_EXIT_USAGE,
             "bench model: precision %s is not available on the CPU engine of this build (fp32%s)",
             gt_precision_name(prec), gt_cpu_bf16_available() ? ", bf16, auto" : "");
    res->model.precision = prec; /* the model's forward and backward set the ops' precision from it */

    const int B = cfg->batch;
    gt_model *m = gt_model_create(&res->model);
    gt_model_init(m, cfg->seed);
    res->n_params = gt_model_n_params(m);
    res->act_bytes = gt_model_act_bytes(m);
    res->state_bytes = gt_model_state_bytes(m);
    res->fwd_flops_per_sample = gt_model_forward_flops(&res->model);
    res->train_flops_per_sample = 3.0 * res->fwd_flops_per_sample;

    float *x = (float *)GT_MALLOC((size_t)B * m->n_x * sizeof(float));
    float *y = (float *)GT_MALLOC((size_t)B * m->n_y * sizeof(float));
    gt_rng r;
    gt_rng_init(&r, cfg->seed, gt_stream(GT_STREAM_TEST, 1));
    fill_normal(&r, x, (size_t)B * m->n_x);
    fill_normal(&r, y, (size_t)B * m->n_y);
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.01f};

    /* ---- train */
    long t = 1;
    for (int s = 0; s < cfg->warmup; s++) {
        float loss = train_step(m, &opt, x, y, B, t++);
        if (s == 0) res->first_loss = loss;
    }
    double *dt = (double *)GT_MALLOC((size_t)(cfg->steps + (cfg->infer_steps > 0 ? cfg->infer_steps : cfg->steps)) *
                                     sizeof(double));
    double sum = 0.0;
    for (int s = 0; s < cfg->steps; s++) {
        double t0 = gt_now();
        float loss = train_step(m, &opt, x, y, B, t++);
        dt[s] = gt_now() - t0;
        sum += dt[s];
        if (cfg->warmup == 0 && s == 0) res->first_loss = loss;
        res->last_loss = loss;
    }
    res->train_ms_mean = 1e3 * sum / cfg->steps;
    res->train_ms_median = 1e3 * median(dt, cfg->steps);
    res->train_samples_per_s = B / (res->train_ms_median * 1e-3);
    res->train_gflops = res->train_samples_per_s * res->train_flops_per_sample * 1e-9;

    /* ---- inference (forward only) */
    int n_inf = cfg->infer_steps == 0 ? cfg->steps : cfg->infer_steps;
    if (n_inf > 0) {
        gt_model_forward(m, x, B); /* warm-up */
        for (int s = 0; s < n_inf; s++) {
            double t0 = gt_now();
            gt_model_forward(m, x, B);
            dt[s] = gt_now() - t0;
        }
        res->infer_ms_median = 1e3 * median(dt, n_inf);
        res->infer_samples_per_s = B / (res->infer_ms_median * 1e-3);
        res->infer_gflops = res->infer_samples_per_s * res->fwd_flops_per_sample * 1e-9;
    }
    free(dt);
    free(x);
    free(y);
    gt_model_free(m);
    res->peak_rss_bytes = gt_peak_rss_bytes(); /* before the sgemm and memory checks */
    size_t o = 0;
    for (int f = 0; f < GT_GEMM_N_FAMILIES && o < sizeof res->products; f++)
        if (f != GT_GEMM_OTHER && *gt_gemm_impl((gt_gemm_family)f))
            o += (size_t)snprintf(res->products + o, sizeof res->products - o, "%s%s: %s", o ? "; " : "",
                                  gt_gemm_family_name((gt_gemm_family)f), gt_gemm_impl((gt_gemm_family)f));

    /* ---- sgemm peak of this run */
    if (cfg->sgemm_n >= 0) {
        res->sgemm_gflops = gt_nn_bench_sgemm_gflops(cfg->sgemm_n > 0 ? cfg->sgemm_n : 2048, 3);
        res->train_frac_sgemm = res->train_gflops / res->sgemm_gflops;
        res->infer_frac_sgemm = res->infer_gflops / res->sgemm_gflops;
        if (prec == GT_PRECISION_BF16) {
            res->bf16_gflops = gt_nn_bench_bf16_gflops(cfg->sgemm_n > 0 ? cfg->sgemm_n : 2048, 3);
            res->train_frac_bf16 = res->train_gflops / res->bf16_gflops;
            res->infer_frac_bf16 = res->infer_gflops / res->bf16_gflops;
        }
    }
    if (cfg->mem_check && gt_model_kind_table(cfg->kind)->bench_mem_check) mem_check(cfg, res);
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

void gt_nn_bench_print(FILE *f, const gt_nn_bench_config *cfg, const gt_nn_bench_result *res) {
    const gt_model_config *c = &res->model;
    fprintf(f, "bench model %s: B=%d window=%d", gt_model_kind_name(c->kind), cfg->batch, c->window);
    const gt_model_vtable *vt = gt_model_kind_table(c->kind);
    char what[256] = "";
    if (vt->describe) vt->describe(c, what, sizeof what);
    fputs(what, f);
    fprintf(f, "\n  threads %d (OpenBLAS core %s), %d warm-up + %d timed steps\n", res->threads,
            res->blas_core ? res->blas_core : "?", cfg->warmup, cfg->steps);
    fprintf(f, "  precision %s; products: %s (oneDNN ISA %s)\n", gt_precision_name(c->precision),
            res->products[0] ? res->products : "-", gt_cpu_isa_name());
    fprintf(f, "  %-28s %12s\n", "quantity", "value");
    fprintf(f, "  %-28s %12zu\n", "parameters", res->n_params);
    fprintf(f, "  %-28s %12.1f\n", "activations (MiB)", mib((double)res->act_bytes));
    fprintf(f, "  %-28s %12.1f\n", "params+grads+adam (MiB)", mib((double)res->state_bytes));
    fprintf(f, "  %-28s %12.3f\n", "fwd GFLOP / sample", res->fwd_flops_per_sample * 1e-9);
    fprintf(f, "  %-28s %12.2f\n", "train samples/s", res->train_samples_per_s);
    fprintf(f, "  %-28s %12.2f\n", "train ms/step (median)", res->train_ms_median);
    fprintf(f, "  %-28s %12.2f\n", "train ms/step (mean)", res->train_ms_mean);
    fprintf(f, "  %-28s %12.2f\n", "train GFLOP/s", res->train_gflops);
    if (res->infer_samples_per_s > 0) {
        fprintf(f, "  %-28s %12.2f\n", "inference samples/s", res->infer_samples_per_s);
        fprintf(f, "  %-28s %12.2f\n", "inference ms/batch (median)", res->infer_ms_median);
        fprintf(f, "  %-28s %12.2f\n", "inference GFLOP/s", res->infer_gflops);
    }
    fprintf(f, "  %-28s %12.1f\n", "peak RSS (MiB)", mib((double)res->peak_rss_bytes));
    if (res->sgemm_gflops > 0) {
        fprintf(f, "  %-28s %12.2f\n", "sgemm peak GFLOP/s", res->sgemm_gflops);
        fprintf(f, "  %-28s %12.3f\n", "train / sgemm peak", res->train_frac_sgemm);
        if (res->infer_samples_per_s > 0)
            fprintf(f, "  %-28s %12.3f\n", "inference / sgemm peak", res->infer_frac_sgemm);
    }
    if (res->bf16_gflops > 0) {
        fprintf(f, "  %-28s %12.2f\n", "bf16 matmul peak GFLOP/s", res->bf16_gflops);
        fprintf(f, "  %-28s %12.3f\n", "train / bf16 peak", res->train_frac_bf16);
        if (res->infer_samples_per_s > 0)
            fprintf(f, "  %-28s %12.3f\n", "inference / bf16 peak", res->infer_frac_bf16);
    }
    fprintf(f, "  %-28s %12.4g -> %.4g\n", "loss (first -> last step)", res->first_loss, res->last_loss);
    if (res->n_mem > 0) {
        fprintf(f, "  %s memory vs L (B=%d): activation bytes from the plan, RSS growth of create + 1 step\n",
                vt->name, res->mem_B);
        fprintf(f, "  %8s %16s %14s %16s\n", "L", "act MiB", "act / L (KiB)", "RSS growth MiB");
        for (int i = 0; i < res->n_mem; i++)
            fprintf(f, "  %8d %16.1f %14.2f %16.1f\n", res->mem_L[i], mib((double)res->mem_act_bytes[i]),
                    (double)res->mem_act_bytes[i] / res->mem_L[i] / 1024.0, mib((double)res->mem_rss_delta_bytes[i]));
    }
}

void gt_nn_bench_print_json(FILE *f, const gt_nn_bench_config *cfg, const gt_nn_bench_result *res) {
    const gt_model_config *c = &res->model;
    fprintf(f,
            "GT_BENCH_JSON {\"model\": \"%s\", \"batch\": %d, \"window\": %d, \"tbptt\": %d, \"threads\": %d, "
            "\"blas_core\": \"%s\", \"n_params\": %zu, \"act_bytes\": %zu, \"state_bytes\": %zu, "
            "\"fwd_flops_per_sample\": %.6g, \"train_samples_per_s\": %.6g, \"train_ms_median\": %.6g, "
            "\"train_ms_mean\": %.6g, \"train_gflops\": %.6g, \"infer_samples_per_s\": %.6g, "
            "\"infer_ms_median\": %.6g, \"peak_rss_bytes\": %lld, \"sgemm_gflops\": %.6g, "
            "\"train_frac_sgemm\": %.6g, \"infer_frac_sgemm\": %.6g, \"first_loss\": %.6g, \"last_loss\": %.6g",
            gt_model_kind_name(c->kind), cfg->batch, c->window, c->tbptt, res->threads,
            res->blas_core ? res->blas_core : "?", res->n_params, res->act_bytes, res->state_bytes,
            res->fwd_flops_per_sample, res->train_samples_per_s, res->train_ms_median, res->train_ms_mean,
            res->train_gflops, res->infer_samples_per_s, res->infer_ms_median, (long long)res->peak_rss_bytes,
            res->sgemm_gflops, res->train_frac_sgemm, res->infer_frac_sgemm, res->first_loss, res->last_loss);
    fprintf(f, ", \"precision\": \"%s\", \"onednn_isa\": \"%s\", \"products\": \"%s\", \"bf16_gflops\": %.6g, "
               "\"train_frac_bf16\": %.6g",
            gt_precision_name(c->precision), gt_cpu_isa_name(), res->products, res->bf16_gflops, res->train_frac_bf16);
    if (res->n_mem > 0) {
        fprintf(f, ", \"mem\": [");
        for (int i = 0; i < res->n_mem; i++)
            fprintf(f, "%s{\"L\": %d, \"B\": %d, \"act_bytes\": %zu, \"rss_delta_bytes\": %lld}", i ? ", " : "",
                    res->mem_L[i], res->mem_B, res->mem_act_bytes[i], (long long)res->mem_rss_delta_bytes[i]);
        fprintf(f, "]");
    }
    fprintf(f, "}\n");
}
