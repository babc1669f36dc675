/* nn/engine_impl.h: the constructors gt_engine_create dispatches to
 * (internal to nn/). Each fills e->i, e->host, e->grads_on_device, e->ctx. */
#ifndef GT_NN_ENGINE_IMPL_H
#define GT_NN_ENGINE_IMPL_H

#include "nn/engine.h"

void gt_engine_host_open(gt_engine *e, const gt_model_config *cfg); /* nn/engine_host.c */
#ifdef GT_HAVE_CUDA
void gt_engine_cuda_open(gt_engine *e, const gt_model_config *cfg); /* nn/engine_cuda.c (library gt_nn_cuda) */
#endif

#endif
