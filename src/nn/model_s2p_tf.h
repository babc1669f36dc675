/* nn/model_s2p_tf.h: seq2point Transformer encoder, reached through the
 * generic API in nn/model.h (kind GT_MODEL_S2P_TF).
 *
 *   x (B, L, n_in)                                     n_in = 1 by default
 *   h = embed(x) + pos                                 Linear n_in -> d, pos (L, d)
 *   N pre-LayerNorm blocks:
 *     h += attn.proj(attention(attn.qkv(ln1(h))))      non-causal, n_heads heads
 *     h += mlp.fc2(gelu_tanh(mlp.fc1(ln2(h))))         d -> d_ff -> d
 *   pred (B, n_out) = head(ln_f(h[:, L/2]))            L/2 rounds down
 * Defaults: L = 512, d = 128, 4 heads, d_ff = 512, N = 8, n_out = 15,
 * max_batch 32; LayerNorm eps 1e-5.
 *
 * Attention is the flash-style op of nn/ops/attention.h, so activation memory
 * is linear in L: per block and token the model keeps the residual stream,
 * qkv, the attention output, the mid-block residual and the d_ff
 * pre-activation (6d + d_ff floats) plus per-row statistics; LayerNorm and
 * GELU outputs are recomputed in the backward pass. No L x L buffer exists.
 * The last block feeds only the midpoint vector to the head, so after its
 * keys and values it computes only that row (midpoint query, proj, MLP):
 * exact, and about 1/N of the work saved.
 *
 * Parameter table (PyTorch state_dict names of tests/nn/torch/gtmodels.py
 * S2pTf, layouts [out, in], in this order):
 *   embed.weight (d, n_in), embed.bias (d), pos (L, d),
 *   blocks.i.ln1.weight (d), blocks.i.ln1.bias (d),
 *   blocks.i.attn.qkv.weight (3d, d) (q, k, v stacked), blocks.i.attn.qkv.bias (3d),
 *   blocks.i.attn.proj.weight (d, d), blocks.i.attn.proj.bias (d),
 *   blocks.i.ln2.weight (d), blocks.i.ln2.bias (d),
 *   blocks.i.mlp.fc1.weight (d_ff, d), blocks.i.mlp.fc1.bias (d_ff),
 *   blocks.i.mlp.fc2.weight (d, d_ff), blocks.i.mlp.fc2.bias (d),
 *   ln_f.weight (d), ln_f.bias (d), head.weight (n_out, d), head.bias (n_out).
 * Init: Linear weights and biases U(+-1/sqrt(fan_in)) (PyTorch default),
 * pos N(0, 0.02^2), LayerNorm ones/zeros. Weight decay on 2-D tensors only. */
#ifndef GT_NN_MODEL_S2P_TF_H
#define GT_NN_MODEL_S2P_TF_H

#include "nn/model.h"

#define GT_S2P_TF_MAX_LAYERS 16
#define GT_S2P_TF_LN_EPS 1e-5f

extern const gt_model_vtable gt_model_vtable_s2p_tf;

#endif
