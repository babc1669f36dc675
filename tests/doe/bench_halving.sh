#!/usr/bin/env bash
# tests/doe/bench_halving.sh GRIDTRAIN WORK_DIR [JOBS]: the 27-cell sweep
# (optim.lr x data.window x model.hidden on the quickstart's NILM data,
# datasets/quickstart.ini) run both ways, successive halving (eta 3, rungs of
# 20, 60 and 180 steps) and the full grid (every cell to 180 steps), then
# 'doe report GRID --halving HALVING'. Prints the share of the grid's compute
# halving spent (cell-steps, CPU-hours of training) and how far its choice's
# full-budget validation loss is from the grid's best; exits 1 when halving
# spends more than 40 % of the grid's CPU-hours or its choice is more than 2 %
# worse. A benchmark (about 15 minutes on 2 busy cores), not a ctest; the
# numbers measured are in docs/doe.md.
set -euo pipefail
G=$(readlink -f "$1")
mkdir -p "$2"
W=$(readlink -f "$2")
J=${3:-2}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
[ -s "$W/nilm.h5" ] || "$G" synth nilm --config "$SRC/datasets/quickstart.ini" -o "$W/nilm.h5" > "$W/synth.log" 2>&1
matrix() { # NAME STRATEGY
  cat > "$W/$1.ini" <<INI
[doe]
name = $1
dir = $W/$1
metric = train.best_val_loss
[factors]
optim.lr = 3e-4,1e-3,3e-3
data.window = 99,199,299
model.hidden = 64,256,1024
[search]
strategy = $2
eta = 3
min_budget = 20
[data]
file = $W/nilm.h5
screen = drop
[model]
kind = s2p_cnn
conv_scale = 0.5
[optim]
warmup = 10
[train]
batch = 64
epochs = 0
max_steps = 180
log_every = 20
eval_every = 20
seed = 1
[run]
checkpoint_every = 0
INI
}
matrix halving27 halving
matrix grid27 grid
t0=$(date +%s)
"$G" doe run-all "$W/halving27.ini" -j "$J" > "$W/halving.log" 2>&1 || { tail -20 "$W/halving.log"; exit 1; }
t1=$(date +%s)
"$G" doe run-all "$W/grid27.ini" -j "$J" > "$W/grid.log" 2>&1 || { tail -20 "$W/grid.log"; exit 1; }
t2=$(date +%s)
"$G" doe report "$W/grid27" --halving "$W/halving27" --no-plots > /dev/null 2>&1
"$G" doe report "$W/halving27" --no-plots > /dev/null 2>&1
echo "wall: halving $((t1 - t0)) s, grid $((t2 - t1)) s (-j $J, load $(cut -d' ' -f1-3 /proc/loadavg))"
sed -n '/^## Successive halving against this grid/,/^## /p' "$W/grid27/report/report.md" | grep -v '^## Cells'
python3 - "$W/grid27/report/report.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
d = float(re.search(r"([+-][0-9.]+)% from the best", t).group(1))
cpu = float(re.search(r"([0-9.]+)% of the CPU-hours", t).group(1))
print(f"halving: {cpu:.1f} % of the grid's CPU-hours, choice {d:+.2f} % from the grid's best validation loss")
sys.exit(0 if cpu <= 40 and d <= 2 else 1)
PY
