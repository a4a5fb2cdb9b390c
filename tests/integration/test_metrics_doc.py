#!/usr/bin/env python3
"""test_metrics_doc.py — docs/metrics.md and the Grafana dashboard stay true.

  - every metric docs/metrics.md names (a table row starting with
    `iolake_...`) is a family on a live iolake-aio's /metrics, except rows
    marked "(TLS only)" (this aio serves plain HTTP);
  - every iolake_ family on that /metrics is named in docs/metrics.md;
  - infra/grafana/iolake.json is valid JSON, a dashboard with panels, and
    every iolake_ metric its queries use (a histogram's _bucket/_sum/_count
    series by their family) is in docs/metrics.md; each panel has a title
    and at least one query.
"""
import json, os, re, sys, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "metrics.md")
DASH = os.path.join(ROOT, "infra", "grafana", "iolake.json")


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  ", what)


def doc_names():
    names, tls = set(), set()
    with open(DOC) as f:
        for ln in f:
            m = re.match(r"\|\s*`(iolake_\w+)`", ln)
            if m:
                (tls if "(TLS only)" in ln else names).add(m.group(1))
    return names, tls


def family(name, known):
    """The documented family a series name belongs to."""
    if name in known:
        return name
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    return base if base in known else name


def main():
    names, tls = doc_names()
    check(len(names) > 50, "docs/metrics.md names %d metrics (+%d TLS only)" % (len(names), len(tls)))

    aio = Aio()
    try:
        aio.start()
        text = urllib.request.urlopen(aio.ep + "/metrics", timeout=10).read().decode()
    finally:
        aio.close()
    live = set(re.findall(r"^# TYPE (iolake_\w+) ", text, re.M))
    check(len(live) > 50, "a live aio's /metrics has %d iolake_ families" % len(live))
    missing = sorted(names - live)
    check(not missing, "every metric the doc names is on /metrics (missing: %s)" % missing)
    undocumented = sorted(live - names - tls)
    check(not undocumented, "every iolake_ family on /metrics is in the doc (undocumented: %s)"
          % undocumented)

    with open(DASH) as f:
        dash = json.load(f)
    panels = []

    def walk(ps):
        for p in ps:
            if p.get("type") == "row":
                walk(p.get("panels", []))
            else:
                panels.append(p)
    walk(dash.get("panels", []))
    check(dash.get("title") and panels, "iolake.json is a dashboard with %d panels" % len(panels))
    known = names | tls
    used = set()
    for p in panels:
        exprs = [t.get("expr", "") for t in p.get("targets", [])]
        check(p.get("title") and exprs and all(exprs),
              "panel %r has a title and %d queries" % (p.get("title"), len(exprs)))
        for e in exprs:
            for n in re.findall(r"\b(iolake_\w+)", e):
                used.add(family(n, known))
    unknown = sorted(used - known)
    check(not unknown, "every metric the dashboard queries is in docs/metrics.md (%d used; "
          "unknown: %s)" % (len(used), unknown))
    print("PASS test_metrics_doc")


if __name__ == "__main__":
    main()
