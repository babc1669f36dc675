#!/usr/bin/env bash
# tests/slurm/test_slurm.sh TOOL SOURCE_DIR: jobs/ on a real private Slurm
# cluster (slurm/start.sh in a temporary directory with private ports; always
# stopped by the EXIT trap, also on failure).
#  1. jobs/nilm_full.sh --tier cpu (2 ranks via srun --mpi=pmix, tiny NILM model):
#     the run finishes with manifest/metrics/checkpoint/job log and its checksum
#  2. jobs/pdm_doe.sh: an 8-cell DOE matrix as a job array throttled to %2:
#     never more than 2 tasks running, every cell's outputs, the sweep report
#  3. the same NILM job, sent the warning signal while it trains
#     (scancel --signal=USR1 --batch): checkpoint, exit 75, scontrol requeue,
#     same job id restarted, --resume, and the final parameters (params xxh64)
#     equal the uninterrupted run of step 1
# TOOL = gridtrain with 'doe' (tests/doe/doe_tool until the lead registers it).
set -euo pipefail
T=$(readlink -f "$1")
SRC=$(readlink -f "$2")
for b in munged mungekey slurmctld slurmd sbatch srun; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || { echo "skipped: $b not installed (jobs/setup.sh)"; exit 77; }
done
export PATH="$PATH:/usr/sbin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 GT_LOG_LEVEL=info
W=$(mktemp -d /tmp/gt-slurm-XXXXXX) # short path: the munge socket path must fit sun_path
C="$W/cluster"
t_start=$(date +%s)
cleanup() {
  rc=$?
  "$SRC/slurm/stop.sh" "$C" >/dev/null 2>&1 || true
  if [ $rc = 0 ]; then rm -rf "$W"; else echo "test_slurm: FAILED; kept $W (cluster logs in $C/log)" >&2; fi
  echo "test_slurm: $(( $(date +%s) - t_start )) s" >&2
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - t_start )) s"; }

# ---- the cluster: private ports (retry on a clash)
up=0
for _ in 1 2 3; do
  export GT_SLURM_PORT=$(( 20000 + (RANDOM % 15000) * 2 ))
  if "$SRC/slurm/start.sh" "$C" > "$W/start.log" 2>&1; then up=1; break; fi
  "$SRC/slurm/stop.sh" "$C" >/dev/null 2>&1 || true
done
[ $up = 1 ] || { cat "$W/start.log"; fail "cluster did not start"; }
# shellcheck disable=SC1091
. "$C/env.sh"
echo "cluster up on port $GT_SLURM_PORT ($(elapsed))"

job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_job() { # JOBID TIMEOUT_S: until it leaves the queue (PENDING/RUNNING/requeued)
  local i
  for i in $(seq 1 $(( $2 * 5 ))); do
    case "$(job_state "$1")" in
      PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|REQUEUE_HOLD|SUSPENDED|"") sleep 0.2 ;;
      *) return 0 ;;
    esac
  done
  scontrol show job "$1" >&2
  fail "job $1 still $(job_state "$1") after $2 s"
}
params_of() { grep -o 'params xxh64 [0-9a-f]*' "$1" | tail -1 | awk '{print $3}'; }

# ---- data: a tiny NILM file and a tiny wind farm
cd "$W"
"$T" synth nilm -o "$W/nilm.h5" --households 3 --days 1 --period 6 --lowres-period 0 \
    --spike-rate 0 --gap-rate 0 --stuck-rate 0 --seed 7 >/dev/null 2>&1 || fail "synth nilm"
"$T" synth pdm -o "$W/farm.h5" --farms 2 --turbines 2 --days 0.2 --rate 1 --seed 3 >/dev/null 2>&1 || fail "synth pdm"
cat > "$W/nilm.ini" <<INI
[data]
file = $W/nilm.h5
window = 63
stride = 16
[model]
kind = s2p_cnn
layers = 3
conv_scale = 0.3
hidden = 32
[optim]
lr = 3e-3
warmup = 5
[train]
batch = 32
micro_batch = 8
epochs = 0
max_steps = 6000
log_every = 100
eval_every = 1000
[run]
checkpoint_every = 500
checkpoint_minutes = 0
INI
export GT_BIN="$T" GT_CPU_RANKS=2 GT_CPU_THREADS=1

