/* tests/train/train_tool.c: `gridtrain train` / `gridtrain bench train` for the
 * script tests, runnable before the lead registers gt_cmd_train in
 * cli/commands.c (same dispatch as cli/cli.c: MPI set-up, parse, run, event
 * table, finalize).
 *   train_tool train CONFIG|--resume RUN_DIR [section.key=value ...]
 *   train_tool bench CONFIG [--reps N] */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/check.h"
#include "core/log.h"
#include "dist/comm.h"
#include "task/task_registry.h"
#include "train/bench_train.h"

extern const gt_cmd gt_cmd_train;

int main(int argc, char **argv) {
    gt_log_init_from_env();
    if (argc < 2 || (strcmp(argv[1], "train") && strcmp(argv[1], "bench"))) {
        fprintf(stderr, "usage: train_tool train|bench ...\n");
        return GT_EXIT_USAGE;
    }
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    int rc;
    if (!strcmp(argv[1], "bench")) {
        /* bench's own table (bench.reps) with positionals "train CONFIG" */
        char *av[16];
        int n = 0;
        av[n++] = "train";
        for (int i = 2; i < argc && n < 15; i++) av[n++] = argv[i];
        gt_args a;
        gt_args_parse(&a, &gt_cmd_bench, &gt_commands_keys, n, av);
        rc = gt_bench_train(&a, MPI_COMM_WORLD);
        gt_args_free(&a);
    } else {
        gt_args a;
        gt_args_parse(&a, &gt_cmd_train, &gt_commands_keys, argc - 2, argv + 2);
        rc = gt_cmd_train.run(&a, MPI_COMM_WORLD);
        gt_args_free(&a);
    }
    if (gt_log_level() <= GT_LOG_INFO) gt_dist_event_table(MPI_COMM_WORLD, stderr);
    gt_dist_finalize();
    return rc;
}
