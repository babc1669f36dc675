"""Every output of a run or report directory still parses after hostile names
(issue #37, classes 1 and 6): used by test_eval_inject.sh and test_doe_inject.sh.

check_outputs.py DIR [--plot-cols FILE=N ...] [--json-text FILE ...]

* every *.json strict JSON (no raw control characters), every *.jsonl line
  too, all of it valid UTF-8; --json-text adds files that hold one JSON
  document (doctor --json output);
* every *.csv with a comma in its first line: read by the csv module, every
  row as many cells as the first, no cell starting with = + - @ (or TAB, CR)
  unless it is a number;
* the plot data (--plot-cols FILE=N: whitespace-separated, '#' comments):
  every data line N tokens, and read as CSV (split at commas) no cell that
  starts like a formula;
* report.md: every table row as many cells (unescaped |) as its header;
* report.html: only the tags the report writes, no <script>, no on*= attribute;
* *.gp: valid UTF-8, and no system( / backtick outside single-quoted strings.
Prints one line per problem; exit 1 when there is any."""
import csv
import html.parser
import io
import json
import os
import re
import sys

problems = []


def bad(msg):
    problems.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def text_of(path):
    raw = open(path, "rb").read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad(f"{path}: not UTF-8 ({e})")
        return raw.decode("latin-1")


def is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def check_json(path, lines=False):
    t = text_of(path)
    docs = [ln for ln in t.splitlines() if ln.strip()] if lines else [t]
    for i, d in enumerate(docs):
        try:
            json.loads(d, strict=True)
        except ValueError as e:
            bad(f"{path}{':%d' % (i + 1) if lines else ''}: not strict JSON ({e})")


def check_csv(path):
    t = text_of(path)
    rows = list(csv.reader(io.StringIO(t, newline="")))
    if not rows:
        return
    n = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != n:
            bad(f"{path}:{i + 1}: {len(r)} cells, the first row has {n}: {r!r}")
        for c in r:
            if c and c[0] in "=+-@\t\r" and not is_number(c):
                bad(f"{path}:{i + 1}: cell {c!r} starts like a spreadsheet formula")


def check_plot_data(path, ncols):
    t = text_of(path)
    for i, ln in enumerate(t.split("\n")):
        for c in ln.split(","):  # a spreadsheet opening the file as CSV
            if c and c[0] in "=+-@\t\r" and not is_number(c):
                bad(f"{path}:{i + 1}: read as CSV, cell {c!r} starts like a spreadsheet formula")
        if not ln.strip() or ln.startswith("#"):
            continue
        tok = ln.split()
        if len(tok) != ncols:
            bad(f"{path}:{i + 1}: {len(tok)} columns, expected {ncols}: {ln!r}")


def md_cells(row):
    cells, cur, esc = [], "", False
    for ch in row.strip()[1:]:
        if esc:
            cur += ch
            esc = False
        elif ch == "\\":
            cur += ch
            esc = True
        elif ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
    return len(cells)


def check_md(path):
    lines = text_of(path).split("\n")
    head = None
    for i, ln in enumerate(lines):
        if ln.startswith("|"):
            n = md_cells(ln)
            if head is None:
                head = n
            elif n != head:
                bad(f"{path}:{i + 1}: a table row of {n} cells under a header of {head}: {ln!r}")
        else:
            head = None


ALLOWED = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "pre", "table", "tr", "th",
           "td", "img"}


class Tags(html.parser.HTMLParser):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def handle_starttag(self, tag, attrs):
        if tag not in ALLOWED:
            bad(f"{self.path}: tag <{tag}> the report does not write")
        for k, _ in attrs:
            if k.startswith("on"):
                bad(f"{self.path}: attribute {k} on <{tag}>")


def check_html(path):
    t = text_of(path)
    if re.search(r"<\s*script", t, re.I):
        bad(f"{path}: a raw <script>")
    Tags(path).feed(t)


def check_gp(path):
    t = text_of(path)
    for i, ln in enumerate(t.split("\n")):
        outside = re.sub(r"'(?:[^']|'')*'", "''", ln)  # single-quoted strings ('' inside) removed
        if "system" in outside or "`" in outside or "'" in outside.replace("''", ""):
            bad(f"{path}:{i + 1}: data outside a gnuplot string: {ln!r}")


def main():
    args = sys.argv[1:]
    d = args.pop(0)
    plot_cols, json_text = {}, []
    while args:
        a = args.pop(0)
        if a == "--plot-cols":
            f, n = args.pop(0).rsplit("=", 1)
            plot_cols[f] = int(n)
        elif a == "--json-text":
            json_text.append(args.pop(0))
    n_files = 0
    for root, _, files in os.walk(d):
        for fn in sorted(files):
            p = os.path.join(root, fn)
            rel = os.path.relpath(p, d)
            n_files += 1
            if rel in plot_cols:
                check_plot_data(p, plot_cols[rel])
            elif fn.endswith(".json"):
                check_json(p)
            elif fn.endswith(".jsonl"):
                check_json(p, lines=True)
            elif fn.endswith(".csv"):
                first = open(p, "rb").readline()
                if b"," in first:
                    check_csv(p)
                elif not first:
                    pass  # empty: valid CSV
                else:
                    bad(f"{p}: a .csv that is neither CSV nor declared plot data")
            elif fn.endswith(".md"):
                check_md(p)
            elif fn.endswith(".html"):
                check_html(p)
            elif fn.endswith(".gp"):
                check_gp(p)
    for p in json_text:
        check_json(p)
    print(f"check_outputs: {n_files} files under {d}: {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


main()
