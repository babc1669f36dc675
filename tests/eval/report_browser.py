#!/usr/bin/env python3
"""Check a report.html as a person sees it, in headless Chromium.

usage: report_browser.py REPORT.html SCREENSHOT.png [--expect-fail]

Loads the page (file://, no network) with a probe script appended to a copy
beside it (so relative plot paths resolve), and fails when
  * an image does not load (broken or missing plot),
  * a plot is drawn at less than 60 % of its own width (its labels, 10 pt in
    the PNG, become smaller than 6 pt: unreadable),
  * text is set smaller than 9 CSS px,
  * the page or an element overflows horizontally (content wider than its box
    or than the 1280 px window),
  * the page logs a console error, or a script error happens;
then saves a full-page screenshot. --expect-fail inverts the verdict (the
probe's own test on a page built to break every rule). Prints one line per
finding; exit 0 when the page passes.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

WIDTH = 1280

PROBE = r"""
<script>
(function () {
  var errors = [];
  var origError = console.error;
  console.error = function () { errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); origError.apply(console, arguments); };
  window.addEventListener('error', function (e) {
    if (e.target && e.target.tagName === 'IMG') errors.push('image failed to load: ' + e.target.getAttribute('src'));
    else errors.push('script error: ' + e.message);
  }, true);
  window.addEventListener('load', function () {
    if (!document.body) { errors.push('no <body>'); return; }
    var f = [];
    var vw = window.innerWidth;
    document.querySelectorAll('img').forEach(function (im) {
      var src = im.getAttribute('src');
      if (!im.complete || im.naturalWidth === 0) { f.push('broken image: ' + src); return; }
      var w = im.getBoundingClientRect().width;
      if (w < 0.6 * im.naturalWidth) f.push('plot drawn at ' + Math.round(w) + ' of its ' + im.naturalWidth + ' px (labels unreadable): ' + src);
    });
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    var small = 0, firstSmall = '';
    while (walker.nextNode()) {
      var t = walker.currentNode;
      if (!t.nodeValue.trim()) continue;
      var px = parseFloat(getComputedStyle(t.parentElement).fontSize);
      if (px < 9) { small++; if (!firstSmall) firstSmall = t.nodeValue.trim().slice(0, 40) + ' (' + px + ' px)'; }
    }
    if (small) f.push(small + ' text node(s) below 9 px, first: ' + firstSmall);
    if (document.documentElement.scrollWidth > vw + 1) f.push('page wider than the window: ' + document.documentElement.scrollWidth + ' > ' + vw + ' px');
    document.querySelectorAll('body *').forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.width > 0 && r.right > vw + 1) f.push('<' + el.tagName.toLowerCase() + '> ends at ' + Math.round(r.right) + ' px, past the ' + vw + ' px window');
      var cs = getComputedStyle(el);
      var scrolls = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
      if (!scrolls && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && /^(P|PRE|TD|TH|H1|H2|H3|LI|TABLE)$/.test(el.tagName))
        f.push('<' + el.tagName.toLowerCase() + '> content overflows its box (' + el.scrollWidth + ' > ' + el.clientWidth + ' px): ' + (el.textContent || '').trim().slice(0, 50));
    });
    var out = document.createElement('pre');
    out.id = 'gt-probe';
    out.textContent = JSON.stringify({findings: f.concat(errors), height: document.documentElement.scrollHeight,
                                      images: document.querySelectorAll('img').length,
                                      tables: document.querySelectorAll('table').length});
    out.style.display = 'none';
    document.body.appendChild(out);
  });
})();
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(browser, args, timeout=120):
    profile = tempfile.mkdtemp(prefix="gt-chromium-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
               "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"] + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:"))
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    expect_fail = "--expect-fail" in sys.argv
    if len(args) != 2:
        sys.exit(__doc__)
    report, shot = args
    browser = chromium()
    if not browser:
        print("report_browser: no chromium on this machine (Debian package 'chromium')")
        sys.exit(77)
    html = open(report, encoding="utf-8").read()
    probe_page = os.path.join(os.path.dirname(os.path.abspath(report)), ".gt-probe-" + os.path.basename(report))
    # first in <head>: its hooks see the page's own scripts' errors
    m = re.search(r"<head[^>]*>", html, re.I)
    at = m.end() if m else 0
    with open(probe_page, "w", encoding="utf-8") as f:
        f.write(html[:at] + PROBE + html[at:])
    try:
        url = "file://" + probe_page
        r = run(browser, ["--window-size=%d,900" % WIDTH, "--virtual-time-budget=10000", "--dump-dom", url])
        m = re.search(r'<pre id="gt-probe"[^>]*>(.*?)</pre>', r.stdout, re.S)
        if not m:
            print("report_browser: %s: the probe did not report (chromium exit %d): %s"
                  % (report, r.returncode, r.stderr.strip().splitlines()[-1:] or ""))
            sys.exit(1)
        res = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
        findings = res["findings"]
        # the browser's own log: failed loads and console errors the page's
        # scripts could not see (a resource refused before any script ran)
        for line in r.stderr.splitlines():
            if "CONSOLE" in line and ("ERROR" in line.split("CONSOLE")[0] or "error" in line.lower()):
                findings.append("browser log: " + line.split("] ", 1)[-1][:160])
            elif "Failed to load resource" in line or "net::ERR_FILE_NOT_FOUND" in line:
                findings.append("browser log: " + line.split("] ", 1)[-1][:160])
        height = max(600, min(int(res["height"]) + 20, 16000))
        s = run(browser, ["--window-size=%d,%d" % (WIDTH, height), "--virtual-time-budget=10000",
                          "--screenshot=" + os.path.abspath(shot), "file://" + os.path.abspath(report)])
        if not os.path.exists(shot) or os.path.getsize(shot) < 1000:
            findings.append("no screenshot written (chromium exit %d)" % s.returncode)
    finally:
        os.unlink(probe_page)
    for x in findings:
        print("report_browser: %s: %s" % (report, x))
    print("report_browser: %s: %d image(s), %d table(s), page %d px high, %d finding(s); screenshot %s"
          % (report, res["images"], res["tables"], res["height"], len(findings), shot))
    if expect_fail:
        sys.exit(0 if findings else 1)
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
