#!/usr/bin/env bash
# Outputs are never lost (issue #18, classes 2 and 3) with the real executable:
#  * a run directory holding another run is refused (exit 2) unless
#    run.overwrite=true (which deletes the old run first) or --resume; other
#    files in it are left alone; a file of a run's name is never overwritten;
#  * a run directory in use is locked: a second trainer or a resume fails at
#    once (exit 4) naming the holder's pid and host;
#  * a run whose checkpoint cannot be committed exits 4 naming the cause;
#  * predict / import refuse an output that is one of their inputs (exit 2),
#    the input left untouched;
#  * concurrent writers of one output never corrupt it (unique temporaries);
#  * disk full (a file size limit) gives exit 4 and a "disk full" line from
#    synth, predict, import and train, on 1 and 2 ranks, no crash, the existing
#    output untouched and no temporary left behind.
# usage: test_outputs.sh GRIDTRAIN
set -u
GT="$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/outputs-XXXXXX")
bgpid=""
trap '[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null; rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh" # ok, bad, expect
sum() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }
no_tmp() { # no temporary of $1 left
  if ls "$1".tmp* >/dev/null 2>&1; then bad "$2: a temporary of $1 was left behind"; else ok "$2: no temporary left"; fi
}

"$GT" synth nilm --households 3 --days 0.5 --seed 5 -o "$W/n.h5" --log-level warn || { echo "FAIL synth"; exit 1; }
cat > "$W/t.ini" <<INI
[data]
file = $W/n.h5
window = 31
[model]
kind = s2p_cnn
conv_scale = 0.1
hidden = 8
layers = 2
[train]
batch = 8
max_steps = 4
epochs = 1
log_every = 1
[run]
checkpoint_every = 2
INI
T=("$GT" train "$W/t.ini" --log-level warn)

# ---------------------------------------------------------- run directories --
expect "fresh run" 0 "" -- "${T[@]}" run.dir="$W/r1"
h=$(sum "$W/r1/checkpoints/ckpt-000000004.h5")
expect "second run into a run directory: refused" 2 "run.dir '$W/r1' already holds a run .*manifest.json.*--resume" -- \
  "${T[@]}" run.dir="$W/r1" train.max_steps=2
[ "$(sum "$W/r1/checkpoints/ckpt-000000004.h5")" = "$h" ] && ok "refused run: the old checkpoint untouched" \
  || bad "refused run changed the old checkpoint"
# run.overwrite deletes the old run only once the new configuration, data and
# memory plan passed: each failure below leaves every file of r1 as it was
snap() { (cd "$W/r1" && find . -type f ! -name run.lock | sort | xargs sha256sum); }
before=$(snap)
head -c 3000 "$W/n.h5" > "$W/trunc.h5"
expect "overwrite with a bad appliance: refused" 2 "nosuch" -- \
  "${T[@]}" run.dir="$W/r1" run.overwrite=true data.appliances=nosuch
[ "$(snap)" = "$before" ] && ok "overwrite refused (config): old run whole" || bad "overwrite refused (config) damaged the old run"
expect "overwrite with a truncated file: refused" 3 "trunc.h5" -- \
  "${T[@]}" run.dir="$W/r1" run.overwrite=true data.file="$W/trunc.h5"
[ "$(snap)" = "$before" ] && ok "overwrite refused (data): old run whole" || bad "overwrite refused (data) damaged the old run"
expect "overwrite over the memory limit: refused" 4 "" -- \
  "${T[@]}" run.dir="$W/r1" run.overwrite=true train.mem_limit=1
[ "$(snap)" = "$before" ] && ok "overwrite refused (memory): old run whole" || bad "overwrite refused (memory) damaged the old run"
expect "run.overwrite=true replaces it" 0 "" -- "${T[@]}" run.dir="$W/r1" train.max_steps=2 run.overwrite=true
if [ -e "$W/r1/checkpoints/ckpt-000000004.h5" ] || [ ! -e "$W/r1/checkpoints/ckpt-000000002.h5" ]; then
  bad "overwrite: the old run's checkpoints are still there (eval/resume would pick them)"
