# tests/slurm/lib.sh: what the Slurm tests share (sourced by test_slurm.sh and
# test_multinode.sh): the skip check, a private cluster in a temporary
# directory stopped by the EXIT trap, job polling, and the tiny NILM and PdM
# data and configurations the jobs train on.
#
#   . tests/slurm/lib.sh; gt_slurm_begin NAME NODES   -> $W (work dir), $C (cluster dir)
# Needs $SRC (source tree) and $T (gridtrain with 'doe') set by the caller.

fail() { echo "FAIL: $*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - t_start )) s"; }

gt_slurm_skip_check() {
  local b
  for b in munged mungekey slurmctld slurmd sbatch srun; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || { echo "skipped: $b not installed (jobs/setup.sh)"; exit 77; }
  done
}

# NAME NODES: skip check, work directory, a cluster of NODES nodes on private
# ports (retried on a clash), the EXIT trap that stops it and keeps the work
# directory of a failed test.
gt_slurm_begin() {
  gt_slurm_skip_check
  [ "$2" -le 1 ] || unshare --uts true 2>/dev/null || { echo "skipped: several nodes need 'unshare --uts' (root)"; exit 77; }
  export PATH="$PATH:/usr/sbin"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 GT_LOG_LEVEL=info
  GT_TEST_NAME=$1
  W=$(mktemp -d "/tmp/gt-$1-XXXXXX") # short path: the munge socket path must fit sun_path
  C="$W/cluster"
  t_start=$(date +%s)
  trap gt_slurm_end EXIT
  local up=0 _
  for _ in 1 2 3; do
    export GT_SLURM_PORT=$(( 20000 + (RANDOM % 3500) * 8 )) GT_SLURM_NODES=$2
    if "$SRC/slurm/start.sh" "$C" > "$W/start.log" 2>&1; then up=1; break; fi
    "$SRC/slurm/stop.sh" "$C" >/dev/null 2>&1 || true
  done
  [ $up = 1 ] || { cat "$W/start.log"; fail "cluster did not start"; }
  # shellcheck disable=SC1091
  . "$C/env.sh"
  echo "cluster of $2 node(s) up on port $GT_SLURM_PORT ($(elapsed))"
  cd "$W"
}

gt_slurm_end() {
  local rc=$?
  "$SRC/slurm/stop.sh" "$C" >/dev/null 2>&1 || true
  if [ $rc = 0 ]; then rm -rf "$W"; else echo "$GT_TEST_NAME: FAILED; kept $W (cluster logs in $C/log)" >&2; fi
  echo "$GT_TEST_NAME: $(( $(date +%s) - t_start )) s" >&2
}

job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_job() { # JOBID TIMEOUT_S: until it leaves the queue (PENDING/RUNNING/requeued)
  local i
  for i in $(seq 1 $(( $2 * 5 ))); do
    case "$(job_state "$1")" in
      PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|SUSPENDED|"") sleep 0.2 ;;
      *) return 0 ;;
    esac
  done
  scontrol show job "$1" >&2
  fail "job $1 still $(job_state "$1") after $2 s"
}
job_id_of() { echo "$1" | awk '/Submitted batch job/ {print $4}'; }
params_of() { grep -o 'params xxh64 [0-9a-f]*' "$1" | tail -1 | awk '{print $3}'; }
# FILE STEP: metrics.jsonl has a row at or past STEP
reached_step() { [ -f "$1" ] && awk -v s="$2" 'match($0, /"step":[ \t]*[0-9]+/) { v = substr($0, RSTART, RLENGTH); sub(/.*:[ \t]*/, "", v); if (v + 0 >= s) f = 1 } END { exit !f }' "$1"; }

# The tiny NILM file and configuration ($W/nilm.h5, $W/nilm.ini; MAX_STEPS)
gt_slurm_nilm_data() {
  "$T" synth nilm -o "$W/nilm.h5" --households 3 --days 1 --period 6 --lowres-period 0 \
      --spike-rate 0 --gap-rate 0 --stuck-rate 0 --seed 7 >/dev/null 2>&1 || fail "synth nilm"
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
max_steps = ${1:-6000}
log_every = 100
eval_every = 1000
[run]
checkpoint_every = 500
checkpoint_minutes = 0
INI
}

# The tiny wind farm and an 8-cell DOE matrix over it ($W/farm.h5, $W/doe.ini)
gt_slurm_pdm_doe() {
  "$T" synth pdm -o "$W/farm.h5" --farms 2 --turbines 2 --days 0.2 --rate 1 --seed 3 >/dev/null 2>&1 || fail "synth pdm"
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
}

# ARRAY_JOB_ID TIMEOUT_S -> $max_running: polls until the array is done
wait_array() {
  local _ n_run
  max_running=0
  for _ in $(seq 1 $(( $2 * 5 ))); do
    n_run=$(squeue -h -r -j "$1" -t RUNNING 2>/dev/null | wc -l)
    [ "$n_run" -gt "$max_running" ] && max_running=$n_run
    [ -z "$(squeue -h -r -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  fail "array $1 not done after $2 s"
}
