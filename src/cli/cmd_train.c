/* cli/cmd_train.c: `gridtrain train CONFIG|--resume RUN_DIR [section.key=value ...]`
 * and the `bench train` entry point. The only place that turns configuration
 * text into the plain struct the trainer takes (train/trainer.h).
 *
 * Precedence: option defaults < CONFIG (or, with --resume, the configuration
 * stored in the newest valid checkpoint) < --config files < command line. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/eval_load.h"
#include "cli/eval_rules.h"
#include "cli/commands.h"
#include "cli/train_args.h"
#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/watchdog.h"
#include "train/bench_train.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/reduce.h"
#include "io/format.h"
#include "io/read.h"
#include "io/shard.h"
#include "nilm/nilm.h"
#include "nn/bench.h"
#include "pdm/pdm.h"
#include "plan/plan.h"
#include "task/task.h"

/* Empty defaults mean "the data layer's / model kind's own default"
 * (data/config.c gt_data_config_defaults, nn/model_*.c). The rows every
 * task reads; gt_train_opts_init adds each registered task's own. */
static const gt_opt shared_opts[] = {
    {"data.file", "data", GT_OPT_STR, "", "input file: NILM (s2p_cnn, s2p_tf) or wind-farm PdM (lstm)", NULL},
    {"data.task", NULL, GT_OPT_STR, "", "the task: auto (default) = the data file's kind (nilm on household files, pdm on wind-farm files), or the name of a registered task that trains on that kind (docs/design.md, How to add a task)", NULL},
    {"data.window", "window", GT_OPT_INT, "", "window length W (nilm; odd: the target is the midpoint) or T (pdm); default 599 / 512", NULL},
    {"data.stride", NULL, GT_OPT_INT, "", "rows between window starts; 0 = nilm per-appliance strides; default 0 (nilm) / 128 (pdm)", NULL},
    {"data.stride_frac", NULL, GT_OPT_FLOAT, "", "nilm per-appliance stride = stride_frac x typical on-duration; default 0.5", NULL},
    {"data.split_train", NULL, GT_OPT_FLOAT, "", "chronological train fraction of every item's time; default 0.7", NULL},
    {"data.split_val", NULL, GT_OPT_FLOAT, "", "validation fraction after it; default 0.15", NULL},
    {"data.holdout_every", NULL, GT_OPT_INT, "", "k > 0 holds out every k-th household/turbine entirely; default 0", NULL},
    {"data.screen", "screen", GT_OPT_STR, "drop", "spike/gap screening of windows", "drop|repair|off"},
    {"data.spike_k", NULL, GT_OPT_FLOAT, "", "robust z (median/MAD) above which a sample is a spike; default 8", NULL},
    {"data.items", NULL, GT_OPT_STR, "", "only these household/turbine ids, e.g. 0-9,12 (default: all)", NULL},
    {"model.kind", "model", GT_OPT_STR, "s2p_cnn", "model", GT_MODEL_KIND_CHOICES},
    {"model.d_model", NULL, GT_OPT_INT, "", "s2p_tf: model width", NULL},
    {"model.heads", NULL, GT_OPT_INT, "", "s2p_tf: attention heads", NULL},
    {"model.d_ff", NULL, GT_OPT_INT, "", "s2p_tf: feed-forward width", NULL},
    {"model.layers", NULL, GT_OPT_INT, "", "s2p_tf: encoder blocks; lstm: stacked layers; s2p_cnn: conv layers (first N of 5)", NULL},
    {"model.hidden", NULL, GT_OPT_INT, "", "lstm: hidden size; s2p_cnn: fc1 width (default 1024)", NULL},
    {"model.tbptt", NULL, GT_OPT_INT, "", "lstm: truncated-BPTT chunk length (0 = full window)", NULL},
    {"model.conv_scale", NULL, GT_OPT_FLOAT, "1", "s2p_cnn: multiplies the conv channel counts (30/30/40/50/50); e.g. 0.25 for small runs", NULL},
    {"model.head", NULL, GT_OPT_STR, "auto", "nilm: gated (power while on + an on/off classifier; predicted power where the classifier says on, else 0 W) or power (one regression output per appliance); auto = gated for s2p_cnn/s2p_tf", "auto|gated|power"},
    {"model.dropout", NULL, GT_OPT_STR, GT_TRAIN_STR(GT_TRAIN_DEFAULT_DROPOUT), "s2p_cnn: dropout probability on the dense layer's activations while training (inverted: evaluation and predict are unchanged); auto = " GT_TRAIN_STR(GT_TRAIN_AUTO_DROPOUT) " when the run passes over its training windows more than " GT_TRAIN_STR(GT_TRAIN_DROPOUT_AUTO_EPOCHS) " times (or has no step limit), else 0; other kinds have no dropout (0 or auto only); a run stored without this key had none", NULL},
    {"model.loss", NULL, GT_OPT_STR, "mse", "training loss on the normalised targets: mse fits the mean, l1 the median, mse+l1 their sum", "mse|l1|mse+l1"},
    {"optim.lr", "lr", GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_LR), "peak learning rate (after warmup)", NULL},
    {"optim.lr_min", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_LR_MIN), "final learning rate of the cosine decay", NULL},
    {"optim.warmup", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_WARMUP), "linear warmup steps", NULL},
    {"optim.weight_decay", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_WEIGHT_DECAY), "AdamW decoupled weight decay (matrices and kernels only)", NULL},
    {"optim.beta1", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_BETA1), "AdamW beta1", NULL},
    {"optim.beta2", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_BETA2), "AdamW beta2", NULL},
    {"optim.eps", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_EPS), "AdamW epsilon", NULL},
    {"optim.clip", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_CLIP), "global gradient-norm clip after the all-reduce; 0 off", NULL},
    {"train.batch", "batch", GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_BATCH), "GLOBAL samples per optimizer step (split over the ranks)", NULL},
    {"train.micro_batch", NULL, GT_OPT_INT, "0", "max samples per forward on one rank (gradient accumulation); 0 = train.batch", NULL},
    {"train.epochs", "epochs", GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_EPOCHS), "epochs over the train split; 0 = no limit", NULL},
    {"train.max_steps", "steps", GT_OPT_INT, "0", "optimizer steps; 0 = no limit (also the cosine schedule's length when smaller)", NULL},
    {"train.time_budget", NULL, GT_OPT_FLOAT, "0", "wall minutes of training (over resumes); 0 = none", NULL},
    {"train.eval_every", NULL, GT_OPT_INT, "0", "steps between validations; 0 = once per epoch", NULL},
    {"train.patience", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_PATIENCE), "validations without improvement before early stopping (the best checkpoint is what eval uses); 0 off", NULL},
    {"train.lr_plateau", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_LR_PLATEAU), "multiply the learning rate (warmup + cosine) by this after train.plateau_patience validations without improvement, again after each further plateau_patience, never below optim.lr_min; 0 off (a run stored without this key had none)", NULL},
    {"train.plateau_patience", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_PLATEAU_PATIENCE), "validations without improvement before train.lr_plateau reduces the learning rate", NULL},
    {"train.seed", "seed", GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_SEED), "seed of the initialisation and the data order", NULL},
    {"train.balance", NULL, GT_OPT_BOOL, "true", "give every rank an equal share of each global batch (a few windows move between ranks) instead of the windows of its own households/turbines only, so no step waits for the rank that drew the most; runs stored before this key keep false", NULL},
    {"train.overlap", NULL, GT_OPT_BOOL, "true", "start each gradient bucket's all-reduce as soon as backward has produced it (overlap with the rest of backward); the sums, so the results, are the same either way", NULL},
    {"train.bucket", NULL, GT_OPT_SIZE, "4M", "gradient all-reduce bucket: runs of whole tensors from the last layer down, each closed once it holds this many bytes (smaller: earlier overlap, more calls)", NULL},
    {"train.prefetch", NULL, GT_OPT_STR, "auto", "fill the next batch on a background thread; auto: when the node has a spare core per rank", "auto|on|off"},
    {"train.mem_limit", NULL, GT_OPT_STR, "auto", "memory per rank checked before the model is allocated (plan/): auto = what the node has available (cgroup/Slurm --mem included) shared by its ranks, a size such as 8G, or off; too little stops with the largest micro-batch that fits", NULL},
    {"train.nan_max_bad", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_NAN_MAX_BAD), "consecutive non-finite steps before stopping with exit code 5", NULL},
    {"train.precision", NULL, GT_OPT_STR, "fp32", "matrix products: fp32, bf16 (GPU tensor cores; CPU AMX/AVX512-BF16 through oneDNN; fp32 accumulation and range), tf32 or fp16 (GPU only; fp16 turns on train.amp's dynamic loss scaling; the CPU engine computes those in fp32), or auto (bf16 where the engine has bf16 units, else fp32); storage, master weights, gradients and AdamW stay fp32", "fp32|tf32|bf16|fp16|auto"},
    {"train.graphs", NULL, GT_OPT_BOOL, "true", "GPU engine: capture each forward and backward shape into a CUDA graph after one eager warm-up call and replay it (one launch per layer instead of one per kernel); the results are the same either way; the CPU engine ignores it", NULL},
    {"train.amp", NULL, GT_OPT_BOOL, "false", "dynamic loss scaling (on by itself with train.precision=fp16); the arithmetic is set by train.precision", NULL},
    {"train.device", "device", GT_OPT_STR, "auto", "where the replicas train: auto = one GPU per rank when this binary has CUDA and a GPU is usable, else the CPU; cuda = a GPU per rank or exit 7 (never a silent CPU fallback); cpu = the host engine. Not stored: a resumed run chooses again (checkpoints are the same on either)", "auto|cpu|cuda"},
    {"train.log_every", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_LOG_EVERY), "steps between progress lines and metrics.jsonl entries", NULL},
    {"train.stop_after", NULL, GT_OPT_INT, "0", "testing: checkpoint and exit 75 after N steps of this invocation (not stored)", NULL},
    {"train.trace", NULL, GT_OPT_BOOL, "false", "write RUN_DIR/trace.json: the timeline of every rank (phases, data wait, all-reduce buckets, prefetch thread) for Perfetto or chrome://tracing; bounded by train.trace_events (not stored)", NULL},
    {"train.trace_events", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_TRACE_EVENTS), "trace: spans kept per rank (a fixed buffer: about 100 bytes of JSON each); later spans are counted as dropped", NULL},
    {"train.trace_steps", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_TRACE_STEPS), "trace: every step of the first N is traced ...", NULL},
    {"train.gpu_telemetry_s", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_GPU_TELEMETRY_S), "GPU runs: sample each rank's GPU through NVML (loaded at run time; none without a driver) every this many seconds: utilisation, memory, temperature, power, clocks, throttle reasons, ECC, Xid; a \"gpu\" row per rank in metrics.jsonl at each log interval, the summary in manifest.json, warnings for a throttling or idle GPU; 0 off (not stored)", NULL},
    {"train.regression_warn", NULL, GT_OPT_FLOAT, "0.2", "warn at the end of a run whose steady samples/s is below (1 - this) x the median of the earlier runs of the same configuration and hardware in the same parent directory (manifest.json config_hash, hardware_hash), naming the phase that slowed; 0 off (not stored)", NULL},
    {"train.regression_min_s", NULL, GT_OPT_FLOAT, "2", "the throughput comparison (train.regression_warn) leaves out runs, this one and the earlier ones, that trained fewer seconds (timing.json train_time_s): too short to be steady (not stored)", NULL},
    {"train.trace_every", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_TRACE_EVERY), "trace: ... then every N-th step (validation and checkpoints always)", NULL},
    {"run.dir", "run-dir", GT_OPT_STR, "", "run directory; default runs/<SLURM_JOB_ID or timestamp>", NULL},
    {"run.checkpoint_every", NULL, GT_OPT_INT, "0", "steps between checkpoints; 0 off (one is written at the end)", NULL},
    {"run.checkpoint_minutes", NULL, GT_OPT_FLOAT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_CHECKPOINT_MINUTES), "wall minutes between checkpoints; 0 off", NULL},
    {"run.keep", NULL, GT_OPT_INT, GT_TRAIN_STR(GT_TRAIN_DEFAULT_KEEP), "committed checkpoints kept", NULL},
    {"run.resume", "resume", GT_OPT_STR, "", "continue RUN_DIR from its newest valid checkpoint (its stored configuration, then overrides)", NULL},
    {"run.watchdog_s", NULL, GT_OPT_FLOAT, "1800", "end the job with a message when nothing progresses for this many seconds (a stalled collective, a hung file system or library call); 0 off", NULL},
    {"run.overwrite", "overwrite", GT_OPT_BOOL, "false", "a fresh run may replace the run already in run.dir (its checkpoints, metrics and results are deleted once the configuration, data and memory plan passed); without it such a directory is refused (exit 2)", NULL},
    /* the evaluation at the end of the run, as `gridtrain eval RUN_DIR` with these keys (never stored) */
    GT_EVAL_STRIDE_OPTS(NULL),
    GT_EVAL_NILM_RULE_OPTS,
    GT_EVAL_PDM_RULE_OPTS(NULL, NULL),
    /* gridtrain plan (never stored) */
    {"plan.ranks", "ranks", GT_OPT_INT, "0", "ranks to plan for; 0 = this job's", NULL},
    {"plan.gpu_mem", "gpu-mem", GT_OPT_SIZE, "0", "plan for one GPU per rank with this much device memory, e.g. 24G, 80G, 141G (0: a CPU plan, or the tier's)", NULL},
    {"plan.tier", "tier", GT_OPT_STR, "", "plan for one GPU of a workstation tier (docs/tiers.md)", "|a350|ae450|ga660m"},
    {"plan.gpu_tflops", "gpu-tflops", GT_OPT_FLOAT, "0", "nominal dense bf16 TFLOP/s of that GPU for the step time (0: the tier's, else none)", NULL},
    {"plan.calibration", "calibration", GT_OPT_STR, "", "GPU rate from a measurement: the plan-calibration.json a GPU verdict run (tests/gpu/run.sh) writes, the measured share of the nominal rate per model kind (default: estimates from the kernels' structure, not measured: docs/tiers.md)", NULL},
    {"plan.gpu_efficiency", "gpu-efficiency", GT_OPT_FLOAT, "0", "GPU rate: this share of the nominal dense bf16 rate (0: plan.calibration's, else the estimate for the model kind)", NULL},
    {"plan.cpu_mem", "cpu-mem", GT_OPT_SIZE, "0", "CPU plan: host memory per rank (0: available on this node / its ranks)", NULL},
    {"plan.ranks_per_node", "ranks-per-node", GT_OPT_INT, "0", "scale model: ranks (GPUs) per node (0: the tier's, or this job's ranks on this node)", NULL},
    {"plan.net_gbs", "net-gbs", GT_OPT_FLOAT, "0", "scale model: network bandwidth of one node in GB/s (0: the tier's assumption, docs/tiers.md)", NULL},
    {"plan.data_scale", "data-scale", GT_OPT_FLOAT, "1", "scale model: the full data is this many times the given file (plan on a sample of households or turbines)", NULL},
    {"plan.fs_gbs", "fs-gbs", GT_OPT_FLOAT, "0", "scale model: file system read bandwidth per node in GB/s (0: 2)", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

/* train's table (and plan's): the shared rows with every registered task's rows in their places
 * (task/task.h gt_task_opt), filled by gt_train_opts_init */
#define TRAIN_OPTS_MAX 256
gt_opt gt_train_opts[TRAIN_OPTS_MAX];
static int g_opts_tasks = -1; /* the number of registered tasks the table was assembled with */

static int row_at(int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (!strcmp(gt_train_opts[i].key, key)) return i;
    return -1;
}

static void insert_row(int *n, int at, const gt_opt *o) {
    GT_CHECK(*n + 1 < TRAIN_OPTS_MAX, GT_EXIT_INTERNAL, "train: more than %d option rows", TRAIN_OPTS_MAX - 1);
    memmove(&gt_train_opts[at + 1], &gt_train_opts[at], sizeof(gt_opt) * (size_t)(*n - at));
    gt_train_opts[at] = *o;
    (*n)++;
}

/* the key of the row that row r of a task's rows follows: its `after`, or the array's previous row */
static const char *row_after(const gt_task_opt *rows, int r) {
    return rows[r].after ? rows[r].after : r > 0 ? rows[r - 1].row.key : NULL;
}

/* Places the tasks' rows whose row to follow is in the table; returns how many. */
static int place_anchored(int *n) {
    int placed = 0;
    for (int t = 0; t < gt_task_count(); t++) {
        const gt_task_opts *to = gt_task_at(t)->opts;
        for (int r = 0; to && to->rows[r].row.key; r++) {
            const char *after = row_after(to->rows, r);
            const int k = after ? row_at(*n, after) : -1;
            if (row_at(*n, to->rows[r].row.key) >= 0 || k < 0) continue;
            insert_row(n, k + 1, &to->rows[r].row);
            placed++;
        }
    }
    return placed;
}

/* The first task row not in the table yet (its row to follow never came: its task is not registered)
 * goes at the end of its section; returns 0 when every row is in. */
static int place_first_left(int *n) {
    for (int t = 0; t < gt_task_count(); t++) {
        const gt_task_opts *to = gt_task_at(t)->opts;
        for (int r = 0; to && to->rows[r].row.key; r++) {
            const gt_opt *o = &to->rows[r].row;
            if (row_at(*n, o->key) >= 0) continue;
            const size_t sec = (size_t)(strchr(o->key, '.') - o->key) + 1;
            int at = *n;
            for (int i = 0; i < *n; i++)
                if (!strncmp(gt_train_opts[i].key, o->key, sec)) at = i + 1;
            insert_row(n, at, o);
            return 1;
        }
    }
    return 0;
}

void gt_train_opts_init(void) {
    if (g_opts_tasks == gt_task_count()) return;
    int n = 0;
    for (const gt_opt *o = shared_opts; o->key; o++) insert_row(&n, n, o);
    for (int t = 0; t < gt_task_count(); t++) { /* a key is one row */
        const gt_task_opts *to = gt_task_at(t)->opts;
        for (int r = 0; to && to->rows[r].row.key; r++) {
            const char *key = to->rows[r].row.key;
            int same = row_at(n, key) >= 0;
            for (int u = 0; u <= t && !same; u++) {
                const gt_task_opts *uo = gt_task_at(u)->opts;
                for (int q = 0; uo && uo->rows[q].row.key && (u < t || q < r) && !same; q++)
                    same = !strcmp(uo->rows[q].row.key, key);
            }
            GT_CHECK(!same && strchr(key, '.'), GT_EXIT_INTERNAL, "train: task %s's option row %s: a key of "
                     "another row, or no section", gt_task_at(t)->train->name, key);
        }
    }
    do
        while (place_anchored(&n) > 0) {}
    while (place_first_left(&n));
    gt_train_opts[n] = (gt_opt){0};
    g_opts_tasks = gt_task_count();
}

/* Keys that describe one invocation, not the run: never stored. */
static int per_invocation(const char *key) {
    return !strcmp(key, "run.resume") || !strcmp(key, "run.overwrite") || !strcmp(key, "run.watchdog_s") ||
           !strcmp(key, "train.stop_after") || !strcmp(key, "train.device") || !strncmp(key, "train.trace", 11) ||
           !strcmp(key, "train.regression_warn") || !strcmp(key, "train.regression_min_s") ||
           !strcmp(key, "train.gpu_telemetry_s") ||
           !strncmp(key, "log.", 4) || !strncmp(key, "eval.", 5) ||
           !strncmp(key, "plan.", 5);
}

static const char *raw(const gt_args *a, const char *key) {
    for (int i = 0; i < a->n_values; i++)
        if (!strcmp(a->spec[i]->key, key)) return a->value[i];
    GT_ASSERT(0 && "unknown key");
    return NULL;
}
static int has(const gt_args *a, const char *key) { return raw(a, key)[0] != 0; }

static int as_int(const gt_args *a, const char *key, int64_t lo, int64_t hi) {
    int64_t v = gt_args_int(a, key);
    GT_CHECK(v >= lo && v <= hi, GT_EXIT_USAGE, "%s = %lld is outside [%lld, %lld]", key, (long long)v, (long long)lo,
             (long long)hi);
    return (int)v;
}

/* The resolved configuration as INI text (every non-empty, stored key). */
static char *config_text(const gt_args *a) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    GT_CHECK(f, GT_EXIT_RESOURCE, "out of memory");
    fputs("# resolved configuration of 'gridtrain train' (defaults < config file < command line)\n", f);
    const char *cur = "";
    size_t cur_len = 0;
    for (int i = 0; i < a->n_values; i++) {
        const char *key = a->spec[i]->key;
        if (per_invocation(key) || !a->value[i][0]) continue;
        const char *dot = strchr(key, '.');
        size_t n = (size_t)(dot - key);
        if (n != cur_len || strncmp(key, cur, n)) {
            fprintf(f, "[%.*s]\n", (int)n, key);
            cur = key;
            cur_len = n;
        }
        fprintf(f, "%s = %s\n", dot + 1, a->value[i]);
    }
    fclose(f);
    return buf;
}

