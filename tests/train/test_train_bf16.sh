#!/bin/bash
# tests/train/test_train_bf16.sh: train.precision=bf16 on the CPU engine (oneDNN).
#  - each model kind (s2p_cnn, s2p_tf, lstm) and the quickstart configuration's
#    model (small data, fewer steps) reaches a final validation loss within 2 %
#    of fp32 at the same steps;
#  - bf16 is deterministic run to run (1 and 2 threads; s2p_cnn, s2p_tf and the LSTM with TBPTT), and stop
#    (train.stop_after) + --resume ends bit-identical to the uninterrupted bf16 run;
#  - manifest.json names what ran each op family; train.precision=auto is bf16
#    on a CPU with bf16 units and fp32 without;
#  - with ONEDNN_MAX_CPU_ISA=AVX512_CORE (no bf16 instructions) bf16 still
#    trains, on oneDNN's emulation, with one warning naming the CPU's flags.
# $1 = gridtrain. Skips (77) in a build without oneDNN.
set -u
GT=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 GT_LOG_LEVEL=info
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/train-bf16-XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/../eval/lib.sh"

"$GT" synth nilm -o "$W/nilm.h5" --households 3 --days 1 --period 6 --lowres-period 0 --seed 7 >/dev/null 2>&1 \
  || fail "synth nilm"
"$GT" synth pdm -o "$W/pdm.h5" --farms 1 --turbines 3 --days 0.3 --rate 1 --seed 3 >/dev/null 2>&1 || fail "synth pdm"

N=80
gt_tiny_nilm_ini "$W/cnn.ini" "$W/nilm.h5" "$W/unused" $N $N
gt_tiny_nilm_ini "$W/tf.ini" "$W/nilm.h5" "$W/unused" $N $N
gt_tiny_pdm_ini "$W/lstm.ini" "$W/pdm.h5" "$W/unused" $N $N
# the quickstart's model (datasets/quickstart.ini) on the small file, fewer steps
if [ -n "${GT_SOURCE_DIR:-}" ] && [ -f "$GT_SOURCE_DIR/datasets/quickstart.ini" ]; then
  cp "$GT_SOURCE_DIR/datasets/quickstart.ini" "$W/quick.ini"
  QUICK="quick"
else
  QUICK=""
fi

# train NAME INI RUN PRECISION [extra key=value ...]: run, log in RUN.log
train() {
  local ini=$1 run=$2 prec=$3
  shift 3
  "$GT" train "$ini" run.dir="$W/$run" train.precision="$prec" "$@" > "$W/$run.log" 2>&1
}
checksum() { grep -o 'params xxh64 [0-9a-f]*' "$1" | tail -1 | awk '{print $3}'; }
val_loss() { grep -o '"val_loss":[-0-9.e+]*' "$W/$1/metrics.jsonl" | tail -1 | cut -d: -f2; }

if ! train "$W/cnn.ini" probe bf16 train.max_steps=1 && grep -q "needs a build with oneDNN" "$W/probe.log"; then
  echo "SKIP: built without oneDNN"
  exit 77
fi
# oneDNN 2.6 has bf16 matmuls from AVX-512 up (AMX, AVX512-BF16, emulated on
# AVX512_CORE); below it (an AVX2 CPU, or ONEDNN_MAX_CPU_ISA=AVX2) the products
# are OpenBLAS's on the bf16-rounded inputs, with the no-bf16-units warning
ISA=$(sed -n 's/.*precision bf16 products (fp32 state) on oneDNN \([a-z0-9_]*\).*/\1/p' "$W/probe.log" | head -1)
[ -n "$ISA" ] || fail "probe: no oneDNN ISA in the log line: $(grep -i precision "$W/probe.log")"
case $ISA in avx512*) ROUTE=onednn ;; *) ROUTE=openblas ;; esac
echo "oneDNN ISA $ISA: bf16 products on $ROUTE"

