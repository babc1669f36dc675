"""Forged checkpoints (issue #37, classes 3 and 4): a checkpoint is untrusted
input like a data file, since anyone can recompute its commit marker.

From a real checkpoint (a 10-step `gridtrain train` of a small NILM file),
h5py writes one forged copy of the run per case and recomputes the marker
(xxh64 through libxxhash, as the trainer writes it): /norm/std longer than
/norm/mean, both longer than the run's features, zero, negative, NaN and
infinite statistics, /norm of another type or rank or 2^32+1 declared
entries, weights and moments of another type, shape or rank, a tensor
that is a group, array and out-of-range train-state and root attributes, a
/config of two strings, and the indirection cases: a tensor or /norm
dataset replaced by a soft link, an external link to a FIFO or to another
HDF5 file, the /model group an external link, a virtual dataset (over
another file, over a FIFO), external raw storage (a text file, a FIFO), an
external link on a dataset load never reads (/ranks/state). Also a checkpoint
of another model size and one of another task (a PdM LSTM run's) dropped into
the run's checkpoints/ as its newest step with a valid marker.

`gridtrain eval`, `predict` and `train --resume` run on every forged run
(inspect too on the checkpoint with indirection), each under a time limit:
every one exits 3 with exactly one error line naming the checkpoint and the
dataset or attribute (both models for a foreign checkpoint); never a
signal, a timeout (a FIFO) or another code. The good run passes all three.
Usage: test_ckpt_forged.py GRIDTRAIN   (exit 77 without h5py)."""
import concurrent.futures as cf
import ctypes
import ctypes.util
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

GT = sys.argv[1]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
LIMIT_S = 120  # a FIFO would block for ever; a run takes a few seconds (ASan: ~20)
CKPT = "checkpoints/ckpt-000000010.h5"
fails = []

_lib = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
XXH = ctypes.CDLL(_lib)
XXH.XXH64.restype = ctypes.c_uint64
XXH.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)


def write_marker(h5):
    data = open(h5, "rb").read()
    with open(h5[:-3] + ".ok", "w") as fh:
        fh.write("xxh64 %016x size %d\n" % (XXH.XXH64(data, len(data), 0), len(data)))


def run(args, cwd):
    try:
        p = subprocess.run([GT] + args + ["--log-level", "warn"], capture_output=True, text=True, env=ENV, cwd=cwd,
                           timeout=LIMIT_S)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


# ------------------------------------------------------------------ edits --
def replace(f, name, data, **kw):
    del f[name]
    f.create_dataset(name, data=data, **kw)


def setnorm(which, fn):
    def edit(f, d):
        replace(f, "norm/" + which, fn(f["norm/" + which][()]))
    return edit


def setval(name, idx, x):
    def edit(f, d):
        v = f[name][()].copy()
        v[idx] = x
        replace(f, name, v)
    return edit


def retype(name, dt):
    return lambda f, d: replace(f, name, f[name][()].astype(dt))


def reshape(name, fn):
    return lambda f, d: replace(f, name, fn(f[name][()]))


def huge(name):
    def edit(f, d):
        dt = f[name].dtype
        del f[name]
        f.create_dataset(name, shape=(2 ** 32 + 1,), dtype=dt, chunks=(1024,))
    return edit


def attr(obj, key, value, dtype=None):
    def edit(f, d):
        if dtype is None:
            f[obj].attrs[key] = value
        else:
            f[obj].attrs.create(key, value, dtype=dtype)
    return edit


def soft(name, target):
    def edit(f, d):
        del f[name]
        f[name] = h5py.SoftLink(target)
    return edit


def ext_link(name, target_file, target_obj):
    def edit(f, d):
        del f[name]
        f[name] = h5py.ExternalLink(os.path.join(d, target_file), target_obj)
    return edit


def vds(name, source_file, source_obj):
    def edit(f, d):
        shape, dt = f[name].shape, f[name].dtype
        del f[name]
        layout = h5py.VirtualLayout(shape=shape, dtype=dt)
        layout[...] = h5py.VirtualSource(os.path.join(d, source_file), source_obj, shape=shape)
        f.create_virtual_dataset(name, layout)
    return edit


