/* nn/ops/cpu/lstm_onednn.h: the LSTM layer in bf16 on oneDNN's LSTM primitive
 * (internal to nn/ops/cpu; nn/ops/cpu/lstm.c picks the route).
 *
 * Same maths, state rule and TBPTT gradient as gt_lstm_forward/backward
 * (nn/ops/lstm.h), with bf16 products and fp32 accumulation: oneDNN's
 * vanilla LSTM (gate order i, f, c~, o: the engine's i|f|g|o; weights given
 * as ldgoi, which is the engine's (4H, in) row-major; one bias b_ih + b_hh)
 * runs forward_training and backward with bf16 layer data and hidden states,
 * fp32 cell states, fp32 data gradients and fp32 weight gradients.
 *
 * Work split: the batch in one block of samples per thread of the engine's
 * pool (env GT_LSTM_BATCH_BLOCK: samples per block), the window in chunks of
 * GT_LSTM_ONEDNN_CHUNK steps (env GT_LSTM_CHUNK); one one-thread primitive
 * run per (block, chunk), the blocks as tasks of the engine's pool
 * (nn/ops/cpu/parallel.h; the weight gradients summed in block order, so the
 * results depend on the thread count only through the block split), the
 * chunks of a block in order: a
 * chunk starts from the (h, c) its predecessor ended with (the first chunk of
 * every window from zero: nothing is carried between calls), and in backward
 * gets its successor's dL/dh, dL/dc unless a TBPTT boundary lies between them
 * (then zero). TBPTT chunk lengths that the forward's chunks do not divide
 * make the backward run the forward again on chunks of exactly K steps.
 *
 * The forward keeps, per layer (keyed by the caller's `gates` buffer, which
 * it does not write), the bf16 input and output, the states at the chunk
 * edges and oneDNN's workspace (gate values: about 7 KiB per sample and step at
 * H = 128) until gt_lstm_release or the next forward on that buffer. */
#ifndef GT_NN_OPS_CPU_LSTM_ONEDNN_H
#define GT_NN_OPS_CPU_LSTM_ONEDNN_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the forward ran on oneDNN (bf16 precision, bf16 units, primitive
 * available); 0: nothing done, the caller runs its own route. */
int gt_lstm_onednn_forward(const float *key, float *h, const float *x, const float *w_ih, const float *w_hh,
                           const float *b_ih, const float *b_hh, int B, int T, int C, int H);
/* 1 when the last forward on `key` ran on oneDNN (with these x, weights, h and
 * shapes) and the backward was done here; 0: nothing done. */
int gt_lstm_onednn_backward(const float *key, float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh,
                            const float *dh, const float *x, const float *w_ih, const float *w_hh, const float *h,
                            int B, int T, int C, int H, int K);
/* Drops what is kept for `key` (its memory is freed). */
void gt_lstm_onednn_release(const float *key);

#ifdef __cplusplus
}
#endif
#endif
