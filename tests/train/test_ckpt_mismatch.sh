#!/bin/sh
# A checkpoint of another model is a clear user error: exit 3 (GT_EXIT_DATA)
# with a message naming the file and the tensor (or model kind), at 1 and 2
# ranks; the matching model written with 2 ranks loads with 1.
# Usage: test_ckpt_mismatch.sh PATH/TO/ckpt_tool
set -u
TOOL=$1
DIR=$(mktemp -d /tmp/gt-ckpt-mm-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail=0
mpiexec -n 2 "$TOOL" write "$DIR/run" >/dev/null || { echo "FAIL: write"; exit 1; }
mpiexec -n 1 "$TOOL" load "$DIR/run" 8 || { echo "FAIL: 2-rank checkpoint does not load with 1 rank"; fail=1; }

expect() { # NP HIDDEN KIND PATTERN...
    np=$1 hidden=$2 kind=$3
    shift 3
    mpiexec -n "$np" "$TOOL" load "$DIR/run" "$hidden" "$kind" >"$DIR/out" 2>&1
    rc=$?
    if [ "$rc" -ne 3 ]; then echo "FAIL: np $np hidden $hidden $kind: exit $rc, expected 3"; fail=1; fi
    for pat in "$@"; do
        if ! grep -q -- "$pat" "$DIR/out"; then echo "FAIL: np $np hidden $hidden $kind: no '$pat' in:"; cat "$DIR/out"; fail=1; fi
    done
}
expect 1 16 s2p_cnn "ckpt-000000100.h5" "fc1.weight" "shape (8, 64)" "(16, 64)"
expect 2 16 s2p_cnn "ckpt-000000100.h5" "fc1.weight"
expect 1 8 lstm "ckpt-000000100.h5" "holds a s2p_cnn model" "lstm"
[ $fail -eq 0 ] && echo "mismatch checks passed"
exit $fail
