# tests/cli/lib.sh: the check helpers of the CLI script tests, sourced after
# the test sets W (its scratch directory). Counts in n_ok and fails.
fails=0
n_ok=0
ok() { echo "ok   $*"; n_ok=$((n_ok + 1)); }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect NAME RC PATTERN -- CMD...: exit code RC and PATTERN (grep -E) in stderr+stdout
expect() {
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >"$W/out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then bad "$name: exit $rc, want $want"; tail -5 "$W/out"; return 1; fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$W/out"; then bad "$name: output lacks /$pat/"; tail -5 "$W/out"; return 1; fi
  ok "$name"
}
