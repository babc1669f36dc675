/* core/hd.h: GT_HD marks a static inline function compiled for the host and,
 * under nvcc, for the device too: the per-element math the CPU and CUDA paths
 * share (random numbers, dropout masks, activations, fast exp). */
#ifndef GT_CORE_HD_H
#define GT_CORE_HD_H

#if defined(__CUDACC__)
#define GT_HD __host__ __device__
#else
#define GT_HD
#endif

#endif
