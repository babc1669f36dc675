#!/usr/bin/env bash
# tests/gpu/relocation_dryrun.sh BUILD_DIR: the relocation tests/gpu/e2e_train.sh
# relies on, run for real on the development machine (no GPU). The carried
# packages (.gpu-debs/pipeline, tests/gpu/fetch-debs.sh --pipeline) are
# unpacked into BUILD_DIR/deps-prefix, gridtrain (pipeline, CPU) is built
# against them (-DGT_DEPS_PREFIX), then, in a mount namespace where the
# system's Open MPI, PMIx, HDF5, inih, cJSON, xxHash and their plugins are
# hidden (an empty tmpfs over their directories, /dev/null over their
# libraries and programs), with the prefix's environment
# (tests/gpu/prefix_env.sh): ldd resolves every library of gridtrain, MPI's
# and HDF5's from the prefix; `gridtrain synth` writes a NILM file (MPI_Init,
# parallel HDF5); a 20-step `gridtrain train` on the CPU exits 0 with a
# finite loss; and the same under the prefix's `mpirun -n 1`. Skips (77)
# without .gpu-debs/pipeline or without a mount namespace (unshare -m, root).
set -uo pipefail
cd "$(dirname "$0")/../.."
BP=${1:?build dir}
ls .gpu-debs/pipeline/*.deb >/dev/null 2>&1 || { echo "skipped: no .gpu-debs/pipeline (tests/gpu/fetch-debs.sh --pipeline)"; exit 77; }
unshare -m true 2>/dev/null || { echo "skipped: no mount namespace here (unshare -m needs root)"; exit 77; }
fail() { echo "relocation dry run: FAIL: $*" >&2; exit 1; }
mkdir -p "$BP"
P=$(cd "$BP" && pwd)/deps-prefix
W=$(mktemp -d /tmp/gt-reloc.XXXXXX)
trap 'rm -rf "$W"' EXIT
rm -rf "$P"; mkdir -p "$P"
for d in .gpu-debs/pipeline/*.deb; do dpkg-deb -x "$d" "$P" || fail "dpkg-deb -x $d"; done
cmake -S . -B "$BP" -DGT_PIPELINE=ON -DGT_CUDA=OFF -DGT_DEPS_PREFIX="$P" -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Release > "$W/configure.log" 2>&1 || { tail -20 "$W/configure.log"; fail "configure against $P"; }
cmake --build "$BP" --target gridtrain -j "${GT_JOBS:-2}" > "$W/build.log" 2>&1 || { tail -30 "$W/build.log"; fail "build"; }
G=$(cd "$BP" && pwd)/gridtrain
cat > "$W/train.ini" <<INI
[data]
file = $W/nilm.h5
window = 99
stride = 8
[model]
kind = s2p_cnn
conv_scale = 0.5
hidden = 64
[train]
batch = 32
epochs = 0
max_steps = 20
log_every = 5
eval_every = 20
seed = 3
[run]
checkpoint_every = 20
checkpoint_minutes = 0
INI
# the run inside the namespace: hide the system's copies, then the checks
cat > "$W/inside.sh" <<'SH'
set -uo pipefail
P=$1 G=$2 W=$3
fail() { echo "relocation dry run: FAIL: $*" >&2; exit 1; }
U=/usr/lib/x86_64-linux-gnu
for d in $U/openmpi $U/pmix2 $U/hdf5 /usr/share/openmpi /etc/openmpi; do [ -d "$d" ] && mount -t tmpfs none "$d"; done
for f in $U/libmpi*.so* $U/libopen-*.so* $U/libpmix*.so* $U/libhdf5*.so* $U/libinih*.so* $U/libcjson*.so* \
         $U/libxxhash*.so* $U/libmca_common*.so* /usr/bin/mpirun* /usr/bin/mpiexec* /usr/bin/orte* /usr/bin/orted; do
  [ -e "$f" ] && mount --bind /dev/null "$f"
done
[ -s $U/libmpi.so.40 ] && fail "the system's libmpi.so.40 is still visible"
. tests/gpu/prefix_env.sh
gt_prefix_env "$P"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=2 GT_LOG_LEVEL=info GT_EVAL_AT_END=0
ldd "$G" > "$W/ldd.log" 2>&1 || fail "ldd $G"
grep "not found" "$W/ldd.log" && fail "unresolved libraries (above)"
for l in libmpi.so.40 libhdf5_openmpi.so.103 libinih.so.1 libcjson.so.1 libxxhash.so.0; do
  grep -q "$l => $P/" "$W/ldd.log" || { cat "$W/ldd.log"; fail "$l not from the prefix"; }
done
echo "ldd: every library resolved; MPI, HDF5, inih, cJSON, xxHash from $P"
"$G" synth nilm -o "$W/nilm.h5" --households 3 --days 1 --period 6 --lowres-period 0 --spike-rate 0 \
  --gap-rate 0 --stuck-rate 0 --seed 7 > "$W/synth.log" 2>&1 || { tail -30 "$W/synth.log"; fail "gridtrain synth"; }
"$G" train "$W/train.ini" train.device=cpu run.dir="$W/run" > "$W/train.log" 2>&1 || { tail -30 "$W/train.log"; fail "gridtrain train"; }
python3 -c "
import json, math
rows = [json.loads(l) for l in open('$W/run/metrics.jsonl')]
loss = [r['loss'] for r in rows if r.get('type') == 'train']
assert loss and all(math.isfinite(v) for v in loss), loss
print('train: %d rows, loss %.4g -> %.4g' % (len(loss), loss[0], loss[-1]))" || fail "metrics.jsonl of the 20-step run"
command -v mpirun.openmpi > /dev/null || fail "no mpirun.openmpi in the prefix"
[ "$(command -v mpirun.openmpi)" = "$P/usr/bin/mpirun.openmpi" ] || fail "mpirun.openmpi is not the prefix's"
timeout 120 mpirun.openmpi -n 1 "$G" train "$W/train.ini" train.device=cpu train.max_steps=5 run.dir="$W/run-mpirun" \
  > "$W/mpirun.log" 2>&1 || { tail -30 "$W/mpirun.log"; fail "mpirun -n 1 gridtrain train"; }
echo "mpirun -n 1 from the prefix: ok"
SH
unshare -m bash "$W/inside.sh" "$P" "$G" "$W" || fail "inside the namespace (above)"
echo "relocation dry run: ok"
