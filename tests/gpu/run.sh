#!/usr/bin/env bash
# One-command GPU check: on a machine with a GPU and the CUDA toolkit (no MPI,
# no HDF5, no package registry needed), build the numeric core with the CUDA
# backend and run every GPU test, then the GPU benchmarks. Prints a summary.
# Usage: tests/gpu/run.sh [BUILD_DIR]   (default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
B="${1:-build-gpu}"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU visible"
cmake -S . -B "$B" -DGT_PIPELINE=OFF -DGT_CUDA=ON -DGT_CUDA_ARCHITECTURES="${GT_CUDA_ARCHITECTURES:-90}" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null || { echo "gpu-check: configure failed"; exit 1; }
cmake --build "$B" -j "$(nproc)" 2>&1 | tail -20
[ "${PIPESTATUS[0]}" = 0 ] || { echo "gpu-check: build failed"; exit 1; }
ctest --test-dir "$B" -L "gpu" --output-on-failure
rc=$?
# The CPU reference tests too: the GPU machine's CPU must agree with ours.
ctest --test-dir "$B" -L nn --output-on-failure -j 8 || rc=1
if [ -x "$B/tests/gpu/gt_gpu_bench" ]; then "$B/tests/gpu/gt_gpu_bench" || rc=1; fi
echo "gpu-check: exit $rc"
exit $rc
