"""tests/import/realistic.py: NILM recordings in the public datasets' layouts
with the clocks real meters have, for end-to-end tests of import -> train ->
eval (test_import_clocks.py) and for trying the pipeline by hand:

    /usr/bin/python3 tests/import/realistic.py ukdale|redd|refit OUT_DIR [--clean] [--days D]

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


WRITERS = {"ukdale": ukdale, "redd": redd, "refit": refit}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in WRITERS:
        sys.exit(__doc__)
    days = float(sys.argv[sys.argv.index("--days") + 1]) if "--days" in sys.argv else 2.0
    WRITERS[sys.argv[1]](sys.argv[2], days=days, clean="--clean" in sys.argv)
