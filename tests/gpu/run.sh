#!/usr/bin/env bash
# The GPU verdict: one command on a machine with a GPU and the CUDA toolkit
# (no MPI, no HDF5, no OpenBLAS, no network needed). Builds the numeric core
# for sm_90 only, runs every GPU check as its own time-limited step, and
# writes $OUT/verdict.json and $OUT/verdict.md (plus the logs). Steps:
#   preflight     nvidia-smi, nvcc, cmake, PyTorch's view of the GPU; with a
#                 GPU visible every test runs with GT_TEST_REQUIRE_GPU=1, so a
#                 test that would skip FAILS instead; after the build the
#                 binary's own probe must see the GPU (gpu_test_device), and a
#                 build without CUDA fails the preflight
#   configure, build                 -DGT_PIPELINE=OFF -DGT_CUDA=ON, sm_90
#   spills        ctest gpu_register_spills: no kernel spills or uses a stack frame
#   ops-vs-cpu    every op forward/backward and the device model vs the CPU,
#                 fp32 / bf16 / fp16 / tf32 (gpu_test_ops_cuda, gpu_test_model_cuda,
#                 gpu_test_attention_tc: the bf16 tensor-core attention,
#                 gpu_test_attention_mma: the mma.sync attention (lab variant mma_bf16),
#                 gpu_test_lstm_cudnn: the LSTM on cuDNN vs the CPU and the kernels,
#                 gpu_test_conv_cudnn: the convolutions on cuDNN vs the CPU)
#   engine        tests/nn/test_engine.c: the host and the CUDA engine on the
#                 same models, within the tolerances stated there
#   graph         a captured CUDA graph step vs the eager step (gpu_test_graph_cuda)
#   nccl          dist/'s NCCL all-reduce over the visible GPUs vs the host sum
#                 (gpu_nccl_allreduce; NCCL from the toolkit or PyTorch's wheel)
#   gpu-other     attention memory vs cudaMemGetInfo, elementwise host twins
#   nn-cpu        the CPU reference tests (label nn)
#   sanitizer     compute-sanitizer memcheck of the engine test (where it works)
#   e2e-train     `gridtrain train train.device=cuda` end to end on 1 GPU, when
#                 the MPI/HDF5 runtime came along (.gpu-debs/pipeline, made by
#                 tests/gpu/fetch-debs.sh --pipeline); else SKIP with the reason
#   bench, bench-graph, peer-torch   throughput vs PyTorch (not pass/fail
#                 beyond running; ratios in the summary); bench-lstm-cudnn: the
#                 LSTM model with GT_LSTM_IMPL=cudnn and cudnn-stack, CUDA graph
#                 on (rows gridtrain-cudnn, gridtrain-cudnn-stack)
#   attn-lab      the attention kernel lab (tests/gpu/dev/attention.c): each
#                 variant (fp32 SIMT, bf16/fp16 wmma, bf16 mma.sync) on s2p_tf's shape vs
#                 the CPU and timed; FAIL only when it cannot run or a
#                 variant misses its tolerance; times and share of the bf16
#                 peak in the summary
#   lstm-lab      the LSTM lab (tests/gpu/dev/lstm.c): the kernels and cuDNN,
#                 fp32 and tf32, on the benchmark's LSTM shape vs the CPU (at
#                 a small batch) and timed; FAIL only when it cannot run or a
#                 variant misses its tolerance; ms/step, samples/s and the
#                 ratio to the kernels in the summary
#   bench-conv-cudnn  the s2p_cnn benchmark with GT_CONV_IMPL=cudnn, CUDA graph
#                 on (row gridtrain-cudnn; its ratio to PyTorch in the summary)
#   conv-lab      the conv lab (tests/gpu/dev/conv.c): s2p_cnn's conv stack on
#                 the kernels and on cuDNN, fp32 and tf32, at B=64 W=599 vs the
#                 CPU (at a small batch) and timed; FAIL only when it cannot
#                 run or a variant misses its tolerance; ms/step, samples/s and
#                 the ratio to the kernels in the summary
# A failing step is recorded and the script goes on. The whole run keeps to
# GT_VERDICT_BUDGET seconds (default 510): a step that would not fit in what
# is left is recorded as SKIP(time).
# Exit status: 0 when no step failed (skips are fine), 1 otherwise.
# Usage: tests/gpu/run.sh [BUILD_DIR]   (default build-gpu)
# Writes three files to $OUT: verdict.json, verdict.md, logs.tar.gz (the
# step logs, kept in BUILD_DIR/gpu-check-logs), and plan-calibration.json
# when the benchmarks ran (the measured MFU per kind, for `gridtrain plan
# plan.calibration=FILE`).
# Env: OUT (default BUILD_DIR/gpu-check), GT_CUDA_ARCHITECTURES (default 90),
#      GT_PYTHON (default python3), GT_BENCH_STEPS (default 10),
#      GT_VERDICT_BUDGET (seconds, default 510), GT_JOBS (build and test jobs, default nproc),
#      GT_SKIP_BENCH=1, GT_SKIP_PEER=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=$(pwd)
B="${1:-build-gpu}"
export PATH="/usr/local/cuda/bin:$PATH"
PY="${GT_PYTHON:-python3}"
STEPS="${GT_BENCH_STEPS:-10}"
BUDGET="${GT_VERDICT_BUDGET:-510}"
OUT="${OUT:-$B/gpu-check}"
LOG="$B/gpu-check-logs" # tarred into $OUT/logs.tar.gz at the end (few files come back from a device run)
rm -rf "$LOG"
mkdir -p "$LOG" "$OUT"
NPROC=${GT_JOBS:-$(nproc 2>/dev/null || echo 4)}
T0=$(date +%s)
declare -a NAMES=() RESULTS=() SECS=() NOTES=()
record() { # NAME RESULT SECONDS [NOTE]
  NAMES+=("$1"); RESULTS+=("$2"); SECS+=("${3:-0}"); NOTES+=("${4:-}")
  echo "gpu-check: [$2] $1${4:+ ($4)}"
}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# run_step NAME TIMEOUT CMD...: 0 pass, 77 skip, else fail; output to $LOG/NAME.log and the console
run_step() {
  local name="$1" t="$2"; shift 2
  local l; l=$(left)
  if [ "$l" -lt 15 ]; then record "$name" "SKIP" 0 "time: ${l}s of the budget left"; return 0; fi
  [ "$t" -gt "$l" ] && t=$l
  echo "==== $name (limit ${t}s): $*"
  local s0; s0=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$t" "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$LOG/$name.log"
  local dt=$(( $(date +%s) - s0 ))
  case $rc in
    0) record "$name" PASS "$dt" ;;
    77) local why; why=$(grep -m1 -i 'skip' "$LOG/$name.log" || tail -n 1 "$LOG/$name.log")
        record "$name" SKIP "$dt" "$(echo "$why" | cut -c1-160)" ;;
    124|137) record "$name" "FAIL" "$dt" "timeout after ${t}s" ;;
    *) record "$name" "FAIL" "$dt" "exit $rc" ;;
  esac
  return 0
}
# ctest_step NAME TIMEOUT ARGS...: one ctest selection as a step; "no tests" is a FAIL
# (the selection must exist in this build), all-skipped a SKIP
ctest_step() {
  local name="$1" t="$2"; shift 2
  run_step "$name" "$t" ctest --test-dir "$B" --output-on-failure --timeout "$t" "$@"
  local i=$(( ${#RESULTS[@]} - 1 ))
  if [ "${RESULTS[$i]}" = PASS ]; then
    if grep -q "No tests were found" "$LOG/$name.log"; then
      RESULTS[$i]=FAIL; NOTES[$i]="no such test in this build"
    elif ! grep -qE "Passed" "$LOG/$name.log" && grep -q "Skipped" "$LOG/$name.log"; then
      RESULTS[$i]=SKIP; NOTES[$i]="all selected tests skipped"
    fi
    local sum; sum=$(grep -E "tests passed" "$LOG/$name.log" | tail -1)
    local sk; sk=$(grep -c "(Skipped)" "$LOG/$name.log")
    NOTES[$i]="${NOTES[$i]:+${NOTES[$i]}; }$sum${sk:+, $sk skipped}"
    echo "gpu-check: [${RESULTS[$i]}] $name (${NOTES[$i]})"
  fi
}

# ---------------------------------------------------------------- preflight --
GPU_LINE=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
N_GPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
NVCC_VER=$(command -v nvcc >/dev/null && nvcc --version | tail -1)
CMAKE_VER=$(cmake --version 2>/dev/null | head -1)
TORCH_INFO=$("$PY" - 2>/dev/null <<'EOF'
import torch
n = ""
try:
    n = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else ""
except Exception:
    pass
print(f"torch {torch.__version__}, cuda {torch.version.cuda}, gpu {torch.cuda.is_available()}, nccl {n}")
EOF
)
echo "gpu: ${GPU_LINE:-none visible} ($N_GPU GPU(s)); ${NVCC_VER:-no nvcc}; ${CMAKE_VER:-no cmake}; ${TORCH_INFO:-no torch}"
if [ "$N_GPU" -gt 0 ]; then
  export GT_TEST_REQUIRE_GPU=1 # a GPU test that would skip fails instead
  PRE_NOTE="$N_GPU GPU(s) visible: GPU tests must run (GT_TEST_REQUIRE_GPU=1)"
else
  PRE_NOTE="no GPU visible to nvidia-smi: GPU tests skip, nothing on a GPU is verified"
fi
if [ -z "$NVCC_VER" ] || [ -z "$CMAKE_VER" ]; then
  record preflight FAIL 0 "nvcc or cmake missing"
fi

# ---- OpenBLAS: the CPU reference needs it. A GPU image without it gets the
# Debian packages carried in .gpu-debs/ (made here by tests/gpu/fetch-debs.sh;
# the device tool's carry: [".gpu-debs"]) unpacked into a private prefix.
BLAS_ARGS=()
have_cblas() { # the system's cblas.h (not `ls ... | grep`: with pipefail an unmatched pattern fails it)
  local f; for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/*/cblas.h; do [ -f "$f" ] && return 0; done
  return 1
}
if ! have_cblas; then
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

# ----------------------------------------------------------- configure + build --
s0=$(date +%s)
if cmake -S . -B "$B" -DGT_PIPELINE=OFF -DGT_CUDA=ON -DGT_CUDA_ARCHITECTURES="${GT_CUDA_ARCHITECTURES:-90}" \
     -DCMAKE_BUILD_TYPE=Release "${BLAS_ARGS[@]}" >"$LOG/configure.log" 2>&1; then
  record configure PASS $(( $(date +%s) - s0 )) "$(grep -o 'gridtrain: pipeline=.*' "$LOG/configure.log" | head -1)"
else
  tail -25 "$LOG/configure.log"
  record configure FAIL $(( $(date +%s) - s0 ))
fi
HAVE_NCCL=0; grep -q "nccl=ON" "$LOG/configure.log" 2>/dev/null && HAVE_NCCL=1
if [ -f "$B/Makefile" ] || [ -f "$B/build.ninja" ]; then
  run_step build 300 cmake --build "$B" -j "$NPROC"
else
  record build SKIP 0 "not configured"
fi

# preflight, after the build: the binary's own probe must see the GPU
if [ "$N_GPU" -gt 0 ]; then
  if ! grep -q "cuda=ON" "$LOG/configure.log" 2>/dev/null; then
    record preflight FAIL 0 "a GPU is visible but the build has no CUDA backend: GPU tests would not even be built"
  elif [ -x "$B/tests/gpu/gpu_test_device" ]; then
    if timeout 60 "$B/tests/gpu/gpu_test_device" > "$LOG/preflight.log" 2>&1; then
      record preflight PASS 0 "$PRE_NOTE; $(grep -m1 '^device 0' "$LOG/preflight.log")"
    else
      cat "$LOG/preflight.log"
      record preflight FAIL 0 "a GPU is visible but gridtrain sees none: $(grep -m1 '^probe' "$LOG/preflight.log")"
    fi
  else
    record preflight FAIL 0 "gpu_test_device was not built"
  fi
else
  record preflight SKIP 0 "$PRE_NOTE"
fi

# ----------------------------------------------------------------------- checks --
if [ -f "$B/CTestTestfile.cmake" ]; then
  ctest_step spills 120 -L gpu-build
  ctest_step ops-vs-cpu 180 -R '^gpu_test_(ops_cuda|fused_cuda|model_cuda|attention_tc|attention_mma|lstm_cudnn|conv_cudnn)$'
  ctest_step engine 120 -R '^test_nn_engine$'
  ctest_step graph 120 -R '^gpu_test_graph_cuda$'
  if [ "$HAVE_NCCL" = 1 ]; then
    ctest_step nccl 120 -R '^gpu_nccl_allreduce$'
  elif echo "$TORCH_INFO" | grep -q "nccl [0-9]"; then
    record nccl FAIL 0 "PyTorch has NCCL but CMake did not find it (cmake/cuda_libs.cmake)"
  else
    record nccl SKIP 0 "no NCCL on this machine"
  fi
  ctest_step gpu-other 180 -R '^gpu_test_(attention_memory|elementwise_host|device)$'
  ctest_step nn-cpu 240 -L nn -j "$NPROC"
else
  for s in spills ops-vs-cpu engine graph nccl gpu-other nn-cpu; do record "$s" SKIP 0 "no build"; done
fi
if [ "$N_GPU" -gt 0 ] && command -v compute-sanitizer >/dev/null && [ -x "$B/tests/nn/test_nn_engine" ]; then
  run_step sanitizer 120 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/tests/nn/test_nn_engine"
  i=$(( ${#RESULTS[@]} - 1 ))
  if [ "${RESULTS[$i]}" = FAIL ] && grep -qE "Device not supported|error 999" "$LOG/sanitizer.log"; then
    RESULTS[$i]=SKIP; NOTES[$i]="compute-sanitizer cannot use the device here (gVisor)"
  fi
else
  record sanitizer SKIP 0 "no GPU or no compute-sanitizer"
fi

# --------------------------------------------------- end to end: gridtrain train --
if [ "$N_GPU" -eq 0 ]; then
  record e2e-train SKIP 0 "no GPU visible"
elif [ -x tests/gpu/e2e_train.sh ] && ls .gpu-debs/pipeline/*.deb >/dev/null 2>&1; then
  run_step e2e-train 240 bash tests/gpu/e2e_train.sh "$B-pipeline" "$LOG/e2e"
else
  record e2e-train SKIP 0 "no MPI/HDF5 runtime carried (tests/gpu/fetch-debs.sh --pipeline, carry .gpu-debs)"
fi

# ------------------------------------------------------------------ benchmarks --
BENCH="$B/tests/gpu/gt_gpu_bench"
if [ "${GT_SKIP_BENCH:-0}" = 1 ] || [ ! -x "$BENCH" ]; then
  record bench SKIP 0 "GT_SKIP_BENCH or not built"
else
  run_step bench 120 "$BENCH" --steps "$STEPS"
  run_step bench-graph 120 "$BENCH" --steps "$STEPS" --graph
  run_step bench-lstm-cudnn 90 bash -c 'for i in cudnn cudnn-stack; do GT_LSTM_IMPL=$i "$0" --steps "$1" --graph --only lstm || exit; done' "$BENCH" "$STEPS"
  run_step bench-conv-cudnn 45 env GT_CONV_IMPL=cudnn "$BENCH" --steps "$STEPS" --graph --only s2p_cnn
fi
LAB="$B/tests/gpu/gt_gpu_attn_lab"
if [ "${GT_SKIP_BENCH:-0}" = 1 ] || [ ! -x "$LAB" ]; then
  record attn-lab SKIP 0 "GT_SKIP_BENCH or not built"
else
  run_step attn-lab 60 "$LAB" --reps 20 --warmup 3
fi
LLAB="$B/tests/gpu/gt_gpu_lstm_lab"
if [ "${GT_SKIP_BENCH:-0}" = 1 ] || [ ! -x "$LLAB" ]; then
  record lstm-lab SKIP 0 "GT_SKIP_BENCH or not built"
else
  run_step lstm-lab 60 "$LLAB" --reps 10 --warmup 2 --check-batch 2
fi
if [ "${GT_SKIP_PEER:-0}" = 1 ] || ! "$PY" -c "import torch" >/dev/null 2>&1; then
  record peer-torch SKIP 0 "GT_SKIP_PEER or no torch"
else
  run_step peer-torch 150 env PYTHONUNBUFFERED=1 "$PY" tests/gpu/peer_torch.py --steps "$STEPS"
fi
# after peer-torch: a tight budget drops the lab, not the comparison with PyTorch
CLAB="$B/tests/gpu/gt_gpu_conv_lab"
if [ "${GT_SKIP_BENCH:-0}" = 1 ] || [ ! -x "$CLAB" ]; then
  record conv-lab SKIP 0 "GT_SKIP_BENCH or not built"
else
  run_step conv-lab 45 "$CLAB" --reps 10 --warmup 2 --check-batch 2
fi

# ---- ratios gridtrain / torch (samples/s; > 1 means gridtrain is faster)
cat "$LOG"/bench*.log "$LOG"/peer-torch.log 2>/dev/null | grep '^GT_GPU_BENCH' > "$LOG/bench.txt" || true
: > "$LOG/bench-table.txt"
if [ -s "$LOG/bench.txt" ]; then
  awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      key = v["impl"] (v["graph"] == 1 ? "+graph" : "") "/" v["kind"]
      sps[key] = v["samples_per_s"]; kinds[v["kind"]] = 1
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v["impl"] (v["graph"] == 1 ? "+graph" : ""), v["kind"], v["B"], v["window"], v["ms_step"], v["samples_per_s"], v["peak_mib"], (v["mfu"] == "" ? "-" : v["mfu"])
      delete v }
    END {
      for (k in kinds) {
        t = sps["torch/" k]
        if (t > 0) {
          if (sps["gridtrain/" k] > 0) printf "ratio gridtrain/torch %s %.3f\n", k, sps["gridtrain/" k] / t
          if (sps["gridtrain+graph/" k] > 0) printf "ratio gridtrain+graph/torch %s %.3f\n", k, sps["gridtrain+graph/" k] / t
          if (sps["gridtrain-cudnn+graph/" k] > 0) printf "ratio gridtrain-cudnn+graph/torch %s %.3f\n", k, sps["gridtrain-cudnn+graph/" k] / t
          if (sps["gridtrain-cudnn-stack+graph/" k] > 0) printf "ratio gridtrain-cudnn-stack+graph/torch %s %.3f\n", k, sps["gridtrain-cudnn-stack+graph/" k] / t
        }
      }
    }' "$LOG/bench.txt" > "$LOG/bench-table.txt"
  cat "$LOG/bench-table.txt"
fi

# ---- plan's GPU rate, measured: the best gridtrain MFU per kind (share of the
# nominal dense bf16 rate) as `gridtrain plan plan.calibration=FILE` reads it
if [ -s "$LOG/bench.txt" ]; then
  awk -v gpu="${GPU_LINE//\"/}" -v commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["impl"] == "gridtrain" && v["mfu"] != "" && v["mfu"] + 0 > best[v["kind"]] + 0) best[v["kind"]] = v["mfu"]
      delete v }
    END {
      printf "{\"source\": \"tests/gpu/run.sh bench\", \"commit\": \"%s\", \"gpu\": \"%s\", \"efficiency\": {", commit, gpu
      n = 0; for (k in best) { printf "%s\"%s\": %s", (n++ ? ", " : ""), k, best[k] }
      printf "}}\n" }' "$LOG/bench.txt" > "$OUT/plan-calibration.json"
  echo "plan calibration: $(cat "$OUT/plan-calibration.json")"
fi

# ---- kernel labs: one line per variant (PREFIX key=value ...) into $LOG/NAME.txt,
# the listed keys as a Markdown table row each into $LOG/NAME-table.txt
lab_table() { # NAME LOGSTEP PREFIX KEY...
  local name="$1" step="$2" prefix="$3"; shift 3
  grep "^$prefix" "$LOG/$step.log" > "$LOG/$name.txt" 2>/dev/null || true
  : > "$LOG/$name-table.txt"
  [ -s "$LOG/$name.txt" ] || return 0
  awk -v keys="$*" '
    BEGIN { nk = split(keys, K, " ") }
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      row = "|"; for (j = 1; j <= nk; j++) row = row " " v[K[j]] " |"
      print row
      delete v }' "$LOG/$name.txt" > "$LOG/$name-table.txt"
  cat "$LOG/$name-table.txt"
}
lab_table attn attn-lab GT_ATTN_BENCH variant fwd_ms fwd_tflops fwd_peak bwd_ms bwd_tflops bwd_peak total_peak check
lab_table lstm lstm-lab GT_LSTM_BENCH variant fwd_ms bwd_ms step_ms samples_per_s ratio err_h err_grad check
lab_table conv conv-lab GT_CONV_BENCH variant fwd_ms bwd_ms step_ms samples_per_s ratio fused err_out err_grad check

# ------------------------------------------------------------- verdict files --
# json_lines KEY FILE: `],` closing the array before, then "KEY": [ the file's lines as JSON strings
json_lines() {
  local n k=0 line
  n=$(wc -l < "$LOG/$2" 2>/dev/null || echo 0)
  printf '  ],\n  "%s": [\n' "$1"
  while IFS= read -r line; do
    k=$((k + 1)); printf '    "%s"%s\n' "${line//\"/}" "$([ $k -lt "$n" ] && echo ,)"
  done < <(cat "$LOG/$2" 2>/dev/null)
}
TOTAL=$(( $(date +%s) - T0 ))
rc=0; n_fail=0; n_pass=0; n_skip=0
for i in "${!NAMES[@]}"; do
  case "${RESULTS[$i]}" in FAIL*) rc=1; n_fail=$((n_fail + 1)) ;; PASS) n_pass=$((n_pass + 1)) ;; *) n_skip=$((n_skip + 1)) ;; esac
done
if [ "$N_GPU" -eq 0 ]; then VERDICT=$([ $rc = 0 ] && echo "no-gpu" || echo "fail")
else VERDICT=$([ $rc = 0 ] && echo "pass" || echo "fail"); fi
{
  printf '{\n  "verdict": "%s",\n  "seconds": %d,\n  "budget_s": %d,\n' "$VERDICT" "$TOTAL" "$BUDGET"
  printf '  "commit": "%s",\n' "$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  printf '  "gpu": {"visible": %d, "nvidia_smi": "%s", "nvcc": "%s", "cmake": "%s", "torch": "%s", "nccl_in_build": %d},\n' \
    "$N_GPU" "${GPU_LINE//\"/}" "${NVCC_VER//\"/}" "${CMAKE_VER//\"/}" "${TORCH_INFO//\"/}" "$HAVE_NCCL"
  printf '  "counts": {"pass": %d, "fail": %d, "skip": %d},\n  "steps": [\n' "$n_pass" "$n_fail" "$n_skip"
  for i in "${!NAMES[@]}"; do
    note=${NOTES[$i]//\\/\\\\}; note=${note//\"/\\\"}
    printf '    {"name": "%s", "result": "%s", "seconds": %s, "note": "%s", "log": "logs.tar.gz:%s.log"}%s\n' \
      "${NAMES[$i]}" "${RESULTS[$i]}" "${SECS[$i]}" "$note" "${NAMES[$i]}" "$([ "$i" -lt $(( ${#NAMES[@]} - 1 )) ] && echo ,)"
  done
  json_lines bench bench.txt
  json_lines attention attn.txt
  json_lines lstm lstm.txt
  json_lines conv conv.txt
  printf '  ]\n}\n'
} > "$OUT/verdict.json"
{
  echo "# GPU verdict: **$VERDICT**"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, ${TOTAL} s of a ${BUDGET} s budget."
  echo
  echo "* GPU: ${GPU_LINE:-none visible} ($N_GPU visible)"
  echo "* ${NVCC_VER:-no nvcc}; ${CMAKE_VER:-no cmake}; ${TORCH_INFO:-no torch}; NCCL in the build: $HAVE_NCCL"
  echo
  echo "| step | result | s | note |"
  echo "|---|---|---|---|"
  for i in "${!NAMES[@]}"; do echo "| ${NAMES[$i]} | ${RESULTS[$i]} | ${SECS[$i]} | ${NOTES[$i]//|/\\|} |"; done
  if [ -s "$LOG/bench-table.txt" ]; then
    echo
    echo "Throughput (median ms/step; samples/s; peak MiB; MFU vs 989 TFLOP/s bf16):"
    echo
    echo "| impl | kind | B | window | ms/step | samples/s | peak MiB | MFU |"
    echo "|---|---|---|---|---|---|---|---|"
    grep '^|' "$LOG/bench-table.txt"
    echo
    grep '^ratio' "$LOG/bench-table.txt" | sed 's/^/* /'
  fi
  if [ -s "$LOG/attn-table.txt" ]; then
    echo
    echo "Attention kernels (tests/gpu/dev/attention.c; $(head -1 "$LOG/attn.txt" | grep -o 'B=[0-9]* L=[0-9]* C=[0-9]* NH=[0-9]* hs=[0-9]*');"
    echo "median ms per call; TFLOP/s and share of 989 TFLOP/s bf16 with FLOPs 4 B NH L^2 hs forward, 2.5x that backward):"
    echo
    echo "| variant | fwd ms | fwd TFLOP/s | fwd peak | bwd ms | bwd TFLOP/s | bwd peak | fwd+bwd peak | check |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$LOG/attn-table.txt"
  fi
  if [ -s "$LOG/lstm-table.txt" ]; then
    echo
    echo "LSTM layer stack (tests/gpu/dev/lstm.c; $(head -1 "$LOG/lstm.txt" | grep -o 'B=[0-9]* T=[0-9]* C=[0-9]* H=[0-9]* layers=[0-9]* K=[0-9]*');"
    echo "median ms of the stack's forward and backward, head excluded; ratio = samples/s over kernels_fp32's):"
    echo
    echo "| variant | fwd ms | bwd ms | step ms | samples/s | ratio | err h | err grad | check |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$LOG/lstm-table.txt"
  fi
  if [ -s "$LOG/conv-table.txt" ]; then
    echo
    echo "s2p_cnn conv stack (tests/gpu/dev/conv.c; $(head -1 "$LOG/conv.txt" | grep -o 'B=[0-9]* W=[0-9]*');"
    echo "median ms of the five conv layers' forward and backward, dense layers excluded; ratio = samples/s over kernels_fp32's):"
    echo
    echo "| variant | fwd ms | bwd ms | step ms | samples/s | ratio | fused | err out | err grad | check |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    cat "$LOG/conv-table.txt"
  fi
  echo
  echo "Logs: \`STEP.log\` in \`logs.tar.gz\` beside this file."
} > "$OUT/verdict.md"
tar czf "$OUT/logs.tar.gz" -C "$LOG" . 2>/dev/null
echo "==== gpu-check: $VERDICT ($n_pass pass, $n_fail fail, $n_skip skip; ${TOTAL} s); $OUT/verdict.json, $OUT/verdict.md"
exit $rc
