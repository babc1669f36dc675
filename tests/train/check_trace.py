#!/usr/bin/env python3
"""Validates a gridtrain trace.json (train.trace): the Chrome trace event
format that Perfetto and chrome://tracing open, and what the timeline must show.

usage: check_trace.py TRACE.json RANKS [--max-spans-per-rank N] [--dropped] [--threads N]

--dropped: a buffer too small for the run (every rank dropped spans; the
phases are then not all there). --threads N: at least N threads on each rank.

Checks: {"traceEvents": [...]} with only "X" (complete) and "M" (metadata)
events; every X event has a string name, numeric ts >= 0 and dur >= 0, integer
pid and tid; every rank 0..RANKS-1 is a process with a process_name; on each
(pid, tid) the spans nest (no partial overlap, in integer nanoseconds); the
phases of a training step are there on every rank and nest where they must
(forward, backward, all-reduce, optimizer inside a step; per-layer backward
spans 'bwd <layer>' inside backward; all-reduce buckets
inside the all-reduce). Exits 1 naming the first problem."""
import json
import sys


def fail(msg):
    print("check_trace: FAIL: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        fail(__doc__)
    path, ranks = args[0], int(args[1])
    max_per_rank = None
    want_dropped = "--dropped" in args
    if "--max-spans-per-rank" in args:
        max_per_rank = int(args[args.index("--max-spans-per-rank") + 1])
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("top level is not {\"traceEvents\": [...]}")
    spans = {}  # (pid, tid) -> [(start_ns, end_ns, name)]
    names = {}  # pid -> set of names
    pnames = set()
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            fail("event %d: ph is not X or M: %r" % (i, e))
        if not isinstance(e.get("name"), str) or not e["name"]:
            fail("event %d: no name" % i)
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int):
                fail("event %d (%s): %s is not an integer" % (i, e["name"], k))
        if e["ph"] == "M":
            if not isinstance(e.get("args"), dict):
                fail("metadata event %d has no args" % i)
            if e["name"] == "process_name":
                pnames.add(e["pid"])
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or ts < 0 or dur < 0:
            fail("event %d (%s): ts %r / dur %r not numbers >= 0" % (i, e["name"], ts, dur))
        if "args" in e and not isinstance(e["args"], dict):
            fail("event %d: args is not an object" % i)
        a = round(ts * 1000)
        spans.setdefault((e["pid"], e["tid"]), []).append((a, a + round(dur * 1000), e["name"]))
        names.setdefault(e["pid"], set()).add(e["name"])
    pids = sorted(names)
    if pids != list(range(ranks)):
        fail("processes with spans are %s, want ranks 0..%d" % (pids, ranks - 1))
    if pnames != set(range(ranks)):
        fail("process_name metadata for %s, want every rank" % sorted(pnames))
    want = {"read", "step", "data_wait", "forward", "backward", "allreduce", "optimizer", "eval", "checkpoint"}
    if ranks > 1:
        want.add("allreduce bucket")
    inside = {"forward": "step", "backward": "step", "optimizer": "step", "allreduce bucket": "allreduce",
              "data_wait": "step"}
    for pid in pids if not want_dropped else []:
        missing = want - names[pid]
        if missing:
            fail("rank %d lacks %s" % (pid, sorted(missing)))
        if not any(n.startswith("bwd ") for n in names[pid]):
            fail("rank %d has no per-layer backward span ('bwd ...')" % pid)
    total = 0
    for (pid, tid), lst in sorted(spans.items()):
        total += len(lst)
        # a parent sorts before its children: by start, then the longer first
        lst.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in lst:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                fail("rank %d thread %d: '%s' [%d, %d] ns overlaps '%s' [%d, %d] ns partially"
                     % (pid, tid, s[2], s[0], s[1], stack[-1][2], stack[-1][0], stack[-1][1]))
            parent = "backward" if s[2].startswith("bwd ") else inside.get(s[2])
            # a full buffer drops the parent recorded after its children (a step ends after its
            # phases), so a bounded trace only has to nest, not to be complete
            if parent and tid == 0 and not want_dropped and not any(p[2] == parent for p in stack):
                # a sampled step encloses its phases; phases of unsampled steps are not recorded
                fail("rank %d: '%s' at %d ns is not inside a '%s'" % (pid, s[2], s[0], parent))
            stack.append(s)
    if max_per_rank is not None:
        for pid in pids:
            n = sum(len(v) for (p, _), v in spans.items() if p == pid)
            if n > max_per_rank:
                fail("rank %d has %d spans, more than the capacity %d" % (pid, n, max_per_rank))
    if "--threads" in args:
        need = int(args[args.index("--threads") + 1])
        for pid in pids:
            n = len([1 for (p, _) in spans if p == pid])
            if n < need:
                fail("rank %d has spans on %d threads, want %d" % (pid, n, need))
    dropped = doc.get("otherData", {}).get("dropped_per_rank")
    if not isinstance(dropped, list) or len(dropped) != ranks:
        fail("otherData.dropped_per_rank is not a list of %d counts" % ranks)
    if want_dropped and not all(d > 0 for d in dropped):
        fail("expected dropped spans on every rank, got %s" % dropped)
    print("check_trace: ok: %d spans, %d ranks, %d threads, dropped %s" % (total, ranks, len(spans), dropped))


main()
