#!/usr/bin/env bash
# CLI chain on tiny data: synth -> train (the end-of-run hook writes eval.json,
# report.md/html and plots) -> eval RUN_DIR -> predict at 1 and 2 ranks (the
# two files must be byte-identical) -> predict from a checkpoint path; usage
# errors exit 2. $1: the eval tool (gridtrain eval|predict|train|synth).
set -euo pipefail
tool=$1
mpiexec=${MPIEXEC:-mpiexec}
dir=${GT_BINARY_DIR:-/tmp}/eval-scratch/cli-$$
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
png_ok() { # signature + size
  [ -s "$1" ] || return 1
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || return 1
  [ "$(stat -c %s "$1")" -ge 1000 ]
}

"$tool" synth nilm -o "$dir/nilm.h5" synth.households=4 synth.days=0.5 synth.seed=3 >/dev/null 2>&1 \
  || fail "synth"
gt_tiny_nilm_ini "$dir/train.ini" "$dir/nilm.h5" "$dir/run" 40 5 "[optim]
lr = 1e-2
warmup = 5
[run]
keep = 1"
"$tool" train "$dir/train.ini" > "$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "train"; }
for f in eval.json report.md report.html timing.json eval_sample.csv; do
  [ -s "$dir/run/$f" ] || fail "end of training: $f missing"
done
if command -v gnuplot >/dev/null 2>&1; then
  for p in loss nilm_f1_ea nilm_sample; do
    png_ok "$dir/run/plots/$p.png" || fail "plots/$p.png is not a valid PNG"
    grep -q "plots/$p.png" "$dir/run/report.md" || fail "report.md does not show $p.png"
    grep -q "src=\"plots/$p.png\"" "$dir/run/report.html" || fail "report.html does not show $p.png"
  done
else
  grep -q "gnuplot was not found" "$dir/run/report.md" || fail "report.md should say gnuplot is missing"
fi
grep -q "## Disaggregation results" "$dir/run/report.md" || fail "report.md lacks the results"
grep -q "## Timing across ranks" "$dir/run/report.md" || fail "report.md lacks the timing table"

# model selection: the end-of-run evaluation and `eval` use the checkpoint of the best validation loss
# (kept beyond run.keep = 1); eval.checkpoint=last the newest
best=$(python3 -c '
import json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if "\"val\"" in l]
v = [x for x in v if x.get("type") == "val"]
print(min(v, key=lambda x: (x["val_loss"], x["step"]))["step"])' "$dir/run/metrics.jsonl")
ev_step() { python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["train"]; print(t["evaluated_step"], t["evaluated_checkpoint"])' "$dir/run/eval.json"; }
[ "$(ev_step)" = "$best best validation loss" ] || fail "end-of-run eval: $(ev_step), want step $best (best validation loss)"
[ -s "$dir/run/checkpoints/ckpt-$(printf %09d "$best").h5" ] || fail "best checkpoint (step $best) not kept"
grep -q "Evaluated parameters: step $best (best validation loss)" "$dir/run/report.md" || fail "report.md lacks the evaluated step"
[ -s "$dir/run/checkpoints/ckpt-000000040.h5" ] || fail "newest checkpoint missing"
"$tool" eval "$dir/run" eval.checkpoint=last > "$dir/eval_last.log" 2>&1 || { cat "$dir/eval_last.log"; fail "eval last"; }
case "$(ev_step)" in "40 "*) ;; *) fail "eval.checkpoint=last evaluated $(ev_step), want step 40";; esac
echo "model selection: best validation step $best of 40 (lr 1e-2: validation loss rises after its minimum)"

# eval RUN_DIR (data from the stored configuration), then with an explicit file and stride
rm -f "$dir/run/eval.json"
"$tool" eval "$dir/run" > "$dir/eval.log" 2>&1 || { cat "$dir/eval.log"; fail "eval"; }
for k in '"task":[[:space:]]*"nilm"' '"model":[[:space:]]*"s2p_cnn"' '"test":' '"holdout":' '"overall":' '"appliances":' '"ea":' \
         '"f1":' '"sae":' '"nde":' '"mae_w":' '"energy_true_wh":' '"train":' '"cpu_hours":' '"best_val_loss":'; do
  grep -Eq "$k" "$dir/run/eval.json" || fail "eval.json lacks $k"
done
"$tool" eval "$dir/run" "$dir/nilm.h5" eval.stride=4 > "$dir/eval2.log" 2>&1 || fail "eval with a file"
grep -Eq '"eval_stride":[[:space:]]*4' "$dir/run/eval.json" || fail "eval.stride not used"
[ "$(ev_step)" = "$best best validation loss" ] || fail "eval RUN_DIR: $(ev_step), want step $best"