else ok "overwrite: only the new run's checkpoints"; fi
# settings that change the splits or the data order are refused on resume, like train.seed
hk=$(sum "$W/r1/checkpoints/ckpt-000000002.h5")
expect "--resume data.split_train=0.5: refused" 2 "data.split_train=0.5 differs from the run's unset \\(the default\\)" -- \
  "$GT" train --resume "$W/r1" data.split_train=0.5 --log-level warn
expect "--resume data.stride=3: refused" 2 "data.stride=3 differs" -- "$GT" train --resume "$W/r1" data.stride=3 --log-level warn
expect "--resume train.batch=16: refused" 2 "train.batch=16 differs from the run's 8" -- \
  "$GT" train --resume "$W/r1" train.batch=16 --log-level warn
expect "--resume data.window=31 (unchanged): not refused" 0 "" -- \
  "$GT" train --resume "$W/r1" data.window=31 train.max_steps=2 --log-level warn
[ "$(sum "$W/r1/checkpoints/ckpt-000000002.h5")" = "$hk" ] && ok "refused resumes: the checkpoint untouched" || bad "a refused resume changed the checkpoint"
expect "--resume of a run directory is not refused" 0 "" -- "$GT" train --resume "$W/r1" train.max_steps=4 --log-level warn
mkdir -p "$W/r2" && echo "my notes" > "$W/r2/notes.txt"
expect "a directory with other files: trains" 0 "" -- "${T[@]}" run.dir="$W/r2"
[ "$(cat "$W/r2/notes.txt")" = "my notes" ] && ok "other files left alone" || bad "notes.txt changed"
mkdir -p "$W/r3" && echo "my own config" > "$W/r3/config.ini"
expect "a user file of a run's name: refused, not overwritten" 2 "already holds a run \(config.ini\)" -- \
  "${T[@]}" run.dir="$W/r3"
[ "$(cat "$W/r3/config.ini")" = "my own config" ] && ok "user's config.ini untouched" || bad "config.ini overwritten"

# --------------------------------------------------------------- the lock --
# a long training holds the lock; a second one and a resume fail at once naming it
"${T[@]}" run.dir="$W/r4" train.epochs=0 train.max_steps=1000000 train.patience=0 run.checkpoint_every=0 > "$W/bg.log" 2>&1 &
bgpid=$!
for _ in $(seq 1 300); do grep -q "pid $bgpid" "$W/r4/run.lock" 2>/dev/null && break; sleep 0.1; done
# "fails at once": a trainer that waited for the lock would wait for ever (the holder runs until killed
# below); timeout turns that hang into exit 124 instead of asserting a time (issue #37, class 8)
expect "second trainer on a locked directory: fails at once naming the holder" 4 \
  "run.dir '$W/r4' is in use by another gridtrain \(pid $bgpid on host" -- \
  timeout -s KILL 300 "${T[@]}" run.dir="$W/r4" run.overwrite=true
expect "resume of a locked directory: fails at once" 4 "is in use by another gridtrain \(pid $bgpid" -- \
  timeout -s KILL 300 "$GT" train --resume "$W/r4" --log-level warn
kill -TERM "$bgpid"; wait "$bgpid"; rc=$?; bgpid=""
[ "$rc" = 75 ] && ok "the holder checkpointed on SIGTERM (exit 75)" || bad "holder: exit $rc, want 75"
expect "after the holder ended: resume works" 0 "" -- "$GT" train --resume "$W/r4" train.max_steps=1 --log-level warn

# --------------------------------------------- no committed checkpoint: not 0 --
mkdir -p "$W/r5" && : > "$W/r5/checkpoints"   # a file where the checkpoints directory goes
expect "no checkpoint can be written: exit 4 naming the cause" 4 \
  "checkpoint of step 4 could not be committed \(cannot create directory .*checkpoints.*\).*not saved" -- \
  "${T[@]}" run.dir="$W/r5"
grep -qE '"exit_code":[[:space:]]*4' "$W/r5/manifest.json" && ok "manifest records exit code 4" || bad "manifest exit code"
[ ! -e "$W/r5/eval.json" ] && ok "no evaluation of an unsaved model" || bad "eval.json written for an unsaved model"

