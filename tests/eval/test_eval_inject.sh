#!/usr/bin/env bash
# Names are data (issue #37, classes 1 and 6): hostile names planted in every
# name field of a file (NILM: the appliance names; PdM: channel names and the
# machine-type, condition and event-kind legends; turbine and farm are numeric
# ids and codes) and in the run directory's path go through train (its
# end-of-run report), eval and doctor --json. They try to break out of gnuplot
# strings (system(), backticks), a shell ($(...)), HTML (<script>), Markdown
# tables (|), CSV (=cmd|..., + - @) and JSON (quote, backslash, a Latin-1
# byte). Nothing may run (no PWNED file), and every output must still parse
# (tests/eval/check_outputs.py). Appliance and channel names with a newline
# or another control character are refused by the schema with one line
# (exit 3); a legend name with a newline and a control byte is written escaped.
# $1: gridtrain, $2: nilm or pdm.
set -euo pipefail
tool=$1
kind=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
py=${GT_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=/usr/bin/python3
base=${GT_BINARY_DIR:-/tmp}/eval-scratch/inject-$kind-$$
# the run directory's own name is hostile too: it reaches plot scripts and the report
run="$base/run '.system('touch PWNED').' \$(touch PWNED) \`touch PWNED\` <b>x"
rm -rf "$base" && mkdir -p "$base"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$base"

if [ "$kind" = nilm ]; then
  "$tool" synth nilm -o "$base/data.h5" synth.households=4 synth.days=0.5 synth.seed=3 >/dev/null 2>&1 || fail "synth"
else
  "$tool" synth pdm -o "$base/data.h5" --farms 1 --turbines 3 --days 0.3 --rate 1 --seed 3 >/dev/null 2>&1 \
    || fail "synth"
fi
cp "$base/data.h5" "$base/ctl.h5"
# every name field gets hostile names (at most 31 bytes, unique, no control character)
"$py" - "$base/data.h5" "$kind" <<'PY' || fail "planting the names"
import sys, h5py, numpy as np
path, kind = sys.argv[1], sys.argv[2]
evil = [b"'.system('touch PWNED').'", b"`touch PWNED`", b"$(touch PWNED)", b"<script>alert(1)</script>",
        b"a|b|c", b"=cmd|' /C calc'!A0", b"+cmd", b"-2+3", b"@SUM(A1)", b"caf\xe9 \xe9t\xe9", b'q"uo\\te',
        b"x,y;z", b"*[l](j:x)*_u_", b"# h", b"&lt;&amp;"]
def plant(f, name, skip=()):
    ds = f[name]
    n = ds.shape[0]
    names = [ds[i] for i in range(n)]
    k = 0
    for i in range(n):
        if i in skip:
            continue
        names[i] = (evil[k % len(evil)] + (b"%d" % (k // len(evil)) if k >= len(evil) else b""))[:31]
        k += 1
    ds[...] = np.array(names, dtype=ds.dtype)
    return k
with h5py.File(path, "r+") as f:
    if kind == "nilm":
        plant(f, "/appliance_meta/name")
    else:
        ch = [bytes(x).rstrip(b"\0").decode() for x in f["/channels/name"][...]]
        # the channels the operating envelope and the power curve need keep their names
        keep = {i for i, c in enumerate(ch) if c in ("wind_speed", "active_power", "rotor_speed", "generator_speed",
                                                      "pitch_angle", "ambient_temp")}
        plant(f, "/channels/name", keep)
        for leg in ("machine_type", "condition", "event_kind"):
            p = "/legend/" + leg
            if p not in f:
                continue
            ds = f[p]
            names = [bytes(x) for x in ds[...]]
            # event kinds named status_* are operating-status periods: the prefix is kept
            names = [(b"status_" if n.startswith(b"status_") else b"") + evil[(i + 3) % len(evil)] for i, n in
                     enumerate(names)]
            if len(names) > 1:  # the legends take any bytes: a newline, a control byte, a Latin-1 byte
                names[1] = b"new\nline\x01\xe9|x"
            ds[...] = np.array([x[:31] for x in names], dtype=ds.dtype)
PY

if [ "$kind" = nilm ]; then
  gt_tiny_nilm_ini "$base/train.ini" "$base/data.h5" "$run" 20 10
  cols_sample=$("$py" -c "import h5py,sys; print(2 + 2 * h5py.File(sys.argv[1])['/appliance_meta/name'].shape[0])" "$base/data.h5")
  plot_args=(--plot-cols "eval_sample.csv=$cols_sample" --plot-cols "plots/nilm_f1_ea.dat=3" --plot-cols "plots/loss.dat=2")
else
  gt_tiny_pdm_ini "$base/train.ini" "$base/data.h5" "$run" 20 10
  plot_args=(--plot-cols "eval_scores.csv=4" --plot-cols "plots/loss.dat=2")
fi
"$tool" train "$base/train.ini" train.trace=true >"$base/train.log" 2>&1 || { tail -20 "$base/train.log"; fail "train"; }
for f in manifest.json eval.json timing.json trace.json metrics.jsonl data_used.csv screened.csv report.md report.html; do
  [ -e "$run/$f" ] || fail "$f not written"
done
"$tool" eval "$run" >"$base/eval.log" 2>&1 || { tail -20 "$base/eval.log"; fail "eval"; }
# a log line in Latin-1 with a control byte, which doctor --json quotes as evidence
printf 'gridtrain: error: data: caf\xe9 \x01 "<script>" | (exit 3)\n' > "$run/hostile.log"
"$tool" doctor "$run" --json >"$base/doctor.json" 2>"$base/doctor.err" || true

found=$(find "$base" -name 'PWNED*' 2>/dev/null)
[ -z "$found" ] || fail "a name ran a command: $found"
"$py" "$here/check_outputs.py" "$run" "${plot_args[@]}" --json-text "$base/doctor.json" || fail "outputs do not parse"

# the names reached the outputs (the test tests): escaped, not dropped
"$py" - "$run" "$base/doctor.json" "$kind" <<'PY' || fail "the hostile names are not where they should be"
import json, os, sys
run, doc, kind = sys.argv[1:4]
ev = json.load(open(os.path.join(run, "eval.json"), encoding="utf-8"))
md = open(os.path.join(run, "report.md"), encoding="utf-8").read()
html = open(os.path.join(run, "report.html"), encoding="utf-8").read()
ok = True
def ck(what, cond):
    global ok
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        ok = False
if kind == "nilm":
    names = [a["name"] for a in ev["nilm"]["test"]["appliances"]]
    ck("eval.json keeps a hostile name exactly", "'.system('touch PWNED').'" in names and "a|b|c" in names)
    ck("eval.json: the Latin-1 name as UTF-8 (caf\\u00e9)", "caf\u00e9 \u00e9t\u00e9" in names)
    ck("eval.json: quote and backslash", 'q"uo\\te' in names)
    ck("report.md: the | of a name escaped in its table cell", "| a\\|b\\|c |" in md)
    ck("report.md: a formula-like name", "=cmd\\|' /C calc'!A0" in md)
    ck("report.html: <script> as text", "&lt;script&gt;alert(1)&lt;/script&gt;" in html)
    gp = open(os.path.join(run, "plots", "nilm_f1_ea.gp"), encoding="utf-8").read()
    ck("nilm_f1_ea.gp: the names as xtics, ' as U+2019", "'\u2019.system(\u2019touch PWNED\u2019).\u2019' " in gp)
else:
    by_t = ev["pdm"]["by_machine_type"]
    by_c = ev["pdm"]["by_condition"]
    keys = list(by_t) + list(by_c)
    ck("eval.json: hostile legend names as keys " + repr(keys), any("PWNED" in k or "<script>" in k or "|" in k or
                                                                     "=" in k or "caf\u00e9" in k for k in keys))
    top = [l.split()[3] for l in open(os.path.join(run, "eval_scores.csv"), encoding="utf-8") if not l.startswith("#")]
    ck("eval_scores.csv: channel names as one token", all(" " not in t for t in top))
    ck("report.md: the per-machine-type table", "### Per machine type" in md)
    ck("eval.json: a legend name with a newline, a control byte and Latin-1", "new\nline\u0001\u00e9|x" in keys)
    ck("report.md: that name in one table cell", "| new line \u00e9\\|x | " in md)
d = json.load(open(doc, encoding="utf-8"))
ck("doctor --json: the Latin-1 log line as UTF-8", "caf\u00e9" in json.dumps(d, ensure_ascii=False))
man = json.load(open(os.path.join(run, "manifest.json"), encoding="utf-8"))
ck("manifest.json: the hostile run directory", "touch PWNED" in json.dumps(man))
gps = [f for f in os.listdir(os.path.join(run, "plots")) if f.endswith(".gp")]
ck("plot scripts written", len(gps) >= 2)
for f in gps:
    t = open(os.path.join(run, "plots", f), encoding="utf-8").read()
    ck(f"{f}: no path of the run directory (gnuplot runs in plots/)", "<b>x" not in t and "run " not in t)
sys.exit(0 if ok else 1)
PY
if command -v gnuplot >/dev/null 2>&1; then # the plots were still drawn
  for p in loss $([ "$kind" = nilm ] && echo nilm_f1_ea nilm_sample || echo pdm_scores); do
    [ "$(head -c 8 "$run/plots/$p.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] \
      || { tail -5 "$run/plots/gnuplot.log" >&2; fail "plots/$p.png not drawn"; }
  done
fi

# names with a newline or a control character: refused by the schema, one line, exit 3
for bad in 'a\nb' 'x\x1b[31m' 'tab\there'; do
  "$py" - "$base/ctl.h5" "$kind" "$bad" <<'PY' || fail "planting a control character"
import sys, h5py, numpy as np
path, kind, bad = sys.argv[1], sys.argv[2], sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
with h5py.File(path, "r+") as f:
    ds = f["/appliance_meta/name" if kind == "nilm" else "/channels/name"]
    names = [bytes(x) for x in ds[...]]
    names[1] = bad
    ds[...] = np.array(names, dtype=ds.dtype)
PY
  set +e
  "$tool" train "$base/train.ini" data.file="$base/ctl.h5" run.dir="$base/ctl-run" >"$base/ctl.log" 2>&1
  rc=$?
  set -e
  [ "$rc" = 3 ] || { cat "$base/ctl.log"; fail "a name with a control character: exit $rc, expected 3"; }
  grep -q "name: entry 1 holds a control character" "$base/ctl.log" || { cat "$base/ctl.log"; fail "no line naming the entry"; }
  [ "$(grep -c 'error' "$base/ctl.log")" = 1 ] || { cat "$base/ctl.log"; fail "more than one error line"; }
done
echo "names stayed data ($kind): no command ran, every output parses, control characters refused"
rm -rf "$base"
