#!/usr/bin/python3
"""tests/import/test_care_protocol.py: the CARE to Compare authors' protocol,
one model per event dataset, as a DOE sweep (data.care_event, the factor
care_event = all, the report's CARE section) on the realistic fixture
(tests/import/realistic.py care(..., pred_days=26): turbine 0 has an anomaly
event dataset 10 and a normal one, 11, overlapping it by 20 days; turbines 1
and 2 have the normal event datasets 20 and 30; the first event dataset of
every turbine predicts its last 26 days, so that event 10's prediction part
holds the bearing drift before its labelled anomaly), with the
normal-behaviour model (data.pdm_target = nbm):

* import writes each event dataset's training part (/care_events
  train_start_row, train_end_row): the rows its CSV flags train;
* `doe expand` of care_event = all lists the four event ids;
* every cell trains only on its event dataset's training part: the row
  ranges in the log are those of the CSV's train_test flags, and the
  windows per turbine (data_used.csv) are exactly the windows of the
  training part (train + validation) and of the prediction part, none on
  the other turbines;
* every cell scores exactly its prediction part: its eval.json evaluates
  that event dataset only, over the prediction rows of the CSV, none of
  them in training;
* the report's per-event values equal an independent computation of the
  authors' per-event scores (coverage, accuracy, earliness, criticality
  >= 72; the fixture is Wind Farm A: every row is normal_index, as the
  authors' ignore_normal_index) from `predict`'s alarms of that cell (same
  threshold as eval), and
  its overall and per-farm CARE scores the authors' final formula over them
  (the anomaly event dataset detected: the weighted formula, not a special
  rule); its event recall and false alarms per turbine-day the sums over the
  cells;
* data.care_event naming an id the file does not have: exit 2, one line
  naming the file and the id;
* a file written before the training part was stored (the two columns
  removed) validates, evaluates a run exactly as the new file does, and
  refuses data.care_event with exit 2 naming the file; one of the two
  columns alone is a schema error naming it.

usage: test_care_protocol.py GRIDTRAIN
"""
import csv
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import h5py
    import numpy as np
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)
import realistic  # noqa: E402
from care_score import care_event, final  # noqa: E402
from checks import FAIL, ck, runner  # noqa: E402

GT = sys.argv[1]
gt = runner(GT)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
W, STRIDE, SPLIT_TRAIN, SPLIT_VAL = 36, 6, 0.75, 0.25

d = tempfile.mkdtemp(prefix="gt_care_protocol_")
farm = os.path.join(d, "Wind Farm A")
realistic.care(farm, days=40, pred_days=26)
h5 = os.path.join(d, "care.h5")
p = gt("import", "care", farm, "-o", h5)
ck("care import exits 0", p.returncode == 0, p.stderr[-1500:])

# the fixture's flags: rows of each event dataset (the CSV's id column is the turbine's grid row here)
flags = {}
for name in sorted(os.listdir(os.path.join(farm, "datasets"))):
    eid = int(name.split(".")[0])
    with open(os.path.join(farm, "datasets", name)) as f:
        rows = list(csv.reader(f, delimiter=";"))[1:]
    tr = [int(r[2]) for r in rows if r[3] == "train"]
    pr = [int(r[2]) for r in rows if r[3] == "prediction"]
    flags[eid] = {"asset": int(rows[0][1]), "train": (min(tr), max(tr) + 1, len(tr)),
                  "pred": (min(pr), max(pr) + 1, len(pr))}
with h5py.File(h5, "r") as f:
    ce = {k: f["care_events/" + k][:] for k in f["care_events"]}
    ev_tab = {k: f["events/" + k][:] for k in ("turbine", "start_row", "end_row", "kind")}
    row_off = f["turbines/row_offset"][:]
    tid = f["turbines/id"][:]
    farm_code = f["turbines/farm"][:]
ids = [int(x) for x in ce["event_id"]]
ck(f"/care_events: the fixture's event datasets ({ids})", ids == [10, 11, 20, 30], ids)
for i, e in enumerate(ids):
    fl = flags.get(e)
    got = (int(ce["train_start_row"][i]), int(ce["train_end_row"][i]))
    ck(f"/care_events: event {e}: training part {got} = its CSV's train rows {fl['train'][:2]} "
       f"({fl['train'][2]} rows)", got == fl["train"][:2] and got[1] - got[0] == fl["train"][2], fl)
    ck(f"/care_events: event {e}: prediction part = its CSV's prediction rows",
       (int(ce["pred_start_row"][i]), int(ce["pred_end_row"][i])) == fl["pred"][:2])

