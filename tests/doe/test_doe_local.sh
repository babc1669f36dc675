#!/usr/bin/env bash
# tests/doe/test_doe_local.sh TOOL: a DOE sweep without Slurm, end to end.
# TOOL = gridtrain with 'doe' (tests/doe/doe_tool until the lead registers it).
#  * doe expand: 8 cells with ids, the array size
#  * doe run-all -j 2 on a tiny wind farm: farm 0 has no low_wind segment, so
#    its 2 low_wind cells fail (exit 3, recorded in cell.json); 6 finish with eval.json
#  * idempotent: a finished cell is skipped (attempts unchanged)
#  * a preempted cell (train.stop_after) resumes on the next 'doe run' to the
#    same parameters (params xxh64) as an uninterrupted run of the same cell
#  * doe report: counts, failed cells listed, CSV rows, plots when gnuplot exists
set -euo pipefail
T=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 GT_LOG_LEVEL=info
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/doe-local-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$W" || echo "kept $W for inspection" >&2' EXIT

"$T" synth pdm -o "$W/farm.h5" --farms 2 --turbines 2 --days 0.2 --rate 1 --seed 3 >/dev/null 2>&1 || fail "synth"
matrix() { # NAME DIR EXTRA_FIXED FACTORS...
  cat > "$W/$1.ini" <<INI
[doe]
name = $1
dir = $2
[factors]
$4
[fixed]
data.file = $W/farm.h5
data.window = 48
data.stride = 24
model.kind = lstm
model.hidden = 16
model.layers = 1
optim.lr = 1e-2
optim.warmup = 5
train.batch = 16
train.epochs = 0
train.max_steps = 40
train.log_every = 10
train.eval_every = 20
run.checkpoint_every = 10
run.checkpoint_minutes = 0
$3
INI
}
matrix local "$W/sweep" "" "farm = 0,1
condition = rated+turbulent, low_wind
seed = 1,2"

# ---- expand
out=$("$T" doe expand "$W/local.ini" 2>/dev/null)
echo "$out" | grep -q '^array: --array=0-7 (8 tasks)$' || fail "expand: array line: $out"
[ "$(echo "$out" | grep -cE '^[0-7] +[0-9a-f]{12} ')" = 8 ] || fail "expand: 8 cell lines expected: $out"
id3=$(echo "$out" | awk '$1 == 3 {print $2}')
echo "$out" | grep -qE "^3 +$id3 +0 low_wind 2$" || fail "expand: cell 3 levels"

# ---- run-all: 6 done, 2 failed (farm 0 has no low_wind rows)
t0=$(date +%s.%N)
set +e
"$T" doe run-all "$W/local.ini" -j 2 2> "$W/runall.log"
rc=$?
set -e
echo "run-all: exit $rc in $(echo "$(date +%s.%N) - $t0" | bc) s"
[ $rc = 1 ] || { cat "$W/runall.log"; fail "run-all should report the failed cells (exit 1), got $rc"; }
[ "$(ls "$W"/sweep/cells/*/eval.json | wc -l)" = 6 ] || fail "6 eval.json expected"
for i in 2 3; do
  id=$(echo "$out" | awk -v i=$i '$1 == i {print $2}')
  grep -q '"status":	"failed"' "$W/sweep/cells/$id/cell.json" || fail "cell $i not recorded as failed"
  grep -q '"exit_code":	3' "$W/sweep/cells/$id/cell.json" || fail "cell $i exit code 3 not recorded"
  [ ! -e "$W/sweep/cells/$id/eval.json" ] || fail "failed cell $i has eval.json"
done
id0=$(echo "$out" | awk '$1 == 0 {print $2}')
c0="$W/sweep/cells/$id0"
for f in cell.ini config.ini manifest.json metrics.jsonl train.log; do [ -s "$c0/$f" ] || fail "cell 0: $f missing"; done
grep -q '^farms = 0 ' "$c0/cell.ini" || fail "cell.ini: data.farms"
grep -q '^conditions = 1,2 ' "$c0/cell.ini" || fail "cell.ini: condition names -> codes (rated=1, turbulent=2)"
grep -q '"steps":	40' "$c0/eval.json" || fail "eval.json train.steps"
grep -q '"params_xxh64":	"[0-9a-f]\{16\}"' "$c0/eval.json" || fail "eval.json params checksum"
# the farm filter halves the turbines: windows of 2 of the 4 turbines
grep -q 'condition filter\|over 4 turbines' "$c0/train.log" || fail "train.log data lines"

# ---- idempotent: finished cells are skipped
"$T" doe run "$W/local.ini" --task 0 2> "$W/rerun.log" || fail "re-run of a finished cell failed"
grep -q "already finished" "$W/rerun.log" || fail "finished cell not skipped"
grep -q '"attempts":	1,' "$c0/cell.json" || fail "attempts changed on a skipped cell"

