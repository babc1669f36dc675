#!/bin/sh
# Installs the field's own packages into a virtual environment under a build
# directory, so tests/peers can compare gridtrain with them:
#   energy-fault-detector  the CARE to Compare authors' library (CAREScore,
#                          their autoencoder workflow; brings TensorFlow)
#   nilmtk-s14pe           NILMTK packaged with current dependencies (metrics,
#                          dataset converters)
# Usage: tests/peers/setup.sh [BUILD_DIR]      (default: build-cpu)
# Needs the network once (about 2.6 GB: TensorFlow); afterwards the tests use
# the environment offline. Run it again to retry what failed; what is installed
# is kept. Debian: python3 -m venv needs the python3-venv package.
# Neither the README's commands nor CI run this: without the environment the
# peer tests (ctest -L peers) skip and say why.
set -u
BUILD=${1:-build-cpu}
VENV="$BUILD/peers-venv"
PY=${GT_SYSTEM_PYTHON:-/usr/bin/python3}
# Pinned: the versions the identity tests were written against.
EFD="energy-fault-detector==0.8.1"
NILMTK="nilmtk-s14pe==0.4.0.dev2"
# and every dependency at the version the tests ran with
CONSTRAINTS="$(dirname "$0")/constraints.txt"

if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "setup.sh: $PY has no venv/ensurepip module (Debian: apt-get install python3-venv)" >&2
    exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$BUILD" && "$PY" -m venv "$VENV" || {
        echo "setup.sh: cannot create $VENV" >&2; exit 1; }
fi
VPY="$VENV/bin/python"

failed=""
for spec in "$EFD" "$NILMTK"; do
    pkg=$(echo "$spec" | cut -d= -f1)
    log="$VENV/install-$pkg.log"
    if [ "$("$VPY" -m pip show "$pkg" 2>/dev/null | sed -n 's/^Version: //p')" = "${spec#*==}" ]; then
        echo "setup.sh: $spec already installed"
        continue
    fi
    echo "setup.sh: installing $spec (log: $log)"
    if "$VPY" -m pip install -c "$CONSTRAINTS" "$spec" >"$log" 2>&1; then
        echo "setup.sh: $spec installed"
    else
        echo "setup.sh: $spec could NOT be installed; pip said:" >&2
        grep -E 'ERROR|error:|No matching|requires' "$log" | head -n 8 >&2
        failed="$failed $spec"
    fi
done
"$VPY" -m pip freeze >"$VENV/freeze.txt" 2>/dev/null
if [ -n "$failed" ]; then
    echo "setup.sh: not installed:$failed (their peer tests skip)" >&2
    exit 1
fi
echo "setup.sh: $VENV ready"