matrix = os.path.join(d, "care.ini")
sweep = os.path.join(d, "sweep")
with open(matrix, "w") as f:
    f.write(f"[doe]\nname = care-protocol\ndir = {sweep}\n[factors]\ncare_event = all\n"
            f"[data]\nfile = {h5}\nwindow = {W}\nstride = {STRIDE}\nsplit_train = {SPLIT_TRAIN}\n"
            f"split_val = {SPLIT_VAL}\npdm_target = nbm\n[model]\nkind = lstm\nhidden = 16\nlayers = 1\n[optim]\n"
            "lr = 3e-3\nwarmup = 20\n[train]\nbatch = 32\nmax_steps = 400\nepochs = 0\nlog_every = 100\nseed = 1\n"
            "[run]\ncheckpoint_minutes = 0\n")
p = gt("doe", "expand", matrix)
lv = re.findall(r"^\d+\s+[0-9a-f]{12}\s+(\d+)$", p.stdout, re.M)
ck(f"doe expand: care_event = all is one cell per event dataset ({lv})", p.returncode == 0
   and lv == ["10", "11", "20", "30"], p.stdout + p.stderr[-800:])
p = gt("doe", "run-all", matrix, "-j", "2")
ck("doe run-all: every event dataset's training and evaluation exit 0", p.returncode == 0, p.stderr[-2000:])
p = gt("doe", "report", sweep, "--no-plots")
ck("doe report exits 0", p.returncode == 0, p.stderr[-1500:])
with open(os.path.join(sweep, "sweep.json")) as f:
    cells = {c["factors"]["care_event"]: c["id"] for c in json.load(f)["cells"]}


def grid(lo, hi):  # windows of [lo, hi) on the stride grid (gt_data: starts at multiples of the stride)
    first = (lo + STRIDE - 1) // STRIDE * STRIDE
    return (hi - W - first) // STRIDE + 1 if hi - W >= first else 0


def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9)


def num(x):
    return None if x in ("", None) else float(x)


with open(os.path.join(sweep, "report", "care_protocol.csv")) as f:
    rep = list(csv.DictReader(f))
