#!/usr/bin/python3
"""tests/import/test_import.py: end-to-end tests of `import` (label import).

Writes small fixtures in the exact published layouts (UK-DALE, REDD low_freq,
REFIT CLEAN, CARE to Compare), imports them with gt_import_tool under mpiexec
-n 1, 2, 4, reads the HDF5 back with h5py and checks values at known time
stamps, resampling means against an independent numpy computation and
hand-computed rows, the gap mask, the CARE labels/events/segments, byte
identical datasets across rank counts, `inspect`, and every bad-line case
(message names FILE:LINE, exit code 3; --strict turns warnings into errors).

usage: test_import.py GT_IMPORT_TOOL MAP_INI
"""
import hashlib
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:  # Debian python3-h5py missing
    print("skipped:", e)
    sys.exit(77)

TOOL, MAP = sys.argv[1], sys.argv[2]
FAIL = []
T0 = 1400000004  # s; not a multiple of 6: the grid starts at floor(T0 / P) * P


def ck(name, cond, extra=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else "  " + str(extra)))
    if not cond:
        FAIL.append(name)


def run(np_, *args, strict=False):
    cmd = ["mpiexec", "-n", str(np_), TOOL, "import", *args, "--appliances", MAP]
    if strict:
        cmd.append("--strict")
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120)
    return p.returncode, p.stdout, p.stderr


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


def bin_means(ts, vs, t0, P, n):
    """independent reference: mean of samples with t in [t0 + kP, t0 + (k+1)P)"""
    out = np.full(n, np.nan)
    k = np.floor((np.asarray(ts) - t0) / P).astype(np.int64)
    for kk in np.unique(k):
        if 0 <= kk < n:
            out[kk] = np.mean(np.asarray(vs, dtype=np.float64)[k == kk])
    return out


