#!/usr/bin/env bash
# tests/slurm/test_doe_ladder.sh TOOL SOURCE_DIR: a 9-cell halving matrix
# (optim.lr x model.hidden, eta 3: rungs of 10, 30 and 90 steps) through
# jobs/doe_ladder.sh on a private Slurm cluster (slurm/start.sh):
#  1. rung 0 as a job array throttled to %2 and its step job held by
#     --dependency=afterok on it; each step submits the next rung the same way
#  2. a cell that fails (a launcher that fails for that cell only): its array
#     task exits 0, the failure is in its rung record and ladder.json, and the
#     rung proceeds with the other 8 configurations
#  3. the ladder ends with one chosen configuration trained to 90 steps whose
#     parameters equal the same cell trained straight through (doe run of the
#     grid strategy)
#  4. rung 1 resubmitted: nothing is retrained (cells at the budget are
#     skipped), the steps rank the same and the choice is unchanged
set -euo pipefail
T=$(readlink -f "$1")
SRC=$(readlink -f "$2")
# shellcheck source=tests/slurm/lib.sh
. "$SRC/tests/slurm/lib.sh"
gt_slurm_begin slurm-ladder 1
gt_slurm_nilm_data 90
export GT_BIN="$T" GT_CPU_THREADS=1
fail_id=""
matrix() { # NAME STRATEGY
  cat > "$W/$1.ini" <<INI
[doe]
name = $1
dir = $W/$1
[factors]
optim.lr = 1e-3,3e-3,1e-2
model.hidden = 16,32,64
[search]
strategy = $2
eta = 3
min_budget = 10
INI
  sed -n '/^\[data\]/,$p' "$W/nilm.ini" | sed 's/^log_every = .*/log_every = 10/; s/^eval_every = .*/eval_every = 10/; s/^checkpoint_every = .*/checkpoint_every = 0/; /^hidden = /d; /^lr = /d' >> "$W/$1.ini"
}
matrix lad halving
matrix grid grid
"$T" doe expand "$W/lad.ini" > "$W/expand.txt" 2>&1 || { cat "$W/expand.txt"; fail "doe expand"; }
grep -q "halving: eta 3, 3 rungs: 10 30 90 steps" "$W/expand.txt" || fail "rungs: $(tail -1 "$W/expand.txt")"
fail_id=$(awk '$1 == "4" {print $2}' "$W/expand.txt") # optim.lr=3e-3 model.hidden=32
[ -n "$fail_id" ] || fail "no cell 4 in the expansion"
# a launcher that fails the training of cell 4 (exit 3) and runs every other one
cat > "$W/launch.sh" <<SH
#!/bin/sh
case "\$*" in *$fail_id*) echo "injected failure of cell $fail_id" >&2; exit 3 ;; esac
exec "\$@"
SH
chmod +x "$W/launch.sh"
export GT_DOE_LAUNCH="$W/launch.sh"

# ---- 1. rung 0 and its dependent step
out=$(GT_DOE_THROTTLE=2 "$SRC/jobs/doe_ladder.sh" "$W/lad.ini" 2>&1) || fail "submit: $out"
echo "$out" | grep -q "rung 0: array job [0-9]* (9 cells, at most 2 at a time, tier cpu), next step job [0-9]*" || fail "submit line: $out"
ajid=$(echo "$out" | sed -n 's/.*array job \([0-9]*\) .*/\1/p')
njid=$(echo "$out" | sed -n 's/.*next step job \([0-9]*\).*/\1/p')
scontrol show job "$njid" | grep -q "Dependency=afterok:${ajid}" || scontrol show job "$njid" | grep -q "JobState=\(RUNNING\|COMPLETED\)" ||
  fail "step job $njid not held by afterok:$ajid: $(scontrol show job "$njid" | grep -o 'Dependency=[^ ]*')"
echo "1. rung 0: array $ajid, step $njid (afterok) ($(elapsed))"
wait_array "$ajid" 240
[ "$max_running" -le 2 ] || fail "throttle %2: saw $max_running tasks running at once"
for _ in $(seq 1 1500); do
  grep -q '"chosen"' "$W/lad/ladder.json" 2>/dev/null && break
  sleep 0.2
done
grep -q '"chosen"' "$W/lad/ladder.json" 2>/dev/null || { tail -n 30 "$W"/slurm-gt-ladder-next-*.out; fail "the ladder did not finish"; }
n_steps=$(ls "$W"/slurm-gt-ladder-next-*.out | wc -l)
[ "$n_steps" = 3 ] || fail "3 step jobs expected (one per rung), got $n_steps"
grep -q "rung 1: array job [0-9]* (3 cells" "$W"/slurm-gt-ladder-next-*.out || fail "rung 1 was not submitted as a 3-cell array"
grep -q "rung 2: array job [0-9]* (1 cells" "$W"/slurm-gt-ladder-next-*.out || fail "rung 2 was not submitted as a 1-cell array"

