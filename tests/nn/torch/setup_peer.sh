#!/bin/sh
# Installs a pinned PyTorch 2.x (tests/nn/torch/peer_requirements.txt) into a
# virtual environment under a build directory, for the model benchmark's
# PyTorch peer (bench_vs_torch.py finds BUILD/torch-venv by itself) and the
# NILM quality peer (tests/eval/nilm_peer_torch.py).
# Usage: tests/nn/torch/setup_peer.sh [BUILD_DIR]      (default: build-cpu)
# Needs the network once: PyPI's Linux wheel of torch is the CUDA build, whose
# libraries need the CUDA runtime libraries at load time even on a CPU-only
# machine (peer_requirements.txt says which): about 2.5 GB downloaded (torch
# 0.54 GB, the CUDA libraries 1.9 GB), 4.1 GB installed. Afterwards everything
# runs offline. Run it again to retry what failed; what is installed at the
# pinned version is kept.
# The environment sees Debian's packages (--system-site-packages: numpy, h5py
# for the NILM peer); its own torch shadows Debian's python3-torch 1.13, which
# stays the fallback wherever this environment does not exist.
# Neither the README's commands nor CI run this.
set -u
BUILD=${1:-build-cpu}
VENV="$BUILD/torch-venv"
PY=${GT_SYSTEM_PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
REQS="$HERE/peer_requirements.txt"

if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "setup_peer.sh: $PY has no venv/ensurepip module (Debian: apt-get install python3-venv)" >&2
    exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$BUILD" && "$PY" -m venv --system-site-packages "$VENV" || {
        echo "setup_peer.sh: cannot create $VENV" >&2; exit 1; }
fi
VPY="$VENV/bin/python"

failed=""
for spec in $(sed -e 's/#.*//' "$REQS"); do
    pkg=${spec%%==*}
    want=${spec#*==}
    have=$("$VPY" -m pip show "$pkg" 2>/dev/null | sed -n 's/^Version: //p')
    # a package Debian has (dist-packages) counts only when the venv's own copy is the pinned one
    loc=$("$VPY" -m pip show "$pkg" 2>/dev/null | sed -n 's/^Location: //p')
    if [ "$have" = "$want" ] && [ "${loc#"$(cd "$VENV" && pwd)"}" != "$loc" ]; then
        echo "setup_peer.sh: $spec already installed"
        continue
    fi
    log="$VENV/install-$pkg.log"
    echo "setup_peer.sh: installing $spec (log: $log)"
    if "$VPY" -m pip install --no-deps --ignore-installed "$spec" >"$log" 2>&1; then
        :
    else
        echo "setup_peer.sh: $spec could NOT be installed; pip said:" >&2
        grep -E 'ERROR|error:|No matching|requires|No space' "$log" | head -n 6 >&2
        failed="$failed $spec"
    fi
done
"$VPY" -m pip freeze --local >"$VENV/freeze.txt" 2>/dev/null

# what it can do: the version, where ATen's kernels dispatch, bf16 autocast, SDPA, torch.compile
mkdir -p "$BUILD/torchinductor-cache"
TORCHINDUCTOR_CACHE_DIR="$BUILD/torchinductor-cache" TORCHINDUCTOR_COMPILE_THREADS=1 OMP_NUM_THREADS=1 \
    "$VPY" - <<'EOF'
import sys
try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001
    print(f"setup_peer.sh: import torch fails: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
print(f"setup_peer.sh: torch {torch.__version__} from {torch.__file__}")
print(f"setup_peer.sh: CPU capability {torch.backends.cpu.get_cpu_capability()}, "
      f"oneDNN {torch.backends.mkldnn.is_available()}")
ok = True
x = torch.randn(64, 64)
try:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.nn.functional.linear(x, x)
    assert y.dtype == torch.bfloat16
    print("setup_peer.sh: bf16 autocast: works")
except Exception as e:  # noqa: BLE001
    print(f"setup_peer.sh: bf16 autocast FAILS: {type(e).__name__}: {e}", file=sys.stderr)
    ok = False
try:
    q = torch.randn(1, 2, 8, 4)
    F.scaled_dot_product_attention(q, q, q)
    print("setup_peer.sh: F.scaled_dot_product_attention: works")
except Exception as e:  # noqa: BLE001
    print(f"setup_peer.sh: F.scaled_dot_product_attention FAILS: {type(e).__name__}: {e}", file=sys.stderr)
    ok = False
try:
    f = torch.compile(lambda t: torch.relu(t) * 2 + 1)
    t = torch.randn(16)
    assert torch.allclose(f(t), torch.relu(t) * 2 + 1)
    print("setup_peer.sh: torch.compile (inductor, C++ CPU backend): works")
except Exception as e:  # noqa: BLE001
    msg = str(e).strip().splitlines()
    print(f"setup_peer.sh: torch.compile FAILS (its recipes will be reported as failed): {type(e).__name__}: "
          f"{msg[0] if msg else ''}", file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
check=$?
if [ -n "$failed" ]; then
    echo "setup_peer.sh: not installed:$failed" >&2
    exit 1
fi
[ $check -eq 0 ] || { echo "setup_peer.sh: $VENV is not usable (above)" >&2; exit 1; }
echo "setup_peer.sh: $VENV ready ($(du -sh "$VENV" 2>/dev/null | cut -f1)); bench_vs_torch.py and ctest use it"
