/* nn/model.h: the CPU training engine's model framework (llm.c style).
 *
 * A model is built from a plain struct of hyper-parameters (gt_model_config);
 * nn/ never reads config files. One generic API dispatches per kind:
 *
 *   gt_model_config cfg;
 *   gt_model_config_default(&cfg, GT_MODEL_S2P_CNN);  // then override fields
 *   gt_model *m = gt_model_create(&cfg);              // plans + allocates all memory
 *   gt_model_init(m, seed);                           // Philox, PyTorch-like inits
 *   for each step:
 *     gt_model_zero_grad(m);
 *     for each micro-batch:                           // B <= cfg.max_batch
 *       gt_model_forward(m, x, B);                    // x (B, n_x) -> m->pred (B, n_y)
 *       float loss = gt_model_loss(m, y, mask);       // masked cfg.loss, writes m->dpred
 *       gt_model_backward(m, 1.0f / n_micro);         // grads += d(loss * 1/n_micro)
 *     gt_clip_grad_norm(m->grads, m->n_params, 1.0f); // one buffer: one call
 *     gt_model_adamw_step(m, &opt, lr, step + 1);
 *   gt_model_free(m);
 *
 * Memory (all host, all allocated by gt_model_create, none inside a step):
 *   params, grads, adam_m, adam_v: ONE contiguous float buffer each, n_params
 *     elements, the same layout: tensor i lives at [offset_i, offset_i + n_elem_i)
 *     in every one of them. The parameter table (m->tensors) gives name, shape,
 *     offset, init and weight-decay flag per tensor, PyTorch state_dict names
 *     and layouts ("conv.0.weight" (OC,IC,K), "fc1.weight" (OC,IC) ...), so
 *     checkpoints and a PyTorch weight loader are one loop over the table.
 *   acts: ONE buffer holding every activation, activation gradient and scratch
 *     area of a step, planned for B = max_batch from the shapes (activation
 *     table m->act_table, names for the memory planner). Every entry is laid
 *     out batch-major, so a smaller B uses a prefix of it.
 *
 * Adding a model kind: everything that depends on the kind is a slot of its
 * table (gt_model_vtable below), so a kind is its own files plus one line in
 * the registry (nn/model_registry.h); docs/design.md gives the recipe.
 *   1. src/nn/model_<kind>.c defines
 *        const gt_model_vtable gt_model_vtable_<kind> = {...};
 *      (model_<kind>.h, if any, declares what else the kind offers), and
 *      src/nn/ops/cuda/cuda_model_<kind>.cu the device twin
 *      (gt_cuda_kind_<kind>, nn/ops/cuda/cuda_model_impl.h). A kind from
 *      outside the registry (a test's) calls gt_model_kind_register instead;
 *      it runs on the host engine only.
 *   2. vt->defaults fills the kind's default hyper-parameters.
 *   3. vt->plan calls gt_model_add_param() for every tensor (this is the one
 *      size table of the model) and gt_model_add_act() for every activation
 *      and scratch area (sized for cfg.max_batch), sets m->n_x and m->n_y
 *      (elements per sample of input and prediction), and may allocate a
 *      private struct (m->impl) of pointers.
 *   4. vt->bind runs after allocation: resolve pointers with
 *      gt_model_param_ptr(m, m->params, i) / gt_model_act_ptr(m, j) into the
 *      kind's struct of pointers (one for params, one for grads, same type).
 *      Before bind, the framework itself adds the acts "x" (max_batch, n_x),
 *      "pred" and "dpred" (max_batch, n_y) and sets m->x, m->pred, m->dpred:
 *      kinds do not add those three.
 *   5. vt->forward(m, B) reads the input from m->x ((B, n_x), copied in by
 *      gt_model_forward) and writes m->pred (B, n_y).
 *      vt->backward(m, B) reads m->dpred (B, n_y) and ACCUMULATES into the
 *      grads buffer (+=); activation gradients are assigned.
 *   6. vt->free releases m->impl (NULL allowed).
 *   7. The rest of the table: the settings the kind has (GT_MODEL_HAS_*), its
 *      input layout, head default, planner and bench terms, device sizes.
 *
 * Not thread-safe: one model per thread. BLAS threads come from
 * OPENBLAS_NUM_THREADS. */