# predict: 1 rank == 2 ranks, byte for byte; checkpoint path accepted
"$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/p1.h5" > "$dir/p1.log" 2>&1 || { cat "$dir/p1.log"; fail "predict"; }
$mpiexec -n 2 "$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/p2.h5" > "$dir/p2.log" 2>&1 \
  || { cat "$dir/p2.log"; fail "predict -n 2"; }
cmp "$dir/p1.h5" "$dir/p2.h5" || fail "predict at 2 ranks differs from 1 rank"

# the calibrated state filter: eval.json and the report name the durations; predict writes /on, 1 == 2 ranks
"$tool" eval "$dir/run" eval.calibrate_filter=true > "$dir/evalf.log" 2>&1 || { cat "$dir/evalf.log"; fail "eval filter"; }
python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
assert e["eval_config"]["nilm_calibrate_filter"] is True
apps = e["nilm"]["test"]["appliances"]
assert len(apps) == 15 and all(a["fill_s"] in (0, 60, 120, 300, 600, 1200, 2400, 3600, 7200) for a in apps), apps
assert all(a["min_on_s"] in (0, 60, 120, 300, 600, 900, 1800, 3600) for a in apps)' "$dir/run/eval.json" || fail "eval.json filter durations"
grep -q "States filtered (eval.calibrate_filter)" "$dir/run/report.md" || fail "report.md does not name the filter"
"$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/f1.h5" eval.fill_s=120 eval.min_on_s=60 > "$dir/f1.log" 2>&1 \
  || { cat "$dir/f1.log"; fail "predict filter"; }
$mpiexec -n 2 "$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/f2.h5" eval.fill_s=120 eval.min_on_s=60 > /dev/null 2>&1 \
  || fail "predict filter -n 2"
cmp "$dir/f1.h5" "$dir/f2.h5" || fail "filtered predict at 2 ranks differs from 1 rank"
"${GT_PYTHON:-python3}" -c '
import h5py, sys
f = h5py.File(sys.argv[1], "r")
assert f.attrs["state_filter"] == 1 and f["on"].shape == f["predictions"].shape
assert list(f["appliance_meta/fill_s"][:]) == [120.0] * 15 and list(f["appliance_meta/min_on_s"][:]) == [60.0] * 15' "$dir/f1.h5" \
  || fail "filtered predict file"

# an [eval] section of the training configuration: the end-of-run evaluation follows it, with the same
# figures as `eval RUN_DIR` given those keys; the keys are checked before training and never stored with the run
cp "$dir/train.ini" "$dir/train_e.ini"
printf '[eval]\nstride = 3\ncalibrate_filter = true\n' >> "$dir/train_e.ini"
"$tool" train "$dir/train_e.ini" run.dir="$dir/run_e" train.max_steps=10 > "$dir/train_e.log" 2>&1 \
  || { cat "$dir/train_e.log"; fail "train with an [eval] section"; }
cp "$dir/run_e/eval.json" "$dir/eval_e_end.json"
grep -q "^\[eval\]" "$dir/run_e/config.ini" && fail "config.ini stores the [eval] section"
"$tool" eval "$dir/run_e" eval.stride=3 eval.calibrate_filter=true > /dev/null 2>&1 || fail "eval run_e"
python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
c = a["eval_config"]
assert c["nilm_calibrate_filter"] is True and c["nilm_stride"] == 3, c
assert a["nilm"]["test"]["overall"] == b["nilm"]["test"]["overall"], (a["nilm"]["test"]["overall"], b["nilm"]["test"]["overall"])
assert [x["fill_s"] for x in a["nilm"]["test"]["appliances"]] == [x["fill_s"] for x in b["nilm"]["test"]["appliances"]]' \
  "$dir/eval_e_end.json" "$dir/run_e/eval.json" || fail "the end-of-run evaluation did not follow the [eval] section"
set +e
"$tool" train "$dir/train.ini" run.dir="$dir/run_bad" eval.stride=-1 > "$dir/bad.log" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "eval.stride must be >= 0" "$dir/bad.log" && [ ! -e "$dir/run_bad/checkpoints" ] \
  || { cat "$dir/bad.log"; fail "train eval.stride=-1: exit $rc (want 2, before training)"; }
set -e

# an ensemble (eval.models): a second run of another seed; eval.json lists both, the report says so;
# predict 1 == 2 ranks. Members of another window or other splits are refused with one line, exit 2.
"$tool" train "$dir/train.ini" run.dir="$dir/run2" train.seed=2 > "$dir/train2.log" 2>&1 || { cat "$dir/train2.log"; fail "train seed 2"; }
"$tool" train "$dir/train.ini" run.dir="$dir/run_w31" data.window=31 train.max_steps=5 > /dev/null 2>&1 || fail "train window 31"
"$tool" train "$dir/train.ini" run.dir="$dir/run_h2" data.holdout_every=2 train.max_steps=5 > /dev/null 2>&1 || fail "train holdout 2"
"$tool" eval "$dir/run" eval.models="$dir/run2" > "$dir/evale.log" 2>&1 || { cat "$dir/evale.log"; fail "eval ensemble"; }
python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
names = [m["name"] for m in e["data"]["models"]]
assert len(names) == 2 and names[1].endswith("/run2"), names
assert len(e["nilm"]["test"]["appliances"]) == 15' "$dir/run/eval.json" || fail "eval.json of the ensemble"
grep -q "Ensemble of 2 models (eval.models)" "$dir/run/report.md" || fail "report.md does not name the ensemble"
"$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/e1.h5" eval.models="$dir/run2" > /dev/null 2>&1 || fail "predict ensemble"
$mpiexec -n 2 "$tool" predict "$dir/run" "$dir/nilm.h5" -o "$dir/e2.h5" eval.models="$dir/run2" > /dev/null 2>&1 \
  || fail "predict ensemble -n 2"
