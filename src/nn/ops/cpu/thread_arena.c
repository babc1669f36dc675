/* nn/ops/cpu/thread_arena.c: one scratch buffer per thread (thread_arena.h). */
#include "nn/ops/cpu/thread_arena.h"

#include <stdlib.h>

#include "core/check.h"

static _Thread_local struct {
    char *p;
    size_t cap;
} t_arena;

char *gt_cpu_thread_arena(size_t bytes) {
    if (bytes > t_arena.cap) {
        free(t_arena.p);
        t_arena.cap = (bytes + 4095) / 4096 * 4096;
        t_arena.p = gt_aligned_alloc(64, t_arena.cap, __FILE__, __LINE__);
    }
    return t_arena.p;
}