for m in cnn tf lstm $QUICK; do
  extra=()
  case $m in
    tf) extra=(model.kind=s2p_tf model.layers=1 model.hidden=32) ;;
    quick) extra=(data.file="$W/nilm.h5" train.max_steps=$N train.eval_every=$N train.epochs=0 run.checkpoint_every=0) ;;
  esac
  train "$W/$m.ini" $m-fp32 fp32 "${extra[@]}" || fail "$m fp32: $(tail -3 "$W/$m-fp32.log")"
  train "$W/$m.ini" $m-bf16 bf16 "${extra[@]}" || fail "$m bf16: $(tail -3 "$W/$m-bf16.log")"
  a=$(val_loss $m-fp32)
  b=$(val_loss $m-bf16)
  [ -n "$a" ] && [ -n "$b" ] || fail "$m: no val_loss in metrics.jsonl"
  python3 - "$m" "$a" "$b" <<'PY' || fail "$m: bf16 final val_loss not within 2 % of fp32"
import sys
m, a, b = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = abs(b - a) / abs(a)
print(f"{m}: final val_loss fp32 {a:.6g} bf16 {b:.6g} (rel diff {100 * r:.2f} %, bound 2 %)")
sys.exit(0 if r <= 0.02 else 1)
PY
  grep -q "precision bf16 products (fp32 state) on oneDNN" "$W/$m-bf16.log" || fail "$m: no bf16 in the log line"
  grep -q "train: CPU products: .*$ROUTE" "$W/$m-bf16.log" || fail "$m: no CPU products line naming $ROUTE"
  if [ $ROUTE = openblas ]; then
    grep -q "this CPU has no bf16 units" "$W/$m-bf16.log" || fail "$m: no warning on a CPU without bf16 units"
  fi
  [ "$(checksum "$W/$m-fp32.log")" != "$(checksum "$W/$m-bf16.log")" ] || fail "$m: bf16 model identical to fp32"
done

# manifest: the precision and what ran each family (s2p_tf: linear and attention)
python3 - "$W/tf-bf16/manifest.json" "$ROUTE" <<'PY' || fail "manifest.json of the bf16 run"
import json, sys
m = json.load(open(sys.argv[1]))
route = sys.argv[2]
assert m["precision"] == "bf16 products", m["precision"]
cp = m["cpu_products"]
print("manifest cpu_products:", cp)
assert route in cp["linear"], ("linear", cp)
# attention: its fused kernels on AMX (nn/ops/cpu/attention_amx.c) and on AVX512-BF16
# (attention_avx512bf16.c), else tile products on the route
fused = {"avx512_core_amx": "gridtrain fused attention amx_bf16",
         "avx512_core_bf16": "gridtrain fused attention avx512_bf16"}.get(cp["onednn_isa"], route)
assert fused in cp["attention"], ("attention", cp)
assert cp["onednn_isa"].startswith("avx512") == (route == "onednn"), cp
PY

# s2p_tf (attention's fused AMX or AVX512-BF16 route where the CPU has it): the same bits run to run at 1 and 2 threads
TF=(model.kind=s2p_tf model.layers=1 model.hidden=32)
train "$W/tf.ini" tf-again bf16 "${TF[@]}" || fail "second s2p_tf bf16 run"
[ "$(checksum "$W/tf-again.log")" = "$(checksum "$W/tf-bf16.log")" ] || fail "s2p_tf bf16 not deterministic run to run"
OPENBLAS_NUM_THREADS=2 train "$W/tf.ini" tf-two-a bf16 "${TF[@]}" || fail "2-thread s2p_tf bf16 run"
OPENBLAS_NUM_THREADS=2 train "$W/tf.ini" tf-two-b bf16 "${TF[@]}" || fail "2-thread s2p_tf bf16 run"
[ "$(checksum "$W/tf-two-a.log")" = "$(checksum "$W/tf-two-b.log")" ] || fail "s2p_tf bf16 at 2 threads not deterministic"
train "$W/tf.ini" tf-stopped bf16 "${TF[@]}" run.checkpoint_every=20 train.stop_after=50
[ $? -eq 75 ] || fail "s2p_tf stop_after: expected exit 75: $(tail -3 "$W/tf-stopped.log")"
"$GT" train --resume "$W/tf-stopped" > "$W/tf-resumed.log" 2>&1 || fail "s2p_tf resume: $(tail -3 "$W/tf-resumed.log")"
[ "$(checksum "$W/tf-resumed.log")" = "$(checksum "$W/tf-bf16.log")" ] || fail "s2p_tf bf16 resume not bit-exact"
echo "s2p_tf bf16: deterministic at 1 and 2 threads, resume bit-exact ($(checksum "$W/tf-resumed.log"))"

