#!/usr/bin/env bash
# Writes never follow a planted symbolic link (issue #37, class 2), with the
# real executable. Before each command a link to a victim file or to a victim
# directory (both outside the run / output directory) is planted where an
# output goes; afterwards the victim file keeps its bytes, nothing appears in
# the victim directory, and the command either succeeded with a regular file
# in place of the link, or refused with one line naming the link and a
# non-zero exit. Commands: synth, import, train (fresh, run.overwrite,
# --resume), eval (NILM and PdM), predict, doe run / run-all / report -o.
# usage: test_symlink_writes.sh GRIDTRAIN
set -u
GT="$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/symlinks-XXXXXX")
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh" # ok, bad, expect
# refused NAME LINK -- CMD...: exit 4 and one error line naming LINK as a symbolic link
refused() {
  local name=$1 link=$2; shift 3
  expect "$name: refused" 4 "error: .*'?$link'?.*symbolic link" -- "$@" || return 1
  local n; n=$(grep -c "error:" "$W/out")
  [ "$n" = 1 ] && ok "$name: one error line" || { bad "$name: $n error lines"; cat "$W/out"; }
}

# the victims, outside every directory gridtrain writes
V="$W/victim"; mkdir -p "$V/dir"
printf 'precious bytes\n' > "$V/file"
vsum=$(sha256sum "$V/file" | cut -d' ' -f1)
intact() {
  if [ "$(sha256sum "$V/file" | cut -d' ' -f1)" != "$vsum" ]; then bad "$1: the victim file was written"
  elif [ -n "$(ls -A "$V/dir")" ]; then bad "$1: files appeared in the victim directory: $(ls -A "$V/dir")"
  elif [ "$(ls -A "$V" | tr '\n' ' ')" != "dir file " ]; then bad "$1: files appeared next to the victims: $(ls -A "$V")"
  else ok "$1: victims intact"; fi
}
lf() { for p; do rm -rf "$p"; ln -s "$V/file" "$p"; done; } # links to the victim file
ld() { for p; do rm -rf "$p"; ln -s "$V/dir" "$p"; done; }  # links to the victim directory
regular() { # NAME PATH...: each a regular file, not a link
  local name=$1 p; shift
  for p; do
    if [ -L "$p" ] || [ ! -f "$p" ]; then bad "$name: $p is not a regular file"; return 1; fi
  done
  ok "$name: regular files in place of the links"
}

# ------------------------------------------------------------- synth, import --
lf "$W/n.h5"
expect "synth -o LINK(file)" 0 "" -- "$GT" synth nilm --households 3 --days 0.5 --seed 5 -o "$W/n.h5" --log-level warn
regular "synth -o LINK(file)" "$W/n.h5"
intact "synth -o LINK(file)"
ld "$W/n2.h5"
expect "synth -o LINK(dir): refused" 4 "'$W/n2.h5'" -- "$GT" synth nilm --households 3 --days 0.5 -o "$W/n2.h5" --log-level warn
intact "synth -o LINK(dir)"
U="$W/ukdale"; mkdir -p "$U/house_1"
printf '1 aggregate\n2 kettle\n' > "$U/house_1/labels.dat"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%d %d\n", 1400000004 + 6 * i, 100 + i % 7 }' > "$U/house_1/channel_1.dat"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%d %d\n", 1400000004 + 6 * i, (i % 50 < 5) * 2000 }' > "$U/house_1/channel_2.dat"
lf "$W/uk.h5"
expect "import -o LINK(file)" 0 "" -- "$GT" import ukdale "$U" -o "$W/uk.h5" --log-level warn
regular "import -o LINK(file)" "$W/uk.h5"
intact "import -o LINK(file)"

# --------------------------------------------------------------- train ------
cat > "$W/t.ini" <<INI
[data]
file = $W/n.h5
window = 31
holdout_every = 3
[model]
kind = s2p_cnn
conv_scale = 0.1
hidden = 8
layers = 2
[train]
batch = 8
max_steps = 4
epochs = 0
log_every = 1
eval_every = 2
[run]
checkpoint_every = 2
INI
T=("$GT" train "$W/t.ini" --log-level warn)
R="$W/r1"; mkdir -p "$R"
lf "$R/run.log"; ld "$R/data_used.csv"   # names a fresh run does not refuse
expect "train, fresh, links at run.log and data_used.csv" 0 "" -- "${T[@]}" run.dir="$R"
regular "train, fresh" "$R/run.log" "$R/data_used.csv" "$R/metrics.jsonl" "$R/eval.json" "$R/report.md"
intact "train, fresh"
# run.overwrite removes the links of every name of a run, never follows them
lf "$R/config.ini" "$R/screened.csv" "$R/eval.json" "$R/report.html" "$R/manifest.json" "$R/run.log"
ld "$R/metrics.jsonl" "$R/eval_sample.csv" "$R/report.md" "$R/timing.json" "$R/data_used.csv"
expect "train, run.overwrite=true over links" 0 "" -- "${T[@]}" run.dir="$R" run.overwrite=true
regular "train, run.overwrite" "$R/config.ini" "$R/screened.csv" "$R/eval.json" "$R/report.html" "$R/manifest.json" \
  "$R/run.log" "$R/metrics.jsonl" "$R/eval_sample.csv" "$R/report.md" "$R/timing.json" "$R/data_used.csv"
