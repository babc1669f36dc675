#!/usr/bin/python3
"""tests/import/test_import_ident.py: identity and time of imported data
(issue #37, class 6), on fixtures crafted here.

* Event and house numbers in names: one number has one spelling. 010.csv
  beside 10.csv was one event read twice (sscanf read both as 10, then opened
  10.csv for each); house_01 beside house_1 likewise. Refused with one line
  naming both (exit 3); a lone 010.csv names the canonical name; "+10.csv"
  (strtol's sign) is not an event file name.
* The farm code comes from the folder's last letter; a folder that does not
  end in a letter was farm 0 without a word: refused naming it, --farm N sets
  the code; "Wind Farm B/" (a trailing slash) is farm 1.
* Calendar: 29 February of a year that is not a leap year and a ":60" second
  are bad time stamps (a data row is a bad line naming FILE:LINE; an event's
  start in event_info.csv an error); 29 February 2020 is a real day.
* /care_events/event_id: a negative or a repeated id fails the schema check
  (`inspect`, exit 3, one line naming the entries), and `doe expand` of a
  matrix with care_event = all refuses the same file through the same check.
Every refusal leaves the existing output file as it was.

usage: test_import_ident.py GRIDTRAIN
"""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:
    print("skipped:", e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAIL, ck  # noqa: E402

GT = sys.argv[1]
d = tempfile.mkdtemp(prefix="gt_ident_")
S = 1582934400  # 2020-02-29 00:00:00 UTC: the farm's data runs through a real leap day
HDR = "time_stamp;asset_id;id;train_test;status_type_id;sensor_0_avg;sensor_1_avg"


def run(*args, np_=1):
    cmd = ["mpiexec", "-n", str(np_), GT, *args] if np_ > 1 else [GT, *args]
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)


def stamp(t):
    return np.datetime64(int(t), "s").astype(str).replace("T", " ")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def farm(path, events=((10, 0), (20, 1))):
    """a CARE farm: one event file per (event id, asset), 200 rows at 10 minutes, the last 50 prediction"""
    ev = ["asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id;event_description"]
    for k, (eid, asset) in enumerate(events):
        rows = [HDR]
        for i in range(200):
            rows.append(f"{stamp(S + 600 * i)};{asset};{i};{'train' if i < 150 else 'prediction'};0;"
                        f"{20 + (i * 7 + k) % 11}.5;{(i * 3) % 5}.25")
        write(f"{path}/datasets/{eid}.csv", "\n".join(rows) + "\n")
        ev.append(f"{asset};{eid};{'anomaly' if k == 0 else 'normal'};{stamp(S + 600 * 160)};160;"
                  f"{stamp(S + 600 * 170)};170;")
    write(f"{path}/event_info.csv", "\n".join(ev) + "\n")
    return path


def refused(name, p, out, *needles, code=3):
    """exit `code`, one error line holding every needle, the output file untouched"""
    err = [ln for ln in p.stderr.splitlines() if "error:" in ln]
    ok = p.returncode == code and len(err) == 1 and all(n in err[0] for n in needles)
    ck(f"{name}: exit {code}, one line naming {needles}", ok, (p.returncode, p.stderr[-800:]))
    if out:
        with open(out) as f:
            ck(f"{name}: the existing output is untouched", f.read() == "precious")


def precious():
    out = os.path.join(d, "out.h5")
    write(out, "precious")
    return out


# ------------------------------------------------------------ a good farm --
good = farm(os.path.join(d, "Wind Farm A"))
h5 = os.path.join(d, "good.h5")
p = run("import", "care", good, "-o", h5, np_=2)
ck("good farm imports (exit 0)", p.returncode == 0, p.stderr[-1500:])
with h5py.File(h5, "r") as f:
    ck("good farm: farm A is code 0, two turbines", list(f["turbines/farm"][:]) == [0, 0]
       and list(f["turbines/id"][:]) == [0, 1], f["turbines/farm"][:])
    ck("good farm: /care_events ids 10, 20", list(f["care_events/event_id"][:]) == [10, 20])
    ts = f["timestamps"][:]
    ck("good farm: 29 February 2020 is a real day (rows at 10 minutes through it)",
       ts[0] == S * 1000 and np.all(np.diff(ts[:200]) == 600000), ts[:3])

