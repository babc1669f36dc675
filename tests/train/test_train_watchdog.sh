#!/usr/bin/env bash
# No hang without a message (issue #18, class 4):
#  * one rank of `mpirun -n 2 gridtrain train` stopped (SIGSTOP): the other
#    waits in a collective; its watchdog (run.watchdog_s=5) ends the job with
#    exit 6 and one line naming the MPI call it waits in, within seconds;
#  * the same for another command through GT_WATCHDOG_S (predict);
#  * a tight address-space limit ('ulimit -v': OpenBLAS looped forever on its
#    buffer, Open MPI's I/O component crashed) is refused up front: exit 4.
# usage: test_train_watchdog.sh GRIDTRAIN
set -u
GT="$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/watchdog-XXXXXX")
job=""
trap '[ -n "$job" ] && kill -9 $job 2>/dev/null; rm -rf "$W"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

"$GT" synth nilm --households 4 --days 1 --seed 5 -o "$W/n.h5" --log-level warn || { echo "FAIL synth"; exit 1; }
cat > "$W/t.ini" <<INI
[data]
file = $W/n.h5
window = 31
[model]
kind = s2p_cnn
conv_scale = 0.1
hidden = 8
layers = 2
[train]
batch = 8
epochs = 0
max_steps = 1000000
log_every = 1
patience = 0
[run]
checkpoint_every = 0
INI

# stop_one_rank NAME LOG CMD...: starts CMD under mpirun -n 2, SIGSTOPs one rank once $W/started exists
stop_one_rank() {
  local name=$1 log=$2; shift 2
  mpirun -n 2 "$@" > "$log" 2>&1 &
  job=$!
  for _ in $(seq 1 300); do [ -e "$W/started" ] && break; sleep 0.1; done
  sleep 1
  local ranks; ranks=$(pgrep -P "$job")
  local victim; victim=$(echo "$ranks" | tail -1)
  [ -n "$victim" ] || { bad "$name: no rank to stop"; return; }
  kill -STOP "$victim"
  local t0; t0=$(date +%s)
  # at most 120 s: the watchdog must end it long before
  for _ in $(seq 1 1200); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    bad "$name: still running 120 s after a rank was stopped (a hang without a message)"
    kill -9 "$job" $ranks 2>/dev/null
    wait "$job" 2>/dev/null; job=""; return
  fi
  wait "$job"; local rc=$?; job=""
  kill -CONT $ranks 2>/dev/null; kill -9 $ranks 2>/dev/null
  local dt=$(( $(date +%s) - t0 ))
  if [ "$rc" = 6 ] && grep -qE "error: watchdog: no progress for [0-9]+ s \(limit 5 s; since: (entered|returned from) (MPI_|a collective HDF5)" "$log"; then
    ok "$name: exit 6 after ${dt} s with the watchdog's line naming the collective it waits in"
  else
    bad "$name: exit $rc after ${dt} s"; grep -E "error" "$log" | head -3
  fi
}

# training: the run starts, then one rank stops
( for _ in $(seq 1 1200); do [ -s "$W/r1/metrics.jsonl" ] && { touch "$W/started"; break; }; sleep 0.1; done ) &
stop_one_rank "train, one rank stopped" "$W/train.log" "$GT" train "$W/t.ini" run.dir="$W/r1" run.watchdog_s=5 --log-level warn
rm -f "$W/started"

# predict through GT_WATCHDOG_S: a model that takes a few seconds over the file
"$GT" train "$W/t.ini" run.dir="$W/r2" train.max_steps=2 data.window=99 model.conv_scale=0.5 model.hidden=32 \
  model.layers=5 --log-level warn > "$W/r2.log" 2>&1 || bad "train for predict: $(tail -2 "$W/r2.log")"
"$GT" synth nilm --households 2 --days 12 --seed 6 -o "$W/big.h5" --log-level warn
( sleep 1; touch "$W/started" ) &
GT_WATCHDOG_S=5 stop_one_rank "predict (GT_WATCHDOG_S), one rank stopped" "$W/predict.log" \
  "$GT" predict "$W/r2" "$W/big.h5" -o "$W/p.h5" --log-level warn
rm -f "$W/started"

# a tight address-space limit: refused up front with the numbers, no hang, no crash
# (not under AddressSanitizer: its shadow memory needs terabytes of address space)
if ldd "$GT" 2>/dev/null | grep libasan >/dev/null; then # no -q: SIGPIPE under pipefail
  echo "skip ulimit -v: an AddressSanitizer build"
else
( ulimit -v 100000; timeout -s KILL 60 "$GT" train "$W/t.ini" run.dir="$W/r4" train.max_steps=2 --log-level warn > "$W/as1.log" 2>&1 ); rc=$?
if [ "$rc" = 4 ] && grep -q "the address-space limit (.ulimit -v.) leaves" "$W/as1.log"; then ok "ulimit -v 100000: exit 4 before MPI_Init"
elif [ "$rc" = 127 ]; then ok "ulimit -v 100000: the loader refuses the binary (exit 127)"
else bad "ulimit -v 100000 (crashed in MPI_Init before): exit $rc: $(tail -2 "$W/as1.log")"; fi
( ulimit -v 400000; timeout -s KILL 120 "$GT" train "$W/t.ini" run.dir="$W/r3" train.max_steps=2 --log-level warn > "$W/as.log" 2>&1 ); rc=$?
if [ "$rc" = 4 ] && grep -q "the address-space limit ('ulimit -v') leaves" "$W/as.log"; then ok "ulimit -v 400000: exit 4 naming the limit"
elif [ "$rc" = 127 ] && grep -q "error while loading shared libraries" "$W/as.log"; then
  # a CUDA-linked binary maps more than 400 MB of libraries: the dynamic loader refuses it before gridtrain
  # runs, with its own one-line message and exit 127; no hang, no crash either
  ok "ulimit -v 400000: the loader refuses the CUDA-linked binary (exit 127, one line)"
else bad "ulimit -v 400000: exit $rc: $(tail -2 "$W/as.log")"; fi
fi

[ "$fails" = 0 ] && echo PASS
[ "$fails" = 0 ]
