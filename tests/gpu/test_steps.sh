#!/usr/bin/env bash
# CI test of tests/gpu/steps.sh (no GPU): fake steps that pass, skip (77),
# sleep past their limit, or run past a clamped limit; asserts the results,
# the verdict rule, the incremental verdict.json and the generator choice.
# tests/gpu/test_run_fake.sh runs run.sh itself on fake steps.
set -u
. "$(dirname "$0")/steps.sh"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
res() { local i; for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$1" ] && echo "${RESULTS[$i]}"; done; }
fresh() { OUT=$(mktemp -d); T0=$(date +%s); NAMES=(); RESULTS=(); SECS=(); NOTES=(); : > "$OUT/steps.log"; }
REQUIRED="preflight build bench"
# GPU visible, all required pass, one optional skipped -> still pass
fresh; N_GPU=1; BUDGET=600
record preflight PASS 0
check "verdict.json incomplete right after preflight" "grep -q '\"verdict\": \"incomplete\"' $OUT/verdict.json"
run_step build 10 true; run_step bench 10 true
check "all required pass -> pass" "[ \"\$(verdict_of)\" = pass ]"
run_step lab 10 bash -c 'exit 77'
check "optional skip -> SKIP, verdict still pass" "[ \"\$(res lab)\" = SKIP ] && [ \"\$(verdict_of)\" = pass ]"
# a step killed at its own (unclamped) limit -> FAIL; verdict.json still incomplete after it
run_step hang 1 sleep 5
check "timeout at own limit -> FAIL" "[ \"\$(res hang)\" = FAIL ]"
check "verdict.json incomplete after a killed step" "grep -q '\"verdict\": \"incomplete\"' $OUT/verdict.json && grep -q '\"hang\"' $OUT/verdict.json"
# clamped limit -> SKIP(time)
fresh; N_GPU=1; BUDGET=17
run_step slow 100 sleep 30
check "clamped timeout -> SKIP(time)" "[ \"\$(res slow)\" = 'SKIP(time)' ]"
# a required step cut for time stays SKIP(time) and leaves the verdict pass-partial
fresh; N_GPU=1; BUDGET=10
record preflight PASS 0; run_step build 100 true
check "no budget left -> SKIP(time) without running" "[ \"\$(res build)\" = 'SKIP(time)' ] && ! grep -q '==== build' $OUT/steps.log"
check "required SKIP(time) -> pass-partial" "[ \"\$(verdict_of)\" = pass-partial ]"
# required step skipped with a GPU visible -> FAIL, verdict not pass
fresh; N_GPU=1; BUDGET=600
record preflight PASS 0; run_step build 10 bash -c 'exit 77'; run_step bench 10 true
check "required skip with GPU -> FAIL" "[ \"\$(res build)\" = FAIL ] && [ \"\$(verdict_of)\" = fail ]"
# no GPU visible: required skip stays SKIP
fresh; N_GPU=0
run_step build 10 bash -c 'exit 77'
check "required skip without GPU -> SKIP, no-gpu" "[ \"\$(res build)\" = SKIP ] && [ \"\$(verdict_of)\" = no-gpu ]"
write_verdict
check "at most 8 files in OUT" "[ \$(ls $OUT | wc -l) -le 8 ]"
check "the step's output in steps.log and in STEP_LOG" "grep -q '==== build' $OUT/steps.log && [ -f \"\$STEP_LOG\" ]"
# amend_last applies the REQUIRED rule again (a ctest step whose tests all skipped)
fresh; N_GPU=1; BUDGET=600
run_step build 10 true; amend_last SKIP "all selected tests skipped"
check "amended to SKIP with a GPU -> FAIL" "[ \"\$(res build)\" = FAIL ] && grep -q '\"FAIL\"' $OUT/verdict.json"
# the generator: Ninja when make is absent and ninja present; neither -> error
G=$(mktemp -d); mkdir -p "$G/n" "$G/m" "$G/none"
printf '#!/bin/sh\n' > "$G/n/ninja"; printf '#!/bin/sh\n' > "$G/m/make"; printf '#!/bin/sh\n' > "$G/m/ninja"
chmod +x "$G"/*/*
check "only ninja -> Ninja" "[ \"\$(CMAKE_GENERATOR= PATH=$G/n pick_generator)\" = Ninja ]"
check "make present -> the default" "[ -z \"\$(CMAKE_GENERATOR= PATH=$G/m pick_generator)\" ]"
check "neither -> error" "! CMAKE_GENERATOR= PATH=$G/none pick_generator"
rm -rf "$G"
exit $fail
