#!/usr/bin/env bash
# The GPU verdict: one command on a machine with a GPU and the CUDA toolkit
# (no MPI, HDF5, OpenBLAS or network needed: they come in .gpu-debs, made by
# tests/gpu/fetch-debs.sh). One configure, one build tree, every GPU check as
# its own time-limited step, ordered by value so that a cut run loses the
# least useful steps:
#   preflight    nvidia-smi (20 s limit), nvcc, cmake, make or ninja
#                (CMAKE_GENERATOR=Ninja when make is absent), PyTorch's view
#                of the GPU (60 s limit); with a GPU visible every test runs
#                with GT_TEST_REQUIRE_GPU=1, so a GPU test that would skip FAILS
#   configure    sm_90 (GT_CUDA_ARCHITECTURES), Release; -DGT_PIPELINE=ON
#                against the carried MPI/HDF5 (.gpu-debs/pipeline) when there,
#                else (or when that configure fails: e2e-train then FAILS with
#                the log) -DGT_PIPELINE=OFF; a GPU visible and no CUDA backend
#                in the build is a FAIL
#   build        the target gt_gpu_verdict (tests/gpu/CMakeLists.txt): every
#                GPU test, the CUDA engine test, the benchmark and the labs
#   ops-vs-cpu   gridtrain's own device probe (gpu_test_device), every op
#                forward/backward and the device model vs the CPU, fp32 / bf16
#                / fp16 / tf32, the tensor-core and mma.sync attention, the
#                LSTM and the convolutions on cuDNN, the elementwise host twins
#   engine       tests/nn/test_engine.c: the host and the CUDA engine
#   graph        captured CUDA graph steps vs eager, bit for bit, no memory
#                node in a captured step; a failing capture falls back to eager
#   memory       attention memory vs cudaMemGetInfo
#   nccl         dist/'s NCCL all-reduce over the visible GPUs vs the host sum
#   bench        gt_gpu_bench eager and with CUDA graphs (samples/s, MFU)
#   peer-torch   the same models in PyTorch (tests/gpu/peer_torch.py)
#   bench-lstm-cudnn, bench-conv-cudnn   the cuDNN LSTM / conv rows
#   attn-lab, lstm-lab, conv-lab         the kernel labs (tests/gpu/dev)
#   e2e-train    tests/gpu/e2e_train.sh on the gridtrain of the same tree
#   sanitizer    compute-sanitizer memcheck of the engine test (first cut)
# CPU-only checks (the spill check, the nn tests) are CI's, not run here.
# REQUIRED: preflight configure build ops-vs-cpu engine graph memory bench.
# Verdict: fail when a step failed (a REQUIRED step that skips beside a
# visible GPU is a FAIL); pass when every REQUIRED step passed; pass-partial
# when one was cut for time; no-gpu without a GPU. verdict.md names every
# claim this machine could not test (multi-GPU NCCL and the overlapped
# gradient exchange on a 1-GPU machine, the other architectures, ...).
#
# Budget: GT_VERDICT_BUDGET seconds (default 540: the device tool's 600 s
# command limit less a minute of margin). A step starts only with
# STEP_MIN_S (15) s left, its limit is clamped to what is left, and a step
# killed at a clamped limit is SKIP(time), not FAIL.
# Cold-run estimate (16 cores, nothing cached), from the build's size: the
# gt_gpu_verdict target of an sm_90 tree is 79 build edges: 11 .cu files
# (4.6k lines) and ~50 C files of gt_core/gt_nn/gt_nn_cuda, ~20 test and
# tool executables. Measured on the development machine (2 shared cores,
# load ~10, CUDA 13.0, ninja -j2, no ccache): 64 CPU-s (user + sys, every
# child of the build counted) for the whole target; the largest file,
# attention_tc.cu, took 74 s of wall time there at a ~15 % CPU share, so
# ~12 CPU-s. On 16 idle cores the build is bound by that file plus the links:
# ~30 s; counted as 60 s. The e2e-train step's gridtrain adds the pipeline's
# C files (~100, a few CPU-s each): ~10 s. Run times (H200; the CPU
# references on 16 cores), estimated from the tests' sizes: preflight ~10 s
# (the torch import), configure ~20 s (CUDA, cuDNN, NCCL probes; 12 s here),
# build ~60 s, ops-vs-cpu ~40 s (4 at a time), engine ~20 s, graph ~10 s,
# memory ~10 s, nccl ~5 s, bench ~40 s (eager + graph, 10 steps per kind),
# peer-torch ~60 s (torch import, cuDNN autotune), the cuDNN rows ~30 s, the
# labs ~60 s, e2e-train ~90 s (the build above, 8 short trainings): ~455 s,
# so everything but the sanitizer fits the 540 s budget with ~85 s to spare;
# the sanitizer gets what is left (its limit clamped: SKIP(time) when it
# does not finish). A slower machine loses the steps from the end: first the
# sanitizer, then e2e-train, then the labs.
#
# Usage: tests/gpu/run.sh [BUILD_DIR]   (default build-gpu)
# Writes to $OUT (at most 8 files come back from a device run): verdict.json
# (rewritten after every step: "incomplete" until the end), verdict.md,
# steps.log (every step's output, in order, each after a "==== STEP" line),
# plan-calibration.json (when the benchmarks ran: the measured MFU per kind,
# for `gridtrain plan plan.calibration=FILE`).
# Env: OUT (default BUILD_DIR/gpu-check), GT_COMMIT (the commit of the tree:
#      git may be absent on the copy), GT_CUDA_ARCHITECTURES (default 90),
#      GT_PYTHON (default python3), GT_BENCH_STEPS (default 10),
#      GT_VERDICT_BUDGET (default 540), GT_JOBS (default nproc),
#      GT_STEPS (only these steps, besides preflight and configure, e.g.
#      "e2e-train"; REQUIRED shrinks to the selection), GT_SKIP_BENCH=1,
#      GT_SKIP_PEER=1, GT_GPU_FAKE_STEPS (CI: a directory of fake steps,
#      NAME.sh replacing each step's command (absent: the step passes), bin/
#      first on PATH for the probes, preconditions on built files taken as met;
#      tests/gpu/test_run_fake.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
B="${1:-build-gpu}"
OUT="${OUT:-$B/gpu-check}"
FAKE="${GT_GPU_FAKE_STEPS:-}"
mkdir -p "$OUT"
rm -f "$OUT/verdict.json" "$OUT/verdict.md" "$OUT/steps.log" "$OUT/plan-calibration.json"
: > "$OUT/steps.log"
STEP_TMP=$(mktemp -d /tmp/gt-verdict.XXXXXX)
T0=$(date +%s)
BUDGET="${GT_VERDICT_BUDGET:-540}"
N_GPU=0
ALL_REQUIRED="preflight configure build ops-vs-cpu engine graph memory bench"
# want STEP: the step is selected (GT_STEPS; preflight and configure always are)
want() {
  [ -z "${GT_STEPS:-}" ] && return 0
  case " preflight configure ${GT_STEPS} " in *" $1 "*) return 0 ;; esac; return 1
}
REQUIRED=""
for s in $ALL_REQUIRED; do want "$s" && REQUIRED="$REQUIRED $s"; done
REQUIRED="${REQUIRED# }"
. tests/gpu/steps.sh
GT_COMMIT="${GT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
ARCH="${GT_CUDA_ARCHITECTURES:-90}"
PY="${GT_PYTHON:-python3}"
STEPS="${GT_BENCH_STEPS:-10}"
NPROC=${GT_JOBS:-$(nproc 2>/dev/null || echo 4)}
trap 'write_verdict incomplete; exit 143' TERM INT

