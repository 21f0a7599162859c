#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium (Debian's chromium).

Runs the MLP recipe as a seed ensemble of 2 members (plots on) with the real
`deep500 run`, then opens three pages from file:// in headless Chromium:
the ensemble's report.html that `run` wrote, `deep500 report --compare` of
the two members and `deep500 report --history`. From each page's DOM
(--dump-dom) it checks what results.json and the results folder say must
be there: one verdict row per criterion with its PASS or FAIL, one metric
row per metric, one inline <svg> per plot file, the reproduce command, and
no <script>. Chromium's network log (--log-net-log) must show no request
other than the file itself: the page opens with no server and no network.
Finally a screenshot of the run's page (PNG, checked to be a real image).

    report_browser_test.py DEEP500 SOURCE_DIR WORK_DIR [--screenshot-out FILE]

Exit 0 when every check holds, 1 otherwise, 77 (SKIPPED) when Chromium is
not installed (scripts/packages.txt installs it).
"""
import argparse
import glob
import html.parser
import json
import os
import shutil
import subprocess
import sys


class Dom(html.parser.HTMLParser):
    """Counts what the checks need: rows per table class, svg elements,
    scripts, and the text of <pre> elements."""

    def __init__(self):
        super().__init__()
        self.rows = {}
        self.tables = []
        self.svgs = 0
        self.scripts = 0
        self.badges = []
        self.pre = []
        self._in_badge = False
        self._in_pre = False
        self._in_tbody = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append(a.get("class", ""))
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._in_tbody and self.tables:
            self.rows[self.tables[-1]] = self.rows.get(self.tables[-1], 0) + 1
        elif tag == "svg":
            self.svgs += 1
        elif tag == "script":
            self.scripts += 1
        elif tag == "span" and "badge" in a.get("class", ""):
            self._in_badge = True
            self.badges.append("")
        elif tag == "pre":
            self._in_pre = True
            self.pre.append("")

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_tbody = False
        elif tag == "span":
            self._in_badge = False
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data):
        if self._in_badge:
            self.badges[-1] += data
        if self._in_pre:
            self.pre[-1] += data


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(browser_path, work, page, name, extra):
    """Runs headless Chromium on file://PAGE; its stdout and the URLs of its network log."""
    netlog = os.path.join(work, f"{name}-netlog.json")
    command = [browser_path, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--no-first-run", "--no-default-browser-check", "--disable-sync",
               f"--user-data-dir={os.path.join(work, 'profile-' + name)}",
               f"--log-net-log={netlog}", "--net-log-capture-mode=Everything", *extra,
               "file://" + os.path.abspath(page)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: chromium exited {done.returncode} on {page}: {done.stderr[-2000:]}")
    return done.stdout, requested_urls(netlog)


def requested_urls(netlog):
    """The URLs the page requested: those of the network log's requests
    with an initiator (the browser's own background requests, e.g. its
    update checks, have none: "not an origin"). An unfinished log is
    closed first."""
    text = open(netlog, encoding="utf-8", errors="replace").read().rstrip().rstrip(",")
    if not text.endswith("}"):
        text += "]}"
    try:
        log = json.loads(text)
    except ValueError:
        log = json.loads(text + "]}")
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = set()
    for event in log.get("events", []):
        params = event.get("params") or {}
        if (event.get("type") == start_job and "url" in params
                and params.get("initiator") != "not an origin"):
            urls.add(params["url"])
    return urls


class Checks:
    def __init__(self):
        self.failed = 0

    def expect(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        self.failed += 0 if ok else 1


def check_page(checks, browser_path, work, page, name, expected):
    dom_text, urls = browser(browser_path, work, page, name, ["--dump-dom"])
    dom = Dom()
    dom.feed(dom_text)
    remote = sorted(u for u in urls if not u.startswith(("file:", "data:", "about:", "chrome:")))
    checks.expect(not remote, f"{name}: no network request ({remote[:3]})")
    checks.expect(dom.scripts == 0, f"{name}: no <script> ({dom.scripts})")
    for table, rows in expected.get("rows", {}).items():
        checks.expect(dom.rows.get(table, 0) == rows,
                      f"{name}: {rows} rows in table.{table} ({dom.rows.get(table, 0)})")
    if "svgs" in expected:
        checks.expect(dom.svgs == expected["svgs"], f"{name}: {expected['svgs']} inline SVG plots ({dom.svgs})")
    for badge in expected.get("badges", []):
        checks.expect(badge in dom.badges, f"{name}: a {badge} badge")
    for text in expected.get("pre", []):
        checks.expect(any(text in p for p in dom.pre), f"{name}: shows '{text}'")
    return dom


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("deep500")
    parser.add_argument("source")
    parser.add_argument("work")
    parser.add_argument("--screenshot-out", default="")
    a = parser.parse_args()
    browser_path = chromium()
    if not browser_path:
        print("SKIPPED: chromium is not installed (Debian package chromium)")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    results = os.path.join(a.work, "results")
    run = subprocess.run([a.deep500, "run", os.path.join(a.source, "recipes", "fashion_mnist_mlp.yaml"),
                          "--output-dir", results, "--no-progress", "--set", "ensemble.repeat=2"],
                         capture_output=True, text=True, timeout=600)
    if run.returncode not in (0, 1):
        print(run.stdout[-3000:])
        raise SystemExit(f"FAIL: deep500 run exited {run.returncode}")
    history = json.loads(subprocess.run([a.deep500, "history", "--json", "--output-dir", results],
                                        capture_output=True, text=True, check=True).stdout)
    ensemble = [r for r in history if r["members"]][0]
    run_dir = ensemble["results_dir"]
    recorded = json.load(open(os.path.join(run_dir, "results.json")))
    checks = Checks()

    # The network check can fail: a page that loads an image and a style
    # sheet from a server is caught.
    control = os.path.join(a.work, "control.html")
    with open(control, "w") as f:
        f.write('<html><head><link rel="stylesheet" href="http://127.0.0.1:9/probe.css"></head>'
                '<body><img src="http://127.0.0.1:9/probe.png"></body></html>')
    _, urls = browser(browser_path, a.work, control, "control", ["--dump-dom"])
    checks.expect({"http://127.0.0.1:9/probe.css", "http://127.0.0.1:9/probe.png"} <= urls,
                  f"control: a page's own requests are seen ({sorted(urls)})")

    plots = [p for p in glob.glob(os.path.join(run_dir, "*.svg"))]
    checks.expect(len(plots) >= 1, f"the run drew plots ({len(plots)})")
    page = os.path.join(run_dir, "report.html")
    checks.expect(os.path.exists(page), "deep500 run wrote report.html beside results.json")
    check_page(checks, browser_path, a.work, page, "run", {
        "rows": {"verdicts": len(recorded["criteria"]), "metrics": len(recorded["metrics"]),
                 "members": len(ensemble["members"])},
        "svgs": len(plots),
        "badges": ["PASS" if c["passed"] else "FAIL" for c in recorded["criteria"]] + [recorded["status"]],
        "pre": ["deep500 reproduce " + run_dir]})

    first, second = ensemble["members"]
    compare = os.path.join(a.work, "compare.html")
    subprocess.run([a.deep500, "report", "--compare", str(first), str(second), "--output-dir", results,
                    "--out", compare], check=True, capture_output=True)
    both = json.load(open(os.path.join(history[0]["results_dir"], "results.json")))
    dom = check_page(checks, browser_path, a.work, compare, "compare", {
        "rows": {"comparison": len([m for m in both["metrics"].values() if "value" in m])}})
    checks.expect(dom.svgs >= 1, f"compare: the two runs' plots inline ({dom.svgs})")

    history_page = os.path.join(a.work, "history.html")
    subprocess.run([a.deep500, "report", "--history", "--output-dir", results, "--out", history_page],
                   check=True, capture_output=True)
    check_page(checks, browser_path, a.work, history_page, "history", {"rows": {"runs": len(history)}})

    shot = os.path.join(a.work, "report.png")
    browser(browser_path, a.work, page, "screenshot", [f"--screenshot={shot}", "--window-size=1280,2600",
                                                         "--hide-scrollbars"])
    with open(shot, "rb") as f:
        png = f.read()
    checks.expect(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000,
                  f"a screenshot of the run's page ({len(png)} bytes)")
    if a.screenshot_out:
        shutil.copyfile(shot, a.screenshot_out)
    print(f"{checks.failed} checks failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
