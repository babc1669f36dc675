# The step runner of tests/gpu/run.sh, sourced (no GPU needed; the CI tests
# tests/gpu/test_steps.sh and tests/gpu/test_run_fake.sh drive it with fake
# steps). Needs OUT, BUDGET, T0, N_GPU (0 = no GPU visible) and REQUIRED
# (space-separated step names); GT_COMMIT names the commit in verdict.json.
# Every step's output is appended to the one file $OUT/steps.log (few files
# come back from a device run), and $OUT/verdict.json is rewritten after
# every step, with verdict "incomplete" until the end, so a run cut off by
# the device limit still returns what it did.
# Results: PASS; FAIL; SKIP (exit 77, or a precondition: the note says why);
# SKIP(time) (no budget left for it, or killed at a limit that had been
# clamped to what was left of the budget). A REQUIRED step's SKIP is FAIL
# when a GPU is visible (a test that skips beside a GPU is a test that lies);
# its SKIP(time) stays SKIP(time) and leaves the verdict pass-partial.
declare -a NAMES=() RESULTS=() SECS=() NOTES=()
STEP_MIN_S=${STEP_MIN_S:-15} # a step needs at least this much budget left to start
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
is_required() { case " $REQUIRED " in *" $1 "*) return 0 ;; esac; return 1; }
# required_rule NAME RESULT: the result as recorded (the REQUIRED rule)
required_rule() {
  if [ "$N_GPU" -gt 0 ] && is_required "$1" && [ "$2" = SKIP ]; then echo FAIL; else echo "$2"; fi
}
record() { # NAME RESULT SECONDS [NOTE]
  local res note="${4:-}"
  res=$(required_rule "$1" "$2")
  [ "$res" != "$2" ] && note="required step skipped with a GPU visible${note:+: $note}"
  NAMES+=("$1"); RESULTS+=("$res"); SECS+=("${3:-0}"); NOTES+=("$note")
  echo "gpu-check: [$res] $1${note:+ ($note)}"
  write_verdict incomplete
}
# amend_last RESULT NOTE: change the last step's result (a ctest step's
# "no tests" or "all skipped"), the REQUIRED rule applied again
amend_last() {
  local i=$(( ${#NAMES[@]} - 1 )) res
  res=$(required_rule "${NAMES[$i]}" "$1")
  RESULTS[$i]=$res; NOTES[$i]=$2
  [ "$res" != "$1" ] && NOTES[$i]="required step skipped with a GPU visible${2:+: $2}"
  echo "gpu-check: [${RESULTS[$i]}] ${NAMES[$i]}${NOTES[$i]:+ (${NOTES[$i]})}"
  write_verdict incomplete
}
result_of() { local i; for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$1" ] && echo "${RESULTS[$i]}"; done; }
# STEP_LOG: after run_step, the file holding that step's output alone (a
# copy of its section of $OUT/steps.log, outside $OUT)
STEP_LOG=""
# run_step NAME LIMIT CMD...: 0 PASS, 77 SKIP, 124/137 FAIL or SKIP(time)
run_step() {
  local name="$1" t="$2" clamped=0; shift 2
  local l; l=$(left)
  STEP_LOG="${STEP_TMP:-/tmp}/gt-step-$name.log"; : > "$STEP_LOG"
  if [ "$l" -lt "$STEP_MIN_S" ]; then record "$name" "SKIP(time)" 0 "${l}s of the budget left"; return 0; fi
  if [ "$t" -gt "$l" ]; then t=$l; clamped=1; fi
  echo "==== $name (limit ${t}s): $*" | tee -a "$OUT/steps.log"
  local off s0; off=$(stat -c %s "$OUT/steps.log"); s0=$(date +%s)
  timeout --signal=TERM --kill-after=5 "$t" "$@" >> "$OUT/steps.log" 2>&1 < /dev/null
  local rc=$? dt=$(( $(date +%s) - s0 ))
  tail -c +$((off + 1)) "$OUT/steps.log" > "$STEP_LOG"
  [ "$rc" = 0 ] || tail -n 30 "$STEP_LOG"
  case $rc in
    0) record "$name" PASS "$dt" ;;
    77) local why; why=$(grep -m1 -i 'skip' "$STEP_LOG" || tail -n 1 "$STEP_LOG")
        record "$name" SKIP "$dt" "exit 77${why:+: $(echo "$why" | cut -c1-160)}" ;;
    124|137) if [ $clamped = 1 ]; then record "$name" "SKIP(time)" "$dt" "killed at its limit clamped to the ${t}s left"
             else record "$name" FAIL "$dt" "timeout after ${t}s"; fi ;;
    *) record "$name" FAIL "$dt" "exit $rc" ;;
  esac
}
# verdict_of: fail when a step failed; no-gpu without a GPU; pass when every
# REQUIRED step passed; else pass-partial (a required step cut for time)
verdict_of() {
  local r req
  for r in "${RESULTS[@]}"; do [ "$r" = FAIL ] && { echo fail; return; }; done
  [ "$N_GPU" -gt 0 ] || { echo no-gpu; return; }
  for req in $REQUIRED; do
    [ "$(result_of "$req")" = PASS ] || { echo pass-partial; return; }
  done
  echo pass
}
# pick_generator: the CMake generator to use ("" = CMake's default, make);
# Ninja when make is absent and ninja is present; exit 1 when neither is
pick_generator() {
  if [ -n "${CMAKE_GENERATOR:-}" ]; then echo "$CMAKE_GENERATOR"
  elif command -v make >/dev/null 2>&1 || command -v gmake >/dev/null 2>&1; then echo ""
  elif command -v ninja >/dev/null 2>&1; then echo Ninja
  else return 1; fi
}
json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/ }; printf '"%s"' "$s"; }
# VERDICT_EXTRA: a function name; when set, write_verdict calls it to add
# members (each line `  "key": value,`) before "steps"
write_verdict() { # [incomplete]
  local v; v=${1:-$(verdict_of)}; local i n=${#NAMES[@]}
  {
    printf '{\n  "verdict": "%s",\n  "seconds": %d,\n  "budget_s": %d,\n  "commit": %s,\n  "gpus_visible": %d,\n' \
      "$v" $(( $(date +%s) - T0 )) "$BUDGET" "$(json_str "${GT_COMMIT:-unknown}")" "$N_GPU"
    printf '  "required": %s,\n' "$(json_str "$REQUIRED")"
    [ -n "${VERDICT_EXTRA:-}" ] && "$VERDICT_EXTRA"
    printf '  "steps": [\n'
    for i in "${!NAMES[@]}"; do
      printf '    {"name": "%s", "result": "%s", "required": %s, "seconds": %s, "note": %s}%s\n' \
        "${NAMES[$i]}" "${RESULTS[$i]}" "$(is_required "${NAMES[$i]}" && echo true || echo false)" "${SECS[$i]}" \
        "$(json_str "${NOTES[$i]}")" "$([ "$i" -lt $((n - 1)) ] && echo ,)"
    done
    printf '  ]\n}\n'
  } > "$OUT/verdict.json.tmp" && mv "$OUT/verdict.json.tmp" "$OUT/verdict.json"
}
