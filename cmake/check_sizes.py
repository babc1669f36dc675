#!/usr/bin/python3
"""cmake/check_sizes.py: no file of src/ over GT_MAX_FILE_LINES lines and no
function over GT_MAX_FUNCTION_LINES lines, unless cmake/layers.cmake's
GT_SIZE_EXCUSED names it ("folder/file.c function" or "folder/file.c -") with
its reason. Run by the build before anything compiles (target gt_layering,
beside cmake/check_layering.cmake) and by test_sizes (label unit).

  check_sizes.py [--src DIR] [--layers FILE] [--stamp FILE] [--self-test]

A function runs from the first line of its signature (at column 0) to its
closing `}` at column 0 (the project's format: clang-format, braces at the
end of the signature). Prints one line per violation,
  src/pdm/pdm_score.c:503: gt_pdm_scores has 212 lines, more than 120: split it along its concerns
and exits 1; exits 0 when the tree passes.
"""
import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
START = re.compile(r"^(?:[A-Za-z_][^=;(]*[ *])?([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOT_FN = re.compile(r"^(typedef|struct|enum|union|static_assert|_Static_assert|#)\b")


def cmake_set(text, name):
    """The words of `set(NAME ...)` in a CMake file (comments dropped, quoted strings kept whole)."""
    clean = "\n".join(re.sub(r'^((?:[^"#]|"[^"]*")*)#.*$', r"\1", ln) for ln in text.split("\n"))
    m = re.search(r"^set\(" + re.escape(name) + r"\b((?:[^()\"]|\"[^\"]*\")*)\)", clean, re.M)
    if not m:
        return []
    return [q if q else w for q, w in re.findall(r'"([^"]*)"|([^\s"]+)', m.group(1))]


def functions(lines):
    """(name, first line, length) of each function of a C/CUDA source."""
    state, name, start = 0, "", 0
    for n, line in enumerate(lines, 1):
        if state == 2:
            if line.rstrip() == "}":
                yield name, start, n - start + 1
                state = 0
            continue
        if state == 0:
            m = START.match(line)
            if m and not NOT_FN.match(line) and not line.rstrip().endswith(";"):
                name, start, state = m.group(1), n, 1
        if state == 1:
            s = line.rstrip()
            if s.endswith("{"):
                state = 2
            elif s.endswith(";") or s.endswith("}"):
                state = 0  # a declaration, or a whole body on the signature's line


def check(src, max_file, max_fn, excused):
    bad = []
    for root, _, names in os.walk(src):
        for nm in sorted(names):
            if not nm.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(root, nm)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if len(lines) > max_file and f"{rel} -" not in excused:
                bad.append(f"src/{rel}:{len(lines)}: the file has {len(lines)} lines, more than {max_file}: "
                           "split it along its concerns")
            for name, start, length in functions(lines):
                if length > max_fn and f"{rel} {name}" not in excused:
                    bad.append(f"src/{rel}:{start}: {name} has {length} lines, more than {max_fn}: "
                               "split it along its concerns")
    return sorted(bad)


def self_test(max_file, max_fn):
    """A planted long function and a long file fail, with their names and lines; short ones and excused ones pass."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "x"))
        body = "    a++;\n" * (max_fn - 2)
        with open(os.path.join(d, "x", "a.c"), "w") as f:
            f.write("static int ok(void) { return 1; }\n"            # one-line body
                    "int proto(int a);\n"                            # declaration
                    "typedef struct s {\n    int a;\n} s;\n"         # not a function
                    f"static void fits(int a) {{\n{body}}}\n"        # exactly max_fn lines
                    f"static void long_one(int a,\n                     int b) {{\n{body}}}\n"  # max_fn + 1 lines
                    f"void excused(void) {{\n{body}    a++;\n    a++;\n}}\n")
        with open(os.path.join(d, "x", "big.h"), "w") as f:
            f.write("int v;\n" * (max_file + 1))
        got = check(d, max_file, max_fn, {"x/a.c excused"})
        want = [f"src/x/a.c:{max_fn + 6}: long_one has {max_fn + 1} lines",
                f"src/x/big.h:{max_file + 1}: the file has {max_file + 1} lines"]
        wrong = len(got) != len(want) or any(not g.startswith(w) for g, w in zip(got, want))
        print("check_sizes self test:", "FAILED" if wrong else "ok", *got, sep="\n  ")
        return 1 if wrong else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(HERE, "..", "src"))
    ap.add_argument("--layers", default=os.path.join(HERE, "layers.cmake"))
    ap.add_argument("--stamp", default="")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    text = open(a.layers).read()
    max_file = int(cmake_set(text, "GT_MAX_FILE_LINES")[0])
    max_fn = int(cmake_set(text, "GT_MAX_FUNCTION_LINES")[0])
    if a.self_test:
        return self_test(max_file, max_fn)
    excused = set(cmake_set(text, "GT_SIZE_EXCUSED"))
    bad = check(os.path.abspath(a.src), max_file, max_fn, excused)
    for b in bad:
        print(b)
    if bad:
        print(f"sizes: {len(bad)} file(s) or function(s) over the limits of cmake/layers.cmake", file=sys.stderr)
        return 1
    if a.stamp:
        open(a.stamp, "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