/* gt_args -> gt_train_config (cli/train_args.h). */
void gt_train_config_stored_compat(const gt_args *a, gt_train_config *c) {
    if (!gt_args_is_set(a, "model.head")) c->model.gated = 0;
    const gt_opt_values v = gt_args_values(a);
    for (int i = 0; i < gt_task_count(); i++) { /* the tasks' own data settings */
        const gt_task_opts *to = gt_task_at(i)->opts;
        if (to && to->stored_compat) to->stored_compat(&v, &c->data);
    }
    if (!gt_args_is_set(a, "train.balance")) c->balance = 0; /* runs from before balanced batches */
    if (!gt_args_is_set(a, "model.dropout")) { /* runs from before dropout */
        c->model.dropout = 0;
        c->dropout_auto = 0;
    }
    if (!gt_args_is_set(a, "train.lr_plateau")) c->lr_plateau = 0; /* ... and before the plateau rule */
}

/* The [data] section: the shared rows, then every registered task's (its block, gt_task_opts). */
static void data_from_args(const gt_args *a, gt_train_config *c) {
    c->data_file = gt_args_str(a, "data.file");
    gt_data_config *d = &c->data;
    const char *task = gt_args_str(a, "data.task");
    GT_CHECK(strlen(task) < sizeof d->task_name, GT_EXIT_USAGE, "data.task: name too long");
    snprintf(d->task_name, sizeof d->task_name, "%s", task);
    if (has(a, "data.window")) d->window = as_int(a, "data.window", 2, 1 << 24);
    if (has(a, "data.stride")) d->stride = gt_args_int(a, "data.stride");
    if (has(a, "data.stride_frac")) d->stride_frac = gt_args_float(a, "data.stride_frac");
    if (has(a, "data.split_train")) d->split_train = gt_args_float(a, "data.split_train");
    if (has(a, "data.split_val")) d->split_val = gt_args_float(a, "data.split_val");
    if (has(a, "data.holdout_every")) d->holdout_every = as_int(a, "data.holdout_every", 0, INT_MAX);
    const char *scr = gt_args_str(a, "data.screen");
    d->screen = !strcmp(scr, "drop") ? GT_SCREEN_DROP : !strcmp(scr, "repair") ? GT_SCREEN_REPAIR : GT_SCREEN_OFF;
    if (has(a, "data.spike_k")) d->spike_k = gt_args_float(a, "data.spike_k");
    char err[256];
    GT_CHECK(gt_data_filter_parse(&d->items, gt_args_str(a, "data.items"), err, sizeof err) == 0, GT_EXIT_USAGE,
             "%s: %s", "data.items", err);
    const gt_opt_values v = gt_args_values(a);
    for (int i = 0; i < gt_task_count(); i++) {
        const gt_task_opts *to = gt_task_at(i)->opts;
        if (to && to->read) to->read(&v, d);
    }
    GT_CHECK(d->split_train > 0 && d->split_val >= 0 && d->split_train + d->split_val <= 1, GT_EXIT_USAGE,
             "data.split_train (%g) and data.split_val (%g) must be > 0, >= 0 and sum to <= 1", d->split_train,
             d->split_val);
    GT_CHECK(!has(a, "data.stride") || d->stride >= 0, GT_EXIT_USAGE, "data.stride must be >= 0");
}

