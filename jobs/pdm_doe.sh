#!/usr/bin/env bash
# jobs/pdm_doe.sh: a DOE matrix (docs/doe.md) as a Slurm job array, one task
# per cell, at most K cells at a time (the %K throttle).
#
#   jobs/pdm_doe.sh MATRIX [--throttle K] [--tier T]    submits itself: --array=0-(cells-1)%K
#   sbatch --array=0-199%16 jobs/pdm_doe.sh MATRIX      the same by hand (size from 'gridtrain doe expand')
#   gridtrain doe report SWEEP_DIR                      afterwards (or: jobs/pdm_doe.sh --report MATRIX)
#
# Each task runs `gridtrain doe run MATRIX --task $SLURM_ARRAY_TASK_ID` (one
# process; the cell's training is its child). A finished cell is skipped, a
# preempted one resumes from its checkpoint, a failed one is recorded in its
# cell.json. With more than one task per array element (a GPU tier), the
# cell's training starts its ranks with `srun --mpi=pmix` (GT_DOE_LAUNCH).
# Warning signal 300 s before the limit (B:USR1) -> forwarded to the training
# -> checkpoint, exit 75 -> the task requeues itself (same array element).
# Defaults: K = GT_DOE_THROTTLE or 8, tier GT_TIER or cpu with 1 rank x
# GT_CPU_THREADS (default 2) cores per cell: independent cells in parallel
# processes are the throughput lever for many small trainings (field notes).
#
#SBATCH --job-name=gt-doe
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --time=1-00:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=slurm-%x-%A_%a.out
set -euo pipefail
GT=${GT_BIN:-build/gridtrain}

# ---------------------------------------------------------------- submit mode
if [ -z "${SLURM_JOB_ID:-}" ]; then
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # shellcheck source=jobs/tiers.sh
  . "$here/tiers.sh"
  if [ "${1:-}" = "--report" ]; then exec "$GT" doe report "$2"; fi
  [ $# -ge 1 ] || { echo "usage: $0 MATRIX [--throttle K] [--tier T]" >&2; exit 2; }
  matrix=$1; shift
  throttle=${GT_DOE_THROTTLE:-8}
  tier=${GT_TIER:-cpu}
  while [ $# -gt 0 ]; do
    case $1 in
      --throttle) throttle=$2; shift 2 ;;
      --tier) tier=$2; shift 2 ;;
      *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
    esac
  done
  n=$("$GT" doe expand "$matrix" | sed -n 's/^array: .*(\([0-9]*\) tasks)$/\1/p')
  [ -n "$n" ] && [ "$n" -ge 1 ] || { echo "$0: cannot expand $matrix" >&2; exit 2; }
  if [ "$tier" = cpu ]; then args="--nodes=1 --ntasks=1 --cpus-per-task=${GT_CPU_THREADS:-2}"
  else args=$(gt_tier_args "$tier"); fi
  echo "$0: $matrix: $n cells, at most $throttle at a time, tier $tier" >&2
  # shellcheck disable=SC2086
  exec sbatch --array="0-$((n - 1))%$throttle" --export=ALL,GT_TIER="$tier",GT_JOBS_DIR="$here" $args ${GT_SBATCH_ARGS:-} \
       "$here/pdm_doe.sh" "$matrix"
fi

# ------------------------------------------------------------------- job mode
cd "${SLURM_SUBMIT_DIR:-.}"
matrix=$1
# shellcheck source=jobs/doe_cell.sh
. "${GT_JOBS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}/doe_cell.sh"
doe_cell_env
task=${SLURM_ARRAY_TASK_ID:?not an array task: submit with jobs/pdm_doe.sh MATRIX or sbatch --array}
tag="[pdm_doe job ${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_$task restart ${SLURM_RESTART_COUNT:-0}]"
echo "$tag $(date -u +%FT%TZ) cell $task of $matrix on ${SLURM_JOB_NODELIST:-?}, $threads thread(s)" >&2

doe_cell_run "$tag" 1 "$GT" doe run "$matrix" --task "$task"
case $rc in
  0) echo "$tag cell $task finished" >&2 ;;
  75) echo "$tag cell $task preempted: requeueing $SLURM_JOB_ID" >&2
      scontrol requeue "$SLURM_JOB_ID" || echo "$tag scontrol requeue failed: resubmit the task" >&2
      sleep 60 & wait $! || true ;;
  *) echo "$tag cell $task failed with exit code $rc (recorded in its cell.json)" >&2 ;;
esac
exit "$rc"
