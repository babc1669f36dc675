#!/usr/bin/env bash
# tests/slurm/test_multinode.sh TOOL SOURCE_DIR: gridtrain across the nodes of
# a private 2-node Slurm cluster on this machine (slurm/start.sh with
# GT_SLURM_NODES=2: nodes gtn1 and gtn2, one slurmd and host name each; ranks
# on different nodes talk over TCP, docs/slurm.md). Always stopped by the EXIT
# trap.
#  1. nilm_full.sh with 2 ranks on one node, then with --nodes=2 (one rank per
#     node): the same final parameters (params xxh64) and data checksum (the
#     collective read); the cross-node run's placement names both nodes; the
#     wall times of both are printed (cross-node overhead)
#  2. 4 ranks over 2 nodes (srun): node-local ranks 0,1,0,1 computed per node
#     in manifest.json; `mpirun --host gtn1:2,gtn2:2` (Open MPI over TCP,
#     started through the cluster's rsh agent) and a 4-rank srun job train to
#     the same parameters as mpirun -n 4 on one node
#  3. collective HDF5 write and read across the nodes: synth on 2 nodes writes
#     the same bytes as 1 rank; predict on 2 nodes writes the same values
#  4. USR1 -> checkpoint -> requeue -> resume of the 2-node job: same params
#  5. a node crash (every process of gtn2, slurmd included, SIGKILL) while the
#     2-node job trains: the job ends within 30 s, is requeued, waits for the
#     node, resumes from the last committed checkpoint and ends with the same
#     params as the uninterrupted run
#  5b. only gtn2's gridtrain ranks killed: srun exits 137, nilm_full.sh requeues
#     the job itself and the next segment resumes to the same params
#  6. a DOE array with 2 cores per cell, throttled to 2: both nodes run cells,
#     never more than 2 at once
set -euo pipefail
T=$(readlink -f "$1")
SRC=$(readlink -f "$2")
# shellcheck source=tests/slurm/lib.sh
. "$SRC/tests/slurm/lib.sh"
gt_slurm_begin multinode 2
[ "$(sinfo -h -N -o %N | sort | tr '\n' ' ')" = "gtn1 gtn2 " ] || fail "nodes: $(sinfo -h -N -o %N)"
gt_slurm_nilm_data 3000
export GT_BIN="$T" GT_CPU_THREADS=1 GT_SRUN_ARGS=--overcommit
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; } # seconds since T0
manifest_field() { /usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"m": m}))' "$@"; }
train_s() { # RUN_DIR -> "train T s, all-reduce A s" from timing.json
  manifest_field "$1/timing.json" '"train %.1f s, all-reduce %.2f s" % (m["train_time_s"], sum(e["mean_s"] for e in m["events"] if e["name"] == "allreduce"))' 2>/dev/null || echo "?"
}

# JOB_SUBMIT_OUTPUT -> $jid, waits, checks COMPLETED, sets $run $log
run_job() {
  jid=$(job_id_of "$1")
  [ -n "$jid" ] || fail "no job id in: $1"
  wait_job "$jid" "${2:-180}"
  log="$W/slurm-gt-nilm-$jid.out"
  run="$W/runs/nilm-$jid"
  [ "$(job_state "$jid")" = COMPLETED ] || { cat "$log"; fail "job $jid: $(job_state "$jid")"; }
}
data_hash() { manifest_field "$1/manifest.json" 'm["data"]["xxh64"]'; }
# SUBMIT_OUTPUT WHAT -> $jid $run: a 2-node job submitted from the output, past step 700
# (the checkpoint of step 500 committed); fails if it ends first
submitted_past_700() {
  jid=$(job_id_of "$1")
  run="$W/runs/nilm-$jid"
  for _ in $(seq 1 600); do
    reached_step "$run/metrics.jsonl" 700 && return 0
    [ "$(job_state "$jid")" = COMPLETED ] && fail "job $jid finished before $2"
    sleep 0.05
  done
  fail "job $jid never reached step 700"
}

