#include "cli/commands.h"

#include <string.h>

static const gt_cmd *const g_cmds[] = {&gt_cmd_synth, &gt_cmd_inspect, &gt_cmd_bench};
#define N_CMDS ((int)(sizeof g_cmds / sizeof g_cmds[0]))

int gt_commands_count(void) { return N_CMDS; }
const gt_cmd *gt_commands_get(int i) { return g_cmds[i]; }

const gt_cmd *gt_commands_find(const char *name) {
    for (int i = 0; i < N_CMDS; i++)
        if (!strcmp(g_cmds[i]->name, name)) return g_cmds[i];
    return NULL;
}

int gt_commands_know_key(const char *key) {
    if (!strncmp(key, "log.", 4)) return 1;
    for (int i = 0; i < N_CMDS; i++)
        for (const gt_opt *o = g_cmds[i]->opts; o && o->key; o++)
            if (!strcmp(o->key, key)) return 1;
    return 0;
}
