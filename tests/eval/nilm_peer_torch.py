#!/usr/bin/python3
"""tests/eval/nilm_peer_torch.py: the quality peer for NILM. A standard
PyTorch seq2point recipe (Zhang et al. 2018, as nilmtk-contrib implements it)
trained on the same gridtrain file, with the same chronological splits and
held-out households, for a given wall time, then scored with gridtrain's
metric definitions (docs/evaluation.md) on every test row; with --compare it
prints the per-appliance table beside a gridtrain run's eval.json.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 tests/eval/nilm_peer_torch.py DATA.h5 \\
        --minutes 6 --window 599 --holdout-every 4 --compare RUN_DIR/eval.json

The recipe: short holes of the aggregate filled by linear interpolation (up
to --fill-periods rows, as gridtrain's data.fill_max_s = auto), windows of
--window rows whose midpoint target is each appliance's power (NaN targets
masked), inputs and targets standardised with training-split statistics,
five convolutions (30x10, 30x8, 40x6, 50x5, 50x5, ReLU, no padding) and a
dense layer of 1024 (ReLU) to one output per appliance, masked MSE, Adam
(lr 1e-3), random training windows in batches of --batch, the weights of the
best validation loss kept (checked every --eval-every steps). The training
step runs PyTorch's fastest CPU recipe here (--recipe best, the default):
before the timed training, --probe-steps steps of each of fp32 eager, bf16
autocast (torch.autocast("cpu", dtype=torch.bfloat16) around forward and
loss) and, on PyTorch >= 2, torch.compile of each, are timed after their
warm-up (compile included there, not in --minutes); the fastest trains, from
the same initial weights; a recipe that fails (a compile error) is reported
and left out. --recipe fp32|bf16|fp32+compile|bf16+compile fixes one.
Validation and scoring run the fp32 eager model (fp32 master weights in
every recipe). Predictions are
clipped to [0, max_power_w]. Metrics: per appliance and overall EA =
1 - sum|yhat - y| / (2 sum y), on/off F1 with on = power > on_power_w, MAE;
over test rows of the training households (after split_train + split_val)
and every row of the held-out households, at stride 1.
"""
import argparse
import contextlib
import copy
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import h5py
    import numpy as np
    import torch
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)


def fill_holes(x, max_rows):
    x = x.copy()
    bad = ~np.isfinite(x)
    i, n = 0, len(x)
    while i < n:
        if not bad[i]:
            i += 1
            continue
        j = i
        while j < n and bad[j]:
            j += 1
        if i > 0 and j < n and j - i <= max_rows:
            a, b = x[i - 1], x[j]
            x[i:j] = a + (b - a) * np.arange(1, j - i + 1) / (j - i + 1)
        i = j
    return x


def split_rows(n, fi, tr, va, every):
    hold = every > 0 and fi % every == every - 1
    b1, b2 = min(n, int(round(tr * n))), min(n, int(round((tr + va) * n)))
    return hold, b1, max(b1, b2)


class Seq2Point(torch.nn.Module):
    def __init__(self, W, A):
        super().__init__()
        ch, ks = [1, 30, 30, 40, 50, 50], [10, 8, 6, 5, 5]
        self.convs = torch.nn.ModuleList(torch.nn.Conv1d(ch[i], ch[i + 1], ks[i]) for i in range(5))
        L = W - sum(k - 1 for k in ks)
        self.fc1 = torch.nn.Linear(50 * L, 1024)
        self.out = torch.nn.Linear(1024, A)

    def forward(self, x):  # (B, W)
        h = x[:, None, :]
        for c in self.convs:
            h = torch.relu(c(h))
        return self.out(torch.relu(self.fc1(h.flatten(1))))


