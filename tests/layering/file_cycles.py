#!/usr/bin/env python3
"""tests/layering/file_cycles.py: no two files of a folder of src/ use each other.

    file_cycles.py NM LIB.a [LIB.a ...]

cmake/check_layering.cmake keeps the folders of src/ in one direction; this
keeps the files inside each folder so: file A uses file B when A's object
refers to a symbol B's object defines (a call, or a global read). Every library
is one folder (gt_<folder>.a; gt_nn_cuda.a is nn/'s CUDA half). A strongly
connected group of two or more files is a circle: each file of it depends on
every other, so none can be read, tested or replaced alone. Prints one line
per circle, the files and one use of each edge,
    circle in gt_core: core/check.c -> core/log.c (gt_log_file_write) -> core/check.c (gt_rank)
and exits 1; exits 0 when there is none.
"""
import os
import re
import subprocess
import sys


def objects(nm, lib):
    """{object: (defined, undefined)} of a static library, via `nm -A`."""
    out = subprocess.run([nm, "-A", "--defined-only", "-g", lib], capture_output=True, text=True, check=True).stdout
    und = subprocess.run([nm, "-A", "-u", lib], capture_output=True, text=True, check=True).stdout
    objs = {}
    for text, kind in ((out, 0), (und, 1)):
        for line in text.splitlines():
            # "lib.a:obj.o:0000000000000000 T name" or "lib.a:obj.o:                 U name"
            m = re.match(r"^.*?:([^:]+\.o):\s*(?:[0-9a-fA-F]+\s+)?[A-Za-z?]\s+(\S+)$", line)
            if m:
                objs.setdefault(m.group(1), (set(), set()))[kind].add(m.group(2))
    return objs


def sccs(nodes, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def name(obj):
    # CMake names objects after the source: check.c.o, attention.cu.o
    return obj[:-2] if obj.endswith(".o") else obj


# Uses that form a circle today and stay until their owner splits the file,
# each with its reason: (library, from, to). An excuse whose use is gone fails
# the test too, so this list stays true.
EXCUSED = {}


def circles(lib, objs, excused):
    """The circles of one library's objects, as printable lines; the excuses used go to `excused`."""
    owner = {}
    for o, (defs, _) in objs.items():
        for s in defs:
            owner[s] = o
    edges, why = {}, {}
    for o, (_, undef) in objs.items():
        for s in sorted(undef):
            t = owner.get(s)
            if not t or t == o:
                continue
            if (lib, name(o), name(t)) in EXCUSED:
                excused.add((lib, name(o), name(t)))
                continue
            edges.setdefault(o, set()).add(t)
            why.setdefault((o, t), s)
    lines = []
    for comp in sccs(sorted(objs), edges):
        if len(comp) < 2:
            continue
        inside = set(comp)
        parts = []
        for o in comp:
            for t in sorted(edges.get(o, ())):
                if t in inside:
                    parts.append("%s -> %s (%s)" % (name(o), name(t), why[(o, t)]))
        lines.append("circle in %s: %s" % (lib, "; ".join(parts)))
    return lines


def self_test():
    """The rule on planted objects: a pair that uses each other is found, a chain is not, an excuse holds."""
    objs = {"a.c.o": ({"fa"}, {"fb"}), "b.c.o": ({"fb"}, {"fc"}), "c.c.o": ({"fc"}, {"fa"}), "d.c.o": ({"fd"}, {"fa"})}
    found = circles("libgt_x", objs, set())
    assert len(found) == 1 and "a.c -> b.c (fb)" in found[0] and "c.c -> a.c (fa)" in found[0] and "d.c" not in found[0], found
    objs["c.c.o"] = ({"fc"}, set())
    assert circles("libgt_x", objs, set()) == []
    objs["c.c.o"] = ({"fc"}, {"fa"})
    EXCUSED[("libgt_x", "c.c", "a.c")] = "planted"
    used = set()
    assert circles("libgt_x", objs, used) == [] and used == {("libgt_x", "c.c", "a.c")}
    del EXCUSED[("libgt_x", "c.c", "a.c")]
    print("file_cycles: self test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    nm, libs = sys.argv[1], sys.argv[2:]
    bad, used, seen = 0, set(), set()
    for lib in libs:
        base = os.path.basename(lib)[:-2]
        seen.add(base)
        for line in circles(base, objects(nm, lib), used):
            print(line)
            bad += 1
    for key in sorted(EXCUSED):
        if key[0] in seen and key not in used:
            print("%s: %s no longer uses %s: remove its excuse from tests/layering/file_cycles.py" % key)
            bad += 1
    if not bad:
        print("file_cycles: no circle in %d libraries (%d excused uses)" % (len(libs), len(used)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