# ------------------------------------------- event file names: one spelling --
for name, files, needles in [
        ("010.csv beside 10.csv", ["010.csv"], ("datasets/010.csv", "10.csv", "leading zero", "same 10")),
        ("a lone 0020.csv", ["0020.csv"], ("datasets/0020.csv", "rename it 20.csv")),
        ("+10.csv (a sign)", ["+10.csv"], ("datasets/+10.csv", "not an event file name")),
        (" 10.csv (a blank)", [" 10.csv"], ("datasets/ 10.csv", "not an event file name")),
        ("10.5.csv", ["10.5.csv"], ("datasets/10.5.csv", "not an event file name"))]:
    src = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
    shutil.copytree(good, src)
    for fn in files:
        shutil.copy(f"{src}/datasets/10.csv", f"{src}/datasets/{fn}")
    if name.startswith("a lone"):
        os.rename(f"{src}/datasets/20.csv", f"{src}/datasets/0020.csv")
    out = precious()
    refused(f"care: {name}", run("import", "care", src, "-o", out, np_=2), out, *needles)
# hidden files and other names are not event files (an editor's .10.csv.swp, a README)
src = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
shutil.copytree(good, src)
write(f"{src}/datasets/._10.csv", "AppleDouble")
write(f"{src}/datasets/README.txt", "notes")
p = run("import", "care", src, "-o", os.path.join(d, "hidden.h5"))
ck("care: hidden files and non-.csv names beside the events are ignored", p.returncode == 0, p.stderr[-800:])

# ---------------------------------------------------- house numbers, same --
for fmt, a, b, needles in [("ukdale", "house_1", "house_01", ("house_01", "house_1", "leading zero")),
                           ("redd", "house_2", "house_002", ("house_002", "house_2", "leading zero")),
                           ("refit", "CLEAN_House3.csv", "CLEAN_House03.csv",
                            ("CLEAN_House03.csv", "CLEAN_House3.csv", "leading zero"))]:
    src = tempfile.mkdtemp(dir=d)
    for n in (a, b):
        if n.endswith(".csv"):
            write(f"{src}/{n}", "Time,Unix,Aggregate\n")
        else:
            os.makedirs(f"{src}/{n}")
    out = precious()
    refused(f"{fmt}: {b} beside {a}", run("import", fmt, src, "-o", out), out, *needles)

# ------------------------------------------------------------- farm code --
for folder, code, farm_opt in [("farm2", None, None), ("Wind Farm 7", None, None), ("farm2", 2, "2"),
                               ("Wind Farm B/", 1, None), ("wind farm c", 2, None), ("Wind Farm A", 5, "5")]:
    src = os.path.join(tempfile.mkdtemp(dir=d), folder.rstrip("/"))
    shutil.copytree(good, src)
    arg = src + ("/" if folder.endswith("/") else "")
    out = precious()
    p = run("import", "care", arg, "-o", out, *(["--farm", farm_opt] if farm_opt else []))
    if code is None:
        refused(f"care: folder '{folder}' (no letter at its end)", p, out, src, "--farm N",
                "does not end in a letter")
    else:
        ok = p.returncode == 0
        if ok:
            with h5py.File(out, "r") as f:
                ok = list(f["turbines/farm"][:]) == [code, code]
        ck(f"care: folder '{folder}'{' --farm ' + farm_opt if farm_opt else ''} is farm {code}", ok, p.stderr[-800:])
p = run("import", "ukdale", tempfile.mkdtemp(dir=d), "-o", precious(), "--farm", "1")
ck("--farm is for care only (exit 2)", p.returncode == 2 and "--farm is for care" in p.stderr, p.stderr[-400:])


