#include "core/rank.h"

static int g_rank = 0, g_size = 1;

void gt_set_rank(int rank, int size) { g_rank = rank; g_size = size; }
int gt_rank(void) { return g_rank; }
int gt_nranks(void) { return g_size; }
