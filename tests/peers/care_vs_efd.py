"""tests/peers/care_vs_efd.py: gridtrain against the CARE to Compare authors'
own workflow (energy-fault-detector, the version tests/peers/setup.sh pins),
side by side on the same farms, both scored by the authors' CAREScore:

  farms      Wind Farm A: the realistic fixture (tests/import/realistic.py
             care, seed 12, pred_days 26: 3 turbines, 4 event datasets);
             Wind Farm B: the independent generator (tests/import/indep_care.py
             --seed 3 --assets 2 --train-days 20 --pred-days 8 --features 40:
             4 event datasets, a stuck oil temperature and a bearing drift);
             Wind Farm C: the independent generator with another seed
             (--seed 5, the same sizes but --features 69, every temperature
             of its layout: a +7 degC generator-bearing step and a cooling
             fault at high load; with 40 features the file would end before
             the converter temperature, the one channel the cooling fault
             shows in)
  authors    their loader (Care2CompareDataset.iter_formatted_datasets:
             averages, training rows with status 0 as normal_index), one
             FaultDetector per event dataset with the package's
             base_config.yaml (autoencoder 200-100-50-20, 10 epochs, RMSE
             score, 0.95 quantile threshold on the validation rows), predict
             on the prediction rows
  gridtrain  `import care`, jobs/doe/care_protocol.ini with care_event = all,
             data.pdm_target = nbm, seed 1: `doe run-all -j 1`; its alarms
             per event from each cell's `predict`
  score      CAREScore.evaluate_event per event dataset on each side's
             predictions (normal_index = status 0 or 2; Wind Farm A with
             ignore_normal_index = True), get_final_score per farm

Each side runs in its own process: training time (the authors: the sum of
FaultDetector.fit; gridtrain: the wall time of `doe run-all`, training and
evaluation of every cell) and peak memory (maximum resident set of the
side's process tree). Prints one table and a line CARE_VS_EFD per farm.
A measurement, not a test: the numbers depend on the machine and its load.

usage: care_vs_efd.py GRIDTRAIN [--work DIR]      (the peers' Python)
"""
import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import peer_common as pc

ROOT = pc.ROOT
pc.setup_env()
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
FARMS = ("A", "B", "C")


def make_farms(root):
    import realistic
    realistic.care(os.path.join(root, "Wind Farm A"), days=40, seed=12, pred_days=26)
    # the fixture leaves the energy counter's statistics_type empty, which the authors' loader cannot split
    fd = os.path.join(root, "Wind Farm A", "feature_description.csv")
    with open(fd) as f:
        rows = [ln.split(";") for ln in f.read().splitlines()]
    with open(fd, "w") as f:
        f.write("".join(";".join(r[:1] + [r[1] or "average"] + r[2:]) + "\n" for r in rows))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "import", "indep_care.py"), root, "--seed", "3",
                    "--farm", "B", "--assets", "2", "--train-days", "20", "--pred-days", "8", "--features", "40",
                    "--nan-rate", "0"], check=True, capture_output=True)
    # 69 features: every temperature of the layout, the converter's included (the cooling fault's channel)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "import", "indep_care.py"), root, "--seed", "5",
                    "--farm", "C", "--assets", "2", "--train-days", "20", "--pred-days", "8", "--features", "69",
                    "--nan-rate", "0"], check=True, capture_output=True)
    # the authors' loader finds an event dataset by its id over all farms (the benchmark's ids are unique):
    # Wind Farm C's ids 0..3 (the generator numbers every farm from 0) become 100..103
    c = os.path.join(root, "Wind Farm C")
    with open(os.path.join(c, "event_info.csv")) as f:
        lines = f.read().splitlines()
    for ln in lines[1:]:
        eid = int(ln.split(";")[0])
        os.rename(os.path.join(c, "datasets", f"{eid}.csv"), os.path.join(c, "datasets", f"{eid + 100}.csv"))
    with open(os.path.join(c, "event_info.csv"), "w") as f:
        f.write("\n".join([lines[0]] + [f"{int(ln.split(';')[0]) + 100};{ln.split(';', 1)[1]}" for ln in lines[1:]]) + "\n")


