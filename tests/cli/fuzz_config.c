/* tests/cli/fuzz_config.c: libFuzzer target of the configuration reader
 * (cli/options.c: inih with line numbers, duplicate keys, continuation lines,
 * typed values, sizes, choices), built with clang -fsanitize=fuzzer,address,
 * undefined by tests/cli/CMakeLists.txt. The input is a config file given with
 * --config, then parsed with a table holding every option type; a user error
 * ends through gt_abort, which the harness turns into a longjmp back here.
 * Must never crash, overflow, read out of bounds or hang. Leaks on the error
 * path are expected (run with -detect_leaks=0). */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/check.h"

static const gt_opt k_opts[] = {
    {"synth.households", "households", GT_OPT_INT, "8", "an integer", NULL},
    {"synth.days", NULL, GT_OPT_FLOAT, "", "a number", NULL},
    {"synth.output", "o", GT_OPT_STR, "", "a string", NULL},
    {"train.amp", NULL, GT_OPT_BOOL, "false", "a boolean", NULL},
    {"import.batch", "batch", GT_OPT_SIZE, "256M", "a size", NULL},
    {"model.kind", "model", GT_OPT_STR, "s2p_cnn", "a choice", "s2p_cnn|s2p_tf|lstm"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};
static const gt_cmd k_cmd = {.name = "fuzz", .usage = "fuzz", .summary = "", .opts = k_opts, .max_pos = 4};

/* what cli/commands.c answers: a key of another command is fine in a shared file */
static int know_key(const char *key) { return !strncmp(key, "data.", 5); }
static const gt_cmd *find_cmd(const char *name) { (void)name; return NULL; } /* no command passes keys through */
static const gt_cmd_keys k_keys = {know_key, find_cmd};

static jmp_buf g_jmp;
static void on_abort(int code) {
    (void)code;
    longjmp(g_jmp, 1);
}
static char g_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    gt_set_abort_handler_reentrant(on_abort);
    snprintf(g_path, sizeof g_path, "/tmp/gt_fuzz_config_%d.ini", (int)getpid());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(g_path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    char *argv[] = {"--config", g_path, "synth.households=3", NULL};
    static gt_args a; /* static: survives the longjmp */
    memset(&a, 0, sizeof a);
    if (!setjmp(g_jmp)) {
        gt_args_parse(&a, &k_cmd, &k_keys, size > 0 && (data[0] & 1) ? 3 : 2, argv);
        /* the getters agree with what the parser accepted */
        (void)gt_args_int(&a, "synth.households");
        (void)gt_args_bool(&a, "train.amp");
        (void)gt_args_size(&a, "import.batch");
        (void)gt_args_str(&a, "model.kind");
        gt_args_free(&a);
    }
    return 0;
}
