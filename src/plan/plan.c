/* plan/plan.c: memory and step-time planner, see plan/plan.h. */
#include "plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/loader.h"
#include "nn/bench.h"
#include "nn/ops/cuda/sizes.h"

int64_t gt_plan_micro_buffer_bytes(int64_t micro, int64_t n_y, int64_t n_y_ds) {
    const int64_t nyd = n_y_ds > 0 ? n_y_ds : 1;
    return micro * ((int64_t)sizeof(int64_t) + 2 * n_y * (int64_t)sizeof(float) + 2 * nyd * (int64_t)sizeof(float));
}

void gt_plan_memory(const gt_plan_request *rq, const gt_plan_target *tg, int64_t micro, gt_plan_mem *out) {
    memset(out, 0, sizeof *out);
    gt_model_config mc = rq->model;
    mc.max_batch = (int)micro;
    gt_model_sizes sz;
    gt_model_plan_sizes(&mc, &sz);
    const double np = (double)sz.n_params, f = sizeof(float);
    out->micro = micro;
    out->params = np * f;
    out->grads = np * f;
    out->moments = 2 * np * f;
    if (tg->gpu) {
        /* the device buffers of gt_cuda_model_create: the state above, the rest is
         * activations, targets, the work area and flags */
        out->acts = (double)gt_model_device_bytes(&mc, &sz) - 4 * np * f;
        out->context = tg->context_bytes;
        /* each model stream's cuBLAS workspace and scratch (nn/ops/cuda/context.cu) */
        out->stream = GT_PLAN_GPU_ENGINES * (double)gt_cuda_stream_ctx_bytes();
    } else {
        out->acts = (double)sz.n_act_elems * f;
        /* the loader's two slots and the trainer's micro-batch buffers */
        out->buffers = (double)gt_loader_bytes_for(rq->batch, (int64_t)sz.n_x, rq->n_y_data) +
                       (double)gt_plan_micro_buffer_bytes(micro, (int64_t)sz.n_y, rq->n_y_data);
        out->data = rq->data_bytes;
        out->base = rq->base_bytes;
    }
    out->total = out->params + out->grads + out->moments + out->acts + out->buffers + out->data + out->base +
                 out->context + out->stream;
}

static int fits(const gt_plan_target *tg, const gt_plan_mem *m) { return tg->mem_bytes <= 0 || m->total <= tg->mem_bytes; }

void gt_plan_compute(const gt_plan_request *rq, const gt_plan_target *tg, gt_plan *out) {
    memset(out, 0, sizeof *out);
    const int P = rq->ranks > 0 ? rq->ranks : 1;
    out->per_rank = (rq->batch + P - 1) / P;
    if (out->per_rank < 1) out->per_rank = 1;
    out->micro = rq->micro > 0 && rq->micro < out->per_rank ? rq->micro : out->per_rank;
    out->accum = (out->per_rank + out->micro - 1) / out->micro;
    gt_plan_memory(rq, tg, out->micro, &out->mem);
    out->fits = fits(tg, &out->mem);
    /* memory grows with the micro-batch: bisect for the largest that fits */
    gt_plan_mem m1;
    gt_plan_memory(rq, tg, 1, &m1);
    if (!fits(tg, &m1)) {
        out->micro_fit = 0;
        out->mem_fit = m1;
    } else {
        int64_t lo = 1, hi = out->per_rank;
        gt_plan_mem best = m1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            gt_plan_mem m;
            gt_plan_memory(rq, tg, mid, &m);
            if (fits(tg, &m)) lo = mid, best = m;
            else hi = mid - 1;
        }
        out->micro_fit = lo;
        out->mem_fit = best;
    }
    gt_model_config mc = rq->model;
    mc.max_batch = (int)out->micro;
    out->n_params = out->mem.params / sizeof(float);
    out->train_flops_per_sample = 3.0 * gt_model_forward_flops(&mc);
    out->step_s = tg->flops > 0 ? (double)out->per_rank * out->train_flops_per_sample / tg->flops : 0;
}

static const char *human(double b, char *buf, size_t n) {
    if (b >= 1024.0 * 1048576.0) snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1048576.0));
    else snprintf(buf, n, "%.1f MiB", b / 1048576.0);
    return buf;
}