# ---- preempted cell resumes to the uninterrupted result
matrix pre "$W/sweep-pre" "train.stop_after = 15" "seed = 5"
matrix ref "$W/sweep-ref" "" "seed = 5"
set +e
"$T" doe run "$W/pre.ini" --task 0 2>/dev/null
rc=$?
set -e
[ $rc = 75 ] || fail "stop_after cell should exit 75, got $rc"
idp=$(ls "$W/sweep-pre/cells")
grep -q '"status":	"preempted"' "$W/sweep-pre/cells/$idp/cell.json" || fail "preempted not recorded"
"$T" doe run "$W/pre.ini" --task 0 2> "$W/resume.log" || fail "resume run failed"
grep -q "resuming from its checkpoint" "$W/resume.log" || fail "second run did not resume"
"$T" doe run "$W/ref.ini" --task 0 2>/dev/null || fail "reference run failed"
p1=$(grep -o '"params_xxh64":	"[0-9a-f]*"' "$W/sweep-pre/cells/$idp/eval.json")
p2=$(grep -o '"params_xxh64":	"[0-9a-f]*"' "$W/sweep-ref/cells/$idp/eval.json")
[ -n "$p1" ] && [ "$p1" = "$p2" ] || fail "resumed cell params ($p1) != uninterrupted ($p2)"
grep -q '"preemptions":	1' "$W/sweep-pre/cells/$idp/cell.json" || fail "preemption count"

# ---- report
"$T" doe report "$W/sweep" > "$W/report.out" 2>&1 || { cat "$W/report.out"; fail "report"; }
md="$W/sweep/report/report.md"
grep -q "8 cells (6 done, 2 failed, 0 preempted, 0 running, 0 missing)" "$md" || fail "report counts"
grep -q "| $id3 | farm=0 condition=low_wind seed=2 | failed |" "$md" || fail "failed cell not listed"
[ "$(wc -l < "$W/sweep/report/cells.csv")" = 9 ] || fail "cells.csv rows"
grep -q "^farm,0,train.best_val_loss,2," "$W/sweep/report/effects.csv" || fail "effects.csv farm 0 (2 finished cells)"
grep -q "<table>" "$W/sweep/report/report.html" || fail "report.html"
if command -v gnuplot >/dev/null; then
  grep -q "<svg" "$W/sweep/report/heatmap.svg" || fail "heatmap.svg"
  grep -q "<svg" "$W/sweep/report/effects.svg" || fail "effects.svg"
fi

# ---- damaged eval.json: the cell is failed (named), never done; levels checked at expand
cp -r "$W/sweep" "$W/sweep-dmg"
ids=($(cd "$W/sweep-dmg/cells" && ls -d */eval.json | cut -d/ -f1))
printf '{"train": {"best_val_loss": 1e999}}' > "$W/sweep-dmg/cells/${ids[0]}/eval.json"
printf '{"a": 1}\0{"b": 2}' > "$W/sweep-dmg/cells/${ids[1]}/eval.json"
head -c 100000 /dev/zero | tr '\0' '[' > "$W/sweep-dmg/cells/${ids[2]}/eval.json"
truncate -s 1G "$W/sweep-dmg/cells/${ids[3]}/eval.json" # sparse: refused from its size, never read
"$T" doe report "$W/sweep-dmg" > "$W/report-dmg.out" 2>&1 || { cat "$W/report-dmg.out"; fail "report of a damaged sweep"; }
grep -q "8 cells (2 done, 6 failed" "$W/sweep-dmg/report/report.md" || { grep cells "$W/sweep-dmg/report/report.md"; fail "damaged eval.json counted as done"; }
for k in 0 1 2 3; do grep -q "${ids[$k]}/eval.json is damaged" "$W/report-dmg.out" || fail "damaged eval.json ${ids[$k]} not named"; done
grep -q "(a NUL byte)" "$W/report-dmg.out" && grep -q "(not JSON)" "$W/report-dmg.out" && grep -q "(a metric that is not a finite number)" "$W/report-dmg.out" \
  && grep -q "(larger than the 64 MiB an eval.json may have)" "$W/report-dmg.out" || fail "damage reasons"
printf '[doe]\nname = badseed\ndir = %s/bs\n[factors]\nseed = 5-1,2\n[fixed]\ndata.file = %s/farm.h5\n' "$W" "$W" > "$W/badseed.ini"
rc=0; "$T" doe expand "$W/badseed.ini" > "$W/bs.out" 2>&1 || rc=$?; [ $rc = 2 ] && grep -q "badseed.ini:5: factor 'seed' level '5-1': not an integer (train.seed)" "$W/bs.out" || { cat "$W/bs.out"; fail "seed = 5-1 not refused"; }
echo "test_doe_local: OK"
