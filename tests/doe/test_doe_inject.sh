#!/usr/bin/env bash
# DOE report with hostile factor names, levels and sweep name (issue #37,
# classes 1 and 6): gnuplot system() and backticks, $(...), <script>, table
# pipes, CSV formulas (=cmd|..., + - @), a newline, JSON quote and backslash,
# a Latin-1 byte. 'doe report' must run nothing and every output must parse
# (tests/eval/check_outputs.py: CSV column counts and no formula cell,
# Markdown table rows, HTML tags, gnuplot strings, UTF-8).
# $1: gridtrain.
set -euo pipefail
tool=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${GT_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=/usr/bin/python3
W=${GT_BINARY_DIR:-/tmp}/doe-inject-$$
rm -rf "$W" && mkdir -p "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$W"

# a hand-made finished sweep: 2 x 2 factors x 2 seeds, every cell done
"$py" - "$W/sweep" <<'PY' || fail "writing the sweep"
import json, os, sys
d = sys.argv[1]
LAT = "@LATIN1@"  # replaced by the raw byte 0xE9 below
f1 = "'.system('touch PWNED').'"
f2 = "a|b `touch PWNED` <script>"
lv1 = ["=cmd|' /C calc'!A0", "$(touch PWNED)"]
lv2 = ["<script>alert(1)</script>", "caf" + LAT + "\nx,\"y\"\\z"]
sweep = {"name": "n<i>|'.system('touch PWNED').'", "task": "pdm",
         "factors": [{"name": f1, "key": "data.machine_types", "levels": lv1},
                     {"name": f2, "key": "data.conditions", "levels": lv2},
                     {"name": "seed", "key": "train.seed", "levels": ["1", "2"]}], "cells": []}
k = 0
for a in range(2):
    for b in range(2):
        for s in range(2):
            cid = "c%02d" % k
            sweep["cells"].append({"index": k, "id": cid, "factors": {f1: lv1[a], f2: lv2[b], "seed": str(s + 1)}})
            os.makedirs(os.path.join(d, "cells", cid))
            json.dump({"id": cid, "index": k, "status": "done", "attempts": 1, "preemptions": 0, "failures": 0,
                       "exit_code": 0, "wall_s": 10}, open(os.path.join(d, "cells", cid, "cell.json"), "w"))
            ev = {"task": "pdm", "model": "lstm", "data_file": "x.h5", "nilm": None,
                  "pdm": {"threshold": 1.0, "point": {"precision": .5, "recall": .5, "f05": .5},
                          "event": {"n_events": 2, "n_detected": 1, "recall": .5, "precision": .5,
                                    "f05": .3 + .1 * a + .2 * b + .01 * s, "false_alarms_per_turbine_day": 1,
                                    "detection_delay_s_mean": 10, "turbine_days": 2}, "care_score": .5},
                  "train": {"steps": 10, "train_time_s": 5, "samples_per_s": 100, "ranks": 1, "cpu_hours": .01,
                            "gpu_hours": 0, "final_loss": .5, "best_val_loss": .4}}
            json.dump(ev, open(os.path.join(d, "cells", cid, "eval.json"), "w"))
            k += 1
text = json.dumps(sweep, ensure_ascii=False).encode("utf-8").replace(LAT.encode("utf-8"), b"\xe9")
open(os.path.join(d, "sweep.json"), "wb").write(text)
PY
"$tool" doe report "$W/sweep" >"$W/report.log" 2>&1 || { cat "$W/report.log"; fail "doe report"; }
found=$(find "$W" -name 'PWNED*' 2>/dev/null)
[ -z "$found" ] || fail "a name ran a command: $found"
"$py" "$here/../eval/check_outputs.py" "$W/sweep/report" --plot-cols heatmap.dat=3 --plot-cols effects.dat=3 \
  || fail "outputs do not parse"
"$py" - "$W/sweep/report" <<'PY' || fail "the hostile names are not where they should be"
import csv, os, sys
r = sys.argv[1]
md = open(os.path.join(r, "report.md"), encoding="utf-8").read()
html = open(os.path.join(r, "report.html"), encoding="utf-8").read()
cells = list(csv.reader(open(os.path.join(r, "cells.csv"), encoding="utf-8", newline="")))
ok = True
def ck(what, cond):
    global ok
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        ok = False
ck("cells.csv: the formula level with its ' prefix", cells[1][2] == "'=cmd|' /C calc'!A0")
ck("cells.csv: the Latin-1 level as UTF-8, its newline, comma, quote kept", cells[1][3] == "<script>alert(1)</script>"
   and any(row[3] == 'caf\u00e9\nx,"y"\\z' for row in cells[1:]))
ck("report.md: the factor name with its | escaped", "a\\|b \\`touch PWNED\\` \\<script\\>" in md)
ck("report.html: <script> as text", "&lt;script&gt;alert(1)&lt;/script&gt;" in html)
ck("report.html: the sweep name escaped in the title", "<title>DOE sweep n&lt;i&gt;|&#39;.system(" in html)
if os.path.exists(os.path.join(r, "effects.gp")):
    gp = open(os.path.join(r, "effects.gp"), encoding="utf-8").read()
    ck("effects.gp: factor=level labels, ' as U+2019",
       "'\u2019.system(\u2019touch PWNED\u2019).\u2019==cmd|\u2019 /C calc\u2019!A0' 0" in gp)
sys.exit(0 if ok else 1)
PY
if command -v gnuplot >/dev/null 2>&1; then
  for p in effects heatmap; do
    grep -q "<svg" "$W/sweep/report/$p.svg" 2>/dev/null || fail "$p.svg not drawn"
  done
fi
echo "DOE names stayed data: no command ran, every output parses"
rm -rf "$W"
