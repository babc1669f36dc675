#!/usr/bin/python3
"""gridtrain's CPU engine vs PyTorch, side by side, in one invocation.

usage: bench_vs_torch.py --driver BUILD/tests/nn/torch/gt_bench_model
         [--threads 1,2] [--reps 2] [--only s2p_cnn,s2p_tf,lstm,lstm_k128]
         [--quick] [--no-mem] [--markdown FILE]

For every thread count and workload, runs gridtrain's driver (nn/bench.h) and
the PyTorch peer (peer_bench.py) alternately, `reps` times each (the order
flips every rep, so drift on a shared machine hits both sides alike), and
keeps each side's best median. Both sides see the same OPENBLAS_CORETYPE
(the environment's; printed). Workloads:
  s2p_cnn   B=256 W=599 A=15
  s2p_tf    B=32  L=512 d=128 heads=4 ff=512 N=8
  lstm      B=64  T=512 C=32 H=128 (2 layers), full BPTT
  lstm_k128 the same with TBPTT K=128
Targets (printed against the result): at 1 thread gridtrain/torch >= 1.2
(s2p_cnn), 1.5 (s2p_tf), 1.0 (lstm); at 2 threads >= 1.5x PyTorch's best
2-thread (OMP_WAIT_POLICY=PASSIVE by default; --torch-wait-policies
passive,active tries both and keeps the best); peak RSS <= PyTorch's.
Then (unless --no-mem) gridtrain's s2p_tf memory-vs-L check (B=4).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable or "/usr/bin/python3"

WORKLOADS = [
    # name, args common to both sides, steps, warmup, target at 1 thread
    ("s2p_cnn", ["--model", "s2p_cnn", "--batch", "256", "--window", "599", "--n-out", "15"], 6, 2, 1.2),
    ("s2p_tf", ["--model", "s2p_tf", "--batch", "32", "--window", "512", "--d-model", "128", "--heads", "4",
                "--ff", "512", "--layers", "8"], 4, 1, 1.5),
    ("lstm", ["--model", "lstm", "--batch", "64", "--window", "512", "--n-in", "32", "--hidden", "128",
              "--layers", "2"], 6, 2, 1.0),
    ("lstm_k128", ["--model", "lstm", "--batch", "64", "--window", "512", "--n-in", "32", "--hidden", "128",
                   "--layers", "2", "--tbptt", "128"], 6, 2, 1.0),
]
TARGET_2T = 1.5


def run(cmd, env, tag):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout)
        raise SystemExit(f"{tag} failed (exit {p.returncode}): {' '.join(cmd)}")
    for line in p.stdout.splitlines():
        for key in ("GT_BENCH_JSON ", "PEER_JSON "):
            if line.startswith(key):
                r = json.loads(line[len(key):])
                r["wall_s"] = time.time() - t0
                return r
    raise SystemExit(f"{tag}: no JSON line in output:\n{p.stdout}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--driver", default=os.environ.get("GT_BENCH_MODEL", ""),
                    help="path of gt_bench_model (or env GT_BENCH_MODEL)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    ap.add_argument("--no-mem", action="store_true")
    ap.add_argument("--torch-wait-policies", default="passive",
                    help="OMP_WAIT_POLICY values tried for torch at >= 2 threads (best kept), e.g. passive,active")
    ap.add_argument("--markdown", default="", help="also write the tables as markdown to this file")
    a = ap.parse_args()
    if not a.driver or not os.access(a.driver, os.X_OK):
        raise SystemExit("--driver must name the built gt_bench_model executable")
    only = set(a.only.split(",")) if a.only else None
    threads = [int(t) for t in a.threads.split(",")]
    base_env = dict(os.environ)
    coretype = base_env.get("OPENBLAS_CORETYPE", "(unset: auto-detected)")
    print(f"bench_vs_torch: {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"OPENBLAS_CORETYPE={coretype}, reps={a.reps}, python {PY}", flush=True)

    rows = []
    for T in threads:
        for name, args, steps, warmup, target1 in WORKLOADS:
            if only and name not in only:
                continue
            if a.quick:
                steps, warmup = 2, 1
            common = args + ["--steps", str(steps), "--warmup", str(warmup)]
            env = dict(base_env, OPENBLAS_NUM_THREADS=str(T), OMP_NUM_THREADS=str(T))
            gt_cmd = [a.driver] + common + ["--json"]
            pt_base = [PY, os.path.join(HERE, "peer_bench.py")] + common + ["--threads", str(T)]
            policies = a.torch_wait_policies.split(",") if T >= 2 else ["default"]
            best_gt, best_pt = None, None
            for r in range(a.reps):
                pts = [("pt", pt_base + ["--wait-policy", p]) for p in policies]
                order = [("gt", gt_cmd)] + pts if r % 2 == 0 else pts + [("gt", gt_cmd)]
                for side, cmd in order:
                    res = run(cmd, env, f"{name} {side} T={T}")
                    who = "gridtrain" if side == "gt" else f"torch/{res.get('wait_policy', '')}"
                    print(f"  T={T} {name:10s} rep {r} {who:15s} "
                          f"train {res['train_samples_per_s']:9.2f} samples/s  infer "
                          f"{res.get('infer_samples_per_s', 0):9.2f}  RSS {res['peak_rss_bytes'] / 2**20:7.1f} MiB"
                          f"  ({res['wall_s']:.0f} s)", flush=True)
                    if side == "gt":
                        if best_gt is None or res["train_samples_per_s"] > best_gt["train_samples_per_s"]:
                            best_gt = res
                    elif best_pt is None or res["train_samples_per_s"] > best_pt["train_samples_per_s"]:
                        best_pt = res
            target = target1 if T == 1 else TARGET_2T
            rows.append((T, name, best_gt, best_pt, target))

    hdr = ("| threads | workload | gridtrain samples/s | torch samples/s | ratio | target | met | "
           "gridtrain infer/s | torch infer/s | gridtrain RSS MiB | torch RSS MiB | RSS <= torch | "
           "gridtrain GFLOP/s | sgemm GFLOP/s | fraction of sgemm |")
    lines = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for T, name, g, p, target in rows:
        ratio = g["train_samples_per_s"] / p["train_samples_per_s"]
        lines.append(
            f"| {T} | {name} | {g['train_samples_per_s']:.1f} | {p['train_samples_per_s']:.1f} | {ratio:.2f} | "
            f">= {target} | {'yes' if ratio >= target else 'NO'} | {g['infer_samples_per_s']:.1f} | "
            f"{p.get('infer_samples_per_s', 0):.1f} | {g['peak_rss_bytes'] / 2**20:.0f} | "
            f"{p['peak_rss_bytes'] / 2**20:.0f} | {'yes' if g['peak_rss_bytes'] <= p['peak_rss_bytes'] else 'NO'} | "
            f"{g['train_gflops']:.1f} | {g['sgemm_gflops']:.1f} | {g['train_frac_sgemm']:.2f} |")
    print("\nCPU engine vs PyTorch " + (rows[0][3]["torch"] if rows else "") +
          f" (train = forward+loss+backward+AdamW, best of {a.reps} medians per side; "
          f"OPENBLAS_CORETYPE={coretype})")
    print("\n".join(lines))
    mem_lines = []
    if not a.no_mem and (not only or "s2p_tf" in only):
        env = dict(base_env, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        m = run([a.driver, "--model", "s2p_tf", "--batch", "4", "--steps", "1", "--warmup", "0",
                 "--infer-steps", "-1", "--sgemm", "-1", "--mem-check", "--json"], env, "s2p_tf mem-check")
        mem_lines = ["| L | B | activation MiB (plan) | activation KiB per position | RSS growth MiB (create + 1 step) |",
                     "|---|---|---|---|---|"]
        for e in m["mem"]:
            mem_lines.append(f"| {e['L']} | {e['B']} | {e['act_bytes'] / 2**20:.1f} | "
                             f"{e['act_bytes'] / e['L'] / 1024:.1f} | {e['rss_delta_bytes'] / 2**20:.1f} |")
        print("\ns2p_tf memory vs L (gridtrain, d=128 heads=4 ff=512 N=8)")
        print("\n".join(mem_lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
            if mem_lines:
                f.write("\n" + "\n".join(mem_lines) + "\n")


if __name__ == "__main__":
    main()
