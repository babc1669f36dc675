#!/usr/bin/env bash
# tests/gpu/e2e_train.sh BUILD_DIR WORK_DIR: `gridtrain train` end to end on
# one GPU, on a machine without MPI or HDF5 installed (run by tests/gpu/run.sh
# as its step e2e-train). The pipeline's libraries come from the Debian
# packages carried in .gpu-debs/pipeline (tests/gpu/fetch-debs.sh --pipeline),
# unpacked into a private prefix (GT_DEPS_PREFIX when run.sh already did,
# else /tmp/gt-pipeline); the build links them directly (-DGT_DEPS_PREFIX,
# cmake/deps_prefix.cmake) and the run relocates Open MPI and its external
# PMIx into the prefix (OPAL_PREFIX, PMIX_INSTALL_PREFIX, PMIX_MCA_gds=hash,
# OMPI_MCA_btl_vader_single_copy_mechanism=none).
#   1. gridtrain: with GT_E2E_BUILT=1 the target gridtrain of BUILD_DIR, the
#      tree run.sh configured and built (no second CUDA build), else a
#      configure + build against the prefix; a library the loader cannot
#      resolve (ldd "not found") is a FAIL naming it
#   2. a small synthetic NILM file (gridtrain synth, 1 rank; a failure, as at
#      MPI_Init, is a FAIL with its log)
#   3. train on the GPU (train.device=cuda), 1 rank without mpirun: exit 0,
#      manifest engine "cuda", log line "device: cuda"
#   4. the same on the CPU (train.device=cpu): the first step's loss within
#      1e-4 relative of the GPU's (same init, same data, fp32), both runs lower
#      the loss, final losses within 10 %
#   5. a GPU run stopped after 10 steps (exit 75) and resumed (--resume): the
#      same final parameters, bit for bit, as the straight GPU run (no float
#      atomics in the GPU's gradient reductions), so the same final loss
#   6. the GPU run's best checkpoint evaluated on the CPU and on the GPU
#      (eval.device=cpu|cuda): the same file format, eval.json overall MAE
#      within 1e-3 relative
#   7. mpirun -n 1 from the prefix (OPAL_PREFIX) trains on the GPU too
#   8. train.precision=bf16 on the GPU: the log says bf16 products, the loss
#      goes down and ends within 5 % of the fp32 GPU run's
#   9. train.graphs=false (every kernel launched eagerly) gives the same
#      parameters, bit for bit, as the default run (CUDA graphs replayed; its
#      log reports captures and replays); both runs' GPU input wait (events on
#      the device, timing.json device_input_stall) is printed
# Dry run without a GPU (the script's own check, on the development machine):
# GT_E2E_DEVICE=cpu GT_E2E_CUDA=OFF tests/gpu/e2e_train.sh /tmp/b /tmp/w
set -uo pipefail
cd "$(dirname "$0")/../.."
DEV=${GT_E2E_DEVICE:-cuda}
ENGINE=$([ "$DEV" = cuda ] && echo cuda || echo host)
BP=${1:?build dir}
W=${2:?work dir}
rm -rf "$W"; mkdir -p "$W"
if [ -n "${GT_DEPS_PREFIX:-}" ]; then
  P=$GT_DEPS_PREFIX
else
  P=/tmp/gt-pipeline
  rm -rf "$P"; mkdir -p "$P"
  for d in .gpu-debs/pipeline/*.deb .gpu-debs/*.deb; do [ -f "$d" ] && { dpkg-deb -x "$d" "$P" 2>/dev/null || dpkg -x "$d" "$P"; }; done
fi
. tests/gpu/prefix_env.sh # gt_prefix_env: after the build (cmake runs with the machine's own libraries)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=4 GT_LOG_LEVEL=info
fail() { echo "e2e-train: FAIL: $*" >&2; exit 1; }

# 1. build
BLAS=()
have_cblas() { # the system's cblas.h (not `ls ... | grep`: with pipefail an unmatched pattern fails it)
  local f; for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/*/cblas.h; do [ -f "$f" ] && return 0; done
  return 1
}
if ! have_cblas; then
  inc=$(dirname "$(find "$P" -name cblas.h | head -1)")
  lib=$(find "$P" -name 'libopenblas*.so*' | grep -v '\.so\.0$' | head -1)
  [ -n "$inc" ] && [ -n "$lib" ] || fail "no OpenBLAS on this machine or in .gpu-debs"
  BLAS=(-DCBLAS_INCLUDE_DIR="$inc" -DBLAS_LIBRARIES="$lib" -DBLA_VENDOR=OpenBLAS)
  export LD_LIBRARY_PATH="$(dirname "$lib"):${LD_LIBRARY_PATH:-}"