def status_normal(root, farm, eid):
    """time stamp -> normal_index (status 0 or 2) of the prediction rows"""
    import pandas as pd
    d = pd.read_csv(os.path.join(root, f"Wind Farm {farm}", "datasets", f"{eid}.csv"), sep=";",
                    usecols=["time_stamp", "train_test", "status_type_id"])
    d = d[d["train_test"] == "prediction"]
    return pd.Series(d["status_type_id"].isin([0, 2]).to_numpy(), index=pd.to_datetime(d["time_stamp"]))


def score(root, farm, preds):
    """preds: event id -> bool Series over the prediction time stamps; -> (CAREScore, per-event rows)"""
    import pandas as pd
    from energy_fault_detector.evaluation import CAREScore
    info = pd.read_csv(os.path.join(root, f"Wind Farm {farm}", "event_info.csv"), sep=";")
    cs = CAREScore()
    for _, r in info.iterrows():
        eid = int(r["event_id"])
        p = preds[eid]
        nm = status_normal(root, farm, eid).reindex(p.index).fillna(True).astype(bool)
        cs.evaluate_event(pd.Timestamp(r["event_start"]), pd.Timestamp(r["event_end"]), r["event_label"],
                          p.astype(bool), normal_index=nm, event_id=eid, ignore_normal_index=farm == "A")
    ev = cs.evaluated_events
    out = {"score": float(cs.get_final_score()),
           "anomaly": [int(x) for x in ev[ev.event_label == "anomaly"]["anomaly_detected"]],
           "normal": [int(x) for x in ev[ev.event_label == "normal"]["anomaly_detected"]]}
    return out


def side_authors(root, farm):
    from energy_fault_detector import FaultDetector
    from energy_fault_detector.config import Config
    from energy_fault_detector.evaluation import Care2CompareDataset
    import energy_fault_detector
    import pandas as pd
    cfg = os.path.join(os.path.dirname(energy_fault_detector.__file__), "base_config.yaml")
    ds = Care2CompareDataset(root)
    preds, fit_s = {}, 0.0
    for x_tr, ni_tr, x_te, _ni_te, eid in ds.iter_formatted_datasets(wind_farm=farm, index_column="time_stamp"):
        x_tr = x_tr.drop(columns=["train_test"], errors="ignore")
        x_te = x_te.drop(columns=["train_test"], errors="ignore")
        x_tr.index, x_te.index = pd.to_datetime(x_tr.index), pd.to_datetime(x_te.index)
        fd = FaultDetector(Config(cfg), model_directory=tempfile.mkdtemp(prefix="efd_"))
        t0 = time.perf_counter()
        fd.fit(x_tr, ni_tr.set_axis(x_tr.index), save_models=False)
        fit_s += time.perf_counter() - t0
        preds[int(eid)] = fd.predict(x_te).predicted_anomalies.reindex(x_te.index).fillna(False)
    res = score(root, farm, preds)
    res["train_s"] = fit_s
    return res


def side_gridtrain(root, farm, gt, work):
    import h5py
    import numpy as np
    import pandas as pd
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    h5 = os.path.join(work, f"farm_{farm}.h5")
    pc.run_quiet(gt, "import", "care", os.path.join(root, f"Wind Farm {farm}"), "-o", h5, env=env)
    sweep = os.path.join(work, f"protocol_{farm}")
    ini = os.path.join(work, f"protocol_{farm}.ini")
    out, section = [], ""
    for line in open(os.path.join(ROOT, "jobs", "doe", "care_protocol.ini")):
        s = line.strip()
        m = re.match(r"\[(\w+)\]", s)
        if m:
            section = m.group(1)
            out.append(line)
            if section == "factors":
                out.append("care_event = all\ndata.pdm_target = nbm\nseed = 1\n")
            continue
        key = s.split("=")[0].strip() if "=" in s and not s.startswith(";") else ""
        if section == "factors" and key:
            continue
        out.append(f"dir = {sweep}\n" if section == "doe" and key == "dir" else
                   f"file = {h5}\n" if section == "data" and key == "file" else line)
    with open(ini, "w") as f:
        f.write("".join(out))
    t0 = time.perf_counter()
    pc.run_quiet(gt, "doe", "run-all", ini, "-j", "1", env=env)
    train_s = time.perf_counter() - t0
    pc.run_quiet(gt, "doe", "report", sweep, "--no-plots", env=env)
    with open(os.path.join(sweep, "report", "care_protocol.csv")) as f:
        own = [float(r["care_score"]) for r in csv.DictReader(f) if r["scope"] == "overall" and r["care_score"]]
    with open(os.path.join(sweep, "sweep.json")) as f:
        cells = {int(c["factors"]["care_event"]): c["id"] for c in json.load(f)["cells"]}
    with h5py.File(h5, "r") as f:
        ce = {k: f["care_events/" + k][:] for k in f["care_events"]}
        row_off = f["turbines/row_offset"][:]
    preds = {}
    for i, eid in enumerate(int(x) for x in ce["event_id"]):
        cd = os.path.join(sweep, "cells", str(cells[eid]))
        p = os.path.join(work, f"pred_{farm}_{eid}.h5")
        pc.run_quiet(gt, "predict", cd, h5, "-o", p, env=env)
        t = int(ce["turbine"][i])
        with h5py.File(p, "r") as f:
            alarm = f["alarm"][row_off[t]:row_off[t + 1]].astype(bool)
        d = pd.read_csv(os.path.join(root, f"Wind Farm {farm}", "datasets", f"{eid}.csv"), sep=";",
                        usecols=["time_stamp", "train_test"])
        d = d[d["train_test"] == "prediction"]
        ts = pd.to_datetime(d["time_stamp"])
        # grid row of each prediction row: the event dataset's first prediction row is pred_start_row
        rows = int(ce["pred_start_row"][i]) + np.round((ts - ts.iloc[0]).dt.total_seconds() / 600).astype(int)
        preds[eid] = pd.Series(alarm[np.clip(rows.to_numpy(), 0, len(alarm) - 1)], index=ts.to_numpy())
    res = score(root, farm, preds)
    res["train_s"] = train_s
    res["own_report"] = own[0] if own else None
    return res


