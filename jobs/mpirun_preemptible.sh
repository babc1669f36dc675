#!/usr/bin/env bash
# jobs/mpirun_preemptible.sh ARGS...: `mpirun ARGS...` for runs that may be
# stopped early (a time limit, scancel, a plain kill).
#
# Open MPI's mpirun (4.x) ends a job it receives SIGTERM, SIGINT or SIGHUP
# for: it kills the ranks within a second (odls_base_sigkill_timeout) and exits
# 1, so `gridtrain train` cannot checkpoint; and it refuses to forward SIGTERM
# (ess_base_forward_signals). SIGUSR1 it forwards: every rank checkpoints at
# the next step boundary and exits 75, which mpirun returns. This wrapper
# delivers SIGTERM, SIGINT and SIGHUP to mpirun as SIGUSR1 (and SIGUSR1 as it
# is), so a TERM gives exit 75 with a committed checkpoint, like SIGUSR1:
#
#   jobs/mpirun_preemptible.sh -n 4 build/gridtrain train CONFIG
#   kill -TERM <its pid>        -> the ranks checkpoint, exit code 75
#   build/gridtrain train --resume RUN_DIR   continues
#
# Under srun no wrapper is needed (srun forwards SIGTERM to the ranks).
set -u
MPIRUN=${MPIRUN:-mpirun}
"$MPIRUN" "$@" &
child=$!
forward() { kill -s USR1 "$child" 2>/dev/null || true; }
trap forward TERM INT HUP USR1
rc=0
while :; do
  wait "$child" && rc=0 || rc=$?
  kill -0 "$child" 2>/dev/null || break # wait was interrupted by a trapped signal: wait again
done
exit "$rc"
