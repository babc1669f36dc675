// nn/ops/cuda/cuda_model_kinds.cu: the device-kind registry: each built-in
// kind's gt_cuda_kind (cuda_model_<kind>.cu), by the host kind's id
// (nn/model_registry.h).
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/cuda_model_impl.h"

// The device tables of the built-in kinds (nn/model_registry.h), by id.
#define GT_CUDA_KIND_ENTRY_(k) &gt_cuda_kind_##k,
static const gt_cuda_kind *const g_cuda_kinds[] = {GT_MODEL_KINDS(GT_CUDA_KIND_ENTRY_)};

const gt_cuda_kind *gt_cuda_kind_of(const gt_model_config *c) {
    const int k = (int)c->kind;
    const gt_cuda_kind *dk = k >= 0 && k < GT_MODEL_KINDS_BUILT_IN ? g_cuda_kinds[k] : nullptr;
    GT_CHECK(dk && !strcmp(dk->name, gt_model_kind_name(c->kind)), GT_EXIT_USAGE,
             "cuda model: model kind %s has no device model (train.device=cpu runs it on the host engine)",
             gt_model_kind_name(c->kind));
    return dk;
}

