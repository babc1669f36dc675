"""h5py (an independent reader) checks files written by the C writers with 2 ranks:
every attribute, table and element of the closed-form test sources
(tests/io/testgen.h), the chunking/compression settings, and, when the gridtrain
executable and the synthetic generators are built, a `gridtrain synth` file.
Usage: test_io_h5py.py PATH/TO/gt_io_tool   (exit 77 when h5py is missing)."""
import os
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
T0 = 1767571200000
A, C = 5, 4
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run(["mpiexec", "-n", "2"] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
    return p


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def nilm_expect(h):
    n = 500 + 137 * h
    period = 2.0 if h % 4 == 3 else 6.0
    i = np.arange(n)
    agg = (h * 1000 + i).astype(np.float32)
    app = (np.float32(h * 100) + np.arange(A, dtype=np.float32)[None, :]) + (i % 7)[:, None].astype(np.float32) * np.float32(0.5)
    flags = ((i + h) % 50 == 0).astype(np.uint8)
    ts = T0 + h * 60000 + i * int(period * 1000)
    return n, period, ts, agg, app.astype(np.float32), flags


def check_nilm(path, H, chunk, deflate):
    with h5py.File(path, "r") as f:
        check(s(f.attrs["kind"]) == "nilm", "kind attribute")
        check(int(f.attrs["schema_version"]) == 1, "schema_version attribute")
        check(s(f.attrs["generator"]) == "tests/io/testgen.h", "generator attribute")
        check(int(f.attrs["generator_seed"]) == 42, "generator_seed attribute")
        hh = f["households"]
        check(list(hh["id"][:]) == [1000 + h for h in range(H)], "household ids")
        off = hh["row_offset"][:]
        check(off.dtype == np.int64 and len(off) == H + 1, "row_offset dtype/shape")
        check(list(np.diff(off)) == [500 + 137 * h for h in range(H)] and off[0] == 0, "row offsets")
        owns = hh["owns"][:]
        check(owns.shape == (H, A) and all(owns[h, a] == (h + a) % 2 for h in range(H) for a in range(A)), "owns")
        names = [s(x) for x in f["appliance_meta/name"][:]]
        check(names == ["app%d" % a for a in range(A)], "appliance names %r" % names)
        check(np.array_equal(f["appliance_meta/on_power_w"][:], np.float32(10) * np.arange(1, A + 1)), "on_power_w")
        check(np.array_equal(f["appliance_meta/max_power_w"][:], np.float32(1000) * np.arange(1, A + 1)), "max_power_w")
        check(f["aggregate"].dtype == np.float32 and f["appliances"].dtype == np.float32, "float32 data")
        check(f["timestamps"].dtype == np.int64 and f["fault_flags"].dtype == np.uint8, "int64/uint8 data")
        check(f["appliances"].shape == (off[-1], A), "appliances shape")
        check(f["aggregate"].chunks == (chunk,) and f["appliances"].chunks == (chunk, A), "chunking")
        if deflate:
            check(f["appliances"].compression == "gzip" and f["appliances"].compression_opts == deflate
                  and f["appliances"].shuffle, "deflate + shuffle")
        else:
            check(f["appliances"].compression is None, "uncompressed")
        lr = f["lowres"]
        check(float(lr.attrs["period_s"]) == 60.0, "lowres period attribute")
        loff = lr["row_offset"][:]
        for h in range(H):
            n, period, ts, agg, app, flags = nilm_expect(h)
            a, b = off[h], off[h + 1]
            check(float(hh["period_s"][h]) == period, "period of household %d" % h)
            check(np.array_equal(f["timestamps"][a:b], ts), "timestamps of household %d" % h)
            check(np.array_equal(f["aggregate"][a:b], agg), "aggregate of household %d" % h)
            check(np.array_equal(f["appliances"][a:b], app), "appliances of household %d" % h)
            check(np.array_equal(f["fault_flags"][a:b], flags), "fault flags of household %d" % h)
            # low resolution: mean of each 60 s bin
            bins = (np.arange(n) * int(period * 1000)) // 60000
            nb = bins[-1] + 1
            check(loff[h + 1] - loff[h] == nb, "lowres rows of household %d" % h)
            la = lr["aggregate"][loff[h]:loff[h + 1]]
            lp = lr["appliances"][loff[h]:loff[h + 1]]
            lt = lr["timestamps"][loff[h]:loff[h + 1]]
            ea = np.array([agg[bins == k].astype(np.float64).mean() for k in range(nb)], dtype=np.float32)
            ep = np.array([app[bins == k].astype(np.float64).mean(axis=0) for k in range(nb)], dtype=np.float32)
            check(np.array_equal(la, ea) and np.array_equal(lp, ep), "lowres means of household %d" % h)
            check(np.array_equal(lt, T0 + h * 60000 + np.arange(nb) * 60000), "lowres timestamps of household %d" % h)


def check_pdm(path, T):
    with h5py.File(path, "r") as f:
        check(s(f.attrs["kind"]) == "pdm" and int(f.attrs["schema_version"]) == 1, "pdm root attributes")
        tb = f["turbines"]
        check(list(tb["id"][:]) == [500 + t for t in range(T)], "turbine ids")
        check(list(tb["farm"][:]) == [t // 3 for t in range(T)] and tb["farm"].dtype == np.int32, "farms")
        check(list(tb["machine_type"][:]) == [t % 2 for t in range(T)], "machine types")
        check(np.all(tb["rate_hz"][:] == 10.0), "rates")
        off = tb["row_offset"][:]
        check(list(np.diff(off)) == [3000 + 1000 * t for t in range(T)], "pdm offsets")
        check([s(x) for x in f["channels/name"][:]] == ["ch%d" % c for c in range(C)], "channel names")
        check([s(x) for x in f["channels/unit"][:]] == ["kW", "degC", "mm/s", "bar"], "channel units")
        check([s(x) for x in f["legend/event_kind"][:]] == ["normal", "bearing_wear"], "event legend")
        sig = f["signals"]
        check(sig.shape == (off[-1], C) and sig.dtype == np.float32, "signals shape/type")
        for t in range(T):
            n = 3000 + 1000 * t
            i = np.arange(n)
            e = (np.float32(t * 10000) + i.astype(np.float32))[:, None] + np.float32(0.25) * np.arange(C, dtype=np.float32)[None, :]
            check(np.array_equal(sig[off[t]:off[t + 1]], e.astype(np.float32)), "signals of turbine %d" % t)
            lab = ((t % 2 == 0) & (i >= 100) & (i < 200)).astype(np.uint8)
            check(np.array_equal(f["labels"][off[t]:off[t + 1]], lab), "labels of turbine %d" % t)
            check(np.array_equal(f["timestamps"][off[t]:off[t + 1]], T0 + t * 1000 + i * 100), "timestamps of turbine %d" % t)
        seg = f["segments"]
        exp_t = [t for t in range(T) for _ in range(2)]
        check(list(seg["turbine"][:]) == exp_t, "segment turbines")
        check(list(seg["condition"][:]) == [0, 1] * T, "segment conditions")
        check(list(seg["end_row"][:]) == [x for t in range(T) for x in ((3000 + 1000 * t) // 2, 3000 + 1000 * t)], "segment ends")
        ev = f["events"]
        check(list(ev["turbine"][:]) == [t for t in range(T) if t % 2 == 0], "event turbines")
        check(list(ev["start_row"][:]) == [100] * len(ev["turbine"]) and list(ev["kind"][:]) == [1] * len(ev["turbine"]), "events")


with tempfile.TemporaryDirectory(dir=os.getcwd()) as d:
    pn, pc, pp = os.path.join(d, "n.h5"), os.path.join(d, "nc.h5"), os.path.join(d, "p.h5")
    check(run(TOOL, "write-nilm", pn, "0", "0", "256", "6", "60").returncode == 0, "write nilm")
    check(run(TOOL, "write-nilm", pc, "3", "0", "200", "6", "60").returncode == 0, "write compressed nilm")
    check(run(TOOL, "write-pdm", pp, "0", "5").returncode == 0, "write pdm")
    check(not os.path.exists(pn + ".tmp"), "temporary file renamed")
    check_nilm(pn, 6, 256, 0)
    check_nilm(pc, 6, 200, 3)
    check_pdm(pp, 5)

    # the real generators through the CLI, when both are built
    exe = os.path.join(os.environ.get("GT_BINARY_DIR", ""), "gridtrain")
    help_ok = os.path.exists(exe) and subprocess.run([exe, "synth", "--help"], capture_output=True).returncode == 0
    if help_ok:
        gn = os.path.join(d, "g.h5")
        p = run(exe, "synth", "nilm", "-o", gn, "synth.households=3", "synth.days=0.5", "synth.seed=5")
        check(p.returncode == 0, "gridtrain synth nilm")
        if p.returncode == 0:
            with h5py.File(gn, "r") as f:
                check(s(f.attrs["kind"]) == "nilm" and int(f.attrs["generator_seed"]) == 5, "synth attributes")
                flags = f["fault_flags"][:]
                agg = f["aggregate"][:]
                check(np.all(np.isnan(agg[(flags & 2) != 0])), "gap flags are NaN in the aggregate")
                check(np.all(np.isfinite(agg[flags == 0])), "unflagged rows are finite")
                check(f["appliances"].shape[1] == 15 and len(f["appliance_meta/name"]) == 15, "15 appliances")
                off = f["households/row_offset"][:]
                ts = f["timestamps"][:]
                for h in range(3):
                    check(np.all(np.diff(ts[off[h]:off[h + 1]]) == 6000), "6 s steps in household %d" % h)
    else:
        print("note: gridtrain synth not runnable here; CLI file not checked")

print("%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
