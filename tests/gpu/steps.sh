# The step runner of tests/gpu/run.sh, sourced (no GPU needed; the CI test
# tests/gpu/test_steps.sh drives it with fake steps). Needs OUT, BUDGET, T0,
# N_GPU (0 = no GPU visible) and REQUIRED (space-separated step names).
# Every step's output is appended to the one file $OUT/steps.log (few files
# come back from a device run), and $OUT/verdict.json is rewritten after
# every step, so a run cut off by the device limit still returns what it did.
declare -a NAMES=() RESULTS=() SECS=() NOTES=()
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
is_required() { case " $REQUIRED " in *" $1 "*) return 0 ;; esac; return 1; }
record() { # NAME RESULT SECONDS [NOTE]: a REQUIRED step's SKIP is FAIL with a GPU visible
  local res="$2" note="${4:-}"
  if [ "$N_GPU" -gt 0 ] && is_required "$1" && [ "${res%%(*}" = SKIP ]; then
    note="required step skipped with a GPU visible${note:+: $note}"; res=FAIL
  fi
  NAMES+=("$1"); RESULTS+=("$res"); SECS+=("${3:-0}"); NOTES+=("$note")
  echo "gpu-check: [$res] $1${note:+ ($note)}"
  write_verdict incomplete
}
# run_step NAME TIMEOUT CMD...: 0 pass, 77 skip, 124/137 fail, or SKIP(time)
# when the limit had been clamped to what is left of the budget
run_step() {
  local name="$1" t="$2" clamped=0; shift 2
  local l; l=$(left)
  if [ "$l" -lt 15 ]; then record "$name" "SKIP(time)" 0 "${l}s of the budget left"; return 0; fi
  if [ "$t" -gt "$l" ]; then t=$l; clamped=1; fi
  echo "==== $name (limit ${t}s): $*" >> "$OUT/steps.log"
  local s0; s0=$(date +%s)
  timeout --signal=TERM --kill-after=5 "$t" "$@" >> "$OUT/steps.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - s0 ))
  case $rc in
    0) record "$name" PASS "$dt" ;;
    77) record "$name" SKIP "$dt" "exit 77" ;;
    124|137) if [ $clamped = 1 ]; then record "$name" "SKIP(time)" "$dt" "limit clamped to the ${t}s left"
             else record "$name" FAIL "$dt" "timeout after ${t}s"; fi ;;
    *) record "$name" FAIL "$dt" "exit $rc" ;;
  esac
}
# verdict_of: fail when a step failed; with a GPU, pass only when every
# REQUIRED step passed and nothing was skipped, else pass-partial; no-gpu without one
verdict_of() {
  local i r req
  for r in "${RESULTS[@]}"; do [ "$r" = FAIL ] && { echo fail; return; }; done
  [ "$N_GPU" -gt 0 ] || { echo no-gpu; return; }
  for req in $REQUIRED; do
    local ok=0; for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$req" ] && [ "${RESULTS[$i]}" = PASS ] && ok=1; done
    [ $ok = 1 ] || { echo pass-partial; return; }
  done
  for r in "${RESULTS[@]}"; do [ "$r" = PASS ] || { echo pass-partial; return; }; done
  echo pass
}
write_verdict() { # [incomplete]
  local v; v=${1:-$(verdict_of)}; local i n=${#NAMES[@]}
  {
    printf '{\n  "verdict": "%s",\n  "seconds": %d,\n  "budget_s": %d,\n  "commit": "%s",\n  "steps": [\n' \
      "$v" $(( $(date +%s) - T0 )) "$BUDGET" "${GT_COMMIT:-unknown}"
    for i in "${!NAMES[@]}"; do
      local note=${NOTES[$i]//\\/\\\\}; note=${note//\"/\\\"}
      printf '    {"name": "%s", "result": "%s", "seconds": %s, "note": "%s"}%s\n' \
        "${NAMES[$i]}" "${RESULTS[$i]}" "${SECS[$i]}" "$note" "$([ "$i" -lt $((n - 1)) ] && echo ,)"
    done
    printf '  ]\n}\n'
  } > "$OUT/verdict.json.tmp" && mv "$OUT/verdict.json.tmp" "$OUT/verdict.json"
}