# ---- 1. the uninterrupted NILM job (cpu tier: 2 ranks x 1 core)
out=$("$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit nilm_full: $out"
jid=$(echo "$out" | awk '/Submitted batch job/ {print $4}')
[ -n "$jid" ] || fail "no job id in: $out"
wait_job "$jid" 120
[ "$(job_state "$jid")" = COMPLETED ] || { cat "$W"/slurm-gt-nilm-"$jid".out; fail "nilm job $jid: $(job_state "$jid")"; }
run="$W/runs/nilm-$jid"
log="$W/slurm-gt-nilm-$jid.out"
[ -s "$log" ] || fail "job log $log missing"
for f in manifest.json metrics.jsonl config.ini "job-$jid.log"; do [ -s "$run/$f" ] || fail "$run/$f missing"; done
compgen -G "$run/checkpoints/ckpt-000006000.ok" >/dev/null || fail "final checkpoint missing"
grep -q '"exit_code":	0' "$run/manifest.json" || grep -q '"exit_code": 0' "$run/manifest.json" || fail "manifest exit_code"
grep -q '"ranks":	2' "$run/manifest.json" || grep -q '"ranks": 2' "$run/manifest.json" || fail "manifest: 2 ranks expected"
grep -q "gridtrain .*: 2 ranks" "$log" || fail "the job did not start 2 ranks"
ref=$(params_of "$log")
[ -n "$ref" ] || fail "no params checksum in $log"
echo "1. nilm_full.sh job $jid finished, params $ref ($(elapsed))"

# ---- 2. the DOE matrix as a throttled job array
cat > "$W/doe.ini" <<INI
[doe]
name = slurm8
dir = $W/sweep
[factors]
farm = 0,1
condition = rated+turbulent, rated+low_wind
seed = 1,2
[data]
file = $W/farm.h5
window = 48
stride = 24
[model]
kind = lstm
hidden = 16
layers = 1
[optim]
lr = 1e-2
warmup = 5
[train]
batch = 16
epochs = 0
max_steps = 60
log_every = 20
eval_every = 30
[run]
checkpoint_every = 30
checkpoint_minutes = 0
INI
out=$(GT_CPU_THREADS=1 "$SRC/jobs/pdm_doe.sh" "$W/doe.ini" --throttle 2 2>&1) || fail "submit pdm_doe: $out"
ajid=$(echo "$out" | awk '/Submitted batch job/ {print $4}')
[ -n "$ajid" ] || fail "no array job id in: $out"
echo "$out" | grep -q "8 cells, at most 2 at a time" || fail "submit line: $out"
max_running=0
for _ in $(seq 1 900); do
  n_run=$(squeue -h -r -j "$ajid" -t RUNNING 2>/dev/null | wc -l)
  [ "$n_run" -gt "$max_running" ] && max_running=$n_run
  [ -z "$(squeue -h -r -j "$ajid" 2>/dev/null)" ] && break
  sleep 0.2
done
[ -z "$(squeue -h -r -j "$ajid" 2>/dev/null)" ] || fail "array $ajid not done after 180 s"
[ "$max_running" -ge 1 ] && [ "$max_running" -le 2 ] || fail "throttle %2: saw $max_running tasks running at once"
n_eval=$(ls "$W"/sweep/cells/*/eval.json 2>/dev/null | wc -l)
[ "$n_eval" = 8 ] || { tail -n 20 "$W"/slurm-gt-doe-"$ajid"_*.out; fail "8 cells expected with eval.json, got $n_eval"; }
for c in "$W"/sweep/cells/*/; do
  for f in cell.ini cell.json manifest.json metrics.jsonl train.log eval.json; do [ -s "$c/$f" ] || fail "$c$f missing"; done
  grep -q '"status":	"done"' "$c/cell.json" || fail "$c: not done"
  grep -q "\"${ajid}_[0-7] (job [0-9]*" "$c/cell.json" || fail "$c: array job id not recorded"
  grep -q '"steps":	60' "$c/eval.json" || fail "$c: steps"
done
for i in $(seq 0 7); do
  [ -s "$W/slurm-gt-doe-${ajid}_$i.out" ] || fail "log of array task $i missing"
done
"$T" doe report "$W/sweep" > "$W/report.out" 2>&1 || { cat "$W/report.out"; fail "doe report"; }
grep -q "8 cells (8 done, 0 failed, 0 preempted, 0 running, 0 missing)" "$W/sweep/report/report.md" || fail "report counts"
[ "$(wc -l < "$W/sweep/report/cells.csv")" = 9 ] || fail "cells.csv rows"
grep -q "farm x condition" "$W/sweep/report/report.md" || fail "two-way table"
echo "2. DOE array $ajid: 8 cells done, at most $max_running running, report written ($(elapsed))"

# ---- 3. warning signal -> checkpoint -> requeue -> resume == uninterrupted
out=$("$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit nilm_full (2): $out"
jid2=$(echo "$out" | awk '/Submitted batch job/ {print $4}')
run2="$W/runs/nilm-$jid2"
sent=0
for _ in $(seq 1 300); do # wait until it trains (a progress line past step 500)
  if [ -f "$run2/metrics.jsonl" ] && grep -q '"step":	\?[5-9][0-9][0-9],\|"step":[5-9][0-9][0-9],' "$run2/metrics.jsonl" 2>/dev/null; then
    scancel --signal=USR1 --batch "$jid2"
    sent=1
    break
  fi
  [ "$(job_state "$jid2")" = COMPLETED ] && fail "job $jid2 finished before the signal (make it longer)"
  sleep 0.1
done
[ $sent = 1 ] || fail "job $jid2 never reached step 500"
echo "   USR1 sent to job $jid2 ($(elapsed))"
wait_job "$jid2" 180
log2="$W/slurm-gt-nilm-$jid2.out"
[ "$(job_state "$jid2")" = COMPLETED ] || { cat "$log2"; fail "job $jid2: $(job_state "$jid2")"; }
restarts=$(scontrol show job "$jid2" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
[ "$restarts" = 1 ] || fail "job $jid2 restarts=$restarts, expected 1 (requeued once)"
grep -q "signal USR1: forwarding to the ranks" "$run2/job-$jid2.log" || fail "signal not forwarded"
grep -q "checkpoint written; continue with" "$log2" || fail "no checkpoint message in $log2"
grep -q "preempted: checkpoint written; requeueing job $jid2" "$run2/job-$jid2.log" || fail "no requeue"
grep -q "restart 1\] resuming runs/nilm-$jid2 from its newest checkpoint" "$run2/job-$jid2.log" || fail "no resume in the restarted job"
grep -q '"resumed_from_step"' "$run2/manifest.json" || fail "manifest: resumed_from_step"
got=$(params_of "$log2")
[ "$got" = "$ref" ] || fail "resumed job params $got != uninterrupted $ref"
echo "3. job $jid2: USR1 -> checkpoint -> requeue -> resume; params $got == $ref ($(elapsed))"
echo "test_slurm: OK"