fi
if [ "${GT_E2E_BUILT:-0}" != 1 ]; then
  cmake -S . -B "$BP" -DGT_PIPELINE=ON -DGT_CUDA="${GT_E2E_CUDA:-ON}" -DGT_CUDA_ARCHITECTURES="${GT_CUDA_ARCHITECTURES:-90}" \
    -DGT_DEPS_PREFIX="$P" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release "${BLAS[@]}" > "$W/configure.log" 2>&1 \
    || { tail -20 "$W/configure.log"; fail "configure against the carried packages"; }
fi
cmake --build "$BP" --target gridtrain -j "$(nproc)" > "$W/build.log" 2>&1 || { tail -30 "$W/build.log"; fail "build"; }
G=$BP/gridtrain
gt_prefix_env "$P"
ldd "$G" > "$W/ldd.log" 2>&1 || { cat "$W/ldd.log"; fail "ldd $G"; }
missing=$(grep "not found" "$W/ldd.log" | awk '{print $1}' | tr '\n' ' ')
[ -z "$missing" ] || { cat "$W/ldd.log"; fail "libraries the loader cannot resolve (neither the image nor .gpu-debs has them): $missing"; }

# 2. data
"$G" synth nilm -o "$W/nilm.h5" --households 3 --days 2 --period 6 --lowres-period 0 --spike-rate 0 \
  --gap-rate 0 --stuck-rate 0 --seed 7 > "$W/synth.log" 2>&1 || { tail -30 "$W/synth.log"; fail "gridtrain synth (the MPI/HDF5 runtime from the prefix): see synth.log"; }
cat > "$W/train.ini" <<INI
[data]
file = $W/nilm.h5
window = 99
stride = 8
[model]
kind = s2p_cnn
conv_scale = 0.5
hidden = 128
[optim]
lr = 1e-3
warmup = 5
[train]
batch = 64
epochs = 0
max_steps = 40
log_every = 1
eval_every = 20
seed = 3
[run]
checkpoint_every = 20
checkpoint_minutes = 0
INI
loss_at() { # RUN_DIR STEP -> loss of that train row of metrics.jsonl (last wins)
  python3 -c "
import json,sys
v=None
for l in open('$1/metrics.jsonl'):
    j=json.loads(l)
    if j.get('type')=='train' and j.get('step')==$2: v=j['loss']
print(v)"
}
rel() { python3 -c "import sys; a,b=float('$1'),float('$2'); print(abs(a-b)/max(abs(b),1e-30))"; }
lt() { python3 -c "import sys; sys.exit(0 if float('$1') < float('$2') else 1)"; }

# 3. GPU
GT_EVAL_AT_END=0 "$G" train "$W/train.ini" train.device=$DEV run.dir="$W/gpu" > "$W/train-gpu.log" 2>&1 \
  || { tail -20 "$W/train-gpu.log"; fail "train.device=$DEV"; }
grep -m1 "device: $([ "$DEV" = cuda ] && echo cuda || echo cpu)" "$W/train-gpu.log" || fail "no 'device: $DEV' line"
python3 -c "import json; m=json.load(open('$W/gpu/manifest.json')); assert m['engine']=='$ENGINE', m['engine']; print('manifest device:', m['device'])" \
  || fail "manifest engine is not $ENGINE"
# 4. CPU, same configuration
GT_EVAL_AT_END=0 "$G" train "$W/train.ini" train.device=cpu run.dir="$W/cpu" > "$W/train-cpu.log" 2>&1 \
  || { tail -20 "$W/train-cpu.log"; fail "train.device=cpu"; }
g1=$(loss_at "$W/gpu" 1); c1=$(loss_at "$W/cpu" 1); g40=$(loss_at "$W/gpu" 40); c40=$(loss_at "$W/cpu" 40)
echo "loss step 1: gpu $g1 cpu $c1 (rel $(rel "$g1" "$c1")); step 40: gpu $g40 cpu $c40 (rel $(rel "$g40" "$c40"))"
lt "$(rel "$g1" "$c1")" 1e-4 || fail "first-step loss: GPU $g1 vs CPU $c1"
lt "$g40" "$g1" && lt "$c40" "$c1" || fail "the loss did not go down"
lt "$(rel "$g40" "$c40")" 0.1 || fail "final loss: GPU $g40 vs CPU $c40 (more than 10 % apart)"
# 5. resume on the GPU
"$G" train "$W/train.ini" train.device=$DEV run.dir="$W/gpu-r" train.stop_after=10 > "$W/train-stop.log" 2>&1
rc=$?; [ $rc -eq 75 ] || { tail "$W/train-stop.log"; fail "train.stop_after=10: exit $rc, expected 75"; }
GT_EVAL_AT_END=0 "$G" train --resume "$W/gpu-r" train.device=$DEV > "$W/train-resume.log" 2>&1 \
  || { tail -20 "$W/train-resume.log"; fail "--resume on the GPU"; }
