#!/usr/bin/python3
"""tests/eval/care_peer_ae.py: the CARE to Compare paper's baseline, an
autoencoder normal-behaviour model, in PyTorch, run by the authors' protocol on
a CARE-layout wind farm folder, scored with the authors' CARE score. It is the
side-by-side peer for gridtrain's detectors on the same farm
(tests/eval/care_vs_ae.py).

It reads the farm's CSV files directly (datasets/<event_id>.csv,
event_info.csv, feature_description.csv; ';' or ',' separated), not
gridtrain's import. Per event dataset, following the baseline recipe of the
paper's reference package (energy_fault_detector's default configuration):
  * features: every sensor column; angle channels (feature_description
    is_angle) as sin and cos; counters (is_counter) as their row-to-row
    difference; columns constant or empty on the training rows dropped; gaps
    filled with the training mean; standardised on the training rows;
  * training rows: the rows the CSV flags `train` with a normal status type
    (0 normal, 2 idling), the last 20 % of them (in time) for validation;
  * model: a dense autoencoder in -> 200 -> 100 -> 50 -> 20 -> 50 -> 100 ->
    200 -> in with PReLU activations, Adam (lr 1e-3), batch 128, --epochs
    (default 10), seeded;
  * anomaly score: the row's mean squared reconstruction error; threshold:
    the 0.99 quantile of the validation rows' scores;
  * alarms on the prediction rows: score > threshold; the CARE score from the
    alarms by tests/import/care_score.py (criticality >= 72 on normal-status
    rows detects an event; on Wind Farm A every row counts, as gridtrain's
    eval and the authors' ignore_normal_index).

usage: care_peer_ae.py FARM_DIR [--epochs N] [--seed S] [--events 10,11]
                       [--json OUT] [--threads N]
Prints one line per event dataset and a final "CARE_PEER_AE score=..." line.
Exit 77 when numpy or torch is missing.
"""
import argparse
import csv
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "import"))
try:
    import numpy as np
    import torch
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)
from care_score import care_event, final  # noqa: E402

META = ("time_stamp", "asset_id", "id", "train_test", "status_type_id")
STATS = ("_avg", "_min", "_max", "_std")


def read_table(path):
    with open(path, newline="", encoding="latin-1") as f:
        head = f.readline()
        sep = ";" if head.count(";") >= head.count(",") else ","
        f.seek(0)
        rows = list(csv.reader(f, delimiter=sep))
    rows = [r for r in rows if r and any(c.strip() for c in r)]
    return [c.strip() for c in rows[0]], rows[1:]


def truthy(s):
    return s.strip().lower() in ("true", "1", "yes")


def feature_kinds(farm):
    path = os.path.join(farm, "feature_description.csv")
    if not os.path.exists(path):
        return {}
    head, rows = read_table(path)
    ix = {h: i for i, h in enumerate(head)}
    kinds = {}
    for r in rows:
        name = r[ix["sensor_name"]].strip()
        ang = "is_angle" in ix and truthy(r[ix["is_angle"]])
        cnt = "is_counter" in ix and truthy(r[ix["is_counter"]])
        kinds[name] = "angle" if ang else "counter" if cnt else "plain"
    return kinds


def kind_of(col, kinds):
    if col in kinds:
        return kinds[col]
    for s in STATS:
        if col.endswith(s) and col[: -len(s)] in kinds:
            return kinds[col[: -len(s)]]
    return "plain"


def num(s):
    s = s.strip()
    if not s:
        return math.nan
    try:
        return float(s)
    except ValueError:
        return math.nan


def load_event(farm, eid):
    head, rows = read_table(os.path.join(farm, "datasets", f"{eid}.csv"))
    ix = {h: i for i, h in enumerate(head)}
    sensors = [h for h in head if h not in META]
    ts = np.array([r[ix["time_stamp"]].strip() for r in rows])
    order = np.argsort(ts, kind="stable")
    rows = [rows[i] for i in order]
    ts = ts[order]
    train = np.array([r[ix["train_test"]].strip().lower() == "train" for r in rows])
    status = np.array([num(r[ix["status_type_id"]]) for r in rows])
    x = np.array([[num(r[ix[c]]) for c in sensors] for r in rows], dtype=np.float64)
    return ts, train, status, sensors, x


