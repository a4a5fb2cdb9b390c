#!/usr/bin/env python3
"""gw_loops.py — the gateway on one loop against the gateway on every core
(issue 19), in the same run, alternating A B B A: iolake-aio with
`--gw-loops 1` (A) and with the default (B, one loop per core).

    bench/gw_loops.py [--build build] [--workdir /dev/shm] [--rounds 2]
                      [--b-flags "--gw-loops 0"] [--json FILE] [--quick]
    bench/gw_loops.py --interleaved [--pairs 4] [--secs 4]

Each aio round: iolake-s3-bench PUT then GET cells of 4 KiB and 64 KiB at
32 in flight and 4 MiB at 8, then presigned GETs of the 4 KiB and 64 KiB
objects through wrk -t2 -c32 (the same client bench/e2e.py uses), and the
same wrk against nginx (Debian's, 2 workers) between the aio rounds.
Prints a table per cell with p50/p99/max per round and the load average
of each round: the machine is shared, so compare A and B within a pair of
rounds, not across runs. Nothing asserts; exit 0 unless something failed
to run.

--interleaved: both aios up at once with the same objects, and only the
wrk GETs, A B B A ... in short runs: each pair of runs sees the same
neighbours, which a loaded machine needs.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import e2e  # noqa: E402
from benchlib import BenchError  # noqa: E402

CELLS = [("4KiB", 4000, 32, 3), ("64KiB", 1500, 32, 3), ("4MiB", 60, 8, 3)]


def aio_round(a, bench, flags, out):
    r = {"load": benchlib.uptime(), "cells": {}, "wrk": {}}
    with benchlib.Aio(a.build, a.workdir, flags=flags) as aio:
        for size, n, conc, gets in CELLS:
            if a.quick:
                n = max(n // 4, 24)
            j = os.path.join(aio.dir, "cell.json")
            r["cells"][size] = benchlib.s3bench(bench, aio.ep, size, n, conc, gets, j,
                                                prefix="c%s/" % size, warmup_ops=min(200, n))
        work = tempfile.mkdtemp(prefix="wrk.", dir=a.workdir)
        try:
            for size in ("4KiB", "64KiB"):
                n = [c[1] for c in CELLS if c[0] == size][0]
                paths = e2e.presigned_paths(aio.ep, "bench", "c%s/" % size,
                                            min(1000, max(n // 4, 24) if a.quick else n))
                r["wrk"][size] = e2e.wrk(aio.ep, paths, a.secs, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        r["rss_kib"] = aio.rss_kib()
    r["load_end"] = benchlib.uptime()
    out.append(r)
    print("  aio %s done (load %s)" % (" ".join(flags) or "default", r["load_end"]),
          file=sys.stderr, flush=True)


def nginx_round(a, out):
    work = tempfile.mkdtemp(prefix="iolake-nginx.", dir=a.workdir)
    try:
        for size in ("4KiB", "64KiB"):
            os.makedirs(os.path.join(work, "root", "f", size))
            blob = os.urandom(e2e.SIZES[size])
            for i in range(1000):
                with open(os.path.join(work, "root", "f", size, "%08d" % i), "wb") as f:
                    f.write(blob)
        port = e2e.nginx_start(work)
        try:
            r = {}
            for size in ("4KiB", "64KiB"):
                r[size] = e2e.wrk("http://127.0.0.1:%d" % port,
                                  ["/f/%s/%08d" % (size, i) for i in range(1000)], a.secs, work)
            out.append(r)
        finally:
            e2e.nginx_stop(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def interleaved(a, bench):
    """Both aios up at once, the same objects in each; wrk GET runs of
    a.secs alternate A B B A ... a.pairs times per size: each pair sees
    the same neighbours. Prints every run and the medians."""
    fa, fb = shlex.split(a.a_flags), shlex.split(a.b_flags)
    res = {"A": {}, "B": {}}
    with benchlib.Aio(a.build, a.workdir, flags=fa) as A, \
            benchlib.Aio(a.build, a.workdir, flags=fb) as B:
        paths = {}
        for size, n in (("4KiB", 1000), ("64KiB", 1000)):
            for who, aio in (("A", A), ("B", B)):
                j = os.path.join(aio.dir, "cell.json")
                benchlib.s3bench(bench, aio.ep, size, n, 32, 1, j, prefix="c%s/" % size)
                paths[(who, size)] = e2e.presigned_paths(aio.ep, "bench", "c%s/" % size, n)
        work = tempfile.mkdtemp(prefix="wrk.", dir=a.workdir)
        try:
            for size in ("4KiB", "64KiB"):
                order = ["A", "B"]
                for _ in range(a.pairs):
                    for who in order:
                        aio = A if who == "A" else B
                        r = e2e.wrk(aio.ep, paths[(who, size)], a.secs, work)
                        r["load"] = benchlib.uptime().split()[0]
                        res[who].setdefault(size, []).append(r)
                    order.reverse()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("\n%s; interleaved wrk -t2 -c32 %d s runs, A = `%s`, B = `%s` (A B B A ...)\n" % (
        benchlib.machine(), a.secs, a.a_flags, a.b_flags or "default"))
    print("| GET | A ops/s (each run) | B ops/s (each run) | A median | B median | B / A | "
          "A p99 ms median | B p99 ms median | load 1-min |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for size in ("4KiB", "64KiB"):
        ra, rb = res["A"][size], res["B"][size]
        ma = statistics.median(r["ops_per_s"] for r in ra)
        mb = statistics.median(r["ops_per_s"] for r in rb)
        print("| %s | %s | %s | %s | %s | %.2f | %.1f | %.1f | %s |" % (
            size, " ".join("{:,.0f}".format(r["ops_per_s"]) for r in ra),
            " ".join("{:,.0f}".format(r["ops_per_s"]) for r in rb), "{:,.0f}".format(ma),
            "{:,.0f}".format(mb), mb / ma, statistics.median(r["p99_ms"] for r in ra),
            statistics.median(r["p99_ms"] for r in rb),
            " ".join(r["load"] for r in ra + rb)))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--rounds", type=int, default=2, help="ABBA pairs")
    ap.add_argument("--a-flags", default="--gw-loops 1")
    ap.add_argument("--b-flags", default="", help="B's extra aio flags (default: none, "
                    "so the default loop count)")
    ap.add_argument("--secs", type=int, default=4, help="each wrk run")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--interleaved", action="store_true",
                    help="only wrk GETs, both aios up at once, runs alternating")
    ap.add_argument("--pairs", type=int, default=4, help="--interleaved: ABBA pairs per size")
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    if a.interleaved:
        try:
            r = interleaved(a, bench)
        except BenchError as e:
            print("gw_loops: %s" % e, file=sys.stderr)
            return 1
        if a.json:
            with open(a.json, "w") as f:
                json.dump(r, f, indent=1)
        return 0
    res = {"machine": benchlib.machine(), "A": [], "B": [], "nginx": [],
           "a_flags": a.a_flags, "b_flags": a.b_flags}
    order = ["A", "B"]
    try:
        for _ in range(a.rounds):
            for who in order:
                aio_round(a, bench, shlex.split(a.a_flags if who == "A" else a.b_flags),
                          res[who])
                nginx_round(a, res["nginx"])
            order.reverse()
    except BenchError as e:
        print("gw_loops: %s" % e, file=sys.stderr)
        return 1
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("\n%s; A = `%s`, B = `%s`; rounds A B B A ..., load average per round\n" % (
        res["machine"], a.a_flags, a.b_flags or "default"))
    print("| cell | | " + " | ".join("%s%d" % (w, i + 1) for i in range(a.rounds)
                                     for w in "AB") + " |")
    print("|---|---|" + "---:|" * (2 * a.rounds))
    for size, _, conc, _ in CELLS:
        for ph in ("put", "get"):
            for k, fmt in (("ops_per_s", "{:,.0f}"), ("p50_ms", "{:.1f}"), ("p99_ms", "{:.1f}"),
                           ("max_ms", "{:.1f}")):
                row = []
                for i in range(a.rounds):
                    for w in "AB":
                        row.append(fmt.format(res[w][i]["cells"][size][ph][k]))
                print("| %s %s %s | %s | %s |" % (ph.upper(), size, "x%d" % conc, k,
                                                  " | ".join(row)))
    for size in ("4KiB", "64KiB"):
        for k, fmt in (("ops_per_s", "{:,.0f}"), ("p99_ms", "{:.1f}")):
            row = []
            for i in range(a.rounds):
                for w in "AB":
                    row.append(fmt.format(res[w][i]["wrk"][size][k]))
            print("| wrk GET %s | %s | %s |" % (size, k, " | ".join(row)))
    row = []
    for i in range(a.rounds):
        for w in "AB":
            row.append(res[w][i]["load"].split()[0] + "-" + res[w][i]["load_end"].split()[0])
    print("| load 1-min | start-end | %s |" % " | ".join(row))
    for size in ("4KiB", "64KiB"):
        ng = statistics.median(r[size]["ops_per_s"] for r in res["nginx"])
        a_ = statistics.median(r["wrk"][size]["ops_per_s"] for r in res["A"])
        b_ = statistics.median(r["wrk"][size]["ops_per_s"] for r in res["B"])
        print("\nwrk GET %s medians: nginx %s/s, A %s/s (%.2fx nginx), B %s/s (%.2fx nginx)" % (
            size, "{:,.0f}".format(ng), "{:,.0f}".format(a_), a_ / ng, "{:,.0f}".format(b_),
            b_ / ng))
    return 0


if __name__ == "__main__":
    sys.exit(main())
