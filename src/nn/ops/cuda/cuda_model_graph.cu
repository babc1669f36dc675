// nn/ops/cuda/cuda_model_graph.cu: the passes of the device model: the
// kind's kernels run eagerly, or as CUDA graphs (nn/cuda_model.h
// gt_cuda_model_set_graphs): each forward and backward shape captured once
// and replayed; the kernels themselves come from the kind's table
// (cuda_model_impl.h).
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/cuda_model_impl.h"

// A captured forward or backward of one shape. A backward is captured in
// segments, one per readiness report (ready()), so a replay can report each
// layer's gradients between segment launches exactly as the eager backward
// does (dist/'s overlapped exchange works with graphs too).
#define GT_CUDA_GRAPH_SLOTS 24
#define GT_CUDA_GRAPH_SEGS (GT_MODEL_MAX_TENSORS + 1)
struct graph_seg {
    cudaGraphExec_t exec; // NULL for an empty segment (nothing queued between two reports)
    size_t ready_off; // report this offset after the segment (backward), if has_ready
    int has_ready;
};
struct graph_slot {
    int used;       // the key is set
    int seen;       // eager runs of this key so far (capture at the second: the first warms up)
    int backward;   // 0 forward, 1 backward
    int B, drop_on;
    const float *x; // the device input it reads
    float dloss;    // backward: the scale of dpred baked into the graph
    graph_seg *seg;
    int n_seg;
};

static void capture_segment_end(gt_cuda_model *m, size_t off, int has_ready);
static void capture_segment_begin(gt_cuda_model *m);

void gt_cuda_ready(gt_cuda_model *m, const float *g) {
    const size_t off = (size_t)(g - m->grads);
    if (m->cap) {
        capture_segment_end(m, off, 1);
        capture_segment_begin(m);
        return;
    }
    if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, off);
}

graph_slot *gt_cuda_graph_slots_new(void) { return (graph_slot *)GT_CALLOC(GT_CUDA_GRAPH_SLOTS, sizeof(graph_slot)); }

void gt_cuda_graph_slots_free(graph_slot *slots) {
    for (int i = 0; slots && i < GT_CUDA_GRAPH_SLOTS; i++) {
        for (int k = 0; k < slots[i].n_seg; k++) cudaGraphExecDestroy(slots[i].seg[k].exec);
        free(slots[i].seg);
    }
    free(slots);
}

// ------------------------------------------------------------ CUDA graphs --
// A forward or backward runs eagerly the first time its key (direction,
// batch, input buffer, dropout, dloss) is seen (warm-up: cuBLAS picks its
// algorithms, lazily loaded kernels load), is captured the second time and
// replayed from then on. A capture that fails turns graphs off for the model
// (warning once) and the work runs eagerly: results never depend on it, the
// graph holds exactly the kernels of the eager call.
static graph_slot *graph_find(gt_cuda_model *m, int backward, int B, float dloss) {
    graph_slot *free_slot = nullptr;
    for (int i = 0; i < GT_CUDA_GRAPH_SLOTS; i++) {
        graph_slot *g = &m->slots[i];
        if (!g->used) {
            if (!free_slot) free_slot = g;
            continue;
        }
        if (g->backward == backward && g->B == B && g->x == m->x && g->drop_on == m->drop_on &&
            (!backward || g->dloss == dloss))
            return g;
    }
    if (!free_slot) return nullptr; // full: eager from now on for new keys
    free_slot->used = 1;
    free_slot->backward = backward;
    free_slot->B = B;
    free_slot->x = m->x;
    free_slot->drop_on = m->drop_on;
    free_slot->dloss = dloss;
    return free_slot;
}

static void graph_give_up(gt_cuda_model *m, const char *what, const char *why) {
    (void)cudaGetLastError(); // a failed capture leaves no sticky error; clear the last one
    if (m->graphs)
        GT_WARN("CUDA graphs off for this run: capturing the %s failed (%s); every step runs eagerly", what, why);
    m->graphs = 0;
}

// After a capture, whatever failed inside it: the stream is out of capture
// mode (a capture still open, e.g. after a failure between segments, is
// ended and its graph dropped), else the job ends.
static void capture_leave(gt_cuda_model *m) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(m->stream, &st);
    if (e == cudaSuccess && st != cudaStreamCaptureStatusNone) {
        cudaGraph_t g = nullptr;
        (void)cudaStreamEndCapture(m->stream, &g);
        if (g) cudaGraphDestroy(g);
        e = cudaStreamIsCapturing(m->stream, &st);
    }
    GT_CHECK(e == cudaSuccess && st == cudaStreamCaptureStatusNone, GT_EXIT_INTERNAL,
             "cuda model: the stream is still capturing after a capture ended (%s)", cudaGetErrorString(e));
}

static void capture_segment_begin(gt_cuda_model *m) {
    cudaError_t e = cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal);
    GT_CHECK(e == cudaSuccess, GT_EXIT_INTERNAL, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
}

