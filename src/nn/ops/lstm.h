/* nn/ops/lstm.h: one LSTM layer over a whole window, with truncated BPTT.
 *
 * PyTorch nn.LSTM parameterisation and gate order (i, f, g, o):
 *   a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh          (4H), split as i|f|g|o
 *   i = sigmoid(a_i)  f = sigmoid(a_f)  g = tanh(a_g)  o = sigmoid(a_o)
 *   c_t = f * c_{t-1} + i * g        h_t = o * tanh(c_t)
 *   W_ih (4H,C), W_hh (4H,H), b_ih (4H), b_hh (4H).
 * The state is reset to zero at t = 0 of every call: (h_{-1}, c_{-1}) = 0 for
 * every window of every batch, nothing is carried between calls (a leaked
 * state would make a batch's result depend on the previous batch).
 *
 * Truncated BPTT with chunk length K (gt_lstm_backward): the window is cut
 * into chunks [0,K), [K,2K), ...; the forward pass is unchanged (the state
 * flows across chunk boundaries as a value), but the state entering each
 * chunk is treated as a constant. The gradient computed is therefore that of
 * the summed loss L = sum_t l_t(h_t) in which every chunk's initial state
 * (h_{kK-1}, c_{kK-1}) is replaced by a detached copy (PyTorch:
 * h, c = h.detach(), c.detach() between chunks, all chunk losses summed,
 * one optimizer step). Parameter gradients still use the carried state's
 * value (e.g. dW_hh gets dA_{kK}^T h_{kK-1}); only dL/dh and dL/dc stop at the
 * boundary. K <= 0 or K >= T is full BPTT; K = T equals it exactly.
 *
 * Conventions of nn/ops/ops.h: forward assigns, backward accumulates (+=)
 * parameter gradients and assigns activation gradients. fp32 (and bf16
 * without bf16 units): per-step recurrent GEMMs and the all-steps input GEMMs
 * through gt_gemm (at more than one thread: one block of samples per thread
 * of the engine's pool, nn/ops/cpu/lstm.c), nothing allocates. bf16 with bf16 units: oneDNN's LSTM
 * primitive (nn/ops/cpu/lstm_onednn.h), which keeps the layer's gate values
 * in its own workspace, keyed by the `gates` buffer (c and gates are then not
 * written; the backward must follow the forward on the same buffers, and
 * gt_lstm_release frees that memory). */
#ifndef GT_NN_OPS_LSTM_H
#define GT_NN_OPS_LSTM_H

#include <stddef.h>

#include "nn/ops/fast_exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------- per-element math --
 * One cell element. In: pre-activations ai, af, ag, ao and c_prev.
 * Out: activated gates written back over the pre-activations, c and h. */
static inline GT_HD void gt_lstm_cell_forward(float *ai, float *af, float *ag, float *ao, float c_prev,
                                              float *c, float *h) {
    float i = gt_sigmoidf(*ai), f = gt_sigmoidf(*af), g = gt_tanhf(*ag), o = gt_sigmoidf(*ao);
    float cc = f * c_prev + i * g;
    *ai = i; *af = f; *ag = g; *ao = o;
    *c = cc;
    *h = o * gt_tanhf(cc);
}

/* Backward of one cell element. In: activated gates i,f,g,o, c, c_prev, the
 * total dL/dh_t (dh) and dL/dc_t from step t+1 (*dc, through c_{t+1}).
 * Out: dL/da for the four pre-activations, and *dc = dL/dc_{t-1}. */
static inline GT_HD void gt_lstm_cell_backward(float *dai, float *daf, float *dag, float *dao, float *dc,
                                               float i, float f, float g, float o, float c,
                                               float c_prev, float dh) {
    float tc = gt_tanhf(c);
    float dct = *dc + dh * o * (1.0f - tc * tc);
    float d_o = dh * tc;
    *dai = dct * g * i * (1.0f - i);
    *daf = dct * c_prev * f * (1.0f - f);
    *dag = dct * i * (1.0f - g * g);
    *dao = d_o * o * (1.0f - o);
    *dc = dct * f;
}

/* ---------------------------------------------------------------- layer --
 * Forward over the window, state reset to zero at t = 0.
 *   h     (B,T,H)   assigned: hidden states h_t (the layer's output)
 *   c     (B,T,H)   assigned: cell states c_t (kept for backward)
 *   gates (B,T,4H)  assigned: activated gates i|f|g|o per step (for backward)
 *   x     (B,T,C)   input
 *   w_ih (4H,C), w_hh (4H,H), b_ih (4H), b_hh (4H); biases may be NULL. */
void gt_lstm_forward(float *h, float *c, float *gates, const float *x, const float *w_ih,
                     const float *w_hh, const float *b_ih, const float *b_hh, int B, int T, int C,
                     int H);

/* Floats of `scratch` gt_lstm_backward needs: 2*B*H + 4*H (running dL/dh, dL/dc; bias sums). */
size_t gt_lstm_scratch_elems(int B, int H);

/* Backward (truncated BPTT with chunk K, see above).
 *   dx     (B,T,C)   assigned (=); NULL to skip (first layer)
 *   dw_ih (4H,C), dw_hh (4H,H), db_ih (4H), db_hh (4H)  accumulated (+=); db_* may be NULL
 *   dgates (B,T,4H)  assigned: dL/d(pre-activations) per step (workspace, may be read after)
 *   scratch          gt_lstm_scratch_elems(B,H) floats, clobbered
 *   dh     (B,T,H)   in: dL/dh_t from outside the recurrence (head, next layer) for every t
 *   x, w_ih, w_hh, h, c, gates: as in / from gt_lstm_forward
 *   K      TBPTT chunk length; K <= 0 or K >= T: full BPTT. */
void gt_lstm_backward(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh,
                      float *dgates, float *scratch, const float *dh, const float *x,
                      const float *w_ih, const float *w_hh, const float *h, const float *c,
                      const float *gates, int B, int T, int C, int H, int K);

/* Frees what a bf16 forward on `gates` kept (oneDNN's workspace); nothing otherwise. */
void gt_lstm_release(const float *gates);

#ifdef __cplusplus
}
#endif
#endif