def external(name, raw_file):
    def edit(f, d):
        shape, dt = f[name].shape or (1,), f[name].dtype  # h5py drops external storage of a scalar
        del f[name]
        f.create_dataset(name, shape=shape, dtype=dt,
                         external=[(os.path.join(d, raw_file), 0, int(np.prod(shape)) * dt.itemsize)])
    return edit


def config_array(f, d):
    t = f["config"][()]
    replace(f, "config", np.array([t, t]))


def tensor_group(f, d):
    del f["model/fc1.bias"]
    f.create_group("model/fc1.bias")


# (what, edit, words the error line must hold besides the checkpoint path, commands)
ALL = ("eval", "predict", "resume")
CASES = [
    ("/norm/std longer than /norm/mean", setnorm("std", lambda v: np.concatenate([v, v[:1]])), ["/norm/std"], ALL),
    ("/norm/std much longer than /norm/mean", setnorm("std", lambda v: np.ones(4096)), ["/norm/std"], ALL),
    ("/norm both longer than the run's features",
     lambda f, d: (setnorm("std", lambda v: np.concatenate([v, v[:1]]))(f, d),
                   setnorm("mean", lambda v: np.concatenate([v, v[:1]]))(f, d)), ["/norm/mean"], ALL),
    ("/norm both shorter", lambda f, d: (setnorm("std", lambda v: v[:-1])(f, d), setnorm("mean", lambda v: v[:-1])(f, d)),
     ["/norm/mean"], ALL),
    ("/norm/std[3] = 0", setval("norm/std", 3, 0.0), ["/norm/std[3]"], ALL),
    ("/norm/std[0] = -1", setval("norm/std", 0, -1.0), ["/norm/std[0]"], ALL),
    ("/norm/std[2] = NaN", setval("norm/std", 2, np.nan), ["/norm/std[2]"], ALL),
    ("/norm/mean[1] = NaN", setval("norm/mean", 1, np.nan), ["/norm/mean[1]"], ALL),
    ("/norm/mean[0] = inf", setval("norm/mean", 0, np.inf), ["/norm/mean[0]"], ALL),
    ("/norm/mean int64", retype("norm/mean", "i8"), ["/norm/mean", "int64"], ALL),
    ("/norm/std float32", retype("norm/std", "f4"), ["/norm/std", "float32"], ALL),
    ("/norm/mean rank 2", reshape("norm/mean", lambda v: np.stack([v, v])), ["/norm/mean", "shape"], ALL),
    ("/norm/std 2^32+1 entries declared", huge("norm/std"), ["/norm/std"], ALL),
    ("/norm/mean deleted", lambda f, d: f.__delitem__("norm/mean"), ["/norm/mean"], ALL),
    ("/model/fc1.weight float64", retype("model/fc1.weight", "f8"), ["/model/fc1.weight", "float64"], ALL),
    ("/model/fc1.weight int32", retype("model/fc1.weight", "i4"), ["/model/fc1.weight", "int32"], ALL),
    ("/model/fc1.weight another shape", reshape("model/fc1.weight", lambda v: v[:, :-1]), ["/model/fc1.weight", "shape"],
     ALL),
    ("/model/conv.0.weight another rank", reshape("model/conv.0.weight", lambda v: v.reshape(v.shape[0], -1)),
     ["/model/conv.0.weight", "shape"], ALL),
    ("/adam_v/fc2.bias one entry more", reshape("adam_v/fc2.bias", lambda v: np.concatenate([v, v[:1]])),
     ["/adam_v/fc2.bias", "shape"], ALL),
    ("/adam_m/conv.1.weight float16", retype("adam_m/conv.1.weight", "f2"), ["/adam_m/conv.1.weight", "float16"], ALL),
    ("/model/fc1.bias a group", tensor_group, ["/model/fc1.bias"], ALL),
    ("/train_state best_step an array", attr("train_state", "best_step", [10, 10]), ["best_step"], ALL),
    ("/train_state step a string", attr("train_state", "step", "10"), ["'step'"], ALL),
    ("/train_state lr_factor NaN", attr("train_state", "lr_factor", np.nan), ["lr_factor"], ALL),
    ("/train_state loss_scale 0", attr("train_state", "loss_scale", 0.0, "f4"), ["loss_scale"], ALL),
    ("/train_state batch_k -5", attr("train_state", "batch_k", -5), ["batch_k"], ALL),
    ("root params_xxh64 an array", attr("/", "params_xxh64", np.array([1, 2], dtype="u8")), ["params_xxh64"], ALL),
    ("/config two strings", config_array, ["/config"], ALL),
    # indirection: refused before anything is read, inspect included
    ("/model/fc1.weight a soft link", soft("model/fc1.weight", "/adam_m/fc1.weight"), ["/model/fc1.weight", "soft link"],
     ALL + ("inspect",)),
    ("/norm/std a soft link to /norm/mean", soft("norm/std", "/norm/mean"), ["/norm/std", "soft link"],
     ALL + ("inspect",)),
    ("/model/fc1.weight an external link to a FIFO", ext_link("model/fc1.weight", "fifo", "/x"),
     ["/model/fc1.weight", "external link"], ALL + ("inspect",)),
    ("/norm/mean an external link to another HDF5 file", ext_link("norm/mean", "other.h5", "/norm/mean"),
     ["/norm/mean", "external link"], ALL + ("inspect",)),
    ("/model an external link to a group", ext_link("model", "other.h5", "/model"), ["/model", "external link"],
     ALL + ("inspect",)),
    ("/ranks/state (never read) an external link to a FIFO", ext_link("ranks/state", "fifo", "/x"),
     ["/ranks/state", "external link"], ALL + ("inspect",)),
    ("/model/fc2.weight a virtual dataset over another file", vds("model/fc2.weight", "other.h5", "/model/fc2.weight"),
     ["/model/fc2.weight", "virtual dataset"], ALL + ("inspect",)),
    ("/norm/std a virtual dataset over a FIFO", vds("norm/std", "fifo", "/norm/std"), ["/norm/std", "virtual dataset"],
     ALL + ("inspect",)),
    ("/model/fc2.bias in external storage (a text file)", external("model/fc2.bias", "secret.txt"),
     ["/model/fc2.bias", "external file"], ALL + ("inspect",)),
    ("/norm/mean in external storage (a FIFO)", external("norm/mean", "fifo"), ["/norm/mean", "external file"],
     ALL + ("inspect",)),
    ("/config in external storage (a text file)", external("config", "secret.txt"), ["/config", "external file"],
     ALL + ("inspect",)),
]

