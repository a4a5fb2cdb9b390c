#!/usr/bin/env python3
"""regression.py — the CI performance regression check: does `head` keep
at least 85% of `base`'s end-to-end throughput?

    bench/regression.py --base DIR --head DIR --workdir TMPFS [--runs 5]
                        [--out perf.json] [--threshold 0.85]
                        [--head-flags "--debug-fault spin=170,method=PutShard"]

DIR are two build directories (each with iolake-aio and iolake-s3-bench;
this script builds nothing). Runs alternate base, head, head, base, base,
head, ... until each build ran --runs times; every run is a fresh
iolake-aio (six OSDs, 4+2, sparse OSD files) with its data on TMPFS,
removed after the run. A run is two cells driven by base's
iolake-s3-bench (the client stays the same on both sides):

    64 KiB: warm-up, 6,000 PUTs at 32 in flight, each object GET 4 times
    4 MiB:  warm-up, 400 PUTs at 8 in flight, each object GET 3 times

For each of the four cells (PUT/GET x 64 KiB/4 MiB) head's median ops/s is
divided by base's; any ratio below --threshold fails. Prints a markdown
table (medians with +- half the range, the ratio with a pass/fail mark,
p99 base -> head, which is not judged) and writes every run's figures to
--out. Exit 0: pass; 1: a cell regressed; 2: nothing could be measured
(bad arguments, a work dir under /dev or not on tmpfs, a run that failed).

--head-flags adds iolake-aio flags to head's runs only: with the RPC fault
layer's spin= (common/rpc_fault.h) the same build plays a head that spends
more CPU per PUT, which is how the check is shown to fail a slower head.

TMPFS must be a tmpfs outside /dev (an OSD takes a path under /dev for a
block device): mount -t tmpfs -o size=8g tmpfs /mnt/iolake-bench
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError  # noqa: E402

CELLS = [("put", "64k"), ("get", "64k"), ("put", "4m"), ("get", "4m")]
LABEL = {"64k": "64 KiB", "4m": "4 MiB"}


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="build dir of the base (e.g. main)")
    ap.add_argument("--head", required=True, help="build dir of the change")
    ap.add_argument("--workdir", required=True, help="a tmpfs outside /dev for the runs' data")
    ap.add_argument("--runs", type=int, default=5, help="runs per build (default 5)")
    ap.add_argument("--out", default="perf.json", help="every run's figures (default perf.json)")
    ap.add_argument("--threshold", type=float, default=0.85,
                    help="lowest head/base ratio that passes (default 0.85)")
    ap.add_argument("--bench", help="iolake-s3-bench to drive both (default: base's)")
    ap.add_argument("--head-flags", default="",
                    help="more iolake-aio flags for head's runs only (split on spaces)")
    # Test knobs: smaller runs for the integration test; not for CI.
    h = argparse.SUPPRESS
    ap.add_argument("--small-objects", type=int, default=6000, help=h)
    ap.add_argument("--large-objects", type=int, default=400, help=h)
    ap.add_argument("--osd-size", default="2G", help=h)
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    return a


def run_plan(n):
    """base, head, head, base, base, head, ...: n of each."""
    order, pair = [], ("base", "head")
    while len(order) < 2 * n:
        order.extend(pair)
        pair = pair[::-1]
    return order[:2 * n]


def one_run(a, build, workdir, idx):
    small = max(1, a.small_objects)
    large = max(1, a.large_objects)
    rec = {"index": idx, "build": build, "dir": os.path.abspath(getattr(a, build)),
           "load_before": benchlib.uptime(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                      time.gmtime())}
    flags = a.head_flags.split() if build == "head" else []
    with benchlib.Aio(getattr(a, build), workdir, osd_size=a.osd_size, flags=flags) as aio:
        j = os.path.join(aio.dir, "cell.json")
        c = benchlib.s3bench(a.bench, aio.ep, "64KiB", small, 32, 4, j, prefix="s/",
                             warmup_ops=min(500, small))
        rec["put_64k"], rec["get_64k"] = c["put"], c["get"]
        c = benchlib.s3bench(a.bench, aio.ep, "4MiB", large, 8, 3, j, prefix="l/",
                             warmup_ops=min(16, large))
        rec["put_4m"], rec["get_4m"] = c["put"], c["get"]
        rec["rss_kib"], rec["rss_peak_kib"] = aio.rss_kib()
    rec["load_after"] = benchlib.uptime()
    return rec


def summarize(runs, threshold):
    s = {}
    for op, size in CELLS:
        key = "%s_%s" % (op, size)
        cell = {}
        for b in ("base", "head"):
            v = [r[key]["ops_per_s"] for r in runs if r["build"] == b]
            p = [r[key]["p99_ms"] for r in runs if r["build"] == b]
            cell[b] = {"median_ops_per_s": statistics.median(v),
                       "half_range": (max(v) - min(v)) / 2, "ops_per_s": v,
                       "median_p99_ms": statistics.median(p)}
        cell["ratio"] = cell["head"]["median_ops_per_s"] / cell["base"]["median_ops_per_s"]
        cell["pass"] = cell["ratio"] >= threshold
        s[key] = cell
    return s


def table(s, threshold):
    out = ["| cell | base ops/s | head ops/s | head ÷ base (≥ %.2f) | p99 ms base → head |"
           % threshold, "|---|---:|---:|---:|---:|"]
    for op, size in CELLS:
        c = s["%s_%s" % (op, size)]
        out.append("| %s %s | %s ± %s | %s ± %s | %.3f %s | %.1f → %.1f |" % (
            op.upper(), LABEL[size],
            benchlib.fmt_int(c["base"]["median_ops_per_s"]), benchlib.fmt_int(c["base"]["half_range"]),
            benchlib.fmt_int(c["head"]["median_ops_per_s"]), benchlib.fmt_int(c["head"]["half_range"]),
            c["ratio"], "✅ pass" if c["pass"] else "❌ FAIL",
            c["base"]["median_p99_ms"], c["head"]["median_p99_ms"]))
    return "\n".join(out)


def main(argv):
    a = parse(argv)
    try:
        workdir = benchlib.check_workdir(a.workdir)
        for b in (a.base, a.head):
            benchlib.build_bin(b, "iolake-aio")
        a.bench = a.bench or benchlib.build_bin(a.base, "iolake-s3-bench")
    except BenchError as e:
        print("regression.py: %s" % e, file=sys.stderr)
        return 2
    doc = {"tool": "bench/regression.py", "schema": 1, "threshold": a.threshold,
           "config": {"runs": a.runs, "base": os.path.abspath(a.base),
                      "head": os.path.abspath(a.head), "bench": a.bench, "workdir": workdir,
                      "small": {"size": "64KiB", "objects": a.small_objects, "concurrency": 32,
                                "gets": 4},
                      "large": {"size": "4MiB", "objects": a.large_objects, "concurrency": 8,
                                "gets": 3}},
           "machine": benchlib.machine(), "load_before": benchlib.uptime(), "runs": []}
    plan = run_plan(a.runs)
    for i, b in enumerate(plan):
        try:
            r = one_run(a, b, workdir, i)
        except BenchError as e:
            print("regression.py: run %d (%s): %s" % (i + 1, b, e), file=sys.stderr)
            return 2
        doc["runs"].append(r)
        print("run %2d/%d %s: PUT 64K %s/s, GET 64K %s/s, PUT 4M %s/s, GET 4M %s/s "
              "(rss %d MiB, load %s)" % (
                  i + 1, len(plan), b, *(benchlib.fmt_int(r["%s_%s" % c]["ops_per_s"])
                                         for c in CELLS),
                  r["rss_peak_kib"] // 1024, r["load_after"]), file=sys.stderr, flush=True)
    doc["load_after"] = benchlib.uptime()
    doc["summary"] = summarize(doc["runs"], a.threshold)
    doc["pass"] = all(c["pass"] for c in doc["summary"].values())
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    print(table(doc["summary"], a.threshold))
    print("\n%d runs per build; load average before %s, after %s; %s" % (
        a.runs, doc["load_before"], doc["load_after"],
        "PASS" if doc["pass"] else "FAIL: a cell is below %.2f of base" % a.threshold))
    return 0 if doc["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
