#!/usr/bin/python3
"""Independent CARE to Compare farm generator (written from the public format
description of Gueck, Roelofs, Faulstich 2024, doi 10.3390/data9120138, and
the EnergyFaultDetector loader's expectations; it shares no code with
realistic.py).

Layout written:  OUT/Wind Farm X/datasets/<event_id>.csv
                 OUT/Wind Farm X/event_info.csv
                 OUT/Wind Farm X/feature_description.csv

Usage (quick farm-A-like, 5 assets, ~2 min to import+train):
  /usr/bin/python3 tests/import/indep_care.py OUT --seed 1 --farm A
Options: --assets N --train-days D --pred-days D --datasets-per-asset K
         --features N (override 86/257/957) --sep ';'|',' --crlf --quote
         --trailing-sep --nan empty|NaN|nan --latin1 --id-mode asset|dataset
         --nan-rate R (isolated NaN cells, default 0.002) --dropout-blocks X
         (single-sensor NaN blocks per 15 days, default 1) --float-fmt %.6g
Ground truth (anomaly kind, onset, rows) is printed and written to OUT/truth_X.txt.
Anomaly kinds: drift (gearbox bearing temp ramps from days before event_start),
step (+7 degC generator bearing), cooling (converter excess only at high load),
stuck (gearbox oil temperature frozen). Counters (Wh ~1e9-5e9, hours) are
monotone; status 1 derated / 2 idling / 3 service / 4 downtime / 5 other.
"""
import argparse
import zlib
import math
import os
import numpy as np

P = 600  # seconds per row
EPOCH0 = np.datetime64("2022-01-03T00:00:00")

FARM_FEATURES = {"A": 86, "B": 257, "C": 957}
RATED = {"A": 2050.0, "B": 3000.0, "C": 2300.0}


def ou(rng, n, phi, sd):
    e = rng.normal(0, sd * math.sqrt(1 - phi * phi), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def lag(x, tau_rows):
    a = 1.0 / max(tau_rows, 1.0)
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] + a * (x[i] - y[i - 1])
    return y


