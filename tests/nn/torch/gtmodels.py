"""PyTorch twins of gridtrain's three CPU-engine models, written from the
model contract (not from the C code), used by the parity test
(torch_parity.py) and the side-by-side benchmark (peer_bench.py).

state_dict names equal gridtrain's parameter table names (model.h: "PyTorch
state_dict names and layouts"), so weights map one to one.

  S2pCnn  x (B, n_in, W) -> (B, A)
  S2pTf   x (B, L, n_in) -> (B, A)
  Lstm    x (B, T, C)    -> (B, T, C)   prediction of x[:, t+1] at step t
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class S2pCnn(nn.Module):
    """Conv1d stack, each ReLU, 'same' padding (left (k-1)//2, right k//2),
    channel-major flatten, fc1 + ReLU, fc2."""

    def __init__(self, window=599, n_in=1, n_out=15, channels=(30, 30, 40, 50, 50),
                 kernels=(10, 8, 6, 5, 5), hidden=1024):
        super().__init__()
        self.kernels = list(kernels)
        chans = [n_in] + list(channels)
        self.conv = nn.ModuleList(
            nn.Conv1d(chans[i], chans[i + 1], kernels[i]) for i in range(len(kernels)))
        self.fc1 = nn.Linear(chans[-1] * window, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        for conv, k in zip(self.conv, self.kernels):
            x = F.relu(conv(F.pad(x, ((k - 1) // 2, k // 2))))
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


class Attention(nn.Module):
    """Non-causal multi-head self-attention; qkv one Linear d -> 3d, q|k|v.
    sdpa: the product through F.scaled_dot_product_attention (PyTorch >= 2,
    its fused CPU kernel) instead of the explicit softmax(QK^T / sqrt(hs)) V."""

    def __init__(self, d, n_heads, sdpa=False):
        super().__init__()
        self.n_heads = n_heads
        self.sdpa = sdpa
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, L, d = x.shape
        hs = d // self.n_heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(B, L, self.n_heads, hs).transpose(1, 2)
        k = k.view(B, L, self.n_heads, hs).transpose(1, 2)
        v = v.view(B, L, self.n_heads, hs).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, L, d)
            return self.proj(y)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, L, d)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    """Pre-LN: x += attn(ln1(x)); x += mlp(ln2(x))."""

    def __init__(self, d, n_heads, d_ff, eps, sdpa=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, n_heads, sdpa)
        self.ln2 = nn.LayerNorm(d, eps=eps)
        self.mlp = Mlp(d, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class S2pTf(nn.Module):
    """Linear n_in -> d plus learned positional embedding (L, d), N blocks,
    final LayerNorm, the vector at position L//2 -> Linear d -> A.
    sdpa: attention through F.scaled_dot_product_attention (see Attention)."""

    def __init__(self, window=512, n_in=1, n_out=15, d_model=128, n_heads=4, d_ff=512,
                 n_layers=8, eps=1e-5, sdpa=False):
        super().__init__()
        self.embed = nn.Linear(n_in, d_model)
        self.pos = nn.Parameter(torch.randn(window, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff, eps, sdpa) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model, eps=eps)
        self.head = nn.Linear(d_model, n_out)

    def forward(self, x):
        h = self.embed(x) + self.pos
        for blk in self.blocks:
            h = blk(h)
        h = self.ln_f(h)
        return self.head(h[:, h.shape[1] // 2])


class Lstm(nn.Module):
    """Stacked nn.LSTM (batch_first) + Linear H -> C at every step.
    tbptt K > 0: the window is run in chunks of K steps and the state entering
    each chunk is detached (state reset to zero per batch)."""

    def __init__(self, n_in=32, hidden=128, n_layers=2, n_out=None, tbptt=0):
        super().__init__()
        self.tbptt = tbptt
        self.lstm = nn.LSTM(n_in, hidden, num_layers=n_layers, batch_first=True)
        self.head = nn.Linear(hidden, n_out or n_in)

    def forward(self, x):
        T = x.shape[1]
        K = self.tbptt if 0 < self.tbptt < T else T
        state, outs = None, []
        for t0 in range(0, T, K):
            out, state = self.lstm(x[:, t0:t0 + K], state)
            if t0 + K < T:
                state = tuple(s.detach() for s in state)
            outs.append(out)
        return self.head(torch.cat(outs, dim=1))


def lstm_loss(pred, x):
    """Next-step MSE: pred at step t vs x at t+1 (T-1 targets), mean."""
    return F.mse_loss(pred[:, :-1], x[:, 1:])
