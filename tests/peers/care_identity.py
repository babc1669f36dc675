"""tests/peers/care_identity.py: gridtrain's CARE score is the CARE to Compare
authors' CAREScore (energy_fault_detector.evaluation.CAREScore, the version
tests/peers/setup.sh pins, defaults), to 1e-9, on the same predictions:

* crafted event datasets through gridtrain's code (tests/peers/care_tool, the
  functions eval uses) and through CAREScore.evaluate_event /
  get_final_score: random alarm bursts and status masks; the special rules
  (score 0 when no event is detected, the mean normal-event accuracy when it
  is <= 0.5, exactly 0.5 included; ValueError / null without both labels);
  the criticality test at exactly 71 and 72 rows (the reference detects at
  max criticality >= 72) and its cap at 1000; a status gap inside an alarm run
  (criticality unchanged there); the earliness weights for event lengths 1 to
  41 and 1001 with one alarm at every position;
* end to end: the realistic CARE fixture (tests/import/realistic.py care)
  imported as "Wind Farm A", the same files as "Wind Farm B", and as "Wind
  Farm C" with rows missing (every 17th and 30 inside the anomaly event, as
  real CARE files miss rows); one
  trained run (normal-behaviour model), then for three alarm regimes
  (eval.margin 1.5; 1e6: nothing detected; 0.001 with eval.val_false_alarms
  = 0: alarms nearly everywhere)
  `eval` (its pdm.care_protocol: per event and final) against CAREScore on
  `predict`'s alarms of the same run and margin, indexed by the CSV's
  time stamps, normal_index from the CSV's status_type_id (0 and 2 normal),
  event start and end from event_info.csv; Wind Farm A with
  ignore_normal_index = True (the authors' protocol for that farm), Wind Farm
  B and C with the status;
* `doe report` against CAREScore: the protocol sweep (care_event = all, one
  model per event dataset) on Wind Farm C; the report's per-event values and
  its CARE score (care_protocol.csv overall and per farm, report.md) equal
  CAREScore over every cell's `predict` alarms at the CSV's prediction rows.

usage: care_identity.py GRIDTRAIN CARE_TOOL   (the peers' Python; exit 77 without the package)
"""
import csv
import json
import math
import os
import shutil
import subprocess
import tempfile

import peer_common as pc
from peer_common import ck

with pc.peer_packages():
    import h5py
    import numpy as np
    import pandas as pd
    from energy_fault_detector.evaluation import CAREScore
import realistic  # noqa: E402  (tests/import, on the path through peer_common)

GT, TOOL = pc.args("care_identity.py GRIDTRAIN CARE_TOOL", 2)
gt = pc.runner(GT)
pc.setup_env()
TOL = 1e-9
print(pc.versions("energy-fault-detector"))


def same(a, b):
    a = None if a is None or (isinstance(a, float) and math.isnan(a)) else float(a)
    b = None if b is None or (isinstance(b, float) and math.isnan(b)) else float(b)
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= TOL)


def theirs(events, ignore_normal=False):
    """events: (pred, normal, es, ee, anomaly) with rows [es, ee) of the event; -> per-event rows, final"""
    cs = CAREScore()
    for k, (p, nm, es, ee, an) in enumerate(events):
        idx = pd.RangeIndex(len(p))
        cs.evaluate_event(es, ee - 1, "anomaly" if an else "normal", pd.Series(np.asarray(p, bool), index=idx),
                          normal_index=pd.Series(np.asarray(nm, bool), index=idx), event_id=k,
                          ignore_normal_index=ignore_normal)
    return cs


def their_final(cs):
    try:
        score = cs.get_final_score()
    except ValueError:
        score = None
    return {"score": score, "coverage": cs.calculate_avg_coverage(), "accuracy": cs.calculate_avg_accuracy(),
            "earliness": cs.calculate_avg_earliness(), "reliability": cs.calculate_reliability()}


