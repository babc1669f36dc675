#!/usr/bin/env bash
# The main job on embedded default data: installs the packages and builds the
# program (jobs/setup.sh, GT_BUILD_TARGET=gridtrain: no tests), generates a
# synthetic NILM dataset (8 households x 6 days) and a small wind farm with 2
# MPI ranks, validates both collectively, trains a seq2point CNN on five
# appliances of the NILM data under mpirun -n 2 (datasets/quickstart.ini) and
# evaluates it on the last 15 % of every household's time (the test split).
# Its closing lines say what was trained, how good it is (macro F1 and EA,
# and per appliance) and which file to open next. Outputs go to
# runs/quickstart/ (the training run in runs/quickstart/train/, the wall time
# of each phase in runs/quickstart/phases.tsv). About 3 minutes on 2 cores
# once the packages are installed (docs/user-guide.md, The quickstart).
#   GT_BUILD_DIR=DIR        build there instead of build/ (tests/eval/bench_quickstart.sh)
#   GT_QUICKSTART_GT=PATH   use this gridtrain, no setup (the ctest test_quickstart)
#   GT_QUICKSTART_OUT=DIR   outputs there instead of runs/quickstart
set -euo pipefail
cd "$(dirname "$0")/.."
out=${GT_QUICKSTART_OUT:-runs/quickstart}
build=${GT_BUILD_DIR:-build}
mkdir -p "$out"
phases="$out/phases.tsv"
printf 'phase\tseconds\n' > "$phases"
t_last=$(date +%s%N)
phase() { # NAME: the wall time since the previous phase ended
  local now
  now=$(date +%s%N)
  awk -v n="$1" -v d="$((now - t_last))" 'BEGIN { printf "%s\t%.1f\n", n, d / 1e9 }' >> "$phases"
  t_last=$now
}

if [ -n "${GT_QUICKSTART_GT:-}" ]; then
  gt=$GT_QUICKSTART_GT
else
  GT_BUILD_TARGET=gridtrain GT_BUILD_DIR="$build" jobs/setup.sh
  gt="$build/gridtrain"
fi
phase setup
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
mpirun -n 2 "$gt" synth nilm --config datasets/quickstart.ini -o "$out/nilm.h5"
mpirun -n 2 "$gt" inspect "$out/nilm.h5"
mpirun -n 2 "$gt" synth pdm --config datasets/quickstart.ini synth.days=0.25 -o "$out/pdm.h5"
mpirun -n 2 "$gt" inspect "$out/pdm.h5"
phase data
rm -rf "$out/train"
mpirun -n 2 "$gt" train datasets/quickstart.ini data.file="$out/nilm.h5" run.dir="$out/train"
phase train_and_eval

# what was trained, how good it is, what to open next (from the run's eval.json and timing.json)
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
run = out + "/train"
ev = json.load(open(run + "/eval.json"))
tr = ev["train"]
test = ev["nilm"]["test"]
o = test["overall"]
apps = [a for a in test["appliances"] if a.get("f1") is not None]
def ini(path):
    d, sec = {}, ""
    for line in open(path):
        line = line.split(";")[0].strip()
        if line.startswith("["):
            sec = line.strip("[]")
        elif "=" in line and not line.startswith("#"):
            k, v = (s.strip() for s in line.split("=", 1))
            d[sec + "." + k] = v
    return d
cfg = ini(run + "/config.ini")
synth = ini("datasets/quickstart.ini")
phases = dict(l.split("\t") for l in open(out + "/phases.tsv").read().split("\n")[1:] if l)
train_s, eval_s = tr["train_time_s"], ev["eval_config"]["eval_time_s"]
win = int(cfg["data.window"])
n_params = json.load(open(run + "/manifest.json"))["n_params"]
print("quickstart: trained %s (%.1f M parameters, window %d rows = %.0f min of 6 s readings, %d steps of %s windows, "
      "%.0f s on %d ranks) on %s households x %s days to find: %s"
      % (ev["model"], n_params / 1e6, win, win * 6 / 60, tr["steps"], cfg["train.batch"], train_s, tr["ranks"],
         synth["synth.households"], synth["synth.days"], ", ".join(a["name"] for a in apps)))
print("quickstart: on the test split (the last 15 %% of each household's time, never trained on): "
      "macro F1 %.3f, EA %.3f (the share of the appliances' energy assigned correctly), F1 %.3f of all on/off states "
      "(the quickstart aims at macro F1 >= 0.7 and EA >= 0.8)" % (o["f1_macro"], o["ea"], o["f1"]))
for a in apps:
    print("  %-16s F1 %.3f  EA %.3f  precision %.3f  recall %.3f" % (a["name"], a["f1"], a["ea"], a["precision"], a["recall"]))
print("quickstart: wall time %s s in all: setup and build %s s, data %s s, training %.0f s, evaluation %.0f s"
      % (sum(float(v) for v in phases.values()).__round__(1), phases["setup"], phases["data"], train_s, eval_s))
print("quickstart: open %s/report.html next (plots of the loss, F1/EA per appliance and a test household's power; "
      "report.md is the same as text); all files in %s/" % (run, out))
PY