def simulate_asset(rng, n, t_days, farm, asset_bias):
    """Latent physics of one turbine on its 10-min clock. Returns dict of
    latent signals (avg per row) and status per row."""
    rated = RATED[farm]
    doy = (t_days + 2) / 365.25 * 2 * math.pi
    hod = (t_days % 1.0) * 2 * math.pi
    # wind: Rayleigh (Weibull k=2) from two OU components, seasonal + diurnal scale
    scale = 6.5 * (1 + 0.25 * np.cos(doy)) * (1 + 0.12 * np.sin(hod - 2.0))
    synop = np.exp(ou(rng, n, 0.999, 0.35))  # multi-day weather systems
    x = ou(rng, n, 0.985, 1.0)
    y = ou(rng, n, 0.985, 1.0)
    ws = scale * synop * np.sqrt(x * x + y * y) / math.sqrt(2) * 0.9
    ws = np.clip(ws + rng.normal(0, 0.15, n), 0, 38)
    wdir = np.cumsum(rng.normal(0, 4.0, n)) + rng.uniform(0, 360)
    vin, vr, vout = 3.0, 12.0, 25.0
    pc = np.clip((ws ** 3 - vin ** 3) / (vr ** 3 - vin ** 3), 0, 1)
    pc[ws < vin] = 0.0
    pc[ws > vout] = 0.0
    status = np.zeros(n, dtype=np.int64)
    status[ws < vin] = 2  # idling
    avail = np.ones(n)
    cap = np.ones(n)
    # curtailment periods: declared (status 1) or silent (status 0)
    for _ in range(max(1, int(t_days[-1] / 20))):
        s = rng.integers(0, n - 50)
        L = int(rng.integers(6, 72))
        cap[s:s + L] = rng.uniform(0.3, 0.7)
        if rng.random() < 0.6:
            status[s:s + L][pc[s:s + L] > cap[s:s + L]] = 1
    # service (3) a few hours, downtime (4) up to 2 days, other (5) short
    for code, cnt, lo, hi in ((3, t_days[-1] / 30, 12, 48), (4, t_days[-1] / 60, 24, 300), (5, t_days[-1] / 45, 2, 12)):
        for _ in range(int(cnt) + (1 if rng.random() < cnt % 1 else 0)):
            s = rng.integers(0, n - 300)
            L = int(rng.integers(lo, hi))
            status[s:s + L] = code
            avail[s:s + L] = 0.0
    load = np.minimum(pc, cap) * avail
    load[ws > vout] = 0.0
    power = rated * load + rng.normal(0, 0.004 * rated, n) * (load > 0)
    power[load == 0] = rng.uniform(-12, -2, (load == 0).sum())  # self consumption
    # pitch: fine pitch below rated, feathered above rated / curtailed, 88 deg at stop
    pitch = np.where(load > 0, np.clip((ws - vr) * 2.4, 0, 30), 88.0)
    pitch = np.where((load > 0) & (cap < 1) & (pc > cap), pitch + 6 * (pc - cap) / 0.5, pitch)
    pitch += rng.normal(0, 0.3, n)
    rotor = np.where(load > 0, np.clip(9 + 7 * np.clip((ws - vin) / (9.5 - vin), 0, 1), 9, 16), np.clip(ws * 0.4, 0, 3))
    rotor += rng.normal(0, 0.08, n)
    rotor = np.clip(rotor, 0, None)
    gen = rotor * 112.0
    amb = 9 + 9 * np.sin(doy - 1.9) + 3.5 * np.sin(hod - 2.2) + ou(rng, n, 0.995, 2.0)
    lr = lag(load, 3)
    temps = {
        "gearbox_bearing": (amb + 20 + 38 * lag(load, 18) + asset_bias[0], "Temperature in gearbox bearing on high speed shaft"),
        "gearbox_oil": (amb + 25 + 28 * lag(load, 30), "Temperature of gearbox oil sump"),
        "gen_bearing_de": (amb + 15 + 30 * lag(load, 24) + asset_bias[1], "Temperature generator bearing drive end"),
        "gen_bearing_nde": (amb + 13 + 26 * lag(load, 24), "Temperature generator bearing non-drive end"),
        "gen_winding": (amb + 25 + 60 * lag(load ** 1.5, 9), "Temperature of generator stator winding phase 1"),
        "converter": (amb + 18 + 22 * lag(load, 6), "Temperature in converter cabinet"),
        "transformer": (amb + 20 + 45 * lag(load ** 2, 12), "Temperature of transformer phase 1"),
        "nacelle": (amb + 6 + 9 * lag(load, 36), "Temperature inside nacelle"),
        "hydraulic": (amb + 22 + 8 * lag(load, 48), "Temperature of hydraulic oil"),
        "hub": (amb + 4 + 5 * lag(load, 60), "Temperature in hub controller"),
    }
    energy = np.cumsum(np.clip(power, 0, None) * P / 3600.0) + rng.uniform(1e9, 5e9)  # Wh
    ophours = np.cumsum((load > 0) * (P / 3600.0)) + rng.uniform(2e4, 6e4)
    return dict(ws=ws, wdir=wdir % 360, nac=(wdir + ou(rng, n, 0.9, 6.0)) % 360, power=power,
                reactive=power * 0.05 + rng.normal(0, 20, n), pitch=pitch, rotor=rotor, gen=gen, amb=amb,
                load=load, lr=lr, temps=temps, energy=energy, ophours=ophours, status=status,
                volt=690 + rng.normal(0, 3, n), freq=50 + rng.normal(0, 0.02, n),
                curr=np.clip(power, 0, None) / (690 * 1.732) * 1000 + rng.normal(0, 5, n))