def features(x, sensors, kinds, fit):
    cols = []
    for j, c in enumerate(sensors):
        k = kind_of(c, kinds)
        v = x[:, j]
        if k == "angle":
            cols += [np.sin(np.radians(v)), np.cos(np.radians(v))]
        elif k == "counter":
            d = np.diff(v, prepend=np.nan)
            cols.append(d)
        else:
            cols.append(v)
    f = np.stack(cols, axis=1)
    ft = f[fit]
    with np.errstate(all="ignore"):
        mu = np.nanmean(ft, axis=0)
        sd = np.nanstd(ft, axis=0)
    keep = np.isfinite(mu) & np.isfinite(sd) & (sd > 1e-9)
    f = f[:, keep]
    mu, sd = mu[keep], sd[keep]
    f = np.where(np.isfinite(f), f, mu)
    return ((f - mu) / sd).astype(np.float32)


class AE(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        dims = [n, 200, 100, 50, 20, 50, 100, 200]
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.PReLU()]
        layers.append(torch.nn.Linear(dims[-1], n))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def run_event(farm, eid, label, es_t, ee_t, kinds, epochs, seed):
    ts, train, status, sensors, x = load_event(farm, eid)
    normal = np.isin(status, (0, 2))
    fit = train & normal
    idx = np.flatnonzero(fit)
    if len(idx) < 50:
        raise SystemExit(f"{farm}: event dataset {eid}: {len(idx)} normal training rows, too few")
    f = features(x, sensors, kinds, fit)
    n_val = max(1, len(idx) // 5)
    tr, va = idx[:-n_val], idx[-n_val:]
    torch.manual_seed(seed)
    g = np.random.default_rng(seed)
    model = AE(f.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt = torch.from_numpy(f[tr])
    for _ in range(epochs):
        perm = g.permutation(len(tr))
        for b in range(0, len(tr), 128):
            xb = xt[perm[b:b + 128]]
            loss = torch.mean((model(xb) - xb) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        score = torch.mean((model(torch.from_numpy(f)) - torch.from_numpy(f)) ** 2, dim=1).numpy()
    thr = float(np.quantile(score[va], 0.99))
    pr = np.flatnonzero(~train)
    pred = score[pr] > thr
    tsp = ts[pr]
    es = int(np.searchsorted(tsp, es_t, side="left"))
    ee = int(np.searchsorted(tsp, ee_t, side="right"))
    # Wind Farm A is scored with ignore_normal_index (its status labels only filter training data)
    scored = np.ones(len(pr), bool) if os.path.basename(os.path.normpath(farm)).endswith("A") else normal[pr]
    ev = care_event(pred, scored, es, ee, label == "anomaly")
    ev["anomaly"] = label == "anomaly"
    ev.update(event_id=eid, label=label, threshold=thr, prediction_rows=int(len(pr)),
              training_rows=int(len(tr)), features=int(f.shape[1]))
    return ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("farm")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--events", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    head, rows = read_table(os.path.join(a.farm, "event_info.csv"))
    ix = {h: i for i, h in enumerate(head)}
    want = {int(e) for e in a.events.split(",") if e.strip()}
    kinds = feature_kinds(a.farm)
    evs = []
    t0 = time.time()
    for r in rows:
        eid = int(float(r[ix["event_id"]]))
        if want and eid not in want:
            continue
        if not os.path.exists(os.path.join(a.farm, "datasets", f"{eid}.csv")):
            continue
        label = r[ix["event_label"]].strip().lower()
        ev = run_event(a.farm, eid, label, r[ix["event_start"]].strip(), r[ix["event_end"]].strip(), kinds,
                       a.epochs, a.seed)
        evs.append(ev)
        print(f"event {eid} {label}: detected {int(ev['detected'])} max criticality {ev['max_criticality']} "
              f"coverage {ev['coverage']} accuracy {ev['accuracy']:.4f} earliness {ev['earliness']} "
              f"({ev['training_rows']} training rows, {ev['features']} features)", flush=True)
    score = final(evs)
    n_an = sum(e["anomaly"] for e in evs)
    det = sum(e["detected"] for e in evs if e["anomaly"])
    fa = sum(e["detected"] for e in evs if not e["anomaly"])
    print(f"CARE_PEER_AE score={score if score is not None else 'null'} anomaly_detected={det}/{n_an} "
          f"normal_flagged={fa}/{len(evs) - n_an} seed={a.seed} epochs={a.epochs} seconds={time.time() - t0:.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"score": score, "seed": a.seed, "epochs": a.epochs,
                       "events": [{k: (bool(v) if isinstance(v, np.bool_) else v) for k, v in e.items()}
                                  for e in evs]}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
