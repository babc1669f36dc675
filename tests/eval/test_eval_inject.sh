#!/usr/bin/env bash
# Names are data (issue #37, class 1): appliance names that try to break out
# of gnuplot strings (system(), backticks), a shell ($(...)), HTML (<script>)
# and Markdown tables (|) go through train (its end-of-run report) and eval;
# nothing may execute, and report.html must not carry the raw <script>.
# $1: the eval tool (gridtrain eval|predict|train|synth).
set -euo pipefail
tool=$1
dir=${GT_BINARY_DIR:-/tmp}/eval-scratch/inject-$$
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$tool" synth nilm -o "$dir/nilm.h5" synth.households=4 synth.days=0.5 synth.seed=3 >/dev/null 2>&1 || fail "synth"
# every appliance gets a hostile name, so whichever the sample plot picks is one
/usr/bin/python3 - "$dir" <<'PY' || fail "renaming the appliances"
import sys, h5py, numpy as np
d = sys.argv[1]
evil = ["'.system('touch P%d').'", "`touch P%d`", "$(touch P%d)",
        "<script>alert(%d)</script>", "a|b%d|c"]
with h5py.File(d + "/nilm.h5", "r+") as f:
    ds = f["/appliance_meta/name"]
    n = ds.shape[0]
    names = []
    for i in range(n):
        e = evil[i % len(evil)]
        s = e % i
        names.append(s.encode()[:31])
    ds[...] = np.array(names, dtype=ds.dtype)
PY
cat > "$dir/train.ini" <<INI
[data]
file = $dir/nilm.h5
window = 63
stride = 16
holdout_every = 4
[model]
kind = s2p_cnn
layers = 3
conv_scale = 0.25
hidden = 32
[train]
batch = 32
epochs = 0
max_steps = 20
log_every = 10
eval_every = 10
patience = 0
[run]
dir = $dir/run
INI
cd "$dir"
"$tool" train "$dir/train.ini" >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "train"; }
"$tool" eval "$dir/run" >"$dir/eval.log" 2>&1 || { cat "$dir/eval.log"; fail "eval"; }
ls "$dir"/P* "$dir"/run/P* "$dir"/run/plots/P* 2>/dev/null && fail "a name ran a command"
[ -s "$dir/run/report.html" ] || fail "no report.html"
grep -q "<script>" "$dir/run/report.html" && fail "raw <script> in report.html"
[ -s "$dir/run/plots/nilm_sample.gp" ] || fail "no sample plot script"
grep -q "system(''touch" "$dir/run/plots/nilm_sample.gp" || fail "the sample plot does not show a hostile name (test does not test)"
/usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/run/eval.json" || fail "eval.json does not parse"
echo "names stayed data: no command ran, report.html escaped"
rm -rf "$dir"