# ---- 1. 2 ranks on one node, then one rank on each of the two nodes
t0=$(date +%s.%N)
out=$(GT_NODES=1 GT_CPU_RANKS=2 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit: $out"
run_job "$out"
wall1=$(since $t0)
ref=$(params_of "$log"); ref_run=$run
[ -n "$ref" ] || fail "no params in $log"
[ "$(manifest_field "$run/manifest.json" 'm["nodes"]')" = 1 ] || fail "1-node job: nodes != 1"
t0=$(date +%s.%N)
out=$(GT_NODES=2 GT_CPU_RANKS=1 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit: $out"
run_job "$out"
wall2=$(since $t0)
got=$(params_of "$log")
[ "$got" = "$ref" ] || fail "2-node params $got != 1-node $ref"
[ "$(data_hash "$run")" = "$(data_hash "$ref_run")" ] || fail "collective read: data checksum differs across nodes"
[ "$(manifest_field "$run/manifest.json" 'm["nodes"]')" = 2 ] || fail "2-node job: manifest nodes != 2"
[ "$(manifest_field "$run/manifest.json" '",".join(p["host"] for p in m["placement"])')" = "gtn1,gtn2" ] ||
  fail "2-node job: placement $(manifest_field "$run/manifest.json" 'm["placement"]')"
grep -q "placement: 2 ranks on 2 nodes: gtn1 ranks 0, gtn2 ranks 1" "$log" || fail "placement line missing in $log"
echo "1. params $ref on 1 node and on 2 nodes; job wall time 1 node $wall1 s ($(train_s "$ref_run")), 2 nodes $wall2 s ($(train_s "$run")) ($(elapsed))"

# ---- 2. 4 ranks over 2 nodes: node-local ranks; mpirun with a host list
sed 's/^max_steps = .*/max_steps = 300/' "$W/nilm.ini" > "$W/nilm4.ini"
mpirun -n 4 --oversubscribe --bind-to none "$T" train "$W/nilm4.ini" run.dir="$W/runs/one4" > "$W/one4.log" 2>&1 || { tail "$W/one4.log"; fail "mpirun -n 4 on one node"; }
ref4=$(params_of "$W/one4.log")
out=$(GT_NODES=2 GT_CPU_RANKS=2 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm4.ini" 2>&1) || fail "submit: $out"
run_job "$out"
[ "$(params_of "$log")" = "$ref4" ] || fail "4 ranks on 2 nodes: params $(params_of "$log") != one node $ref4"
pl=$(manifest_field "$run/manifest.json" '" ".join("%s:%d/%d" % (p["host"], p["local_rank"], p["local_size"]) for p in m["placement"])')
[ "$pl" = "gtn1:0/2 gtn1:1/2 gtn2:0/2 gtn2:1/2" ] || fail "node-local ranks: $pl"
# Open MPI started through the cluster's rsh agent (as over ssh), ranks on both nodes
mpirun --mca plm rsh --mca plm_rsh_agent "$C/rsh" --host gtn1:2,gtn2:2 -n 4 --bind-to none \
  -x OPENBLAS_NUM_THREADS -x GT_LOG_LEVEL "$T" train "$W/nilm4.ini" run.dir="$W/runs/hosts4" > "$W/hosts4.log" 2>&1 ||
  { tail "$W/hosts4.log"; fail "mpirun --host gtn1:2,gtn2:2"; }
[ "$(params_of "$W/hosts4.log")" = "$ref4" ] || fail "mpirun across nodes: params $(params_of "$W/hosts4.log") != $ref4"
grep -q "placement: 4 ranks on 2 nodes: gtn1 ranks 0-1, gtn2 ranks 2-3" "$W/hosts4.log" || fail "mpirun placement line"
echo "2. 4 ranks: one node, srun over 2 nodes and mpirun --host gtn1:2,gtn2:2 all give params $ref4; local ranks $pl ($(elapsed))"

# ---- 3. collective HDF5 write and read across the nodes
srun -N2 -n2 --mpi=pmix "$T" synth nilm -o "$W/nilm2.h5" --households 3 --days 1 --period 6 --lowres-period 0 \
    --spike-rate 0 --gap-rate 0 --stuck-rate 0 --seed 7 > "$W/synth2.log" 2>&1 || { cat "$W/synth2.log"; fail "synth on 2 nodes"; }
cmp -s "$W/nilm.h5" "$W/nilm2.h5" || fail "synth: the 2-node file differs from the 1-rank file"
"$T" predict "$ref_run" "$W/nilm.h5" -o "$W/pred1.h5" > "$W/pred1.log" 2>&1 || { cat "$W/pred1.log"; fail "predict 1 rank"; }
srun -N2 -n2 --mpi=pmix "$T" predict "$ref_run" "$W/nilm2.h5" -o "$W/pred2.h5" > "$W/pred2.log" 2>&1 ||
  { cat "$W/pred2.log"; fail "predict on 2 nodes"; }
/usr/bin/python3 - "$W/pred1.h5" "$W/pred2.h5" <<'PY' || fail "predict: 2-node values differ"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
assert names, "no datasets"
for n in names:
    x, y = a[n][()], b[n][()]
    assert x.shape == y.shape and x.tobytes() == y.tobytes(), n
print("predict: %d datasets equal" % len(names))
PY
echo "3. synth on 2 nodes: same bytes; predict on 2 nodes: same values ($(elapsed))"

# ---- 4. warning signal -> checkpoint -> requeue -> resume, across nodes
out=$(GT_NODES=2 GT_CPU_RANKS=1 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit: $out"
submitted_past_700 "$out" "the signal"
scancel --signal=USR1 --batch "$jid"
run_job "$out"
[ "$(scontrol show job "$jid" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ] || fail "job $jid not requeued once"
grep -q "preempted: checkpoint written; requeueing job $jid" "$run/job-$jid.log" || fail "no requeue in $run/job-$jid.log"
grep -q "placement: 2 ranks on 2 nodes" "$log" || fail "resumed job not on 2 nodes"
[ "$(params_of "$log")" = "$ref" ] || fail "USR1 across nodes: params $(params_of "$log") != $ref"
echo "4. USR1 -> checkpoint -> requeue -> resume on 2 nodes: params $ref ($(elapsed))"

# ---- 5. a node crash while the 2-node job trains
out=$(GT_NODES=2 GT_CPU_RANKS=1 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit: $out"
submitted_past_700 "$out" "the crash"
t_kill=$(date +%s.%N)
"$SRC/slurm/node.sh" "$C" kill gtn2
ended=""
for _ in $(seq 1 300); do # the job's first segment is over when the script logs the lost rank
  if grep -q "a rank was lost" "$run/job-$jid.log" 2>/dev/null || [ "$(job_state "$jid")" != RUNNING ]; then
    ended=$(since $t_kill); break
  fi
  sleep 0.1
done
[ -n "$ended" ] || fail "job $jid still running 30 s after the node crash"
awk -v e="$ended" 'BEGIN { exit !(e <= 30) }' || fail "job $jid took ${ended} s to end after the crash (limit 30 s)"
"$SRC/slurm/node.sh" "$C" start gtn2
run_job "$out" 240
restarts=$(scontrol show job "$jid" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
[ "$restarts" -ge 1 ] || fail "job $jid was not requeued after the crash"
grep -q "resuming runs/nilm-$jid from its newest checkpoint" "$run/job-$jid.log" || fail "no resume after the crash"
resumed=$(manifest_field "$run/manifest.json" 'm["resumed_from_step"]')
[ "$resumed" -ge 500 ] || fail "resumed from step $resumed, expected the last committed checkpoint (>= 500)"
[ "$(params_of "$log")" = "$ref" ] || fail "after the crash: params $(params_of "$log") != $ref"
echo "5. node crash: job ended $ended s after it, requeued ($restarts), resumed from step $resumed, params $ref ($(elapsed))"

# ---- 5b. only the ranks of one node die (the OOM killer, a bus error): the job script requeues
out=$(GT_NODES=2 GT_CPU_RANKS=1 "$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit: $out"
submitted_past_700 "$out" "the kill"
t_kill=$(date +%s.%N)
"$SRC/slurm/node.sh" "$C" kill-ranks gtn2
for _ in $(seq 1 300); do grep -q "a rank was lost" "$run/job-$jid.log" 2>/dev/null && break; sleep 0.1; done
grep -q "a rank was lost (launcher exit code 137: signal 9" "$run/job-$jid.log" || fail "job $jid: no requeue after the lost rank"
lost_s=$(since $t_kill)
run_job "$out" 240
grep -q "restart 1\] resuming runs/nilm-$jid from its newest checkpoint" "$run/job-$jid.log" || fail "no resume after the lost rank"
[ "$(params_of "$log")" = "$ref" ] || fail "after the lost rank: params $(params_of "$log") != $ref"
echo "5b. ranks of gtn2 killed: the job script saw exit 137 after $lost_s s, requeued, resumed, params $ref ($(elapsed))"

# ---- 6. a DOE array over both nodes, 2 cores per cell, at most 2 at once
gt_slurm_pdm_doe
out=$(GT_CPU_THREADS=2 "$SRC/jobs/pdm_doe.sh" "$W/doe.ini" --throttle 2 2>&1) || fail "submit pdm_doe: $out"
ajid=$(job_id_of "$out")
[ -n "$ajid" ] || fail "no array job id in: $out"
wait_array "$ajid" 240
[ "$max_running" -ge 1 ] && [ "$max_running" -le 2 ] || fail "throttle %2: saw $max_running tasks running at once"
hosts=$(cat "$W"/sweep/cells/*/cell.json | grep -o '"host":[[:space:]]*"[^"]*"' | grep -o 'gtn[0-9]' | sort | uniq -c | tr -s ' ' | tr '\n' ',')
n_done=$(grep -l '"status":[[:space:]]*"done"' "$W"/sweep/cells/*/cell.json | wc -l)
[ "$n_done" = 8 ] || fail "8 cells done expected, got $n_done"
echo "$hosts" | grep -q gtn1 && echo "$hosts" | grep -q gtn2 || fail "cells ran on: $hosts (both nodes expected)"
echo "6. DOE array $ajid: 8 cells done on both nodes (${hosts%,}), at most $max_running at once ($(elapsed))"
echo "test_multinode: OK"
