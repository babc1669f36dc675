#!/usr/bin/env bash
# Command-line behaviour of the real executable: clear one-line errors with
# the documented exit codes, help generated from the option tables, the
# configuration reference in docs/ in sync with the tables, and a user error
# under mpirun ending the whole job (no hang).
set -u
GT="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check NAME WANT_RC PATTERN -- CMD...
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; cat "$tmp/err"; fail=1; return; fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: output lacks /$pat/"; cat "$tmp/out" "$tmp/err"; fail=1; return; fi
  echo "ok   $name"
}
check no-command 2 "usage: gridtrain COMMAND" -- "$GT"
check help 0 "synth" -- "$GT" help
check version 0 "^gridtrain [0-9]" -- "$GT" version
check unknown-command 2 "error: unknown command 'nosuch'" -- "$GT" nosuch
check synth-help 0 "--households V" -- "$GT" synth --help
check unknown-option 2 "error: unknown option '--nosuch'" -- "$GT" synth nilm --nosuch 1 -o "$tmp/x.h5"
check bad-int 2 "synth.households = 'abc' is not an integer" -- "$GT" synth nilm synth.households=abc -o "$tmp/x.h5"
check unknown-key 2 "unknown key 'synth.nosuch'" -- "$GT" synth nilm synth.nosuch=1 -o "$tmp/x.h5"
printf '[synth]\nhouseholds = 2\n\nhouse_holds = 3\n' > "$tmp/bad.ini"
check config-key-line 2 "bad.ini:4: unknown key 'synth.house_holds': did you mean synth.households[?]" -- "$GT" synth nilm --config "$tmp/bad.ini" -o "$tmp/x.h5"
# a mistyped name gets the nearest valid one (core/suggest.h), a far one none
check suggest-command 2 "unknown command 'tarin': did you mean train[?]" -- "$GT" tarin
check suggest-help 2 "unknown command 'evl': did you mean eval[?]" -- "$GT" help evl
check suggest-key 2 "unknown key 'synth.househlods': did you mean synth.households[?]" -- "$GT" synth nilm synth.househlods=2 -o "$tmp/x.h5"
check suggest-section 2 "unknown key 'model.max_steps': did you mean train.max_steps[?]" -- "$GT" train model.max_steps=2
check suggest-flag 2 "unknown option '--stesp': did you mean --steps[?]" -- "$GT" train --stesp 2
check suggest-flag-key 2 "unknown option '--max-stepz': did you mean --steps [(]train.max_steps[)][?]" -- "$GT" train --max-stepz 2
check suggest-none 2 "unknown key 'synth.nosuch' [(]see" -- "$GT" synth nilm synth.nosuch=1 -o "$tmp/x.h5"
printf '[synth\nhouseholds = 2\n' > "$tmp/syntax.ini"
check config-syntax 2 "syntax.ini:1: syntax error" -- "$GT" synth nilm --config "$tmp/syntax.ini" -o "$tmp/x.h5"
check missing-config 2 "cannot open config file" -- "$GT" synth nilm --config "$tmp/none.ini" -o "$tmp/x.h5"
# a key set twice in one file names both lines; an indented line is not silently a continuation
printf '[synth]\nhouseholds = 2\ndays = 1\nhouseholds = 3\n' > "$tmp/dup.ini"
check config-duplicate-key 2 "dup.ini:4: duplicate key 'synth.households' \\(already set at line 2\\)" -- \
  "$GT" synth nilm --config "$tmp/dup.ini" -o "$tmp/x.h5"
printf '[synth]\nhouseholds = 2\n  days = 1\n' > "$tmp/indent.ini"
check config-continuation 2 "indent.ini:3: indented line continues 'synth.households'" -- \
  "$GT" synth nilm --config "$tmp/indent.ini" -o "$tmp/x.h5"
# not regular files: a directory is refused (it read as an empty file: the defaults), a FIFO too (it blocked)
mkdir "$tmp/confdir"
check config-directory 2 "cannot open config file '$tmp/confdir': not a regular file \\(a directory\\)" -- \
  "$GT" train "$tmp/confdir"
