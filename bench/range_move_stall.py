#!/usr/bin/env python3
"""range_move_stall.py — how long PUTs into a range wait while the range is
split (issue 13, moves that seal only for the tail).

A fresh iolake-aio with `--range-groups 2` (automatic splits off); one
bucket filled with N 4 KiB objects by iolake-s3-bench (keys f/00000000 ..);
then a writer at 32 in flight PUTs new 4 KiB keys into the right half (the
span that moves) while `iolake-admin range split BUCKET f/<N/2>` runs in the
middle. Prints, per N, p50/p99/max of the PUTs that overlapped the move,
their count, and the move's duration (the admin command's wall time).
Figures, never assertions.

  bench/range_move_stall.py [--build build] [--workdir /dev/shm] [--objects 20000,100000]
"""
import argparse, json, os, statistics, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BUCKET = "stall"
INFLIGHT = 32


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))] if v else 0.0


def writer(s3, n, stop, lat, errors, wid):
    body = b"x" * 4096
    i = 0
    while not stop.is_set():
        # right half of the key space: f/<n/2 + ...>-w<wid>-<i>
        key = "f/%08d-w%02d-%06d" % (n // 2 + (i * 7919 + wid) % (n // 2), wid, i)
        t0 = time.monotonic()
        try:
            s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        except Exception as e:  # noqa: BLE001 (a figure: counted)
            errors.append(repr(e))
        t1 = time.monotonic()
        lat.append((t0, t1))
        i += 1


def one(a, bench, n):
    import boto3
    from botocore.config import Config
    with benchlib.Aio(a.build, a.workdir, osd_size="4G",
                      flags=["--range-groups", "2", "--range-split-objects", "0"]) as aio:
        meta = open(os.path.join(aio.dir, "data", "meta", "rpc-addr")).read().strip()
        admin = [benchlib.build_bin(a.build, "iolake-admin"), "--meta", meta]
        time.sleep(2.0)   # the root leader makes the range groups
        j = os.path.join(aio.dir, "fill.json")
        subprocess.run([bench, "--endpoint", aio.ep, "--access-key", benchlib.AK,
                        "--secret-key", benchlib.SK, "--bucket", BUCKET, "--size", "4KiB",
                        "--objects", str(n), "--concurrency", "32", "--gets", "0",
                        "--prefix", "f/", "--json", j], check=True,
                       stdout=subprocess.DEVNULL)
        cfg = Config(max_pool_connections=4, retries={"max_attempts": 1},
                     read_timeout=120, connect_timeout=10)
        clients = [boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=benchlib.AK,
                                aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                                config=cfg) for _ in range(INFLIGHT)]
        stop, lat, errors = threading.Event(), [], []
        th = [threading.Thread(target=writer, args=(clients[w], n, stop, lat, errors, w))
              for w in range(INFLIGHT)]
        for t in th:
            t.start()
        time.sleep(3.0)
        m0 = time.monotonic()
        r = subprocess.run(admin + ["range", "split", BUCKET, "f/%08d" % (n // 2)],
                           capture_output=True, text=True)
        # iolake-admin gives up after its deadline; the root leader's
        # driver finishes the move: done when no range of the bucket moves
        while True:
            ls = subprocess.run(admin + ["--json", "range", "ls", "--bucket", BUCKET],
                                capture_output=True, text=True)
            rows = json.loads(ls.stdout)["ranges"] if ls.returncode == 0 else []
            if len(rows) == 2 and all(x["move"] in ("", "-", "none") for x in rows):
                break
            time.sleep(0.2)
        m1 = time.monotonic()
        time.sleep(2.0)
        stop.set()
        for t in th:
            t.join()
        if r.returncode:
            print("  (iolake-admin: %s; the root leader finished the move)" % r.stderr.strip(),
                  flush=True)
        during = [(e - s) * 1e3 for s, e in lat if e >= m0 and s <= m1]
        before = [(e - s) * 1e3 for s, e in lat if e < m0]
        print("| %d | %.2f | %d | %.1f | %.1f | %.1f | %.1f | %d | %s |" % (
            n, m1 - m0, len(during), pct(during, 50), pct(during, 99), max(during or [0]),
            statistics.median(before) if before else 0, len(errors), benchlib.uptime()),
            flush=True)
        if errors:
            print("  errors: %s" % errors[:3], flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--objects", default="20000,100000")
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    print("| records | move s | PUTs during | p50 ms | p99 ms | max ms | p50 before ms "
          "| errors | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in [int(x) for x in a.objects.split(",")]:
        one(a, bench, n)


if __name__ == "__main__":
    main()