r40=$(loss_at "$W/gpu-r" 40)
params_of() { sed -n 's/.*params xxh64 \([0-9a-f]*\).*/\1/p' "$1" | tail -1; }
echo "resumed GPU run step 40: $r40 (straight $g40, rel $(rel "$r40" "$g40")); params $(params_of "$W/train-resume.log") vs $(params_of "$W/train-gpu.log")"
[ -n "$(params_of "$W/train-gpu.log")" ] && [ "$(params_of "$W/train-resume.log")" = "$(params_of "$W/train-gpu.log")" ] \
  || fail "resumed GPU run is not bit-identical to the straight one (loss $r40 vs $g40)"
# 6. the GPU's checkpoint evaluated on the CPU and on the GPU
"$G" eval "$W/gpu" eval.device=cpu > "$W/eval-cpu.log" 2>&1 || { tail "$W/eval-cpu.log"; fail "eval.device=cpu of the GPU run"; }
cp "$W/gpu/eval.json" "$W/eval-cpu.json"
"$G" eval "$W/gpu" eval.device=$DEV > "$W/eval-gpu.log" 2>&1 || { tail "$W/eval-gpu.log"; fail "eval.device=$DEV"; }
python3 - "$W/eval-cpu.json" "$W/gpu/eval.json" <<'PY' || fail "eval on the CPU and the GPU disagree"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ma = a["nilm"]["test"]["overall"]["mae_w"]; mb = b["nilm"]["test"]["overall"]["mae_w"]
print(f"eval overall MAE: cpu {ma} gpu {mb}")
assert abs(ma - mb) <= 1e-3 * max(abs(ma), 1e-9), (ma, mb)
PY
# 7. under mpirun (the carried Open MPI)
if command -v mpirun.openmpi >/dev/null; then
  GT_EVAL_AT_END=0 timeout 120 mpirun.openmpi -n 1 "$G" train "$W/train.ini" train.device=$DEV train.max_steps=5 \
    run.dir="$W/gpu-mpirun" > "$W/train-mpirun.log" 2>&1 || { tail -20 "$W/train-mpirun.log"; fail "mpirun -n 1 train.device=$DEV"; }
fi
# 8. bf16 products
GT_EVAL_AT_END=0 "$G" train "$W/train.ini" train.device=$DEV train.precision=bf16 run.dir="$W/gpu-bf16" \
  > "$W/train-bf16.log" 2>&1 || { tail -20 "$W/train-bf16.log"; fail "train.precision=bf16"; }
if [ "$DEV" = cuda ]; then
  grep -q "precision bf16 products (fp32 state)" "$W/train-bf16.log" || fail "the bf16 run's log does not say bf16"
fi
b1=$(loss_at "$W/gpu-bf16" 1); b40=$(loss_at "$W/gpu-bf16" 40)
echo "bf16: loss step 1 $b1, step 40 $b40 (fp32 GPU $g40, rel $(rel "$b40" "$g40"))"
lt "$b40" "$b1" && lt "$(rel "$b40" "$g40")" 0.05 || fail "bf16 final loss $b40 vs fp32 $g40"
# 9. CUDA graphs vs eager
GT_EVAL_AT_END=0 "$G" train "$W/train.ini" train.device=$DEV train.graphs=false run.dir="$W/gpu-eager" \
  > "$W/train-eager.log" 2>&1 || { tail -20 "$W/train-eager.log"; fail "train.graphs=false"; }
echo "graphs: $(grep -m1 'CUDA graphs:' "$W/train-gpu.log"); params eager $(params_of "$W/train-eager.log") graphs $(params_of "$W/train-gpu.log")"
[ "$(params_of "$W/train-eager.log")" = "$(params_of "$W/train-gpu.log")" ] \
  || fail "train.graphs=false gives other parameters than the graph run"
if [ "$DEV" = cuda ]; then
  grep -q "CUDA graphs: [1-9][0-9]* captured" "$W/train-gpu.log" || fail "the default GPU run captured no CUDA graph"
fi
python3 -c "
import json
for r in ('gpu', 'gpu-eager'):
    t = json.load(open('$W/' + r + '/timing.json'))
    print(r, 'device input stall', t.get('device_input_stall'), 'data stall', t.get('data_stall'))"
echo "e2e-train: ok"
