#!/usr/bin/env bash
# jobs/nilm_full.sh: the full NILM training as a preemption-safe Slurm job.
#
#   sbatch jobs/nilm_full.sh [CONFIG] [section.key=value ...]      #SBATCH defaults below (cpu layout)
#   jobs/nilm_full.sh --tier GA660M [CONFIG] [overrides]           submits itself with the tier's options
#   GT_TIER=AE450 jobs/nilm_full.sh ...                            same, tier from the environment
#
# Tiers (jobs/tiers.sh): A350 1 GPU, AE450 2 GPUs, GA660M 4 GPUs per node, cpu
# (CPU-only nodes, GT_CPU_RANKS x GT_CPU_THREADS). Ranks start with
# `srun --mpi=pmix` (GT_LAUNCHER=mpirun: mpirun inside the allocation), one per
# GPU or core group; OPENBLAS_NUM_THREADS = cores per rank.
#
# Preemption and time limits: Slurm sends SIGUSR1 to this script 300 s before
# the limit (--signal=B:USR1@300); the trap forwards it to the ranks (srun
# forwards it to every task), gridtrain checkpoints and exits 75, and the
# script requeues the job (scontrol requeue: same job id). The run directory is
# named after the job id (runs/nilm-$SLURM_JOB_ID, GT_RUN_DIR to choose), so the
# requeued job finds its checkpoint and continues with --resume; a resubmitted
# job given the same GT_RUN_DIR does the same. A preemption by Slurm itself
# (SIGTERM, PreemptMode=REQUEUE) takes the same path.
#
# Logs: slurm-<name>-<jobid>.out in the submission directory (appended over
# requeues), and RUN_DIR/job-<jobid>.log with each segment's header.
# Environment: GT_BIN (default build/gridtrain), GT_RUN_DIR, GT_LAUNCHER, GT_SRUN_WAIT, GT_MAX_RESTARTS
# (srun|mpirun), GT_TIER, GT_SIGNAL_LEAD (documentation only: change --signal).
#
#SBATCH --job-name=gt-nilm
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --time=2-00:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail

# ---------------------------------------------------------------- submit mode
if [ -z "${SLURM_JOB_ID:-}" ]; then
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # shellcheck source=jobs/tiers.sh
  . "$here/tiers.sh"
  tier=${GT_TIER:-cpu}
  if [ "${1:-}" = "--tier" ]; then tier=$2; shift 2; fi
  args=$(gt_tier_args "$tier")
  # shellcheck disable=SC2086
  exec sbatch --export=ALL,GT_TIER="$tier" $args ${GT_SBATCH_ARGS:-} "$here/nilm_full.sh" "$@"
fi

# ------------------------------------------------------------------- job mode
cd "${SLURM_SUBMIT_DIR:-.}"
[ "${1:-}" = "--tier" ] && shift 2 # the tier was applied at submission
CONFIG=jobs/nilm_full.ini
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then CONFIG=$1; shift; fi
GT=${GT_BIN:-build/gridtrain}
RUN_DIR=${GT_RUN_DIR:-runs/nilm-$SLURM_JOB_ID}
mkdir -p "$RUN_DIR"
LOG="$RUN_DIR/job-$SLURM_JOB_ID.log"
threads=${SLURM_CPUS_PER_TASK:-1}
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
ntasks=${SLURM_NTASKS:-1}
log() { echo "[nilm_full $(date -u +%FT%TZ) job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0}] $*" | tee -a "$LOG" >&2; }

if compgen -G "$RUN_DIR/checkpoints/ckpt-*.ok" >/dev/null; then
  args=(train --resume "$RUN_DIR" "$@")
  log "resuming $RUN_DIR from its newest checkpoint"
else
  args=(train "$CONFIG" "run.dir=$RUN_DIR" "$@")
  # a restart of this job before its first checkpoint: its own files, nothing to keep
  [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ] && args+=(run.overwrite=true)
  log "starting $CONFIG in $RUN_DIR"
fi
log "tier ${GT_TIER:-cpu}: $ntasks rank(s) x $threads thread(s) on ${SLURM_JOB_NODELIST:-?}; GPUs ${CUDA_VISIBLE_DEVICES:-none}"