command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
[ -n "$FAKE" ] && [ -d "$FAKE/bin" ] && export PATH="$FAKE/bin:$PATH"
# have PATH: a file the step needs exists (fake mode: always)
have() { [ -n "$FAKE" ] || [ -e "$1" ]; }
# step NAME LIMIT CMD...: run_step, or the fake step in fake mode
step() {
  local name="$1" t="$2"; shift 2
  if [ -n "$FAKE" ]; then
    if [ -f "$FAKE/$name.sh" ]; then run_step "$name" "$t" bash "$FAKE/$name.sh"; else run_step "$name" "$t" true; fi
  else
    run_step "$name" "$t" "$@"
  fi
}
# blocked NAME: records NAME as not run when this run's build did not pass
# (SKIP(time) when the build was cut for time); 1 when the build passed or
# was not part of the run (GT_STEPS)
blocked() {
  want build || return 1
  local br; br=$(result_of build)
  [ "$br" = PASS ] && return 1
  record "$1" "$([ "$br" = "SKIP(time)" ] && echo "SKIP(time)" || echo SKIP)" 0 "the build is ${br:-missing}"
}
# ctest_step NAME LIMIT ARGS...: one ctest selection; "no tests" is a FAIL
# (the selection must exist in this build), all skipped a SKIP
ctest_step() {
  local name="$1" t="$2"; shift 2
  blocked "$name" && return
  if ! have "$B/CTestTestfile.cmake"; then record "$name" SKIP 0 "no build"; return; fi
  step "$name" "$t" ctest --test-dir "$B" --output-on-failure --timeout "$t" "$@"
  [ "$(result_of "$name")" = PASS ] || return 0
  local sum sk; sum=$(grep -E "tests passed" "$STEP_LOG" | tail -1); sk=$(grep -c "(Skipped)" "$STEP_LOG")
  if grep -q "No tests were found" "$STEP_LOG"; then amend_last FAIL "no such test in this build"
  elif ! grep -qE "Passed" "$STEP_LOG" && [ "$sk" -gt 0 ]; then amend_last SKIP "all selected tests skipped"
  else amend_last PASS "$sum$([ "$sk" -gt 0 ] && echo ", $sk skipped")"; fi
}

