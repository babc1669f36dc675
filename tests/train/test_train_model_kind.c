/* tests/train/test_train_model_kind.c (np 2): a model kind is its own table.
 * A linear seq2point model (pred = W x + b over the whole window), defined
 * here and registered with gt_model_kind_register, without a line of shared
 * code knowing it: it is found by name, its table answers the rules (input
 * layout, head default, settings it lacks, FLOPs, the planner's efficiency),
 * its backward matches central finite differences through the host engine,
 * and the trainer trains it on a small NILM file over 2 ranks: the loss goes
 * down, the replicas stay identical, and a second run gives the same bits. */
#include "nn/bench.h"
#include "nn/engine.h"
#include "plan/plan.h"
#include "train_test_util.h"
#include "task/task_registry.h"

/* ------------------------------------------------------------ the kind -- */
typedef struct linear_model {
    int t_w, t_b;
} linear_model;

static void linear_defaults(gt_model_config *cfg) {
    cfg->window = 63;
    cfg->n_in = 1;
    cfg->n_out = 1;
}

static void linear_plan(gt_model *m) {
    const gt_model_config *c = &m->cfg;
    linear_model *s = (linear_model *)GT_CALLOC(1, sizeof *s);
    m->impl = s;
    m->n_x = (size_t)c->window * (size_t)c->n_in;
    m->n_y = (size_t)c->n_out;
    const int ws[2] = {c->n_out, (int)m->n_x}, bs[1] = {c->n_out};
    const float scale = 1.0f / sqrtf((float)m->n_x);
    s->t_w = gt_model_add_param(m, "linear.weight", 2, ws, GT_INIT_UNIFORM, scale, 1);
    s->t_b = gt_model_add_param(m, "linear.bias", 1, bs, GT_INIT_UNIFORM, scale, 0);
}

static void linear_forward(gt_model *m, int B) {
    const linear_model *s = (const linear_model *)m->impl;
    const float *w = gt_model_param_ptr(m, m->params, s->t_w), *b = gt_model_param_ptr(m, m->params, s->t_b);
    const size_t X = m->n_x, Y = m->n_y;
    for (int n = 0; n < B; n++)
        for (size_t o = 0; o < Y; o++) {
            double acc = b[o];
            for (size_t i = 0; i < X; i++) acc += (double)w[o * X + i] * m->x[(size_t)n * X + i];
            m->pred[(size_t)n * Y + o] = (float)acc;
        }
}

static void linear_backward(gt_model *m, int B) {
    const linear_model *s = (const linear_model *)m->impl;
    float *gw = gt_model_param_ptr(m, m->grads, s->t_w), *gb = gt_model_param_ptr(m, m->grads, s->t_b);
    const size_t X = m->n_x, Y = m->n_y;
    for (int n = 0; n < B; n++)
        for (size_t o = 0; o < Y; o++) {
            const float d = m->dpred[(size_t)n * Y + o];
            gb[o] += d;
            for (size_t i = 0; i < X; i++) gw[o * X + i] += d * m->x[(size_t)n * X + i];
        }
    gt_model_grad_ready(m, gw); /* one layer: every gradient is final */
}

static void linear_free(gt_model *m) { free(m->impl); }

static double linear_flops(const gt_model_config *c) { return 2.0 * c->window * c->n_in * c->n_out; }

static const gt_model_vtable linear_vt = {
    .name = "linear",
    .channels_last = 1,
    .seq2point = 1,
    .defaults = linear_defaults,
    .plan = linear_plan,
    .forward = linear_forward,
    .backward = linear_backward,
    .free = linear_free,
    .forward_flops = linear_flops,
    .gpu_efficiency = 0.5,
};

/* --------------------------------------------------------------- checks -- */
/* 0.5 * sum (pred - y)^2 of one forward on the host engine. */
static double objective(gt_engine *e, const float *x, const float *y, int B) {
    const float *p = gt_engine_forward(e, x, B);
    double s = 0;
    for (size_t i = 0; i < (size_t)B * gt_engine_n_y(e); i++) s += 0.5 * ((double)p[i] - y[i]) * ((double)p[i] - y[i]);
    return s;
}

