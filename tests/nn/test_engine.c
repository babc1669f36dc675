/* tests/nn/test_engine.c: the same cases on every engine (nn/engine.h).
 *
 * Host engine: runs exactly the model framework it wraps: for every model
 * kind, forward, backward, the gradient norm, loss-scale removal, clipping
 * and AdamW through the engine give bit-identical results to the same calls
 * on a gt_model of the same configuration and seed; the host side of
 * forward/backward is the host model's x/pred/dpred; memory matches the
 * model's own byte counts; an unknown engine kind is refused by name.
 *
 * CUDA engine (CUDA builds, when a GPU is present; else that half is skipped
 * with a note, or fails under GT_TEST_REQUIRE_GPU=1): the same model and seed
 * on the host and the CUDA engine, step by step through the engine calls
 * only. Stated tolerances (fp32 on both: cuBLAS without TF32):
 *   pred after forward        atol 1e-5 x max|pred| + rtol 1e-4 per element
 *   grads after backward      atol 1e-4 x max|g| + rtol 1e-3 per tensor
 *                             (GEMM and reduction order differ from the CPU's)
 *   unscale (1/4) and norm    norm within 1e-5 relative of the host norm of the
 *                             device's own gradients (downloaded)
 *   AdamW                     params within 1 ulp of the host update applied to
 *                             the device's own gradients
 *   pull/push                 a round trip is bit-exact
 *   3-step training (lr 1e-3) pred within atol 1e-4 x max + rtol 1e-3
 * plus: grads live on the device, input/dpred/pred are the host model's
 * buffers, memory() is the planner's gt_model_device_bytes.
 *
 * CUDA engine, graphs: replayed CUDA graphs (cfg.graphs) give the eager
 * engine's bits: predictions, hook reports, gradients, parameters over 5
 * steps of two micro-batches through both input paths (check_cuda_graphs).
 *
 * Both engines: the gradient-readiness hook (gt_engine_set_grad_ready, what
 * dist/grads.h starts its buckets from) reports one suffix of the gradient
 * buffer per layer, growing down to 0, each already final when reported;
 * and two backwards of the same batch give bit-identical gradients. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/device.h"
#include "nn/engine.h"
#include "test.h"
#ifdef GT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static void fill(float *p, size_t n, double f) {
    for (size_t i = 0; i < n; i++) p[i] = (float)sin(f * (double)(i + 1));
}

static void small_config(gt_model_kind kind, gt_model_config *cfg) {
    gt_model_config_default(cfg, kind);
    cfg->window = kind == GT_MODEL_LSTM ? 12 : 33;
    cfg->n_in = kind == GT_MODEL_LSTM ? 3 : 1;
    cfg->n_out = 3;
    cfg->max_batch = 4;
    cfg->hidden = 16;
    cfg->n_layers = 2;
    cfg->d_model = 16, cfg->n_heads = 2, cfg->d_ff = 32;
    for (int l = 0; l < cfg->n_layers && kind == GT_MODEL_S2P_CNN; l++)
        cfg->conv_channels[l] = 4, cfg->conv_kernels[l] = 3;
}

/* The gradient-readiness hook (gt_engine_set_grad_ready): what it saw. */
#define READY_MAX 64
typedef struct ready_log {
    gt_engine *e;
    int n;
    size_t lo[READY_MAX];
    float *snap[READY_MAX]; /* grads[lo, n_params) when the hook was called */
} ready_log;