# ---------------------------------------------------------------- preflight --
PT=${GT_PROBE_TIMEOUT:-20}
PRE_FAIL=""
SMI=$(timeout -k 2 "$PT" nvidia-smi -L 2>&1); smi_rc=$?
case $smi_rc in
  0) N_GPU=$(grep -c '^GPU ' <<< "$SMI")
     GPU_LINE=$(timeout -k 2 "$PT" nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1) ;;
  124|137) GPU_LINE="nvidia-smi timed out after ${PT}s" ;;
  127) GPU_LINE="no nvidia-smi" ;;
  *) GPU_LINE="nvidia-smi: exit $smi_rc: $(head -1 <<< "$SMI")" ;;
esac
TORCH_INFO=$(timeout -k 2 "${GT_TORCH_PROBE_TIMEOUT:-60}" "$PY" - 2>/dev/null <<'EOF'
import torch
n = ""
g = torch.cuda.device_count() if torch.cuda.is_available() else 0
try:
    n = ".".join(map(str, torch.cuda.nccl.version())) if g else ""
except Exception:
    pass
print(f"torch {torch.__version__}, cuda {torch.version.cuda}, gpus {g}, nccl {n}")
EOF
); torch_rc=$?
case $torch_rc in 0) ;; 124|137) TORCH_INFO="torch probe timed out" ;; *) TORCH_INFO="no torch (exit $torch_rc)" ;; esac
TORCH_GPUS=$(sed -n 's/.*gpus \([0-9]*\).*/\1/p' <<< "$TORCH_INFO"); TORCH_GPUS=${TORCH_GPUS:-0}
[ "$TORCH_GPUS" -gt "$N_GPU" ] && N_GPU=$TORCH_GPUS # visible to either counts
NVCC_VER=$(command -v nvcc >/dev/null 2>&1 && timeout -k 2 "$PT" nvcc --version 2>/dev/null | tail -1)
CMAKE_VER=$(timeout -k 2 "$PT" cmake --version 2>/dev/null | head -1)
[ -n "$NVCC_VER" ] || PRE_FAIL="no nvcc"
[ -n "$CMAKE_VER" ] || PRE_FAIL="${PRE_FAIL:+$PRE_FAIL; }no cmake"
if GEN=$(pick_generator); then
  [ -n "$GEN" ] && export CMAKE_GENERATOR="$GEN"
