/* tests/import/import_tool.c: runs `import` or `inspect` exactly as the gridtrain
 * dispatcher does (option tables, MPI set-up, abort handler), so the import
 * tests work before `import` is registered in cli/commands.c.
 *   gt_import_tool import ukdale|redd|refit|care SRC -o OUT [options]
 *   gt_import_tool inspect FILE [options] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/log.h"
#include "dist/comm.h"

extern const gt_cmd gt_cmd_import;

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: gt_import_tool import|inspect ...\n");
        return 2;
    }
    const gt_cmd *cmd = !strcmp(argv[1], "import") ? &gt_cmd_import : !strcmp(argv[1], "inspect") ? &gt_cmd_inspect : NULL;
    if (!cmd) {
        fprintf(stderr, "gt_import_tool: unknown command '%s'\n", argv[1]);
        return 2;
    }
    gt_log_init_from_env();
    gt_dist_init(&argc, &argv);
    gt_args a;
    gt_args_parse(&a, cmd, &gt_commands_keys, argc - 2, argv + 2);
    int rc = cmd->run(&a, MPI_COMM_WORLD);
    gt_args_free(&a);
    gt_dist_finalize();
    return rc;
}
