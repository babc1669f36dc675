#include "cli/commands.h"

#include <string.h>

static const gt_cmd *g_cmds[16];
static int n_cmds = -1;
static void init(void) {
    if (n_cmds >= 0) return;
    const gt_cmd *all[] = {&gt_cmd_synth,  &gt_cmd_import, &gt_cmd_inspect, &gt_cmd_train,
                           &gt_cmd_plan,   &gt_cmd_eval,   &gt_cmd_predict, &gt_cmd_doe,  &gt_cmd_bench,
                           &gt_cmd_doctor};
    n_cmds = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) g_cmds[n_cmds++] = all[i];
}
#define N_CMDS (init(), n_cmds)

int gt_commands_count(void) { return N_CMDS; }
const gt_cmd *gt_commands_get(int i) { init(); return g_cmds[i]; }

const gt_cmd *gt_commands_find(const char *name) {
    for (int i = 0; i < N_CMDS; i++)
        if (!strcmp(g_cmds[i]->name, name)) return g_cmds[i];
    return NULL;
}

const gt_cmd_keys gt_commands_keys = {gt_commands_know_key, gt_commands_find};

int gt_commands_know_key(const char *key) {
    if (!strncmp(key, "log.", 4)) return 1;
    for (int i = 0; i < N_CMDS; i++)
        for (const gt_opt *o = gt_cmd_opts(g_cmds[i]); o && o->key; o++)
            if (!strcmp(o->key, key)) return 1;
    return 0;
}
