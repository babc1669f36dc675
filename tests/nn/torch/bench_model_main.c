/* tests/nn/torch/bench_model_main.c: standalone driver of gt_nn_bench_model
 * (nn/bench.h) until `gridtrain bench model` is wired in by cli/.
 *
 *   gt_bench_model --model s2p_cnn|s2p_tf|lstm [--batch B] [--window W]
 *       [--tbptt K] [--steps N] [--warmup N] [--infer-steps N] [--sgemm N]
 *       [--mem-check] [--n-in C] [--n-out A] [--d-model d] [--heads h]
 *       [--ff f] [--layers N] [--hidden H] [--seed S] [--precision P] [--json]
 *
 * Threads: OPENBLAS_NUM_THREADS. --json adds one "GT_BENCH_JSON {...}" line
 * (read by bench_vs_torch.py). Exit 2 on a bad option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/bench.h"

static void usage(void) {
    fprintf(stderr,
            "usage: gt_bench_model --model s2p_cnn|s2p_tf|lstm [--batch B] [--window W] [--tbptt K]\n"
            "       [--steps N] [--warmup N] [--infer-steps N] [--sgemm N] [--mem-check] [--n-in C]\n"
            "       [--n-out A] [--d-model d] [--heads h] [--ff f] [--layers N] [--hidden H] [--seed S]\n"
            "       [--precision fp32|bf16|auto] [--json]\n");
    exit(2);
}

static int parse_int(const char *opt, const char *v) {
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end != 0) {
        fprintf(stderr, "gt_bench_model: %s needs an integer (got '%s')\n", opt, v ? v : "");
        usage();
    }
    return (int)x;
}

int main(int argc, char **argv) {
    gt_nn_bench_config cfg;
    int kind = -1, json = 0;
    gt_nn_bench_config_default(&cfg, GT_MODEL_S2P_CNN);
    gt_nn_bench_config given = cfg;
    struct {
        const char *name;
        int *field;
    } ints[] = {{"--batch", &given.batch},     {"--window", &given.window},   {"--tbptt", &given.tbptt},
                {"--steps", &given.steps},     {"--warmup", &given.warmup},   {"--infer-steps", &given.infer_steps},
                {"--sgemm", &given.sgemm_n},   {"--n-in", &given.n_in},       {"--n-out", &given.n_out},
                {"--d-model", &given.d_model}, {"--heads", &given.n_heads},   {"--ff", &given.d_ff},
                {"--layers", &given.n_layers}, {"--hidden", &given.hidden}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int done = 0;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (strcmp(a, ints[k].name) == 0) {
                *ints[k].field = parse_int(a, i + 1 < argc ? argv[++i] : NULL);
                done = 1;
            }
        if (done) continue;
        if (strcmp(a, "--model") == 0 && i + 1 < argc) {
            kind = gt_model_kind_parse(argv[++i]);
            if (kind < 0) usage();
        } else if (strcmp(a, "--seed") == 0) {
            given.seed = (uint64_t)parse_int(a, i + 1 < argc ? argv[++i] : NULL);
        } else if (strcmp(a, "--precision") == 0 && i + 1 < argc) {
            int p = gt_precision_parse(argv[++i]);
            if (p != GT_PRECISION_FP32 && p != GT_PRECISION_BF16 && p != GT_PRECISION_AUTO) usage();
            given.precision = (gt_precision)p;
        } else if (strcmp(a, "--mem-check") == 0) {
            given.mem_check = 1;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else {
            usage();
        }
    }
    if (kind < 0) usage();
    if (!gt_model_kind_available((gt_model_kind)kind)) {
        fprintf(stderr, "gt_bench_model: model %s is not built into gt_nn\n", gt_model_kind_name((gt_model_kind)kind));
        return 3;
    }
    given.kind = (gt_model_kind)kind;
    gt_nn_bench_result res;
    gt_nn_bench_model(&given, &res);
    gt_nn_bench_print(stdout, &given, &res);
    if (json) gt_nn_bench_print_json(stdout, &given, &res);
    return 0;
}
