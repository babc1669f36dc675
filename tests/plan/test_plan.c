/* The planner's arithmetic (plan/plan.h): components add up to the total,
 * memory grows with the micro-batch, the largest micro-batch that fits is
 * exactly the one a budget between two neighbours allows (and the advice
 * names it with its accumulation count), a budget below micro-batch 1 says
 * so, the GPU plan counts the CUDA model's device buffers, tiers parse. */
#include <math.h>
#include <string.h>

#include "plan/plan.h"
#include "nn/ops/cuda/sizes.h"
#include "test.h"

static void request(gt_plan_request *rq) {
    memset(rq, 0, sizeof *rq);
    gt_model_config_default(&rq->model, GT_MODEL_S2P_TF);
    rq->model.window = 256, rq->model.n_in = 3, rq->model.n_out = 30;
    rq->model.d_model = 32, rq->model.n_heads = 4, rq->model.d_ff = 64, rq->model.n_layers = 2;
    rq->batch = 200;
    rq->ranks = 2;
    rq->micro = 0;
    rq->n_y_data = 15;
    rq->data_bytes = 50e6;
    rq->base_bytes = 30e6;
}

int main(void) {
    gt_plan_request rq;
    request(&rq);
    gt_plan_target cpu;
    memset(&cpu, 0, sizeof cpu);
    snprintf(cpu.name, sizeof cpu.name, "test");
    gt_plan_mem prev = {0}, m;
    for (int64_t k = 1; k <= 100; k++) {
        gt_plan_memory(&rq, &cpu, k, &m);
        TEST_CLOSE(m.total, m.params + m.grads + m.moments + m.acts + m.buffers + m.data + m.base + m.context, 1e-6,
                   1e-12);
        TEST_CHECK(m.data == 50e6 && m.base == 30e6 && m.context == 0);
        if (k > 1) TEST_CHECK(m.total > prev.total && m.acts > prev.acts);
        prev = m;
    }
    gt_plan p;
    gt_plan_compute(&rq, &cpu, &p); /* no budget: fits, whole share */
    TEST_EQ_INT(p.per_rank, 100);
    TEST_EQ_INT(p.micro, 100);
    TEST_EQ_INT(p.accum, 1);
    TEST_CHECK(p.fits && p.micro_fit == 100);
    TEST_CHECK(p.train_flops_per_sample > 0 && p.step_s == 0);

    /* a budget between micro-batch 37 and 38 */
    gt_plan_mem m37, m38;
    gt_plan_memory(&rq, &cpu, 37, &m37);
    gt_plan_memory(&rq, &cpu, 38, &m38);
    cpu.mem_bytes = 0.5 * (m37.total + m38.total);
    cpu.flops = 1e11;
    gt_plan_compute(&rq, &cpu, &p);
    TEST_CHECK(!p.fits);
    TEST_EQ_INT(p.micro_fit, 37);
    TEST_CLOSE(p.mem_fit.total, m37.total, 0, 1e-12);
    TEST_CLOSE(p.step_s, 100 * p.train_flops_per_sample / 1e11, 0, 1e-12);
    char adv[512];
    gt_plan_advice(&p, &cpu, adv, sizeof adv);
    TEST_CHECK(strstr(adv, "train.micro_batch=37 ") != NULL);
    TEST_CHECK(strstr(adv, " 3 accumulation steps") != NULL); /* ceil(100 / 37) */
    fprintf(stderr, "advice: %s\n", adv);
    /* the requested micro-batch 37 fits that budget */
    rq.micro = 37;
    gt_plan_compute(&rq, &cpu, &p);
    TEST_CHECK(p.fits && p.micro == 37 && p.accum == 3);
    gt_plan_advice(&p, &cpu, adv, sizeof adv);
    TEST_CHECK(adv[0] == 0);

    /* below micro-batch 1 */
    gt_plan_mem m1;
    gt_plan_memory(&rq, &cpu, 1, &m1);
    cpu.mem_bytes = m1.total - 1;
    gt_plan_compute(&rq, &cpu, &p);
    TEST_CHECK(!p.fits && p.micro_fit == 0);
    gt_plan_advice(&p, &cpu, adv, sizeof adv);
    TEST_CHECK(strstr(adv, "even micro-batch 1") != NULL);

    /* GPU: the device buffers of the CUDA model, no host data, the context on top */
    gt_plan_target gpu;
    TEST_EQ_INT(gt_plan_tier("GA660M", &gpu), 0);
    TEST_CHECK(gpu.gpu && gpu.mem_bytes == 80.0 * 1073741824.0 && gpu.flops > 0);
    TEST_EQ_INT(gt_plan_tier("a350", &gpu), 0);
    TEST_CHECK(gpu.mem_bytes == 24.0 * 1073741824.0);
    TEST_EQ_INT(gt_plan_tier("h9000", &gpu), -1);
    gt_plan_tier("ga660m", &gpu);
    gt_plan_memory(&rq, &gpu, 16, &m);
    gt_model_config mc = rq.model;
    mc.max_batch = 16;
    gt_model_sizes sz;
    gt_model_plan_sizes(&mc, &sz);
    TEST_CLOSE(m.params + m.grads + m.moments + m.acts, (double)gt_model_device_bytes(&mc, &sz), 0, 1e-12);
    TEST_CHECK(m.data == 0 && m.base == 0 && m.buffers == 0);
    TEST_CLOSE(m.context, GT_PLAN_GPU_CONTEXT_BYTES + (double)GT_CUBLAS_WS_BYTES, 0, 1e-12);
    TEST_DONE();
}
