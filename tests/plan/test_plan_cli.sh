#!/usr/bin/env bash
# gridtrain plan and the trainer's memory check on tiny data:
#   - plan prints the table and "fits" (exit 0); under a budget of its total
#     less half the activations it says DOES NOT FIT and names the largest
#     micro-batch that fits (exit 4);
#   - train with the same budget (train.mem_limit) stops before allocating
#     with about the same micro-batch (exit 4, one line), and with that
#     micro-batch it trains;
#   - the plan's total is within 10% of the peak resident set the trainer
#     measures (s2p_tf and lstm, where the model's memory dominates);
#   - GPU plans (--tier, --gpu-mem) print device memory; bad values exit 2.
set -euo pipefail
GT=$1
dir=${GT_BINARY_DIR:-/tmp}/plan-scratch/cli-$$
rm -rf "$dir" && mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$dir"
"$GT" synth nilm -o nilm.h5 synth.households=4 synth.days=0.5 >/dev/null 2>&1 || fail synth
"$GT" synth pdm -o farm.h5 --farms 1 --turbines 2 --days 0.2 --rate 2 >/dev/null 2>&1 || fail "synth pdm"
cat > tf.ini <<INI
[data]
file = nilm.h5
window = 1023
stride = 16
[model]
kind = s2p_tf
layers = 2
[train]
batch = 16
epochs = 0
max_steps = 2
eval_every = 2
[run]
dir = run_tf
INI
cat > lstm.ini <<INI
[data]
file = farm.h5
window = 512
stride = 128
[model]
kind = lstm
hidden = 128
layers = 2
[train]
batch = 64
epochs = 0
max_steps = 2
eval_every = 2
[run]
dir = run_lstm
INI

"$GT" plan tf.ini > plan.txt 2>plan.err || { cat plan.err plan.txt; fail "plan tf.ini"; }
grep -q "verdict: fits" plan.txt || fail "plan: no verdict"
grep -q "activations" plan.txt || fail "plan: no activations row"

# a budget that holds only part of the micro-batch: the plan's total less half its activations
sanitized=0
if ldd "$GT" 2>/dev/null | grep 'libasan\|libtsan' >/dev/null; then sanitized=1; fi # no -q: an early exit of grep fails the pipe (pipefail)
mib() { sed -n "s/^  $1 *\([0-9.]*\) \(MiB\|GiB\).*/\1 \2/p" "$2" | awk '{print ($2 == "GiB") ? $1 * 1024 : $1}'; }
total=$(mib total plan.txt); acts=$(mib activations plan.txt)
budget=$(awk -v t="$total" -v a="$acts" 'BEGIN { printf "%dM", t - a / 2 }')
set +e
"$GT" plan tf.ini --cpu-mem "$budget" > small.txt 2>&1; rc=$?
set -e
[ $rc -eq 4 ] || { cat small.txt; fail "plan under $budget: exit $rc, want 4"; }
grep -q "DOES NOT FIT" small.txt || fail "plan under $budget: no DOES NOT FIT"
mb=$(sed -n 's/.*set train.micro_batch=\([0-9]*\) .*/\1/p' small.txt | head -1)
[ -n "$mb" ] && [ "$mb" -ge 1 ] && [ "$mb" -lt 16 ] || { cat small.txt; fail "plan: no micro-batch advice ($mb)"; }
set +e
GT_EVAL_AT_END=0 "$GT" train tf.ini train.mem_limit="$budget" > check.log 2>&1; rc=$?
set -e
[ $rc -eq 4 ] || { cat check.log; fail "train over train.mem_limit: exit $rc, want 4"; }
grep -q "memory: rank 0 needs .* set train.micro_batch=" check.log || { cat check.log; fail "no memory advice"; }
[ "$(grep -c 'error:' check.log)" = 1 ] || fail "the memory error is not one line"
[ ! -e run_tf/checkpoints ] || fail "a checkpoint was written before the memory check"
mbt=$(sed -n 's/.*set train.micro_batch=\([0-9]*\) .*/\1/p' check.log | head -1)
[ -n "$mbt" ] && [ "$mbt" -ge 1 ] && [ "$mbt" -lt 16 ] || { cat check.log; fail "train: no micro-batch advice"; }
if [ $sanitized = 0 ] && [ $(( mb > mbt ? mb - mbt : mbt - mb )) -gt 2 ]; then
  fail "plan advises micro-batch $mb, the trainer $mbt"
