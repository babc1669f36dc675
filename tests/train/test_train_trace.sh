#!/usr/bin/env bash
# tests/train/test_train_trace.sh: train.trace (issue #23, timeline).
#   mpirun -n 2 train train.trace=true -> RUN_DIR/trace.json: a valid Chrome
#     trace (check_trace.py: schema, every rank a process, spans nested on each
#     thread, the step's phases and all-reduce buckets on every rank, the
#     prefetch thread); the parameters bitwise those of the same run untraced
#   train.trace_events=40 -> at most 40 spans per rank, the rest counted as dropped
#   trace off -> no trace.json
# $1 = train tool, $2 = gridtrain
source "$(dirname "$0")/train_script_lib.sh"
make_data 30
PY=${GT_PYTHON:-python3}
CHECK="$(dirname "$0")/check_trace.py"
xxh() { grep -o 'params xxh64 [0-9a-f]*' "$1" | awk '{print $3}'; }
common=(train.eval_every=10 run.checkpoint_every=10 train.prefetch=on)

mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" "${common[@]}" run.dir="$W/off" >"$W/off.log" 2>&1 \
  || { cat "$W/off.log" >&2; fail "untraced run"; }
[ ! -e "$W/off/trace.json" ] || fail "trace.json written with train.trace off"

mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" "${common[@]}" run.dir="$W/on" train.trace=true \
  train.trace_steps=5 train.trace_every=10 >"$W/on.log" 2>&1 || { cat "$W/on.log" >&2; fail "traced run"; }
grep -q "train.trace: .*trace.json" "$W/on.log" || fail "no trace line in the log"
"$PY" "$CHECK" "$W/on/trace.json" 2 --threads 2 || fail "trace.json of the traced run"
a=$(xxh "$W/off.log"); b=$(xxh "$W/on.log")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "parameters differ with the trace on: $a vs $b"
# sampled: steps 0-4 and every 10th of 30 (0, 10, 20): 7 step spans per rank
n=$("$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for e in d['traceEvents'] if e['name']=='step' and e['pid']==0))" "$W/on/trace.json")
[ "$n" = 7 ] || fail "rank 0 has $n step spans, want 7 (first 5, then every 10th)"

mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" "${common[@]}" run.dir="$W/small" train.trace=true \
  train.trace_events=40 >"$W/small.log" 2>&1 || { cat "$W/small.log" >&2; fail "run with a small trace buffer"; }
"$PY" "$CHECK" "$W/small/trace.json" 2 --max-spans-per-rank 40 --dropped || fail "bounded trace.json"
echo "test_train_trace: ok"