CFG = """[data]
window = %d
%s[model]
kind = %s
%shidden = %d
layers = %d
[train]
batch = 8
max_steps = 10
epochs = 1
log_every = 1
"""
RUNS = (("good", "nilm.h5", CFG % (31, "", "s2p_cnn", "conv_scale = 0.1\n", 8, 2)),
        ("wider", "nilm.h5", CFG % (31, "", "s2p_cnn", "conv_scale = 0.1\n", 16, 2)),
        ("lstm", "pdm.h5", CFG % (16, "stride = 8\n", "lstm", "", 8, 1)))


def commands(d, k, run_dir, which):
    out = []
    if "eval" in which:
        out.append(("eval", ["eval", run_dir, "nilm.h5"]))
    if "predict" in which:
        out.append(("predict", ["predict", run_dir, "nilm.h5", "-o", os.path.join(d, "pred%03d.h5" % k)]))
    if "resume" in which:
        out.append(("resume", ["train", "--resume", run_dir, "train.max_steps=20"]))
    if "inspect" in which:
        out.append(("inspect", ["inspect", os.path.join(run_dir, CKPT)]))
    return out


def expect_refused(d, k, what, run_dir, ckpt, words, which):
    bad = []
    for cmd, args in commands(d, k, run_dir, which):
        rc, err = run(args, d)
        lines = [l for l in err.splitlines() if "error:" in l]
        if rc == "timeout" or rc != 3:
            bad.append("%s: %s: rc %r, expected 3; %r" % (what, cmd, rc, lines or err[-400:]))
        elif len(lines) != 1 or ckpt not in lines[0] or not all(w in lines[0] for w in words):
            bad.append("%s: %s: expected one error line naming %s and %s; got %r" % (what, cmd, ckpt, words, lines))
    return bad


