/* The option tables drive parsing: defaults, config files, flags and
 * section.key=value overrides in order; bad values are rejected. Error paths
 * are checked in test_cli.sh through the real executable (they exit). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "test.h"

static const gt_opt opts[] = {
    {"data.file", "data", GT_OPT_STR, "x.h5", "file", NULL},
    {"train.steps", "steps", GT_OPT_INT, "10", "steps", NULL},
    {"train.lr", "lr", GT_OPT_FLOAT, "0.001", "learning rate", NULL},
    {"train.amp", "amp", GT_OPT_BOOL, "false", "mixed precision", NULL},
    {"train.budget", NULL, GT_OPT_SIZE, "1G", "memory", NULL},
    {"model.kind", "model", GT_OPT_STR, "s2p_cnn", "model", "s2p_cnn|s2p_tf|lstm"},
    {"synth.output", "o", GT_OPT_STR, "", "output", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};
static int run(const gt_args *a, MPI_Comm c) { return 0; }
static const gt_cmd cmd = {"t", "t [options] FILE", "test", NULL, opts, 0, 2, run, 0, NULL, NULL, NULL, NULL, NULL};

int main(void) {
    gt_args a;
    char *argv0[] = {NULL};
    gt_args_parse(&a, &cmd, &gt_commands_keys, 0, argv0);
    TEST_CHECK(!strcmp(gt_args_str(&a, "data.file"), "x.h5"));
    TEST_EQ_INT(gt_args_int(&a, "train.steps"), 10);
    TEST_CLOSE(gt_args_float(&a, "train.lr"), 0.001, 0, 1e-12);
    TEST_EQ_INT(gt_args_bool(&a, "train.amp"), 0);
    TEST_EQ_INT(gt_args_size(&a, "train.budget"), 1024LL * 1024 * 1024);
    TEST_EQ_INT(gt_args_is_set(&a, "train.steps"), 0);
    gt_args_free(&a);

    char path[] = "/tmp/gt_test_options_XXXXXX";
    int fd = mkstemp(path);
    TEST_REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("; comment\n[train]\nsteps = 50\nlr = 0.01 ; inline comment\n[model]\nkind = lstm\n"
          "[data]\nfile = a.h5\n", f);
    fclose(f);
    /* config first, then flags and overrides in command-line order */
    char *argv[] = {"pos1", "--steps", "7", "train.steps=8", "--config", path, "--amp",
                    "train.budget=64M", "-o", "out.h5", "--lr=0.5", "pos2"};
    gt_args_parse(&a, &cmd, &gt_commands_keys, 12, argv);
    TEST_EQ_INT(a.n_pos, 2);
    TEST_CHECK(!strcmp(a.pos[0], "pos1") && !strcmp(a.pos[1], "pos2"));
    TEST_EQ_INT(gt_args_int(&a, "train.steps"), 8); /* argv beats the file, last wins */
    TEST_CLOSE(gt_args_float(&a, "train.lr"), 0.5, 0, 1e-12);
    TEST_CHECK(!strcmp(gt_args_str(&a, "model.kind"), "lstm"));
    TEST_CHECK(!strcmp(gt_args_str(&a, "data.file"), "a.h5"));
    TEST_CHECK(!strcmp(gt_args_str(&a, "synth.output"), "out.h5"));
    TEST_EQ_INT(gt_args_bool(&a, "train.amp"), 1);
    TEST_EQ_INT(gt_args_size(&a, "train.budget"), 64LL * 1024 * 1024);
    TEST_EQ_INT(gt_args_is_set(&a, "train.steps"), 1);

    /* the resolved configuration names where every value came from */
    char buf[8192] = {0};
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    gt_args_print(&a, m);
    fclose(m);
    TEST_CHECK(strstr(buf, "[model]") != NULL);
    char want[512];
    snprintf(want, sizeof want, "; %s:6", path);
    TEST_CHECK(strstr(buf, want) != NULL); /* kind = lstm came from line 6 */
    gt_args_free(&a);

    char *argv2[] = {"--no-amp", "--model", "s2p_tf"};
    gt_args_parse(&a, &cmd, &gt_commands_keys, 3, argv2);
    TEST_EQ_INT(gt_args_bool(&a, "train.amp"), 0);
    TEST_CHECK(!strcmp(gt_args_str(&a, "model.kind"), "s2p_tf"));
    gt_args_free(&a);

    /* help is generated from the same table */
    memset(buf, 0, sizeof buf);
    m = fmemopen(buf, sizeof buf - 1, "w");
    gt_cmd_help(&cmd, m);
    fclose(m);
    TEST_CHECK(strstr(buf, "--steps V") != NULL);
    TEST_CHECK(strstr(buf, "s2p_cnn|s2p_tf|lstm") != NULL);
    TEST_CHECK(strstr(buf, "train.budget=V") != NULL);
    unlink(path);
    TEST_DONE();
}