static void check_gradient(gt_model_kind kind) {
    gt_model_config mc;
    gt_model_config_default(&mc, kind);
    mc.window = 5, mc.n_in = 2, mc.n_out = 3, mc.max_batch = 4;
    gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &mc);
    gt_engine_init(e, 7);
    const int B = 4;
    float x[4 * 10], y[4 * 3];
    for (int i = 0; i < B * 10; i++) x[i] = (float)sin(0.7 * i + 0.3);
    for (int i = 0; i < B * 3; i++) y[i] = (float)cos(0.4 * i);
    gt_engine_zero_grad(e);
    const float *p = gt_engine_forward(e, x, B);
    float *dp = gt_engine_dpred(e);
    for (int i = 0; i < B * 3; i++) dp[i] = p[i] - y[i];
    gt_engine_backward(e, 1.0f);
    gt_model *m = gt_engine_model(e);
    const size_t np = gt_engine_n_params(e);
    TEST_EQ_INT((long long)np, 3 * 10 + 3);
    double worst = 0;
    for (size_t k = 0; k < np; k++) {
        const float keep = m->params[k], h = 1e-2f;
        m->params[k] = keep + h;
        const double up = objective(e, x, y, B);
        m->params[k] = keep - h;
        const double down = objective(e, x, y, B);
        m->params[k] = keep;
        const double fd = (up - down) / (2.0 * h), g = m->grads[k];
        const double rel = fabs(fd - g) / (fabs(fd) + fabs(g) + 1e-6);
        if (rel > worst) worst = rel;
    }
    fprintf(stderr, "linear: worst relative gradient error %.2e over %zu parameters\n", worst, np);
    TEST_CHECK(worst < 1e-3);
    gt_engine_free(e);
}

static void train_once(const char *file, gt_model_kind kind, MPI_Comm comm, gt_train_result *r) {
    gt_train_config c;
    gt_train_config_defaults(&c, kind);
    c.data_file = file;
    c.data.window = 63;
    c.data.stride = 16;
    gt_nilm_data_cfg_set(&c.data)->spike_min_w = 0;
    c.lr = 3e-3;
    c.lr_min = 1e-4;
    c.warmup = 5;
    c.batch = 32;
    c.micro_batch = 8;
    c.epochs = 0;
    c.max_steps = 60;
    c.quiet = 1;
    c.write_outputs = 0;
    c.checkpoint_minutes = 0;
    TEST_EQ_INT(gt_train_run(&c, comm, r), 0);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);

    const int before = gt_model_kind_count();
    const gt_model_kind kind = gt_model_kind_register(&linear_vt);
    TEST_EQ_INT((int)kind, before);
    TEST_EQ_INT(gt_model_kind_count(), before + 1);
    TEST_EQ_INT(gt_model_kind_parse("linear"), (int)kind);
    TEST_CHECK(!strcmp(gt_model_kind_name(kind), "linear"));
    TEST_CHECK(gt_model_kind_available(kind));
    TEST_EQ_INT(gt_model_input_channels_last(kind), 1);
    TEST_CHECK(!gt_model_kind_has(kind, GT_MODEL_HAS_DROPOUT) && !gt_model_kind_has(kind, GT_MODEL_HAS_TBPTT));
    TEST_CHECK(gt_model_kind_has(GT_MODEL_S2P_CNN, GT_MODEL_HAS_DROPOUT) &&
               gt_model_kind_has(GT_MODEL_LSTM, GT_MODEL_HAS_TBPTT));
    TEST_CHECK(fabs(gt_plan_gpu_efficiency_estimate(kind) - 0.5) < 1e-12);
    TEST_CHECK(fabs(gt_plan_gpu_efficiency_estimate(GT_MODEL_LSTM) - 0.005) < 1e-12); /* the built-ins' own */
    gt_model_config mc;
    gt_model_config_default(&mc, kind);
    TEST_EQ_INT(mc.window, 63);
    TEST_EQ_INT(mc.max_batch, 256); /* the framework's default */
    gt_model_config_check(&mc);     /* nothing set that the kind lacks */
    TEST_CHECK(fabs(gt_model_forward_flops(&mc) - 2.0 * 63) < 1e-9);
    TEST_EQ_INT((long long)gt_model_device_work_elems(&mc), 0); /* no device work area */
    gt_model_sizes sz;
    gt_model_plan_sizes(&mc, &sz);
    TEST_EQ_INT((long long)sz.n_params, 63 + 1);
    TEST_EQ_INT((long long)sz.n_x, 63);

    check_gradient(kind);

    char dir[512], file[600];
    tt_scratch(dir, sizeof dir, "model-kind", comm);
    snprintf(file, sizeof file, "%s/nilm.h5", dir);
    tt_write_nilm(file, -1, 0, comm);
    gt_train_result r, r2;
    train_once(file, kind, comm, &r);
    TEST_EQ_INT(r.steps, 60);
    TEST_CHECK(r.replicas_identical);
    if (rank == 0) {
        const double f5 = tt_mean(r.losses, 5), l5 = tt_mean(r.losses + r.n_losses - 5, 5);
        fprintf(stderr, "linear: loss %.4f -> %.4f, val %.4f, params xxh64 %016llx\n", f5, l5, r.last_val,
                (unsigned long long)r.params_checksum);
        TEST_CHECK(l5 < 0.8 * f5);
        TEST_CHECK(isfinite(r.last_val));
    }
    train_once(file, kind, comm, &r2);
    TEST_CHECK(r2.params_checksum == r.params_checksum);
    gt_train_result_free(&r);
    gt_train_result_free(&r2);

    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
