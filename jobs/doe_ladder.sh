#!/usr/bin/env bash
# jobs/doe_ladder.sh: a halving matrix ([search] strategy = halving,
# docs/doe.md) on Slurm: one job array per rung, at most K cells at a time,
# and after it a small step job (--dependency=afterok on the array) that runs
# `gridtrain doe next` and submits the next rung the same way.
#
#   jobs/doe_ladder.sh MATRIX [--rung R] [--throttle K] [--tier T]   submits rung R (default 0) and its step
#   gridtrain doe report SWEEP_DIR                                    afterwards (the last step runs it too)
#
# Resubmitting a rung is idempotent: cells already at the rung's budget are
# skipped, the step ranks the same results again. A cell that fails is
# recorded in its rung record and its array task exits 0, so the step still
# runs: the rung proceeds without it when enough configurations have a result
# (at least one per survivor slot); otherwise `doe next` says so, exits 3 and
# submits nothing: resubmit the rung (failed cells are retried). A preempted
# cell (B:USR1 300 s before the limit) checkpoints and requeues its task; the
# step waits for it. Defaults as jobs/pdm_doe.sh: K = GT_DOE_THROTTLE or 8,
# tier GT_TIER or cpu with GT_CPU_THREADS (default 2) cores per cell.
#
#SBATCH --job-name=gt-ladder
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
here=${GT_JOBS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

submit() { # MATRIX RUNG THROTTLE TIER
  local matrix=$1 rung=$2 throttle=$3 tier=$4 list n args jid nid
  list=$("$GT" doe expand "$matrix" --rung "$rung" | sed -n 's/^array: --array=\([0-9,]*\) (\([0-9]*\) tasks)$/\1 \2/p')
  [ -n "$list" ] || { echo "$0: $matrix: rung $rung not reached ('doe next --rung $((rung - 1))')" >&2; exit 2; }
  n=${list##* }; list=${list% *}
  if [ "$tier" = cpu ]; then args="--nodes=1 --ntasks=1 --cpus-per-task=${GT_CPU_THREADS:-2}"
  else
    # shellcheck source=jobs/tiers.sh
    . "$here/tiers.sh"
    args=$(gt_tier_args "$tier")
  fi
  # shellcheck disable=SC2086
  jid=$(sbatch --parsable --array="$list%$throttle" --export=ALL,GT_TIER="$tier",GT_JOBS_DIR="$here" $args \
        ${GT_SBATCH_ARGS:-} "$here/doe_ladder.sh" --cell "$matrix" "$rung")
  jid=${jid%%;*}
  nid=$(sbatch --parsable --job-name=gt-ladder-next --dependency="afterok:$jid" --kill-on-invalid-dep=yes \
        --nodes=1 --ntasks=1 --cpus-per-task=1 --output="slurm-gt-ladder-next-%j.out" \
        --export=ALL,GT_TIER="$tier",GT_JOBS_DIR="$here",GT_DOE_THROTTLE="$throttle" \
        "$here/doe_ladder.sh" --next "$matrix" "$rung")
  nid=${nid%%;*}
  echo "$0: $matrix: rung $rung: array job $jid ($n cells, at most $throttle at a time, tier $tier), next step job $nid"
}

case ${1:-} in
  --cell) # ---------------------------------------------- one cell of a rung
    matrix=$2 rung=$3
    cd "${SLURM_SUBMIT_DIR:-.}"
    # shellcheck source=jobs/doe_cell.sh
    . "$here/doe_cell.sh"
    doe_cell_env
    task=${SLURM_ARRAY_TASK_ID:?not an array task}
    tag="[doe_ladder job ${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_$task rung $rung restart ${SLURM_RESTART_COUNT:-0}]"
    echo "$tag $(date -u +%FT%TZ) cell $task of $matrix on ${SLURM_JOB_NODELIST:-?}" >&2
    doe_cell_run "$tag" 0 "$GT" doe run "$matrix" --task "$task" --rung "$rung"
    case $rc in
      0) echo "$tag cell $task at rung $rung's budget" >&2 ;;
      75) echo "$tag cell $task preempted: requeueing $SLURM_JOB_ID" >&2
          scontrol requeue "$SLURM_JOB_ID" || echo "$tag scontrol requeue failed: resubmit the rung" >&2
          sleep 60 & wait $! || true
          exit 75 ;;
      *) echo "$tag cell $task failed with exit code $rc (recorded in its rung record; the rung proceeds without it)" >&2 ;;
    esac
    exit 0 ;;
  --next) # ------------------------------------- rank the rung, submit the next
    matrix=$2 rung=$3
    cd "${SLURM_SUBMIT_DIR:-.}"
    rc=0
    out=$("$GT" doe next "$matrix" --rung "$rung") || rc=$?
    echo "$out"
    [ $rc = 0 ] || { echo "[doe_ladder step $SLURM_JOB_ID] rung $rung: the ladder stops (exit $rc)" >&2; exit $rc; }
    if echo "$out" | grep -q '^chosen: '; then
      "$GT" doe report "$matrix" --no-plots || true
      exit 0
    fi
    submit "$matrix" $((rung + 1)) "${GT_DOE_THROTTLE:-8}" "${GT_TIER:-cpu}" ;;
  *) # ------------------------------------------------------------- submit mode
    [ $# -ge 1 ] || { echo "usage: $0 MATRIX [--rung R] [--throttle K] [--tier T]" >&2; exit 2; }
    matrix=$(readlink -f "$1"); shift
    rung=0 throttle=${GT_DOE_THROTTLE:-8} tier=${GT_TIER:-cpu}
    while [ $# -gt 0 ]; do
      case $1 in
        --rung) rung=$2; shift 2 ;;
        --throttle) throttle=$2; shift 2 ;;
        --tier) tier=$2; shift 2 ;;
        *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
      esac
    done
    submit "$matrix" "$rung" "$throttle" "$tier" ;;
esac
