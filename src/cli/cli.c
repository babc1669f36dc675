#include "cli/cli.h"
#include <stdio.h>
int gt_cli_main(int argc, char **argv) { (void)argc; (void)argv; puts("gridtrain"); return 0; }