# ---------------------------------------------------------------- calendar --
def edit_row(src, fn, i, col, value):
    with open(f"{src}/datasets/{fn}") as f:
        lines = f.read().splitlines()
    parts = lines[1 + i].split(";")
    parts[col] = value
    lines[1 + i] = ";".join(parts)
    write(f"{src}/datasets/{fn}", "\n".join(lines) + "\n")


for bad in ("2021-02-29 00:00:00", "2019-02-29 12:10:00", "1900-02-29 00:00:00", "2020-03-01 00:09:60",
            "2016-12-31 23:59:60", "2021-04-31 00:00:00"):
    src = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
    shutil.copytree(good, src)
    edit_row(src, "20.csv", 40, 0, bad)  # line 42 of the file
    out = precious()
    refused(f"care: time stamp '{bad}' is a bad line", run("import", "care", src, "-o", out, "--max-bad-lines", "0"),
            out, "datasets/20.csv:42:", f"bad time_stamp '{bad}")
    # skipped like any bad line by default: one warning, the rest imported
    p = run("import", "care", src, "-o", os.path.join(d, "skip.h5"))
    ck(f"care: '{bad}' skipped with one warning naming the line", p.returncode == 0
       and "datasets/20.csv" in p.stderr and "the first at line 42" in p.stderr, p.stderr[-800:])
for bad in ("2019-02-29 00:00:00", "2020-02-29 23:59:60"):
    src = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
    shutil.copytree(good, src)
    with open(f"{src}/event_info.csv") as f:
        lines = f.read().splitlines()
    parts = lines[2].split(";")
    parts[3] = bad
    lines[2] = ";".join(parts)
    write(f"{src}/event_info.csv", "\n".join(lines) + "\n")
    out = precious()
    refused(f"care: event_start '{bad}'", run("import", "care", src, "-o", out), out, "event_info.csv:3:",
            "bad event_start")


# ------------------------------------------------- /care_events/event_id --
def crafted(name, ids):
    path = os.path.join(d, name + ".h5")
    shutil.copy(h5, path)
    with h5py.File(path, "r+") as f:
        f["care_events/event_id"][:] = np.array(ids, dtype=np.int64)
    return path


matrix = os.path.join(d, "m.ini")
for name, ids, needles in [("negative", [-1, 20], ("/care_events/event_id", "entry 0 is -1", ">= 0")),
                           ("repeated", [20, 20], ("/care_events/event_id", "entries 0 and 1 are both event 20"))]:
    path = crafted(name, ids)
    refused(f"inspect: a {name} event id", run("inspect", path), None, path, *needles)
    write(matrix, f"[doe]\nname = ident\ndir = {d}/sweep\n[factors]\ncare_event = all\n[fixed]\ndata.file = {path}\n"
          "model.kind = lstm\n")
    refused(f"doe expand care_event = all: a {name} event id", run("doe", "expand", matrix), None,
            f"{matrix}:5:", path, *needles, code=2)
    cfg = os.path.join(d, "t.ini")
    write(cfg, f"[data]\nfile = {path}\nwindow = 12\nstride = 6\n[model]\nkind = lstm\nhidden = 4\nlayers = 1\n"
          "[train]\nbatch = 4\nmax_steps = 1\nepochs = 0\n")
    refused(f"train data.care_event on a {name} event id", run("train", cfg, f"run.dir={d}/run_{name}",
                                                                "data.care_event=20"), None, path, *needles)
write(matrix, f"[doe]\nname = ident\ndir = {d}/sweep\n[factors]\ncare_event = all\n[fixed]\ndata.file = {h5}\n"
      "model.kind = lstm\n")
p = run("doe", "expand", matrix)
cells = [ln.split()[-1] for ln in p.stdout.splitlines() if ln[:1].isdigit()]
ck("doe expand care_event = all on the good file: cells 10 and 20", p.returncode == 0 and cells == ["10", "20"],
   (p.returncode, p.stdout[-600:], p.stderr[-600:]))

print(f"test_import_ident: {'FAIL ' + ', '.join(FAIL) if FAIL else 'ok'}")
sys.exit(1 if FAIL else 0)
