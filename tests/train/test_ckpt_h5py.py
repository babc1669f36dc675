"""h5py (an independent reader) checks a checkpoint written by the C code with 2
ranks (tests/train/ckpt_tool.c write): root attributes, tensor names, shapes and
values of /model, /adam_m, /adam_v against the parameter table the tool prints
and the closed-form contents of tests/train/ckpt_test_util.h, the train state,
the normalisation statistics, the config text, /ranks/state and the commit
markers. Usage: test_ckpt_h5py.py PATH/TO/gt_ckpt_tool (exit 77 without h5py)."""
import math
import os
import re
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
STEP = 100
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


with tempfile.TemporaryDirectory(prefix="gt-ckpt-h5py-") as tmp:
    run = os.path.join(tmp, "run")
    p = subprocess.run(["mpiexec", "-n", "2", TOOL, "write", run], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        sys.exit(1)
    table = []  # (name, shape, offset)
    for line in p.stdout.splitlines():
        name, shape, off = line.split()
        table.append((name, tuple(int(d) for d in shape.split(",")), int(off)))
    check(len(table) == 8, "the tool printed %d tensors" % len(table))
    n_params = sum(int(np.prod(sh)) for _, sh, _ in table)
    k = np.arange(n_params, dtype=np.int64)
    ref = {
        "model": ((((k * 7 + STEP) % 1001) - 500).astype(np.float32) / np.float32(64)),
        "adam_m": (((k + STEP) % 513).astype(np.float32) / np.float32(256) - np.float32(1)),
        "adam_v": (((k * 3 + STEP) % 97).astype(np.float32) / np.float32(8)),
    }

    cdir = os.path.join(run, "checkpoints")
    path = os.path.join(cdir, "ckpt-%09d.h5" % STEP)
    check(sorted(os.listdir(cdir)) == ["ckpt-000000050.h5", "ckpt-000000050.ok",
                                       "ckpt-000000100.h5", "ckpt-000000100.ok"],
          "directory listing %s" % sorted(os.listdir(cdir)))
    for st in (50, STEP):
        marker = open(os.path.join(cdir, "ckpt-%09d.ok" % st)).read()
        m = re.fullmatch(r"xxh64 ([0-9a-f]{16}) size (\d+)\n", marker)
        check(m is not None, "marker format: %r" % marker)
        if m:
            size = os.path.getsize(os.path.join(cdir, "ckpt-%09d.h5" % st))
            check(int(m.group(2)) == size, "marker size %s vs file %d" % (m.group(2), size))
            try:
                import xxhash
                data = open(os.path.join(cdir, "ckpt-%09d.h5" % st), "rb").read()
                check(xxhash.xxh64(data).hexdigest() == m.group(1), "marker hash")
            except ImportError:
                pass

    with h5py.File(path, "r") as f:
        a = f.attrs
        check(s(a["magic"]) == "gridtrain-checkpoint", "magic %r" % a["magic"])
        check(int(a["format_version"]) == 1, "format_version")
        check(int(a["step"]) == STEP, "step")
        check(int(a["n_ranks"]) == 2, "n_ranks %s" % a["n_ranks"])
        check(s(a["model_kind"]) == "s2p_cnn", "model_kind")
        check(int(a["n_params"]) == n_params, "n_params")
        check(int(a["n_tensors"]) == len(table), "n_tensors")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s(a["created"])) is not None, "created")
        check(a["params_xxh64"].dtype == np.uint64, "params_xxh64 is uint64")
        for g in ("model", "adam_m", "adam_v"):
            check(sorted(f[g].keys()) == sorted(n for n, _, _ in table), "/%s names" % g)
            for name, shape, off in table:
                d = f[g][name]
                check(d.shape == shape, "/%s/%s shape %s vs %s" % (g, name, d.shape, shape))
                check(d.dtype == np.float32, "/%s/%s dtype %s" % (g, name, d.dtype))
                want = ref[g][off:off + int(np.prod(shape))].reshape(shape)
                check(np.array_equal(d[()], want), "/%s/%s values" % (g, name))

        ts = f["train_state"].attrs
        want = {
            "step": STEP, "epoch": 3 + STEP // 10, "batch_k": STEP % 10, "samples": STEP * 256,
            "best_val": 0.125 + 1.0 / (STEP + 3), "best_step": STEP - 1, "bad_evals": 2,
            "bad_steps": 1, "loss_scale": np.float32(32768.0) / np.float32(1 + STEP % 4),
            "scale_good_steps": 77 + STEP, "skipped_steps": 5,
            "elapsed_s": 3600.25 + STEP * 1.0 / 3.0, "seed": 0xfeedbeefcafe1234,
            "lr_factor": 0.25, "plateau_evals": 1,
        }
        check(sorted(ts.keys()) == sorted(want.keys()), "train_state fields %s" % sorted(ts.keys()))
        for key, v in want.items():
            check(key in ts and ts[key] == v, "train_state %s = %r, expected %r" % (key, ts.get(key), v))
        check(ts["seed"].dtype == np.uint64 and ts["loss_scale"].dtype == np.float32, "train_state dtypes")

        mean = np.array([100.0 / 3.0 * (i + 1) + STEP for i in range(4)])
        std = np.array([math.sqrt(2.0 + i) + STEP for i in range(4)])
        check(np.array_equal(f["norm/mean"][()], mean), "norm/mean")
        check(np.array_equal(f["norm/std"][()], std), "norm/std")
        check(s(f["config"][()]) == "[model]\nkind = s2p_cnn\n# saved at step 100\n", "config %r" % f["config"][()])
        r = f["ranks/state"][()]
        check(r.shape == (2, 4) and list(r[:, 0]) == [0, 1], "ranks/state %s" % r)
        check(r[0, 1] == a["params_xxh64"] and r[1, 1] == a["params_xxh64"], "ranks/state hashes")

if fails:
    print("%d check(s) failed" % len(fails))
    sys.exit(1)
print("h5py checks passed")