static void copy_grads(gt_engine *e, float *dst, size_t lo, size_t n) {
    if (!gt_engine_grads_on_device(e)) {
        memcpy(dst, gt_engine_grads(e) + lo, n * sizeof(float));
        return;
    }
#ifdef GT_HAVE_CUDA /* the hook runs when the layer's work is queued: final once the stream gets there */
    TEST_REQUIRE(cudaStreamSynchronize((cudaStream_t)gt_engine_stream(e)) == cudaSuccess);
    TEST_REQUIRE(cudaMemcpy(dst, gt_engine_grads(e) + lo, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
#endif
}

static void on_ready(void *ctx, size_t lo) {
    ready_log *r = ctx;
    TEST_REQUIRE(r->n < READY_MAX);
    size_t np = gt_engine_n_params(r->e);
    TEST_REQUIRE(lo < np);
    r->lo[r->n] = lo;
    r->snap[r->n] = malloc((np - lo) * sizeof(float));
    copy_grads(r->e, r->snap[r->n], lo, np - lo);
    r->n++;
}

/* During a backward the hook reports suffixes of the gradient buffer that
 * grow down to 0, one per layer, each already final (bit-equal to the grads
 * at the end); the hook changes nothing (the same grads as without it). */
static void check_grad_ready(gt_engine *e, const float *x, const float *dy, int B) {
    const size_t np = gt_engine_n_params(e), ny = (size_t)B * gt_engine_n_y(e);
    float *plain = malloc(np * sizeof(float)), *fin = malloc(np * sizeof(float));
    gt_engine_zero_grad(e);
    gt_engine_forward(e, x, B);
    memcpy(gt_engine_dpred(e), dy, ny * sizeof(float));
    gt_engine_backward(e, 1.0f);
    copy_grads(e, plain, 0, np);

    ready_log r = {.e = e};
    gt_engine_zero_grad(e);
    gt_engine_forward(e, x, B);
    memcpy(gt_engine_dpred(e), dy, ny * sizeof(float));
    gt_engine_set_grad_ready(e, on_ready, &r);
    gt_engine_backward(e, 1.0f);
    gt_engine_set_grad_ready(e, NULL, NULL);
    copy_grads(e, fin, 0, np);
    /* and deterministic: two backwards give the same bits, on a GPU too (no
     * float atomics in any gradient reduction: fixed-order column sums) */
    TEST_CHECK(!memcmp(plain, fin, np * sizeof(float)));
    const gt_model_config *c = gt_engine_config(e);
    int layers = c->kind == GT_MODEL_S2P_CNN ? c->n_layers + 2 : c->n_layers + 1; /* + fc1/fc2, + head (+ embed) */
    if (c->kind == GT_MODEL_S2P_TF) layers++;
    TEST_EQ_INT(r.n, layers);
    TEST_CHECK(r.n >= 1 && r.lo[r.n - 1] == 0);
    for (int i = 0; i < r.n; i++) {
        if (i > 0) TEST_CHECK(r.lo[i] < r.lo[i - 1]);
        TEST_CHECK(!memcmp(r.snap[i], fin + r.lo[i], (np - r.lo[i]) * sizeof(float)));
        free(r.snap[i]);
    }
    /* not trivially final: the first report's suffix is not what the last one adds */
    int nonzero_below = 0;
    for (size_t k = 0; r.n > 1 && k < r.lo[0]; k++) nonzero_below |= fin[k] != 0;
    TEST_CHECK(r.n < 2 || nonzero_below);
    free(plain), free(fin);
}

static void check_kind(gt_model_kind kind) {
    gt_model_config cfg;
    small_config(kind, &cfg);
    gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &cfg);
    gt_model *ref = gt_model_create(&cfg);
    gt_engine_init(e, 42);
    gt_model_init(ref, 42);
    gt_model *m = gt_engine_model(e);
    TEST_EQ_INT((int)gt_engine_n_params(e), (int)ref->n_params);
    TEST_CHECK(!memcmp(m->params, ref->params, sizeof(float) * ref->n_params));
    TEST_CHECK(gt_engine_input(e) == m->x && gt_engine_dpred(e) == m->dpred && !gt_engine_grads_on_device(e));
    TEST_CHECK(!strcmp(gt_engine_name(e), "host"));

    const int B = 3;
    const size_t nx = (size_t)B * ref->n_x, ny = (size_t)B * ref->n_y;
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * ny);
    fill(x, nx, 0.7);
    fill(dy, ny, 0.3);
    gt_adamw_config opt = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    for (int step = 1; step <= 3; step++) {
        gt_engine_zero_grad(e);
        gt_model_zero_grad(ref);
        const float *pe = gt_engine_forward(e, x, B);
        const float *pr = gt_model_forward(ref, x, B);
        TEST_CHECK(pe == m->pred);
        TEST_CHECK(!memcmp(pe, pr, sizeof(float) * ny));
        memcpy(gt_engine_dpred(e), dy, sizeof(float) * ny);
        memcpy(ref->dpred, dy, sizeof(float) * ny);
        gt_engine_backward(e, 1.0f);
        gt_model_backward(ref, 1.0f);
        TEST_CHECK(!memcmp(gt_engine_grads(e), ref->grads, sizeof(float) * ref->n_params));
        /* loss scale 4: grads *= 1/4 exactly; a NaN makes it report non-finite */
        TEST_EQ_INT(gt_engine_unscale(e, 0.25f), 1);
        for (size_t i = 0; i < ref->n_params; i++) ref->grads[i] *= 0.25f;
        TEST_CHECK(!memcmp(gt_engine_grads(e), ref->grads, sizeof(float) * ref->n_params));
        double ne = gt_engine_grad_norm(e), nr = gt_grad_norm(ref->grads, ref->n_params);
        TEST_CHECK(ne == nr && ne > 0);
        gt_engine_scale_grads(e, 0.5f);
        gt_scale(ref->grads, ref->n_params, 0.5f);
        gt_engine_adamw_step(e, &opt, 1e-2f, step, 0);
        gt_model_adamw_step(ref, &opt, 1e-2f, step, 0);
        gt_engine_pull_state(e);
        TEST_CHECK(!memcmp(m->params, ref->params, sizeof(float) * ref->n_params));
        TEST_CHECK(!memcmp(m->adam_v, ref->adam_v, sizeof(float) * ref->n_params));
    }
    check_grad_ready(e, x, dy, B);
    gt_engine_grads(e)[0] = NAN;
    TEST_EQ_INT(gt_engine_unscale(e, 1.0f), 0);
    gt_engine_mem mem;
    gt_engine_memory(e, &mem);
    TEST_EQ_INT((int)mem.state_bytes, (int)gt_model_state_bytes(ref));
    TEST_EQ_INT((int)mem.act_bytes, (int)gt_model_act_bytes(ref));
    TEST_EQ_INT((int)mem.device_bytes, 0);
    free(x), free(dy);
    gt_model_free(ref);
    gt_engine_free(e);
}


