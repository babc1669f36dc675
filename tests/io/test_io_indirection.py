"""HDF5 indirection in data files (issue #37, class 4): nothing in a data file
makes gridtrain read outside it or block.

From a good NILM file and a good PdM file (gridtrain synth), h5py writes one
copy per case in which a dataset or group of the format (required ones, an
optional one, the legend that serial readers open again) is replaced by a
soft link, an external link to a FIFO, an external link to another HDF5
file (the same mechanism reads any file), an external link on a whole
group, a virtual dataset (over another file, over a FIFO), or external raw
storage (a text file, a FIFO); and an extra object outside the format (an
external link to a FIFO in a group of its own). `gridtrain inspect`,
`train`, `eval` and `predict` run on every copy, each under a time limit:
every one exits 3 with exactly one error line naming the file, the object and
what it is; never a signal or a timeout (a FIFO blocked all four for ever).
Usage: test_io_indirection.py GRIDTRAIN   (exit 77 without h5py)."""
import concurrent.futures as cf
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
LIMIT_S = 120
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)


def run(args, cwd):
    try:
        p = subprocess.run([GT] + args + ["--log-level", "warn"], capture_output=True, text=True, env=ENV, cwd=cwd,
                           timeout=LIMIT_S)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def soft(name, target):
    def edit(f, d, kind):
        del f[name]
        f[name] = h5py.SoftLink(target)
    return edit


def ext_link(name, target_file, target_obj):
    def edit(f, d, kind):
        if name in f:
            del f[name]
        f[name] = h5py.ExternalLink(os.path.join(d, target_file.replace("%s", kind)), target_obj)
    return edit


def vds(name, source_file):
    def edit(f, d, kind):
        shape, dt = f[name].shape, f[name].dtype
        del f[name]
        layout = h5py.VirtualLayout(shape=shape, dtype=dt)
        layout[...] = h5py.VirtualSource(os.path.join(d, source_file.replace("%s", kind)), "/" + name, shape=shape)
        f.create_virtual_dataset(name, layout)
    return edit


def external(name, raw_file):
    def edit(f, d, kind):
        data = f[name][()]
        del f[name]
        ds = f.create_dataset(name, shape=data.shape, dtype=data.dtype,
                              external=[(os.path.join(d, raw_file), 0, data.size * data.dtype.itemsize)])
        if raw_file != "fifo":
            ds[...] = data  # the values are right: only where they live is wrong
    return edit


# (kind, what, edit, words the error line must hold besides the file)
CASES = []
for kind, main, table, legend in (("nilm", "aggregate", "households/period_s", "appliance_meta/name"),
                                  ("pdm", "signals", "turbines/rate_hz", "legend/condition")):
    CASES += [
        (kind, "/%s a soft link" % main, soft(main, "/timestamps"), ["/" + main, "soft link"]),
        (kind, "/%s an external link to a FIFO" % main, ext_link(main, "fifo", "/x"), ["/" + main, "external link"]),
        (kind, "/%s an external link to another file" % main, ext_link(main, "good_%s.h5", "/" + main),
         ["/" + main, "external link"]),
        (kind, "/%s an external link to a FIFO" % table, ext_link(table, "fifo", "/x"), ["/" + table, "external link"]),
        (kind, "/%s (a group) an external link" % table.split("/")[0], ext_link(table.split("/")[0], "good_%s.h5",
                                                                                "/" + table.split("/")[0]),
         ["/" + table.split("/")[0], "external link"]),
        (kind, "/%s an external link to a FIFO" % legend, ext_link(legend, "fifo", "/x"), ["/" + legend, "external link"]),
        (kind, "/%s a virtual dataset over another file" % main, vds(main, "good_%s.h5"), ["/" + main, "virtual dataset"]),
        (kind, "/%s a virtual dataset over a FIFO" % table, vds(table, "fifo"), ["/" + table, "virtual dataset"]),
        (kind, "/%s in external storage (a text file)" % main, external(main, "secret.txt"), ["/" + main, "external file"]),
        (kind, "/timestamps in external storage (a FIFO)", external("timestamps", "fifo"), ["/timestamps", "external file"]),
        (kind, "/%s in external storage (a text file)" % legend, external(legend, "secret.txt"),
         ["/" + legend, "external file"]),
        (kind, "an extra group holding an external link to a FIFO", ext_link("extra/x", "fifo", "/x"),
         ["/extra/x", "external link"]),
    ]