# determinism and bit-exact resume in bf16 (s2p_cnn, checkpoints every 20 steps)
train "$W/cnn.ini" again bf16 || fail "second bf16 run"
[ "$(checksum "$W/again.log")" = "$(checksum "$W/cnn-bf16.log")" ] || fail "bf16 not deterministic run to run"
# two threads (oneDNN's OpenMP team and the engine's pool): the same bits run to run
OPENBLAS_NUM_THREADS=2 train "$W/cnn.ini" two-a bf16 || fail "2-thread bf16 run"
OPENBLAS_NUM_THREADS=2 train "$W/cnn.ini" two-b bf16 || fail "2-thread bf16 run"
[ "$(checksum "$W/two-a.log")" = "$(checksum "$W/two-b.log")" ] || fail "bf16 at 2 threads not deterministic"
train "$W/cnn.ini" stopped bf16 run.checkpoint_every=20 train.stop_after=50
[ $? -eq 75 ] || fail "stop_after: expected exit 75: $(tail -3 "$W/stopped.log")"
"$GT" train --resume "$W/stopped" > "$W/resumed.log" 2>&1 || fail "resume: $(tail -3 "$W/resumed.log")"
[ "$(checksum "$W/resumed.log")" = "$(checksum "$W/cnn-bf16.log")" ] || fail "bf16 resume not bit-exact"
grep -q "precision bf16" "$W/resumed.log" || fail "resumed run not in bf16"
echo "bf16: deterministic, resume bit-exact ($(checksum "$W/resumed.log"))"
# the same on oneDNN's convolution: model.conv_scale=1 gives 30-40 channels, which
# nn/ops/cpu/conv1d.c's rule gives to oneDNN's primitives where the CPU has bf16 units
C1=(model.conv_scale=1 train.max_steps=60)
train "$W/cnn.ini" wide-a bf16 "${C1[@]}" || fail "wide bf16 run: $(tail -3 "$W/wide-a.log")"
train "$W/cnn.ini" wide-b bf16 "${C1[@]}" || fail "wide bf16 run"
[ "$(checksum "$W/wide-a.log")" = "$(checksum "$W/wide-b.log")" ] || fail "wide bf16 not deterministic run to run"
OPENBLAS_NUM_THREADS=2 train "$W/cnn.ini" wide-2a bf16 "${C1[@]}" || fail "wide 2-thread bf16 run"
OPENBLAS_NUM_THREADS=2 train "$W/cnn.ini" wide-2b bf16 "${C1[@]}" || fail "wide 2-thread bf16 run"
[ "$(checksum "$W/wide-2a.log")" = "$(checksum "$W/wide-2b.log")" ] || fail "wide bf16 at 2 threads not deterministic"
train "$W/cnn.ini" wide-stopped bf16 "${C1[@]}" run.checkpoint_every=20 train.stop_after=30
[ $? -eq 75 ] || fail "wide stop_after: expected exit 75: $(tail -3 "$W/wide-stopped.log")"
"$GT" train --resume "$W/wide-stopped" > "$W/wide-resumed.log" 2>&1 || fail "wide resume: $(tail -3 "$W/wide-resumed.log")"
[ "$(checksum "$W/wide-resumed.log")" = "$(checksum "$W/wide-a.log")" ] || fail "wide bf16 resume not bit-exact"
python3 - "$W/wide-a/manifest.json" "$ISA" <<'PY' || fail "manifest conv1d of the wide bf16 run"
import json, sys
cp = json.load(open(sys.argv[1]))["cpu_products"]
print("wide manifest conv1d:", cp["conv1d"])
units = "amx" in sys.argv[2] or "bf16" in sys.argv[2]
assert ("onednn brgconv:" in cp["conv1d"] or "onednn jit:" in cp["conv1d"]) == units, cp
PY
echo "bf16 on oneDNN's convolution: deterministic at 1 and 2 threads, resume bit-exact ($(checksum "$W/wide-resumed.log"))"

