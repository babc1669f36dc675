#!/usr/bin/python3
"""cmake/check_task_neutral.py: the shared folders of src/ never name a task.

A task is one folder's business (src/nilm/, src/pdm/, ...: GT_TASKS in
src/task/task_registry.h, docs/design.md "How to add a task"): the folders that
cmake/layers.cmake lists in GT_TASK_NEUTRAL reach a task only through its
tables (data/dataset_impl.h gt_data_task_i, ...). In a .c or .h file of such a
folder, an identifier (outside comments, string and character literals) that
contains the name of a task folder, in any case, is refused, unless
GT_TASK_NEUTRAL_EXCUSED names it ("folder/file.c identifier") with its reason.
Run by the build before anything compiles (target gt_layering, beside
cmake/check_layering.cmake and cmake/check_sizes.py) and by
test_layering_task_neutral (its self test plants violations, then the tree).

  check_task_neutral.py [--src DIR] [--layers FILE] [--self-test]

Prints one line per violation,
  src/data/norm.c:87: names task 'nilm' (ds->nilm): reach the task through its table (gt_data_task_i)
and exits 1; exits 0 when the tree passes.
"""
import argparse
import os
import re
import sys
import tempfile

from check_sizes import cmake_set  # the one reader of set(NAME ...) in cmake/layers.cmake

HERE = os.path.dirname(os.path.abspath(__file__))
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TASK_LINE = re.compile(r"^[ \t]*X\(([a-z0-9_]+)\)", re.M)


def code_only(text):
    """text with comments and string / character literals blanked (line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        elif text.startswith("#include", i):  # a header's path is a file name, not code
            j = text.find("\n", i)
            j = n if j < 0 else j
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def tasks_of(src):
    """The task folders: the X(name) lines of task/task_registry.h's GT_TASKS."""
    with open(os.path.join(src, "task", "task_registry.h"), encoding="utf-8") as f:
        return TASK_LINE.findall(f.read())


def check(src, folders, tasks, excused):
    bad = []
    for folder in folders:
        root = os.path.join(src, folder)
        for dirpath, _, names in os.walk(root):
            for nm in sorted(names):
                if not nm.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, nm)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = code_only(f.read()).split("\n")
                for n, line in enumerate(lines, 1):
                    for tok in IDENT.findall(line):
                        low = tok.lower()
                        for t in tasks:
                            if t in low and f"{rel} {tok}" not in excused:
                                bad.append(f"src/{rel}:{n}: names task '{t}' ({tok}): {folder}/ is shared by every "
                                           "task; reach the task through its table (docs/design.md, How to add a task)")
    return bad


def self_test():
    """Planted identifiers naming a task fail, with file and line; comments, strings, includes and excused ones pass."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "task"))
        os.makedirs(os.path.join(d, "shared", "sub"))
        os.makedirs(os.path.join(d, "nilm"))
        with open(os.path.join(d, "task", "task_registry.h"), "w") as f:
            f.write("#define GT_TASKS(X) \\\n    X(nilm) \\\n    X(pdm)\n")
        with open(os.path.join(d, "shared", "a.c"), "w") as f:
            f.write('#include "nilm/nilm.h"\n'                              # 1 an include: a path
                    "/* the nilm aggregate, ds->pdm */\n"                    # 2 a comment
                    'static const char *k = "data.pdm_target"; // nilm\n'   # 3 a string, a comment
                    "    if (ds->pdm) return;\n"                             # 4 planted
                    "    x = gt_NILM_shard(y) + c;\n"                        # 5 planted, any case
                    "    s = '\\''; v = ds->pdm_norm_turbine;\n"             # 6 planted after a char literal
                    "    w = cfg->excused_pdm;\n"                            # 7 excused
                    "    /* a\n       pdm */ z = 1;\n")                      # 8-9 a comment over lines
        with open(os.path.join(d, "shared", "sub", "b.h"), "w") as f:
            f.write("int gt_pdm_thing;\n")                                   # 1 planted, in a subfolder
        with open(os.path.join(d, "nilm", "c.c"), "w") as f:
            f.write("int gt_nilm_own;\n")                                    # a task folder: not checked
        got = check(d, ["shared"], tasks_of(d), {"shared/a.c excused_pdm"})
        want = ["src/shared/a.c:4: names task 'pdm' (pdm)",
                "src/shared/a.c:5: names task 'nilm' (gt_NILM_shard)",
                "src/shared/a.c:6: names task 'pdm' (pdm_norm_turbine)",
                "src/shared/sub/b.h:1: names task 'pdm' (gt_pdm_thing)"]
        wrong = len(got) != len(want) or any(not g.startswith(w) for g, w in zip(sorted(got), want))
        print("check_task_neutral self test:", "FAILED" if wrong else "ok", *got, sep="\n  ")
        return 1 if wrong else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(HERE, "..", "src"))
    ap.add_argument("--layers", default=os.path.join(HERE, "layers.cmake"))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    text = open(a.layers).read()
    src = os.path.abspath(a.src)
    folders = cmake_set(text, "GT_TASK_NEUTRAL")
    excused = set(cmake_set(text, "GT_TASK_NEUTRAL_EXCUSED"))
    bad = check(src, folders, tasks_of(src), excused)
    for b in bad:
        print(b)
    if bad:
        print(f"task-neutral folders: {len(bad)} identifier(s) naming a task in {' '.join(folders)} "
              "(cmake/layers.cmake GT_TASK_NEUTRAL)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