#ifndef GT_NN_MODEL_H
#define GT_NN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model_registry.h"
#include "nn/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A model kind: an index into the registry of kind tables (nn/model_registry.h,
 * then gt_model_kind_register's). The constants name the built-in kinds, in
 * the registry's order, for code that names one (task/, tests). */
typedef enum gt_model_kind {
    GT_MODEL_S2P_CNN = 0, /* seq2point CNN (Zhang et al. 2018), multi-appliance head */
    GT_MODEL_S2P_TF = 1,  /* seq2point Transformer encoder */
    GT_MODEL_LSTM = 2,    /* LSTM anomaly detector (reconstruction/prediction) */
    GT_MODEL_KIND_COUNT = GT_MODEL_KINDS_BUILT_IN /* the built-in kinds */
} gt_model_kind;
#define GT_MODEL_MAX_KINDS 16 /* built-in and registered */

#define GT_MODEL_MAX_CONV 8     /* s2p_cnn conv layers */
#define GT_MODEL_MAX_TENSORS 256
#define GT_MODEL_MAX_ACTS 512
#define GT_MODEL_NAME_LEN 48

/* Precision of the matrix products of a GPU engine (values as
 * nn/ops/cuda/ops_cuda.h's gt_cuda_prec). */
typedef enum gt_precision {
    GT_PRECISION_FP32 = 0, /* strict fp32 */
    GT_PRECISION_BF16 = 1, /* bf16 inputs (fp32 range: no loss scaling needed) */
    GT_PRECISION_FP16 = 2, /* fp16 inputs: needs dynamic loss scaling (train.amp) */
    GT_PRECISION_TF32 = 3, /* TF32 tensor cores on fp32 inputs */
    GT_PRECISION_AUTO = 4, /* bf16 where the engine has bf16 units, else fp32: resolved
                            * by the trainer before an engine is made */
} gt_precision;
/* "fp32", "bf16", "fp16", "tf32", "auto"; parse: -1 if unknown. */
const char *gt_precision_name(gt_precision p);
int gt_precision_parse(const char *name);

/* Plain hyper-parameters. Fields a kind does not use are ignored. */
typedef struct gt_model_config {
    gt_model_kind kind;
    int window;    /* time steps per sample: W (s2p) or T (lstm) */
    int n_in;      /* input channels per time step */
    int n_out;     /* s2p: outputs per sample (appliances A); lstm: outputs per step */
    int max_batch; /* largest micro-batch B; activations are planned for it */
    /* s2p_tf */
    int d_model, n_heads, d_ff;
    int n_layers; /* s2p_tf: encoder blocks; lstm: stacked layers; s2p_cnn: conv layers */
    /* lstm; s2p_cnn reuses `hidden` as the width of fc1 */
    int hidden;
    int tbptt; /* lstm: truncated-BPTT chunk length K (0 = whole window) */
    /* s2p_cnn: output channels and kernel size of conv layer l < n_layers */
    int conv_channels[GT_MODEL_MAX_CONV];
    int conv_kernels[GT_MODEL_MAX_CONV];
    /* training loss of gt_model_loss (default GT_LOSS_MSE) */
    gt_loss_kind loss;
    /* s2p: gated head (trainer and eval): n_out = 2 x appliances, outputs
     * [power_0 .. power_{A-1} | on-logit_0 .. on-logit_{A-1}] per sample, loss
     * gt_gated_loss_sum (the model itself only sees n_out) */
    int gated;
    /* s2p_cnn: inverted dropout on fc1's activations in training forwards
     * (gt_model_forward_train), probability in [0, 1); 0 = none. Other kinds
     * must leave it 0. */
    float dropout;
    /* Matrix products on a GPU engine (the host engine computes fp32 always):
     * products with these inputs on the tensor cores, fp32 accumulation, fp32
     * storage, master weights, gradients and optimizer state. */
    gt_precision precision;
    /* GPU engine: capture forward and backward into CUDA graphs after a
     * warm-up call and replay them (train.graphs); 0 runs every kernel
     * eagerly. Results are the same either way. The host engine ignores it. */
    int graphs;
} gt_model_config;

/* Parameter initialisation, PyTorch-like defaults. */
typedef enum gt_init_kind {
    GT_INIT_ZEROS = 0,
    GT_INIT_ONES = 1,
    GT_INIT_UNIFORM = 2, /* U(-scale, scale); nn.Linear/Conv1d: scale = 1/sqrt(fan_in) */
    GT_INIT_NORMAL = 3,  /* N(0, scale^2) */
} gt_init_kind;