rep_ev = {int(r["id"]): r for r in rep if r["scope"] == "event"}
ck(f"care_protocol.csv: one row per event dataset ({sorted(rep_ev)})", sorted(rep_ev) == ids, rep[:2])
mine, sums = [], [0, 0, 0, 0]
for i, e in enumerate(ids):
    cid = cells.get(str(e))
    cd = os.path.join(sweep, "cells", str(cid))
    ok = cid is not None and os.path.exists(os.path.join(cd, "eval.json"))
    ck(f"event {e}: cell {cid} finished", ok)
    if not ok:
        continue
    t = int(ce["turbine"][i])
    tr, pr = flags[e]["train"], flags[e]["pred"]
    # training: only the event dataset's own training part (log) and only its windows (data_used.csv)
    with open(os.path.join(cd, "train.log")) as f:
        log = f.read()
    m = re.search(r"CARE event dataset %d \((\w+), turbine file index (\d+)\): training part rows \[(\d+), (\d+)\) "
                  r"\((\d+) rows: train \[(\d+), (\d+)\), validation \[(\d+), (\d+)\)\), prediction part rows "
                  r"\[(\d+), (\d+)\) \((\d+) rows\)" % e, log)
    ck(f"event {e}: the log names its training part", m is not None, log[-1500:])
    if m:
        g = [int(x) for x in m.groups()[1:]]
        ck(f"event {e}: trained on rows [{g[1]}, {g[2]}) = its {tr[2]} train-flagged rows, split {g[5] - g[4]} / "
           f"{g[7] - g[6]}; prediction part [{g[8]}, {g[9]}) = its {pr[2]} prediction rows",
           g[0] == t and (g[1], g[2], g[3]) == tr and g[4] == tr[0] and g[5] == tr[0] + round(SPLIT_TRAIN * tr[2])
           and g[6] == g[5] and g[7] == tr[1] and (g[8], g[9], g[10]) == pr, (g, tr, pr))
    with open(os.path.join(cd, "data_used.csv")) as f:
        used = {int(r["file_index"]): int(r["windows"]) for r in csv.DictReader(f)}
    b1 = tr[0] + round(SPLIT_TRAIN * tr[2])
    want = {k: 0 for k in range(len(tid))}
    want[t] = grid(tr[0], b1) + grid(b1, tr[1]) + grid(pr[0], pr[1])
    ck(f"event {e}: windows per turbine {used} = those of its training and prediction parts {want}", used == want)
    with open(os.path.join(cd, "eval.json")) as f:
        ej = json.load(f)
    pdm = ej["pdm"]
    ecf = ej["eval_config"]
    ck(f"event {e}: eval.json records the settings of the result (eval_config pdm_level {ecf.get('pdm_level')}, "
       f"pdm_flat_line {ecf.get('pdm_flat_line')}; calibration level {pdm['calibration'].get('level')})",
       ecf.get("pdm_level") == "quantile" and ecf.get("pdm_flat_line") is True
       and pdm["calibration"].get("level") == "quantile" and pdm["calibration"].get("flat_line") is True, ecf)
    evs = pdm["care_protocol"]["events"]
    evald = [x["event_id"] for x in evs if x["evaluated"]]
    mine_e = [x for x in evs if x["event_id"] == e][0]
    ck(f"event {e}: eval scores that event dataset only ({evald}), over its {pr[2]} prediction rows, none in "
       f"training ({mine_e['rows_in_training']})", evald == [e] and mine_e["rows"] == pr[2]
       and mine_e["rows_in_training"] == 0, mine_e)
    ck(f"event {e}: the event metrics cover the prediction part ({pdm['event']['turbine_days']} turbine-days)",
       abs(pdm["event"]["turbine_days"] - pr[2] / 144) < 1e-9, pdm["event"])
    # predict: the cell's alarms (same calibration) -> the authors' per-event values, computed here
    pred = os.path.join(d, f"pred_{e}.h5")
    p = gt("predict", cd, h5, "-o", pred)
    ck(f"event {e}: predict exits 0", p.returncode == 0, p.stderr[-800:])
    if p.returncode:
        continue
    with h5py.File(pred, "r") as f:
        alarm = f["alarm"][row_off[t]:row_off[t + 1]]
        ck(f"event {e}: predict's threshold is eval's", abs(f.attrs["threshold"] - pdm["threshold"])
           <= 1e-9 * abs(pdm["threshold"]))
    ps, pe = pr[0], pr[1]
    normal = np.ones(row_off[t + 1] - row_off[t], bool)
    for k in range(len(ev_tab["kind"])):
        if ev_tab["turbine"][k] == t and ev_tab["kind"][k] != 1 and farm_code[t] != 0:
            normal[ev_tab["start_row"][k]:ev_tab["end_row"][k]] = False  # Wind Farm A: ignore_normal_index
    an = bool(ce["label"][i] == 1)
    ref = care_event(alarm[ps:pe], normal[ps:pe], int(ce["event_start_row"][i]) - ps,
                     int(ce["event_end_row"][i]) - ps, an)
    ref["anomaly"] = an
    mine.append(ref)
    r = rep_ev.get(e, {})
    got = {k: num(r.get(k)) for k in ("coverage", "accuracy", "earliness", "max_criticality")}
    ck(f"event {e}: the report's values {got} = the authors' per-event scores of its alarms "
       f"(criticality {ref['max_criticality']}, detected {ref['detected']})",
       all(close(got[k], ref[k]) for k in ("coverage", "accuracy", "earliness", "max_criticality"))
       and int(r.get("detected", -1)) == int(ref["detected"]), (got, ref))
    ev = pdm["event"]
    sums = [sums[0] + ev["n_detected"], sums[1] + ev["n_events"], sums[2] + ev["n_false_alarms"],
            sums[3] + ev["turbine_days"]]
