"""Every schema error gets one clear line naming the file and the dataset (or
attribute) and exit code 3 (GT_EXIT_DATA), under 2 ranks, from both inspect and
the sharded reader; the broken file is never modified. Broken files are made
from good ones with h5py. Also a data finding (time stamp gap) seen by inspect.
Usage: test_io_schema.py PATH/TO/gt_io_tool   (exit 77 when h5py is missing)."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError:
    print("skipped: h5py/numpy not available to", sys.executable)
    sys.exit(77)

TOOL = sys.argv[1]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def mpi(*args, n=2):
    return subprocess.run(["mpiexec", "-n", str(n)] + list(args), capture_output=True, text=True)


def digest(path):
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest(), os.stat(path).st_mtime_ns


cases = []  # (path, needles, what, also through the reader in its own job)


def expect_error(path, needles, what, read=False):
    cases.append((path, needles, what, read))


def run_cases():
    """One 2-rank job inspects every broken file (gt_io_inspect returns the exit
    code); a few go through the sharded reader too, each in its own job, for the
    abort path's exit code."""
    before = {c[0]: digest(c[0]) for c in cases}
    p = mpi(TOOL, "inspect-many", *[c[0] for c in cases])
    rc = {}
    for l in p.stdout.splitlines():
        if l.startswith("RESULT "):
            _, code, path = l.split(" ", 2)
            rc[path] = int(code)
    lines = [l for l in p.stderr.splitlines() if "error:" in l]
    for path, needles, what, read in cases:
        mine = [l for l in lines if l.startswith("gridtrain: error: " + path + ":")]
        ok = rc.get(path) == 3 and len(mine) == 1 and all(n in mine[0] for n in needles)
        check(ok, "%s (inspect): rc %r, lines %r" % (what, rc.get(path), mine or p.stderr[-500:]))
        if ok:
            print("ok %-30s %s" % (what, mine[0]))
        if read:
            q = mpi(TOOL, "read", path)
            errs = [l for l in q.stderr.splitlines() if "error:" in l]
            ok = q.returncode == 3 and len(errs) == 1 and path in errs[0] and all(n in errs[0] for n in needles)
            check(ok, "%s (reader): rc %d, lines %r" % (what, q.returncode, errs or q.stderr[-500:]))
        check(digest(path) == before[path], "%s: file unchanged" % what)


