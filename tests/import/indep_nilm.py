#!/usr/bin/python3
"""Independent NILM recording generator (UK-DALE, REDD low_freq, REFIT CLEAN layouts).

Written from the public format descriptions only (not from src/synth or realistic.py):
  UK-DALE : house_N/labels.dat "M name", house_N/channel_M.dat "unix_ts watts" (ints, ~6 s),
            house_N/mains.dat "unix_ts active apparent volts" (~1 s, floats)
  REDD    : house_N/labels.dat ("1 mains", "2 mains", ...), channel_M.dat "unix_ts watts"
            (mains ~1 s, circuits ~3-4 s, "%.2f" values)
  REFIT   : CLEAN_HouseN.csv, "Time,Unix,Aggregate,Appliance1..Appliance9,Issues", ~8 s (6-9 s)

Defects: timestamp jitter, duplicate / conflicting / out-of-order lines, one large backward
clock step, multi-hour dropouts in one channel, single missed samples, unmetered loads
(partial metering), mains spikes, standby noise on appliance channels, non-canonical
labels, houses of different lengths, CRLF / missing final newline in some files.

Ground truth per house at 1 s is also saved as truth_house_N.npz (not read by gridtrain).

Usage:  /usr/bin/python3 indep_nilm.py ukdale|redd|refit|all OUTDIR [--days 4] [--seed 7]
"""
import argparse, os, sys, datetime
import numpy as np

T0 = 1364774400  # 2013-04-01 00:00:00 UTC


# ---------------------------------------------------------------- appliance signatures (1 s)
def _events(rng, n, per_day, hours, dur):
    """Start times (s) of events: per_day expected, hour-of-day preference list."""
    days = n // 86400 + 1
    starts = []
    for d in range(days):
        k = rng.poisson(per_day)
        for _ in range(k):
            h = rng.choice(hours)
            s = d * 86400 + int((h + rng.random()) * 3600)
            if s + dur < n:
                starts.append(s)
    return sorted(starts)


def fridge(rng, n):
    p = np.zeros(n)
    t = int(rng.integers(0, 1800))
    on_w = rng.uniform(75, 110)
    while t < n:
        on = int(rng.normal(1100, 150)); off = int(rng.normal(2300, 300))
        seg = slice(t, min(n, t + on))
        L = seg.stop - seg.start
        decay = on_w + 25 * np.exp(-np.arange(L) / 120.0)     # compressor settles
        p[seg] = decay + rng.normal(0, 2, L)
        p[t:t + 2] = rng.uniform(250, 400)                     # inrush
        t += on + off
        if rng.random() < 0.03:                                # defrost heater
            d = int(rng.uniform(900, 1500)); p[t:t + d] = rng.uniform(180, 240); t += d + 1200
    return p


def kettle(rng, n):
    p = np.zeros(n); w = rng.uniform(2200, 3000)
    for s in _events(rng, n, 5, [7, 7, 8, 10, 13, 16, 17, 20, 21], 400):
        d = int(rng.uniform(90, 240))
        p[s:s + d] = w * (1 - 0.02 * np.linspace(0, 1, d)) + rng.normal(0, 10, d)
    return p


def microwave(rng, n):
    p = np.zeros(n)
    for s in _events(rng, n, 3, [8, 12, 13, 18, 19, 22], 700):
        d = int(rng.uniform(40, 360))
        if rng.random() < 0.3:            # defrost: duty-cycled bursts
            cyc = (np.arange(d) % 30) < 12
            p[s:s + d] = np.where(cyc, rng.uniform(1150, 1300), 90)
        else:
            p[s:s + d] = rng.uniform(1100, 1350) + rng.normal(0, 15, d)
        p[s + d:s + d + 20] = 30          # fan run-on
    return p


