/* tests/eval/eval_tool.c: `gridtrain eval|predict|train` for the script tests,
 * runnable before the lead registers gt_cmd_eval / gt_cmd_predict in
 * cli/commands.c (same dispatch as cli/cli.c: MPI set-up, parse, run, finalize).
 *   eval_tool eval RUN_DIR [DATA.h5] [k=v ...]
 *   eval_tool predict RUN_OR_CKPT DATA.h5 -o OUT.h5 [k=v ...]
 *   eval_tool train CONFIG [k=v ...]
 *   eval_tool synth nilm|pdm -o FILE [k=v ...]
 *   eval_tool report RUN_DIR  (rewrites report.md/html from the run's files) */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/check.h"
#include "core/log.h"
#include "dist/comm.h"
#include "eval/report.h"
#include "task/task_registry.h"

extern const gt_cmd gt_cmd_train, gt_cmd_eval, gt_cmd_predict, gt_cmd_synth;

int main(int argc, char **argv) {
    gt_task_register_builtins(); /* task/task_registry.h */
    gt_log_init_from_env();
    if (argc == 3 && !strcmp(argv[1], "report")) { /* eval_tool report RUN_DIR: rewrite the report only */
        int n = gt_report_write(argv[2], NULL);
        printf("report: %d plot(s)\n", n);
        return n < 0;
    }
    const gt_cmd *cmd = argc < 2                       ? NULL
                        : !strcmp(argv[1], "eval")    ? &gt_cmd_eval
                        : !strcmp(argv[1], "predict") ? &gt_cmd_predict
                        : !strcmp(argv[1], "train")   ? &gt_cmd_train
                        : !strcmp(argv[1], "synth")   ? &gt_cmd_synth
                                                      : NULL;
    if (!cmd) {
        fprintf(stderr, "usage: eval_tool eval|predict|train|synth ...\n");
        return GT_EXIT_USAGE;
    }
    gt_dist_init(&argc, &argv);
    gt_args a;
    gt_args_parse(&a, cmd, &gt_commands_keys, argc - 2, argv + 2);
    int rc = cmd->run(&a, MPI_COMM_WORLD);
    gt_args_free(&a);
    gt_dist_finalize();
    return rc;
}