void gt_plan_advice(const gt_plan *p, const gt_plan_target *tg, char *buf, size_t n) {
    char a[32], b[32];
    if (p->fits) {
        buf[0] = 0;
    } else if (p->micro_fit > 0) {
        snprintf(buf, n,
                 "set train.micro_batch=%lld (%s per rank, %lld accumulation steps; the global batch and the "
                 "result stay the same), or use more ranks",
                 (long long)p->micro_fit, human(p->mem_fit.total, a, sizeof a),
                 (long long)((p->per_rank + p->micro_fit - 1) / p->micro_fit));
    } else {
        snprintf(buf, n,
                 "even micro-batch 1 needs %s against %s: use a smaller model or window, %s",
                 human(p->mem_fit.total, a, sizeof a), human(tg->mem_bytes, b, sizeof b),
                 tg->gpu ? "or a GPU with more memory" : "more memory per rank (fewer ranks per node) or less data "
                                                         "per rank (more nodes)");
    }
}

void gt_plan_print(FILE *f, const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p) {
    char a[32], b[32];
    const gt_model_config *mc = &rq->model;
    fprintf(f, "plan: %s, window %d, %d input channel%s, %d outputs, %.3f M parameters\n",
            gt_model_kind_name(mc->kind), mc->window, mc->n_in, mc->n_in == 1 ? "" : "s", mc->n_out,
            p->n_params / 1e6);
    fprintf(f, "      global batch %lld over %d rank%s: %lld samples per rank per step, micro-batch %lld x %lld\n",
            (long long)rq->batch, rq->ranks, rq->ranks == 1 ? "" : "s", (long long)p->per_rank,
            (long long)p->micro, (long long)p->accum);
    fprintf(f, "target: %s, %s per rank%s\n", tg->name,
            tg->mem_bytes > 0 ? human(tg->mem_bytes, a, sizeof a) : "memory unknown",
            tg->gpu ? " (device memory)" : " (host memory)");
    const gt_plan_mem *m = &p->mem;
    fprintf(f, "memory per rank at micro-batch %lld:\n", (long long)m->micro);
    struct {
        const char *what;
        double v;
    } rows[] = {{"parameters (fp32)", m->params},
                {"gradients", m->grads},
                {"AdamW moments", m->moments},
                {tg->gpu ? "activations, targets, work area" : "activations", m->acts},
                {"batch buffers", m->buffers},
                {"data pipeline (this rank's series)", m->data},
                {"process (libraries, MPI, HDF5)", m->base},
                {"CUDA context, kernels, libraries (estimate)", m->context},
                {"stream context (cuBLAS workspace, scratch)", m->stream}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].v > 0) fprintf(f, "  %-44s %12s\n", rows[i].what, human(rows[i].v, a, sizeof a));
    if (m->stream > 0)
        fprintf(f, "  (stream context: per device model, %d at a time; the evaluation after training makes its own "
                   "once the trainer's is freed)\n",
                GT_PLAN_GPU_ENGINES);
    fprintf(f, "  %-44s %12s", "total", human(m->total, a, sizeof a));
    if (tg->mem_bytes > 0) fprintf(f, "  (%.0f%% of %s)", 100.0 * m->total / tg->mem_bytes, human(tg->mem_bytes, b, sizeof b));
    fputc('\n', f);
    if (tg->mem_bytes > 0) {
        if (p->micro_fit > 0)
            fprintf(f, "largest micro-batch that fits: %lld (%s)%s\n", (long long)p->micro_fit,
                    human(p->mem_fit.total, a, sizeof a),
                    p->micro_fit >= p->per_rank ? ": the whole per-rank share, no accumulation needed" : "");
        char adv[512];
        gt_plan_advice(p, tg, adv, sizeof adv);
        fprintf(f, "verdict: %s%s\n", p->fits ? "fits" : "DOES NOT FIT: ", adv);
    }
    fprintf(f, "compute: %.3g GFLOP per training sample (3 x forward)", p->train_flops_per_sample * 1e-9);
    if (p->step_s > 0)
        fprintf(f, "; at %.3g TFLOP/s sustained: %.3g ms per step, %.0f samples/s per rank", tg->flops * 1e-12,
                p->step_s * 1e3, (double)p->per_rank / p->step_s);
    fputc('\n', f);
}

