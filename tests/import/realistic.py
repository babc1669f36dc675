"""tests/import/realistic.py: NILM recordings in the public datasets' layouts
with the clocks real meters have, for end-to-end tests of import -> train ->
eval (test_import_clocks.py) and for trying the pipeline by hand:

    /usr/bin/python3 tests/import/realistic.py ukdale|redd|refit|care OUT_DIR [--clean] [--days D]

One ground truth per house at 1 s (a base load with noise; a cycling fridge;
kettle, microwave, washing-machine and dishwasher activations at random
times) is sampled the way each dataset's meters sample it:

* UK-DALE (house_N/channel_M.dat, labels.dat; 6 s nominal): every channel has
  its own clock, intervals of 5, 6 or 7 s (timestamp jitter: some 6 s bins get
  no sample, some two), the sub-meters drop out for 10-60 minutes a few times
  a day independently of each other, and house 2 has no microwave meter.
* REDD (low_freq house_N/channel_M.dat, two mains legs; 3 s output period):
  intervals of 3 or 4 s on every channel, sub-meter dropouts.
* REFIT (CLEAN_HouseN.csv; 8 s): one clock for all columns, intervals of 6 to
  10 s (irregular), and the Issues column.

`clean=True` writes the same truth on an exact grid (no jitter, no dropouts,
every meter present): the recording a gap-free meter would give, the
reference for how many windows the defective one keeps. Numbers are
deterministic in `seed`.
"""
import os
import sys

import numpy as np