intact "train, run.overwrite"
mkdir -p "$W/r2"; lf "$W/r2/screened.csv"
expect "train, fresh, a link of a run's name: refused as another run" 2 "already holds a run \(screened.csv\)" -- \
  "${T[@]}" run.dir="$W/r2"
intact "train, fresh, link of a run's name"
ld "$W/rl"
refused "train, run.dir a link" "$W/rl" -- "${T[@]}" run.dir="$W/rl"
intact "train, run.dir a link"
for d in plots checkpoints; do
  mkdir -p "$W/r3"; ld "$W/r3/$d"
  refused "train, $d/ a link" "$W/r3/$d" -- "${T[@]}" run.dir="$W/r3"
  intact "train, $d/ a link"
  rm -rf "$W/r3"
done
mkdir -p "$W/r3"; lf "$W/r3/run.lock"
refused "train, run.lock a link" "$W/r3/run.lock" -- "${T[@]}" run.dir="$W/r3"
intact "train, run.lock a link"
ld "$R/plots"
refused "train --resume, plots/ a link" "$R/plots" -- "$GT" train --resume "$R" train.max_steps=6 --log-level warn
rm "$R/plots"
# --resume appends to run.log and metrics.jsonl: a link there is refused
for f in run.log metrics.jsonl; do
  cp "$R/$f" "$W/saved"; lf "$R/$f"
  refused "train --resume, $f a link" "$R/$f" -- "$GT" train --resume "$R" train.max_steps=6 --log-level warn
  intact "train --resume, $f a link"
  rm "$R/$f"; cp "$W/saved" "$R/$f"
done
n0=$(wc -l < "$R/metrics.jsonl")
expect "train --resume" 0 "" -- "$GT" train --resume "$R" train.max_steps=6 --log-level warn
[ "$(wc -l < "$R/metrics.jsonl")" -gt "$n0" ] && ok "train --resume: metrics.jsonl appended" || bad "resume: metrics.jsonl not appended"

# ----------------------------------------------------------------- eval -----
mkdir -p "$R/plots"
lf "$R/eval.json" "$R/report.html" "$R/plots/loss.dat" "$R/plots/nilm_sample.gp" "$R/plots/gnuplot.log" "$R/eval_sample.csv"
ld "$R/report.md" "$R/plots/loss.gp" "$R/plots/nilm_f1_ea.dat" "$R/plots/nilm_f1_ea.gp"
expect "eval, links at its outputs" 0 "" -- "$GT" eval "$R" --log-level warn
regular "eval" "$R/eval.json" "$R/report.html" "$R/report.md" "$R/eval_sample.csv" "$R/plots/loss.dat" "$R/plots/nilm_f1_ea.dat"
if command -v gnuplot >/dev/null 2>&1; then
  lf "$R/plots/loss.png"; ld "$R/plots/nilm_sample.png"
  expect "eval, links at the plots" 0 "" -- "$GT" eval "$R" --log-level warn
  regular "eval with gnuplot" "$R/plots/loss.gp" "$R/plots/nilm_sample.gp" "$R/plots/nilm_f1_ea.gp" "$R/plots/gnuplot.log" \
    "$R/plots/loss.png" "$R/plots/nilm_sample.png"