/* The [model] section of a model of this kind. */
static void model_from_args(const gt_args *a, gt_train_config *c, int kind) {
    gt_model_config *m = &c->model;
    if (has(a, "model.d_model")) m->d_model = as_int(a, "model.d_model", 1, 1 << 16);
    if (has(a, "model.heads")) m->n_heads = as_int(a, "model.heads", 1, 1024);
    if (has(a, "model.d_ff")) m->d_ff = as_int(a, "model.d_ff", 1, 1 << 20);
    if (has(a, "model.layers")) m->n_layers = as_int(a, "model.layers", 1, 1024);
    if (has(a, "model.hidden")) m->hidden = as_int(a, "model.hidden", 1, 1 << 20);
    if (has(a, "model.tbptt")) m->tbptt = as_int(a, "model.tbptt", 0, 1 << 24);
    int loss = gt_loss_kind_parse(gt_args_str(a, "model.loss"));
    GT_CHECK(loss >= 0, GT_EXIT_USAGE, "model.loss: unknown loss '%s' (mse|l1|mse+l1)", gt_args_str(a, "model.loss"));
    m->loss = (gt_loss_kind)loss;
    const char *head = gt_args_str(a, "model.head");
    /* auto: the gated head where the model has one output per window (seq2point); an explicit
     * gated head on a task without appliances is refused by the task (task/) */
    const gt_model_vtable *vt = gt_model_kind_table((gt_model_kind)kind);
    m->gated = !strcmp(head, "gated") || (!strcmp(head, "auto") && vt->seq2point);
    const char *dr = gt_args_str(a, "model.dropout");
    const int has_dropout = gt_model_kind_has((gt_model_kind)kind, GT_MODEL_HAS_DROPOUT);
    c->dropout_auto = !strcmp(dr, "auto") && has_dropout;
    if (!strcmp(dr, "auto")) m->dropout = has_dropout ? (float)GT_TRAIN_AUTO_DROPOUT : 0.0f;
    else {
        char *end = NULL;
        double p = strtod(dr, &end);
        GT_CHECK(end != dr && *end == '\0' && p >= 0 && p < 1, GT_EXIT_USAGE,
                 "model.dropout = '%s': give auto or a probability in [0, 1)", dr);
        m->dropout = (float)p;
    }
    double cs = gt_args_float(a, "model.conv_scale");
    GT_CHECK(cs > 0 && isfinite(cs), GT_EXIT_USAGE, "model.conv_scale must be a finite number > 0 (got %g)", cs);
    gt_model_config_resolve(m, cs);
    gt_model_config_check(m); /* the settings the kind does not have (nn/model.h) */
}

