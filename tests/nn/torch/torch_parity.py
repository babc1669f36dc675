#!/usr/bin/python3
"""PyTorch side of gridtrain's golden parity test (tests/nn/torch).

usage: torch_parity.py IN.bin OUT.bin

IN (written by test_torch_parity.c, format in gtrecords.py):
  cfg.<field> (i32 scalars), param.<name> (f32, gridtrain's table order and
  PyTorch layout), decay (i32, one flag per tensor), x, y, [mask] (f32),
  loss_kind (i32: 0 masked MSE of pred vs y, 1 lstm next-step MSE on x),
  cgrad.<name> (f32: gridtrain's gradients, fed to torch.optim.AdamW),
  adamw (f64: lr, beta1, beta2, eps, weight_decay).
OUT:
  pred, loss, grad.<name> (f64: forward/backward of the model in float64 with
  the float32 weights and inputs: an independent reference),
  adam1.<name>, adam2.<name> (f32: parameters after one and two
  torch.optim.AdamW steps in float32 from param.* with gradients cgrad and
  then -0.5 * cgrad; tensors with decay = 0 in a weight_decay = 0 group).
Exits 77 when torch cannot be imported.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: cannot import torch/numpy: {e}", file=sys.stderr)
    sys.exit(77)

import gtmodels
from gtrecords import read_records, write_records

KIND_S2P_CNN, KIND_S2P_TF, KIND_LSTM = 0, 1, 2


def cfg_int(rec, name):
    return int(rec["cfg." + name].reshape(-1)[0])


def build(rec):
    kind = cfg_int(rec, "kind")
    g = lambda n: cfg_int(rec, n)  # noqa: E731
    if kind == KIND_S2P_CNN:
        L = g("n_layers")
        ch = [int(v) for v in rec["cfg.conv_channels"][:L]]
        ks = [int(v) for v in rec["cfg.conv_kernels"][:L]]
        return gtmodels.S2pCnn(g("window"), g("n_in"), g("n_out"), ch, ks, g("hidden"))
    if kind == KIND_S2P_TF:
        eps = float(rec["cfg.ln_eps"].reshape(-1)[0]) if "cfg.ln_eps" in rec else 1e-5
        return gtmodels.S2pTf(g("window"), g("n_in"), g("n_out"), g("d_model"), g("n_heads"),
                              g("d_ff"), g("n_layers"), eps)
    if kind == KIND_LSTM:
        return gtmodels.Lstm(g("n_in"), g("hidden"), g("n_layers"), g("n_out"), g("tbptt"))
    raise ValueError(f"unknown model kind {kind}")


def main():
    torch.set_num_threads(1)
    rec = read_records(sys.argv[1])
    names = [k[len("param."):] for k in rec if k.startswith("param.")]
    decay = rec["decay"].reshape(-1)
    model = build(rec)
    sd = model.state_dict()
    missing = [n for n in names if n not in sd]
    extra = [n for n in sd if n not in names]
    if missing or extra:
        print(f"parameter names differ: gridtrain-only {missing}, torch-only {extra}", file=sys.stderr)
        sys.exit(2)
    for n in names:
        if tuple(sd[n].shape) != rec["param." + n].shape:
            print(f"{n}: gridtrain shape {rec['param.' + n].shape}, torch {tuple(sd[n].shape)}",
                  file=sys.stderr)
            sys.exit(2)

    # ---- forward/backward reference in float64
    model = model.double()
    model.load_state_dict({n: torch.from_numpy(rec["param." + n].astype(np.float64)) for n in names})
    x = torch.from_numpy(rec["x"].astype(np.float64))
    pred = model(x)
    loss_kind = int(rec["loss_kind"].reshape(-1)[0])
    if loss_kind == 1:
        loss = gtmodels.lstm_loss(pred, x)
    else:
        y = torch.from_numpy(rec["y"].astype(np.float64)).reshape(pred.shape)
        mask = (torch.from_numpy(rec["mask"].astype(np.float64)).reshape(pred.shape)
                if "mask" in rec else torch.ones_like(pred))
        loss = (((pred - y) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)
    loss.backward()
    params = dict(model.named_parameters())
    out = [("pred", pred.detach().numpy().astype(np.float64)),
           ("loss", np.array([loss.item()], dtype=np.float64))]
    out += [("grad." + n, params[n].grad.numpy().astype(np.float64)) for n in names]

    # ---- AdamW in float32 with gridtrain's gradients
    lr, b1, b2, eps, wd = (float(v) for v in rec["adamw"].reshape(-1))
    ps = {n: torch.nn.Parameter(torch.from_numpy(rec["param." + n].copy())) for n in names}
    groups = [{"params": [ps[n] for i, n in enumerate(names) if decay[i]], "weight_decay": wd},
              {"params": [ps[n] for i, n in enumerate(names) if not decay[i]], "weight_decay": 0.0}]
    groups = [gr for gr in groups if gr["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(b1, b2), eps=eps)
    for step, scale in ((1, 1.0), (2, -0.5)):
        for n in names:
            ps[n].grad = torch.from_numpy(rec["cgrad." + n].copy()) * scale
        opt.step()
        out += [(f"adam{step}." + n, ps[n].detach().numpy().copy()) for n in names]
    write_records(sys.argv[2], out)


if __name__ == "__main__":
    main()
