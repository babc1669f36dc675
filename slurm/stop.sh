#!/usr/bin/env bash
# slurm/stop.sh DIR: stops the private cluster started by slurm/start.sh DIR:
# cancels its jobs, TERMs each node's slurmd, then slurmctld, waits for them,
# then TERMs munged (about 4 s); what is left in a node's namespace is killed. Only the daemons whose pid files are under DIR are
# signalled. Safe to call twice or on a half-started cluster.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$(cd "$1" 2>/dev/null && pwd) || exit 0
export PATH="$PATH:/usr/sbin"
export SLURM_CONF="$DIR/slurm.conf"
[ -f "$SLURM_CONF" ] && timeout 10 scancel --full --quiet -u "$(id -un)" 2>/dev/null || true

stop_pid() { # pidfile...: TERM the first live pid, wait up to 10 s, then KILL
  local f pid
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    return 0
  done
}
for f in "$DIR"/slurmd-*.daemon.pid; do
  [ -f "$f" ] || continue
  node=${f#"$DIR/slurmd-"}; node=${node%.daemon.pid}
  stop_pid "$f" "$DIR/slurmd-$node.pid"
done
# a node's leftovers (job steps of a killed slurmd): everything in its namespace
for f in "$DIR"/ns-*; do
  [ -f "$f" ] || continue
  node=${f#"$DIR/ns-"}
  "$(dirname "$0")/node.sh" "$DIR" kill "$node" >/dev/null 2>&1 || true
done
stop_pid "$DIR/slurmctld.daemon.pid" "$DIR/slurmctld.pid"
stop_pid "$DIR/munge/munged.pid"
rm -f "$DIR"/*.daemon.pid
echo "slurm/stop.sh: stopped the cluster in $DIR"
