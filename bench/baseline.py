#!/usr/bin/env python3
"""baseline.py — bench/baseline.sh's body (see there): the make-bench
cells against another S3 endpoint and against a fresh iolake-aio, side by
side. Exit 2 when something could not be measured."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError, fmt_int  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def plan(quick):
    return [("4KiB", 1000 if quick else 5000, 32, 4), ("64KiB", 500 if quick else 2000, 32, 4),
            ("4MiB", 24 if quick else 100, 8, 3)]


def run_cells(bench, ep, ak, sk, bucket, quick, jdir, extra=()):
    out = {}
    for size, n, conc, gets in plan(quick):
        r = benchlib.s3bench(bench, ep, size, n, conc, gets, os.path.join(jdir, "cell.json"),
                             ak=ak, sk=sk, bucket=bucket, prefix="baseline/%s/" % size,
                             warmup_ops=min(200, n), extra=extra)
        out[size] = dict(r, concurrency=conc, load=benchlib.uptime())
        print("  %s %s done (load %s)" % (ep, size, out[size]["load"]), file=sys.stderr,
              flush=True)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description="make-bench cells: another S3 store vs iolake-aio")
    ap.add_argument("--endpoint", required=True, help="the other store's S3 URL")
    ap.add_argument("--access-key", required=True)
    ap.add_argument("--secret-key", required=True)
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--bucket", default="iolake-baseline")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--workdir", help="tmpfs for iolake-aio (default: mount one, root)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="write both sides' figures here")
    a = ap.parse_args(argv)
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": benchlib.machine(), "load_before": benchlib.uptime()}
    try:
        bench = benchlib.build_bin(a.build, "iolake-s3-bench")
        import tempfile
        with tempfile.TemporaryDirectory() as jdir:
            out["other"] = run_cells(bench, a.endpoint, a.access_key, a.secret_key, a.bucket,
                                     a.quick, jdir, extra=["--region", a.region])

        def ours(workdir):
            with benchlib.Aio(a.build, workdir) as aio:
                out["iolake"] = run_cells(bench, aio.ep, benchlib.AK, benchlib.SK, "bench",
                                          a.quick, aio.dir)
        if a.workdir:
            ours(benchlib.check_workdir(a.workdir))
        else:
            with benchlib.tmpfs_mount() as d:
                ours(d)
    except BenchError as e:
        print("baseline: %s" % e, file=sys.stderr)
        return 2
    out["load_after"] = benchlib.uptime()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print("\n%s; load average %s -> %s; other = %s\n" % (out["date"], out["load_before"],
                                                          out["load_after"], a.endpoint))
    print("| cell | in flight | other ops/s | other MiB/s | other p99 ms | IOLake ops/s "
          "| IOLake MiB/s | IOLake p99 ms | IOLake ÷ other |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, _, conc, _ in plan(a.quick):
        for op in ("put", "get"):
            o, i = out["other"][size][op], out["iolake"][size][op]
            print("| %s %s | %d | %s | %.1f | %.1f | %s | %.1f | %.1f | %.2f |" % (
                op.upper(), size, conc, fmt_int(o["ops_per_s"]), o["mib_per_s"], o["p99_ms"],
                fmt_int(i["ops_per_s"]), i["mib_per_s"], i["p99_ms"],
                i["ops_per_s"] / o["ops_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
