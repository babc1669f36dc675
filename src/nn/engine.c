/* nn/engine.c: the engine kinds, creation and the calls every engine shares
 * (see engine.h); the tables are in engine_host.c and engine_cuda.c. */
#include "nn/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/engine_impl.h"

static const char *const g_kind_names[GT_ENGINE_KIND_COUNT] = {
    "host",
#ifdef GT_HAVE_CUDA
    "cuda",
#endif
};

const char *gt_engine_kind_name(gt_engine_kind kind) {
    return (unsigned)kind < GT_ENGINE_KIND_COUNT ? g_kind_names[kind] : "?";
}

int gt_engine_kind_parse(const char *name) {
    for (int k = 0; k < GT_ENGINE_KIND_COUNT; k++)
        if (name && !strcmp(name, g_kind_names[k])) return k;
    return -1;
}

gt_engine *gt_engine_create(gt_engine_kind kind, const gt_model_config *cfg) {
    GT_CHECK((unsigned)kind < GT_ENGINE_KIND_COUNT, GT_EXIT_USAGE, "engine kind %d is not built into this binary",
             (int)kind);
    gt_engine *e = GT_CALLOC(1, sizeof *e);
    e->kind = kind;
    switch (kind) {
#ifdef GT_HAVE_CUDA
    case GT_ENGINE_CUDA: gt_engine_cuda_open(e, cfg); break;
#endif
    default: gt_engine_host_open(e, cfg); break;
    }
    return e;
}

void gt_engine_free(gt_engine *e) {
    if (!e) return;
    e->i->free(e);
    free(e);
}

void gt_engine_init(gt_engine *e, uint64_t seed) {
    gt_model_init(e->host, seed);
    gt_engine_push_state(e);
}
