#!/usr/bin/python3
"""gridtrain's CPU engine vs PyTorch's best CPU recipe, side by side, in one invocation.

usage: bench_vs_torch.py --driver BUILD/tests/nn/torch/gt_bench_model
         [--threads 1,2] [--reps 2] [--only s2p_cnn,s2p_tf,lstm,lstm_k128]
         [--gt-precision fp32[,bf16,auto]] [--torch-python auto[,PY...]]
         [--torch-recipes auto | fp32,bf16,fp32+sdpa,bf16+sdpa,fp32+compile,bf16+compile,...]
         [--steps N] [--warmup N] [--no-infer] [--quick] [--no-mem] [--no-isa-probe] [--markdown FILE]
         [--gt-env K=V,...] [--torch-env K=V,...]

For every thread count and workload, runs gridtrain's driver (nn/bench.h) at
each precision of --gt-precision and the PyTorch peer (peer_bench.py) with
each recipe, `reps` times each, alternating (the order reverses every rep, so
drift on a shared machine hits every candidate alike), and keeps each
candidate's best median. Then per workload and thread count: gridtrain's
best precision against PyTorch's best recipe, the ratio gridtrain / best
PyTorch, peak RSS of both, and which instruction sets each side used.

PyTorch recipes (peer_bench.py): fp32 = eager float32; bf16 =
torch.autocast("cpu", dtype=torch.bfloat16) around forward and loss; +sdpa =
s2p_tf's attention through F.scaled_dot_product_attention; +compile =
torch.compile(model). `auto` = every recipe the interpreter's torch has
(PyTorch 1.x: fp32, bf16; 2.x: also +sdpa for s2p_tf and +compile); a recipe
that fails (a compile error) is reported with its reason and dropped.
--torch-python: interpreters with torch, comma-separated, each measured as
its own peer; `auto` = BUILD/torch-venv/bin/python (tests/nn/torch/
setup_peer.sh: a pinned PyTorch 2.x) where it exists, else $GT_TORCH_PYTHON,
else this interpreter. Interpreters without torch are skipped with the
reason; none with torch: exit 77 (skipped).
--gt-precision: train precisions for gridtrain; fp32 runs the driver as is,
another P passes `--precision P` (--gt-precision-arg); one the driver
rejects (non-zero exit) is skipped with its message.

ISA: gridtrain's as its driver prints it (OpenBLAS core, and whatever ISA
lines it prints); PyTorch's CPU capability (ATen's vector kernels), its
oneDNN and BLAS build, and (unless --no-isa-probe) one train step of each
workload's best recipe per interpreter under ONEDNN_VERBOSE=1: the oneDNN
implementations it ran (brg/jit with the ISA, e.g. avx512_core_amx) and
oneDNN's detected ISA. lscpu's model name and bf16/AMX/AVX-512 flags are
printed first.

Workloads:
  s2p_cnn   B=256 W=599 A=15
  s2p_tf    B=32  L=512 d=128 heads=4 ff=512 N=8
  lstm      B=64  T=512 C=32 H=128 (2 layers), full BPTT
  lstm_k128 the same with TBPTT K=128
--quick: tiny shapes (seconds; CI's smoke run): s2p_cnn B=8 W=64 fc1=64,
s2p_tf B=4 L=32 d=32 heads=2 ff=64 N=2, lstm B=4 T=32 C=8 H=16 (lstm_k128
only when --only names it), 1 warm-up
+ 2 steps, 1 thread, 1 rep, recipes without +compile unless --torch-recipes
names them, no memory check, no ISA probe.
Targets (printed against the result, issue 32): gridtrain / best PyTorch
>= 1.5 at 1 and 2 threads; peak RSS <= PyTorch's.
--gt-env / --torch-env: environment variables for every gridtrain / PyTorch
process, e.g. a machine without bf16 units emulated on an AMX one:
--gt-env OPENBLAS_CORETYPE=Haswell,ONEDNN_MAX_CPU_ISA=AVX2
--torch-env ATEN_CPU_CAPABILITY=avx2,ONEDNN_MAX_CPU_ISA=AVX2 (printed with the table).
Torch at >= 2 threads: both OMP_WAIT_POLICY=PASSIVE and ACTIVE by default,
the best kept (--torch-wait-policies passive: only one; torch's LSTM at 2
threads under the passive policy ran slower than its own 1-thread run).
Then (unless --no-mem) gridtrain's s2p_tf memory-vs-L check (B=4).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable or "/usr/bin/python3"

WORKLOADS = [
    # name, args common to both sides, steps, warmup
    ("s2p_cnn", ["--model", "s2p_cnn", "--batch", "256", "--window", "599", "--n-out", "15"], 6, 2),
    ("s2p_tf", ["--model", "s2p_tf", "--batch", "32", "--window", "512", "--d-model", "128", "--heads", "4",
                "--ff", "512", "--layers", "8"], 4, 1),
    ("lstm", ["--model", "lstm", "--batch", "64", "--window", "512", "--n-in", "32", "--hidden", "128",
              "--layers", "2"], 6, 2),
    ("lstm_k128", ["--model", "lstm", "--batch", "64", "--window", "512", "--n-in", "32", "--hidden", "128",
                   "--layers", "2", "--tbptt", "128"], 6, 2),
]
QUICK = {
    "s2p_cnn": ["--model", "s2p_cnn", "--batch", "8", "--window", "64", "--n-out", "3", "--hidden", "64"],
    "s2p_tf": ["--model", "s2p_tf", "--batch", "4", "--window", "32", "--d-model", "32", "--heads", "2",
               "--ff", "64", "--layers", "2", "--n-out", "3"],
    "lstm": ["--model", "lstm", "--batch", "4", "--window", "32", "--n-in", "8", "--n-out", "8", "--hidden", "16",
             "--layers", "2"],
    "lstm_k128": ["--model", "lstm", "--batch", "4", "--window", "32", "--n-in", "8", "--n-out", "8",
                  "--hidden", "16", "--layers", "2", "--tbptt", "8"],
}
TARGET = 1.5
ALL_RECIPES = ["fp32", "bf16", "fp32+sdpa", "bf16+sdpa", "fp32+compile", "bf16+compile", "fp32+sdpa+compile",
               "bf16+sdpa+compile"]


def run(cmd, env, key):
    """Runs cmd; returns (result dict, None) or (None, reason)."""
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = p.stdout.splitlines()
    for line in lines:
        if line.startswith("PEER_FAIL "):
            return None, json.loads(line[len("PEER_FAIL "):])["reason"]
        if line.startswith(key):
            r = json.loads(line[len(key):])
            r["wall_s"] = time.time() - t0
            r["_out"] = lines
            return r, None
    first = next((x.strip() for x in lines if x.strip()), "(no output)")
    return None, f"exit {p.returncode}: {first[:200]}"


def lscpu():
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return "(lscpu not found)", ""
    model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name:")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in out.splitlines() if ln.startswith("Flags:")), [])
    keep = [f for f in flags if f.startswith(("amx", "avx512", "avx_vnni", "avx2", "fma"))]
    return model, " ".join(keep)


def torch_pythons(spec, driver):
    """The interpreters to measure, deduplicated; 'auto' resolves as the usage says."""
    venv = ""
    d = os.path.dirname(os.path.abspath(driver))
    for _ in range(5):  # BUILD/tests/nn/torch/gt_bench_model -> BUILD/torch-venv
        cand = os.path.join(d, "torch-venv", "bin", "python")
        if os.access(cand, os.X_OK):
            venv = cand
            break
        d = os.path.dirname(d)
    out = []
    for p in spec.split(","):
        p = p.strip()
        if p == "auto":
            p = venv or os.environ.get("GT_TORCH_PYTHON", "") or PY
        if p and p not in out:
            out.append(p)
    return out


def torch_info(py, env):
    try:
        p = subprocess.run([py, os.path.join(HERE, "peer_bench.py"), "--model", "lstm", "--info"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        return None, f"cannot run it: {e.strerror}"
    for line in p.stdout.splitlines():
        if line.startswith("PEER_INFO "):
            return json.loads(line[len("PEER_INFO "):]), None
    last = [x for x in p.stdout.splitlines() if x.strip()]
    return None, (last[-1] if last else f"exit {p.returncode}")[:200]


def recipes_for(spec, info, workload, quick):
    major = int(info["torch"].split(".")[0])
    if spec == "auto":
        names = ["fp32", "bf16"]
        if major >= 2:
            if workload == "s2p_tf":
                names += ["fp32+sdpa", "bf16+sdpa"]
            if not quick:
                names += ["fp32+sdpa+compile", "bf16+sdpa+compile"] if workload == "s2p_tf" else \
                    ["fp32+compile", "bf16+compile"]
        return names
    names = [r for r in spec.split(",") if r]
    for r in names:
        if r not in ALL_RECIPES:
            raise SystemExit(f"--torch-recipes: unknown recipe '{r}' (known: {', '.join(ALL_RECIPES)})")
    return [r for r in names if "sdpa" not in r or workload == "s2p_tf"]


def recipe_args(recipe):
    parts = recipe.split("+")
    args = ["--autocast", parts[0]]
    if "sdpa" in parts:
        args.append("--sdpa")
    if "compile" in parts:
        args.append("--compile")
    return args


def onednn_summary(lines):
    """oneDNN's detected ISA and the primitives it ran: kind impl dtype xN (reorders left out)."""
    isa, seen = "", {}
    for ln in lines:
        if not ln.startswith(("onednn_verbose", "dnnl_verbose")):
            continue
        f = ln.split(",")
        if "info" in f[:4] and any(x.startswith("isa:") for x in f):
            isa = next(x for x in f if x.startswith("isa:"))[4:]
            continue
        if "exec" not in f[:4] or "cpu" not in f:
            continue
        i = f.index("cpu")
        if i + 2 >= len(f) or f[i + 1] == "reorder":
            continue
        m = re.search(r"src(?:_layer)?[_:](bf16|f32|f16|s8|u8)", ",".join(f[i + 3:i + 5]))
        k = (f[i + 1], f[i + 2], m.group(1) if m else "?")
        seen[k] = seen.get(k, 0) + 1
    prims = ", ".join(f"{k} {impl} {dt} x{n}" for (k, impl, dt), n in sorted(seen.items()))
    return isa, prims