mkfifo "$tmp/conf.fifo"
check config-fifo 2 "not a regular file \\(a FIFO\\)" -- timeout 60 "$GT" synth nilm --config "$tmp/conf.fifo" -o "$tmp/x.h5"
check single-line 2 "" -- "$GT" synth nilm synth.households=abc -o "$tmp/x.h5"
[ "$(wc -l < "$tmp/err")" = 1 ] || { echo "FAIL single-line: error is not one line"; cat "$tmp/err"; fail=1; }
[ ! -e "$tmp/x.h5" ] || { echo "FAIL: a failed command left an output file"; fail=1; }
# NILM time features: an unknown time zone (glibc would silently use UTC) or feature set is refused up front
printf '[data]\nfile = %s/none.h5\n' "$tmp" > "$tmp/t.ini"
check bad-timezone 2 "data.timezone: unknown time zone 'Mars/Olympus_Mons'" -- \
  "$GT" train "$tmp/t.ini" data.time_features=day data.timezone=Mars/Olympus_Mons
check bad-time-features 2 "data.time_features = 'hour' is not one of" -- "$GT" train "$tmp/t.ini" data.time_features=hour
# the data file's kind chooses the task: NILM-only settings and models are refused on a wind-farm file,
# and a sequence model on a NILM file, each with one line naming the file
"$GT" synth pdm --farms 1 --turbines 1 --days 0.02 --rate 1 -o "$tmp/p.h5" >/dev/null 2>&1 \
  || { echo "FAIL synth pdm for the task checks"; fail=1; }
"$GT" synth nilm --households 2 --days 0.2 -o "$tmp/n.h5" >/dev/null 2>&1 || { echo "FAIL synth nilm"; fail=1; }
check pdm-time-features 2 "data.time_features is for nilm data" -- \
  "$GT" train "$tmp/t.ini" data.file="$tmp/p.h5" model.kind=lstm data.time_features=day
check pdm-s2p 2 "p.h5 is a wind-farm \(pdm\) file: model.kind s2p_cnn" -- "$GT" train "$tmp/t.ini" data.file="$tmp/p.h5"
# bench train CONFIG key=value takes every key of train (the help says so): data.file from the command line
printf '[data]\nfile = %s/none.h5\nwindow = 63\n[model]\nconv_scale = 0.25\nhidden = 32\nlayers = 3\n[train]\nbatch = 16\n' "$tmp" > "$tmp/b.ini"
check bench-train-keys 0 "samples/s +data stall" -- "$GT" bench train "$tmp/b.ini" data.file="$tmp/n.h5" train.max_steps=6 bench.reps=1
check bench-train-unknown-key 2 "unknown key 'train.nosuch'" -- "$GT" bench train "$tmp/b.ini" train.nosuch=1
check pdm-gated 2 "model.head = gated is for NILM files" -- \
  "$GT" train "$tmp/t.ini" data.file="$tmp/p.h5" model.kind=lstm model.head=gated
check nilm-lstm 2 "n.h5 is a NILM file: model.kind lstm" -- "$GT" train "$tmp/t.ini" data.file="$tmp/n.h5" model.kind=lstm
# small-data options: dropout is s2p_cnn's, a probability; the plateau factor is in [0, 1)
check dropout-lstm 2 "model.dropout = 0.3: only s2p_cnn has dropout" -- \
  "$GT" train "$tmp/t.ini" data.file="$tmp/p.h5" model.kind=lstm model.dropout=0.3
check dropout-range 2 "model.dropout = '1': give auto or a probability in \[0, 1\)" -- \
  "$GT" train "$tmp/t.ini" data.file="$tmp/n.h5" model.dropout=1
check lr-plateau-range 2 "train.lr_plateau must be in \[0, 1\)" -- \
  "$GT" train "$tmp/t.ini" data.file="$tmp/n.h5" train.lr_plateau=1.5
# a new run stores the small-data keys (a stored configuration without them, from before they existed,
# resumes, evaluates and predicts without dropout and without the plateau rule: cli/cmd_train.c)
printf '[data]\nfile = %s/n.h5\nwindow = 63\n[model]\nconv_scale = 0.25\nhidden = 16\nlayers = 2\n[train]\nbatch = 16\nepochs = 0\nmax_steps = 4\neval_every = 2\n[run]\ncheckpoint_every = 2\n' "$tmp" > "$tmp/s.ini"
check small-defaults 0 "" -- "$GT" train "$tmp/s.ini" run.dir="$tmp/run_s"
grep -q "^dropout = 0$" "$tmp/run_s/config.ini" && grep -q "^lr_plateau = 0.5" "$tmp/run_s/config.ini" \
  && grep -q "^patience = 5" "$tmp/run_s/config.ini" && echo "ok   small-defaults-stored" \
  || { echo "FAIL small-defaults-stored: config.ini lacks the new keys"; cat "$tmp/run_s/config.ini"; fail=1; }