/* The [optim] section. */
static void optim_from_args(const gt_args *a, gt_train_config *c) {
    c->lr = gt_args_float(a, "optim.lr");
    c->lr_min = gt_args_float(a, "optim.lr_min");
    c->warmup = gt_args_int(a, "optim.warmup");
    c->adamw.weight_decay = gt_args_float(a, "optim.weight_decay");
    c->adamw.beta1 = gt_args_float(a, "optim.beta1");
    c->adamw.beta2 = gt_args_float(a, "optim.beta2");
    c->adamw.eps = gt_args_float(a, "optim.eps");
    c->clip = gt_args_float(a, "optim.clip");
    GT_CHECK(c->clip >= 0 && isfinite(c->clip), GT_EXIT_USAGE, "optim.clip must be a finite number >= 0 (0 off; got %g)",
             c->clip);
    GT_CHECK(c->adamw.beta1 >= 0 && c->adamw.beta1 < 1 && c->adamw.beta2 >= 0 && c->adamw.beta2 < 1 &&
                 c->adamw.eps > 0 && c->adamw.weight_decay >= 0,
             GT_EXIT_USAGE, "optim.beta1/beta2 must be in [0,1), optim.eps > 0, optim.weight_decay >= 0");
}

/* The [train] section. */
static void train_from_args(const gt_args *a, gt_train_config *c) {
    c->batch = as_int(a, "train.batch", 1, GT_TRAIN_MAX_BATCH);
    c->micro_batch = as_int(a, "train.micro_batch", 0, GT_TRAIN_MAX_BATCH);
    c->epochs = gt_args_int(a, "train.epochs");
    c->max_steps = gt_args_int(a, "train.max_steps");
    c->time_budget_min = gt_args_float(a, "train.time_budget");
    c->eval_every = gt_args_int(a, "train.eval_every");
    c->patience = gt_args_int(a, "train.patience");
    c->lr_plateau = gt_args_float(a, "train.lr_plateau");
    c->plateau_patience = gt_args_int(a, "train.plateau_patience");
    GT_CHECK(c->lr_plateau >= 0 && c->lr_plateau < 1 && c->plateau_patience >= 1, GT_EXIT_USAGE,
             "train.lr_plateau must be in [0, 1) (0 off) and train.plateau_patience >= 1");
    c->seed = (uint64_t)gt_args_int(a, "train.seed");
    const char *pf = gt_args_str(a, "train.prefetch");
    c->prefetch = !strcmp(pf, "on") ? 1 : !strcmp(pf, "off") ? 0 : -1;
    c->nan_max_bad = as_int(a, "train.nan_max_bad", 1, INT_MAX);
    const char *ml = gt_args_str(a, "train.mem_limit");
    if (!strcmp(ml, "auto")) c->mem_limit = 0;
    else if (!strcmp(ml, "off")) c->mem_limit = -1;
    else {
        int64_t b = 0;
        GT_CHECK(gt_parse_size(ml, &b) && b > 0, GT_EXIT_USAGE,
                 "train.mem_limit = '%s': give auto, off or a size such as 8G", ml);
        c->mem_limit = (double)b;
    }
    c->amp = gt_args_bool(a, "train.amp");
    int prec = gt_precision_parse(gt_args_str(a, "train.precision"));
    GT_CHECK(prec >= 0, GT_EXIT_USAGE, "train.precision: unknown precision '%s' (fp32|tf32|bf16|fp16|auto)",
             gt_args_str(a, "train.precision"));
    c->model.precision = (gt_precision)prec;
    c->model.graphs = gt_args_bool(a, "train.graphs");
    c->overlap = gt_args_bool(a, "train.overlap");
    c->balance = gt_args_bool(a, "train.balance");
    c->bucket_bytes = gt_args_size(a, "train.bucket");
    int dev = gt_device_request_parse(gt_args_str(a, "train.device"));
    GT_CHECK(dev >= 0, GT_EXIT_USAGE, "train.device: expected auto, cpu or cuda");
    c->device = (gt_device_request)dev;
    c->log_every = gt_args_int(a, "train.log_every");
    c->stop_after = gt_args_int(a, "train.stop_after");
    c->gpu_telemetry_s = gt_args_float(a, "train.gpu_telemetry_s");
    GT_CHECK(c->gpu_telemetry_s >= 0, GT_EXIT_USAGE, "train.gpu_telemetry_s must be >= 0 (0 turns it off)");
    c->regression_warn = gt_args_float(a, "train.regression_warn");
    GT_CHECK(c->regression_warn >= 0 && c->regression_warn < 1, GT_EXIT_USAGE,
             "train.regression_warn must be in [0, 1) (0 turns the comparison off)");
    c->regression_min_s = gt_args_float(a, "train.regression_min_s");
    GT_CHECK(c->regression_min_s >= 0 && c->regression_min_s < 1e9, GT_EXIT_USAGE,
             "train.regression_min_s must be >= 0 seconds");
    c->trace = gt_args_bool(a, "train.trace");
    c->trace_events = as_int(a, "train.trace_events", 1, GT_TRAIN_MAX_TRACE_EVENTS); /* the span buffer's size */
    c->trace_steps = gt_args_int(a, "train.trace_steps");
    c->trace_every = gt_args_int(a, "train.trace_every");
    GT_CHECK(c->trace_events >= 1 && c->trace_steps >= 0 && c->trace_every >= 1, GT_EXIT_USAGE,
             "train.trace_events must be >= 1, train.trace_steps >= 0 and train.trace_every >= 1");
    GT_CHECK(c->eval_every >= 0 && c->patience >= 0 && c->stop_after >= 0, GT_EXIT_USAGE,
             "train.eval_every, train.patience and train.stop_after must be >= 0");
}