double gt_plan_gpu_efficiency_estimate(gt_model_kind kind) {
    const gt_model_vtable *vt = gt_model_kind_table(kind); /* the kind's own estimate (nn/model_<kind>.c) */
    return vt && vt->gpu_efficiency > 0 ? vt->gpu_efficiency : 0.02;
}

int gt_plan_tier(const char *name, gt_model_kind kind, gt_plan_target *tg) {
    /* one GPU of each tier (docs/tiers.md); nominal dense bf16 rates are
     * assumptions for the estimate, override with --gpu-tflops */
    static const struct {
        const char *name, *what;
        double gib, tflops;
    } tiers[] = {{"a350", "A350 (1 GPU, 24 GiB class)", 24, 80},
                 {"ae450", "AE450 (1-2 GPUs, 24 GiB class)", 24, 150},
                 {"ga660m", "GA660M (4 GPUs, 80 GiB class)", 80, 312}};
    for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++)
        if (!strcasecmp(name, tiers[i].name)) {
            memset(tg, 0, sizeof *tg);
            snprintf(tg->name, sizeof tg->name, "%s, one GPU per rank", tiers[i].what);
            tg->gpu = 1;
            tg->mem_bytes = tiers[i].gib * 1024.0 * 1048576.0;
            tg->nominal_flops = tiers[i].tflops * 1e12;
            tg->efficiency = gt_plan_gpu_efficiency_estimate(kind);
            tg->efficiency_from = "estimate";
            tg->flops = tg->nominal_flops * tg->efficiency;
            tg->context_bytes = GT_PLAN_GPU_CONTEXT_BYTES;
            return 0;
        }
    return -1;
}

/* ---------------------------------------------------------- scale model -- */

void gt_plan_net_defaults(const char *tier, int cpu_ranks_per_node, gt_plan_net *net) {
    memset(net, 0, sizeof *net);
    /* assumptions (docs/tiers.md "Scale model"): GA660M: 4 GPUs on NVLink
     * (~150 GB/s ring bandwidth), 4 x 200 Gb/s InfiniBand per node (~80 GB/s
     * usable); AE450: 2 GPUs on PCIe 4.0 (~20 GB/s), 2 x 200 Gb/s; A350: one
     * GPU, 100 Gb/s; CPU nodes: shared memory (~5 GB/s per rank pair through
     * MPI), 100 Gb/s. File system: 2 GB/s per node, 20 GB/s in all. */
    static const struct {
        const char *name;
        int rpn;
        double intra_gbs, inter_gbs;
    } t[] = {{"a350", 1, 20, 10}, {"ae450", 2, 20, 40}, {"ga660m", 4, 150, 80}};
    net->ranks_per_node = cpu_ranks_per_node > 0 ? cpu_ranks_per_node : 1;
    net->intra_bw = 5e9;
    net->inter_bw = 10e9;
    for (size_t i = 0; tier && i < sizeof t / sizeof t[0]; i++)
        if (!strcasecmp(tier, t[i].name)) {
            net->ranks_per_node = t[i].rpn;
            net->intra_bw = t[i].intra_gbs * 1e9;
            net->inter_bw = t[i].inter_gbs * 1e9;
        }
    net->intra_lat = 10e-6;
    net->inter_lat = 20e-6;
    net->read_bw = 2e9;
    net->fs_bw = 20e9;
}

