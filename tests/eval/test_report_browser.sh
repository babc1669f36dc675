#!/usr/bin/env bash
# The run reports as a person sees them: a tiny NILM run and a tiny PdM run
# (synth -> train, whose end-of-run evaluation writes report.html), each
# report loaded in headless Chromium by report_browser.py, which fails on a
# broken or missing plot, a plot drawn too small for its labels, text under
# 9 px, horizontal overflow and console or script errors, and saves a
# full-page screenshot (kept in $GT_BINARY_DIR/artifacts/). The probe first
# proves it can fail, on a page built to break each rule. Skips (77) when
# Chromium is absent; tests/run.sh installs it (Debian package 'chromium').
# $1: gridtrain.
set -euo pipefail
GT=$1
py=${GT_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
probe="$py $here/report_browser.py"
command -v chromium >/dev/null 2>&1 || { echo "SKIP: no chromium (Debian package 'chromium')"; exit 77; }
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: no gnuplot: the reports have no plots to check"; exit 77; }
dir=${GT_BINARY_DIR:-/tmp}/eval-scratch/browser-$$
art=${GT_BINARY_DIR:-/tmp}/artifacts
rm -rf "$dir" && mkdir -p "$dir/bad/plots" "$art"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. the probe fails a page that breaks every rule, one finding per rule
cat > "$dir/bad/report.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{max-width:1100px;margin:auto}</style></head><body>
<h1>broken</h1><img src="plots/missing.png"><p style="font-size:6px">tiny</p>
<pre>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</pre>
<img src="plots/small.png" style="width:100px">
<script>console.error("planted"); no_such_function();</script>
</body></html>
HTML
gnuplot -e "set terminal pngcairo size 960,480; set output '$dir/bad/plots/small.png'; plot x" \
  || fail "gnuplot could not draw the probe's test plot"
$probe "$dir/bad/report.html" "$dir/bad.png" --expect-fail > "$dir/bad.out" || { cat "$dir/bad.out"; fail "the probe passed a broken page"; }
for want in "broken image: plots/missing.png" "plot drawn at 100 of its 960 px" "below 9 px" "page wider than the window" \
            "<pre> content overflows" "console.error: planted" "script error: .*no_such_function"; do
  grep -q -- "$want" "$dir/bad.out" || { cat "$dir/bad.out"; fail "the probe missed: $want"; }
done

# 2. a NILM run's report
"$GT" synth nilm -o "$dir/nilm.h5" synth.households=4 synth.days=0.5 synth.seed=3 >/dev/null 2>&1 || fail "synth nilm"
printf '[run]\ndir = %s/nilm-run\n' "$dir" > "$dir/nilm.ini"
"$GT" train "$dir/nilm.ini" data.file="$dir/nilm.h5" data.window=63 data.stride=16 model.kind=s2p_cnn model.layers=3 \
  model.conv_scale=0.25 model.hidden=32 train.batch=32 train.epochs=0 train.max_steps=30 train.eval_every=10 \
  > "$dir/nilm.log" 2>&1 || { cat "$dir/nilm.log"; fail "train nilm"; }
$probe "$dir/nilm-run/report.html" "$art/report_nilm.png" || fail "the NILM report does not pass in the browser"

# 3. a PdM run's report
"$GT" synth pdm --farms 1 --turbines 2 --days 0.05 --rate 1 -o "$dir/pdm.h5" >/dev/null 2>&1 || fail "synth pdm"
printf '[run]\ndir = %s/pdm-run\n' "$dir" > "$dir/pdm.ini"
"$GT" train "$dir/pdm.ini" data.file="$dir/pdm.h5" model.kind=lstm data.window=64 model.hidden=16 train.batch=16 train.epochs=0 \
  train.max_steps=20 train.eval_every=10 > "$dir/pdm.log" 2>&1 \
  || { cat "$dir/pdm.log"; fail "train pdm"; }
$probe "$dir/pdm-run/report.html" "$art/report_pdm.png" || fail "the PdM report does not pass in the browser"
echo "ok: both reports pass in headless Chromium; screenshots in $art/"
