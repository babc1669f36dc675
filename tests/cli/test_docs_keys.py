#!/usr/bin/env python3
"""Every setting the docs name exists.

usage: test_docs_keys.py GRIDTRAIN SOURCE_DIR

Reads the option tables through `gridtrain help --markdown` (the generated
configuration reference) and scans README.md and docs/*.md (but the
generated docs/configuration.md) for names of the form section.key whose
section is a configuration section. Each must be a key of some command,
or a field of an output file listed in FIELDS below (eval.json and
manifest.json write some of their fields under the same section names),
or one of the deliberate misspellings the troubleshooting guide quotes.
`data.split_*` style prefixes must match at least one key (test_cli_errors
checks that docs/configuration.md is what the tables generate). Prints each
stale name with its file and line; a planted stale name proves the scan.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# documented fields of output files that share a section name (not settings)
FIELDS = {
    "data.columns", "data.period_s",          # manifest.json
    "data.models", "data.usage",              # eval.json
    "train.best_val_loss", "train.evaluated_checkpoint", "train.evaluated_step",  # eval.json / doe
    "eval.key",                               # the usage line's placeholder (eval.key=value)
}
# quoted as examples of a mistyped key (docs/troubleshooting.md, exit 2)
MISSPELLED = {"train.max_stepz", "model.max_steps"}
# dotted names that are file names or code, never settings
EXTENSIONS = {"json", "jsonl", "log", "ini", "csv", "h5", "md", "c", "h", "py", "sh", "png", "gp", "dat",
              "lock", "html", "cu", "cuh", "txt", "svg", "out", "err", "supp", "cmake", "gz", "xz", "so"}


def scan(files, root, keys, sections):
    """(names seen, one line per stale name) over the markdown files."""
    pat = re.compile(r"(?<![\w/.-])([a-z_]+)\.([a-z_][a-z_0-9]*)(\*?)(?![\w(/-]|\.[a-z])")
    n, bad = 0, []
    for f in files:
        for ln, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in pat.finditer(line):
                sec, key, star = m.groups()
                if sec not in sections or key in EXTENSIONS:
                    continue
                name = sec + "." + key
                n += 1
                if star or name.endswith("_"):
                    ok = any(k.startswith(name) for k in keys)
                else:
                    ok = name in keys or name in FIELDS or name in MISSPELLED
                if not ok:
                    bad.append("%s:%d: '%s%s' is not a setting (gridtrain help --markdown)"
                               % (f.relative_to(root), ln, name, star))
    return n, bad


def main():
    gt, src = sys.argv[1], Path(sys.argv[2])
    ref = subprocess.run([gt, "help", "--markdown"], capture_output=True, text=True, check=True).stdout
    keys = set(re.findall(r"`([a-z_]+\.[a-z_0-9]+)`", ref))
    sections = {k.split(".")[0] for k in keys} | {"log"}
    bad = []
    files = [src / "README.md"] + sorted(p for p in (src / "docs").glob("*.md") if p.name != "configuration.md")
    n, stale = scan(files, src, keys, sections)
    bad += stale
    # the scan itself can fail: a page with one stale name among valid ones
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.md"
        probe.write_text("Raise `data.prefetch`, set eval.quantile=0.99 and `data.split_*`; see run.log and "
                         "eval.json's `data.usage`.\n", encoding="utf-8")
        _, planted = scan([probe], Path(tmp), keys, sections)
        if len(planted) != 1 or "data.prefetch" not in planted[0]:
            bad.append("the scan did not find exactly the planted stale name: %s" % planted)
    for b in bad:
        print(b)
    print("%d setting names in %d files checked against %d keys; %d stale" % (n, len(files), len(keys), len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