/* One row of the parameter table. */
typedef struct gt_param_tensor {
    char name[GT_MODEL_NAME_LEN]; /* PyTorch state_dict name, e.g. "conv.0.weight" */
    int ndim;
    int shape[4];  /* PyTorch layout, row-major */
    size_t n_elem; /* product of shape */
    size_t offset; /* element offset in params/grads/adam_m/adam_v */
    gt_init_kind init;
    float init_scale;
    int decay; /* 1: AdamW weight decay applies (matrices/kernels), 0: biases, norms */
} gt_param_tensor;

/* One row of the activation table (planned for max_batch). */
typedef struct gt_act_tensor {
    char name[GT_MODEL_NAME_LEN];
    size_t n_elem; /* elements at B = max_batch */
    size_t offset; /* element offset in acts (64-byte aligned) */
} gt_act_tensor;

typedef struct gt_model gt_model;

/* Called during backward when the gradients from element `lo` to the end of
 * the buffer are final (see gt_model.grad_ready). */
typedef void (*gt_grad_ready_fn)(void *ctx, size_t lo);

/* Per-layer spans of backward on the run's timeline (train.trace, core/trace.h):
 *   double t = gt_model_span_begin(); ...layer...; gt_model_span_end("bwd conv", t, l);
 * begin returns -1 when nothing is recorded (one relaxed load); layer < 0: no argument. */
double gt_model_span_begin(void);
void gt_model_span_end(const char *name, double t0, int64_t layer);

/* Settings beyond the common ones (window, n_in, n_out, max_batch, loss,
 * precision, graphs) that a kind has: a non-zero value of one it lacks is
 * refused (gt_model_config_check); sizes it does not use are ignored. */
enum {
    GT_MODEL_HAS_DROPOUT = 1u << 0, /* cfg.dropout (model.dropout) */
    GT_MODEL_HAS_TBPTT = 1u << 1,   /* cfg.tbptt (model.tbptt) */
};

/* Per-kind implementation (see "Adding a model kind" above). Slots marked
 * optional may be NULL / 0. */
typedef struct gt_model_vtable {
    const char *name; /* "s2p_cnn", "s2p_tf", "lstm" */
    unsigned has;     /* GT_MODEL_HAS_* */
    const char *dropout_where; /* with GT_MODEL_HAS_DROPOUT: where it applies, for messages ("on its dense layer") */
    int channels_last; /* input per sample: 1 = (time, channel), 0 = (channel, time) */
    int seq2point;     /* what it outputs: 1 = one prediction per window (model.head = auto is the
                          gated head; the tasks that predict a window's midpoint take it, NILM),
                          0 = a prediction per step of the window (the sequence tasks take it,
                          PdM); gt_model_kind_seq2point */
    void (*defaults)(gt_model_config *cfg);
    /* optional: after the settings are read (cli/), completes what depends on
     * them and checks them (GT_EXIT_USAGE); conv_scale: model.conv_scale */
    void (*resolve)(gt_model_config *cfg, double conv_scale);
    void (*plan)(gt_model *m);
    void (*bind)(gt_model *m);
    void (*forward)(gt_model *m, int B);
    void (*backward)(gt_model *m, int B);
    void (*free)(gt_model *m);
    /* Analytic FLOPs of one sample's forward (gt_model_forward_flops). */
    double (*forward_flops)(const gt_model_config *cfg);
    /* optional: the loss of a model that predicts its own input (no targets;
     * writes m->dpred), used by `bench model` instead of gt_model_loss */
    float (*self_loss)(gt_model *m);
    /* optional: a sequence kind whose prediction at step t is for the input
     * at step t + 1 (lstm): the targets of windows x (B,T,C) for
     * gt_model_loss, y (B,T,C) and mask (B,T,C) (gt_model_next_step_targets;
     * the tasks that train next-step prediction, PdM's data.pdm_target =
     * next, take a kind by it) */
    void (*next_step_targets)(float *y, float *mask, const float *x, int B, int T, int C);
    /* optional: bytes on top of the generic activation estimate of
     * gt_model_bytes_estimate for B samples (attention's B x heads x L^2) */
    double (*bytes_estimate_extra)(const gt_model_config *cfg, int B);
    /* the GPU work area in floats (gt_model_device_work_elems); optional: 0 */
    size_t (*device_work_elems)(const gt_model_config *cfg);
    /* optional: activation `name` kept in bf16 on a GPU (gt_model_act_device_bf16) */
    int (*act_device_bf16)(const gt_model_config *cfg, const char *name);
    /* planner: sustained share of a GPU's nominal rate before a measurement
     * (plan/, gt_plan_gpu_efficiency_estimate); 0: the planner's default */
    double gpu_efficiency;
    /* `bench model`: default batch (0: 32); its hyper-parameters for the
     * report's first line (optional); mem_check: bench.mem_check runs the
     * memory-vs-L check on this kind */
    int bench_batch;
    void (*describe)(const gt_model_config *cfg, char *buf, size_t n);
    int bench_mem_check;
} gt_model_vtable;

