#!/usr/bin/python3
"""PyTorch peer of gridtrain's model benchmark (nn/bench.h), same workloads.

usage: peer_bench.py --model s2p_cnn|s2p_tf|lstm [--batch B] [--window W]
         [--tbptt K] [--steps N] [--warmup N] [--infer-steps N] [--threads T]
         [--wait-policy passive|active|default] [--profile] [--n-in C] [--n-out A]
         [--d-model d] [--heads h] [--ff f] [--layers N] [--hidden H]
         [--autocast fp32|bf16] [--sdpa] [--compile] [--info]

Thread settings are made before torch is imported: OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS = T (torch 1.13 calls the system OpenBLAS, whose pool
torch.set_num_threads does not reach), OMP_WAIT_POLICY=PASSIVE for T >= 2
unless --wait-policy says otherwise (active spinning of torch's OpenMP pool
against OpenBLAS's on 2 cores makes it several times slower).
OPENBLAS_CORETYPE is left as the environment has it (printed).

The recipe (default: eager float32):
  --autocast bf16  torch.autocast("cpu", dtype=torch.bfloat16) around forward
                   and loss (backward and AdamW outside, fp32 master weights):
                   PyTorch's CPU mixed-precision recipe
  --sdpa           s2p_tf's attention through F.scaled_dot_product_attention
                   (PyTorch >= 2: the fused CPU kernel)
  --compile        torch.compile(model) (PyTorch >= 2; the compile runs in
                   the warm-up steps, which are not timed; at least 1)
A recipe this torch cannot run (no torch.compile, no SDPA, a compile that
fails) prints one line "PEER_FAIL {...}" with the reason and exits 3.

torch.optim.AdamW (lr 1e-4, weight decay 0.01). A train step is zero_grad +
forward + loss + backward + optimizer step; inference is forward under
torch.no_grad() (and the autocast, if any). Times: median over the timed
steps, after warm-up (samples/s = B / median), as gridtrain's bench. Peak RSS
from resource.getrusage (whole process, torch import and compile included).
Prints a table and one line "PEER_JSON {...}" (with the CPU capability ATen
dispatches to and the oneDNN/BLAS build). --info prints only "PEER_INFO
{...}" (version, capability, build) and exits.
"""
import argparse
import json
import os
import sys
import time

DEFAULTS = {
    "s2p_cnn": dict(window=599, n_in=1, n_out=15, hidden=1024),
    "s2p_tf": dict(window=512, n_in=1, n_out=15, d_model=128, n_heads=4, d_ff=512, n_layers=8),
    "lstm": dict(window=512, n_in=32, hidden=128, n_layers=2),
}


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(DEFAULTS))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--window", type=int, default=0)
    ap.add_argument("--tbptt", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--infer-steps", type=int, default=0, help="0 = steps, < 0 = skip")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", action="store_true",
                    help="after timing, profile one train step per op and input shape (torch.autograd.profiler)")
    ap.add_argument("--wait-policy", default="auto", choices=["auto", "passive", "active", "default"])
    for name in ("n-in", "n-out", "d-model", "heads", "ff", "layers", "hidden"):
        ap.add_argument("--" + name, type=int, default=0)
    ap.add_argument("--autocast", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--sdpa", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--info", action="store_true", help="print PEER_INFO (version, CPU capability, build) and exit")
    return ap.parse_args()


def torch_info(torch):
    """What this torch runs on: its version, the CPU capability ATen's
    vectorised kernels dispatch to, the oneDNN and BLAS it was built with."""
    cfg = torch.__config__.show()
    cap = None
    cpu = getattr(torch.backends, "cpu", None)
    if cpu is not None and hasattr(cpu, "get_cpu_capability"):
        cap = cpu.get_cpu_capability()
    info = {"torch": torch.__version__, "cpu_capability": cap, "onednn": "", "blas": ""}
    for line in cfg.splitlines():
        line = line.strip(" -")
        if line.startswith("CPU capability usage:") and not cap:
            info["cpu_capability"] = line.split(":", 1)[1].strip()
        elif "MKL-DNN" in line or "oneDNN" in line:
            info["onednn"] = line
        elif line.startswith("Intel(R) oneAPI Math Kernel Library") or line.startswith("Intel(R) Math Kernel"):
            info["blas"] = line
        elif "BLAS_INFO=" in line and not info["blas"]:
            info["blas"] = "BLAS_INFO=" + line.split("BLAS_INFO=", 1)[1].split(",", 1)[0]
    return info


def recipe_name(a):
    parts = ["bf16" if a.autocast == "bf16" else "fp32"]
    if a.sdpa:
        parts.append("sdpa")
    if a.compile:
        parts.append("compile")
    return "+".join(parts)


def fail(a, torch, why):
    print("PEER_FAIL " + json.dumps({"model": a.model, "recipe": recipe_name(a), "torch": torch.__version__,
                                     "threads": a.threads, "reason": why}), flush=True)
    sys.exit(3)