fi
GT_EVAL_AT_END=0 "$GT" train tf.ini train.mem_limit="$budget" train.micro_batch="$mbt" > ok.log 2>&1 \
  || { cat ok.log; fail "train with the advised micro-batch $mbt"; }
echo "advice under $budget: plan micro-batch $mb, trainer $mbt of 16; training with it ran"

# predicted total vs measured peak resident set (1 rank); a sanitizer build's
# shadow memory and quarantine are not the program's: not checked there
[ $sanitized = 1 ] && echo "sanitizer build: resident-set ratio not checked"
for cfg in tf lstm; do
  [ $sanitized = 1 ] && break
  rm -rf "run_$cfg"
  "$GT" plan $cfg.ini > p_$cfg.txt 2>&1 || { cat p_$cfg.txt; fail "plan $cfg"; }
  GT_EVAL_AT_END=0 "$GT" train $cfg.ini > t_$cfg.log 2>&1 || { cat t_$cfg.log; fail "train $cfg"; }
  pred=$(sed -n 's/^  total *\([0-9.]*\) \(MiB\|GiB\).*/\1 \2/p' p_$cfg.txt)
  meas=$(sed -n 's/.*memory: peak resident \([0-9.]*\) MiB.*/\1/p' t_$cfg.log)
  python3 - "$pred" "$meas" "$cfg" <<'PY' || fail "plan vs measured ($cfg)"
import sys
v, unit = sys.argv[1].split()
pred = float(v) * (1024 if unit == "GiB" else 1)
meas = float(sys.argv[2])
r = pred / meas
print(f"plan {sys.argv[3]}: predicted {pred:.1f} MiB, measured peak {meas:.1f} MiB, ratio {r:.3f}")
sys.exit(0 if 0.9 <= r <= 1.1 else 1)
PY
done

# GPU plans: device memory (exact buffers + context estimate), step time from the tier
"$GT" plan tf.ini --tier ga660m > g.txt 2>&1 || { cat g.txt; fail "plan --tier"; }
grep -q "device memory" g.txt && grep -q "CUDA context" g.txt && grep -q "ms per step" g.txt || { cat g.txt; fail "gpu plan"; }
"$GT" plan tf.ini --gpu-mem 24G data.window=4095 > g2.txt 2>&1 || { cat g2.txt; fail "plan --gpu-mem"; }
# the scale model: rows for 1, 4, 16, 64 ranks and the requested 8 (2 GA660M nodes); the
# 4-rank row is one node, 16 ranks are 4 nodes; --net-gbs changes only the cross-node rows
"$GT" plan tf.ini --tier ga660m --ranks 8 > s.txt 2>&1 || { cat s.txt; fail "plan --ranks 8"; }
"$GT" plan tf.ini --tier ga660m --ranks 8 --net-gbs 1 > s1.txt 2>&1 || { cat s1.txt; fail "plan --net-gbs"; }
python3 - s.txt s1.txt <<'PY' || fail "scale table"
import sys
def rows(path):
    out, on = {}, False
    for line in open(path):
        if line.startswith("scale (model"): on = True; continue
        f = line.split()
        if on and f and f[0].isdigit(): out[int(f[0])] = f
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert sorted(a) == [1, 4, 8, 16, 64], sorted(a)
assert [a[p][1] for p in (1, 4, 8, 16, 64)] == ["1", "1", "2", "4", "16"], a
assert float(a[1][4]) == 0 and float(a[4][4]) > 0          # no all-reduce on one rank
assert a[1][0:5] == b[1][0:5] and a[4][4] == b[4][4]        # one node: the network plays no part
assert float(b[16][4]) > 3 * float(a[16][4]), (a[16], b[16])   # across nodes it does
assert "network between nodes" in " ".join(b[16][9:]), b[16]
print("scale table: 16 ranks all-reduce %s ms at the tier's network, %s ms at 1 GB/s" % (a[16][4], b[16][4]))
PY
# bf16 activation storage (s2p_tf's pre-GELU activations) shrinks the device's activations
"$GT" plan tf.ini --tier ga660m train.precision=bf16 > gb.txt 2>&1 || { cat gb.txt; fail "plan train.precision=bf16"; }
act() { sed -n 's/.*activations, targets, work area *\([0-9.]*\) MiB.*/\1/p' "$1"; }
python3 -c "import sys; a, b = float('$(act g.txt)'), float('$(act gb.txt)'); print('plan: activations fp32 %s MiB, bf16 %s MiB' % (a, b)); sys.exit(0 if 0 < b < a else 1)" \
  || fail "bf16 does not lower the planned activations ($(act g.txt) vs $(act gb.txt) MiB)"