else
  PRE_FAIL="${PRE_FAIL:+$PRE_FAIL; }neither make nor ninja"
fi
# OpenBLAS (the CPU reference) and the pipeline's MPI/HDF5: carried Debian
# packages unpacked into private prefixes (dpkg-deb -x, never into /)
BLAS_ARGS=()
have_cblas() { local f; for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/*/cblas.h; do [ -f "$f" ] && return 0; done; return 1; }
unpack() { # DEST DEB...
  local dest="$1" d; shift; mkdir -p "$dest"
  for d in "$@"; do [ -f "$d" ] && { dpkg-deb -x "$d" "$dest" 2>/dev/null || dpkg -x "$d" "$dest"; }; done
}
P0=/tmp/gt-debs
if [ -z "$FAKE" ] && ! have_cblas && ls .gpu-debs/*.deb >/dev/null 2>&1; then
  unpack "$P0" .gpu-debs/*.deb
  inc=$(dirname "$(find "$P0" -name cblas.h | head -1)")
  lib=$(find "$P0" -name 'libopenblas*.so*' | grep -v '\.so\.0$' | head -1)
  [ -n "$lib" ] || lib=$(find "$P0" -name 'libopenblas*.so*' | head -1)
  export LD_LIBRARY_PATH="$(dirname "$lib"):$(find "$P0" -name 'libgfortran*.so*' -printf '%h\n' | head -1):${LD_LIBRARY_PATH:-}"
  BLAS_ARGS=(-DCBLAS_INCLUDE_DIR="$inc" -DBLAS_LIBRARIES="$lib" -DBLA_VENDOR=OpenBLAS)
fi
PIPE_P=""
if [ -z "$FAKE" ] && ls .gpu-debs/pipeline/*.deb >/dev/null 2>&1 && want e2e-train; then
  PIPE_P=/tmp/gt-pipeline; rm -rf "$PIPE_P"
  unpack "$PIPE_P" .gpu-debs/pipeline/*.deb .gpu-debs/*.deb
fi
PRE_NOTE="gpu: ${GPU_LINE:-none} ($N_GPU visible); ${NVCC_VER:-no nvcc}; ${CMAKE_VER:-no cmake}; generator ${GEN:-default}; ${TORCH_INFO}"
if [ "$N_GPU" -gt 0 ]; then export GT_TEST_REQUIRE_GPU=1; fi
if [ -n "$PRE_FAIL" ]; then record preflight FAIL 0 "$PRE_FAIL; $PRE_NOTE"
elif [ "$N_GPU" -eq 0 ]; then record preflight SKIP 0 "no GPU visible: nothing on a GPU is verified; $PRE_NOTE"
else record preflight PASS 0 "$PRE_NOTE"; fi

# ---------------------------------------------------------------- configure --
# configure_tree: the pipeline against the carried packages when there, else
# (or when that fails) the numeric core; the last line says which
configure_tree() {
  # GT_TORCH_PYTHON: test_torch_parity runs the image's torch interpreter, not /usr/bin/python3
  local common=(-S . -B "$B" -DGT_CUDA=ON -DGT_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_BUILD_TYPE=Release
                -DGT_TORCH_PYTHON="$(command -v "$PY" || echo "$PY")" "${BLAS_ARGS[@]}")
  if [ -n "$PIPE_P" ]; then
    cmake "${common[@]}" -DGT_PIPELINE=ON -DGT_DEPS_PREFIX="$PIPE_P" && { echo "gt-configure: pipeline"; return 0; }
    echo "gt-configure: the pipeline against $PIPE_P failed (above); configuring the numeric core"
    rm -rf "$B/CMakeCache.txt" "$B/CMakeFiles"
  fi
  cmake "${common[@]}" -DGT_PIPELINE=OFF -UGT_DEPS_PREFIX && echo "gt-configure: core"
}
export -f configure_tree
export B ARCH PIPE_P
export BLAS_ARGS_STR="${BLAS_ARGS[*]}"
step configure 120 bash -c 'BLAS_ARGS=($BLAS_ARGS_STR); configure_tree'
HAVE_NCCL=0; PIPELINE=0
grep -q "nccl=ON" "$STEP_LOG" && HAVE_NCCL=1
grep -q "^gt-configure: pipeline" "$STEP_LOG" && PIPELINE=1
if [ "$(result_of configure)" = PASS ]; then
  cfg=$(grep -o 'gridtrain: pipeline=.*' "$STEP_LOG" | head -1)
  if [ "$N_GPU" -gt 0 ] && ! grep -q "cuda=ON" "$STEP_LOG"; then
    amend_last FAIL "a GPU is visible but the build has no CUDA backend: ${cfg:-no configuration line}"
  else
    amend_last PASS "$cfg$(grep -q 'pipeline against .* failed' "$STEP_LOG" && echo '; the pipeline configure failed: core only')"
  fi
fi
CONFIGURED=0; have "$B/CMakeCache.txt" && [ "$(result_of configure)" = PASS ] && CONFIGURED=1

# -------------------------------------------------------------------- build --
if want build; then
  if [ $CONFIGURED = 1 ]; then step build 330 cmake --build "$B" --target gt_gpu_verdict -j "$NPROC"
  else record build SKIP 0 "not configured"; fi
fi

# ------------------------------------------------- correctness, then speed --
T="$B/tests/gpu"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-4}
want ops-vs-cpu && ctest_step ops-vs-cpu 180 -j 4 \
  -R '^gpu_test_(device|ops_cuda|fused_cuda|model_cuda|attention_tc|attention_mma|lstm_cudnn|conv_cudnn|elementwise_host)$'
want engine && ctest_step engine 120 -R '^test_nn_engine$'
want graph && ctest_step graph 90 -R '^gpu_test_graph_'
want memory && ctest_step memory 90 -R '^gpu_test_attention_memory$'
if want nccl; then
  if [ "$HAVE_NCCL" = 1 ] || [ -n "$FAKE" ]; then ctest_step nccl 60 -R '^gpu_nccl_allreduce$'
  elif grep -q "nccl [0-9]" <<< "$TORCH_INFO"; then record nccl FAIL 0 "PyTorch has NCCL but CMake did not find it (cmake/cuda_libs.cmake)"
  else record nccl SKIP 0 "no NCCL on this machine"; fi
fi
BENCH="$T/gt_gpu_bench"
bench_ok() { [ "${GT_SKIP_BENCH:-0}" != 1 ] && have "$1"; }
if want bench && ! blocked bench; then
  if bench_ok "$BENCH"; then
    step bench 150 bash -c '"$0" --steps "$1" && "$0" --steps "$1" --graph' "$BENCH" "$STEPS"
  else record bench SKIP 0 "GT_SKIP_BENCH or not built"; fi
fi
if want peer-torch; then
  if [ "${GT_SKIP_PEER:-0}" = 1 ] || { [ -z "$FAKE" ] && ! grep -q "^torch " <<< "$TORCH_INFO"; }; then
    record peer-torch SKIP 0 "GT_SKIP_PEER or no torch ($TORCH_INFO)"
  else step peer-torch 150 env PYTHONUNBUFFERED=1 "$PY" tests/gpu/peer_torch.py --steps "$STEPS"; fi
fi
if want bench-lstm-cudnn && ! blocked bench-lstm-cudnn; then
  if bench_ok "$BENCH"; then
    step bench-lstm-cudnn 90 bash -c 'for i in cudnn cudnn-stack; do GT_LSTM_IMPL=$i "$0" --steps "$1" --graph --only lstm || exit; done' "$BENCH" "$STEPS"
  else record bench-lstm-cudnn SKIP 0 "GT_SKIP_BENCH or not built"; fi
fi
if want bench-conv-cudnn && ! blocked bench-conv-cudnn; then
  if bench_ok "$BENCH"; then step bench-conv-cudnn 45 env GT_CONV_IMPL=cudnn "$BENCH" --steps "$STEPS" --graph --only s2p_cnn
  else record bench-conv-cudnn SKIP 0 "GT_SKIP_BENCH or not built"; fi
fi
lab() { # NAME LIMIT BINARY ARGS...
  local name="$1" t="$2" bin="$3"; shift 3
  want "$name" || return 0
  blocked "$name" && return 0
  if bench_ok "$bin"; then step "$name" "$t" "$bin" "$@"; else record "$name" SKIP 0 "GT_SKIP_BENCH or not built"; fi
}
lab attn-lab 60 "$T/gt_gpu_attn_lab" --reps 20 --warmup 3
lab lstm-lab 60 "$T/gt_gpu_lstm_lab" --reps 10 --warmup 2 --check-batch 2
lab conv-lab 45 "$T/gt_gpu_conv_lab" --reps 10 --warmup 2 --check-batch 2

# ------------------------------------------------ end to end: gridtrain train --
if want e2e-train; then
  if [ "$N_GPU" -eq 0 ] && [ -z "$FAKE" ]; then record e2e-train SKIP 0 "no GPU visible"
  elif [ -z "$FAKE" ] && [ -z "$PIPE_P" ]; then
    record e2e-train SKIP 0 "no MPI/HDF5 runtime carried (tests/gpu/fetch-debs.sh --pipeline, carry .gpu-debs)"
  elif [ -z "$FAKE" ] && [ "$PIPELINE" != 1 ]; then
    record e2e-train FAIL 0 "configuring the pipeline against the carried packages failed: see the configure section of steps.log"
  else
    step e2e-train 240 env GT_DEPS_PREFIX="$PIPE_P" GT_E2E_BUILT=1 bash tests/gpu/e2e_train.sh "$B" "$STEP_TMP/e2e"
    for f in "$STEP_TMP"/e2e/*.log; do # the run's own logs, into steps.log
      [ -f "$f" ] && { echo "---- e2e-train: $(basename "$f") (last 60 lines)"; tail -n 60 "$f"; } >> "$OUT/steps.log"
    done
  fi
fi
if want sanitizer && ! blocked sanitizer; then
  if { [ "$N_GPU" -gt 0 ] && command -v compute-sanitizer >/dev/null && [ -x "$B/tests/nn/test_nn_engine" ]; } || [ -n "$FAKE" ]; then
    step sanitizer 120 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/tests/nn/test_nn_engine"
    if [ "$(result_of sanitizer)" = FAIL ] && grep -qE "Device not supported|error 999" "$STEP_LOG"; then
      amend_last SKIP "compute-sanitizer cannot use the device here"
    fi
  else record sanitizer SKIP 0 "no GPU, no compute-sanitizer or no engine test"; fi
fi

# ------------------------------------------------------------------ tables --
bench_lines() { grep -h '^GT_GPU_BENCH' "$STEP_TMP"/gt-step-bench*.log "$STEP_TMP"/gt-step-peer-torch.log 2>/dev/null; }
bench_lines > "$STEP_TMP/bench.txt"
: > "$STEP_TMP/bench-table.txt"
if [ -s "$STEP_TMP/bench.txt" ]; then
  awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      key = v["impl"] (v["graph"] == 1 ? "+graph" : "") "/" v["kind"]
      sps[key] = v["samples_per_s"]; kinds[v["kind"]] = 1
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v["impl"] (v["graph"] == 1 ? "+graph" : ""), v["kind"], v["B"], v["window"], v["ms_step"], v["samples_per_s"], v["peak_mib"], (v["mfu"] == "" ? "-" : v["mfu"])
      delete v }
    END {
      n = split("gridtrain gridtrain+graph gridtrain-cudnn+graph gridtrain-cudnn-stack+graph", impls, " ")
      for (k in kinds) {
        t = sps["torch/" k]
        if (t > 0) for (j = 1; j <= n; j++)
          if (sps[impls[j] "/" k] > 0) printf "ratio %s/torch %s %.3f\n", impls[j], k, sps[impls[j] "/" k] / t
      }
    }' "$STEP_TMP/bench.txt" > "$STEP_TMP/bench-table.txt"
  # plan's GPU rate, measured: the best gridtrain MFU per kind
  awk -v gpu="${GPU_LINE//\"/}" -v commit="${GT_COMMIT//\"/}" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["impl"] == "gridtrain" && v["mfu"] != "" && v["mfu"] + 0 > best[v["kind"]] + 0) best[v["kind"]] = v["mfu"]
      delete v }
    END {
      printf "{\"source\": \"tests/gpu/run.sh bench\", \"commit\": \"%s\", \"gpu\": \"%s\", \"efficiency\": {", commit, gpu
      n = 0; for (k in best) { printf "%s\"%s\": %s", (n++ ? ", " : ""), k, best[k] }
      printf "}}\n" }' "$STEP_TMP/bench.txt" > "$OUT/plan-calibration.json"
fi
lab_table() { # NAME STEP PREFIX KEY...: PREFIX lines into NAME.txt, the keys as table rows into NAME-table.txt
  local name="$1" st="$2" prefix="$3"; shift 3
  grep "^$prefix" "$STEP_TMP/gt-step-$st.log" > "$STEP_TMP/$name.txt" 2>/dev/null || true
  : > "$STEP_TMP/$name-table.txt"
  [ -s "$STEP_TMP/$name.txt" ] || return 0
  awk -v keys="$*" 'BEGIN { nk = split(keys, K, " ") }
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      row = "|"; for (j = 1; j <= nk; j++) row = row " " v[K[j]] " |"
      print row; delete v }' "$STEP_TMP/$name.txt" > "$STEP_TMP/$name-table.txt"
}
lab_table attn attn-lab GT_ATTN_BENCH variant fwd_ms fwd_tflops fwd_peak bwd_ms bwd_tflops bwd_peak total_peak check
lab_table lstm lstm-lab GT_LSTM_BENCH variant fwd_ms bwd_ms step_ms samples_per_s ratio err_h err_grad check
lab_table conv conv-lab GT_CONV_BENCH variant fwd_ms bwd_ms step_ms samples_per_s ratio fused err_out err_grad check

# ------------------------------------------------------------ verdict files --
json_lines() { # KEY FILE: `  "KEY": [lines as JSON strings],`
  local sep="" line
  printf '  "%s": [' "$1"
  while IFS= read -r line; do printf '%s\n    %s' "$sep" "$(json_str "$line")"; sep=,; done < <(cat "$2" 2>/dev/null)
  printf '],\n'
}
verdict_extra() {
  printf '  "gpu": {"nvidia_smi": %s, "nvcc": %s, "cmake": %s, "torch": %s, "nccl_in_build": %d, "pipeline_in_build": %d},\n' \
    "$(json_str "$GPU_LINE")" "$(json_str "$NVCC_VER")" "$(json_str "$CMAKE_VER")" "$(json_str "$TORCH_INFO")" "$HAVE_NCCL" "$PIPELINE"
  json_lines bench "$STEP_TMP/bench.txt"
  json_lines attention "$STEP_TMP/attn.txt"
  json_lines lstm "$STEP_TMP/lstm.txt"
  json_lines conv "$STEP_TMP/conv.txt"
}
# untested: one Markdown bullet per claim this run could not check
untested() {
  local i
  if [ "$N_GPU" -lt 2 ]; then
    echo "* Multi-GPU NCCL: the all-reduce across GPUs (here $N_GPU GPU(s) visible; over one it is a copy), the"
    echo "  multi-rank gradient exchange (gpu_dist_grads_np2) and its overlap with the backward (dist/grads.c buckets started"
    echo "  from the readiness hook, the segmented CUDA graph replay) need 2 or more GPUs."
  fi
  echo "* Multi-node runs (mpirun across nodes, NCCL over the network, Slurm): one machine."
  echo "* Architectures other than sm_$ARCH (the A100 sm_80 and workstation sm_86/sm_89 tiers, their shared-memory limits):"
  echo "  only sm_$ARCH was built and run."
  [ "$(result_of e2e-train)" = PASS ] || \
    echo "* \`gridtrain train\` end to end on the GPU (MPI, HDF5, checkpoints, resume, eval): e2e-train $(result_of e2e-train)."
  for i in "${!NAMES[@]}"; do
    case "${RESULTS[$i]}" in SKIP*) echo "* Step ${NAMES[$i]}: ${RESULTS[$i]} (${NOTES[$i]//|/\\|})." ;; esac
  done
}
VERDICT_EXTRA=verdict_extra
VERDICT=$(verdict_of)
write_verdict "$VERDICT"
TOTAL=$(( $(date +%s) - T0 ))
table() { # TITLE HEADER FILE
  [ -s "$3" ] || return 0
  local cols; cols=$(tr -cd '|' <<< "$2"); cols=$(( ${#cols} - 1 ))
  printf '\n%s\n\n%s\n|' "$1" "$2"; for ((c = 0; c < cols; c++)); do printf -- '---|'; done; echo
  grep '^|' "$3"
}
{
  echo "# GPU verdict: **$VERDICT**"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), commit \`$GT_COMMIT\`, ${TOTAL} s of a ${BUDGET} s budget; required: $REQUIRED."
  echo
  echo "* GPU: ${GPU_LINE:-none} ($N_GPU visible); ${TORCH_INFO}"
  echo "* ${NVCC_VER:-no nvcc}; ${CMAKE_VER:-no cmake}; NCCL in the build: $HAVE_NCCL; pipeline in the build: $PIPELINE"
  echo
  echo "| step | required | result | s | note |"
  echo "|---|---|---|---|---|"
  for i in "${!NAMES[@]}"; do
    echo "| ${NAMES[$i]} | $(is_required "${NAMES[$i]}" && echo yes) | ${RESULTS[$i]} | ${SECS[$i]} | ${NOTES[$i]//|/\\|} |"
  done
  echo
  echo "## Not tested on this machine"
  echo
  untested
  table "Throughput (median ms/step; samples/s; peak MiB; MFU vs the bf16 dense peak):" \
    "| impl | kind | B | window | ms/step | samples/s | peak MiB | MFU |" "$STEP_TMP/bench-table.txt"
  [ -s "$STEP_TMP/bench-table.txt" ] && { echo; grep '^ratio' "$STEP_TMP/bench-table.txt" | sed 's/^/* /'; }
  table "Attention kernels (tests/gpu/dev/attention.c; median ms per call):" \
    "| variant | fwd ms | fwd TFLOP/s | fwd peak | bwd ms | bwd TFLOP/s | bwd peak | fwd+bwd peak | check |" "$STEP_TMP/attn-table.txt"
  table "LSTM layer stack (tests/gpu/dev/lstm.c; ratio = samples/s over kernels_fp32's):" \
    "| variant | fwd ms | bwd ms | step ms | samples/s | ratio | err h | err grad | check |" "$STEP_TMP/lstm-table.txt"
  table "s2p_cnn conv stack (tests/gpu/dev/conv.c; ratio = samples/s over kernels_fp32's):" \
    "| variant | fwd ms | bwd ms | step ms | samples/s | ratio | fused | err out | err grad | check |" "$STEP_TMP/conv-table.txt"
  echo
  echo "Logs: \`steps.log\` beside this file (each step after a \`==== STEP\` line)."
} > "$OUT/verdict.md"
rm -rf "$STEP_TMP"
cat "$OUT/verdict.md"
echo "==== gpu-check: $VERDICT (${TOTAL} s); $OUT/verdict.json, $OUT/verdict.md, $OUT/steps.log"
[ "$VERDICT" = fail ] && exit 1
exit 0
