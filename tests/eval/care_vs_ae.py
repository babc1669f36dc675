#!/usr/bin/python3
"""tests/eval/care_vs_ae.py: gridtrain's SCADA detectors against the CARE to
Compare paper's autoencoder baseline on the same farm, side by side in one run,
both by the authors' protocol (one model per event dataset, trained on its
training part, scored on its prediction part) and the authors' CARE score.

  gridtrain  `import care`, then the documented recipe jobs/doe/care_protocol.ini
             (care_event = all) for each detector of --detectors and seed of
             --seeds: `doe run-all -j J`, `doe report`; scores from
             report/care_protocol.csv
  peer       tests/eval/care_peer_ae.py on the farm's CSV files, same seeds

usage: care_vs_ae.py GRIDTRAIN FARM_DIR [--seeds 1,2,3] [--detectors nbm,next]
                     [--work DIR] [-j 2] [--epochs 10] [--set KEY=VALUE ...]
Prints a table (mean and standard deviation over the seeds of the CARE score,
anomaly event datasets detected, normal event datasets flagged) and one line
"CARE_VS_AE <detector>=<score> ... ae=<score> ratio_<detector>=<score/ae>".
--set adds a setting to every gridtrain cell (e.g. data.window=72).
Exit 77 without numpy/torch (the peer's requirements).
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
try:
    import numpy as np
    import torch  # noqa: F401  (the peer's requirement, checked up front)
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:])
        raise SystemExit(f"care_vs_ae: {' '.join(cmd)} exited {r.returncode}")
    return r.stdout


def protocol_ini(template, h5, sweep, detectors, seeds, extra):
    out, section = [], ""
    for line in open(template):
        s = line.strip()
        m = re.match(r"\[(\w+)\]", s)
        if m:
            section = m.group(1)
            out.append(line)
            if section == "factors":
                out.append("care_event = all\n")
                out.append(f"data.pdm_target = {','.join(detectors)}\n")
                out.append(f"seed = {','.join(str(x) for x in seeds)}\n")
            continue
        key = s.split("=")[0].strip() if "=" in s and not s.startswith(";") else ""
        if section == "factors" and key:
            continue
        if section == "doe" and key == "dir":
            line = f"dir = {sweep}\n"
        if section == "data" and key == "file":
            line = f"file = {h5}\n"
        out.append(line)
    if extra:
        sets = {}
        for kv in extra:
            k, v = kv.split("=", 1)
            sec, key = k.split(".", 1)
            sets.setdefault(sec, []).append(f"{key} = {v}\n")
        for sec, lines in sets.items():
            out.append(f"[{sec}]\n")
            out += lines
    return "".join(out)


def gridtrain_scores(csv_path):
    """label -> (overall CARE score, anomaly detected, anomaly total, normal flagged, normal total)"""
    res = {}
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            lab = r["run"]
            e = res.setdefault(lab, {"score": None, "ad": 0, "an": 0, "nf": 0, "nn": 0})
            if r["scope"] == "overall":
                e["score"] = float(r["care_score"]) if r["care_score"] else None
            elif r["scope"] == "event":
                det = r["detected"] == "1"
                if r["label"] == "anomaly":
                    e["an"] += 1
                    e["ad"] += det
                else:
                    e["nn"] += 1
                    e["nf"] += det
    return res


def ms(v):
    v = [x for x in v if x is not None]
    if not v:
        return "-", None
    m = float(np.mean(v))
    return (f"{m:.3f} ± {float(np.std(v)):.3f}" if len(v) > 1 else f"{m:.3f}"), m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gridtrain")
    ap.add_argument("farm")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--detectors", default="nbm,next")
    ap.add_argument("--work", default="")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    dets = [d.strip() for d in a.detectors.split(",") if d.strip()]
    work = a.work or tempfile.mkdtemp(prefix="care_vs_ae_")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    h5 = os.path.join(work, "care.h5")
    if os.path.exists(h5):
        os.remove(h5)
    run([a.gridtrain, "import", "care", a.farm, "-o", h5, "--log-level", "warn"], env=env)
    sweep = os.path.join(work, "protocol")
    ini = os.path.join(work, "protocol.ini")
    with open(ini, "w") as f:
        f.write(protocol_ini(os.path.join(ROOT, "jobs", "doe", "care_protocol.ini"), h5, sweep, dets, seeds, a.set))
    run([a.gridtrain, "doe", "run-all", ini, "-j", str(a.j), "--log-level", "warn"], env=env)
    run([a.gridtrain, "doe", "report", sweep, "--log-level", "warn"], env=env)
    g = gridtrain_scores(os.path.join(sweep, "report", "care_protocol.csv"))
    rows = []
    summary = {}
    for d in dets:
        labs = [lab for lab in g if re.search(rf"\bdata\.pdm_target={d}\b", lab)]
        txt, m = ms([g[lab]["score"] for lab in labs])
        ad = sum(g[lab]["ad"] for lab in labs)
        an = sum(g[lab]["an"] for lab in labs)
        nf = sum(g[lab]["nf"] for lab in labs)
        nn = sum(g[lab]["nn"] for lab in labs)
        rows.append((f"gridtrain {d}", txt, f"{ad}/{an}", f"{nf}/{nn}"))
        summary[d] = m
    pe = []
    ad = an = nf = nn = 0
    for s in seeds:
        out = run([sys.executable, os.path.join(HERE, "care_peer_ae.py"), a.farm, "--seed", str(s), "--epochs",
                   str(a.epochs)], env=env)
        m = re.search(r"CARE_PEER_AE score=(\S+) anomaly_detected=(\d+)/(\d+) normal_flagged=(\d+)/(\d+)", out)
        if not m:
            raise SystemExit("care_vs_ae: no result line from care_peer_ae.py:\n" + out[-2000:])
        pe.append(None if m.group(1) == "null" else float(m.group(1)))
        ad, an, nf, nn = ad + int(m.group(2)), an + int(m.group(3)), nf + int(m.group(4)), nn + int(m.group(5))
    txt, ae = ms(pe)
    rows.append(("autoencoder (paper's baseline, PyTorch)", txt, f"{ad}/{an}", f"{nf}/{nn}"))
    print(f"farm {a.farm}, seeds {a.seeds}, work {work}")
    print("| detector | CARE score (authors' protocol) | anomaly event datasets detected | normal event datasets flagged |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    line = " ".join(f"{d}={summary[d]:.4f}" if summary[d] is not None else f"{d}=null" for d in dets)
    ratios = " ".join(f"ratio_{d}={summary[d] / ae:.3f}" for d in dets if summary[d] is not None and ae)
    print(f"CARE_VS_AE {line} ae={ae:.4f} {ratios}" if ae is not None else f"CARE_VS_AE {line} ae=null")


if __name__ == "__main__":
    main()