/* The [run] section. */
static void run_from_args(const gt_args *a, gt_train_config *c) {
    c->run_dir = gt_args_str(a, "run.dir");
    c->checkpoint_every = gt_args_int(a, "run.checkpoint_every");
    c->checkpoint_minutes = gt_args_float(a, "run.checkpoint_minutes");
    c->keep = as_int(a, "run.keep", 1, 1 << 20);
    c->overwrite = gt_args_bool(a, "run.overwrite");
    GT_CHECK(c->checkpoint_every >= 0 && c->checkpoint_minutes >= 0, GT_EXIT_USAGE,
             "run.checkpoint_every and run.checkpoint_minutes must be >= 0");
}

void gt_train_config_from_args(const gt_args *a, gt_train_config *c) {
    int kind = gt_model_kind_parse(gt_args_str(a, "model.kind"));
    GT_CHECK(kind >= 0, GT_EXIT_USAGE, "model.kind: unknown kind");
    gt_train_config_defaults(c, (gt_model_kind)kind);
    data_from_args(a, c);
    model_from_args(a, c, kind);
    optim_from_args(a, c);
    train_from_args(a, c);
    run_from_args(a, c);
}

/* Re-parse with `base` (a config file) under every explicitly set value of a0,
 * so the file sits between the defaults and the command line. */