ov = [r for r in rep if r["scope"] == "overall"]
fa = [r for r in rep if r["scope"] == "farm"]
if len(mine) == 4 and ov:
    want = final(mine)
    # the per-channel score (eval.score = auto: channel for nbm) may flag a normal event dataset whose
    # prediction part runs beyond the load its 10.5 training days saw (turbine 2): at most one of three
    det = [int(rep_ev.get(e, {}).get("detected", -1)) for e in ids]
    ck(f"report: the anomaly event dataset 10 detected (max criticality {rep_ev.get(10, {}).get('max_criticality')}), "
       f"at most one normal one ({det})", det[0] == 1 and sum(det[1:]) <= 1 and min(det) >= 0)
    ck(f"report: overall CARE score {ov[0]['care_score']} = the authors' final formula ({want})",
       close(num(ov[0]["care_score"]), want))
    ck(f"report: farm 0 ({[r['id'] for r in fa]}) = overall (one farm)",
       len(fa) == 1 and fa[0]["id"] == "0" and fa[0]["care_score"] == ov[0]["care_score"])
    rec = sums[0] / sums[1] if sums[1] else None
    ck(f"report: event recall {ov[0]['recall']} = detected / labelled events of the prediction parts "
       f"({sums[0]}/{sums[1]})", close(num(ov[0]["recall"]), rec))
    ck(f"report: false alarms per turbine-day {ov[0]['false_alarms_per_turbine_day']} = {sums[2]} / "
       f"{sums[3]:.0f} turbine-days", close(num(ov[0]["false_alarms_per_turbine_day"]), sums[2] / sums[3]))
with open(os.path.join(sweep, "report", "report.md")) as f:
    md = f.read()
ck("report.md has the CARE protocol section", "CARE to Compare protocol (one training per event dataset)" in md)
ck("report.md lists the cells' evaluation settings (eval.level, eval.flat_line)",
   "Evaluation settings of every finished cell (eval.json eval_config): eval.level = quantile, eval.flat_line = "
   "true, eval.quantile = 0.999, eval.margin = 1.5" in md, [ln for ln in md.splitlines() if "settings" in ln])

# an event id the file does not have
cfg = os.path.join(sweep, "cells", cells.get("10", "x"), "cell.ini")
p = gt("train", cfg, f"run.dir={os.path.join(d, 'run_bad')}", "data.care_event=99")
lines = [ln for ln in p.stderr.splitlines() if "error" in ln]
ck("data.care_event = 99: exit 2, one line naming the file and the id",
   p.returncode == 2 and len(lines) == 1 and h5 in lines[0] and "99" in lines[0], (p.returncode, p.stderr[-600:]))

# a file from before the training part: the two columns removed
old = os.path.join(d, "old.h5")
shutil.copy(h5, old)
with h5py.File(old, "a") as f:
    del f["care_events/train_start_row"], f["care_events/train_end_row"]
p = gt("inspect", old)
ck("old file (no training part): inspect validates it", p.returncode == 0, p.stderr[-600:])
plain = os.path.join(d, "run_plain")
plain_ini = os.path.join(d, "plain.ini")
with open(cfg) as f, open(plain_ini, "w") as g:
    g.writelines(ln for ln in f if not ln.startswith("care_event"))
p = gt("train", plain_ini, f"run.dir={plain}")
ck("a run without data.care_event: train + eval exit 0", p.returncode == 0, p.stderr[-1200:])
with open(os.path.join(plain, "eval.json")) as f:
    new_pdm = json.load(f)["pdm"]
p = gt("eval", plain, old)
with open(os.path.join(plain, "eval.json")) as f:
    old_pdm = json.load(f)["pdm"]
ck("old file: eval exits 0 with the same results as the new file (threshold, events, CARE protocol)",
   p.returncode == 0 and old_pdm == new_pdm, p.stderr[-800:])
ck("without data.care_event every event dataset is evaluated",
   [x["evaluated"] for x in new_pdm["care_protocol"]["events"]] == [True] * 4)
p = gt("train", cfg, f"run.dir={os.path.join(d, 'run_old')}", f"data.file={old}")
lines = [ln for ln in p.stderr.splitlines() if "error" in ln]
ck("old file + data.care_event: exit 2, one line naming the file (import it again)",
   p.returncode == 2 and len(lines) == 1 and old in lines[0] and "import" in lines[0], p.stderr[-600:])
half = os.path.join(d, "half.h5")
shutil.copy(h5, half)
with h5py.File(half, "a") as f:
    del f["care_events/train_end_row"]
p = gt("inspect", half)
ck("train_start_row without train_end_row: a schema error naming both",
   p.returncode == 3 and "/care_events/train_start_row" in p.stderr and "train_end_row" in p.stderr,
   (p.returncode, p.stderr[-600:]))
if FAIL:
    print(f"{len(FAIL)} check(s) failed; files kept in {d}")
    sys.exit(1)
shutil.rmtree(d, ignore_errors=True)
print("all checks passed")
