/* The planner's arithmetic (plan/plan.h): components add up to the total,
 * memory grows with the micro-batch, the largest micro-batch that fits is
 * exactly the one a budget between two neighbours allows (and the advice
 * names it with its accumulation count), a budget below micro-batch 1 says
 * so, the GPU plan counts the CUDA model's device buffers, tiers parse; the
 * scale model: ring all-reduce bytes and latencies by hand, the network
 * between nodes taking over from the node's links, the efficiency and the
 * bound named, the data read shared by a node's ranks. */
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
    TEST_EQ_INT(gt_plan_tier("GA660M", rq.model.kind, &gpu), 0);
    TEST_CHECK(gpu.gpu && gpu.mem_bytes == 80.0 * 1073741824.0 && gpu.flops > 0);
    TEST_CLOSE(gpu.flops, 312e12 * gt_plan_gpu_efficiency_estimate(rq.model.kind), 0, 1e-12);
    TEST_CHECK(gt_plan_gpu_efficiency_estimate(GT_MODEL_LSTM) < gt_plan_gpu_efficiency_estimate(GT_MODEL_S2P_CNN));
    TEST_EQ_INT(gt_plan_tier("a350", rq.model.kind, &gpu), 0);
    TEST_CHECK(gpu.mem_bytes == 24.0 * 1073741824.0);
    TEST_EQ_INT(gt_plan_tier("h9000", rq.model.kind, &gpu), -1);
    gt_plan_tier("ga660m", rq.model.kind, &gpu);
    gt_plan_memory(&rq, &gpu, 16, &m);
    gt_model_config mc = rq.model;
    mc.max_batch = 16;
    gt_model_sizes sz;
    gt_model_plan_sizes(&mc, &sz);
    TEST_CLOSE(m.params + m.grads + m.moments + m.acts, (double)gt_model_device_bytes(&mc, &sz), 0, 1e-12);
    TEST_CHECK(m.data == 0 && m.base == 0 && m.buffers == 0);
    TEST_CLOSE(m.context, GT_PLAN_GPU_CONTEXT_BYTES, 0, 1e-12);
    /* the model stream's context: its cuBLAS workspace (32 MiB) + 16 + 2048 doubles + 33792 floats of
     * reduction scratch (nn/ops/cuda/context.cu), one engine at a time */
    TEST_CLOSE(m.stream, 33554432.0 + 128 + 16384 + 135168, 0, 0);
    TEST_CLOSE(m.total, m.params + m.grads + m.moments + m.acts + m.context + m.stream, 0, 1e-12);
    {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        TEST_REQUIRE(f != NULL);
        gt_plan pg;
        const int64_t micro_was = rq.micro;
        rq.micro = 16;
        gt_plan_compute(&rq, &gpu, &pg);
        gt_plan_print(f, &rq, &gpu, &pg);
        fclose(f);
        fputs(text, stderr);
        TEST_CHECK(strstr(text, "stream context (cuBLAS workspace, scratch)") != NULL);
        TEST_CHECK(strstr(text, "32.1 MiB") != NULL); /* 33706112 B */
        TEST_CHECK(strstr(text, "per device model, 1 at a time") != NULL);
        free(text);
        rq.micro = micro_was;
    }

    /* the scale model on the GA660M tier: 4 GPUs per node */
    gt_plan_net net;
    gt_plan_net_defaults("ga660m", 0, &net);
    TEST_EQ_INT(net.ranks_per_node, 4);
    TEST_CHECK(net.intra_bw > net.inter_bw && net.inter_bw > 0);
    gt_plan_compute(&rq, &gpu, &p);
    const double S = p.n_params * 4.0;
    gt_plan_scale sc;
    gt_plan_scale_at(&rq, &gpu, &p, &net, 1, 8e9, &sc);
    TEST_CHECK(sc.nodes == 1 && sc.per_rank == 200 && sc.allreduce_s == 0 && sc.efficiency == 1.0);
    TEST_CLOSE(sc.compute_s, 200 * p.train_flops_per_sample / gpu.flops, 0, 1e-12);
    TEST_CLOSE(sc.read_s, 8e9 / net.read_bw, 0, 1e-12);
    TEST_CHECK(!strcmp(sc.bound, "compute"));
    gt_plan_scale_at(&rq, &gpu, &p, &net, 4, 2e9, &sc); /* one node: the NVLink ring */
    TEST_CHECK(sc.nodes == 1 && sc.per_rank == 50);
    TEST_CLOSE(sc.allreduce_s, 2.0 * 3 / 4 * S / net.intra_bw + 6 * net.intra_lat, 0, 1e-12);
    TEST_CLOSE(sc.read_s, 4 * 2e9 / net.read_bw, 0, 1e-12); /* 4 ranks share the node's bandwidth */
    gt_plan_scale_at(&rq, &gpu, &p, &net, 16, 0.5e9, &sc); /* 4 nodes: the network is the slowest link */
    TEST_CHECK(sc.nodes == 4 && sc.per_rank == 13);
    TEST_CLOSE(sc.allreduce_s, 2.0 * 15 / 16 * S / net.inter_bw + 30 * net.inter_lat, 0, 1e-12);
    TEST_CLOSE(sc.step_s, sc.compute_s + sc.allreduce_s, 0, 1e-12);
    TEST_CLOSE(sc.efficiency, sc.compute_s / sc.step_s, 0, 1e-12);
    TEST_CLOSE(sc.samples_per_s, 200 / sc.step_s, 0, 1e-12);
    /* train.overlap: buckets during backward hide up to 2/3 of the compute;
     * the last bucket (1 MiB here) is always exposed */
    rq.overlap = 1;
    rq.bucket_bytes = 1048576.0;
    gt_plan_scale_at(&rq, &gpu, &p, &net, 16, 0.5e9, &sc);
    {
        const double last = 2.0 * 15 / 16 * fmin(1048576.0, S) / net.inter_bw + 30 * net.inter_lat;
        const double want = fmin(sc.allreduce_s, fmax(last, sc.allreduce_s - 2.0 / 3.0 * sc.compute_s));
        TEST_CLOSE(sc.exposed_s, want, 0, 1e-12);
        TEST_CLOSE(sc.step_s, sc.compute_s + sc.exposed_s, 0, 1e-12);
        TEST_CHECK(sc.exposed_s <= sc.allreduce_s && sc.exposed_s >= last * (1 - 1e-12));
    }
    rq.overlap = 0;
    /* a slow network makes the all-reduce the bound */
    net.inter_bw = 1e6;
    gt_plan_scale_at(&rq, &gpu, &p, &net, 16, 0.5e9, &sc);
    TEST_CHECK(!strcmp(sc.bound, "all-reduce (network between nodes)") && sc.efficiency < 0.5);
    /* the file system's total caps many nodes: 64 ranks = 16 nodes x 2 GB/s > 20 GB/s */
    gt_plan_scale_at(&rq, &gpu, &p, &net, 64, 1e9, &sc);
    TEST_CLOSE(sc.read_s, 4 * 1e9 / (net.fs_bw / 16), 0, 1e-12);
    gt_plan_scale_at(&rq, &gpu, &p, &net, 256, 1e9, &sc); /* more ranks than the global batch of 200 */
    TEST_CHECK(sc.per_rank == 1);
    gt_plan_scale_at(&rq, &gpu, &p, &net, 400, 1e9, &sc);
    TEST_CHECK(sc.per_rank == 1);
    TEST_DONE();
}