static void merge_args(gt_args *out, const gt_args *a0, const char *base, const char *run_dir) {
    int cap = 4 + 2 * a0->n_values, n = 0;
    char **argv = GT_CALLOC((size_t)cap, sizeof *argv);
    if (base) {
        argv[n++] = GT_STRDUP("--config");
        argv[n++] = GT_STRDUP(base);
    }
    for (int i = 0; i < a0->n_values; i++) {
        if (!strcmp(a0->origin[i], "default") || !strcmp(a0->spec[i]->key, "run.resume")) continue;
        char *kv = NULL;
        GT_CHECK(asprintf(&kv, "%s=%s", a0->spec[i]->key, a0->value[i]) >= 0, GT_EXIT_RESOURCE, "out of memory");
        argv[n++] = kv;
    }
    if (run_dir) {
        char *kv = NULL;
        GT_CHECK(asprintf(&kv, "run.dir=%s", run_dir) >= 0, GT_EXIT_RESOURCE, "out of memory");
        argv[n++] = kv;
    }
    gt_args_parse(out, &gt_cmd_train, a0->keys, n, argv);
    /* gt_args keeps copies of values but points pos[] into argv: none here */
    for (int i = 0; i < n; i++) free(argv[i]);
    free(argv);
}

/* Writes text to a private temporary file; returns its malloc'd path. */
static char *temp_config(const char *text) {
    const char *dir = getenv("TMPDIR");
    char *path = NULL;
    GT_CHECK(asprintf(&path, "%s/gridtrain-resume-XXXXXX", dir && *dir ? dir : "/tmp") >= 0, GT_EXIT_RESOURCE,
             "out of memory");
    int fd = mkstemp(path);
    GT_CHECK(fd >= 0, GT_EXIT_RESOURCE, "cannot create a temporary file in %s", dir && *dir ? dir : "/tmp");
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Settings a resumed run keeps from its checkpoint: they decide which windows
 * are train, validation and test, what the windows hold, or the order and
 * grouping of the data (every data.* key but data.file, train.batch,
 * train.balance, train.seed). Changing one would continue a different
 * training under the old run's name. Others (train.max_steps, train.epochs,
 * optim.*, run.*, data.file moved elsewhere) may change: docs/training.md. */