# the LSTM in bf16 (on bf16 units oneDNN's LSTM primitive) with 2 layers and TBPTT 16 (its forward's chunks are
# the 48-step window, so the backward runs the forward again on chunks of 16): deterministic at 1 and 2 threads,
# resume bit-exact, and the products line names the LSTM's route
LK=(model.layers=2 model.tbptt=16)
train "$W/lstm.ini" lk bf16 "${LK[@]}" run.checkpoint_every=20 || fail "lstm tbptt bf16: $(tail -3 "$W/lk.log")"
train "$W/lstm.ini" lk-again bf16 "${LK[@]}" || fail "lstm tbptt bf16 again"
[ "$(checksum "$W/lk.log")" = "$(checksum "$W/lk-again.log")" ] || fail "lstm bf16 not deterministic run to run"
OPENBLAS_NUM_THREADS=2 train "$W/lstm.ini" lk-two-a bf16 "${LK[@]}" || fail "lstm 2-thread bf16 run"
OPENBLAS_NUM_THREADS=2 train "$W/lstm.ini" lk-two-b bf16 "${LK[@]}" || fail "lstm 2-thread bf16 run"
[ "$(checksum "$W/lk-two-a.log")" = "$(checksum "$W/lk-two-b.log")" ] || fail "lstm bf16 at 2 threads not deterministic"
train "$W/lstm.ini" lk-stopped bf16 "${LK[@]}" run.checkpoint_every=20 train.stop_after=50
[ $? -eq 75 ] || fail "lstm stop_after: expected exit 75: $(tail -3 "$W/lk-stopped.log")"
"$GT" train --resume "$W/lk-stopped" > "$W/lk-resumed.log" 2>&1 || fail "lstm resume: $(tail -3 "$W/lk-resumed.log")"
[ "$(checksum "$W/lk-resumed.log")" = "$(checksum "$W/lk.log")" ] || fail "lstm bf16 resume not bit-exact"
case $ISA in
  *amx* | *bf16*) want="lstm: onednn rnn" ;;
  *) want="lstm: $ROUTE" ;;
esac
grep -q "train: CPU products: .*$want" "$W/lk.log" || fail "lstm: the products line does not name '$want': $(grep 'CPU products' "$W/lk.log")"
echo "lstm bf16 (tbptt 16): deterministic at 1 and 2 threads, resume bit-exact ($(checksum "$W/lk-resumed.log"))"

# auto: bf16 where oneDNN sees bf16 units, fp32 where it does not
train "$W/cnn.ini" auto auto train.max_steps=2 || fail "auto"
case $ISA in
  *amx* | *bf16*) grep -q "precision bf16 products" "$W/auto.log" || fail "auto on a CPU with bf16 units is not bf16" ;;
  *) grep -q "precision fp32" "$W/auto.log" || fail "auto without bf16 units (oneDNN ISA $ISA) is not fp32" ;;
esac
ONEDNN_MAX_CPU_ISA=AVX512_CORE train "$W/cnn.ini" auto512 auto train.max_steps=2 || fail "auto (AVX512_CORE)"
grep -q "precision fp32" "$W/auto512.log" || fail "auto without bf16 units is not fp32"

# no bf16 units (oneDNN capped at AVX-512): bf16 runs, emulated, with one warning naming the flags
if grep -qw avx512f /proc/cpuinfo; then
  ONEDNN_MAX_CPU_ISA=AVX512_CORE train "$W/cnn.ini" emu bf16 || fail "emulated bf16: $(tail -3 "$W/emu.log")"
  n=$(grep -c "this CPU has no bf16 units (CPU flags: .*avx512f.*; oneDNN ISA avx512_core): bf16 is emulated and slower than fp32" "$W/emu.log")
  [ "$n" -eq 1 ] || fail "expected one emulation warning, got $n: $(grep -i bf16 "$W/emu.log")"
  python3 -c "import json,sys; cp=json.load(open(sys.argv[1]))['cpu_products']; print(cp); sys.exit(not (cp['onednn_isa']=='avx512_core' and cp['conv1d'].endswith('avx512_core')))" \
    "$W/emu/manifest.json" || fail "manifest does not name the emulated ISA"
  a=$(val_loss cnn-bf16)
  b=$(val_loss emu)
  python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'emulated bf16 val_loss {b:.6g} vs AMX {a:.6g}'); sys.exit(abs(a-b)/a>0.02)" "$a" "$b" \
    || fail "emulated bf16 differs from bf16 by more than 2 %"
fi
# fp32 runs never warn about bf16
if grep -i "warn" "$W/cnn-fp32.log" | grep -qi "bf16"; then fail "fp32 run warns about bf16"; fi
echo "ok"
