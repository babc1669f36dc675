#ifndef GT_CLI_CLI_H
#define GT_CLI_CLI_H
int gt_cli_main(int argc, char **argv);
#endif
