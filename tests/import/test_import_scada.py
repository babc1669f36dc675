#!/usr/bin/python3
"""tests/import/test_import_scada.py: 10-minute wind-farm SCADA recordings in
the CARE to Compare layout (tests/import/realistic.py care(): standstill and
rated regimes, curtailment, status periods, temperatures following the load,
min/max/std aggregates, angles, an energy counter, a slow bearing-temperature
drift before the labelled anomaly, two overlapping event files of one
turbine) go through `gridtrain import care -> train (lstm) -> eval`:

* with the default data.spike_channels = auto the spike test runs on the
  condition channels only and screens no window of this fault-free recording
  for spikes; < 5 % of the windows are screened in all (the labelled event
  rows, left out of training by data.train_normal_only);
* with data.spike_channels = all (the spike test on every channel, as before
  the channel kinds) the normal operation of rotor speed, power and the
  aggregates is flagged as spikes, > 20 % of the windows are screened, and the
  run warns naming the channels and the setting;
* the log names how many channels of each kind the file has.

usage: test_import_scada.py GRIDTRAIN
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy  # noqa: F401  (realistic.py)
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)
import realistic  # noqa: E402

GT = sys.argv[1]
FAIL = []


def ck(name, cond, extra=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else "  " + str(extra)))
    if not cond:
        FAIL.append(name)


def gt(*args):
    return subprocess.run([GT, *args], capture_output=True, text=True, errors="replace", timeout=600)


d = tempfile.mkdtemp(prefix="gt_scada_")
farm = os.path.join(d, "Wind Farm A")
realistic.care(farm, days=40)
h5 = os.path.join(d, "care.h5")
p = gt("import", "care", farm, "-o", h5)
ck("care import exits 0", p.returncode == 0, p.stderr[-1500:])
cfg = os.path.join(d, "l.ini")
with open(cfg, "w") as f:
    f.write(f"[data]\nfile = {h5}\nwindow = 36\nstride = 6\n[model]\nkind = lstm\nhidden = 16\nlayers = 1\n"
            "[train]\nbatch = 32\nmax_steps = 10\nepochs = 0\nlog_every = 5\n[run]\ncheckpoint_minutes = 0\n")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
res = {}
for sc in ("auto", "all"):
    run = os.path.join(d, "run_" + sc)
    p = gt("train", cfg, f"run.dir={run}", f"data.spike_channels={sc}")
    ck(f"spike_channels={sc}: train + eval exit 0", p.returncode == 0, p.stderr[-2000:])
    with open(os.path.join(run, "data_used.csv")) as f:
        rows = list(csv.DictReader(f))
    res[sc] = dict(win=sum(int(r["windows"]) for r in rows), kept=sum(int(r["kept"]) for r in rows),
                   spike=sum(int(r["screened_spike"]) for r in rows), log=p.stderr)
a, b = res["auto"], res["all"]
ck(f"auto: no window screened for spikes ({a['spike']})", a["spike"] == 0)
ck(f"auto: < 5% of the windows screened ({a['win'] - a['kept']} of {a['win']})", a["win"] - a["kept"] < 0.05 * a["win"])
ck("auto: the log counts the channel kinds",
   "5 condition, 6 operational, 2 angle, 8 min/max/std; the spike test runs on 5" in a["log"], a["log"][-2000:])
ck(f"all: > 20% of the windows screened ({b['win'] - b['kept']} of {b['win']})", b["win"] - b["kept"] > 0.2 * b["win"])
ck("all: the warning names spikes, the channels and data.spike_channels",
   "mostly for spikes" in b["log"] and "most on sensor_" in b["log"] and "data.spike_channels" in b["log"],
   b["log"][-2000:])
if not FAIL:
    shutil.rmtree(d, ignore_errors=True)
print(f"{len(FAIL)} failed" if FAIL else "all passed")
sys.exit(1 if FAIL else 0)