static int frozen_on_resume(const char *key) {
    return (!strncmp(key, "data.", 5) && strcmp(key, "data.file") != 0) || !strcmp(key, "train.batch") ||
           !strcmp(key, "train.balance") || !strcmp(key, "train.seed");
}

/* Whether the value strings say the same: equal text, or both numbers of
 * equal value ("0.5" = "0.50"; "auto" only equals "auto"). */
static int same_value(const char *x, const char *y) {
    if (!strcmp(x, y)) return 1;
    char *ex = NULL, *ey = NULL;
    double vx = strtod(x, &ex), vy = strtod(y, &ey);
    return ex != x && ey != y && *ex == 0 && *ey == 0 && vx == vy;
}

/* --resume: a command-line value of a frozen_on_resume key that differs from
 * the run's stored configuration is refused (exit 2), like train.seed. */
static void check_resume_overrides(const gt_args *a0, const char *stored_ini, const char *rdir) {
    char *argv[2] = {"--config", (char *)stored_ini};
    gt_args st;
    gt_args_parse(&st, &gt_cmd_train, NULL, 2, argv); /* the run's stored config.ini: train's keys only */
    for (int i = 0; i < a0->n_values; i++) {
        const gt_opt *o = a0->spec[i];
        if (!strcmp(a0->origin[i], "default") || !frozen_on_resume(o->key) ||
            same_value(a0->value[i], gt_args_str_any(&st, o->key)))
            continue;
        char stored[256];
        snprintf(stored, sizeof stored, "%s", gt_args_str_any(&st, o->key));
        gt_args_free(&st);
        GT_FAIL(GT_EXIT_USAGE,
                "--resume %s: %s=%s differs from the run's %s: it changes which windows are train/validation/test or "
                "the data order; start a new run (another run.dir) to change it",
                rdir, o->key, a0->value[i], stored[0] ? stored : "unset (the default)");
    }
    gt_args_free(&st);
}

