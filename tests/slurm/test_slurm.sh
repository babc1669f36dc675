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
# shellcheck source=tests/slurm/lib.sh
. "$SRC/tests/slurm/lib.sh"
gt_slurm_begin slurm 1
gt_slurm_nilm_data 6000
gt_slurm_pdm_doe
export GT_BIN="$T" GT_CPU_RANKS=2 GT_CPU_THREADS=1

# ---- 1. the uninterrupted NILM job (cpu tier: 2 ranks x 1 core)
out=$("$SRC/jobs/nilm_full.sh" --tier cpu "$W/nilm.ini" 2>&1) || fail "submit nilm_full: $out"
jid=$(job_id_of "$out")
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
out=$(GT_CPU_THREADS=1 "$SRC/jobs/pdm_doe.sh" "$W/doe.ini" --throttle 2 2>&1) || fail "submit pdm_doe: $out"
ajid=$(job_id_of "$out")
[ -n "$ajid" ] || fail "no array job id in: $out"
echo "$out" | grep -q "8 cells, at most 2 at a time" || fail "submit line: $out"
wait_array "$ajid" 180
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
jid2=$(job_id_of "$out")
run2="$W/runs/nilm-$jid2"
sent=0
for _ in $(seq 1 300); do # wait until it trains (a progress line past step 500)
  if reached_step "$run2/metrics.jsonl" 500; then
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
