#!/usr/bin/env python3
"""meta_scale.py — does meta stay fast and bounded as objects pile up?
(issue 13, must-shows 1, 2 and 5). Prints figures; asserts nothing.

A fresh iolake-aio on a work dir ON DISK (meta's RocksDB and the OSD files
flush for real), then, in one bucket:
  1. PUT phases of 4 KiB objects at --concurrency, each its own key prefix
     (p00/, p01/, ...), until --objects are stored. After each phase: PUT/s,
     p50, p99 and max latency, the process's RSS (current and peak; aio is
     meta, six OSDs and the gateway in one process, so meta's share is at
     most that), meta's snapshots and Raft last index.
  2. Listing times (median of --list-reps) of 1,000 keys without a
     delimiter (from the start, and from the middle with StartAfter), with
     delimiter "/" at the root (one common prefix per phase, each over
     --objects / phases keys) and with delimiter "/" under one phase's
     prefix: once after the first 10,000 objects, once at the end.
  3. A GET-only phase of --gets reads over the last phase's objects, with
     meta's Raft last index, barriers, ReadIndex rounds and snapshots read
     from /metrics before and after.

  bench/meta_scale.py [--build build] [--workdir /var/tmp] [--objects 2000000]
                      [--phases 10] [--concurrency 32] [--gets 100000]

The table goes to stdout (markdown) and --json FILE; the figures in
docs/performance.md "Meta at scale" come from this script.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BUCKET = "scale"


def metrics(ep):
    """The meta series this script follows, summed over label sets."""
    want = ("iolake_meta_snapshots_total", "iolake_meta_raft_last_index",
            "iolake_meta_read_barriers_total", "iolake_meta_read_rounds_total",
            "iolake_meta_snapshot_installs_total")
    out = dict.fromkeys(want, 0.0)
    text = urllib.request.urlopen(ep + "/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if m and m.group(1) in out:
            out[m.group(1)] += float(m.group(3))
    return out


def put_phase(bench, ep, prefix, objects, conc, create, workdir):
    jpath = os.path.join(workdir, "phase.json")
    extra = ["--prefix", prefix, "--warmup-ops", "0"]
    if not create:
        extra.append("--no-create-bucket")
    cmd = [bench, "--endpoint", ep, "--access-key", benchlib.AK, "--secret-key", benchlib.SK,
           "--bucket", BUCKET, "--size", "4KiB", "--objects", str(objects), "--concurrency",
           str(conc), "--gets", "0", "--json", jpath] + extra
    return run_bench(cmd, jpath, "put")


def get_phase(bench, ep, prefix, objects, gets, conc, workdir):
    jpath = os.path.join(workdir, "get.json")
    per = max(1, -(-gets // objects))
    cmd = [bench, "--endpoint", ep, "--access-key", benchlib.AK, "--secret-key", benchlib.SK,
           "--bucket", BUCKET, "--size", "4KiB", "--objects", str(objects), "--skip-put",
           "--no-create-bucket", "--prefix", prefix, "--gets", str(per), "--concurrency",
           str(conc), "--json", jpath]
    return run_bench(cmd, jpath, "get")


def run_bench(cmd, jpath, phase):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode or not os.path.exists(jpath):
        raise benchlib.BenchError("iolake-s3-bench exited %d:\n%s" % (r.returncode, r.stdout[-2000:]))
    with open(jpath) as f:
        d = json.load(f)
    for p in d["phases"]:
        if p["name"] == phase:
            lat = p["latency_us"]
            return {"ops": p["ops"], "errors": p["errors"], "ops_per_s": p["ops_per_s"],
                    "p50_ms": lat["p50"] / 1e3, "p99_ms": lat["p99"] / 1e3,
                    "max_ms": lat["max"] / 1e3, "elapsed_s": p["elapsed_s"]}
    raise benchlib.BenchError("no %s phase in %s" % (phase, jpath))


def list_times(s3, port, reps, mid_key, one_prefix):
    """Median and max milliseconds of each listing kind (1,000 keys a page),
    timed as one HTTP round trip of a presigned ListObjectsV2 on a kept-alive
    connection (the client does not parse the XML: it would dominate)."""
    import http.client
    kinds = {
        "flat": dict(MaxKeys=1000),
        "flat_mid": dict(MaxKeys=1000, StartAfter=mid_key),
        "delim_root": dict(MaxKeys=1000, Delimiter="/"),
        "delim_prefix": dict(MaxKeys=1000, Delimiter="/", Prefix=one_prefix),
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    out = {}
    for name, kw in kinds.items():
        url = s3.generate_presigned_url("list_objects_v2", Params=dict(Bucket=BUCKET, **kw),
                                        ExpiresIn=3600)
        path = url[url.index("/", len("http://")):]
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            ts.append(time.perf_counter() - t0)
            if resp.status != 200:
                raise benchlib.BenchError("list %s: HTTP %d %s" % (name, resp.status, body[:300]))
        n = body.count(b"<Key>") + body.count(b"<CommonPrefixes>")
        out[name] = {"median_ms": statistics.median(ts) * 1e3, "max_ms": max(ts) * 1e3,
                     "entries": n}
    conn.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--objects", type=int, default=2000000)
    ap.add_argument("--phases", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--gets", type=int, default=100000)
    ap.add_argument("--list-reps", type=int, default=20)
    ap.add_argument("--osd-size", default="8G")
    ap.add_argument("--aio-flags", default="", help="extra iolake-aio flags, space separated")
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args()
    import boto3
    from botocore.config import Config

    workdir = benchlib.check_workdir(a.workdir, need_tmpfs=False)
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    aio = benchlib.Aio(a.build, workdir, osd_size=a.osd_size, flags=a.aio_flags.split())
    print("machine: %s; work dir %s on %s" % (benchlib.machine(), workdir,
                                             benchlib.fs_type(workdir)), flush=True)
    res = {"objects": a.objects, "phases": [], "fs": benchlib.fs_type(workdir)}
    with aio:
        s3 = boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=benchlib.AK,
                          aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                          config=Config(signature_version="s3v4", retries={"max_attempts": 1}))
        # 10,000 objects first: the listing baseline.
        first = 10000
        per = max(1, (a.objects - first) // a.phases)
        plan = [first] + [per] * a.phases
        stored = 0
        print("| phase | objects after | PUT/s | p50 ms | p99 ms | max ms | RSS MiB | peak RSS MiB"
              " | snapshots | raft last index |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
        for i, n in enumerate(plan):
            r = put_phase(bench, aio.ep, "p%02d/" % i, n, a.concurrency, i == 0, aio.dir)
            stored += n
            cur, peak = aio.rss_kib()
            m = metrics(aio.ep)
            r.update(phase=i, stored=stored, rss_mib=cur / 1024, peak_rss_mib=peak / 1024,
                     snapshots=m["iolake_meta_snapshots_total"],
                     last_index=m["iolake_meta_raft_last_index"])
            res["phases"].append(r)
            print("| %d | %s | %s | %.2f | %.2f | %.1f | %.0f | %.0f | %.0f | %.0f |" % (
                i, benchlib.fmt_int(stored), benchlib.fmt_int(r["ops_per_s"]), r["p50_ms"],
                r["p99_ms"], r["max_ms"], r["rss_mib"], r["peak_rss_mib"], r["snapshots"],
                r["last_index"]), flush=True)
            if i == 0:
                res["list_10k"] = list_times(s3, aio.port, a.list_reps, "p00/00005000", "p00/")
        res["list_end"] = list_times(s3, aio.port, a.list_reps, "p%02d/00000000" % (len(plan) // 2), "p01/")
        print("\n| listing (1,000 keys a page) | at %s objects: median ms (max) | at %s: median"
              " ms (max) | ratio |" % (benchlib.fmt_int(first), benchlib.fmt_int(stored)))
        print("|---|---:|---:|---:|")
        for k in res["list_10k"]:
            b, e = res["list_10k"][k], res["list_end"][k]
            print("| %s (%d entries) | %.2f (%.2f) | %.2f (%.2f) | %.2f |" % (
                k, e["entries"], b["median_ms"], b["max_ms"], e["median_ms"], e["max_ms"],
                e["median_ms"] / b["median_ms"]))

        last = len(plan) - 1
        before = metrics(aio.ep)
        g = get_phase(bench, aio.ep, "p%02d/" % last, plan[last], a.gets, a.concurrency, aio.dir)
        after = metrics(aio.ep)
        cur, peak = aio.rss_kib()
        g["metrics_before"], g["metrics_after"] = before, after
        res["get_only"] = g
        print("\nGET-only: %s GETs at %s/s, p50 %.2f ms, p99 %.2f ms, max %.1f ms, errors %d;"
              " RSS %.0f MiB (peak %.0f)" % (
                  benchlib.fmt_int(g["ops"]), benchlib.fmt_int(g["ops_per_s"]), g["p50_ms"],
                  g["p99_ms"], g["max_ms"], g["errors"], cur / 1024, peak / 1024))
        for k in before:
            print("  %-40s %14.0f -> %14.0f" % (k, before[k], after[k]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except benchlib.BenchError as e:
        print("meta_scale: %s" % e, file=sys.stderr)
        sys.exit(1)
