#!/usr/bin/env bash
# CI test of tests/gpu/run.sh itself (no GPU): run.sh in its fake mode
# (GT_GPU_FAKE_STEPS: each step's command replaced by DIR/STEP.sh, the probes
# by DIR/bin/nvidia-smi and nvcc), so the real control flow is what runs:
# the step order, the REQUIRED rule, the verdict, the budget (SKIP(time) on
# a clamped limit), the probe timeout, the provisional verdict.json and the
# files that come back.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/gt-run-fake.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
# q FILE EXPR: a Python expression over the verdict j (json) and r (step -> result)
q() {
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = {s["name"]: s["result"] for s in j["steps"]}
n = {s["name"]: s["note"] for s in j["steps"]}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
# fake DIR GPUS: fake probes (nvidia-smi listing GPUS GPUs, nvcc) and a configure
# that reports a CUDA build
fake() {
  rm -rf "$1"; mkdir -p "$1/bin"
  cat > "$1/bin/nvidia-smi" <<EOF
#!/bin/sh
[ $2 -gt 0 ] || { echo "NVIDIA-SMI has failed" >&2; exit 9; }
case "\$1" in -L) i=0; while [ \$i -lt $2 ]; do echo "GPU \$i: NVIDIA H200 (UUID: GPU-\$i)"; i=\$((i + 1)); done ;;
  *) echo "NVIDIA H200, 143771 MiB, 570.00" ;; esac
EOF
  printf '#!/bin/sh\necho "Cuda compilation tools, release 13.0"\n' > "$1/bin/nvcc"
  chmod +x "$1/bin/nvidia-smi" "$1/bin/nvcc"
  echo 'echo "-- gridtrain: pipeline=OFF cuda=ON nccl=ON cudnn=ON sanitize=OFF"' > "$1/configure.sh"
}
# go NAME [ENV=VALUE...]: run.sh in fake mode on $W/NAME.steps, output in $W/NAME.out; RC
go() {
  local name="$1"; shift
  rm -rf "$W/$name.out"
  env OUT="$W/$name.out" GT_GPU_FAKE_STEPS="$W/$name.steps" GT_PYTHON=false GT_COMMIT=c0ffee "$@" \
    bash "$HERE/run.sh" "$W/$name.build" > "$W/$name.console" 2>&1
  RC=$?
}
ORDER="preflight configure build ops-vs-cpu engine graph memory nccl bench peer-torch bench-lstm-cudnn bench-conv-cudnn attn-lab lstm-lab conv-lab e2e-train sanitizer"

# 1. one GPU, every step passes: pass; the order by value; what comes back
fake "$W/a.steps" 1
# the graph step reads the verdict written so far (the provisional file)
echo "cp \"\$OUT/verdict.json\" $W/a.mid.json" > "$W/a.steps/graph.sh"
echo 'echo "GT_GPU_BENCH impl=gridtrain kind=s2p_cnn B=64 window=599 ms_step=2 samples_per_s=32000 peak_mib=9 mfu=0.25 graph=0"' \
  > "$W/a.steps/bench.sh"
go a
check "all pass -> verdict pass, exit 0" "[ $RC = 0 ] && q $W/a.out/verdict.json 'j[\"verdict\"] == \"pass\"'"
check "steps in the order by value" "q $W/a.out/verdict.json '[s[\"name\"] for s in j[\"steps\"]] == \"$ORDER\".split()'"
check "the commit passed in" "q $W/a.out/verdict.json 'j[\"commit\"] == \"c0ffee\"'"
check "REQUIRED as the issue lists it" \
  "q $W/a.out/verdict.json 'j[\"required\"] == \"preflight configure build ops-vs-cpu engine graph memory bench\"'"
check "verdict.json incomplete while a step runs, with the steps before it" \
  "q $W/a.mid.json 'j[\"verdict\"] == \"incomplete\" and r.get(\"engine\") == \"PASS\" and \"graph\" not in r'"
check "at most 8 files come back" "[ \$(find $W/a.out -type f | wc -l) -le 8 ]"
check "steps.log holds every step" "[ \$(grep -c '^==== ' $W/a.out/steps.log) = 16 ]"
check "verdict.md names multi-GPU NCCL and the overlapped exchange as untested on 1 GPU" \
  "grep -q 'Multi-GPU NCCL' $W/a.out/verdict.md && grep -q 'overlap with the backward' $W/a.out/verdict.md"
check "plan-calibration.json from the bench lines" "grep -q '\"s2p_cnn\": 0.25' $W/a.out/plan-calibration.json"

