#include "cli/cli.h"
int main(int argc, char **argv) { return gt_cli_main(argc, argv); }