T0 = 1400000000  # a multiple of 6 and 8: grid-aligned starts for the clean reference


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def truth(seed, days):
    """dict name -> power (W) at 1 s, and the aggregate"""
    r = np.random.default_rng(seed)
    n = int(days * 86400)
    t = np.arange(n)
    app = {}
    # fridge: 20 min on at ~90 W, 40 min off, drifting phase
    period = 3600 + r.integers(-300, 300)
    app["fridge"] = np.where(((t + r.integers(0, period)) % period) < 1200, 90.0, 1.0) + r.normal(0, 2, n)

    def events(k_per_day, dur_s, power, shape=None):
        x = np.zeros(n)
        for _ in range(max(1, int(k_per_day * days))):
            a = int(r.integers(0, max(1, n - dur_s)))
            d = int(dur_s * r.uniform(0.7, 1.3))
            seg = np.full(d, power, dtype=float) if shape is None else shape(d)
            x[a:a + d] += seg[: max(0, min(d, n - a))]
        return x

    app["kettle"] = events(6, 180, 2200.0)
    app["microwave"] = events(3, 150, 1200.0)

    def wash(d):  # heating, then tumbling and a spin
        s = np.full(d, 150.0)
        s[: d // 5] = 2000.0
        s[-d // 8:] = 400.0
        return s

    def dish(d):
        s = np.full(d, 60.0)
        s[d // 6: d // 3] = 2100.0
        s[2 * d // 3: 5 * d // 6] = 2100.0
        return s

    app["washing_machine"] = events(1, 5400, 0.0, wash)
    app["dishwasher"] = events(1, 6600, 0.0, dish)
    base = 150 + 60 * np.sin(2 * np.pi * t / 86400.0) + r.normal(0, 8, n)
    agg = base + sum(app.values())
    for k in app:
        app[k] = np.clip(app[k], 0, None)
    return app, np.clip(agg, 0, None)


def clock(r, n_s, steps, probs, first):
    """sample times (s) from `first`, intervals drawn from `steps`"""
    k = int(n_s / min(steps)) + 2
    ts = first + np.cumsum(r.choice(steps, size=k, p=probs))
    return ts[ts < n_s]


def dropouts(r, ts, days, per_day, lo_s, hi_s):
    keep = np.ones(len(ts), bool)
    for _ in range(int(per_day * days)):
        a = r.uniform(0, ts[-1] if len(ts) else 1)
        keep &= ~((ts >= a) & (ts < a + r.uniform(lo_s, hi_s)))
    return ts[keep]


def lines(ts, vs):
    return "".join(f"{T0 + int(t)} {v:.0f}\n" for t, v in zip(ts, vs))


def ukdale(out, houses=(1, 2), days=2.0, clean=False, seed=3):
    names = ["fridge", "kettle", "microwave", "washing_machine", "dishwasher"]
    for h in houses:
        r = np.random.default_rng(seed * 100 + h)
        app, agg = truth(seed * 10 + h, days)
        n = len(agg)
        metered = [a for a in names if clean or not (h == 2 and a == "microwave")]
        labels = ["1 aggregate"] + [f"{i + 2} {a}" for i, a in enumerate(metered)]
        write(f"{out}/house_{h}/labels.dat", "\n".join(labels) + "\n")
        for c, (name, x) in enumerate([("aggregate", agg)] + [(a, app[a]) for a in metered], start=1):
            if clean:
                ts = np.arange(0, n, 6)
            else:
                ts = clock(r, n, [5, 6, 7], [0.15, 0.7, 0.15], int(r.integers(0, 6)))
                if name != "aggregate":
                    ts = dropouts(r, ts, days, 3, 600, 3600)
            write(f"{out}/house_{h}/channel_{c}.dat", lines(ts, x[ts]))


def redd(out, houses=(1, 2), days=2.0, clean=False, seed=5):
    names = ["refrigerator", "kettle", "microwave", "washer_dryer", "dishwaser"]
    keys = ["fridge", "kettle", "microwave", "washing_machine", "dishwasher"]
    for h in houses:
        r = np.random.default_rng(seed * 100 + h)
        app, agg = truth(seed * 10 + h, days)
        n = len(agg)
        labels = ["1 mains", "2 mains"] + [f"{i + 3} {a}" for i, a in enumerate(names)]
        write(f"{out}/house_{h}/labels.dat", "\n".join(labels) + "\n")
        series = [agg * 0.55, agg * 0.45] + [app[k] for k in keys]
        for c, x in enumerate(series, start=1):
            if clean:
                ts = np.arange(0, n, 3)
            else:
                ts = clock(r, n, [3, 4], [0.6, 0.4], int(r.integers(0, 3)))
                if c > 2:
                    ts = dropouts(r, ts, days, 2, 600, 2400)
            write(f"{out}/house_{h}/channel_{c}.dat", "".join(f"{T0 + int(t)} {v:.2f}\n" for t, v in zip(ts, x[ts])))


REFIT_COLS = {2: ["fridge", "washing_machine", "dishwasher", None, "microwave", None, None, "kettle", None]}


def refit(out, houses=(2,), days=2.0, clean=False, seed=7):
    for h in houses:
        r = np.random.default_rng(seed * 100 + h)
        app, agg = truth(seed * 10 + h, days)
        n = len(agg)
        ts = np.arange(0, n, 8) if clean else clock(r, n, [6, 7, 8, 9, 10], [0.1, 0.2, 0.4, 0.2, 0.1], 0)
        rows = ["Time,Unix,Aggregate," + ",".join(f"Appliance{i}" for i in range(1, 10)) + ",Issues"]
        for t in ts:
            cols = [app[a][t] if a else 0.0 for a in REFIT_COLS[h]]
            stamp = np.datetime64(T0 + int(t), "s").astype(str).replace("T", " ")
            rows.append(f"{stamp},{T0 + int(t)},{agg[t]:.0f}," + ",".join(f"{v:.0f}" for v in cols) + ",0")
        write(f"{out}/CLEAN_House{h}.csv", "\n".join(rows) + "\n")


def care(out, turbines=(0, 1, 2), days=40.0, seed=11, clean=False, offsets=False, pred_days=10):
    """One wind farm in the CARE to Compare layout (datasets/<event>.csv with
    time_stamp;asset_id;id;train_test;status_type_id;<sensors>, event_info.csv,
    feature_description.csv) at 10 minutes with the properties of real SCADA:
    wind that moves between standstill (cut-in 3 m/s) and rated power
    (12 m/s), a curtailment period, status-type periods (4 = maintenance:
    standstill, 5 = curtailed), temperatures that follow the load with a lag,
    min/max/std aggregates, angles, an energy counter, a slow gearbox bearing
    temperature drift over two weeks before the labelled anomaly of turbine 0,
    and two event files of turbine 0 that overlap in time. `clean` is unused
    (SCADA has no resampling clock); kept for the common interface. `offsets`
    gives every turbine its own sensor calibration (temperature offsets of
    several degC, a hydraulic pressure offset): what per-turbine
    normalisation (data.norm = turbine) is for. `pred_days`: the length of the
    prediction part of every turbine's first event dataset (the anomaly one of
    turbine 0): the last 10 days by default, after the drift; 26 starts it
    before the drift (day 16 of 40), so that the anomaly's signature lies in
    the prediction part, as in the benchmark's event datasets."""
    r = np.random.default_rng(seed)
    n = int(days * 144)
    S = 1600000200  # a multiple of 600 s
    sensors = [("wind_speed_3", "m/s", "avg,min,max,std"), ("power_29", "kW", "avg,min,max,std"),
               ("sensor_rotor_rpm", "rpm", "avg"), ("sensor_gen_rpm", "rpm", "avg,max"),
               ("sensor_pitch", "\u00b0", "avg"), ("sensor_nacelle_dir", "\u00b0", "avg"),
               ("reactive_power_30", "kVAr", "avg"), ("sensor_ambient", "\u00b0C", "avg"),
               ("sensor_gearbox_bearing", "\u00b0C", "avg,max"), ("sensor_gearbox_oil", "\u00b0C", "avg"),
               ("sensor_gen_winding", "\u00b0C", "avg"), ("sensor_hydraulic", "bar", "avg"),
               ("sensor_energy", "kWh", "")]
    cols = []
    for name, unit, stats in sensors:
        cols += [f"{name}_{s}" for s in stats.split(",")] if stats else [name]
    os.makedirs(f"{out}/datasets", exist_ok=True)
    fd = "sensor_name;statistics_type;description;unit;is_angle;is_counter\n"
    for name, unit, stats in sensors:
        fd += f"{name};{stats.replace('avg', 'average').replace('min', 'minimum').replace('max', 'maximum').replace('std', 'std_dev')};" \
              f"{name};{unit};{'True' if unit == chr(176) else 'False'};{'True' if not stats else 'False'}\n"
    write(f"{out}/feature_description.csv", fd)
    events = ["asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id;event_description"]

    def stamp(i):
        return np.datetime64(S + 600 * int(i), "s").astype(str).replace("T", " ")

    for k, tb in enumerate(turbines):
        # wind: a slow weather process (hours to days) with gusts
        w = np.abs(8 + np.cumsum(r.normal(0, 0.25, n)) * 0.3 + 3 * np.sin(np.arange(n) / 144 * 2 * np.pi))
        w = np.clip(w + r.normal(0, 0.8, n), 0, 25)
        p = np.clip((w - 3) / 9, 0, 1) ** 3 * 2000
        status = np.zeros(n, int)
        a = int(r.integers(n // 4, n // 2))
        status[a:a + 72] = 4  # half a day of maintenance: standstill
        c0 = int(r.integers(n // 2, 3 * n // 4))
        status[c0:c0 + 144] = 5  # a day curtailed to half power
        p = np.where(status == 4, 0, p)
        p = np.where(status == 5, np.minimum(p, 1000), p)
        rpm = np.where(p > 0, 8 + 8 * np.clip((w - 3) / 9, 0, 1), 0.5)
        load = p / 2000
        amb = 10 + 6 * np.sin(np.arange(n) / 144 * 2 * np.pi - 1) + r.normal(0, 0.3, n)
        lag = np.convolve(load, np.ones(12) / 12, mode="full")[:n]  # two hours of thermal lag
        bearing = amb + 25 + 30 * lag + r.normal(0, 0.5, n)
        if k == 0:  # slow drift over two weeks before the anomaly
            e0 = n - 10 * 144
            ramp = np.clip((np.arange(n) - (e0 - 14 * 144)) / (14 * 144), 0, 1) * 12
            bearing = bearing + ramp
        oil = amb + 20 + 25 * lag + r.normal(0, 0.4, n)
        wind_t = amb + 30 + 50 * lag + r.normal(0, 0.8, n)
        hyd = 180 + r.normal(0, 2, n)
        if offsets:  # sensor calibration of this turbine (drawn from its own generator: the rest stays as without)
            o = np.random.default_rng(1000 + k).normal(0, 1, 4)
            bearing, oil, wind_t, hyd = bearing + 6 * o[0], oil + 5 * o[1], wind_t + 8 * o[2], hyd + 10 * o[3]
        pitch = np.where(w > 12, (w - 12) * 2.5, 0.5) + r.normal(0, 0.3, n)
        nac = (np.cumsum(r.normal(0, 3, n)) % 360)
        energy = np.cumsum(p / 6)
        vals = {"wind_speed_3_avg": w, "wind_speed_3_min": w * 0.6, "wind_speed_3_max": w * 1.5,
                "wind_speed_3_std": np.abs(r.normal(1, 0.3, n)), "power_29_avg": p, "power_29_min": p * 0.5,
                "power_29_max": np.minimum(p * 1.4, 2100), "power_29_std": np.abs(p * 0.1 + r.normal(0, 5, n)),
                "sensor_rotor_rpm_avg": rpm, "sensor_gen_rpm_avg": rpm * 100, "sensor_gen_rpm_max": rpm * 110,
                "sensor_pitch_avg": pitch, "sensor_nacelle_dir_avg": nac, "reactive_power_30_avg": p * 0.1,
                "sensor_ambient_avg": amb, "sensor_gearbox_bearing_avg": bearing,
                "sensor_gearbox_bearing_max": bearing + 1.5, "sensor_gearbox_oil_avg": oil,
                "sensor_gen_winding_avg": wind_t, "sensor_hydraulic_avg": hyd, "sensor_energy": energy}
        # event files: an anomaly for turbine 0 (drift then event), normal datasets for the others; turbine 0
        # has a second (normal) file overlapping the first by 20 days
        spans = [(0, n, n - int(pred_days * 144), "anomaly" if k == 0 else "normal")]
        if k == 0:
            spans.append((n - 30 * 144, n, n - 5 * 144, "normal"))
        for j, (lo, hi, pred_from, label) in enumerate(spans):
            eid = 10 * (k + 1) + j
            lines = [";".join(["time_stamp", "asset_id", "id", "train_test", "status_type_id"] + cols)]
            for i in range(lo, hi):
                tt = "train" if i < pred_from else "prediction"
                lines.append(";".join([stamp(i), str(tb), str(i), tt, str(status[i])]
                                      + [f"{vals[c][i]:.3f}" for c in cols]))
            write(f"{out}/datasets/{eid}.csv", "\n".join(lines) + "\n")
            if label == "anomaly":
                events.append(f"{tb};{eid};anomaly;{stamp(n - 6 * 144)};{n - 6 * 144};{stamp(n - 4 * 144)};"
                              f"{n - 4 * 144};gearbox bearing temperature")
            else:
                events.append(f"{tb};{eid};normal;{stamp(pred_from)};{pred_from};{stamp(hi - 1)};{hi - 1};")
    write(f"{out}/event_info.csv", "\n".join(events) + "\n")


WRITERS = {"ukdale": ukdale, "redd": redd, "refit": refit, "care": care}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in WRITERS:
        sys.exit(__doc__)
    days = float(sys.argv[sys.argv.index("--days") + 1]) if "--days" in sys.argv else 2.0
    WRITERS[sys.argv[1]](sys.argv[2], days=days, clean="--clean" in sys.argv)
