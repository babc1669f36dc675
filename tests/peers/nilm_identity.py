"""tests/peers/nilm_identity.py: gridtrain's NILM metrics against NILMTK's
metric functions (nilmtk-s14pe, the version tests/peers/setup.sh pins) on the
same predictions, to 1e-6 (relative for the sums):

* the predictions: `gridtrain predict` (raw regression, eval.off_below_on =
  false) of a small trained seq2point run on a synthetic NILM file
  (/predictions against /appliances, every row where both are finite), and
  random appliance-like series (on/off cycles with noise, values exactly at
  10 W included);
* gridtrain's values: tests/peers/nilm_tool, the functions eval uses
  (gt_nilm_acc_add, gt_nilm_metrics_from_acc);
* NILMTK's (nilmtk.losses, the functions its experiment API scores with):
  mae = MAE; nde = NDE; 1 - nep / 2 = gridtrain's EA (NEP = sum|e| / sum y,
  EA = 1 - sum|e| / (2 sum y)); f1score (on = power >= 10 W, fixed) = F1 with
  gridtrain's on-threshold set to 10 W where no value is exactly 10 W;
* the definitions that differ, checked as differences: at exactly 10 W
  NILMTK counts a sample on, gridtrain (power > on_power_w) off; gridtrain
  uses each appliance's on_power_w (/appliance_meta), NILMTK 10 W for every
  appliance; an appliance never on: gridtrain's F1 is undefined (null),
  scikit-learn's (NILMTK's) 0; NILMTK has no SAE (its metrics.error_in_assigned_energy is the
  absolute energy error in kWh on MeterGroups, not normalised).
nilmtk.metrics.f1_score (on MeterGroups) calls DataFrame.append, which
pandas 2 removed: not callable with the pinned pandas; losses.f1score is used.

usage: nilm_identity.py GRIDTRAIN NILM_TOOL   (the peers' Python; exit 77 without the package)
"""
import math
import os
import subprocess
import tempfile

import peer_common as pc
from peer_common import ck

with pc.peer_packages():
    import h5py
    import numpy as np
    from nilmtk import losses

GT, TOOL = pc.args("nilm_identity.py GRIDTRAIN NILM_TOOL", 2)
gt = pc.runner(GT)
pc.setup_env()
print(pc.versions("nilmtk-s14pe"))


def ours(y, yh, on):
    txt = f"{len(y)} {on!r}\n" + "".join(f"{a!r} {b!r}\n" for a, b in zip(y.tolist(), yh.tolist()))
    r = subprocess.run([TOOL], input=txt, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"nilm_tool exit {r.returncode}")
    return dict(zip(["mae", "sae", "nde", "precision", "recall", "f1", "ea"], map(float, r.stdout.split())))


def close(a, b, tol=1e-6):
    if math.isnan(a) or math.isnan(b):  # both undefined (no energy: NDE, EA)
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def compare(name, y, yh, on_w):
    """identity where the definitions agree; the documented differences where they do not"""
    m10 = ours(y, yh, 10.0)
    th = {"mae": losses.mae(y, yh), "nde": losses.nde(y, yh), "ea": 1 - losses.nep(y, yh) / 2,
          "f1": losses.f1score(y, yh)}
    at10 = bool(np.any(y == 10) or np.any(yh == 10))
    never_on = not np.any(y > 10)
    keys = ["mae", "nde", "ea"] + ([] if at10 or never_on else ["f1"])
    bad = [(k, m10[k], th[k]) for k in keys if not close(m10[k], th[k])]
    ck(f"{name}: MAE {m10['mae']:.6g}, NDE {m10['nde']:.6g}, EA {m10['ea']:.6g}"
       + ("" if "f1" not in keys else f", F1 (10 W) {m10['f1']:.6g}") + " = NILMTK's mae, nde, 1 - nep/2"
       + ("" if "f1" not in keys else ", f1score"), not bad, bad)
    if never_on and not at10:  # never on: gridtrain's F1 is undefined (null), scikit-learn's zero_division gives 0
        ck(f"{name}: never on: gridtrain's F1 undefined ({m10['f1']}), NILMTK's {th['f1']} (scikit-learn's 0)",
           math.isnan(m10["f1"]) and th["f1"] == 0, (m10["f1"], th["f1"]))
    if at10:  # NILMTK: on = power >= 10; gridtrain: power > on_power_w
        gt_on, p_on = y >= 10, yh >= 10
        tp, fp, fn = np.sum(gt_on & p_on), np.sum(~gt_on & p_on), np.sum(gt_on & ~p_on)
        ck(f"{name}: values at exactly 10 W: NILMTK's F1 {th['f1']:.6g} is 2tp/(2tp+fp+fn) with on = power >= 10 W, "
           f"gridtrain's {m10['f1']:.6g} with power > 10 W", close(th["f1"], 2 * tp / (2 * tp + fp + fn))
           and not close(m10["f1"], th["f1"]), (th["f1"], m10["f1"]))
    if on_w is not None and on_w != 10:
        mo = ours(y, yh, on_w)
        s_on, p_on = y > on_w, yh > on_w
        tp, fp, fn = np.sum(s_on & p_on), np.sum(~s_on & p_on), np.sum(s_on & ~p_on)
        want = 2 * tp / (2 * tp + fp + fn) if tp + fn > 0 else float("nan")
        ck(f"{name}: gridtrain's F1 at the appliance's on_power_w {on_w:g} W = {mo['f1']:.6g} (NILMTK's at 10 W: "
           f"{th['f1']:.6g})", (math.isnan(want) and math.isnan(mo["f1"])) or close(mo["f1"], want), (mo, want))
    return m10, th


