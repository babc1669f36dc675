#!/usr/bin/env bash
# tests/train/test_train_regression.sh: the throughput regression warning
# (train.regression_warn, issue #23). In one parent directory:
#   a       first run: nothing to compare with (no "regression" in timing.json)
#   b       the same configuration: compared with a
#   seed    another configuration (train.seed): not compared (its own hash)
#   slow    the same configuration, deliberately slowed (both ranks and a busy
#           loop on one core): warns "throughput regression", names a phase,
#           timing.json regression.slower = true, ratio < 0.8; doctor names it
# $1 = train tool, $2 = gridtrain
source "$(dirname "$0")/train_script_lib.sh"
make_data 250
PY=${GT_PYTHON:-python3}
R="$W/runs"
mkdir -p "$R"
# long enough to be compared (train_time_s >= 2 s), no prefetch thread (the same on one core)
args=(train.max_steps=250 train.prefetch=off model.conv_scale=1 model.layers=5 model.hidden=256)
train() { local name=$1; shift; mpirun -n 2 --bind-to none "$@" "${TRAIN[@]}" "$W/train.ini" "${args[@]}" run.dir="$R/$name" \
  > "$W/$name.log" 2>&1 || { cat "$W/$name.log" >&2; fail "run $name"; }; }
reg() { "$PY" -c "import json,sys; r=json.load(open(sys.argv[1])).get('regression'); print('none' if r is None else '%s %d %.3f %s' % (r['slower'], r['earlier_runs'], r['ratio'], r.get('slowed_phase', '-')))" "$R/$1/timing.json"; }

train a
[ "$(reg a)" = none ] || fail "the first run was compared: $(reg a)"
"$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); assert len(m['config_hash']) == 16 and len(m['hardware_hash']) == 16" \
  "$R/a/manifest.json" || fail "manifest.json lacks config_hash / hardware_hash"
train b
set -- $(reg b)
[ "$2" = 1 ] || fail "run b was not compared with run a: $(reg b)"
args+=(train.seed=2)
train seed
[ "$(reg seed)" = none ] || fail "a run of another configuration was compared: $(reg seed)"
unset 'args[${#args[@]}-1]'

# slowed: both ranks and a busy loop share core 0
taskset -c 0 sh -c 'while :; do :; done' &
HOG=$!
train slow taskset -c 0
kill "$HOG"
r=$(reg slow)
set -- $r
[ "$1" = True ] || { cat "$W/slow.log" >&2; fail "the slowed run did not warn: $r"; }
[ "$2" = 2 ] || fail "the slowed run was compared with $2 runs, want 2"
"$PY" -c "import sys; assert float(sys.argv[1]) < 0.8" "$3" || fail "ratio $3 not below 0.8"
[ "$4" != - ] || fail "no slowed phase named"
grep -q "warning: throughput regression: .* of the median .* of 2 earlier runs .*the phase that slowed most: $4" "$W/slow.log" \
  || { cat "$W/slow.log" >&2; fail "no warning line naming the phase"; }
"$GRIDTRAIN" doctor "$R/slow" 2>/dev/null | grep -q "^warning: regression: " || fail "doctor does not report the regression"
echo "test_train_regression: ok (slowed run at $3 of the median, phase $4)"