def main():
    a = parse()
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    policy = a.wait_policy
    if policy == "auto":
        policy = "passive" if a.threads >= 2 else "default"
    if policy == "default":
        os.environ.pop("OMP_WAIT_POLICY", None)
    else:
        os.environ["OMP_WAIT_POLICY"] = policy.upper()
    import resource

    import torch
    import torch.nn.functional as F

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gtmodels

    if a.info:
        print("PEER_INFO " + json.dumps(torch_info(torch)))
        return
    major = int(torch.__version__.split(".")[0])
    if a.compile and (major < 2 or not hasattr(torch, "compile")):
        fail(a, torch, f"torch.compile needs PyTorch >= 2 (this is {torch.__version__})")
    if a.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        fail(a, torch, f"F.scaled_dot_product_attention needs PyTorch >= 2 (this is {torch.__version__})")
    if a.sdpa and a.model != "s2p_tf":
        fail(a, torch, "--sdpa is s2p_tf's attention; the other models have none")
    if a.compile:
        a.warmup = max(a.warmup, 1)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    hp = dict(DEFAULTS[a.model])
    over = {"window": a.window, "n_in": a.n_in, "n_out": a.n_out, "d_model": a.d_model,
            "n_heads": a.heads, "d_ff": a.ff, "n_layers": a.layers, "hidden": a.hidden}
    hp.update({k: v for k, v in over.items() if v > 0})
    B = a.batch
    if a.model == "s2p_cnn":
        model = gtmodels.S2pCnn(hp["window"], hp["n_in"], hp["n_out"], hidden=hp["hidden"])
        x = torch.randn(B, hp["n_in"], hp["window"])
        y = torch.randn(B, hp["n_out"])
        loss_fn = lambda pred: F.mse_loss(pred, y)  # noqa: E731
    elif a.model == "s2p_tf":
        model = gtmodels.S2pTf(hp["window"], hp["n_in"], hp["n_out"], hp["d_model"], hp["n_heads"],
                               hp["d_ff"], hp["n_layers"], sdpa=a.sdpa)
        x = torch.randn(B, hp["window"], hp["n_in"])
        y = torch.randn(B, hp["n_out"])
        loss_fn = lambda pred: F.mse_loss(pred, y)  # noqa: E731
    else:
        model = gtmodels.Lstm(hp["n_in"], hp["hidden"], hp["n_layers"], tbptt=a.tbptt)
        x = torch.randn(B, hp["window"], hp["n_in"])
        loss_fn = lambda pred: gtmodels.lstm_loss(pred, x)  # noqa: E731
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    n_params = sum(p.numel() for p in model.parameters())
    run = model
    if a.compile:
        try:
            run = torch.compile(model)
        except Exception as e:  # noqa: BLE001 -- any failure is the result to report
            fail(a, torch, f"torch.compile: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if a.autocast == "bf16":
        amp = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    else:
        import contextlib
        amp = contextlib.nullcontext

    def train_step():
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = loss_fn(run(x))
        loss.backward()
        opt.step()
        return loss.item()

    first = None
    t_compile = time.perf_counter()
    for i in range(a.warmup):
        if a.compile and i == 0:
            try:
                v = train_step()
            except Exception as e:  # noqa: BLE001 -- the compile happens in the first call
                msg = str(e).strip().splitlines()
                fail(a, torch, f"torch.compile: {type(e).__name__}: {msg[0] if msg else ''}"[:400])
        else:
            v = train_step()
        first = v if first is None else first
    t_compile = time.perf_counter() - t_compile
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        last = train_step()
        times.append(time.perf_counter() - t0)
        first = last if first is None else first
    times.sort()
    med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
    res = {"model": a.model, "batch": B, "window": hp["window"], "tbptt": a.tbptt, "threads": a.threads,
           "wait_policy": policy, "torch": torch.__version__, "coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
           "recipe": recipe_name(a), "warmup_s": t_compile, **torch_info(torch),
           "n_params": n_params, "train_ms_median": 1e3 * med, "train_ms_mean": 1e3 * sum(times) / len(times),
           "train_samples_per_s": B / med, "first_loss": first, "last_loss": last}
    n_inf = a.steps if a.infer_steps == 0 else a.infer_steps
    if n_inf > 0:
        with torch.no_grad(), amp():
            run(x)
            it = []
            for _ in range(n_inf):
                t0 = time.perf_counter()
                run(x)
                it.append(time.perf_counter() - t0)
        it.sort()
        imed = it[len(it) // 2] if len(it) % 2 else 0.5 * (it[len(it) // 2 - 1] + it[len(it) // 2])
        res["infer_ms_median"] = 1e3 * imed
        res["infer_samples_per_s"] = B / imed
    if a.profile:
        with torch.autograd.profiler.profile(record_shapes=True) as prof:
            train_step()
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=25))
    res["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"peer_bench {a.model} {res['recipe']}: B={B} window={hp['window']} tbptt={a.tbptt} threads={a.threads} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} "
          f"OPENBLAS_CORETYPE={res['coretype'] or '(unset)'} torch {torch.__version__} "
          f"(CPU capability {res['cpu_capability']})")
    print(f"  train samples/s {res['train_samples_per_s']:.2f}  ms/step {res['train_ms_median']:.2f}  "
          f"inference samples/s {res.get('infer_samples_per_s', 0):.2f}  "
          f"peak RSS {res['peak_rss_bytes'] / 2**20:.1f} MiB  loss {first:.4g} -> {last:.4g}")
    print("PEER_JSON " + json.dumps(res))


if __name__ == "__main__":
    main()
