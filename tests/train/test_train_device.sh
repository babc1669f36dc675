#!/usr/bin/env bash
# tests/train/test_train_device.sh: train.device without a GPU (ctest hides
# GPUs from this test: CUDA_VISIBLE_DEVICES=-1, so it means the same on any
# machine and in either build).
#   train.device=cuda  -> exit 7 (GT_EXIT_DEVICE) with one line naming the
#                         setting and the fix, 1 rank and mpirun -n 2; nothing
#                         written to the run directory
#   train.device=auto  -> the host engine: manifest.json engine "host",
#                         device.kind "cpu", timing.json gpus 0
#   train.device=gpu   -> exit 2 (not among auto|cpu|cuda)
#   eval.device=cuda   -> exit 7 on the run just trained; eval.device=cpu works
#   train.precision    -> tf32 on the CPU: a warning and fp32's bits; fp16
#                         fp32 as well; fp8 exit 2
# $1 = train tool, $2 = gridtrain
source "$(dirname "$0")/train_script_lib.sh"
export CUDA_VISIBLE_DEVICES=-1
make_data 4
PY=${GT_PYTHON:-python3}

expect_device_error() { # LOG: the one error line of exit 7
  local log=$1
  grep -q "error: train.device=cuda but no usable GPU: .*set train.device=cpu" "$log" \
    || { cat "$log" >&2; fail "no one-line train.device error in $log"; }
  [ "$(grep -c 'error:' "$log")" -ge 1 ] || fail "no error line"
}

# cuda requested, 1 rank (no mpirun) and 2 ranks
"${TRAIN[@]}" "$W/train.ini" train.device=cuda run.dir="$W/r-cuda" >"$W/cuda1.log" 2>&1
rc=$?
[ $rc -eq 7 ] || { cat "$W/cuda1.log" >&2; fail "train.device=cuda without a GPU: exit $rc, expected 7"; }
expect_device_error "$W/cuda1.log"
[ ! -e "$W/r-cuda/manifest.json" ] || fail "a run directory was written before the device check"
mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" train.device=cuda run.dir="$W/r-cuda2" >"$W/cuda2.log" 2>&1
rc=$?
[ $rc -eq 7 ] || { cat "$W/cuda2.log" >&2; fail "mpirun -n 2 train.device=cuda without a GPU: exit $rc, expected 7"; }
expect_device_error "$W/cuda2.log"

# an unknown device
"${TRAIN[@]}" "$W/train.ini" train.device=gpu run.dir="$W/r-bad" >"$W/bad.log" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$W/bad.log" >&2; fail "train.device=gpu: exit $rc, expected 2"; }
grep -q "train.device" "$W/bad.log" || fail "the usage error does not name train.device"

# auto: the host engine, recorded in the manifest and timing.json
GT_EVAL_AT_END=0 mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" run.dir="$W/r-auto" >"$W/auto.log" 2>&1 \
  || { cat "$W/auto.log" >&2; fail "train.device=auto (default) failed"; }
grep -q "device: cpu (train.device=auto" "$W/auto.log" || { cat "$W/auto.log" >&2; fail "no device line in the log"; }
"$PY" - "$W/r-auto" <<'PYEOF' || fail "manifest/timing of the auto run"
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
t = json.load(open(d + "/timing.json"))
assert m["engine"] == "host", m["engine"]
assert m["device"]["kind"] == "cpu" and m["device"]["requested"] == "auto", m["device"]
assert m["device"]["gpus"] == 0 and t["gpus"] == 0, (m["device"], t["gpus"])
assert "device = " not in m["config"], "train.device must not be stored in the run's configuration"
print("manifest:", m["engine"], m["device"])
PYEOF

# eval of that run: eval.device=cuda refuses, eval.device=cpu evaluates
"$GRIDTRAIN" eval "$W/r-auto" eval.device=cuda >"$W/eval-cuda.log" 2>&1
rc=$?
[ $rc -eq 7 ] || { cat "$W/eval-cuda.log" >&2; fail "eval.device=cuda without a GPU: exit $rc, expected 7"; }
grep -q "error: eval.device=cuda but no usable GPU" "$W/eval-cuda.log" || fail "eval error line"
"$GRIDTRAIN" eval "$W/r-auto" eval.device=cpu >"$W/eval-cpu.log" 2>&1 || { cat "$W/eval-cpu.log" >&2; fail "eval.device=cpu"; }
[ -s "$W/r-auto/eval.json" ] || fail "no eval.json"

# train.precision on the CPU: tf32 (a GPU-only precision) gives a warning and
# fp32 arithmetic (the same bits as the default), the log names the precision;
# fp16 too (no loss scaler: the arithmetic is fp32); bf16 is the CPU engine's
# own reduced precision (tests/train/test_train_bf16.sh); an unknown precision
# is a usage error
params_of() { sed -n 's/.*params xxh64 \([0-9a-f]*\).*/\1/p' "$1" | tail -1; }
GT_EVAL_AT_END=0 mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" run.dir="$W/r-tf32" train.precision=tf32 >"$W/tf32.log" 2>&1 \
  || { cat "$W/tf32.log" >&2; fail "train.precision=tf32 on the CPU failed"; }
grep -q "warning: train.precision=tf32 applies to GPU engines; the CPU engine computes in fp32" "$W/tf32.log" \
  || { cat "$W/tf32.log" >&2; fail "no precision warning"; }
grep -q "precision fp32, engine host" "$W/tf32.log" || fail "the train line does not say fp32"
[ -n "$(params_of "$W/auto.log")" ] && [ "$(params_of "$W/tf32.log")" = "$(params_of "$W/auto.log")" ] \
  || fail "tf32 on the CPU changed the result: $(params_of "$W/tf32.log") vs $(params_of "$W/auto.log")"
"${TRAIN[@]}" "$W/train.ini" run.dir="$W/r-fp16" train.precision=fp16 train.max_steps=3 >"$W/fp16.log" 2>&1 \
  || { cat "$W/fp16.log" >&2; fail "train.precision=fp16 on the CPU failed"; }
grep -q "precision fp32, engine host" "$W/fp16.log" || { cat "$W/fp16.log" >&2; fail "fp16 on the CPU is not fp32"; }
"${TRAIN[@]}" "$W/train.ini" run.dir="$W/r-fp8" train.precision=fp8 >"$W/fp8.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "train.precision" "$W/fp8.log" || { cat "$W/fp8.log" >&2; fail "train.precision=fp8: exit $rc"; }
echo "test_train_device: ok"