CASES.append(("nilm", "/lowres/aggregate (optional) an external link to a FIFO", ext_link("lowres/aggregate", "fifo", "/x"),
              ["/lowres/aggregate", "external link"]))

NILM_CFG = "[data]\nwindow = 31\n[model]\nkind = s2p_cnn\nconv_scale = 0.1\nhidden = 8\nlayers = 2\n" \
           "[train]\nbatch = 8\nmax_steps = 2\nepochs = 1\nlog_every = 1\n"
PDM_CFG = "[data]\nwindow = 16\nstride = 8\n[model]\nkind = lstm\nhidden = 8\nlayers = 1\n" \
          "[train]\nbatch = 8\nmax_steps = 2\nepochs = 1\nlog_every = 1\n"


def main():
    with tempfile.TemporaryDirectory(dir=os.environ.get("GT_BINARY_DIR", os.getcwd())) as d:
        rc, err = run(["synth", "nilm", "--households", "3", "--days", "0.1", "--seed", "3", "-o", "good_nilm.h5"], d)
        check(rc == 0, "synth nilm: %r %s" % (rc, err[-300:]))
        rc, err = run(["synth", "pdm", "--farms", "1", "--turbines", "2", "--days", "0.05", "--rate", "1", "-o",
                       "good_pdm.h5"], d)
        check(rc == 0, "synth pdm: %r %s" % (rc, err[-300:]))
        for kind, text in (("nilm", NILM_CFG), ("pdm", PDM_CFG)):
            with open(os.path.join(d, kind + ".ini"), "w") as fh:
                fh.write(text)
            rc, err = run(["train", kind + ".ini", "data.file=good_%s.h5" % kind, "run.dir=run_" + kind], d)
            check(rc == 0, "train on the good %s file: %r %s" % (kind, rc, err[-500:]))
        if fails:
            return
        os.mkfifo(os.path.join(d, "fifo"))
        with open(os.path.join(d, "secret.txt"), "w") as fh:
            fh.write("root:x:0:0:root:/root:/bin/bash\n" * 65536)
        jobs = []
        for k, (kind, what, edit, words) in enumerate(CASES):
            path = os.path.join(d, "case%03d.h5" % k)
            shutil.copy(os.path.join(d, "good_%s.h5" % kind), path)
            try:
                with h5py.File(path, "r+") as f:
                    edit(f, d, kind)
            except Exception as e:
                check(False, "%s [%s]: h5py cannot make the case: %s" % (what, kind, e))
                continue
            jobs.append((k, kind, what, path, words))
        print("%d crafted files x 4 commands" % len(jobs), flush=True)

        def one(j):
            k, kind, what, path, words = j
            before = open(path, "rb").read()
            bad = []
            for cmd, args in (("inspect", ["inspect", path]),
                              ("train", ["train", kind + ".ini", "data.file=" + path, "run.dir=r%03d" % k]),
                              ("eval", ["eval", "run_" + kind, path]),
                              ("predict", ["predict", "run_" + kind, path, "-o", "p%03d.h5" % k])):
                rc, err = run(args, d)
                lines = [l for l in err.splitlines() if "error:" in l]
                if rc != 3:
                    bad.append("%s [%s] %s: rc %r, expected 3; %r" % (what, kind, cmd, rc, lines or err[-400:]))
                elif len(lines) != 1 or path not in lines[0] or not all(w in lines[0] for w in words):
                    bad.append("%s [%s] %s: expected one error line naming %s and %s; got %r" %
                               (what, kind, cmd, path, words, lines))
            if open(path, "rb").read() != before:
                bad.append("%s [%s]: the file was modified" % (what, kind))
            return what, kind, bad

        with cf.ThreadPoolExecutor(max_workers=2) as ex:
            for what, kind, bad in ex.map(one, jobs):
                for b in bad:
                    check(False, b)
                if not bad:
                    print("ok   %-4s %s" % (kind, what), flush=True)


main()
if fails:
    print("%d failure(s)" % len(fails))
    sys.exit(1)
print("no indirection followed")
