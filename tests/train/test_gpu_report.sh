#!/usr/bin/env bash
# tests/train/test_gpu_report.sh: GPU telemetry in the run's files and report
# (issue #23). No GPU here (ctest hides them from this folder): a CPU run has
# no telemetry (no "gpu" rows, no manifest summary, no line about it); then
# the rows and the summary a 2-GPU run writes (the fields of outputs.c's
# writer) are added to a finished run and `gridtrain eval` reports them: the
# table per rank and, with gnuplot, plots/gpu.png. Real NVML readings are
# tested by tests/nn/test_telemetry.c where a GPU exists.
# $1 = train tool, $2 = gridtrain
source "$(dirname "$0")/train_script_lib.sh"
make_data 10
PY=${GT_PYTHON:-python3}
mpirun -n 2 "${TRAIN[@]}" "$W/train.ini" run.dir="$W/run" train.gpu_telemetry_s=1 > "$W/run.log" 2>&1 \
  || { cat "$W/run.log" >&2; fail "training"; }
! grep -q '"type":"gpu"' "$W/run/metrics.jsonl" || fail "gpu rows in a CPU run"
! grep -q gpu_telemetry "$W/run/manifest.json" || fail "gpu_telemetry in a CPU run's manifest"
! grep -q "gpu telemetry" "$W/run.log" || fail "a telemetry line in a CPU run"
"$PY" - "$W/run" <<'PYEOF'
import json, sys
d = sys.argv[1]
def stats(rank, util, n):
    return {"samples": n, "util_pct": util, "util_min_pct": util / 2, "mem_used_bytes": 20 * 2**30,
            "mem_total_bytes": 80 * 2**30, "temp_max_c": 71 + rank, "power_w": 250.0, "power_max_w": 300.0,
            "sm_clock_mhz": 1800.0, "sm_clock_min_mhz": 1500.0, "mem_clock_mhz": 2600.0,
            "throttled_frac": 0.25 * rank, "throttle_reasons": "none", "ecc_corrected": 0, "ecc_uncorrected": 0,
            "ecc_uncorrected_new": 0, "xid_events": 0}
m = json.load(open(d + "/manifest.json"))
m["gpu_telemetry"] = [dict(rank=r, **stats(r, 90.0 - 60 * r, 12)) for r in range(2)]
json.dump(m, open(d + "/manifest.json", "w"), indent=1)
with open(d + "/metrics.jsonl", "a") as f:
    for step, t in ((5, 10.0), (10, 20.0)):
        for r in range(2):
            f.write(json.dumps(dict(type="gpu", step=step, rank=r, time_s=t, **stats(r, 90.0 - 60 * r, 6))) + "\n")
PYEOF
"$GRIDTRAIN" eval "$W/run" > "$W/eval.log" 2>&1 || { cat "$W/eval.log" >&2; fail "eval"; }
grep -q "^## GPU telemetry" "$W/run/report.md" || fail "report.md has no GPU telemetry section"
grep -q "| 1 | 12 | 30 (15) | 20.0 of 80.0 | 72 | 250 (300) | 1800 (1500) | 25% | 0 | 0 |" "$W/run/report.md" \
  || { grep -A6 "GPU telemetry" "$W/run/report.md" >&2; fail "the GPU table of rank 1"; }
if command -v gnuplot >/dev/null 2>&1; then
  [ -s "$W/run/plots/gpu.png" ] || fail "no plots/gpu.png"
  grep -q "gpu.png" "$W/run/report.md" || fail "report.md does not show the GPU plot"
fi
echo "test_gpu_report: ok"
