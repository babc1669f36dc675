/* train's option table from the tasks' rows (task/task.h gt_task_opts,
 * cli/cmd_train.c gt_train_opts_init): with the built-in tasks the data.*
 * rows keep their order (the one docs/configuration.md and a run's
 * config.ini have); a task registered later adds its rows where `after`
 * places them (after a shared row, after another task's row, following its
 * own previous row; a place that never appears: the end of the section),
 * and gt_train_config_from_args reads their values into that task's block
 * of the data settings (its defaults, and a value from the command line). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/train_args.h"
#include "data/dataset_impl.h"
#include "task/task.h"
#include "task/task_registry.h"
#include "test.h"

static const char *const data_keys[] = {
    "data.file", "data.task", "data.window", "data.stride", "data.stride_frac", "data.stride_mask",
    "data.split_train", "data.split_val", "data.holdout_every", "data.screen", "data.spike_k",
    "data.train_normal_only", "data.items", "data.farms", "data.machine_types", "data.conditions",
    "data.train_conditions", "data.care_event", "data.appliances", "data.spike_channels", "data.pdm_target",
    "data.norm", "data.nbm_inputs", "data.nbm_targets", "data.fill_max_s", "data.power_limit_w",
    "data.spike_min_w", "data.pdm_short_gap", "data.pdm_row_missing", "data.signal_limit", "data.augment",
    "data.time_features", "data.timezone", NULL};

/* a task with settings of its own: a level and a note */
typedef struct fake_cfg {
    int64_t level;
    char note[32];
    double tail;
} fake_cfg;
static void fake_defaults(void *c) { memset(c, 0, sizeof(fake_cfg)); }
static const gt_data_task_i fake_data = {.name = "fake", .config_bytes = sizeof(fake_cfg),
                                         .config_defaults = fake_defaults};
static const gt_task_i fake_train = {.name = "fake"};
static const gt_task_opt fake_rows[] = {
    {{"data.fake_level", NULL, GT_OPT_INT, "3", "fake: a level", NULL}, "data.spike_k"},
    {{"data.fake_note", NULL, GT_OPT_STR, "", "fake: a note", NULL}, NULL},
    {{"data.fake_tail", NULL, GT_OPT_FLOAT, "0.5", "fake: at the end", NULL}, "data.no_such_row"},
    {{"data.fake_zone", NULL, GT_OPT_STR, "", "fake: after NILM's last row", NULL}, "data.timezone"},
    {{NULL, NULL, 0, NULL, NULL, NULL}, NULL},
};
static void fake_read(const gt_opt_values *v, gt_data_config *d) {
    fake_cfg *c = gt_data_task_config(d, "fake");
    c->level = v->integer(v->args, "data.fake_level");
    snprintf(c->note, sizeof c->note, "%s", v->str(v->args, "data.fake_note"));
    c->tail = v->number(v->args, "data.fake_tail");
}
static const gt_task_opts fake_opts = {.rows = fake_rows, .read = fake_read};
static const gt_task_def fake_def = {.train = &fake_train, .data = &fake_data, .opts = &fake_opts};

/* the data.* keys of train's table in order, into keys[cap] (NULL-ended) */
static int data_rows(const char **keys, int cap) {
    int n = 0;
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o->key; o++)
        if (!strncmp(o->key, "data.", 5) && n + 1 < cap) keys[n++] = o->key;
    keys[n] = NULL;
    return n;
}

static int index_of(const char *const *keys, const char *key) {
    for (int i = 0; keys[i]; i++)
        if (!strcmp(keys[i], key)) return i;
    return -1;
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    gt_task_register_builtins();
    const char *got[64];
    int n = data_rows(got, 64), same = 1, n_all = 0;
    for (int i = 0; data_keys[i] || got[i]; i++) same = same && data_keys[i] && got[i] && !strcmp(data_keys[i], got[i]);
    TEST_CHECK(same);
    TEST_EQ_INT(n, 33);
    TEST_CHECK(gt_cmd_opts(&gt_cmd_plan) == gt_cmd_opts(&gt_cmd_train)); /* plan shares the table */
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o->key; o++) n_all++;

    gt_task_register(&fake_def);
    int n_after = 0;
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o->key; o++) n_after++;
    TEST_EQ_INT(n_after, n_all + 4);
    TEST_EQ_INT(data_rows(got, 64), 37);
    const int k = index_of(got, "data.spike_k");
    TEST_EQ_INT(index_of(got, "data.fake_level"), k + 1);
    TEST_EQ_INT(index_of(got, "data.fake_note"), k + 2);
    TEST_EQ_INT(index_of(got, "data.train_normal_only"), k + 3);
    TEST_EQ_INT(index_of(got, "data.fake_zone"), index_of(got, "data.timezone") + 1);
    TEST_EQ_INT(index_of(got, "data.fake_tail"), 36); /* its place never came: the end of [data] */
    TEST_CHECK(!strncmp(gt_cmd_opts(&gt_cmd_train)[n_after - 1].key, "plan.", 5)); /* the rest kept its order */

    /* the values into the task's block: the defaults, then a command line */
    gt_args a;
    char *none[] = {NULL};
    gt_args_parse(&a, &gt_cmd_train, &gt_commands_keys, 0, none);
    gt_train_config c;
    gt_train_config_from_args(&a, &c);
    const fake_cfg *fc = gt_data_task_config_c(&c.data, "fake");
    TEST_EQ_INT(fc->level, 3);
    TEST_CHECK(!strcmp(fc->note, "") && fc->tail == 0.5);
    gt_args_free(&a);
    char *line[] = {"data.fake_level=7", "data.fake_note=hello", "data.fake_tail=2.25"};
    gt_args_parse(&a, &gt_cmd_train, &gt_commands_keys, 3, line);
    gt_train_config_from_args(&a, &c);
    fc = gt_data_task_config_c(&c.data, "fake");
    TEST_EQ_INT(fc->level, 7);
    TEST_CHECK(!strcmp(fc->note, "hello") && fc->tail == 2.25);
    gt_args_free(&a);
    TEST_DONE();
}
