#!/usr/bin/env bash
# The main job (README command 1, jobs/quickstart.sh) runs to its end with the
# gridtrain under test (GT_QUICKSTART_GT: no setup, no build) into the test's
# build directory, and closes with what was trained, the test-split figures
# of each of its five appliances and the report to open. The figures
# themselves are the benchmark's (tests/eval/bench_quickstart.sh), not this
# test's. $1: gridtrain.
set -euo pipefail
gt=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${GT_BINARY_DIR:-/tmp}/quickstart-$$
rm -rf "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
GT_QUICKSTART_GT=$gt GT_QUICKSTART_OUT=$out bash "$src/jobs/quickstart.sh" > "$out.log" 2>&1 \
  || { tail -40 "$out.log"; fail "jobs/quickstart.sh failed"; }
grep "params xxh64" "$out.log"
tail -9 "$out.log"
for want in "quickstart: trained s2p_cnn" "quickstart: on the test split" "macro F1 0\.[0-9]*, EA 0\.[0-9]*" \
            "open $out/train/report.html next"; do
  grep -q "$want" "$out.log" || fail "the closing lines lack: $want"
done
[ "$(grep -Ec '^  (fridge|kettle|oven|heat_pump|ev_charger) +F1 0\.[0-9]+  EA' "$out.log")" = 5 ] \
  || fail "the closing lines do not give F1 and EA of the five appliances"
[ -s "$out/train/report.html" ] && [ -s "$out/pdm.h5" ] || fail "report.html or the wind farm missing"
rm -rf "$out" "$out.log"
echo "test_quickstart: ok"