# docs/configuration.md is generated from the tables: keep it in sync
if [ -n "${GT_SOURCE_DIR:-}" ]; then
  "$GT" help --markdown > "$tmp/conf.md"
  if ! diff -u "$GT_SOURCE_DIR/docs/configuration.md" "$tmp/conf.md" > "$tmp/diff"; then
    echo "FAIL docs/configuration.md is out of date: run 'build/gridtrain help --markdown > docs/configuration.md'"
    head -30 "$tmp/diff"; fail=1
  else echo "ok   docs-in-sync"; fi
fi

# bench model: the limits of train, and no size arithmetic that wraps
check bench-batch-range 2 "bench.batch = 2147483647: give 0 \(the default\) to 16777216" -- \
  "$GT" bench model --model lstm --batch 2147483647 --window 2147483647 --steps 1
check bench-window-range 2 "bench.window = 99999999999" -- "$GT" bench model --window 99999999999 --steps 1
check bench-size-overflow 2 "batch 16777216 x window 16777216 of lstm needs about 9.2.e\+18 bytes" -- \
  "$GT" bench model --model lstm --batch 16777216 --window 16777216 --steps 1
# (under AddressSanitizer a failed allocation must return NULL, as malloc does)
check bench-too-large 4 "out of host memory allocating 4634005[0-9]{8} bytes" -- \
  env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" "$GT" bench model --model s2p_tf --batch 100000 --window 100000 --steps 1

# model.conv_scale: the channel counts it gives stay in range (1e8 wrapped to 1 channel)
printf '[model]\nkind = s2p_cnn\n' > "$tmp/cnn.ini"
check conv-scale-range 2 "model.conv_scale = 1e\+08 gives 3e\+09 channels in conv layer 1 \(at most 1048576\)" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/cs" model.conv_scale=1e8
check conv-scale-finite 2 "model.conv_scale" -- "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/cs" model.conv_scale=-1

# a NUL byte inside a line is refused with FILE:LINE (it silently truncated the value: window 3)
printf '[data]\nwindow = 3\0001\n' > "$tmp/nul.ini"
check config-nul 2 "nul.ini:2: a NUL byte at column 11" -- "$GT" train "$tmp/nul.ini" data.file="$tmp/none.h5" run.dir="$tmp/nul"
printf '[data]\nwindow = 31\n\000\n' > "$tmp/nul2.ini"
check config-nul-line 2 "nul2.ini:3: a NUL byte at column 1" -- "$GT" train "$tmp/nul2.ini" data.file="$tmp/none.h5" run.dir="$tmp/nul"

# NILM targets: no finite value in the train split for any appliance is refused
# naming the file and the appliances (it trained nothing and exited 0); some: a warning
PY=${GT_PYTHON:-python3}
if "$GT" synth nilm --households 3 --days 0.1 --seed 3 -o "$tmp/n.h5" --log-level warn >/dev/null 2>&1 &&
   "$PY" -c 'import h5py, numpy as np, shutil, sys
