/* nn/ops/cpu/thread_arena.h: the calling thread's scratch for the fused
 * kernels' packed copies and tiles (attention_avx2.c, attention_vnni.h). */
#ifndef GT_NN_OPS_CPU_THREAD_ARENA_H
#define GT_NN_OPS_CPU_THREAD_ARENA_H

#include <stddef.h>

/* at least `bytes`, 64-byte aligned, grown once (in 4 KiB steps) and kept for
 * the thread's next call; its contents do not survive the next call of any
 * kernel on this thread */
char *gt_cpu_thread_arena(size_t bytes);

#endif