#ifdef GT_HAVE_CUDA
/* |got - ref| <= atol_frac * max|ref| + rtol * |ref| everywhere; prints the worst. */
static int close_all(const char *what, const float *got, const float *ref, size_t n, double atol_frac, double rtol) {
    double mx = 0, worst = 0;
    for (size_t i = 0; i < n; i++) mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    double atol = atol_frac * mx > 0 ? atol_frac * mx : 1e-30;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - ref[i]) / (atol + rtol * fabs(ref[i]));
        if (!(r <= 1.0)) bad++;
        if (!(r <= worst)) worst = r;
    }
    printf("  %-28s n=%-6zu max err/tol %.3f%s\n", what, n, worst, bad ? "  FAIL" : "");
    if (bad) gt_test_failures++;
    return bad == 0;
}

static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = (int32_t)0x80000000 - ia;
    if (ib < 0) ib = (int32_t)0x80000000 - ib;
    int64_t d = (int64_t)ia - (int64_t)ib;
    return d < 0 ? -d : d;
}

/* The CUDA engine against the host engine on the same model and seed. */
static void check_cuda_kind(gt_model_kind kind) {
    gt_model_config cfg;
    small_config(kind, &cfg);
    printf("== cuda engine vs host engine: %s ==\n", gt_model_kind_name(kind));
    gt_engine *h = gt_engine_create(GT_ENGINE_HOST, &cfg);
    gt_engine *d = gt_engine_create(GT_ENGINE_CUDA, &cfg);
    gt_engine_init(h, 42);
    gt_engine_init(d, 42);
    gt_model *mh = gt_engine_model(h), *md = gt_engine_model(d);
    const size_t np = mh->n_params;
    TEST_REQUIRE(gt_engine_n_params(d) == np && gt_engine_n_x(d) == mh->n_x && gt_engine_n_y(d) == mh->n_y);
    TEST_CHECK(!strcmp(gt_engine_name(d), "cuda") && gt_engine_grads_on_device(d) && gt_engine_stream(d) != NULL);
    /* x, pred and dpred: the engine's pinned buffers, not the host model's */
    TEST_CHECK(gt_engine_input(d) != NULL && gt_engine_dpred(d) != NULL && gt_engine_input(d) != md->x);
    TEST_CHECK(!memcmp(md->params, mh->params, np * sizeof(float)));
    gt_engine_mem mem;
    gt_engine_memory(d, &mem);
    gt_model_sizes sz;
    gt_model_plan_sizes(&cfg, &sz);
    TEST_EQ_INT((long long)mem.device_bytes, (long long)gt_model_device_bytes(&cfg, &sz));
    TEST_EQ_INT((long long)mem.state_bytes, (long long)(4 * np * sizeof(float)));

    const int B = 3;
    const size_t nx = (size_t)B * mh->n_x, ny = (size_t)B * mh->n_y;
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * ny);
    float *gd = malloc(sizeof(float) * np), *p0 = malloc(sizeof(float) * np), *m0 = malloc(sizeof(float) * np);
    float *v0 = malloc(sizeof(float) * np);
    fill(x, nx, 0.7);
    fill(dy, ny, 0.3);
    gt_adamw_config opt = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    /* small: a first AdamW step moves every parameter by +-lr, so a gradient at
     * rounding-noise level may move the engines apart by 2 lr */
    const float lr = 1e-3f;
    for (int step = 1; step <= 3; step++) {
        gt_engine_zero_grad(h);
        gt_engine_zero_grad(d);
        /* x through the engine's own input buffer on the device engine (as eval does) */
        memcpy(gt_engine_input(d), x, sizeof(float) * nx);
        const float *ph = gt_engine_forward(h, x, B);
        const float *pd = gt_engine_forward(d, gt_engine_input(d), B);
        TEST_CHECK(pd != NULL && pd != md->pred);
        close_all("pred", pd, ph, ny, step == 1 ? 1e-5 : 1e-4, step == 1 ? 1e-4 : 1e-3);
        memcpy(gt_engine_dpred(h), dy, sizeof(float) * ny);
        memcpy(gt_engine_dpred(d), dy, sizeof(float) * ny);
        gt_engine_backward(h, 1.0f);
        gt_engine_backward(d, 1.0f);
        TEST_REQUIRE(cudaMemcpy(gd, gt_engine_grads(d), np * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
        if (step == 1)
            for (int i = 0; i < mh->n_tensors; i++) {
                const gt_param_tensor *t = &mh->tensors[i];
                char name[96];
                snprintf(name, sizeof name, "grad %s", t->name);
                close_all(name, gd + t->offset, gt_engine_grads(h) + t->offset, t->n_elem, 1e-4, 1e-3);
            }
        /* loss scale 4: both engines report finite gradients and divide by 4 */
        TEST_EQ_INT(gt_engine_unscale(d, 0.25f), 1);
        TEST_EQ_INT(gt_engine_unscale(h, 0.25f), 1);
        for (size_t i = 0; i < np; i++) gd[i] *= 0.25f;
        double nd = gt_engine_grad_norm(d), nref = gt_grad_norm(gd, np);
        TEST_CLOSE(nd, nref, 0, 1e-5);
        TEST_CLOSE(nd, gt_engine_grad_norm(h), 0, 1e-3);
        gt_engine_scale_grads(d, 0.5f);
        gt_engine_scale_grads(h, 0.5f);
        for (size_t i = 0; i < np; i++) gd[i] *= 0.5f;
        /* AdamW: the device update equals the host update of the device's own gradients */
        gt_engine_pull_state(d);
        memcpy(p0, md->params, np * sizeof(float));
        memcpy(m0, md->adam_m, np * sizeof(float));
        memcpy(v0, md->adam_v, np * sizeof(float));
        gt_engine_adamw_step(d, &opt, lr, step, 0);
        gt_engine_adamw_step(h, &opt, lr, step, 0);
        gt_engine_pull_state(d);
        gt_adamw_scalars sdec = gt_adamw_scalars_make(&opt, lr, step, 1), spl = gt_adamw_scalars_make(&opt, lr, step, 0);
        int64_t worst = 0;
        for (int i = 0; i < mh->n_tensors; i++) {
            const gt_param_tensor *t = &mh->tensors[i];
            size_t o = t->offset;
            gt_adamw_update(p0 + o, gd + o, m0 + o, v0 + o, t->n_elem, t->decay ? &sdec : &spl);
        }
        for (size_t i = 0; i < np; i++) {
            int64_t u = ulps(md->params[i], p0[i]);
            worst = u > worst ? u : worst;
        }
        printf("  step %d: AdamW max %lld ulp from the host update of the same gradients\n", step, (long long)worst);
        TEST_CHECK(worst <= 1);
    }
    /* pull/push round trip; the host copy is the state checkpoints read */
    for (size_t i = 0; i < np; i++) md->params[i] = (float)i * 1e-3f, md->adam_v[i] = 2.0f;
    memcpy(p0, md->params, np * sizeof(float));
    gt_engine_push_state(d);
    memset(md->params, 0, np * sizeof(float));
    memset(md->adam_v, 0, np * sizeof(float));
    gt_engine_pull_state(d);
    TEST_CHECK(!memcmp(md->params, p0, np * sizeof(float)));
    TEST_CHECK(md->adam_v[0] == 2.0f && md->adam_v[np - 1] == 2.0f);
    /* non-finite gradient detected on the device */
    float nan = NAN;
    TEST_REQUIRE(cudaMemcpy(gt_engine_grads(d), &nan, sizeof nan, cudaMemcpyHostToDevice) == cudaSuccess);
    TEST_EQ_INT(gt_engine_unscale(d, 1.0f), 0);
    check_grad_ready(d, x, dy, B); /* the hook at the device engine's queue points */
    TEST_CHECK(gt_engine_input_stall(d) >= 0.0); /* measured with events on the device */
    TEST_CHECK(gt_engine_input_stall(h) < 0.0);  /* the host engine does not measure it */
    free(x), free(dy), free(gd), free(p0), free(m0), free(v0);
    gt_engine_free(d);
    gt_engine_free(h);
}

/* CUDA graphs (cfg.graphs) vs eager, and the double-buffered inputs: two
 * CUDA engines from the same seed, one replaying graphs, train 5 steps of
 * two micro-batches each (B 3 through gt_engine_input, in place; B 2 from
 * another buffer, copied; dropout on s2p_cnn; the readiness hook on the last
 * micro-batch as the trainer sets it). Every prediction, every hook report
 * (offset and the gradients final at that point), the gradients and the
 * final parameters are bit-identical, and the graph engine did capture and
 * replay. */
typedef struct hook_rec {
    gt_engine *e;
    int n;
    size_t lo[READY_MAX];
    uint64_t sum[READY_MAX]; /* a hash of grads[lo, n) when reported */
} hook_rec;

static uint64_t hash_floats(const float *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void on_ready_hash(void *ctx, size_t lo) {
    hook_rec *r = ctx;
    TEST_REQUIRE(r->n < READY_MAX);
    size_t np = gt_engine_n_params(r->e);
    float *g = malloc((np - lo) * sizeof(float));
    copy_grads(r->e, g, lo, np - lo);
    r->lo[r->n] = lo;
    r->sum[r->n++] = hash_floats(g, np - lo);
    free(g);
}

static void check_cuda_graphs(gt_model_kind kind) {
    gt_model_config cfg;
    small_config(kind, &cfg);
    if (kind == GT_MODEL_S2P_CNN) cfg.dropout = 0.25f;
    printf("== cuda engine: graphs vs eager, double-buffered inputs: %s ==\n", gt_model_kind_name(kind));
    gt_engine *d[2];
    for (int g = 0; g < 2; g++) {
        cfg.graphs = g;
        d[g] = gt_engine_create(GT_ENGINE_CUDA, &cfg);
        gt_engine_init(d[g], 7);
    }
    const size_t np = gt_engine_n_params(d[0]), nx1 = gt_engine_n_x(d[0]), ny1 = gt_engine_n_y(d[0]);
    float *x = malloc(4 * nx1 * sizeof(float)), *other = malloc(4 * nx1 * sizeof(float));
    float *pr[2] = {malloc(4 * ny1 * sizeof(float)), malloc(4 * ny1 * sizeof(float))};
    float *gr[2] = {malloc(np * sizeof(float)), malloc(np * sizeof(float))};
    uint64_t ids[4] = {11, 12, 13, 14};
    gt_adamw_config opt = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    int mismatches = 0;
    for (int step = 0; step < 5; step++) {
        hook_rec rec[2] = {{.e = d[0]}, {.e = d[1]}};
        for (int g = 0; g < 2; g++) {
            gt_engine *e = d[g];
            gt_engine_zero_grad(e);
            for (int mb = 0; mb < 2; mb++) {
                const int B = mb == 0 ? 3 : 2;
                fill(x, (size_t)B * nx1, 0.3 + 0.1 * step + 0.05 * mb);
                const float *in = x;
                if (mb == 0) { /* the loader's way: fill the engine's input in place */
                    memcpy(gt_engine_input(e), x, (size_t)B * nx1 * sizeof(float));
                    in = gt_engine_input(e);
                } else {
                    memcpy(other, x, (size_t)B * nx1 * sizeof(float));
                    in = other;
                }
                const gt_dropout_key key = {.seed = 5, .step = step, .ids = ids};
                const float *p = gt_engine_forward_train(e, in, B, &key);
                memcpy(pr[g] + (mb ? 3 * ny1 : 0), p, (size_t)B * ny1 * sizeof(float));
                float *dp = gt_engine_dpred(e);
                for (size_t i = 0; i < (size_t)B * ny1; i++) dp[i] = 0.1f * (p[i] - 0.5f);
                if (mb == 1) gt_engine_set_grad_ready(e, on_ready_hash, &rec[g]);
                gt_engine_backward(e, 1.0f);
                gt_engine_set_grad_ready(e, NULL, NULL);
            }
            copy_grads(e, gr[g], 0, np);
            TEST_EQ_INT(gt_engine_unscale(e, 1.0f), 1);
            double n = gt_engine_grad_norm(e);
            if (n > 1.0) gt_engine_scale_grads(e, (float)(1.0 / n));
            gt_engine_adamw_step(e, &opt, 1e-3f, step + 1, 0);
        }
        mismatches += memcmp(pr[0], pr[1], 5 * ny1 * sizeof(float)) != 0;
        mismatches += memcmp(gr[0], gr[1], np * sizeof(float)) != 0;
        TEST_EQ_INT(rec[1].n, rec[0].n);
        for (int i = 0; i < rec[0].n && i < rec[1].n; i++)
            mismatches += rec[0].lo[i] != rec[1].lo[i] || rec[0].sum[i] != rec[1].sum[i];
    }
    TEST_EQ_INT(mismatches, 0);
    gt_engine_pull_state(d[0]);
    gt_engine_pull_state(d[1]);
    TEST_CHECK(!memcmp(gt_engine_model(d[0])->params, gt_engine_model(d[1])->params, np * sizeof(float)));
    TEST_CHECK(!memcmp(gt_engine_model(d[0])->adam_v, gt_engine_model(d[1])->adam_v, np * sizeof(float)));
    long cap[2], rep[2];
    for (int g = 0; g < 2; g++) gt_engine_graph_stats(d[g], &cap[g], &rep[g]);
    printf("  graphs: eager engine %ld captures, graph engine %ld captures, %ld replays\n", cap[0], cap[1], rep[1]);
    TEST_EQ_INT(cap[0] + rep[0], 0);
    /* 2 micro-batch shapes x (forward + backward) x 2 input buffers at most; replays from step 2 on */
    TEST_CHECK(cap[1] >= 4 && rep[1] >= 8);
    free(x), free(other), free(pr[0]), free(pr[1]), free(gr[0]), free(gr[1]);
    gt_engine_free(d[0]);
    gt_engine_free(d[1]);
}
#endif

int main(void) {
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++)
        if (gt_model_kind_available((gt_model_kind)k)) check_kind((gt_model_kind)k);
    TEST_EQ_INT(gt_engine_kind_parse("host"), GT_ENGINE_HOST);
    TEST_EQ_INT(gt_engine_kind_parse("tpu"), -1);
    TEST_CHECK(!strcmp(gt_engine_kind_name(GT_ENGINE_HOST), "host"));
#ifdef GT_HAVE_CUDA
    TEST_EQ_INT(gt_engine_kind_parse("cuda"), GT_ENGINE_CUDA);
    if (gt_device_gpu_count() > 0) {
        for (int k = 0; k < GT_MODEL_KIND_COUNT; k++)
            if (gt_model_kind_available((gt_model_kind)k)) {
                check_cuda_kind((gt_model_kind)k);
                check_cuda_graphs((gt_model_kind)k);
            }
    } else {
        const char *req = getenv("GT_TEST_REQUIRE_GPU");
        if (req && req[0] == '1') {
            fprintf(stderr, "GT_TEST_REQUIRE_GPU=1, but no CUDA device: the cuda engine half did not run\n");
            return 1;
        }
        printf("cuda engine: not run (no CUDA device present); the host engine passed\n");
    }
#else
    TEST_EQ_INT(gt_engine_kind_parse("cuda"), -1); /* not built in */
#endif
    TEST_DONE();
}