struct gt_model {
    gt_model_config cfg;
    const gt_model_vtable *vt;
    void *impl; /* kind-private (structs of pointers), owned by the kind */

    /* parameter table and the four same-layout buffers */
    int n_tensors;
    gt_param_tensor tensors[GT_MODEL_MAX_TENSORS];
    size_t n_params;
    float *params; /* (n_params) */
    float *grads;  /* (n_params) */
    float *adam_m; /* (n_params) AdamW first moment */
    float *adam_v; /* (n_params) AdamW second moment */

    /* activation plan and buffer */
    int n_acts;
    gt_act_tensor act_table[GT_MODEL_MAX_ACTS];
    size_t n_act_elems;
    float *acts; /* (n_act_elems) */

    size_t n_x;   /* input elements per sample: s2p (n_in, W); lstm (T, n_in) */
    size_t n_y;   /* prediction elements per sample: s2p (n_out); lstm (T, n_out) */
    float *x;     /* (max_batch, n_x) copy of the last forward's input, in acts */
    float *pred;  /* (max_batch, n_y) predictions of the last forward, in acts */
    float *dpred; /* (max_batch, n_y) d loss / d pred, in acts */
    int batch;    /* B of the last forward (0 before any) */
    float loss;   /* last value returned by gt_model_loss */
    int host_side; /* 1: made by gt_model_create_host_side (no activations: cannot run) */
    /* dropout of the last forward (nn/ops/dropout.h): drop_on = 1 for a
     * training forward of a model with cfg.dropout > 0; drop_base (max_batch)
     * the per-sample keys gt_dropout_base(seed, step, sample id). The backward
     * reads the same keys, so it applies the forward's mask. */
    int drop_on;
    uint64_t *drop_base;

    /* Gradient readiness (gt_model_set_grad_ready; NULL: none): during a
     * backward, grad_ready(ctx, lo) is called each time grads[lo, n_params)
     * hold their final values for that backward (after each layer). Every
     * kind's parameters are laid out in forward order, so backward finishes
     * a suffix of the buffer that grows down to 0. An engine of another
     * device calls it when the layer's work is queued (dist/ orders its
     * communication after that work). */
    gt_grad_ready_fn grad_ready;
    void *grad_ready_ctx;
};

/* ------------------------------------------------------------ lifecycle -- */
/* Fill `cfg` with the defaults of `kind` (s2p_cnn: W=599, n_in=1, A=15, conv
 * 30/30/40/50/50 with kernels 10/8/6/5/5, fc1 1024, max_batch 256). Aborts
 * with GT_EXIT_USAGE if the kind is not built into this binary. */
void gt_model_config_default(gt_model_config *cfg, gt_model_kind kind);
/* Kind name ("s2p_cnn" ...) or "?"; gt_model_kind_parse returns -1 if unknown. */
const char *gt_model_kind_name(gt_model_kind kind);
int gt_model_kind_parse(const char *name);
/* Input layout per sample: 1 = (time, channel) (s2p_tf, lstm), 0 = (channel,
 * time) (s2p_cnn: channels are the convolution's input planes). */
int gt_model_input_channels_last(gt_model_kind kind);
/* What the kind outputs (its table's seq2point): 1 = one prediction per
 * window, 0 = one per step (a sequence). A task accepts kinds by this, so a
 * new kind needs no edit in a task folder. */
int gt_model_kind_seq2point(gt_model_kind kind);
/* 1 when the kind predicts the next step of its input (its table's
 * next_step_targets). */