# random appliance-like series
rng = np.random.default_rng(36)
for case in range(12):
    n = int(rng.integers(500, 5000))
    p = float(rng.choice([60.0, 150.0, 1200.0, 2200.0]))
    on = (np.cumsum(rng.random(n) < 0.02) % 2).astype(bool)
    y = np.where(on, p + rng.normal(0, p * 0.03, n), np.abs(rng.normal(0, 3, n)))
    yh = np.clip(y + rng.normal(0, p * 0.1, n) + np.where(rng.random(n) < 0.05, p, 0), 0, None)
    if case % 3 == 0:
        y[rng.integers(0, n, 20)] = 10.0
        yh[rng.integers(0, n, 20)] = 10.0
    compare(f"random series {case} ({n} samples, {p:g} W)", np.round(y, 3), np.round(yh, 3), p / 4)

# gridtrain's own predictions
d = tempfile.mkdtemp(prefix="gt_peer_nilm_")
h5 = os.path.join(d, "nilm.h5")
p = gt("synth", "nilm", "-o", h5, "synth.households=2", "synth.days=1", "synth.seed=3")
ck("synth nilm exits 0", p.returncode == 0, p.stderr[-600:])
cfg = os.path.join(d, "train.ini")
with open(cfg, "w") as f:
    f.write(f"[data]\nfile = {h5}\nwindow = 63\nstride = 16\n[model]\nkind = s2p_cnn\nlayers = 3\nconv_scale = 0.25\n"
            "hidden = 32\n[optim]\nlr = 1e-2\nwarmup = 5\n[train]\nbatch = 32\nepochs = 0\nmax_steps = 200\n"
            f"log_every = 20\n[run]\ndir = {d}/run\nkeep = 1\n")
p = gt("train", cfg)
ck("train (s2p_cnn, 200 steps) exits 0", p.returncode == 0, p.stderr[-1200:])
out = os.path.join(d, "pred.h5")
p = gt("predict", os.path.join(d, "run"), h5, "-o", out, "eval.off_below_on=false")
ck("predict exits 0", p.returncode == 0, p.stderr[-800:])
if p.returncode == 0:
    with h5py.File(h5, "r") as f, h5py.File(out, "r") as g:
        app = f["appliances"][:].astype(np.float64)
        names = [x.decode() for x in f["appliance_meta/name"][:]]
        on_w = f["appliance_meta/on_power_w"][:]
        pred = g["predictions"][:].astype(np.float64)
    ck(f"predict: /predictions {pred.shape} matches /appliances {app.shape}", pred.shape == app.shape)
    for a, nm in enumerate(names):
        ok = np.isfinite(app[:, a]) & np.isfinite(pred[:, a])
        compare(f"gridtrain predict, {nm} ({int(ok.sum())} rows)", app[ok, a], pred[ok, a], float(on_w[a]))

pc.finish(d)