cmp "$dir/e1.h5" "$dir/e2.h5" || fail "ensemble predict at 2 ranks differs from 1 rank"
cmp -s "$dir/e1.h5" "$dir/p1.h5" && fail "the ensemble predicts the same file as its first member"
"${GT_PYTHON:-python3}" -c '
import h5py, sys
f = h5py.File(sys.argv[1], "r")
src = f.attrs["model_source"]
src = src.decode() if isinstance(src, bytes) else src
assert f.attrs["n_models"] == 2 and src.endswith("/run2"), dict(f.attrs)' "$dir/e1.h5" \
  || fail "ensemble predict attributes"
set +e
"$tool" eval "$dir/run" eval.models="$dir/run_w31" > "$dir/bad.log" 2>&1; rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "cannot join the ensemble" "$dir/bad.log")" = 1 ] \
  || { cat "$dir/bad.log"; fail "ensemble with another window: exit $rc"; }
"$tool" eval "$dir/run" eval.models="$dir/run_h2" > "$dir/bad.log" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "trained with other splits" "$dir/bad.log" \
  || { cat "$dir/bad.log"; fail "ensemble with other splits: exit $rc"; }
set -e
# a member trained on two appliances (data.appliances) counts for those alone: as member 0 with
# the full run every appliance is evaluated; predicting alone it leaves the other 13 columns NaN
"$tool" train "$dir/train.ini" run.dir="$dir/run_k" data.appliances=kettle+microwave train.max_steps=5 > /dev/null 2>&1 \
  || fail "train kettle+microwave"
"$tool" eval "$dir/run_k" eval.models="$dir/run" > "$dir/evalk.log" 2>&1 || { cat "$dir/evalk.log"; fail "eval specialist + full"; }
python3 -c '
import json, math, sys
e = json.load(open(sys.argv[1]))
ms = e["data"]["models"]
assert ms[0]["appliances"] == "kettle+microwave" and "appliances" not in ms[1], ms
apps = e["nilm"]["test"]["appliances"]
assert len(apps) == 15 and all(a["samples"] > 0 for a in apps), [a["samples"] for a in apps]' "$dir/run_k/eval.json" \
  || fail "eval.json of the specialist ensemble"
grep -q "run_k (kettle+microwave)" "$dir/run_k/report.md" || fail "report.md does not name the specialist's appliances"
"$tool" predict "$dir/run_k" "$dir/nilm.h5" -o "$dir/k1.h5" > /dev/null 2>&1 || fail "predict specialist"
"${GT_PYTHON:-python3}" -c '
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], "r")
p = f["predictions"][:]
names = [n.decode() if isinstance(n, bytes) else n for n in f["appliance_meta/name"][:]]
own = [names.index("kettle"), names.index("microwave")]
rest = [a for a in range(len(names)) if a not in own]
a = f.attrs["appliances"]
assert (a.decode() if isinstance(a, bytes) else a) == "kettle+microwave", a
assert np.isnan(p[:, rest]).all() and np.isfinite(p[:, own]).sum() > 0.9 * p.shape[0] * 2, np.isfinite(p).sum(axis=0)' "$dir/k1.h5" \
  || fail "specialist predict: other appliances not NaN"

# usage errors
set +e
"$tool" predict "$dir/run" "$dir/nilm.h5" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "predict without -o: exit $rc, expected 2"
"$tool" eval "$dir/nope" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "eval of a missing run: exit $rc, expected 2"
"$tool" eval "$dir/run" eval.fill_s=-5 > "$dir/bad.log" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "eval.fill_s (-5)" "$dir/bad.log" || { cat "$dir/bad.log"; fail "eval.fill_s=-5: exit $rc"; }
cp "$dir/nilm.h5" "$dir/run/checkpoints/notackpt.h5"
"$tool" eval "$dir/run/checkpoints/notackpt.h5" > "$dir/bad.log" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "not a run directory or a checkpoint file" "$dir/bad.log" \
  || { cat "$dir/bad.log"; fail "eval of a non-checkpoint file: exit $rc"; }
set -e
rm -rf "$dir"
echo "test_eval_cli: ok"