def worker(a):
    res = side_authors(a.root, a.farm) if a.side == "authors" else side_gridtrain(a.root, a.farm, a.gridtrain, a.work)
    kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    res["peak_mib"] = kb / 1024
    print("RESULT " + json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gridtrain")
    ap.add_argument("--work", default="")
    ap.add_argument("--side", default="")
    ap.add_argument("--farm", default="")
    ap.add_argument("--root", default="")
    a = ap.parse_args()
    if a.side:
        return worker(a)
    pc.require("energy_fault_detector", "h5py", "pandas")  # exit 77 without the peers' environment
    work = a.work or tempfile.mkdtemp(prefix="care_vs_efd_")
    root = os.path.join(work, "care")
    if not os.path.exists(os.path.join(root, "Wind Farm C", "datasets", "100.csv")):
        make_farms(root)
    print(f"{pc.versions('energy-fault-detector')}, {time.strftime('%Y-%m-%d')}")
    table = []
    for farm in FARMS:
        row = {}
        for side in ("authors", "gridtrain"):
            r = subprocess.run([sys.executable, os.path.abspath(__file__), a.gridtrain, "--side", side, "--farm", farm,
                                "--root", root, "--work", work], capture_output=True, text=True)
            m = re.search(r"^RESULT (.*)$", r.stdout, re.M)
            if r.returncode or not m:
                sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
                raise SystemExit(f"care_vs_efd: {side} on Wind Farm {farm} failed (exit {r.returncode})")
            row[side] = json.loads(m.group(1))
            print(f"SIDE {farm} {side} {m.group(1)}", flush=True)
        table.append((farm, row))
    pc.md_table(["farm", "side", "CARE score", "anomalies detected", "normal datasets flagged", "training s",
                 "peak MiB"],
                [[farm, side, f"{r['score']:.3f}", f"{sum(r['anomaly'])}/{len(r['anomaly'])}",
                  f"{sum(r['normal'])}/{len(r['normal'])}", f"{r['train_s']:.1f}", f"{r['peak_mib']:.0f}"]
                 for farm, row in table for side, r in ((s, row[s]) for s in ("authors", "gridtrain"))])
    for farm, row in table:
        g, au = row["gridtrain"], row["authors"]
        same = g["own_report"] is not None and abs(g["own_report"] - g["score"]) <= 1e-9
        print(f"CARE_VS_EFD farm={farm} gridtrain={g['score']:.3f} authors={au['score']:.3f} "
              f"(its doe report: {g['own_report']}, {'=' if same else 'DIFFERS from'} CAREScore on its alarms) "
              f"train_s_gridtrain={g['train_s']:.1f} "
              f"train_s_authors={au['train_s']:.1f}")


if __name__ == "__main__":
    main()