# ------------------------------------------------- output is not an input --
cp "$W/n.h5" "$W/d.h5"
hd=$(sum "$W/d.h5")
expect "predict -o DATA: refused" 2 "refusing to write the output: '$W/d.h5' is the input" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/d.h5" --log-level warn
ln "$W/d.h5" "$W/hardlink.h5"; ln -s "$W/d.h5" "$W/symlink.h5"
expect "predict -o a hard link of DATA: refused" 2 "is the input" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/hardlink.h5" --log-level warn
expect "predict -o a symbolic link to DATA: refused" 2 "is the input" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/symlink.h5" --log-level warn
expect "predict -o inside the run's checkpoints/: refused" 2 "inside the input directory" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/r1/checkpoints/new.h5" --log-level warn
[ "$(sum "$W/d.h5")" = "$hd" ] && ok "predict: the input untouched" || bad "predict changed its input"
# any file of the run directory read is refused (its config, manifest, a new
# file), by the run directory or by one of its checkpoints, the files untouched
hc=$(sum "$W/r1/config.ini"); hm=$(sum "$W/r1/manifest.json")
expect "predict -o RUN/config.ini: refused" 2 "refusing to write the output: '$W/r1/config.ini'" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/r1/config.ini" --log-level warn
expect "predict -o RUN/manifest.json: refused" 2 "refusing to write the output: '$W/r1/manifest.json'" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/r1/manifest.json" --log-level warn
expect "predict -o a new file in the run directory: refused" 2 "inside the input directory '$W/r1'" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/r1/pred.h5" --log-level warn
ck=$(ls "$W/r1/checkpoints/"ckpt-*.h5 | head -1)
expect "predict CHECKPOINT -o RUN/config.ini: refused" 2 "inside the input directory '$W/r1'" -- \
  "$GT" predict "$ck" "$W/d.h5" -o "$W/r1/config.ini" --log-level warn
[ "$(sum "$W/r1/config.ini")$(sum "$W/r1/manifest.json")" = "$hc$hm" ] && [ ! -e "$W/r1/pred.h5" ] \
  && ok "predict: the run's files untouched" || bad "predict wrote into the run directory"
expect "predict -o next to the run directory: fine" 0 "" -- \
  "$GT" predict "$W/r1" "$W/d.h5" -o "$W/pred.h5" --log-level warn
