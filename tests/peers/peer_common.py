"""tests/peers/peer_common.py: what the peer scripts share (the comparisons
of gridtrain with the field's own code, tests/peers/*.py):

* where things are: HERE (tests/peers), ROOT (the source tree), VENV_NAME
  (the peers' environment under a build directory, made by setup.sh and
  found by run_peer.sh and tests/peers/CMakeLists.txt), and tests/import on
  sys.path (its checks, fixtures and generators);
* the skip: `with peer_packages(): import ...` exits 77 ("skipped: ...", the
  ctest skip code) when an import fails, i.e. without the peers' environment;
  `skip(reason)` likewise; `require(*modules)` for a script that imports late;
* the arguments: `args(USAGE, n)` the first n command-line arguments, or the
  usage line and exit 2;
* the checks: `ck`, `FAIL` (tests/import/checks.py) and `finish(work)`, the
  last lines (failures counted, exit 1 keeping the files; else the files
  removed, "all checks passed");
* gridtrain: `runner(GRIDTRAIN)(*args)` (output captured, 600 s limit) and
  `run_quiet(GRIDTRAIN, *args, env=...)` (warnings only, a failure raises);
* printing: `versions(*distributions)` ("nilmtk-s14pe 0.4.0.dev2, ..."),
  `md_table(header, rows)` (a Markdown table, one line per row).

Standard library only: it must import where the peers' packages are absent
(the skip path).
"""
import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
VENV_NAME = "peers-venv"
sys.path.insert(0, os.path.join(ROOT, "tests", "import"))
from checks import FAIL, ck, runner  # noqa: E402,F401  (re-exported)

SKIP = 77


def skip(reason):
    print("skipped: " + reason)
    sys.exit(SKIP)


@contextlib.contextmanager
def peer_packages():
    """imports inside the block that fail skip the script (exit 77)"""
    try:
        yield
    except ImportError as e:
        skip(f"the peer environment lacks {e}")


def require(*modules):
    """skip (exit 77) unless every module can be imported"""
    for m in modules:
        if importlib.util.find_spec(m) is None:
            skip(f"the peer environment lacks {m} (tests/peers/setup.sh installs it)")


def args(usage, n):
    """the first n command-line arguments; the usage line and exit 2 when fewer"""
    if len(sys.argv) < n + 1:
        print("usage: " + usage, file=sys.stderr)
        sys.exit(2)
    return sys.argv[1:n + 1]


def setup_env():
    """the peers' noise off, one BLAS thread (the comparisons' timings and sums)"""
    warnings.filterwarnings("ignore")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def versions(*dists):
    from importlib.metadata import version
    return ", ".join(f"{d} {version(d)}" for d in dists)


def run_quiet(exe, *a, env=None):
    """gridtrain with warnings only, output captured; a failure raises CalledProcessError"""
    return subprocess.run([exe, *a, "--log-level", "warn"], check=True, env=env, capture_output=True)


def md_table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


def finish(work):
    """the end of a comparison: exit 1 (files kept) on a failed check, else 0 (files removed)"""
    if FAIL:
        print(f"{len(FAIL)} check(s) failed; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print("all checks passed")
    sys.exit(0)