d = sys.argv[1]
for name, cols in (("nan_all", None), ("nan_some", [0, 3])):
    shutil.copy(d + "/n.h5", d + "/" + name + ".h5")
    with h5py.File(d + "/" + name + ".h5", "r+") as f:
        a = f["appliances"][...]
        if cols is None: a[...] = np.nan
        else: a[:, cols] = np.nan
        f["appliances"][...] = a' "$tmp" 2>/dev/null; then
  printf '[data]\nwindow = 31\n[model]\nkind = s2p_cnn\nconv_scale = 0.1\nhidden = 8\nlayers = 2\n[train]\nbatch = 8\nmax_steps = 2\nepochs = 1\n' > "$tmp/nilm.ini"
  check nilm-no-finite-target 3 "nan_all.h5: no finite target in the train split for any appliance \(fridge, freezer, kettle" -- \
    "$GT" train "$tmp/nilm.ini" data.file="$tmp/nan_all.h5" run.dir="$tmp/nan_all"
  check nilm-some-without-target 0 "nan_some.h5: 2 of 15 appliance\(s\) have no finite target in the train split and learn nothing: fridge, microwave" -- \
    "$GT" train "$tmp/nilm.ini" data.file="$tmp/nan_some.h5" run.dir="$tmp/nan_some"
  check data-items-not-in-file 2 "n.h5: data.items: no household with id 999, 5-9 in the file \(it has: 1, 2, 3\)" -- \
    "$GT" train "$tmp/nilm.ini" data.file="$tmp/n.h5" run.dir="$tmp/items" data.items=1,999,5-9
  # eval and predict check the run's data.items against the file they read (it scored nothing)
  "$GT" synth nilm --households 2 --days 0.1 --seed 3 -o "$tmp/n2.h5" --log-level warn >/dev/null 2>&1
  check data-items-valid 0 "" -- "$GT" train "$tmp/nilm.ini" data.file="$tmp/n.h5" run.dir="$tmp/items3" data.items=3
  check data-items-eval 2 "n2.h5: data.items: no household with id 3 in the file \(it has: 1, 2\)$" -- \
    "$GT" eval "$tmp/items3" "$tmp/n2.h5"
  check data-items-predict 2 "n2.h5: data.items: no household with id 3 in the file" -- \
    "$GT" predict "$tmp/items3" "$tmp/n2.h5" -o "$tmp/items_pred.h5"
  [ ! -e "$tmp/items_pred.h5" ] && echo "ok   data-items-predict: no file" || { echo "FAIL data-items-predict: a file was written"; fail=1; }
else echo "skip nilm-no-finite-target (no h5py)"; fi

# wind-farm data filters naming what the file lacks (a farm, machine type or condition code: it trained
# or scored nothing and said "0 windows"): one line naming the file, the option, the entries and what the
# file has, exit 2, in train, eval and predict alike; under MPI every rank ends at once
"$GT" synth pdm --farms 2 --turbines 2 --days 0.02 --rate 1 -o "$tmp/p2.h5" --log-level warn >/dev/null 2>&1 \
  || { echo "FAIL synth pdm for the filter checks"; fail=1; }
printf '[data]\nwindow = 32\n[model]\nkind = lstm\nhidden = 8\nlayers = 1\n[train]\nbatch = 4\nmax_steps = 2\nepochs = 1\n' > "$tmp/lstm.ini"
check filter-farms 2 "p2.h5: data.farms: no farm 7, 3-5 in the file \(it has: 0, 1\)$" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/flt" data.farms=0,7,3-5
check filter-machine-types 2 "p2.h5: data.machine_types: no machine type 4 in the file \(it has: 0 \(dfig_1500kw_3stage\), 1 \(dfig_2000kw_3stage\), 2 \(dfig_2500kw_3stage\)\)$" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/flt" data.machine_types=4
check filter-conditions 2 "p2.h5: data.conditions: no condition code 9 in the file \(it has: 0 \(low_wind\), 1 \(rated\), 2 \(turbulent\), 3 \(curtailed\)\)$" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/flt" data.conditions=1,9
check filter-train-conditions 2 "p2.h5: data.train_conditions: no condition code 4-8 in the file" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/flt" data.train_conditions=0,4-8
check filter-turbines 2 "p2.h5: data.items: no turbine with id 9 in the file \(it has: 1, 2, 3, 4\)$" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/flt" data.items=9
[ ! -e "$tmp/flt/config.ini" ] && echo "ok   filter: no run written" || { echo "FAIL filter: a refused run wrote its directory"; fail=1; }
check filter-valid 0 "" -- "$GT" train "$tmp/lstm.ini" data.file="$tmp/p2.h5" run.dir="$tmp/farm1" data.farms=1 data.conditions=0-3
check filter-eval 2 "p.h5: data.farms: no farm 1 in the file \(it has: 0\)$" -- "$GT" eval "$tmp/farm1" "$tmp/p.h5"
# eval.ewma_s beyond any record: its span in rows overflowed the warm-up arithmetic (1e308 s); eval.json kept
cp "$tmp/farm1/eval.json" "$tmp/farm1_eval.json"
check eval-ewma-range 2 "eval.ewma_s = 1e\+308: give auto or a number of seconds in \[0, 1e9\]" -- \
  "$GT" eval "$tmp/farm1" eval.ewma_s=1e308