def ours(events):
    """gridtrain's functions via care_tool"""
    txt = [str(len(events))]
    for p, nm, es, ee, an in events:
        txt += [f"{len(p)} {es} {ee} {int(an)}", "".join("1" if x else "0" for x in p),
                "".join("1" if x else "0" for x in nm)]
    r = subprocess.run([TOOL], input="\n".join(txt) + "\n", capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"care_tool exit {r.returncode}: {r.stderr}")
    ev, fin = [], None
    for ln in r.stdout.splitlines():
        w = ln.split()
        if w[0] == "event":
            ev.append({"detected": w[1] == "1", "max_criticality": float(w[2]), "coverage": float(w[3]),
                       "accuracy": float(w[4]), "earliness": float(w[5])})
        else:
            fin = dict(zip(["score", "coverage", "accuracy", "earliness", "reliability"], map(float, w[1:6])))
    return ev, fin


def compare(name, events, ignore_normal=False, final=True):
    """ck that ours == theirs per event and for the final values; returns theirs' final"""
    cs = theirs(events, ignore_normal)
    if ignore_normal:  # gridtrain applies ignore_normal_index by passing every row as normal_index
        events = [(p, np.ones(len(p), bool), es, ee, an) for p, nm, es, ee, an in events]
    ev, fin = ours(events)
    df = cs.evaluated_events
    bad = []
    for k, e in enumerate(ev):
        r = df.iloc[k]
        pairs = {"detected": (float(e["detected"]), float(bool(r["anomaly_detected"]))),
                 "max_criticality": (e["max_criticality"], r["max_criticality"]),
                 "coverage": (e["coverage"], r["f_beta_score"]), "accuracy": (e["accuracy"], r["accuracy"]),
                 "earliness": (e["earliness"], r["weighted_score"])}
        bad += [(k, q, v) for q, v in pairs.items() if not same(*v)]
    tf = their_final(cs) if final else None
    if final:
        bad += [("final", q, (fin[q], tf[q])) for q in tf if not same(fin[q], tf[q])]
    ck(f"{name}: {len(ev)} events, per-event values and final score identical"
       + (f" (score {fin['score']:.6g})" if final and not math.isnan(fin["score"]) else ""), not bad, bad[:6])
    return tf


# ---------------------------------------------------------------- crafted cases --
rng = np.random.default_rng(36)


def bursts(n, k, lo, hi):
    p = np.zeros(n, bool)
    for _ in range(k):
        a = int(rng.integers(0, n))
        p[a:a + int(rng.integers(lo, hi))] = True
    return p


def status(n, k):
    nm = np.ones(n, bool)
    for _ in range(k):
        a = int(rng.integers(0, n))
        nm[a:a + int(rng.integers(5, 80))] = False
    return nm


for case in range(40):
    evs = []
    for j in range(int(rng.integers(2, 7))):
        n = int(rng.integers(150, 900))
        an = j == 0 or bool(rng.integers(0, 2))
        es = int(rng.integers(0, n - 20))
        ee = int(rng.integers(es + 1, n + 1))
        evs.append((bursts(n, int(rng.integers(0, 6)), 5, 200), status(n, int(rng.integers(0, 5))), es, ee, an))
    compare(f"random case {case}", evs)
    compare(f"random case {case}, ignore_normal_index", evs, ignore_normal=True)

n = 400
quiet = np.zeros(n, bool)
allnorm = np.ones(n, bool)
a50 = np.zeros(n, bool)
a50[100:160] = True  # 60 rows: criticality 60 < 72
f = compare("nothing detected", [(a50, allnorm, 120, 300, True), (quiet, allnorm, 0, n, False)])
ck(f"nothing detected: the authors' score is 0 ({f['score']})", f["score"] == 0)
half = np.zeros(n, bool)
half[:200] = True  # a normal event with accuracy exactly 0.5, detected
det = np.zeros(n, bool)
det[150:300] = True
f = compare("mean normal accuracy exactly 0.5", [(det, allnorm, 150, 300, True), (half, allnorm, 0, n, False)])
ck(f"accuracy 0.5: the authors' score is the accuracy ({f['score']})", same(f["score"], 0.5))
most = np.ones(n, bool)
most[:20] = False
f = compare("mean normal accuracy 0.05", [(det, allnorm, 150, 300, True), (most, allnorm, 0, n, False)])
ck(f"accuracy <= 0.5: the authors' score is the accuracy ({f['score']})", same(f["score"], 0.05))
for L, want in ((71, False), (72, True)):
    p = np.zeros(n, bool)
    p[50:50 + L] = True
    compare(f"a run of {L} alarms", [(p, allnorm, 50, 50 + L, True), (quiet, allnorm, 0, n, False)])
    cs = theirs([(p, allnorm, 50, 50 + L, True)])
    ck(f"a run of {L} alarms: the authors' detection is {want} (max criticality >= 72)",
       bool(cs.evaluated_events["anomaly_detected"][0]) == want)
