/* nn/model_s2p_cnn.h: seq2point CNN (Zhang et al. 2018) with a multi-appliance
 * head, reached through the generic API in nn/model.h (kind GT_MODEL_S2P_CNN).
 *
 *   x (B, n_in, W)                                   n_in = 1 by default
 *   conv.l: Conv1d(C_{l-1} -> C_l, K_l, padding 'same') + ReLU, l < n_layers
 *           (defaults C = 30,30,40,50,50, K = 10,8,6,5,5)
 *   flatten (B, C_last * W), channel-major (PyTorch x.flatten(1) of (B,C,W))
 *   fc1: Linear(C_last * W -> hidden) + ReLU      (hidden default 1024)
 *   dropout(cfg.dropout) on fc1's output, training forwards only (inverted:
 *     kept elements x 1/(1-p); nn/ops/dropout.h keys the masks)
 *   fc2: Linear(hidden -> n_out)                  (n_out default 15)
 *   pred (B, n_out)
 *
 * Parameter table (PyTorch state_dict names and layouts, in this order):
 *   conv.l.weight (C_l, C_{l-1}, K_l), conv.l.bias (C_l) for each l,
 *   fc1.weight (hidden, C_last*W), fc1.bias (hidden),
 *   fc2.weight (n_out, hidden), fc2.bias (n_out).
 * Init as PyTorch's defaults: weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
 * fan_in = C_{l-1} * K_l for conv, in_features for linear. Weight decay flag
 * on weights only. */
#ifndef GT_NN_MODEL_S2P_CNN_H
#define GT_NN_MODEL_S2P_CNN_H

#include "nn/model.h"

extern const gt_model_vtable gt_model_vtable_s2p_cnn;

#endif