/* Resolves CONFIG / --resume into merged arguments (collective only in that
 * every rank does the same). */
static void resolve_args(gt_args *out, const gt_args *a0, int *resume) {
    const char *rdir = gt_args_str(a0, "run.resume");
    *resume = rdir[0] != 0;
    GT_CHECK((a0->n_pos == 1) != *resume, GT_EXIT_USAGE, "usage: gridtrain %s", gt_cmd_train.usage);
    if (*resume) {
        char *text = gt_ckpt_read_config(rdir);
        GT_CHECK(text, GT_EXIT_USAGE, "--resume %s: no valid checkpoint (with its configuration) in %s/checkpoints",
                 rdir, rdir);
        char *tmp = temp_config(text);
        check_resume_overrides(a0, tmp, rdir);
        merge_args(out, a0, tmp, rdir);
        unlink(tmp);
        free(tmp);
        free(text);
    } else {
        merge_args(out, a0, a0->pos[0], NULL);
    }
}

/* CONFIG or --resume -> the merged arguments and the training configuration (cli/train_args.h) */
void gt_train_resolve_config(const gt_args *a0, gt_args *a, gt_train_config *c, int *resume) {
    resolve_args(a, a0, resume);
    gt_train_config_from_args(a, c);
    if (*resume) gt_train_config_stored_compat(a, c);
}

static int run(const gt_args *a0, MPI_Comm comm) {
    gt_args a;
    int resume = 0;
    gt_train_config c;
    gt_train_resolve_config(a0, &a, &c, &resume);
    char *text = config_text(&a);
    c.config_text = text;
    c.resume = resume;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && gt_log_level() <= GT_LOG_INFO) gt_args_print(&a, stderr);
    const double watchdog_s = gt_args_float(&a, "run.watchdog_s");
    GT_CHECK(watchdog_s >= 0, GT_EXIT_USAGE, "run.watchdog_s must be >= 0 (0 turns the watchdog off)");
    gt_watchdog_start(watchdog_s); /* no hang without a message: core/watchdog.h */
    gt_eval_config ec; /* the eval.* keys, checked before training */
    gt_eval_cli_config(&a, &ec);
    gt_train_result res;
    int rc = gt_train_run(&c, comm, &res);
    /* training, then evaluation of what it wrote (the best checkpoint), as `gridtrain eval` does */
    if (rc == 0 && c.write_outputs) gt_eval_cli_after_train(&c, &ec, res.run_dir, comm);
    gt_log_set_file(NULL); /* the run log (run.log) ends with the evaluation */
    /* the watchdog keeps watching until the process ends (MPI_Finalize can hang too) */
    gt_train_result_free(&res);
    free(text);
    gt_args_free(&a);
    return rc;
}

int gt_bench_train(const gt_args *a0, MPI_Comm comm) {
    GT_CHECK(a0->n_pos >= 2, GT_EXIT_USAGE, "usage: gridtrain bench train CONFIG");
    /* CONFIG, then the train keys given after it (gt_cmd_bench passes them through) */
    const char *argv[2 + GT_MAX_POS] = {"--config", a0->pos[1]};
    for (int i = 0; i < a0->n_extra; i++) argv[2 + i] = a0->extra[i];
    gt_args a;
    gt_args_parse(&a, &gt_cmd_train, a0->keys, 2 + a0->n_extra, (char **)argv);
    gt_train_config c;
    gt_train_config_from_args(&a, &c);
    int reps = 1;
    for (int i = 0; i < a0->n_values; i++) {
        if (!strcmp(a0->spec[i]->key, "bench.reps")) reps = (int)gt_args_int(a0, "bench.reps");
        /* bench.device given: it wins over the CONFIG's train.device */
        if (!strcmp(a0->spec[i]->key, "bench.device") && strcmp(a0->origin[i], "default")) {
            int dev = gt_device_request_parse(a0->value[i]);
            GT_CHECK(dev >= 0, GT_EXIT_USAGE, "bench.device: expected auto, cpu or cuda");
            c.device = (gt_device_request)dev;
        }
    }
    int rc = gt_train_bench_run(&c, reps, comm, stdout);
    gt_args_free(&a);
    return rc;
}


const gt_cmd gt_cmd_train = {
    .name = "train",
    .usage = "train CONFIG|--resume RUN_DIR [section.key=value ...]",
    .summary = "train a NILM seq2point (s2p_cnn, s2p_tf) or LSTM anomaly model, data-parallel under mpirun",
    .details = "Every rank reads its share of data.file, builds the windows and trains a replica; gradients\n"
               "are summed over ranks, so P ranks follow the 1-rank loss curve (train.batch is GLOBAL).\n"
               "Outputs in run.dir: config.ini, manifest.json, metrics.jsonl, screened.csv,\n"
               "forensics.jsonl (non-finite steps), checkpoints/. SIGTERM/SIGUSR1: checkpoint, exit 75;\n"
               "continue with --resume RUN_DIR. Exit 5: train.nan_max_bad consecutive non-finite steps.\n"
               "train.device: auto (a GPU per rank when usable, else the CPU), cpu, or cuda (a GPU or exit 7).\n"
               "Matrix products follow train.precision (fp32 storage; bf16 on the CPU through oneDNN). See docs/training.md.",
    .opts = gt_train_opts,
    .opts_init = gt_train_opts_init,
    .min_pos = 0,
    .max_pos = 1,
    .run = run,
    .prints_config = 1,
    .hide_prefix = "plan.",
};