// Close the segment being captured: instantiate it into the slot (an
// instantiation failure is recorded as a NULL exec and ends the capture).
static void capture_segment_end(gt_cuda_model *m, size_t off, int has_ready) {
    graph_slot *g = m->cap;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(m->stream, &graph);
    GT_CHECK(g->n_seg < GT_CUDA_GRAPH_SEGS, GT_EXIT_INTERNAL, "cuda model: more than %d graph segments",
             GT_CUDA_GRAPH_SEGS);
    graph_seg *s = &g->seg[g->n_seg++];
    s->exec = nullptr;
    s->ready_off = off;
    s->has_ready = has_ready;
    size_t n_nodes = 0;
    if (e == cudaSuccess) e = cudaGraphGetNodes(graph, nullptr, &n_nodes);
    if (e == cudaSuccess && n_nodes > 0) e = cudaGraphInstantiate(&s->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        s->exec = nullptr;
        if (m->cap_err == cudaSuccess) m->cap_err = e;
    }
}

static void graph_drop(graph_slot *g) {
    for (int k = 0; k < g->n_seg; k++)
        if (g->seg[k].exec) cudaGraphExecDestroy(g->seg[k].exec);
    free(g->seg);
    g->seg = nullptr;
    g->n_seg = 0;
}

// Capture the forward (backward = 0) or the backward into g; 1 on success.
// While capturing, a failing CUDA/cuBLAS/cuDNN call inside the kernels is
// recorded (gt_lib_defer_begin, core/check.h) instead of ending the job: the
// capture still ends, the stream is verified out of capture mode, the error
// is cleared, graphs go off with one warning and the caller runs the pass
// eagerly (where a real error ends the job as usual).
static int graph_capture(gt_cuda_model *m, graph_slot *g, int B, float dloss) {
    g->seg = (graph_seg *)GT_CALLOC(GT_CUDA_GRAPH_SEGS, sizeof *g->seg);
    g->n_seg = 0;
    m->cap = g;
    m->cap_err = cudaSuccess;
    gt_lib_defer_begin();
    capture_segment_begin(m);
    if (m->plant_capture_error) CUDA_CHECK(cudaStreamSynchronize(m->stream)); // illegal while capturing
    gt_cuda_model_kernels(m, g->backward, B, dloss);
    capture_segment_end(m, 0, 0);
    char first[512];
    const int n_failed = gt_lib_defer_end(first, sizeof first);
    m->cap = nullptr;
    capture_leave(m);
    if (n_failed > 0 || m->cap_err != cudaSuccess) {
        graph_drop(g);
        graph_give_up(m, g->backward ? "backward" : "forward", n_failed > 0 ? first : cudaGetErrorString(m->cap_err));
        return 0;
    }
    m->graph_captures++;
    return 1;
}

static void graph_replay(gt_cuda_model *m, const graph_slot *g) {
    for (int k = 0; k < g->n_seg; k++) {
        if (g->seg[k].exec) CUDA_CHECK(cudaGraphLaunch(g->seg[k].exec, m->stream));
        if (g->seg[k].has_ready && m->grad_ready) m->grad_ready(m->grad_ready_ctx, g->seg[k].ready_off);
    }
    m->graph_replays++;
}

// The kind's kernels of one pass, eagerly (also what a capture records).
void gt_cuda_model_kernels(gt_cuda_model *m, int backward, int B, float dloss) {
    if (!backward) {
        m->kind->forward(m, B);
        return;
    }
    if (dloss != 1.0f) gt_scale_cuda(m->dpred, (size_t)B * m->plan.n_y, dloss, m->stream);
    m->kind->backward(m, B);
}

// Forward (backward = 0) or backward of B samples: replayed, captured or eager.
void gt_cuda_model_run_pass(gt_cuda_model *m, int backward, int B, float dloss) {
    gt_cuda_set_precision(m->prec);
    if (m->kind->before_pass) m->kind->before_pass(m);
    graph_slot *g = m->graphs ? graph_find(m, backward, B, dloss) : nullptr;
    if (g && g->n_seg > 0) {
        graph_replay(m, g);
        return;
    }
    if (g && g->seen++ >= 1 && graph_capture(m, g, B, dloss)) {
        graph_replay(m, g);
        return;
    }
    gt_cuda_model_kernels(m, backward, B, dloss);
}

extern "C" void gt_cuda_model_set_graphs(gt_cuda_model *m, int on) { m->graphs = on ? 1 : 0; }
extern "C" int gt_cuda_model_graphs(const gt_cuda_model *m) { return m->graphs; }
extern "C" void gt_cuda_model_plant_capture_error(gt_cuda_model *m, int on) { m->plant_capture_error = on ? 1 : 0; }
extern "C" void gt_cuda_model_graph_stats(const gt_cuda_model *m, long *captures, long *replays) {
    if (captures) *captures = m->graph_captures;
    if (replays) *replays = m->graph_replays;
}