big = np.zeros(1300, bool)
big[:1100] = True
cs = theirs([(big, np.ones(1300, bool), 0, 1300, True)])
ck(f"the authors' criticality stops at 1000 ({cs.evaluated_events['max_criticality'][0]})",
   cs.evaluated_events["max_criticality"][0] == 1000)
compare("criticality cap", [(big, np.ones(1300, bool), 0, 1300, True), (quiet, allnorm, 0, n, False)])
gap = np.zeros(n, bool)
gap[100:170] = True
gapn = allnorm.copy()
gapn[130:140] = False  # status rows inside the run: criticality unchanged there
gap[130:140] = False
compare("status gap inside an alarm run", [(gap, gapn, 100, 200, True), (quiet, allnorm, 0, n, False)])
f = compare("only anomaly events", [(det, allnorm, 150, 300, True)])
ck(f"only anomaly events: the authors raise ValueError (score {f['score']})", f["score"] is None)
evs = []
for L in list(range(1, 42)) + [1001]:
    for i in range(0, L, max(1, L // 40)):
        p = np.zeros(L + 20, bool)
        p[10 + i] = True
        evs.append((p, np.ones(L + 20, bool), 10, 10 + L, True))
compare(f"earliness weights: {len(evs)} events of 1 to 41 and 1001 rows, one alarm each", evs, final=False)

# ---------------------------------------------------------------- end to end --
d = tempfile.mkdtemp(prefix="gt_peer_care_")
farm_a = os.path.join(d, "Wind Farm A")
farm_b = os.path.join(d, "Wind Farm B")
farm_c = os.path.join(d, "Wind Farm C")
realistic.care(farm_a, days=40, pred_days=26)
shutil.copytree(farm_a, farm_b)
shutil.copytree(farm_a, farm_c)


def drop_rows(farm):
    """Wind Farm C: the same files with rows missing (every 17th, and 30 rows inside the anomaly event), as
    real CARE files miss rows: the grid holds rows the authors' CAREScore never sees"""
    for fn in os.listdir(os.path.join(farm, "datasets")):
        path = os.path.join(farm, "datasets", fn)
        with open(path) as f:
            lines = f.read().splitlines()
        col = lines[0].split(";").index("id")
        keep = [lines[0]] + [ln for ln in lines[1:] if not (int(ln.split(";")[col]) % 17 == 3
                                                            or 4900 <= int(ln.split(";")[col]) < 4930)]
        with open(path, "w") as f:
            f.write("\n".join(keep) + "\n")


drop_rows(farm_c)
h5 = {}
for name, src in (("A", farm_a), ("B", farm_b), ("C", farm_c)):
    h5[name] = os.path.join(d, f"farm_{name}.h5")
    p = gt("import", "care", src, "-o", h5[name])
    ck(f"import care Wind Farm {name} exits 0", p.returncode == 0, p.stderr[-800:])
cfg = os.path.join(d, "train.ini")
run = os.path.join(d, "run")
with open(cfg, "w") as f:
    f.write(f"[data]\nfile = {h5['A']}\nwindow = 36\nstride = 6\npdm_target = nbm\n[model]\nkind = lstm\nhidden = 16\n"
            "layers = 1\n[optim]\nlr = 3e-3\nwarmup = 20\n[train]\nbatch = 32\nmax_steps = 300\nepochs = 0\n"
            f"log_every = 100\nseed = 1\n[run]\ndir = {run}\ncheckpoint_minutes = 0\n")
p = gt("train", cfg)
ck("train (nbm, 300 steps) exits 0", p.returncode == 0, p.stderr[-1500:])


def csv_event(farm, eid):
    """the authors' inputs from the CSV: prediction rows by time stamp, normal_index = status 0 or 2"""
    with open(os.path.join(farm, "datasets", f"{eid}.csv")) as f:
        rows = [r for r in csv.DictReader(f, delimiter=";") if r["train_test"] == "prediction"]
    ts = pd.to_datetime([r["time_stamp"] for r in rows])
    return [int(r["id"]) for r in rows], ts, np.array([r["status_type_id"] in ("0", "2") for r in rows])


with open(os.path.join(farm_a, "event_info.csv")) as f:
    info = {int(r["event_id"]): r for r in csv.DictReader(f, delimiter=";")}
for name, farm in (("A", farm_a), ("B", farm_b), ("C", farm_c)):
    with h5py.File(h5[name], "r") as f:
        ce = {k: f["care_events/" + k][:] for k in f["care_events"]}
        row_off = f["turbines/row_offset"][:]
    for margin in ("1.5", "1e6", "0.001"):
        tag = f"Wind Farm {name}, eval.margin = {margin}"
        ov = [f"eval.margin={margin}"] + ([] if margin == "1.5" else ["eval.val_false_alarms=0"])
        p = gt("eval", run, h5[name], *ov)
        ok = p.returncode == 0
        ck(f"{tag}: eval exits 0", ok, p.stderr[-800:])
        if not ok:
            continue
        with open(os.path.join(run, "eval.json")) as f:
            cp = json.load(f)["pdm"]["care_protocol"]
        out = os.path.join(d, f"pred_{name}_{margin}.h5")
        p = gt("predict", run, h5[name], "-o", out, *ov)
        ck(f"{tag}: predict exits 0", p.returncode == 0, p.stderr[-800:])
        if p.returncode:
            continue
        with h5py.File(out, "r") as f:
            alarm = f["alarm"][:].astype(bool)
        cs = CAREScore()
        for i, eid in enumerate(int(x) for x in ce["event_id"]):
            t = int(ce["turbine"][i])
            ids, ts, normal = csv_event(farm, eid)
            pred = alarm[row_off[t] + np.array(ids)]
            r = info[eid]
            cs.evaluate_event(pd.Timestamp(r["event_start"]), pd.Timestamp(r["event_end"]), r["event_label"],
                              pd.Series(pred, index=ts), normal_index=pd.Series(normal, index=ts), event_id=eid,
                              ignore_normal_index=name == "A")
        df = cs.evaluated_events.set_index("event_id")
        bad = []
        for e in cp["events"]:
            r = df.loc[e["event_id"]]
            pairs = {"detected": (float(e["detected"]), float(bool(r["anomaly_detected"]))),
                     "max_criticality": (e["max_criticality"], r["max_criticality"]),
                     "coverage": (e["coverage"], r["f_beta_score"]), "accuracy": (e["accuracy"], r["accuracy"]),
                     "earliness": (e["earliness"], r["weighted_score"])}
            bad += [(e["event_id"], q, v) for q, v in pairs.items() if not same(*v)]
        tf = their_final(cs)
        bad += [("final", q, (cp[q], tf[q])) for q in tf if not same(cp[q], tf[q])]
        det = [int(x) for x in df["anomaly_detected"]]
        ck(f"{tag}: eval's CARE protocol {cp['score']} = CAREScore {tf['score']} (detected {det}; coverage "
           f"{tf['coverage']:.4g}, accuracy {tf['accuracy']:.4g}, earliness {tf['earliness']:.4g}, reliability "
           f"{tf['reliability']:.4g}), per event and final", not bad, bad[:6])
        if margin == "1e6":
            ck(f"{tag}: nothing detected, score 0", sum(det) == 0 and cp["score"] == 0, (det, cp["score"]))
        if margin == "0.001":
            ck(f"{tag}: alarms nearly everywhere: the score is the mean normal accuracy <= 0.5",
               tf["accuracy"] <= 0.5 and same(cp["score"], tf["accuracy"]), (cp["score"], tf["accuracy"]))

# ------------------------------------------------ doe report against CAREScore --
# The authors' protocol as a sweep (one model per event dataset, care_event = all) on Wind Farm C, whose
# files miss rows: the CARE score `doe report` prints (care_protocol.csv and report.md, overall and per
# farm) = CAREScore over every cell's `predict` alarms at the CSV's prediction rows
sweep = os.path.join(d, "protocol")
ini = os.path.join(d, "protocol.ini")
with open(ini, "w") as f:
    f.write(f"[doe]\nname = care-identity\ndir = {sweep}\nmetric = pdm.event.recall\n[factors]\ncare_event = all\n"
            f"[data]\nfile = {h5['C']}\nwindow = 36\nstride = 6\npdm_target = nbm\nsplit_train = 0.75\n"
            "split_val = 0.25\n[model]\nkind = lstm\nhidden = 16\nlayers = 1\n[optim]\nlr = 3e-3\nwarmup = 20\n"
            "[train]\nbatch = 32\nmax_steps = 300\nepochs = 0\nlog_every = 100\nseed = 1\n[run]\n"
            "checkpoint_minutes = 0\n")
p = gt("doe", "run-all", ini, "-j", "2")
ck("doe run-all (care_event = all, Wind Farm C) exits 0", p.returncode == 0, p.stderr[-1500:])
p = gt("doe", "report", sweep, "--no-plots")
ck("doe report exits 0", p.returncode == 0, p.stderr[-800:])
if os.path.exists(os.path.join(sweep, "report", "care_protocol.csv")):
    with open(os.path.join(sweep, "report", "care_protocol.csv")) as f:
        rep = list(csv.DictReader(f))
    with open(os.path.join(sweep, "sweep.json")) as f:
        cells = {int(c["factors"]["care_event"]): c["id"] for c in json.load(f)["cells"]}
    with h5py.File(h5["C"], "r") as f:
        ce = {k: f["care_events/" + k][:] for k in f["care_events"]}
        row_off = f["turbines/row_offset"][:]
    cs = CAREScore()
    for i, eid in enumerate(int(x) for x in ce["event_id"]):
        out = os.path.join(d, f"pred_cell_{eid}.h5")
        p = gt("predict", os.path.join(sweep, "cells", cells[eid]), h5["C"], "-o", out)
        ck(f"cell of event dataset {eid}: predict exits 0", p.returncode == 0, p.stderr[-800:])
        with h5py.File(out, "r") as f:
            alarm = f["alarm"][:].astype(bool)
        t = int(ce["turbine"][i])
        ids, ts, normal = csv_event(farm_c, eid)
        r = info[eid]
        cs.evaluate_event(pd.Timestamp(r["event_start"]), pd.Timestamp(r["event_end"]), r["event_label"],
                          pd.Series(alarm[row_off[t] + np.array(ids)], index=ts),
                          normal_index=pd.Series(normal, index=ts), event_id=eid)
    tf = their_final(cs)
    df = cs.evaluated_events.set_index("event_id")
    bad = []
    for row in rep:
        if row["scope"] == "event":
            er = df.loc[int(row["id"])]
            pairs = {"detected": (float(row["detected"]), float(bool(er["anomaly_detected"]))),
                     "max_criticality": (float(row["max_criticality"]), er["max_criticality"]),
                     "coverage": (float(row["coverage"]) if row["coverage"] else None, er["f_beta_score"]),
                     "accuracy": (float(row["accuracy"]), er["accuracy"]),
                     "earliness": (float(row["earliness"]) if row["earliness"] else None, er["weighted_score"])}
            bad += [(row["id"], q, v) for q, v in pairs.items() if not (v[0] is None and math.isnan(v[1])) and
                    not (v[0] is not None and abs(v[0] - float(v[1])) <= 1e-9)]
        else:  # overall and the farm: the 10-digit CSV figures
            for q in ("care_score", "coverage", "accuracy", "earliness", "reliability"):
                want = tf["score" if q == "care_score" else q]
                if abs(float(row[q]) - want) > 1e-9:
                    bad.append((row["scope"], q, (row[q], want)))
    scopes = sorted({r["scope"] for r in rep})
    ov = [r["care_score"] for r in rep if r["scope"] == "overall"]
    ck(f"doe report on Wind Farm C (rows missing): CARE score {ov} = CAREScore {tf['score']:.10f} "
       f"(scopes {scopes}; per event, overall and per farm)", not bad and scopes == ["event", "farm", "overall"], bad[:6])
    with open(os.path.join(sweep, "report", "report.md")) as f:
        md = f.read()
    ck(f"report.md prints that CARE score ({tf['score']:.3f})", f"CARE score {tf['score']:.3f}" in md,
       [ln for ln in md.splitlines() if "CARE score" in ln][:3])

pc.finish(d)
