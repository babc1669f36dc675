#!/usr/bin/env python3
"""PyTorch peer of gt_gpu_bench: the same three models and shapes on the same
GPU, PyTorch's best eager path (bf16 autocast, scaled_dot_product_attention
(flash), cuDNN LSTM, fused AdamW, clip_grad_norm_ 1.0). Prints one
"GT_GPU_BENCH impl=torch ..." line per model; tests/gpu/run.sh computes the
ratios. Usage: peer_torch.py [--steps N] [--warmup N] [--only KIND] [--amp bf16|fp32]
Exit 77 when torch or a GPU is missing."""
import argparse
import math
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("peer_torch: torch not importable", file=sys.stderr)
    sys.exit(77)


class S2pCnn(nn.Module):  # nn/model_s2p_cnn.h defaults
    def __init__(self, W=599, A=15, hidden=1024, ch=(30, 30, 40, 50, 50), ks=(10, 8, 6, 5, 5)):
        super().__init__()
        layers, cin = [], 1
        for c, k in zip(ch, ks):
            layers.append(nn.Conv1d(cin, c, k, padding="same"))
            cin = c
        self.conv = nn.ModuleList(layers)
        self.fc1 = nn.Linear(cin * W, hidden)
        self.fc2 = nn.Linear(hidden, A)

    def forward(self, x):  # x (B,1,W)
        for c in self.conv:
            x = F.relu(c(x))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, d, nh, ff):
        super().__init__()
        self.nh = nh
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, h):
        B, L, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).split(d, dim=2)
        q, k, v = (t.view(B, L, self.nh, d // self.nh).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, L, d)
        h = h + self.proj(a)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate="tanh"))


class S2pTf(nn.Module):  # nn/model_s2p_tf.h defaults, window 4096
    def __init__(self, L=4096, d=128, nh=4, ff=512, N=8, A=15):
        super().__init__()
        self.embed = nn.Linear(1, d)
        self.pos = nn.Parameter(0.02 * torch.randn(L, d))
        self.blocks = nn.ModuleList([Block(d, nh, ff) for _ in range(N)])
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, A)

    def forward(self, x):  # x (B,L,1)
        h = self.embed(x) + self.pos
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln_f(h[:, h.shape[1] // 2]))


class Lstm(nn.Module):  # nn/model_lstm.h defaults
    def __init__(self, C=32, H=128, NL=2):
        super().__init__()
        self.lstm = nn.LSTM(C, H, NL, batch_first=True)
        self.head = nn.Linear(H, C)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def bench(kind, model, x, y, B, window, steps, warmup, amp):
    dev = x.device
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    dtype = torch.bfloat16 if amp == "bf16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype is not None):
            pred = model(x)
            if kind == "lstm":
                loss = F.mse_loss(pred[:, :-1].float(), x[:, 1:])
            else:
                loss = F.mse_loss(pred.float(), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(warmup):
        l0 = step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for _ in range(steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        l1 = step()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    med = times[len(times) // 2]
    peak = torch.cuda.max_memory_allocated(dev) / 1048576.0
    print(f"GT_GPU_BENCH impl=torch kind={kind} B={B} window={window} amp={amp} graph=0 ms_step={med:.3f} "
          f"ms_mean={sum(times) / len(times):.3f} samples_per_s={B / (med * 1e-3):.1f} peak_mib={peak:.1f} "
          f"loss_first={float(l0):.5g} loss_last={float(l1):.5g}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default=None)
    ap.add_argument("--amp", default="bf16", choices=["bf16", "fp32"])
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("peer_torch: no CUDA device", file=sys.stderr)
        sys.exit(77)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"peer_torch: torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cuDNN "
          f"{torch.backends.cudnn.version()}", flush=True)
    rc = 0
    cases = [("s2p_tf", 8, 4096), ("lstm", 64, 512), ("s2p_cnn", 256, 599)]
    for kind, B, win in cases:
        if a.only and a.only != kind:
            continue
        try:
            if kind == "s2p_tf":
                m, x, y = S2pTf(L=win), torch.randn(B, win, 1), torch.rand(B, 15)
            elif kind == "lstm":
                m, x, y = Lstm(), torch.randn(B, win, 32), None
            else:
                m, x, y = S2pCnn(W=win), torch.randn(B, 1, win), torch.rand(B, 15)
            m = m.to(dev)
            x = x.to(dev)
            y = y.to(dev) if y is not None else None
            bench(kind, m, x, y, B, win, a.steps, a.warmup, a.amp)
            del m, x, y
            torch.cuda.empty_cache()
        except Exception as e:  # report and go on with the next model
            print(f"peer_torch: {kind} failed: {e}", file=sys.stderr)
            rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()
