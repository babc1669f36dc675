#!/usr/bin/env bash
# jobs/doe_cell.sh: what the DOE array tasks of jobs/pdm_doe.sh and
# jobs/doe_ladder.sh share, sourced by both (not run).

# doe_cell_env: OpenBLAS/OpenMP threads from the task's cores; a cell of
# several ranks starts them with srun (GT_DOE_LAUNCH) unless that is set.
doe_cell_env() {
  threads=${SLURM_CPUS_PER_TASK:-1}
  export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
  if [ "${SLURM_NTASKS:-1}" -gt 1 ] && [ -z "${GT_DOE_LAUNCH:-}" ]; then
    export GT_DOE_LAUNCH="srun --mpi=pmix -n $SLURM_NTASKS"
  fi
}

# doe_cell_run TAG NOTE CMD...: CMD in the background, USR1 and TERM (the
# warning before the time limit, a preemption) forwarded to it, waited for
# through them; its exit code in rc. NOTE 1: one line per forwarded signal.
doe_cell_run() {
  local tag=$1 note=$2
  shift 2
  child=0
  # shellcheck disable=SC2317 # called by the traps
  forward() {
    [ "$note" = 1 ] && echo "$tag signal $1: forwarding to the cell's training" >&2
    [ "$child" -gt 0 ] && kill -s "$1" "$child" 2>/dev/null || true
  }
  trap 'forward USR1' USR1
  trap 'forward TERM' TERM
  "$@" &
  child=$!
  rc=0
  while :; do
    wait "$child" && rc=0 || rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  trap - USR1 TERM
}