# 2. one GPU: a required step that skips is FAIL, an optional one stays SKIP,
# a ctest selection that matches nothing is FAIL, a step exiting 124 at its
# own limit is FAIL
fake "$W/b.steps" 1
echo 'echo "gpu_test_ops_cuda: skipped: no CUDA device"; exit 77' > "$W/b.steps/ops-vs-cpu.sh"
echo 'echo "No tests were found!!!"' > "$W/b.steps/engine.sh"
echo 'exit 124' > "$W/b.steps/memory.sh"
echo 'echo "skipped: no cuDNN"; exit 77' > "$W/b.steps/attn-lab.sh"
go b
check "required skip with a GPU -> FAIL, verdict fail, exit 1" \
  "[ $RC = 1 ] && q $W/b.out/verdict.json 'r[\"ops-vs-cpu\"] == \"FAIL\" and j[\"verdict\"] == \"fail\"'"
check "optional skip stays SKIP, named in verdict.md" \
  "q $W/b.out/verdict.json 'r[\"attn-lab\"] == \"SKIP\"' && grep -q 'Step attn-lab: SKIP' $W/b.out/verdict.md"
check "no tests found -> FAIL" "q $W/b.out/verdict.json 'r[\"engine\"] == \"FAIL\" and \"no such test\" in n[\"engine\"]'"
check "exit 124 at its own limit -> FAIL" "q $W/b.out/verdict.json 'r[\"memory\"] == \"FAIL\"'"

# 3. a GPU visible but the build has no CUDA backend -> configure FAIL
fake "$W/c.steps" 1
echo 'echo "-- gridtrain: pipeline=OFF cuda=OFF nccl=OFF cudnn=OFF sanitize=OFF"' > "$W/c.steps/configure.sh"
go c
check "GPU visible, CUDA off -> configure FAIL" "q $W/c.out/verdict.json 'r[\"configure\"] == \"FAIL\" and j[\"verdict\"] == \"fail\"'"

# 4. no GPU (nvidia-smi fails): a required skip stays SKIP, verdict no-gpu;
# a hanging nvidia-smi is cut by the probe timeout
fake "$W/d.steps" 0
echo 'echo "skipped: no CUDA device"; exit 77' > "$W/d.steps/ops-vs-cpu.sh"
go d
check "no GPU: required skip stays SKIP, verdict no-gpu, exit 0" \
  "[ $RC = 0 ] && q $W/d.out/verdict.json 'r[\"ops-vs-cpu\"] == \"SKIP\" and j[\"verdict\"] == \"no-gpu\" and j[\"gpus_visible\"] == 0'"
fake "$W/e.steps" 1
printf '#!/bin/sh\nsleep 60\n' > "$W/e.steps/bin/nvidia-smi"
go e GT_PROBE_TIMEOUT=1
check "hanging nvidia-smi -> probe timed out, no GPU" \
  "[ $RC = 0 ] && q $W/e.out/verdict.json '\"timed out\" in n[\"preflight\"] and j[\"verdict\"] == \"no-gpu\"'"

# 5. the budget: the build runs past its limit clamped to the budget ->
# SKIP(time), every later step SKIP(time); nothing failed -> pass-partial
fake "$W/f.steps" 1
echo 'sleep 60' > "$W/f.steps/build.sh"
go f GT_VERDICT_BUDGET=20
check "clamped build killed -> SKIP(time)" "q $W/f.out/verdict.json 'r[\"build\"] == \"SKIP(time)\"'"
check "later steps SKIP(time), verdict pass-partial, exit 0" \
  "[ $RC = 0 ] && q $W/f.out/verdict.json 'all(r[s] == \"SKIP(time)\" for s in \"$ORDER\".split()[3:]) and j[\"verdict\"] == \"pass-partial\"'"
# (the build alone would sleep 60 s: well under that means the budget cut it)
check "a cut run stays near its budget" "q $W/f.out/verdict.json 'j[\"seconds\"] <= 45'"

# 6. GT_STEPS: only the selection (and preflight, configure); REQUIRED shrinks to it
fake "$W/g.steps" 1
go g GT_STEPS=e2e-train
check "GT_STEPS=e2e-train runs preflight, configure, e2e-train; verdict pass" \
  "q $W/g.out/verdict.json 'list(r) == [\"preflight\", \"configure\", \"e2e-train\"] and j[\"verdict\"] == \"pass\" and j[\"required\"] == \"preflight configure\"'"
[ $fail = 0 ] || { echo "---- last console"; tail -40 "$W/g.console"; }
exit $fail
