#!/usr/bin/env bash
# One-command GPU check: on a machine with a GPU and the CUDA toolkit (no MPI,
# no HDF5, no network), build the numeric core with the CUDA backend, run the
# GPU tests and the nn (CPU reference) tests, then the benchmark gt_gpu_bench
# (eager and CUDA-graph) and its PyTorch peer, and print the ratios and a
# summary. Every step is time-limited; a failing step is reported and the
# script goes on. Exit status: 0 when no step failed (skips are fine).
# Usage: tests/gpu/run.sh [BUILD_DIR]   (default build-gpu)
# Env: GT_CUDA_ARCHITECTURES (default 90), GT_PYTHON (default python3),
#      GT_BENCH_STEPS (default 10), GT_SKIP_BENCH=1, GT_SKIP_PEER=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
B="${1:-build-gpu}"
export PATH="/usr/local/cuda/bin:$PATH"
PY="${GT_PYTHON:-python3}"
STEPS="${GT_BENCH_STEPS:-10}"
LOG="$B/gpu-check"
mkdir -p "$LOG"
declare -a NAMES=() RESULTS=()
record() { NAMES+=("$1"); RESULTS+=("$2"); echo "gpu-check: [$2] $1"; }
# run_step NAME TIMEOUT CMD...: 0 pass, 77 skip, else fail; output to $LOG/NAME.log and the console
run_step() {
  local name="$1" t="$2"; shift 2
  echo "==== $name: $*"
  timeout --signal=TERM --kill-after=10 "$t" "$@" 2>&1 | tee "$LOG/$name.log"
  local rc=${PIPESTATUS[0]}
  case $rc in
    0) record "$name" PASS ;;
    77) record "$name" SKIP ;;
    124|137) record "$name" "FAIL(timeout ${t}s)" ;;
    *) record "$name" "FAIL(rc $rc)" ;;
  esac
  return 0
}

T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU visible"
command -v nvcc >/dev/null && nvcc --version | tail -1