def main():
    with tempfile.TemporaryDirectory(dir=os.environ.get("GT_BINARY_DIR", os.getcwd())) as d:
        rc, err = run(["synth", "nilm", "--households", "3", "--days", "0.1", "--seed", "3", "-o", "nilm.h5"], d)
        check(rc == 0, "synth nilm: %r %s" % (rc, err[-300:]))
        rc, err = run(["synth", "pdm", "--farms", "1", "--turbines", "2", "--days", "0.05", "--rate", "1", "-o",
                       "pdm.h5"], d)
        check(rc == 0, "synth pdm: %r %s" % (rc, err[-300:]))
        for name, data, text in RUNS:
            with open(os.path.join(d, name + ".ini"), "w") as fh:
                fh.write(text)
            rc, err = run(["train", name + ".ini", "data.file=" + data, "run.dir=" + name], d)
            check(rc == 0, "train %s: %r %s" % (name, rc, err[-500:]))
        if fails:
            return
        good = os.path.join(d, "good")
        shutil.copytree(good, good + "_resumed")
        for cmd, args in commands(d, 999, good, ("eval", "predict")) + [
                ("resume", ["train", "--resume", good + "_resumed", "train.max_steps=12"])]:
            rc, err = run(args, d)  # the unforged run: everything works
            check(rc == 0, "the good run: %s: rc %r %s" % (cmd, rc, err[-400:]))
        os.mkfifo(os.path.join(d, "fifo"))
        shutil.copy(os.path.join(good, CKPT), os.path.join(d, "other.h5"))
        with open(os.path.join(d, "secret.txt"), "w") as fh:
            fh.write("root:x:0:0:root:/root:/bin/bash\n" * 4096)
        jobs = []
        for k, (what, edit, words, which) in enumerate(CASES):
            run_dir = os.path.join(d, "case%03d" % k)
            shutil.copytree(good, run_dir)
            ckpt = os.path.join(run_dir, CKPT)
            try:
                with h5py.File(ckpt, "r+") as f:
                    edit(f, d)
            except Exception as e:
                check(False, "%s: h5py cannot make the case: %s" % (what, e))
                continue
            write_marker(ckpt)
            jobs.append((k, what, run_dir, ckpt, words, which))
        # a checkpoint of another model size / another task, newest in the run's checkpoints/
        for name, words in (("wider", ["s2p_cnn", "1130 parameters", "the run"]), ("lstm", ["lstm", "s2p_cnn", "the run"])):
            k = len(CASES) + len(jobs)
            run_dir = os.path.join(d, "case%03d" % k)
            shutil.copytree(good, run_dir)
            ckpt = os.path.join(run_dir, "checkpoints/ckpt-000000020.h5")
            shutil.copy(os.path.join(d, name, CKPT), ckpt)
            with h5py.File(ckpt, "r+") as f:  # a forger renumbers it consistently
                f.attrs["step"] = 20
                f["train_state"].attrs["step"] = 20
                f["train_state"].attrs["best_step"] = 20
            write_marker(ckpt)
            jobs.append((k, "a checkpoint of the %s run as the newest" % name, run_dir, ckpt, words, ALL))
        # the checkpoint or its marker a FIFO (a valid marker for a FIFO cannot exist): skipped, no hang
        for victim in (CKPT, CKPT[:-3] + ".ok"):
            run_dir = os.path.join(d, "fifo_" + os.path.basename(victim))
            shutil.copytree(good, run_dir)
            os.unlink(os.path.join(run_dir, victim))
            os.mkfifo(os.path.join(run_dir, victim))
            for cmd, args in commands(d, 998, run_dir, ("eval", "resume")):
                rc, err = run(args, d)
                check(rc in (2, 3) and "not a regular file" in err and os.path.basename(victim) in err,
                      "%s a FIFO: %s: rc %r (expected 2 or 3 after a warning), %r" % (victim, cmd, rc, err[-400:]))
        print("%d forged runs" % len(jobs), flush=True)

        def one(j):
            k, what, run_dir, ckpt, words, which = j
            before = open(ckpt, "rb").read()
            bad = expect_refused(d, k, what, run_dir, ckpt, words, which)
            if open(ckpt, "rb").read() != before:
                bad.append("%s: the checkpoint was modified" % what)
            return what, bad

        with cf.ThreadPoolExecutor(max_workers=2) as ex:
            for what, bad in ex.map(one, jobs):
                for b in bad:
                    check(False, b)
                if not bad:
                    print("ok   %s" % what, flush=True)


main()
if fails:
    print("%d failure(s)" % len(fails))
    sys.exit(1)
print("all forged checkpoints refused")