def washing_machine(rng, n):
    p = np.zeros(n)
    for s in _events(rng, n, 0.7, [9, 10, 11, 14, 19], 9000):
        t = s
        fill = int(rng.uniform(120, 300)); p[t:t + fill] = rng.uniform(5, 15); t += fill
        heat = int(rng.uniform(600, 1500)); p[t:t + heat] = rng.uniform(1900, 2200) + rng.normal(0, 20, heat); t += heat
        wash = int(rng.uniform(1800, 3000))
        tt = np.arange(wash)
        drum = np.where((tt % 20) < 12, rng.uniform(150, 250), 15) + rng.normal(0, 10, wash)
        drum[(tt % 20) == 0] += 300                            # motor reversal spikes
        p[t:t + wash] = drum; t += wash
        for _ in range(int(rng.integers(2, 4))):               # rinse + spin
            r = int(rng.uniform(300, 600)); p[t:t + r] = np.where((np.arange(r) % 20) < 12, 180, 15); t += r
            sp = int(rng.uniform(300, 600)); ramp = np.linspace(200, rng.uniform(450, 650), sp)
            p[t:t + sp] = ramp + rng.normal(0, 25, sp); p[t:t + 3] = 900; t += sp
    return p


def dishwasher(rng, n):
    p = np.zeros(n)
    for s in _events(rng, n, 0.8, [13, 20, 21, 22], 8000):
        t = s
        for phase in ("pump", "heat", "pump", "pump", "heat", "dry"):
            if phase == "pump":
                d = int(rng.uniform(300, 900)); p[t:t + d] = rng.uniform(60, 120) + rng.normal(0, 4, d)
            elif phase == "heat":
                d = int(rng.uniform(900, 1400)); p[t:t + d] = rng.uniform(1900, 2400) + rng.normal(0, 15, d)
            else:
                d = int(rng.uniform(900, 1800)); p[t:t + d] = 3 + (np.arange(d) % 600 < 60) * 700
            t += d
    return p


def unmetered(rng, n):
    """base load, lights, TV, toaster, oven, shower/heater: the aggregate's other loads."""
    tod = (np.arange(n) % 86400) / 3600.0
    base = rng.uniform(90, 180) + 15 * np.sin(np.arange(n) / 5000.0)
    light = np.where((tod > 18) | (tod < 0.5) | ((tod > 6.5) & (tod < 8)), rng.uniform(120, 300), 5)
    light = light * (1 + 0.2 * np.sin(np.arange(n) / 700.0))
    p = base + light
    tv = np.zeros(n)
    for s in _events(rng, n, 1.5, [19, 20, 21], 7200):
        tv[s:s + int(rng.uniform(1800, 7200))] = rng.uniform(90, 160)
    toaster = np.zeros(n)
    for s in _events(rng, n, 0.8, [7, 8], 300):
        toaster[s:s + int(rng.uniform(120, 200))] = rng.uniform(850, 1000)
    oven = np.zeros(n)
    for s in _events(rng, n, 0.4, [17, 18], 5000):
        d = int(rng.uniform(1800, 4000)); oven[s:s + d] = np.where((np.arange(d) % 400) < 250, 2000, 40)
    shower = np.zeros(n)
    for s in _events(rng, n, 0.8, [6, 7, 22], 900):
        shower[s:s + int(rng.uniform(300, 700))] = rng.uniform(7000, 8500)
    return p + tv + toaster + oven + shower


APPS = {"fridge": fridge, "kettle": kettle, "microwave": microwave,
        "washing_machine": washing_machine, "dishwasher": dishwasher}


def house_truth(seed, days, apps):
    rng = np.random.default_rng(seed)
    n = int(days * 86400)
    tr = {a: APPS[a](rng, n)[:n] for a in apps}
    other = unmetered(rng, n)
    agg = other + sum(tr.values()) + rng.normal(0, 4, n)
    return tr, agg, rng


# ---------------------------------------------------------------- sampling with defects
JITTER = 1.0  # --jitter-scale


def sample_times(rng, start, n_sec, period, jitter, miss=0.005, dropout_h=0.0):
    k = np.arange(int(n_sec / period) - 1)
    t = start + k * period + rng.uniform(-jitter, jitter, k.size) * JITTER
    keep = rng.random(k.size) > miss
    if dropout_h > 0:
        a = rng.uniform(0.2, 0.7) * n_sec + start
        keep &= ~((t >= a) & (t < a + dropout_h * 3600))
    t = t[keep]
    return np.clip(t, start, start + n_sec - 1)


