#!/usr/bin/python3
"""tests/import/test_scada_nbm.py: the normal-behaviour model (data.pdm_target
= nbm) on 10-minute SCADA in the CARE to Compare layout
(tests/import/realistic.py care(): turbine 0's gearbox bearing temperature
drifts by 12 degC over the two weeks before its labelled anomaly; turbines 1
and 2 are healthy). `import care -> train (nbm) -> eval -> predict`:

* the run predicts the 4 condition channels (bearing avg, gearbox oil,
  generator winding, hydraulic pressure) from the 15 operating channels
  (wind, power, rotor/generator speed, angles, reactive power, ambient
  temperature); the energy counter is unused;
* with the calibration rows before the drift (split 0.3 / 0.1), the anomaly
  event dataset of turbine 0 is detected (the authors' CARE protocol,
  criticality >= 72), the anomaly score of turbine 0 during the labelled
  anomaly (days 34-36) is above the threshold for most rows, and the healthy
  turbines raise at most 0.1 false alarms per turbine-day;
* predict writes the same threshold as eval and finite scores;
* with per-turbine normalisation (data.norm = turbine) and training rows of
  the CARE train flag only (data.train_conditions = 0,2) the event is still
  detected, and predict computes the same statistics as eval;
* eval.turbine_offset: a constant offset of one turbine's bearing sensor
  leaves threshold and alarms as they were (it is that turbine's mean
  residual), and changes them without the option;
* eval_scores.csv and predict name the top channel: the drifting bearing
  during the anomaly;
* eval.envelope: a storm beyond the training rows' wind speeds is not
  scored (counted, the wind channel named, NaN in predict);
* a file without target channels under the configured patterns is refused
  with exit 2 naming the file;
* a run stored before data.pdm_target existed (its config.ini without the
  nbm keys) evaluates exactly as the next-step detector it was.

usage: test_scada_nbm.py GRIDTRAIN
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)
import realistic  # noqa: E402
from checks import FAIL, ck, runner  # noqa: E402

GT = sys.argv[1]
gt = runner(GT)


os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
d = tempfile.mkdtemp(prefix="gt_nbm_")
farm = os.path.join(d, "Wind Farm A")
realistic.care(farm, days=40)
h5 = os.path.join(d, "care.h5")
p = gt("import", "care", farm, "-o", h5)
ck("care import exits 0", p.returncode == 0, p.stderr[-1500:])
cfg = os.path.join(d, "nbm.ini")
with open(cfg, "w") as f:
    f.write(f"[data]\nfile = {h5}\nwindow = 36\nstride = 6\nsplit_train = 0.3\nsplit_val = 0.1\npdm_target = nbm\n"
            "[model]\nkind = lstm\nhidden = 32\nlayers = 1\n[optim]\nlr = 3e-3\nwarmup = 50\n"
            "[train]\nbatch = 32\nmax_steps = 1500\nepochs = 0\nlog_every = 500\nseed = 1\n"
            "[run]\ncheckpoint_minutes = 0\n")
run = os.path.join(d, "run_nbm")
p = gt("train", cfg, f"run.dir={run}")
ck("nbm: train + eval exit 0", p.returncode == 0, p.stderr[-2000:])
ck("nbm: the log names the channel roles",
   "normal-behaviour model: 4 condition channels predicted from 15 operating channels (2 unused)" in p.stderr,
   p.stderr[-2000:])
with open(os.path.join(run, "eval.json")) as f:
    pdm = json.load(f)["pdm"]
thr = pdm["threshold"]
ck("nbm: eval.json names the detector", pdm.get("detector") == "nbm", pdm.get("detector"))
ev = {e["event_id"]: e for e in pdm["care_protocol"]["events"]}
ck(f"nbm: turbine 0's anomaly event dataset detected (max criticality {ev.get(10, {}).get('max_criticality')})",
   ev.get(10, {}).get("detected") is True, ev.get(10))
fa = {b["id"]: b["false_alarms_per_turbine_day"] for b in pdm["by_turbine"]}
ck(f"nbm: healthy turbines 1, 2: <= 0.1 false alarms per turbine-day ({fa.get(1)}, {fa.get(2)})",
   fa.get(1, 1) <= 0.1 and fa.get(2, 1) <= 0.1, fa)
# anomaly events vs operating-status periods (/legend/event_kind status_*): the healthy turbines' labelled
# periods are status periods, not anomalies; turbine 0's anomaly is found
bt = {b["id"]: b for b in pdm["by_turbine"]}
ck("nbm: healthy turbines have status periods but no anomaly event in their evaluation rows",
   all(bt[i]["n_anomaly_events"] == 0 and bt[i]["n_events"] >= 1 for i in (1, 2)),
   [(bt[i]["n_events"], bt[i]["n_anomaly_events"]) for i in (1, 2)])
ck(f"nbm: anomaly recall {pdm['event'].get('anomaly_recall')} = 1 (turbine 0's anomaly), event recall "
   f"{pdm['event']['recall']} counts the status periods too",
   pdm["event"]["n_anomaly_events"] >= 1 and pdm["event"]["anomaly_recall"] == 1.0
   and pdm["event"]["n_anomaly_events"] < pdm["event"]["n_events"], pdm["event"])
# eval_scores.csv: turbine 0 (the turbine with the most events) from its test split, time_h score label
with open(os.path.join(run, "eval_scores.csv")) as f:
    head = f.readline()
m = re.search(r"turbine id (\d+) .*rows (\d+)\.\.", head)
ck("eval_scores.csv traces turbine 0", m is not None and m.group(1) == "0", head)
if m:
    a = np.loadtxt(os.path.join(run, "eval_scores.csv"), usecols=(0, 1, 2))
    top = np.loadtxt(os.path.join(run, "eval_scores.csv"), usecols=(3,), dtype=str)
    day = a[:, 0] / 24 + int(m.group(2)) / 144
    ev_rows = (day >= 34) & (day < 36)
    above = float(np.mean(a[ev_rows, 1] > thr)) if ev_rows.any() else 0.0
    ck(f"nbm: turbine 0's score above the threshold {thr:.3g} on {100 * above:.0f}% of the anomaly's rows (>= 60%)",
       above >= 0.6)
    # the 4th column names the channel with the largest term: the drifting bearing during the anomaly
    bear = float(np.mean(top[ev_rows] == "sensor_gearbox_bearing_avg")) if ev_rows.any() else 0.0
    ck(f"nbm: eval_scores.csv names the bearing as the top channel on {100 * bear:.0f}% of the anomaly's rows "
       "(>= 80%)", bear >= 0.8, list(top[ev_rows][:10]))
# predict: the same calibration, finite scores of every turbine after its first window
pred = os.path.join(d, "pred.h5")
p = gt("predict", run, h5, "-o", pred)
ck("nbm: predict exits 0", p.returncode == 0, p.stderr[-1500:])
try:
    import h5py
    with h5py.File(pred, "r") as f:
        ck("nbm: predict's threshold is eval's", abs(f.attrs["threshold"] - thr) <= 1e-9 * abs(thr),
           (f.attrs["threshold"], thr))
        s = f["score"][:]
        nenv = int(f.attrs["envelope_rows_not_scored"])  # outside the training rows' wind range (eval.envelope)
        # each turbine's first T + 3 EWMA spans (36 + 3 x 36 rows) are not scored: predicted without context,
        # they start the EWMA (they raised an alarm at the start of every turbine)
        ro = f["turbines/row_offset"][:]
        warm = 36 + 3 * 36
        ck("nbm: predict leaves each turbine's first T + 3 spans unscored, no alarm there, scores after them",
           all(np.isnan(s[a:a + warm]).all() and not f["alarm"][a:a + warm].any() and np.isfinite(s[a + warm])
               for a in ro[:-1]), [np.isfinite(s[a:a + warm + 1]).sum() for a in ro[:-1]])
        ck(f"nbm: predict scores finite ({np.isfinite(s).mean():.3f} of the rows; {nenv} outside the envelope)",
           (np.isfinite(s).sum() + nenv + warm * (len(ro) - 1)) / len(s) > 0.99 and nenv < 0.05 * len(s))
        # /top_channel indexes /channels: turbine 0's alarm rows name the bearing, the other rows other channels too
        names = [x.decode() for x in f["channels"][:]]
        tc, al = f["top_channel"][:], f["alarm"][:].astype(bool)
        t0 = slice(int(f["turbines/row_offset"][0]), int(f["turbines/row_offset"][1]))
        named = [names[i] if i >= 0 else "-" for i in tc[t0][al[t0]]]
        share = named.count("sensor_gearbox_bearing_avg") / max(len(named), 1)
        ck(f"nbm: predict's top channel on turbine 0's {len(named)} alarm rows is the bearing ({100 * share:.0f}% >= 80%)",
           len(named) > 0 and share >= 0.8, sorted(set(named)))
        ck("nbm: predict's top channel is -1 or a target channel index",
           tc.min() >= -1 and tc.max() < len(names) and len(set(tc[tc >= 0].tolist())) >= 2)
        ck("nbm: predict's top channel is -1 exactly where there is no score (rows outside the envelope too)",
           np.array_equal(tc < 0, ~np.isfinite(s)), int(((tc >= 0) & ~np.isfinite(s)).sum()))
except ImportError:
    print("h5py missing: predict output not read back")
# eval.calibrate = train_val: the calibration starts T + 3 EWMA spans into each turbine (its first rows are
# predicted without context and start the EWMA; they set the threshold: 5.7 x the validation quantile)
tv = os.path.join(d, "run_nbm_tv")
shutil.copytree(run, tv)
p = gt("eval", tv, "eval.calibrate=train_val")
with open(os.path.join(tv, "eval.json")) as f:
    ctv = json.load(f)["pdm"]["calibration"]
qv = pdm["calibration"]["quantile_value"]
ck(f"eval.calibrate = train_val: the quantile is of normal rows ({ctv['quantile_value']:.3g}, validation {qv:.3g})",
   p.returncode == 0 and ctv["rows"] == "train_val" and ctv["quantile_value"] < 2.5 * qv, p.stderr[-800:])
# per-turbine normalisation, training rows of the CARE train flag only (codes 0 train, 2 train_and_prediction):
# trains and detects the event; predict computes the same per-turbine statistics as eval (same threshold)
tn = os.path.join(d, "run_nbm_turbine")
p = gt("train", cfg, f"run.dir={tn}", "data.norm=turbine", "data.train_conditions=0,2")
ck("nbm, data.norm = turbine, train_conditions 0,2: train + eval exit 0", p.returncode == 0, p.stderr[-2000:])
with open(os.path.join(tn, "eval.json")) as f:
    pt = json.load(f)["pdm"]
ev = {e["event_id"]: e for e in pt["care_protocol"]["events"]}
ck("nbm, data.norm = turbine: turbine 0's anomaly event dataset detected", ev.get(10, {}).get("detected") is True,
   ev.get(10))
ck("nbm, data.norm = turbine: another threshold than with the global statistics", pt["threshold"] != thr)
p = gt("predict", tn, h5, "-o", os.path.join(d, "pred_t.h5"))
try:
    import h5py
    with h5py.File(os.path.join(d, "pred_t.h5"), "r") as f:
        ck("nbm, data.norm = turbine: predict's threshold is eval's", p.returncode == 0
           and abs(f.attrs["threshold"] - pt["threshold"]) <= 1e-9 * abs(pt["threshold"]), p.stderr[-800:])
except (ImportError, OSError) as e:
    ck("nbm, data.norm = turbine: predict output readable", isinstance(e, ImportError), e)
# eval.turbine_offset: a sensor offset of one turbine (its bearing +5 degC in every row) is its mean residual on
# the calibration rows; removed, the scores are those of the file without it (the nbm input never sees the
# bearing); without the option the offset moves the scores (the control)


def edited_copy(name, channel, edit):
    """A copy of the imported file with edit(signals, column of channel, row offsets) applied."""
    import h5py
    path = os.path.join(d, name)
    shutil.copy(h5, path)
    with h5py.File(path, "a") as f:
        names = [x.decode() for x in f["channels/name"][:]]
        edit(f["signals"], names.index(channel), f["turbines/row_offset"][:])
    return path


def eval_cases(key, cases):
    """eval of the nbm run on (file, value of key) cases: {(file, value): (eval.json's pdm, stderr)}"""
    out = {}
    for data, opt in cases:
        p = gt("eval", run, data, f"{key}={opt}")
        ck(f"eval {os.path.basename(data)} {key}={opt}: exit 0", p.returncode == 0, p.stderr[-800:])
        with open(os.path.join(run, "eval.json")) as f:
            out[(data, opt)] = (json.load(f)["pdm"], p.stderr)
    return out


def plus5(sig, c, ro):
    sig[ro[1]:ro[2], c] = sig[ro[1]:ro[2], c] + 5.0


def storm_day(sig, c, ro):
    wmax = float(np.nanmax(sig[:, c]))
    sig[ro[3] - 144:ro[3], c] = np.full(144, 1.6 * wmax, dtype=np.float32)


try:
    off = edited_copy("offset.h5", "sensor_gearbox_bearing_avg", plus5)
    res = {k: v[0] for k, v in
           eval_cases("eval.turbine_offset", ((h5, "true"), (off, "true"), (off, "false"))).items()}
    a, b, x = res[(h5, "true")], res[(off, "true")], res[(off, "false")]
    ck("turbine_offset: eval.json says so", a["calibration"]["turbine_offset"] is True
       and x["calibration"]["turbine_offset"] is False)
    ck(f"turbine_offset: a turbine's sensor offset leaves the threshold ({a['threshold']:.6g} vs {b['threshold']:.6g}) "
       "and the alarms as they were", abs(a["threshold"] - b["threshold"]) <= 1e-4 * a["threshold"]
       and a["event"] == b["event"] and a["care_protocol"] == b["care_protocol"])
    ck(f"without turbine_offset the offset changes the scores (threshold {x['threshold']:.6g})",
       abs(x["threshold"] - a["threshold"]) > 1e-3 * a["threshold"] or x["event"] != a["event"])
except ImportError:
    print("h5py missing: the turbine offset case is skipped")
# eval.envelope: a storm on healthy turbine 2 (wind speed 1.6x the file's maximum for its last day) leaves the
# training rows' range: those rows (and the window after them) are not scored, eval.json counts them and names
# the wind channel, predict's scores are NaN there; eval.envelope = -1 scores them (the control); the file
# without the storm has a few rows outside already (its later weeks are windier than the training days)
try:
    import h5py
    storm = edited_copy("storm.h5", "wind_speed_3_avg", storm_day)
    env = {k: (v[0]["envelope"], v[1]) for k, v in
           eval_cases("eval.envelope", ((h5, "0.1"), (storm, "0.1"), (storm, "-1"))).items()}
    e0, e1, e2 = env[(h5, "0.1")][0], env[(storm, "0.1")][0], env[(storm, "-1")][0]
    n0, n1 = e0["rows_not_scored"], e1["rows_not_scored"]
    ck(f"envelope: the fixture's later weeks are windier than its training days: a few rows out ({n0} of "
       f"{e0['rows_scored_before']})", n0 < 0.05 * e0["rows_scored_before"], e0)
    ck(f"envelope: the storm's day and the window after it add at most 144 + 35 rows ({n0} -> {n1}) and the "
       "wind channel is named", n0 < n1 <= n0 + 144 + 35 and e1.get("channel") == "wind_speed_3_avg"
       and "wind_speed_3_avg" in env[(storm, "0.1")][1], e1)
    ck("envelope = -1: every row scored", e2["rows_not_scored"] == 0, e2)
    ps = os.path.join(d, "pred_storm.h5")
    p = gt("predict", run, storm, "-o", ps)
    with h5py.File(ps, "r") as f:
        r1 = int(f["turbines/row_offset"][3])
        sc = f["score"][:]
        ck("envelope: predict's scores of the storm rows are NaN, those before it finite",
           p.returncode == 0 and np.isnan(sc[r1 - 144:r1]).all() and np.isfinite(sc[r1 - 300:r1 - 144]).all()
           and f.attrs["envelope_rows_not_scored"] == n1, p.stderr[-800:])
        ck("envelope: predict's storm rows name no top channel",
           (f["top_channel"][r1 - 144:r1] == -1).all(), f["top_channel"][r1 - 144:r1])
except ImportError:
    print("h5py missing: the envelope case is skipped")
# no target channel under the patterns: a clear one-line error naming the file
p = gt("train", cfg, f"run.dir={os.path.join(d, 'run_bad')}", "data.nbm_targets=no_such_channel*")
ck("nbm without target channels: exit 2 naming the file and the setting",
   p.returncode == 2 and h5 in p.stderr and "data.nbm_targets" in p.stderr, (p.returncode, p.stderr[-800:]))
# a stored run from before data.pdm_target: the next-step detector, unchanged
nxt = os.path.join(d, "run_next")
p = gt("train", cfg, f"run.dir={nxt}", "data.pdm_target=next", "train.max_steps=20")
ck("next: train + eval exit 0", p.returncode == 0, p.stderr[-1500:])
with open(os.path.join(nxt, "eval.json")) as f:
    before = json.load(f)["pdm"]
ck("next: eval.json names the detector", before.get("detector") == "next", before.get("detector"))
ci = os.path.join(nxt, "config.ini")
with open(ci) as f:
    lines = f.readlines()
kept = [ln for ln in lines if not re.match(r"\s*(pdm_target|nbm_inputs|nbm_targets)\s*=", ln)]
ck("next: the stored configuration names data.pdm_target", len(kept) < len(lines))
with open(ci, "w") as f:
    f.writelines(kept)
p = gt("eval", nxt, h5)
ck("stored run without the nbm keys: eval exits 0", p.returncode == 0, p.stderr[-1500:])
with open(os.path.join(nxt, "eval.json")) as f:
    after = json.load(f)["pdm"]
ck("stored run without the nbm keys: the same threshold and event metrics as the next-step run",
   after["threshold"] == before["threshold"] and after["event"] == before["event"],
   (after["threshold"], before["threshold"]))
# multi-model eval: the envelope uses the normal-behaviour model's roles wherever it is in the list
storm = os.path.join(d, "storm.h5")
if os.path.exists(storm):
    rows = {}
    for main_run, other in ((run, nxt), (nxt, run)):
        p = gt("eval", main_run, storm, f"eval.models={other}")
        with open(os.path.join(main_run, "eval.json")) as f:
            rows[main_run] = json.load(f)["pdm"]["envelope"]["rows_not_scored"] if p.returncode == 0 else -1
    ck(f"eval.models: the envelope applies with the nbm run first or second ({rows[run]}, {rows[nxt]} rows)",
       rows[run] > 0 and rows[nxt] > 0, p.stderr[-800:])
if FAIL:
    print(f"{len(FAIL)} check(s) failed; files kept in {d}")
    sys.exit(1)
shutil.rmtree(d, ignore_errors=True)
print("all checks passed")