void gt_plan_scale_at(const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p,
                      const gt_plan_net *net, int ranks, double data_bytes_per_rank, gt_plan_scale *out) {
    memset(out, 0, sizeof *out);
    const int rpn = net->ranks_per_node > 0 ? net->ranks_per_node : 1;
    out->ranks = ranks;
    out->nodes = (ranks + rpn - 1) / rpn;
    out->per_rank = (rq->batch + ranks - 1) / ranks;
    out->grad_bytes = p->n_params * sizeof(float);
    out->compute_s = tg->flops > 0 ? (double)out->per_rank * p->train_flops_per_sample / tg->flops : 0;
    if (ranks > 1) {
        const double bw = out->nodes > 1 ? fmin(net->intra_bw, net->inter_bw) : net->intra_bw;
        const double lat = out->nodes > 1 ? net->inter_lat : net->intra_lat;
        out->allreduce_s = 2.0 * (ranks - 1) / ranks * out->grad_bytes / bw + 2.0 * (ranks - 1) * lat;
    }
    out->exposed_s = out->allreduce_s;
    if (rq->overlap && ranks > 1) {
        /* buckets start as backward produces them: what backward's remaining
         * compute can hide is hidden, but the last bucket (the first layers)
         * only starts when backward ends */
        const double bucket = fmin(rq->bucket_bytes > 0 ? rq->bucket_bytes : GT_PLAN_BUCKET_BYTES, out->grad_bytes);
        const double bw = out->nodes > 1 ? fmin(net->intra_bw, net->inter_bw) : net->intra_bw;
        const double lat = out->nodes > 1 ? net->inter_lat : net->intra_lat;
        const double last = 2.0 * (ranks - 1) / ranks * bucket / bw + 2.0 * (ranks - 1) * lat;
        out->exposed_s = fmax(last, out->allreduce_s - GT_PLAN_BACKWARD_SHARE * out->compute_s);
        if (out->exposed_s > out->allreduce_s) out->exposed_s = out->allreduce_s;
    }
    out->step_s = out->compute_s + out->exposed_s;
    out->efficiency = out->step_s > 0 ? out->compute_s / out->step_s : 0;
    out->samples_per_s = out->step_s > 0 ? (double)rq->batch / out->step_s : 0;
    out->read_bytes_per_rank = data_bytes_per_rank;
    double node_bw = net->read_bw;
    if (net->fs_bw > 0 && net->fs_bw / out->nodes < node_bw) node_bw = net->fs_bw / out->nodes;
    const int on_node = ranks < rpn ? ranks : rpn;
    out->read_s = node_bw > 0 ? data_bytes_per_rank * on_node / node_bw : 0;
    if ((int64_t)ranks > rq->batch) out->bound = "more ranks than samples per step";
    else if (out->exposed_s > out->compute_s)
        out->bound = out->nodes > 1 && net->inter_bw < net->intra_bw ? "all-reduce (network between nodes)"
                                                                   : "all-reduce (links within the node)";
    else out->bound = "compute";
}

void gt_plan_scale_print(FILE *f, const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p,
                         const gt_plan_net *net, double data_bytes_total) {
    if (tg->flops <= 0) return;
    char a[32];
    fprintf(f, "scale (model; %d rank%s per node, ring all-reduce of %s of fp32 gradients at %.3g GB/s within a node%s"
               " and %.3g GB/s between nodes, %s):\n",
            net->ranks_per_node, net->ranks_per_node == 1 ? "" : "s", human(p->n_params * 4.0, a, sizeof a),
            net->intra_bw / 1e9, net->measured_intra ? " (measured here)" : "", net->inter_bw / 1e9,
            rq->overlap ? "in buckets overlapped with backward (train.overlap): exposed = max(last bucket, all-reduce"
                          " - 2/3 of compute)"
                        : "after backward (train.overlap=false): all exposed");
    fprintf(f, "  %6s %5s %9s %11s %12s %11s %10s %10s %12s %11s  %s\n", "ranks", "nodes", "per-rank", "compute ms",
            "all-reduce ms", "exposed ms", "step ms", "efficiency", "samples/s", "read s", "bound by");
    int list[5] = {1, 4, 16, 64, rq->ranks}, n = 4;
    if (rq->ranks != 1 && rq->ranks != 4 && rq->ranks != 16 && rq->ranks != 64) n = 5;
    for (int i = 0; i < n; i++) {
        gt_plan_scale s;
        gt_plan_scale_at(rq, tg, p, net, list[i], data_bytes_total / list[i], &s);
        fprintf(f, "  %6d %5d %9lld %11.3f %12.3f %11.3f %10.3f %9.0f%% %12.0f %11.2f  %s%s\n", s.ranks, s.nodes,
                (long long)s.per_rank, s.compute_s * 1e3, s.allreduce_s * 1e3, s.exposed_s * 1e3, s.step_s * 1e3,
                100.0 * s.efficiency,
                s.samples_per_s, s.read_s, s.bound, list[i] == rq->ranks && n == 5 ? " (requested)" : "");
    }
}