check predict-ewma-range 2 "eval.ewma_s = 1e\+10" -- "$GT" predict "$tmp/farm1" "$tmp/p2.h5" -o "$tmp/ew.h5" eval.ewma_s=1e10
cmp -s "$tmp/farm1/eval.json" "$tmp/farm1_eval.json" && [ ! -e "$tmp/ew.h5" ] && echo "ok   ewma-range: outputs kept" \
  || { echo "FAIL ewma-range: eval.json changed or a file was written"; fail=1; }
check eval-ewma-valid 0 "" -- "$GT" predict "$tmp/farm1" "$tmp/p2.h5" -o "$tmp/ew.h5" eval.ewma_s=100
# a span within the bound but longer than the turbines: no calibration row after each turbine's warm-up, named
check eval-ewma-long 3 "eval.ewma_s too long" -- "$GT" predict "$tmp/farm1" "$tmp/p2.h5" -o "$tmp/ew.h5" eval.ewma_s=1e9
check eval-batch-negative 2 "eval.batch = -1: give 0" -- "$GT" eval "$tmp/farm1" eval.batch=-1
# eval.margin so large that the threshold overflows: no alarm could ever be raised (eval.json said threshold null)
check eval-margin-overflow 2 "eval.margin = 1e\+308 times the validation quantile .* is no finite threshold" -- \
  "$GT" eval "$tmp/farm1" eval.margin=1e308
cmp -s "$tmp/farm1/eval.json" "$tmp/farm1_eval.json" && echo "ok   eval-margin-overflow: eval.json kept" \
  || { echo "FAIL eval-margin-overflow: eval.json changed"; fail=1; }
check filter-predict 2 "p.h5: data.farms: no farm 1 in the file" -- "$GT" predict "$tmp/farm1" "$tmp/p.h5" -o "$tmp/fp.h5"
[ ! -e "$tmp/fp.h5" ] && echo "ok   filter-predict: no file" || { echo "FAIL filter-predict: a file was written"; fail=1; }
if command -v mpiexec >/dev/null; then
  check filter-mpi 2 "p.h5: data.farms: no farm 1 in the file" -- \
    timeout 60 mpiexec -n 2 "$GT" predict "$tmp/farm1" "$tmp/p.h5" -o "$tmp/fp.h5"
fi

# eval/predict on a file with one channel more than the run's: the error names the file and the column (it
# named the checkpoint: "the model configuration differs from the checkpointed run's")
for nc in 2 3; do
  "$PY" -c 'import os, sys