# columns are matched by name: a file with the run's appliances in another order
# is refused by predict and eval naming the file and the first mismatching column;
# a run stored without names (before they were stored) only warns
PY=${GT_PYTHON:-python3}
cp "$W/n.h5" "$W/swapped.h5"
"$PY" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    n = f["appliance_meta/name"][...]; n[[0, 1]] = n[[1, 0]]; f["appliance_meta/name"][...] = n' "$W/swapped.h5"
first=$("$PY" -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r")["appliance_meta/name"][0].decode())' "$W/n.h5")
second=$("$PY" -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r")["appliance_meta/name"][1].decode())' "$W/n.h5")
expect "predict, appliances swapped: refused" 2 "swapped.h5: appliance column 1 is '$second' but the run $W/r1 was trained with '$first' there" -- \
  "$GT" predict "$W/r1" "$W/swapped.h5" -o "$W/swapped_pred.h5" --log-level warn
[ ! -e "$W/swapped_pred.h5" ] && ok "predict, swapped: no output" || bad "predict, swapped: an output was written"
cp "$W/r1/eval.json" "$W/eval_before.json" 2>/dev/null
expect "eval, appliances swapped: refused" 2 "swapped.h5: appliance column 1 is '$second'" -- \
  "$GT" eval "$W/r1" "$W/swapped.h5" --log-level warn
cp -r "$W/r1" "$W/r1_old" && rm -f "$W/r1_old/run.lock"
"$PY" -c 'import json, sys
m = json.load(open(sys.argv[1])); del m["data"]["columns"]; json.dump(m, open(sys.argv[1], "w"))' "$W/r1_old/manifest.json"
expect "predict, a run without stored names: warns" 0 "the run stores no column names .* matched by position" -- \
  "$GT" predict "$W/r1_old" "$W/swapped.h5" -o "$W/old_pred.h5" --log-level warn
"$GT" synth nilm --households 3 --days 0.5 --seed 5 --period 30 -o "$W/n30.h5" --log-level warn >/dev/null 2>&1
expect "predict, another sampling period: warns" 0 "n30.h5: sampling period 30 s, but the run .* was trained at 6 s" -- \
  "$GT" predict "$W/r1" "$W/n30.h5" -o "$W/p30.h5" --log-level warn
# messages name the data file, not the run; a run's checkpoints/ names the run once;
# an ensemble member given twice is refused
"$GT" synth pdm --farms 1 --turbines 2 --days 0.05 --rate 1 -o "$W/p.h5" --log-level warn >/dev/null 2>&1
expect "predict, a NILM run on a PdM file: names the file" 2 "^gridtrain: error: $W/p.h5 is a wind-farm \(pdm\) file" -- \
  "$GT" predict "$W/r1" "$W/p.h5" -o "$W/x.h5" --log-level warn
expect "eval RUN/checkpoints: the run, its path once" 0 "" -- "$GT" eval "$W/r1/checkpoints" "$W/n.h5" --log-level warn
mkdir -p "$W/emptyrun/checkpoints"
expect "eval EMPTY/checkpoints: no doubled path" 2 "no valid checkpoint .* in $W/emptyrun/checkpoints\$" -- \
  "$GT" eval "$W/emptyrun/checkpoints" "$W/n.h5" --log-level warn
expect "eval --models RUN,RUN: refused" 2 "eval.models: $W/r1/ is the same model \(run .*\) as $W/r1" -- \
  "$GT" eval "$W/r1" "$W/n.h5" --models "$W/r1/" --log-level warn
# a small UK-DALE folder
U="$W/ukdale"; mkdir -p "$U/house_1"
printf '1 aggregate\n2 kettle\n' > "$U/house_1/labels.dat"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%d %d\n", 1400000004 + 6 * i, 100 + i % 7 }' > "$U/house_1/channel_1.dat"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%d %d\n", 1400000004 + 6 * i, (i % 50 < 5) * 2000 }' > "$U/house_1/channel_2.dat"
hc=$(sum "$U/house_1/channel_1.dat")
expect "import -o one of the dataset's files: refused" 2 "refusing to write the output: '$U/house_1/channel_1.dat' is the input|inside the input directory" -- \
  "$GT" import ukdale "$U" -o "$U/house_1/channel_1.dat" --log-level warn
expect "import -o a new file inside the dataset's folder: refused" 2 "inside the input directory '$U'" -- \
  "$GT" import ukdale "$U" -o "$U/out.h5" --log-level warn
[ "$(sum "$U/house_1/channel_1.dat")" = "$hc" ] && ok "import: the input untouched" || bad "import changed its input"
expect "import -o outside: fine" 0 "" -- "$GT" import ukdale "$U" -o "$W/uk.h5" --log-level warn

# ------------------------------------------------ concurrent writers --
for rep in 1 2 3; do
  "$GT" synth nilm --households 4 --days 1 --seed 1 -o "$W/same.h5" --log-level warn > "$W/s1.log" 2>&1 & p1=$!
  "$GT" synth nilm --households 4 --days 1 --seed 2 -o "$W/same.h5" --log-level warn > "$W/s2.log" 2>&1 & p2=$!
  wait $p1; r1=$?; wait $p2; r2=$?
  if [ "$r1" = 0 ] && [ "$r2" = 0 ] && "$GT" inspect "$W/same.h5" --log-level warn > "$W/i.log" 2>&1; then
    ok "two concurrent synth -o one file ($rep): both succeed, the file is whole"
  else bad "concurrent synth ($rep): exits $r1 $r2, inspect: $(tail -1 "$W/i.log")"; fi
done
no_tmp "$W/same.h5" "concurrent synth"

# ------------------------------------------------------------ disk full --
# RLIMIT_FSIZE on the gridtrain processes only (mpirun's own files stay
# unlimited): a write beyond 1000 KiB fails with EFBIG (SIGXFSZ is ignored).
lim() { local np=$1; shift; timeout -s KILL 300 mpirun -n "$np" sh -c 'ulimit -f 1000; exec "$@"' sh "$@"; }
"$GT" synth nilm --households 3 --days 2 --seed 9 -o "$W/big.h5" --log-level warn
U2="$W/ukdale_big"; mkdir -p "$U2/house_1"   # an import output of about 2 MB
printf '1 aggregate\n2 kettle\n' > "$U2/house_1/labels.dat"
awk 'BEGIN { for (i = 0; i < 120000; i++) printf "%d %d\n", 1400000004 + 6 * i, 100 + i % 7 }' > "$U2/house_1/channel_1.dat"
awk 'BEGIN { for (i = 0; i < 120000; i++) printf "%d %d\n", 1400000004 + 6 * i, (i % 50 < 5) * 2000 }' > "$U2/house_1/channel_2.dat"
for np in 1 2; do
  echo precious > "$W/full_$np.h5"
  expect "synth, disk full, $np rank(s): exit 4" 4 "disk full writing" -- \
    lim $np "$GT" synth nilm --households 8 --days 2 -o "$W/full_$np.h5" --log-level warn
  [ "$(cat "$W/full_$np.h5")" = precious ] && ok "synth, disk full: the existing output untouched" || bad "synth damaged the output"
  no_tmp "$W/full_$np.h5" "synth, disk full, $np rank(s)"
  echo precious > "$W/pfull_$np.h5"
  expect "predict, disk full, $np rank(s): exit 4" 4 "disk full writing" -- \
    lim $np "$GT" predict "$W/r1" "$W/big.h5" -o "$W/pfull_$np.h5" --log-level warn
  [ "$(cat "$W/pfull_$np.h5")" = precious ] && ok "predict, disk full: the existing output untouched" || bad "predict damaged the output"
  no_tmp "$W/pfull_$np.h5" "predict, disk full, $np rank(s)"
  expect "import, disk full, $np rank(s): exit 4" 4 "disk full writing" -- \
    lim $np "$GT" import ukdale "$U2" -o "$W/ifull_$np.h5" --log-level warn
  no_tmp "$W/ifull_$np.h5" "import, disk full, $np rank(s)"
  expect "train, disk full, $np rank(s): exit 4, the checkpoint could not be committed" 4 \
    "could not be committed \(cannot reserve .*(File too large|No space)" -- \
    lim $np "$GT" train "$W/t.ini" run.dir="$W/tfull_$np" --log-level warn
done

# ------------------------------------------------ a writer killed by a signal --
# SIGTERM / SIGINT while a writer (here synth: the one slow enough to catch;
# predict and import share io/write.c) writes: the temporary is
# removed (the handler unlinks it), the process dies of the signal, no output.
killed() { # NAME SIG OUT -- CMD...: start CMD, signal it once its temporary exists
  local name=$1 sig=$2 out=$3; shift 4
  rm -f "$out" "$out".tmp*
  python3 -c 'import signal, subprocess, sys, time, glob
signal.signal(signal.SIGINT, signal.SIG_DFL)
p = subprocess.Popen(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for _ in range(600):
    if glob.glob(sys.argv[2] + ".tmp.*") or p.poll() is not None: break
    time.sleep(0.02)
p.send_signal(getattr(signal, sys.argv[1]))
sys.exit(-p.wait() if p.wait() < 0 else 100 + p.wait())' "$sig" "$out" "$@"
  local rc=$?
  local want; want=$(python3 -c "import signal; print(int(signal.$sig))")
  [ "$rc" = "$want" ] && ok "$name: died of $sig" || bad "$name: exit $rc (want death by $sig: $want; 100+ = it exited)"
  [ ! -e "$out" ] && ok "$name: no output" || bad "$name: an output was left"
  no_tmp "$out" "$name"
}
killed "synth, SIGTERM" SIGTERM "$W/k.h5" -- "$GT" synth pdm --farms 1 --turbines 2 --rate 1000 --days 0.02 -o "$W/k.h5" --log-level warn
killed "synth, SIGINT" SIGINT "$W/k.h5" -- "$GT" synth pdm --farms 1 --turbines 2 --rate 1000 --days 0.02 -o "$W/k.h5" --log-level warn

echo "$n_ok checks passed, $fails failed"
[ "$fails" = 0 ]