fi
intact "eval"
h=$(sha256sum "$R/eval.json" | cut -d' ' -f1)
rm -rf "$R/plots"; ld "$R/plots"
refused "eval, plots/ a link" "$R/plots" -- "$GT" eval "$R" --log-level warn
[ "$(sha256sum "$R/eval.json" | cut -d' ' -f1)" = "$h" ] && ok "eval refused: eval.json untouched" || bad "refused eval wrote eval.json"
rm "$R/plots"
ln -s "$R" "$W/rlink"
refused "eval, the run directory a link" "$W/rlink" -- "$GT" eval "$W/rlink" "$W/n.h5" --log-level warn
intact "eval refusals"
# a metrics.jsonl line past the bound of a JSON-lines reader: one error naming
# the file and the line, exit 3, eval.json left as it was
cp "$R/metrics.jsonl" "$W/saved"
h=$(sha256sum "$R/eval.json" | cut -d' ' -f1)
{ head -1 "$W/saved"; python3 -c 'print("{\"type\":\"train\",\"pad\":\"" + "x" * (2 << 20) + "\"}")'; } > "$R/metrics.jsonl"
expect "eval, a metrics.jsonl line over 1 MiB: refused" 3 "error: .*metrics.jsonl:2: a line longer than 1048576 bytes" -- \
  "$GT" eval "$R" --log-level warn
[ "$(grep -c "error:" "$W/out")" = 1 ] && ok "eval, long line: one error line" || bad "eval, long line: $(grep -c error: "$W/out") error lines"
[ "$(sha256sum "$R/eval.json" | cut -d' ' -f1)" = "$h" ] && ok "eval, long line: eval.json untouched" || bad "eval, long line: eval.json written"
cp "$W/saved" "$R/metrics.jsonl"

# -------------------------------------------------------------- predict -----
lf "$W/p.h5"
expect "predict -o LINK(file)" 0 "" -- "$GT" predict "$R" "$W/n.h5" -o "$W/p.h5" --log-level warn
regular "predict -o LINK(file)" "$W/p.h5"
intact "predict"

# ------------------------------------------------------ PdM: eval_scores.csv --
"$GT" synth pdm -o "$W/farm.h5" --farms 1 --turbines 3 --days 0.2 --rate 1 --seed 3 --log-level warn || bad "synth pdm"
cat > "$W/p.ini" <<INI
[data]
file = $W/farm.h5
window = 48
stride = 24
[model]
kind = lstm
hidden = 8
layers = 1
[train]
batch = 16
epochs = 0
max_steps = 4
eval_every = 2
[run]
dir = $W/rp
checkpoint_every = 2
INI
expect "train pdm" 0 "" -- "$GT" train "$W/p.ini" --log-level warn
if [ -f "$W/rp/eval_scores.csv" ]; then
  lf "$W/rp/eval_scores.csv"
  expect "eval pdm, eval_scores.csv a link" 0 "" -- "$GT" eval "$W/rp" --log-level warn
  regular "eval pdm" "$W/rp/eval_scores.csv"
else bad "train pdm wrote no eval_scores.csv (the test would not test)"; fi
intact "eval pdm"

# ------------------------------------------------------------------ doe -----
cat > "$W/m.ini" <<INI
[doe]
name = links
dir = $W/sweep
[factors]
seed = 1,2
[fixed]
data.file = $W/farm.h5
data.window = 48
model.kind = lstm
model.hidden = 8
train.max_steps = 2
INI
mkdir -p "$W/sweep"; ld "$W/sweep/cells"
refused "doe run, cells/ a link" "$W/sweep/cells" -- "$GT" doe run "$W/m.ini" --task 0 --log-level warn
rm "$W/sweep/cells"; ld "$W/sweep/logs"
refused "doe run-all, logs/ a link" "$W/sweep/logs" -- "$GT" doe run-all "$W/m.ini" --log-level warn
rm "$W/sweep/logs"
id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cells"][0]["id"])' "$W/sweep/sweep.json")
mkdir -p "$W/sweep/cells/$id"; lf "$W/sweep/cells/$id/cell.lock"
refused "doe run, cell.lock a link" "$W/sweep/cells/$id/cell.lock" -- "$GT" doe run "$W/m.ini" --task 0 --log-level warn
rm "$W/sweep/cells/$id/cell.lock"
intact "doe run"
ld "$W/rep"
refused "doe report -o LINK(dir)" "$W/rep" -- "$GT" doe report "$W/sweep" -o "$W/rep" --log-level warn
rm "$W/rep"; mkdir -p "$W/rep"
lf "$W/rep/report.md" "$W/rep/cells.csv" "$W/rep/effects.csv"; ld "$W/rep/report.html" "$W/rep/configs.csv" "$W/rep/two_way.csv"
expect "doe report -o DIR with links" 0 "" -- "$GT" doe report "$W/sweep" -o "$W/rep" --log-level warn
regular "doe report" "$W/rep/report.md" "$W/rep/cells.csv" "$W/rep/effects.csv" "$W/rep/report.html" "$W/rep/configs.csv" \
  "$W/rep/two_way.csv"
intact "doe report"

echo "test_symlink_writes: $n_ok ok, $fails failed"
[ "$fails" = 0 ]