def apply_anomaly(sig, kind, onset, ev_start, ev_end, n, rng):
    t = sig["temps"]
    if kind == "drift":  # bearing temperature drift from onset, worsening through the event
        r = np.clip((np.arange(n) - onset) / max(ev_start - onset, 1), 0, None)
        r = np.minimum(r, 1.5)
        v, d = t["gearbox_bearing"]
        t["gearbox_bearing"] = (v + 11 * r * (0.4 + sig["lr"]), d)
    elif kind == "step":
        v, d = t["gen_bearing_de"]
        v = v.copy()
        v[onset:] += 7.0
        t["gen_bearing_de"] = (v, d)
    elif kind == "cooling":  # cooling fault: excess only at high load
        v, d = t["converter"]
        v = v.copy()
        v[onset:] += 28 * np.clip(sig["lr"][onset:] - 0.55, 0, None) / 0.45
        t["converter"] = (v, d)
    elif kind == "stuck":  # sensor frozen
        v, d = t["gearbox_oil"]
        v = v.copy()
        v[onset:ev_end + 1] = v[onset]
        t["gearbox_oil"] = (v, d)
        sig["stuck"] = (onset, ev_end + 1)


def build_columns(farm, nfeat, rng):
    """List of (column name, sensor name, stat, unit, descr, is_angle, is_counter, generator key)."""
    cols = []
    k = [0]

    def add(base, unit, descr, key, stats=("avg",), angle=False, counter=False):
        nm = "%s_%d" % (base, k[0])
        k[0] += 1
        for s in stats:
            cols.append((nm + "_" + s, nm, s, unit, descr, angle, counter, key))

    DEG = "\u00b0C"
    add("sensor", DEG, "Ambient temperature", "amb", ("avg",))
    add("wind_speed", "m/s", "Wind speed measured on nacelle", "ws", ("avg", "min", "max", "std"))
    add("sensor", "\u00b0", "Absolute wind direction", "wdir", ("avg",), angle=True)
    add("sensor", "\u00b0", "Nacelle direction", "nac", ("avg", "min", "max"), angle=True)
    add("power", "kW", "Grid power", "power", ("avg", "min", "max", "std"))
    add("reactive_power", "kVAr", "Reactive power", "reactive", ("avg", "min", "max", "std"))
    add("sensor", "\u00b0", "Pitch angle blade 1", "pitch", ("avg", "min", "max", "std"), angle=True)
    add("sensor", "rpm", "Rotor speed", "rotor", ("avg", "min", "max", "std"))
    add("sensor", "rpm", "Generator speed", "gen", ("avg", "min", "max", "std"))
    for tk in ("gearbox_bearing", "gearbox_oil", "gen_bearing_de", "gen_bearing_nde", "gen_winding",
               "converter", "transformer", "nacelle", "hydraulic", "hub"):
        add("sensor", DEG, None, "T:" + tk, ("avg", "max") if farm == "A" else ("avg", "min", "max", "std"))
    add("sensor", "V", "Grid voltage phase 1", "volt", ("avg", "min", "max"))
    add("sensor", "A", "Grid current phase 1", "curr", ("avg", "max"))
    add("sensor", "Hz", "Grid frequency", "freq", ("avg",))
    add("sensor", "Wh", "Active energy produced (counter)", "energy", ("avg",), counter=True)
    add("sensor", "h", "Operating hours (counter)", "ophours", ("avg",), counter=True)
    # filler channels until nfeat: mixes of the latent signals (auxiliary temps, speeds, pressures)
    fill_kinds = [(DEG, "Temperature auxiliary %d", "F:temp"), ("bar", "Hydraulic pressure %d", "F:press"),
                  ("rpm", "Cooling fan speed %d", "F:fan"), ("%", "Cooling valve position %d", "F:valve"),
                  ("A", "Converter current %d", "F:curr"), ("mm/s", "Vibration tower %d", "F:vib")]
    j = 0
    while len(cols) < nfeat:
        u, d, key = fill_kinds[j % len(fill_kinds)]
        stats = ("avg", "min", "max", "std")[: int(rng.integers(1, 5))]
        if len(cols) + len(stats) > nfeat:
            stats = stats[: nfeat - len(cols)]
        add("sensor", u, d % j, key + ":%d" % j, stats)
        j += 1
    return cols[:nfeat]


