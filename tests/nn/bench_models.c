/* tests/nn/bench_models.c: training throughput and memory of s2p_tf and lstm
 * (a measurement, not a test: not registered with ctest).
 *
 * build: cc -O3 -march=native -Isrc -Itests tests/nn/bench_models.c \
 *           build/libgt_nn.a build/libgt_core.a -lopenblas -lm -lpthread
 * usage: bench_models tf    [B L N steps]    samples/s of a full train step
 *        bench_models lstm  [B T K steps]
 *        bench_models tfmem [B L]            planned activation bytes + peak RSS
 * Run with OPENBLAS_NUM_THREADS=1 to compare with 1-thread PyTorch. A train
 * step is zero_grad + forward + loss + backward + clip + AdamW. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/timer.h"
#include "nn/model.h"
#include "nn/model_lstm.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(gt_model *m, int B, int steps, const char *what) {
    size_t nx = (size_t)B * m->n_x, ny = (size_t)B * m->n_y;
    float *x = malloc(nx * sizeof(float)), *y = malloc(ny * sizeof(float));
    gt_rng r;
    gt_rng_init(&r, 1, 1);
    for (size_t i = 0; i < nx; i++) x[i] = (float)gt_rng_normal(&r);
    for (size_t i = 0; i < ny; i++) y[i] = (float)gt_rng_normal(&r);
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.01f};
    double *dt = malloc((size_t)steps * sizeof(double));
    int ev_f = gt_event_register("forward"), ev_b = gt_event_register("backward");
    for (int s = -1; s < steps; s++) { // one warm-up step
        double t0 = gt_now();
        gt_model_zero_grad(m);
        gt_event_begin(ev_f);
        gt_model_forward(m, x, B);
        gt_event_end(ev_f);
        float loss = m->cfg.kind == GT_MODEL_LSTM ? gt_model_lstm_loss(m) : gt_model_loss(m, y, NULL);
        gt_event_begin(ev_b);
        gt_model_backward(m, 1.0f);
        gt_event_end(ev_b);
        gt_clip_grad_norm(m->grads, m->n_params, 1.0f);
        gt_model_adamw_step(m, &opt, 1e-4f, s + 2, 0);
        if (s >= 0) dt[s] = gt_now() - t0;
        if (s == -1) gt_events_reset();
        (void)loss;
    }
    qsort(dt, (size_t)steps, sizeof(double), cmp_d);
    double med = dt[steps / 2];
    printf("%s: B=%d step median %.3f s (min %.3f) -> %.2f samples/s; fwd %.3f bwd %.3f s/step; "
           "params %zu, acts %.1f MiB, peak RSS %.1f MiB\n",
           what, B, med, dt[0], B / med, gt_event_seconds(ev_f) / steps, gt_event_seconds(ev_b) / steps,
           m->n_params, gt_model_act_bytes(m) / 1048576.0, gt_peak_rss_bytes() / 1048576.0);
    free(dt);
    free(x);
    free(y);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "tf";
    gt_model_config c;
    if (strcmp(mode, "tf") == 0 || strcmp(mode, "tfmem") == 0) {
        gt_model_config_default(&c, GT_MODEL_S2P_TF);
        int mem = strcmp(mode, "tfmem") == 0;
        c.max_batch = argc > 2 ? atoi(argv[2]) : (mem ? 4 : 32);
        c.window = argc > 3 ? atoi(argv[3]) : 512;
        if (!mem && argc > 4) c.n_layers = atoi(argv[4]);
        int steps = mem ? 1 : (argc > 5 ? atoi(argv[5]) : 5);
        gt_model *m = gt_model_create(&c);
        gt_model_init(m, 1);
        char what[96];
        snprintf(what, sizeof what, "s2p_tf L=%d d=%d h=%d ff=%d N=%d", c.window, c.d_model, c.n_heads,
                 c.d_ff, c.n_layers);
        run(m, c.max_batch, steps, what);
        gt_model_free(m);
    } else {
        gt_model_config_default(&c, GT_MODEL_LSTM);
        c.max_batch = argc > 2 ? atoi(argv[2]) : 64;
        c.window = argc > 3 ? atoi(argv[3]) : 512;
        c.tbptt = argc > 4 ? atoi(argv[4]) : 0;
        int steps = argc > 5 ? atoi(argv[5]) : 7;
        gt_model *m = gt_model_create(&c);
        gt_model_init(m, 1);
        char what[96];
        snprintf(what, sizeof what, "lstm T=%d C=%d H=%d layers=%d K=%d", c.window, c.n_in, c.hidden,
                 c.n_layers, c.tbptt);
        run(m, c.max_batch, steps, what);
        gt_model_free(m);
    }
    return 0;
}