if [ "${GT_LAUNCHER:-srun}" = mpirun ]; then
  launch=(mpirun -n "$ntasks" --bind-to none)
else
  # one task per GPU (--gpus-per-task) or core group (--cpus-per-task). No
  # --kill-on-bad-exit: a fatal error already ends every rank (MPI_Abort), and
  # after a warning signal every rank must be free to exit 75 on its own.
  # --wait: a rank that dies (a lost node's, one killed by the OOM killer)
  # leaves the others waiting in a collective (Open MPI 4.1 reports "peer
  # process has unexpectedly disconnected" and keeps waiting); srun ends them
  # GT_SRUN_WAIT seconds (default 20) after the first task ended. Normal ends
  # and the exit 75 of a preemption leave MPI_Finalize together (a fence), so
  # they never wait that long.
  # GT_SRUN_ARGS=--overcommit lets a small test node run more ranks than cores.
  # shellcheck disable=SC2206 # GT_SRUN_ARGS holds several words
  launch=(srun --mpi=pmix --wait="${GT_SRUN_WAIT:-20}" ${GT_SRUN_ARGS:-})
fi

child=0
got_signal=""
forward() { # the warning signal (or TERM) -> the launcher -> every rank
  got_signal=$1
  local sig=$1
  # mpirun kills its ranks on TERM within a second (no checkpoint, exit 1) and
  # forwards only USR1: deliver it as USR1 (jobs/mpirun_preemptible.sh)
  [ "${GT_LAUNCHER:-srun}" = mpirun ] && sig=USR1
  log "signal $1: forwarding to the ranks as $sig (checkpoint, exit 75)"
  [ "$child" -gt 0 ] && kill -s "$sig" "$child" 2>/dev/null || true
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM
"${launch[@]}" "$GT" "${args[@]}" &
child=$!
rc=0
while :; do
  wait "$child" && rc=0 || rc=$?
  kill -0 "$child" 2>/dev/null || break # wait was interrupted by a trap: wait again
done
trap - USR1 TERM

# a launcher may report a rank's 75 differently; a signal we forwarded plus a
# committed checkpoint written by this segment means the same
if [ "$rc" != 0 ] && [ "$rc" != 75 ] && [ -n "$got_signal" ] && compgen -G "$RUN_DIR/checkpoints/ckpt-*.ok" >/dev/null; then
  log "launcher exit code $rc after signal $got_signal: treated as preempted (75)"
  rc=75
fi
# A rank killed by a signal (the launcher reports 128+N: a node crash, the
# OOM killer, a bus error) or a node failure: the job is requeued and resumes
# from the last committed checkpoint, at most GT_MAX_RESTARTS times. gridtrain's
# own errors (exit codes below 128: bad input, NaN, out of memory) are not
# retried: they would fail the same way again.
restarts=${SLURM_RESTART_COUNT:-0}
lost=0
[ "$rc" -ge 128 ] && [ "$rc" != 255 ] && lost=1
requeue() { # MESSAGE
  log "$1; requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID" || log "scontrol requeue failed: resubmit with GT_RUN_DIR=$RUN_DIR"
  sleep 60 & wait $! || true # Slurm ends this script as it requeues it
}
case $rc in
  0) log "finished: $RUN_DIR (manifest.json, metrics.jsonl, checkpoints/)" ;;
  75) requeue "preempted: checkpoint written" ;;
  *) if [ $lost = 1 ] && [ "$restarts" -lt "${GT_MAX_RESTARTS:-3}" ]; then
       sig=$((rc - 128))
       requeue "a rank was lost (launcher exit code $rc: signal $sig, a node failure or a killed process; restart $((restarts + 1)) of ${GT_MAX_RESTARTS:-3}): the requeued job resumes from the last committed checkpoint"
     elif [ $lost = 1 ]; then
       log "a rank was lost (launcher exit code $rc) and the job was already restarted $restarts times (GT_MAX_RESTARTS): giving up; resubmit with GT_RUN_DIR=$RUN_DIR"
     else
       log "failed with exit code $rc (see docs/troubleshooting.md); gridtrain doctor $RUN_DIR says:"
       "$GT" doctor "$RUN_DIR" 2>&1 | tee -a "$LOG" >&2 || true
     fi ;;
esac
exit "$rc"