def value_at(x, t, start):
    return x[np.clip((t - start).astype(np.int64), 0, x.size - 1)]


def mess_lines(rng, ts, vals, fmt, dup=0.002, conflict=0.0003, swap=0.0005, backjump=True):
    """ts, vals -> list of text lines with exact duplicates, conflicting duplicates, swaps,
    and one line carrying a time 300 s in the past (a clock hiccup)."""
    lines = [fmt(t, v) for t, v in zip(ts, vals)]
    out = []
    for i, ln in enumerate(lines):
        out.append(ln)
        r = rng.random()
        if r < dup:
            out.append(ln)
        elif r < dup + conflict:
            out.append(fmt(ts[i], vals[i] + 37))
    for i in range(1, len(out) - 1):
        if rng.random() < swap:
            out[i], out[i + 1] = out[i + 1], out[i]
    if backjump and len(out) > 1000:
        j = len(out) // 3
        out.insert(j, fmt(ts[min(j, len(ts) - 1)] - 300, vals[min(j, len(vals) - 1)]))
    return out


def write_lines(path, lines, crlf=False, final_newline=True):
    nl = "\r\n" if crlf else "\n"
    with open(path, "w", newline="") as f:
        f.write(nl.join(lines))
        if final_newline:
            f.write(nl)


# ---------------------------------------------------------------- UK-DALE
UKDALE_HOUSES = {  # house: (days, {appliance: label}, dropout channel)
    1: (1.0, {"fridge": "fridge", "kettle": "kettle", "microwave": "microwave",
              "washing_machine": "washing_machine", "dishwasher": "dishwasher"}, "kettle"),
    2: (0.8, {"fridge": "fridge_freezer", "kettle": "kettle", "microwave": "microwave",
              "washing_machine": "washer_dryer", "dishwasher": "dish_washer"}, "fridge"),
    3: (0.6, {"fridge": "fridge", "kettle": "kettle",
              "washing_machine": "washing_machine", "dishwasher": "dishwasher"}, "washing_machine"),
    4: (0.9, {"fridge": "fridge_freezer", "kettle": "kettle", "microwave": "microwave",
              "washing_machine": "washing_machine", "dishwasher": "dishwasher"}, "microwave"),
}


