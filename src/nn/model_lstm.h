/* nn/model_lstm.h: LSTM next-step predictor (anomaly score = prediction
 * error), reached through the generic API in nn/model.h (kind GT_MODEL_LSTM).
 *
 *   x (B, T, C)                                   C = n_in (default 32), T = window
 *   h^0 = x; h^k = LSTM_k(h^{k-1})  k < n_layers  hidden H (default 128, 2 layers)
 *   pred (B, T, C) = head(h^{top})               Linear H -> C at every step
 * The prediction at step t is for the input at step t+1: only steps
 * t = 0..T-2 have a target (T-1 targets per sample); pred[:, T-1] is computed
 * (as PyTorch does) but has no target. The training loss is the mean over
 * B*(T-1)*C of (pred[b,t,c] - x[b,t+1,c])^2: use gt_model_lstm_loss(), or
 * gt_model_loss() with the y/mask of gt_model_lstm_targets() (same value).
 * n_out must equal n_in.
 *
 * Every window starts from a zero state (h, c) in every layer; nothing is
 * carried between batches. cfg.tbptt = K > 0 trains with truncated BPTT in
 * chunks of K steps (state carried forward as a constant, see
 * nn/ops/lstm.h for the exact gradient); 0 or >= T is full BPTT.
 *
 * Parameter table (nn.LSTM(batch_first=True) + nn.Linear state_dict names):
 *   lstm.weight_ih_l{k} (4H, in_k), lstm.weight_hh_l{k} (4H, H),
 *   lstm.bias_ih_l{k} (4H), lstm.bias_hh_l{k} (4H)   for k < n_layers
 *   (in_0 = C, in_k = H), then head.weight (C, H), head.bias (C).
 * Init as PyTorch: everything U(+-1/sqrt(H)). Weight decay on matrices only. */
#ifndef GT_NN_MODEL_LSTM_H
#define GT_NN_MODEL_LSTM_H

#include "nn/model.h"

#define GT_LSTM_MAX_LAYERS 8

extern const gt_model_vtable gt_model_vtable_lstm;

/* Next-step targets for gt_model_loss(): y (B,T,C) with y[:,t] = x[:,t+1]
 * for t < T-1 and 0 at t = T-1; mask (B,T,C) 1 except 0 at t = T-1.
 * x (B,T,C). Buffers owned by the caller. */
void gt_model_lstm_targets(float *y, float *mask, const float *x, int B, int T, int C);

/* Next-step MSE of the last forward against its own input (m->x):
 * sum_{b, t<T-1, c} (pred[b,t,c] - x[b,t+1,c])^2 / (B (T-1) C).
 * Writes m->dpred (0 at t = T-1) and m->loss like gt_model_loss; returns the loss. */
float gt_model_lstm_loss(gt_model *m);

/* Per-sample, per-step prediction error of the last forward, for anomaly
 * scoring: err (B, T-1), err[b,t] = mean_c (pred[b,t,c] - x[b,t+1,c])^2,
 * the error of predicting step t+1 from steps 0..t. Caller owns err. */
void gt_model_lstm_step_errors(const gt_model *m, float *err);

#endif
