/* nn/model_registry.h: the model kinds built into gridtrain, one line each.
 *
 * A kind is its own files (docs/design.md "How to add a model kind"):
 *   src/nn/model_<kind>.c                   gt_model_vtable_<kind> (nn/model.h)
 *   src/nn/ops/cuda/cuda_model_<kind>.cu    gt_cuda_kind_<kind> (nn/ops/cuda/cuda_model_impl.h)
 * and its line below. The order is the kinds' ids (gt_model_kind; the
 * constants GT_MODEL_S2P_CNN ... in nn/model.h follow it) and the order of
 * the choices of model.kind and bench.model. Everything else (the CLI's
 * rules, the planner, the bench, the device model) reads the kind's table. */
#ifndef GT_NN_MODEL_REGISTRY_H
#define GT_NN_MODEL_REGISTRY_H

#define GT_MODEL_KINDS(X) \
    X(s2p_cnn)            \
    X(s2p_tf)             \
    X(lstm)

/* Derived from the list: the count and the choices text "s2p_cnn|s2p_tf|lstm"
 * (GT_MODEL_KIND_CHOICES; a string constant, for static option tables). */
#define GT_MODEL_KIND_ONE_(k) +1
#define GT_MODEL_KINDS_BUILT_IN (0 GT_MODEL_KINDS(GT_MODEL_KIND_ONE_))
#define GT_MODEL_KIND_CHOICE_(k) "|" #k
#define GT_MODEL_KIND_CHOICES (&(GT_MODEL_KINDS(GT_MODEL_KIND_CHOICE_))[1])

#endif
