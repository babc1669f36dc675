#!/bin/sh
# CLI-level test of `gridtrain synth`, `inspect` and `bench read` under mpiexec:
# exit codes, the temporary-name rule (an existing output survives a failed
# write), and one-line errors. Skips (77) when the gridtrain dispatcher is not built.
set -u
exe="${GT_BINARY_DIR:?}/gridtrain"
[ -x "$exe" ] || { echo "skipped: $exe not built"; exit 77; }
"$exe" synth --help >/dev/null 2>&1 || { echo "skipped: gridtrain synth not available"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/gt_io_cli.XXXXXX")
trap 'rm -rf "$d"' EXIT
fail=0
ck() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
run() { mpiexec -n 2 "$exe" "$@" >"$d/out" 2>"$d/err"; echo $?; }

rc=$(run synth nilm -o "$d/n.h5" synth.households=4 synth.days=0.25 synth.compress=1 synth.chunk_rows=4096)
ck "synth nilm exits 0 (rc $rc)" '[ "$rc" = 0 ] && [ -f "$d/n.h5" ] && [ ! -e "$d/n.h5.tmp" ]'
rc=$(run inspect "$d/n.h5")
ck "inspect nilm exits 0 and reports the share (rc $rc)" '[ "$rc" = 0 ] && grep -q "imbalance (max/mean rows)" "$d/out" && grep -q "^summary: kind=nilm items=4" "$d/out"'
rc=$(run synth pdm -o "$d/p.h5" synth.farms=1 synth.turbines_per_farm=3 synth.days=0.01)
ck "synth pdm exits 0 (rc $rc)" '[ "$rc" = 0 ] && [ -f "$d/p.h5" ]'
rc=$(run inspect "$d/p.h5")
ck "inspect pdm exits 0 (rc $rc)" '[ "$rc" = 0 ] && grep -q "^summary: kind=pdm items=3" "$d/out"'
rc=$(run bench read "$d/n.h5" --reps 1)
ck "bench read prints the ratio (rc $rc)" '[ "$rc" = 0 ] && grep -q "ratio hdf5/plain" "$d/out"'

# writers use a new unique temporary next to the output: a stale FILE.tmp (an
# older gridtrain's fixed name, here a directory) no longer blocks the write
echo precious > "$d/replace.h5"
mkdir "$d/replace.h5.tmp"
rc=$(run synth nilm -o "$d/replace.h5" synth.households=2 synth.days=0.1)
ck "synth writes past a stale FILE.tmp (rc $rc)" '[ "$rc" = 0 ] && [ -d "$d/replace.h5.tmp" ] && [ "$(head -c 4 "$d/replace.h5" | tail -c 3)" = HDF ]'
# a failed write leaves an existing output untouched (disk full: tests/cli/test_outputs.sh)
rc=$(run synth nilm -o "$d/no/such/dir/x.h5" synth.households=2 synth.days=0.1)
ck "synth fails when the temporary file cannot be created (rc $rc)" '[ "$rc" = 4 ] && grep -q "cannot create the output" "$d/err"'
echo precious > "$d/keep.h5"

# schema errors: exit 3, one line naming the file
rc=$(run inspect "$d/keep.h5")
ck "inspect of a non-HDF5 file exits 3 (rc $rc)" '[ "$rc" = 3 ] && [ "$(grep -c "error:" "$d/err")" = 1 ] && grep -q "keep.h5: not an HDF5 file" "$d/err"'
rc=$(run bench read "$d/keep.h5")
ck "bench read of a non-HDF5 file exits 3 (rc $rc)" '[ "$rc" = 3 ] && grep -q "keep.h5: not an HDF5 file" "$d/err"'
exit $fail
