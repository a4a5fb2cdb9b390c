#!/usr/bin/env python3
"""sse_abba.py — what SSE-S3 costs a PUT and a GET (issue 18): one fresh
iolake-aio with two buckets, `plain` and `enc` (default encryption AES256,
so every object iolake-s3-bench writes there is SSE-S3 and every GET
decrypts), cells of 64 KiB and 4 MiB objects run alternately
plain enc enc plain ... so that a machine whose load drifts hurts both
alike. Prints a markdown table (ops/s, MiB/s, p50, p99, max) per run and
the medians per side. Figures, never assertions.

  bench/sse_abba.py [--build build] [--workdir /dev/shm] [--rounds 2]
                    [--small 2000] [--large 120] [--concurrency 8]
"""
import argparse, os, statistics, sys

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--small", type=int, default=2000, help="64 KiB objects per cell")
    ap.add_argument("--large", type=int, default=120, help="4 MiB objects per cell")
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    print("machine: %s; load %s" % (benchlib.machine(), benchlib.uptime()))
    rows = []
    with benchlib.Aio(a.build, a.workdir, osd_size="8G") as aio:
        s3 = boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=benchlib.AK,
                          aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        for b in ("plain", "enc"):
            s3.create_bucket(Bucket=b)
        s3.put_bucket_encryption(Bucket="enc", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        order = []
        for r in range(a.rounds):
            order += ["plain", "enc", "enc", "plain"] if r % 2 == 0 else ["enc", "plain", "plain", "enc"]
        print("| bucket | size | phase | ops/s | MiB/s | p50 ms | p99 ms | max ms | load |")
        print("|---|---|---|---:|---:|---:|---:|---:|---|")
        for i, b in enumerate(order):
            for size, n in (("64KiB", a.small), ("4MiB", a.large)):
                j = os.path.join(aio.dir, "cell.json")
                res = benchlib.s3bench(bench, aio.ep, size, n, a.concurrency, 1, j, bucket=b,
                                       prefix="r%d-%s/" % (i, size), warmup_ops=min(100, n),
                                       extra=["--no-create-bucket"])
                for ph in ("put", "get"):
                    x = res[ph]
                    rows.append((b, size, ph, x["ops_per_s"], x["mib_per_s"], x["p50_ms"],
                                 x["p99_ms"], x["max_ms"]))
                    print("| %s | %s | %s | %.0f | %.1f | %.2f | %.2f | %.1f | %s |" % (
                        rows[-1] + (benchlib.uptime(),)), flush=True)
    print()
    print("| bucket | size | phase | median ops/s | median MiB/s | median p50 ms | median p99 ms | worst max ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for size in ("64KiB", "4MiB"):
        for ph in ("put", "get"):
            for b in ("plain", "enc"):
                sel = [r for r in rows if r[0] == b and r[1] == size and r[2] == ph]
                print("| %s | %s | %s | %.0f | %.1f | %.2f | %.2f | %.1f |" % (
                    b, size, ph, statistics.median(r[3] for r in sel),
                    statistics.median(r[4] for r in sel), statistics.median(r[5] for r in sel),
                    statistics.median(r[6] for r in sel), max(r[7] for r in sel)))


if __name__ == "__main__":
    main()