# ---- OpenBLAS: the CPU reference needs it. A GPU image without it gets the
# Debian packages carried in .gpu-debs/ (made here by tests/gpu/fetch-debs.sh;
# the device tool's carry: [".gpu-debs"]) unpacked into a private prefix.
BLAS_ARGS=()
if ! ls /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/*/cblas.h >/dev/null 2>&1; then
  if ls .gpu-debs/*.deb >/dev/null 2>&1; then
    P=/tmp/gt-debs
    for d in .gpu-debs/*.deb; do dpkg-deb -x "$d" "$P" 2>/dev/null || dpkg -x "$d" "$P"; done
    inc=$(dirname "$(find "$P" -name cblas.h | head -1)")
    lib=$(find "$P" -name 'libopenblas*.so*' | grep -v '\.so\.0$' | head -1)
    [ -n "$lib" ] || lib=$(find "$P" -name 'libopenblas*.so*' | head -1)
    libdir=$(dirname "$lib")
    export LD_LIBRARY_PATH="$libdir:$(find "$P" -name 'libgfortran*.so*' -printf '%h\n' | head -1):${LD_LIBRARY_PATH:-}"
    BLAS_ARGS=(-DCBLAS_INCLUDE_DIR="$inc" -DBLAS_LIBRARIES="$lib" -DBLA_VENDOR=OpenBLAS)
    echo "gpu-check: OpenBLAS from carried packages: $lib"
  else
    echo "gpu-check: no cblas.h and no .gpu-debs/: run tests/gpu/fetch-debs.sh on the dev machine and carry .gpu-debs"
  fi
fi

# ---- configure + build
if cmake -S . -B "$B" -DGT_PIPELINE=OFF -DGT_CUDA=ON -DGT_CUDA_ARCHITECTURES="${GT_CUDA_ARCHITECTURES:-90}" \
     -DCMAKE_BUILD_TYPE=Release "${BLAS_ARGS[@]}" >"$LOG/configure.log" 2>&1; then
  record configure PASS
else
  tail -25 "$LOG/configure.log"
  record configure FAIL
fi
if [ -f "$B/Makefile" ] || [ -f "$B/build.ninja" ]; then
  run_step build 420 cmake --build "$B" -j "$(nproc)"
else
  record build SKIP
fi

# ---- tests
if [ -f "$B/CTestTestfile.cmake" ]; then
  run_step ctest-gpu 300 ctest --test-dir "$B" -L gpu --output-on-failure --timeout 240
  # ctest exits 0 when tests are skipped: say how many (a GPU machine should skip none)
  grep -E "tests passed|Skipped|Not Run" "$LOG/ctest-gpu.log" | head -10
  if grep -q "(Skipped)" "$LOG/ctest-gpu.log"; then record "ctest-gpu: some GPU tests skipped" SKIP; fi
  run_step ctest-nn 300 ctest --test-dir "$B" -L nn --output-on-failure -j 8 --timeout 240
else
  record ctest-gpu SKIP; record ctest-nn SKIP
fi

# ---- benchmarks
BENCH="$B/tests/gpu/gt_gpu_bench"
if [ "${GT_SKIP_BENCH:-0}" = 1 ] || [ ! -x "$BENCH" ]; then
  record gt_gpu_bench SKIP
else
  run_step gt_gpu_bench 240 "$BENCH" --steps "$STEPS"
  run_step gt_gpu_bench-graph 240 "$BENCH" --steps "$STEPS" --graph
fi
if [ "${GT_SKIP_PEER:-0}" = 1 ] || ! "$PY" -c "import torch" >/dev/null 2>&1; then
  record peer_torch SKIP
else
  run_step peer_torch 300 env PYTHONUNBUFFERED=1 "$PY" tests/gpu/peer_torch.py --steps "$STEPS"
fi

# ---- ratios gridtrain / torch (samples/s; > 1 means gridtrain is faster)
cat "$LOG"/gt_gpu_bench*.log "$LOG"/peer_torch.log 2>/dev/null | grep '^GT_GPU_BENCH' > "$LOG/bench.txt" || true
if [ -s "$LOG/bench.txt" ]; then
  echo "==== benchmark (median ms/step; samples/s; peak MiB; MFU vs 989 TFLOP/s bf16)"
  awk '
    { d = ""; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      key = v["impl"] (v["graph"] == 1 ? "+graph" : "") "/" v["kind"]
      sps[key] = v["samples_per_s"]; kinds[v["kind"]] = 1
      printf "  %-22s %-8s B=%-4s win=%-5s %9s ms %10s samples/s %9s MiB  mfu %s\n", v["impl"] (v["graph"] == 1 ? "+graph" : ""), v["kind"], v["B"], v["window"], v["ms_step"], v["samples_per_s"], v["peak_mib"], (v["mfu"] == "" ? "-" : v["mfu"])
      delete v }
    END {
      for (k in kinds) {
        t = sps["torch/" k]
        if (t > 0) {
          if (sps["gridtrain/" k] > 0) printf "  ratio gridtrain/torch %-8s %.3f\n", k, sps["gridtrain/" k] / t
          if (sps["gridtrain+graph/" k] > 0) printf "  ratio gridtrain+graph/torch %-8s %.3f\n", k, sps["gridtrain+graph/" k] / t
        }
      }
    }' "$LOG/bench.txt"
fi

# ---- summary
echo "==== gpu-check summary ($(( $(date +%s) - T0 )) s; logs in $LOG)"
rc=0
for i in "${!NAMES[@]}"; do
  printf "  %-40s %s\n" "${NAMES[$i]}" "${RESULTS[$i]}"
  case "${RESULTS[$i]}" in FAIL*) rc=1 ;; esac
done
echo "gpu-check: exit $rc"
exit $rc
