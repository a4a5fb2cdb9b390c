#!/usr/bin/env python3
"""range_load_split.py — a hot small range split by load (issue 13,
--range-split-load): how long until the split, what it costs the requests
that overlap it, and what the load does after it.

A fresh iolake-aio with `--range-groups 2`, size splits off,
`--range-split-load LOAD --range-split-load-secs SECS`; one bucket with
KEYS small objects ("hot/00000" ..); then THREADS boto3 readers HEAD them
uniformly for RUN seconds (one range: all of it on one group's leader)
while the bench polls `iolake-admin range ls`. Prints a table: the time
from the load's start to the split's end, the requests per second and
p50/p99/max HEAD latency before the split, overlapping it and after it,
the split's sealed time (iolake_meta_range_sealed_ms), the REQ/S each
range showed at the end, errors and the machine's load. With
`--loads 0,LOAD` the first run has the load split off (a baseline).
Figures, never assertions.

  bench/range_load_split.py [--build build] [--workdir /dev/shm] [--loads 0,300]
                            [--secs 2] [--threads 6] [--keys 500] [--run 20]
"""
import argparse, json, os, re, subprocess, sys, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BUCKET = "hot"


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))] if v else 0.0


def metric(ep, name):
    text = urllib.request.urlopen(ep + "/metrics", timeout=10).read().decode()
    m = re.search(r"^%s(?:\{[^}]*\})? (\d+)" % name, text, re.M)
    return int(m.group(1)) if m else 0


def one(a, load):
    import boto3
    from botocore.config import Config
    flags = ["--range-groups", "2", "--range-split-objects", "0",
             "--range-split-load", str(load), "--range-split-load-secs", str(a.secs)]
    with benchlib.Aio(a.build, a.workdir, osd_size="1G", flags=flags) as aio:
        meta = open(os.path.join(aio.dir, "data", "meta", "rpc-addr")).read().strip()
        admin = [benchlib.build_bin(a.build, "iolake-admin"), "--meta", meta]
        time.sleep(2.0)   # the root leader makes the range groups
        cfg = Config(s3={"addressing_style": "path"}, max_pool_connections=2,
                     retries={"max_attempts": 1}, read_timeout=60, connect_timeout=10)

        def client():
            return boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=benchlib.AK,
                                aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                                config=cfg)
        s3 = client()
        s3.create_bucket(Bucket=BUCKET)
        keys = ["hot/%05d" % i for i in range(a.keys)]
        for k in keys:
            s3.put_object(Bucket=BUCKET, Key=k, Body=b"v" * 100)
        time.sleep(2.5)   # the PUTs' windows end
        stop, lat, errors = threading.Event(), [], []

        def reader(w):
            c = client()
            i = w
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    c.head_object(Bucket=BUCKET, Key=keys[(i * 7919) % len(keys)])
                except Exception as e:  # noqa: BLE001 (a figure: counted)
                    errors.append(repr(e))
                lat.append((t0, time.monotonic()))
                i += a.threads
        th = [threading.Thread(target=reader, args=(w,)) for w in range(a.threads)]
        start = time.monotonic()
        for t in th:
            t.start()
        moving, m0, m1, rows = False, None, None, []
        while time.monotonic() - start < a.run:
            ls = subprocess.run(admin + ["--json", "range", "ls", "--bucket", BUCKET],
                                capture_output=True, text=True)
            rows = json.loads(ls.stdout)["ranges"] if ls.returncode == 0 else rows
            now = time.monotonic()
            busy = any(x["move"] not in ("", "none") for x in rows)
            if busy and m0 is None:
                m0 = now
            if len(rows) >= 2 and not busy and m1 is None:
                m1 = now
                m0 = m0 or now
            time.sleep(0.25)
        stop.set()
        for t in th:
            t.join()
        end = time.monotonic()
        sealed = metric(aio.ep, "iolake_meta_range_sealed_ms")
        splits = metric(aio.ep, "iolake_meta_range_load_splits_total")

        def phase(lo, hi):
            v = [(e - s) * 1e3 for s, e in lat if s >= lo and e <= hi]
            span = max(hi - lo, 1e-9)
            return "%.0f | %.1f | %.1f | %.1f" % (len(v) / span, pct(v, 50), pct(v, 99),
                                                  max(v or [0]))
        if m1 is None:
            before, during, after = phase(start, end), "- | - | - | -", "- | - | - | -"
            took = "-"
        else:
            # "during": from one poll before the move was seen to its end
            lo = max(start, m0 - 0.25)
            before, during, after = phase(start, lo), phase(lo, m1), phase(m1, end)
            took = "%.1f" % (m1 - start)
        rps = "/".join(str(x["req_per_s"]) for x in rows)
        print("| %d | %d | %s | %s | %s | %s | %d | %s | %d | %s |" % (
            load, splits, took, before, during, after, sealed, rps, len(errors),
            benchlib.uptime()), flush=True)
        if errors:
            print("  errors: %s" % errors[:3], flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--loads", default="0,300")
    ap.add_argument("--secs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--keys", type=int, default=500)
    ap.add_argument("--run", type=float, default=20.0)
    a = ap.parse_args()
    print("| --range-split-load | load splits | split done s | before: req/s | p50 ms | p99 ms "
          "| max ms | during: req/s | p50 ms | p99 ms | max ms | after: req/s | p50 ms "
          "| p99 ms | max ms | sealed ms | REQ/S per range at the end | errors | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
          "---:|---|")
    for load in [int(x) for x in a.loads.split(",")]:
        one(a, load)


if __name__ == "__main__":
    main()