def gt_isa(res):
    """What gridtrain's driver says about the instruction sets it used."""
    parts = [f"OpenBLAS core {res.get('blas_core', '?')}"]
    for k, v in res.items():
        if k != "blas_core" and ("isa" in k.lower() or "precision" in k.lower()) and not k.startswith("_"):
            parts.append(f"{k}={v}")
    for ln in res.get("_out", []):
        if ln.startswith("GT_BENCH_JSON"):
            continue
        if re.search(r"\b(isa|amx|avx[0-9a-z_]*|onednn)\b", ln, re.I) and "OpenBLAS core" not in ln:
            parts.append(ln.strip())
    return "; ".join(parts)


def fmt_rate(r):
    return f"{r['train_samples_per_s']:.1f}" if r else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--driver", default=os.environ.get("GT_BENCH_MODEL", ""),
                    help="path of gt_bench_model (or env GT_BENCH_MODEL)")
    ap.add_argument("--threads", default="")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true", help="tiny shapes, 1 thread, 1 rep (smoke run)")
    ap.add_argument("--steps", type=int, default=0, help="timed steps per run (0 = the workload's)")
    ap.add_argument("--warmup", type=int, default=-1, help="warm-up steps per run (-1 = the workload's)")
    ap.add_argument("--no-infer", action="store_true", help="time training only")
    ap.add_argument("--no-mem", action="store_true")
    ap.add_argument("--no-isa-probe", action="store_true")
    ap.add_argument("--gt-precision", default="fp32", help="gridtrain train precisions, e.g. fp32,bf16")
    ap.add_argument("--gt-precision-arg", default="--precision", help="the driver's option for a precision")
    ap.add_argument("--torch-python", default="auto", help="interpreters with torch, e.g. auto,/usr/bin/python3")
    ap.add_argument("--torch-recipes", default="auto")
    ap.add_argument("--torch-wait-policies", default="passive,active",
                    help="OMP_WAIT_POLICY values tried for torch at >= 2 threads (best kept), e.g. passive,active")
    ap.add_argument("--gt-env", default="", help="K=V,... for every gridtrain process")
    ap.add_argument("--torch-env", default="", help="K=V,... for every PyTorch process")
    ap.add_argument("--markdown", default="", help="also write the tables as markdown to this file")
    a = ap.parse_args()
    if not a.driver or not os.access(a.driver, os.X_OK):
        raise SystemExit("--driver must name the built gt_bench_model executable")
    only = set(a.only.split(",")) if a.only else None
    threads = [int(t) for t in (a.threads or ("1" if a.quick else "1,2")).split(",")]
    reps = a.reps or (1 if a.quick else 2)
    base_env = dict(os.environ)

    def kv_list(text):
        return dict(x.split("=", 1) for x in text.split(",") if x)
    gt_env, torch_env = kv_list(a.gt_env), kv_list(a.torch_env)
    build_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(a.driver)))))
    base_env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(build_dir, "torchinductor-cache"))
    base_env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    coretype = gt_env.get("OPENBLAS_CORETYPE", base_env.get("OPENBLAS_CORETYPE", "(unset: auto-detected)"))
    model, flags = lscpu()
    print(f"bench_vs_torch: {time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} cores, "
          f"OPENBLAS_CORETYPE={coretype}, reps={reps}, python {PY}", flush=True)
    print(f"CPU: {model}; flags: {flags or '(none of amx/avx512/avx2)'}", flush=True)
    if gt_env or torch_env:
        print(f"environment: gridtrain {a.gt_env or '(as is)'}; torch {a.torch_env or '(as is)'}", flush=True)

    peers = []  # (python, info)
    for py in torch_pythons(a.torch_python, a.driver):
        info, why = torch_info(py, dict(base_env, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **torch_env))
        if info is None:
            print(f"torch peer {py}: skipped ({why})", flush=True)
            continue
        print(f"torch peer {py}: torch {info['torch']}, CPU capability {info['cpu_capability']}, "
              f"{info['onednn']}, {info['blas']}", flush=True)
        peers.append((py, info))
    if not peers:
        print("skipped: no interpreter with torch (tests/nn/torch/setup_peer.sh BUILD installs PyTorch 2.x; "
              "Debian: python3-torch)")
        sys.exit(77)

    gt_precs = [p for p in a.gt_precision.split(",") if p]
    gt_rejected = {}  # precision -> reason
    pt_failed = {}  # (py, recipe, workload) -> reason
    rows, isa_gt, probes = [], {}, {}
    for T in threads:
        for name, args, steps, warmup in WORKLOADS:
            if only and name not in only or a.quick and not only and name == "lstm_k128":
                continue
            if a.quick:
                args, steps, warmup = QUICK[name], 2, 1
            steps = a.steps or steps
            warmup = warmup if a.warmup < 0 else a.warmup
            common = args + ["--steps", str(steps), "--warmup", str(warmup)]
            if a.no_infer:
                common += ["--infer-steps", "-1"]
            env = dict(base_env, OPENBLAS_NUM_THREADS=str(T), OMP_NUM_THREADS=str(T))
            cands = []  # (label, side, cmd, key)
            for prec in gt_precs:
                if (prec, name) in gt_rejected:
                    continue
                extra = [] if prec == "fp32" else [a.gt_precision_arg, prec]
                cands.append((("gt", prec), [a.driver] + common + extra + ["--json"]))
            policies = a.torch_wait_policies.split(",") if T >= 2 else ["default"]
            for py, info in peers:
                for rec in recipes_for(a.torch_recipes, info, name, a.quick):
                    for pol in policies:
                        cands.append((("pt", py, rec, pol), [py, os.path.join(HERE, "peer_bench.py")] + common +
                                      ["--threads", str(T), "--wait-policy", pol] + recipe_args(rec)))
            best = {}
            for r in range(reps):
                for lab, cmd in (cands if r % 2 == 0 else cands[::-1]):
                    if lab[0] == "gt" and (lab[1], name) in gt_rejected:
                        continue
                    if lab[0] == "pt" and (lab[1], lab[2], name) in pt_failed:
                        continue
                    res, why = run(cmd, dict(env, **(gt_env if lab[0] == "gt" else torch_env)),
                                   "GT_BENCH_JSON " if lab[0] == "gt" else "PEER_JSON ")
                    if res is None:
                        if lab[0] == "gt" and lab[1] == "fp32":
                            raise SystemExit(f"T={T} {name} gridtrain fp32 failed ({why}): {' '.join(cmd)}")
                        if lab[0] == "gt":
                            gt_rejected[(lab[1], name)] = why
                            print(f"  T={T} {name} gridtrain precision {lab[1]}: skipped ({why})", flush=True)
                        else:
                            pt_failed[(lab[1], lab[2], name)] = why
                            print(f"  T={T} {name} torch {lab[2]} ({lab[1]}): FAILED ({why})", flush=True)
                        continue
                    who = f"gridtrain {lab[1]}" if lab[0] == "gt" else \
                        f"torch {res['torch'].split('+')[0]} {lab[2]}" + (f"/{lab[3]}" if T >= 2 else "")
                    inf = f"{res['infer_samples_per_s']:9.2f}" if res.get("infer_samples_per_s") else "        -"
                    print(f"  T={T} {name:10s} rep {r} {who:32s} train {res['train_samples_per_s']:9.2f} samples/s"
                          f"  infer {inf}  RSS "
                          f"{res['peak_rss_bytes'] / 2**20:7.1f} MiB  ({res['wall_s']:.0f} s)", flush=True)
                    k = lab[:3]
                    if k not in best or res["train_samples_per_s"] > best[k]["train_samples_per_s"]:
                        best[k] = res
                    if lab[0] == "gt":
                        isa_gt[lab[1]] = gt_isa(res)
            rows.append((T, name, common, best))

    # the ISA each side used: one probe step of every (interpreter, workload)'s best recipe
    if not a.no_isa_probe and not a.quick:
        for T, name, common, best in rows:
            for py, info in peers:
                cand = [(k, v) for k, v in best.items() if k[0] == "pt" and k[1] == py]
                if not cand:
                    continue
                k, _ = max(cand, key=lambda kv: kv[1]["train_samples_per_s"])
                if (py, k[2], name) in probes:
                    continue
                probe_args = [x for x in common]
                i = probe_args.index("--steps")
                probe_args[i + 1] = "1"
                i = probe_args.index("--warmup")
                probe_args[i + 1] = "0"
                env = dict(base_env, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", ONEDNN_VERBOSE="1",
                           DNNL_VERBOSE="1", **torch_env)
                res, why = run([py, os.path.join(HERE, "peer_bench.py")] + probe_args +
                               ["--threads", "1", "--infer-steps", "-1"] + recipe_args(k[2]), env, "PEER_JSON ")
                probes[(py, k[2], name)] = onednn_summary(res["_out"]) if res else ("", f"(probe failed: {why})")

    hdr = ("| threads | workload | gridtrain best | samples/s | PyTorch best recipe | samples/s | "
           "gridtrain / PyTorch | >= 1.5 | gridtrain RSS MiB | PyTorch RSS MiB | RSS <= PyTorch | "
           "gridtrain GFLOP/s | sgemm GFLOP/s |")
    lines = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for T, name, common, best in rows:
        g = max((v for k, v in best.items() if k[0] == "gt"), key=lambda v: v["train_samples_per_s"], default=None)
        gk = next((k[1] for k, v in best.items() if v is g), "-")
        pk, p = max(((k, v) for k, v in best.items() if k[0] == "pt"), key=lambda kv: kv[1]["train_samples_per_s"],
                    default=(None, None))
        prec = f"torch {p['torch'].split('+')[0]} {pk[2]}" if p else "-"
        if g and p:
            ratio = g["train_samples_per_s"] / p["train_samples_per_s"]
            rcol = f"{ratio:.2f} | {'yes' if ratio >= TARGET else 'NO'}"
            rss = f"{'yes' if g['peak_rss_bytes'] <= p['peak_rss_bytes'] else 'NO'}"
        else:
            rcol, rss = "- | -", "-"
        lines.append(
            f"| {T} | {name} | {gk} | {fmt_rate(g)} | {prec} | {fmt_rate(p)} | {rcol} | "
            f"{g['peak_rss_bytes'] / 2**20 if g else 0:.0f} | {p['peak_rss_bytes'] / 2**20 if p else 0:.0f} | {rss} | "
            f"{g['train_gflops'] if g else 0:.1f} | {g['sgemm_gflops'] if g else 0:.1f} |")
    # every candidate: one column per gridtrain precision and per (torch, recipe)
    cols = []
    for T, name, common, best in rows:
        for k in best:
            if k not in cols:
                cols.append(k)

    def col_name(k):
        if k[0] == "gt":
            return f"gridtrain {k[1]}"
        info = next(i for py, i in peers if py == k[1])
        return f"torch {info['torch'].split('+')[0]} {k[2]}"
    all_hdr = "| threads | workload | " + " | ".join(col_name(k) for k in cols) + " |"
    all_lines = [all_hdr, "|" + "---|" * (all_hdr.count("|") - 1)]
    for T, name, common, best in rows:
        cells = [f"{best[k]['train_samples_per_s']:.1f} ({best[k]['peak_rss_bytes'] / 2**20:.0f} MiB)"
                 if k in best else "-" for k in cols]
        all_lines.append(f"| {T} | {name} | " + " | ".join(cells) + " |")

    torch_names = ", ".join(f"torch {i['torch']}" for _, i in peers)
    print(f"\nCPU engine vs PyTorch's best recipe ({torch_names}; train = forward+loss+backward+AdamW, "
          f"samples/s, best of {reps} medians per candidate; OPENBLAS_CORETYPE={coretype}; CPU {model})")
    print("\n".join(lines))
    print("\nEvery candidate (train samples/s, peak RSS)")
    print("\n".join(all_lines))
    fails = [f"- {py} {rec} {wl}: {why}" for (py, rec, wl), why in pt_failed.items()]
    fails += [f"- gridtrain precision {p} {wl}: {why}" for (p, wl), why in gt_rejected.items()]
    if fails:
        print("\nNot run")
        print("\n".join(fails))
    isa_lines = [f"- CPU: {model}; flags: {flags}"]
    isa_lines += [f"- gridtrain {p}: {s}" for p, s in isa_gt.items()]
    for py, info in peers:
        isa_lines.append(f"- torch {info['torch']} ({py}): CPU capability {info['cpu_capability']}; "
                         f"{info['onednn']}; {info['blas']}")
    for (py, rec, wl), (isa, prims) in probes.items():
        info = next(i for p, i in peers if p == py)
        isa_lines.append(f"- torch {info['torch'].split('+')[0]} {rec} {wl} (ONEDNN_VERBOSE, 1 step): "
                         f"oneDNN ISA {isa or '?'}; {prims or '(no oneDNN primitive ran)'}")
    print("\nInstruction sets")
    print("\n".join(isa_lines))
    mem_lines = []
    if not a.no_mem and not a.quick and (not only or "s2p_tf" in only):
        env = dict(base_env, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **gt_env)
        m, why = run([a.driver, "--model", "s2p_tf", "--batch", "4", "--steps", "1", "--warmup", "0",
                      "--infer-steps", "-1", "--sgemm", "-1", "--mem-check", "--json"], env, "GT_BENCH_JSON ")
        if m is None:
            raise SystemExit(f"s2p_tf mem-check failed: {why}")
        mem_lines = ["| L | B | activation MiB (plan) | activation KiB per position | RSS growth MiB (create + 1 step) |",
                     "|---|---|---|---|---|"]
        for e in m["mem"]:
            mem_lines.append(f"| {e['L']} | {e['B']} | {e['act_bytes'] / 2**20:.1f} | "
                             f"{e['act_bytes'] / e['L'] / 1024:.1f} | {e['rss_delta_bytes'] / 2**20:.1f} |")
        print("\ns2p_tf memory vs L (gridtrain, d=128 heads=4 ff=512 N=8)")
        print("\n".join(mem_lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n\n" + "\n".join(all_lines) + "\n")
            if fails:
                f.write("\n" + "\n".join(fails) + "\n")
            f.write("\n" + "\n".join(isa_lines) + "\n")
            if mem_lines:
                f.write("\n" + "\n".join(mem_lines) + "\n")
    if not rows or not all(any(k[0] == "pt" for k in best) and any(k[0] == "gt" for k in best)
                           for _, _, _, best in rows):
        raise SystemExit("bench_vs_torch: a workload has no gridtrain or no PyTorch result (see 'Not run')")


if __name__ == "__main__":
    main()
