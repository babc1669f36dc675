#!/usr/bin/env bash
# slurm/node.sh DIR ACTION NODE [ARGS]: one node of the private cluster that
# slurm/start.sh DIR runs on this machine (docs/slurm.md "Several nodes on one
# machine"). A node is a slurmd with its own UTS namespace (host name = node
# name); the processes of the node are those in that namespace.
#
#   slurm/node.sh DIR start NODE        start the node's slurmd (again, after a kill)
#   slurm/node.sh DIR exec NODE CMD...  run a shell command line on the node (joins
#                                       its namespace; Open MPI's rsh agent: DIR/rsh)
#   slurm/node.sh DIR pids NODE         the pids of the node's processes
#   slurm/node.sh DIR kill NODE         a node crash: SIGKILL to every process of the
#                                       node, slurmd and its job steps included
#   slurm/node.sh DIR kill-ranks NODE   SIGKILL to the node's gridtrain processes only
#                                       (a rank lost: bus error, OOM killer)
# The single node 'localhost' of a one-node cluster has no namespace of its
# own: only 'start' applies to it.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
action=$2
node=$3
shift 3
export PATH="$PATH:/usr/sbin"
export SLURM_CONF="$DIR/slurm.conf"
grep -qx -- "$node" "$DIR/nodes" 2>/dev/null || { echo "slurm/node.sh: no node '$node' in $DIR/nodes" >&2; exit 2; }

ns_pids() { # the pids whose UTS namespace is the node's (recorded at start)
  local want p
  want=$(cat "$DIR/ns-$node" 2>/dev/null) || return 0
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/uts" 2>/dev/null)" = "$want" ] && echo "${p#/proc/}"
  done
  return 0
}
live_daemon() { # the pid of the node's slurmd when it runs
  local pid
  pid=$(cat "$DIR/slurmd-$node.daemon.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

case "$action" in
  start)
    if live_daemon >/dev/null; then echo "slurm/node.sh: $node already runs" >&2; exit 0; fi
    # a node that comes back after a crash is a rebooted node: no processes, an
    # empty TmpFS, no sockets of the steps it ran (a stale PMIx socket fails
    # the next step on it with 'Address already in use')
    if [ "$node" != localhost ] && [ -f "$DIR/ns-$node" ]; then
      for p in $(ns_pids); do kill -KILL "$p" 2>/dev/null || true; done
      rm -rf "${DIR:?}/tmp/$node/"* "$DIR/spool/$node"/stepd.* "$DIR/spool/$node"/pmix.*
    fi
    if [ "$node" = localhost ]; then
      setsid slurmd -D -N localhost -f "$SLURM_CONF" </dev/null >>"$DIR/log/slurmd-$node.out" 2>&1 &
    else
      # shellcheck disable=SC2016 # expanded by the inner shell
      setsid unshare --uts sh -c 'hostname "$1" && exec slurmd -D -N "$1" -f "$2"' sh "$node" "$SLURM_CONF" \
        </dev/null >>"$DIR/log/slurmd-$node.out" 2>&1 &
    fi
    pid=$!
    echo "$pid" > "$DIR/slurmd-$node.daemon.pid"
    if [ "$node" != localhost ]; then
      for _ in $(seq 1 50); do # the namespace exists once the host name is set
        [ "$(nsenter --uts -t "$pid" hostname 2>/dev/null)" = "$node" ] && break
        sleep 0.1
      done
      readlink "/proc/$pid/ns/uts" > "$DIR/ns-$node"
    fi
    ;;
  exec)
    [ "$node" != localhost ] || { echo "slurm/node.sh: exec needs a node with a namespace" >&2; exit 2; }
    pid=$(live_daemon) || { echo "slurm/node.sh: node $node is down (slurm/node.sh $DIR start $node)" >&2; exit 255; }
    # like ssh: the arguments form one command line for the node's shell
    exec nsenter --uts -t "$pid" sh -c "$*"
    ;;
  pids) ns_pids ;;
  kill|kill-ranks)
    [ "$node" != localhost ] || { echo "slurm/node.sh: $action needs a node with a namespace" >&2; exit 2; }
    n=0
    for p in $(ns_pids); do
      if [ "$action" = kill-ranks ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" != gridtrain ]; then continue; fi
      kill -KILL "$p" 2>/dev/null && n=$((n + 1))
    done
    echo "slurm/node.sh: $action $node: $n process(es) killed"
    ;;
  *) echo "slurm/node.sh: unknown action '$action' (start, exec, pids, kill, kill-ranks)" >&2; exit 2 ;;
esac