# ---- 2. the failed cell
grep -q '"status":	"failed"' "$W/lad/rungs/0/$fail_id.json" || fail "cell 4's rung record is not failed"
grep -q "injected failure of cell $fail_id" "$W/lad/cells/$fail_id/train.log" || fail "the injected failure is not in cell 4's train.log"
python3 - "$W/lad/ladder.json" <<'PY' || fail "ladder.json: rung 0 must list cell 4 as failed and rank 8 configurations"
import json, sys
l = json.load(open(sys.argv[1]))
r0 = l["rungs"][0]
assert r0["failed_cells"] == [4], r0["failed_cells"]
assert sum(1 for c in r0["configs"] if c["mean"] is not None) == 8
assert sum(1 for c in r0["configs"] if c["advanced"]) == 3
assert len(l["rungs"][1]["cells"]) == 3 and len(l["rungs"][2]["cells"]) == 1
PY
grep -q "cell 4 (.*) failed" "$W"/slurm-gt-ladder-next-*.out || fail "the step did not report the failed cell"
echo "2. cell 4 failed, recorded; rung 0 ranked 8 configurations ($(elapsed))"

# ---- 3. the choice, trained to the full budget like a grid cell
chosen=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rungs'][2]['cells'][0])" "$W/lad/ladder.json")
cid=$(awk -v i="$chosen" '$1 == i {print $2}' "$W/expand.txt")
grep -q '"steps":	90' "$W/lad/cells/$cid/eval.json" || fail "chosen cell $cid: not trained to 90 steps"
unset GT_DOE_LAUNCH
"$T" doe run "$W/grid.ini" --task "$chosen" > "$W/grid.out" 2>&1 || { cat "$W/grid.out"; fail "grid cell $chosen"; }
a=$(params_of "$W/lad/cells/$cid/train.log"); b=$(params_of "$W/grid/cells/$cid/train.log")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "chosen cell params $a (rungs) != $b (straight through)"
"$T" doe report "$W/lad" --no-plots > /dev/null 2>&1 || fail "doe report"
grep -q "Successive halving" "$W/lad/report/report.md" || fail "report: no ladder"
grep -q "(chosen)" "$W/lad/report/report.md" || fail "report: no choice"
echo "3. chosen cell $chosen ($cid): params $a == straight through ($(elapsed))"

# ---- 4. rung 1 resubmitted: idempotent
export GT_DOE_LAUNCH="$W/launch.sh"
att() { cat "$W"/lad/cells/*/cell.json | grep -o '"attempts":	[0-9]*' | awk '{s += $2} END {print s}'; }
before=$(att)
cp "$W/lad/ladder.json" "$W/ladder.before"
rm -f "$W"/slurm-gt-ladder-next-*.out
out=$("$SRC/jobs/doe_ladder.sh" "$W/lad.ini" --rung 1 --throttle 2 2>&1) || fail "resubmit: $out"
ajid=$(echo "$out" | sed -n 's/.*array job \([0-9]*\) .*/\1/p')
wait_array "$ajid" 120
for _ in $(seq 1 600); do
  [ "$(ls "$W"/slurm-gt-ladder-next-*.out 2>/dev/null | wc -l)" = 2 ] && grep -q '^chosen: ' "$W"/slurm-gt-ladder-next-*.out && break
  sleep 0.2
done
grep -q '^chosen: ' "$W"/slurm-gt-ladder-next-*.out || fail "the resubmitted ladder did not choose again"
n_skip=$(cat "$W"/lad/logs/*.log "$W"/slurm-gt-ladder-"$ajid"_*.out 2>/dev/null | grep -c "already at rung 1's budget: skipped" || true)
[ "$n_skip" -ge 3 ] || fail "resubmitted rung 1: $n_skip of 3 cells said they were skipped"
[ "$(att)" = "$before" ] || fail "resubmitted rung retrained cells: attempts $before -> $(att)"
cmp -s <(python3 -c "import json,sys; l=json.load(open(sys.argv[1])); print(l['chosen'], [r['cells'] for r in l['rungs']])" "$W/ladder.before") \
       <(python3 -c "import json,sys; l=json.load(open(sys.argv[1])); print(l['chosen'], [r['cells'] for r in l['rungs']])" "$W/lad/ladder.json") ||
  fail "the resubmitted rung changed the ladder"
echo "4. rung 1 resubmitted: no cell retrained, the same choice ($(elapsed))"
echo "test_doe_ladder: OK"