int gt_model_kind_next_step(gt_model_kind kind);
/* The kind's next-step targets of windows x (B,T,C): y (B,T,C) with
 * y[:,t] = x[:,t+1] for t < T-1, mask (B,T,C) 1 there and 0 at t = T-1 (as
 * the kind defines them: nn/model_lstm.h gt_model_lstm_targets). Buffers
 * owned by the caller. Ends the job (GT_EXIT_INTERNAL) for a kind without
 * them (gt_model_kind_next_step 0). */
void gt_model_next_step_targets(gt_model_kind kind, float *y, float *mask, const float *x, int B, int T, int C);
/* The kinds available whose output is that (seq2point 1 or 0), for a
 * message: "s2p_cnn or s2p_tf", "a, b or c" ("none in this binary"). */
void gt_model_kinds_by_output(int seq2point, char *buf, size_t n);
/* 1 when the kind is built into this binary or registered. */
int gt_model_kind_available(gt_model_kind kind);
/* The kind's table (NULL when not available). */
const gt_model_vtable *gt_model_kind_table(gt_model_kind kind);
/* The same, ending the job (exit 2) for a kind not built in. */
const gt_model_vtable *gt_model_kind_table_checked(gt_model_kind kind);
/* Kinds available: built-in and registered (ids 0 .. count-1). */
int gt_model_kind_count(void);
/* 1 when the kind has the setting (GT_MODEL_HAS_*). */
int gt_model_kind_has(gt_model_kind kind, unsigned has);
/* Adds a kind from outside the registry (a test's); returns its id. The
 * name must be new; at most GT_MODEL_MAX_KINDS in all. Not thread-safe: call
 * before any model is made. Such a kind runs on the host engine only. */
gt_model_kind gt_model_kind_register(const gt_model_vtable *vt);

/* The settings a kind does not have (GT_MODEL_HAS_*) left at zero: the one
 * check of them, with its messages; ends the job with GT_EXIT_USAGE.
 * gt_model_create checks dropout the same way. */
void gt_model_config_check(const gt_model_config *cfg);
/* Its dropout part alone (model.dropout in [0, 1), only on a kind that has it). */
void gt_model_config_check_dropout(const gt_model_config *cfg);
/* The kind's resolve slot (see gt_model_vtable; nothing for kinds without). */
void gt_model_config_resolve(gt_model_config *cfg, double conv_scale);
/* A generous estimate of a model's activation bytes for B samples, in
 * floating point (no size_t wrap): callers refuse configurations beyond
 * what can be addressed before planning them. */
double gt_model_bytes_estimate(const gt_model_config *cfg, int B);

/* Plan and allocate a model (parameters uninitialised: zeros; grads and
 * AdamW moments zero). Invalid hyper-parameters end the job with
 * GT_EXIT_USAGE, out of memory with GT_EXIT_RESOURCE. Caller owns the result
 * and releases it with gt_model_free. */
gt_model *gt_model_create(const gt_model_config *cfg);
void gt_model_free(gt_model *m); /* NULL allowed */
/* The host side of a model that runs on a device (nn/engine.h): the same
 * tables and activation plan, the four state buffers, and host buffers for
 * x, pred and dpred only (max_batch rows each): no activations, so
 * gt_model_forward/backward refuse it (GT_EXIT_INTERNAL). Checkpoints, the
 * replica checksum, the task objective and eval read and write it as a model. */
gt_model *gt_model_create_host_side(const gt_model_config *cfg);

/* What gt_model_create(cfg) would allocate, without allocating it (the memory
 * planner, plan/): parameter and activation element counts and the host bytes
 * of the four state buffers plus the activation buffer (as
 * gt_model_state_bytes + gt_model_act_bytes count them). Same validation and
 * errors as gt_model_create. */
typedef struct gt_model_sizes {
    size_t n_params, n_act_elems, n_x, n_y;
    size_t host_bytes;
    size_t n_act_elems_device; /* the device's activation layout (gt_model_device_act_layout), in floats */
} gt_model_sizes;
void gt_model_plan_sizes(const gt_model_config *cfg, gt_model_sizes *out);
/* Device bytes gt_cuda_model_create (nn/cuda_model.h) allocates for this
 * configuration (state, activations, targets, the kind's GPU work area,
 * flags), equal to gt_cuda_model_device_bytes; on top come, per device
 * model, its stream's context (cuBLAS workspace and the reductions' scratch,
 * nn/ops/cuda/sizes.h gt_cuda_stream_ctx_bytes) and, per process, the CUDA
 * context: plan/ counts both. Plain C, any build. */