def ukdale(out, days=4, seed=7):
    for h, (frac, labels, drop) in UKDALE_HOUSES.items():
        hd = max(1.0, days * frac)
        tr, agg, rng = house_truth(seed * 100 + h, hd, list(labels))
        n = agg.size; start = T0 + h * 3600 * 7
        d = os.path.join(out, "house_%d" % h); os.makedirs(d, exist_ok=True)
        # mains.dat at ~1 s: active, apparent, voltage; spikes
        t = sample_times(rng, start, n, 1.0, 0.3, miss=0.01)
        act = value_at(agg, t, start)
        spk = rng.random(t.size) < 2e-5
        act = np.where(spk, rng.uniform(2e4, 6e4, t.size), act)
        app = act * rng.uniform(1.02, 1.15) + 20
        volt = 240 + rng.normal(0, 2, t.size)
        lines = mess_lines(rng, t, np.c_[act, app, volt],
                           lambda a, v: "%.3f %.2f %.2f %.2f" % (a, v[0], v[1], v[2]),
                           backjump=False)
        write_lines(os.path.join(d, "mains.dat"), lines)
        lab = ["1 aggregate"]
        # channel 1: the 6 s aggregate (sparse, as in UK-DALE)
        t = sample_times(rng, start, n, 6.0, 1.5)
        write_lines(os.path.join(d, "channel_1.dat"),
                    mess_lines(rng, np.round(t).astype(int), value_at(agg, t, start).astype(int) ,
                               lambda a, v: "%d %d" % (a, v)))
        ch = 2
        for a, name in labels.items():
            lab.append("%d %s" % (ch, name))
            t = sample_times(rng, start, n, 6.0, 1.5, dropout_h=(5.0 if a == drop else 0.0))
            v = value_at(tr[a], t, start) + rng.uniform(0, 4, t.size)   # standby noise
            ti = np.round(t).astype(int)
            write_lines(os.path.join(d, "channel_%d.dat" % ch),
                        mess_lines(rng, ti, np.round(v).astype(int), lambda a_, v_: "%d %d" % (a_, v_)),
                        final_newline=(ch != 3))
            ch += 1
        # an unrelated metered circuit (not in the map: kept under its own name)
        lab.append("%d %s" % (ch, "boiler"))
        t = sample_times(rng, start, n, 6.0, 1.5)
        write_lines(os.path.join(d, "channel_%d.dat" % ch),
                    ["%d %d" % (x, 60 + (x // 1800) % 2 * 40) for x in np.round(t).astype(int)])
        write_lines(os.path.join(d, "labels.dat"), lab)
        np.savez_compressed(os.path.join(out, "truth_house_%d.npz" % h), start=start, agg=agg, **tr)


# ---------------------------------------------------------------- REDD low_freq
REDD_HOUSES = {
    1: (1.0, {"fridge": "refrigerator", "dishwasher": "dishwaser", "microwave": "microwave",
              "washing_machine": "washer_dryer"}),
    2: (0.7, {"fridge": "refrigerator", "dishwasher": "dishwaser", "microwave": "microwave",
              "washing_machine": "washer_dryer"}),
    3: (0.85, {"fridge": "refrigerator", "dishwasher": "dishwaser", "microwave": "microwave",
               "washing_machine": "washer_dryer"}),
}


def redd(out, days=4, seed=7):
    for h, (frac, labels) in REDD_HOUSES.items():
        hd = max(1.0, days * frac)
        tr, agg, rng = house_truth(seed * 100 + 50 + h, hd, list(labels))
        n = agg.size; start = T0 + 86400 * 30 + h * 5000
        d = os.path.join(out, "house_%d" % h); os.makedirs(d, exist_ok=True)
        leg1 = agg * 0.55; leg2 = agg - leg1
        lab = []
        ch = 1
        for leg in (leg1, leg2):
            t = sample_times(rng, start, n, 1.0, 0.4, miss=0.02)
            v = value_at(leg, t, start) * 1.05     # apparent power
            v = np.where(rng.random(t.size) < 1e-5, 15000.0, v)
            write_lines(os.path.join(d, "channel_%d.dat" % ch),
                        mess_lines(rng, np.round(t).astype(int), v, lambda a, v_: "%d %.2f" % (a, v_)))
            lab.append("%d mains" % ch); ch += 1
        for a, name in labels.items():
            # washer_dryer is a 240 V load on two circuits (REDD lists it twice)
            parts = [0.5, 0.5] if a == "washing_machine" else [1.0]
            for pi, f in enumerate(parts):
                t = sample_times(rng, start, n, 3.0 + rng.uniform(0, 1), 1.0,
                                 dropout_h=(4.0 if (a == "washing_machine" and pi == 1) else 0.0))
                v = value_at(tr[a], t, start) * f + rng.uniform(0, 3, t.size)
                write_lines(os.path.join(d, "channel_%d.dat" % ch),
                            mess_lines(rng, np.round(t).astype(int), v, lambda a_, v_: "%d %.2f" % (a_, v_)))
                lab.append("%d %s" % (ch, name)); ch += 1
        for extra in ("lighting", "kitchen_outlets", "bathroom_gfi"):
            t = sample_times(rng, start, n, 3.0, 1.0)
            write_lines(os.path.join(d, "channel_%d.dat" % ch),
                        ["%d %.2f" % (x, 20 + rng.random() * 5) for x in np.round(t).astype(int)])
            lab.append("%d %s" % (ch, extra)); ch += 1
        write_lines(os.path.join(d, "labels.dat"), lab)
        np.savez_compressed(os.path.join(out, "truth_house_%d.npz" % h), start=start, agg=agg, **tr)


# ---------------------------------------------------------------- REFIT CLEAN
# Appliance1..9 per house as in the REFIT readme (the columns we model get signatures,
# others get small loads).
REFIT_COLS = {
    2: ["fridge_freezer", "washing_machine", "dishwasher", "television_site", "microwave",
        "toaster", "hi_fi", "kettle", "overhead_fan"],
    3: ["toaster", "fridge_freezer", "freezer", "tumble_dryer", "dishwasher", "washing_machine",
        "television_site", "microwave", "kettle"],
    5: ["fridge_freezer", "tumble_dryer", "washing_machine", "dishwasher", "desktop_computer",
        "television_site", "microwave", "kettle", "toaster"],
    20: ["fridge", "freezer", "tumble_dryer", "washing_machine", "dishwasher", "computer_site",
         "television_site", "microwave", "kettle"],
}
CANON = {"fridge_freezer": "fridge", "fridge": "fridge", "washing_machine": "washing_machine",
         "dishwasher": "dishwasher", "microwave": "microwave", "kettle": "kettle"}
REFIT_LEN = {2: 1.0, 3: 0.6, 5: 0.8, 20: 0.9}


def refit(out, days=4, seed=7):
    os.makedirs(out, exist_ok=True)
    for h, cols in REFIT_COLS.items():
        hd = max(1.0, days * REFIT_LEN[h])
        tr, agg, rng = house_truth(seed * 100 + 90 + h, hd, list(APPS))
        n = agg.size; start = T0 + 86400 * 200 + h * 977
        t = start + np.cumsum(rng.uniform(6.0, 9.0, int(n / 7.5)))
        t = t[t < start + n - 1]
        # two gaps of missing rows (logger offline)
        for g in range(2):
            a = start + rng.uniform(0.1, 0.8) * n
            t = t[~((t >= a) & (t < a + rng.uniform(1, 4) * 3600))]
        ti = np.round(t).astype(np.int64)
        A = value_at(agg, t, start)
        A = np.where(rng.random(t.size) < 2e-5, 40000.0, A)
        mat = []
        for c in cols:
            if c in CANON:
                v = value_at(tr[CANON[c]], t, start)
            else:
                v = (rng.random(t.size) < 0.05) * rng.uniform(20, 120)
            mat.append(np.maximum(0, np.round(v + rng.uniform(0, 3, t.size))).astype(int))
        mat = np.array(mat).T
        issues = (mat.sum(1) > A).astype(int)
        lines = ["Time,Unix,Aggregate," + ",".join("Appliance%d" % i for i in range(1, 10)) + ",Issues"]
        body = []
        for i in range(t.size):
            ts = datetime.datetime.fromtimestamp(int(ti[i]), datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
            body.append("%s,%d,%d,%s,%d" % (ts, ti[i], int(round(A[i])), ",".join(map(str, mat[i])), issues[i]))
        for i in range(1, len(body) - 1):
            r = rng.random()
            if r < 0.001:
                body[i], body[i + 1] = body[i + 1], body[i]
        for i in sorted(rng.choice(len(body), 5, replace=False), reverse=True):
            body.insert(i, body[i])   # exact duplicate rows
        write_lines(os.path.join(out, "CLEAN_House%d.csv" % h), lines + body, crlf=(h == 3))
        np.savez_compressed(os.path.join(out, "truth_house_%d.npz" % h), start=start, agg=agg, **tr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("fmt", choices=["ukdale", "redd", "refit", "all"])
    ap.add_argument("out")
    ap.add_argument("--days", type=float, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--jitter-scale", type=float, default=1.0, help="0 = samples exactly on the period")
    a = ap.parse_args()
    JITTER = a.jitter_scale
    if a.fmt in ("ukdale", "all"):
        ukdale(os.path.join(a.out, "ukdale") if a.fmt == "all" else a.out, a.days, a.seed)
    if a.fmt in ("redd", "all"):
        redd(os.path.join(a.out, "redd") if a.fmt == "all" else a.out, a.days, a.seed)
    if a.fmt in ("refit", "all"):
        refit(os.path.join(a.out, "refit") if a.fmt == "all" else a.out, a.days, a.seed)
