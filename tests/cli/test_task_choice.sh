#!/usr/bin/env bash
# data.task's error lines (task/task.c gt_task_choose) and a task's refusal of
# a model kind (the tasks' check_model, from the kind's table: nn/model.h
# gt_model_kind_seq2point), through the real executable: exit code 2 and one
# error line on stderr naming the data file and the choices, at 1 and 2 ranks
# (the choice reads the file collectively: every rank fails alike, no hang).
set -u
GT="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
# check NAME WANT_RC MESSAGE -- CMD...: exit WANT_RC, stderr holds exactly one
# "error:" line, and that line ends with MESSAGE (a fixed string)
check() {
  local name=$1 want=$2 msg=$3; shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; cat "$tmp/err"; fail=1; return; fi
  # one line; under mpirun one per rank ("gridtrain[rank R]: error: ..."), the same on every rank
  local n u
  n=$(grep -c 'error: ' "$tmp/err")
  u=$(grep 'error: ' "$tmp/err" | sed 's/^gridtrain\[rank [0-9]*\]:/gridtrain:/' | sort -u | wc -l)
  if [ "$u" != 1 ] || [ "$n" -gt "${NP:-1}" ]; then
    echo "FAIL $name: $n error lines ($u different) on stderr, want one per rank"; cat "$tmp/err"; fail=1; return
  fi
  local line
  line=$(grep -m1 'error: ' "$tmp/err")
  case "$line" in
    *"error: $msg") echo "ok   $name" ;;
    *) echo "FAIL $name: error line"; echo "  got:  $line"; echo "  want: ...error: $msg"; fail=1 ;;
  esac
}

"$GT" synth nilm --households 2 --days 0.2 -o n.h5 >/dev/null 2>&1 || { echo "FAIL synth nilm"; exit 1; }
"$GT" synth pdm --farms 1 --turbines 1 --days 0.02 --rate 1 -o p.h5 >/dev/null 2>&1 || { echo "FAIL synth pdm"; exit 1; }
printf '[data]\nfile = none.h5\n[train]\nmax_steps = 1\n' > t.ini

for np in 1 2; do
  NP=$np
  run=()
  [ "$np" = 1 ] || run=(timeout -s KILL 300 mpirun -n "$np")
  # an unknown name: every registered task is a choice
  check "unknown-task-np$np" 2 "n.h5: data.task = nosuch: no such task (choices: auto|nilm|pdm)" -- \
    "${run[@]}" "$GT" train t.ini data.file=n.h5 data.task=nosuch run.dir="$tmp/r$np"
  # names are exact (no case folding)
  check "task-case-np$np" 2 "p.h5: data.task = PDM: no such task (choices: auto|nilm|pdm)" -- \
    "${run[@]}" "$GT" train t.ini data.file=p.h5 model.kind=lstm data.task=PDM run.dir="$tmp/r$np"
  # a task of another file kind: the choices are the tasks of this file's kind
  check "pdm-task-on-nilm-np$np" 2 \
    "n.h5: data.task = pdm: the task trains on pdm files, this is a nilm file (choices: auto|nilm)" -- \
    "${run[@]}" "$GT" train t.ini data.file=n.h5 data.task=pdm run.dir="$tmp/r$np"
  check "nilm-task-on-pdm-np$np" 2 \
    "p.h5: data.task = nilm: the task trains on nilm files, this is a pdm file (choices: auto|pdm)" -- \
    "${run[@]}" "$GT" train t.ini data.file=p.h5 model.kind=lstm data.task=nilm run.dir="$tmp/r$np"
  # a model kind the task cannot train: the kinds it can, from the kinds' tables
  check "nilm-lstm-np$np" 2 "n.h5 is a NILM file: model.kind lstm predicts its own input sequence (anomaly detection on wind-farm files); disaggregation needs a seq2point model (model.kind = s2p_cnn or s2p_tf)" -- \
    "${run[@]}" "$GT" train t.ini data.file=n.h5 data.task=nilm model.kind=lstm run.dir="$tmp/r$np"
  for k in s2p_cnn s2p_tf; do
    check "pdm-$k-np$np" 2 "p.h5 is a wind-farm (pdm) file: model.kind $k predicts one value per window (seq2point); anomaly scores need a per-step sequence model (model.kind = lstm)" -- \
      "${run[@]}" "$GT" train t.ini data.file=p.h5 model.kind=$k run.dir="$tmp/r$np"
  done
  # a refused run trained nothing (its run directory, made before the file is read, holds no checkpoint)
  [ -z "$(ls -A "$tmp/r$np/checkpoints" 2>/dev/null)" ] || { echo "FAIL np$np: a refused run wrote a checkpoint"; fail=1; }
done
# the right choice still trains (the checks above are refusals of this run, not of every run)
check_ok() { "$@" >"$tmp/out" 2>"$tmp/err" && echo "ok   $1 ${*: -1}" || { echo "FAIL $*"; tail -3 "$tmp/err"; fail=1; }; }
check_ok "$GT" train t.ini data.file=p.h5 data.task=pdm model.kind=lstm model.hidden=8 train.batch=4 run.dir="$tmp/ok"
[ -n "$(ls "$tmp/ok/checkpoints" 2>/dev/null)" ] || { echo "FAIL data.task = pdm on a wind-farm file wrote no checkpoint"; fail=1; }
exit $fail