size_t gt_model_device_bytes(const gt_model_config *cfg, const gt_model_sizes *s);
/* The kind's GPU work area in floats, its table's device_work_elems (0
 * without): conv im2col chunk, attention D rows, LSTM shifted hidden states;
 * with the LSTM or the convolutions on cuDNN, also cuDNN's area
 * (nn/ops/cuda/sizes.h gt_lstm_cudnn_area_elems, gt_conv1d_cudnn_area_elems). */
size_t gt_model_device_work_elems(const gt_model_config *cfg);
/* Non-zero when the device model runs the LSTM through cuDNN (nn/ops/cuda/
 * lstm_cudnn.cu): the build has cuDNN and the environment variable
 * GT_LSTM_IMPL is "cudnn" (1: one cuDNN call per layer, every layer's h
 * written as by the kernels) or "cudnn-stack" (2: one call for the whole
 * stack; only the top layer's h, lstm.<top>.h, is written). Otherwise 0 (the
 * default, or GT_LSTM_IMPL=kernels): the project's kernels (nn/ops/cuda/
 * lstm.cu). Read at each call, so the planner and gt_cuda_model_create agree
 * within a process. */
int gt_model_lstm_cudnn(void);
/* 1 when the device model runs s2p_cnn's convolutions through cuDNN (nn/ops/
 * cuda/conv_cudnn.cu): the build has cuDNN and the environment variable
 * GT_CONV_IMPL is "cudnn"; the work area then also holds cuDNN's area (nn/ops/
 * cuda/sizes.h gt_conv1d_cudnn_area_elems). Otherwise 0 (the default, or
 * GT_CONV_IMPL=kernels): im2col + cuBLAS (nn/ops/cuda/dense.cu). Read at each
 * call, so the planner and gt_cuda_model_create agree within a process. */
int gt_model_conv_cudnn(void);
/* 1 when the device model's bf16 attention runs the mma.sync kernels (nn/ops/
 * cuda/attention_mma.cu, a lab variant) instead of the wmma kernels
 * (attention_tc.cu): the environment variable GT_ATTN_IMPL is "mma"; the work
 * area then holds the bf16 copies of q, k, v and dout (nn/ops/cuda/sizes.h
 * gt_attention_mma_scratch_size). Otherwise 0 (the default, or
 * GT_ATTN_IMPL=wmma). Only BF16 precision is affected. Read at each call, so
 * the planner and gt_cuda_model_create agree within a process. */
int gt_model_attention_mma(void);
/* bf16 activation storage: 1 when a GPU engine keeps activation `name` of a
 * model of cfg in bf16 (2 bytes per element) rather than fp32: the kind's
 * table's act_device_bf16 (0 without). Where it is safe, with
 * train.precision = bf16 only (fp32 range; fp16 would need
 * range checks): s2p_tf's pre-GELU MLP activations "blocks.<l>.fc1",
 * the largest of a block (d_ff per row), read back only by backward's GELU
 * recompute and GELU gradient, the same values the bf16 products round to.
 * The forward itself computes them in fp32 (its result does not change). */
int gt_model_act_device_bf16(const gt_model_config *cfg, const char *name);
/* The device's activation layout: the host plan's entries in the same order,
 * each at a 16-float boundary, bf16-stored ones (gt_model_act_device_bf16)
 * taking half the floats. offsets (m->n_acts entries, may be NULL) receives
 * each entry's device offset in floats; returns the total in floats. Equal
 * to m->n_act_elems when nothing is stored in bf16. */
size_t gt_model_device_act_layout(const gt_model *m, size_t *offsets);

/* Deterministic init: tensor i draws from Philox stream
 * gt_stream(GT_STREAM_INIT, i) of `seed`, element by element, according to
 * its table row (independent of thread count and of other tensors). Also
 * zeroes grads and the AdamW moments. */
void gt_model_init(gt_model *m, uint64_t seed);

/* ------------------------------------------------------------ training -- */
/* x (B, n_x) is copied into m->x (no copy when x == m->x: a loader may fill
 * m->x in place); writes m->pred (B, n_y) and returns it (borrowed, valid
 * until the next forward). 1 <= B <= max_batch, else GT_EXIT_USAGE. */