def checksums(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = hashlib.sha256(obj[()].tobytes()).hexdigest()
        f.visititems(visit)
        for k, v in f.attrs.items():
            out["@" + k] = str(v)
    return out


d = tempfile.mkdtemp(prefix="gt_import_")
rng = np.random.default_rng(7)

# ------------------------------------------------------------------ UK-DALE --
uk = os.path.join(d, "ukdale")
# house 1: mains.dat at 1 s (timestamp active apparent voltage), channels at 6 s
write(f"{uk}/house_1/labels.dat", "1 aggregate\n2 kettle\n3 fridge\n4 mystery_box\n5 washer_dryer\n")
n1 = 3600  # one hour of 1-s mains
m_t = T0 + np.arange(n1)
m_p = np.round(rng.uniform(100, 3000, n1), 2)
write(f"{uk}/house_1/mains.dat", "".join(f"{t} {p:.2f} {p * 1.1:.2f} 241.5\n" for t, p in zip(m_t, m_p)))
write(f"{uk}/house_1/channel_1.dat", "".join(f"{t} {p:.0f}\n" for t, p in zip(m_t[::6], m_p[::6])))
ch = {}
for c in (2, 3, 4, 5):
    ts = T0 + 6 * np.arange(600) + rng.integers(0, 3, 600)
    vs = rng.integers(0, 2500, 600)
    ch[c] = (ts, vs)
    write(f"{uk}/house_1/channel_{c}.dat", "".join(f"{t} {v}\n" for t, v in zip(ts, vs)))
# house 2: no mains.dat; channel 1 is the aggregate with a 10-minute hole; hand-made bin
write(f"{uk}/house_2/labels.dat", "1 aggregate\n2 kettle\n3 Fridge-Freezer\n")
a2_t = [T0 + 6 * i for i in range(600) if not (100 <= i < 200)]  # hole of 600 s
write(f"{uk}/house_2/channel_1.dat", "".join(f"{t} {500 + (t % 7)}\n" for t in a2_t))
b = (T0 // 6) * 6 + 6 * 300  # a bin start well inside the data
k2 = [(T0 + 6 * i, 0) for i in range(600) if T0 + 6 * i < b or T0 + 6 * i >= b + 6]
k2 += [(b, 100), (b + 2, 200), (b + 5, 600)]  # one bin: mean 300
k2.sort()
write(f"{uk}/house_2/channel_2.dat", "".join(f"{t} {v}\n" for t, v in k2))
write(f"{uk}/house_2/channel_3.dat", "".join(f"{T0 + 6 * i} {80 if i % 50 < 20 else 2}\n" for i in range(600)))

out = {}
for np_ in (1, 2, 4):
    out[np_] = os.path.join(d, f"uk{np_}.h5")
    rc, so, se = run(np_, "ukdale", uk, "-o", out[np_], "--max-gap", "30")
    ck(f"ukdale import under {np_} ranks exits 0", rc == 0, se[-2000:])
    ck(f"ukdale under {np_} ranks: no temporary left", not os.path.exists(out[np_] + ".tmp"))
ck("ukdale: identical datasets under 1, 2, 4 ranks",
   checksums(out[1]) == checksums(out[2]) == checksums(out[4]))
with h5py.File(out[1], "r") as f:
    names = [n.decode() for n in f["appliance_meta/name"][:]]
    ck("ukdale: canonical + unknown names (sorted)", names == ["fridge", "kettle", "mystery_box", "washing_machine"], names)
    off = f["households/row_offset"][:]
    ids = f["households/id"][:]
    ck("ukdale: households 1, 2", list(ids) == [1, 2], ids)
    ts = f["timestamps"][:]
    agg = f["aggregate"][:]
    app = f["appliances"][:]
    flt = f["fault_flags"][:]
    owns = f["households/owns"][:]
    P = 6000
    t0 = (T0 * 1000 // P) * P
    a, e = off[0], off[1]
    n = e - a
    ck("ukdale h1: grid starts at floor(first / period)", ts[a] == t0 and np.all(np.diff(ts[a:e]) == P), ts[a])
    ck("ukdale h1: rows span the mains.dat data", n == (int(m_t[-1]) * 1000 - t0) // P + 1, n)
    ref = bin_means(m_t * 1000, m_p, t0, P, n)
    ck("ukdale h1: aggregate = mean of mains.dat active power per 6 s bin",
       np.allclose(agg[a:e], ref, rtol=1e-6, equal_nan=True))
    ref_k = bin_means(ch[2][0] * 1000, ch[2][1], t0, P, n)
    ck("ukdale h1: kettle = mean of channel_2 samples per bin",
       np.allclose(app[a:e, names.index("kettle")], ref_k, rtol=1e-6, equal_nan=True))
    ref_w = bin_means(ch[5][0] * 1000, ch[5][1], t0, P, n)
    ck("ukdale h1: washer_dryer mapped to washing_machine",
       np.allclose(app[a:e, names.index("washing_machine")], ref_w, rtol=1e-6, equal_nan=True))
    ck("ukdale h1: owns all four", list(owns[0]) == [1, 1, 1, 1], owns[0])
    ck("ukdale h1: no gap rows", not np.any(flt[a:e] & 2))
    a, e = off[1], off[2]
    ts2 = ts[a:e]
    r = int(np.where(ts2 == b * 1000)[0][0])
    ck("ukdale h2: hand-computed bin (100, 200, 600) -> 300", app[a + r, names.index("kettle")] == 300.0,
       app[a + r, names.index("kettle")])
    ck("ukdale h2: value at a known time stamp", agg[a + r] == 500 + (b % 7) if b in a2_t else True)
    gap = (flt[a:e] & 2) != 0
    t_gap0, t_gap1 = (T0 + 6 * 99) * 1000, (T0 + 6 * 200) * 1000
    exp_gap = (ts2 > (t_gap0 // P) * P) & (ts2 < (t_gap1 // P) * P)
    ck("ukdale h2: gap mask = rows strictly inside the 600 s hole", np.array_equal(gap, exp_gap),
       (gap.sum(), exp_gap.sum()))
    ck("ukdale h2: gap rows are NaN in every column",
       np.all(np.isnan(agg[a:e][gap])) and np.all(np.isnan(app[a:e][gap])))
    ck("ukdale h2: owns kettle and fridge only", list(owns[1]) == [1, 1, 0, 0], owns[1])
    ck("ukdale h2: unowned columns are NaN", np.all(np.isnan(app[a:e, names.index("mystery_box")])))
    ck("ukdale: fridge meta from [meta]", float(f["appliance_meta/on_power_w"][names.index("fridge")]) == 50)
p = subprocess.run(["mpiexec", "-n", "2", TOOL, "inspect", out[1]], capture_output=True, text=True)
ck("ukdale: inspect validates the file", p.returncode == 0, p.stderr[-1000:])

# --------------------------------------------------------------------- REDD --
rd = os.path.join(d, "redd")
write(f"{rd}/house_1/labels.dat", "1 mains\n2 mains\n3 refrigerator\n4 dishwaser\n")
legs = {}
for c in (1, 2):
    ts = T0 + np.arange(1800)
    vs = np.round(rng.uniform(50, 900, 1800), 2)
    legs[c] = (ts, vs)
    lines = [f"{t} {v:.2f}\n" for t, v in zip(ts, vs)]
    for i in range(10, 1790, 97):  # unsorted: swap neighbours (within tolerance)
        lines[i], lines[i + 2] = lines[i + 2], lines[i]
    lines.insert(500, lines[499])  # an exact duplicate line
    write(f"{rd}/house_1/channel_{c}.dat", "".join(lines))
fr = (T0 + 3 * np.arange(600), rng.integers(0, 400, 600))
lines = [f"{t} {v}\n" for t, v in zip(*fr)]
lines.reverse()  # fully reversed within a 30 min window: sorted, warned (beyond tolerance)
write(f"{rd}/house_1/channel_3.dat", "".join(lines))
write(f"{rd}/house_1/channel_4.dat", "".join(f"{T0 + 3 * i} {i % 5}\n" for i in range(600)))
for np_ in (1, 2, 4):
    out[np_] = os.path.join(d, f"redd{np_}.h5")
    rc, so, se = run(np_, "redd", rd, "-o", out[np_], "--backward-tolerance", "4000")
    ck(f"redd import under {np_} ranks exits 0", rc == 0, se[-2000:])
ck("redd: identical datasets under 1, 2, 4 ranks", checksums(out[1]) == checksums(out[2]) == checksums(out[4]))
ck("redd: exact duplicates counted", "exact duplicates 2," in so, so)
with h5py.File(out[1], "r") as f:
    names = [n.decode() for n in f["appliance_meta/name"][:]]
    ck("redd: names", names == ["dishwasher", "fridge"], names)
    ts, agg, app = f["timestamps"][:], f["aggregate"][:], f["appliances"][:]
    P = 3000
    t0 = (T0 * 1000 // P) * P
    n = len(ts)
    ref = bin_means(legs[1][0] * 1000, legs[1][1], t0, P, n) + bin_means(legs[2][0] * 1000, legs[2][1], t0, P, n)
    ck("redd: aggregate = sum of the two legs' bin means (unsorted input sorted)",
       np.allclose(agg, ref, rtol=1e-5, equal_nan=True))
    ck("redd: fridge from a reversed file", np.allclose(app[:, 1], bin_means(fr[0] * 1000, fr[1], t0, P, n),
                                                        rtol=1e-6, equal_nan=True))
rc, so, se = run(1, "redd", rd, "-o", os.path.join(d, "r_tol.h5"))
ck("redd: backward step beyond tolerance is a warning naming file:line",
   rc == 0 and "channel_3.dat:22: timestamp goes back 63.000 s" in se, se[-1500:])
rc, so, se = run(2, "redd", rd, "-o", os.path.join(d, "r_tol.h5"), strict=True)
ck("redd --strict: backward step is an error (exit 3)", rc == 3 and "channel_3.dat:22:" in se, (rc, se[-1500:]))

# REDD two-circuit appliances: a 240 V appliance metered on both legs (two channels of one name, summed).
# The legs' clocks jitter independently (+-1 s around 3 s), so one leg's 3 s bin is often empty where the
# other's is not: a hole of a leg lasting at most --max-gap (5 periods) is bridged by linear interpolation
# in the sum; a longer hole of one leg, or no leg at all, stays NaN (independent numpy reference below)
r2 = os.path.join(d, "redd2")
write(f"{r2}/house_3/labels.dat", "1 mains\n2 mains\n3 washer_dryer\n4 washer_dryer\n")
N2 = 1200
for c in (1, 2):
    write(f"{r2}/house_3/channel_{c}.dat", "".join(f"{T0 + i} {200 + c}\n" for i in range(3 * N2)))
wd = {}
for c, seed in ((3, 11), (4, 12)):
    jr = np.random.default_rng(seed)
    ts = T0 + 3 * np.arange(N2) + jr.integers(-1, 2, N2)
    vs = np.round(jr.uniform(0, 2000, N2), 1)
    keep = np.ones(N2, bool)
    if c == 3:
        keep[400:420] = False  # leg 3: 60 s without samples (20 rows > 5): the appliance is missing there
    else:
        keep[700:712] = False  # leg 4: 36 s (12 rows)
    ts, vs = ts[keep], vs[keep]
    wd[c] = (ts, vs)
    write(f"{r2}/house_3/channel_{c}.dat", "".join(f"{t} {v}\n" for t, v in zip(ts, vs)))


def bridge(x, max_rows):
    """independent reference of a leg's short holes: linear between the neighbours, holes <= max_rows"""
    x = x.copy()
    bad = np.isnan(x)
    i = 0
    while i < len(x):
        if not bad[i]:
            i += 1
            continue
        e = i
        while e < len(x) and bad[e]:
            e += 1
        if i > 0 and e < len(x) and e - i <= max_rows:
            x[i:e] = x[i - 1] + (x[e] - x[i - 1]) * np.arange(1, e - i + 1) / (e - i + 1)
        i = e
    return x


rc, so, se = run(2, "redd", r2, "-o", os.path.join(d, "redd2.h5"))
ck("redd two-leg appliance: import exits 0", rc == 0, se[-1500:])
with h5py.File(os.path.join(d, "redd2.h5"), "r") as f:
    names = [n.decode() for n in f["appliance_meta/name"][:]]
    ts = f["timestamps"][:]
    col = f["appliances"][:, names.index("washer_dryer")].astype(np.float64)
P = 3000
legs = [bin_means(wd[c][0] * 1000, wd[c][1], ts[0], P, len(ts)) for c in (3, 4)]
naive = legs[0] + legs[1]
anyv = ~np.isnan(legs[0]) | ~np.isnan(legs[1])
ref = np.where(anyv, bridge(legs[0], 5) + bridge(legs[1], 5), np.nan)
ck("redd two-leg appliance: jitter leaves single empty bins (the plain sum loses > 10 % of the rows)",
   np.isnan(naive[20:-20]).mean() > 0.10, np.isnan(naive).mean())
ck("redd two-leg appliance: sum with each leg's short holes bridged (numpy reference)",
   np.allclose(col, ref, rtol=1e-6, equal_nan=True), np.flatnonzero(~np.isclose(col, ref, equal_nan=True))[:10])
ck("redd two-leg appliance: rows with both legs measured are the plain sum",
   np.allclose(col[~np.isnan(naive)], naive[~np.isnan(naive)], rtol=1e-6))
r400 = np.searchsorted(ts, (T0 + 3 * 403) * 1000)
r700 = np.searchsorted(ts, (T0 + 3 * 703) * 1000)
ck("redd two-leg appliance: a leg's 60 s hole leaves the appliance missing (NaN)", np.all(np.isnan(col[r400:r400 + 14])),
   col[r400:r400 + 14])
ck("redd two-leg appliance: the other leg's 36 s hole too", np.all(np.isnan(col[r700:r700 + 6])), col[r700:r700 + 6])
# NaN beside a measured leg: only inside the two long holes (the rows of samples 400..419 and 700..711) and
# at the ends (a leg's hole open at an end is not bridged); a row where no leg has a sample stays NaN, as a
# one-channel appliance's empty bin (never filled)
lost = np.flatnonzero(np.isnan(col) & anyv)
r_s = np.searchsorted(ts, (T0 + 3 * np.array([399, 420, 699, 712])) * 1000)
inside = ((lost >= r_s[0]) & (lost <= r_s[1])) | ((lost >= r_s[2]) & (lost <= r_s[3])) | (lost < 2) | \
    (lost >= len(ts) - 2)
ck("redd two-leg appliance: NaN beside a measured leg only in the long holes", len(lost) >= 20 and inside.all(),
   (len(lost), lost[~inside][:10]))
ck("redd two-leg appliance: rows without any leg's sample stay NaN", np.all(np.isnan(col[~anyv])))
ck("redd two-leg appliance: the summary counts the bridged cells",
   f"leg holes bridged {int(np.sum(anyv & ~np.isnan(ref) & (np.isnan(legs[0]) | np.isnan(legs[1]))))}," in so, so)

# -------------------------------------------------------------------- REFIT --
rf = os.path.join(d, "refit")
rows = ["Time,Unix,Aggregate,Appliance1,Appliance2,Appliance3,Appliance4,Appliance5,Appliance6,Appliance7,Appliance8,Appliance9,Issues"]
ref_t, ref_a, ref_k = [], [], []
for i in range(900):
    t = T0 + 8 * i + (i % 3)
    ap = [int(x) for x in rng.integers(0, 200, 9)]
    ag = sum(ap) + 100
    issues = 0
    if i == 321:
        ag, issues = 10, 1  # submeters above the aggregate: kept, counted
    rows.append(f"2014-05-13 16:53:{i % 60:02d},{t},{ag},{','.join(map(str, ap))},{issues}")
    ref_t.append(t), ref_a.append(ag), ref_k.append(ap[7])
write(f"{rf}/CLEAN_House2.csv", "\r\n".join(rows) + "\r\n")
write(f"{rf}/CLEAN_House5.csv", "\n".join(rows[:400]) + "\n")
for np_ in (1, 2, 4):
    out[np_] = os.path.join(d, f"refit{np_}.h5")
    rc, so, se = run(np_, "refit", rf, "-o", out[np_], "--houses", "2,5")
    ck(f"refit import under {np_} ranks exits 0", rc == 0, se[-2000:])
ck("refit: identical datasets under 1, 2, 4 ranks", checksums(out[1]) == checksums(out[2]) == checksums(out[4]))
ck("refit: Issues=1 rows reported (2 houses, 1 each)", "Issues=1 rows 2," in so, so)
with h5py.File(out[1], "r") as f:
    names = [n.decode() for n in f["appliance_meta/name"][:]]
    ck("refit: house 2 names from [refit_houses]", "kettle" in names and "overhead_fan" in names and "fridge" in names,
       names)
    off = f["households/row_offset"][:]
    ts, agg, app = f["timestamps"][:], f["aggregate"][:], f["appliances"][:]
    P = 8000
    t0 = (T0 * 1000 // P) * P
    a, e = off[0], off[1]
    ck("refit h2: aggregate bin means (Issues row kept)",
       np.allclose(agg[a:e], bin_means(np.array(ref_t) * 1000, ref_a, t0, P, e - a), equal_nan=True))
    ck("refit h2: kettle (Appliance8) bin means",
       np.allclose(app[a:e, names.index("kettle")], bin_means(np.array(ref_t) * 1000, ref_k, t0, P, e - a), equal_nan=True))

# --------------------------------------------------------------------- CARE --
cf = os.path.join(d, "Wind Farm A")
hdr = ["time_stamp", "asset_id", "id", "train_test", "status_type_id", "sensor_0_avg", "sensor_0_max",
       "wind_speed_3_avg", "sensor_5", "sensor_7_avg"]


def care_file(path, sep, asset, start, n, pred_from, status_at, seed):
    r = np.random.default_rng(seed)
    lines = [sep.join(hdr)]
    vals = {}
    for i in range(n):
        t = start + 600 * i
        tt = "train" if i < pred_from else "prediction"
        st = status_at.get(i, 0)
        v = [round(float(r.uniform(0, 50)), 3), round(float(r.uniform(50, 60)), 3), round(float(r.uniform(0, 25)), 2),
             i * 10, [350.0, 10.0][i % 2]]
        s0 = "" if i == 7 else str(v[0])  # empty field -> NaN
        ts = np.datetime64(t, "s").astype(str).replace("T", " ")
        lines.append(sep.join([ts, str(asset), str(i), tt, str(st), s0, str(v[1]), str(v[2]), str(v[3]), str(v[4])]))
        vals[t] = (v, st, tt, i == 7)
    write(path, "\n".join(lines) + "\n")
    return vals


S = 1600000200  # a multiple of 600 s
v10 = care_file(f"{cf}/datasets/10.csv", ";", 0, S, 144, 100, {20: 1, 21: 1, 60: 4}, 1)
v20 = care_file(f"{cf}/datasets/20.csv", ",", 0, S + 600 * 72, 144, 120, {}, 2)  # overlaps 10.csv by 72 rows
# the overlap must be identical rows (same sensor data): copy them from 10.csv
with open(f"{cf}/datasets/10.csv") as f10:
    l10 = f10.read().splitlines()
with open(f"{cf}/datasets/20.csv") as f20:
    l20 = f20.read().splitlines()
for i in range(72):
    parts = l10[1 + 72 + i].split(";")
    parts[3] = l20[1 + i].split(",")[3]
    l20[1 + i] = ",".join(parts)
write(f"{cf}/datasets/20.csv", "\n".join(l20) + "\n")
v30 = care_file(f"{cf}/datasets/30.csv", ";", 3, S, 100, 80, {}, 3)
ev = "asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id;event_description\n"
ev += f"0;10;anomaly;{np.datetime64(S + 600 * 110, 's').astype(str).replace('T', ' ')};110;" \
      f"{np.datetime64(S + 600 * 119, 's').astype(str).replace('T', ' ')};119;gearbox bearing\n"
ev += "0;20;normal;2020-09-15 00:00:00;0;2020-09-16 00:00:00;1;\n"
ev += f"3;30;anomaly;{np.datetime64(S + 600 * 90, 's').astype(str).replace('T', ' ')};90;" \
      f"{np.datetime64(S + 600 * 95, 's').astype(str).replace('T', ' ')};95;\"pitch; hydraulic\"\n"
write(f"{cf}/event_info.csv", ev)
fd = b"sensor_name;statistics_type;description;unit;is_angle;is_counter\n"
fd += b"sensor_0;average,maximum;Temperature gearbox;\xb0C;False;False\n"  # Latin-1 degree sign
fd += b"wind_speed_3;average;Wind speed;m/s;False;False\n"
fd += b"sensor_5;;Energy counter;kWh;False;True\n"
fd += b"sensor_7;average;Nacelle direction;\xc2\xb0;True;False\n"
write(f"{cf}/feature_description.csv", fd, "wb")
for np_ in (1, 2, 4):
    out[np_] = os.path.join(d, f"care{np_}.h5")
    rc, so, se = run(np_, "care", cf, "-o", out[np_])
    ck(f"care import under {np_} ranks exits 0", rc == 0, se[-2000:])
ck("care: identical datasets under 1, 2, 4 ranks", checksums(out[1]) == checksums(out[2]) == checksums(out[4]))
ck("care: overlapping rows of 10.csv/20.csv are exact duplicates", "exact duplicates 72," in so, so)
with h5py.File(out[1], "r") as f:
    chn = [c.decode() for c in f["channels/name"][:]]
    units = list(f["channels/unit"][:])
    ck("care: every non-metadata column is a channel", chn == hdr[5:], chn)
    ck("care: non-UTF-8 unit kept as bytes", units[0] == b"\xb0C" and units[3] == b"kWh", units)
    ck("care: turbines are assets 0 and 3, farm A = 0", list(f["turbines/id"][:]) == [0, 3]
       and list(f["turbines/farm"][:]) == [0, 0])
    off = f["turbines/row_offset"][:]
    ck("care: asset 0 rows = union of both files (216)", off[1] - off[0] == 216, off)
    sig, lab, ts = f["signals"][:], f["labels"][:], f["timestamps"][:]
    ck("care: time stamps on the 10-minute clock", ts[0] == S * 1000 and np.all(np.diff(ts[:216]) == 600000))
    v, st_, tt, empty = v10[S + 600 * 5]
    ck("care: value at a known time stamp", np.allclose(sig[5, :], v, rtol=1e-6), (sig[5], v))
    ck("care: empty field -> NaN", np.isnan(sig[7, 0]))
    legend = [x.decode() for x in f["legend/event_kind"][:]]
    ck("care: status 1 -> status_derated label", legend[lab[20]] == "status_derated" and lab[21] == lab[20])
    ck("care: status 4 -> status_downtime", legend[lab[60]] == "status_downtime")
    ck("care: anomaly event rows labelled", np.all(lab[110:120] == 1) and lab[109] == 0 and lab[120] == 0,
       lab[105:125])
    e = {k: f["events/" + k][:] for k in ("turbine", "start_row", "end_row", "kind")}
    evs = sorted(zip(e["turbine"], e["start_row"], e["end_row"], e["kind"]))
    ck("care: events table (status runs + anomaly events)",
       evs == [(0, 20, 22, 2), (0, 60, 61, 4), (0, 110, 120, 1), (1, 90, 96, 1)], evs)
    seg = sorted(zip(f["segments/turbine"][:], f["segments/start_row"][:], f["segments/end_row"][:],
                     f["segments/condition"][:]))
    cond = [x.decode() for x in f["legend/condition"][:]]
    ck("care: train/prediction flag as segments",
       [(s[1], s[2], cond[s[3]]) for s in seg if s[0] == 0] ==
       [(0, 72, "train"), (72, 100, "train"), (100, 144, "train_and_prediction"), (144, 192, "train"),
        (192, 216, "prediction")] or
       [(s[1], s[2], cond[s[3]]) for s in seg if s[0] == 0] ==
       [(0, 100, "train"), (100, 144, "train_and_prediction"), (144, 192, "train"), (192, 216, "prediction")],
       seg)
p = subprocess.run(["mpiexec", "-n", "1", TOOL, "inspect", out[1]], capture_output=True, text=True)
ck("care: inspect validates the file", p.returncode == 0, p.stderr[-1000:])
# circular mean: 20-minute bins hold 350 and 10 degrees -> 0 (not 180)
rc, so, se = run(1, "care", cf, "-o", os.path.join(d, "care20.h5"), "--period", "1200")
with h5py.File(os.path.join(d, "care20.h5"), "r") as f:
    s = f["signals"][:]
    ck("care: circular mean of 350 and 10 degrees is 0", rc == 0 and np.allclose(s[3, 4] % 360, 0, atol=1e-3) or
       np.allclose(s[3, 4], 360, atol=1e-3), s[3, 4])
    # the 20-minute grid starts at floor(S / 1200) * 1200 = S - 600: row 3 holds rows 5 and 6 of the files
    ck("care: plain mean of the counter column", s[3, 3] == (50 + 60) / 2, s[3, 3])

# ---------------------------------------------------------------- bad lines --
def bad_case(name, fmt, src, rel, expect, strict=False, code=3, args=()):
    outp = os.path.join(d, "bad.h5")
    write(outp, "precious")
    rc, so, se = run(2, fmt, src, "-o", outp, *args, strict=strict)
    ok = rc == code and expect in se and se.count("error:") == 1
    ck(f"{name}: exit {code}, one line naming {expect!r}", ok, (rc, se[-800:]))
    with open(outp) as fh:
        ck(f"{name}: existing output untouched", fh.read() == "precious")


def bad_uk(content, labels="1 aggregate\n2 kettle\n"):
    src = tempfile.mkdtemp(dir=d)
    write(f"{src}/house_1/labels.dat", labels)
    write(f"{src}/house_1/channel_1.dat", "".join(f"{T0 + 6 * i} 100\n" for i in range(50)))
    write(f"{src}/house_1/channel_2.dat", content)
    return src


NO_SKIP = ("--max-bad-lines", "0")  # the first bad data line is the error (the default skips up to 10 per file)
good = "".join(f"{T0 + 6 * i} 5\n" for i in range(10))
src = bad_uk(good + f"{T0 + 66} abc\n")
bad_case("non-numeric value", "ukdale", src, "", "house_1/channel_2.dat:11: non-numeric value 'abc'", args=NO_SKIP)
src = bad_uk(good + f"{T0 + 66}\n")
bad_case("malformed line (1 field)", "ukdale", src, "", "house_1/channel_2.dat:11: malformed line", args=NO_SKIP)
src = bad_uk(good + f"{T0 + 66} 5 6\n")
bad_case("malformed line (3 fields)", "ukdale", src, "", "house_1/channel_2.dat:11: malformed line", args=NO_SKIP)
src = bad_uk(good + "14000000x6 5\n")
bad_case("bad timestamp", "ukdale", src, "", "house_1/channel_2.dat:11: bad timestamp", args=NO_SKIP)
src = bad_uk(good, labels="1 aggregate\n2 kettle\n3 toaster\n")
bad_case("missing file named in labels (--strict)", "ukdale", src, "", "house_1/labels.dat:3: missing channel file",
         strict=True)
rc, so, se = run(1, "ukdale", src, "-o", os.path.join(d, "w.h5"))
ck("missing file named in labels: warning without --strict", rc == 0 and "labels.dat:3: missing channel file" in se, se)
src = bad_uk("")
bad_case("empty channel (--strict)", "ukdale", src, "", "house_1/channel_2.dat: empty channel", strict=True)
src = bad_uk(good + f"{T0 - 600} 5\n")
bad_case("timestamp going backwards (--strict)", "ukdale", src, "", "house_1/channel_2.dat:11: timestamp goes back",
         strict=True)
# one 1970 (or far future) line: skipped with a warning naming the line, not a clock over decades
src = bad_uk(good + "0 5\n" + f"{T0 + 66} 6\n")
bad_case("time stamp outside 1990..2100 (--strict)", "ukdale", src, "", "house_1/channel_2.dat:11: time stamp 0 ms is outside",
         strict=True)
rc, so, se = run(2, "ukdale", src, "-o", os.path.join(d, "w70.h5"))
ok = rc == 0 and "channel_2.dat:11: time stamp 0 ms is outside 1990-01-01..2100-01-01; line skipped" in se
if ok:
    with h5py.File(os.path.join(d, "w70.h5"), "r") as f:
        ts = f["timestamps"][:]
        ok = ts.min() >= T0 * 1000 - 6000 and len(ts) < 100
ck("time stamp outside 1990..2100: line skipped with a warning, the clock spans the sane samples only", ok, (rc, se[-600:]))
src = bad_uk(good + "4200000000 5\n")
rc, so, se = run(1, "ukdale", src, "-o", os.path.join(d, "w70.h5"))
ck("time stamp after 2100: skipped with a warning", rc == 0 and "channel_2.dat:11: time stamp 4200000000000 ms" in se, se[-600:])
src = bad_uk(good + f"{T0 + 54} 7\n")
bad_case("conflicting duplicate (--strict)", "ukdale", src, "", "house_1/channel_2.dat:11: conflicting duplicate",
         strict=True)
rc, so, se = run(2, "ukdale", src, "-o", os.path.join(d, "w.h5"))
ck("conflicting duplicate: warning, first kept, exit 0", rc == 0 and "conflicting duplicate" in se, se)
src = bad_uk(good, labels="1 aggregate\ntwo kettle\n")
bad_case("malformed labels.dat", "ukdale", src, "", "house_1/labels.dat:2: malformed line")
rsrc = tempfile.mkdtemp(dir=d)
write(f"{rsrc}/CLEAN_House1.csv", "\n".join(rows[:5] + ["2014-05-13 16:53:00,1400000100,5,1,2,3,4,5,6,7,8,0"]) + "\n")
bad_case("refit: short row", "refit", rsrc, "", "CLEAN_House1.csv:6: malformed line", args=NO_SKIP)
write(f"{rsrc}/CLEAN_House1.csv", "\n".join(rows[:5] + ["2014-05-13 16:53:00,1400000100,5,1,2,3,4,x,6,7,8,9,0"]) + "\n")
bad_case("refit: non-numeric value", "refit", rsrc, "", "CLEAN_House1.csv:6: non-numeric value 'x", args=NO_SKIP)
write(f"{rsrc}/CLEAN_House1.csv", "\n".join(rows[:5] + ["2014-05-13 16:53:00,1400000100,5,1,2,3,4,5,6,7,8,9,2"]) + "\n")
bad_case("refit: bad Issues", "refit", rsrc, "", "CLEAN_House1.csv:6: Issues must be 0 or 1", args=NO_SKIP)
csrc = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm B")
for fn in ("event_info.csv", "feature_description.csv"):
    write(f"{csrc}/{fn}", open(f"{cf}/{fn}", "rb").read(), "wb")
lines = open(f"{cf}/datasets/30.csv").read().splitlines()
lines[41] = lines[41].replace(";prediction;", ";predict;").replace(";train;", ";predict;")
write(f"{csrc}/datasets/30.csv", "\n".join(lines) + "\n")
bad_case("care: bad train_test", "care", csrc, "", "datasets/30.csv:42: train_test must be", args=NO_SKIP)
lines = open(f"{cf}/datasets/30.csv").read().splitlines()
parts = lines[12].split(";")
parts[6] = "1.2.3"
lines[12] = ";".join(parts)
write(f"{csrc}/datasets/30.csv", "\n".join(lines) + "\n")
bad_case("care: non-numeric sensor value", "care", csrc, "", "datasets/30.csv:13: non-numeric value '1.2.3'", args=NO_SKIP)
lines = open(f"{cf}/datasets/30.csv").read().splitlines()
lines[20] = lines[20] + ";1"
write(f"{csrc}/datasets/30.csv", "\n".join(lines) + "\n")
bad_case("care: extra field", "care", csrc, "", "datasets/30.csv:21: malformed line", args=NO_SKIP)
# ------------------------------------------- bad lines skipped (--max-bad-lines) --
# real exports: a stray bad line and a truncated last line. Up to --max-bad-lines (default 10) per file are
# skipped: one warning naming the file and the first, the data of every other line as without them
def skip_case(name, fmt, src, expect_warn, check, args=(), np_=2):
    outp = os.path.join(d, "skip.h5")
    rc, so, se = run(np_, fmt, src, "-o", outp, *args)
    ok = rc == 0 and se.count(expect_warn) == 1 and "error" not in se
    ck(f"{name}: exit 0, one warning {expect_warn!r}", ok, (rc, se[-800:]))
    if ok:
        with h5py.File(outp, "r") as f:
            ck(f"{name}: the other lines' data", check(f, so))


vals_ok = [5 + (i % 4) for i in range(40)]
lines = [f"{T0 + 6 * i} {v}\n" for i, v in enumerate(vals_ok)]
src = bad_uk("".join(lines[:20]) + f"{T0 + 121} 9x\n" + "".join(lines[20:]) + f"{T0 + 6 * 40}")  # line 21, line 42


def uk_check(f, so):
    ts, app = f["timestamps"][:], f["appliances"][:, 0]
    ref = bin_means((T0 + 6 * np.arange(40)) * 1000, vals_ok, ts[0], 6000, len(ts))
    return np.allclose(app, ref, equal_nan=True) and "bad lines skipped 2," in so


skip_case("ukdale: a bad line and a truncated last line", "ukdale", src,
          "house_1/channel_2.dat: 2 bad lines skipped (at most 10 per file: --max-bad-lines), the first at line 21: "
          "non-numeric value '9x'", uk_check)
bad_case("ukdale: more bad lines than --max-bad-lines", "ukdale", src, "",
         "house_1/channel_2.dat:42: malformed line", args=("--max-bad-lines", "1"))
bad_case("ukdale: a bad line with --strict", "ukdale", src, "", "house_1/channel_2.dat:21: non-numeric value '9x' (--strict)",
         strict=True)
rsk = tempfile.mkdtemp(dir=d)
write(f"{rsk}/CLEAN_House1.csv", "\n".join(rows[:40] + [rows[40][:33]]))  # the last row cut in its Aggregate field


def refit_check(f, so):
    agg = f["aggregate"][:]
    ts = f["timestamps"][:]
    return np.allclose(agg, bin_means(np.array(ref_t[:39]) * 1000, ref_a[:39], ts[0], 8000, len(ts)), equal_nan=True)


skip_case("refit: a truncated last row", "refit", rsk,
          "CLEAN_House1.csv: 1 bad line skipped (at most 10 per file: --max-bad-lines), the first at line 41: "
          "malformed line", refit_check)
csk = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm C")
for fn in ("event_info.csv", "feature_description.csv"):
    write(f"{csk}/{fn}", open(f"{cf}/{fn}", "rb").read(), "wb")
lines = open(f"{cf}/datasets/30.csv").read().splitlines()
lines[12] = lines[12].replace(";train;", ";tarin;")
write(f"{csk}/datasets/30.csv", "\n".join(lines) + "\n")


def care_check(f, so):
    sig = f["signals"][:]
    return f["turbines/row_offset"][-1] == 100 and np.isnan(sig[11]).all() and np.isfinite(sig[12, 1])


skip_case("care: a stray bad line", "care", csk,
          "datasets/30.csv: 1 bad line skipped (at most 10 per file: --max-bad-lines), the first at line 13: "
          "train_test must be 'train' or 'prediction' (got 'tarin')", care_check)

# the first data row bad: the farm's plan reads on to the next row (one warning, from the full parse)
lines = open(f"{cf}/datasets/30.csv").read().splitlines()
lines[1] = lines[1].replace(";train;", ";tarin;")
write(f"{csk}/datasets/30.csv", "\n".join(lines) + "\n")


def care_check2(f, so):
    return list(f["turbines/id"][:]) == [3] and f["turbines/row_offset"][-1] == 99  # the asset of row 3; 99 rows


skip_case("care: the first data row bad", "care", csk,
          "datasets/30.csv: 1 bad line skipped (at most 10 per file: --max-bad-lines), the first at line 2: "
          "train_test must be 'train' or 'prediction' (got 'tarin')", care_check2)
# bad first data lines longer than the plan's 4 MiB head (a binary blob): it read on (it said "no data row
# can be read" of a file whose rows follow them)
write(f"{csk}/datasets/30.csv", "\n".join(lines[:1] + ["x" * (1 << 20)] * 5 + lines[2:]) + "\n")
skip_case("care: 5 MiB of bad first lines", "care", csk,
          "datasets/30.csv: 5 bad lines skipped (at most 10 per file: --max-bad-lines), the first at line 2: "
          "bad time_stamp", care_check2)
write(f"{csk}/datasets/30.csv", "\n".join(lines[:2]) + "\n")
bad_case("care: no readable data row", "care", csk, "",
         "datasets/30.csv: no data row can be read: 1 bad line skipped (at most 10 per file: --max-bad-lines), the "
         "first at line 2: train_test must be")

# ------------------------------------------------ warnings beyond the first 10 --
# the first 10 of a house are printed, then one line per house counts the rest by kind
wsrc = tempfile.mkdtemp(dir=d)
for h in (1, 2):
    write(f"{wsrc}/house_{h}/labels.dat", "1 aggregate\n2 kettle\n")
    write(f"{wsrc}/house_{h}/channel_1.dat", "".join(f"{T0 + 6 * i} 100\n" for i in range(400)))
    # house 1: 2 conflicting duplicates, then 14 steps back by 600 s (beyond the 60 s tolerance; the samples they
    # meet again are exact duplicates); house 2: 3 steps back
    nb = 14 if h == 1 else 3
    body = f"{T0 + 6} 1\n{T0 + 6} 2\n{T0 + 12} 1\n{T0 + 12} 3\n" if h == 1 else ""
    body += "".join(f"{T0 + 1800 + 60 * i} 5\n{T0 + 1200 + 60 * i} 5\n" for i in range(nb))
    write(f"{wsrc}/house_{h}/channel_2.dat", body)
rc, so, se = run(1, "ukdale", wsrc, "-o", os.path.join(d, "warn.h5"))
h1 = [ln for ln in se.splitlines() if "house_1/channel_2.dat:" in ln]
ck("warnings: the first 10 of house 1 printed", rc == 0 and len(h1) == 10, (rc, se[-1500:]))
ck("warnings: one summary line for house 1 counting the rest by kind",
   se.count(f"{wsrc}/house_1: 6 more warnings not printed: 4 time stamps going back beyond the tolerance, "
            "2 conflicting duplicates") == 1, se[-1500:])
ck("warnings: house 2 printed in full, no summary",
   len([ln for ln in se.splitlines() if "house_2/channel_2.dat:" in ln]) == 3 and "house_2: " not in se, se[-1500:])
ck("warnings: the import summary counts all", "warnings 19" in so, so)

# ------------------------------------------------- CARE format variants --
def datasets_only(path):
    return {k: v for k, v in checksums(path).items() if not k.startswith("@")}


def care_variant(name, edit_csv, edit_side=lambda b: b):
    """a copy of farm A with every datasets/*.csv passed through edit_csv (text
    lines -> lines) and the side files through edit_side (bytes -> bytes)"""
    vsrc = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
    for fn in ("event_info.csv", "feature_description.csv"):
        write(f"{vsrc}/{fn}", edit_side(open(f"{cf}/{fn}", "rb").read()), "wb")
    for fn in sorted(os.listdir(f"{cf}/datasets")):
        lines = open(f"{cf}/datasets/{fn}").read().splitlines()
        write(f"{vsrc}/datasets/{fn}", "\n".join(edit_csv(lines, ";" if ";" in lines[0] else ",")) + "\n")
    outp = os.path.join(d, f"care_{name}.h5")
    rc, so, se = run(2, "care", vsrc, "-o", outp)
    same = rc == 0 and datasets_only(outp) == datasets_only(out[1])
    return rc, se, same


def quote_all(lines, sep):
    return [sep.join(f'"{x}"' for x in ln.split(sep)) for ln in lines]


BOM = b"\xef\xbb\xbf"
for name, ed, side in (
        ("BOM on every file", lambda ls, sep: ["\ufeff" + ls[0]] + ls[1:], lambda b: BOM + b),
        ("quoted fields", quote_all, lambda b: b),
        ("a trailing separator on every line", lambda ls, sep: [ln + sep for ln in ls], lambda b: b),
        ("a pandas index column (empty name)", lambda ls, sep: [sep + ls[0]] + [f"{i}{sep}{ln}" for i, ln in
                                                                               enumerate(ls[1:])], lambda b: b),
        ("a pandas index column 'Unnamed: 0'", lambda ls, sep: ["Unnamed: 0" + sep + ls[0]] +
         [f"{i}{sep}{ln}" for i, ln in enumerate(ls[1:])], lambda b: b)):
    rc, se, same = care_variant(name.replace(" ", "_").replace("'", "").replace(":", ""), ed, side)
    ck(f"care variant ({name}): imports, datasets identical to the plain farm's", rc == 0 and same, (rc, se[-600:]))
    if "index" in name:
        ck(f"care variant ({name}): one warning per file naming the dropped column",
           se.count("looks like a pandas index; dropped") == 3 and "conflicting" not in se, se[-600:])


def empty_status(lines, sep):
    out_l = list(lines)
    p_ = out_l[21].split(sep)  # row 20 of 10.csv has status 1 (derated)
    p_[4] = ""
    out_l[21] = sep.join(p_)
    return out_l


vsrc = os.path.join(tempfile.mkdtemp(dir=d), "Wind Farm A")
for fn in ("event_info.csv", "feature_description.csv"):
    write(f"{vsrc}/{fn}", open(f"{cf}/{fn}", "rb").read(), "wb")
for fn in ("20.csv", "30.csv"):
    write(f"{vsrc}/datasets/{fn}", open(f"{cf}/datasets/{fn}").read())
write(f"{vsrc}/datasets/10.csv", "\n".join(empty_status(open(f"{cf}/datasets/10.csv").read().splitlines(), ";")) + "\n")
rc, so, se = run(2, "care", vsrc, "-o", os.path.join(d, "care_st.h5"))
ok = rc == 0 and "10.csv: 1 rows with an empty status_type_id: status 5 (other)" in se
if ok:
    with h5py.File(os.path.join(d, "care_st.h5"), "r") as f:
        legend = [x.decode() for x in f["legend/event_kind"][:]]
        lab = f["labels"][:]
        ok = legend[lab[20]] == "status_other" and legend[lab[21]] == "status_derated" and lab[19] == 0
ck("care: an empty status_type_id is status 'other' with one warning", ok, (rc, se[-600:]))
bad_case("care: an empty status_type_id (--strict)", "care", vsrc, "", "10.csv: 1 rows with an empty status_type_id",
         strict=True)

# a farm without any event or status run, one row, one time stamp, a large asset id (qsort(NULL, 0) under UBSan)
for crows, name in ((["2020-09-13 12:30:00;99999999999;0;train;0;1.0"], "one row"),
                   (["2020-09-13 12:30:00;0;0;train;0;1.0", "2020-09-13 12:30:00;0;1;prediction;0;1.0"],
                    "one time stamp"),
                   (["2020-09-13 12:30:00;0;0;train;0;1.0", "2020-09-13 12:40:00;0;1;prediction;0;2.0"], "two rows")):
    esrc = os.path.join(tempfile.mkdtemp(dir=d), "F")
    write(f"{esrc}/datasets/10.csv", "time_stamp;asset_id;id;train_test;status_type_id;sensor_0_avg\n" +
          "\n".join(crows) + "\n")
    write(f"{esrc}/event_info.csv",
          "asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id;event_description\n")
    write(f"{esrc}/feature_description.csv",
          "sensor_name;statistics_type;description;unit;is_angle;is_counter\nsensor_0;average;Temp;C;False;False\n")
    rc, so, se = run(1, "care", esrc, "-o", os.path.join(d, "care_noev.h5"))
    ok = rc == 0
    if ok:
        with h5py.File(os.path.join(d, "care_noev.h5"), "r") as f:
            ok = len(f["events/start_row"][:]) == 0 and \
                list(f["signals"][:, 0]) == ([1.0, 2.0] if name == "two rows" else [1.0])
            ok = ok and int(f["turbines/id"][0]) == (99999999999 if name == "one row" else 0)
    ck(f"care: a farm without events or status runs ({name}) imports", ok, (rc, se[-800:]))

# channels: at most 4096 (the format's bound) fail fast at import; more than 1024 (training's) warn
for n_c, expect in ((5000, "5000 sensor columns; a file holds at most 4096 channels"),
                    (10 ** 6, "datasets/10.csv:1: header line longer than 4 MiB (a file holds at most 4096 channels)"),
                    (1100, "1100 sensor channels: training reads at most 1024")):
    wsrc = os.path.join(tempfile.mkdtemp(dir=d), "W")
    cols = [f"sensor_{i}" for i in range(n_c)]
    write(f"{wsrc}/datasets/10.csv", ";".join(hdr[:5] + cols) + "\n" +
          ";".join(["2020-09-13 12:30:00", "0", "0", "train", "0"] + ["1"] * n_c) + "\n")
    write(f"{wsrc}/event_info.csv", open(f"{cf}/event_info.csv").read().splitlines()[0] + "\n")
    if n_c > 4096:
        bad_case(f"care: {n_c} columns", "care", wsrc, "", expect)
    else:
        rc, so, se = run(1, "care", wsrc, "-o", os.path.join(d, "care_wide.h5"))
        ck(f"care: {n_c} columns import with a warning about training", rc == 0 and expect in se, (rc, se[-600:]))

# --------------------------------------------- NILM folders and labels --
esrc = tempfile.mkdtemp(dir=d)
bad_case("ukdale: empty folder", "ukdale", esrc, "", "no house_N directories found")
os.makedirs(f"{esrc}/house_99999999999")
bad_case("ukdale: house number above INT_MAX", "ukdale", esrc, "",
         "house_99999999999: house number out of range (at most 2147483647)")
rsrc2 = tempfile.mkdtemp(dir=d)
write(f"{rsrc2}/CLEAN_House99999999999.csv", "\n".join(rows[:5]) + "\n")
bad_case("refit: house number above INT_MAX", "refit", rsrc2, "",
         "CLEAN_House99999999999.csv: house number out of range")
zz = "z" * 40
src = bad_uk(good, labels=f"1 aggregate\n2 {zz}_kettle\n3 {zz}_toaster\n")
write(f"{src}/house_1/channel_3.dat", good)
bad_case("ukdale: labels equal in their first 31 bytes", "ukdale", src, "",
         f"house_1/labels.dat:3: appliance '{zz}_toaster' and '{zz}_kettle' (")
src = bad_uk(good, labels="1 aggregate\n99999999999 kettle\n")
bad_case("labels.dat: channel id out of range", "ukdale", src, "",
         "house_1/labels.dat:2: channel id 99999999999 out of range")
# channels of one canonical name are still summed
src = bad_uk(good, labels="1 aggregate\n2 kettle\n3 Kettle\n")
write(f"{src}/house_1/channel_3.dat", "".join(f"{T0 + 6 * i} 7\n" for i in range(10)))
rc, so, se = run(1, "ukdale", src, "-o", os.path.join(d, "sum.h5"))
ok = rc == 0
if ok:
    with h5py.File(os.path.join(d, "sum.h5"), "r") as f:
        app = f["appliances"][:]
        ok = app.shape[1] == 1 and np.nanmax(app[:, 0]) == 12
ck("ukdale: channels of one canonical name are summed", ok, (rc, se[-600:]))
# the appliance map: BOM, unknown section, repeated key
msrc = bad_uk(good)
mp = os.path.join(d, "bom_map.ini")
write(mp, b"\xef\xbb\xbf[labels]\nkettle = jug\n", "wb")
p = subprocess.run(["mpiexec", "-n", "1", TOOL, "import", "ukdale", msrc, "-o", os.path.join(d, "m.h5"),
                    "--appliances", mp], capture_output=True, text=True, errors="replace", timeout=120)
ok = p.returncode == 0
if ok:
    with h5py.File(os.path.join(d, "m.h5"), "r") as f:
        ok = [x.decode() for x in f["appliance_meta/name"][:]] == ["jug"]
ck("appliance map with a UTF-8 BOM", ok, p.stderr[-600:])
write(mp, "[labels]\nkettle = jug\n[map]\nkettle = pot\n")
p = subprocess.run(["mpiexec", "-n", "2", TOOL, "import", "ukdale", msrc, "-o", os.path.join(d, "m.h5"),
                    "--appliances", mp], capture_output=True, text=True, errors="replace", timeout=120)
ck("appliance map: unknown section is an error naming FILE:LINE (exit 2)",
   p.returncode == 2 and "bom_map.ini:3: unknown section '[map]'" in p.stderr and p.stderr.count("error:") == 1,
   (p.returncode, p.stderr[-600:]))
write(mp, "[labels]\nkettle = jug\nkettle = pot\n")
p = subprocess.run(["mpiexec", "-n", "2", TOOL, "import", "ukdale", msrc, "-o", os.path.join(d, "m.h5"),
                    "--appliances", mp], capture_output=True, text=True, errors="replace", timeout=120)
ck("appliance map: a repeated key is one warning (printed once), the last wins",
   p.returncode == 0 and p.stderr.count("bom_map.ini:3: [labels] kettle is defined again (first at line 2)") == 1,
   (p.returncode, p.stderr[-600:]))
rc, so, se = run(1, "nosuch", d, "-o", os.path.join(d, "x.h5"))
ck("unknown dataset kind: exit 2", rc == 2 and "unknown dataset" in se, se)

print(f"{len(FAIL)} failure(s)" if FAIL else "all passed")
sys.exit(1 if FAIL else 0)