with tempfile.TemporaryDirectory(dir=os.getcwd()) as d:
    good_n, good_p = os.path.join(d, "good_n.h5"), os.path.join(d, "good_p.h5")
    check(mpi(TOOL, "write-nilm", good_n, "0", "0", "256", "4", "60").returncode == 0, "write nilm")
    check(mpi(TOOL, "write-pdm", good_p, "0", "3").returncode == 0, "write pdm")
    p = mpi(TOOL, "inspect", good_n)
    check(p.returncode == 0 and "summary:" in p.stdout, "good nilm file inspects clean: %s" % p.stderr)
    p = mpi(TOOL, "inspect", good_p)
    check(p.returncode == 0 and "summary:" in p.stdout, "good pdm file inspects clean: %s" % p.stderr)

    n_case = [0]

    def broken(src, edit):
        n_case[0] += 1
        path = os.path.join(d, "broken%02d.h5" % n_case[0])
        shutil.copy(src, path)
        with h5py.File(path, "r+") as f:
            edit(f)
        return path

    def retype(f, name, dtype):
        data = f[name][:]
        del f[name]
        f.create_dataset(name, data=data.astype(dtype))

    def reshape(f, name, data):
        del f[name]
        f.create_dataset(name, data=data)

    # NILM
    expect_error(broken(good_n, lambda f: f.__delitem__("aggregate")), ["/aggregate", "missing dataset"], "missing dataset", read=True)
    expect_error(broken(good_n, lambda f: f.__delitem__("households")), ["/households/id", "missing"], "missing group")
    expect_error(broken(good_n, lambda f: retype(f, "timestamps", "f8")), ["/timestamps", "wrong type float64", "int64"], "wrong type")
    expect_error(broken(good_n, lambda f: retype(f, "appliances", "f8")), ["/appliances", "wrong type"], "wrong type 2d")
    expect_error(broken(good_n, lambda f: reshape(f, "appliances", f["appliances"][:, :4])), ["/appliances", "wrong shape"], "wrong shape")
    expect_error(broken(good_n, lambda f: reshape(f, "households/row_offset", f["households/row_offset"][:-1])),
                 ["/households/row_offset", "wrong shape"], "offsets too short")

    def not_increasing(f):
        o = f["households/row_offset"]
        o[2] = o[1]
    expect_error(broken(good_n, not_increasing), ["/households/row_offset", "not increasing"], "offsets not increasing")

    def bad_last(f):
        o = f["households/row_offset"]
        o[-1] = o[-1] - 1
    expect_error(broken(good_n, bad_last), ["/households/row_offset", "does not match"], "offsets vs rows")

    def lowres_bad(f):
        o = f["lowres/row_offset"]
        o[0] = 5
    expect_error(broken(good_n, lowres_bad), ["/lowres/row_offset", "first offset"], "lowres offsets")
    expect_error(broken(good_n, lambda f: f.attrs.__setitem__("schema_version", 2)), ["schema_version", "version 2"], "wrong version", read=True)
    expect_error(broken(good_n, lambda f: f.attrs.__setitem__("kind", "foo")), ["'kind'", "unknown kind 'foo'"], "unknown kind")
    expect_error(broken(good_n, lambda f: f.attrs.__delitem__("kind")), ["'kind'", "missing"], "missing kind")
    expect_error(broken(good_n, lambda f: f.attrs.__delitem__("schema_version")), ["schema_version", "missing"], "missing version")
    # PdM
    expect_error(broken(good_p, lambda f: f.__delitem__("signals")), ["/signals", "missing dataset"], "pdm missing signals")
    expect_error(broken(good_p, lambda f: retype(f, "labels", "i4")), ["/labels", "wrong type int32", "uint8"], "pdm labels type", read=True)
    expect_error(broken(good_p, lambda f: reshape(f, "signals", f["signals"][:-1])), ["/signals", "wrong shape"], "pdm signals rows")

    def event_turbine(f):
        t = f["events/turbine"]
        t[0] = 9
    expect_error(broken(good_p, event_turbine), ["/events/turbine", "turbine 9"], "event turbine out of range")

    def segment_rows(f):
        e = f["segments/end_row"]
        e[0] = 10 ** 9
    expect_error(broken(good_p, segment_rows), ["/segments/start_row", "outside"], "segment rows out of range")
    # not HDF5, missing file
    text = os.path.join(d, "text.h5")
    with open(text, "w") as fh:
        fh.write("timestamp,power\n1,2\n")
    expect_error(text, ["not an HDF5 file"], "not HDF5", read=True)
    expect_error(os.path.join(d, "nope.h5"), ["cannot open file"], "missing file")
    run_cases()

    # a data finding (not a schema error): a one-hour jump in household 0's time stamps
    def jump(f):
        ts = f["timestamps"]
        ts[100:200] = ts[100:200] + 3600 * 1000
    jp = broken(good_n, jump)
    p = mpi(TOOL, "inspect", jp)
    summary = [l for l in p.stdout.splitlines() if l.startswith("summary:")]
    check(p.returncode == 0 and summary and " gaps=1 " in summary[0] and " ts_backward=1 " in summary[0],
          "time stamp jump reported: %r" % (summary or p.stderr))
    p = subprocess.run(["mpiexec", "-n", "2", TOOL, "inspect", jp, "1"], capture_output=True, text=True)
    check(p.returncode == 3, "strict inspect fails on data findings (rc %d)" % p.returncode)

    # the same through the gridtrain CLI when the dispatcher is built
    exe = os.path.join(os.environ.get("GT_BINARY_DIR", ""), "gridtrain")
    if os.path.exists(exe) and subprocess.run([exe, "inspect", "--help"], capture_output=True).returncode == 0:
        bad = broken(good_n, lambda f: f.__delitem__("appliances"))
        before = digest(bad)
        p = mpi(exe, "inspect", bad)
        errs = [l for l in p.stderr.splitlines() if "error:" in l]
        check(p.returncode == 3 and len(errs) == 1 and bad in errs[0] and "/appliances" in errs[0],
              "gridtrain inspect on a broken file: rc %d %r" % (p.returncode, errs))
        check(digest(bad) == before, "gridtrain inspect leaves the file unchanged")
    else:
        print("note: gridtrain inspect not runnable here; CLI not checked")

print("%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