def channel_values(key, stat, sig, rng, n, cache):
    if key.startswith("T:"):
        v, _ = sig["temps"][key[2:]]
        base = v
        sd = 0.15 + 0.02 * sig["load"]
    elif key.startswith("F:"):
        _, kind, idx = key.split(":")
        if key not in cache:
            r = np.random.default_rng(zlib.crc32(key.encode()) + 7)
            if kind == "temp":
                base = sig["amb"] + r.uniform(5, 30) + r.uniform(5, 30) * lag(sig["load"], r.uniform(3, 40))
            elif kind == "press":
                base = 150 + 20 * sig["load"] + r.normal(0, 1.5, n)
            elif kind == "fan":
                base = np.where(sig["temps"]["converter"][0] > 40, 1400, 700) + r.normal(0, 20, n)
            elif kind == "valve":
                base = np.clip(100 * (sig["temps"]["gearbox_oil"][0] - 45) / 20, 0, 100)
            elif kind == "curr":
                base = sig["curr"] * r.uniform(0.3, 0.6) + r.normal(0, 3, n)
            else:
                base = 0.4 + 2.5 * sig["load"] * sig["rotor"] / 16 + np.abs(r.normal(0, 0.2, n))
            cache[key] = base
        base = cache[key]
        sd = 0.02 * (np.abs(base) + 1)
    else:
        base = sig[key]
        sd = {"ws": 0.12 * sig["ws"] + 0.05, "power": 0.06 * np.abs(sig["power"]) + 2,
              "reactive": 15 + 0.02 * np.abs(sig["power"]), "pitch": 0.4 + 0.1 * sig["pitch"] / 10,
              "rotor": 0.2 + 0.02 * sig["rotor"], "gen": 20 + 2 * sig["rotor"],
              "nac": 1.0 + 0 * base, "wdir": 8 + 0 * base, "volt": 2.0 + 0 * base, "curr": 20 + 0 * base,
              "freq": 0.02 + 0 * base, "amb": 0.1 + 0 * base, "energy": 0 * base, "ophours": 0 * base}[key]
    if stat == "avg":
        out = base
    elif stat == "std":
        out = sd * rng.uniform(0.8, 1.2, n)
    elif stat == "min":
        out = base - sd * rng.uniform(1.2, 2.8, n)
    else:
        out = base + sd * rng.uniform(1.2, 2.8, n)
    if key in ("nac", "wdir"):
        out = out % 360
    if key == "ws":
        out = np.clip(out, 0, None)
    if key.startswith("T:") and "stuck" in sig and key == "T:gearbox_oil":
        a, b = sig["stuck"]
        out = out.copy()
        out[a:b] = base[a]
        if stat == "std":
            out[a:b] = 0.0
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--farm", default="A")
    ap.add_argument("--assets", type=int, default=5)
    ap.add_argument("--train-days", type=float, default=60)
    ap.add_argument("--pred-days", type=float, default=12)
    ap.add_argument("--datasets-per-asset", type=int, default=2)
    ap.add_argument("--features", type=int, default=0)
    ap.add_argument("--sep", default=";")
    ap.add_argument("--crlf", action="store_true")
    ap.add_argument("--quote", action="store_true", help="quote all header names and text fields")
    ap.add_argument("--trailing-sep", action="store_true")
    ap.add_argument("--nan", default="empty", choices=["empty", "NaN", "nan"])
    ap.add_argument("--latin1", action="store_true", help="feature_description.csv in Latin-1")
    ap.add_argument("--id-mode", default="asset", choices=["asset", "dataset"])
    ap.add_argument("--float-fmt", default="%.6g")
    ap.add_argument("--nan-rate", type=float, default=0.002, help="share of isolated NaN cells")
    ap.add_argument("--dropout-blocks", type=float, default=1.0, help="single-sensor NaN blocks per 15 days")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    farm = a.farm.upper()
    nfeat = a.features or FARM_FEATURES[farm]
    root = os.path.join(a.out, "Wind Farm %s" % farm)
    os.makedirs(os.path.join(root, "datasets"), exist_ok=True)
    cols = build_columns(farm, nfeat, rng)
    fmts = ["%.1f" if c[6] else a.float_fmt for c in cols]
    eol = "\r\n" if a.crlf else "\n"
    S = a.sep
    nanstr = {"empty": "", "NaN": "NaN", "nan": "nan"}[a.nan]

    def q(s):
        s = str(s)
        if a.quote or S in s or '"' in s:
            return '"' + s.replace('"', '""') + '"'
        return s

    def line(fields):
        return S.join(fields) + (S if a.trailing_sep else "") + eol

    kinds = ["drift", "step", "cooling", "stuck"]
    events = []
    eid = 0
    anom_count = []
    asset_ids = sorted(rng.choice(np.arange(0, 60), a.assets, replace=False).tolist())
    summary = []
    for ai, asset in enumerate(asset_ids):
        K = a.datasets_per_asset
        span_len = a.train_days + a.pred_days
        offs = sorted([0.0] + [float(rng.uniform(0.2, 0.8) * a.train_days) * (i) / max(K - 1, 1) + 10 * i for i in range(1, K)])
        total_days = offs[-1] + span_len + 1
        n = int(total_days * 144)
        start = EPOCH0 + np.timedelta64(int(rng.integers(0, 200)) * 144 * 600, "s")
        t_days = (np.arange(n) * P / 86400.0) + (start - np.datetime64("2022-01-01T00:00:00")) / np.timedelta64(1, "D")
        bias = rng.normal(0, 1.5, 3)
        sig = simulate_asset(rng, n, t_days, farm, bias)
        # which datasets are anomalies: first asset gets 2 anomalies for variety, others alternate
        plan = []
        for k in range(K):
            lab = "anomaly" if (ai + k) % 2 == 0 else "normal"
            plan.append(lab)
        anomaly_rows = []
        ds = []
        for k in range(K):
            r0 = int(offs[k] * 144)
            rtr = r0 + int(a.train_days * 144)
            r1 = r0 + int(span_len * 144)
            lab = plan[k]
            if lab == "anomaly":
                kind = kinds[(len(anom_count) + a.seed) % len(kinds)]
                anom_count.append(eid)
                ev_end = r1 - int(rng.integers(0, 72))
                ev_start = ev_end - int(rng.uniform(1.0, 4.0) * 144)
                lead = {"drift": rng.uniform(6, 10), "step": rng.uniform(2, 5), "cooling": rng.uniform(3, 8), "stuck": 0.5}[kind]
                onset = max(rtr + 72, ev_start - int(lead * 144))
                apply_anomaly(sig, kind, onset, ev_start, ev_end, n, rng)
                anomaly_rows.append((onset, ev_end))
            else:
                kind = "none"
                ev_start = rtr + int(rng.uniform(0.3, 0.6) * (r1 - rtr))
                ev_end = ev_start + int(rng.uniform(1, 2) * 144)
                ev_end = min(ev_end, r1 - 1)
            ds.append((eid, r0, rtr, r1, lab, kind, ev_start, ev_end))
            eid += 1
        # missing rows (gaps) and NaN cells, identical across datasets of the asset
        present = np.ones(n, bool)
        for _ in range(int(total_days / 7)):
            s = rng.integers(0, n - 40)
            present[s:s + int(rng.integers(1, 30))] = False
        present[sig["status"] == 4] &= rng.random((sig["status"] == 4).sum()) > 0.5
        cache = {}
        data = np.empty((n, len(cols)))
        for j, (cname, sname, st, unit, d, ang, ctr, key) in enumerate(cols):
            data[:, j] = channel_values(key, st, sig, rng, n, cache)
        data[rng.random(data.shape) < a.nan_rate] = np.nan
        for _ in range(int(a.dropout_blocks * total_days / 15)):  # a sensor dropout block
            j = rng.integers(0, len(cols))
            s = rng.integers(0, n - 300)
            data[s:s + int(rng.integers(6, 288)), j] = np.nan
        ts = [str(start + np.timedelta64(i * P, "s")).replace("T", " ") for i in range(n)]
        for (e, r0, rtr, r1, lab, kind, evs, eve) in ds:
            path = os.path.join(root, "datasets", "%d.csv" % e)
            ids = {}
            with open(path, "w", newline="", encoding="utf-8") as f:
                f.write(line([q(c) for c in ["time_stamp", "asset_id", "id", "train_test", "status_type_id"] + [c[0] for c in cols]]))
                for r in range(r0, r1):
                    if not present[r]:
                        continue
                    rid = r if a.id_mode == "asset" else r - r0
                    ids[r] = rid
                    tt = "train" if r < rtr else "prediction"
                    vals = [nanstr if not np.isfinite(v) else (fmts[j] % v) for j, v in enumerate(data[r])]
                    f.write(line([q(ts[r]) if a.quote else ts[r], str(asset), str(rid), q(tt) if a.quote else tt,
                                  str(int(sig["status"][r]))] + vals))
            # event ids: nearest present row
            def near(r):
                for d in range(0, 500):
                    for c in (r + d, r - d):
                        if c in ids:
                            return c
                return r
            evs_p, eve_p = near(evs), near(eve)
            desc = {"drift": "Gearbox bearing damage; temperature rising", "step": "Generator bearing replaced; sensor offset",
                    "cooling": "Converter cooling pump failure", "stuck": "Gearbox oil temperature sensor defect",
                    "none": ""}[kind]
            events.append((e, lab, ts[evs_p], ts[eve_p], asset, ids.get(evs_p, evs_p), ids.get(eve_p, eve_p), desc))
            summary.append("event %d asset %d %s %s rows %d..%d train until %d event %d..%d" % (e, asset, lab, kind, r0, r1, rtr, evs, eve))
    with open(os.path.join(root, "event_info.csv"), "w", newline="", encoding="utf-8") as f:
        f.write(line([q(h) for h in ["event_id", "event_label", "event_start", "event_end", "asset", "event_start_id", "event_end_id", "event_description"]]))
        for ev in events:
            f.write(line([str(ev[0]), q(ev[1]), q(ev[2]) if a.quote else ev[2], q(ev[3]) if a.quote else ev[3], str(ev[4]), str(ev[5]), str(ev[6]), q(ev[7])]))
    seen = {}
    for c in cols:
        seen.setdefault(c[1], []).append(c)
    statname = {"avg": "average", "min": "minimum", "max": "maximum", "std": "std_dev"}
    enc = "latin-1" if a.latin1 else "utf-8"
    with open(os.path.join(root, "feature_description.csv"), "w", newline="", encoding=enc) as f:
        f.write(line([q(h) for h in ["sensor_name", "statistics_type", "description", "unit", "is_angle", "is_counter"]]))
        for sname, cs in seen.items():
            c = cs[0]
            d = c[4] or ("Temperature " + c[7][2:].replace("_", " "))
            f.write(line([q(sname), q(",".join(statname[x[2]] for x in cs)), q(d), q(c[3]), "True" if c[5] else "False", "True" if c[6] else "False"]))
    with open(os.path.join(a.out, "truth_%s.txt" % farm), "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