# the GPU rate: the estimate for the kind, a measured calibration file (tests/gpu/run.sh's
# plan-calibration.json), or plan.gpu_efficiency; the step's compute scales with 1 / efficiency
grep -q "an estimate from the kernels' structure, not measured" g.txt || { cat g.txt; fail "the GPU rate's source is not stated"; }
printf '{"gpu": "NVIDIA H200", "efficiency": {"s2p_tf": 0.25, "lstm": 0.01}}\n' > cal.json
"$GT" plan tf.ini --tier ga660m --ranks 8 plan.calibration=cal.json > c.txt 2>&1 || { cat c.txt; fail "plan.calibration"; }
grep -q "nominal x 0.25 for s2p_tf, measured on NVIDIA H200" c.txt || { cat c.txt; fail "calibration not used"; }
"$GT" plan tf.ini --tier ga660m --ranks 8 --gpu-efficiency 0.05 train.overlap=false > o.txt 2>&1 || { cat o.txt; fail "plan --gpu-efficiency"; }
python3 - s.txt c.txt o.txt <<'PY' || fail "calibrated / overlapped scale rows"
import sys
def rows(path):
    out, on = {}, False
    for line in open(path):
        if line.startswith("scale (model"): on = True; continue
        f = line.split()
        if on and f and f[0].isdigit(): out[int(f[0])] = [float(x) if x.replace('.', '', 1).isdigit() else x for x in f]
    return out
est, cal, off = (rows(p) for p in sys.argv[1:4])
# ranks nodes per-rank compute all-reduce exposed step ...: compute x est/0.25 with the file
r = est[1][3] / cal[1][3]
assert abs(r - 0.25 / 0.02) / r < 0.02, (est[1], cal[1])
assert abs(est[1][3] / off[1][3] - 0.05 / 0.02) < 0.05, (est[1], off[1])
for p in (4, 8, 16):
    assert est[p][5] <= est[p][4] and abs(est[p][6] - est[p][3] - est[p][5]) < 0.01, est[p]  # overlapped: exposed <= all-reduce
    assert off[p][5] == off[p][4], off[p]                                                    # train.overlap=false: all exposed
print("plan: compute x%.1f with the calibration; 8 ranks all-reduce %s ms, exposed %s ms" % (r, est[8][4], est[8][5]))
PY
printf '{"gpu": "x", "efficiency": {"lstm": 0.01}}\n' > cal2.json
set +e
"$GT" plan tf.ini --tier ga660m plan.calibration=cal2.json > e.txt 2>&1; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "cal2.json has no measured efficiency for s2p_tf" e.txt || { cat e.txt; fail "calibration without the kind: exit $rc"; }
# calibrated on this node: two ranks time the gradient all-reduce
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -n 2 "$GT" plan tf.ini > m.txt 2>&1 ||
  { cat m.txt; fail "mpirun -n 2 plan"; }
grep -q "within a node (measured here)" m.txt || { cat m.txt; fail "plan on 2 ranks: no measured all-reduce"; }
set +e
"$GT" plan tf.ini --tier h9000 > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "unknown tier: exit $rc"
"$GT" plan tf.ini --gpu-mem lots > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad --gpu-mem: exit $rc"
"$GT" train tf.ini train.mem_limit=lots > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad train.mem_limit: exit $rc"
set -e
echo "test_plan_cli: ok"
