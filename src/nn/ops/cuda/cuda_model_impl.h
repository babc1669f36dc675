// nn/ops/cuda/cuda_model_impl.h: the device model's shared struct and the
// per-kind device table (internal to nn/). The shared part (cuda_model.cu)
// owns the buffers, the state, the loss and the optimizer; the passes and
// graph capture live in cuda_model_graph.cu; each kind's forward, backward
// and pointer tables live in cuda_model_<kind>.cu, which fills a
// gt_cuda_kind (gt_cuda_kind_<kind>, listed by nn/model_registry.h like the
// host tables and collected by cuda_model_kinds.cu); the helpers the kinds
// use (gt_cuda_act, gt_cuda_pg, the last loss) are in cuda_model_kit.cu.
#pragma once

#include "nn/cuda_model.h"
#include "nn/model_registry.h"
#include "nn/ops/cuda/common.cuh"

struct graph_slot; // cuda_model_graph.cu

// A parameter's value p and gradient g (same offset in params and grads).
struct pg {
    float *p, *g;
};

// One kind's device implementation. create runs once the shared buffers
// (params, grads, acts, work) are placed: it resolves the kind's pointers by
// name (gt_cuda_act, gt_cuda_pg) into its own struct (m->kind_ctx), sets
// m->drop_keys when the kind has dropout and prepares what must not happen
// inside a graph capture. forward reads m->x and writes m->pred; backward
// reads m->dpred, accumulates into the grads and calls gt_cuda_ready after
// each layer. before_pass (optional) sets process state a pass needs;
// lstm_impl / conv_impl (optional) name the implementation the kind runs.
struct gt_cuda_kind {
    const char *name; // the host table's name (nn/model.h)
    void (*create)(gt_cuda_model *m);
    void (*free)(gt_cuda_model *m);
    void (*forward)(gt_cuda_model *m, int B);
    void (*backward)(gt_cuda_model *m, int B);
    void (*before_pass)(gt_cuda_model *m);
    const char *(*lstm_impl)(const gt_cuda_model *m);
    const char *(*conv_impl)(const gt_cuda_model *m);
};
#define GT_CUDA_KIND_EXTERN_(k) extern const gt_cuda_kind gt_cuda_kind_##k;
GT_MODEL_KINDS(GT_CUDA_KIND_EXTERN_)
// The device table of the configuration's kind (cuda_model_kinds.cu); ends
// the job (exit 2) for a kind without one.
const gt_cuda_kind *gt_cuda_kind_of(const gt_model_config *c);

struct gt_cuda_model {
    gt_model plan; // copy of the host template's table and plan (host buffer pointers cleared)
    const gt_cuda_kind *kind;
    void *kind_ctx; // the kind's pointers and state, owned by the kind
    gt_cuda_prec prec;
    cudaStream_t stream;
    float *params, *grads, *adam_m, *adam_v; // (n_params) each
    float *acts;                             // (n_act_elems)
    float *x;                                // the input of the current forward/backward: xbuf[0] or xbuf[1]
    float *xbuf[2];                          // device inputs: act "x" and a second buffer (double buffering)
    float *pred, *dpred;                     // in acts
    float *y, *mask;                         // (max_batch, n_y) targets staged from the host
    float *work;                             // GPU-only work area
    size_t n_work;
    float *loss_dev;     // (1)
    double *sumsq_dev;   // (1)
    uint8_t *decay_flags; // (n_params)
    size_t device_bytes;
    int batch;
    float loss;
    uint64_t *drop_keys; // (max_batch) the kind's device dropout keys (an act of its plan); NULL: no dropout
    int drop_on; // the next forward (and its backward) applies dropout: keys in drop_keys
    gt_grad_ready_fn grad_ready; // nn/model.h: called as each layer's backward is queued
    void *grad_ready_ctx;
    // CUDA graphs (gt_cuda_model_set_graphs, cuda_model_graph.cu): captured
    // forwards and backwards by shape, replayed instead of launching every kernel
    int graphs;           // 1: capture and replay; 0: eager (also after a failed capture)
    graph_slot *slots;    // GT_CUDA_GRAPH_SLOTS
    graph_slot *cap;      // the slot being captured (gt_cuda_ready closes a segment), or NULL
    long graph_replays, graph_captures;
    cudaError_t cap_err; // the first failure of the capture in progress
    int plant_capture_error; // tests: an illegal call inside the next captures (gt_cuda_model_plant_capture_error)
};

// By name, at creation only: activation `name` of the plan (NULL if absent);
// gt_cuda_act ends the job when absent; gt_cuda_pg: a parameter's pointers.
float *gt_cuda_act_find(gt_cuda_model *m, const char *name);
float *gt_cuda_act(gt_cuda_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pg gt_cuda_pg(gt_cuda_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The gradients from g (in m->grads) to the end are final once the work
// queued so far on m->stream completes (cuda_model_graph.cu: while a
// backward is captured this closes a segment instead).
void gt_cuda_ready(gt_cuda_model *m, const float *g);

// The kind's kernels of one pass, eagerly (cuda_model_graph.cu).
void gt_cuda_model_kernels(gt_cuda_model *m, int backward, int B, float dloss);
// A pass of B samples: replayed, captured or eager (cuda_model_graph.cu).
void gt_cuda_model_run_pass(gt_cuda_model *m, int backward, int B, float dloss);
// The graph slots of a model (cuda_model_graph.cu).
graph_slot *gt_cuda_graph_slots_new(void);
void gt_cuda_graph_slots_free(graph_slot *slots);