const float *gt_model_forward(gt_model *m, const float *x, int B);
/* The key of a training forward's dropout masks (nn/ops/dropout.h). */
typedef struct gt_dropout_key {
    uint64_t seed;       /* train.seed */
    int64_t step;        /* the optimizer step the gradient belongs to */
    const uint64_t *ids; /* (B) stable sample ids (gt_dropout_sample_id) */
} gt_dropout_key;
/* Sets the dropout of the next forward (and of the backward after it): key
 * NULL or cfg.dropout == 0 turns it off (evaluation), else the masks of key.
 * Engines call it; gt_model_forward turns it off by itself. */
void gt_model_set_dropout(gt_model *m, const gt_dropout_key *key, int B);
/* A training forward: gt_model_forward with the dropout masks of key (NULL:
 * none). The backward that follows uses the same masks. */
const float *gt_model_forward_train(gt_model *m, const float *x, int B, const gt_dropout_key *key);
/* Masked MSE of the last forward: y (B, n_y), mask (B, n_y) or NULL (all ones);
 * writes m->dpred = d loss / d pred and returns the loss. */
float gt_model_loss(gt_model *m, const float *y, const float *mask);
/* Back-propagate m->dpred scaled by `dloss` (d objective / d loss, e.g.
 * 1/n_micro for accumulation, or a loss scale); grads += gradient. */
void gt_model_backward(gt_model *m, float dloss);
void gt_model_zero_grad(gt_model *m);
/* The hook of the next backwards (fn NULL: none); see gt_model.grad_ready. */
static inline void gt_model_set_grad_ready(gt_model *m, gt_grad_ready_fn fn, void *ctx) {
    m->grad_ready = fn;
    m->grad_ready_ctx = ctx;
}
/* Kinds: the gradients from g (a pointer into the grads buffer, the first
 * tensor of the layer just finished) to the end are final. */
static inline void gt_model_grad_ready(const gt_model *m, const float *g) {
    if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, (size_t)(g - m->grads));
}
/* AdamW on the whole parameter buffer at learning rate lr, step t >= 1
 * (1-based). Weight decay applies to tensors with decay = 1, or to every
 * tensor when decay_all != 0 (plain torch.optim.AdamW(model.parameters())). */
void gt_model_adamw_step(gt_model *m, const gt_adamw_config *opt, float lr, long t, int decay_all);

/* ------------------------------------------------- parameter access -- */
size_t gt_model_n_params(const gt_model *m);
/* Flat parameter buffer (n_params), borrowed; writable (loaders write it). */
float *gt_model_params(gt_model *m);
/* Copy a flat buffer (n_params) in / out. */
void gt_model_set_params(gt_model *m, const float *src, size_t n_params);
void gt_model_get_params(const gt_model *m, float *dst, size_t n_params);
int gt_model_n_tensors(const gt_model *m);
const gt_param_tensor *gt_model_tensor(const gt_model *m, int i);
/* Index of the tensor with this name, or -1. */
int gt_model_find_tensor(const gt_model *m, const char *name);
/* Pointer to tensor i inside any of the four same-layout buffers. */
static inline float *gt_model_param_ptr(const gt_model *m, float *buf, int i) { return buf + m->tensors[i].offset; }

/* Bytes of the activation buffer and of the four parameter-sized buffers
 * (for the memory planner). */
size_t gt_model_act_bytes(const gt_model *m);
size_t gt_model_state_bytes(const gt_model *m);

/* --------------------------------------------- for kind implementations -- */
/* Activations start on 64-byte boundaries (16 floats) for aligned SIMD. */
#define GT_MODEL_ACT_ALIGN_ELEMS 16
/* Append a parameter tensor (ndim 1..4, shape PyTorch layout); returns its
 * index. Call only from vt->plan. */
int gt_model_add_param(gt_model *m, const char *name, int ndim, const int *shape, gt_init_kind init,
                       float init_scale, int decay);
/* Append an activation/scratch area of n_elem floats (sized for max_batch);
 * returns its index. Call only from vt->plan. */
int gt_model_add_act(gt_model *m, const char *name, size_t n_elem);
/* Pointer to activation j (valid after allocation, i.e. in vt->bind). */
static inline float *gt_model_act_ptr(const gt_model *m, int j) { return m->acts + m->act_table[j].offset; }

#ifdef __cplusplus
}
#endif
#endif