out, nc = sys.argv[1], int(sys.argv[2])
os.makedirs(out + "/datasets", exist_ok=True)
cols = ["sensor_%d_avg" % c for c in range(nc)]
rows = ["2020-09-%02d %02d:%02d:00;0;%d;train;0;" % (1 + i // 144, i // 6 % 24, i % 6 * 10, i) +
        ";".join("%.2f" % (20 + c + (i * (c + 3)) % 7) for c in range(nc)) for i in range(600)]
open(out + "/datasets/10.csv", "w").write(";".join(["time_stamp", "asset_id", "id", "train_test", "status_type_id"] + cols)
                                          + "\n" + "\n".join(rows) + "\n")
open(out + "/event_info.csv", "w").write("asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id\n")' \
    "$tmp/farm$nc" "$nc" && "$GT" import care "$tmp/farm$nc" --farm 0 -o "$tmp/c$nc.h5" --log-level warn >/dev/null 2>&1 \
    || { echo "FAIL CARE fixture with $nc channels"; fail=1; }
done
printf '[data]\nwindow = 8\nstride = 4\n[model]\nkind = lstm\nhidden = 8\nlayers = 1\n[train]\nbatch = 4\nmax_steps = 2\nepochs = 1\n' > "$tmp/c.ini"
check columns-run 0 "" -- "$GT" train "$tmp/c.ini" data.file="$tmp/c2.h5" run.dir="$tmp/c2run"
check columns-more-eval 2 "c3.h5: channel column 3 is 'sensor_2_avg' but the run $tmp/c2run was trained with none there" -- \
  "$GT" eval "$tmp/c2run" "$tmp/c3.h5"
check columns-more-predict 2 "c3.h5: channel column 3 is 'sensor_2_avg'" -- "$GT" predict "$tmp/c2run" "$tmp/c3.h5" -o "$tmp/c3p.h5"
# predict into a directory: refused before the computation (it failed at the rename, without a reason)
mkdir -p "$tmp/pdir"
check predict-into-directory 4 "cannot create the output '$tmp/pdir': Is a directory" -- \
  "$GT" predict "$tmp/c2run" "$tmp/c2.h5" -o "$tmp/pdir"

# synth pdm: farm codes are 0..65535 (a file with more was written, then rejected by train)
check synth-farms-range 2 "synth.farms = 70000: give 1 to 65536" -- "$GT" synth pdm --farms 70000 -o "$tmp/f.h5"
[ ! -e "$tmp/f.h5" ] && echo "ok   synth-farms-range: no file" || { echo "FAIL synth-farms-range: a file was written"; fail=1; }
check synth-households-range 2 "synth.households must be 1 to 16777216" -- "$GT" synth nilm --households 9999999999 -o "$tmp/f.h5"

# integer options narrowed to int after their range check: 2^32 + 6 was accepted as 6, 2^32 + 1 as level 1
check pdm-short-gap-wrap 2 "data.pdm_short_gap must be a number of rows in \[0, 1000000\] \(got 4294967302\)" -- \
  "$GT" train "$tmp/lstm.ini" data.file="$tmp/p.h5" run.dir="$tmp/sg" data.pdm_short_gap=4294967302
[ ! -e "$tmp/sg" ] && echo "ok   pdm-short-gap-wrap: no run written" || { echo "FAIL pdm-short-gap-wrap: a run was written"; fail=1; }
check synth-compress-wrap 2 "synth.compress must be 0..9 \(got 4294967297\)" -- \
  "$GT" synth pdm --farms 1 --turbines 1 --days 0.02 --rate 1 --compress 4294967297 -o "$tmp/cw.h5"
mkdir -p "$tmp/nosrc"
check import-compress-wrap 2 "import.compress must be 0..9 \(got 4294967297\)" -- \
  "$GT" import care "$tmp/nosrc" --compress 4294967297 -o "$tmp/cw.h5"
[ ! -e "$tmp/cw.h5" ] && echo "ok   compress-wrap: no file" || { echo "FAIL compress-wrap: a file was written"; fail=1; }
# options of another format were ignored silently
check import-care-lowres 2 "import: --lowres-period is for ukdale, redd and refit" -- \
  "$GT" import care "$tmp/nosrc" --lowres-period 60 -o "$tmp/cw.h5"
check import-refit-aggregate 2 "import: --aggregate is for ukdale" -- "$GT" import refit "$tmp/nosrc" --aggregate mains -o "$tmp/cw.h5"

# options that were silently accepted
check optim-clip-negative 2 "optim.clip must be a finite number >= 0" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/cs" optim.clip=-1
check tbptt-not-lstm 2 "model.tbptt = 4: truncated backpropagation through time is for model.kind lstm, not s2p_tf" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/cs" model.kind=s2p_tf model.tbptt=4
if [ -e "$tmp/n.h5" ]; then
  check plan-calibration-missing 2 "plan.calibration '$tmp/none.json': No such file" -- \
    "$GT" plan "$tmp/nilm.ini" data.file="$tmp/n.h5" --calibration "$tmp/none.json"
  check plan-gpu-tflops-negative 2 "plan.gpu_tflops must be a finite number >= 0 \(got -5\)" -- \
    "$GT" plan "$tmp/nilm.ini" data.file="$tmp/n.h5" --gpu-tflops -5
fi

# under MPI a user error ends every rank promptly with a non-zero code
if command -v mpiexec >/dev/null; then
  start=$(date +%s)
  timeout 60 mpiexec -n 2 "$GT" synth nilm synth.households=abc -o "$tmp/x.h5" >/dev/null 2>"$tmp/err"
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$took" -gt 30 ]; then
    echo "FAIL mpi-user-error: rc=$rc after ${took}s"; cat "$tmp/err"; fail=1
  else echo "ok   mpi-user-error (rc=$rc, ${took}s)"; fi
fi
exit $fail