def choose_recipe(net, a, next_batch):
    """The training recipe: a.recipe, or with 'best' the fastest of those this
    torch runs, timed on a.probe_steps steps each (after warm-up) from the
    same initial weights, which are restored afterwards. Returns
    (forward callable, recipe name, {recipe: steps/s or the failure})."""
    names = [a.recipe] if a.recipe != "best" else ["fp32", "bf16"]
    if a.recipe == "best" and int(torch.__version__.split(".")[0]) >= 2 and hasattr(torch, "compile"):
        names += ["fp32+compile", "bf16+compile"]
    if len(names) == 1 and "compile" not in names[0]:
        return net, names[0], {}
    init = copy.deepcopy(net.state_dict())
    probe, fwds = {}, {}
    for name in names:
        fwd = net
        amp = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if name.startswith("bf16") else \
            contextlib.nullcontext
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        try:
            if "compile" in name:
                fwd = torch.compile(net)
            for i in range(3 + a.probe_steps):
                if i == 3:
                    t0 = time.perf_counter()
                X, Y, M = next_batch()
                with amp():
                    loss = (((fwd(X) - Y) ** 2) * M).sum() / M.sum().clamp(min=1.0)
                opt.zero_grad()
                loss.backward()
                opt.step()
            probe[name] = a.probe_steps / (time.perf_counter() - t0)
            fwds[name] = fwd
        except Exception as e:  # noqa: BLE001 -- a recipe that fails is reported and left out
            msg = str(e).strip().splitlines()
            probe[name] = f"failed: {type(e).__name__}: {msg[0] if msg else ''}"[:300]
        net.load_state_dict(init)
    ok = {k: v for k, v in probe.items() if not isinstance(v, str)}
    if not ok:
        raise SystemExit(f"nilm_peer_torch: no training recipe runs: {probe}")
    name = max(ok, key=ok.get)
    print("peer recipe: " + name + " (" + ", ".join(
        f"{k} {v:.2f} steps/s" if not isinstance(v, str) else f"{k} {v}" for k, v in probe.items()) + ")", flush=True)
    return fwds[name], name, probe


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--minutes", type=float, default=6)
    ap.add_argument("--window", type=int, default=599)
    ap.add_argument("--split-train", type=float, default=0.7)
    ap.add_argument("--split-val", type=float, default=0.15)
    ap.add_argument("--holdout-every", type=int, default=0)
    ap.add_argument("--fill-periods", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--compare", default="", help="a gridtrain eval.json to print beside")
    ap.add_argument("--recipe", default="best", choices=["best", "fp32", "bf16", "fp32+compile", "bf16+compile"])
    ap.add_argument("--probe-steps", type=int, default=20, help="--recipe best: timed steps per recipe")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rng = np.random.default_rng(a.seed)
    W, half = a.window, a.window // 2
    with h5py.File(a.data, "r") as f:
        agg_all = f["aggregate"][:].astype(np.float64)
        app_all = f["appliances"][:].astype(np.float64)
        off = f["households/row_offset"][:]
        names = [n.decode() for n in f["appliance_meta/name"][:]]
        on_w = f["appliance_meta/on_power_w"][:]
        max_w = f["appliance_meta/max_power_w"][:]
    H, A = len(off) - 1, len(names)
    houses = []
    for h in range(H):
        r0, r1 = off[h], off[h + 1]
        x = fill_holes(agg_all[r0:r1], a.fill_periods)
        hold, b1, b2 = split_rows(r1 - r0, h, a.split_train, a.split_val, a.holdout_every)
        houses.append(dict(x=x, y=app_all[r0:r1], hold=hold, b1=b1, b2=b2, n=r1 - r0))

    def mids(h, lo, hi):  # window midpoints whose window lies in [lo, hi) and whose input is finite
        x = h["x"]
        ok = np.isfinite(x).astype(np.int64)
        cs = np.concatenate([[0], np.cumsum(ok)])
        m = np.arange(lo + half, hi - half)
        if len(m) == 0:
            return m
        return m[(cs[m + half + 1] - cs[m - half]) == W]

    train = [(i, mids(h, 0, h["b1"])) for i, h in enumerate(houses) if not h["hold"]]
    val = [(i, mids(h, h["b1"], h["b2"])) for i, h in enumerate(houses) if not h["hold"]]
    xs = np.concatenate([houses[i]["x"][: houses[i]["b1"]] for i, _ in train])
    ys = np.concatenate([houses[i]["y"][: houses[i]["b1"]] for i, _ in train])
    xm, xsd = np.nanmean(xs), np.nanstd(xs) or 1.0
    ym, ysd = np.nanmean(ys, axis=0), np.nanstd(ys, axis=0)
    ysd[~(ysd > 0)] = 1.0
    ym[~np.isfinite(ym)] = 0.0
    pool = np.concatenate([np.stack([np.full(len(m), i), m], 1) for i, m in train if len(m)])

    def batch(pairs):
        X = np.stack([(houses[i]["x"][m - half: m + half + 1] - xm) / xsd for i, m in pairs])
        Y = np.stack([houses[i]["y"][m] for i, m in pairs])
        M = np.isfinite(Y)
        Y = np.where(M, (Y - ym) / ysd, 0.0)
        return (torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32),
                torch.tensor(M, dtype=torch.float32))

    net = Seq2Point(W, A)
    prng = np.random.default_rng(a.seed + 1)  # the probe's batches leave the training's draws as they were
    fwd, recipe, probe = choose_recipe(net, a, lambda: batch(pool[prng.integers(0, len(pool), a.batch)]))
    amp = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if recipe.startswith("bf16") else contextlib.nullcontext
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    vpairs = np.concatenate([np.stack([np.full(len(m), i), m], 1) for i, m in val if len(m)])
    vpairs = vpairs[rng.choice(len(vpairs), size=min(len(vpairs), 4096), replace=False)]

    def val_loss():
        net.eval()
        s = c = 0.0
        with torch.no_grad():
            for k in range(0, len(vpairs), 512):
                X, Y, M = batch(vpairs[k:k + 512])
                s += float((((net(X) - Y) ** 2) * M).sum())
                c += float(M.sum())
        net.train()
        return s / max(c, 1.0)

    t_end = time.time() + 60 * a.minutes
    step, best, best_state = 0, float("inf"), None
    while time.time() < t_end:
        X, Y, M = batch(pool[rng.integers(0, len(pool), a.batch)])
        with amp():
            loss = (((fwd(X) - Y) ** 2) * M).sum() / M.sum().clamp(min=1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % a.eval_every == 0:
            v = val_loss()
            if v < best:
                best, best_state = v, {k: t.clone() for k, t in net.state_dict().items()}
    v = val_loss()
    if v < best or best_state is None:
        best, best_state = v, {k: t.clone() for k, t in net.state_dict().items()}
    net.load_state_dict(best_state)
    net.eval()

    def score(which):
        acc = {k: np.zeros(A) for k in ("abs", "y", "tp", "fp", "fn", "n")}
        for h in houses:
            if (which == "holdout") != h["hold"]:
                continue
            lo = 0 if h["hold"] else h["b2"]
            m = mids(h, lo, h["n"])
            for k in range(0, len(m), 1024):
                mm = m[k:k + 1024]
                X = torch.tensor(np.stack([(h["x"][c - half: c + half + 1] - xm) / xsd for c in mm]), dtype=torch.float32)
                with torch.no_grad():
                    p = net(X).numpy() * ysd + ym
                p = np.clip(p, 0, max_w)
                y = h["y"][mm]
                ok = np.isfinite(y)
                e = np.where(ok, np.abs(p - y), 0)
                acc["abs"] += e.sum(0)
                acc["y"] += np.where(ok, y, 0).sum(0)
                on_t, on_p = (y > on_w) & ok, (p > on_w) & ok
                acc["tp"] += (on_t & on_p).sum(0)
                acc["fp"] += (~on_t & on_p & ok).sum(0)
                acc["fn"] += (on_t & ~on_p).sum(0)
                acc["n"] += ok.sum(0)
        if acc["n"].sum() == 0:
            return None
        per = []
        for j in range(A):
            f1 = 2 * acc["tp"][j] / (2 * acc["tp"][j] + acc["fp"][j] + acc["fn"][j]) if acc["tp"][j] + acc["fn"][j] else None
            ea = 1 - acc["abs"][j] / (2 * acc["y"][j]) if acc["y"][j] > 0 else None
            per.append(dict(name=names[j], f1=f1, ea=ea, mae_w=acc["abs"][j] / max(acc["n"][j], 1)))
        tp, fp, fn = acc["tp"].sum(), acc["fp"].sum(), acc["fn"].sum()
        overall = dict(ea=1 - acc["abs"].sum() / (2 * acc["y"].sum()), f1=2 * tp / (2 * tp + fp + fn) if tp + fn else None)
        return dict(overall=overall, appliances=per)

    res = dict(peer="pytorch seq2point (Zhang et al. 2018)", minutes=a.minutes, steps=step, best_val_loss=best,
               torch=torch.__version__, recipe=recipe, recipe_probe=probe, test=score("test"),
               holdout=score("holdout"))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    print(f"peer: {step} steps in {a.minutes} min ({recipe}, torch {torch.__version__}), best val loss {best:.4f}")
    gt = None
    if a.compare:
        with open(a.compare) as f:
            gt = json.load(f)["nilm"]
    for sp in ("test", "holdout"):
        if not res[sp]:
            continue
        o = res[sp]["overall"]
        g = gt[sp] if gt and gt.get(sp) else None
        print(f"{sp}: peer EA {o['ea']:.3f} F1 {o['f1'] if o['f1'] is None else round(o['f1'], 3)}"
              + (f" | gridtrain EA {g['overall']['ea']:.3f} F1 {g['overall']['f1']:.3f}" if g else ""))
        for j, p in enumerate(res[sp]["appliances"]):
            ga = next((x for x in g["appliances"] if x["name"] == p["name"]), None) if g else None
            fmt = lambda v: "  -  " if v is None else f"{v:.3f}"
            print(f"  {p['name']:<18} peer F1 {fmt(p['f1'])} EA {fmt(p['ea'])}"
                  + (f" | gridtrain F1 {fmt(ga['f1'])} EA {fmt(ga['ea'])}" if ga else ""))


if __name__ == "__main__":
    main()
